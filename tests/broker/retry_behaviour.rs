//! The retry topologies warren compiles, exercised end to end on real RabbitMQ 3.10
//! and 4.0 nodes with a real AMQP client that follows the consumer contract.
//!
//! Each scenario applies a test copy of an example (short delays, a vhost and spec
//! name of its own) to the shared node of its version with the `warren` binary, reads
//! the consumer contract with `warren compile --contract`, and runs consumers from
//! `tests/broker/amqp.rs`; [`Scenario`] does the setup they share. Times are measured:
//! a delivery comes at least `delay` after the previous one; upper bounds are generous
//! (seconds).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lapin::BasicProperties;
use lapin::message::Delivery;
use lapin::types::{AMQPValue, FieldTable, LongString};
use serde_json::json;

use crate::amqp::{
    self, Action, Client, ConsumerContract, Contract, Decide, Event, Log, RetryContract,
    eventually, message, spawn_consumer,
};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;

/// Upper bound for anything that should happen "soon" (never tight): a bound for what
/// never happens, wide enough for a machine whose CPU other work takes.
const SOON: Duration = Duration::from_secs(60);

/// What every scenario starts from: a spec applied to a fresh vhost on the shared node
/// of its version, the spec's consumer contract, and an AMQP connection to the vhost
/// on a runtime of the scenario's own. The connection is closed when the scenario
/// ends (unless it fails).
struct Scenario {
    node: &'static Node,
    vhost: String,
    spec: Spec,
    contract: Contract,
    rt: tokio::runtime::Runtime,
    client: Client,
}

impl Scenario {
    /// Applies `spec(vhost)` to a fresh vhost named `PREFIX-...` on the shared node of
    /// `version`, reads the contract for `version` and connects to the vhost.
    #[track_caller]
    fn start(version: Version, prefix: &str, spec: impl FnOnce(&str) -> Spec) -> Scenario {
        let node = Node::shared(version);
        let vhost = node.unused_vhost(prefix);
        let spec = spec(&vhost);
        apply(node, &spec, &vhost);
        let contract = Contract::of(&spec.path, version.target());
        let rt = amqp::runtime();
        let client = rt.block_on(Client::connect(node, &vhost));
        Scenario {
            node,
            vhost,
            spec,
            contract,
            rt,
            client,
        }
    }

    /// Applies the spec again (after [`Spec::write`]); returns how long `warren apply`
    /// took.
    #[track_caller]
    fn reapply(&self) -> Duration {
        apply(self.node, &self.spec, &self.vhost)
    }

    /// The contract of `consumer` (by consumer name).
    #[track_caller]
    fn consumer(&self, consumer: &str) -> ConsumerContract {
        self.contract.consumer(consumer).clone()
    }

    /// A second connection to the vhost.
    fn connect(&self) -> Client {
        self.rt.block_on(Client::connect(self.node, &self.vhost))
    }

    /// Starts `consumer` (see [`spawn_consumer`]), logging to `log`.
    fn consume(&self, consumer: &ConsumerContract, prefetch: u16, decide: Decide, log: &Log) {
        self.rt.block_on(spawn_consumer(
            &self.client,
            consumer,
            prefetch,
            decide,
            log,
            false,
        ));
    }

    /// Publishes and waits for the confirm; panics if the message is unroutable.
    #[track_caller]
    fn publish(&self, exchange: &str, routing_key: &str, body: &[u8], properties: BasicProperties) {
        self.rt
            .block_on(self.client.publish(exchange, routing_key, body, properties))
            .unwrap();
    }

    /// Ready messages in `queue` (exact).
    fn ready(&self, queue: &str) -> u32 {
        self.rt.block_on(self.client.ready(queue))
    }

    /// Every queue of the vhost with its ready message count (exact, via passive
    /// declare).
    fn depths(&self) -> BTreeMap<String, u32> {
        let names: Vec<String> = self
            .node
            .get(&format!("/api/queues/{}?columns=name", pct(&self.vhost)))
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["name"].as_str().unwrap().to_string())
            .collect();
        self.rt.block_on(async {
            let mut depths = BTreeMap::new();
            for name in names {
                let n = self.client.ready(&name).await;
                depths.insert(name, n);
            }
            depths
        })
    }

    /// Asserts that the one message left in the vhost is in the parking queue of
    /// `retry`, and takes it. A consumer that only rejects leaves the last move to the
    /// broker, which dead-letters the message into the parking queue on its own time
    /// (later on a loaded machine): the depths are read until they show it there.
    #[track_caller]
    fn take_the_parked_message(&self, retry: &RetryContract) -> Delivery {
        let parking = retry.on_exhausted.queue.clone().unwrap();
        let expected = BTreeMap::from([(parking.clone(), 1)]);
        let mut depths = BTreeMap::new();
        let parked = self.node.wait_until(SOON, || {
            depths = non_empty(&self.depths());
            depths == expected
        });
        assert!(parked, "{depths:?}, expected {expected:?}");
        self.rt.block_on(self.client.get(&parking)).unwrap()
    }

    /// Waits until `log` has `n` events, then a little longer to see that no more come.
    #[track_caller]
    fn wait_for_events(&self, log: &Log, n: usize, quiet: Duration) -> Vec<Event> {
        let reached = self.rt.block_on(eventually(SOON, || log.len() >= n));
        assert!(
            reached,
            "expected {n} deliveries, got {}: {:#?}",
            log.len(),
            summary(&log.events())
        );
        std::thread::sleep(quiet);
        let events = log.events();
        assert_eq!(
            events.len(),
            n,
            "more deliveries than expected: {:#?}",
            summary(&events)
        );
        events
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.rt.block_on(self.client.close());
        }
    }
}

/// `warren apply SPEC --auto-approve` against `node`, then lets the node's user into
/// `vhost`. Returns how long the apply took.
#[track_caller]
fn apply(node: &Node, spec: &Spec, vhost: &str) -> Duration {
    let started = Instant::now();
    let out = node.apply(spec.arg()).run();
    let took = started.elapsed();
    assert!(
        out.code == Some(0),
        "warren apply failed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    node.put(
        &format!("/api/permissions/{}/{}", pct(vhost), pct(&node.user)),
        &json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
    took
}

/// Queues of `vhost` that hold messages.
fn non_empty(depths: &BTreeMap<String, u32>) -> BTreeMap<String, u32> {
    depths
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

fn always(ok: bool) -> Decide {
    Arc::new(move |_, _| ok)
}

fn summary(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{} {} retries={} {:?}",
                e.consumer, e.queue, e.retries, e.action
            )
        })
        .collect()
}

/// Asserts each event comes at least `delays[i]` after the previous one.
#[track_caller]
fn assert_gaps(events: &[Event], delays_ms: &[u64]) -> Vec<Duration> {
    assert_eq!(events.len(), delays_ms.len() + 1);
    let gaps: Vec<Duration> = events.windows(2).map(|w| w[1].at - w[0].at).collect();
    for (gap, delay) in gaps.iter().zip(delays_ms) {
        assert!(
            *gap >= Duration::from_millis(*delay),
            "a retry came after {gap:?}, before its delay of {delay} ms (gaps {gaps:?})"
        );
        assert!(
            *gap < Duration::from_millis(*delay) + SOON,
            "gap {gap:?} for {delay} ms"
        );
    }
    gaps
}

fn text_header(value: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(value))
}

// ---------------------------------------------------------------------------
// 1. The article's single loop.

fn the_articles_single_loop(version: Version) {
    let s = Scenario::start(version, "single-loop", |vhost| {
        Spec::example(
            "single-loop.yaml",
            &[
                (
                    "name: single-loop\n",
                    &format!("name: {vhost}\ndefaults:\n  queue_type: classic\n"),
                ),
                ("service_a_vh:", &format!("{vhost}:")),
                ("delays: [60s]", "delays: [300ms]"),
            ],
        )
    });
    let input = s.consumer("input");
    let retry = input.retry().clone();
    assert_eq!((retry.mode.as_str(), retry.max_retries), ("reject", 2));

    let log = Log::default();
    s.consume(&input, 10, always(false), &log);
    s.publish("service_a_inner_exch", "", b"hello", message("m1"));

    let events = s.wait_for_events(&log, 3, Duration::from_millis(1200));
    let delays: Vec<u64> = retry.schedule.iter().map(|step| step.delay_ms).collect();
    assert_eq!(delays, [300, 300]);
    assert_gaps(&events, &delays);
    // The broker counts: x-death {work queue, rejected} is the number of retries so far.
    let retries: Vec<u32> = events.iter().map(|e| e.retries).collect();
    assert_eq!(retries, [0, 1, 2]);
    let article: Vec<&str> = events
        .iter()
        .flat_map(|e| match e.action {
            Action::Rejected => ["Processing", "Retrying"],
            Action::Dropped => ["Processing", "Can't retry, drop"],
            _ => panic!("unexpected {:?}", e.action),
        })
        .collect();
    assert_eq!(
        article,
        [
            "Processing",
            "Retrying",
            "Processing",
            "Retrying",
            "Processing",
            "Can't retry, drop"
        ]
    );
    // Returned through the inner exchange, as the article does.
    assert!(events.iter().all(|e| e.body == b"hello"));
    assert_eq!(
        events[2]
            .headers
            .get("x-death")
            .map(amqp::to_json)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Gone: in no queue at all.
    let depths = s.depths();
    assert_eq!(depths.len(), 2, "{depths:?}");
    assert!(non_empty(&depths).is_empty(), "{depths:?}");
}

// ---------------------------------------------------------------------------
// 2. Two consumers on one fanout exchange.

/// `examples/multi-consumer.yaml` on `vhost`, with a retry delay of `delay`.
fn multi_consumer_spec(vhost: &str, delay: &str) -> Spec {
    Spec::example(
        "multi-consumer.yaml",
        &[
            ("name: multi-consumer", &format!("name: {vhost}")),
            ("service_a_vh:", &format!("{vhost}:")),
            ("delays: [60s]", &format!("delays: [{delay}]")),
        ],
    )
}

fn a_retry_returns_only_to_the_consumer_that_failed(version: Version) {
    let s = Scenario::start(version, "multi", |vhost| {
        multi_consumer_spec(vhost, "300ms")
    });
    let a = s.consumer("input");
    let b = s.consumer("another_input");

    let log = Log::default();
    s.consume(&a, 10, always(false), &log);
    s.consume(&b, 10, always(true), &log);
    s.publish("service_a_inner_exch", "", b"order 42", message("m1"));

    let events = s.wait_for_events(&log, 4, Duration::from_millis(1200));
    let of = |name: &str| -> Vec<Event> {
        events
            .iter()
            .filter(|e| e.consumer == name)
            .cloned()
            .collect()
    };
    let (a_events, b_events) = (of("input"), of("another_input"));
    assert_eq!(b_events.len(), 1, "{:#?}", summary(&events));
    assert_eq!(b_events[0].action, Action::Processed);
    assert_eq!(
        a_events
            .iter()
            .map(|e| (e.retries, e.action.clone()))
            .collect::<Vec<_>>(),
        [
            (0, Action::Rejected),
            (1, Action::Rejected),
            (2, Action::Parked)
        ]
    );
    assert_gaps(&a_events, &[300, 300]);

    // Quorum work queue (the example's default): the broker counted the rejections
    // in x-death on this version, and the parked copy is the only message left.
    let parked = s.take_the_parked_message(a.retry());
    assert_eq!(parked.data, b"order 42");
    assert_eq!(amqp::x_death_count(&parked, &a.queue, "rejected"), 2);
}

// ---------------------------------------------------------------------------
// 3 and 4. The ladder, in publish and reject-chain modes.

fn ladder_spec(vhost: &str, queue_type: &str) -> Spec {
    Spec::example(
        "ladder.yaml",
        &[
            ("name: ladder", &format!("name: {vhost}")),
            ("queue_type: quorum", &format!("queue_type: {queue_type}")),
            ("  notifications:\n", &format!("  {vhost}:\n")),
            ("delays: [30s, 5m, 30m]", "delays: [200ms, 400ms, 600ms]"),
        ],
    )
}

fn publish_original(s: &Scenario, routing_key: &str) {
    let mut headers = FieldTable::default();
    headers.insert("tenant".into(), text_header("acme"));
    headers.insert("attempt-budget".into(), AMQPValue::LongLongInt(7));
    let props = message("n-1")
        .with_headers(headers)
        .with_content_type("text/plain".into())
        .with_correlation_id("c-9".into());
    s.publish("notifications", routing_key, b"your code is 1234", props);
}
#[track_caller]
fn assert_original_kept(parked: &lapin::message::Delivery) {
    assert_eq!(parked.data, b"your code is 1234");
    let p = &parked.properties;
    assert_eq!(p.message_id().as_ref().map(|s| s.as_str()), Some("n-1"));
    assert_eq!(
        p.content_type().as_ref().map(|s| s.as_str()),
        Some("text/plain")
    );
    assert_eq!(p.correlation_id().as_ref().map(|s| s.as_str()), Some("c-9"));
    assert_eq!(p.delivery_mode(), &Some(2));
    assert_eq!(
        amqp::header_string(parked, "tenant").as_deref(),
        Some("acme")
    );
    assert_eq!(amqp::header_u64(parked, "attempt-budget"), Some(7));
}

fn the_ladder_in_publish_mode(version: Version) {
    let s = Scenario::start(version, "ladder-publish", |vhost| {
        ladder_spec(vhost, "quorum")
    });
    let sms = s.consumer("sms");
    let retry = sms.retry().clone();
    assert_eq!(retry.mode, "publish");

    let log = Log::default();
    s.consume(&sms, 10, always(false), &log);
    publish_original(&s, "notify.sms.urgent");

    let events = s.wait_for_events(&log, 4, Duration::from_millis(1000));
    let delays: Vec<u64> = retry.schedule.iter().map(|step| step.delay_ms).collect();
    assert_eq!(delays, [200, 400, 600]);
    assert_gaps(&events, &delays);
    assert_eq!(
        events
            .iter()
            .map(|e| (e.retries, e.action.clone()))
            .collect::<Vec<_>>(),
        [
            (0, Action::Retried { retry: 1 }),
            (1, Action::Retried { retry: 2 }),
            (2, Action::Retried { retry: 3 }),
            (3, Action::Parked)
        ]
    );
    // Each return came from the tier of that retry.
    for (event, step) in events[1..].iter().zip(&retry.schedule) {
        let from_tier = amqp::x_death_of(&event.headers);
        assert_eq!(
            from_tier.len(),
            1,
            "only the last death is kept: {from_tier:?}"
        );
        assert_eq!(from_tier[0]["queue"], step.queue.as_str());
        assert_eq!(from_tier[0]["reason"], "expired");
    }

    let parked = s.take_the_parked_message(&retry);
    assert_original_kept(&parked);
    assert_eq!(amqp::header_u64(&parked, amqp::RETRY_HEADER), Some(3));
    let key_header = retry
        .original_routing_key_header
        .as_deref()
        .expect("the contract names the header that keeps the original routing key");
    assert_eq!(
        amqp::header_string(&parked, key_header).as_deref(),
        Some("notify.sms.urgent")
    );
}

fn the_ladder_with_a_consumer_that_only_rejects(version: Version) {
    let s = Scenario::start(version, "ladder-chain", |vhost| {
        ladder_spec(vhost, "quorum")
    });
    let push = s.consumer("push");
    let retry = push.retry().clone();
    assert_eq!(retry.mode, "reject-chain");
    assert_eq!(push.consume_from.len(), 4);

    let log = Log::default();
    s.consume(&push, 10, always(false), &log);
    publish_original(&s, "notify.push.urgent");

    let events = s.wait_for_events(&log, 4, Duration::from_millis(1000));
    assert_gaps(&events, &[200, 400, 600]);
    // Attempt n + 1 comes from consume_from[n]; the consumer only ever rejected.
    let path: Vec<&str> = events.iter().map(|e| e.queue.as_str()).collect();
    assert_eq!(
        path,
        push.consume_from
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    assert!(events.iter().all(|e| e.action == Action::Rejected));

    let parked = s.take_the_parked_message(&retry);
    assert_original_kept(&parked);
    // The broker recorded the whole path; the first rejection keeps the original key.
    let deaths = amqp::x_death(&parked);
    for queue in &push.consume_from {
        assert_eq!(
            amqp::x_death_count(&parked, queue, "rejected"),
            1,
            "{deaths:#?}"
        );
    }
    for step in &retry.schedule {
        assert_eq!(
            amqp::x_death_count(&parked, &step.queue, "expired"),
            1,
            "{deaths:#?}"
        );
    }
    let first = deaths
        .iter()
        .find(|e| e["queue"] == push.queue.as_str())
        .unwrap();
    assert_eq!(first["routing-keys"], json!(["notify.push.urgent"]));
}

// ---------------------------------------------------------------------------
// 5. No loss under load.

const LOAD: usize = 10_000;

fn no_message_is_lost_or_duplicated_under_load(version: Version) {
    let s = Scenario::start(version, "load", |vhost| ladder_spec(vhost, "quorum"));
    let sms = s.consumer("sms");
    let parking = sms.retry().on_exhausted.queue.clone().unwrap();

    let log = Log::default();
    let fail_30_percent: Decide = Arc::new(|_, _| rand::random::<f64>() >= 0.3);
    s.consume(&sms, 200, fail_30_percent, &log);

    let started = Instant::now();
    // A connection of its own for the publisher, confirms awaited in batches.
    let publisher = s.connect();
    s.rt.block_on(async {
        let mut pending = Vec::new();
        for i in 0..LOAD {
            let body = format!("{i}");
            let props = message(&format!("m{i}"));
            pending.push(
                publisher
                    .publish_unconfirmed("notifications", "notify.sms.bulk", body.as_bytes(), props)
                    .await
                    .unwrap(),
            );
            if pending.len() == 500 || i == LOAD - 1 {
                for confirmation in futures::future::join_all(pending.drain(..)).await {
                    let confirmation = confirmation.unwrap();
                    assert!(confirmation.is_ack());
                    assert!(confirmation.take_message().is_none(), "unroutable");
                }
            }
        }
    });
    eprintln!("{version}: {LOAD} published in {:?}", started.elapsed());

    let finished = |events: &[Event]| {
        events
            .iter()
            .filter(|e| matches!(e.action, Action::Processed | Action::Parked))
            .count()
    };
    // The bound is for a run that never finishes: some ten thousand messages and their
    // retries through quorum queues take a minute on an idle 2-core machine, several on
    // a loaded one.
    let done = s.rt.block_on(eventually(Duration::from_secs(600), || {
        finished(&log.events()) >= LOAD
    }));
    std::thread::sleep(Duration::from_millis(1000));
    let events = log.events();
    assert!(done, "only {} of {LOAD} finished", finished(&events));
    eprintln!(
        "{version}: {LOAD} messages, {} deliveries in {:?}",
        events.len(),
        started.elapsed()
    );

    let mut outcome: HashMap<String, Vec<Action>> = HashMap::new();
    for e in &events {
        outcome
            .entry(e.message_id.clone().unwrap())
            .or_default()
            .push(e.action.clone());
    }
    assert_eq!(outcome.len(), LOAD);
    let (mut processed, mut parked) = (0, 0);
    for (id, actions) in &outcome {
        let (last, before) = actions.split_last().unwrap();
        assert!(
            before.iter().all(|a| matches!(a, Action::Retried { .. })),
            "{id}: {actions:?}"
        );
        match last {
            Action::Processed => processed += 1,
            Action::Parked => parked += 1,
            other => panic!("{id} ended with {other:?}: {actions:?}"),
        }
        assert!(actions.len() <= 4, "{id}: {actions:?}");
    }
    assert_eq!(processed + parked, LOAD);
    let depths = s.depths();
    assert_eq!(
        non_empty(&depths),
        if parked > 0 {
            BTreeMap::from([(parking, parked as u32)])
        } else {
            BTreeMap::new()
        }
    );
    eprintln!("{version}: processed {processed}, parked {parked}");
    s.rt.block_on(publisher.close());
}

// ---------------------------------------------------------------------------
// 6. Quorum queues: x-death counts retries, x-delivery-count counts requeues only.

fn quorum_work_queues_count_retries_in_x_death_not_x_delivery_count(version: Version) {
    let s = Scenario::start(version, "quorum", |vhost| {
        multi_consumer_spec(vhost, "200ms")
    });
    let a = s.consumer("input");
    let queue = s
        .node
        .get(&format!("/api/queues/{}/{}", pct(&s.vhost), pct(&a.queue)));
    assert_eq!(queue["type"], "quorum");

    s.publish("service_a_inner_exch", "", b"q", message("q1"));

    // Requeue 26 times with basic.nack, then 25 times with basic.reject: each more
    // than 4.0's default delivery limit of 20. warren sets the limit of work queues to
    // unlimited, so the message is never dead-lettered.
    let mut seen: Vec<(Option<u64>, Option<u64>, u64)> = Vec::new();
    s.rt.block_on(async {
        for n in 0..=51 {
            let d = take(&s.client, &a.queue).await;
            seen.push((
                amqp::header_u64(&d, "x-delivery-count"),
                amqp::header_u64(&d, "x-acquired-count"),
                amqp::x_death_count(&d, &a.queue, "rejected"),
            ));
            match n {
                0..26 => amqp::requeue(&d).await.unwrap(),
                26..51 => amqp::requeue_failed(&d).await.unwrap(),
                _ => amqp::ack(&d).await.unwrap(),
            }
        }
    });
    eprintln!(
        "{version}: (x-delivery-count, x-acquired-count, x-death count) per delivery: {seen:?}"
    );
    let delivery_counts: Vec<u64> = seen.iter().map(|s| s.0.unwrap_or(0)).collect();
    let expected: Vec<u64> = match version {
        // Every requeue counts, nack or reject.
        Version::V3_10 | Version::V4_0 => (0..=51).collect(),
        // A nack is a return, not a failed delivery: only the rejects count (and
        // x-acquired-count counts every delivery before).
        Version::V4_3 => {
            let acquired: Vec<u64> = seen.iter().map(|s| s.1.unwrap_or(0)).collect();
            assert_eq!(acquired, (0..=51).collect::<Vec<u64>>(), "{seen:?}");
            std::iter::repeat_n(0, 27).chain(1..=25).collect()
        }
    };
    assert_eq!(delivery_counts, expected, "{seen:?}");
    assert!(
        seen.iter().all(|s| s.2 == 0),
        "requeues are not deaths: {seen:?}"
    );
    assert_eq!(s.ready(&a.retry().schedule[0].queue), 0);

    // Each rejection of another message goes through the delay tier and comes back:
    // x-death counts the retries on every version; x-delivery-count is reset (3.10) or
    // counts what the queue saw as failed deliveries (4.0, 4.3), so it is no retry
    // counter either way.
    s.publish("service_a_inner_exch", "", b"q", message("q2"));
    let returns: Vec<(u64, Option<u64>)> = s.rt.block_on(async {
        let mut returns = Vec::new();
        let mut d = take(&s.client, &a.queue).await;
        for _ in 0..3 {
            amqp::reject(&d).await.unwrap();
            d = take(&s.client, &a.queue).await;
            returns.push((
                amqp::x_death_count(&d, &a.queue, "rejected"),
                amqp::header_u64(&d, "x-delivery-count"),
            ));
        }
        amqp::ack(&d).await.unwrap();
        returns
    });
    eprintln!("{version}: (x-death count, x-delivery-count) after each return: {returns:?}");
    let counts: Vec<u64> = returns.iter().map(|r| r.0).collect();
    assert_eq!(counts, [1, 2, 3]);
    let delivery_counts: Vec<u64> = returns.iter().map(|r| r.1.unwrap_or(0)).collect();
    match version {
        // The returned copy is a new message: the count starts again.
        Version::V3_10 => assert_eq!(delivery_counts, [0, 0, 0]),
        // The count travels with the dead-lettered message and grows with each
        // rejection, but not with the requeues before it: still no retry count.
        Version::V4_0 | Version::V4_3 => assert_eq!(delivery_counts, [1, 2, 3]),
    }
}

/// Waits for one message in `queue` (basic.get, unacked).
async fn take(client: &Client, queue: &str) -> Delivery {
    use lapin::options::BasicGetOptions;
    let channel = client.connection.create_channel().await.unwrap();
    let deadline = Instant::now() + SOON;
    loop {
        if let Some(m) = channel
            .basic_get(queue.into(), BasicGetOptions { no_ack: false })
            .await
            .unwrap()
        {
            // Keep the channel open as long as the delivery is unacked.
            std::mem::forget(channel);
            return m.delivery;
        }
        assert!(Instant::now() < deadline, "nothing arrived in {queue}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------
// 7. Changing a delay while messages wait in the tier.

/// A spec whose vhost and name are `vhost`, with one consumer `worker` of service
/// `jobs` on routing key `job`; `settings` are the consumer's other lines.
fn worker_yaml(vhost: &str, settings: &str) -> String {
    format!(
        "version: 1\nname: {vhost}\nvhosts:\n  {vhost}:\n    services:\n      jobs:\n        consumers:\n          worker:\n            routing_keys: [job]\n{settings}"
    )
}

fn a_delay_change_applies_to_new_retries_and_loses_nothing(version: Version) {
    let settings = |delay: &str| {
        format!(
            "            retry:\n              delays: [{delay}]\n              max_retries: 2\n"
        )
    };
    let s = Scenario::start(version, "live", |vhost| {
        Spec::new(&worker_yaml(vhost, &settings("5s")))
    });
    let worker = s.consumer("worker");
    let tier = worker.retry().schedule[0].queue.clone();

    let log = Log::default();
    // The consumer runs on a connection of its own, closed while the delay changes:
    // the messages that come back from the tier meanwhile wait in the work queue, and
    // every second retry is published once the broker has the new TTL, however long
    // the apply takes on a loaded machine (longer than the old delay, and the retries
    // published before the change would keep it).
    let before_change = s.connect();
    s.rt.block_on(spawn_consumer(
        &before_change,
        &worker,
        50,
        always(false),
        &log,
        false,
    ));
    const N: usize = 20;
    s.rt.block_on(async {
        for i in 0..N {
            s.client
                .publish("jobs", "job", b"job", message(&format!("j{i}")))
                .await
                .unwrap();
        }
    });
    assert!(s.rt.block_on(eventually(SOON, || log.len() >= N)));
    assert_eq!(s.ready(&tier) as usize, N, "all wait in the tier");
    s.rt.block_on(before_change.close());

    s.spec.write(&worker_yaml(&s.vhost, &settings("300ms")));
    let took = s.reapply();
    let changed = Instant::now();
    eprintln!("{version}: the delay change applied in {took:?}");
    let ttl_shown = s.node.wait_until(SOON, || {
        s.node
            .get(&format!("/api/queues/{}/{}", pct(&s.vhost), pct(&tier)))
            ["effective_policy_definition"]["message-ttl"]
            == 300
    });
    assert!(ttl_shown, "the tier's effective policy has the new TTL");
    s.consume(&worker, 50, always(false), &log);

    let events = s.wait_for_events(&log, 3 * N, Duration::from_millis(1000));
    let mut by_id: HashMap<String, Vec<Event>> = HashMap::new();
    for e in events {
        by_id
            .entry(e.message_id.clone().unwrap())
            .or_default()
            .push(e);
    }
    assert_eq!(by_id.len(), N);
    let mut waited_old = 0;
    for (id, attempts) in &by_id {
        let actions: Vec<Action> = attempts.iter().map(|e| e.action.clone()).collect();
        assert_eq!(
            actions,
            [
                Action::Retried { retry: 1 },
                Action::Retried { retry: 2 },
                Action::Parked
            ],
            "{id}"
        );
        // The retry published after the change uses the new delay: back sooner than
        // the old delay of 5 s could have let it out.
        let second = attempts[2].at - attempts[1].at;
        assert!(attempts[1].at >= changed, "{id}: retried before the change");
        assert!(second >= Duration::from_millis(300), "{id}: {second:?}");
        assert!(
            second < Duration::from_secs(5),
            "{id}: still the old delay: {second:?}"
        );
        if attempts[1].at - attempts[0].at >= Duration::from_secs(5) {
            waited_old += 1;
        }
    }
    eprintln!("{version}: {waited_old} of {N} messages already in the tier kept the old delay");
    let parking = worker.retry().on_exhausted.queue.clone().unwrap();
    assert_eq!(s.ready(&parking) as usize, N);
}

// ---------------------------------------------------------------------------
// Broker semantics the contract relies on.

/// A dead letter that no binding routes is dropped without a trace; a consumer's
/// re-publish with `mandatory` is returned instead, so publish mode never loses it.
fn an_unroutable_dead_letter_is_dropped_silently(version: Version) {
    let s = Scenario::start(version, "unroutable", |vhost| ladder_spec(vhost, "quorum"));
    let push = s.consumer("push");
    let sms = s.consumer("sms");
    // Break both ladders by hand: no binding for tier 1 any more.
    for c in [&push, &sms] {
        let retry = c.retry();
        s.node.delete(&format!(
            "/api/bindings/{}/e/{}/q/{}/1",
            pct(&s.vhost),
            pct(&retry.exchange),
            pct(&retry.schedule[0].queue)
        ));
    }

    publish_original(&s, "notify.push.x");
    s.rt.block_on(async {
        let d = take(&s.client, &push.queue).await;
        amqp::reject(&d).await.unwrap();
    });
    std::thread::sleep(Duration::from_millis(500));
    let depths = s.depths();
    assert!(
        non_empty(&depths).is_empty(),
        "the rejected message is gone: {depths:?}"
    );

    publish_original(&s, "notify.sms.x");
    let returned = s.rt.block_on(async {
        let d = take(&s.client, &sms.queue).await;
        s.client.fail(&sms, &d, &sms.queue).await
    });
    assert!(
        returned.as_ref().is_err_and(|e| e.contains("unroutable")),
        "{returned:?}"
    );
}

/// With a numeric delivery limit, a message requeued past it is dead-lettered into
/// the ladder (reason `delivery_limit`), and when it expires back into the work queue
/// the broker sees a cycle without a rejection and drops it: the reason warren makes
/// the limit of work queues unlimited. On 4.3 only failed deliveries (`basic.reject`
/// with requeue) count toward the limit: a message requeued with `basic.nack` passes
/// it without end.
fn a_delivery_limit_dead_letter_is_dropped_by_cycle_detection(version: Version) {
    let s = Scenario::start(version, "cycle", |vhost| {
        Spec::new(&worker_yaml(
            vhost,
            "            delivery_limit: 2\n            retry:\n              delays: [3s]\n",
        ))
    });
    let worker = s.consumer("worker");
    let tier = worker.retry().schedule[0].queue.clone();

    s.publish("jobs", "job", b"job", message("j1"));
    // What the contract says about requeueing, which this test proves on each
    // version: `basic.reject` counts toward the limit, and where the contract forbids
    // `basic.nack` (4.3), a nack does not count.
    let requeue = worker
        .requeue
        .as_ref()
        .expect("a quorum work queue's contract says how to requeue");
    assert_eq!(requeue.with, "basic.reject");
    let counting = requeue.never_with.is_none();
    assert_eq!(
        counting,
        version != Version::V4_3,
        "the contract forbids nacks exactly on 4.3: {requeue:?}"
    );
    if !counting {
        // Well past the limit of 2 with nacks, once the limit's policy is on the
        // queue: still in the work queue, never in the tier.
        let limited = || {
            s.node.get(&format!(
                "/api/queues/{}/{}",
                pct(&s.vhost),
                pct(&worker.queue)
            ))["effective_policy_definition"]["delivery-limit"]
                == 2
        };
        assert!(
            s.node.wait_until(SOON, limited),
            "the limit's policy applies"
        );
        let returned = s.rt.block_on(async {
            let mut returned = 0;
            while returned < 10 {
                let d = take(&s.client, &worker.queue).await;
                amqp::requeue(&d).await.unwrap();
                returned += 1;
            }
            returned
        });
        // A quorum queue applies a nack once its log has it: wait for the message to
        // be back, then it must be in the work queue and not in the tier.
        let back = s.node.wait_until(SOON, || s.ready(&worker.queue) == 1);
        assert!(back, "still in the work queue after {returned} nacks");
        assert_eq!(
            s.ready(&tier),
            0,
            "{returned} nacks are no failed deliveries"
        );
    }
    // Requeue until the queue gives up on it (the limit's policy may need a moment):
    // until the message is in the tier. An empty work queue alone proves nothing: the
    // last requeue may not be applied yet. The tier's 3 s delay is the window in which
    // the message is seen there before it expires back and is dropped.
    let (requeues, in_tier) = s.rt.block_on(async {
        let channel = s.client.connection.create_channel().await.unwrap();
        let mut requeues = 0;
        let deadline = Instant::now() + SOON;
        while Instant::now() < deadline {
            match channel
                .basic_get(
                    worker.queue.as_str().into(),
                    lapin::options::BasicGetOptions { no_ack: false },
                )
                .await
                .unwrap()
            {
                Some(m) => {
                    if counting {
                        amqp::requeue(&m.delivery).await.unwrap();
                    } else {
                        amqp::requeue_failed(&m.delivery).await.unwrap();
                    }
                    requeues += 1;
                }
                None if s.client.ready(&tier).await > 0 => return (requeues, true),
                None => {}
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        (requeues, false)
    });
    eprintln!("{version}: dead-lettered after {requeues} requeues");
    assert!(requeues >= 2, "{requeues}");
    // Seen in the tier by the loop itself: read again here, it may already have
    // expired back on a loaded machine (its delay is the whole window).
    assert!(in_tier, "it entered the delay tier");
    // It expires back towards the work queue after 3 s, and is dropped: read until
    // no queue holds it (a message the broker did not drop stays, and fails this).
    let mut depths = BTreeMap::new();
    let dropped = s.node.wait_until(SOON, || {
        depths = non_empty(&s.depths());
        depths.is_empty()
    });
    assert!(dropped, "dropped on return: {depths:?}");
}

// ---------------------------------------------------------------------------
// 8. `mode: native`: the work queue waits (RabbitMQ 4.3).

/// A consumer that follows only the contract of a `native` ladder (reject with requeue,
/// `on_failure[0]`) sees each wait of the schedule in turn, and after `max_retries` the
/// message is in the parking queue once, with its body and properties as published.
/// Before 4.3 the same spec is refused and nothing is created.
fn a_native_ladder_waits_in_the_work_queue_then_parks(version: Version) {
    let settings = "            retry:\n              mode: native\n              delays: [500ms, 1s, 1500ms]\n              max_retries: 4\n";
    if version != Version::V4_3 {
        a_native_ladder_is_refused(version, settings);
        return;
    }
    let s = Scenario::start(version, "native", |vhost| {
        Spec::new(&worker_yaml(vhost, settings))
    });
    let worker = s.consumer("worker");
    let retry = worker.retry().clone();
    assert_eq!(retry.mode, "native");
    assert_eq!(retry.max_retries, 4);
    let waits: Vec<u64> = retry.schedule.iter().map(|step| step.delay_ms).collect();
    assert_eq!(waits, [500, 1000, 1500, 1500], "the contract's schedule");
    let parking = retry.on_exhausted.queue.clone().expect("a parking queue");

    let mut headers = FieldTable::default();
    headers.insert(
        "app-trace".into(),
        AMQPValue::LongString(LongString::from("t-42")),
    );
    let properties = message("native-1")
        .with_content_type("text/plain".into())
        .with_headers(headers);
    s.publish("jobs", "job", b"native body", properties);

    // Consume as the contract says, timing each delivery, until the last one has been
    // followed by four times the longest wait without another (one more would have
    // come by then: anything delivered after the parking would be a duplicate). The deadline
    // is for deliveries that never come, however slow a loaded machine is.
    let total: u64 = waits.iter().sum();
    let longest = Duration::from_millis(waits.iter().copied().max().unwrap_or(0));
    let seen = s.rt.block_on(async {
        use lapin::options::BasicGetOptions;
        let channel = s.client.connection.create_channel().await.unwrap();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(total) + SOON;
        let mut seen: Vec<(Duration, Option<u64>)> = Vec::new();
        while Instant::now() < deadline {
            if seen.len() > retry.max_retries as usize
                && started.elapsed() - seen[seen.len() - 1].0 > longest * 4
            {
                break;
            }
            match channel
                .basic_get(
                    worker.queue.as_str().into(),
                    BasicGetOptions { no_ack: false },
                )
                .await
                .unwrap()
            {
                Some(m) => {
                    seen.push((
                        started.elapsed(),
                        amqp::header_u64(&m.delivery, "x-delivery-count"),
                    ));
                    amqp::requeue_failed(&m.delivery).await.unwrap();
                }
                None => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
        seen
    });
    assert_eq!(
        seen.len(),
        retry.max_retries as usize + 1,
        "one first delivery and one per retry, no more: {seen:?}"
    );
    // Each retry waits its step of the schedule (the lower bound). The upper bound is
    // for a wait far off the schedule; the broker's own timer and the basic.get round
    // trips of a loaded machine may add seconds.
    for (index, pair) in seen.windows(2).enumerate() {
        let gap = pair[1].0 - pair[0].0;
        let want = Duration::from_millis(waits[index]);
        assert!(
            gap + Duration::from_millis(50) >= want && gap <= want + Duration::from_secs(10),
            "retry {} came after {gap:?}, the contract says {want:?}: {seen:?}",
            index + 1
        );
    }
    // `count_from`: the failed deliveries so far, absent on the first delivery.
    let counts: Vec<u64> = seen.iter().map(|(_, count)| count.unwrap_or(0)).collect();
    assert_eq!(
        counts,
        [0, 1, 2, 3, 4],
        "x-delivery-count as the contract reads it"
    );

    assert!(
        s.node.wait_until(SOON, || s.ready(&parking) == 1),
        "parked once: {:?}",
        s.depths()
    );
    assert_eq!(s.ready(&worker.queue), 0, "nothing left in the work queue");
    let parked =
        s.rt.block_on(s.client.get(&parking))
            .expect("the parked message");
    assert_eq!(parked.data, b"native body");
    assert_eq!(
        parked
            .properties
            .message_id()
            .as_ref()
            .map(|id| id.to_string()),
        Some("native-1".to_string())
    );
    assert_eq!(
        parked
            .properties
            .content_type()
            .as_ref()
            .map(|t| t.to_string()),
        Some("text/plain".to_string())
    );
    assert_eq!(
        amqp::header_string(&parked, "app-trace").as_deref(),
        Some("t-42")
    );
    assert_eq!(
        amqp::x_death_count(&parked, &worker.queue, "delivery_limit"),
        1,
        "{:?}",
        amqp::x_death(&parked)
    );
}

/// Before 4.3 a `native` ladder is refused at apply, before anything is created.
fn a_native_ladder_is_refused(version: Version, settings: &str) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("native");
    let spec = Spec::new(&worker_yaml(&vhost, settings));
    let out = node.apply(spec.arg()).run();
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("`mode: native` needs RabbitMQ 4.3"),
        "{}",
        out.stderr
    );
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", pct(&vhost)))
            .is_none(),
        "nothing is created on {version}"
    );
}

// ---------------------------------------------------------------------------

per_version!(
    the_articles_single_loop,
    a_retry_returns_only_to_the_consumer_that_failed,
    the_ladder_in_publish_mode,
    the_ladder_with_a_consumer_that_only_rejects,
    no_message_is_lost_or_duplicated_under_load,
    a_delay_change_applies_to_new_retries_and_loses_nothing,
    an_unroutable_dead_letter_is_dropped_silently;
    also_on_4_0:
        a_native_ladder_waits_in_the_work_queue_then_parks,
        quorum_work_queues_count_retries_in_x_death_not_x_delivery_count,
        a_delivery_limit_dead_letter_is_dropped_by_cycle_detection,
);
