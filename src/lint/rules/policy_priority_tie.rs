//! Two policies with the same priority match the same queue.

use std::collections::BTreeSet;

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "policy-priority-tie",
    summary: "two policies with the same priority match the same queue: the broker picks one, and which is not knowable",
    level: Some(Level::Warn),
    explanation: Some(
        "Only one policy applies to a queue: the matching one with the highest priority. When several share the highest priority, the broker takes the first in the order its parameter store lists them (neither by name nor by age), so its choice can differ between vhosts, nodes and restarts; `warren plan` refuses such a tie on a queue the spec manages. Give them different priorities, or patterns that do not overlap, or merge them into one policy.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    queues:\n      orders.audit: {}\n    policies:\n      cap: { pattern: '^orders\\.', definition: { max-length: 1000 } }\n      ttl: { pattern: 'audit$', definition: { message-ttl: 60000 } }\n",
        good: "version: 1\nvhosts:\n  v:\n    queues:\n      orders.audit: {}\n    policies:\n      cap-and-ttl: { pattern: '^orders\\.', definition: { max-length: 1000, message-ttl: 60000 } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut reported = BTreeSet::new();
    let mut findings = Vec::new();
    for fact in &graph.facts {
        // The tie the broker sees: among the policies it would apply to this queue
        // (model::effective, the one owner of the rule), not every pattern match.
        let Some(top) = fact.tied.first().map(|p| p.priority) else {
            continue;
        };
        let tied: Vec<&str> = fact.tied.iter().map(|p| p.name.as_str()).collect();
        if reported.insert(tied.join(",")) {
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "policies {} have the same priority {top} and all match queue `{}`: which one applies is undefined",
                        tied.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
                        fact.queue.name
                    ),
                )
                .fix("give the policies different priorities, make their patterns disjoint, or merge them"),
            );
        }
    }
    findings
}
