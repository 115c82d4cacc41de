//! Human durations such as `250ms`, `30s`, `5m`, `1h30m` or `2d`.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest TTL RabbitMQ accepts (10 years, in milliseconds).
pub const MAX_TTL_MS: u64 = 315_360_000_000;

/// A duration written with units; stored in whole milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    millis: u64,
}

impl Duration {
    /// A duration of `millis` milliseconds.
    pub fn from_millis(millis: u64) -> Self {
        Duration { millis }
    }

    /// Length in milliseconds.
    pub fn as_millis(self) -> u64 {
        self.millis
    }

    /// Parses `250ms`, `30s`, `5m`, `1h30m`, `2d` (units may be combined, largest first).
    pub fn parse(text: &str) -> Result<Duration, String> {
        if text.is_empty() {
            return Err("empty duration: write a number with a unit, e.g. `30s`".into());
        }
        if text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "duration `{text}` has no unit: write e.g. `{text}s` or `{text}ms`"
            ));
        }
        let mut total: u64 = 0;
        let mut rest = text;
        let mut last_unit_rank: Option<usize> = None;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 {
                return Err(format!(
                    "invalid duration `{text}`: expected a number at `{rest}` (e.g. `30s`, `5m`, `1h30m`)"
                ));
            }
            let number: u64 = rest[..digits]
                .parse()
                .map_err(|_| format!("duration `{text}` is too large"))?;
            rest = &rest[digits..];
            let unit_len = rest.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
            let unit = &rest[..unit_len];
            rest = &rest[unit_len..];
            let (rank, factor) = match unit {
                "d" => (0, 86_400_000),
                "h" => (1, 3_600_000),
                "m" => (2, 60_000),
                "s" => (3, 1_000),
                "ms" => (4, 1),
                "" if rest.starts_with('.') => {
                    return Err(format!(
                        "duration `{text}` has a fraction: write it in a smaller unit, e.g. `1500ms` for `1.5s`"
                    ));
                }
                "" => {
                    return Err(format!(
                        "duration `{text}` has a number without a unit: use ms, s, m, h or d"
                    ));
                }
                other => {
                    return Err(format!(
                        "unknown unit `{other}` in duration `{text}`: use ms, s, m, h or d"
                    ));
                }
            };
            if last_unit_rank.is_some_and(|last| rank <= last) {
                return Err(format!(
                    "invalid duration `{text}`: write units from largest to smallest, each once (e.g. `1h30m`)"
                ));
            }
            last_unit_rank = Some(rank);
            total = number
                .checked_mul(factor)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(|| format!("duration `{text}` is too large"))?;
        }
        Ok(Duration { millis: total })
    }
}

impl fmt::Display for Duration {
    /// Writes the shortest exact form, e.g. `1h30m`, `250ms`, `0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::model::millis::text(self.millis))
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration with a unit, e.g. `30s`, `5m`, `1h30m`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                Duration::parse(v).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "duration `{v}` has no unit: write e.g. `{v}s` or `{v}ms`"
                )))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "duration `{v}` has no unit: write e.g. `{v}s` or `{v}ms`"
                )))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "duration `{v}` has no unit: write e.g. `{v}s`; fractions are written in a smaller unit (`1500ms`)"
                )))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // At least one unit, largest first, written without a look-ahead (`(?!$)`):
        // validators whose regex engine has none (Rust's `regex`, Go's RE2) refuse a
        // pattern with one, and with it the whole schema.
        schemars::json_schema!({
            "type": "string",
            "pattern": "^([0-9]+d([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?|[0-9]+h([0-9]+m)?([0-9]+s)?([0-9]+ms)?|[0-9]+m([0-9]+s)?([0-9]+ms)?|[0-9]+s([0-9]+ms)?|[0-9]+ms)$",
            "description": "A duration with units, largest first: `250ms`, `30s`, `5m`, `1h30m`, `2d`.",
            "examples": ["30s", "5m", "1h30m"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_and_combined_units() {
        assert_eq!(Duration::parse("250ms").unwrap().as_millis(), 250);
        assert_eq!(Duration::parse("30s").unwrap().as_millis(), 30_000);
        assert_eq!(Duration::parse("5m").unwrap().as_millis(), 300_000);
        assert_eq!(Duration::parse("1h30m").unwrap().as_millis(), 5_400_000);
        assert_eq!(Duration::parse("2d").unwrap().as_millis(), 172_800_000);
        assert_eq!(Duration::parse("1m500ms").unwrap().as_millis(), 60_500);
    }

    #[test]
    fn rejects_missing_units_and_bad_order() {
        assert!(Duration::parse("30").unwrap_err().contains("no unit"));
        assert!(
            Duration::parse("5x")
                .unwrap_err()
                .contains("unknown unit `x`")
        );
        assert!(
            Duration::parse("30m1h")
                .unwrap_err()
                .contains("largest to smallest")
        );
        assert!(Duration::parse("").is_err());
        assert!(Duration::parse("1.5s").unwrap_err().contains("1500ms"));
        assert!(Duration::parse(" 30s").is_err());
        assert!(
            Duration::parse("99999999999999999999d")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn displays_shortest_exact_form() {
        for text in ["250ms", "30s", "5m", "1h30m", "2d", "1m500ms", "0s"] {
            assert_eq!(Duration::parse(text).unwrap().to_string(), text);
        }
    }
}
