//! A quorum queue's delivery limit dead-letters into its own retry loop.

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "delivery-limit-into-own-loop",
    summary: "a quorum queue's delivery limit dead-letters into its own retry loop, where the broker drops the message",
    level: Some(Level::Deny),
    explanation: Some(
        "A quorum queue dead-letters a message that was redelivered more times than its delivery limit (20 by default from RabbitMQ 4.0). When its dead-letter exchange leads into its own retry loop, that message expires in a delay queue and comes back with no rejection in between, and the broker's cycle detection drops it. Set the work queue's delivery limit to unlimited (-1; warren does this for the queues it generates), and have consumers reject failed messages instead of requeueing them.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    exchanges:\n      to-work: { type: fanout }\n      to-delay: { type: fanout }\n    queues:\n      work: { type: quorum, arguments: { x-dead-letter-exchange: to-delay, x-delivery-limit: 5 } }\n      delay: { type: quorum, arguments: { x-message-ttl: 30000, x-dead-letter-exchange: to-work } }\n    bindings:\n      - { source: to-delay, destination: delay }\n      - { source: to-work, destination: work }\n",
        good: "version: 1\nvhosts:\n  v:\n    exchanges:\n      to-work: { type: fanout }\n      to-delay: { type: fanout }\n    queues:\n      work: { type: quorum, arguments: { x-dead-letter-exchange: to-delay } }\n      delay: { type: quorum, arguments: { x-message-ttl: 30000, x-dead-letter-exchange: to-work } }\n    bindings:\n      - { source: to-delay, destination: delay }\n      - { source: to-work, destination: work }\n    policies:\n      unlimited: { pattern: '^work$', apply_to: queues, definition: { delivery-limit: -1 } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for cycle in graph.all_cycles() {
        for &node in &cycle {
            let fact = &graph.facts[node];
            // Delay queues have no consumers; the queue consumers read has no TTL.
            if fact.message_ttl.is_some() {
                continue;
            }
            if let Some(limit) = fact.delivery_limit {
                let origin = if fact.queue.arguments.contains_key("x-delivery-limit")
                    || fact
                        .policy
                        .is_some_and(|p| p.definition.contains_key("delivery-limit"))
                {
                    format!("delivery limit {limit}")
                } else {
                    format!(
                        "RabbitMQ {}'s default delivery limit of {limit}",
                        context.target
                    )
                };
                findings.push(
                    Finding::on(
                        graph.id(node),
                        format!(
                            "quorum queue `{}` has a {origin} and dead-letters into its own retry loop ({}): a message over the limit is dropped when it comes back",
                            fact.queue.name,
                            graph.names(&cycle)
                        ),
                    )
                    .fix("set `delivery-limit: -1` for this queue (a policy), and reject failed messages instead of requeueing them"),
                );
            }
        }
    }
    findings
}
