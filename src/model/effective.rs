//! Which policy the broker applies to a queue.
//!
//! The broker picks, among the policies whose pattern matches the name, whose `apply-to`
//! covers the object and whose every key the queue type supports, the one with the
//! highest priority (ties are undefined).

use crate::compile::policies::applies_to;
use crate::compile::policy_keys;
use crate::model::{Policy, Queue};
use crate::spec::QueueType;
use crate::version::TargetVersion;

/// The type of a queue as the broker sees it (`x-queue-type`, else `classic`).
pub fn queue_type(queue: &Queue) -> QueueType {
    let declared = queue
        .arguments
        .get("x-queue-type")
        .or_else(|| queue.extra.get("type"))
        .and_then(|v| v.as_str());
    match declared {
        Some("quorum") => QueueType::Quorum,
        Some("stream") => QueueType::Stream,
        _ => QueueType::Classic,
    }
}

/// The policy the broker applies to `queue`, if any.
pub fn effective_policy<'a>(
    policies: &'a [Policy],
    queue: &Queue,
    target: TargetVersion,
) -> Option<&'a Policy> {
    let kind = queue_type(queue);
    policies
        .iter()
        .filter(|policy| policy.vhost == queue.vhost)
        .filter(|policy| applies_to(&policy.apply_to, kind))
        .filter(|policy| policy_keys::applies_to_queue_type(policy.definition.keys(), kind, target))
        .filter(|policy| {
            fancy_regex::Regex::new(&policy.pattern)
                .ok()
                .and_then(|regex| regex.is_match(&queue.name).ok())
                .unwrap_or(false)
        })
        .max_by(|a, b| a.priority.cmp(&b.priority).then(b.name.cmp(&a.name)))
}
