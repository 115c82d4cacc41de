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

use super::drift::{Drift, RoleHazard, Tie, operator_drift, policy_drift, tie_of};
use crate::diff::{Action, Change};
use crate::model::effective::{CompiledPolicies, Winner};
use crate::model::objects::Objects;
use crate::model::role_hazards::{self, QueueRole, QueueRoles};
use crate::model::settings;
use crate::model::{ObjectId, ObjectKind, Policy, Queue, QueueType, TargetVersion};

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
    /// Policies tied at the highest priority, when they are (`policy` is then none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_tie: Vec<String>,
    /// Operator policies tied at the highest priority, when they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operator_policy_tie: Vec<String>,
}

impl Dependency {
    /// What differs between the dependency planned (`self`) and the one found now.
    pub fn difference(&self, now: &Dependency) -> Option<String> {
        let show = |name: &Option<String>| match name {
            Some(name) => format!("`{name}`"),
            None => "none".to_string(),
        };
        let ties = |tie: &[String]| match tie {
            [] => None,
            names => Some(format!(
                "a tie of {}",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )),
        };
        if self.policy_tie != now.policy_tie || self.operator_policy_tie != now.operator_policy_tie
        {
            let (kind, planned, found) = if self.policy_tie != now.policy_tie {
                ("policy", &self.policy_tie, &now.policy_tie)
            } else {
                (
                    "operator policy",
                    &self.operator_policy_tie,
                    &now.operator_policy_tie,
                )
            };
            return Some(format!(
                "the {kind} applied to {} is now {} (it was {} when planned)",
                self.id,
                ties(found).unwrap_or_else(|| "decided".into()),
                ties(planned).unwrap_or_else(|| "decided".into()),
            ));
        }
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

/// The policy of an object of kind policy or operator policy, or the queue of a queue:
/// its value with its vhost and name.
fn named<T: serde::de::DeserializeOwned>(id: &ObjectId, value: &Value) -> Option<T> {
    let mut entry = value.clone();
    let object = entry.as_object_mut()?;
    object.insert("vhost".into(), json!(id.vhost.clone().unwrap_or_default()));
    object.insert("name".into(), json!(id.name));
    serde_json::from_value(entry).ok()
}

/// What the broker will apply to the spec's queues and exchanges once the plan is
/// applied: each one's policies, the ties among them, and where another's policy
/// changes what the spec sets.
#[derive(Debug, Default)]
pub struct Applied {
    pub dependencies: Vec<Dependency>,
    pub ties: Vec<Tie>,
    pub drift: Vec<Drift>,
    pub hazards: Vec<RoleHazard>,
}

/// Policies and operator policies with their patterns compiled.
struct Matchers<'p> {
    policies: CompiledPolicies<'p, Policy>,
    operator_policies: CompiledPolicies<'p, Policy>,
}

impl<'p> Matchers<'p> {
    fn new(policies: &'p [Policy], operator_policies: &'p [Policy]) -> Self {
        Matchers {
            policies: CompiledPolicies::new(policies),
            operator_policies: CompiledPolicies::new(operator_policies),
        }
    }

    /// The policy and operator policy winners for `id` (a queue of type `kind`, or an
    /// exchange).
    fn winners(
        &self,
        id: &ObjectId,
        kind: Option<QueueType>,
        target: TargetVersion,
    ) -> (Winner<'p, Policy>, Winner<'p, Policy>) {
        let vhost = id.vhost.as_deref().unwrap_or_default();
        match kind {
            Some(kind) => (
                self.policies.choose(vhost, &id.name, kind, target).winner,
                self.operator_policies
                    .choose(vhost, &id.name, kind, target)
                    .winner,
            ),
            None => (
                self.policies.choose_for_exchange(vhost, &id.name),
                self.operator_policies.choose_for_exchange(vhost, &id.name),
            ),
        }
    }
}

/// The policies and operator policies among `objects`.
fn policies_of<'a>(
    objects: impl Iterator<Item = (&'a ObjectId, &'a Value)>,
) -> (Vec<Policy>, Vec<Policy>) {
    let (mut policies, mut operator_policies) = (Vec::new(), Vec::new());
    for (id, value) in objects {
        match id.kind {
            ObjectKind::Policy => policies.extend(named(id, value)),
            ObjectKind::OperatorPolicy => operator_policies.extend(named(id, value)),
            _ => {}
        }
    }
    (policies, operator_policies)
}

/// What the broker will apply to every queue and exchange in `desired`, in the world
/// after the plan: the desired policies, and the live ones the plan neither replaces
/// nor deletes. `owners` names the spec of each object another spec manages; `spec`
/// is this plan's; `roles` says what each of its queues is for (the hazards are found
/// for those).
pub fn applied(
    desired: &Objects,
    live: &Objects,
    changes: &[Change],
    target: TargetVersion,
    (owners, spec): (&BTreeMap<ObjectId, String>, &str),
    roles: &QueueRoles,
) -> Applied {
    let deleted: BTreeSet<&ObjectId> = changes
        .iter()
        .filter(|c| c.action == Action::Delete)
        .map(|c| &c.id)
        .collect();
    let after = desired.iter().chain(
        live.iter()
            .filter(|(id, _)| !desired.contains_key(*id) && !deleted.contains(id)),
    );
    let (policies, operator_policies) = policies_of(after);
    let world = Matchers::new(&policies, &operator_policies);
    let (own, own_operator) = policies_of(desired.iter());
    let meant = Matchers::new(&own, &own_operator);
    let owner = |policy: &Policy, operator: bool| -> Option<String> {
        let kind = if operator {
            ObjectKind::OperatorPolicy
        } else {
            ObjectKind::Policy
        };
        let id = ObjectId::in_vhost(kind, &policy.vhost, &policy.name);
        if desired.contains_key(&id) {
            Some(spec.to_string())
        } else {
            owners.get(&id).cloned()
        }
    };
    let mut out = Applied::default();
    for (id, value) in desired {
        let kind = match id.kind {
            ObjectKind::Queue => Some(QueueType::from_name(
                value["arguments"]["x-queue-type"]
                    .as_str()
                    .unwrap_or("classic"),
            )),
            ObjectKind::Exchange => None,
            _ => continue,
        };
        if id.vhost.is_none() {
            continue;
        }
        let (policy, operator) = world.winners(id, kind, target);
        let (own_policy, own_operator) = meant.winners(id, kind, target);
        out.ties.extend(tie_of(id, &policy, false, &owner));
        out.ties.extend(tie_of(id, &operator, true, &owner));
        let drift_start = out.drift.len();
        out.drift
            .extend(policy_drift(id, own_policy.one(), policy.one(), &owner));
        let meant_settings: Vec<&Policy> = [own_policy.one(), own_operator.one()]
            .into_iter()
            .flatten()
            .collect();
        out.drift
            .extend(operator_drift(id, &meant_settings, operator.one(), &owner));
        if let Some(role) = roles.get(&role_key(id)) {
            // A setting the spec sets and another's policy changes is drift, reported
            // once there.
            let drifted: BTreeSet<&str> = out.drift[drift_start..]
                .iter()
                .flat_map(|d| d.settings.iter().map(|s| s.key.as_str()))
                .collect();
            let applied = (policy.one(), operator.one());
            let found = hazards(
                id,
                value,
                role,
                target,
                (&own_policy, &own_operator),
                applied,
            )
            .into_iter()
            .filter(|h| !drifted.contains(h.key.as_str()))
            .map(|hazard| {
                let setter = if hazard.operator {
                    applied.1
                } else {
                    applied.0
                };
                RoleHazard {
                    id: id.clone(),
                    role: role.clone(),
                    owner: setter.and_then(|p| owner(p, hazard.operator)),
                    hazard,
                }
            })
            .collect::<Vec<_>>();
            out.hazards.extend(found);
        }
        let names = |tied: &[&Policy]| tied.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        let dependency = Dependency {
            id: id.clone(),
            policy: policy.one().map(|p| p.name.clone()),
            operator_policy: operator.one().map(|p| p.name.clone()),
            policy_tie: names(policy.tied()),
            operator_policy_tie: names(operator.tied()),
        };
        // Objects no policy applies to are left out: the plan stays small, and an
        // object missing here depends on no policy.
        if policy.is_some() || operator.is_some() {
            out.dependencies.push(dependency);
        }
    }
    out
}

fn role_key(id: &ObjectId) -> (String, String) {
    (id.vhost.clone().unwrap_or_default(), id.name.clone())
}

/// The role hazards of the queue `id` in `role`: what the winning policies
/// change of what the spec's own mean, where that breaks the queue's role.
fn hazards(
    id: &ObjectId,
    value: &Value,
    role: &QueueRole,
    target: TargetVersion,
    (own_policy, own_operator): (&Winner<'_, Policy>, &Winner<'_, Policy>),
    (policy, operator): (Option<&Policy>, Option<&Policy>),
) -> Vec<role_hazards::Hazard> {
    let Some(queue) = named::<Queue>(id, value) else {
        return Vec::new();
    };
    let meant = settings::resolve(&queue, own_policy.one(), own_operator.one(), target);
    let applied = settings::resolve(&queue, policy, operator, target);
    role_hazards::hazards(role, &id.name, &meant, &applied)
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
        policy_tie: Vec::new(),
        operator_policy_tie: Vec::new(),
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

    fn policy(pattern: &str, priority: i64) -> Value {
        json!({"pattern": pattern, "apply-to": "queues", "definition": {"message-ttl": 5}, "priority": priority})
    }

    #[test]
    fn a_foreign_policy_that_outranks_the_spec_s_own_is_a_dependency_change() {
        let mut desired = Objects::new();
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Queue, "v", "orders"),
            json!({"durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}}),
        );
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "mine"),
            policy("^orders$", 0),
        );
        let target = TargetVersion::DEFAULT;
        let dependencies = |desired: &Objects, live: &Objects, changes: &[Change], target| {
            applied(
                desired,
                live,
                changes,
                target,
                (&BTreeMap::new(), "shop"),
                &QueueRoles::new(),
            )
            .dependencies
        };
        let before = dependencies(&desired, &Objects::new(), &[], target);
        assert_eq!(before[0].policy.as_deref(), Some("mine"));
        assert_eq!(before.len(), 1, "objects no policy applies to are left out");
        let mut live = Objects::new();
        live.insert(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "theirs"),
            policy(".*", 10),
        );
        live.insert(
            ObjectId::in_vhost(ObjectKind::Queue, "v", "reply"),
            json!({}),
        );
        let after = dependencies(&desired, &live, &[], target);
        let difference = first_difference(&before, &after).unwrap();
        assert!(
            difference.contains("is now `theirs` (it was `mine` when planned)"),
            "{difference}"
        );
        // A policy the plan deletes does not count.
        let delete = Change::new(
            Action::Delete,
            ObjectId::in_vhost(ObjectKind::Policy, "v", "theirs"),
            None,
            None,
        );
        assert_eq!(dependencies(&desired, &live, &[delete], target), before);
    }

    #[test]
    fn a_tie_is_reported_with_owners_and_a_shadowing_policy_is_drift() {
        let mut desired = Objects::new();
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Queue, "v", "orders.retry.1"),
            json!({"durable": true, "auto_delete": false, "arguments": {}}),
        );
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.retry.defaults.1"),
            policy("retry\\.1$", 100),
        );
        let target = TargetVersion::DEFAULT;
        let mut live = Objects::new();
        let mut theirs = policy("\\.retry\\.1$", 100);
        theirs["definition"] = json!({"message-ttl": 3_600_000});
        live.insert(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "zz-ops"),
            theirs.clone(),
        );
        let owners = BTreeMap::from([(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "zz-ops"),
            "ops".to_string(),
        )]);
        let roles = QueueRoles::new();
        let tied = applied(&desired, &live, &[], target, (&owners, "shop"), &roles);
        assert_eq!(tied.ties.len(), 1);
        let names: Vec<(&str, Option<&str>)> = tied.ties[0]
            .policies
            .iter()
            .map(|p| (p.name.as_str(), p.owner.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("warren.retry.defaults.1", Some("shop")),
                ("zz-ops", Some("ops"))
            ]
        );
        assert_eq!(tied.dependencies[0].policy, None, "no winner is guessed");
        assert!(tied.drift.is_empty(), "a tie is a refusal, not drift");
        // One above: no tie, and what it changes is drift.
        theirs["priority"] = json!(101);
        live.insert(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "zz-ops"),
            theirs,
        );
        let shadowed = applied(&desired, &live, &[], target, (&owners, "shop"), &roles);
        assert!(shadowed.ties.is_empty());
        let drift = &shadowed.drift[0];
        assert_eq!(drift.policy.name, "zz-ops");
        assert_eq!(drift.shadows.as_deref(), Some("warren.retry.defaults.1"));
        assert_eq!(drift.settings[0].key, "message-ttl");
        assert_eq!(drift.settings[0].spec, json!(5));
        assert_eq!(drift.settings[0].applied, json!(3_600_000));
        // A tie is a difference of a saved plan's dependencies.
        let difference = first_difference(&shadowed.dependencies, &tied.dependencies).unwrap();
        assert!(difference.contains("is now a tie of"), "{difference}");
    }

    #[test]
    fn an_operator_ttl_on_a_parking_queue_is_a_hazard_and_a_changed_tier_ttl_only_drift() {
        let mut desired = Objects::new();
        let queue = json!({"durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}});
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Queue, "v", "orders.parking"),
            queue.clone(),
        );
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Queue, "v", "orders.retry.1"),
            queue,
        );
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.retry.defaults.1"),
            policy("retry\\.1$", 100),
        );
        let mut live = Objects::new();
        live.insert(
            ObjectId::in_vhost(ObjectKind::OperatorPolicy, "v", "safety-net"),
            json!({"pattern": ".*", "apply-to": "queues", "definition": {"message-ttl": 3, "expires": 60_000}, "priority": 0}),
        );
        let roles = QueueRoles::from([
            (
                ("v".to_string(), "orders.parking".to_string()),
                QueueRole::Parking,
            ),
            (
                ("v".to_string(), "orders.retry.1".to_string()),
                QueueRole::Tier {
                    tier: 1,
                    delay_ms: 5,
                },
            ),
        ]);
        let target = TargetVersion::DEFAULT;
        let found = applied(
            &desired,
            &live,
            &[],
            target,
            (&BTreeMap::new(), "shop"),
            &roles,
        );
        let on = |queue: &str| -> Vec<&str> {
            found
                .hazards
                .iter()
                .filter(|h| h.id.name == queue)
                .map(|h| h.hazard.key.as_str())
                .collect()
        };
        assert_eq!(on("orders.parking"), ["message-ttl", "expires"]);
        // The tier's TTL is the spec's: lowered, it is drift, listed once there; its
        // expiry is a hazard.
        assert_eq!(on("orders.retry.1"), ["expires"]);
        assert_eq!(found.drift.len(), 1);
        assert_eq!(found.drift[0].id.name, "orders.retry.1");
        assert!(
            found
                .hazards
                .iter()
                .all(|h| h.hazard.operator && h.owner.is_none())
        );
        // Without roles (a saved plan's replan) nothing is found.
        let none = applied(
            &desired,
            &live,
            &[],
            target,
            (&BTreeMap::new(), "shop"),
            &QueueRoles::new(),
        );
        assert!(none.hazards.is_empty());
    }
}
