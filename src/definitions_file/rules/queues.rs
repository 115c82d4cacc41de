//! Queues: their arguments' values, the arguments their type and version take, dead-lettering's pair of arguments.

use serde_json::Value;

use crate::model::{QueueType, TargetVersion, queue_arguments};

use super::{Check, Fields, Found, JsonPointer, Level, Rule, arguments, name_of, objects, shown};

pub(super) const QUEUE_ARGUMENT_VALUE: Rule = Rule {
    id: "queue-argument-value",
    summary: "a queue argument the broker knows has a value of its type and range (e.g. `x-max-priority` 0–255, `x-expires` ≥ 1, no `null`)",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(queue_argument_value),
};

pub(super) const QUEUE_ARGUMENT_FOR_TYPE: Rule = Rule {
    id: "queue-argument-for-type",
    summary: "a queue argument is one its queue type takes (e.g. no `x-max-priority` on a quorum queue)",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(queue_argument_for_type),
};

pub(super) const QUEUE_ARGUMENT_ON_VERSION: Rule = Rule {
    id: "queue-argument-on-version",
    summary: "a queue argument is not one the version removed (4.3: `x-queue-version: 1`)",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(queue_argument_on_version),
};

pub(super) const DEAD_LETTER_ROUTING_KEY_WITHOUT_EXCHANGE: Rule = Rule {
    id: "dead-letter-routing-key-without-exchange",
    summary: "a queue with `x-dead-letter-routing-key` also has `x-dead-letter-exchange`",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(dead_letter_routing_key_without_exchange),
};

/// The queues the broker declares (it skips `amq.` names), with their type.
pub(super) fn declared_queues(
    document: &Value,
    target: TargetVersion,
) -> impl Iterator<Item = (JsonPointer, &Fields, QueueType)> {
    let vhost_defaults: std::collections::HashMap<&str, &str> = objects(document, "vhosts")
        .filter_map(|(_, vhost)| {
            Some((
                vhost.get("name")?.as_str()?,
                vhost.get("metadata")?.get("default_queue_type")?.as_str()?,
            ))
        })
        .collect();
    objects(document, "queues")
        .filter(|(_, queue)| !name_of(queue).starts_with("amq."))
        .map(move |(path, queue)| {
            let declared = queue
                .get("arguments")
                .and_then(|a| a.get("x-queue-type"))
                .and_then(Value::as_str);
            // 4.0 falls back to the vhost's default queue type; 3.10 to classic.
            let fallback = (target >= TargetVersion::V4_0)
                .then(|| {
                    queue
                        .get("vhost")
                        .and_then(Value::as_str)
                        .and_then(|v| vhost_defaults.get(v).copied())
                })
                .flatten();
            let kind = declared
                .or(fallback)
                .map_or(QueueType::Classic, QueueType::from_name);
            (path, queue, kind)
        })
}

fn queue_argument_value(document: &Value, found: &mut Found) {
    for (path, queue, _) in declared_queues(document, found.target) {
        for (key, value) in arguments(queue) {
            let problem = if value.is_null() {
                Some("`null`: the broker takes no null argument".to_string())
            } else {
                queue_arguments::find(key)
                    .filter(|known| known.broker_checks_value_on(found.target))
                    .and_then(|known| known.check_value(value).err())
                    .map(|expected| format!("{}, and it takes {expected}", shown(value)))
            };
            if let Some(problem) = problem {
                found.push(
                    path.then("arguments").then(key.as_str()),
                    "queue-argument-value",
                    format!(
                        "argument `{key}` of queue `{}` is {problem}",
                        name_of(queue)
                    ),
                );
            }
        }
    }
}

fn queue_argument_on_version(document: &Value, found: &mut Found) {
    for (path, queue, _) in declared_queues(document, found.target) {
        for (key, value) in arguments(queue) {
            let refusal = queue_arguments::find(key)
                .filter(|known| known.import_refuses_on(found.target))
                .and_then(|known| known.refusal_on(value, found.target));
            if let Some(refusal) = refusal {
                found.push(
                    path.then("arguments").then(key.as_str()),
                    "queue-argument-on-version",
                    format!("queue `{}`: {refusal}", name_of(queue)),
                );
            }
        }
    }
}

fn queue_argument_for_type(document: &Value, found: &mut Found) {
    let target = found.target;
    for (path, queue, kind) in declared_queues(document, target) {
        for (key, _) in arguments(queue) {
            if queue_arguments::find(key).is_some_and(|known| !known.accepted_by(kind, target)) {
                found.push(
                    path.then("arguments").then(key.as_str()),
                    "queue-argument-for-type",
                    format!(
                        "{} queue `{}` has the argument `{key}`, which its type does not take on RabbitMQ {target}",
                        kind.as_str(),
                        name_of(queue)
                    ),
                );
            }
        }
    }
}

fn dead_letter_routing_key_without_exchange(document: &Value, found: &mut Found) {
    for (path, queue, _) in declared_queues(document, found.target) {
        let has = |key: &str| arguments(queue).any(|(k, _)| k == key);
        if has("x-dead-letter-routing-key") && !has("x-dead-letter-exchange") {
            found.push(
                path.then("arguments").then("x-dead-letter-routing-key"),
                "dead-letter-routing-key-without-exchange",
                format!(
                    "queue `{}` has `x-dead-letter-routing-key` without `x-dead-letter-exchange` (to dead-letter through the default exchange, set `x-dead-letter-exchange` to \"\")",
                    name_of(queue)
                ),
            );
        }
    }
}
