//! Which policy the broker applies to a queue.
//!
//! The broker picks, among the policies whose pattern matches the name, whose `apply-to`
//! covers the object and whose every key the queue type supports, the one with the
//! highest priority (ties are undefined).

use rustc_hash::FxHashSet as HashSet;

use crate::compile::policies::applies_to;
use crate::compile::policy_keys;
use crate::model::{Policy, Queue};
use crate::spec::QueueType;
use crate::version::TargetVersion;

/// The type of a queue as the broker sees it (`x-queue-type`, else `classic`).
pub fn queue_type(queue: &Queue) -> QueueType {
    let declared = queue
        .arguments
        .get("x-queue-type")
        .or_else(|| queue.extra.get("type"))
        .and_then(|v| v.as_str());
    match declared {
        Some("quorum") => QueueType::Quorum,
        Some("stream") => QueueType::Stream,
        _ => QueueType::Classic,
    }
}

/// The policy the broker applies to `queue`, if any.
pub fn effective_policy<'a>(
    policies: &'a [Policy],
    queue: &Queue,
    target: TargetVersion,
) -> Option<&'a Policy> {
    let kind = queue_type(queue);
    policies
        .iter()
        .filter(|policy| policy.vhost == queue.vhost)
        .filter(|policy| applies_to(&policy.apply_to, kind))
        .filter(|policy| policy_keys::applies_to_queue_type(policy.definition.keys(), kind, target))
        .filter(|policy| PatternMatcher::new(&policy.pattern).is_match(&queue.name))
        .max_by(|a, b| a.priority.cmp(&b.priority).then(b.name.cmp(&a.name)))
}

/// A policy pattern, compiled once and matched against many names.
///
/// Generated policies use anchored alternations of escaped names
/// (`^(?:a|b)\.retry\.1$`, see [`crate::compile::policies::exact_names_pattern`]):
/// such a pattern, and any `^literal$`, is matched by a set lookup instead of a regex,
/// which would otherwise be compiled for every queue and cost time in the length of
/// the pattern. Any other pattern is a `fancy_regex` compiled once; a pattern that does
/// not compile matches nothing.
#[derive(Debug)]
pub enum PatternMatcher {
    /// `^(?:head|head…)suffix$`: the name ends with `suffix` and the rest is a head.
    Exact {
        /// The literal heads.
        heads: HashSet<String>,
        /// The literal suffix written once.
        suffix: String,
    },
    /// Any other pattern.
    Regex(Option<fancy_regex::Regex>),
}

impl PatternMatcher {
    /// Compiles a pattern.
    pub fn new(pattern: &str) -> PatternMatcher {
        match parse_exact(pattern) {
            Some((heads, suffix)) => PatternMatcher::Exact {
                heads: heads.into_iter().collect(),
                suffix,
            },
            None => PatternMatcher::Regex(fancy_regex::Regex::new(pattern).ok()),
        }
    }

    /// Whether the pattern matches the name.
    pub fn is_match(&self, name: &str) -> bool {
        match self {
            PatternMatcher::Exact { heads, suffix } => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| heads.contains(head)),
            PatternMatcher::Regex(regex) => regex
                .as_ref()
                .and_then(|r| r.is_match(name).ok())
                .unwrap_or(false),
        }
    }
}

/// Characters that must be escaped to be literal (see `policies::escape`).
const SPECIAL: &str = "\\.^$|?*+()[]{}";

/// Reads escaped literal text up to an unescaped special character; `None` when the
/// text holds anything but plain characters and escaped special ones.
fn literal(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((index, c)) = chars.next() {
        if c == '\\' {
            let (_, next) = chars.next()?;
            if !SPECIAL.contains(next) {
                return None; // `\d`, `\b`, …: a class or an assertion, not a literal
            }
            out.push(next);
        } else if SPECIAL.contains(c) {
            return Some((out, &text[index..]));
        } else {
            out.push(c);
        }
    }
    Some((out, ""))
}

/// Splits `^(?:a|b)suffix$` or `^literal$` into its heads and suffix.
fn parse_exact(pattern: &str) -> Option<(Vec<String>, String)> {
    let body = pattern.strip_prefix('^')?.strip_suffix('$')?;
    let Some(mut rest) = body.strip_prefix("(?:") else {
        let (text, rest) = literal(body)?;
        return rest.is_empty().then(|| (vec![text], String::new()));
    };
    let mut heads = Vec::new();
    loop {
        let (head, after) = literal(rest)?;
        heads.push(head);
        match after.chars().next()? {
            '|' => rest = &after[1..],
            ')' => {
                rest = &after[1..];
                break;
            }
            _ => return None,
        }
    }
    let (suffix, after) = literal(rest)?;
    after.is_empty().then_some((heads, suffix))
}

#[cfg(test)]
mod tests {
    use super::PatternMatcher;
    use crate::compile::policies::exact_names_pattern;

    /// The set lookup agrees with the regex on every shape it accepts, and refuses the rest.
    #[test]
    fn exact_patterns_match_like_the_regex() {
        let names = ["orders.email", "pay(ments)|x", "a.b.retry", "q$", "x^y"];
        let patterns = [
            exact_names_pattern(&["orders.email.retry.1", "pay(ments)|x.retry.1"]),
            exact_names_pattern(&["q$"]),
            exact_names_pattern(&["x^y", "a.b.retry"]),
            "^orders\\.email$".to_string(),
            "^orders.*$".to_string(),
            "^(?:a|b)\\d$".to_string(),
            "^(?i:orders\\.email)$".to_string(),
            "orders".to_string(),
            "^(?:orders|x)(?:\\.email)$".to_string(),
            "^a\\$".to_string(),
        ];
        let candidates = [
            "orders.email",
            "orders.email.retry.1",
            "pay(ments)|x.retry.1",
            "ordersXemail.retry.1",
            "orders.email.retry.10",
            "q$",
            "x^y",
            "a.b.retry",
            "b1",
            "ORDERS.EMAIL",
            "a$",
            "",
        ];
        for pattern in &patterns {
            let regex = fancy_regex::Regex::new(pattern).unwrap();
            let matcher = PatternMatcher::new(pattern);
            for name in names.iter().chain(candidates.iter()) {
                assert_eq!(
                    matcher.is_match(name),
                    regex.is_match(name).unwrap(),
                    "pattern {pattern} on {name}"
                );
            }
        }
        let generated = exact_names_pattern(&["orders.email.retry.1", "payments.capture.retry.1"]);
        assert!(matches!(
            PatternMatcher::new(&generated),
            PatternMatcher::Exact { .. }
        ));
        assert!(matches!(
            PatternMatcher::new("^orders.*$"),
            PatternMatcher::Regex(_)
        ));
        assert!(!PatternMatcher::new("(unclosed").is_match("(unclosed"));
    }
}
