//! A higher-priority policy without dead-lettering shadows the one that sets it.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "policy-shadows-dead-lettering",
    summary: "a higher-priority policy replaces the one that gives a queue its dead-letter exchange",
    level: Some(Level::Deny),
    explanation: Some(
        "Only one policy applies to a queue. When a queue gets its dead-letter exchange from a policy, any policy with a higher priority that matches it (say, one that only sets `max-length`) replaces it entirely, and the queue stops dead-lettering: rejected and expired messages are dropped. Merge the keys into one policy, or put routing that never changes in queue arguments (warren does this for the queues it generates).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    exchanges:\n      dlx: { type: fanout }\n    queues:\n      work: {}\n      dead: {}\n    bindings:\n      - { source: dlx, destination: dead }\n    policies:\n      dead-lettering: { pattern: '^work$', priority: 1, definition: { dead-letter-exchange: dlx } }\n      cap: { pattern: '.*', priority: 5, definition: { max-length: 100000 } }\n",
        good: "version: 1\nvhosts:\n  v:\n    exchanges:\n      dlx: { type: fanout }\n    queues:\n      work: {}\n      dead: {}\n    bindings:\n      - { source: dlx, destination: dead }\n    policies:\n      dead-lettering: { pattern: '^work$', priority: 5, definition: { dead-letter-exchange: dlx, max-length: 100000 } }\n      cap: { pattern: '^other', priority: 1, definition: { max-length: 100000 } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for fact in &graph.facts {
        if fact.queue.arguments.contains_key("x-dead-letter-exchange") {
            continue;
        }
        let Some(winner) = fact.policy else { continue };
        if winner.definition.contains_key("dead-letter-exchange") {
            continue;
        }
        for shadowed in fact.matching.iter().filter(|p| {
            p.priority < winner.priority && p.definition.contains_key("dead-letter-exchange")
        }) {
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "policy `{}` (priority {}) replaces `{}` (priority {}) on queue `{}`, which then loses its dead-letter exchange: its dead letters are dropped",
                        winner.name, winner.priority, shadowed.name, shadowed.priority, fact.queue.name
                    ),
                )
                .fix(format!("merge the keys of `{}` into one policy, or set the dead-letter exchange as a queue argument", shadowed.name)),
            );
        }
    }
    findings
}
