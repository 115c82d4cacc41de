//! Bindings: their destination type, `x-match`, and that both ends exist.

use serde_json::Value;

use crate::model::{PREDEFINED_EXCHANGES, TargetVersion};

use super::{Check, Found, Level, Rule, objects, shown};

pub(super) const BINDING_DESTINATION_TYPE: Rule = Rule {
    id: "binding-destination-type",
    summary: "a binding's `destination_type` is `queue` or `exchange`",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(binding_destination_type),
};

pub(super) const BINDING_X_MATCH: Rule = Rule {
    id: "binding-x-match",
    summary: "a binding's `x-match` is `all`, `any`, `all-with-x` or `any-with-x` (4.0 and later)",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(binding_x_match),
};

pub(super) const BINDING_ENDS_EXIST: Rule = Rule {
    id: "binding-ends-exist",
    summary: "a binding's source and destination exist (4.0 and later refuse a binding to nothing; 3.10 accepts it and creates nothing)",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(binding_ends_exist),
};

fn binding_destination_type(document: &Value, found: &mut Found) {
    for (path, binding) in objects(document, "bindings") {
        match binding.get("destination_type") {
            Some(Value::String(kind)) if kind == "queue" || kind == "exchange" => {}
            other => found.push(
                path.then("destination_type"),
                "binding-destination-type",
                format!(
                    "a binding's `destination_type` is {}; RabbitMQ binds to a `queue` or an `exchange`",
                    other.map_or("missing".to_string(), shown)
                ),
            ),
        }
    }
}

fn binding_x_match(document: &Value, found: &mut Found) {
    if found.target < TargetVersion::V4_0 {
        return; // 3.10 accepts it and creates no binding
    }
    for (path, binding) in objects(document, "bindings") {
        let Some(x_match) = binding.get("arguments").and_then(|a| a.get("x-match")) else {
            continue;
        };
        if !x_match
            .as_str()
            .is_some_and(|m| ["all", "any", "all-with-x", "any-with-x"].contains(&m))
        {
            found.push(
                path.then("arguments").then("x-match"),
                "binding-x-match",
                format!(
                    "a headers binding's `x-match` is {}; RabbitMQ takes all, any, all-with-x or any-with-x",
                    shown(x_match)
                ),
            );
        }
    }
}

fn binding_ends_exist(document: &Value, found: &mut Found) {
    if found.target < TargetVersion::V4_0 {
        return; // 3.10 accepts it and creates no binding
    }
    let declared = |section: &'static str| -> std::collections::HashSet<(String, String)> {
        objects(document, section)
            .filter_map(|(_, fields)| {
                Some((
                    fields.get("vhost")?.as_str()?.to_string(),
                    fields.get("name")?.as_str()?.to_string(),
                ))
            })
            .collect()
    };
    let exchanges = declared("exchanges");
    let queues = declared("queues");
    let exchange_exists = |vhost: &str, name: &str| {
        name.is_empty()
            || PREDEFINED_EXCHANGES.contains(&name)
            || exchanges.contains(&(vhost.to_string(), name.to_string()))
    };
    for (path, binding) in objects(document, "bindings") {
        let text = |key: &str| binding.get(key).and_then(Value::as_str).unwrap_or_default();
        let vhost = text("vhost");
        let (source, destination) = (text("source"), text("destination"));
        if !exchange_exists(vhost, source) {
            found.push(
                path.then("source"),
                "binding-ends-exist",
                format!("the binding from `{source}` to `{destination}` in vhost `{vhost}`: exchange `{source}` is not in the file"),
            );
        }
        let destination_exists = match text("destination_type") {
            "exchange" => exchange_exists(vhost, destination),
            _ => {
                destination.starts_with("amq.")
                    || queues.contains(&(vhost.to_string(), destination.to_string()))
            }
        };
        if !destination_exists {
            found.push(
                path.then("destination"),
                "binding-ends-exist",
                format!(
                    "the binding from `{source}` to `{destination}` in vhost `{vhost}`: {} `{destination}` is not in the file",
                    text("destination_type")
                ),
            );
        }
    }
}
