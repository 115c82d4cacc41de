//! Operator policies that change retry queues behind the spec's back.

use super::graph::queue_id;
use crate::lint::{Context, Finding, Level, Rule};

pub const RULE: Rule = Rule {
    id: "operator-policy-conflict",
    level: Level::Warn,
    summary: "an operator policy limits a queue of a retry loop (TTL, length, overflow)",
    explanation: "Operator policies are merged into every matching queue's settings and, for limits, the lower value wins even over queue arguments. An operator `message-ttl` shortens delay tiers; a `max-length` with `drop-head` drops retries; `overflow: drop-head` on a quorum queue turns at-least-once dead-lettering back into at-most-once. Exclude retry queues from the operator policy's pattern. (Queue expiry on delay queues is the separate rule `delay-queue-expires`.)",
    bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30m] } }\n    operator_policies:\n      guard: { pattern: '.*', definition: { message-ttl: 600000 } }\n",
    good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30m] } }\n    operator_policies:\n      guard: { pattern: '^cache\\.', definition: { message-ttl: 600000 } }\n",
    check,
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let in_loop: Vec<bool> = {
        let mut marks = vec![false; graph.facts.len()];
        for cycle in graph.all_cycles() {
            for node in cycle {
                marks[node] = true;
            }
        }
        marks
    };
    let mut findings = Vec::new();
    for (node, fact) in graph.facts.iter().enumerate() {
        let Some(operator) = &fact.operator_policy else {
            continue;
        };
        if !in_loop[node] && fact.dead_letter_exchange.is_none() {
            continue;
        }
        let keys: Vec<&str> = ["message-ttl", "max-length", "max-length-bytes", "overflow"]
            .into_iter()
            .filter(|key| operator.definition.contains_key(key))
            .collect();
        if keys.is_empty() {
            continue;
        }
        findings.push(
            Finding::on(
                queue_id(fact),
                format!(
                    "operator policy `{}` sets {} on queue `{}`, which is part of a retry loop",
                    operator.name,
                    keys.iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    fact.queue.name
                ),
            )
            .help("exclude retry queues from the operator policy's pattern"),
        );
    }
    findings
}
