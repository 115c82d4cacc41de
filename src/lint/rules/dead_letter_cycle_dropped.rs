//! A dead-letter cycle where every hop is automatic: the broker drops the messages.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "dead-letter-cycle-dropped",
    summary: "every queue of a dead-letter cycle expires its messages: the broker drops them when they come back",
    level: Some(Level::Deny),
    explanation: Some(
        "RabbitMQ drops a dead letter that would re-enter a queue it already passed unless a consumer rejected it somewhere on the way (cycle detection). In a cycle where every queue has a message TTL, messages only ever expire, so they are dropped on their way back. This is what happens when a work queue has a TTL and feeds its own retry ladder. Remove the TTL from the queue consumers read, so that each return follows a rejection.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    exchanges:\n      to-work: { type: fanout }\n      to-delay: { type: fanout }\n    queues:\n      work: { arguments: { x-message-ttl: 60000, x-dead-letter-exchange: to-delay } }\n      delay: { arguments: { x-message-ttl: 30000, x-dead-letter-exchange: to-work } }\n    bindings:\n      - { source: to-delay, destination: delay }\n      - { source: to-work, destination: work }\n",
        good: "version: 1\nvhosts:\n  v:\n    exchanges:\n      to-work: { type: fanout }\n      to-delay: { type: fanout }\n    queues:\n      work: { arguments: { x-dead-letter-exchange: to-delay } }\n      delay: { arguments: { x-message-ttl: 30000, x-dead-letter-exchange: to-work } }\n    bindings:\n      - { source: to-delay, destination: delay }\n      - { source: to-work, destination: work }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    graph
        .cycles_among(|fact| fact.message_ttl.is_some())
        .into_iter()
        .map(|cycle| {
            Finding::on(
                graph.id(cycle[0]),
                format!(
                    "dead letters cycle through {}, and every one of them expires messages: with no rejection on the way, the broker drops them when they come back",
                    graph.names(&cycle)
                ),
            )
            .fix("remove the message TTL from the queue consumers read, so that every return follows a rejection")
        })
        .collect()
}
