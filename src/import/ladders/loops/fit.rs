//! Why a queue is not imported as a consumer with a ladder ([`Misfit`]), and the checks
//! that each object of a loop is as warren's ladder declares it: durable queues and
//! plain exchanges, and no queue argument the spec could not keep. These are the
//! loop's per-object rules, apart from the walk through the loop that applies them.

use crate::model::{Exchange, Queue};

/// Why a queue is not imported as a consumer with a ladder.
#[derive(Debug)]
pub(in crate::import::ladders) enum Misfit {
    /// It does not start a retry loop: nothing to say.
    NotALoop,
    /// It starts a retry loop the spec cannot declare as it runs, for this reason.
    Because(String),
}

pub(super) type Found<T> = Result<T, Misfit>;

pub(super) fn because<T>(reason: impl Into<String>) -> Found<T> {
    Err(Misfit::Because(reason.into()))
}

/// Queue arguments a ladder's queues may carry: anything else the spec could not keep.
pub(super) const WORK_ARGUMENTS: &[&str] = &[
    "x-queue-type",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
];
pub(super) const DELAY_ARGUMENTS: &[&str] = &[
    "x-queue-type",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-message-ttl",
];
pub(super) const PARKING_ARGUMENTS: &[&str] = &["x-queue-type"];

/// A ladder's generated exchanges are durable, not auto-deleted, not internal and have
/// no arguments.
pub(super) fn plain_exchange(exchange: &Exchange, what: &str) -> Found<()> {
    if exchange.durable
        && !exchange.auto_delete
        && !exchange.internal
        && exchange.arguments.is_empty()
    {
        return Ok(());
    }
    because(format!(
        "{what} `{}` is not a plain durable exchange (auto-delete, internal or with arguments)",
        exchange.name
    ))
}

pub(super) fn durable(queue: &Queue, what: &str) -> Found<()> {
    if queue.durable && !queue.auto_delete {
        return Ok(());
    }
    because(format!(
        "{what} `{}` is not durable, or is auto-deleted",
        queue.name
    ))
}

pub(super) fn only_arguments(queue: &Queue, allowed: &[&str], what: &str) -> Found<()> {
    match queue
        .arguments
        .keys()
        .find(|key| !allowed.contains(&key.as_str()))
    {
        None => Ok(()),
        Some(key) => because(format!(
            "{what} `{}` has argument `{key}`, which warren's ladder does not declare",
            queue.name
        )),
    }
}
