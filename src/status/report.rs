//! The report `warren status` gives: each consumer's queues with the figures the broker
//! gave, and the problems found. This is what `render::status` shows and what the JSON
//! document (`warren-status/1`) serializes, so its fields are kept apart from the code
//! that reads the broker and the code that decides what is a problem.

use serde::Serialize;

/// The `format` of the JSON document: bumped when a field changes meaning or goes.
pub const FORMAT: &str = "warren-status/1";

/// The report: every chosen consumer, in spec order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// [`FORMAT`].
    pub format: &'static str,
    /// How many problems the consumers have, all together.
    pub problems: usize,
    /// The consumers.
    pub consumers: Vec<ConsumerStatus>,
}

/// One consumer on the broker. A figure the broker did not give (a queue that does not
/// exist, statistics not emitted yet, a rate of a queue nothing went through) is
/// `None`: never a 0 that nobody measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConsumerStatus {
    /// Vhost.
    pub vhost: String,
    /// Service.
    pub service: String,
    /// Consumer.
    pub consumer: String,
    /// Its work queue (its fields are the consumer's own in JSON).
    #[serde(flatten)]
    pub work: WorkQueue,
    /// The other queues it consumes (one per attempt in `reject-chain` mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<WorkQueue>,
    /// Its delay queues, first to last; empty without a ladder.
    pub tiers: Vec<Tier>,
    /// Its parking queue; `None` without one.
    pub parking: Option<Parking>,
    /// What is wrong.
    pub problems: Vec<Problem>,
}

/// A queue a consumer reads: its work queue, or one of its attempt queues.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkQueue {
    /// The queue.
    pub queue: String,
    /// Whether it exists.
    pub exists: bool,
    /// Ready and unacknowledged messages.
    pub messages: Option<u64>,
    /// Ready messages.
    pub ready: Option<u64>,
    /// Unacknowledged messages.
    pub unacked: Option<u64>,
    /// Messages held back for a delayed retry (a `native` ladder's waiting retries;
    /// RabbitMQ 4.3): absent where the broker does not count them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<u64>,
    /// Consumers.
    pub consumers: Option<u64>,
    /// Messages published per second.
    pub publish_rate: Option<f64>,
    /// Messages delivered per second.
    pub deliver_rate: Option<f64>,
}

/// One delay queue of the ladder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tier {
    /// Its place in the ladder, from 1 (one per tier; in `reject-chain` mode one per
    /// retry).
    pub tier: usize,
    /// The delay as the spec writes it.
    pub delay: String,
    /// The queue.
    pub queue: String,
    /// Whether it exists.
    pub exists: bool,
    /// Messages waiting out their delay.
    pub messages: Option<u64>,
    /// What `--inspect` read of its waiting messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspected: Option<TierInspection>,
    /// Why `--inspect` did not read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_inspected: Option<String>,
}

/// What `--inspect` found at the head of a delay queue: how often the consumer's work
/// queues rejected each message, by the broker's own count (`x-death`), against what
/// its ladder allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TierInspection {
    /// Messages read (at most `--inspect`'s count, from the head of the queue).
    pub read: usize,
    /// Of those, messages rejected more often than `max_retries` allows: they have
    /// gone round the ladder more often than it has retries.
    pub past_the_ladder: usize,
    /// The most rejections one message read had.
    pub most_rejections: u32,
}

/// The parking queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parking {
    /// The queue.
    pub queue: String,
    /// Whether it exists.
    pub exists: bool,
    /// Messages parked.
    pub messages: Option<u64>,
    /// Messages parked per second.
    pub publish_rate: Option<f64>,
    /// Seconds since the oldest parked message was published: known only for a classic
    /// queue whose oldest message has a `timestamp` property (the broker reads it
    /// without consuming anything).
    pub oldest_age_seconds: Option<u64>,
}

/// Something wrong with one of a consumer's queues.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    /// What kind.
    pub kind: ProblemKind,
    /// The queue.
    pub queue: String,
    /// What is wrong, in a sentence.
    pub message: String,
}

/// The kinds of [`Problem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProblemKind {
    /// A queue of the spec does not exist on the broker: the spec is not applied.
    MissingQueue,
    /// A work queue (or attempt queue) has no consumer.
    NoConsumers,
    /// A queue is under another policy than the one warren generated for it (or under
    /// one where warren generated none, or under none).
    Policy,
    /// Messages are being parked (the parking queue's publish rate is above 0).
    ParkingGrowing,
    /// The parking queue holds messages.
    ParkingNotEmpty,
    /// A policy or operator policy on the broker breaks what a queue is for: parked
    /// messages that expire, a tier that is deleted with its retries, … (its message
    /// names the policy, the setting and the fix).
    PolicyHazard,
    /// Messages waiting in a tier were rejected more often than the consumer's ladder
    /// allows (`--inspect`): the consumer does not follow its retry contract.
    RetryContract,
}

impl ProblemKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [ProblemKind; 7] = [
        ProblemKind::MissingQueue,
        ProblemKind::NoConsumers,
        ProblemKind::Policy,
        ProblemKind::PolicyHazard,
        ProblemKind::RetryContract,
        ProblemKind::ParkingGrowing,
        ProblemKind::ParkingNotEmpty,
    ];

    /// The name in JSON and in the Prometheus `kind` label.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::MissingQueue => "missing-queue",
            ProblemKind::NoConsumers => "no-consumers",
            ProblemKind::Policy => "policy",
            ProblemKind::PolicyHazard => "policy-hazard",
            ProblemKind::RetryContract => "retry-contract",
            ProblemKind::ParkingGrowing => "parking-growing",
            ProblemKind::ParkingNotEmpty => "parking-not-empty",
        }
    }
}

impl Serialize for ProblemKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
