//! `warren status --inspect`: which delay queues may be read (a look must not bring a
//! message nearer to its delivery limit), and what the deaths (`x-death`) of the
//! messages read say against the consumer's ladder. It is its own concern because it
//! is the only part of status that looks at messages rather than figures, and the only
//! one whose answer depends on the broker's line rather than the spec's target.

use crate::broker::WaitingDeaths;
use crate::compile::contract::ConsumerContract;
use crate::model::dead_letter::{Death, DeathReason};
use crate::model::effective::CompiledPolicies;
use crate::model::settings;
use crate::model::{Definitions, Policy, Queue, QueueType, TargetVersion};
use crate::spec::RetryMode;

/// What `--inspect` read of the delay queues, and of which broker.
#[derive(Debug, Clone, Copy)]
pub struct Waiting<'a> {
    /// The messages read, queue by queue.
    pub read: &'a [WaitingDeaths],
    /// The broker's line, which decides which queues can be read
    /// ([`BrokerPolicies::uninspectable`]).
    pub broker: TargetVersion,
}

/// The broker's policies and operator policies, which decide a queue's delivery limit.
pub struct BrokerPolicies<'a> {
    policies: CompiledPolicies<'a, Policy>,
    operator_policies: CompiledPolicies<'a, Policy>,
    broker: TargetVersion,
}

impl<'a> BrokerPolicies<'a> {
    /// The policies and operator policies read of a broker of line `broker`.
    pub fn new(
        policies: &'a [Policy],
        operator_policies: &'a [Policy],
        broker: TargetVersion,
    ) -> BrokerPolicies<'a> {
        BrokerPolicies {
            policies: CompiledPolicies::new(policies),
            operator_policies: CompiledPolicies::new(operator_policies),
            broker,
        }
    }

    /// Why a delay queue is not read by `--inspect`, if it is not ([`uninspectable`]).
    pub fn uninspectable(&self, queue: &Queue) -> Option<String> {
        uninspectable(queue, &self.policies, &self.operator_policies, self.broker)
    }
}

/// Why a delay queue is not read by `--inspect`, if it is not. A message given back
/// to a quorum queue counts toward its delivery limit before RabbitMQ 4.3 (a nack with
/// requeue, `TargetVersion::counts_nack_toward_delivery_limit`), so where such a queue
/// has a limit on the broker (4.0's default of 20, or one a policy or operator policy
/// sets) each look would bring its messages nearer to being dead-lettered early.
pub(super) fn uninspectable<'p>(
    queue: &Queue,
    policies: &CompiledPolicies<'p, Policy>,
    operator_policies: &CompiledPolicies<'p, Policy>,
    broker: TargetVersion,
) -> Option<String> {
    let kind = QueueType::of(queue);
    if kind != QueueType::Quorum || !broker.counts_nack_toward_delivery_limit() {
        return None;
    }
    let choose = |policies: &CompiledPolicies<'p, Policy>| -> Option<&'p Policy> {
        policies
            .choose(&queue.vhost, &queue.name, kind, broker)
            .winner
            .one()
    };
    let limit = settings::resolve(queue, choose(policies), choose(operator_policies), broker)
        .delivery_limit?;
    Some(format!(
        "a quorum queue on RabbitMQ {broker} counts each message read and given back toward its delivery limit ({})",
        limit.value
    ))
}

/// The delay queues `--inspect` reads, vhost by vhost: every tier of a ladder that
/// waits in delay queues, except those [`BrokerPolicies::uninspectable`] keeps out.
pub fn inspection(
    consumers: &[&ConsumerContract],
    desired: &Definitions,
    broker: &BrokerPolicies<'_>,
) -> Vec<(String, Vec<String>)> {
    let mut vhosts: Vec<(String, Vec<String>)> = Vec::new();
    for consumer in consumers {
        let Some(retry) = consumer
            .retry
            .as_ref()
            .filter(|r| r.mode != RetryMode::Native)
        else {
            continue;
        };
        let at = match vhosts.iter().position(|(v, _)| *v == consumer.vhost) {
            Some(at) => at,
            None => {
                vhosts.push((consumer.vhost.clone(), Vec::new()));
                vhosts.len() - 1
            }
        };
        for step in &retry.schedule {
            let readable = desired
                .queues
                .iter()
                .find(|q| q.vhost == consumer.vhost && q.name == step.queue)
                .is_none_or(|queue| broker.uninspectable(queue).is_none());
            if readable && !vhosts[at].1.contains(&step.queue) {
                vhosts[at].1.push(step.queue.clone());
            }
        }
    }
    vhosts.retain(|(_, queues)| !queues.is_empty());
    vhosts
}

/// How often the consumer's own queues rejected a message, by the broker's count: its
/// work queue's `rejected` deaths, and in `reject-chain` mode those of each attempt
/// queue too.
pub(super) fn rejections(deaths: &[Death], consumer: &ConsumerContract) -> u32 {
    deaths
        .iter()
        .filter(|death| {
            death.reason == DeathReason::Rejected
                && (death.queue == consumer.queue || consumer.consume_from.contains(&death.queue))
        })
        .map(|death| death.count)
        .sum()
}

/// What a consumer must do that a message past its ladder shows it does not, by mode.
pub(super) fn contract_hint(mode: RetryMode) -> &'static str {
    match mode {
        RetryMode::Publish => {
            "in `publish` mode a plain reject enters the first tier and counts nothing, so such a message never parks: the consumer must publish each retry itself with the next tier's key (`warren compile --contract`), or the spec can give it `mode: reject-chain`"
        }
        RetryMode::Reject => {
            "in `reject` mode the consumer must park a message once `x-death` counts `max_retries` rejections by its work queue (`warren compile --contract`)"
        }
        RetryMode::RejectChain | RetryMode::Native => {
            "the broker moves a message up this ladder once: something sent it back to the work queue after it left (`warren compile --contract`)"
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::compile::{self, Options};
    use crate::model::Arguments;
    use crate::spec::load_str;

    #[test]
    fn quorum_tiers_are_read_only_where_a_look_cannot_bring_a_message_to_its_delivery_limit() {
        let spec = "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          q:\n            type: quorum\n            routing_keys: [a]\n            retry: { delays: [1s] }\n          c:\n            type: classic\n            routing_keys: [b]\n            retry: { delays: [1s] }\n";
        let file = load_str(Path::new("t.yaml"), spec.to_string()).unwrap();
        let compiled = compile::compile(&file, &Options::default()).unwrap();
        let consumers: Vec<&ConsumerContract> = compiled.contract.consumers.iter().collect();
        let tier = |name: &str| {
            let consumer = consumers.iter().find(|c| c.consumer == name).unwrap();
            consumer.retry.as_ref().unwrap().schedule[0].queue.clone()
        };
        let read = |policies: &[Policy], broker| {
            let on_the_broker = BrokerPolicies::new(policies, &[], broker);
            let mut queues = inspection(&consumers, &compiled.definitions, &on_the_broker)
                .pop()
                .map(|(_, queues)| queues)
                .unwrap_or_default();
            queues.sort();
            queues
        };
        let mut both = vec![tier("q"), tier("c")];
        both.sort();
        // 4.0 counts a nack toward the quorum queue's default limit of 20.
        assert_eq!(read(&[], TargetVersion::V4_0), vec![tier("c")]);
        // 4.3 does not count it; 3.10 has no limit unless a policy sets one.
        assert_eq!(read(&[], TargetVersion::V4_3), both);
        assert_eq!(read(&[], TargetVersion::V3_10), both);
        let mut limited = Policy {
            vhost: "v".into(),
            name: "limit".into(),
            pattern: ".*".into(),
            apply_to: "queues".into(),
            priority: 100,
            definition: Arguments::new(),
        };
        limited.definition.insert("delivery-limit".into(), 5.into());
        assert_eq!(
            read(&[limited.clone()], TargetVersion::V3_10),
            vec![tier("c")]
        );
        let quorum = compiled
            .definitions
            .queues
            .iter()
            .find(|q| q.name == tier("q"))
            .unwrap();
        let why = BrokerPolicies::new(&[limited], &[], TargetVersion::V3_10)
            .uninspectable(quorum)
            .unwrap();
        assert!(why.contains("delivery limit (5)"), "{why}");
    }
}
