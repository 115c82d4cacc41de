//! A small AMQP 0-9-1 client that follows warren's consumer contract.
//!
//! It declares nothing (warren declares every object): it connects to a vhost,
//! publishes with publisher confirms and `mandatory` (an unroutable publish is an
//! error, never a silent loss), consumes with manual acks, and implements the three
//! failure behaviours of docs/consumer-contract.md, reading every name and number
//! from the contract JSON that `warren compile --contract` prints.
//!
//! Tests are synchronous (the management helpers of [`Node`] use blocking HTTP, which
//! must not run inside an async runtime): they own a tokio runtime ([`runtime`]) and
//! `block_on` the AMQP parts, while consumers run as tasks on it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions,
    BasicQosOptions, BasicRejectOptions, ConfirmSelectOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::node::{Node, pct};
use crate::support::{Capture, warren};

/// Header of the retry count in `publish` mode (`warren::model::headers::RETRY_COUNT_HEADER`).
pub const RETRY_HEADER: &str = "warren-retries";

// ---------------------------------------------------------------------------
// The contract, as `warren compile --contract` prints it: the fields this client
// reads (the whole document is pinned by the contract snapshots of
// `tests/offline/cli.rs`).

#[derive(Debug, Clone, Deserialize)]
pub struct Contract {
    pub consumers: Vec<ConsumerContract>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ConsumerContract {
    pub service: String,
    pub consumer: String,
    /// The user the consumer's application logs in as, when the spec names one.
    #[serde(default)]
    pub user: Option<String>,
    pub queue: String,
    pub consume_from: Vec<String>,
    pub retry: Option<RetryContract>,
    /// How to requeue, for a quorum work queue.
    #[serde(default)]
    pub requeue: Option<Requeue>,
}

/// The contract's requeue instructions: the method to use and the one never to use.
#[derive(Debug, Clone, Deserialize)]
pub struct Requeue {
    pub with: String,
    #[serde(default)]
    pub never_with: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RetryContract {
    pub mode: String,
    pub exchange: String,
    pub max_retries: u32,
    pub schedule: Vec<RetryStep>,
    pub on_exhausted: Exhausted,
    #[serde(default)]
    pub strip_headers: Vec<String>,
    /// `publish` mode: the header that keeps the routing key of the first delivery.
    #[serde(default)]
    pub original_routing_key_header: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RetryStep {
    pub delay_ms: u64,
    /// None in `native` mode, where the message waits in the work queue.
    #[serde(default)]
    pub routing_key: String,
    pub queue: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Exhausted {
    pub action: String,
    pub exchange: Option<String>,
    pub routing_key: Option<String>,
    pub queue: Option<String>,
}

impl Contract {
    /// Runs `warren compile SPEC --contract --target-version TARGET`.
    #[track_caller]
    pub fn of(spec: &Path, target: &str) -> Contract {
        let run = warren(&[
            "compile",
            spec.to_str().unwrap(),
            "--contract",
            "--target-version",
            target,
        ])
        .run();
        assert!(
            run.code == Some(0),
            "warren compile --contract failed:\n{}",
            run.stderr
        );
        serde_json::from_str(&run.stdout).expect("contract JSON")
    }

    /// The contract of `consumer` (by consumer name).
    #[track_caller]
    pub fn consumer(&self, consumer: &str) -> &ConsumerContract {
        self.consumers
            .iter()
            .find(|c| c.consumer == consumer)
            .unwrap_or_else(|| panic!("no consumer `{consumer}` in the contract"))
    }
}

impl ConsumerContract {
    #[track_caller]
    pub fn retry(&self) -> &RetryContract {
        self.retry
            .as_ref()
            .expect("the consumer has a retry ladder")
    }

    /// How many retries the message has had, as the contract says to count them,
    /// for a delivery from `queue` (one of `consume_from`).
    pub fn retries_so_far(&self, delivery: &Delivery, queue: &str) -> u32 {
        let Some(retry) = &self.retry else { return 0 };
        match retry.mode.as_str() {
            "publish" => header_u64(delivery, RETRY_HEADER).unwrap_or(0) as u32,
            "reject" => x_death_count(delivery, &self.queue, "rejected") as u32,
            "reject-chain" => {
                self.consume_from
                    .iter()
                    .position(|q| q == queue)
                    .expect("delivery from a queue of consume_from") as u32
            }
            other => panic!("unknown retry mode {other}"),
        }
    }
}

// ---------------------------------------------------------------------------
// Header helpers.

pub fn headers(delivery: &Delivery) -> BTreeMap<String, AMQPValue> {
    delivery
        .properties
        .headers()
        .as_ref()
        .map(|t| {
            t.inner()
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

pub fn as_u64(value: &AMQPValue) -> Option<u64> {
    match value {
        AMQPValue::ShortShortInt(v) => u64::try_from(*v).ok(),
        AMQPValue::ShortShortUInt(v) => Some(u64::from(*v)),
        AMQPValue::ShortInt(v) => u64::try_from(*v).ok(),
        AMQPValue::ShortUInt(v) => Some(u64::from(*v)),
        AMQPValue::LongInt(v) => u64::try_from(*v).ok(),
        AMQPValue::LongUInt(v) => Some(u64::from(*v)),
        AMQPValue::LongLongInt(v) => u64::try_from(*v).ok(),
        AMQPValue::Timestamp(v) => Some(*v),
        _ => None,
    }
}

pub fn as_string(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::ShortString(s) => Some(s.to_string()),
        AMQPValue::LongString(s) => Some(s.to_string()),
        _ => None,
    }
}

pub fn header_u64(delivery: &Delivery, name: &str) -> Option<u64> {
    headers(delivery).get(name).and_then(as_u64)
}

pub fn header_string(delivery: &Delivery, name: &str) -> Option<String> {
    headers(delivery).get(name).and_then(as_string)
}

/// An AMQP value as JSON, for assertions and failure messages.
pub fn to_json(value: &AMQPValue) -> Value {
    if let Some(n) = as_u64(value) {
        return json!(n);
    }
    match value {
        AMQPValue::Boolean(b) => json!(b),
        AMQPValue::ShortString(_) | AMQPValue::LongString(_) => json!(as_string(value)),
        AMQPValue::FieldArray(a) => Value::Array(a.as_slice().iter().map(to_json).collect()),
        AMQPValue::FieldTable(t) => Value::Object(
            t.inner()
                .iter()
                .map(|(k, v)| (k.to_string(), to_json(v)))
                .collect(),
        ),
        AMQPValue::Void => Value::Null,
        other => json!(format!("{other:?}")),
    }
}

/// The `x-death` header as JSON entries (`[]` when absent).
pub fn x_death(delivery: &Delivery) -> Vec<Value> {
    x_death_of(&headers(delivery))
}

/// The `x-death` entries of a header map (see [`headers`]).
pub fn x_death_of(headers: &BTreeMap<String, AMQPValue>) -> Vec<Value> {
    match headers.get("x-death").map(to_json) {
        Some(Value::Array(entries)) => entries,
        _ => Vec::new(),
    }
}

/// The `count` of the `x-death` entry for `queue` and `reason` (0 when absent).
pub fn x_death_count(delivery: &Delivery, queue: &str, reason: &str) -> u64 {
    x_death(delivery)
        .iter()
        .find(|e| e["queue"] == queue && e["reason"] == reason)
        .and_then(|e| e["count"].as_u64())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// The client.

/// A tokio runtime for one test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A connection to one vhost with a confirming publish channel.
#[derive(Clone)]
pub struct Client {
    pub connection: Arc<Connection>,
    publisher: Channel,
}

/// What the client did with a message it could not process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Processed and acked.
    Processed,
    /// Retry number `retry` requested (publish mode: re-published to that tier's key).
    Retried { retry: u32 },
    /// Rejected without requeue (the broker moves it on).
    Rejected,
    /// Published to the parking queue and acked.
    Parked,
    /// Acked without processing: dropped.
    Dropped,
}

impl Client {
    /// Connects to `vhost` on `node` as the node's user.
    pub async fn connect(node: &Node, vhost: &str) -> Client {
        Client::connect_url(&format!("{}{}", node.amqp_url(), pct(vhost))).await
    }

    /// Connects to an `amqp://user:password@host:port/vhost` URL.
    pub async fn connect_url(url: &str) -> Client {
        let connection = Connection::connect(url, ConnectionProperties::default())
            .await
            .unwrap_or_else(|e| panic!("AMQP connection to {url}: {e}"));
        let publisher = connection.create_channel().await.expect("channel");
        publisher
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("confirm.select");
        Client {
            connection: Arc::new(connection),
            publisher,
        }
    }

    /// Publishes and waits for the broker's confirm; an unroutable message
    /// (returned because of `mandatory`) or a nack is an error.
    pub async fn publish(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) -> Result<(), String> {
        let confirm = self
            .publish_unconfirmed(exchange, routing_key, body, properties)
            .await?;
        let confirmation = confirm.await.map_err(|e| e.to_string())?;
        if !confirmation.is_ack() {
            return Err(format!("nack for a publish to {exchange}/{routing_key}"));
        }
        if let Some(returned) = confirmation.take_message() {
            return Err(format!(
                "unroutable: {exchange}/{routing_key} returned {:?}",
                returned.reply_text
            ));
        }
        Ok(())
    }

    /// Publishes without waiting for the confirm: await the returned future.
    /// (Not `Channel::wait_for_confirms`, which would take the confirms that
    /// concurrent [`Client::publish`] calls on the same channel wait for.)
    pub async fn publish_unconfirmed(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) -> Result<lapin::PublisherConfirm, String> {
        self.publisher
            .basic_publish(
                exchange.into(),
                routing_key.into(),
                BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                },
                body,
                properties,
            )
            .await
            .map_err(|e| e.to_string())
    }

    /// Ready messages in `queue` (passive declare: exact, no statistics delay).
    pub async fn ready(&self, queue: &str) -> u32 {
        self.try_ready(queue)
            .await
            .unwrap_or_else(|e| panic!("passive declare of {queue}: {e}"))
    }

    /// [`Client::ready`], or the broker's refusal: a quorum queue of a restarted
    /// broker answers with an error until its Raft member has recovered.
    pub async fn try_ready(&self, queue: &str) -> Result<u32, String> {
        let channel = self
            .connection
            .create_channel()
            .await
            .map_err(|e| e.to_string())?;
        let declared = channel
            .queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await;
        let _ = channel.close(200, "".into()).await;
        declared
            .map(|q| q.message_count())
            .map_err(|e| e.to_string())
    }

    /// Takes one message from `queue` with basic.get and acks it.
    pub async fn get(&self, queue: &str) -> Option<Delivery> {
        let channel = self.connection.create_channel().await.expect("channel");
        let message = channel
            .basic_get(queue.into(), BasicGetOptions { no_ack: false })
            .await
            .unwrap_or_else(|e| panic!("basic.get on {queue}: {e}"));
        let delivery = message.map(|m| m.delivery);
        if let Some(d) = &delivery {
            d.ack(BasicAckOptions::default()).await.expect("ack");
        }
        let _ = channel.close(200, "".into()).await;
        delivery
    }

    /// Handles a delivery the consumer could not process, exactly as the
    /// contract says for its mode. `queue` is the queue it came from.
    pub async fn fail(
        &self,
        contract: &ConsumerContract,
        delivery: &Delivery,
        queue: &str,
    ) -> Result<Action, String> {
        let retry = contract.retry();
        let n = contract.retries_so_far(delivery, queue);
        match retry.mode.as_str() {
            "publish" => {
                if n < retry.max_retries {
                    let step = &retry.schedule[n as usize];
                    let mut table: BTreeMap<ShortString, AMQPValue> = delivery
                        .properties
                        .headers()
                        .as_ref()
                        .map(|t| t.inner().clone())
                        .unwrap_or_default();
                    for h in &retry.strip_headers {
                        table.remove(h.as_str());
                    }
                    table.insert(
                        RETRY_HEADER.into(),
                        AMQPValue::LongLongInt(i64::from(n + 1)),
                    );
                    if let Some(h) = &retry.original_routing_key_header {
                        table.entry(h.as_str().into()).or_insert_with(|| {
                            AMQPValue::LongString(LongString::from(delivery.routing_key.as_str()))
                        });
                    }
                    let properties = delivery
                        .properties
                        .clone()
                        .with_headers(FieldTable::from(table));
                    self.publish(
                        &retry.exchange,
                        &step.routing_key,
                        &delivery.data,
                        properties,
                    )
                    .await?;
                    ack(delivery).await?;
                    Ok(Action::Retried { retry: n + 1 })
                } else {
                    self.exhausted(retry, delivery).await
                }
            }
            "reject" => {
                if n < retry.max_retries {
                    reject(delivery).await?;
                    Ok(Action::Rejected)
                } else {
                    self.exhausted(retry, delivery).await
                }
            }
            "reject-chain" => {
                reject(delivery).await?;
                Ok(Action::Rejected)
            }
            other => Err(format!("unknown retry mode {other}")),
        }
    }

    /// Retries are used up: park (publish unchanged to the parking key, then ack) or drop.
    async fn exhausted(
        &self,
        retry: &RetryContract,
        delivery: &Delivery,
    ) -> Result<Action, String> {
        match retry.on_exhausted.action.as_str() {
            "park" => {
                let exchange = retry.on_exhausted.exchange.as_deref().expect("exchange");
                let key = retry.on_exhausted.routing_key.as_deref().expect("key");
                self.publish(exchange, key, &delivery.data, delivery.properties.clone())
                    .await?;
                ack(delivery).await?;
                Ok(Action::Parked)
            }
            "drop" => {
                ack(delivery).await?;
                Ok(Action::Dropped)
            }
            other => Err(format!("unknown on_exhausted action {other}")),
        }
    }

    pub async fn close(&self) {
        let _ = self.connection.close(200, "bye".into()).await;
    }
}

pub async fn ack(delivery: &Delivery) -> Result<(), String> {
    delivery
        .ack(BasicAckOptions::default())
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

pub async fn reject(delivery: &Delivery) -> Result<(), String> {
    delivery
        .reject(BasicRejectOptions { requeue: false })
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// `basic.nack` with requeue. RabbitMQ 4.3 counts it as a *returned* delivery
/// (`x-acquired-count`), which a quorum queue's delivery limit does not count; 3.10 and
/// 4.0 count it as a failed one, like [`requeue_failed`].
pub async fn requeue(delivery: &Delivery) -> Result<(), String> {
    delivery
        .nack(BasicNackOptions {
            multiple: false,
            requeue: true,
        })
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// `basic.reject` with requeue: a *failed* delivery on every version, which a quorum
/// queue counts in `x-delivery-count` and against its delivery limit.
pub async fn requeue_failed(delivery: &Delivery) -> Result<(), String> {
    delivery
        .reject(BasicRejectOptions { requeue: true })
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------
// Consumers that log what they do.

/// One delivery as a consumer saw it, and what it did.
#[derive(Debug, Clone)]
pub struct Event {
    pub consumer: String,
    pub queue: String,
    pub at: Instant,
    /// Retries before this delivery, as the contract counts them.
    pub retries: u32,
    pub action: Action,
    pub body: Vec<u8>,
    pub message_id: Option<String>,
    pub headers: BTreeMap<String, AMQPValue>,
}

/// Events shared between consumer tasks and the test.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Event>>>);

impl Log {
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn push(&self, e: Event) {
        self.0.lock().unwrap().push(e);
    }
}

/// Decides whether an attempt succeeds: `(delivery, retries so far) -> ok`.
pub type Decide = Arc<dyn Fn(&Delivery, u32) -> bool + Send + Sync>;

/// Starts consuming every queue of `contract.consume_from` on its own channel
/// with manual acks and `prefetch`; each delivery is processed when `decide`
/// says so (ack), otherwise handled with [`Client::fail`]. Every delivery is
/// logged; `print` also prints the article-style log line.
pub async fn spawn_consumer(
    client: &Client,
    contract: &ConsumerContract,
    prefetch: u16,
    decide: Decide,
    log: &Log,
    print: bool,
) {
    for queue in contract.consume_from.clone() {
        let channel = client.connection.create_channel().await.expect("channel");
        channel
            .basic_qos(prefetch, BasicQosOptions::default())
            .await
            .expect("basic.qos");
        let mut consumer = channel
            .basic_consume(
                queue.as_str().into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("basic.consume on {queue}: {e}"));
        let (client, contract, decide, log) = (
            client.clone(),
            contract.clone(),
            decide.clone(),
            log.clone(),
        );
        tokio::spawn(async move {
            let _channel = channel;
            while let Some(Ok(delivery)) = consumer.next().await {
                // Handle each delivery in its own task (at most `prefetch` at once),
                // so a publisher confirm never holds up the next delivery.
                let (client, contract, decide, log, queue) = (
                    client.clone(),
                    contract.clone(),
                    decide.clone(),
                    log.clone(),
                    queue.clone(),
                );
                tokio::spawn(async move {
                    handle(&client, &contract, &decide, &log, &queue, delivery, print).await
                });
            }
        });
    }
}

async fn handle(
    client: &Client,
    contract: &ConsumerContract,
    decide: &Decide,
    log: &Log,
    queue: &str,
    delivery: Delivery,
    print: bool,
) {
    let at = Instant::now();
    let retries = contract.retries_so_far(&delivery, queue);
    if print {
        println!("[{}] Processing {}", contract.consumer, describe(&delivery));
    }
    let action = if decide(&delivery, retries) {
        ack(&delivery).await.map(|_| Action::Processed)
    } else {
        client.fail(contract, &delivery, queue).await
    };
    let action = action.unwrap_or_else(|e| panic!("{}: {e}", contract.consumer));
    if print {
        let line = match action {
            Action::Processed => "Done",
            Action::Retried { .. } | Action::Rejected => "Retrying",
            Action::Parked => "Can't retry, park",
            Action::Dropped => "Can't retry, drop",
        };
        println!("[{}] {line}", contract.consumer);
    }
    log.push(Event {
        consumer: contract.consumer.clone(),
        queue: queue.to_string(),
        at,
        retries,
        action,
        body: delivery.data.clone(),
        message_id: delivery
            .properties
            .message_id()
            .as_ref()
            .map(|s| s.to_string()),
        headers: headers(&delivery),
    });
}

fn describe(delivery: &Delivery) -> String {
    String::from_utf8_lossy(&delivery.data).into_owned()
}

/// Persistent properties with a message id.
pub fn message(id: &str) -> BasicProperties {
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_message_id(id.into())
}

/// Polls `f` every 20 ms until it is true or `timeout` passes.
pub async fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
