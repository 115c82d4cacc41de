//! Generated policies: few, grouped, and never silently shadowed.
//!
//! Tunables (tier TTLs, delivery limits) live in policies so that changing them never
//! recreates a queue. On the broker every policy change costs time proportional to
//! queues × policies, so queues that need the same settings share one policy whose
//! pattern is an anchored alternation of their escaped names: the number of policies
//! grows with the number of distinct ladders, never with the number of queues.
//!
//! Only one policy applies to a queue. When a user policy from the spec matches a
//! generated queue, its keys are merged into that queue's generated policy (which gets
//! a higher priority), so neither side's settings are lost; a key set by both, or a user
//! policy that would outrank the generated one, is an error.

use std::collections::BTreeMap;

use super::{Emitter, naming};
use crate::model::effective::CompiledPolicies;
use crate::model::pattern::split_patterns;
use crate::model::{Arguments, ObjectId, ObjectKind, Policy, RESERVED_PREFIX};
use crate::spec::{QueueType, Spec, SpecPath};

/// Default priority of generated policies.
pub const DEFAULT_PRIORITY: i64 = 100;

/// A policy the spec writes, with where it is written.
struct UserPolicy {
    policy: Policy,
    path: SpecPath,
}

impl AsRef<Policy> for UserPolicy {
    fn as_ref(&self) -> &Policy {
        &self.policy
    }
}

struct Group {
    definition: Arguments,
    queues: Vec<(String, QueueType)>,
    path: SpecPath,
}

/// Emits the generated policies of every vhost.
pub(crate) fn emit_all(spec: &Spec, out: &mut Emitter) {
    let priority = spec.policy_priority.unwrap_or(DEFAULT_PRIORITY);
    if priority < 1 {
        out.error(
            "invalid-value",
            format!("`policy_priority: {priority}` would let user policies of the default priority 0 outrank generated ones"),
            SpecPath::root().key("policy_priority"),
        )
        .hint(format!("use a priority of at least 1 (the default is {DEFAULT_PRIORITY})"));
    }
    let target = out.options.target;
    let user_policies: Vec<UserPolicy> = out
        .definitions
        .policies
        .iter()
        .map(|policy| {
            let path = out
                .origins
                .get(&ObjectId {
                    kind: ObjectKind::Policy,
                    vhost: Some(policy.vhost.clone()),
                    name: policy.name.clone(),
                })
                .cloned()
                .unwrap_or_default();
            UserPolicy {
                policy: policy.clone(),
                path,
            }
        })
        .collect();
    for UserPolicy { policy, path } in &user_policies {
        if naming::is_reserved(&policy.name) {
            out.error(
                "invalid-name",
                format!("policy name `{}` uses the `{RESERVED_PREFIX}` prefix, which warren keeps for the policies it generates", policy.name),
                path.clone(),
            )
            .hint("rename the policy");
        }
    }
    let user_choice = CompiledPolicies::new(&user_policies);
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    let mut problems: Vec<(String, SpecPath, String)> = Vec::new();
    // User policies that outrank generated ones, with the queues they would take over.
    let mut outranking: BTreeMap<(String, String), (i64, SpecPath, Vec<String>)> = BTreeMap::new();
    for ((vhost, queue), info) in &out.queues {
        if info.needs.is_empty() {
            continue;
        }
        let mut definition = Arguments::new();
        let mut group_names: Vec<String> = Vec::new();
        for need in &info.needs {
            definition.extend(need.definition.clone());
            group_names.push(need.group.clone());
        }
        group_names.sort();
        let mut group_name = naming::merged_group(&group_names);
        let path = info.needs[0].path.clone();
        let winner = user_choice
            .choose(vhost, queue, info.queue_type, target)
            .winner
            .map(|user| (&user.policy, &user.path));
        if let Some((user, user_path)) = winner {
            if user.priority >= priority {
                outranking
                    .entry((user.vhost.clone(), user.name.clone()))
                    .or_insert_with(|| (user.priority, user_path.clone(), Vec::new()))
                    .2
                    .push(queue.clone());
                continue;
            }
            for (key, value) in &user.definition {
                match definition.get(key) {
                    Some(existing) if existing != value => problems.push((
                        format!(
                            "policy `{}` sets `{key}: {value}` on queue `{queue}`, where warren sets `{key}: {existing}` (from `{path}`)",
                            user.name
                        ),
                        user_path.key("definition").key(key),
                        format!("remove `{key}` from `{}`, or narrow its pattern so it does not match `{queue}`", user.name),
                    )),
                    _ => {
                        definition.insert(key.clone(), value.clone());
                    }
                }
            }
            group_name = naming::with_user_policy(&group_name, &user.name);
        }
        let group = groups
            .entry((vhost.clone(), group_name.clone()))
            .or_insert_with(|| Group {
                definition: definition.clone(),
                queues: Vec::new(),
                path: path.clone(),
            });
        if group.definition != definition {
            // Two places in the spec map to the same group name (e.g. names with dots):
            // sharing one policy would give one of them the other's settings.
            problems.push((
                format!(
                    "the settings at `{path}` and at `{}` would share the generated policy `{}` but differ",
                    naming::policy_name(&group_name, 0),
                    group.path
                ),
                path,
                "rename the service, consumer or ladder so their names do not run together with dots".to_string(),
            ));
            continue;
        }
        group.queues.push((queue.clone(), info.queue_type));
    }
    for ((_, name), (user_priority, path, queues)) in outranking {
        let listed: Vec<String> = queues.iter().take(5).map(|q| format!("`{q}`")).collect();
        let more = if queues.len() > 5 {
            format!(" and {} more", queues.len() - 5)
        } else {
            String::new()
        };
        problems.push((
            format!(
                "policy `{name}` (priority {user_priority}) matches {}{more}, which need warren's generated policies (priority {priority}); the broker applies only the highest, so those queues would lose their retry settings",
                listed.join(", ")
            ),
            path,
            format!(
                "give `{name}` a priority below {priority} (warren then merges its keys into the generated policies), or raise the top-level `policy_priority` above {user_priority}"
            ),
        ));
    }
    for (message, path, help) in problems {
        out.error("policy-overlap", message, path).hint(help);
    }
    for ((vhost, group_name), group) in groups {
        let all_quorum = group.queues.iter().all(|(_, t)| *t == QueueType::Quorum);
        let apply_to = if all_quorum && target.has_queue_type_apply_to() {
            "quorum_queues"
        } else {
            "queues"
        };
        let names: Vec<&str> = group.queues.iter().map(|(n, _)| n.as_str()).collect();
        for (part, pattern) in split_patterns(&names).into_iter().enumerate() {
            // One policy per group; a group too large for one pattern gets parts
            // `~2`, `~3`… that share its definition and match disjoint queues.
            let name = naming::policy_name(&group_name, part);
            let id = ObjectId {
                kind: ObjectKind::Policy,
                vhost: Some(vhost.clone()),
                name: name.clone(),
            };
            if out.claim(id, &group.path) {
                out.definitions.policies.push(Policy {
                    vhost: vhost.clone(),
                    name,
                    pattern,
                    apply_to: apply_to.to_string(),
                    definition: group.definition.clone(),
                    priority,
                });
            }
        }
    }
}
