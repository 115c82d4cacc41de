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

use super::{Emitter, ObjectId, ObjectKind, policy_keys};
use crate::model::{Arguments, Policy};
use crate::spec::{QueueType, Spec, SpecPath};

/// Prefix of every policy warren generates.
pub const GENERATED_PREFIX: &str = "warren.";

/// Default priority of generated policies.
pub const DEFAULT_PRIORITY: i64 = 100;

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
    let user_policies: Vec<(Policy, Option<fancy_regex::Regex>, SpecPath)> = out
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
            (
                policy.clone(),
                fancy_regex::Regex::new(&policy.pattern).ok(),
                path,
            )
        })
        .collect();
    for (policy, _, path) in &user_policies {
        if policy.name.starts_with(GENERATED_PREFIX) {
            out.error(
                "invalid-name",
                format!("policy name `{}` uses the `{GENERATED_PREFIX}` prefix, which warren keeps for the policies it generates", policy.name),
                path.clone(),
            )
            .hint("rename the policy");
        }
    }
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
        let mut group_name = group_names.join("+");
        let path = info.needs[0].path.clone();
        let winner = user_policies
            .iter()
            .filter(|(policy, regex, _)| {
                policy.vhost == *vhost
                    && applies_to(&policy.apply_to, info.queue_type)
                    && regex
                        .as_ref()
                        .is_some_and(|r| r.is_match(queue).unwrap_or(false))
                    && policy_keys::applies_to_queue_type(
                        policy.definition.keys(),
                        info.queue_type,
                        target,
                    )
            })
            .max_by(|a, b| {
                a.0.priority
                    .cmp(&b.0.priority)
                    .then(b.0.name.cmp(&a.0.name))
            });
        if let Some((user, _, user_path)) = winner {
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
            group_name = format!("{group_name}+{}", user.name);
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
                    "the settings at `{path}` and at `{}` would share the generated policy `{GENERATED_PREFIX}{group_name}` but differ",
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
            let name = match part {
                0 => format!("{GENERATED_PREFIX}{group_name}"),
                _ => format!("{GENERATED_PREFIX}{group_name}~{}", part + 1),
            };
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

/// The longest policy pattern warren writes. The broker compiles patterns with PCRE,
/// whose compiled form is limited to 64 KiB: RabbitMQ 3.10 rejects an alternation of
/// queue names from about 35,000 characters on ("regular expression is too large").
pub const MAX_PATTERN_LENGTH: usize = 20_000;

/// Patterns that together match exactly `names`, each at most [`MAX_PATTERN_LENGTH`]
/// long (a single name longer than that still gets its own pattern): the sorted names
/// are halved until every part's pattern fits, so the split is stable.
pub fn split_patterns(names: &[&str]) -> Vec<String> {
    fn split(names: &[&str], out: &mut Vec<String>) {
        let pattern = sorted_names_pattern(names);
        if pattern.len() <= MAX_PATTERN_LENGTH || names.len() == 1 {
            out.push(pattern);
        } else {
            let middle = names.len() / 2;
            split(&names[..middle], out);
            split(&names[middle..], out);
        }
    }
    let mut names: Vec<&str> = names.to_vec();
    names.sort_unstable();
    names.dedup();
    let mut parts = Vec::new();
    if !names.is_empty() {
        split(&names, &mut parts);
    }
    parts
}

/// Whether a policy's `apply-to` covers a queue of this type.
pub fn applies_to(apply_to: &str, queue_type: QueueType) -> bool {
    match apply_to {
        "queues" | "all" => true,
        "classic_queues" => queue_type == QueueType::Classic,
        "quorum_queues" => queue_type == QueueType::Quorum,
        "streams" => queue_type == QueueType::Stream,
        _ => false,
    }
}

/// Escapes the characters that are special in PCRE (the broker's regex engine).
pub fn escape(name: &str) -> String {
    let mut escaped = String::with_capacity(name.len());
    for c in name.chars() {
        if "\\.^$|?*+()[]{}".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// A pattern matching exactly these names: the common suffix written once and the rest
/// as a tree of their shared prefixes, e.g.
/// `^(?:orders\.(?:email|sms)|payments\.capture)\.retry\.1$`.
///
/// The tree keeps the pattern short, and makes the broker's match of a queue name cost
/// the length of the name rather than the number of names: PCRE tries the branches of
/// a group by their first character, where a flat alternation tries every name.
pub fn exact_names_pattern(names: &[&str]) -> String {
    let mut names: Vec<&str> = names.to_vec();
    names.sort_unstable();
    names.dedup();
    sorted_names_pattern(&names)
}

/// [`exact_names_pattern`] of names already sorted and distinct.
fn sorted_names_pattern(names: &[&str]) -> String {
    if names.len() == 1 {
        return format!("^{}$", escape(names[0]));
    }
    let suffix = common_suffix(names);
    let mut heads: Vec<&str> = names
        .iter()
        .map(|name| &name[..name.len() - suffix.len()])
        .collect();
    // The tree needs heads that start alike next to each other.
    heads.sort_unstable();
    let mut pattern = String::from("^");
    write_tree(&heads, &mut pattern);
    pattern.push_str(&escape(suffix));
    pattern.push('$');
    pattern
}

/// Writes sorted, distinct strings (one may be empty) as a tree of groups.
fn write_tree(heads: &[&str], out: &mut String) {
    if let [only] = heads {
        out.push_str(&escape(only));
        return;
    }
    let prefix = common_prefix(heads);
    if !prefix.is_empty() {
        out.push_str(&escape(prefix));
        let rest: Vec<&str> = heads.iter().map(|h| &h[prefix.len()..]).collect();
        write_tree(&rest, out);
        return;
    }
    out.push_str("(?:");
    let mut start = 0;
    while start < heads.len() {
        let first = heads[start].chars().next();
        let end = start
            + heads[start..]
                .iter()
                .take_while(|h| h.chars().next() == first)
                .count();
        if start > 0 {
            out.push('|');
        }
        write_tree(&heads[start..end], out);
        start = end;
    }
    out.push(')');
}

/// The longest prefix all strings share, cut at a char boundary.
fn common_prefix<'a>(strings: &[&'a str]) -> &'a str {
    let first = strings[0];
    let mut length = first.len();
    for other in &strings[1..] {
        length = first
            .char_indices()
            .zip(other.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((index, c), _)| index + c.len_utf8())
            .min(length);
    }
    &first[..length]
}

/// The longest common suffix that leaves every name a non-empty head, cut at a char
/// boundary.
fn common_suffix<'a>(names: &[&'a str]) -> &'a str {
    let first = names[0];
    let shortest = names.iter().map(|n| n.len()).min().unwrap_or(0);
    let mut length = 0;
    for (offset, _) in first.char_indices().rev() {
        let candidate = first.len() - offset;
        if candidate >= shortest {
            break;
        }
        if names.iter().all(|n| n.ends_with(&first[offset..])) {
            length = candidate;
        } else {
            break;
        }
    }
    &first[first.len() - length..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_exactly_the_named_queues() {
        let pattern = exact_names_pattern(&["orders.email.retry.1", "payments.charge.retry.1"]);
        assert_eq!(pattern, r"^(?:orders\.email|payments\.charge)\.retry\.1$");
        let regex = fancy_regex::Regex::new(&pattern).unwrap();
        assert!(regex.is_match("orders.email.retry.1").unwrap());
        assert!(regex.is_match("payments.charge.retry.1").unwrap());
        assert!(!regex.is_match("orders.email.retry.10").unwrap());
        assert!(!regex.is_match("xorders.email.retry.1").unwrap());
        assert!(!regex.is_match("ordersXemail.retry.1").unwrap());
    }

    #[test]
    fn shared_prefixes_are_written_once() {
        let names = [
            "orders.email.retry.1",
            "orders.sms.retry.1",
            "orders.sms.urgent.retry.1",
            "payments.capture.retry.1",
        ];
        let pattern = exact_names_pattern(&names);
        assert_eq!(
            pattern,
            r"^(?:orders\.(?:email|sms(?:|\.urgent))|payments\.capture)\.retry\.1$"
        );
        let regex = fancy_regex::Regex::new(&pattern).unwrap();
        for name in names {
            assert!(regex.is_match(name).unwrap(), "{name}");
        }
        for other in [
            "orders.retry.1",
            "orders.sms.urgen.retry.1",
            "orders.smsx.retry.1",
        ] {
            assert!(!regex.is_match(other).unwrap(), "{other}");
        }
    }

    #[test]
    fn single_names_and_special_characters_are_escaped() {
        assert_eq!(exact_names_pattern(&["a+b (1)"]), r"^a\+b \(1\)$");
        let pattern = exact_names_pattern(&["q.1", "q.12"]);
        let regex = fancy_regex::Regex::new(&pattern).unwrap();
        assert!(regex.is_match("q.1").unwrap() && regex.is_match("q.12").unwrap());
        assert!(!regex.is_match("q.2").unwrap());
    }

    #[test]
    fn large_groups_are_split_into_patterns_the_broker_accepts() {
        // Names with little in common, so that the tree cannot shorten them much.
        let names: Vec<String> = (0..5000u64)
            .map(|i| format!("{:016x}.retry.1", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let parts = split_patterns(&names);
        assert!(parts.len() > 1, "{} parts", parts.len());
        assert!(parts.iter().all(|p| p.len() <= MAX_PATTERN_LENGTH));
        // Every name is matched by exactly one part, and nothing else is.
        let matchers: Vec<_> = parts
            .iter()
            .map(|p| crate::model::effective::PatternMatcher::new(p))
            .collect();
        for name in &names {
            assert_eq!(
                matchers.iter().filter(|m| m.is_match(name)).count(),
                1,
                "{name}"
            );
        }
        assert!(
            !matchers
                .iter()
                .any(|m| m.is_match("0000000000000000.retry.2"))
        );
        assert_eq!(
            split_patterns(&["a.retry.1"]),
            vec![r"^a\.retry\.1$".to_string()]
        );
    }

    #[test]
    fn apply_to_covers_the_right_queue_types() {
        assert!(applies_to("queues", QueueType::Stream));
        assert!(applies_to("quorum_queues", QueueType::Quorum));
        assert!(!applies_to("classic_queues", QueueType::Quorum));
        assert!(!applies_to("exchanges", QueueType::Classic));
    }
}
