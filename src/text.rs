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
