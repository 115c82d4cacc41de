//! The queue arguments RabbitMQ knows: the value each takes and the queue types that
//! accept it, as the broker checks them when a queue is declared (and when a
//! definitions file is imported, which declares every queue).
//!
//! One table for the compiler (plain queues in a spec), the definitions-file rules
//! (`definitions_file::rules`) and lint (`argument-unsupported-by-queue-type`). Values
//! are those seen on RabbitMQ 3.10.8 and 4.0.5 (docs/definitions-files.md).

use serde_json::Value;

use super::{QueueType, TargetVersion};

/// The longest TTL or expiry the broker takes: ten years in milliseconds.
pub const MAX_EXPIRY_MS: u64 = 315_360_000_000;

/// The value an argument takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentValue {
    /// A whole number ≥ 0.
    NonNegative,
    /// A whole number from 0 to [`MAX_EXPIRY_MS`] (`x-message-ttl`).
    Ttl,
    /// A whole number from 1 to [`MAX_EXPIRY_MS`] (`x-expires`).
    Expiry,
    /// A whole number from 0 to 255 (`x-max-priority`).
    Priority,
    /// A whole number ≥ 1.
    Positive,
    /// A string.
    Text,
    /// One of a fixed set of strings.
    OneOf(&'static [&'static str]),
    /// One of a fixed set of whole numbers.
    Among(&'static [u64]),
    /// `true` or `false`.
    Boolean,
    /// A stream retention age: a positive number and a unit, `7D`, `12h`.
    Age,
    /// A whole number, negative included. The broker stores any value as given; only
    /// a whole number means something (`x-delivery-limit`: -1 is "no limit" on 4.x).
    Integer,
    /// Not checked by the broker (stored as given).
    Unchecked,
}

/// What the broker knows about one queue argument.
#[derive(Debug, Clone, Copy)]
pub struct QueueArgument {
    /// The argument as written, `x-…`.
    pub name: &'static str,
    /// The value it takes.
    pub value: ArgumentValue,
    /// Classic queues accept it.
    pub classic: bool,
    /// Quorum queues accept it.
    pub quorum: bool,
    /// Streams accept it.
    pub stream: bool,
}

const fn argument(
    name: &'static str,
    value: ArgumentValue,
    (classic, quorum, stream): (bool, bool, bool),
) -> QueueArgument {
    QueueArgument {
        name,
        value,
        classic,
        quorum,
        stream,
    }
}

const CLASSIC_AND_QUORUM: (bool, bool, bool) = (true, true, false);
const CLASSIC: (bool, bool, bool) = (true, false, false);
const QUORUM: (bool, bool, bool) = (false, true, false);
const STREAM: (bool, bool, bool) = (false, false, true);
const EVERY_TYPE: (bool, bool, bool) = (true, true, true);

/// Every queue argument the broker knows.
pub const QUEUE_ARGUMENTS: &[QueueArgument] = &[
    argument("x-message-ttl", ArgumentValue::Ttl, CLASSIC_AND_QUORUM),
    argument("x-expires", ArgumentValue::Expiry, CLASSIC_AND_QUORUM),
    argument(
        "x-max-length",
        ArgumentValue::NonNegative,
        CLASSIC_AND_QUORUM,
    ),
    argument("x-max-length-bytes", ArgumentValue::NonNegative, EVERY_TYPE),
    argument(
        "x-overflow",
        ArgumentValue::OneOf(&["drop-head", "reject-publish", "reject-publish-dlx"]),
        CLASSIC_AND_QUORUM,
    ),
    argument(
        "x-dead-letter-exchange",
        ArgumentValue::Text,
        CLASSIC_AND_QUORUM,
    ),
    argument(
        "x-dead-letter-routing-key",
        ArgumentValue::Text,
        CLASSIC_AND_QUORUM,
    ),
    argument(
        "x-dead-letter-strategy",
        ArgumentValue::OneOf(&["at-most-once", "at-least-once"]),
        QUORUM,
    ),
    argument("x-delivery-limit", ArgumentValue::Integer, QUORUM),
    argument("x-max-priority", ArgumentValue::Priority, CLASSIC),
    argument(
        "x-queue-mode",
        ArgumentValue::OneOf(&["default", "lazy"]),
        CLASSIC,
    ),
    argument("x-queue-version", ArgumentValue::Among(&[1, 2]), CLASSIC),
    argument(
        "x-single-active-consumer",
        ArgumentValue::Boolean,
        CLASSIC_AND_QUORUM,
    ),
    argument(
        "x-quorum-initial-group-size",
        ArgumentValue::Positive,
        QUORUM,
    ),
    argument("x-max-in-memory-length", ArgumentValue::NonNegative, QUORUM),
    argument("x-max-in-memory-bytes", ArgumentValue::NonNegative, QUORUM),
    argument(
        "x-queue-leader-locator",
        ArgumentValue::Unchecked,
        EVERY_TYPE,
    ),
    argument("x-queue-master-locator", ArgumentValue::Unchecked, CLASSIC),
    // From 4.3 only quorum queues evaluate consumer timeouts, and a classic queue
    // refuses the argument (measured on 4.3.6; 4.0.5 accepts it).
    argument("x-consumer-timeout", ArgumentValue::NonNegative, EVERY_TYPE),
    // Native delayed retry (4.3 on), quorum queues only: 4.3.6 refuses it on a classic
    // queue. Before 4.3 every type stores it and nothing delays (measured on 4.0.5), and
    // 4.3.6 stores any value as given (`bogus`, a min above the max): warren checks the
    // values itself.
    argument(
        "x-delayed-retry-type",
        ArgumentValue::OneOf(&["disabled", "all", "failed", "returned"]),
        QUORUM,
    ),
    argument("x-delayed-retry-min", ArgumentValue::NonNegative, QUORUM),
    argument("x-delayed-retry-max", ArgumentValue::NonNegative, QUORUM),
    argument("x-max-age", ArgumentValue::Age, STREAM),
    argument(
        "x-stream-max-segment-size-bytes",
        ArgumentValue::NonNegative,
        STREAM,
    ),
    argument("x-initial-cluster-size", ArgumentValue::Positive, STREAM),
    argument(
        "x-queue-type",
        ArgumentValue::OneOf(&["classic", "quorum", "stream"]),
        EVERY_TYPE,
    ),
];

/// Looks an argument up.
pub fn find(name: &str) -> Option<&'static QueueArgument> {
    QUEUE_ARGUMENTS.iter().find(|a| a.name == name)
}

/// Names of every argument, for suggestions.
pub fn names() -> Vec<String> {
    QUEUE_ARGUMENTS.iter().map(|a| a.name.to_string()).collect()
}

impl QueueArgument {
    /// Whether a queue of this type accepts the argument on `target`.
    pub fn accepted_by(&self, queue_type: QueueType, target: TargetVersion) -> bool {
        match queue_type {
            // Classic queues take a leader locator from 4.0 on (3.10 refuses it).
            QueueType::Classic if self.name == "x-queue-leader-locator" => {
                target >= TargetVersion::V4_0
            }
            QueueType::Classic if self.name == "x-consumer-timeout" => {
                target.times_out_classic_consumers()
            }
            _ if self.name.starts_with("x-delayed-retry-") => {
                queue_type == QueueType::Quorum || !target.has_native_delayed_retry()
            }
            QueueType::Classic => self.classic,
            QueueType::Quorum => self.quorum,
            QueueType::Stream => self.stream,
        }
    }

    /// Checks a value; returns what the broker expects when it does not fit.
    pub fn check_value(&self, value: &Value) -> Result<(), String> {
        let whole = value.as_u64();
        let ok = match self.value {
            ArgumentValue::NonNegative => whole.is_some(),
            ArgumentValue::Ttl => whole.is_some_and(|v| v <= MAX_EXPIRY_MS),
            ArgumentValue::Expiry => whole.is_some_and(|v| (1..=MAX_EXPIRY_MS).contains(&v)),
            ArgumentValue::Priority => whole.is_some_and(|v| v <= 255),
            ArgumentValue::Positive => whole.is_some_and(|v| v >= 1),
            ArgumentValue::Text => value.is_string(),
            ArgumentValue::OneOf(options) => value.as_str().is_some_and(|v| options.contains(&v)),
            ArgumentValue::Among(options) => whole.is_some_and(|v| options.contains(&v)),
            ArgumentValue::Boolean => value.is_boolean(),
            ArgumentValue::Age => value.as_str().is_some_and(is_age),
            ArgumentValue::Integer => value.as_i64().is_some(),
            ArgumentValue::Unchecked => true,
        };
        if ok {
            return Ok(());
        }
        Err(match self.value {
            ArgumentValue::NonNegative => "a whole number ≥ 0".to_string(),
            ArgumentValue::Ttl => {
                format!("a whole number of milliseconds from 0 to {MAX_EXPIRY_MS} (ten years)")
            }
            ArgumentValue::Expiry => {
                format!("a whole number of milliseconds from 1 to {MAX_EXPIRY_MS} (ten years)")
            }
            ArgumentValue::Priority => "a whole number from 0 to 255".to_string(),
            ArgumentValue::Positive => "a whole number ≥ 1".to_string(),
            ArgumentValue::Text => "a string".to_string(),
            ArgumentValue::OneOf(options) => format!("one of {}", options.join(", ")),
            ArgumentValue::Among(options) => format!(
                "one of {}",
                options
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ArgumentValue::Boolean => "true or false".to_string(),
            ArgumentValue::Age => {
                "an age such as `7D` or `12h` (a positive number and one of Y, M, D, h, m, s)"
                    .to_string()
            }
            ArgumentValue::Integer => "a whole number".to_string(),
            ArgumentValue::Unchecked => String::new(),
        })
    }

    /// Why RabbitMQ `target` refuses this argument with this value whatever the queue's
    /// type: what it removed or denies by default. `None` when it takes it.
    pub fn refusal_on(&self, value: &Value, target: TargetVersion) -> Option<String> {
        match self.name {
            "x-queue-version"
                if value.as_u64() == Some(1) && !target.accepts_queue_version_1_argument() =>
            {
                Some(format!(
                    "RabbitMQ {target} removed classic queues of version 1 (CQv1) and refuses `x-queue-version: 1`: use 2 (the default) or leave it out"
                ))
            }
            "x-queue-master-locator" if !target.permits_queue_master_locator() => Some(format!(
                "RabbitMQ {target} denies the deprecated feature `queue_master_locator` by default and refuses `x-queue-master-locator`: use `x-queue-leader-locator` (`client-local`, or `balanced` for `min-masters`)"
            )),
            _ => None,
        }
    }

    /// Whether an import of a definitions file into RabbitMQ `target` refuses the file
    /// for what [`refusal_on`] names, rather than skipping the queue: 4.3.6 answers 204
    /// to a file with `x-queue-master-locator` and silently does not create that queue
    /// (its log names the denied deprecated feature), while a declare is refused
    /// (`tests/definitions/refused/`).
    ///
    /// [`refusal_on`]: QueueArgument::refusal_on
    pub fn import_refuses_on(&self, _target: TargetVersion) -> bool {
        self.name != "x-queue-master-locator"
    }

    /// Why RabbitMQ `target` takes this argument and does nothing with it, when it does
    /// (what lint's `setting-without-effect` reports).
    pub fn ignored_on(&self, value: &Value, target: TargetVersion) -> Option<String> {
        match self.name {
            "x-queue-version"
                if value.as_u64() == Some(1) && !target.has_classic_queue_version_1() =>
            {
                Some(format!(
                    "RabbitMQ {target} takes `x-queue-version: 1` and stores the queue as version 2: classic queues of version 1 are gone since 4.0 (4.3 refuses the argument)"
                ))
            }
            name if name.starts_with("x-delayed-retry-") && !target.has_native_delayed_retry() => {
                Some(format!(
                    "RabbitMQ {target} stores `{name}` and ignores it: quorum queues delay redeliveries themselves from 4.3 on"
                ))
            }
            "x-queue-mode" if target >= TargetVersion::V3_12 => Some(format!(
                "RabbitMQ {target} ignores `x-queue-mode`: since 3.12 every classic queue keeps its messages on disk as lazy queues did"
            )),
            _ => None,
        }
    }

    /// Whether the broker itself refuses a value that [`check_value`] refuses (it
    /// stores `x-delivery-limit` and the locators as given): a definitions file is
    /// refused only for those, while a spec is held to every check.
    ///
    /// [`check_value`]: QueueArgument::check_value
    pub fn broker_checks_value(&self) -> bool {
        !matches!(
            self.value,
            ArgumentValue::Integer | ArgumentValue::Unchecked
        )
    }

    /// [`broker_checks_value`] on RabbitMQ `target`: 4.3.6 stores any `x-queue-mode`
    /// (`eager` too; 3.10.8 and 4.0.5 refuse it), as the argument has no effect there.
    ///
    /// [`broker_checks_value`]: QueueArgument::broker_checks_value
    pub fn broker_checks_value_on(&self, target: TargetVersion) -> bool {
        self.broker_checks_value()
            && !(self.name == "x-queue-mode" && target >= TargetVersion::V4_3)
    }
}

/// A stream age: digits (not all zero) then one unit letter, case-sensitive.
/// An age (`x-max-age`) in seconds, as RabbitMQ reads it: a year is 365 days and a
/// month 30 (`rabbit_amqqueue`'s units); `None` when it is not an age.
pub fn age_seconds(text: &str) -> Option<u64> {
    if !is_age(text) {
        return None;
    }
    let unit = text.chars().last()?;
    let number: u64 = text[..text.len() - unit.len_utf8()].parse().ok()?;
    const DAY: u64 = 24 * 3600;
    let seconds = match unit {
        'Y' => 365 * DAY,
        'M' => 30 * DAY,
        'D' => DAY,
        'h' => 3600,
        'm' => 60,
        _ => 1,
    };
    number.checked_mul(seconds)
}

/// One spelling of an age for comparing: RabbitMQ 4.3.6 compares `x-max-age` as a
/// duration (`1D` declares the same stream as `24h`), so a spec that writes `24h`
/// for a stream the broker holds as `1D` changes nothing. The largest whole unit of
/// days, hours, minutes or seconds.
pub fn canonical_age(text: &str) -> Option<String> {
    let seconds = age_seconds(text)?;
    let (unit, size) = [('D', 24 * 3600), ('h', 3600), ('m', 60), ('s', 1)]
        .into_iter()
        .find(|(_, size)| seconds % size == 0)?;
    Some(format!("{}{unit}", seconds / size))
}

fn is_age(text: &str) -> bool {
    let Some(unit) = text.chars().last() else {
        return false;
    };
    let digits = &text[..text.len() - unit.len_utf8()];
    matches!(unit, 'Y' | 'M' | 'D' | 'h' | 'm' | 's')
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && digits.bytes().any(|b| b != b'0')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ages_compare_as_durations() {
        assert_eq!(canonical_age("1D"), canonical_age("24h"));
        assert_eq!(canonical_age("24h").as_deref(), Some("1D"));
        assert_eq!(canonical_age("90m").as_deref(), Some("90m"));
        assert_eq!(canonical_age("1Y").as_deref(), Some("365D"));
        assert_eq!(canonical_age("1M"), canonical_age("30D"));
        assert_eq!(canonical_age("7d"), None);
        assert_ne!(canonical_age("1D"), canonical_age("25h"));
    }

    #[test]
    fn values_follow_the_brokers_checks() {
        let check = |name: &str, value: Value| find(name).unwrap().check_value(&value).is_ok();
        assert!(check("x-message-ttl", json!(0)));
        assert!(check("x-message-ttl", json!(315_360_000_000u64)));
        assert!(!check("x-message-ttl", json!(315_360_000_001u64)));
        assert!(!check("x-expires", json!(0)));
        assert!(!check("x-max-length", json!("10")));
        assert!(!check("x-max-length", json!(10.0)));
        assert!(!check("x-max-length", json!(-1)));
        assert!(check("x-max-priority", json!(255)));
        assert!(!check("x-max-priority", json!(256)));
        assert!(check("x-max-age", json!("7D")));
        assert!(!check("x-max-age", json!("7d")));
        assert!(!check("x-max-age", json!("0D")));
        assert!(!check("x-queue-type", json!("lazy")));
        assert!(!check("x-single-active-consumer", json!("true")));
        assert!(!check("x-delivery-limit", json!("5")));
        assert!(check("x-delivery-limit", json!(-1)));
        assert!(!find("x-delivery-limit").unwrap().broker_checks_value());
        assert!(!check("x-queue-version", json!(3)));
    }

    #[test]
    fn removed_and_denied_arguments_are_refused_from_4_3() {
        let refused = |name: &str, value: Value, target| {
            find(name).unwrap().refusal_on(&value, target).is_some()
        };
        assert!(refused("x-queue-version", json!(1), TargetVersion::V4_3));
        assert!(!refused("x-queue-version", json!(2), TargetVersion::V4_3));
        assert!(!refused("x-queue-version", json!(1), TargetVersion::V4_2));
        assert!(refused(
            "x-queue-master-locator",
            json!("min-masters"),
            TargetVersion::V4_3
        ));
        assert!(!refused(
            "x-queue-master-locator",
            json!("min-masters"),
            TargetVersion::V4_0
        ));
        let accepted = |name: &str, kind, target| find(name).unwrap().accepted_by(kind, target);
        assert!(accepted(
            "x-delayed-retry-type",
            QueueType::Quorum,
            TargetVersion::V4_3
        ));
        assert!(!accepted(
            "x-delayed-retry-type",
            QueueType::Classic,
            TargetVersion::V4_3
        ));
        assert!(accepted(
            "x-delayed-retry-min",
            QueueType::Classic,
            TargetVersion::V4_2
        ));
        assert!(!accepted(
            "x-consumer-timeout",
            QueueType::Classic,
            TargetVersion::V4_3
        ));
        assert!(accepted(
            "x-consumer-timeout",
            QueueType::Quorum,
            TargetVersion::V4_3
        ));
    }

    #[test]
    fn queue_types_take_their_own_arguments() {
        let accepted = |name: &str, kind, target| find(name).unwrap().accepted_by(kind, target);
        assert!(!accepted(
            "x-max-priority",
            QueueType::Quorum,
            TargetVersion::V4_0
        ));
        assert!(!accepted(
            "x-max-length",
            QueueType::Stream,
            TargetVersion::V4_0
        ));
        assert!(!accepted(
            "x-queue-leader-locator",
            QueueType::Classic,
            TargetVersion::V3_10
        ));
        assert!(accepted(
            "x-queue-leader-locator",
            QueueType::Classic,
            TargetVersion::V4_0
        ));
    }
}
