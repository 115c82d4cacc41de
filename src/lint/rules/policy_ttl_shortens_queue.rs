//! A policy's message TTL silently shortens a queue's own TTL.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "policy-ttl-shortens-queue",
    summary: "a policy sets a lower message TTL than a queue's own `x-message-ttl`: the lower one wins",
    level: Some(Level::Warn),
    explanation: Some(
        "When both a queue argument and a policy (or operator policy) set `message-ttl`, the broker uses the lower value. A broad policy with a short TTL therefore silently shortens every delay tier it matches. Narrow the policy's pattern.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    queues:\n      delay.30m: { arguments: { x-message-ttl: 1800000 } }\n    policies:\n      short: { pattern: '.*', definition: { message-ttl: 60000 } }\n",
        good: "version: 1\nvhosts:\n  v:\n    queues:\n      delay.30m: { arguments: { x-message-ttl: 1800000 } }\n    policies:\n      short: { pattern: '^cache\\.', definition: { message-ttl: 60000 } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    graph
        .facts
        .iter()
        .filter_map(|fact| {
            let argument = fact.ttl_argument?;
            let effective = fact.message_ttl?;
            if effective >= argument {
                return None;
            }
            let source = fact
                .operator_policy
                .as_ref()
                .filter(|p| p.definition.get("message-ttl").and_then(|v| v.as_u64()) == Some(effective))
                .map(|p| format!("operator policy `{}`", p.name))
                .or_else(|| fact.policy.map(|p| format!("policy `{}`", p.name)))
                .unwrap_or_else(|| "a policy".into());
            Some(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "{source} gives queue `{}` a message TTL of {effective} ms, below its own {argument} ms: the lower one wins",
                        fact.queue.name
                    ),
                )
                .fix("narrow the policy's pattern so it does not match this queue"),
            )
        })
        .collect()
}
