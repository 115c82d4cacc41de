//! Two policies with the same priority match the same queue.

use std::collections::BTreeSet;

use super::graph::queue_id;
use crate::lint::{Context, Finding, Level, Rule};

pub const RULE: Rule = Rule {
    id: "policy-priority-tie",
    level: Level::Warn,
    summary: "two policies with the same priority match the same queue: the broker picks one at random",
    explanation: "Only one policy applies to a queue: the matching one with the highest priority. When several share the highest priority, the broker's choice is undefined and can change on restart. Give them different priorities, or patterns that do not overlap, or merge them into one policy.",
    bad: "version: 1\nvhosts:\n  v:\n    queues:\n      orders.audit: {}\n    policies:\n      cap: { pattern: '^orders\\.', definition: { max-length: 1000 } }\n      ttl: { pattern: 'audit$', definition: { message-ttl: 60000 } }\n",
    good: "version: 1\nvhosts:\n  v:\n    queues:\n      orders.audit: {}\n    policies:\n      cap-and-ttl: { pattern: '^orders\\.', definition: { max-length: 1000, message-ttl: 60000 } }\n",
    check,
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut reported = BTreeSet::new();
    let mut findings = Vec::new();
    for fact in &graph.facts {
        let Some(top) = fact.matching.iter().map(|p| p.priority).max() else {
            continue;
        };
        let tied: Vec<&str> = fact
            .matching
            .iter()
            .filter(|p| p.priority == top)
            .map(|p| p.name.as_str())
            .collect();
        if tied.len() > 1 && reported.insert(tied.join(",")) {
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "policies {} have the same priority {top} and all match queue `{}`: which one applies is undefined",
                        tied.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
                        fact.queue.name
                    ),
                )
                .help("give the policies different priorities, make their patterns disjoint, or merge them"),
            );
        }
    }
    findings
}
