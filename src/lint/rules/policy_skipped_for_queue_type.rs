//! A policy that would apply to a queue is skipped because of one key its type lacks.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::policy_keys;

pub const RULE: Rule = Rule {
    id: "policy-skipped-for-queue-type",
    summary: "a policy holds a key the queue's type does not support, so the broker skips the whole policy for that queue",
    level: Some(Level::Warn),
    explanation: Some(
        "The broker applies a policy to a queue only if the queue's type supports every key in it: `delivery-limit` in a policy makes it skip all classic queues; `message-ttl` or `dead-letter-exchange` make it skip streams. The queue then silently gets a lower-priority policy, or none. Split the policy by queue type (`apply_to: quorum_queues` / `classic_queues` on 3.12+).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    queues:\n      jobs: { type: classic }\n    policies:\n      limits: { pattern: '^jobs$', definition: { max-length: 1000, delivery-limit: 10 } }\n",
        good: "version: 1\nvhosts:\n  v:\n    queues:\n      jobs: { type: classic }\n    policies:\n      limits: { pattern: '^jobs$', definition: { max-length: 1000 } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for fact in &graph.facts {
        let winner_priority = fact.policy.map(|p| p.priority);
        for policy in &fact.matching {
            if winner_priority.is_some_and(|w| w > policy.priority) {
                continue;
            }
            let unsupported: Vec<&String> = policy
                .definition
                .keys()
                .filter(|key| {
                    policy_keys::find(key)
                        .is_some_and(|k| !k.supports(fact.queue_type, context.target))
                })
                .collect();
            if unsupported.is_empty() {
                continue;
            }
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "policy `{}` matches {} queue `{}` but is skipped for it, because that type does not support {}",
                        policy.name,
                        fact.queue_type.as_str(),
                        fact.queue.name,
                        unsupported.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                    ),
                )
                .fix("split the policy by queue type, or narrow its pattern"),
            );
        }
    }
    findings
}
