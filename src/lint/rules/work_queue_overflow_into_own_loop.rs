//! A work queue with a drop-head length limit feeds its own retry loop.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "work-queue-overflow-into-own-loop",
    summary: "a work queue's length limit dead-letters into its own retry loop, where the broker drops the message",
    level: Some(Level::Deny),
    explanation: Some(
        "A queue with `max-length` and the default `drop-head` overflow dead-letters its oldest message when full. When that queue feeds its own retry loop, the message expires in a delay queue and comes back with no rejection in between, and the broker drops it. Use `overflow: reject-publish` on work queues, or no length limit.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    exchanges:\n      to-work: { type: fanout }\n      to-delay: { type: fanout }\n    queues:\n      work: { arguments: { x-dead-letter-exchange: to-delay, x-max-length: 10000 } }\n      delay: { arguments: { x-message-ttl: 30000, x-dead-letter-exchange: to-work } }\n    bindings:\n      - { source: to-delay, destination: delay }\n      - { source: to-work, destination: work }\n",
        good: "version: 1\nvhosts:\n  v:\n    exchanges:\n      to-work: { type: fanout }\n      to-delay: { type: fanout }\n    queues:\n      work: { arguments: { x-dead-letter-exchange: to-delay, x-max-length: 10000, x-overflow: reject-publish } }\n      delay: { arguments: { x-message-ttl: 30000, x-dead-letter-exchange: to-work } }\n    bindings:\n      - { source: to-delay, destination: delay }\n      - { source: to-work, destination: work }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for cycle in graph.all_cycles() {
        for &node in &cycle {
            let fact = &graph.facts[node];
            let drops_head = fact.overflow.as_deref().unwrap_or("drop-head") == "drop-head";
            if fact.message_ttl.is_none() && fact.max_length.is_some() && drops_head {
                findings.push(
                    Finding::on(
                        graph.id(node),
                        format!(
                            "queue `{}` drops its oldest message into its own retry loop when it reaches its length limit ({}): such messages are dropped when they come back",
                            fact.queue.name,
                            graph.names(&cycle)
                        ),
                    )
                    .fix("use `overflow: reject-publish` on this queue, or remove its length limit"),
                );
            }
        }
    }
    findings
}
