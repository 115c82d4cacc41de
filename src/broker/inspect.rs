//! Reading the death history of messages that wait in delay queues, for `warren status
//! --inspect`: how often the broker has dead-lettered each of them, and from which
//! queue, tells a consumer that follows its retry contract from one that sends its
//! messages round the first tier without end.
//!
//! AMQP has no way to look at a message without taking it. Each message is taken with
//! `basic.get` (unacknowledged) and, once the queue's first messages have been read,
//! all are given back at once with `basic.nack` (requeue, multiple). Given back, a
//! classic queue's message goes back to its place and keeps its expiry; a quorum
//! queue's goes back to the head. A delay queue has no consumers, so nothing else is
//! delivered in between. The caller chooses the queues: a quorum queue counts a nack
//! toward its delivery limit before RabbitMQ 4.3, so it is not read there (status
//! decides, `status::inspection`). The connection is a writer's (short heartbeat): a
//! process frozen with messages in hand loses the connection within seconds, and the
//! broker gives the messages back with it.

use std::time::Duration;

use lapin::options::{BasicGetOptions, BasicNackOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{Channel, Connection};

use super::amqp::answered;
use super::error::RedactedText;
use super::replay::copy::{as_integer, as_text};
use super::{BrokerError, Client};
use crate::model::dead_letter::{Death, DeathReason};
use crate::model::headers::X_DEATH;

/// The messages read at the head of one queue: each one's deaths, head first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingDeaths {
    /// The vhost.
    pub vhost: String,
    /// The queue.
    pub queue: String,
    /// Each message read, its deaths as `x-death` lists them (most recent first).
    pub messages: Vec<Vec<Death>>,
}

impl Client {
    /// Reads up to `limit` messages at the head of each of `queues` in `vhost` and
    /// gives them back (see the module): their deaths, queue by queue, in order. A
    /// queue that does not exist reads as no messages.
    pub async fn waiting_deaths(
        &self,
        vhost: &str,
        queues: &[&str],
        limit: usize,
    ) -> Result<Vec<WaitingDeaths>, BrokerError> {
        let failed = |queue: &str, error: &dyn std::fmt::Display| BrokerError::Inspect {
            vhost: vhost.to_string(),
            queue: queue.to_string(),
            reason: RedactedText::new(&error.to_string()),
        };
        let connection = self
            .amqp_connection(
                vhost,
                "warren status (reading waiting messages)",
                super::amqp::AmqpUse::Writes,
            )
            .await
            .map_err(|error| match error {
                // The connection's own error speaks of the checks at deletion.
                BrokerError::Amqp { url, reason, .. } => BrokerError::Inspect {
                    vhost: vhost.to_string(),
                    queue: queues.first().copied().unwrap_or_default().to_string(),
                    reason: RedactedText::new(&format!("no AMQP connection at {url}: {reason}")),
                },
                other => other,
            })?;
        let mut read = Vec::new();
        for queue in queues {
            match read_head(&connection, queue, limit, self.endpoint.timeout).await {
                Ok(messages) => read.push(WaitingDeaths {
                    vhost: vhost.to_string(),
                    queue: (*queue).to_string(),
                    messages,
                }),
                Err(error) => {
                    super::amqp::close(&connection, "warren is done").await;
                    return Err(failed(queue, &error));
                }
            }
        }
        super::amqp::close(&connection, "warren is done").await;
        Ok(read)
    }
}

/// The deaths of up to `limit` messages at the head of `queue`, given back before the
/// answer. A queue the broker does not have (its channel closed with 404) reads as
/// none. Each request waits at most `wait` (`--timeout`) for the broker's answer.
async fn read_head(
    connection: &Connection,
    queue: &str,
    limit: usize,
    wait: Duration,
) -> Result<Vec<Vec<Death>>, lapin::Error> {
    let channel = answered(wait, connection.create_channel()).await?;
    let mut messages = Vec::new();
    let mut last_tag = None;
    let outcome = take(&channel, queue, limit, wait, &mut messages, &mut last_tag).await;
    let given_back = match last_tag {
        Some(tag) => {
            let options = BasicNackOptions {
                multiple: true,
                requeue: true,
            };
            answered(wait, channel.basic_nack(tag, options)).await
        }
        None => Ok(()),
    };
    super::amqp::close_channel(&channel).await;
    match outcome {
        Err(error) if is_not_found(&error) => Ok(Vec::new()),
        Err(error) => Err(error),
        Ok(()) => given_back.map(|()| messages),
    }
}

/// Takes messages from `queue` until `limit` or an empty queue, recording each one's
/// deaths and the last delivery tag.
async fn take(
    channel: &Channel,
    queue: &str,
    limit: usize,
    wait: Duration,
    messages: &mut Vec<Vec<Death>>,
    last_tag: &mut Option<u64>,
) -> Result<(), lapin::Error> {
    while messages.len() < limit {
        let get = channel.basic_get(queue.into(), BasicGetOptions { no_ack: false });
        let got = answered(wait, get).await?;
        let Some(message) = got else {
            break;
        };
        *last_tag = Some(message.delivery.delivery_tag);
        messages.push(deaths_of(message.delivery.properties.headers().as_ref()));
    }
    Ok(())
}

/// Whether the broker closed the channel because the queue does not exist.
fn is_not_found(error: &lapin::Error) -> bool {
    matches!(super::amqp::reply_of(error), Some((404, _)))
}

/// The deaths a message's `x-death` header lists, most recent first; entries of a
/// reason warren does not know, or without a queue or count, are left out.
pub(super) fn deaths_of(headers: Option<&FieldTable>) -> Vec<Death> {
    let Some(AMQPValue::FieldArray(entries)) =
        headers.and_then(|h| h.inner().get(&ShortString::from(X_DEATH)))
    else {
        return Vec::new();
    };
    entries
        .as_slice()
        .iter()
        .filter_map(|entry| {
            let AMQPValue::FieldTable(entry) = entry else {
                return None;
            };
            let fields = entry.inner();
            let field = |key: &str| fields.get(&ShortString::from(key));
            let reason = match as_text(field("reason")?)?.as_str() {
                "rejected" => DeathReason::Rejected,
                "expired" => DeathReason::Expired,
                "maxlen" => DeathReason::Maxlen,
                "delivery_limit" => DeathReason::DeliveryLimit,
                _ => return None,
            };
            let count = u32::try_from(as_integer(field("count")?)?).ok()?;
            Some(Death {
                queue: as_text(field("queue")?)?,
                reason,
                count,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use lapin::types::{FieldArray, LongString};

    use super::*;

    fn text(value: &str) -> AMQPValue {
        AMQPValue::LongString(LongString::from(value.as_bytes().to_vec()))
    }

    fn entry(queue: &str, reason: &str, count: AMQPValue) -> AMQPValue {
        let mut fields = FieldTable::default();
        fields.insert("queue".into(), text(queue));
        fields.insert("reason".into(), text(reason));
        fields.insert("count".into(), count);
        AMQPValue::FieldTable(fields)
    }

    #[test]
    fn x_death_reads_as_deaths_most_recent_first() {
        let mut headers = FieldTable::default();
        headers.insert(
            X_DEATH.into(),
            AMQPValue::FieldArray(FieldArray::from(vec![
                entry("s.c.retry.1", "expired", AMQPValue::LongLongInt(4)),
                entry("s.c", "rejected", AMQPValue::LongLongInt(5)),
                entry("s.c", "some_new_reason", AMQPValue::LongLongInt(1)),
                entry("s.c", "maxlen", AMQPValue::ShortString("1".into())),
            ])),
        );
        assert_eq!(
            deaths_of(Some(&headers)),
            vec![
                Death {
                    queue: "s.c.retry.1".into(),
                    reason: DeathReason::Expired,
                    count: 4
                },
                Death {
                    queue: "s.c".into(),
                    reason: DeathReason::Rejected,
                    count: 5
                },
            ]
        );
    }

    #[test]
    fn a_message_without_deaths_reads_as_none() {
        assert_eq!(deaths_of(None), Vec::new());
        assert_eq!(deaths_of(Some(&FieldTable::default())), Vec::new());
    }
}
