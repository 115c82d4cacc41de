//! Queue arguments or properties the queue type refuses.

use super::graph::queue_id;
use crate::lint::{Context, Finding, Level, Rule};
use crate::spec::QueueType;

pub const RULE: Rule = Rule {
    id: "argument-unsupported-by-queue-type",
    level: Level::Deny,
    summary: "a queue argument or property its queue type refuses (the declaration fails)",
    explanation: "Each queue type accepts only its own arguments: `x-max-priority` and `x-queue-mode` are classic-only, `x-delivery-limit` and `x-dead-letter-strategy` quorum-only; quorum queues and streams must be durable, not exclusive, not auto-delete. The broker refuses such a declaration with 406 PRECONDITION_FAILED, so the queue never exists. (In a spec warren refuses these already; this rule finds them in definitions files.)",
    bad: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "jobs", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum", "x-max-priority": 10}}]}"#,
    good: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "jobs", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic", "x-max-priority": 10}}]}"#,
    check,
};

const CLASSIC_ONLY: &[&str] = &[
    "x-max-priority",
    "x-queue-mode",
    "x-queue-version",
    "x-queue-master-locator",
];
const QUORUM_ONLY: &[&str] = &[
    "x-delivery-limit",
    "x-dead-letter-strategy",
    "x-quorum-initial-group-size",
    "x-max-in-memory-length",
    "x-max-in-memory-bytes",
];
const STREAM_ONLY: &[&str] = &[
    "x-max-age",
    "x-stream-max-segment-size-bytes",
    "x-initial-cluster-size",
];
const NOT_FOR_STREAMS: &[&str] = &[
    "x-message-ttl",
    "x-expires",
    "x-overflow",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
];

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for fact in &graph.facts {
        let kind = fact.queue_type;
        let refused: Vec<&String> = fact
            .queue
            .arguments
            .keys()
            .filter(|key| {
                let key = key.as_str();
                match kind {
                    QueueType::Classic => QUORUM_ONLY.contains(&key) || STREAM_ONLY.contains(&key),
                    QueueType::Quorum => CLASSIC_ONLY.contains(&key) || STREAM_ONLY.contains(&key),
                    QueueType::Stream => {
                        CLASSIC_ONLY.contains(&key)
                            || QUORUM_ONLY.contains(&key)
                            || NOT_FOR_STREAMS.contains(&key)
                    }
                }
            })
            .collect();
        if !refused.is_empty() {
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "{} queue `{}` has {}, which its type refuses: the declaration fails",
                        kind.as_str(),
                        fact.queue.name,
                        refused
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .help("remove the argument or change the queue type"),
            );
        }
        if kind != QueueType::Classic && (!fact.queue.durable || fact.queue.auto_delete) {
            findings.push(Finding::on(
                queue_id(fact),
                format!(
                    "{} queue `{}` must be durable and not auto-delete",
                    kind.as_str(),
                    fact.queue.name
                ),
            ));
        }
    }
    findings
}
