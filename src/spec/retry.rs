//! A retry ladder as the spec writes it ([`Retry`]): its delays, how many retries it
//! gives, how a consumer moves a message along it ([`RetryMode`]), where a message goes
//! after its delay and when its retries run out, and the names of the objects it
//! generates. A ladder is written in the same shape wherever it appears (top-level and
//! per-level `defaults`, named `ladders`, a consumer's `retry`), so it is a part of the
//! spec format of its own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::duration::Duration;
use crate::model::QueueType;

/// A retry ladder. Every field is optional so that a consumer can override one field of
/// an inherited ladder.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// `false` turns off an inherited ladder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Start from this named ladder (see top-level `ladders`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder: Option<String>,
    /// Delays of the tiers, e.g. `[30s, 5m, 30m]`: each tier is its own queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delays: Option<Vec<Duration>>,
    /// How many retries each tier gives before the next tier. Default: 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts_per_tier: Option<u32>,
    /// Total number of retries. Default: tiers × `attempts_per_tier`. Retries past the
    /// last tier stay on the last tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// What happens when retries run out: `park` (default) or `drop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_exhausted: Option<OnExhausted>,
    /// How consumers move a message along the ladder. Default: `publish`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RetryMode>,
    /// Where a message goes when a tier's delay expires. Default: `work_queue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_via: Option<ReturnVia>,
    /// Queue type of the tiers and the parking queue. Default: the work queue's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_type: Option<QueueType>,
    /// Where the tiers' delays live: `policies` (default: warren's generated retry
    /// policies, so a delay changes without recreating a queue) or `arguments` (each
    /// delay queue's own `x-message-ttl`, where hand-built loops and client libraries
    /// keep them; changing a delay then replaces the queue, see `apply --migrate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delays_in: Option<DelaysIn>,
    /// Type of the retry exchange: `direct` (default: each tier and the parking queue
    /// has its own routing key) or `fanout` (the classic single loop: one tier, no
    /// parking queue, and the work queue dead-letters without a routing key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_type: Option<RetryExchangeType>,
    /// Names of the generated objects, to match an existing topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<RetryNames>,
}

/// Where a ladder's tier delays live on the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DelaysIn {
    /// warren's generated retry policies, one per tier.
    Policies,
    /// Each delay queue's `x-message-ttl` argument.
    Arguments,
}

/// The type of a ladder's retry exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RetryExchangeType {
    /// Routes on the tier's routing key.
    Direct,
    /// Sends every dead letter to the one delay queue.
    Fanout,
}

/// What happens to a message whose retries ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnExhausted {
    /// Move it to the consumer's parking queue, where nothing expires it.
    Park,
    /// Drop it. Only when written explicitly.
    Drop,
}

/// How a consumer moves a failed message along the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RetryMode {
    /// The consumer re-publishes a failed message to its retry exchange with the tier
    /// as routing key and an attempt header, then acks. Any tier; works on every version.
    /// A plain reject goes to the first tier.
    Publish,
    /// The consumer rejects without requeue; the message always goes to the single tier
    /// and the attempt count is read from `x-death`. One tier only.
    Reject,
    /// The consumer only rejects: each attempt has its own work queue, each dead-lettering
    /// to the next tier, so consumers need no retry code. Consumers read from every
    /// attempt queue.
    RejectChain,
    /// The broker waits (RabbitMQ 4.3+, quorum work queues): the consumer rejects with
    /// requeue, and the queue redelivers the message after the first delay times the
    /// failed deliveries so far, capped at the last delay, then parks it at the delivery
    /// limit. Delays must be linear multiples of the first, capped at the last (`[10s,
    /// 20s, 30s, 30s]`). No delay queues.
    Native,
}

/// Where a message goes after its delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReturnVia {
    /// Straight back to the consumer's own work queue (through the default exchange).
    WorkQueue,
    /// Back through the service's inner exchange, as in the classic single-consumer
    /// loop. Every queue bound to the inner exchange receives the retry again.
    InnerExchange,
    /// Through the consumer's own return exchange (a fanout exchange bound to its work
    /// queue alone, `names.return_exchange`): the classic loop fixed for several
    /// consumers on one inner exchange.
    ReturnExchange,
}

/// Name overrides for a consumer's retry objects.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryNames {
    /// The retry (dead-letter) exchange. Default: `<queue>.retry`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<String>,
    /// The delay queues, one per tier (per retry in `reject-chain` mode).
    /// Default: `<queue>.retry.<n>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// The parking queue. Default: `<queue>.parking`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parking: Option<String>,
    /// The extra work queues of `reject-chain` mode, one per retry.
    /// Default: `<queue>.attempt.<n>` for n = 2, 3, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<String>>,
    /// The routing keys of the delay queues on the retry exchange, one per delay queue;
    /// the work queue dead-letters with the first. Default: `1`, `2`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<String>>,
    /// The routing key of the parking queue on the retry exchange. Default: `parking`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parking_key: Option<String>,
    /// The return exchange of `return_via: return_exchange`. Default: `<queue>.return`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_exchange: Option<String>,
}

impl RetryNames {
    /// Whether no name is overridden.
    pub fn is_empty(&self) -> bool {
        self.exchange.is_none()
            && self.tiers.is_none()
            && self.parking.is_none()
            && self.attempts.is_none()
            && self.keys.is_none()
            && self.parking_key.is_none()
            && self.return_exchange.is_none()
    }
}
