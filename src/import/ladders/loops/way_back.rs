//! The way back from a loop's delay queues to its work queue ([`Back`]): the default
//! exchange with the work queue's name, the inner exchange, a return exchange of the
//! consumer's own, or the next attempt's queue in `reject-chain` mode; and a retry
//! exchange that another work queue's delay queues also return from. How a delay queue
//! dead-letters is read on its own, from its arguments and the bindings around the work
//! queue, before the loop is put together.

use super::fit::{Found, because, plain_exchange};
use crate::import::ladders::VhostIndex;
use crate::import::text;
use crate::model::{Exchange, Queue};

/// The way back from the delay queues to the work queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Back {
    WorkQueue,
    Inner,
    ReturnExchange(String),
    Chain,
}

/// The other work queue that delay queue `delay` returns to through the default
/// exchange, when that queue dead-letters to the same retry exchange: a retry exchange
/// shared by several loops.
pub(super) fn returns_to_another<'a>(
    indexed: &VhostIndex<'a>,
    exchange: &Exchange,
    work: &Queue,
    delay: &'a Queue,
) -> Option<&'a str> {
    if text(delay.arguments.get("x-dead-letter-exchange")) != Some("") {
        return None;
    }
    let key = text(delay.arguments.get("x-dead-letter-routing-key"))?;
    let other = indexed.queues.get(key)?;
    (key != work.name
        && text(other.arguments.get("x-dead-letter-exchange")) == Some(exchange.name.as_str()))
    .then_some(key)
}

/// How messages leave delay queue `delay` for the work queue.
pub(super) fn way_back(indexed: &VhostIndex, work: &Queue, delay: &Queue) -> Found<Back> {
    let target = text(delay.arguments.get("x-dead-letter-exchange")).unwrap_or_default();
    let key = text(delay.arguments.get("x-dead-letter-routing-key"));
    if target.is_empty() {
        return match key {
            Some(key) if key == work.name => Ok(Back::WorkQueue),
            Some(key) if indexed.queues.contains_key(key) => Ok(Back::Chain),
            _ => because(format!(
                "delay queue `{}` dead-letters through the default exchange to `{}`, not to the work queue",
                delay.name,
                key.unwrap_or_default()
            )),
        };
    }
    let to_work = indexed
        .to_queue
        .get(work.name.as_str())
        .is_some_and(|bindings| bindings.iter().any(|b| b.source == target));
    if !to_work {
        return because(format!(
            "delay queue `{}` dead-letters to `{target}`, which does not lead back to `{}`",
            delay.name, work.name
        ));
    }
    // The consumer's own return exchange: a fanout exchange bound to the work queue
    // alone. Any other exchange bound to the work queue is its inner exchange.
    let own = indexed.exchanges.get(target).is_some_and(|exchange| {
        exchange.kind == "fanout"
            && plain_exchange(exchange, "").is_ok()
            && key.is_none()
            && indexed
                .to_queues_from
                .get(target)
                .is_some_and(|bindings| {
                    matches!(bindings.as_slice(), [b] if b.destination == work.name && b.routing_key.is_empty() && b.arguments.is_empty())
                })
            && indexed.to_queue.get(work.name.as_str()).is_some_and(|bindings| {
                bindings.iter().any(|b| b.source != target)
            })
    });
    if own {
        Ok(Back::ReturnExchange(target.to_string()))
    } else {
        Ok(Back::Inner)
    }
}
