//! Reading queue statistics for `warren status`: one listing of queues per vhost,
//! with only the columns status shows, whatever the number of consumers.

use serde::Deserialize;

use super::live::{futures_join_all, list};
use super::{BrokerError, Client, segment};
use crate::model::Policy;

/// The columns of the statistics listing. Dotted names pick a field inside an object
/// (`message_stats.publish_details.rate`); RabbitMQ 3.10 and 4.0 both take them, and
/// leave out a column the queue has no value for (a queue nothing was published to
/// has no `message_stats`; a queue whose statistics have not been emitted yet, in its
/// first seconds, has no `messages`). `head_message_timestamp` is there for classic
/// queues only, and `null` unless the oldest message carries a timestamp property.
const STATISTICS_LISTING: &str = "columns=name,messages,messages_ready,messages_unacknowledged,messages_delayed,consumers,message_stats.publish_details.rate,message_stats.deliver_get_details.rate,head_message_timestamp";

/// One queue's statistics as the broker last emitted them (every few seconds:
/// `collect_statistics_interval`, 5 s by default). A field the broker did not give is
/// `None`, never a guess.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct QueueStatistics {
    /// Vhost (filled in by the read: the listing is per vhost).
    #[serde(skip)]
    pub vhost: String,
    /// Queue name.
    pub name: String,
    /// Ready and unacknowledged messages.
    #[serde(default)]
    pub messages: Option<u64>,
    /// Messages ready for delivery.
    #[serde(default)]
    pub messages_ready: Option<u64>,
    /// Messages delivered and not yet acknowledged.
    #[serde(default)]
    pub messages_unacknowledged: Option<u64>,
    /// Messages a quorum queue holds back for a delayed retry (RabbitMQ 4.3; absent
    /// before). Counted in `messages`, in neither `messages_ready` nor
    /// `messages_unacknowledged`.
    #[serde(default)]
    pub messages_delayed: Option<u64>,
    /// Consumers attached.
    #[serde(default)]
    pub consumers: Option<u64>,
    /// Publish and delivery rates.
    #[serde(default)]
    pub message_stats: Option<MessageRates>,
    /// Timestamp property (seconds since the epoch) of the oldest ready message.
    #[serde(default, deserialize_with = "number_or_none")]
    pub head_message_timestamp: Option<i64>,
}

/// The rates of `message_stats` status reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct MessageRates {
    /// Messages published to the queue per second.
    #[serde(default)]
    pub publish_details: Option<Rate>,
    /// Messages delivered to consumers or fetched per second.
    #[serde(default)]
    pub deliver_get_details: Option<Rate>,
}

/// A rate of `message_stats`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Rate {
    /// Per second, averaged by the broker over its last samples.
    #[serde(default)]
    pub rate: Option<f64>,
}

/// A number, or `None` for anything else the broker writes where it has none (`null`,
/// or `""` in some versions' listings).
fn number_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(serde_json::Value::deserialize(d)?.as_i64())
}

impl QueueStatistics {
    /// Messages published per second, when the broker has the figure.
    pub fn publish_rate(&self) -> Option<f64> {
        self.message_stats.as_ref()?.publish_details.as_ref()?.rate
    }

    /// Messages delivered (or fetched) per second, when the broker has the figure.
    pub fn deliver_rate(&self) -> Option<f64> {
        self.message_stats
            .as_ref()?
            .deliver_get_details
            .as_ref()?
            .rate
    }
}

impl Client {
    /// The statistics of every queue of each vhost: one request per vhost,
    /// concurrently. A vhost that does not exist has no queues.
    pub async fn queue_statistics(
        &self,
        vhosts: &[String],
    ) -> Result<Vec<QueueStatistics>, BrokerError> {
        let reads = vhosts.iter().map(|vhost| async move {
            let path = format!("/api/queues/{}?{STATISTICS_LISTING}", segment(vhost));
            let mut queues: Vec<QueueStatistics> = list(self, path).await?;
            for queue in &mut queues {
                queue.vhost = vhost.clone();
            }
            Ok::<_, BrokerError>(queues)
        });
        let mut all = Vec::new();
        for read in futures_join_all(reads).await {
            all.extend(read?);
        }
        Ok(all)
    }

    /// The user policies of each vhost: one request per vhost, concurrently. They are
    /// definitions, current the moment they are read (unlike a queue's statistics,
    /// whose `policy` is emitted every few seconds).
    pub async fn policies(&self, vhosts: &[String]) -> Result<Vec<Policy>, BrokerError> {
        self.policies_under("policies", vhosts).await
    }

    /// The operator policies of each vhost, as [`Client::policies`] reads the user ones.
    pub async fn operator_policies(&self, vhosts: &[String]) -> Result<Vec<Policy>, BrokerError> {
        self.policies_under("operator-policies", vhosts).await
    }

    async fn policies_under(
        &self,
        endpoint: &str,
        vhosts: &[String],
    ) -> Result<Vec<Policy>, BrokerError> {
        let reads = vhosts.iter().map(|vhost| async move {
            let path = format!("/api/{endpoint}/{}", segment(vhost));
            let mut policies: Vec<Policy> = list(self, path).await?;
            for policy in &mut policies {
                policy.vhost = vhost.clone();
            }
            Ok::<_, BrokerError>(policies)
        });
        let mut all = Vec::new();
        for read in futures_join_all(reads).await {
            all.extend(read?);
        }
        Ok(all)
    }
}
