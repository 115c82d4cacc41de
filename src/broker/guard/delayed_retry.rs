//! The wait for the messages a quorum queue holds back for a delayed retry (RabbitMQ
//! 4.3, `mode: native`) before it is counted for its deletion: while they wait the
//! queue counts them nowhere a client can read at once, so a deletion, or a migration's
//! last count, first sits out the queue's longest delay ([`LONGEST_DELAY_WAITED`] at
//! most), read from the queue's arguments and the vhost's policies.

use std::time::Duration;

use lapin::Channel;
use serde_json::Value;

use super::held::declare_passive;
use super::{GuardedQueue, refused};
use crate::broker::{BrokerError, Client, segment};
use crate::model::effective::CompiledPolicies;
use crate::model::{Policy, QueueType, TargetVersion};

/// The longest delayed-retry wait warren sits out before it counts a quorum queue it
/// deletes (see `Client::wait_out_delayed_retries`): a minute, so that removing a
/// consumer with short native retries needs no flag, and an apply never stalls for long.
pub const LONGEST_DELAY_WAITED: Duration = Duration::from_secs(60);

/// Added to a wait: the broker delivers a waiting message again at the end of its wait,
/// give or take its timer.
const DELAY_MARGIN: Duration = Duration::from_secs(1);

impl Client {
    /// Sits out the longest wait of a quorum queue that holds returned messages back
    /// before it delivers them again (RabbitMQ 4.3's delayed retry, `mode: native`):
    /// while a message waits, the queue counts it nowhere a client can read at once (a
    /// passive `queue.declare` says 0 and `queue.delete` would drop it; measured on
    /// 4.3.6), but once the wait is over it is ready and counted. Called with the
    /// bindings into the queue removed: with no consumer, nothing new can start to
    /// wait. A queue whose wait is longer than [`LONGEST_DELAY_WAITED`], or unknown, is
    /// refused.
    pub(super) async fn wait_out_delayed_retries(
        &self,
        channel: &Channel,
        queue: &GuardedQueue<'_>,
    ) -> Result<(), BrokerError> {
        let Some(longest) = self.delayed_retry_max(queue).await? else {
            return Ok(());
        };
        match declare_passive(channel, queue, self.endpoint.timeout).await? {
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
    pub(in crate::broker) async fn sit_out_delayed_retries(
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
            segment(queue.vhost),
            segment(queue.name)
        );
        let Some(live) = self.get(&path).await? else {
            return Ok(None);
        };
        let policies: Vec<Policy> = match self
            .get(&format!("/api/policies/{}", segment(queue.vhost)))
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
}
