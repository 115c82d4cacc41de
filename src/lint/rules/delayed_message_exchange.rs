//! The delayed-message plugin's exchange type.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::{ObjectId, ObjectKind};

pub const RULE: Rule = Rule {
    id: "delayed-message-exchange",
    summary: "an `x-delayed-message` exchange keeps delayed messages on one node only",
    level: Some(Level::Warn),
    explanation: Some(
        "The rabbitmq_delayed_message_exchange plugin stores delayed messages in a node-local, unreplicated table: they are lost with the node or when the plugin is disabled, `mandatory` is not supported, and delays over about 49.7 days are delivered at once. For retries, use delay queues (warren's retry ladders) instead, or on RabbitMQ 4.3 a quorum queue's own delayed retry (`mode: native`); the plugin has no 4.3 release (docs/retry-modes.md).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    exchanges:\n      later: { type: x-delayed-message, arguments: { x-delayed-type: direct } }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: direct }\n        consumers:\n          c: { routing_keys: [job], retry: { delays: [30s, 5m] } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    context
        .definitions
        .exchanges
        .iter()
        .filter(|e| e.is_delayed_message())
        .map(|e| {
            Finding::on(
                ObjectId::in_vhost(ObjectKind::Exchange, &e.vhost, &e.name),
                format!(
                    "exchange `{}` keeps delayed messages on one node, unreplicated",
                    e.name
                ),
            )
            .fix("for retries, use a retry ladder of delay queues")
        })
        .collect()
}
