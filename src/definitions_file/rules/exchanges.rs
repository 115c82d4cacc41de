//! Exchanges: their type.

use serde_json::Value;

use super::{Check, Found, Level, Rule, name_of, objects, shown};

pub(super) const EXCHANGE_TYPE: Rule = Rule {
    id: "exchange-type",
    summary: "an exchange's type is `direct`, `fanout`, `topic`, `headers` or a plugin's `x-…` type",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(exchange_type),
};

const EXCHANGE_TYPES: [&str; 4] = ["direct", "fanout", "topic", "headers"];

fn exchange_type(document: &Value, found: &mut Found) {
    for (path, exchange) in objects(document, "exchanges") {
        let name = name_of(exchange);
        if name.is_empty() || name.starts_with("amq.") {
            continue; // the broker skips these
        }
        let ok = match exchange.get("type") {
            Some(Value::String(kind)) => {
                EXCHANGE_TYPES.contains(&kind.as_str()) || kind.starts_with("x-")
            }
            _ => false,
        };
        if !ok {
            let given = exchange.get("type").map_or("missing".to_string(), shown);
            let known: Vec<String> = EXCHANGE_TYPES.map(String::from).into();
            let hint = exchange
                .get("type")
                .and_then(Value::as_str)
                .and_then(|kind| crate::suggest::closest(kind, &known))
                .map_or(String::new(), |best| format!("; did you mean `{best}`?"));
            found.push(
                path.then("type"),
                "exchange-type",
                format!(
                    "exchange `{name}` has the type {given}; RabbitMQ knows direct, fanout, topic, headers and the `x-…` types of plugins{hint}"
                ),
            );
        }
    }
}
