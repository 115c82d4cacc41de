//! A queue dead-letters to an exchange that does not exist.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "dead-letter-exchange-missing",
    summary: "a queue's dead-letter exchange does not exist: its dead letters are dropped",
    level: Some(Level::Deny),
    explanation: Some(
        "When a queue dead-letters a message (a reject without requeue, an expired TTL, a length limit) to an exchange that does not exist, the broker drops the message silently. Create the exchange, or fix the name in `x-dead-letter-exchange` or the policy's `dead-letter-exchange`. (In a spec, warren refuses such references already; this rule finds them in definitions files.)",
    ),
    check: Check {
        bad: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "work", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum", "x-dead-letter-exchange": "work.retyr"}}], "exchanges": [{"name": "work.retry", "vhost": "v", "type": "direct", "durable": true, "auto_delete": false, "internal": false, "arguments": {}}]}"#,
        good: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "work", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum", "x-dead-letter-exchange": "work.retry"}}], "exchanges": [{"name": "work.retry", "vhost": "v", "type": "direct", "durable": true, "auto_delete": false, "internal": false, "arguments": {}}], "bindings": []}"#,
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for (fact, route) in graph.facts.iter().zip(&graph.routes) {
        if let Some(missing) = route.as_ref().and_then(|r| r.missing_exchange.as_ref()) {
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "queue `{}` dead-letters to exchange `{missing}`, which does not exist: its dead letters are dropped",
                        fact.queue.name
                    ),
                )
                .fix("create the exchange or fix the dead-letter exchange name"),
            );
        }
    }
    findings
}
