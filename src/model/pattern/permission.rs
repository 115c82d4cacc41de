//! Permission regexes: the regex that grants a user's permission on exactly a set of
//! names, the sum of two such regexes, and the regex over routing keys that a topic
//! permission's `write` is for a set of topic binding patterns. They are written with
//! the policy patterns' tree of names and escaping, but the broker reads them against
//! other things (names per operation, routing keys) and nothing here reads them back,
//! so they are kept apart from the policy patterns and their matcher.

use super::{escape, exact_names_pattern};

/// The pattern a permission regex grants exactly `names` with ([`exact_names_pattern`]),
/// or `^$` (nothing) when there are none.
pub fn permission_pattern(names: &[&str]) -> String {
    if names.is_empty() {
        NOTHING.to_string()
    } else {
        exact_names_pattern(names)
    }
}

/// The permission regex that grants nothing. RabbitMQ reads an empty regex the same way.
pub const NOTHING: &str = "^$";

/// A permission regex that grants what both `a` and `b` grant: their alternation, each
/// kept whole (`^(?:orders\.email)$|^amq\.gen-`). One that grants nothing (`""` or
/// `^$`) adds nothing.
pub fn either(a: &str, b: &str) -> String {
    let grants_nothing = |r: &str| r.is_empty() || r == NOTHING;
    match (grants_nothing(a), grants_nothing(b)) {
        (true, true) => NOTHING.to_string(),
        (false, true) => a.to_string(),
        (true, false) => b.to_string(),
        (false, false) => format!("{a}|{b}"),
    }
}

/// A regex over routing keys that matches exactly the keys the topic binding pattern
/// `pattern` matches (as the broker does, and `routing::topic_matches`: a test there checks
/// they agree): words
/// split on `.`, `*` one word (possibly empty), `#` zero or more words. Not anchored:
/// see [`topic_patterns_regex`].
fn topic_pattern_regex(pattern: &str) -> String {
    let words: Vec<&str> = if pattern.is_empty() {
        Vec::new()
    } else {
        pattern.split('.').collect()
    };
    // The words that are not `#`, each with whether a `#` comes before it; and whether
    // one ends the pattern. Several `#` in a row match what one does.
    let mut tokens: Vec<(bool, &str)> = Vec::new();
    let mut hash = false;
    for word in words {
        if word == "#" {
            hash = true;
        } else {
            tokens.push((hash, word));
            hash = false;
        }
    }
    if tokens.is_empty() {
        return if hash { ".*" } else { "" }.to_string();
    }
    let mut regex = String::new();
    // The empty key has no words at all, not one empty word: a pattern whose words
    // could all be empty must not match it.
    if tokens
        .iter()
        .all(|(_, word)| word.is_empty() || *word == "*")
    {
        regex.push_str("(?!$)");
    }
    for (index, (after_hash, word)) in tokens.iter().enumerate() {
        match (index == 0, after_hash) {
            (true, false) => {}
            (true, true) => regex.push_str("(?:[^.]*\\.)*"),
            (false, false) => regex.push_str("\\."),
            (false, true) => regex.push_str("\\.(?:[^.]*\\.)*"),
        }
        if *word == "*" {
            regex.push_str("[^.]*");
        } else {
            regex.push_str(&escape(word));
        }
    }
    if hash {
        regex.push_str("(?:\\.[^.]*)*");
    }
    regex
}

/// An anchored regex over routing keys matching exactly the keys that one of the topic
/// binding patterns `patterns` matches: what a topic permission's `write` is.
pub fn topic_patterns_regex(patterns: &[&str]) -> String {
    let mut alternatives: Vec<String> = patterns.iter().map(|p| topic_pattern_regex(p)).collect();
    alternatives.sort();
    alternatives.dedup();
    if alternatives.len() == 1 {
        format!("^{}$", alternatives[0])
    } else {
        format!("^(?:{})$", alternatives.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_add_up_and_nothing_adds_nothing() {
        assert_eq!(permission_pattern(&[]), "^$");
        assert_eq!(permission_pattern(&["orders.email"]), "^orders\\.email$");
        assert_eq!(either("^a$", "^amq\\.gen-"), "^a$|^amq\\.gen-");
        assert_eq!(either("^$", "^amq\\.gen-"), "^amq\\.gen-");
        assert_eq!(either("^a$", ""), "^a$");
        assert_eq!(either("", "^$"), "^$");
    }
}
