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
/// Generated policies use anchored trees of escaped names (`^(?:a\.(?:x|y)|b)\.retry\.1$`,
/// see [`crate::compile::policies::exact_names_pattern`]): such a pattern — literal
/// text, non-capturing groups and alternation between `^` and `$` — names a finite set
/// of queues and is matched by a set lookup instead of a regex, which would cost time
/// in the length of the pattern for every queue. Any other pattern is a `fancy_regex`
/// compiled once; a pattern that does not compile matches nothing.
#[derive(Debug)]
pub enum PatternMatcher {
    /// Exactly these names.
    Names(HashSet<String>),
    /// Any other pattern.
    Regex(Option<fancy_regex::Regex>),
}

impl PatternMatcher {
    /// Compiles a pattern.
    pub fn new(pattern: &str) -> PatternMatcher {
        match parse_names(pattern) {
            Some(names) => PatternMatcher::Names(names.into_iter().collect()),
            None => PatternMatcher::Regex(fancy_regex::Regex::new(pattern).ok()),
        }
    }

    /// Whether the pattern matches the name.
    pub fn is_match(&self, name: &str) -> bool {
        match self {
            PatternMatcher::Names(names) => names.contains(name),
            PatternMatcher::Regex(regex) => regex
                .as_ref()
                .and_then(|r| r.is_match(name).ok())
                .unwrap_or(false),
        }
    }
}

/// More names than this and a pattern is matched as a regex (a user pattern such as
/// `^(?:a|b)(?:a|b)…` could name exponentially many).
const MAX_NAMES: usize = 1_000_000;

/// The names an anchored pattern of literals, `(?:…|…)` groups and alternation stands
/// for; `None` for any other pattern.
fn parse_names(pattern: &str) -> Option<Vec<String>> {
    let body = pattern.strip_prefix('^')?.strip_suffix('$')?;
    // `\$` at the end is a literal dollar, not the anchor.
    let backslashes = body.chars().rev().take_while(|c| *c == '\\').count();
    if backslashes % 2 == 1 {
        return None;
    }
    // A top-level `|` splits the anchors too (`^a|b$` is `(^a)|(b$)`): not a set.
    let (names, rest) = sequence(body)?;
    rest.is_empty().then_some(names)
}

/// `seq ('|' seq)*`, up to a `)` or the end.
fn alternatives(text: &str) -> Option<(Vec<String>, &str)> {
    let mut names = Vec::new();
    let mut rest = text;
    loop {
        let (found, after) = sequence(rest)?;
        names.extend(found);
        if names.len() > MAX_NAMES {
            return None;
        }
        match after.strip_prefix('|') {
            Some(next) => rest = next,
            None => return Some((names, after)),
        }
    }
}

/// Literals and `(?:…)` groups, up to a `|`, a `)` or the end.
fn sequence(text: &str) -> Option<(Vec<String>, &str)> {
    let mut names = vec![String::new()];
    let mut rest = text;
    loop {
        match rest.chars().next() {
            None | Some('|') | Some(')') => return Some((names, rest)),
            Some('(') => {
                let (options, after) = alternatives(rest.strip_prefix("(?:")?)?;
                rest = after.strip_prefix(')')?;
                if names.len().saturating_mul(options.len()) > MAX_NAMES {
                    return None;
                }
                names = names
                    .iter()
                    .flat_map(|name| options.iter().map(move |option| format!("{name}{option}")))
                    .collect();
            }
            Some(_) => {
                let (text, after) = literal(rest)?;
                if after.len() == rest.len() {
                    return None; // a special character that is not ours: `.`, `*`, `[`…
                }
                for name in &mut names {
                    name.push_str(&text);
                }
                rest = after;
            }
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
            "^a|b$".to_string(),
            exact_names_pattern(&["q.1", "q.12", "q.2", "r.1"]),
            exact_names_pattern(&[
                "orders.email.retry.1",
                "orders.sms.retry.1",
                "orders.sms.urgent.retry.1",
            ]),
            "^(?:a|b)(?:.x|y)$".to_string(),
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
            "ax",
            "xb",
            "q.1",
            "q.12",
            "q.2",
            "q.",
            "r.1",
            "orders.sms.retry.1",
            "orders.sms.urgent.retry.1",
            "orders.smsurgent.retry.1",
            "ay",
            "a.x",
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
            PatternMatcher::Names(_)
        ));
        assert!(matches!(
            PatternMatcher::new("^orders.*$"),
            PatternMatcher::Regex(_)
        ));
        assert!(!PatternMatcher::new("(unclosed").is_match("(unclosed"));
    }
}
