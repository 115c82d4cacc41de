//! Moving parked messages back to their work queue: nothing lost, and what the broker
//! refuses left parked.
//!
//! A shovel would move messages inside the broker, but it cannot change a header, and
//! a parked message must lose its retry count to start its ladder again
//! ([`Replay`]). So warren moves them itself, over AMQP: `basic.get` of a parked
//! message, a `mandatory` publish of its rewritten copy ([`rewrite`]) to the work queue
//! with publisher confirms, and the original's `basic.ack` only once the broker has
//! confirmed the copy and not returned it (`window`). A copy the broker refuses —
//! `basic.nack` (a full queue with `overflow: reject-publish`), `basic.return` (no
//! queue took it), a connection blocked by a resource alarm — stops the replay, and its
//! original is rejected with `requeue`, back in the parking queue.
//!
//! Transactions (`tx.select`), which this replaced, cannot say which publish of a batch
//! the broker refused: RabbitMQ commits the acks of a transaction whose publishes a full
//! queue refused ("partial tx completion"), and those messages were lost.
//!
//! The gets and acks use one connection, the publishes another: RabbitMQ blocks a
//! connection that publishes during a resource alarm and stops reading it, so acks and
//! rejects sent on the publishing connection would wait for the alarm to clear.
//!
//! What confirms cannot give: between the broker taking a copy and taking its
//! original's ack, the message is in both queues. warren killed (or the broker killed)
//! in that moment leaves it in both, the copy marked by `warren-replays`. At most
//! `batch` copies are in flight at once, so at most that many are doubled by one kill.

pub(super) mod copy;
mod window;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection};

pub use self::copy::rewrite;
use super::amqp::{answered, reply_of};
use super::{BrokerError, Client};
use crate::model::headers::Replay;

/// How long the channel stays open after its last ack. A quorum queue applies acks as
/// low-priority commands, and a channel that closes at once can have its taken messages
/// returned to the queue before those acks apply: seen on RabbitMQ 4.0 under load, 7
/// of 40 moved messages also stayed parked. Open a moment longer, the acks apply first.
/// (No AMQP method waits for them.)
const SETTLE_GRACE: Duration = Duration::from_secs(1);

/// The AMQP reply code for a queue that does not exist.
const NOT_FOUND: u16 = 404;

/// One replay: which messages go where.
#[derive(Debug, Clone, Copy)]
pub struct ReplayMove<'a> {
    /// Vhost of both queues.
    pub vhost: &'a str,
    /// The parking queue the messages come from.
    pub parking: &'a str,
    /// What happens to each message's headers; names the work queue they go to.
    pub rule: &'a Replay,
    /// Messages to move at most.
    pub limit: u64,
    /// Copies in flight at most: published and not yet confirmed, or confirmed with
    /// their originals not yet acknowledged.
    pub batch: u16,
}

/// Exact message and consumer counts of a queue, from the queue itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueNow {
    /// Messages ready for delivery.
    pub messages: u32,
    /// Consumers attached.
    pub consumers: u32,
}

/// Why a replay stopped before moving what it was asked to.
#[derive(Debug, thiserror::Error)]
pub enum ReplayFailure {
    /// The broker could not be reached, or refused the login.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// A queue of the replay does not exist.
    #[error(
        "queue `{queue}` does not exist in vhost `{vhost}`: apply the spec first (`warren apply`)"
    )]
    QueueMissing {
        /// Vhost.
        vhost: String,
        /// The queue.
        queue: String,
    },
    /// The broker refused a publish: a message carries a `user_id` property that is not
    /// warren's login.
    #[error(
        "RabbitMQ refused to re-publish a message ({reply}): a message that carries a `user_id` property can be re-published only by that user, or by a user with the `impersonator` tag (rabbitmqctl set_user_tags USER administrator impersonator); the message stays parked"
    )]
    UserId {
        /// The broker's reply.
        reply: String,
    },
    /// No AMQP connection to the vhost could be opened.
    #[error(
        "cannot open an AMQP connection to vhost `{vhost}` at {url}: {reason} (give --amqp-url when the AMQP port is not the one the broker reports; the user needs read and write permission in the vhost)"
    )]
    Connect {
        /// Vhost.
        vhost: String,
        /// The AMQP URL (without credentials).
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The channel failed for another reason.
    #[error("the AMQP channel failed: {0}")]
    Channel(String),
    /// The broker refused a copy; its original is parked again.
    #[error("{0}; the refused message is still parked")]
    Refused(CopyRefusal),
}

/// How the broker refused a copy, in its own terms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyRefusal {
    /// `basic.nack`: the broker did not take the copy. AMQP gives no reason; the work
    /// queue's count right after says whether it is full.
    #[error(
        "RabbitMQ refused a copy (basic.nack) for queue `{queue}`{}: a queue with `max-length` or `max-length-bytes` and `overflow: reject-publish` refuses messages while it is full; replay again once its consumers have drained it",
        now.map_or(String::new(), |n| format!(", which holds {} ready", crate::text::count(n.messages as usize, "message")))
    )]
    Nack {
        /// The work queue.
        queue: String,
        /// Its counts right after the refusal, when they could be read.
        now: Option<QueueNow>,
    },
    /// `basic.return`: no queue took the copy.
    #[error(
        "RabbitMQ returned a copy as unroutable ({code} {text}): {}",
        if *missing { format!("queue `{queue}` does not exist (deleted during the replay)") } else { format!("queue `{queue}` did not take it") }
    )]
    Returned {
        /// The work queue.
        queue: String,
        /// The broker's reply code.
        code: u16,
        /// The broker's reply text.
        text: String,
        /// Whether the work queue was gone right after.
        missing: bool,
    },
    /// `connection.blocked`: a resource alarm stopped the broker reading warren's
    /// publishes.
    #[error(
        "RabbitMQ blocked warren's publishing connection (connection.blocked: {reason}): a resource alarm is in effect (`rabbitmq-diagnostics alarms`); replay again once it clears"
    )]
    Blocked {
        /// The broker's reason (`low on memory`, `low on disk space`).
        reason: String,
    },
}

/// A replay that stopped: what the broker holds when it did.
#[derive(Debug, thiserror::Error)]
#[error("{failure}")]
pub struct ReplayError {
    /// Messages moved: each copy confirmed by the broker, its original acknowledged.
    pub moved: u64,
    /// Copies published whose fate the broker never told (a blocked connection, a
    /// channel that closed): their originals are parked again, and a copy the broker
    /// takes after all is in both queues.
    pub unconfirmed: u64,
    /// What went wrong.
    pub failure: ReplayFailure,
}

impl Client {
    /// Exact counts of `queues` in `vhost` (a passive `queue.declare` each): `None` for
    /// a queue that does not exist. The management API's counts lag by seconds; the
    /// queue's own do not.
    pub async fn queues_now(
        &self,
        vhost: &str,
        queues: &[&str],
    ) -> Result<Vec<Option<QueueNow>>, ReplayFailure> {
        let connection = self.replay_connection(vhost).await?;
        let wait = self.endpoint.timeout;
        let counts = async {
            let mut counts = Vec::new();
            let mut open: Option<Channel> = None;
            for queue in queues {
                let channel = match open.take() {
                    Some(channel) if channel.status().connected() => channel,
                    _ => new_channel(&connection, wait).await?,
                };
                counts.push(declare_passive(&channel, queue, wait).await?);
                open = Some(channel);
            }
            Ok(counts)
        }
        .await;
        close(&connection).await;
        counts
    }

    /// Moves up to `request.limit` messages from the parking queue to the work queue,
    /// oldest first, with at most `request.batch` copies in flight (see the module).
    /// Stops early when the parking queue is empty, when the broker refuses a copy, or
    /// when `stop` is set (once the copies in flight are settled). `moved` is told the
    /// running total as originals are acknowledged. The total moved.
    pub async fn replay(
        &self,
        request: &ReplayMove<'_>,
        stop: &AtomicBool,
        moved: &mut dyn FnMut(u64),
    ) -> Result<u64, ReplayError> {
        let failed = |failure| ReplayError {
            moved: 0,
            unconfirmed: 0,
            failure,
        };
        let publisher = self
            .publisher_identity()
            .await
            .map_err(|e| failed(ReplayFailure::Broker(e)))?;
        let taker = self
            .replay_connection(request.vhost)
            .await
            .map_err(failed)?;
        let sender = match self
            .amqp_connection(
                request.vhost,
                "warren replay (publishing)",
                crate::broker::amqp::AmqpUse::Writes,
            )
            .await
        {
            Ok(sender) => sender,
            Err(error) => {
                close(&taker).await;
                return Err(failed(connect_failure(request.vhost, error)));
            }
        };
        let result = match window::Window::open(&taker, &sender, request, &publisher, self).await {
            Ok(mut window) => {
                let result = window.run(stop, moved).await;
                if window.acked() > 0 {
                    tokio::time::sleep(SETTLE_GRACE).await;
                }
                result
            }
            Err(failure) => Err(failed(failure)),
        };
        close(&sender).await;
        close(&taker).await;
        result
    }

    /// Who warren publishes as, from the broker's own answer (`GET /api/whoami`).
    async fn publisher_identity(&self) -> Result<Publisher, BrokerError> {
        let whoami = self.get("/api/whoami").await?.unwrap_or_default();
        // 3.10 and later list the tags; older brokers wrote them as one string.
        let tags: Vec<String> = match &whoami["tags"] {
            serde_json::Value::Array(tags) => tags
                .iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect(),
            serde_json::Value::String(tags) => {
                tags.split(',').map(|t| t.trim().to_string()).collect()
            }
            _ => Vec::new(),
        };
        Ok(Publisher {
            login: whoami["name"]
                .as_str()
                .map_or_else(|| self.endpoint.user.clone(), str::to_string),
            impersonator: tags.iter().any(|t| t == "impersonator"),
        })
    }

    async fn replay_connection(&self, vhost: &str) -> Result<Connection, ReplayFailure> {
        self.amqp_connection(vhost, "warren replay", crate::broker::amqp::AmqpUse::Writes)
            .await
            .map_err(|error| connect_failure(vhost, error))
    }
}

/// A connection that could not be opened, for a replay (the connection error's own
/// text speaks of the checks at deletion).
fn connect_failure(vhost: &str, error: BrokerError) -> ReplayFailure {
    match error {
        BrokerError::Amqp { url, reason, .. } => ReplayFailure::Connect {
            vhost: vhost.to_string(),
            url,
            reason: reason.to_string(),
        },
        other => ReplayFailure::Broker(other),
    }
}

/// Closes `connection`, waiting at most [`super::amqp::CLOSE_WAIT`].
async fn close(connection: &Connection) {
    super::amqp::close(connection, "warren is done").await;
}

/// The user warren publishes as, and whether the broker lets it publish messages that
/// carry another user's `user_id`.
struct Publisher {
    login: String,
    impersonator: bool,
}

impl Publisher {
    /// Why the broker will refuse to take `properties` from this publisher, if it will.
    ///
    /// The broker refuses such a publish by closing the channel, and the reason can
    /// arrive after the next call has already failed on the closing channel (lapin then
    /// reports only the channel's state). Knowing the rule, warren stops before the
    /// publish with the broker's reason; the broker's own refusal stays the backstop.
    fn refusal(&self, properties: &BasicProperties) -> Option<String> {
        let user_id = properties.user_id().as_ref()?.as_str();
        (!self.impersonator && user_id != self.login).then(|| {
            format!(
                "PRECONDITION_FAILED - user_id property set to '{user_id}' but authenticated user was '{}'",
                self.login
            )
        })
    }
}

/// A new channel on `connection`, waiting at most `wait` (`--timeout`) for the broker.
async fn new_channel(connection: &Connection, wait: Duration) -> Result<Channel, ReplayFailure> {
    answered(wait, connection.create_channel())
        .await
        .map_err(|e| ReplayFailure::Channel(e.to_string()))
}

/// A passive declare: the queue's exact counts, or `None` when it does not exist (the
/// broker then closes the channel). Waits at most `wait` (`--timeout`) for the answer.
async fn declare_passive(
    channel: &Channel,
    queue: &str,
    wait: Duration,
) -> Result<Option<QueueNow>, ReplayFailure> {
    let options = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    match answered(
        wait,
        channel.queue_declare(queue.into(), options, FieldTable::default()),
    )
    .await
    {
        Ok(declared) => Ok(Some(QueueNow {
            messages: declared.message_count(),
            consumers: declared.consumer_count(),
        })),
        Err(error) if reply_of(&error).is_some_and(|(code, _)| code == NOT_FOUND) => Ok(None),
        Err(error) => Err(failure_of(&error)),
    }
}

/// What a channel error means for a replay. The broker reports a refused publish on
/// the channel's next synchronous method, so any of them may carry it.
fn failure_of(error: &lapin::Error) -> ReplayFailure {
    match reply_of(error) {
        Some((_, reply)) if reply.contains("user_id") => ReplayFailure::UserId { reply },
        _ => ReplayFailure::Channel(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_impersonator_republishes_another_users_message() {
        let signed = BasicProperties::default().with_user_id("app".into());
        let plain = BasicProperties::default();
        let warren = Publisher {
            login: "warren".into(),
            impersonator: false,
        };
        let reply = warren.refusal(&signed).expect("refused");
        assert!(
            reply.contains("user_id") && reply.contains("'app'"),
            "{reply}"
        );
        assert_eq!(warren.refusal(&plain), None);
        let app = Publisher {
            login: "app".into(),
            impersonator: false,
        };
        assert_eq!(app.refusal(&signed), None);
        let impersonator = Publisher {
            login: "warren".into(),
            impersonator: true,
        };
        assert_eq!(impersonator.refusal(&signed), None);
    }
}
