//! Counted nouns in messages: `1 change`, `2 changes`. Every message that prints a
//! count goes through [`count`], so no output says `1 changes` or `1 vhosts`.

/// `n` and the noun, singular for exactly one: `count(1, "change")` is `1 change`,
/// `count(3, "change")` is `3 changes`. Nouns whose plural is not `-s` or `-es`
/// use [`count_irregular`].
pub fn count(n: impl Count, noun: &str) -> String {
    format!("{} {}", n.as_u64(), noun_for(n, noun))
}

/// The noun alone, singular for exactly one: for counts written another way (with
/// thousands separators, `2,000 of 8,000 objects`).
pub fn noun_for(n: impl Count, noun: &str) -> String {
    if n.as_u64() == 1 {
        noun.to_string()
    } else {
        plural(noun)
    }
}

/// `n` with an explicit singular and plural, for irregular nouns (`entry`/`entries`).
pub fn count_irregular(n: impl Count, singular: &str, plural: &str) -> String {
    let n = n.as_u64();
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// A number of things: any unsigned integer type.
pub trait Count: Copy {
    /// The number as `u64`.
    fn as_u64(self) -> u64;
}

macro_rules! count_for {
    ($($t:ty),*) => {$(
        impl Count for $t {
            fn as_u64(self) -> u64 {
                self as u64
            }
        }
    )*};
}
count_for!(u8, u16, u32, u64, usize);

/// The regular English plural: `-es` after s, x, z, ch, sh; `-ies` after a
/// consonant and y; `-s` otherwise.
pub fn plural(noun: &str) -> String {
    let (head, last_word) = match noun.rsplit_once(' ') {
        Some((head, last)) => (format!("{head} "), last),
        None => (String::new(), noun),
    };
    let word = last_word;
    let ends = |suffix: &str| word.ends_with(suffix);
    let plural = if ends("s") || ends("x") || ends("z") || ends("ch") || ends("sh") {
        format!("{word}es")
    } else if let Some(stem) = word.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
        && !stem.is_empty()
    {
        format!("{stem}ies")
    } else {
        format!("{word}s")
    };
    format!("{head}{plural}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1u32, "change"), "1 change");
        assert_eq!(count(0u32, "change"), "0 changes");
        assert_eq!(count(2u64, "message"), "2 messages");
        assert_eq!(count(1usize, "vhost"), "1 vhost");
        assert_eq!(count(3u32, "match"), "3 matches");
        assert_eq!(count(2u32, "object entry"), "2 object entries");
        assert_eq!(count(2u32, "key"), "2 keys");
        assert_eq!(count(2u32, "retry ladder"), "2 retry ladders");
        assert_eq!(count_irregular(1u32, "was", "were"), "1 was");
        assert_eq!(noun_for(1u32, "queue"), "queue");
        assert_eq!(noun_for(8000u32, "queue"), "queues");
    }
}

/// Whether a reader cannot see `c`, or it reorders what follows: zero-width and other
/// format characters, bidirectional embeddings, overrides and isolates, the byte
/// order mark, and control characters but tab and line feed.
fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}' | '\u{E0000}'..='\u{E0FFF}')
        || (c.is_control() && c != '\n' && c != '\t')
}

/// `text` with every character a reader cannot see (or that reorders the text after
/// it) written as `\u{…}`: a queue named U+200B `z` shows as `\u{200b}z`, never as
/// `z`. The one owner of this escaping: the text and markdown plans and the
/// diagnostics (errors and lint findings) go through it.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    shown(text, false)
}

/// [`visible`] for output warren colored itself: its color sequences (`ESC [ … m`)
/// are kept, every other escape character is shown.
pub fn visible_colored(text: &str) -> std::borrow::Cow<'_, str> {
    shown(text, true)
}

/// Whether `rest` (after an escape character) is a color sequence of the kind warren
/// writes: `[`, parameters separated by semicolons, `m`, where every parameter sets a
/// foreground color but black (31–37, 39, 90–97), bold, dim, italic or underline (1–4,
/// 22–24) or resets (0, or none). A name can reach a colored output with such a
/// sequence in it (the text cannot tell warren's from a name's), so none that could
/// hide text is kept: concealed (8), reversed (7), blinking (5, 6), black (30) or any
/// background (40–49, 100–107) is shown escaped.
fn is_color(rest: &str) -> bool {
    let Some(parameters) = rest
        .strip_prefix('[')
        .and_then(|r| r.find('m').map(|end| &r[..end]))
    else {
        return false;
    };
    parameters.split(';').all(|parameter| {
        parameter.is_empty()
            || parameter
                .parse::<u16>()
                .is_ok_and(|n| matches!(n, 0..=4 | 22..=24 | 31..=37 | 39 | 90..=97))
    })
}

fn shown(text: &str, colors: bool) -> std::borrow::Cow<'_, str> {
    let hidden = |at: usize, c: char| {
        is_hidden(c) && !(colors && c == '\u{1b}' && is_color(&text[at + 1..]))
    };
    if !text.char_indices().any(|(at, c)| hidden(at, c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for (at, c) in text.char_indices() {
        if hidden(at, c) {
            shown.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            shown.push(c);
        }
    }
    std::borrow::Cow::Owned(shown)
}

#[cfg(test)]
mod visible_tests {
    use super::visible;

    #[test]
    fn hidden_and_bidi_characters_are_escaped_and_the_rest_is_kept() {
        assert_eq!(visible("\u{200B}z"), "\\u{200b}z");
        assert_eq!(visible("a\u{202E}b\u{2066}"), "a\\u{202e}b\\u{2066}");
        assert_eq!(visible("\u{1b}[31m"), "\\u{1b}[31m");
        assert_eq!(visible("orders.é\tx\n"), "orders.é\tx\n");
        assert_eq!(
            super::visible_colored("\u{1b}[1;31m!\u{1b}[0m \u{1b}]0;x"),
            "\u{1b}[1;31m!\u{1b}[0m \\u{1b}]0;x"
        );
        // Sequences that would hide or disguise text are never kept.
        assert_eq!(
            super::visible_colored("a\u{1b}[8mb\u{1b}[30;40mc\u{1b}[7md\u{1b}[m"),
            "a\\u{1b}[8mb\\u{1b}[30;40mc\\u{1b}[7md\u{1b}[m"
        );
    }
}
