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

use std::collections::BTreeMap;
use std::time::Duration;

use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties};

use super::amqp::{ConnectFailure, NoAmqp, reply_of};
use super::error::{RedactedText, removed_binding};
use super::{BrokerError, Client, QueueBinding};
use crate::model::effective::CompiledPolicies;
use crate::model::redact::redact_url;
use crate::model::{Permission, Policy, QueueType, TargetVersion};
use serde_json::Value;

/// AMQP reply codes the checks expect.
const NOT_FOUND: u16 = 404;
const PRECONDITION_FAILED: u16 = 406;

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

/// The longest delayed-retry wait warren sits out before it counts a quorum queue it
/// deletes (see `Client::wait_out_delayed_retries`): a minute, so that removing a
/// consumer with short native retries needs no flag, and an apply never stalls for long.
pub const LONGEST_DELAY_WAITED: Duration = Duration::from_secs(60);

/// Added to a wait: the broker delivers a waiting message again at the end of its wait,
/// give or take its timer.
const DELAY_MARGIN: Duration = Duration::from_secs(1);

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
            super::amqp::close(&connection, "warren is done").await;
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
            super::amqp::AmqpUse::Writes,
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
            super::amqp::close_channel(&channel).await;
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

    /// Sits out the longest wait of a quorum queue that holds returned messages back
    /// before it delivers them again (RabbitMQ 4.3's delayed retry, `mode: native`):
    /// while a message waits, the queue counts it nowhere a client can read at once (a
    /// passive `queue.declare` says 0 and `queue.delete` would drop it; measured on
    /// 4.3.6), but once the wait is over it is ready and counted. Called with the
    /// bindings into the queue removed: with no consumer, nothing new can start to
    /// wait. A queue whose wait is longer than [`LONGEST_DELAY_WAITED`], or unknown, is
    /// refused.
    async fn wait_out_delayed_retries(
        &self,
        channel: &Channel,
        queue: &GuardedQueue<'_>,
    ) -> Result<(), BrokerError> {
        let Some(longest) = self.delayed_retry_max(queue).await? else {
            return Ok(());
        };
        match declare_passive(channel, queue).await? {
            // Gone, or refused on its count or consumers by the check that follows.
            None => return Ok(()),
            Some(held) if held.ready > 0 || held.consumers > 0 => return Ok(()),
            Some(_) => {}
        }
        match longest {
            Some(wait) if wait <= LONGEST_DELAY_WAITED => {
                tokio::time::sleep(wait + DELAY_MARGIN).await;
                Ok(())
            }
            _ => Err(refused(
                queue,
                format!(
                    "it holds failed messages back for a delayed retry ({}, RabbitMQ 4.3) and the broker counts no message while it waits, so warren cannot see whether it is empty; stop its consumers, wait that long, and check it shows no messages before deleting it with --allow-data-loss",
                    longest.map_or_else(
                        || "for a time its policy does not say".to_string(),
                        |wait| format!("up to {} s", wait.as_secs())
                    )
                ),
            )),
        }
    }

    /// Before a drained quorum queue is counted for its deletion (a migration): when it
    /// holds messages back for a delayed retry, waits its longest delay out so that they
    /// are ready, and so counted, by then; refuses when that is over
    /// [`LONGEST_DELAY_WAITED`] or unknown.
    pub(super) async fn sit_out_delayed_retries(
        &self,
        vhost: &str,
        name: &str,
    ) -> Result<(), BrokerError> {
        let queue = GuardedQueue {
            vhost,
            name,
            queue_type: QueueType::Quorum,
        };
        match self.delayed_retry_max(&queue).await? {
            None => Ok(()),
            Some(Some(wait)) if wait <= LONGEST_DELAY_WAITED => {
                tokio::time::sleep(wait + DELAY_MARGIN).await;
                Ok(())
            }
            Some(longest) => Err(refused(
                &queue,
                format!(
                    "it holds failed messages back for a delayed retry ({}, RabbitMQ 4.3), which no move can take and the broker does not count while they wait; lower its delays to a minute or less first, or stop its consumers and wait until it shows no messages",
                    longest.map_or_else(
                        || "for a time its policy does not say".to_string(),
                        |wait| format!("up to {} s", wait.as_secs())
                    )
                ),
            )),
        }
    }

    /// Whether a quorum queue delays redeliveries and for how long at most: `None` when
    /// it does not; `Some(None)` when it does without a maximum. Read from what the
    /// broker holds exactly, the queue's arguments and the vhost's policies, never from
    /// the statistics (`effective_policy_definition` lags by seconds on 4.3.6): every
    /// policy that matches the queue counts, so a tie or a shadowed policy errs on the
    /// side of waiting.
    async fn delayed_retry_max(
        &self,
        queue: &GuardedQueue<'_>,
    ) -> Result<Option<Option<Duration>>, BrokerError> {
        let path = format!(
            "/api/queues/{}/{}?columns=arguments&disable_stats=true",
            super::segment(queue.vhost),
            super::segment(queue.name)
        );
        let Some(live) = self.get(&path).await? else {
            return Ok(None);
        };
        let policies: Vec<Policy> = match self
            .get(&format!("/api/policies/{}", super::segment(queue.vhost)))
            .await?
        {
            Some(listed) => serde_json::from_value(listed).unwrap_or_default(),
            None => Vec::new(),
        };
        let matching = CompiledPolicies::new(&policies)
            .choose(
                queue.vhost,
                queue.name,
                QueueType::Quorum,
                TargetVersion::NEWEST,
            )
            .matching;
        let arguments = &live["arguments"];
        let settings: Vec<(Option<&Value>, Option<&Value>)> = std::iter::once((
            arguments.get("x-delayed-retry-type"),
            arguments.get("x-delayed-retry-max"),
        ))
        .chain(matching.iter().map(|policy| {
            (
                policy.definition.get("delayed-retry-type"),
                policy.definition.get("delayed-retry-max"),
            )
        }))
        .collect();
        let delays = settings.iter().any(|(kind, _)| {
            kind.and_then(Value::as_str)
                .is_some_and(|kind| kind != "disabled")
        });
        if !delays {
            return Ok(None);
        }
        let longest = settings
            .iter()
            .filter_map(|(_, max)| max.and_then(Value::as_u64))
            .max()
            .map(Duration::from_millis);
        Ok(Some(longest))
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

    /// An AMQP connection to `vhost`: at `--amqp-url` when given, else at the AMQP
    /// listener the management API reports, on the host of the management URL. `name`
    /// is what the broker's connection list shows for it (`warren replay`, …).
    pub(super) async fn amqp_connection(
        &self,
        vhost: &str,
        name: &str,
        used: super::amqp::AmqpUse,
    ) -> Result<Connection, BrokerError> {
        let url = self
            .amqp_url()
            .await
            .map_err(|NoAmqp { url, reason }| BrokerError::Amqp {
                url,
                reason: reason.into(),
                denied_vhost: None,
            })?;
        let shown = redact_url(url.as_str());
        let mut with_login = self.amqp_login(&url, vhost);
        // A frozen process loses a writing connection before it loses its locks (see
        // `fence`); one that only reads is given the time a loaded broker needs.
        let heartbeat = format!("heartbeat={}", used.heartbeat_secs());
        with_login.set_query(Some(&heartbeat));
        let properties = ConnectionProperties::default().with_connection_name(name.into());
        let deadline = tokio::time::Instant::now() + self.endpoint.timeout;
        match super::amqp::connect(&with_login, properties, deadline).await {
            Ok(connection) => Ok(connection),
            Err(failure) => {
                let reason = failure.reason(self.endpoint.timeout);
                // RabbitMQ: "NOT_ALLOWED - access to vhost 'v' refused for user 'u'".
                let denied = matches!(failure, ConnectFailure::Failed(_))
                    && reason.contains("access to vhost");
                Err(BrokerError::Amqp {
                    url: shown,
                    reason: reason.into(),
                    denied_vhost: denied.then(|| vhost.to_string()),
                })
            }
        }
    }
}

async fn channel(
    connection: &Connection,
    queue: &GuardedQueue<'_>,
    what: &str,
) -> Result<Channel, BrokerError> {
    connection
        .create_channel()
        .await
        .map_err(|error| failed_as(what, queue, &error))
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

/// What the deletion of a queue sends, and what counting one does, as errors name them.
const DELETE: &str = "queue.delete";
const COUNT: &str = "queue.declare (passive, to count its messages)";

fn failed(queue: &GuardedQueue<'_>, error: &lapin::Error) -> BrokerError {
    failed_as(DELETE, queue, error)
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

/// A queue as the broker counts it at one moment, for the check an apply makes
/// before its first write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueHeld {
    /// Ready messages, counted by the queue itself (a passive `queue.declare`).
    pub ready: u32,
    /// Consumers attached, counted by the queue itself: a consumer may hold
    /// unacknowledged messages, which the count of ready ones leaves out.
    pub consumers: u32,
    /// Unacknowledged messages as the statistics last counted them: the only figure
    /// that shows messages taken by `basic.get` and not acknowledged (no consumer
    /// holds them); it lags by up to a statistics interval.
    pub unacknowledged: u64,
    /// Messages a quorum queue holds back for a delayed retry (RabbitMQ 4.3), as the
    /// statistics last counted them: the queue's own count leaves them out while they
    /// wait. Lags like `unacknowledged`; the deletion itself waits them out.
    pub delayed: u64,
}

impl QueueHeld {
    /// Whether deleting the queue now would lose a message, or cut off a consumer.
    pub fn holds_anything(&self) -> bool {
        self.ready > 0 || self.consumers > 0 || self.unacknowledged > 0 || self.delayed > 0
    }
}

impl Client {
    /// What each of `queues` (vhost, name) holds at this moment: `None` for a queue
    /// that does not exist. One AMQP connection per vhost, a passive `queue.declare`
    /// per queue; the statistics' unacknowledged count beside it.
    pub async fn queues_held(
        &self,
        queues: &[(String, String)],
    ) -> Result<Vec<Option<QueueHeld>>, BrokerError> {
        let mut held: Vec<Option<QueueHeld>> = vec![None; queues.len()];
        let mut by_vhost: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (index, (vhost, _)) in queues.iter().enumerate() {
            by_vhost.entry(vhost.as_str()).or_default().push(index);
        }
        for (vhost, indices) in by_vhost {
            let connection = self
                .amqp_connection(
                    vhost,
                    "warren: counting queues before an apply",
                    super::amqp::AmqpUse::Reads,
                )
                .await?;
            let counted = async {
                let mut open: Option<Channel> = None;
                for &index in &indices {
                    let queue = GuardedQueue {
                        vhost,
                        name: &queues[index].1,
                        queue_type: QueueType::Classic,
                    };
                    let channel = match open.take() {
                        Some(channel) if channel.status().connected() => channel,
                        _ => self::channel(&connection, &queue, COUNT).await?,
                    };
                    held[index] = declare_passive(&channel, &queue).await?;
                    open = Some(channel);
                }
                Ok::<_, BrokerError>(())
            }
            .await;
            super::amqp::close(&connection, "warren is done").await;
            counted?;
        }
        for (index, (vhost, name)) in queues.iter().enumerate() {
            if let Some(queue) = held[index].as_mut() {
                (queue.unacknowledged, queue.delayed) = self.held_back(vhost, name).await?;
            }
        }
        Ok(held)
    }

    /// The statistics' counts of a queue's unacknowledged messages and of those it holds
    /// back for a delayed retry (0 before the first count, on a broker without delayed
    /// retry, or for a queue gone since).
    async fn held_back(&self, vhost: &str, name: &str) -> Result<(u64, u64), BrokerError> {
        let path = format!(
            "/api/queues/{}/{}?columns=messages_unacknowledged,messages_delayed",
            super::segment(vhost),
            super::segment(name)
        );
        let queue = self.get(&path).await?;
        let count = |key: &str| {
            queue
                .as_ref()
                .and_then(|queue| queue[key].as_u64())
                .unwrap_or(0)
        };
        Ok((count("messages_unacknowledged"), count("messages_delayed")))
    }

    /// The permissions `user` has, vhost by vhost (`GET /api/users/{user}/permissions`).
    pub async fn user_permissions(&self, user: &str) -> Result<Vec<Permission>, BrokerError> {
        let path = format!("/api/users/{}/permissions", super::segment(user));
        let Some(value) = self.get(&path).await? else {
            return Ok(Vec::new());
        };
        serde_json::from_value(value).map_err(|error| BrokerError::Decode {
            path,
            reason: error.to_string().into(),
        })
    }
}

/// A queue's counts from a passive `queue.declare`; `None` when it does not exist.
async fn declare_passive(
    channel: &Channel,
    queue: &GuardedQueue<'_>,
) -> Result<Option<QueueHeld>, BrokerError> {
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    match channel
        .queue_declare(queue.name.into(), passive, FieldTable::default())
        .await
    {
        Ok(state) => Ok(Some(QueueHeld {
            ready: state.message_count(),
            consumers: state.consumer_count(),
            unacknowledged: 0,
            delayed: 0,
        })),
        Err(error) => match reply_of(&error) {
            Some((NOT_FOUND, _)) => Ok(None),
            _ => Err(failed_as(COUNT, queue, &error)),
        },
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
