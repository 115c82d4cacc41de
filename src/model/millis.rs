//! Milliseconds in words: the one writing of a duration, shared by the spec's
//! durations and every message that names a broker's TTL, expiry or delay.

use std::fmt::Write;

/// The shortest exact form of `millis`, e.g. `1h30m`, `250ms`, `0s`.
pub fn text(millis: u64) -> String {
    if millis == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    let mut rest = millis;
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ] {
        if rest >= size {
            let _ = write!(out, "{}{unit}", rest / size);
            rest %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_the_shortest_exact_form() {
        assert_eq!(super::text(0), "0s");
        assert_eq!(super::text(5_400_000), "1h30m");
        assert_eq!(super::text(20_250), "20s250ms");
    }
}
