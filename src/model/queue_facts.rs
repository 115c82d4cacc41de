//! What the broker will actually do with each queue: effective settings after queue
//! arguments, the winning policy and operator policies are combined. One owner for
//! these facts: the lint's rules and `trace` both read them from here.

use std::sync::Arc;

use serde_json::Value;

use super::effective::CompiledPolicies;
use super::settings::{self, Setting};
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
            let text = |value: Option<&'a Value>| value.and_then(|v| v.as_str());
            let settings = settings::resolve(queue, policy, operator.map(|p| &**p), target);
            let number = |setting: Option<Setting>| {
                setting
                    .and_then(|s| s.number())
                    .and_then(|n| u64::try_from(n).ok())
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
                message_ttl: number(settings.message_ttl),
                ttl_argument: argument("x-message-ttl")
                    .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64))),
                expires: number(settings.expires),
                max_length: number(settings.max_length),
                overflow: settings.overflow.and_then(|s| s.text().map(str::to_string)),
                delivery_limit: settings.delivery_limit.and_then(|s| s.number()),
            }
        })
        .collect()
}
