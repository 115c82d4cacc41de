//! Writing objects: the definitions import for creates, and one request per update or
//! delete. Callers say *what* to write, as object ids and normal-form values
//! ([`crate::model::objects`]); this module owns *how*: every write path of the
//! management API.
//!
//! This file holds what callers hand over and get back: the objects to write
//! ([`ObjectWrite`]), when a run of writes may stop ([`WriteStop`]) and what became of
//! each object ([`WriteOutcome`]). The creates go through the chunked definitions import
//! (`import.rs`), checked against the broker afterwards
//! (`readback.rs`); updates and removals are one request each (`requests.rs`).

use serde_json::Value;

use super::BrokerError;
use crate::model::ObjectId;

mod import;
mod readback;
mod requests;

pub use import::{IMPORT_CHUNK_BYTES, ImportStep, import_chunk_objects};

/// When a run of writes ([`Client::import_objects`](super::Client::import_objects),
/// [`Client::write_objects`](super::Client::write_objects)) may end before its last
/// write: a stop asked for (a signal) is heard before each import chunk, and before
/// each write's first request; a write already started is sent whole, and requests in
/// flight are answered. What was not sent is [`WriteOutcome::NotSent`].
#[derive(Clone, Copy)]
pub struct WriteStop<'s> {
    /// Whether a stop is asked for.
    pub asked: &'s dyn Fn() -> bool,
    /// For an import: the objects (by the caller's index) that must be made before it
    /// may stop (the new versions of replaced objects, and the bindings into them: a
    /// replace is never left deleted and not declared again).
    pub not_before: &'s dyn Fn(usize) -> bool,
}

fn never() -> bool {
    false
}

fn none(_: usize) -> bool {
    false
}

impl WriteStop<'static> {
    /// Runs to the end, whatever is asked.
    pub const NEVER: WriteStop<'static> = WriteStop {
        asked: &never,
        not_before: &none,
    };
}

/// One object to update in place or remove.
#[derive(Debug, Clone)]
pub struct ObjectWrite<'a> {
    /// The object.
    pub id: &'a ObjectId,
    /// Its live value (normal form), when it exists.
    pub before: Option<&'a Value>,
    /// Its desired value (normal form); `None` removes the object.
    pub after: Option<&'a Value>,
    /// The broker's handle needed to delete it (a binding's `properties_key`).
    pub handle: Option<&'a str>,
    /// For a queue removal: delete it only if the broker finds it empty and unused
    /// at that moment (see `broker::guard`).
    pub if_empty: bool,
    /// For a queue removal: the queues that dead-letter into it. Those the same call
    /// removes are deleted first, and this one only once they are gone: a queue never
    /// goes while one that feeds it may stay with its messages.
    pub fed_by: Vec<&'a ObjectId>,
}

/// What became of one object handed to
/// [`Client::import_objects`](super::Client::import_objects) or
/// [`Client::write_objects`](super::Client::write_objects).
#[derive(Debug, Clone)]
pub enum WriteOutcome {
    /// The broker confirmed it.
    Done,
    /// Not made: the broker answered with a refusal, or the write was never sent
    /// because the locks were lost ([`BrokerError::LocksLost`]).
    Refused(BrokerError),
    /// Sent, but the broker did not confirm it (it stopped answering, or an import
    /// chunk failed part way): it may or may not have been made.
    Unconfirmed(BrokerError),
    /// Not sent, because an earlier request failed.
    NotSent,
}

impl WriteOutcome {
    /// The outcome of one request that failed.
    fn failed(error: BrokerError) -> WriteOutcome {
        match error {
            BrokerError::Unreachable { .. }
            | BrokerError::TimedOut { .. }
            | BrokerError::AmqpUnanswered { .. }
            | BrokerError::LocksLost { sent: true, .. } => WriteOutcome::Unconfirmed(error),
            error => WriteOutcome::Refused(error),
        }
    }
}

impl WriteOutcome {
    /// Whether the broker confirmed it.
    pub fn is_done(&self) -> bool {
        matches!(self, WriteOutcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::error::RedactedText;

    /// A request sent whose answer never came is "may have been made"; a refusal the
    /// broker answered is "not made".
    #[test]
    fn an_unanswered_request_is_unconfirmed_and_an_answered_refusal_is_not_made() {
        let unanswered = BrokerError::AmqpUnanswered {
            what: "queue.delete \"q\" in vhost \"v\"".into(),
            reason: RedactedText::new("IO error: connection reset by peer"),
        };
        assert!(matches!(
            WriteOutcome::failed(unanswered),
            WriteOutcome::Unconfirmed(_)
        ));
        let refused = BrokerError::Refused {
            vhost: "v".into(),
            queue: "q".into(),
            reason: RedactedText::new("the broker counts 1 ready message in it"),
        };
        assert!(matches!(
            WriteOutcome::failed(refused),
            WriteOutcome::Refused(_)
        ));
    }
}
