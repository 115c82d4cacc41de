//! What a saved plan depends on besides its own changes: the policy and operator
//! policy the broker will apply to each queue and exchange the spec manages, once the
//! plan is applied.
//!
//! A saved plan is stale when something it depends on changed (see
//! docs/plan-format.md, "When a saved plan is stale"): its changes (recomputed at
//! apply), and what decides how its objects behave. A policy of another team that
//! starts matching a managed queue changes that queue's TTL, limits or dead-lettering
//! without any change of warren's: the reviewed plan no longer describes the result.
//! Objects that come and go beside the spec's own (an application's reply queue,
//! another team's queue) change neither and do not make a plan stale.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::diff::{Action, Change};
use crate::model::effective::CompiledPolicies;
use crate::model::objects::Objects;
use crate::model::{ObjectId, ObjectKind, Policy, QueueType, TargetVersion};

/// The policies the broker applies to one managed queue or exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    /// The queue or exchange.
    pub id: ObjectId,
    /// The policy that applies to it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The operator policy that applies to it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_policy: Option<String>,
}

impl Dependency {
    /// What differs between the dependency planned (`self`) and the one found now.
    pub fn difference(&self, now: &Dependency) -> Option<String> {
        let show = |name: &Option<String>| match name {
            Some(name) => format!("`{name}`"),
            None => "none".to_string(),
        };
        let (kind, planned, found) = if self.policy != now.policy {
            ("policy", &self.policy, &now.policy)
        } else if self.operator_policy != now.operator_policy {
            (
                "operator policy",
                &self.operator_policy,
                &now.operator_policy,
            )
        } else {
            return None;
        };
        Some(format!(
            "the {kind} applied to {} is now {} (it was {} when planned)",
            self.id,
            show(found),
            show(planned)
        ))
    }
}

/// The policy of an object of kind policy or operator policy.
fn policy_of(id: &ObjectId, value: &Value) -> Option<Policy> {
    let mut entry = value.clone();
    let object = entry.as_object_mut()?;
    object.insert("vhost".into(), json!(id.vhost.clone().unwrap_or_default()));
    object.insert("name".into(), json!(id.name));
    serde_json::from_value(entry).ok()
}

/// The dependencies of every queue and exchange in `desired`, in the world after the
/// plan: the desired policies, and the live ones the plan neither replaces nor deletes.
pub fn dependencies(
    desired: &Objects,
    live: &Objects,
    changes: &[Change],
    target: TargetVersion,
) -> Vec<Dependency> {
    let deleted: BTreeSet<&ObjectId> = changes
        .iter()
        .filter(|c| c.action == Action::Delete)
        .map(|c| &c.id)
        .collect();
    let after = desired.iter().chain(
        live.iter()
            .filter(|(id, _)| !desired.contains_key(*id) && !deleted.contains(id)),
    );
    let (mut policies, mut operator_policies) = (Vec::new(), Vec::new());
    for (id, value) in after {
        match id.kind {
            ObjectKind::Policy => policies.extend(policy_of(id, value)),
            ObjectKind::OperatorPolicy => operator_policies.extend(policy_of(id, value)),
            _ => {}
        }
    }
    let policy_matcher = CompiledPolicies::new(&policies);
    let operator_policy_matcher = CompiledPolicies::new(&operator_policies);
    let name = |policy: Option<&Policy>| policy.map(|p| p.name.clone());
    desired
        .iter()
        .filter_map(|(id, value)| {
            let vhost = id.vhost.as_deref()?;
            match id.kind {
                ObjectKind::Queue => {
                    let kind = QueueType::from_name(
                        value["arguments"]["x-queue-type"]
                            .as_str()
                            .unwrap_or("classic"),
                    );
                    Some(Dependency {
                        id: id.clone(),
                        policy: name(policy_matcher.choose(vhost, &id.name, kind, target).winner),
                        operator_policy: name(
                            operator_policy_matcher
                                .choose(vhost, &id.name, kind, target)
                                .winner,
                        ),
                    })
                }
                ObjectKind::Exchange => Some(Dependency {
                    id: id.clone(),
                    policy: name(policy_matcher.choose_for_exchange(vhost, &id.name)),
                    operator_policy: name(
                        operator_policy_matcher.choose_for_exchange(vhost, &id.name),
                    ),
                }),
                _ => None,
            }
        })
        // Objects no policy applies to are left out: the plan stays small, and an
        // object missing here depends on no policy.
        .filter(|d| d.policy.is_some() || d.operator_policy.is_some())
        .collect()
}

/// The first difference between the dependencies planned and those found now.
pub fn first_difference(planned: &[Dependency], now: &[Dependency]) -> Option<String> {
    let by_id = |list: &[Dependency]| -> BTreeMap<ObjectId, Dependency> {
        list.iter().map(|d| (d.id.clone(), d.clone())).collect()
    };
    let (planned, now) = (by_id(planned), by_id(now));
    let none = |id: &ObjectId| Dependency {
        id: id.clone(),
        policy: None,
        operator_policy: None,
    };
    planned.keys().chain(now.keys()).find_map(|id| {
        let was = planned.get(id).cloned().unwrap_or_else(|| none(id));
        let is = now.get(id).cloned().unwrap_or_else(|| none(id));
        was.difference(&is)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(kind: ObjectKind, name: &str) -> ObjectId {
        ObjectId {
            kind,
            vhost: Some("v".into()),
            name: name.into(),
        }
    }

    fn policy(pattern: &str, priority: i64) -> Value {
        json!({"pattern": pattern, "apply-to": "queues", "definition": {"message-ttl": 5}, "priority": priority})
    }

    #[test]
    fn a_foreign_policy_that_outranks_the_spec_s_own_is_a_dependency_change() {
        let mut desired = Objects::new();
        desired.insert(
            id(ObjectKind::Queue, "orders"),
            json!({"durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}}),
        );
        desired.insert(id(ObjectKind::Policy, "mine"), policy("^orders$", 0));
        let target = TargetVersion::DEFAULT;
        let before = dependencies(&desired, &Objects::new(), &[], target);
        assert_eq!(before[0].policy.as_deref(), Some("mine"));
        assert_eq!(before.len(), 1, "objects no policy applies to are left out");
        let mut live = Objects::new();
        live.insert(id(ObjectKind::Policy, "theirs"), policy(".*", 10));
        live.insert(id(ObjectKind::Queue, "reply"), json!({}));
        let after = dependencies(&desired, &live, &[], target);
        let difference = first_difference(&before, &after).unwrap();
        assert!(
            difference.contains("is now `theirs` (it was `mine` when planned)"),
            "{difference}"
        );
        // A policy the plan deletes does not count.
        let delete = Change::new(Action::Delete, id(ObjectKind::Policy, "theirs"), None, None);
        assert_eq!(dependencies(&desired, &live, &[delete], target), before);
    }
}
