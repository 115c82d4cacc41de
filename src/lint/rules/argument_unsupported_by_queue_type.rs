//! Queue arguments or properties the queue type refuses.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::queue_arguments;
use crate::spec::QueueType;

pub const RULE: Rule = Rule {
    id: "argument-unsupported-by-queue-type",
    summary: "a queue argument or property its queue type refuses (the declaration fails)",
    level: Some(Level::Deny),
    explanation: Some(
        "Each queue type accepts only its own arguments and properties: `x-max-priority` and `x-queue-mode` are classic-only, `x-delivery-limit` and `x-dead-letter-strategy` quorum-only; quorum queues and streams must be durable and not auto-delete. A client's declaration of such a queue fails with 406 PRECONDITION_FAILED. A definitions import is worse: it refuses a wrong argument (warren refuses such a file when reading it), but it accepts a quorum queue or stream that is not durable or is auto-delete and silently does not create it (seen on 3.10 and 4.0). (In a spec warren refuses all of these already; this rule finds the properties in definitions files.)",
    ),
    check: Check {
        bad: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "jobs", "vhost": "v", "durable": false, "auto_delete": false, "arguments": {"x-queue-type": "quorum"}}]}"#,
        good: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "jobs", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum"}}]}"#,
        run: check,
    },
};

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
                queue_arguments::find(key)
                    .is_some_and(|known| !known.accepted_by(kind, context.target))
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
                .fix("remove the argument or change the queue type"),
            );
        }
        if kind != QueueType::Classic && (!fact.queue.durable || fact.queue.auto_delete) {
            findings.push(Finding::on(
                queue_id(fact),
                format!(
                    "{} queue `{}` is not durable or is auto-delete, which its type refuses: a client cannot declare it, and a definitions import silently does not create it",
                    kind.as_str(),
                    fact.queue.name
                ),
            ));
        }
    }
    findings
}
