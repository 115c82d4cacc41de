//! A delay queue that expires as a whole, with its waiting messages.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;

pub const RULE: Rule = Rule {
    id: "delay-queue-expires",
    summary: "a delay queue has a queue expiry: it is deleted with the messages waiting in it",
    level: Some(Level::Deny),
    explanation: Some(
        "A delay queue (a retry tier) has no consumers, so for queue expiry (`x-expires` or a policy's or operator policy's `expires`) it is always unused: the broker deletes it after the expiry, and the messages waiting in it are lost — queue expiry does not dead-letter them. Remove `expires` from whatever sets it on delay queues (narrow the policy's pattern).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s] } }\n    operator_policies:\n      cleanup: { pattern: '.*', definition: { expires: 3600000 } }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s] } }\n    operator_policies:\n      cleanup: { pattern: '^tmp\\.', definition: { expires: 3600000 } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    graph
        .facts
        .iter()
        .filter(|f| f.message_ttl.is_some() && f.dead_letter_exchange.is_some())
        .filter_map(|fact| {
            let expires = fact.expires?;
            Some(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "delay queue `{}` expires after {expires} ms unused, and delay queues have no consumers: it is deleted with its waiting messages",
                        fact.queue.name
                    ),
                )
                .fix("remove `expires` for delay queues (narrow the pattern of the policy or operator policy that sets it)"),
            )
        })
        .collect()
}
