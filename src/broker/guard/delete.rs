//! The deletion of queues that must be empty: the bindings into each removed first,
//! then the broker's own check at that moment (`if-empty` for a classic queue, a
//! passive count then `queue.delete` for a quorum queue, a refusal for a stream), the
//! bindings declared again when the queue stays, and a check lost with its connection
//! asked again where that settles it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection};

use super::{Deletion, GuardedQueue, NOT_FOUND, channel, failed_as, refused};
use crate::broker::amqp::{AmqpUse, answered, reply_of};
use crate::broker::error::{RedactedText, removed_binding};
use crate::broker::{BrokerError, Client, QueueBinding};
use crate::model::QueueType;

/// AMQP reply code of a deletion the broker refused on its `if-empty` or `if-unused`.
const PRECONDITION_FAILED: u16 = 406;

/// What the deletion of a queue sends, as errors name it.
const DELETE: &str = "queue.delete";

/// How many queues of one vhost are being deleted at once, at most. Each deletion is a
/// few round trips (its lock confirmation, the removal of the bindings into it, the
/// broker's check and the delete), most of them waiting on the broker: one at a time,
/// removing a topology took several times as long as creating it. A stopped apply
/// finishes at most this many deletions after the stop.
pub const DELETES_IN_FLIGHT: usize = 8;

/// The AMQP connection one vhost's deletions share, and the channels they take turns
/// on: one channel per deletion in flight (a refusal or a missing queue closes the
/// channel, never the connection).
struct Checks {
    /// The connection, with how many times it was opened again: a deletion that lost
    /// it opens it again only if no other deletion has done so since.
    connection: tokio::sync::RwLock<(u64, Connection)>,
    /// Channels of the current connection free for the next deletion.
    idle: Mutex<Vec<(u64, Channel)>>,
}

impl Checks {
    fn new(connection: Connection) -> Checks {
        Checks {
            connection: tokio::sync::RwLock::new((0, connection)),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// A channel for `queue`'s deletion, and the connection's generation it is of.
    /// A new channel waits at most `wait` (`--timeout`).
    async fn channel(
        &self,
        queue: &GuardedQueue<'_>,
        wait: Duration,
    ) -> (u64, Result<Channel, BrokerError>) {
        let held = self.connection.read().await;
        let reusable = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.retain(|(generation, channel)| {
                *generation == held.0 && channel.status().connected()
            });
            idle.pop()
        };
        match reusable {
            Some((generation, channel)) => (generation, Ok(channel)),
            None => (held.0, channel(&held.1, queue, DELETE, wait).await),
        }
    }

    /// Gives `channel` back for the next deletion, if it is still open.
    fn give_back(&self, generation: u64, channel: Channel) {
        if channel.status().connected() {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.push((generation, channel));
        }
    }

    /// Whether the connection of `generation` is still the one in use, and open.
    async fn connected(&self, generation: u64) -> bool {
        let held = self.connection.read().await;
        held.0 == generation && held.1.status().connected()
    }

    /// Replaces the connection of `generation`, lost, with the one `open` makes; a
    /// connection another deletion opened since is kept. `false` when none opens.
    async fn reopen(
        &self,
        generation: u64,
        open: impl std::future::Future<Output = Result<Connection, BrokerError>>,
    ) -> bool {
        let mut held = self.connection.write().await;
        if held.0 != generation {
            return true;
        }
        match open.await {
            Ok(fresh) => {
                *held = (generation + 1, fresh);
                true
            }
            Err(_) => false,
        }
    }

    async fn close(self) {
        let (_, connection) = self.connection.into_inner();
        crate::broker::amqp::close(&connection, "warren is done").await;
    }
}

impl Client {
    /// Deletes each queue if the broker finds it empty and unused at that moment; the
    /// result of each, in order, or `None` for a queue not tried because `stop` asked
    /// for a stop before it, or because a queue was not deleted: a refusal starts no
    /// further deletion (those already under way finish and say how they ended). A
    /// queue starts only once the queues it goes after ([`Deletion::after`], those
    /// that feed it) are deleted, so that no queue goes while a queue that
    /// dead-letters into it stays with its messages; up to [`DELETES_IN_FLIGHT`]
    /// queues of a vhost are deleted at once, the vhosts one after another. A queue
    /// that is already gone counts as deleted. `answered` is told of each queue once
    /// it is tried.
    ///
    /// Before a queue's check, the bindings into it are removed (read once per vhost
    /// from the broker): from then on no publish through an exchange, and no dead
    /// letter, can reach it, so none can arrive in the instant of its deletion and be
    /// confirmed by the broker and dropped with the queue. Only a publish straight to
    /// the queue by name (the default exchange) still can. When the broker refuses
    /// the deletion, those bindings are declared again.
    pub async fn delete_queues_if_empty(
        &self,
        queues: &[Deletion<'_>],
        stop: &dyn Fn() -> bool,
        answered: &mut dyn FnMut(usize),
    ) -> Vec<Option<Result<(), BrokerError>>> {
        let mut results: Vec<Option<Result<(), BrokerError>>> =
            queues.iter().map(|_| None).collect();
        let mut by_vhost: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (index, deletion) in queues.iter().enumerate() {
            by_vhost
                .entry(deletion.queue.vhost)
                .or_default()
                .push(index);
        }
        for (vhost, indices) in by_vhost {
            if stop() {
                break;
            }
            let first = indices[0];
            let routes = match self.bindings_into_queues(vhost).await {
                Ok(routes) => routes,
                Err(error) => {
                    results[first] = Some(Err(error));
                    answered(1);
                    break;
                }
            };
            let checks = match self.checks_connection(vhost).await {
                Ok(connection) => Checks::new(connection),
                Err(error) => {
                    results[first] = Some(Err(error));
                    answered(1);
                    break;
                }
            };
            let tried = self
                .delete_in_vhost(&checks, queues, &indices, &routes, stop, answered)
                .await;
            checks.close().await;
            let refused = tried.iter().any(|(_, result)| result.is_err());
            for (index, result) in tried {
                results[index] = Some(result);
            }
            if refused {
                break;
            }
        }
        results
    }

    /// The AMQP connection the emptiness checks of `vhost`'s queues go over: a writer's
    /// (see `fence`).
    async fn checks_connection(&self, vhost: &str) -> Result<Connection, BrokerError> {
        self.amqp_connection(
            vhost,
            "warren: emptiness checks before deleting queues",
            AmqpUse::Writes,
        )
        .await
    }

    /// The deletions of one vhost's queues (`indices` of `queues`, in order) over
    /// `checks`, each started once the queues it goes after are deleted, up to
    /// [`DELETES_IN_FLIGHT`] at once; none started after a failure or a stop. The
    /// result of each queue tried, in order.
    async fn delete_in_vhost(
        &self,
        checks: &Checks,
        queues: &[Deletion<'_>],
        indices: &[usize],
        routes: &BTreeMap<String, Vec<QueueBinding>>,
        stop: &dyn Fn() -> bool,
        answered: &mut dyn FnMut(usize),
    ) -> Vec<(usize, Result<(), BrokerError>)> {
        let mut deleted: HashMap<usize, bool> = HashMap::new();
        let mut started = vec![false; indices.len()];
        let mut in_flight = FuturesUnordered::new();
        let mut tried = Vec::new();
        let mut halted = false;
        // Every place before this one is started: each round looks from here on, so
        // that thousands of queues are not scanned again after each answer.
        let mut first_unstarted = 0;
        loop {
            while started.get(first_unstarted) == Some(&true) {
                first_unstarted += 1;
            }
            for (place, &index) in indices.iter().enumerate().skip(first_unstarted) {
                if halted || in_flight.len() >= DELETES_IN_FLIGHT {
                    break;
                }
                let fed = queues[index].after.iter();
                if started[place] || !fed.clone().all(|f| deleted.get(f) == Some(&true)) {
                    continue;
                }
                if stop() {
                    halted = true;
                    break;
                }
                started[place] = true;
                let queue = &queues[index].queue;
                in_flight
                    .push(async move { (index, self.delete_one(checks, queue, routes).await) });
            }
            let Some((index, result)) = in_flight.next().await else {
                break;
            };
            halted |= result.is_err();
            deleted.insert(index, result.is_ok());
            tried.push((index, result));
            answered(1);
        }
        tried.sort_by_key(|(index, _)| *index);
        tried
    }

    /// One queue's deletion over `checks`, started only while the broker confirms the
    /// locks (nothing of it starts once they are lost: its connection may be gone with
    /// them, see `fence`, which is not a refusal).
    ///
    /// A connection lost under the check is opened again once for the queue, and the
    /// queue checked again from the start, wherever what was lost can be settled by
    /// asking anew (see [`settled_by_asking_again`]). The writers' short heartbeat
    /// (`amqp::WRITER_HEARTBEAT_SECS`) is for the broker's side, so that a frozen
    /// warren loses its writers before its locks; the client checks the same
    /// heartbeat on the broker, and a loaded broker can miss it (seen on a 4.3 node
    /// deleting 3,000 queues beside two CPU-bound processes: the apply failed after
    /// 2,870). The new connection writes nothing before the lock is confirmed again.
    async fn delete_one(
        &self,
        checks: &Checks,
        queue: &GuardedQueue<'_>,
        routes: &BTreeMap<String, Vec<QueueBinding>>,
    ) -> Result<(), BrokerError> {
        self.fenced(false).await?;
        let (generation, result) = self.delete_over(checks, queue, routes).await;
        match result {
            Err(error)
                if settled_by_asking_again(queue, &error)
                    && !checks.connected(generation).await =>
            {
                let reopened = checks
                    .reopen(generation, self.checks_connection(queue.vhost))
                    .await;
                if !reopened || self.fenced(false).await.is_err() {
                    return Err(error);
                }
                self.delete_over(checks, queue, routes).await.1
            }
            result => result,
        }
    }

    /// One queue's check and deletion on a channel of `checks` (given back for the
    /// next queue), with the generation of the connection it went over.
    async fn delete_over(
        &self,
        checks: &Checks,
        queue: &GuardedQueue<'_>,
        routes: &BTreeMap<String, Vec<QueueBinding>>,
    ) -> (u64, Result<(), BrokerError>) {
        let (generation, channel) = checks.channel(queue, self.endpoint.timeout).await;
        let channel = match channel {
            Ok(channel) => channel,
            Err(error) => return (generation, Err(error)),
        };
        let into = routes.get(queue.name).map_or(&[][..], Vec::as_slice);
        let result = self.delete_unrouted(&channel, queue, into).await;
        checks.give_back(generation, channel);
        (generation, result)
    }

    /// Removes the bindings `into` the queue, then deletes it if the broker finds it
    /// empty; declares the bindings again when the queue stays.
    async fn delete_unrouted(
        &self,
        channel: &Channel,
        queue: &GuardedQueue<'_>,
        into: &[QueueBinding],
    ) -> Result<(), BrokerError> {
        if queue.queue_type == QueueType::Stream {
            // Refused whatever it holds: nothing to unbind for.
            return self.delete_if_empty(channel, queue).await;
        }
        let mut removed: Vec<&QueueBinding> = Vec::new();
        for binding in into {
            if let Err(error) = self.unbind_queue(queue.vhost, queue.name, binding).await {
                return Err(self.bind_again(queue, &removed, error).await);
            }
            removed.push(binding);
        }
        let waited = match queue.queue_type {
            QueueType::Quorum => self.wait_out_delayed_retries(channel, queue).await,
            _ => Ok(()),
        };
        let checked = match waited {
            Ok(()) => self.delete_if_empty(channel, queue).await,
            Err(error) => Err(error),
        };
        match checked {
            Ok(()) => Ok(()),
            // Deleted, with what arrived in the window: nothing to bind to. Or sent
            // and not answered: the queue may be gone, and the broker with it; the
            // bindings are not declared again here but by the next apply, whose plan
            // sees them missing if the queue stayed.
            Err(
                error @ (BrokerError::LostInWindow { .. } | BrokerError::AmqpUnanswered { .. }),
            ) => Err(error),
            Err(error) => Err(self.bind_again(queue, &removed, error).await),
        }
    }

    /// Declares `removed` bindings into a queue that stays again; `error` (why it
    /// stays), told with the bindings that could not be declared again, if any.
    async fn bind_again(
        &self,
        queue: &GuardedQueue<'_>,
        removed: &[&QueueBinding],
        error: BrokerError,
    ) -> BrokerError {
        let mut not_bound: Vec<String> = Vec::new();
        let mut first_reason: Option<String> = None;
        for binding in removed {
            if let Err(failure) = self
                .bind_queue(
                    queue.vhost,
                    &binding.source,
                    queue.name,
                    &binding.routing_key,
                    &binding.arguments,
                )
                .await
            {
                first_reason.get_or_insert_with(|| failure.to_string());
                not_bound.push(removed_binding(
                    &binding.source,
                    queue.name,
                    &binding.routing_key,
                ));
            }
        }
        match first_reason {
            None => error,
            Some(reason) => BrokerError::BindingsNotRestored {
                refusal: Box::new(error),
                removed: removed.len(),
                bindings: not_bound,
                reason: RedactedText::new(&reason),
            },
        }
    }
}

/// A `queue.delete` that got no answer: refused when the broker answered on the
/// channel (a soft error: the queue is as it was), not confirmed when the connection
/// failed under it (an I/O error, or the broker closing the connection: the delete
/// may have been done before the node went away).
fn delete_failed(queue: &GuardedQueue<'_>, error: &lapin::Error) -> BrokerError {
    match reply_of(error) {
        Some((code, _)) if is_channel_error(code) => failed(queue, error),
        _ => BrokerError::AmqpUnanswered {
            what: format!("queue.delete {:?} in vhost {:?}", queue.name, queue.vhost),
            reason: RedactedText::new(&error.to_string()),
        },
    }
}

/// Whether an AMQP reply code is a channel-level (soft) error, after which the
/// request is known not to have been done: access refused, not found, locked,
/// precondition failed (AMQP 0-9-1's soft error codes).
fn is_channel_error(code: u16) -> bool {
    matches!(code, 311 | 312 | 313 | 403 | 404 | 405 | 406)
}

/// Whether a queue's check, failed with `error` because its connection was lost, can
/// simply be made again on a new connection, the result then as exact as the first
/// would have been. It can unless the lost request was a quorum queue's
/// `queue.delete` (an unanswered request is [`BrokerError::AmqpUnanswered`]): its
/// answer counts the messages that arrived between the check and the delete, and
/// that count is lost with the connection if the delete was done, so the deletion
/// stays "not confirmed". A classic queue's unanswered delete carried `if-empty` and
/// `if-unused`: if it was done, nothing was lost with it, and asking again finds the
/// queue gone. Everything before the delete (a channel, the count, the wait) changed
/// nothing the second check does not see. A refusal, a loss of messages and lost
/// locks are answers, never asked again.
fn settled_by_asking_again(queue: &GuardedQueue<'_>, error: &BrokerError) -> bool {
    match error {
        BrokerError::AmqpUnanswered { .. } => queue.queue_type == QueueType::Classic,
        BrokerError::Refused { .. }
        | BrokerError::LostInWindow { .. }
        | BrokerError::LocksLost { .. }
        | BrokerError::BindingsNotRestored { .. } => false,
        _ => true,
    }
}

fn failed(queue: &GuardedQueue<'_>, error: &lapin::Error) -> BrokerError {
    failed_as(DELETE, queue, error)
}

impl Client {
    /// The deletion itself, the broker checking emptiness; sent only once the broker has
    /// confirmed this apply's locks (see `fence`).
    async fn delete_if_empty(
        &self,
        channel: &Channel,
        queue: &GuardedQueue<'_>,
    ) -> Result<(), BrokerError> {
        match queue.queue_type {
            QueueType::Stream => Err(refused(
                queue,
                "it is a stream: deleting it deletes its log, and RabbitMQ has no emptiness check for streams".into(),
            )),
            QueueType::Classic => {
                let options = QueueDeleteOptions {
                    if_empty: true,
                    if_unused: true,
                    nowait: false,
                };
                self.fenced(false).await?;
                let deleting = channel.queue_delete(queue.name.into(), options);
                match answered(self.endpoint.timeout, deleting).await {
                    Ok(_) => Ok(()),
                    Err(error) => match reply_of(&error) {
                        Some((NOT_FOUND, _)) => Ok(()),
                        Some((PRECONDITION_FAILED, text)) => Err(refused(
                            queue,
                            format!("the broker found it not empty or in use ({text})"),
                        )),
                        _ => Err(delete_failed(queue, &error)),
                    },
                }
            }
            QueueType::Quorum => self.delete_quorum_if_empty(channel, queue).await,
        }
    }

    async fn delete_quorum_if_empty(
        &self,
        channel: &Channel,
        queue: &GuardedQueue<'_>,
    ) -> Result<(), BrokerError> {
        let passive = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        let counting = channel.queue_declare(queue.name.into(), passive, FieldTable::default());
        let state = match answered(self.endpoint.timeout, counting).await {
            Ok(state) => state,
            Err(error) => {
                return match reply_of(&error) {
                    Some((NOT_FOUND, _)) => Ok(()),
                    _ => Err(failed(queue, &error)),
                };
            }
        };
        if state.message_count() > 0 {
            return Err(refused(
                queue,
                format!(
                    "the broker counts {} ready messages in it",
                    state.message_count()
                ),
            ));
        }
        if state.consumer_count() > 0 {
            return Err(refused(
                queue,
                format!(
                    "it has {}, whose unacknowledged messages would be lost",
                    crate::text::count(state.consumer_count(), "consumer")
                ),
            ));
        }
        self.fenced(false).await?;
        let deleting = channel.queue_delete(queue.name.into(), QueueDeleteOptions::default());
        match answered(self.endpoint.timeout, deleting).await {
            Ok(0) => Ok(()),
            Ok(lost) => Err(BrokerError::LostInWindow {
                vhost: queue.vhost.to_string(),
                queue: queue.name.to_string(),
                messages: lost,
            }),
            Err(error) => match reply_of(&error) {
                Some((NOT_FOUND, _)) => Ok(()),
                _ => Err(delete_failed(queue, &error)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_channel_error_proves_a_delete_was_not_done() {
        for code in [403, 404, 405, 406] {
            assert!(is_channel_error(code), "{code}");
        }
        // Connection-forced (a node shutting down), internal and frame errors: the
        // connection went, and the delete may have been done first.
        for code in [320, 501, 505, 530, 541] {
            assert!(!is_channel_error(code), "{code}");
        }
    }
}
