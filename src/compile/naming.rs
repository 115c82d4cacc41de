//! Every name warren generates, and the parsers that read them back.
//!
//! The compiler names a consumer's objects from its work queue (`<work>.retry`,
//! `<work>.retry.<n>` and the other tier endings of [`tier_ending`], `<work>.attempt.<n>`,
//! `<work>.parking`), routes inside a retry
//! exchange on `1`, `2`, … and `parking`, and names the policies that carry tunables
//! after the setting's group (`warren.retry.<origin>.<tier>`,
//! `warren.delivery-limit.<n>`), where the origin says where the setting was written.
//! `warren import` recognises a ladder by the same names, so it uses the parsers here:
//! writing and reading a name cannot drift apart.

use crate::model::RESERVED_PREFIX;

/// A consumer's work queue when the spec does not name it.
pub fn work_queue(service: &str, consumer: &str) -> String {
    format!("{service}.{consumer}")
}

/// The consumer name a work queue's default name gives inside `service`: `None` when
/// the queue is not named `<service>.<consumer>`.
pub fn consumer_of_work_queue<'a>(service: &str, work_queue: &'a str) -> Option<&'a str> {
    work_queue
        .strip_prefix(service)?
        .strip_prefix('.')
        .filter(|consumer| !consumer.is_empty())
}

/// A consumer's retry exchange.
pub fn retry_exchange(work_queue: &str) -> String {
    format!("{work_queue}.retry")
}

/// The ending of the delay queues of tier `tier` (1-based) of a ladder whose delays
/// come from `origin`; see [`selects_by_ending`]:
///
/// - delays from the top-level or a vhost's `defaults`: `.retry.<tier>` (a vhost never
///   holds queues of both: a vhost's own delays replace the top-level ones in it);
/// - from a named ladder or a service's `defaults`: `.retry-<name>.<tier>`, with every
///   `.` of the name written `_` so that the ending holds no dot before the tier;
/// - from a consumer's own `retry`: `.retry.own.<tier>`.
///
/// No ending of the first two kinds is a proper suffix of another (the text between
/// `.retry` and the tier holds no dot), so `^.*<ending>$` selects the delay queues of
/// exactly one ladder tier among all generated names; two origins whose names map to
/// the same ending are refused by the compiler.
pub fn tier_ending(origin: &str, tier: usize) -> String {
    if origin == DEFAULTS_ORIGIN || origin == VHOST_ORIGIN {
        format!(".retry.{tier}")
    } else if let Some(name) = origin_ladder(origin).or_else(|| origin_service(origin)) {
        format!(".retry-{}.{tier}", name.replace('.', "_"))
    } else {
        format!(".retry.own.{tier}")
    }
}

/// Whether the generated policy of a tier selects its queues by their ending
/// (`^.*<ending>$`, the same pattern for 1 or 10,000 consumers) rather than by listing
/// them. A consumer's own delays form a group of one consumer: its policy lists that
/// consumer's delay queues, whose ending `.retry.own.<n>` no selecting ending matches.
pub fn selects_by_ending(origin: &str) -> bool {
    origin_consumer(origin).is_none()
}

/// The default names of a consumer's delay queues: `schedule[i]` is the tier (0-based)
/// of delay queue `i`. One queue per tier is `<work><ending>`, e.g.
/// `orders.email.retry.1`; a `reject-chain` ladder that waits in a tier more than once
/// names the delay queue of retry `r` after the attempt it returns to,
/// `<work>.attempt.<r + 1><ending>`, so every name still ends in its tier's ending.
pub fn delay_queues(work_queue: &str, origin: &str, schedule: &[usize]) -> Vec<String> {
    let one_per_tier = schedule.iter().enumerate().all(|(i, tier)| i == *tier);
    schedule
        .iter()
        .enumerate()
        .map(|(index, tier)| {
            let ending = tier_ending(origin, tier + 1);
            if one_per_tier {
                format!("{work_queue}{ending}")
            } else {
                format!("{work_queue}.attempt.{}{ending}", index + 2)
            }
        })
        .collect()
}

/// The default names of the work queues of attempts 2 … `retries + 1` (`reject-chain`).
pub fn attempt_queues(work_queue: &str, retries: usize) -> Vec<String> {
    (2..=retries + 1)
        .map(|n| format!("{work_queue}.attempt.{n}"))
        .collect()
}

/// The ending of every generated parking queue. On versions where quorum queues have a
/// default delivery limit, the policy that lifts it from quorum parking queues selects
/// them by this ending (`^.*\.parking$`, quorum queues only), like a tier's policy.
pub const PARKING_ENDING: &str = ".parking";

/// A consumer's return exchange (`return_via: return_exchange`).
pub fn return_exchange(work_queue: &str) -> String {
    format!("{work_queue}.return")
}

/// A consumer's parking queue.
pub fn parking_queue(work_queue: &str) -> String {
    format!("{work_queue}{PARKING_ENDING}")
}

/// Routing key of the parking queue on a consumer's retry exchange.
pub const PARKING_ROUTING_KEY: &str = "parking";

/// Routing key of delay queue `index` (0-based) on the retry exchange.
pub fn delay_routing_key(index: usize) -> String {
    (index + 1).to_string()
}

/// The routing key a work queue dead-letters with, in every retry mode: the first
/// tier's key. In `native` mode, where there are no tiers, the retry exchange routes it
/// to the parking queue. One key for all modes keeps the work queue's declaration
/// (its `x-dead-letter-*` arguments) the same when a consumer changes mode, so a
/// change between a TTL ladder and native retry never replaces the queue.
pub fn work_queue_dead_letter_key() -> String {
    delay_routing_key(0)
}

/// Origin of delays written in the top-level `defaults`.
pub const DEFAULTS_ORIGIN: &str = "defaults";
/// Origin of delays written in a vhost's `defaults`.
pub const VHOST_ORIGIN: &str = "vhost";
const SERVICE_ORIGIN: &str = "service.";
const CONSUMER_ORIGIN: &str = "consumer.";
const LADDER_ORIGIN: &str = "ladder.";

/// Origin of delays written in a service's `defaults`.
pub fn service_origin(service: &str) -> String {
    format!("{SERVICE_ORIGIN}{service}")
}

/// Origin of delays written on a consumer.
pub fn consumer_origin(service: &str, consumer: &str) -> String {
    format!("{CONSUMER_ORIGIN}{service}.{consumer}")
}

/// Origin of delays of a named ladder.
pub fn ladder_origin(ladder: &str) -> String {
    format!("{LADDER_ORIGIN}{ladder}")
}

/// The service of a service origin.
pub fn origin_service(origin: &str) -> Option<&str> {
    origin.strip_prefix(SERVICE_ORIGIN)
}

/// `<service>.<consumer>` of a consumer origin (the split is ambiguous when names hold
/// dots, so it is left to the caller).
pub fn origin_consumer(origin: &str) -> Option<&str> {
    origin.strip_prefix(CONSUMER_ORIGIN)
}

/// The ladder of a named-ladder origin.
pub fn origin_ladder(origin: &str) -> Option<&str> {
    origin.strip_prefix(LADDER_ORIGIN)
}

const RETRY_GROUP: &str = "retry.";
const PARKING_GROUP: &str = "parking";
const DELIVERY_LIMIT_GROUP: &str = "delivery-limit.";
const UNLIMITED: &str = "unlimited";
const NATIVE_RETRY_GROUP: &str = "delayed-retry.";

/// Policy group of a tier's TTL: queues with the same origin and tier share it.
pub fn retry_group(origin: &str, tier: usize) -> String {
    format!("{RETRY_GROUP}{origin}.{tier}")
}

/// Policy group of a counted quorum delivery limit.
pub fn delivery_limit_group(limit: u32) -> String {
    format!("{DELIVERY_LIMIT_GROUP}{limit}")
}

/// Policy group of an unlimited quorum delivery limit (4.0 and later).
pub fn unlimited_delivery_group() -> String {
    format!("{DELIVERY_LIMIT_GROUP}{UNLIMITED}")
}

/// Policy group of a native retry's waits (RabbitMQ 4.3+): work queues whose first and
/// last delays are the same share it, named by those delays as written.
pub fn native_retry_group(first: &str, last: &str) -> String {
    format!("{NATIVE_RETRY_GROUP}{first}.{last}")
}

/// Policy group of the quorum parking queues of a vhost: a parking queue must never
/// drop a message that was inspected and requeued too often, so its delivery limit is
/// lifted (4.0 and later, where quorum queues have a default limit).
pub fn parking_group() -> String {
    PARKING_GROUP.to_string()
}

/// Several groups one queue needs, merged into one policy (the broker applies only one).
pub fn merged_group(groups: &[String]) -> String {
    groups.join("+")
}

/// A group that also carries a user policy's keys.
pub fn with_user_policy(group: &str, user_policy: &str) -> String {
    format!("{group}+{user_policy}")
}

/// The name of part `part` (0-based) of a group's generated policy: a group too large
/// for one pattern gets parts `~2`, `~3`… that share its definition.
pub fn policy_name(group: &str, part: usize) -> String {
    match part {
        0 => format!("{RESERVED_PREFIX}{group}"),
        _ => format!("{RESERVED_PREFIX}{group}~{}", part + 1),
    }
}

/// Whether a policy is one of the generated retry tiers' (`warren.retry.…`).
pub fn is_retry_policy(policy: &str) -> bool {
    policy
        .strip_prefix(RESERVED_PREFIX)
        .is_some_and(|group| group.starts_with(RETRY_GROUP))
}

/// The origin of a generated retry policy (`warren.retry.<origin>.<tier>`, possibly
/// merged with other groups and split into parts); `None` for any other policy.
pub fn retry_policy_origin(policy: &str) -> Option<&str> {
    let group = policy
        .strip_prefix(RESERVED_PREFIX)?
        .strip_prefix(RETRY_GROUP)?;
    let group = group.split('+').next().unwrap_or(group);
    group.rsplit_once('.').map(|(origin, _)| origin)
}

/// Whether a policy is a generated counted delivery limit (not the unlimited one).
pub fn is_counted_delivery_limit_policy(policy: &str) -> bool {
    policy
        .strip_prefix(RESERVED_PREFIX)
        .and_then(|rest| rest.strip_prefix(DELIVERY_LIMIT_GROUP))
        .is_some_and(|_| !policy.contains(UNLIMITED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_read_back() {
        let group = merged_group(&[retry_group(&consumer_origin("orders", "email"), 2)]);
        assert_eq!(
            policy_name(&group, 0),
            "warren.retry.consumer.orders.email.2"
        );
        assert_eq!(
            retry_policy_origin(&policy_name(&group, 3)),
            Some("consumer.orders.email")
        );
        let merged = merged_group(&[retry_group(DEFAULTS_ORIGIN, 1), delivery_limit_group(5)]);
        assert_eq!(
            retry_policy_origin(&policy_name(&merged, 0)),
            Some("defaults")
        );
        assert_eq!(retry_policy_origin("warren.delivery-limit.5"), None);
        assert!(is_retry_policy(&policy_name(&group, 0)));
        assert!(!is_retry_policy("warren.delivery-limit.5"));
        assert!(is_counted_delivery_limit_policy(&policy_name(
            &delivery_limit_group(5),
            0
        )));
        assert!(!is_counted_delivery_limit_policy(&policy_name(
            &unlimited_delivery_group(),
            0
        )));
        assert_eq!(origin_service(&service_origin("orders")), Some("orders"));
        assert_eq!(origin_ladder(&ladder_origin("slow")), Some("slow"));
        assert_eq!(origin_consumer(&consumer_origin("a", "b")), Some("a.b"));
        assert_eq!(
            consumer_of_work_queue("orders", &work_queue("orders", "email")),
            Some("email")
        );
        assert_eq!(consumer_of_work_queue("orders", "ordersx.email"), None);
    }
}
