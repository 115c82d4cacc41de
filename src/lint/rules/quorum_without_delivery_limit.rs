//! Quorum queues with no delivery limit on versions without a default.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::spec::QueueType;

pub const RULE: Rule = Rule {
    id: "quorum-without-delivery-limit",
    summary: "a quorum queue outside any retry loop has no delivery limit (before RabbitMQ 4.0)",
    level: Some(Level::Allow),
    explanation: Some(
        "Before 4.0, quorum queues have no delivery limit by default: a poison message that crashes its consumer is redelivered forever. Set `delivery-limit` (with a dead-letter exchange to catch such messages). Off by default: retry loops deliberately run without a limit (see `delivery-limit-into-own-loop`); turn it on with `lint: { warn: [quorum-without-delivery-limit] }`.",
    ),
    check: Check {
        bad: "version: 1\nlint: { warn: [quorum-without-delivery-limit] }\nvhosts:\n  v:\n    queues:\n      jobs: { type: quorum }\n",
        good: "version: 1\nlint: { warn: [quorum-without-delivery-limit] }\nvhosts:\n  v:\n    queues:\n      jobs: { type: quorum, arguments: { x-delivery-limit: 10 } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    if context.target.has_default_delivery_limit() {
        return Vec::new();
    }
    let graph = context.graph();
    let in_loop = graph.in_cycle();
    graph
        .facts
        .iter()
        .enumerate()
        .filter(|(node, fact)| {
            fact.queue_type == QueueType::Quorum && !in_loop[*node] && fact.delivery_limit.is_none() && fact.message_ttl.is_none()
        })
        .map(|(_, fact)| {
            Finding::on(
                queue_id(fact),
                format!("quorum queue `{}` has no delivery limit: a poison message is redelivered forever", fact.queue.name),
            )
            .fix("set `x-delivery-limit` (or a `delivery-limit` policy) and a dead-letter exchange")
        })
        .collect()
}
