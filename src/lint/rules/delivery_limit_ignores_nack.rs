//! Quorum queues whose delivery limit a `basic.nack` no longer reaches (RabbitMQ 4.3).

use rustc_hash::FxHashSet;
use serde_json::Value;

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::queue_facts::QueueFacts;
use crate::spec::{QueueType, RetryMode};

pub const RULE: Rule = Rule {
    id: "delivery-limit-ignores-nack",
    summary: "a quorum queue relies on a delivery limit that a `basic.nack` with requeue never reaches (RabbitMQ 4.3)",
    level: Some(Level::Warn),
    explanation: Some(
        "From RabbitMQ 4.3 a quorum queue counts only *failed* deliveries toward its delivery limit: `basic.reject` with requeue=true. A `basic.nack` with requeue=true *returns* the message, which does not count, so a poison message that a consumer keeps nacking is redelivered without end (measured on 4.3.6: a limit of 2, nine deliveries and never dead-lettered; 3.10 and 4.0 dead-letter it after three). The limit still guards against consumers that reject. Make every consumer of the queue requeue with `basic.reject`, never `basic.nack` (`warren compile --contract` says so per consumer), or take the explicit limit away if nothing relies on it.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    queues:\n      jobs: { type: quorum, arguments: { x-delivery-limit: 5 } }\n",
        good: "version: 1\nvhosts:\n  v:\n    queues:\n      jobs: { type: quorum }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    if context.target.counts_nack_toward_delivery_limit() {
        return Vec::new();
    }
    let target = context.target;
    // A `native` consumer's limit is its retry count, and its contract already says to
    // reject, never nack: the rule is about limits a spec sets as a poison guard. A set:
    // at 10,000 native consumers a list made this rule quadratic (2 × 10^8 name
    // comparisons, most of a lint's time).
    let native: FxHashSet<&str> = context
        .contract
        .map(|contract| {
            contract
                .consumers
                .iter()
                .filter(|c| {
                    c.retry
                        .as_ref()
                        .is_some_and(|r| r.mode == RetryMode::Native)
                })
                .map(|c| c.queue.as_str())
                .collect()
        })
        .unwrap_or_default();
    context
        .graph()
        .facts
        .iter()
        .filter(|fact| fact.queue_type == QueueType::Quorum)
        .filter(|fact| !native.contains(&fact.queue.name.as_str()))
        .filter_map(|fact| explicit_limit(fact).map(|limit| (fact, limit)))
        .map(|(fact, limit)| {
            Finding::on(
                queue_id(fact),
                format!(
                    "quorum queue `{}` has a delivery limit of {limit}: on RabbitMQ {target} a consumer that requeues with `basic.nack` never reaches it",
                    fact.queue.name
                ),
            )
            .fix("requeue with `basic.reject` (requeue=true), which counts toward the limit; never `basic.nack`")
        })
        .collect()
}

/// The finite delivery limit set on the queue itself, by the policy that applies or by
/// the operator policy (the lowest wins, as the broker takes it); `None` when only the
/// broker's default of 20 applies or the limit is unlimited.
fn explicit_limit(fact: &QueueFacts) -> Option<i64> {
    let from = |value: Option<&Value>| value.and_then(Value::as_i64).filter(|limit| *limit >= 0);
    [
        from(fact.queue.arguments.get("x-delivery-limit")),
        from(fact.policy.and_then(|p| p.definition.get("delivery-limit"))),
        from(
            fact.operator_policy
                .as_ref()
                .and_then(|p| p.definition.get("delivery-limit")),
        ),
    ]
    .into_iter()
    .flatten()
    .min()
}
