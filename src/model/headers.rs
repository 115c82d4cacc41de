//! The message headers a retry ladder reads and writes, and what a replay does to them.
//!
//! Consumers keep a ladder's state in headers (docs/consumer-contract.md): `publish` mode
//! counts retries in [`RETRY_COUNT_HEADER`], the reject modes let the broker count them
//! in `x-death`. The contract (`compile::contract`), the trace (`trace.rs`) and the
//! replay of parked messages (`replay.rs`, `broker::replay`) all name the same headers,
//! so they are written here once.

/// Header carrying how many retries a message has had, in `publish` mode. Consumers set
/// it when they re-publish; brokers from 4.0 on ignore a re-published `x-death`, so the
/// count cannot live there.
pub const RETRY_COUNT_HEADER: &str = "warren-retries";

/// Header keeping the routing key a message was first published with. In `publish`
/// mode a re-published message travels with the tier's routing key and comes back from
/// the tier with the work queue's name as its key, so without this header a retried
/// (and a parked) message has lost the key it was routed by, e.g. `notify.sms.urgent`.
/// Consumers set it on the first re-publish and keep it afterwards; a replay sets it in
/// every mode (see [`Replay`]).
pub const ORIGINAL_ROUTING_KEY_HEADER: &str = "warren-routing-key";

/// Header counting how often `warren replay` sent a message back to its consumer, so
/// that a message that keeps failing after replays can be recognised.
pub const REPLAY_COUNT_HEADER: &str = "warren-replays";

/// The headers the broker writes when it dead-letters a message. A consumer removes
/// them before re-publishing (`publish` mode), so that the broker neither counts nor
/// cycle-checks deaths that belong to the old copy.
pub const DEATH_HEADERS: &[&str] = &[
    "x-death",
    "x-first-death-queue",
    "x-first-death-reason",
    "x-first-death-exchange",
    "x-last-death-queue",
    "x-last-death-reason",
    "x-last-death-exchange",
];

/// The broker's own header of `x-death`, whose entries name the queue a message died in
/// and the routing keys it had there.
pub const X_DEATH: &str = "x-death";

/// The header a quorum queue adds on redelivery. It belongs to the queue that delivered
/// the message, so a replay does not carry it to the next queue.
pub const DELIVERY_COUNT_HEADER: &str = "x-delivery-count";

/// What a replay does to the headers of a parked message so that it starts its ladder
/// afresh, in every retry mode and on every broker version:
///
/// - `publish` mode counts in [`RETRY_COUNT_HEADER`]: removed, so the count is 0;
/// - `reject` mode counts the work queue's `x-death` entry: removed, because a 3.x broker
///   keeps counting from an `x-death` a client publishes, and on every version the
///   consumer would read the old count on the first delivery and park the message at
///   once;
/// - `reject-chain` mode counts by queue: the message goes to the first work queue, and
///   without the old `x-death` the broker's cycle check judges only the new path;
/// - [`DELIVERY_COUNT_HEADER`] belongs to the parking queue: removed.
///
/// The routing key the message was first published with survives: a parked message
/// carries it in [`ORIGINAL_ROUTING_KEY_HEADER`] (`publish` mode) or in the `routing-keys`
/// of its work queue's `x-death` entry (the reject modes); a replay writes it to
/// [`ORIGINAL_ROUTING_KEY_HEADER`] before `x-death` goes. [`REPLAY_COUNT_HEADER`] grows
/// by one. Every other header and property is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The consumer's work queue: where the message goes, and whose `x-death` entry
    /// holds its original routing key.
    pub work_queue: String,
}

impl Replay {
    /// Every header a replay removes.
    pub fn removed(&self) -> impl Iterator<Item = &'static str> {
        DEATH_HEADERS
            .iter()
            .copied()
            .chain([RETRY_COUNT_HEADER, DELIVERY_COUNT_HEADER])
    }
}
