//! A queue that is not one of warren's delay queues has a name a generated retry
//! policy selects by its ending.

use std::collections::{BTreeMap, BTreeSet};

use crate::compile::naming;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::effective::applies_to;
use crate::model::finding::Finding;
use crate::model::pattern::PatternMatcher;
use crate::model::record::{Record, records};
use crate::model::{ObjectId, ObjectKind, QueueType};

pub const RULE: Rule = Rule {
    id: "queue-captured-by-retry-tier",
    summary: "a queue that is no delay queue has a name warren's retry policy selects: it gets the tier's TTL and its messages expire",
    level: Some(Level::Deny),
    explanation: Some(
        "warren's generated retry policies select the delay queues of a ladder tier by the ending of their names (`^.*\\.retry\\.1$`, see docs/topology.md), so that their patterns do not grow with the number of consumers. Any other queue of the vhost whose name has that ending gets the tier's policy too: its messages expire after the tier's delay, and are dead-lettered or dropped. A spec cannot declare such a queue (compilation fails) and `warren plan` refuses to apply while one exists; this rule finds them in a definitions file: a queue a policy `warren.retry.…` selects that the spec owning the policy does not manage (when the file holds ownership records), or, without records, that dead-letters nowhere as a delay queue does. From RabbitMQ 4.0 on, the policy `warren.parking` lifts the delivery limit of quorum parking queues the same way, by the ending `.parking`: another quorum queue with that ending would never dead-letter a message its consumers requeue. Rename the queue so that its name does not end in `.retry.<n>`, `.retry-<ladder>.<n>`, `.retry.own.<n>` or (a quorum queue, from 4.0) `.parking`.",
    ),
    check: Check {
        bad: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "s.c.retry.1", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "s.c"}}, {"name": "audit.retry.1", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}}], "policies": [{"name": "warren.retry.defaults.1", "vhost": "v", "pattern": "^.*\\.retry\\.1$", "apply-to": "queues", "definition": {"message-ttl": 30000}, "priority": 100}]}"#,
        good: r#"{"vhosts": [{"name": "v"}], "queues": [{"name": "s.c.retry.1", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "s.c"}}, {"name": "audit.retries", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}}], "policies": [{"name": "warren.retry.defaults.1", "vhost": "v", "pattern": "^.*\\.retry\\.1$", "apply-to": "queues", "definition": {"message-ttl": 30000}, "priority": 100}]}"#,
        run: check,
    },
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
    // Without records, a queue is one of warren's parking queues when its work queue's
    // retry exchange routes `parking` to it.
    let parked: BTreeSet<(&str, &str)> = definitions
        .bindings
        .iter()
        .filter(|b| {
            b.destination_type == "queue"
                && b.routing_key == naming::PARKING_ROUTING_KEY
                && b.destination
                    .strip_suffix(naming::PARKING_ENDING)
                    .map(naming::retry_exchange)
                    .as_deref()
                    == Some(b.source.as_str())
        })
        .map(|b| (b.vhost.as_str(), b.destination.as_str()))
        .collect();
    // Each queue's type, read once: it is asked for every retry policy of its vhost.
    let types: Vec<QueueType> = definitions.queues.iter().map(QueueType::of).collect();
    let mut findings = Vec::new();
    for policy in &definitions.policies {
        let parking = policy.name == naming::policy_name(&naming::parking_group(), 0);
        if !naming::is_retry_policy(&policy.name) && !parking {
            continue;
        }
        let matcher = PatternMatcher::new(&policy.pattern);
        let Some(ending) = matcher.ending() else {
            continue;
        };
        let policy_id = ObjectId::in_vhost(ObjectKind::Policy, &policy.vhost, &policy.name);
        let owner = owned.iter().find(|(_, ids)| ids.contains(&policy_id));
        for (queue, queue_type) in definitions.queues.iter().zip(&types) {
            if queue.vhost != policy.vhost
                || !applies_to(&policy.apply_to, *queue_type)
                || !matcher.is_match(&queue.name)
            {
                continue;
            }
            // Made only when needed: without records, a tier's delay queues are told
            // apart by their arguments, and copying their names would be wasted.
            let id = || ObjectId::in_vhost(ObjectKind::Queue, &queue.vhost, &queue.name);
            let captured = match owner {
                Some((_, ids)) => !ids.contains(&id()),
                None if parking => !parked.contains(&(queue.vhost.as_str(), queue.name.as_str())),
                None => !queue.arguments.contains_key("x-dead-letter-exchange"),
            };
            if !captured {
                continue;
            }
            let why = match owner {
                Some((spec, _)) => {
                    format!("spec `{spec}`, which owns the policy, does not manage it")
                }
                None if parking => "no retry exchange of warren's routes to it".to_string(),
                None => "it dead-letters nowhere, as no delay queue does".to_string(),
            };
            let (selects, effect) = if parking {
                let limit = policy
                    .definition
                    .get("delivery-limit")
                    .map(|limit| format!(" (`delivery-limit: {limit}`)"))
                    .unwrap_or_default();
                (
                    "the quorum parking queues of retry ladders",
                    format!(
                        "it gets their delivery limit{limit}, and a message its consumers requeue is never dead-lettered"
                    ),
                )
            } else {
                let ttl = policy
                    .definition
                    .get("message-ttl")
                    .and_then(serde_json::Value::as_u64)
                    // The TTL of a generated tier is a delay the spec writes as `30s`.
                    .map(|ttl| format!(" ({})", crate::spec::Duration::from_millis(ttl)))
                    .unwrap_or_default();
                (
                    "the delay queues of a retry tier",
                    format!("it gets that tier's TTL{ttl} and its messages expire"),
                )
            };
            findings.push(
                Finding::on(
                    id(),
                    format!(
                        "queue `{}` ends in `{ending}`, by which warren's policy `{}` selects {selects} ({why}): {effect}",
                        queue.name, policy.name
                    ),
                )
                .fix(format!("rename the queue so that its name does not end in `{ending}`")),
            );
        }
    }
    findings
}
