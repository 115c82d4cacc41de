//! The requests of a queue migration (`apply --migrate`, see `apply::migrate`): reading
//! one queue's bindings and counts, declaring and binding the temporary queue and its
//! fanout exchange, the shovel that moves messages, and deleting a drained queue.
//!
//! Messages move with a dynamic shovel (the `rabbitmq_shovel` plugin) in
//! `on-confirm` mode: the broker removes a message from the source only once the
//! destination has confirmed it, so a crash of warren, the shovel or the broker in the
//! middle loses nothing (a message can arrive twice). The shovel publishes to a fanout
//! exchange bound to the destination queue alone, which keeps each message's routing
//! key (`dest-queue` would replace it with the queue's name).

use std::collections::BTreeMap;
use std::time::Duration;

use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use reqwest::Method;
use serde_json::{Value, json};

use super::amqp::reply_of;
use super::{BrokerError, Client, segment};
use crate::model::QueueType;

const NOT_FOUND: u16 = 404;

/// Whether the broker's refusal of a shovel parameter says it has no shovel component.
fn names_missing_shovels(refusal: &str) -> bool {
    refusal.contains("component") && refusal.contains("not found")
}

/// Queue arguments (JSON, as in definitions) as an AMQP field table.
fn field_table(arguments: &Value) -> FieldTable {
    let mut table = FieldTable::default();
    for (key, value) in arguments.as_object().into_iter().flatten() {
        let value = match value {
            Value::String(text) => AMQPValue::LongString(text.as_str().into()),
            Value::Bool(flag) => AMQPValue::Boolean(*flag),
            Value::Number(n) => match n.as_i64() {
                Some(integer) => AMQPValue::LongLongInt(integer),
                None => AMQPValue::Double(n.as_f64().unwrap_or_default()),
            },
            // No queue argument takes a list, a map or null.
            _ => continue,
        };
        table.insert(key.as_str().into(), value);
    }
    table
}
const PRECONDITION_FAILED: u16 = 406;

/// A binding into a queue, as the broker lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueBinding {
    /// The exchange it is from.
    pub source: String,
    /// Its routing key.
    pub routing_key: String,
    /// Its arguments.
    pub arguments: Value,
    /// The broker's handle, to delete it.
    pub properties_key: String,
}

impl QueueBinding {
    /// A binding as `GET /api/bindings/…` lists it; `None` for the default
    /// exchange's implicit binding, which follows the queue's name and cannot be
    /// removed.
    fn of_listed(listed: &Value) -> Option<QueueBinding> {
        let source = listed["source"].as_str().filter(|s| !s.is_empty())?;
        Some(QueueBinding {
            source: source.to_string(),
            routing_key: listed["routing_key"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            arguments: listed["arguments"].clone(),
            properties_key: listed["properties_key"].as_str().unwrap_or("~").to_string(),
        })
    }
}

/// A queue's counts from the broker's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueCounts {
    /// Messages ready for delivery.
    pub ready: Option<u64>,
    /// Messages delivered and not yet acknowledged.
    pub unacknowledged: Option<u64>,
    /// Consumers.
    pub consumers: Option<u64>,
}

/// What a drained queue's deletion found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// Deleted (or already gone).
    Deleted,
    /// The broker found ready messages in it: not deleted.
    NotEmpty,
}

impl Client {
    /// A queue's declaration (`durable`, `auto_delete`, `arguments`, `type`), `None`
    /// when it does not exist.
    pub async fn queue(&self, vhost: &str, name: &str) -> Result<Option<Value>, BrokerError> {
        let path = format!(
            "/api/queues/{}/{}?disable_stats=true",
            segment(vhost),
            segment(name)
        );
        self.get(&path).await
    }

    /// A queue's message and consumer counts as the broker's statistics last counted
    /// them (they lag by up to a statistics interval; each is `None` before the first
    /// count); `None` when the queue does not exist.
    pub async fn queue_counts(
        &self,
        vhost: &str,
        name: &str,
    ) -> Result<Option<QueueCounts>, BrokerError> {
        let path = format!("/api/queues/{}/{}", segment(vhost), segment(name));
        Ok(self.get(&path).await?.map(|queue| QueueCounts {
            ready: queue["messages_ready"].as_u64(),
            unacknowledged: queue["messages_unacknowledged"].as_u64(),
            consumers: queue["consumers"].as_u64(),
        }))
    }

    /// Declares a queue (normal form: `durable`, `auto_delete`, `arguments`) over
    /// AMQP; an existing queue with the same declaration is left as it is.
    ///
    /// Not over HTTP: when the client of a management request goes away (warren
    /// killed), RabbitMQ 3.10 can stop a quorum queue's declaration half way, leaving
    /// a queue that exists but never answers (its replica never started), which would
    /// take the migrated messages' traffic. A channel finishes a declaration it began.
    pub async fn declare_queue(
        &self,
        vhost: &str,
        name: &str,
        value: &Value,
    ) -> Result<(), BrokerError> {
        let what = format!("queue.declare {name:?} in vhost {vhost:?}");
        let connection = self
            .amqp_connection(
                vhost,
                "warren: queue migration",
                super::amqp::AmqpUse::Writes,
            )
            .await?;
        let declared = async {
            let channel = connection.create_channel().await?;
            declare_on(&channel, name, value).await
        };
        let timeout = self.endpoint.timeout;
        let result = match tokio::time::timeout(timeout, declared).await {
            Ok(result) => result.map_err(|error| amqp_error(&what, &error)),
            Err(_) => Err(no_answer(&what, timeout)),
        };
        super::amqp::close(&connection, "warren is done").await;
        result
    }

    /// Declares the durable fanout exchange a migration's shovel publishes to.
    pub async fn declare_fanout(&self, vhost: &str, name: &str) -> Result<(), BrokerError> {
        let body = json!({"type": "fanout", "durable": true, "auto_delete": false,
                          "internal": false, "arguments": {}});
        let path = format!("/api/exchanges/{}/{}", segment(vhost), segment(name));
        self.put(&path, &body).await
    }

    /// Deletes an exchange; one already gone is fine.
    pub async fn delete_exchange(&self, vhost: &str, name: &str) -> Result<(), BrokerError> {
        let path = format!("/api/exchanges/{}/{}", segment(vhost), segment(name));
        self.delete(&path).await
    }

    /// The bindings into a queue from named exchanges (the default exchange's implicit
    /// binding is not one: it follows the queue's name).
    pub async fn queue_bindings(
        &self,
        vhost: &str,
        queue: &str,
    ) -> Result<Vec<QueueBinding>, BrokerError> {
        let path = format!("/api/queues/{}/{}/bindings", segment(vhost), segment(queue));
        let listed = self.get(&path).await?.unwrap_or(json!([]));
        let entries = listed.as_array().ok_or_else(|| BrokerError::Decode {
            path: path.clone(),
            reason: "not a list".into(),
        })?;
        Ok(entries.iter().filter_map(QueueBinding::of_listed).collect())
    }

    /// The bindings into each queue of `vhost` from named exchanges, by queue name:
    /// one listing of the vhost's bindings (`GET /api/bindings/{vhost}`).
    pub async fn bindings_into_queues(
        &self,
        vhost: &str,
    ) -> Result<BTreeMap<String, Vec<QueueBinding>>, BrokerError> {
        let path = format!("/api/bindings/{}", segment(vhost));
        let listed = self.get(&path).await?.unwrap_or(json!([]));
        let entries = listed.as_array().ok_or_else(|| BrokerError::Decode {
            path: path.clone(),
            reason: "not a list".into(),
        })?;
        let mut into: BTreeMap<String, Vec<QueueBinding>> = BTreeMap::new();
        for entry in entries {
            if entry["destination_type"] != "queue" {
                continue;
            }
            if let (Some(queue), Some(binding)) = (
                entry["destination"].as_str(),
                QueueBinding::of_listed(entry),
            ) {
                into.entry(queue.to_string()).or_default().push(binding);
            }
        }
        Ok(into)
    }

    /// Binds a queue to an exchange; binding it again with the same key and
    /// arguments changes nothing.
    pub async fn bind_queue(
        &self,
        vhost: &str,
        source: &str,
        queue: &str,
        routing_key: &str,
        arguments: &Value,
    ) -> Result<(), BrokerError> {
        let path = format!(
            "/api/bindings/{}/e/{}/q/{}",
            segment(vhost),
            segment(source),
            segment(queue)
        );
        let arguments = if arguments.is_object() {
            arguments.clone()
        } else {
            json!({})
        };
        self.post(
            &path,
            &json!({"routing_key": routing_key, "arguments": arguments}),
        )
        .await
    }

    /// Deletes a binding into a queue by its handle; one already gone is fine.
    pub async fn unbind_queue(
        &self,
        vhost: &str,
        queue: &str,
        binding: &QueueBinding,
    ) -> Result<(), BrokerError> {
        let path = format!(
            "/api/bindings/{}/e/{}/q/{}/{}",
            segment(vhost),
            segment(&binding.source),
            segment(queue),
            segment(&binding.properties_key)
        );
        self.delete(&path).await
    }

    /// Whether the broker has the shovel plugin, asked in `vhost` without making
    /// anything: a shovel parameter with an empty value is refused either way, and the
    /// refusal says whether the `shovel` component exists.
    pub async fn shovels_available(&self, vhost: &str) -> Result<bool, BrokerError> {
        let path = format!(
            "/api/parameters/shovel/{}/{}",
            segment(vhost),
            segment(&crate::model::migration::temporary_name("probe").unwrap_or_default())
        );
        match self
            .request(Method::PUT, &path, Some(&json!({"value": {}})))
            .await
        {
            Ok((status, _)) if status.is_success() => {
                // Accepted after all: remove it again.
                self.delete(&path).await?;
                Ok(true)
            }
            Ok((_, answer)) => Ok(!names_missing_shovels(&answer.to_string())),
            Err(BrokerError::Api {
                status: 400,
                reason,
                ..
            }) => Ok(!names_missing_shovels(reason.as_str())),
            Err(error) => Err(error),
        }
    }

    /// Starts a shovel that moves the messages `source` holds at its start to the
    /// fanout exchange `destination`, acknowledging each at the source only once the
    /// destination confirmed it, and then deletes itself.
    pub async fn start_move(
        &self,
        vhost: &str,
        name: &str,
        source: &str,
        destination: &str,
    ) -> Result<(), BrokerError> {
        let uri = format!("amqp:///{}", segment(vhost));
        let body = json!({"value": {
            "src-protocol": "amqp091",
            "src-uri": uri,
            "src-queue": source,
            "dest-protocol": "amqp091",
            "dest-uri": uri,
            "dest-exchange": destination,
            "ack-mode": "on-confirm",
            "src-delete-after": "queue-length",
        }});
        let path = format!(
            "/api/parameters/shovel/{}/{}",
            segment(vhost),
            segment(name)
        );
        match self.put(&path, &body).await {
            Err(BrokerError::Api {
                method,
                path,
                status,
                reason,
            }) if names_missing_shovels(reason.as_str()) => Err(BrokerError::Api {
                method,
                path,
                status,
                reason: format!(
                    "{reason} (enable the rabbitmq_shovel plugin on every node: `rabbitmq-plugins enable rabbitmq_shovel`)"
                )
                .into(),
            }),
            other => other,
        }
    }

    /// Stops and removes the shovel `name`. What it took from its source and had not
    /// yet had confirmed goes back to the source (it acknowledges only confirmed
    /// messages).
    pub async fn stop_move(&self, vhost: &str, name: &str) -> Result<(), BrokerError> {
        let path = format!(
            "/api/parameters/shovel/{}/{}",
            segment(vhost),
            segment(name)
        );
        self.delete(&path).await
    }

    /// What the broker says of the shovel `name`'s run, for a message about a move that
    /// stalled: its state (`running`, `starting`, `terminated` …) and the reason the
    /// broker gives, when it gives one; `None` when it reports no such shovel.
    pub async fn move_state(&self, vhost: &str, name: &str) -> Result<Option<String>, BrokerError> {
        let path = format!("/api/shovels/vhost/{}/{}", segment(vhost), segment(name));
        let Some(found) = self.get(&path).await? else {
            return Ok(None);
        };
        // One shovel, or the list of the node's runs of it.
        let run = match &found {
            Value::Array(runs) => runs.first().cloned().unwrap_or(Value::Null),
            other => other.clone(),
        };
        let state = run["state"].as_str().unwrap_or("unknown").to_string();
        Ok(Some(match run["reason"].as_str() {
            Some(reason) => format!("{state}: {}", crate::model::redact::redact_text(reason)),
            None => state,
        }))
    }

    /// Whether the shovel `name` still exists (it deletes itself when done).
    pub async fn move_running(&self, vhost: &str, name: &str) -> Result<bool, BrokerError> {
        let path = format!(
            "/api/parameters/shovel/{}/{}",
            segment(vhost),
            segment(name)
        );
        Ok(self.get(&path).await?.is_some())
    }

    /// Deletes a drained queue if the broker finds no ready message in it at that
    /// moment. Unlike the guard of an ordinary deletion its consumers do not stop it:
    /// they are the applications the migration keeps running; the caller waits for
    /// their unacknowledged messages first.
    ///
    /// - classic: `queue.delete` with `if-empty`, checked atomically by the queue;
    /// - quorum (which refuses the flag): a passive `queue.declare` gives the exact
    ///   ready count, then `queue.delete` says how many messages it deleted; a message
    ///   that arrived in between is reported as an error, never hidden. A queue that
    ///   holds messages back for a delayed retry (RabbitMQ 4.3) is counted only after its
    ///   longest delay, when they are ready (see `Client::sit_out_delayed_retries`).
    pub async fn delete_drained_queue(
        &self,
        vhost: &str,
        name: &str,
        queue_type: QueueType,
        declare_after: Option<&Value>,
        timeout: Duration,
    ) -> Result<Drained, BrokerError> {
        if queue_type == QueueType::Quorum {
            // Messages waiting for a delayed retry are counted only once ready.
            self.sit_out_delayed_retries(vhost, name).await?;
        }
        let what = format!("queue.delete {name:?} in vhost {vhost:?}");
        let failed = |error: &lapin::Error| amqp_error(&what, error);
        let connection = self
            .amqp_connection(
                vhost,
                "warren: queue migration",
                super::amqp::AmqpUse::Writes,
            )
            .await?;
        let outcome = async {
            let channel = connection.create_channel().await.map_err(|e| failed(&e))?;
            // The deletion and the declaration after it go together: the broker
            // confirms the locks once before both (see `fence`), so that a lock lost
            // in between never leaves the queue deleted and not declared again.
            self.fenced(false).await?;
            let drained = drain_check(&channel, name, vhost, queue_type, &failed).await?;
            if let (Drained::Deleted, Some(value)) = (drained, declare_after) {
                // At once, over the same connection: what is published to the queue by
                // its name in between is dropped by the broker.
                let channel = match channel.status().connected() {
                    true => channel,
                    false => connection.create_channel().await.map_err(|e| failed(&e))?,
                };
                declare_on(&channel, name, value)
                    .await
                    .map_err(|e| failed(&e))?;
            }
            Ok(drained)
        };
        let result = match tokio::time::timeout(timeout, outcome).await {
            Ok(result) => result,
            Err(_) => Err(no_answer(&what, timeout)),
        };
        super::amqp::close(&connection, "warren is done").await;
        result
    }
}

/// Declares queue `name` as `value` (normal form) says, on `channel`.
async fn declare_on(
    channel: &lapin::Channel,
    name: &str,
    value: &Value,
) -> Result<(), lapin::Error> {
    let options = QueueDeclareOptions {
        durable: value["durable"].as_bool().unwrap_or(true),
        auto_delete: value["auto_delete"].as_bool().unwrap_or(false),
        ..Default::default()
    };
    channel
        .queue_declare(name.into(), options, field_table(&value["arguments"]))
        .await
        .map(|_| ())
}

/// An AMQP method `what` that failed.
fn amqp_error(what: &str, error: &lapin::Error) -> BrokerError {
    BrokerError::Api {
        method: "AMQP".into(),
        path: what.to_string(),
        status: reply_of(error).map_or(0, |(code, _)| code),
        reason: error.to_string().into(),
    }
}

/// An AMQP method `what` the broker did not answer within `timeout`.
fn no_answer(what: &str, timeout: Duration) -> BrokerError {
    BrokerError::Api {
        method: "AMQP".into(),
        path: what.to_string(),
        status: 0,
        reason: format!("no answer within {} s", timeout.as_secs()).into(),
    }
}

/// Deletes `name` if the broker finds no ready message in it (see
/// [`Client::delete_drained_queue`]).
async fn drain_check(
    channel: &lapin::Channel,
    name: &str,
    vhost: &str,
    queue_type: QueueType,
    failed: &dyn Fn(&lapin::Error) -> BrokerError,
) -> Result<Drained, BrokerError> {
    let gone = |error: &lapin::Error| reply_of(error).map(|r| r.0) == Some(NOT_FOUND);
    if queue_type != QueueType::Quorum {
        let options = QueueDeleteOptions {
            if_empty: true,
            ..Default::default()
        };
        return match channel.queue_delete(name.into(), options).await {
            Ok(_) => Ok(Drained::Deleted),
            Err(error) if gone(&error) => Ok(Drained::Deleted),
            Err(error) if reply_of(&error).map(|r| r.0) == Some(PRECONDITION_FAILED) => {
                Ok(Drained::NotEmpty)
            }
            Err(error) => Err(failed(&error)),
        };
    }
    let passive = QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    match channel
        .queue_declare(name.into(), passive, FieldTable::default())
        .await
    {
        Ok(state) if state.message_count() > 0 => return Ok(Drained::NotEmpty),
        Ok(_) => {}
        Err(error) if gone(&error) => return Ok(Drained::Deleted),
        Err(error) => return Err(failed(&error)),
    }
    match channel
        .queue_delete(name.into(), QueueDeleteOptions::default())
        .await
    {
        Ok(0) => Ok(Drained::Deleted),
        Ok(lost) => Err(BrokerError::LostInWindow {
            vhost: vhost.to_string(),
            queue: name.to_string(),
            messages: lost,
        }),
        Err(error) if gone(&error) => Ok(Drained::Deleted),
        Err(error) => Err(failed(&error)),
    }
}
