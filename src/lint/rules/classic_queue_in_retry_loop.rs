//! Classic (single-node) queues carrying retries.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::spec::QueueType;

pub const RULE: Rule = Rule {
    id: "classic-queue-in-retry-loop",
    summary: "a retry loop uses classic queues, which live on one node",
    level: Some(Level::Warn),
    explanation: Some(
        "Messages waiting for a retry are by definition messages that could not be processed yet: losing them with a node is losing work. Classic queues are not replicated (mirroring was removed in RabbitMQ 4.0); quorum queues are. Use quorum queues for work queues, delay tiers and parking queues.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { type: classic, retry: { delays: [30s] } }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { type: quorum, retry: { delays: [30s] } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    graph
        .all_cycles()
        .into_iter()
        .filter_map(|cycle| {
            let classic: Vec<usize> = cycle
                .iter()
                .copied()
                .filter(|n| graph.facts[*n].queue_type == QueueType::Classic)
                .collect();
            let first = *classic.first()?;
            Some(
                Finding::on(
                    graph.id(first),
                    format!(
                        "the retry loop {} uses classic queues ({}), which are not replicated",
                        graph.names(&cycle),
                        graph.listed(&classic, ", ")
                    ),
                )
                .fix("use quorum queues (`type: quorum`) for retry loops"),
            )
        })
        .collect()
}
