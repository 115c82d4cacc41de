//! Queue arguments and policy keys the target accepts and does nothing with.

use serde_json::Value;

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::{ObjectId, ObjectKind, Policy, policy_keys, queue_arguments};

pub const RULE: Rule = Rule {
    id: "setting-without-effect",
    summary: "a queue argument or policy key that the target version accepts and ignores",
    level: Some(Level::Warn),
    explanation: Some(
        "Some settings outlive what they did: the broker still accepts them and does nothing. `x-queue-mode`/`queue-mode: lazy` since 3.12 (every classic queue keeps its messages on disk); `queue-version: 1` and `x-queue-version: 1` from 4.0 (every classic queue is stored as version 2; 4.3 refuses the argument); `consumer-timeout` for classic queues and streams from 4.3 (only quorum queues evaluate it); the `x-delayed-retry-*` arguments before 4.3. A reader of the topology believes the setting works. Remove it, or replace it with what does the job on the target (`warren upgrade-check` says what, per version).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    queues:\n      jobs: { type: classic, arguments: { x-queue-mode: lazy } }\n",
        good: "version: 1\nvhosts:\n  v:\n    queues:\n      jobs: { type: classic }\n",
        run: check,
    },
};

fn check(context: &Context) -> Vec<Finding> {
    let target = context.target;
    let mut findings = Vec::new();
    for queue in &context.definitions.queues {
        for (key, value) in queue.arguments.iter() {
            if let Some(why) =
                queue_arguments::find(key).and_then(|known| known.ignored_on(value, target))
            {
                let id = ObjectId::in_vhost(ObjectKind::Queue, &queue.vhost, &queue.name);
                findings.push(
                    Finding::on(id, format!("queue `{}`: {why}", queue.name))
                        .fix(format!("remove `{key}` from the queue's arguments")),
                );
            }
        }
    }
    let operator: Vec<&Policy> = context
        .operator_policies
        .iter()
        .map(|p| p.as_ref())
        .collect();
    let policies = context
        .definitions
        .policies
        .iter()
        .map(|p| (p, ObjectKind::Policy));
    let operator = operator
        .into_iter()
        .map(|p| (p, ObjectKind::OperatorPolicy));
    for (policy, kind) in policies.chain(operator) {
        for (key, value) in policy.definition.iter() {
            if let Some(why) = ignored_policy_key(key, value, context) {
                let noun = kind.noun();
                let finding = Finding::on(
                    ObjectId::in_vhost(kind, &policy.vhost, &policy.name),
                    format!("{noun} `{}`: {why}", policy.name),
                )
                .fix(format!("remove `{key}` from the {noun}'s definition"));
                findings.push(finding);
            }
        }
    }
    findings
}

fn ignored_policy_key(key: &str, value: &Value, context: &Context) -> Option<String> {
    policy_keys::find(key).and_then(|known| known.ignored_on(value, context.target))
}
