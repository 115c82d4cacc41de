//! A dead-letter cycle without any TTL: rejected messages come straight back.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "dead-letter-hot-loop",
    summary: "a dead-letter cycle has no TTL anywhere: a rejected message comes straight back",
    level: Some(Level::Deny),
    explanation: Some(
        "A loop of dead-letter exchanges with no message TTL on any of its queues hands a rejected message back at once, as fast as a reject with requeue: it hammers the failing service instead of waiting. Put a delay queue (a queue with a message TTL and no consumers) on the path back.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    exchanges:\n      again: { type: fanout }\n    queues:\n      work: { arguments: { x-dead-letter-exchange: again } }\n    bindings:\n      - { source: again, destination: work }\n",
        good: "version: 1\nvhosts:\n  v:\n    exchanges:\n      again: { type: fanout }\n      wait: { type: fanout }\n    queues:\n      work: { arguments: { x-dead-letter-exchange: wait } }\n      delay: { arguments: { x-message-ttl: 30000, x-dead-letter-exchange: again } }\n    bindings:\n      - { source: wait, destination: delay }\n      - { source: again, destination: work }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    graph
        .cycles_among(|fact| fact.message_ttl.is_none())
        .into_iter()
        .map(|cycle| {
            Finding::on(
                graph.id(cycle[0]),
                format!(
                    "dead letters cycle through {} with no message TTL anywhere: a rejected message comes straight back",
                    graph.names(&cycle)
                ),
            )
            .fix("send dead letters through a delay queue with a message TTL (a retry tier) before they return")
        })
        .collect()
}
