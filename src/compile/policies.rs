//! Generated policies: few, grouped, and never silently shadowed.
//!
//! Tunables (tier TTLs, delivery limits) live in policies so that changing them never
//! recreates a queue. On the broker every policy change costs time proportional to
//! queues × policies, so queues that need the same settings share one policy: the
//! number of policies grows with the number of distinct ladders, never with the number
//! of queues. The broker also matches every pattern of the vhost against every queue it
//! declares, so a ladder tier's policy selects its delay queues by the ending of their
//! generated names (`^.*\.retry\.1$`, [`naming::tier_ending`]): the same pattern for
//! one consumer or 10,000; so does the policy that lifts the delivery limit of quorum
//! parking queues from 4.0 on (`^.*\.parking$`, [`naming::PARKING_ENDING`]). Names the
//! user wrote (`retry.names`) are listed, as an anchored tree of their escaped names,
//! and so are quorum work queues that need a delivery limit: their names are the
//! applications' contract, one per consumer the spec declares, and follow no ending.
//!
//! A pattern that selects by ending could capture a queue nobody meant for it: a
//! declared queue whose name has another group's ending, or two groups whose endings
//! overlap, is an error here; live queues are checked by the plan.
//!
//! Only one policy applies to a queue. When a user policy from the spec matches a
//! generated queue, its keys are merged into that queue's generated policy (which gets
//! a higher priority), so neither side's settings are lost; a key set by both, or a user
//! policy that would outrank the generated one, is an error.

use std::collections::BTreeMap;

use super::{Emitter, QueueInfo, naming};
use crate::model::effective::{CompiledPolicies, Winner};
use crate::model::pattern::{
    ending_patterns, ends_with, escape, max_pattern_length, split_patterns,
};
use crate::model::{Arguments, ObjectId, ObjectKind, Policy, Queue};
use crate::spec::{QueueType, Spec, SpecFile, SpecPath};

/// Default priority of generated policies.
pub const DEFAULT_PRIORITY: i64 = 100;

/// The highest `policy_priority`: generated policies take it and it + 1 (a tier's
/// queue that also carries a user policy's keys is matched by the tier's ending at
/// the base priority and by its merged policy one above), so the two never tie.
pub const MAX_PRIORITY: i64 = i64::MAX - 1;

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

struct Group<'q> {
    definition: Arguments,
    queues: Vec<(&'q str, QueueType)>,
    path: SpecPath,
    /// The ending the group's policy selects its queues by (a ladder tier's own group).
    ending: Option<String>,
    /// The group's queues also match a policy that selects by ending (a tier merged
    /// with a user policy): its policy must outrank that one.
    outranks_ending: bool,
    /// The policy applies to quorum queues only (`apply-to: quorum_queues`): every queue
    /// of the group is one, and the target version knows the value.
    quorum_only: bool,
}

/// Emits the generated policies of every vhost. `source` places the second spec
/// location an error names.
#[expect(
    clippy::too_many_lines,
    reason = "generated and user policies are merged in one pass, so that each queue gets exactly one"
)]
pub(crate) fn emit_all(spec: &Spec, source: &SpecFile, out: &mut Emitter) {
    let priority = spec.policy_priority.unwrap_or(DEFAULT_PRIORITY);
    if priority < 1 {
        out.error(
            "invalid-value",
            format!("`policy_priority: {priority}` would let user policies of the default priority 0 outrank generated ones"),
            SpecPath::root().key("policy_priority"),
        )
        .hint(format!("use a priority of at least 1 (the default is {DEFAULT_PRIORITY})"));
    }
    if priority > MAX_PRIORITY {
        out.error(
            "invalid-value",
            format!("`policy_priority: {priority}` leaves no room above it: the generated policy that must outrank a tier's own (priority + 1) would get the same priority, and the broker picks between equal priorities in no order warren can know"),
            SpecPath::root().key("policy_priority"),
        )
        .hint(format!("use a priority of at most {MAX_PRIORITY} (the default is {DEFAULT_PRIORITY})"));
    }
    let target = out.options.target;
    let user_policies: Vec<UserPolicy> = out
        .definitions
        .policies
        .iter()
        .map(|policy| {
            let path = out
                .origins
                .get(&ObjectId::in_vhost(
                    ObjectKind::Policy,
                    &policy.vhost,
                    &policy.name,
                ))
                .cloned()
                .unwrap_or_default();
            UserPolicy {
                policy: policy.clone(),
                path,
            }
        })
        .collect();
    let user_choice = CompiledPolicies::new(&user_policies);
    // Taken out for the time of this stage, so that the groups can borrow queue names
    // while errors and policies are added; nothing here adds or reads queues otherwise.
    out.sort_queues();
    let queues = std::mem::take(&mut out.definitions.queues);
    let infos = std::mem::take(&mut out.queue_infos);
    let by_name: Vec<(&Queue, &QueueInfo)> = queues.iter().zip(&infos).collect();
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    let mut problems: Vec<(String, SpecPath, String)> = Vec::new();
    // User policies tied at the highest priority on a generated queue: their names,
    // priority, where the second is written, and the first queue.
    let mut tie_problems: Vec<(Vec<String>, i64, SpecPath, String)> = Vec::new();
    // User policies that outrank generated ones, with the queues they would take over.
    let mut outranking: BTreeMap<(String, String), (i64, SpecPath, Vec<String>)> = BTreeMap::new();
    for &(queue, info) in &by_name {
        let (vhost, queue) = (&queue.vhost, &queue.name);
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
        let own_ending = info.needs.iter().find_map(|need| need.ending.clone());
        let mut ending = match info.needs.as_slice() {
            [need] => need.ending.clone(),
            _ => None,
        };
        let winner = match user_choice
            .choose(vhost, queue, info.queue_type, target)
            .winner
        {
            Winner::None => None,
            Winner::One(user) => Some(user),
            Winner::Tie(tied) => {
                // Which of the tied policies' keys would be merged is the broker's
                // choice between them, which nothing predicts: the spec decides.
                if tied[0].policy.priority >= priority {
                    for user in &tied {
                        outranking
                            .entry((user.policy.vhost.clone(), user.policy.name.clone()))
                            .or_insert_with(|| {
                                (user.policy.priority, user.path.clone(), Vec::new())
                            })
                            .2
                            .push(queue.clone());
                    }
                } else {
                    tie_problems.push((
                        tied.iter().map(|u| u.policy.name.clone()).collect(),
                        tied[0].policy.priority,
                        tied[1].path.clone(),
                        queue.clone(),
                    ));
                }
                continue;
            }
        }
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
            ending = None;
        }
        let outranks_ending =
            ending.is_none() && own_ending.as_deref().is_some_and(|e| ends_with(queue, e));
        let group = groups
            .entry((vhost.clone(), group_name.clone()))
            .or_insert_with(|| Group {
                definition: definition.clone(),
                queues: Vec::new(),
                path: path.clone(),
                ending: ending.clone(),
                outranks_ending: false,
                quorum_only: false,
            });
        group.outranks_ending |= outranks_ending;
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
        group.queues.push((queue, info.queue_type));
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
    let mut told = std::collections::BTreeSet::new();
    for (names, tied_priority, path, queue) in tie_problems {
        if !told.insert(names.clone()) {
            continue;
        }
        let listed: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        problems.push((
            format!(
                "policies {} have the same priority {tied_priority} and all match queue `{queue}`, whose generated policy takes the keys of the one the broker would apply: the broker picks between equal priorities in no order warren can know",
                listed.join(" and ")
            ),
            path,
            "give one of them a higher priority (below the generated policies'), or make their patterns disjoint".to_string(),
        ));
    }
    for (message, path, help) in problems {
        out.error("policy-overlap", message, path).hint(help);
    }
    // A tier whose queues all have names the user wrote is listed, not selected.
    for group in groups.values_mut() {
        if let Some(ending) = &group.ending
            && !group.queues.iter().any(|(name, _)| ends_with(name, ending))
        {
            group.ending = None;
        }
    }
    for group in groups.values_mut() {
        let all_quorum = group.queues.iter().all(|(_, t)| *t == QueueType::Quorum);
        group.quorum_only = all_quorum && target.has_queue_type_apply_to();
    }
    check_endings(&groups, &by_name, source, out);
    for ((vhost, group_name), group) in groups {
        let apply_to = if group.quorum_only {
            "quorum_queues"
        } else {
            "queues"
        };
        let names: Vec<&str> = group.queues.iter().map(|(n, _)| *n).collect();
        let max = max_pattern_length(target);
        let patterns = match &group.ending {
            Some(ending) => ending_patterns(ending, &names, max),
            None => split_patterns(&names, max),
        };
        // A tier's queues that also carry a user policy's keys are matched by the tier's
        // ending too: their merged policy must win over it.
        let priority = if group.outranks_ending {
            // Never saturates: `policy_priority` above MAX_PRIORITY is refused above.
            priority.saturating_add(1)
        } else {
            priority
        };
        for (part, pattern) in patterns.into_iter().enumerate() {
            // One policy per group; a group too large for one pattern gets parts
            // `~2`, `~3`… that share its definition and match disjoint queues.
            let name = naming::policy_name(&group_name, part);
            let id = ObjectId::in_vhost(ObjectKind::Policy, &vhost, &name);
            if out.claim_generated(id, &group.path) {
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
    drop(by_name);
    out.definitions.queues = queues;
}

/// A policy that selects by ending takes every queue of its vhost with that ending (of
/// its queue type, when it applies to quorum queues only). Refuses a declared queue
/// (escape hatch, work or parking queue, a name under `retry.names`) with another
/// group's ending, and two groups whose endings overlap: either would put a policy's
/// settings (a tier's TTL, a lifted delivery limit) on a queue they are not meant for.
fn check_endings(
    groups: &BTreeMap<(String, String), Group>,
    queues: &[(&Queue, &QueueInfo)],
    source: &SpecFile,
    out: &mut Emitter,
) {
    struct Selecting<'a> {
        ending: &'a str,
        policy: String,
        group: &'a Group<'a>,
    }
    let mut endings: BTreeMap<&str, Vec<Selecting>> = BTreeMap::new();
    for ((vhost, group_name), group) in groups {
        if let Some(ending) = &group.ending {
            endings.entry(vhost).or_default().push(Selecting {
                ending,
                policy: naming::policy_name(group_name, 0),
                group,
            });
        }
    }
    let place = |path: &SpecPath| match source.place_words(path) {
        Some(at) => format!("`{path}` ({at})"),
        None => format!("`{path}`"),
    };
    let mut problems: Vec<(String, SpecPath, String)> = Vec::new();
    for selecting in endings.values() {
        for (index, one) in selecting.iter().enumerate() {
            for other in &selecting[index + 1..] {
                let (ending, other_ending) = (one.ending, other.ending);
                if other_ending.ends_with(ending) || ending.ends_with(other_ending) {
                    let endings = if ending == other_ending {
                        format!("the same name ending `{ending}`")
                    } else {
                        format!("the name endings `{ending}` and `{other_ending}`, which overlap")
                    };
                    problems.push((
                        format!(
                            "generated policies `{}` (set at {}) and `{}` select their queues by {endings}: one policy would take the other's queues",
                            one.policy,
                            place(&one.group.path),
                            other.policy
                        ),
                        other.group.path.clone(),
                        "rename the ladder or service: their names, with `.` written `_`, must differ".to_string(),
                    ));
                }
            }
        }
    }
    for &(queue, info) in queues {
        let (vhost, name) = (&queue.vhost, &queue.name);
        let Some(selecting) = endings.get(vhost.as_str()) else {
            continue;
        };
        let own = info.needs.iter().find_map(|need| need.ending.as_deref());
        for Selecting {
            ending,
            policy,
            group,
        } in selecting
        {
            let other_type = group.quorum_only && info.queue_type != QueueType::Quorum;
            if own == Some(*ending) || other_type || !ends_with(name, ending) {
                continue;
            }
            let queue_path = out
                .origins
                .get(&ObjectId::in_vhost(ObjectKind::Queue, vhost, name))
                .cloned()
                .unwrap_or_default();
            let settings: Vec<String> = group
                .definition
                .iter()
                .map(|(key, value)| format!("`{key}: {value}`"))
                .collect();
            let kind = if group.quorum_only {
                "quorum queues"
            } else {
                "queues"
            };
            problems.push((
                format!(
                    "queue `{name}` ends in `{ending}`, the ending by which generated policy `{policy}` (`^.*{}$`, set at {}) selects its {kind}: the broker would give this queue the policy's settings ({})",
                    escape(ending),
                    place(&group.path),
                    settings.join(", ")
                ),
                queue_path,
                format!(
                    "rename the queue so that it does not end in `{ending}`: warren keeps the endings `.retry.<n>`, `.retry-<ladder>.<n>` and `.retry.own.<n>` for the delay queues it generates, and `{}` for quorum parking queues from RabbitMQ 4.0 on",
                    naming::PARKING_ENDING
                ),
            ));
        }
    }
    for (message, path, help) in problems {
        out.error("name-convention", message, path).hint(help);
    }
}
