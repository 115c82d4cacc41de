//! A queue that is not one of warren's delay queues has a name a generated retry
//! policy selects by its ending.

use std::collections::{BTreeMap, BTreeSet};

use crate::lint::{Context, Finding, Level, Rule};
use crate::model::pattern::PatternMatcher;
use crate::model::record::{Record, records};
use crate::model::{ObjectId, ObjectKind};

pub const RULE: Rule = Rule {
    id: "queue-captured-by-retry-tier",
    level: Level::Deny,
    summary: "a queue that is no delay queue has a name warren's retry policy selects: it gets the tier's TTL and its messages expire",
    explanation: "warren's generated retry policies select the delay queues of a ladder tier by the ending of their names (`^.*\\.retry\\.1$`, see docs/topology.md), so that their patterns do not grow with the number of consumers. Any other queue of the vhost whose name has that ending gets the tier's policy too: its messages expire after the tier's delay, and are dead-lettered or dropped. A spec cannot declare such a queue (compilation fails) and `warren plan` refuses to apply while one exists; this rule finds them in a definitions file: a queue a policy `warren.retry.…` selects that the spec owning the policy does not manage (when the file holds ownership records), or, without records, that dead-letters nowhere as a delay queue does. Rename the queue so that its name does not end in `.retry.<n>`, `.retry-<ladder>.<n>` or `.retry.own.<n>`.",
    bad: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "s.c.retry.1", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "s.c"}}, {"name": "audit.retry.1", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}}], "policies": [{"name": "warren.retry.defaults.1", "vhost": "v", "pattern": "^.*\\.retry\\.1$", "apply-to": "queues", "definition": {"message-ttl": 30000}, "priority": 100}]}"#,
    good: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "s.c.retry.1", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "s.c"}}, {"name": "audit.retries", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}}], "policies": [{"name": "warren.retry.defaults.1", "vhost": "v", "pattern": "^.*\\.retry\\.1$", "apply-to": "queues", "definition": {"message-ttl": 30000}, "priority": 100}]}"#,
    check,
};

fn check(context: &Context) -> Vec<Finding> {
    let definitions = context.definitions;
    // Which spec manages each policy, when the definitions hold ownership records.
    let records: BTreeMap<String, Record> =
        records(&definitions.global_parameters).unwrap_or_default();
    let owned: Vec<(&String, BTreeSet<ObjectId>)> = records
        .iter()
        .map(|(spec, record)| (spec, record.object_ids()))
        .collect();
    let mut findings = Vec::new();
    for policy in &definitions.policies {
        if !policy.name.starts_with("warren.retry.") {
            continue;
        }
        let matcher = PatternMatcher::new(&policy.pattern);
        let Some(ending) = matcher.ending() else {
            continue;
        };
        let policy_id = ObjectId {
            kind: ObjectKind::Policy,
            vhost: Some(policy.vhost.clone()),
            name: policy.name.clone(),
        };
        let owner = owned.iter().find(|(_, ids)| ids.contains(&policy_id));
        for queue in &definitions.queues {
            if queue.vhost != policy.vhost || !matcher.is_match(&queue.name) {
                continue;
            }
            // Made only when needed: without records, a tier's delay queues are told
            // apart by their arguments, and copying their names would be wasted.
            let id = || ObjectId {
                kind: ObjectKind::Queue,
                vhost: Some(queue.vhost.clone()),
                name: queue.name.clone(),
            };
            let captured = match owner {
                Some((_, ids)) => !ids.contains(&id()),
                None => !queue.arguments.contains_key("x-dead-letter-exchange"),
            };
            if !captured {
                continue;
            }
            let why = match owner {
                Some((spec, _)) => {
                    format!("spec `{spec}`, which owns the policy, does not manage it")
                }
                None => "it dead-letters nowhere, as no delay queue does".to_string(),
            };
            let ttl = policy
                .definition
                .get("message-ttl")
                .map(|ttl| format!(" ({ttl} ms)"))
                .unwrap_or_default();
            findings.push(
                Finding::on(
                    id(),
                    format!(
                        "queue `{}` ends in `{ending}`, by which warren's policy `{}` selects the delay queues of a retry tier ({why}): it gets that tier's TTL{ttl} and its messages expire",
                        queue.name, policy.name
                    ),
                )
                .help(format!("rename the queue so that its name does not end in `{ending}`")),
            );
        }
    }
    findings
}
