//! A higher-priority policy, or a queue argument, takes a native work queue's waits away.

use super::graph::queue_id;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::policy_keys::is_delayed_retry_key;

pub const RULE: Rule = Rule {
    id: "policy-shadows-native-retry",
    summary: "a higher-priority policy replaces the one that gives a quorum queue its delayed retry",
    level: Some(Level::Deny),
    explanation: Some(
        "RabbitMQ 4.3's delayed retry (`mode: native`) lives in a policy: `delayed-retry-type`, `-min`, `-max`. Only one policy applies to a queue, so any policy with a higher priority that matches the work queue (say, one that only sets `max-length`) replaces it entirely, and a rejected message comes back at once instead of after its wait (measured on 4.3.6: 0 s instead of 3 s), a hot loop up to the delivery limit. Merge the keys into one policy, or narrow the other policy's pattern. (For the queues of a spec's `mode: native` consumers, warren refuses such a policy itself: `policy-overlap`; this rule finds it among hand-written policies and in definitions files.)",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    queues:\n      work: { type: quorum }\n    policies:\n      retry: { pattern: '^work$', apply_to: quorum_queues, priority: 1, definition: { delayed-retry-type: all, delayed-retry-min: 10000, delayed-retry-max: 30000, delivery-limit: 3 } }\n      cap: { pattern: '.*', priority: 5, definition: { max-length: 100000 } }\n",
        good: "version: 1\nvhosts:\n  v:\n    queues:\n      work: { type: quorum }\n    policies:\n      retry: { pattern: '^work$', apply_to: quorum_queues, priority: 5, definition: { delayed-retry-type: all, delayed-retry-min: 10000, delayed-retry-max: 30000, delivery-limit: 3, max-length: 100000 } }\n      cap: { pattern: '^cache\\.', priority: 5, definition: { max-length: 100000 } }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let graph = context.graph();
    let mut findings = Vec::new();
    for fact in &graph.facts {
        let Some(winner) = fact.policy else { continue };
        let sets_waits = |definition: &crate::model::Arguments| {
            definition.keys().any(|key| is_delayed_retry_key(key))
        };
        if sets_waits(&winner.definition) {
            continue;
        }
        for shadowed in fact
            .matching
            .iter()
            .filter(|p| p.priority < winner.priority && sets_waits(&p.definition))
        {
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "policy `{}` (priority {}) replaces `{}` (priority {}) on queue `{}`, which then loses its delayed retry: a rejected message comes back at once",
                        winner.name, winner.priority, shadowed.name, shadowed.priority, fact.queue.name
                    ),
                )
                .fix(format!(
                    "merge the keys of `{}` into one policy, or narrow the pattern of `{}`",
                    shadowed.name, winner.name
                )),
            );
        }
    }
    findings
}
