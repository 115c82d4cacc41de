//! What the broker will actually do with each queue: effective settings after queue
//! arguments, the winning policy and operator policies are combined. One owner for
//! these facts: the lint's rules and `trace` both read them from here.

use std::sync::Arc;

use serde_json::Value;

use super::effective::CompiledPolicies;
use super::version::TargetVersion;
use super::{Definitions, Policy, Queue, QueueType};

/// The effective settings of one queue.
#[derive(Debug, Clone)]
pub struct QueueFacts<'a> {
    /// The queue.
    pub queue: &'a Queue,
    /// Its type.
    pub queue_type: QueueType,
    /// The policy that applies (highest priority among the applicable); `None` when
    /// none does or when the highest priority is tied (see `tied`).
    pub policy: Option<&'a Policy>,
    /// The applicable policies that share the highest priority, when two or more do:
    /// the broker applies one of them and which is not known here.
    pub tied: Vec<&'a Policy>,
    /// Every policy that matches by pattern and apply-to (applicable or not).
    pub matching: Vec<&'a Policy>,
    /// The operator policy that applies.
    pub operator_policy: Option<Arc<Policy>>,
    /// Dead-letter exchange (the argument wins over policies).
    pub dead_letter_exchange: Option<&'a str>,
    /// Dead-letter routing key (the argument wins over policies).
    pub dead_letter_routing_key: Option<&'a str>,
    /// Message TTL in ms: the lowest of argument, policy and operator policy.
    pub message_ttl: Option<u64>,
    /// The queue's own `x-message-ttl` argument.
    pub ttl_argument: Option<u64>,
    /// Queue expiry in ms: the lowest.
    pub expires: Option<u64>,
    /// Length limit: the lowest.
    pub max_length: Option<u64>,
    /// Overflow behaviour.
    pub overflow: Option<String>,
    /// Quorum delivery limit in force (including 4.0's default of 20); `None` = unlimited.
    pub delivery_limit: Option<i64>,
}

fn number(value: Option<&Value>) -> Option<u64> {
    value.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64)))
}

fn lowest(values: impl IntoIterator<Item = Option<u64>>) -> Option<u64> {
    values.into_iter().flatten().min()
}

/// Operator policies stored as parameters, in policy shape.
pub fn operator_policies(definitions: &Definitions) -> Vec<Arc<Policy>> {
    definitions
        .parameters
        .iter()
        .filter_map(|p| p.as_operator_policy())
        .map(Arc::new)
        .collect()
}

/// Computes the facts of every queue.
pub fn queue_facts<'a>(
    definitions: &'a Definitions,
    operators: &[Arc<Policy>],
    target: TargetVersion,
) -> Vec<QueueFacts<'a>> {
    let policies = CompiledPolicies::new(&definitions.policies);
    let operators = CompiledPolicies::new(operators);
    definitions
        .queues
        .iter()
        .map(|queue| {
            let kind = QueueType::of(queue);
            let choice = policies.choose(&queue.vhost, &queue.name, kind, target);
            let (policy, tied, matching) = (
                choice.winner.one(),
                choice.winner.tied().to_vec(),
                choice.matching,
            );
            let operator = operators
                .choose(&queue.vhost, &queue.name, kind, target)
                .winner
                .one();
            let argument = |key: &str| queue.arguments.get(key);
            let from_policy = |key: &str| policy.and_then(|p| p.definition.get(key));
            let from_operator = |key: &str| operator.and_then(|p| p.definition.get(key));
            let text = |value: Option<&'a Value>| value.and_then(|v| v.as_str());
            let owned = |value: Option<&Value>| value.and_then(|v| v.as_str()).map(str::to_string);
            let ttl_argument = number(argument("x-message-ttl"));
            let delivery_limit = if kind == QueueType::Quorum {
                let values: Vec<i64> = [
                    argument("x-delivery-limit"),
                    from_policy("delivery-limit"),
                    from_operator("delivery-limit"),
                ]
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_i64())
                .collect();
                match values.as_slice() {
                    [] if target.has_default_delivery_limit() => Some(20),
                    [] => None,
                    values
                        if values.iter().any(|v| *v < 0) && target.has_default_delivery_limit() =>
                    {
                        // A negative value means unlimited, but a positive one beats it.
                        values.iter().copied().filter(|v| *v >= 0).max()
                    }
                    values => values.iter().copied().filter(|v| *v >= 0).min(),
                }
            } else {
                None
            };
            QueueFacts {
                queue,
                queue_type: kind,
                policy,
                matching,
                tied,
                operator_policy: operator.cloned(),
                dead_letter_exchange: text(argument("x-dead-letter-exchange"))
                    .or_else(|| text(from_policy("dead-letter-exchange"))),
                dead_letter_routing_key: text(argument("x-dead-letter-routing-key"))
                    .or_else(|| text(from_policy("dead-letter-routing-key"))),
                message_ttl: lowest([
                    ttl_argument,
                    number(from_policy("message-ttl")),
                    number(from_operator("message-ttl")),
                ]),
                ttl_argument,
                expires: lowest([
                    number(argument("x-expires")),
                    number(from_policy("expires")),
                    number(from_operator("expires")),
                ]),
                max_length: lowest([
                    number(argument("x-max-length")),
                    number(from_policy("max-length")),
                    number(from_operator("max-length")),
                ]),
                overflow: owned(from_operator("overflow")).or_else(|| {
                    match kind {
                        QueueType::Quorum => {
                            text(from_policy("overflow")).or_else(|| text(argument("x-overflow")))
                        }
                        _ => text(argument("x-overflow")).or_else(|| text(from_policy("overflow"))),
                    }
                    .map(str::to_string)
                }),
                delivery_limit,
            }
        })
        .collect()
}
