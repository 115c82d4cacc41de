//! The apply lock, held by the broker itself.
//!
//! The management API has no compare-and-set, so a lock written into a parameter and
//! read back only narrows a race. An exclusive queue closes it: the broker lets one
//! connection at a time declare it (a second declare is refused with 405
//! RESOURCE_LOCKED, atomically, on every node of a cluster) and deletes it the moment
//! that connection dies — milliseconds after its process is killed, about three
//! heartbeats after it freezes. Each lock is such a queue in warren's own vhost
//! [`LOCK_VHOST`], declared over one AMQP connection that lives as long as the apply.
//!
//! An exclusive queue cannot be made over HTTP (the flag is ignored), so the lock
//! needs the broker's AMQP port; without it an apply stops before changing anything.

use std::sync::Arc;
use std::time::Duration;

use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::amqp::{
    self, CloseReason, ConnectFailure, LOCK_HEARTBEAT_SECS, NoAmqp, answered, reply_of,
};
use super::fence::Fence;
use super::{BrokerError, Client, segment};
use crate::model::LOCK_VHOST;
use crate::model::record::in_words;
use crate::model::redact::redact_url;

/// The AMQP reply code of a declare refused because another connection holds the queue.
const RESOURCE_LOCKED: u16 = 405;

/// How often a waiting apply tries again.
const RETRY_EVERY: Duration = Duration::from_millis(250);

/// A holder name for this process: host, pid and a random token. Every command that
/// takes locks (apply, repair, replay) names itself so.
pub fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown-host".into());
    format!(
        "{host}:{}:{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// One lock: what it protects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockName {
    /// The objects with no vhost that records claim: users, global parameters.
    /// Sorted first, so that applies take locks in one order.
    BrokerWide,
    /// One spec's record.
    Spec(String),
    /// One vhost's objects.
    Vhost(String),
}

impl LockName {
    /// The exclusive queue that is the lock (names longer than a queue name may be
    /// are replaced by their digest).
    pub fn queue(&self) -> String {
        let (kind, name) = match self {
            LockName::BrokerWide => return "broker-wide".into(),
            LockName::Spec(spec) => ("spec", spec),
            LockName::Vhost(vhost) => ("vhost", vhost),
        };
        let queue = format!("{kind}.{name}");
        if queue.len() <= 255 {
            queue
        } else {
            let digest = Sha256::digest(name.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("{kind}.sha256.{hex}")
        }
    }

    /// The lock in words.
    pub fn describe(&self) -> String {
        match self {
            LockName::BrokerWide => "the broker-wide objects (users, global parameters)".into(),
            LockName::Spec(spec) => format!("spec `{spec}`"),
            LockName::Vhost(vhost) => format!("vhost `{vhost}`"),
        }
    }
}

/// Locks held by this process until [`BrokerLock::release`] or its death.
pub struct BrokerLock {
    connection: Connection,
    names: Vec<LockName>,
    /// The broker's confirmation that the locks are still this process's, also
    /// installed in the client that took them: every write it sends asks it first.
    fence: Arc<Fence>,
}

impl BrokerLock {
    /// The locks held.
    pub fn names(&self) -> &[LockName] {
        &self.names
    }

    /// Gives the locks back (closing the connection deletes the queues).
    pub async fn release(self) {
        super::amqp::close(&self.connection, "warren apply done").await;
    }
}

/// Who holds a lock.
struct Holder {
    /// The holder's name, as `warren unlock --holder` takes it.
    id: String,
    /// For people.
    described: String,
}

/// The queue arguments that name a lock's holder and since when it holds it.
const HOLDER_ARGUMENT: &str = "x-warren-holder";
const SINCE_ARGUMENT: &str = "x-warren-since";

fn holder_arguments(holder: &str) -> FieldTable {
    let mut arguments = FieldTable::default();
    arguments.insert(
        HOLDER_ARGUMENT.into(),
        lapin::types::AMQPValue::LongString(holder.into()),
    );
    arguments.insert(
        SINCE_ARGUMENT.into(),
        lapin::types::AMQPValue::LongLongInt(crate::model::record::now() as i64),
    );
    arguments
}

impl Client {
    /// Takes `names` for `holder`, waiting up to `wait` for locks other applies hold.
    /// Locks are taken in one global order, so two waiting applies never deadlock.
    pub async fn lock(
        &self,
        names: &[LockName],
        holder: &str,
        wait: Duration,
    ) -> Result<BrokerLock, BrokerError> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut names = names.to_vec();
        names.sort();
        names.dedup();
        self.ensure_lock_vhost().await?;
        let connection = self.lock_connection(holder).await?;
        let closed_because = CloseReason::watch(&connection);
        let wait_each = self.endpoint.timeout;
        let unavailable = |reason: String| BrokerError::LockInterrupted {
            reason: reason.into(),
        };
        let mut channel = None;
        for name in &names {
            loop {
                let open = match channel.take() {
                    Some(open) => open,
                    None => answered(wait_each, connection.create_channel())
                        .await
                        .map_err(|e| unavailable(e.to_string()))?,
                };
                let options = QueueDeclareOptions {
                    exclusive: true,
                    ..QueueDeclareOptions::default()
                };
                let declared = answered(
                    wait_each,
                    open.queue_declare(
                        name.queue().as_str().into(),
                        options,
                        holder_arguments(holder),
                    ),
                )
                .await;
                match declared {
                    Ok(_) => {
                        channel = Some(open);
                        break;
                    }
                    // The refusal closed the channel; the connection stays.
                    Err(error)
                        if reply_of(&error).is_some_and(|(code, _)| code == RESOURCE_LOCKED) =>
                    {
                        let now = tokio::time::Instant::now();
                        if now >= deadline {
                            super::amqp::close(&connection, "lock not taken").await;
                            return Err(self.locked(name).await);
                        }
                        tokio::time::sleep(RETRY_EVERY.min(deadline - now)).await;
                    }
                    Err(error) => {
                        super::amqp::close(&connection, "lock not taken").await;
                        // A refusal (no configure permission on the lock vhost) is a
                        // set-up problem; anything else is the connection failing.
                        return Err(match reply_of(&error) {
                            Some((code, text)) if code != RESOURCE_LOCKED => {
                                BrokerError::LockUnavailable {
                                    url: "AMQP".into(),
                                    vhost: LOCK_VHOST.into(),
                                    reason: format!("{code} {text}").into(),
                                }
                            }
                            _ => unavailable(error.to_string()),
                        });
                    }
                }
            }
        }
        let Some(first) = names.first() else {
            super::amqp::close(&connection, "no lock needed").await;
            return Err(unavailable("no lock was asked for".into()));
        };
        // A channel of its own: a confirmation never waits behind anything else.
        let confirming = match answered(wait_each, connection.create_channel()).await {
            Ok(confirming) => confirming,
            Err(error) => {
                super::amqp::close(&connection, "lock not taken").await;
                return Err(unavailable(error.to_string()));
            }
        };
        let fence = Arc::new(Fence::new(confirming, first.queue(), closed_because));
        self.fence_writes(Some(Arc::clone(&fence)));
        Ok(BrokerLock {
            connection,
            names,
            fence,
        })
    }

    /// Whether the broker holds `lock` for this process now, asked of the broker over
    /// the lock connection itself (see [`Fence`]): the client's own view of its
    /// connection lags (a process thawed after a freeze still believes in a connection
    /// the broker closed long ago). Any doubt is "not held".
    pub async fn still_holds(&self, lock: &BrokerLock) -> bool {
        lock.fence.confirm(false).await.is_ok()
    }

    /// Closes the connection of the apply that holds `name`, when it is `holder`
    /// (as `warren unlock` is told): for an apply that is stuck but not dead. Its
    /// locks are freed by the broker at once. `None` when nobody holds `name`.
    pub async fn break_lock(
        &self,
        name: &LockName,
        holder: &str,
    ) -> Result<Option<String>, BrokerError> {
        let Some(found) = self.holder_of(name).await? else {
            return Ok(None);
        };
        if found.id != holder {
            return Err(BrokerError::Locked {
                what: name.describe(),
                holder: found.described,
                holder_id: found.id,
            });
        }
        let Some(connection) = self.connection_of(holder).await? else {
            return Err(BrokerError::Setup(
                format!(
                    "the broker does not list the connection of {} yet (its statistics lag by a few seconds): try again shortly",
                    found.described
                )
                .into(),
            ));
        };
        let path = format!("/api/connections/{}", segment(&connection));
        self.delete(&path).await?;
        Ok(Some(found.described))
    }

    /// The error for a lock another apply holds, naming it as well as the broker can.
    async fn locked(&self, name: &LockName) -> BrokerError {
        let holder = self.holder_of(name).await.ok().flatten();
        let (described, id) = match holder {
            Some(holder) => (holder.described, holder.id),
            None => (
                "an apply that released it just now (try again)".into(),
                "HOLDER".into(),
            ),
        };
        BrokerError::Locked {
            what: name.describe(),
            holder: described,
            holder_id: id,
        }
    }

    /// Who holds `name`: the holder named in its queue's arguments (part of the
    /// queue itself, so shown at once, unlike connection statistics).
    async fn holder_of(&self, name: &LockName) -> Result<Option<Holder>, BrokerError> {
        let path = format!(
            "/api/queues/{}/{}",
            segment(LOCK_VHOST),
            segment(&name.queue())
        );
        let Some(queue) = self.get(&path).await? else {
            return Ok(None);
        };
        let id = queue["arguments"][HOLDER_ARGUMENT]
            .as_str()
            .unwrap_or("an unknown holder")
            .to_string();
        let held_for = queue["arguments"][SINCE_ARGUMENT]
            .as_u64()
            .map(|since| {
                let now = crate::model::record::now();
                format!(", holding it for {}", in_words(now.saturating_sub(since)))
            })
            .unwrap_or_default();
        let mut parts = id.splitn(3, ':');
        let described = match (parts.next(), parts.next(), parts.next()) {
            (Some(host), Some(process), Some(_)) => {
                format!("{id} (process {process} on host {host}{held_for})")
            }
            _ => format!("{id}{held_for}"),
        };
        Ok(Some(Holder { id, described }))
    }

    /// The management API's name of the connection `holder` made (it names its
    /// connections after itself), if the broker lists it yet.
    async fn connection_of(&self, holder: &str) -> Result<Option<String>, BrokerError> {
        let path = format!(
            "/api/vhosts/{}/connections?columns=name,client_properties",
            segment(LOCK_VHOST)
        );
        let connections = self.get(&path).await?.unwrap_or_default();
        Ok(connections
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["client_properties"]["connection_name"] == holder)
            .and_then(|c| c["name"].as_str())
            .map(str::to_string))
    }

    /// Makes warren's lock vhost when it is missing, and lets this user declare its
    /// locks there when it may not yet.
    async fn ensure_lock_vhost(&self) -> Result<(), BrokerError> {
        let vhost = format!("/api/vhosts/{}", segment(LOCK_VHOST));
        if self.get(&vhost).await?.is_none() {
            let description = "warren's apply locks: exclusive queues, never messages";
            self.put(&vhost, &json!({ "description": description }))
                .await?;
        }
        let permission = format!(
            "/api/permissions/{}/{}",
            segment(LOCK_VHOST),
            segment(self.user())
        );
        if self.get(&permission).await?.is_none() {
            self.put(
                &permission,
                &json!({ "configure": ".*", "write": "", "read": "" }),
            )
            .await?;
        }
        Ok(())
    }

    /// The AMQP connection that holds the locks: named after the holder (so the
    /// management API shows who holds a lock) and with a short heartbeat (so a frozen
    /// holder loses its locks in seconds). A new vhost may take a moment to start on
    /// every node: connections the broker refuses are tried again until `--timeout`.
    /// A port nothing listens on is an error at once ([`amqp::connect`] tells it
    /// within seconds on any load): the broker answered over HTTP a moment ago, so the
    /// AMQP URL is wrong, and waiting out `--timeout` would only delay saying so.
    async fn lock_connection(&self, holder: &str) -> Result<Connection, BrokerError> {
        let url = self.amqp_url().await.map_err(|NoAmqp { url, reason }| {
            BrokerError::LockUnavailable {
                url,
                vhost: LOCK_VHOST.into(),
                reason: reason.into(),
            }
        })?;
        let shown = redact_url(url.as_str());
        let mut with_login = self.amqp_login(&url, LOCK_VHOST);
        with_login.set_query(Some(&format!("heartbeat={LOCK_HEARTBEAT_SECS}")));
        let deadline = tokio::time::Instant::now() + self.endpoint.timeout;
        loop {
            let properties = ConnectionProperties::default().with_connection_name(holder.into());
            let failure = match amqp::connect(&with_login, properties, deadline).await {
                Ok(connection) => return Ok(connection),
                Err(failure) => failure,
            };
            let final_failure = matches!(
                failure,
                ConnectFailure::NothingListens(_) | ConnectFailure::NoAnswer
            );
            if final_failure || tokio::time::Instant::now() + RETRY_EVERY * 2 > deadline {
                return Err(BrokerError::LockUnavailable {
                    url: shown,
                    vhost: LOCK_VHOST.into(),
                    reason: failure.reason(self.endpoint.timeout).into(),
                });
            }
            tokio::time::sleep(RETRY_EVERY * 2).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_sort_broker_wide_first_and_long_names_fit_a_queue_name() {
        let mut names = [
            LockName::Vhost("a".into()),
            LockName::Spec("z".into()),
            LockName::BrokerWide,
        ];
        names.sort();
        assert_eq!(names[0], LockName::BrokerWide);
        assert_eq!(LockName::Spec("shop".into()).queue(), "spec.shop");
        let long = LockName::Vhost("v".repeat(300)).queue();
        assert!(
            long.len() <= 255 && long.starts_with("vhost.sha256."),
            "{long}"
        );
    }
}
