//! Bounds on what a diagnostic repeats from its input.
//!
//! Messages quote names, keys and values from the spec (`unknown key `…``), and a spec
//! can hold a 1 MB key or a name full of terminal escape codes. A diagnostic is read in
//! a terminal or a CI log: it quotes at most [`MAX_QUOTE`] characters of any one value,
//! shows control characters as escapes, and is never longer than [`MAX_MESSAGE`]
//! characters, whatever its input.

/// Most characters of one quoted value kept in a message.
pub const MAX_QUOTE: usize = 64;
/// Most characters of a whole message or help text.
pub const MAX_MESSAGE: usize = 600;
/// The mark left where text was cut out.
pub const ELLIPSIS: char = '…';

/// A number with thousands separators, as limits are written in messages.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `text` with control characters escaped and, when longer than `max` characters, its
/// middle replaced by `…` (the start names a thing best; the end often tells similar
/// names apart).
pub fn middle(text: &str, max: usize) -> String {
    let escaped = escape_controls(text);
    let count = escaped.chars().count();
    if count <= max {
        return escaped;
    }
    let tail = max / 4;
    let head = max.saturating_sub(tail + 1);
    let mut out: String = escaped.chars().take(head).collect();
    out.push(ELLIPSIS);
    out.extend(escaped.chars().skip(count - tail));
    out
}

/// A value to quote in a message: at most [`MAX_QUOTE`] characters, controls escaped.
pub fn value(text: &str) -> String {
    middle(text, MAX_QUOTE)
}

/// A whole message: each `` `quoted` `` or `"quoted"` part shortened as a [`value`],
/// control characters escaped, and the whole at most [`MAX_MESSAGE`] characters.
pub fn message(text: &str) -> String {
    // The common case, a short plain message, is returned as it is.
    if text.len() <= MAX_QUOTE && !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len().min(MAX_MESSAGE * 4));
    let mut rest = text;
    while let Some(open) = rest.find(['`', '"']) {
        let quote = rest[open..].chars().next().unwrap_or('`');
        out.push_str(&escape_controls(&rest[..open]));
        let inner = &rest[open + 1..];
        match inner.find(quote) {
            Some(close) => {
                out.push(quote);
                out.push_str(&value(&inner[..close]));
                out.push(quote);
                rest = &inner[close + 1..];
            }
            None => {
                out.push(quote);
                rest = inner;
            }
        }
    }
    out.push_str(&escape_controls(rest));
    let count = out.chars().count();
    if count > MAX_MESSAGE {
        let mut cut: String = out.chars().take(MAX_MESSAGE - 1).collect();
        cut.push(ELLIPSIS);
        return cut;
    }
    out
}

/// Control characters (NUL, escape codes, line breaks) written as Rust escapes, so a
/// value cannot move the cursor, colour a terminal or fake a line of output.
fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(8_388_608), "8,388,608");
    }

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(message("unknown key `delay`"), "unknown key `delay`");
        assert_eq!(value("orders"), "orders");
    }

    #[test]
    fn long_quoted_values_keep_their_ends() {
        let key = format!("start{}end", "y".repeat(10_000));
        let shortened = message(&format!("unknown key `{key}` here"));
        assert!(shortened.starts_with("unknown key `starty"));
        assert!(shortened.ends_with("yend` here"));
        assert!(shortened.contains('…'));
        assert!(shortened.chars().count() < 100, "{shortened}");
    }

    #[test]
    fn whole_messages_are_bounded() {
        let long = "word ".repeat(1_000);
        assert_eq!(message(&long).chars().count(), MAX_MESSAGE);
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            message("name `a\u{1b}[31mb\0` is bad"),
            "name `a\\u{1b}[31mb\\u{0}` is bad"
        );
        assert_eq!(middle("a\nb", 10), "a\\nb");
    }
}
