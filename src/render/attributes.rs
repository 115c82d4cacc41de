//! What a new object will be, in one or two short lines: the key attributes a reviewer
//! checks under a plan's `+` line (an exchange's type, a queue's type and arguments, a
//! policy's pattern and definition, a user's tags, a permission's regexes).
//!
//! The lines are plain text (no color): the text plan dims them, other formats may
//! reuse them. Values go through [`redact`] first, so a password hash or the
//! credentials of a URI never reach them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::ObjectKind;
use crate::model::redact::redact;
use crate::model::shorten::middle;

/// The attribute lines of an object of `kind` whose normal-form value is `value`; none
/// when there is nothing beyond its name to say (a binding's name is its source,
/// destination, routing key and arguments already).
pub fn attributes(kind: ObjectKind, value: &Value) -> Vec<String> {
    let value = redact(value);
    let lines = match kind {
        ObjectKind::Exchange => exchange(&value),
        ObjectKind::Queue => queue(&value),
        ObjectKind::Policy | ObjectKind::OperatorPolicy => policy(&value),
        ObjectKind::User => user(&value),
        ObjectKind::Permission => permission(&value, &["configure", "write", "read"]),
        ObjectKind::TopicPermission => permission(&value, &["write", "read"]),
        ObjectKind::Vhost => vhost(&value),
        ObjectKind::VhostLimits => vec![pairs(value.as_object())],
        ObjectKind::Parameter | ObjectKind::GlobalParameter => {
            vec![format!("value: {value}")]
        }
        ObjectKind::Binding => Vec::new(),
    };
    lines.into_iter().filter(|line| !line.is_empty()).collect()
}

/// `durable` or `transient`, and `auto-delete` when set.
fn lifetime(value: &Value, words: &mut Vec<String>) {
    match value["durable"].as_bool() {
        Some(true) => words.push("durable".into()),
        Some(false) => words.push("transient".into()),
        None => {}
    }
    if value["auto_delete"] == Value::Bool(true) {
        words.push("auto-delete".into());
    }
}

fn exchange(value: &Value) -> Vec<String> {
    let mut words = vec![value["type"].as_str().unwrap_or("direct").to_string()];
    lifetime(value, &mut words);
    if value["internal"] == Value::Bool(true) {
        words.push("internal".into());
    }
    let mut arguments = value["arguments"].as_object().cloned().unwrap_or_default();
    if let Some(alternate) = arguments.remove("alternate-exchange") {
        words.push(format!("alternate exchange {}", plain(&alternate)));
    }
    vec![words.join(", "), labelled("arguments", Some(&arguments))]
}

fn queue(value: &Value) -> Vec<String> {
    let mut arguments = value["arguments"].as_object().cloned().unwrap_or_default();
    let queue_type = arguments
        .remove("x-queue-type")
        .and_then(|t| t.as_str().map(str::to_string))
        .unwrap_or_else(|| "classic".into());
    let mut words = vec![queue_type];
    lifetime(value, &mut words);
    vec![words.join(", "), labelled("arguments", Some(&arguments))]
}

fn policy(value: &Value) -> Vec<String> {
    let mut words = vec![format!("pattern {}", quoted(&value["pattern"]))];
    if let Some(apply_to) = value["apply-to"].as_str() {
        words.push(format!("apply to {apply_to}"));
    }
    if let Some(priority) = value["priority"].as_i64() {
        words.push(format!("priority {priority}"));
    }
    vec![
        words.join(", "),
        labelled("definition", value["definition"].as_object()),
    ]
}

fn user(value: &Value) -> Vec<String> {
    let tags: Vec<&str> = value["tags"]
        .as_array()
        .map(|tags| tags.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let tags = if tags.is_empty() {
        "no tags".to_string()
    } else {
        format!("tags {}", tags.join(", "))
    };
    vec![tags, labelled("limits", value["limits"].as_object())]
}

fn permission(value: &Value, fields: &[&str]) -> Vec<String> {
    let words: Vec<String> = fields
        .iter()
        .map(|field| format!("{field} {}", quoted(&value[*field])))
        .collect();
    vec![words.join(", ")]
}

fn vhost(value: &Value) -> Vec<String> {
    let mut words = Vec::new();
    if let Some(queue_type) = value["default_queue_type"].as_str() {
        words.push(format!("default queue type {queue_type}"));
    }
    if let Some(tags) = value["tags"].as_array().filter(|t| !t.is_empty()) {
        let tags: Vec<&str> = tags.iter().filter_map(Value::as_str).collect();
        words.push(format!("tags {}", tags.join(", ")));
    }
    if let Some(description) = value["description"].as_str().filter(|d| !d.is_empty()) {
        words.push(format!("description {}", quoted(&Value::from(description))));
    }
    vec![words.join(", ")]
}

/// `label: k=v, k=v`, or nothing for an empty or absent map.
fn labelled(label: &str, map: Option<&Map<String, Value>>) -> String {
    match map.filter(|m| !m.is_empty()) {
        Some(_) => format!("{label}: {}", pairs(map)),
        None => String::new(),
    }
}

/// `k=v, k=v` in key order, values as JSON (strings quoted).
fn pairs(map: Option<&Map<String, Value>>) -> String {
    let mut entries: Vec<(&String, &Value)> = map.into_iter().flatten().collect();
    entries.sort_by_key(|(key, _)| *key);
    entries
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A string as it is (it names something), anything else as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A regular expression or free text as it is, in quotes so that an empty one (`""`,
/// which grants nothing) and white space show; control characters escaped.
fn quoted(value: &Value) -> String {
    match value {
        Value::String(text) => {
            let shown: String = text
                .chars()
                .map(|c| match c {
                    c if c.is_control() => c.escape_default().to_string(),
                    c => c.to_string(),
                })
                .collect();
            format!("\"{shown}\"")
        }
        Value::Null => "\"\"".into(),
        other => other.to_string(),
    }
}

/// A created object's key attributes on one line, `x-queue-type=quorum, x-message-ttl=30000`:
/// the short form (the markdown's table cell) of [`attributes`]; `code` quotes it.
pub fn summary(after: &Value, code: &dyn Fn(&str) -> String) -> String {
    let mut fields = BTreeMap::new();
    flatten("", &redact(after), &mut fields);
    let text: Vec<String> = fields
        .iter()
        .filter(|(key, value)| {
            // What every object has gives nothing away.
            !matches!(
                (key.as_str(), value.as_str()),
                ("durable", "true")
                    | ("auto_delete", "false")
                    | ("internal", "false")
                    | ("password_hash", _)
                    | ("hashing_algorithm", _)
                    | ("destination_type", _)
                    | ("source", _)
                    | ("destination", _)
                    | ("routing_key", _)
                    | ("arguments", "{}")
            )
        })
        .map(|(key, value)| {
            let key = key.strip_prefix("arguments.").unwrap_or(key);
            let key = key.strip_prefix("definition.").unwrap_or(key);
            format!("{key}={value}")
        })
        .collect();
    match text.is_empty() {
        true => String::new(),
        false => code(&middle(&text.join(", "), 140)),
    }
}

/// Leaves of a JSON value by dotted path; lists and scalars as compact JSON (strings
/// bare).
pub fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, value) in map {
                let path = match prefix.is_empty() {
                    true => key.clone(),
                    false => format!("{prefix}.{key}"),
                };
                flatten(&path, value, out);
            }
        }
        Value::String(text) => {
            out.insert(prefix.to_string(), text.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_says_what_it_will_be() {
        let cases = [
            (
                ObjectKind::Exchange,
                json!({"type": "topic", "durable": true, "auto_delete": false, "internal": true,
                       "arguments": {"alternate-exchange": "orders.unrouted", "x-custom": 1}}),
                vec![
                    "topic, durable, internal, alternate exchange orders.unrouted",
                    "arguments: x-custom=1",
                ],
            ),
            (
                ObjectKind::Exchange,
                json!({"type": "fanout", "durable": false, "auto_delete": true, "internal": false,
                       "arguments": {}}),
                vec!["fanout, transient, auto-delete"],
            ),
            (
                ObjectKind::Queue,
                json!({"durable": true, "auto_delete": false,
                       "arguments": {"x-queue-type": "quorum", "x-delivery-limit": 5,
                                     "x-dead-letter-exchange": "warren.retry"}}),
                vec![
                    "quorum, durable",
                    "arguments: x-dead-letter-exchange=\"warren.retry\", x-delivery-limit=5",
                ],
            ),
            (
                ObjectKind::Policy,
                json!({"pattern": "^orders\\.retry\\.1$", "apply-to": "queues", "priority": 100,
                       "definition": {"message-ttl": 30000, "dead-letter-exchange": ""}}),
                vec![
                    "pattern \"^orders\\.retry\\.1$\", apply to queues, priority 100",
                    "definition: dead-letter-exchange=\"\", message-ttl=30000",
                ],
            ),
            (
                ObjectKind::User,
                json!({"password_hash": "c2VjcmV0", "hashing_algorithm": "rabbit_password_hashing_sha256",
                       "tags": ["management", "monitoring"], "limits": {"max-connections": 10}}),
                vec!["tags management, monitoring", "limits: max-connections=10"],
            ),
            (
                ObjectKind::User,
                json!({"password_hash": "c2VjcmV0", "tags": []}),
                vec!["no tags"],
            ),
            (
                ObjectKind::Permission,
                json!({"user": "orders_app", "configure": "", "write": "^orders$", "read": ".*"}),
                vec!["configure \"\", write \"^orders$\", read \".*\""],
            ),
            (
                ObjectKind::TopicPermission,
                json!({"user": "orders_app", "exchange": "amq.topic", "write": "^eu\\.", "read": ".*"}),
                vec!["write \"^eu\\.\", read \".*\""],
            ),
            (
                ObjectKind::Vhost,
                json!({"default_queue_type": "quorum", "description": "the shop"}),
                vec!["default queue type quorum, description \"the shop\""],
            ),
            (ObjectKind::Vhost, json!({}), vec![]),
            (
                ObjectKind::VhostLimits,
                json!({"max-queues": 100}),
                vec!["max-queues=100"],
            ),
            (
                ObjectKind::Parameter,
                json!({"src-uri": "amqp://mover:s3cret@mq", "src-queue": "a"}),
                vec!["value: {\"src-uri\":\"amqp://mover:***@mq\",\"src-queue\":\"a\"}"],
            ),
            (
                ObjectKind::Binding,
                json!({"source": "orders", "destination": "audit", "destination_type": "queue",
                       "routing_key": "#", "arguments": {}}),
                vec![],
            ),
        ];
        for (kind, value, expected) in cases {
            assert_eq!(attributes(kind, &value), expected, "{kind:?} {value}");
        }
    }

    #[test]
    fn a_password_hash_never_shows() {
        let lines = attributes(
            ObjectKind::User,
            &json!({"password_hash": "c2VjcmV0", "tags": ["administrator"], "limits": {}}),
        );
        assert_eq!(lines, vec!["tags administrator"]);
        assert!(!lines.concat().contains("c2VjcmV0"));
    }
}
