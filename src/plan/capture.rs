//! What the spec's generated policies would take that is not the spec's: live queues
//! whose names a tier's policy selects by ending, and other specs' generated policies
//! that select some of the same names.
//!
//! A retry tier's policy selects its delay queues by the ending of their names
//! (`^.*\.retry\.1$`, see docs/topology.md). The compiler refuses a declared queue with
//! such an ending; a queue that exists on the broker without being declared by the spec
//! (made by an application, by hand, or by another spec) can only be found here. The
//! policy would give it the tier's TTL: its messages would expire. Both findings stop
//! the plan from being applied, before anything is changed.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::effective::applies_to;
use crate::model::objects::Objects;
use crate::model::pattern::{PatternMatcher, overlap};
use crate::model::{ObjectId, ObjectKind, QueueType, RESERVED_PREFIX};

/// A live queue the spec does not declare, which a generated policy of the spec would
/// apply to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captured {
    /// The queue.
    pub queue: ObjectId,
    /// The spec's generated policy whose pattern selects it.
    pub policy: String,
    /// The spec that manages the queue; `None`: no spec does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// A generated policy of the spec whose pattern selects names that another spec's
/// generated policy in the same vhost selects too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlap {
    /// The spec's policy.
    pub policy: ObjectId,
    /// The other spec's policy (in the same vhost).
    pub other: String,
    /// The spec that manages the other policy.
    pub owner: String,
    /// What both select: a name, or the ending of the names.
    pub common: String,
}

/// A generated policy: its id, compiled pattern and `apply-to`.
type Generated<'a> = (&'a ObjectId, PatternMatcher, &'a str);

/// The generated policies among `objects` with their compiled patterns, by vhost.
fn generated_policies(objects: &Objects) -> BTreeMap<&str, Vec<Generated<'_>>> {
    let mut by_vhost: BTreeMap<&str, Vec<Generated<'_>>> = BTreeMap::new();
    for (id, value) in objects {
        if id.kind != ObjectKind::Policy || !id.name.starts_with(RESERVED_PREFIX) {
            continue;
        }
        let (Some(vhost), Some(pattern)) = (
            id.vhost.as_deref(),
            value.get("pattern").and_then(Value::as_str),
        ) else {
            continue;
        };
        let apply_to = value
            .get("apply-to")
            .and_then(Value::as_str)
            .unwrap_or("all");
        by_vhost
            .entry(vhost)
            .or_default()
            .push((id, PatternMatcher::new(pattern), apply_to));
    }
    by_vhost
}

/// Live queues the desired policies that select by ending would capture, and the other
/// specs' live generated policies that overlap the desired ones. `managed` are the
/// objects the spec manages now (a queue of an earlier version of the spec that the
/// plan deletes is not captured: the plan shows its deletion, behind the data-loss
/// gate); `others` names the owner of every object another spec manages.
pub fn find(
    desired: &Objects,
    live: &Objects,
    managed: &BTreeSet<ObjectId>,
    others: &BTreeMap<ObjectId, String>,
) -> (Vec<Captured>, Vec<Overlap>) {
    let ours = generated_policies(desired);
    let mut captured = Vec::new();
    let selecting: BTreeMap<&str, Vec<&Generated>> = ours
        .iter()
        .map(|(vhost, policies)| {
            let by_ending = policies.iter().filter(|(_, m, _)| m.ending().is_some());
            (*vhost, by_ending.collect())
        })
        .collect();
    for (id, value) in live {
        if id.kind != ObjectKind::Queue || desired.contains_key(id) || managed.contains(id) {
            continue;
        }
        let Some(policies) = id.vhost.as_deref().and_then(|v| selecting.get(v)) else {
            continue;
        };
        let queue_type = QueueType::from_name(
            value
                .pointer("/arguments/x-queue-type")
                .and_then(Value::as_str)
                .unwrap_or("classic"),
        );
        let selects = |(_, matcher, apply_to): &&&Generated| {
            applies_to(apply_to, queue_type) && matcher.is_match(&id.name)
        };
        if let Some((policy, _, _)) = policies.iter().find(selects) {
            captured.push(Captured {
                queue: id.clone(),
                policy: policy.name.clone(),
                owner: others.get(id).cloned(),
            });
        }
    }
    let theirs = generated_policies(live);
    let mut overlaps = Vec::new();
    for (vhost, policies) in &ours {
        let Some(live_policies) = theirs.get(vhost) else {
            continue;
        };
        for (other, other_matcher, _) in live_policies {
            let Some(owner) = others.get(*other) else {
                continue;
            };
            for (policy, matcher, _) in policies {
                if let Some(common) = overlap(matcher, other_matcher) {
                    overlaps.push(Overlap {
                        policy: (*policy).clone(),
                        other: other.name.clone(),
                        owner: owner.clone(),
                        common,
                    });
                }
            }
        }
    }
    (captured, overlaps)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(pattern: &str) -> Value {
        json!({"pattern": pattern, "apply-to": "queues", "definition": {"message-ttl": 1000}, "priority": 100})
    }

    #[test]
    fn undeclared_queues_with_a_tier_ending_and_overlapping_specs_are_found() {
        let desired: Objects = [
            (
                ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.retry.defaults.1"),
                policy(r"^.*\.retry\.1$"),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "s.c.retry.1"),
                json!({}),
            ),
        ]
        .into_iter()
        .collect();
        let live: Objects = [
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "s.c.retry.1"),
                json!({}),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "audit.retry.1"),
                json!({}),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "b.x.retry.1"),
                json!({}),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "audit.retry.2"),
                json!({}),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "old.retry.1"),
                json!({}),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.retry.vhost.1"),
                policy(r"^.*\.retry\.1$"),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.retry.ladder.x.1"),
                policy(r"^.*\.retry-x\.1$"),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Policy, "v", "mine"),
                policy(r"^.*\.retry\.1$"),
            ),
        ]
        .into_iter()
        .collect();
        let others: BTreeMap<ObjectId, String> = [
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "b.x.retry.1"),
                "billing".to_string(),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.retry.vhost.1"),
                "billing".to_string(),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.retry.ladder.x.1"),
                "billing".to_string(),
            ),
        ]
        .into_iter()
        .collect();
        let managed: BTreeSet<ObjectId> =
            [ObjectId::in_vhost(ObjectKind::Queue, "v", "old.retry.1")].into();
        let (captured, overlaps) = find(&desired, &live, &managed, &others);
        assert_eq!(
            captured,
            vec![
                Captured {
                    queue: ObjectId::in_vhost(ObjectKind::Queue, "v", "audit.retry.1"),
                    policy: "warren.retry.defaults.1".into(),
                    owner: None,
                },
                Captured {
                    queue: ObjectId::in_vhost(ObjectKind::Queue, "v", "b.x.retry.1"),
                    policy: "warren.retry.defaults.1".into(),
                    owner: Some("billing".into()),
                },
            ]
        );
        assert_eq!(
            overlaps,
            vec![Overlap {
                policy: ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.retry.defaults.1"),
                other: "warren.retry.vhost.1".into(),
                owner: "billing".into(),
                common: "every name ending in `.retry.1`".into(),
            }]
        );
    }

    #[test]
    fn a_policy_for_quorum_queues_captures_quorum_queues_only() {
        let queue = |queue_type: &str| json!({"arguments": {"x-queue-type": queue_type}});
        let desired: Objects = [(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "warren.parking"),
            json!({"pattern": r"^.*\.parking$", "apply-to": "quorum_queues", "definition": {"delivery-limit": -1}, "priority": 100}),
        )]
        .into_iter()
        .collect();
        let live: Objects = [
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "audit.parking"),
                queue("quorum"),
            ),
            (
                ObjectId::in_vhost(ObjectKind::Queue, "v", "old.parking"),
                queue("classic"),
            ),
        ]
        .into_iter()
        .collect();
        let (captured, _) = find(&desired, &live, &BTreeSet::new(), &BTreeMap::new());
        let names: Vec<&str> = captured.iter().map(|c| c.queue.name.as_str()).collect();
        assert_eq!(names, vec!["audit.parking"]);
    }
}
