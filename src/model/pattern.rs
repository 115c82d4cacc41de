//! Policy patterns: how warren writes a pattern that names exactly a set of queues, and
//! how a pattern is matched against queue names without paying for a regex when it
//! names a finite set.
//!
//! Writing and reading live together because they must agree on one escaping rule.
//!
//! Permission regexes, written with the same tree of names and escaping, are in
//! `pattern/permission.rs`.

use rustc_hash::FxHashSet as HashSet;

use super::TargetVersion;

mod permission;

pub use permission::{NOTHING, either, permission_pattern, topic_patterns_regex};

/// The longest policy pattern warren writes for a broker without a length limit of its
/// own. The broker compiles patterns with PCRE, whose compiled form is limited to
/// 64 KiB: RabbitMQ 3.10 rejects an alternation of queue names from about 35,000
/// characters on ("regular expression is too large").
pub const MAX_PATTERN_LENGTH: usize = 20_000;

/// The longest policy pattern warren writes for `target`, in bytes: the broker's own
/// limit where it has one ([`TargetVersion::pattern_byte_limit`]), else
/// [`MAX_PATTERN_LENGTH`].
pub fn max_pattern_length(target: TargetVersion) -> usize {
    target
        .pattern_byte_limit()
        .map_or(MAX_PATTERN_LENGTH, |limit| limit.min(MAX_PATTERN_LENGTH))
}

/// Patterns that together match exactly `names`, each at most `max` bytes long (a
/// single name longer than that still gets its own pattern): the sorted names are
/// halved until every part's pattern fits, so the split is stable.
pub fn split_patterns(names: &[&str], max: usize) -> Vec<String> {
    fn split(names: &[&str], max: usize, out: &mut Vec<String>) {
        let pattern = sorted_names_pattern(names);
        if pattern.len() <= max || names.len() == 1 {
            out.push(pattern);
        } else {
            let middle = names.len() / 2;
            split(&names[..middle], max, out);
            split(&names[middle..], max, out);
        }
    }
    let mut names: Vec<&str> = names.to_vec();
    names.sort_unstable();
    names.dedup();
    let mut parts = Vec::new();
    if !names.is_empty() {
        split(&names, max, &mut parts);
    }
    parts
}

/// Patterns that together match every name ending in `ending` and exactly `names`
/// besides: `^.*<ending>$`, its length independent of how many names end so, with the
/// listed names (those that do not end in `ending`) as a tree inside it,
/// `^(?:.*<ending>|<tree>)$`, split like [`split_patterns`] when the list is long. When
/// the first part of the list has no room left for the ending within `max`, the
/// ending is a part of its own, first.
pub fn ending_patterns(ending: &str, names: &[&str], max: usize) -> Vec<String> {
    let listed: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| !ends_with(name, ending))
        .collect();
    let mut parts = split_patterns(&listed, max);
    let selecting = format!(".*{}", escape(ending));
    let alone = format!("^{selecting}$");
    match parts.first_mut() {
        Some(first) => {
            let body = &first[1..first.len() - 1];
            let both = format!("^(?:{selecting}|{body})$");
            if both.len() <= max {
                *first = both;
            } else {
                parts.insert(0, alone);
            }
        }
        None => parts.push(alone),
    }
    parts
}

/// Whether `^.*<ending>$` matches `name` (`.` does not match a line break).
pub fn ends_with(name: &str, ending: &str) -> bool {
    name.strip_suffix(ending)
        .is_some_and(|head| !head.contains('\n'))
}

/// Escapes the characters that are special in PCRE (the broker's regex engine).
pub fn escape(name: &str) -> String {
    let mut escaped = String::with_capacity(name.len());
    for c in name.chars() {
        if SPECIAL.contains(c) {
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

/// A policy pattern, compiled once and matched against many names.
///
/// Generated policies use anchored trees of escaped names (`^(?:a\.(?:x|y)|b)\.retry\.1$`,
/// see [`exact_names_pattern`]): such a pattern — literal
/// text, non-capturing groups and alternation between `^` and `$` — names a finite set
/// of queues and is matched by a set lookup instead of a regex, which would cost time
/// in the length of the pattern for every queue. Any other pattern is a `fancy_regex`
/// compiled once; a pattern that does not compile matches nothing.
#[derive(Debug)]
pub enum PatternMatcher {
    /// Exactly these names.
    Names(HashSet<String>),
    /// Every name with this ending, and these names (`^(?:.*<ending>|<tree>)$`, see
    /// [`ending_patterns`]).
    Ending(String, HashSet<String>),
    /// Any other pattern.
    Regex(Option<fancy_regex::Regex>),
}

impl PatternMatcher {
    /// Compiles a pattern.
    pub fn new(pattern: &str) -> PatternMatcher {
        if let Some((ending, names)) = parse_ending(pattern) {
            return PatternMatcher::Ending(ending, names.into_iter().collect());
        }
        match parse_names(pattern) {
            Some(names) => PatternMatcher::Names(names.into_iter().collect()),
            None => PatternMatcher::Regex(fancy_regex::Regex::new(pattern).ok()),
        }
    }

    /// The ending a pattern selects its names by, if it is one of
    /// [`ending_patterns`]' shapes.
    pub fn ending(&self) -> Option<&str> {
        match self {
            PatternMatcher::Ending(ending, _) => Some(ending),
            _ => None,
        }
    }

    /// Whether the pattern matches the name.
    pub fn is_match(&self, name: &str) -> bool {
        match self {
            PatternMatcher::Names(names) => names.contains(name),
            PatternMatcher::Ending(ending, names) => {
                ends_with(name, ending) || names.contains(name)
            }
            PatternMatcher::Regex(regex) => regex
                .as_ref()
                .and_then(|r| r.is_match(name).ok())
                .unwrap_or(false),
        }
    }
}

/// A name two patterns both match, or the ending of the names they both match; `None`
/// when they match no name in common, or when one of them is a pattern that is neither
/// an ending nor a set of names (then nobody can tell here).
pub fn overlap(a: &PatternMatcher, b: &PatternMatcher) -> Option<String> {
    use PatternMatcher::{Ending, Names};
    let listed_in = |names: &HashSet<String>, other: &PatternMatcher| {
        let mut common: Vec<&String> = names.iter().filter(|n| other.is_match(n)).collect();
        common.sort();
        common.first().map(|name| format!("`{name}`"))
    };
    match (a, b) {
        (Ending(ea, na), Ending(eb, nb)) => {
            if ea.ends_with(eb.as_str()) || eb.ends_with(ea.as_str()) {
                let longer = if ea.len() >= eb.len() { ea } else { eb };
                Some(format!("every name ending in `{longer}`"))
            } else {
                listed_in(na, b).or_else(|| listed_in(nb, a))
            }
        }
        (Ending(_, _), Names(names)) => listed_in(names, a),
        (Names(names), Ending(_, _) | Names(_)) => listed_in(names, b),
        _ => None,
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

/// The ending and listed names of `^.*<ending>$` or `^(?:.*<ending>|<tree>)$`.
fn parse_ending(pattern: &str) -> Option<(String, Vec<String>)> {
    let body = pattern.strip_prefix('^')?.strip_suffix('$')?;
    let backslashes = body.chars().rev().take_while(|c| *c == '\\').count();
    if backslashes % 2 == 1 {
        return None;
    }
    if let Some(rest) = body.strip_prefix(".*") {
        let (ending, after) = literal(rest)?;
        return (after.is_empty() && !ending.is_empty()).then_some((ending, Vec::new()));
    }
    let rest = body.strip_prefix("(?:.*")?;
    let (ending, after) = literal(rest)?;
    let after = after.strip_prefix('|')?;
    let (names, after) = alternatives(after)?;
    (after == ")" && !ending.is_empty()).then_some((ending, names))
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

/// Characters that are special in PCRE (the broker's regex engine): [`escape`] writes
/// them with a backslash, and the set lookup reads them back.
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
        for target in [TargetVersion::V3_10, TargetVersion::V4_1] {
            let max = max_pattern_length(target);
            let parts = split_patterns(&names, max);
            assert!(parts.len() > 1, "{target}: {} parts", parts.len());
            assert!(parts.iter().all(|p| p.len() <= max), "{target}");
            // Every name is matched by exactly one part, and nothing else is.
            let matchers: Vec<_> = parts.iter().map(|p| PatternMatcher::new(p)).collect();
            for name in &names {
                assert_eq!(
                    matchers.iter().filter(|m| m.is_match(name)).count(),
                    1,
                    "{target}: {name}"
                );
            }
            assert!(
                !matchers
                    .iter()
                    .any(|m| m.is_match("0000000000000000.retry.2"))
            );
        }
        assert_eq!(max_pattern_length(TargetVersion::V4_0), MAX_PATTERN_LENGTH);
        assert_eq!(max_pattern_length(TargetVersion::V4_1), 1024);
        assert_eq!(
            split_patterns(&["a.retry.1"], MAX_PATTERN_LENGTH),
            vec![r"^a\.retry\.1$".to_string()]
        );
    }

    /// A tier whose listed names fill the first part leaves no room for its ending in
    /// it: the ending is a part of its own, and still every name is matched once.
    #[test]
    fn an_ending_without_room_in_the_first_part_is_a_part_of_its_own() {
        let names: Vec<String> = (0..200u64)
            .map(|i| format!("{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let max = 1024;
        let parts = ending_patterns(".retry.1", &names, max);
        assert!(parts.iter().all(|p| p.len() <= max), "{parts:?}");
        let matchers: Vec<_> = parts.iter().map(|p| PatternMatcher::new(p)).collect();
        for name in names.iter().copied().chain(["other.retry.1"]) {
            assert_eq!(
                matchers.iter().filter(|m| m.is_match(name)).count(),
                1,
                "{name}"
            );
        }
        // Parts that fit keep the ending and the first names together.
        let few = ending_patterns(".retry.1", &names[..3], max);
        assert_eq!(few.len(), 1);
        assert_eq!(PatternMatcher::new(&few[0]).ending(), Some(".retry.1"));
    }

    #[test]
    fn overlapping_patterns_are_found() {
        let m = |p: &str| PatternMatcher::new(p);
        let plain = m(r"^.*\.retry\.1$");
        assert_eq!(
            overlap(&plain, &m(r"^.*\.retry\.1$")).as_deref(),
            Some("every name ending in `.retry.1`")
        );
        assert_eq!(overlap(&plain, &m(r"^.*\.retry-slow\.1$")), None);
        assert_eq!(overlap(&plain, &m(r"^.*\.retry\.2$")), None);
        assert_eq!(
            overlap(&plain, &m(r"^(?:a\.retry\.1|b)$")).as_deref(),
            Some("`a.retry.1`")
        );
        assert_eq!(
            overlap(&m(r"^(?:.*\.retry-x\.1|q)$"), &m(r"^(?:q|r)$")).as_deref(),
            Some("`q`")
        );
        assert_eq!(overlap(&m("^(?:a|b)$"), &m("^(?:c|d)$")), None);
        assert_eq!(overlap(&plain, &m("^.*retry.*$")), None);
    }

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
            ending_patterns(".retry.1", &[], MAX_PATTERN_LENGTH).remove(0),
            ending_patterns(
                ".retry-x.1",
                &["q.1", "orders.email", "a.retry.1"],
                MAX_PATTERN_LENGTH,
            )
            .remove(0),
            "^.*\\.retry\\.1|x$".to_string(),
            "^(?:.*\\.retry\\.1|x)y$".to_string(),
            "^.*$".to_string(),
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
            "s.c.retry.1",
            "s.c.retry.11",
            ".retry.1",
            "a\nb.retry.1",
            "s.c.retry-x.1",
            "s.c.retry-xx.1",
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
        assert_eq!(
            PatternMatcher::new(&ending_patterns(".retry.1", &["q"], MAX_PATTERN_LENGTH)[0])
                .ending(),
            Some(".retry.1")
        );
        assert_eq!(PatternMatcher::new("^.*$").ending(), None);
    }
}
