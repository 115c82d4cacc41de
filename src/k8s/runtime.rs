//! Shovels and federation upstreams (runtime parameters) as the fields of the
//! operator's `Shovel` and `Federation` resources.
//!
//! The parameter's keys map one to one onto the resource's fields; the URIs do not:
//! the operator reads them from a Secret (`uriSecret`), so they never appear in the
//! rendered resource, credentials or not. A key the resource has no field for is a
//! refusal, never dropped.

use serde_json::{Map, Value};

/// The shovel keys the `Shovel` resource has a field for, and the field.
const SHOVEL_FIELDS: &[(&str, &str)] = &[
    ("ack-mode", "ackMode"),
    ("add-forward-headers", "addForwardHeaders"),
    ("delete-after", "deleteAfter"),
    ("dest-add-forward-headers", "destAddForwardHeaders"),
    ("dest-add-timestamp-header", "destAddTimestampHeader"),
    ("dest-address", "destAddress"),
    ("dest-application-properties", "destApplicationProperties"),
    ("dest-exchange", "destExchange"),
    ("dest-exchange-key", "destExchangeKey"),
    ("dest-message-annotations", "destMessageAnnotations"),
    ("dest-properties", "destProperties"),
    ("dest-protocol", "destProtocol"),
    ("dest-publish-properties", "destPublishProperties"),
    ("dest-queue", "destQueue"),
    ("dest-queue-args", "destQueueArgs"),
    ("prefetch-count", "prefetchCount"),
    ("reconnect-delay", "reconnectDelay"),
    ("src-address", "srcAddress"),
    ("src-consumer-args", "srcConsumerArgs"),
    ("src-delete-after", "srcDeleteAfter"),
    ("src-exchange", "srcExchange"),
    ("src-exchange-key", "srcExchangeKey"),
    ("src-prefetch-count", "srcPrefetchCount"),
    ("src-protocol", "srcProtocol"),
    ("src-queue", "srcQueue"),
    ("src-queue-args", "srcQueueArgs"),
];

/// The shovel keys that go to the Secret, and the Secret's key for each.
pub const SHOVEL_SECRET_KEYS: &[(&str, &str)] = &[("src-uri", "srcUri"), ("dest-uri", "destUri")];

/// The federation upstream keys the `Federation` resource has a field for. The
/// resource spells `prefetch-count` as the parameter does.
const FEDERATION_FIELDS: &[(&str, &str)] = &[
    ("ack-mode", "ackMode"),
    ("exchange", "exchange"),
    ("expires", "expires"),
    ("max-hops", "maxHops"),
    ("message-ttl", "messageTTL"),
    ("prefetch-count", "prefetch-count"),
    ("queue", "queue"),
    ("queue-type", "queueType"),
    ("reconnect-delay", "reconnectDelay"),
    ("resource-cleanup-mode", "resourceCleanupMode"),
    ("trust-user-id", "trustUserId"),
];

/// The federation upstream keys that go to the Secret.
pub const FEDERATION_SECRET_KEYS: &[(&str, &str)] = &[("uri", "uri")];

/// Which resource a runtime parameter component becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// `shovel` → `Shovel`.
    Shovel,
    /// `federation-upstream` → `Federation`.
    Federation,
}

impl Runtime {
    /// The resource for a parameter component; `None` when the operator has none.
    pub fn of(component: &str) -> Option<Runtime> {
        match component {
            "shovel" => Some(Runtime::Shovel),
            "federation-upstream" => Some(Runtime::Federation),
            _ => None,
        }
    }

    /// The resource's kind.
    pub fn kind(self) -> &'static str {
        match self {
            Runtime::Shovel => "Shovel",
            Runtime::Federation => "Federation",
        }
    }

    /// The Secret keys the operator reads the URIs from.
    pub fn secret_keys(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Runtime::Shovel => SHOVEL_SECRET_KEYS,
            Runtime::Federation => FEDERATION_SECRET_KEYS,
        }
    }

    fn fields(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Runtime::Shovel => SHOVEL_FIELDS,
            Runtime::Federation => FEDERATION_FIELDS,
        }
    }

    /// The resource's fields for the parameter `value` (the URIs left out), or what
    /// the resource cannot express. `written` is the value as the spec wrote it:
    /// a field whose value comes from `{ env: VARIABLE }` is refused, because the
    /// resource has no Secret reference for it and the export reads no environment.
    pub fn fields_of(
        self,
        value: &Value,
        written: Option<&Value>,
    ) -> Result<Map<String, Value>, Vec<String>> {
        let Some(entries) = value.as_object() else {
            return Err(vec!["its value is not a JSON object".to_string()]);
        };
        let mut fields = Map::new();
        let mut lacks = Vec::new();
        for (key, item) in entries {
            if self.secret_keys().iter().any(|(from, _)| from == key) {
                continue;
            }
            let Some((_, field)) = self.fields().iter().find(|(from, _)| from == key) else {
                lacks.push(format!(
                    "the operator's {} has no field for `{key}`",
                    self.kind()
                ));
                continue;
            };
            let from_env = written.and_then(|w| w.get(key)).and_then(env_inside);
            if let Some(variable) = from_env {
                lacks.push(format!(
                    "`{key}` comes from environment variable `{variable}`, and the operator's {} reads only its URIs from a Secret",
                    self.kind()
                ));
                continue;
            }
            // The resource types `deleteAfter` as text ("never", "queue-length" or a
            // count); the operator hands it to the broker as the parameter's value.
            let item = match (*field, item) {
                ("deleteAfter" | "srcDeleteAfter", Value::Number(n)) => Value::from(n.to_string()),
                _ => item.clone(),
            };
            fields.insert((*field).to_string(), item);
        }
        if lacks.is_empty() {
            Ok(fields)
        } else {
            Err(lacks)
        }
    }
}

/// The first `{ env: VARIABLE }` anywhere inside `value`: compiled without secrets,
/// it would be an empty text in the resource.
fn env_inside(value: &Value) -> Option<&str> {
    if let Some(variable) = crate::compile::secrets::env_reference(value) {
        return Some(variable);
    }
    match value {
        Value::Object(map) => map.values().find_map(env_inside),
        Value::Array(items) => items.iter().find_map(env_inside),
        _ => None,
    }
}
