//! The deletion of queues that must be empty: the bindings into each removed first,
//! then the broker's own check at that moment (`if-empty` for a classic queue, a
//! passive count then `queue.delete` for a quorum queue, a refusal for a stream), the
//! bindings declared again when the queue stays, and a check lost with its connection
//! asked again where that settles it.

use std::collections::BTreeMap;

use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection};

use super::{GuardedQueue, NOT_FOUND, channel, failed_as, refused};
use crate::broker::amqp::{AmqpUse, reply_of};
use crate::broker::error::{RedactedText, removed_binding};
use crate::broker::{BrokerError, Client, QueueBinding};
use crate::model::QueueType;

/// AMQP reply code of a deletion the broker refused on its `if-empty` or `if-unused`.
const PRECONDITION_FAILED: u16 = 406;

/// What the deletion of a queue sends, as errors name it.
const DELETE: &str = "queue.delete";

impl Client {
    /// Deletes each queue if the broker finds it empty and unused at that moment, one
    /// at a time; the result of each, in order, or `None` for a queue not tried
    /// because `stop` asked for a stop before it, or because an earlier queue was not
    /// deleted: a refusal stops the deletions there, so that no queue goes while a
    /// queue that dead-letters into it stays with its messages (the caller orders
    /// them feeders first). A queue that is already gone counts as deleted.
    /// `answered` is told of each queue once it is tried.
    ///
    /// Before a queue's check, the bindings into it are removed (read once per vhost
    /// from the broker): from then on no publish through an exchange, and no dead
    /// letter, can reach it, so none can arrive in the instant of its deletion and be
    /// confirmed by the broker and dropped with the queue. Only a publish straight to
    /// the queue by name (the default exchange) still can. When the broker refuses
    /// the deletion, those bindings are declared again.
    pub async fn delete_queues_if_empty(
        &self,
        queues: &[GuardedQueue<'_>],
        stop: &dyn Fn() -> bool,
        answered: &mut dyn FnMut(usize),
    ) -> Vec<Option<Result<(), BrokerError>>> {
        let mut results: Vec<Option<Result<(), BrokerError>>> =
            queues.iter().map(|_| None).collect();
        let mut by_vhost: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (index, queue) in queues.iter().enumerate() {
            by_vhost.entry(queue.vhost).or_default().push(index);
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
            let mut connection = match self.checks_connection(vhost).await {
                Ok(connection) => connection,
                Err(error) => {
                    results[first] = Some(Err(error));
                    answered(1);
                    break;
                }
            };
            let tried = self
                .delete_in_vhost(&mut connection, queues, &indices, &routes, stop, answered)
                .await;
            crate::broker::amqp::close(&connection, "warren is done").await;
            let refused = tried.last().is_some_and(|(_, result)| result.is_err());
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

    /// The deletions of one vhost's queues (`indices` of `queues`), in order, over
    /// `connection`: the result of each queue tried, up to the first that failed.
    ///
    /// A connection lost under a queue's check is opened again once for that queue,
    /// and the queue checked again from the start, wherever what was lost can be
    /// settled by asking anew (see [`settled_by_asking_again`]). The writers' short
    /// heartbeat (`amqp::WRITER_HEARTBEAT_SECS`) is for the broker's side, so that a
    /// frozen warren loses its writers before its locks; the client checks the same
    /// heartbeat on the broker, and a loaded broker can miss it (seen on a 4.3 node
    /// deleting 3,000 queues beside two CPU-bound processes: the apply failed after
    /// 2,870). The new connection writes nothing before the lock is confirmed again.
    async fn delete_in_vhost(
        &self,
        connection: &mut Connection,
        queues: &[GuardedQueue<'_>],
        indices: &[usize],
        routes: &BTreeMap<String, Vec<QueueBinding>>,
        stop: &dyn Fn() -> bool,
        answered: &mut dyn FnMut(usize),
    ) -> Vec<(usize, Result<(), BrokerError>)> {
        let mut tried = Vec::new();
        // One channel serves every check until the broker closes it (a refusal or a
        // missing queue closes the channel, never the connection).
        let mut open: Option<Channel> = None;
        for &index in indices {
            if stop() {
                break;
            }
            let queue = &queues[index];
            // Nothing of this queue's deletion starts once the locks are lost: its
            // connection may be gone with them (see `fence`), which is not a refusal.
            let result = match self.fenced(false).await {
                Ok(()) => self.delete_over(connection, &mut open, queue, routes).await,
                Err(lost) => Err(lost),
            };
            let result = match result {
                Err(error)
                    if !connection.status().connected()
                        && settled_by_asking_again(queue, &error) =>
                {
                    self.ask_again(connection, &mut open, queue, routes, error)
                        .await
                }
                result => result,
            };
            let failed = result.is_err();
            tried.push((index, result));
            answered(1);
            if failed {
                break;
            }
        }
        if let Some(channel) = open {
            crate::broker::amqp::close_channel(&channel).await;
        }
        tried
    }

    /// A queue's check made again on a new connection after `lost` lost the first;
    /// `lost` stands when no new connection opens or the lock is no longer held (the
    /// first check's outcome is then as unknown as `lost` says).
    async fn ask_again(
        &self,
        connection: &mut Connection,
        open: &mut Option<Channel>,
        queue: &GuardedQueue<'_>,
        routes: &BTreeMap<String, Vec<QueueBinding>>,
        lost: BrokerError,
    ) -> Result<(), BrokerError> {
        let Ok(fresh) = self.checks_connection(queue.vhost).await else {
            return Err(lost);
        };
        *connection = fresh;
        *open = None;
        if self.fenced(false).await.is_err() {
            return Err(lost);
        }
        self.delete_over(connection, open, queue, routes).await
    }

    /// One queue's check and deletion over `connection`, on the channel left `open` by
    /// the queue before it when there is one (it is left open for the next).
    async fn delete_over(
        &self,
        connection: &Connection,
        open: &mut Option<Channel>,
        queue: &GuardedQueue<'_>,
        routes: &BTreeMap<String, Vec<QueueBinding>>,
    ) -> Result<(), BrokerError> {
        let channel = match open.take() {
            Some(channel) if channel.status().connected() => channel,
            _ => channel(connection, queue, DELETE).await?,
        };
        let into = routes.get(queue.name).map_or(&[][..], Vec::as_slice);
        let result = self.delete_unrouted(&channel, queue, into).await;
        *open = Some(channel);
        result
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
                match channel.queue_delete(queue.name.into(), options).await {
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
        let state = match channel
            .queue_declare(queue.name.into(), passive, FieldTable::default())
            .await
        {
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
        match channel
            .queue_delete(queue.name.into(), QueueDeleteOptions::default())
            .await
        {
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
