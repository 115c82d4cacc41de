//! Everything of a vhost that is not a recognised ladder, imported as plain exchanges,
//! queues, bindings, policies and runtime parameters.

use indexmap::IndexMap;
use serde_json::Value;

use super::Notes;
use super::ladders::Claimed;
use crate::model::objects::normalize_value;
use crate::model::redact::redact_uris;
use crate::model::{
    Arguments, Definitions, OPERATOR_POLICY_COMPONENT, QueueType, VHOST_LIMITS_COMPONENT,
    binding_id,
};
use crate::spec::{
    ApplyTo, DestinationType, PlainBinding, PlainExchange, PlainPolicy, PlainQueue, Vhost,
    VhostLimits,
};

/// Adds the vhost's unclaimed objects to `vhost`.
#[expect(
    clippy::too_many_lines,
    reason = "one arm per object kind of a definitions file"
)]
pub(super) fn place(
    definitions: &Definitions,
    vhost_name: &str,
    claimed: &Claimed,
    vhost: &mut Vhost,
    notes: &mut Notes,
) {
    for exchange in definitions
        .exchanges
        .iter()
        .filter(|e| e.vhost == vhost_name)
    {
        if claimed.exchanges.contains(&exchange.name)
            || exchange.name.is_empty()
            || exchange.name.starts_with("amq.")
        {
            continue;
        }
        if exchange.is_delayed_message() {
            notes.0.push(format!(
                "vhost `{vhost_name}`: exchange `{}` is a delayed-message exchange (the rabbitmq_delayed_message_exchange plugin, unreplicated, with no release for RabbitMQ 4.3): imported as it is; on 4.3 a quorum queue waits itself, see `retry: {{ mode: native }}` and docs/retry-modes.md (\"Leaving the delayed-message plugin\"); `warren upgrade-check` lists what else a move to 4.3 needs",
                exchange.name
            ));
        }
        let mut arguments: IndexMap<String, Value> = exchange
            .arguments
            .iter()
            .map(|(k, v)| (k.clone(), normalize_value(v)))
            .collect();
        let alternate = arguments
            .shift_remove("alternate-exchange")
            .and_then(|v| v.as_str().map(str::to_string));
        vhost.exchanges.insert(
            exchange.name.clone(),
            PlainExchange {
                lint: None,
                kind: exchange.kind.clone(),
                durable: (!exchange.durable).then_some(false),
                auto_delete: exchange.auto_delete.then_some(true),
                internal: exchange.internal.then_some(true),
                alternate_exchange: alternate,
                arguments,
                // Import keeps permissions as the broker has them (users' `permissions`).
                publishers: Vec::new(),
            },
        );
    }
    for queue in definitions.queues.iter().filter(|q| q.vhost == vhost_name) {
        if claimed.queues.contains(&queue.name) {
            continue;
        }
        let arguments: IndexMap<String, Value> = queue
            .arguments
            .iter()
            .filter(|(k, _)| *k != "x-queue-type")
            .map(|(k, v)| (k.clone(), normalize_value(v)))
            .collect();
        vhost.queues.insert(
            queue.name.clone(),
            PlainQueue {
                lint: None,
                kind: Some(QueueType::of(queue)),
                durable: (!queue.durable).then_some(false),
                auto_delete: queue.auto_delete.then_some(true),
                arguments,
            },
        );
    }
    for binding in definitions
        .bindings
        .iter()
        .filter(|b| b.vhost == vhost_name && !b.source.is_empty())
    {
        if claimed.bindings.contains(&binding_id(binding)) {
            continue;
        }
        vhost.bindings.push(PlainBinding {
            source: binding.source.clone(),
            destination: binding.destination.clone(),
            destination_type: (binding.destination_type == "exchange")
                .then_some(DestinationType::Exchange),
            routing_key: (!binding.routing_key.is_empty()).then(|| binding.routing_key.clone()),
            arguments: binding
                .arguments
                .iter()
                .map(|(k, v)| (k.clone(), normalize_value(v)))
                .collect(),
        });
    }
    for policy in definitions
        .policies
        .iter()
        .filter(|p| p.vhost == vhost_name)
    {
        if policy.name.starts_with(crate::model::RESERVED_PREFIX) {
            let explained = fancy_regex::Regex::new(&policy.pattern)
                .map(|regex| {
                    definitions
                        .queues
                        .iter()
                        .filter(|q| {
                            q.vhost == vhost_name && regex.is_match(&q.name).unwrap_or(false)
                        })
                        .all(|q| claimed.queues.contains(&q.name))
                })
                .unwrap_or(false);
            if explained {
                continue; // regenerated from the recognised consumers
            }
            let renamed = format!("was-{}", policy.name);
            notes.0.push(format!(
                "vhost `{vhost_name}`: policy `{}` covers queues that were not recognised as a retry ladder; imported as plain policy `{renamed}` (`warren.` names are reserved)",
                policy.name
            ));
            vhost.policies.insert(
                renamed,
                plain_policy(
                    &policy.pattern,
                    &policy.apply_to,
                    policy.priority,
                    &policy.definition,
                    notes,
                ),
            );
            continue;
        }
        vhost.policies.insert(
            policy.name.clone(),
            plain_policy(
                &policy.pattern,
                &policy.apply_to,
                policy.priority,
                &policy.definition,
                notes,
            ),
        );
    }
    for parameter in definitions
        .parameters
        .iter()
        .filter(|p| p.vhost == vhost_name && !p.is_broker_internal())
    {
        match parameter.component.as_str() {
            VHOST_LIMITS_COMPONENT => {
                vhost.limits = Some(VhostLimits {
                    max_queues: parameter.value["max-queues"].as_i64(),
                    max_connections: parameter.value["max-connections"].as_i64(),
                });
            }
            OPERATOR_POLICY_COMPONENT => {
                let value = &parameter.value;
                let definition = value["definition"]
                    .as_object()
                    .map(|m| m.clone().into_iter().collect())
                    .unwrap_or_default();
                vhost.operator_policies.insert(
                    parameter.name.clone(),
                    plain_policy(
                        value["pattern"].as_str().unwrap_or_default(),
                        value["apply-to"].as_str().unwrap_or("all"),
                        value["priority"].as_i64().unwrap_or(0),
                        &definition,
                        notes,
                    ),
                );
            }
            "policy" => {}
            component => {
                let (value, variables) = credentials_from_env(parameter);
                for (variable, _) in &variables {
                    notes.0.push(format!(
                        "vhost `{vhost_name}`: {component} `{}` holds a URI with credentials: the spec reads it from ${variable} (warren never writes credentials into a spec); set it before `plan` or `apply`",
                        parameter.name
                    ));
                }
                vhost
                    .parameters
                    .entry(component.to_string())
                    .or_default()
                    .insert(parameter.name.clone(), value);
            }
        }
    }
}

/// A runtime parameter's value with every URI that holds credentials replaced by
/// `{ env: VARIABLE }`, and the variables with the values they must hold.
///
/// The variable is named after where the URI is (vhost, component, parameter, key:
/// `EDGE_FEDERATION_UPSTREAM_HUB_EU_URI`), so a reader of the spec knows what to set.
pub fn credentials_from_env(parameter: &crate::model::Parameter) -> (Value, Vec<(String, String)>) {
    fn walk(value: &Value, at: &str, found: &mut Vec<(String, String)>) -> Value {
        match value {
            Value::String(text) if redact_uris(value) != *value => {
                let mut variable = at.to_string();
                let mut n = 2;
                while found.iter().any(|(v, _)| *v == variable) {
                    variable = format!("{at}_{n}");
                    n += 1;
                }
                found.push((variable.clone(), text.clone()));
                serde_json::json!({ "env": variable })
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| walk(item, &format!("{at}_{}", i + 1), found))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| {
                        (
                            key.clone(),
                            walk(item, &format!("{at}_{}", variable_part(key)), found),
                        )
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let at = [
        parameter.vhost.as_str(),
        parameter.component.as_str(),
        parameter.name.as_str(),
    ]
    .map(variable_part)
    .into_iter()
    .filter(|part| !part.is_empty())
    .collect::<Vec<_>>()
    .join("_");
    let mut found = Vec::new();
    let value = walk(&normalize_value(&parameter.value), &at, &mut found);
    (value, found)
}

/// A name as part of an environment variable: letters and digits, upper case, the
/// rest `_`, without leading, trailing or repeated `_`.
fn variable_part(name: &str) -> String {
    let spaced: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                ' '
            }
        })
        .collect();
    spaced.split_whitespace().collect::<Vec<_>>().join("_")
}

fn plain_policy(
    pattern: &str,
    apply_to: &str,
    priority: i64,
    definition: &Arguments,
    notes: &mut Notes,
) -> PlainPolicy {
    let apply_to = match apply_to {
        "queues" => ApplyTo::Queues,
        "classic_queues" => ApplyTo::ClassicQueues,
        "quorum_queues" => ApplyTo::QuorumQueues,
        "streams" => ApplyTo::Streams,
        "exchanges" => ApplyTo::Exchanges,
        "all" => ApplyTo::All,
        other => {
            notes
                .0
                .push(format!("apply-to `{other}` is unknown; imported as `all`"));
            ApplyTo::All
        }
    };
    PlainPolicy {
        lint: None,
        pattern: pattern.to_string(),
        apply_to: Some(apply_to),
        priority: (priority != 0).then_some(priority),
        definition: definition
            .iter()
            .map(|(k, v)| (k.clone(), normalize_value(v)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uri_credentials_become_environment_references_named_after_their_place() {
        let parameter = crate::model::Parameter {
            vhost: "edge/eu".into(),
            component: "federation-upstream".into(),
            name: "hub-eu".into(),
            value: json!({
                "uri": ["amqp://fed:s3cret@a:5672", "amqp://b:5672"],
                "ack-mode": "on-confirm",
                "src-uri": "amqps://u:p@c/%2F"
            }),
        };
        let (value, variables) = credentials_from_env(&parameter);
        assert_eq!(
            value,
            json!({
                "uri": [{"env": "EDGE_EU_FEDERATION_UPSTREAM_HUB_EU_URI_1"}, "amqp://b:5672"],
                "ack-mode": "on-confirm",
                "src-uri": {"env": "EDGE_EU_FEDERATION_UPSTREAM_HUB_EU_SRC_URI"}
            })
        );
        assert_eq!(
            variables,
            [
                (
                    "EDGE_EU_FEDERATION_UPSTREAM_HUB_EU_SRC_URI".to_string(),
                    "amqps://u:p@c/%2F".to_string()
                ),
                (
                    "EDGE_EU_FEDERATION_UPSTREAM_HUB_EU_URI_1".to_string(),
                    "amqp://fed:s3cret@a:5672".to_string()
                ),
            ]
        );
    }
}
