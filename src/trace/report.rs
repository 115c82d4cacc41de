//! What a trace found: the publish's route, and each copy of the message with what
//! happened to it and how it ended. These are the JSON document of `warren trace
//! --format json` as they serialize, and what `render::trace` prints as text.

use serde::Serialize;

use crate::model::dead_letter::{Death, DeathReason};
use crate::model::routing::{Headers, Hop, Route};

/// A whole trace.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    /// The vhost.
    pub vhost: String,
    /// The exchange published to.
    pub exchange: String,
    /// The routing key.
    pub routing_key: String,
    /// The message's headers.
    pub headers: Headers,
    /// Deliveries each consumer fails.
    pub failures: usize,
    /// The RabbitMQ version simulated.
    pub target_version: String,
    /// How the publish was routed.
    pub route: Vec<RouteStep>,
    /// Queues the publish reached (each gets one copy).
    pub queues: Vec<String>,
    /// Each copy's path, in order; a dead letter that reaches several queues starts a
    /// copy for each queue after the first.
    pub copies: Vec<MessageCopy>,
    /// Things the simulation cannot see that may change the outcome.
    pub notes: Vec<String>,
}

/// One copy of the message, from the queue it entered to its end.
#[derive(Debug, Clone, Serialize)]
pub struct MessageCopy {
    /// Its number, from 1.
    pub number: usize,
    /// The copy (and event index) it split from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_from: Option<usize>,
    /// What happened to it.
    pub events: Vec<Event>,
    /// How it ended.
    pub outcome: CopyEnd,
    /// Its `x-death` entries at the end, most recent first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub x_death: Vec<Death>,
}

/// A step of a route: a binding followed, or an alternate exchange taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RouteStep {
    /// A binding matched.
    Binding {
        /// The exchange.
        source: String,
        /// Where it leads.
        destination: String,
        /// `queue` or `exchange`.
        destination_type: &'static str,
        /// The binding key.
        key: String,
    },
    /// Nothing matched: the alternate exchange takes the message.
    Alternate {
        /// The exchange.
        from: String,
        /// Its alternate exchange.
        to: String,
    },
    /// The default exchange delivers by queue name.
    Default {
        /// The queue.
        queue: String,
    },
}

/// A route's hops as the trace reports them.
pub(super) fn steps(route: &Route) -> Vec<RouteStep> {
    route
        .hops
        .iter()
        .map(|hop| match *hop {
            Hop::Binding {
                source,
                destination,
                to_exchange,
                key,
                ..
            } => RouteStep::Binding {
                source: source.to_string(),
                destination: destination.to_string(),
                destination_type: if to_exchange { "exchange" } else { "queue" },
                key: key.to_string(),
            },
            Hop::Alternate { from, to } => RouteStep::Alternate {
                from: from.to_string(),
                to: to.to_string(),
            },
            Hop::Default { queue } => RouteStep::Default {
                queue: queue.to_string(),
            },
        })
        .collect()
}

/// Something that happened to a copy.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A consumer got it.
    Delivered {
        /// The queue.
        queue: String,
        /// `service.consumer`.
        consumer: String,
        /// The consumer's delivery of this message, from 1.
        attempt: usize,
        /// The routing key it carries.
        routing_key: String,
        /// Its `x-death` entries, most recent first.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        x_death: Vec<Death>,
        /// The `warren-retries` header, if set.
        #[serde(skip_serializing_if = "Option::is_none")]
        retries_header: Option<u64>,
    },
    /// The consumer processed it and acked.
    Processed {
        /// `service.consumer`.
        consumer: String,
    },
    /// The consumer rejected it (`requeue=false`).
    Rejected {
        /// Retries so far, as the contract counts them.
        retries: u64,
    },
    /// The consumer published it to its retry exchange for a retry, then acked.
    Retried {
        /// Retry number, from 1.
        retry: usize,
        /// Tier, from 1.
        tier: usize,
        /// The delay as written in the spec.
        delay: String,
        /// The exchange.
        exchange: String,
        /// The routing key.
        routing_key: String,
        /// How it was routed.
        route: Vec<RouteStep>,
        /// Queues reached.
        queues: Vec<String>,
    },
    /// The consumer rejected it with `requeue=true` and the queue holds it back for the
    /// delay before it delivers it again (`mode: native`, RabbitMQ 4.3).
    Requeued {
        /// Retry number, from 1.
        retry: usize,
        /// The wait, as the contract's schedule writes it.
        delay: String,
        /// The queue that waits (the work queue).
        queue: String,
    },
    /// Retries are used up: the consumer publishes it to be parked, then acks.
    ParkPublished {
        /// The exchange.
        exchange: String,
        /// The routing key.
        routing_key: String,
        /// How it was routed.
        route: Vec<RouteStep>,
        /// Queues reached.
        queues: Vec<String>,
    },
    /// Retries are used up and the ladder drops: the consumer acks.
    Acked {
        /// Why.
        because: String,
    },
    /// It waits in a queue with a message TTL and no consumer.
    Waits {
        /// The queue.
        queue: String,
        /// The TTL in force, in milliseconds.
        ttl_ms: u64,
        /// The TTL as written in the spec (a retry delay) or in milliseconds.
        delay: String,
        /// The retry tier this queue is, if it is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        tier: Option<usize>,
    },
    /// The broker dead-lettered it.
    DeadLettered {
        /// From this queue.
        queue: String,
        /// Why.
        reason: DeathReason,
        /// Through this exchange (`None`: the queue has none; the message is gone).
        #[serde(skip_serializing_if = "Option::is_none")]
        exchange: Option<String>,
        /// With this routing key.
        routing_key: String,
        /// How it was routed.
        route: Vec<RouteStep>,
        /// Queues that get a copy.
        queues: Vec<String>,
        /// Queues whose copy the broker's cycle rule drops.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        dropped_by_cycle: Vec<String>,
    },
}

/// How a copy ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CopyEnd {
    /// A consumer processed it.
    Processed {
        /// The queue.
        queue: String,
        /// `service.consumer`.
        consumer: String,
    },
    /// It sits in a parking queue.
    Parked {
        /// The queue.
        queue: String,
    },
    /// It sits in a queue no consumer of the spec reads (and that has no TTL).
    Stays {
        /// The queue.
        queue: String,
    },
    /// It is gone.
    Dropped {
        /// Why.
        because: String,
    },
    /// The trace stopped before this copy ended.
    Unfinished,
}
