//! A queue's dead letters reach its dead-letter exchange but no queue.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "dead-letter-unroutable",
    summary: "a queue's dead-letter routing key matches no binding: its dead letters are dropped",
    level: Some(Level::Deny),
    explanation: Some(
        "Dead-lettering publishes without `mandatory`: a dead letter that the dead-letter exchange routes to no queue is gone, with no error anywhere. Bind a queue for the dead-letter routing key, fix the key, or give the dead-letter exchange an `alternate-exchange` that catches what it cannot route.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    exchanges:\n      dlx: { type: direct }\n    queues:\n      parked: {}\n      work:\n        arguments: { x-dead-letter-exchange: dlx, x-dead-letter-routing-key: parked }\n    bindings:\n      - { source: dlx, destination: parked, routing_key: parking }\n",
        good: "version: 1\nvhosts:\n  v:\n    exchanges:\n      dlx: { type: direct }\n    queues:\n      parked: {}\n      work:\n        arguments: { x-dead-letter-exchange: dlx, x-dead-letter-routing-key: parking }\n    bindings:\n      - { source: dlx, destination: parked, routing_key: parking }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for (fact, route) in graph.facts.iter().zip(&graph.routes) {
        let Some(route) = route else { continue };
        if route.missing_exchange.is_some() || !route.queues.is_empty() {
            continue;
        }
        let exchange = fact.dead_letter_exchange.unwrap_or_default();
        let key = match &fact.dead_letter_routing_key {
            Some(key) => format!("routing key `{key}`"),
            None => "any routing key (the exchange has no bindings)".to_string(),
        };
        findings.push(
            Finding::on(
                queue_id(fact),
                format!(
                    "dead letters of queue `{}` go to exchange `{}` with {key}, which reaches no queue: they are dropped",
                    fact.queue.name,
                    if exchange.is_empty() { "(default)" } else { &exchange }
                ),
            )
            .fix("bind a queue for that key, fix the key, or add an alternate exchange to the dead-letter exchange"),
        );
    }
    findings
}
