//! Quorum queues that delay redeliveries with no delivery limit of their own.

use serde_json::Value;

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::queue_facts::QueueFacts;
use crate::spec::QueueType;

pub const RULE: Rule = Rule {
    id: "delayed-retry-default-delivery-limit",
    summary: "a quorum queue delays redeliveries (RabbitMQ 4.3) but sets no delivery limit, so the broker's default of 20 decides the retries",
    level: Some(Level::Warn),
    explanation: Some(
        "A quorum queue with delayed retry (`x-delayed-retry-type` or a `delayed-retry-type` policy) waits before each redelivery of a failed message, and dead-letters it at its delivery limit. Without a limit of its own the broker's default of 20 applies: a poison message is retried 20 times, each wait growing up to the maximum, before it is parked or dropped, which is rarely what the ladder means. Set `delivery-limit` (or `x-delivery-limit`) to the number of retries; warren's `mode: native` sets it to `max_retries`.",
    ),
    check: Check {
        bad: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "jobs", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum", "x-delayed-retry-type": "all", "x-delayed-retry-min": 1000, "x-delayed-retry-max": 3000}}]}"#,
        good: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "jobs", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum", "x-delayed-retry-type": "all", "x-delayed-retry-min": 1000, "x-delayed-retry-max": 3000, "x-delivery-limit": 3}}]}"#,
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    if !context.target.has_native_delayed_retry() {
        return Vec::new();
    }
    context
        .graph()
        .facts
        .iter()
        .filter(|fact| fact.queue_type == QueueType::Quorum && delays(fact) && !limited(fact))
        .map(|fact| {
            Finding::on(
                queue_id(fact),
                format!(
                    "quorum queue `{}` delays redeliveries but sets no delivery limit: the broker's default of 20 decides how often a failed message is retried",
                    fact.queue.name
                ),
            )
            .fix("set `delivery-limit` (a policy) or `x-delivery-limit` to the number of retries you mean")
        })
        .collect()
}

/// The settings of `key` on the queue (argument `x-<key>`), in the policy that applies
/// and in the operator policy.
fn settings<'a>(fact: &'a QueueFacts, key: &str) -> [Option<&'a Value>; 3] {
    [
        fact.queue.arguments.get(&format!("x-{key}")),
        fact.policy.and_then(|p| p.definition.get(key)),
        fact.operator_policy
            .as_ref()
            .and_then(|p| p.definition.get(key)),
    ]
}

fn delays(fact: &QueueFacts) -> bool {
    settings(fact, "delayed-retry-type")
        .into_iter()
        .flatten()
        .any(|kind| kind.as_str().is_some_and(|kind| kind != "disabled"))
}

fn limited(fact: &QueueFacts) -> bool {
    settings(fact, "delivery-limit")
        .into_iter()
        .flatten()
        .any(|limit| limit.as_i64().is_some())
}
