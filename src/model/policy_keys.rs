//! The policy keys RabbitMQ knows, the JSON type each takes, and which queue types
//! accept them.
//!
//! A policy holding one key that a queue's type does not support is skipped for that
//! queue as a whole (the broker's `is_policy_applicable` check), so the compiler needs
//! this table to know which policy really applies to a queue.

use serde_json::Value;

use super::QueueType;
use super::TargetVersion;

/// The JSON type a policy key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A non-negative integer.
    NonNegativeInteger,
    /// An integer ≥ 1.
    PositiveInteger,
    /// Any integer (negative means "unlimited" where the broker says so).
    Integer,
    /// A string.
    Text,
    /// One of a fixed set of strings.
    OneOf(&'static [&'static str]),
    /// A string or a list (e.g. `ha-params`).
    Any,
}

/// What the broker knows about one policy key.
#[derive(Debug, Clone, Copy)]
pub struct PolicyKey {
    /// The key as written in a policy definition.
    pub name: &'static str,
    /// Its value type.
    pub kind: ValueKind,
    /// Classic queues accept it.
    pub classic: bool,
    /// Quorum queues accept it.
    pub quorum: bool,
    /// Streams accept it.
    pub stream: bool,
    /// Exchanges use it.
    pub exchange: bool,
    /// Allowed in operator policies.
    pub operator: bool,
}

const fn key(
    name: &'static str,
    kind: ValueKind,
    (classic, quorum, stream, exchange): (bool, bool, bool, bool),
    operator: bool,
) -> PolicyKey {
    PolicyKey {
        name,
        kind,
        classic,
        quorum,
        stream,
        exchange,
        operator,
    }
}

const QUEUES: (bool, bool, bool, bool) = (true, true, false, false);
const CLASSIC: (bool, bool, bool, bool) = (true, false, false, false);
const QUORUM: (bool, bool, bool, bool) = (false, true, false, false);
const STREAM: (bool, bool, bool, bool) = (false, false, true, false);
const ALL_QUEUES: (bool, bool, bool, bool) = (true, true, true, false);
const EXCHANGE: (bool, bool, bool, bool) = (false, false, false, true);
const FEDERATION: (bool, bool, bool, bool) = (true, true, false, true);

/// Every policy key warren knows.
pub const POLICY_KEYS: &[PolicyKey] = &[
    key("message-ttl", ValueKind::NonNegativeInteger, QUEUES, true),
    key("expires", ValueKind::PositiveInteger, QUEUES, true),
    key("max-length", ValueKind::NonNegativeInteger, QUEUES, true),
    key(
        "max-length-bytes",
        ValueKind::NonNegativeInteger,
        ALL_QUEUES,
        true,
    ),
    key(
        "overflow",
        ValueKind::OneOf(&["drop-head", "reject-publish", "reject-publish-dlx"]),
        QUEUES,
        true,
    ),
    key("dead-letter-exchange", ValueKind::Text, QUEUES, false),
    key("dead-letter-routing-key", ValueKind::Text, QUEUES, false),
    key(
        "dead-letter-strategy",
        ValueKind::OneOf(&["at-most-once", "at-least-once"]),
        QUORUM,
        false,
    ),
    key("delivery-limit", ValueKind::Integer, QUORUM, true),
    key(
        "max-in-memory-length",
        ValueKind::NonNegativeInteger,
        QUORUM,
        true,
    ),
    key(
        "max-in-memory-bytes",
        ValueKind::NonNegativeInteger,
        QUORUM,
        true,
    ),
    key(
        "target-group-size",
        ValueKind::PositiveInteger,
        QUORUM,
        true,
    ),
    key(
        "queue-mode",
        ValueKind::OneOf(&["default", "lazy"]),
        CLASSIC,
        false,
    ),
    key("queue-version", ValueKind::PositiveInteger, CLASSIC, true),
    key(
        "queue-leader-locator",
        ValueKind::OneOf(&["client-local", "balanced"]),
        ALL_QUEUES,
        false,
    ),
    key("queue-master-locator", ValueKind::Text, CLASSIC, true),
    key(
        "consumer-timeout",
        ValueKind::NonNegativeInteger,
        QUEUES,
        false,
    ),
    key(
        "stream-filter-size-bytes",
        ValueKind::PositiveInteger,
        STREAM,
        false,
    ),
    key(
        "delayed-retry-type",
        ValueKind::OneOf(&["disabled", "all", "failed", "returned"]),
        QUORUM,
        false,
    ),
    key(
        "delayed-retry-min",
        ValueKind::NonNegativeInteger,
        QUORUM,
        false,
    ),
    key(
        "delayed-retry-max",
        ValueKind::NonNegativeInteger,
        QUORUM,
        false,
    ),
    key(
        "ha-mode",
        ValueKind::OneOf(&["all", "exactly", "nodes"]),
        CLASSIC,
        false,
    ),
    key("ha-params", ValueKind::Any, CLASSIC, false),
    key(
        "ha-sync-mode",
        ValueKind::OneOf(&["manual", "automatic"]),
        CLASSIC,
        false,
    ),
    key(
        "ha-sync-batch-size",
        ValueKind::PositiveInteger,
        CLASSIC,
        false,
    ),
    key(
        "ha-promote-on-shutdown",
        ValueKind::OneOf(&["always", "when-synced"]),
        CLASSIC,
        false,
    ),
    key(
        "ha-promote-on-failure",
        ValueKind::OneOf(&["always", "when-synced"]),
        CLASSIC,
        false,
    ),
    key("max-age", ValueKind::Text, STREAM, false),
    key(
        "stream-max-segment-size-bytes",
        ValueKind::PositiveInteger,
        STREAM,
        false,
    ),
    key(
        "initial-cluster-size",
        ValueKind::PositiveInteger,
        STREAM,
        false,
    ),
    key("alternate-exchange", ValueKind::Text, EXCHANGE, false),
    key("federation-upstream", ValueKind::Text, FEDERATION, false),
    key(
        "federation-upstream-set",
        ValueKind::Text,
        FEDERATION,
        false,
    ),
];

/// Looks a key up.
pub fn find(name: &str) -> Option<&'static PolicyKey> {
    POLICY_KEYS.iter().find(|k| k.name == name)
}

/// Names of every key, for suggestions.
pub fn names() -> Vec<String> {
    POLICY_KEYS.iter().map(|k| k.name.to_string()).collect()
}

impl PolicyKey {
    /// Whether a queue of this type accepts the key.
    pub fn supports(&self, queue_type: QueueType, target: TargetVersion) -> bool {
        let by_type = match queue_type {
            QueueType::Classic => self.classic,
            QueueType::Quorum => self.quorum,
            QueueType::Stream => self.stream,
        };
        // Mirroring was removed in 4.0: its keys no longer apply anywhere.
        by_type && !(self.name.starts_with("ha-") && target >= TargetVersion::V4_0)
    }

    /// Whether RabbitMQ `target` takes the key at all: mirroring's `ha-*` keys are gone
    /// in 4.0, 3.10 does not know `consumer-timeout`, `target-group-size` and
    /// `stream-filter-size-bytes`, 4.3 denies `queue-master-locator` (a deprecated
    /// feature) and only 4.3 knows the `delayed-retry-*` keys (each refuses a policy with
    /// a key it does not take; measured on 3.10.8, 4.0.5 and 4.3.6).
    pub fn known_on(&self, target: TargetVersion) -> bool {
        match self.name {
            name if name.starts_with("ha-") => target < TargetVersion::V4_0,
            "consumer-timeout" | "target-group-size" | "stream-filter-size-bytes" => {
                target > TargetVersion::V3_10
            }
            "queue-master-locator" => target.permits_queue_master_locator(),
            name if is_delayed_retry_key(name) => target.has_native_delayed_retry(),
            _ => true,
        }
    }

    /// Why RabbitMQ `target` takes this key with this value and does nothing with it
    /// (for some queues), when it does: what lint's `setting-without-effect` reports.
    pub fn ignored_on(&self, value: &Value, target: TargetVersion) -> Option<String> {
        match self.name {
            "queue-version"
                if value.as_u64() == Some(1) && !target.has_classic_queue_version_1() =>
            {
                Some(format!(
                    "RabbitMQ {target} accepts `queue-version: 1` and ignores it: classic queues of version 1 are gone since 4.0, every classic queue is stored as version 2"
                ))
            }
            "queue-mode" if target >= TargetVersion::V3_12 => Some(format!(
                "RabbitMQ {target} ignores `queue-mode`: since 3.12 every classic queue keeps its messages on disk as lazy queues did"
            )),
            "consumer-timeout" if !target.times_out_classic_consumers() => Some(format!(
                "RabbitMQ {target} evaluates consumer timeouts for quorum queues only: for classic queues and streams `consumer-timeout` has no effect"
            )),
            _ => None,
        }
    }

    /// Whether an operator policy may set the key on `target` (3.10 takes only the
    /// limits: TTLs, lengths, in-memory limits and the delivery limit).
    pub fn operator_on(&self, target: TargetVersion) -> bool {
        self.operator
            && !(target == TargetVersion::V3_10
                && matches!(
                    self.name,
                    "overflow" | "queue-version" | "target-group-size" | "queue-master-locator"
                ))
    }

    /// [`check_value`] on RabbitMQ `target`: 3.10 also refuses a negative
    /// `delivery-limit` (4.0 reads it as "no limit").
    ///
    /// [`check_value`]: PolicyKey::check_value
    pub fn check_value_on(&self, value: &Value, target: TargetVersion) -> Result<(), String> {
        if self.name == "delivery-limit"
            && target < TargetVersion::V4_0
            && value.as_i64().is_some_and(|limit| limit < 0)
        {
            return Err(format!(
                "a whole number ≥ 0 on RabbitMQ {target} (a negative limit means \"no limit\" from 4.0 on)"
            ));
        }
        self.check_value(value)
    }

    /// Checks the JSON type of a value; returns what was expected when it does not fit.
    pub fn check_value(&self, value: &Value) -> Result<(), String> {
        let ok = match self.kind {
            ValueKind::NonNegativeInteger => value.as_u64().is_some(),
            ValueKind::PositiveInteger => value.as_u64().is_some_and(|v| v >= 1),
            ValueKind::Integer => value.as_i64().is_some(),
            ValueKind::Text => value.is_string(),
            ValueKind::OneOf(options) => value.as_str().is_some_and(|v| options.contains(&v)),
            ValueKind::Any => true,
        };
        if ok {
            return Ok(());
        }
        Err(match self.kind {
            ValueKind::NonNegativeInteger => "a whole number ≥ 0 (not a string)".to_string(),
            ValueKind::PositiveInteger => "a whole number ≥ 1 (not a string)".to_string(),
            ValueKind::Integer => "a whole number (not a string)".to_string(),
            ValueKind::Text => "a string".to_string(),
            ValueKind::OneOf(options) => format!("one of {}", options.join(", ")),
            ValueKind::Any => String::new(),
        })
    }
}

/// The JSON Schema of a policy definition: every known key with its type.
pub fn definition_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut properties = serde_json::Map::new();
    for key in POLICY_KEYS {
        let types = [
            (key.classic, "classic queues"),
            (key.quorum, "quorum queues"),
            (key.stream, "streams"),
            (key.exchange, "exchanges"),
        ]
        .iter()
        .filter(|(yes, _)| *yes)
        .map(|(_, what)| *what)
        .collect::<Vec<_>>()
        .join(", ");
        let mut schema = match key.kind {
            ValueKind::NonNegativeInteger => serde_json::json!({"type": "integer", "minimum": 0}),
            ValueKind::PositiveInteger => serde_json::json!({"type": "integer", "minimum": 1}),
            ValueKind::Integer => serde_json::json!({"type": "integer"}),
            ValueKind::Text => serde_json::json!({"type": "string"}),
            ValueKind::OneOf(options) => serde_json::json!({"type": "string", "enum": options}),
            ValueKind::Any => serde_json::json!({}),
        };
        schema["description"] = Value::from(format!("Applies to {types}."));
        properties.insert(key.name.to_string(), schema);
    }
    schemars::json_schema!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
        "minProperties": 1,
    })
}

/// Whether every key of `definition` is accepted by `queue_type`: otherwise the broker
/// skips the whole policy for queues of that type.
pub fn applies_to_queue_type<'a>(
    definition: impl IntoIterator<Item = &'a String>,
    queue_type: QueueType,
    target: TargetVersion,
) -> bool {
    definition
        .into_iter()
        .all(|name| find(name).is_none_or(|key| key.supports(queue_type, target)))
}

/// Whether a policy key is one of RabbitMQ 4.3's delayed-retry keys
/// (`delayed-retry-type`, `-min`, `-max`): a quorum queue's own waits before it delivers
/// a returned message again.
pub fn is_delayed_retry_key(name: &str) -> bool {
    name.starts_with("delayed-retry-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quorum_only_keys_make_a_policy_skip_classic_queues() {
        let definition = ["message-ttl".to_string(), "delivery-limit".to_string()];
        assert!(applies_to_queue_type(
            &definition,
            QueueType::Quorum,
            TargetVersion::V4_0
        ));
        assert!(!applies_to_queue_type(
            &definition,
            QueueType::Classic,
            TargetVersion::V4_0
        ));
    }

    #[test]
    fn the_schema_types_every_known_key() {
        let schema = definition_schema(&mut schemars::SchemaGenerator::default());
        let value = serde_json::to_value(&schema).unwrap();
        assert_eq!(value["properties"]["delivery-limit"]["type"], "integer");
        assert_eq!(value["properties"]["message-ttl"]["minimum"], 0);
        assert_eq!(value["properties"]["overflow"]["enum"][1], "reject-publish");
        assert_eq!(value["additionalProperties"], false);
    }

    #[test]
    fn values_keep_their_json_types() {
        let ttl = find("message-ttl").unwrap();
        assert!(ttl.check_value(&json!(5000)).is_ok());
        assert!(ttl.check_value(&json!("5000")).is_err());
        assert!(ttl.check_value(&json!(-1)).is_err());
        assert!(
            find("delivery-limit")
                .unwrap()
                .check_value(&json!(-1))
                .is_ok()
        );
        assert!(
            find("overflow")
                .unwrap()
                .check_value(&json!("drop-tail"))
                .is_err()
        );
    }
}
