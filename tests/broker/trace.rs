//! `warren trace` against real brokers: small random topologies (every exchange type,
//! headers bindings with each `x-match`, exchange-to-exchange bindings, alternate
//! exchanges, internal exchanges, queues with dead-letter exchanges, routing keys and
//! short TTLs, cycles with and without a rejecting consumer), each imported into a
//! fresh vhost; one message is published and followed by real consumers and
//! `basic.get`, and what the broker did is compared with the trace's prediction: which
//! queues end up holding or processing a copy, how many copies, and each copy's
//! `x-death` history (every dead-letter hop, in order, with its reason and count).
//!
//! `TRACE_CASES` (default 30 per version) and `TRACE_SEED` choose the run;
//! `scripts/trace-check` runs the full count.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicGetOptions, BasicPublishOptions, BasicRejectOptions,
    ConfirmSelectOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Connection, ConnectionProperties};
use serde_json::{Value, json};
use warren::compile::contract::{ConsumerContract, Contract};
use warren::model::routing::Headers;
use warren::model::{Definitions, TargetVersion};
use warren::trace::{self, CopyEnd, Request};

use crate::amqp::{runtime, x_death_of};
use crate::node::{Node, Version, pct};

/// A small deterministic generator (splitmix64), so a seed names a run.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const BINDING_KEYS: &[&str] = &["a", "b", "a.b", "", "*", "#", "*.b", "a.#", "a.*.c", "#.c"];
const PUBLISH_KEYS: &[&str] = &["a", "b", "a.b", "a.b.c", "", "a..c", "a.b", "q0", "q1", "a"];
const X_MATCH: &[&str] = &["all", "any", "all-with-x", "any-with-x", ""];

/// One random case: the definitions (without vhost, for the import) and the message.
struct Case {
    exchanges: Vec<Value>,
    queues: Vec<Value>,
    bindings: Vec<Value>,
    /// Queues with a consumer that rejects each copy `failures` times, then acks.
    consumed: Vec<String>,
    exchange: String,
    routing_key: String,
    headers: Headers,
    failures: usize,
}

fn generate(random: &mut Random) -> Case {
    let exchange_count = 1 + random.below(4);
    let queue_count = 1 + random.below(3);
    let exchange_names: Vec<String> = (0..exchange_count).map(|i| format!("e{i}")).collect();
    let queue_names: Vec<String> = (0..queue_count).map(|i| format!("q{i}")).collect();
    let mut exchanges = Vec::new();
    for name in &exchange_names {
        let kind = random.pick(&["direct", "fanout", "topic", "headers"]);
        let mut arguments = json!({});
        if random.chance(30) {
            let alternate = if random.chance(15) {
                "missing".to_string()
            } else {
                exchange_names[random.below(exchange_count)].clone()
            };
            arguments["alternate-exchange"] = json!(alternate);
        }
        exchanges.push(json!({
            "name": name, "type": kind, "durable": true, "auto_delete": false,
            "internal": random.chance(15), "arguments": arguments,
        }));
    }
    let mut queues = Vec::new();
    let mut consumed = Vec::new();
    for name in &queue_names {
        let mut arguments = json!({"x-queue-type": "classic"});
        if random.chance(60) {
            let dlx = if random.chance(30) {
                String::new()
            } else {
                exchange_names[random.below(exchange_count)].clone()
            };
            arguments["x-dead-letter-exchange"] = json!(dlx);
            if random.chance(50) {
                let key = if random.chance(50) {
                    queue_names[random.below(queue_count)].clone()
                } else {
                    random.pick(PUBLISH_KEYS).to_string()
                };
                arguments["x-dead-letter-routing-key"] = json!(key);
            }
        }
        if random.chance(50) {
            arguments["x-message-ttl"] = json!(50 + random.below(150));
        } else if random.chance(40) {
            consumed.push(name.clone());
        }
        queues.push(json!({
            "name": name, "durable": true, "auto_delete": false, "arguments": arguments,
        }));
    }
    let mut bindings: Vec<Value> = Vec::new();
    for _ in 0..3 + random.below(6) {
        let source = &exchange_names[random.below(exchange_count)];
        let to_exchange = exchange_count > 1 && random.chance(35);
        let destination = if to_exchange {
            exchange_names[random.below(exchange_count)].clone()
        } else {
            queue_names[random.below(queue_count)].clone()
        };
        if to_exchange && &destination == source {
            continue;
        }
        let mut arguments = json!({});
        let kind = exchanges
            .iter()
            .find(|e| e["name"] == json!(source))
            .map(|e| e["type"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default();
        if kind == "headers" {
            let mode = random.pick(X_MATCH);
            if !mode.is_empty() {
                arguments["x-match"] = json!(mode);
            }
            for (name, values) in [("h1", ["1", "2"]), ("h2", ["1", "2"]), ("x-h", ["1", "2"])] {
                if random.chance(50) {
                    arguments[name] = json!(values[random.below(2)]);
                }
            }
        }
        let binding = json!({
            "source": source, "destination": destination,
            "destination_type": if to_exchange { "exchange" } else { "queue" },
            "routing_key": random.pick(BINDING_KEYS), "arguments": arguments,
        });
        if !bindings.contains(&binding) {
            bindings.push(binding);
        }
    }
    let exchange = if random.chance(10) {
        String::new()
    } else {
        exchange_names[random.below(exchange_count)].clone()
    };
    let mut headers = Headers::new();
    for name in ["h1", "h2", "x-h"] {
        if random.chance(50) {
            headers.insert(name.into(), json!(random.pick(&["1", "2"])));
        }
    }
    Case {
        exchanges,
        queues,
        bindings,
        consumed,
        exchange,
        routing_key: random.pick(PUBLISH_KEYS).to_string(),
        headers,
        failures: random.below(3),
    }
}

/// The case as definitions of `vhost`, for the trace.
fn definitions(case: &Case, vhost: &str) -> Definitions {
    let with_vhost = |items: &[Value]| -> Vec<Value> {
        items
            .iter()
            .map(|item| {
                let mut item = item.clone();
                item["vhost"] = json!(vhost);
                item
            })
            .collect()
    };
    serde_json::from_value(json!({
        "vhosts": [{"name": vhost}],
        "exchanges": with_vhost(&case.exchanges),
        "queues": with_vhost(&case.queues),
        "bindings": with_vhost(&case.bindings),
    }))
    .expect("generated definitions read")
}

/// Where a copy ended, and its `x-death` history as (queue, reason, count).
type End = (String, String, Vec<(String, String, u64)>);

/// What a case exercised, so the summary shows the cases are not trivial.
#[derive(Default)]
struct Exercised {
    reached: usize,
    dead_lettered: usize,
    cycle_drops: usize,
    alternates: usize,
    exchange_hops: usize,
}

fn predicted(
    case: &Case,
    vhost: &str,
    target: TargetVersion,
    exercised: &mut Exercised,
) -> Result<Vec<End>, trace::Error> {
    let contract = Contract {
        version: 1,
        consumers: case
            .consumed
            .iter()
            .map(|queue| ConsumerContract {
                vhost: vhost.to_string(),
                service: "test".into(),
                consumer: queue.clone(),
                user: None,
                queue: queue.clone(),
                consume_from: vec![queue.clone()],
                retry: None,
                requeue: None,
            })
            .collect(),
    };
    let request = Request {
        vhost: Some(vhost.to_string()),
        exchange: case.exchange.clone(),
        routing_key: case.routing_key.clone(),
        headers: case.headers.clone(),
        failures: case.failures,
    };
    let trace = trace::trace(&definitions(case, vhost), &contract, target, &request)?;
    let json = serde_json::to_string(&trace).expect("a trace serializes");
    exercised.reached += usize::from(!trace.queues.is_empty());
    exercised.dead_lettered += usize::from(json.contains("\"dead_lettered\""));
    exercised.cycle_drops += usize::from(json.contains("\"dropped_by_cycle\""));
    exercised.alternates += usize::from(json.contains("\"alternate\""));
    exercised.exchange_hops += usize::from(json.contains("\"destination_type\":\"exchange\""));
    let mut ends: Vec<End> = trace
        .copies
        .iter()
        .filter_map(|copy| {
            let deaths = copy
                .x_death
                .iter()
                .map(|d| {
                    (
                        d.queue.clone(),
                        d.reason.as_str().to_string(),
                        u64::from(d.count),
                    )
                })
                .collect();
            match &copy.outcome {
                CopyEnd::Processed { queue, .. } => {
                    Some(("processed".into(), queue.clone(), deaths))
                }
                CopyEnd::Stays { queue } | CopyEnd::Parked { queue } => {
                    Some(("stays".into(), queue.clone(), deaths))
                }
                CopyEnd::Dropped { .. } => None,
                CopyEnd::Unfinished => Some(("unfinished".into(), String::new(), deaths)),
            }
        })
        .collect();
    ends.sort();
    Ok(ends)
}

fn deaths_of(headers: &BTreeMap<String, AMQPValue>) -> Vec<(String, String, u64)> {
    x_death_of(headers)
        .iter()
        .map(|e| {
            (
                e["queue"].as_str().unwrap_or_default().to_string(),
                e["reason"].as_str().unwrap_or_default().to_string(),
                e["count"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

fn table(delivery: &lapin::message::Delivery) -> BTreeMap<String, AMQPValue> {
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

/// What the broker did: `Err` when it refused the publish.
#[expect(
    clippy::too_many_lines,
    reason = "what the broker did to one message, gathered from every queue in one place"
)]
fn observed(node: &Node, case: &Case, vhost: &str, expected: usize) -> Result<Vec<End>, String> {
    let rt = runtime();
    rt.block_on(async {
        let url = format!("{}{}", node.amqp_url(), pct(vhost));
        let connection = Connection::connect(&url, ConnectionProperties::default())
            .await
            .expect("AMQP connection");
        let processed: Arc<Mutex<Vec<End>>> = Arc::default();
        for queue in &case.consumed {
            let channel = connection.create_channel().await.expect("channel");
            let mut consumer = channel
                .basic_consume(
                    queue.as_str().into(),
                    "trace-test".into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .expect("consume");
            let (queue, failures, processed) = (queue.clone(), case.failures, processed.clone());
            tokio::spawn(async move {
                while let Some(Ok(delivery)) = consumer.next().await {
                    let headers = table(&delivery);
                    let deaths = deaths_of(&headers);
                    // The consumer counts its own rejections of this copy, as a plain
                    // reject-mode consumer does.
                    let rejected = deaths
                        .iter()
                        .find(|(q, r, _)| q == &queue && r == "rejected")
                        .map_or(0, |d| d.2);
                    if (rejected as usize) < failures {
                        let _ = delivery.reject(BasicRejectOptions { requeue: false }).await;
                    } else {
                        let _ = delivery.ack(BasicAckOptions::default()).await;
                        processed
                            .lock()
                            .unwrap()
                            .push(("processed".into(), queue.clone(), deaths));
                    }
                }
            });
        }
        let publisher = connection.create_channel().await.expect("channel");
        publisher
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("confirm.select");
        let mut properties = BasicProperties::default();
        if !case.headers.is_empty() {
            let mut table: BTreeMap<ShortString, AMQPValue> = BTreeMap::new();
            for (name, value) in &case.headers {
                table.insert(
                    name.as_str().into(),
                    AMQPValue::LongString(LongString::from(value.as_str().unwrap_or_default())),
                );
            }
            properties = properties.with_headers(FieldTable::from(table));
        }
        let confirm = publisher
            .basic_publish(
                case.exchange.as_str().into(),
                case.routing_key.as_str().into(),
                BasicPublishOptions::default(),
                b"trace",
                properties,
            )
            .await
            .map_err(|e| e.to_string())?;
        confirm.await.map_err(|e| e.to_string())?;
        // Queues a copy may rest in: no consumer, no TTL.
        let resting: Vec<String> = case
            .queues
            .iter()
            .filter(|q| q["arguments"].get("x-message-ttl").is_none())
            .map(|q| q["name"].as_str().unwrap().to_string())
            .filter(|q| !case.consumed.contains(q))
            .collect();
        let in_flight: Vec<String> = case
            .queues
            .iter()
            .filter(|q| q["arguments"].get("x-message-ttl").is_some())
            .map(|q| q["name"].as_str().unwrap().to_string())
            .collect();
        let depth = |channel: lapin::Channel, queue: String| async move {
            channel
                .queue_declare(
                    queue.as_str().into(),
                    QueueDeclareOptions {
                        passive: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await
                .map(|q| q.message_count() as usize)
                .unwrap_or(0)
        };
        let channel = connection.create_channel().await.expect("channel");
        // The TTLs are under 200 ms: a few hops settle in a second, and the deadline is
        // for copies that never settle, with room for a loaded machine.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut settled_since: Option<Instant> = None;
        loop {
            let mut count = processed.lock().unwrap().len();
            let mut moving = 0;
            for queue in &resting {
                count += depth(channel.clone(), queue.clone()).await;
            }
            for queue in &in_flight {
                moving += depth(channel.clone(), queue.clone()).await;
            }
            let settled = count >= expected && moving == 0;
            match (settled, settled_since) {
                (true, Some(since)) if since.elapsed() > Duration::from_millis(400) => break,
                (true, None) => settled_since = Some(Instant::now()),
                (false, _) => settled_since = None,
                _ => {}
            }
            if Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut ends = processed.lock().unwrap().clone();
        for queue in &resting {
            while let Some(message) = channel
                .basic_get(queue.as_str().into(), BasicGetOptions { no_ack: true })
                .await
                .expect("basic.get")
            {
                ends.push((
                    "stays".into(),
                    queue.clone(),
                    deaths_of(&table(&message.delivery)),
                ));
            }
        }
        let _ = connection.close(200, "".into()).await;
        ends.sort();
        Ok(ends)
    })
}

fn random_topologies_agree_with_the_trace(version: Version) {
    let cases: usize = std::env::var("TRACE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let seed: u64 = std::env::var("TRACE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let target: TargetVersion = version.target().parse().expect("a target version");
    let node = Node::shared(version);
    let mut random = Random(seed);
    let started = Instant::now();
    let (mut agreed, mut refused, mut skipped) = (0, 0, 0);
    let mut disagreements = Vec::new();
    let mut exercised = Exercised::default();
    for number in 0..cases {
        let case = generate(&mut random);
        let vhost = node.unique_vhost("trace");
        let document = json!({
            "exchanges": case.exchanges, "queues": case.queues, "bindings": case.bindings,
        });
        node.post(&format!("/api/definitions/{}", pct(&vhost)), &document);
        let prediction = predicted(&case, &vhost, target, &mut exercised);
        let expected = prediction.as_ref().map_or(0, Vec::len);
        if prediction
            .as_ref()
            .is_ok_and(|ends| ends.iter().any(|e| e.0 == "unfinished"))
        {
            skipped += 1;
            node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
            continue;
        }
        let observation = observed(node, &case, &vhost, expected);
        node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
        match (prediction, observation) {
            (Err(trace::Error::InternalExchange { .. }), Err(_)) => refused += 1,
            (Ok(predicted), Ok(observed)) if predicted == observed => agreed += 1,
            (predicted, observed) => disagreements.push(format!(
                "case {number} (seed {seed}): {}\n  trace:  {predicted:?}\n  broker: {observed:?}",
                json!({
                    "exchanges": case.exchanges, "queues": case.queues, "bindings": case.bindings,
                    "consumed": case.consumed, "publish": {"exchange": case.exchange,
                    "routing_key": case.routing_key, "headers": case.headers},
                    "failures": case.failures,
                })
            )),
        }
    }
    eprintln!(
        "trace vs RabbitMQ {}: {cases} cases (seed {seed}): {agreed} agree, {refused} refused publishes agree, {skipped} skipped (unbounded), {} disagree, in {:.1?}; cases that reach a queue {}, dead-letter {}, drop a cycle {}, take an alternate exchange {}, cross an exchange-to-exchange binding {}",
        node.rabbitmq_version(),
        disagreements.len(),
        started.elapsed(),
        exercised.reached,
        exercised.dead_lettered,
        exercised.cycle_drops,
        exercised.alternates,
        exercised.exchange_hops,
    );
    assert!(
        disagreements.is_empty(),
        "the trace disagrees with the broker:\n{}",
        disagreements.join("\n")
    );
    assert!(agreed + refused > cases / 2, "too few cases compared");
}

// ---------------------------------------------------------------------------
// The examples: real consumers that follow the contract, against the trace.

/// An example of `examples/`, on a vhost and spec name of its own, with every retry
/// delay shortened to 200 ms and without its users (global objects other tests apply
/// too).
fn example_copy(file: &str, vhost: &str, old_vhost: &str, old_name: &str) -> crate::spec::Spec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(file);
    let mut text = std::fs::read_to_string(path).unwrap();
    // Without its users (no secrets, no broker-wide lock), and so without the
    // references to them: permissions route no message.
    if let Some(at) = text.find("\nusers:") {
        text.truncate(at + 1);
    }
    text = without_user_references(&text);
    text = text
        .replace(&format!("name: {old_name}\n"), &format!("name: {vhost}\n"))
        .replace(&format!("  {old_vhost}:\n"), &format!("  {vhost}:\n"));
    for delay in ["30s", "5m", "30m", "1m", "10m", "1h", "6h", "10s", "60s"] {
        text = text
            .replace(&format!("[{delay}"), "[200ms")
            .replace(&format!(", {delay}"), ", 200ms");
    }
    crate::spec::Spec::new(&text)
}

/// `text` without the `user:` lines of consumers and the `publishers:` lists.
fn without_user_references(text: &str) -> String {
    let mut kept = String::new();
    let mut list_indent: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        if let Some(at) = list_indent {
            if trimmed.starts_with("- ") && indent >= at {
                continue;
            }
            list_indent = None;
        }
        if trimmed.starts_with("user: ") {
            continue;
        }
        if trimmed.starts_with("publishers:") {
            list_indent = Some(indent);
            continue;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

/// An `x-death` header as (queue, reason, count), in the broker's order.
type XDeath = Vec<(String, String, u64)>;

/// Per consumer, the `x-death` of each of its deliveries.
type Deliveries = BTreeMap<String, Vec<XDeath>>;

#[expect(
    clippy::too_many_lines,
    reason = "one trial read top to bottom: the broker's outcome beside the trace's prediction"
)]
fn example_agrees_with_the_trace(
    version: Version,
    file: &str,
    old_vhost: &str,
    old_name: &str,
    publish: (&str, &str),
    failures: usize,
) {
    use crate::amqp::{Client, Contract as TestContract, Decide, Log, spawn_consumer};
    use crate::support::Capture;

    let node = Node::shared(version);
    let vhost = node.unused_vhost("trace-example");
    let spec = example_copy(file, &vhost, old_vhost, old_name);
    let applied = node.apply(spec.arg()).with(&["--lock-timeout", "2m"]).run();
    assert_eq!(
        applied.code,
        Some(0),
        "{}\n{}",
        applied.stdout,
        applied.stderr
    );
    node.put(
        &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
        &json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
    let (exchange, key) = publish;
    let fail = failures.to_string();
    let traced = crate::support::warren(&[
        "trace",
        spec.arg(),
        "--exchange",
        exchange,
        "--routing-key",
        key,
        "--fail",
        &fail,
        "--format",
        "json",
        "--target-version",
        version.target(),
    ])
    .run();
    assert_eq!(traced.code, Some(0), "{}", traced.stderr);
    let trace: Value = serde_json::from_str(&traced.stdout).unwrap();
    let deaths = |value: &Value| -> XDeath {
        value
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|d| {
                        (
                            d["queue"].as_str().unwrap().to_string(),
                            d["reason"].as_str().unwrap().to_string(),
                            d["count"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut expected = Deliveries::new();
    let mut parked: BTreeMap<String, u32> = BTreeMap::new();
    for copy in trace["copies"].as_array().unwrap() {
        for event in copy["events"].as_array().unwrap() {
            if event["event"] == "delivered" {
                let consumer = event["consumer"].as_str().unwrap();
                let consumer = consumer.rsplit_once('.').map_or(consumer, |(_, c)| c);
                expected
                    .entry(consumer.to_string())
                    .or_default()
                    .push(deaths(&event["x_death"]));
            }
        }
        if copy["outcome"]["outcome"] == "parked" || copy["outcome"]["outcome"] == "stays" {
            *parked
                .entry(copy["outcome"]["queue"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    let total: usize = expected.values().map(Vec::len).sum();
    assert!(total > 0, "the trace delivers nothing: {trace}");

    let contract = TestContract::of(&spec.path, version.target());
    let rt = runtime();
    let log = Log::default();
    let client = rt.block_on(Client::connect(node, &vhost));
    rt.block_on(async {
        for consumer in &contract.consumers {
            if !expected.contains_key(&consumer.consumer) {
                continue;
            }
            let decide: Decide = Arc::new(move |_, retries| retries as usize >= failures);
            spawn_consumer(&client, consumer, 10, decide, &log, false).await;
        }
        client
            .publish(exchange, key, b"trace", crate::amqp::message("m"))
            .await
            .unwrap();
    });
    // Delays of 200 ms: the deliveries take seconds; the deadline is for deliveries that
    // never come, with room for a loaded machine. Then a second more, in which a
    // delivery the trace does not predict would show.
    let deadline = Instant::now() + Duration::from_secs(90);
    while log.len() < total && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let mut observed = Deliveries::new();
    for event in log.events() {
        observed
            .entry(event.consumer.clone())
            .or_default()
            .push(deaths_of(&event.headers));
    }
    assert_eq!(
        observed, expected,
        "{file}: deliveries per consumer with their x-death (broker, then trace)"
    );
    // Where the copies rest: the parking queues (and queues no consumer reads) the
    // trace names, and nothing anywhere else.
    // A stream keeps a log, not a count of ready messages: left out on both sides.
    let queues = node.get(&format!("/api/queues/{}?columns=name,type", pct(&vhost)));
    let streams: Vec<String> = queues
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["type"] == "stream")
        .map(|q| q["name"].as_str().unwrap().to_string())
        .collect();
    parked.retain(|queue, _| !streams.contains(queue));
    let names: Vec<String> = queues
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap().to_string())
        .filter(|name| !streams.contains(name))
        .collect();
    // A copy whose last move is the broker's (a rejection dead-lettered into its
    // parking queue) arrives there on the broker's own time, later on a loaded
    // machine: the queues are counted (exactly) until they hold what the trace says,
    // and a copy that rests elsewhere fails the comparison at the deadline.
    let count_resting = || {
        rt.block_on(async {
            let mut resting = BTreeMap::new();
            for name in &names {
                let n = client.ready(name).await;
                if n > 0 {
                    resting.insert(name.clone(), n);
                }
            }
            resting
        })
    };
    let mut resting = count_resting();
    node.wait_until(Duration::from_secs(60), || {
        resting = count_resting();
        resting == parked
    });
    assert_eq!(
        resting, parked,
        "{file}: messages left in queues (broker, then trace)"
    );
    rt.block_on(client.close());
    node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
}

fn the_examples_agree_with_the_trace(version: Version) {
    let started = Instant::now();
    let notify = ("notifications", "notify.sms.urgent");
    example_agrees_with_the_trace(version, "ladder.yaml", "notifications", "ladder", notify, 9);
    let push = ("notifications", "notify.push.eu");
    example_agrees_with_the_trace(version, "ladder.yaml", "notifications", "ladder", push, 2);
    let inner = ("service_a_inner_exch", "");
    let (vh, mc, sl) = ("service_a_vh", "multi-consumer", "single-loop");
    example_agrees_with_the_trace(version, "multi-consumer.yaml", vh, mc, inner, 1);
    example_agrees_with_the_trace(version, "multi-consumer.yaml", vh, mc, inner, 5);
    example_agrees_with_the_trace(version, "single-loop.yaml", vh, sl, inner, 5);
    let payment = ("events", "payment.authorized");
    example_agrees_with_the_trace(version, "shop.yaml", "shop", "shop", payment, 3);
    example_agrees_with_the_trace(version, "shop.yaml", "shop", "shop", ("email", "send"), 9);
    eprintln!(
        "the examples agree with the trace in {:.1?}",
        started.elapsed()
    );
}

per_version!(
    random_topologies_agree_with_the_trace,
    the_examples_agree_with_the_trace
);
