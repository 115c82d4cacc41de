//! Deleting a queue only when the broker itself finds it empty at that moment.
//!
//! The management API's message counts are statistics: they lag by up to a stats
//! interval (8 s seen) and are missing for seconds after a queue is created, so a
//! count in a plan cannot decide whether a deletion loses messages. The check is made
//! by the queue, over AMQP, when warren deletes it:
//!
//! - **classic**: `queue.delete` with `if-empty` and `if-unused`. The broker refuses
//!   atomically when the queue holds a ready message, or has a consumer (whose
//!   unacknowledged messages `if-empty` alone would not count).
//! - **quorum**: the broker refuses both flags, so warren asks the queue with a passive
//!   `queue.declare` (its exact ready count and consumer count at that instant) and
//!   deletes it only when both are zero. `queue.delete` then answers with the number
//!   of messages it deleted: a message that arrived between the check and the delete
//!   (a window of one round trip) is reported, never hidden.
//! - **stream**: the broker ignores both flags and offers no exact count, and a stream
//!   keeps its log after it is read: deleting one always needs `--allow-data-loss`.
//!
//! This file holds what the deletions and the counts share: the queue checked
//! ([`GuardedQueue`]) and how an AMQP failure of a check becomes a [`BrokerError`]. The
//! deletion itself is in `delete.rs`, the wait for a quorum queue's delayed retries
//! (RabbitMQ 4.3) in `delayed_retry.rs`, and the exact counts an apply reads before its
//! first write in `held.rs`.

use std::time::Duration;

use lapin::{Channel, Connection};

use super::BrokerError;
use super::amqp::{answered, reply_of};
use crate::model::QueueType;

mod delayed_retry;
mod delete;
mod held;

pub use delete::DELETES_IN_FLIGHT;
pub use held::QueueHeld;

/// AMQP reply code the checks expect when a queue does not exist.
const NOT_FOUND: u16 = 404;

/// A queue to delete only if it is empty.
#[derive(Debug, Clone, Copy)]
pub struct GuardedQueue<'a> {
    /// Vhost.
    pub vhost: &'a str,
    /// Queue name.
    pub name: &'a str,
    /// Its type, which decides how emptiness is checked.
    pub queue_type: QueueType,
}

/// A queue to delete if empty ([`crate::broker::Client::delete_queues_if_empty`]),
/// and the queues of the same deletions it goes after.
#[derive(Debug, Clone, Copy)]
pub struct Deletion<'a> {
    /// The queue.
    pub queue: GuardedQueue<'a>,
    /// The places, in the same list of deletions, of the queues that dead-letter into
    /// it and come before it: it is deleted only once each of them is.
    pub after: &'a [usize],
}

/// A new channel for `queue`'s check, waiting at most `wait` for it.
async fn channel(
    connection: &Connection,
    queue: &GuardedQueue<'_>,
    what: &str,
    wait: Duration,
) -> Result<Channel, BrokerError> {
    answered(wait, connection.create_channel())
        .await
        .map_err(|error| failed_as(what, queue, &error))
}

fn failed_as(what: &str, queue: &GuardedQueue<'_>, error: &lapin::Error) -> BrokerError {
    BrokerError::Api {
        method: "AMQP".into(),
        path: format!("{what} {:?} in vhost {:?}", queue.name, queue.vhost),
        status: reply_of(error).map_or(0, |(code, _)| code),
        reason: error.to_string().into(),
    }
}

fn refused(queue: &GuardedQueue<'_>, reason: String) -> BrokerError {
    BrokerError::Refused {
        vhost: queue.vhost.to_string(),
        queue: queue.name.to_string(),
        reason: reason.into(),
    }
}
