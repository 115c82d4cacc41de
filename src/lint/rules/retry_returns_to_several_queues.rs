//! A delay queue returns messages to several queues.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "retry-returns-to-several-queues",
    summary: "a delay queue returns messages through an exchange bound to several queues: consumers that did not fail get the retry too",
    level: Some(Level::Warn),
    explanation: Some(
        "When a delay queue dead-letters back to a shared inner exchange, every queue bound to it receives the retried message again, not only the consumer that failed. Give each consumer its own dead exchange and return expired messages straight to its queue (warren does this unless `return_via: inner_exchange` is set).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        defaults:\n          retry: { mode: reject, delays: [30s], return_via: inner_exchange }\n        consumers:\n          a: {}\n          b: {}\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        defaults:\n          retry: { mode: reject, delays: [30s] }\n        consumers:\n          a: {}\n          b: {}\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for (fact, route) in graph.facts.iter().zip(&graph.routes) {
        let (Some(_), Some(route)) = (fact.message_ttl, route) else {
            continue;
        };
        if route.queues.len() > 1 {
            let list: Vec<String> = route.queues.iter().map(|q| format!("`{q}`")).collect();
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "delay queue `{}` returns every message to {}: consumers that did not fail get each retry too",
                        fact.queue.name,
                        list.join(", ")
                    ),
                )
                .fix("give each consumer its own dead exchange and return expired messages straight to its queue"),
            );
        }
    }
    findings
}
