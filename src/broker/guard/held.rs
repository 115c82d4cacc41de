//! What an apply reads under its locks before its first write: what each queue it
//! deletes, replaces or strands holds at that moment ([`QueueHeld`]: exact counts from
//! a passive `queue.declare`, beside the statistics' unacknowledged and delayed ones),
//! and the permissions its user has. A read, never a write: its connections have a
//! reader's heartbeat. The deletion's own checks count a queue the same way
//! ([`declare_passive`]).

use std::collections::BTreeMap;
use std::time::Duration;

use lapin::Channel;
use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;

use super::{GuardedQueue, NOT_FOUND, channel, failed_as};
use crate::broker::amqp::{AmqpUse, answered, reply_of};
use crate::broker::{BrokerError, Client, segment};
use crate::model::{Permission, QueueType};

/// Above this many queues of one vhost to count, their statistics are read with one
/// listing of the vhost's queues instead of a request each: removing 1,000 consumers
/// (5,000 queues) spent 50 of its 59 s in those requests on RabbitMQ 3.10, one after
/// another, and a listing of those columns takes a fraction of a second.
const ONE_LISTING_ABOVE: usize = 32;

/// How many channels count one vhost's queues at once.
const COUNTS_IN_FLIGHT: usize = 8;

/// `queues`' places, by vhost.
fn by_vhost(queues: &[(String, String)]) -> BTreeMap<&str, Vec<usize>> {
    let mut by_vhost: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, (vhost, _)) in queues.iter().enumerate() {
        by_vhost.entry(vhost.as_str()).or_default().push(index);
    }
    by_vhost
}

/// What counting a queue sends, as errors name it.
const COUNT: &str = "queue.declare (passive, to count its messages)";

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
        let by_vhost = by_vhost(queues);
        let wait = self.endpoint.timeout;
        for (vhost, indices) in &by_vhost {
            let vhost = *vhost;
            let connection = self
                .amqp_connection(
                    vhost,
                    "warren: counting queues before an apply",
                    AmqpUse::Reads,
                )
                .await?;
            // A few channels, each counting its share of the queues one after another:
            // the answers are round trips, and one channel waits out each in turn.
            let share = indices.len().div_ceil(COUNTS_IN_FLIGHT).max(1);
            let counting = indices.chunks(share).map(|part| {
                let connection = &connection;
                async move {
                    let mut counted = Vec::with_capacity(part.len());
                    let mut open: Option<Channel> = None;
                    for &index in part {
                        let queue = GuardedQueue {
                            vhost,
                            name: &queues[index].1,
                            queue_type: QueueType::Classic,
                        };
                        let channel = match open.take() {
                            Some(channel) if channel.status().connected() => channel,
                            _ => self::channel(connection, &queue, COUNT, wait).await?,
                        };
                        counted.push((index, declare_passive(&channel, &queue, wait).await?));
                        open = Some(channel);
                    }
                    Ok::<_, BrokerError>(counted)
                }
            });
            let counted: Result<Vec<_>, BrokerError> = futures::future::join_all(counting)
                .await
                .into_iter()
                .collect();
            if let Ok(parts) = &counted {
                for &(index, queue) in parts.iter().flatten() {
                    held[index] = queue;
                }
            }
            crate::broker::amqp::close(&connection, "warren is done").await;
            counted?;
        }
        for (vhost, indices) in by_vhost {
            let listed = if indices.len() > ONE_LISTING_ABOVE {
                Some(self.held_back_in(vhost).await?)
            } else {
                None
            };
            for index in indices {
                let name = &queues[index].1;
                let Some(queue) = held[index].as_mut() else {
                    continue;
                };
                (queue.unacknowledged, queue.delayed) = match &listed {
                    Some(listed) => listed.get(name.as_str()).copied().unwrap_or_default(),
                    None => self.held_back(vhost, name).await?,
                };
            }
        }
        Ok(held)
    }

    /// [`Client::held_back`] for every queue of `vhost`, by name, from one listing.
    async fn held_back_in(&self, vhost: &str) -> Result<BTreeMap<String, (u64, u64)>, BrokerError> {
        let path = format!(
            "/api/queues/{}?columns=name,messages_unacknowledged,messages_delayed",
            segment(vhost)
        );
        let listed = self.get(&path).await?.unwrap_or_default();
        let count = |queue: &serde_json::Value, key: &str| queue[key].as_u64().unwrap_or(0);
        Ok(listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|queue| {
                let name = queue["name"].as_str()?;
                let counts = (
                    count(queue, "messages_unacknowledged"),
                    count(queue, "messages_delayed"),
                );
                Some((name.to_string(), counts))
            })
            .collect())
    }

    /// The statistics' counts of a queue's unacknowledged messages and of those it holds
    /// back for a delayed retry (0 before the first count, on a broker without delayed
    /// retry, or for a queue gone since).
    async fn held_back(&self, vhost: &str, name: &str) -> Result<(u64, u64), BrokerError> {
        let path = format!(
            "/api/queues/{}/{}?columns=messages_unacknowledged,messages_delayed",
            segment(vhost),
            segment(name)
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
        let path = format!("/api/users/{}/permissions", segment(user));
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
pub(super) async fn declare_passive(
    channel: &Channel,
    queue: &GuardedQueue<'_>,
    wait: Duration,
) -> Result<Option<QueueHeld>, BrokerError> {
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    match answered(
        wait,
        channel.queue_declare(queue.name.into(), passive, FieldTable::default()),
    )
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
