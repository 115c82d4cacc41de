//! Moving parked messages back to their work queue, each exactly once.
//!
//! A shovel would move messages inside the broker, but it cannot change a header, and
//! a parked message must lose its retry count to start its ladder again
//! ([`Replay`](crate::model::headers::Replay)). So warren moves them itself, over AMQP,
//! in transactions (`tx.select`): each batch is `basic.get` of up to `batch` messages
//! from the parking queue, a `basic.publish` of each rewritten copy to the work queue,
//! one `basic.ack` of the originals, then `tx.commit`. The broker applies the publishes
//! and the acks of a transaction together at the commit, and throws both away when the
//! channel or the connection closes before it, returning the taken messages to the
//! parking queue. So an interrupted replay — killed, disconnected, refused — leaves
//! every message of its open batch where it was, and no copy of it behind: nothing is
//! lost and nothing doubled. (Publisher confirms would leave a window between the
//! confirm of the copy and the ack of the original in which a crash doubles the
//! message; a channel cannot have both modes.)
//!
//! A publish to a queue that no longer exists is not an error in AMQP: the broker drops
//! it, or with `mandatory` returns it at the commit, after the ack. So right before each
//! commit the channel declares the work queue passively: when it is gone, the broker
//! closes the channel and the batch is undone. The locks a replay holds keep warren's
//! own applies from deleting the queue meanwhile; a message returned all the same (the
//! queue deleted by hand between that check and the commit) is published back to the
//! parking queue and reported.

use std::sync::atomic::{AtomicBool, Ordering};

use lapin::message::BasicReturnMessage;
use lapin::options::{BasicAckOptions, BasicGetOptions, BasicPublishOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Connection};

use super::amqp::reply_of;
use super::{BrokerError, Client};
use crate::model::headers::{ORIGINAL_ROUTING_KEY_HEADER, REPLAY_COUNT_HEADER, Replay, X_DEATH};

/// How long the channel stays open after its last commit. A quorum queue applies the
/// acks of a commit as low-priority commands after the commit answers, and a channel
/// that closes at once can have its taken messages returned to the queue before those
/// acks apply: seen on RabbitMQ 4.0 under load, 7 of 40 moved messages also stayed
/// parked. Open a moment longer, the acks apply first. (No AMQP method waits for them.)
const SETTLE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

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
    /// Messages per transaction.
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
    /// Messages the broker returned as unroutable at the commit.
    #[error(
        "{} returned by the broker as unroutable: queue `{queue}` was deleted during the replay. {restored}",
        copies_were(*count)
    )]
    Returned {
        /// The work queue.
        queue: String,
        /// How many.
        count: usize,
        /// What happened to them, in words.
        restored: String,
    },
}

/// `1 copy was`, `3 copies were`.
fn copies_were(count: usize) -> String {
    let verb = if count == 1 { "was" } else { "were" };
    format!(
        "{} {verb}",
        crate::text::count_irregular(count, "copy", "copies")
    )
}

/// A replay that stopped: how many messages it had moved when it did.
#[derive(Debug, thiserror::Error)]
#[error("{failure}")]
pub struct ReplayError {
    /// Messages moved (committed) before the failure.
    pub moved: u64,
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
        let mut counts = Vec::new();
        let mut open: Option<Channel> = None;
        for queue in queues {
            let channel = match open.take() {
                Some(channel) if channel.status().connected() => channel,
                _ => new_channel(&connection).await?,
            };
            counts.push(declare_passive(&channel, queue).await?);
            open = Some(channel);
        }
        let _ = connection.close(200, "warren is done".into()).await;
        Ok(counts)
    }

    /// Moves up to `request.limit` messages from the parking queue to the work queue,
    /// oldest first, in transactions of `request.batch` (see the module). Stops early
    /// when the parking queue is empty, or when `stop` is set (after the open batch
    /// commits). `moved` is told the running total after each commit. The total moved.
    pub async fn replay(
        &self,
        request: &ReplayMove<'_>,
        stop: &AtomicBool,
        moved: &mut dyn FnMut(u64),
    ) -> Result<u64, ReplayError> {
        let mut done = 0;
        let failed = |done, failure| ReplayError {
            moved: done,
            failure,
        };
        let publisher = self
            .publisher_identity()
            .await
            .map_err(|e| failed(0, ReplayFailure::Broker(e)))?;
        let connection = self
            .replay_connection(request.vhost)
            .await
            .map_err(|f| failed(0, f))?;
        let result = async {
            let channel = new_channel(&connection).await?;
            channel.tx_select().await.map_err(|e| failure_of(&e))?;
            for queue in [request.parking, request.rule.work_queue.as_str()] {
                if declare_passive(&channel, queue).await?.is_none() {
                    return Err(ReplayFailure::QueueMissing {
                        vhost: request.vhost.to_string(),
                        queue: queue.to_string(),
                    });
                }
            }
            Ok(channel)
        }
        .await;
        let channel = match result {
            Ok(channel) => channel,
            Err(failure) => {
                let _ = connection.close(200, "warren is done".into()).await;
                return Err(failed(0, failure));
            }
        };
        while done < request.limit && !stop.load(Ordering::SeqCst) {
            let size = (request.limit - done).min(u64::from(request.batch.max(1)));
            match move_batch(&channel, request, &publisher, size).await {
                Ok(0) => break,
                Ok(count) => {
                    done += count;
                    moved(done);
                }
                Err(failure) => {
                    let _ = connection.close(200, "warren is done".into()).await;
                    return Err(failed(done, failure));
                }
            }
        }
        if done > 0 {
            tokio::time::sleep(SETTLE_GRACE).await;
        }
        let _ = channel.close(200, "".into()).await;
        let _ = connection.close(200, "warren is done".into()).await;
        Ok(done)
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
        self.amqp_connection(vhost, "warren replay")
            .await
            .map_err(|error| match error {
                // The connection error's own text speaks of the checks at deletion.
                BrokerError::Amqp { url, reason, .. } => ReplayFailure::Connect {
                    vhost: vhost.to_string(),
                    url,
                    reason: reason.to_string(),
                },
                other => ReplayFailure::Broker(other),
            })
    }
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

/// One transaction: up to `size` messages taken, re-published and acked, committed.
/// The number moved; 0 when the parking queue is empty.
async fn move_batch(
    channel: &Channel,
    request: &ReplayMove<'_>,
    publisher: &Publisher,
    size: u64,
) -> Result<u64, ReplayFailure> {
    let work = request.rule.work_queue.as_str();
    let mut last_tag = None;
    let mut count = 0;
    while count < size {
        let got = channel
            .basic_get(request.parking.into(), BasicGetOptions { no_ack: false })
            .await
            .map_err(|error| match reply_of(&error) {
                Some((NOT_FOUND, _)) => ReplayFailure::QueueMissing {
                    vhost: request.vhost.to_string(),
                    queue: request.parking.to_string(),
                },
                _ => failure_of(&error),
            })?;
        let Some(message) = got else { break };
        let delivery = message.delivery;
        // The open transaction is thrown away with the channel: nothing of the batch
        // moves, and its taken messages return to the parking queue.
        if let Some(reply) = publisher.refusal(&delivery.properties) {
            return Err(ReplayFailure::UserId { reply });
        }
        let properties = rewrite(&delivery.properties, request.rule);
        channel
            .basic_publish(
                "".into(),
                work.into(),
                BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                },
                &delivery.data,
                properties,
            )
            .await
            .map_err(|e| failure_of(&e))?;
        last_tag = Some(delivery.delivery_tag);
        count += 1;
    }
    let Some(tag) = last_tag else { return Ok(0) };
    channel
        .basic_ack(tag, BasicAckOptions { multiple: true })
        .await
        .map_err(|e| failure_of(&e))?;
    // The broker's last word on the destination before the commit: when the work
    // queue is gone, the channel closes and the whole batch is undone.
    if declare_passive(channel, work).await?.is_none() {
        return Err(ReplayFailure::QueueMissing {
            vhost: request.vhost.to_string(),
            queue: work.to_string(),
        });
    }
    channel.tx_commit().await.map_err(|e| failure_of(&e))?;
    // Returns of a transaction come at its commit, before commit-ok.
    let returned = channel
        .wait_for_confirms()
        .await
        .map_err(|e| failure_of(&e))?;
    if !returned.is_empty() {
        let restored = restore(channel, request.parking, &returned).await;
        return Err(ReplayFailure::Returned {
            queue: work.to_string(),
            count: returned.len(),
            restored,
        });
    }
    Ok(count)
}

/// Publishes messages the broker returned back to the parking queue, in a transaction
/// of their own; what happened, in words.
async fn restore(channel: &Channel, parking: &str, returned: &[BasicReturnMessage]) -> String {
    let result = async {
        for message in returned {
            channel
                .basic_publish(
                    "".into(),
                    parking.into(),
                    BasicPublishOptions {
                        mandatory: true,
                        ..BasicPublishOptions::default()
                    },
                    &message.delivery.data,
                    message.delivery.properties.clone(),
                )
                .await?;
        }
        channel.tx_commit().await?;
        channel.wait_for_confirms().await
    }
    .await;
    match result {
        Ok(again) if again.is_empty() => {
            format!("They were published back to `{parking}` (with the replay's header changes).")
        }
        Ok(again) => format!(
            "Publishing them back to `{parking}` returned {} of them too: those are lost.",
            again.len()
        ),
        Err(error) => {
            format!("Publishing them back to `{parking}` failed ({error}): they are lost.")
        }
    }
}

async fn new_channel(connection: &Connection) -> Result<Channel, ReplayFailure> {
    connection
        .create_channel()
        .await
        .map_err(|e| ReplayFailure::Channel(e.to_string()))
}

/// A passive declare: the queue's exact counts, or `None` when it does not exist (the
/// broker then closes the channel).
async fn declare_passive(
    channel: &Channel,
    queue: &str,
) -> Result<Option<QueueNow>, ReplayFailure> {
    let options = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    match channel
        .queue_declare(queue.into(), options, FieldTable::default())
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

/// The properties of a replayed copy: the parked message's, with the headers `rule`
/// removes gone, the original routing key kept in its header, and the replay count
/// one higher.
pub fn rewrite(properties: &BasicProperties, rule: &Replay) -> BasicProperties {
    let mut headers = properties
        .headers()
        .as_ref()
        .map(|table| table.inner().clone())
        .unwrap_or_default();
    let key = ShortString::from(ORIGINAL_ROUTING_KEY_HEADER);
    if !headers.contains_key(&key)
        && let Some(original) = original_routing_key(&headers, &rule.work_queue)
    {
        headers.insert(key, AMQPValue::LongString(LongString::from(original)));
    }
    for removed in rule.removed() {
        headers.remove(&ShortString::from(removed));
    }
    let replays = headers
        .get(&ShortString::from(REPLAY_COUNT_HEADER))
        .and_then(as_integer)
        .unwrap_or(0);
    headers.insert(
        REPLAY_COUNT_HEADER.into(),
        AMQPValue::LongLongInt(replays.saturating_add(1)),
    );
    properties.clone().with_headers(FieldTable::from(headers))
}

/// The first routing key of the `x-death` entry of `work_queue`: the key the message
/// was routed to its work queue by (the reject modes keep it only there).
fn original_routing_key(
    headers: &std::collections::BTreeMap<ShortString, AMQPValue>,
    work_queue: &str,
) -> Option<String> {
    let AMQPValue::FieldArray(deaths) = headers.get(&ShortString::from(X_DEATH))? else {
        return None;
    };
    deaths.as_slice().iter().find_map(|death| {
        let AMQPValue::FieldTable(death) = death else {
            return None;
        };
        let fields = death.inner();
        let queue = fields.get(&ShortString::from("queue")).and_then(as_text)?;
        if queue != work_queue {
            return None;
        }
        let AMQPValue::FieldArray(keys) = fields.get(&ShortString::from("routing-keys"))? else {
            return None;
        };
        keys.as_slice().first().and_then(as_text)
    })
}

fn as_text(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(text) => Some(String::from_utf8_lossy(text.as_bytes()).into_owned()),
        AMQPValue::ShortString(text) => Some(text.as_str().to_string()),
        _ => None,
    }
}

fn as_integer(value: &AMQPValue) -> Option<i64> {
    match value {
        AMQPValue::ShortShortInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortShortUInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortUInt(n) => Some(i64::from(*n)),
        AMQPValue::LongInt(n) => Some(i64::from(*n)),
        AMQPValue::LongUInt(n) => Some(i64::from(*n)),
        AMQPValue::LongLongInt(n) => Some(*n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use lapin::types::FieldArray;

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

    fn text(value: &str) -> AMQPValue {
        AMQPValue::LongString(LongString::from(value))
    }

    fn death(queue: &str, reason: &str, key: &str, count: i64) -> AMQPValue {
        let mut fields = std::collections::BTreeMap::new();
        fields.insert(ShortString::from("queue"), text(queue));
        fields.insert(ShortString::from("reason"), text(reason));
        fields.insert(ShortString::from("count"), AMQPValue::LongLongInt(count));
        fields.insert(
            ShortString::from("routing-keys"),
            AMQPValue::FieldArray(FieldArray::from(vec![text(key)])),
        );
        AMQPValue::FieldTable(FieldTable::from(fields))
    }

    fn parked(headers: Vec<(&str, AMQPValue)>) -> BasicProperties {
        let table: std::collections::BTreeMap<ShortString, AMQPValue> = headers
            .into_iter()
            .map(|(k, v)| (ShortString::from(k), v))
            .collect();
        BasicProperties::default()
            .with_message_id("m-1".into())
            .with_content_type("application/json".into())
            .with_headers(FieldTable::from(table))
    }

    fn header(properties: &BasicProperties, name: &str) -> Option<AMQPValue> {
        properties
            .headers()
            .as_ref()?
            .inner()
            .get(&ShortString::from(name))
            .cloned()
    }

    fn rule() -> Replay {
        Replay {
            work_queue: "orders.email".into(),
        }
    }

    #[test]
    fn a_reject_mode_message_keeps_its_key_and_loses_its_deaths() {
        let deaths = AMQPValue::FieldArray(FieldArray::from(vec![
            death("orders.email.retry.1", "expired", "1", 3),
            death("orders.email", "rejected", "order.created", 3),
        ]));
        let before = parked(vec![
            ("x-death", deaths),
            ("x-first-death-queue", text("orders.email")),
            ("x-delivery-count", AMQPValue::LongLongInt(2)),
            ("tenant", text("acme")),
        ]);
        let after = rewrite(&before, &rule());
        assert_eq!(header(&after, "x-death"), None);
        assert_eq!(header(&after, "x-first-death-queue"), None);
        assert_eq!(header(&after, "x-delivery-count"), None);
        assert_eq!(
            header(&after, ORIGINAL_ROUTING_KEY_HEADER),
            Some(text("order.created"))
        );
        assert_eq!(header(&after, "tenant"), Some(text("acme")));
        assert_eq!(
            header(&after, REPLAY_COUNT_HEADER),
            Some(AMQPValue::LongLongInt(1))
        );
        assert_eq!(after.message_id(), before.message_id());
        assert_eq!(after.content_type(), before.content_type());
    }

    #[test]
    fn a_publish_mode_message_loses_its_count_and_keeps_its_key_header() {
        let before = parked(vec![
            ("warren-retries", AMQPValue::LongLongInt(3)),
            (ORIGINAL_ROUTING_KEY_HEADER, text("order.paid")),
            (REPLAY_COUNT_HEADER, AMQPValue::LongInt(2)),
            (
                "x-death",
                AMQPValue::FieldArray(FieldArray::from(vec![death(
                    "orders.email.retry.3",
                    "expired",
                    "3",
                    1,
                )])),
            ),
        ]);
        let after = rewrite(&before, &rule());
        assert_eq!(header(&after, "warren-retries"), None);
        assert_eq!(header(&after, "x-death"), None);
        assert_eq!(
            header(&after, ORIGINAL_ROUTING_KEY_HEADER),
            Some(text("order.paid"))
        );
        assert_eq!(
            header(&after, REPLAY_COUNT_HEADER),
            Some(AMQPValue::LongLongInt(3))
        );
    }

    #[test]
    fn a_message_without_headers_gets_only_the_replay_count() {
        let after = rewrite(&BasicProperties::default(), &rule());
        let headers = after.headers().as_ref().unwrap().inner().clone();
        assert_eq!(headers.len(), 1, "{headers:?}");
        assert_eq!(
            header(&after, REPLAY_COUNT_HEADER),
            Some(AMQPValue::LongLongInt(1))
        );
    }
}
