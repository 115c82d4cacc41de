//! `warren replay` on real RabbitMQ 3.10 and 4.3 nodes (quorum queues on 4.0 too), with a
//! real AMQP client.
//!
//! - In every retry mode, on classic and on quorum queues: 100 messages parked through
//!   real failures of a consumer that follows the contract; `replay --limit 40` moves
//!   exactly 40, the consumer succeeds on each at its first delivery (its retry count
//!   is 0 again) with its body, properties, headers and first routing key; 60 stay
//!   parked; a replayed message that fails again climbs the whole ladder from tier 1
//!   and is parked again. `warren status` reports 100, then 60 parked messages.
//! - warren killed (SIGKILL) at random moments of a replay: every message is in the
//!   parking queue or in the work queue, exactly once (`WARREN_REPLAY_KILL_TRIALS`
//!   kills per version, default 3, and a Ctrl-C; `scripts/reliability` kills 30 times).
//! - Two replays at once move exactly what both asked for; a work queue deleted during
//!   a replay stops it, and the count it reports is exact.
//! - Bad input changes nothing: a queue that is not a parking queue, a queue not
//!   applied yet.
//! - A broker that takes the copies and never confirms them stops the replay after
//!   `--timeout`: every original is parked again, and the copies are counted as
//!   unconfirmed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lapin::types::{AMQPValue, FieldTable, LongString};
use serde_json::{Value, json};

use crate::amqp::{self, Action, Client, Contract, Decide, Event, Log, eventually, message};
use crate::amqp_proxy::AmqpProxy;
use crate::background::Background;
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

per_version!(
    every_mode_on_classic_queues,
    a_killed_replay_loses_nothing_and_doubles_at_most_a_batch,
    two_replays_at_once_move_what_both_asked_for,
    a_work_queue_deleted_during_a_replay_stops_it_with_an_exact_count,
    bad_input_changes_nothing,
    two_thousand_move_each_once_in_a_timed_run,
    a_full_work_queue_refuses_copies_and_they_stay_parked,
    a_broker_killed_mid_replay_loses_nothing;
    also_on_4_0:
        every_mode_on_quorum_queues,
);

/// Copies in flight in the kill trials (`--batch`): at most this many messages are
/// doubled by one kill.
const KILL_BATCH: u32 = 5;

/// Upper bound for anything that should happen "soon" (never tight): a bound for what
/// never happens, so it is wide enough for a machine whose CPU other work takes (the
/// parking of 300 messages through their ladders, a quorum queue's settling).
const SOON: Duration = Duration::from_secs(90);

/// Upper bound for what the management API's statistics show (a queue's policy, the
/// status report's counts, the connections listed): they come with the node's next
/// emission, which a loaded 3.10 node beside other tests made wait over `SOON` (a
/// re-declared queue not yet listed with its policy after 90 s, 2026-12-07).
const STATISTICS_SHOW: Duration = Duration::from_secs(300);

/// Messages parked per consumer.
const PARKED: usize = 100;

/// Messages the first replay moves.
const FIRST_REPLAY: usize = 40;

/// One service, one consumer per retry mode, short delays.
fn spec(vhost: &str, queue_type: &str) -> Spec {
    Spec::new(&format!(
        r#"version: 1
name: {vhost}
defaults:
  queue_type: {queue_type}
vhosts:
  {vhost}:
    services:
      orders:
        exchange:
          name: orders
          type: topic
        consumers:
          by-publish:
            routing_keys: ["order.publish.#"]
            retry:
              delays: [100ms, 200ms]
              mode: publish
              on_exhausted: park
          by-reject:
            routing_keys: ["order.reject.#"]
            retry:
              delays: [100ms]
              max_retries: 2
              mode: reject
              on_exhausted: park
          by-chain:
            routing_keys: ["order.chain.#"]
            retry:
              delays: [100ms, 200ms]
              mode: reject-chain
              on_exhausted: park
"#
    ))
}

/// A spec applied to a fresh vhost of the shared node, its contract, a connection.
struct Setup<'n> {
    node: &'n Node,
    vhost: String,
    spec: Spec,
    contract: Contract,
    rt: tokio::runtime::Runtime,
    client: Client,
}

impl<'n> Setup<'n> {
    #[track_caller]
    fn start(version: Version, prefix: &str, queue_type: &str) -> Setup<'static> {
        Setup::on(Node::shared(version), version, prefix, queue_type)
    }

    /// [`Setup::start`] on `node`.
    #[track_caller]
    fn on(node: &'n Node, version: Version, prefix: &str, queue_type: &str) -> Setup<'n> {
        let vhost = node.unused_vhost(prefix);
        let spec = spec(&vhost, queue_type);
        node.apply(spec.arg())
            .with(&["--lock-timeout", "2m"])
            .expect(0);
        node.put(
            &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
            &json!({"configure": ".*", "write": ".*", "read": ".*"}),
        );
        let contract = Contract::of(&spec.path, version.target());
        let rt = amqp::runtime();
        let client = rt.block_on(Client::connect(node, &vhost));
        Setup {
            node,
            vhost,
            spec,
            contract,
            rt,
            client,
        }
    }

    /// `warren replay SPEC --queue QUEUE ARGS --auto-approve` against the node.
    fn replay(&self, queue: &str, args: &[&str]) -> std::process::Command {
        let mut all = vec![
            "replay",
            self.spec.arg(),
            "--queue",
            queue,
            "--auto-approve",
        ];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--lock-timeout", "1m"]);
        self.node.warren(&all)
    }

    /// Ready messages in `queue` (exact: passive declare).
    fn ready(&self, queue: &str) -> u32 {
        self.rt.block_on(self.client.ready(queue))
    }

    /// Waits until `queue` holds exactly `n` ready messages.
    #[track_caller]
    fn wait_for_ready(&self, queue: &str, n: u32) {
        let reached = self.node.wait_until(SOON, || self.ready(queue) == n);
        assert!(
            reached,
            "{queue}: expected {n} messages, found {}",
            self.ready(queue)
        );
    }

    /// Publishes `count` messages with ids `PREFIX-i` and routing keys `KEY.i` to the
    /// service's exchange, with properties and headers that must survive.
    fn publish_many(&self, exchange: &str, key: &str, prefix: &str, count: usize) {
        self.rt.block_on(async {
            let mut pending = Vec::new();
            for i in 0..count {
                let confirm = self
                    .client
                    .publish_unconfirmed(
                        exchange,
                        &format!("{key}.{i}"),
                        format!("body {prefix}-{i}").as_bytes(),
                        kept_properties(&format!("{prefix}-{i}")),
                    )
                    .await
                    .unwrap();
                pending.push(confirm);
            }
            for confirmation in futures::future::join_all(pending).await {
                let confirmation = confirmation.unwrap();
                assert!(confirmation.is_ack());
                assert!(confirmation.take_message().is_none(), "unroutable");
            }
        });
    }

    /// Messages in each consumer's parking queue, as `warren status --format json`
    /// reports them.
    fn status_parked(&self) -> BTreeMap<String, u64> {
        let out = self
            .node
            .warren(&["status", self.spec.arg(), "--format", "json"])
            .run()
            .expect(0);
        let document: Value = serde_json::from_str(&out.stdout).unwrap();
        document["consumers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let consumer = c["consumer"].as_str().unwrap().to_string();
                (
                    consumer,
                    c["parking"]["messages"].as_u64().unwrap_or(u64::MAX),
                )
            })
            .collect()
    }

    /// Waits until `warren status` reports `expected` parked messages per consumer.
    #[track_caller]
    fn wait_for_status_parked(&self, expected: &[(&str, u64)]) {
        let expected: BTreeMap<String, u64> =
            expected.iter().map(|(c, n)| (c.to_string(), *n)).collect();
        let reached = self
            .node
            .wait_until(STATISTICS_SHOW, || self.status_parked() == expected);
        assert!(
            reached,
            "warren status reports {:?}, expected {expected:?}",
            self.status_parked()
        );
    }

    /// Every message in `queue`, taken (acked): message ids in order.
    fn drain(&self, queue: &str) -> Vec<String> {
        let mut ids = Vec::new();
        while let Some(delivery) = self.rt.block_on(self.client.get(queue)) {
            ids.push(
                delivery
                    .properties
                    .message_id()
                    .as_ref()
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
            );
        }
        ids
    }
}

impl Drop for Setup<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.rt.block_on(self.client.close());
        }
    }
}

/// Properties a replayed message must keep.
fn kept_properties(id: &str) -> lapin::BasicProperties {
    let mut headers = FieldTable::default();
    headers.insert(
        "tenant".into(),
        AMQPValue::LongString(LongString::from("acme")),
    );
    message(id)
        .with_headers(headers)
        .with_content_type("text/plain".into())
        .with_correlation_id(format!("c-{id}").as_str().into())
}

fn every_mode_on_classic_queues(version: Version) {
    every_mode(version, "classic");
}

fn every_mode_on_quorum_queues(version: Version) {
    every_mode(version, "quorum");
}

/// The scenario of the module's first point, for each consumer of [`spec`].
#[expect(
    clippy::too_many_lines,
    reason = "one trial read top to bottom: park, replay, and what each queue holds after"
)]
fn every_mode(version: Version, queue_type: &str) {
    let s = Setup::start(version, &format!("replay-{queue_type}"), queue_type);
    // Phase 1: every attempt fails, so every message climbs its ladder and is parked.
    let failing = Arc::new(AtomicBool::new(true));
    let decide: Decide = {
        let failing = failing.clone();
        Arc::new(move |_, _| !failing.load(Ordering::SeqCst))
    };
    let log = Log::default();
    let consumers: Vec<(&str, &str)> = vec![
        ("by-publish", "order.publish"),
        ("by-reject", "order.reject"),
        ("by-chain", "order.chain"),
    ];
    for (name, _) in &consumers {
        let contract = s.contract.consumer(name).clone();
        s.rt.block_on(amqp::spawn_consumer(
            &s.client,
            &contract,
            20,
            decide.clone(),
            &log,
            false,
        ));
    }
    for (name, key) in &consumers {
        s.publish_many("orders", key, name, PARKED);
    }
    for (name, _) in &consumers {
        let parking = parking_of(&s.contract, name);
        s.wait_for_ready(&parking, PARKED as u32);
    }

    // `warren status` reports them (its figures are the management API's statistics,
    // which follow the queues by a few seconds).
    s.wait_for_status_parked(&[("by-publish", 100), ("by-reject", 100), ("by-chain", 100)]);
    // None is parked twice: a second later the counts still hold.
    std::thread::sleep(Duration::from_millis(1000));
    for (name, _) in &consumers {
        let parking = parking_of(&s.contract, name);
        assert_eq!(
            s.ready(&parking),
            PARKED as u32,
            "{name}: parked after a second"
        );
    }
    // Phase 2: the fault is fixed; 40 of each consumer's parked messages come back.
    failing.store(false, Ordering::SeqCst);
    for (name, key) in &consumers {
        let contract = s.contract.consumer(name).clone();
        let retry = contract.retry().clone();
        let parking = parking_of(&s.contract, name);
        let before = log.len();
        let out = s
            .replay(&contract.queue, &["--limit", &FIRST_REPLAY.to_string()])
            .run()
            .expect(0);
        assert!(
            out.stdout.contains(&format!(
                "Replayed {FIRST_REPLAY} messages from `{parking}`"
            )),
            "{}",
            out.stdout
        );
        let reached =
            s.rt.block_on(eventually(SOON, || log.len() >= before + FIRST_REPLAY));
        assert!(
            reached,
            "{name}: {} of {FIRST_REPLAY} replayed deliveries",
            log.len() - before
        );
        std::thread::sleep(Duration::from_millis(500));
        let events: Vec<Event> = log.events()[before..].to_vec();
        assert_eq!(
            events.len(),
            FIRST_REPLAY,
            "{name}: more deliveries than replayed"
        );
        let mut ids = BTreeSet::new();
        for event in &events {
            assert_eq!(event.action, Action::Processed, "{name}");
            assert_eq!(
                event.retries, 0,
                "{name} ({}): a replayed message starts its ladder again",
                retry.mode
            );
            assert_eq!(event.queue, contract.queue, "{name}: the first work queue");
            let id = event.message_id.clone().unwrap();
            assert_eq!(event.body, format!("body {id}").into_bytes());
            let index = id.rsplit_once('-').unwrap().1;
            assert_eq!(
                header_text(&event.headers, "warren-routing-key").as_deref(),
                Some(format!("{key}.{index}").as_str()),
                "{name}: the first routing key is kept"
            );
            assert_eq!(
                header_text(&event.headers, "tenant").as_deref(),
                Some("acme")
            );
            assert_eq!(
                event.headers.get("warren-replays").and_then(amqp::as_u64),
                Some(1)
            );
            for gone in ["x-death", "warren-retries", "x-first-death-queue"] {
                assert!(!event.headers.contains_key(gone), "{name}: {gone} left");
            }
            assert!(ids.insert(id), "{name}: a message came back twice");
        }
        // A quorum queue applies acks after the commit answers: its count settles.
        let settled = s
            .node
            .wait_until(SOON, || s.ready(&parking) == (PARKED - FIRST_REPLAY) as u32);
        if !settled {
            // Say whose messages are too many: copies of replayed ones (the replay doubled
            // them) or others (parked twice before the replay).
            let parked = s.drain(&parking);
            let mut seen = BTreeSet::new();
            let twice: Vec<&String> = parked.iter().filter(|id| !seen.insert(*id)).collect();
            let replayed: Vec<&String> = parked.iter().filter(|id| ids.contains(*id)).collect();
            panic!(
                "{name}: {} parked after the replay, expected {}; parked twice: {twice:?}; replayed and still parked: {replayed:?}",
                parked.len(),
                PARKED - FIRST_REPLAY
            );
        }
        assert_eq!(s.ready(&contract.queue), 0, "{name}");
    }

    s.wait_for_status_parked(&[("by-publish", 60), ("by-reject", 60), ("by-chain", 60)]);

    // Phase 3: a replayed message that fails again climbs the ladder from tier 1 and is
    // parked again, as a new message would.
    failing.store(true, Ordering::SeqCst);
    for (name, _) in &consumers {
        let contract = s.contract.consumer(name).clone();
        let retry = contract.retry().clone();
        let parking = parking_of(&s.contract, name);
        let before = log.len();
        s.replay(&parking, &["--limit", "1"]).run().expect(0);
        let attempts = retry.max_retries as usize + 1;
        let reached =
            s.rt.block_on(eventually(SOON, || log.len() >= before + attempts));
        assert!(
            reached,
            "{name}: {} of {attempts} attempts",
            log.len() - before
        );
        s.wait_for_ready(&parking, (PARKED - FIRST_REPLAY) as u32);
        std::thread::sleep(Duration::from_millis(500));
        let events: Vec<Event> = log.events()[before..].to_vec();
        let counts: Vec<u32> = events.iter().map(|e| e.retries).collect();
        assert_eq!(
            counts,
            (0..attempts as u32).collect::<Vec<_>>(),
            "{name}: the retries of a replayed message that fails again"
        );
        let last = events.last().unwrap();
        assert_eq!(
            last.action,
            if retry.mode == "publish" || retry.mode == "reject" {
                Action::Parked
            } else {
                Action::Rejected
            }
        );
        // The second delivery came back from tier 1 (in reject-chain mode: through tier
        // 1 to the second attempt's queue).
        let second = &events[1];
        let deaths = amqp::x_death_of(&second.headers);
        let tier_1 = &retry.schedule[0].queue;
        assert!(
            deaths
                .iter()
                .any(|d| d["queue"] == tier_1.as_str() && d["reason"] == "expired"),
            "{name}: the second delivery did not come from tier 1: {deaths:#?}"
        );
        if retry.mode == "reject-chain" {
            let path: Vec<&str> = events.iter().map(|e| e.queue.as_str()).collect();
            let expected: Vec<&str> = contract.consume_from.iter().map(String::as_str).collect();
            assert_eq!(path, expected, "{name}");
        }
    }
}

fn parking_of(contract: &Contract, consumer: &str) -> String {
    contract
        .consumer(consumer)
        .retry()
        .on_exhausted
        .queue
        .clone()
        .unwrap()
}

fn header_text(headers: &BTreeMap<String, AMQPValue>, name: &str) -> Option<String> {
    headers.get(name).and_then(amqp::as_string)
}

/// How many kills the kill test makes per version.
fn kill_trials() -> usize {
    std::env::var("WARREN_REPLAY_KILL_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// Fills the parking queue of `by-publish` with `count` messages (published to it
/// directly: how they got there does not matter here).
fn park_directly(s: &Setup<'_>, count: usize) -> String {
    let parking = parking_of(&s.contract, "by-publish");
    s.rt.block_on(async {
        let mut pending = Vec::new();
        for i in 0..count {
            pending.push(
                s.client
                    .publish_unconfirmed("", &parking, b"parked", message(&format!("m-{i}")))
                    .await
                    .unwrap(),
            );
        }
        for confirmation in futures::future::join_all(pending).await {
            assert!(confirmation.unwrap().is_ack());
        }
    });
    s.wait_for_ready(&parking, count as u32);
    parking
}

/// The connections the broker has open into `vhost` (`rabbitmqctl list_connections`
/// asks the connections themselves: no statistics).
fn connections_into(node: &Node, vhost: &str) -> usize {
    node.ctl(&["list_connections", "vhost", "--no-table-headers", "--quiet"])
        .lines()
        .filter(|line| line.trim() == vhost)
        .count()
}

/// The two queues' counts once the broker is done with the replay that ran on them:
/// once only the test's own connection is left in the vhost (a killed reader's
/// connection is gone, so the broker has seen its end), the two queues hold at least
/// `total` messages between them (its taken messages come back to the parking queue),
/// and their counts have held still for 2 s (a quorum queue returns them once the
/// return is committed in its log, a moment after the connection is gone, and longer
/// on a loaded machine). A loss shows as a total that never comes.
fn settled_counts(s: &Setup<'_>, parking: &str, work: &str, total: u32) -> (u32, u32) {
    let gone = s
        .node
        .wait_until(STATISTICS_SHOW, || connections_into(s.node, &s.vhost) <= 1);
    assert!(
        gone,
        "the replay's connection is still open: {} connections into {}",
        connections_into(s.node, &s.vhost),
        s.vhost
    );
    // A restarted broker answers a passive declare of a quorum queue with an error
    // until the queue has recovered: not yet, rather than a failure.
    let counts = || {
        s.rt.block_on(async {
            let p = s.client.try_ready(parking).await.ok()?;
            let w = s.client.try_ready(work).await.ok()?;
            Some((p, w))
        })
    };
    let mut last = None;
    let mut still_since = Instant::now();
    let settled = s.node.wait_until(SOON, || {
        let now = counts();
        if now != last {
            last = now;
            still_since = Instant::now();
        }
        last.is_some_and(|(p, w)| p + w >= total) && still_since.elapsed() >= Duration::from_secs(2)
    });
    let (p, w) = (s.ready(parking), s.ready(work));
    assert!(
        settled,
        "parking {p} + work {w}, not settled at {total} or more: messages lost"
    );
    (p, w)
}

fn a_killed_replay_loses_nothing_and_doubles_at_most_a_batch(version: Version) {
    // Enough that every kill finds messages left to move.
    let trials = kill_trials();
    let total = 300 * trials.max(7);
    let s = Setup::start(version, "replay-kill", "quorum");
    let parking = park_directly(&s, total);
    let work = s.contract.consumer("by-publish").queue.clone();
    let batch = KILL_BATCH.to_string();
    // Ctrl-C once messages move: the copies in flight are settled, the rest stays, and
    // the count said is the count moved; nothing is doubled.
    let child = Background::spawn(s.replay(&parking, &["--batch", &batch]));
    let moving = s.node.wait_until(SOON, || s.ready(&work) > 0);
    assert!(moving, "the replay moved nothing");
    child.signal(libc::SIGINT);
    let out = child.finish().expect(1);
    assert!(
        out.stderr
            .contains("Signal received: stopping once the copies in flight are settled: "),
        "the signal is told at once: {}",
        out.stderr
    );
    let (p, moved) = settled_counts(&s, &parking, &work, total as u32);
    assert_eq!(
        p + moved,
        total as u32,
        "after SIGINT: parking {p} + work {moved}"
    );
    assert!(
        out.stdout.contains(&format!(
            "Stopped on a signal after replaying {moved} messages of {total}"
        )),
        "{} moved: {}",
        moved,
        out.stdout
    );
    let mut mid_move = 0;
    let mut doubled = 0;
    for trial in 0..trials {
        let moved_before = s.ready(&work);
        let mut child = Background::spawn(s.replay(&parking, &["--batch", &batch]));
        // Somewhere in the move: once messages move (however long warren takes to start
        // on a loaded machine), at a random moment of the next 300 ms, which is not the
        // end (a replay of thousands of messages five at a time takes seconds).
        let moving = s.node.wait_until(SOON, || s.ready(&work) > moved_before);
        assert!(moving, "trial {trial}: the replay moved nothing");
        let wait = rand::random::<u64>() % 300;
        std::thread::sleep(Duration::from_millis(wait));
        child.kill();
        // The broker returns the taken originals when it sees the connection close;
        // then every message is in one queue or, for the copies in flight, in both.
        let (p, w) = settled_counts(&s, &parking, &work, total as u32);
        let now_doubled = p + w - total as u32;
        let this_kill = now_doubled - doubled;
        doubled = now_doubled;
        eprintln!(
            "{version}: replay killed {wait} ms into its move: {w} moved, {p} parked, {this_kill} in both"
        );
        assert!(
            this_kill <= KILL_BATCH,
            "trial {trial}: {this_kill} messages doubled by one kill, more than the {KILL_BATCH} in flight"
        );
        if p > 0 && w > 0 {
            mid_move += 1;
        }
        if p == 0 {
            break;
        }
    }
    // The rest moves; then each message is in the work queue at least once, and the
    // ones in both queues after a kill twice. Messages a killed replay had taken come
    // back to the parking queue when the broker has processed its connection's end,
    // which a quorum queue does a moment after its count already includes them: the
    // operator's answer is another replay.
    let emptied = s.node.wait_until(SOON, || {
        s.replay(&parking, &[]).run().expect(0);
        s.ready(&parking) == 0
    });
    assert!(
        emptied,
        "the parking queue keeps {} messages",
        s.ready(&parking)
    );
    let ids = s.drain(&work);
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), total, "a message was lost");
    assert_eq!(
        ids.len(),
        total + doubled as usize,
        "messages in the work queue"
    );
    eprintln!(
        "replay kills on {version}: {trials} kills, {mid_move} in the middle of a move; {total} messages, each in the work queue, {doubled} of them twice"
    );
    assert!(
        mid_move > 0,
        "no kill landed in the middle of a replay: the trials proved nothing"
    );
}

fn two_replays_at_once_move_what_both_asked_for(version: Version) {
    let s = Setup::start(version, "replay-twice", "classic");
    let parking = park_directly(&s, 100);
    let work = s.contract.consumer("by-publish").queue.clone();
    let first = Background::spawn(s.replay(&parking, &["--limit", "30", "--batch", "1"]));
    let second = Background::spawn(s.replay(&parking, &["--limit", "30", "--batch", "1"]));
    first.finish().expect(0);
    second.finish().expect(0);
    assert_eq!(s.ready(&work), 60);
    assert_eq!(s.ready(&parking), 40);
}

fn a_work_queue_deleted_during_a_replay_stops_it_with_an_exact_count(version: Version) {
    const TOTAL: usize = 3000;
    let s = Setup::start(version, "replay-deleted", "classic");
    let parking = park_directly(&s, TOTAL);
    let work = s.contract.consumer("by-publish").queue.clone();
    let child = Background::spawn(s.replay(&parking, &["--batch", "2", "--format", "json"]));
    let started = Instant::now();
    // Deleted once some messages have moved (the replay of 3,000 two at a time takes
    // seconds).
    let moving = s.node.wait_until(SOON, || s.ready(&work) > 0);
    assert!(moving, "the replay moved nothing");
    s.node
        .delete(&format!("/api/queues/{}/{}", pct(&s.vhost), pct(&work)));
    let out = child.finish().expect(1);
    eprintln!(
        "{version}: work queue deleted {:?} into the replay",
        started.elapsed()
    );
    let document: Value = serde_json::from_str(&out.stdout).unwrap();
    let moved = document["moved"].as_u64().unwrap();
    assert!(moved > 0 && moved < TOTAL as u64, "{document:#}");
    let messages = document["error"]["messages"].to_string();
    assert!(
        messages.contains(&format!("`{work}` does not exist")),
        "{messages}"
    );
    // What did not move is still parked, as the document counts it; what moved went
    // with the deleted queue.
    let not_moved = document["not_moved"].as_u64().unwrap();
    assert_eq!(moved + not_moved, TOTAL as u64, "{document:#}");
    s.wait_for_ready(&parking, not_moved as u32);
}

fn bad_input_changes_nothing(version: Version) {
    let s = Setup::start(version, "replay-bad", "classic");
    let parking = park_directly(&s, 5);
    let contract = s.contract.consumer("by-publish").clone();
    let tier = &contract.retry().schedule[0].queue;
    let out = s.replay(tier, &[]).run().expect(1);
    assert!(
        out.stderr.contains("is not a parking queue of the spec"),
        "{}",
        out.stderr
    );
    // The spec names a consumer the broker does not have yet.
    s.spec.write(&std::fs::read_to_string(&s.spec.path).unwrap().replace(
        "          by-chain:",
        "          later:\n            routing_keys: [\"order.later\"]\n            retry: { delays: [100ms], mode: reject }\n          by-chain:",
    ));
    let out = s.replay("orders.later", &[]).run().expect(1);
    assert!(out.stderr.contains("does not exist"), "{}", out.stderr);
    // Without a terminal and without --auto-approve, nothing moves.
    let out = s
        .node
        .warren(&["replay", s.spec.arg(), "--queue", &parking])
        .stdin(std::process::Stdio::null())
        .run()
        .expect(1);
    assert!(
        out.stderr.contains("no terminal to confirm on"),
        "{}",
        out.stderr
    );
    assert_eq!(s.ready(&parking), 5);
    assert_eq!(s.ready(&contract.queue), 0);
    // A dry run says what would move, and moves nothing.
    let out = s
        .node
        .warren(&[
            "replay",
            s.spec.arg(),
            "--queue",
            &parking,
            "--dry-run",
            "--format",
            "json",
        ])
        .run()
        .expect(0);
    let document: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(document["replay"]["to_move"], 5, "{document:#}");
    assert_eq!(document["moved"], Value::Null);
    assert_eq!(s.ready(&parking), 5);

    // A message an application published with its own `user_id`: RabbitMQ lets only
    // that user (or an impersonator) publish it again. The replay moves the messages
    // before it, says so, and leaves it parked.
    let app = format!("{}-app", s.vhost);
    s.node.put(
        &format!("/api/users/{}", pct(&app)),
        &json!({"password": "app-secret", "tags": ""}),
    );
    s.node.put(
        &format!("/api/permissions/{}/{}", pct(&s.vhost), pct(&app)),
        &json!({"configure": "", "write": ".*", "read": ""}),
    );
    let url = s.node.amqp_url().replacen(
        &format!("{}:{}", pct(&s.node.user), pct(&s.node.password)),
        &format!("{}:app-secret", pct(&app)),
        1,
    );
    s.rt.block_on(async {
        let as_app = Client::connect_url(&format!("{url}{}", pct(&s.vhost))).await;
        as_app
            .publish(
                "",
                &parking,
                b"signed",
                message("signed").with_user_id(app.as_str().into()),
            )
            .await
            .unwrap();
        as_app.close().await;
    });
    s.wait_for_ready(&parking, 6);
    let out = s.replay(&parking, &[]).run().expect(1);
    assert!(
        out.stderr.contains("`user_id`") && out.stderr.contains("impersonator"),
        "{}",
        out.stderr
    );
    // The five before it moved (each confirmed); the signed one is still parked.
    assert!(
        out.stderr.contains("stopped after moving 5 of 6")
            && out.stderr.contains("1 not moved, still in"),
        "{}",
        out.stderr
    );
    s.wait_for_ready(&parking, 1);
    assert_eq!(s.ready(&contract.queue), 5);
    let left = s.rt.block_on(s.client.get(&parking)).unwrap();
    assert_eq!(
        left.properties.user_id().as_ref().map(|u| u.as_str()),
        Some(app.as_str())
    );
    s.node.delete(&format!("/api/users/{}", pct(&app)));
}

/// The figure docs/reliability.md quotes: 2,000 parked messages replayed in one run,
/// each in the work queue once afterwards.
fn two_thousand_move_each_once_in_a_timed_run(version: Version) {
    const TOTAL: usize = 2000;
    for queue_type in ["classic", "quorum"] {
        let s = Setup::start(version, &format!("replay-timed-{queue_type}"), queue_type);
        let parking = park_directly(&s, TOTAL);
        let work = s.contract.consumer("by-publish").queue.clone();
        let started = Instant::now();
        s.replay(&parking, &[]).run().expect(0);
        let took = started.elapsed();
        eprintln!("{version} {queue_type}: replay of {TOTAL} messages took {took:?}");
        s.wait_for_ready(&parking, 0);
        let ids = s.drain(&work);
        let unique: BTreeSet<&String> = ids.iter().collect();
        assert_eq!((ids.len(), unique.len()), (TOTAL, TOTAL), "{queue_type}");
    }
}

/// The reproduction: a user policy caps the work queue at 10 messages with
/// `overflow: reject-publish`; 50 are parked. The broker takes 10 copies and nacks
/// the rest: the replay stops with exit 1, says 10 moved and 40 still parked, and the
/// two queues hold the 50 between them, each once.
fn a_full_work_queue_refuses_copies_and_they_stay_parked(version: Version) {
    const PARKED_HERE: usize = 50;
    for queue_type in ["classic", "quorum"] {
        let s = Setup::start(version, &format!("replay-full-{queue_type}"), queue_type);
        let work = s.contract.consumer("by-publish").queue.clone();
        // Above warren's own policies on the work queue (100 and 101 by default): at an
        // equal priority the broker's choice is not knowable, and warren refuses to plan.
        s.node.put(
            &format!("/api/policies/{}/cap-work", pct(&s.vhost)),
            &json!({"pattern": format!("^{}$", work.replace('.', "\\.")), "apply-to": "queues",
                    "priority": 1000, "definition": {"max-length": 10, "overflow": "reject-publish"}}),
        );
        // Declared again under the policy: a live quorum queue on a loaded machine can
        // take minutes to take a policy change, a new one has it from the start.
        s.node
            .delete(&format!("/api/queues/{}/{}", pct(&s.vhost), pct(&work)));
        s.node
            .apply(s.spec.arg())
            .with(&["--lock-timeout", "2m"])
            .expect(0);
        let parking = park_directly(&s, PARKED_HERE);
        let capped = s.node.wait_until(STATISTICS_SHOW, || {
            s.node
                .get_opt(&format!("/api/queues/{}/{}", pct(&s.vhost), pct(&work)))
                .is_some_and(|q| q["policy"] == "cap-work")
        });
        assert!(capped, "{queue_type}: the policy does not apply");
        let out = s.replay(&parking, &[]).run().expect(1);
        let (p, w) = settled_counts(&s, &parking, &work, PARKED_HERE as u32);
        // A classic queue takes exactly 10; a quorum queue checks its length against
        // commands it has applied, so a copy or two in flight can pass the cap. Either
        // way the report is the broker's state.
        if queue_type == "classic" {
            assert_eq!((p, w), (40, 10), "{queue_type}: parking, work");
        }
        assert!(
            out.stderr
                .contains(&format!("stopped after moving {w} of 50"))
                && out.stderr.contains(&format!("{p} not moved, still in"))
                && out.stderr.contains("basic.nack"),
            "{queue_type}: parking {p}, work {w}: {}",
            out.stderr
        );
        assert_eq!(
            p + w,
            PARKED_HERE as u32,
            "{queue_type}: parking {p} + work {w}"
        );
        let parked = s.drain(&parking);
        let moved = s.drain(&work);
        let all: BTreeSet<&String> = parked.iter().chain(&moved).collect();
        assert_eq!(
            all.len(),
            PARKED_HERE,
            "{queue_type}: a message lost or doubled"
        );
        let oldest: Vec<String> = (0..w).map(|i| format!("m-{i}")).collect();
        assert_eq!(moved, oldest, "{queue_type}: the oldest moved, in order");
        let rest: Vec<String> = (w..50).map(|i| format!("m-{i}")).collect();
        // Rejected with requeue, each refused message is back in its place in a classic
        // queue; a quorum queue keeps returned messages in the order the returns
        // applied, which 4.0 does not always keep.
        eprintln!(
            "{version} {queue_type}: refused messages back in their places: {}",
            parked == rest
        );
        if queue_type == "classic" {
            assert_eq!(
                parked, rest,
                "classic: the refused messages keep their places"
            );
        }
        s.node
            .delete(&format!("/api/policies/{}/cap-work", pct(&s.vhost)));
    }
}

/// The broker killed (kill -9) in the middle of a replay and restarted on its data:
/// nothing is lost; the copies in flight may be in both queues (at most `--batch`);
/// a second replay moves the rest.
fn a_broker_killed_mid_replay_loses_nothing(version: Version) {
    const TOTAL: usize = 2000;
    let node = Node::start(version, crate::node::NodeOptions::default());
    let mut s = Setup::on(&node, version, "replay-broker-kill", "quorum");
    let parking = park_directly(&s, TOTAL);
    let work = s.contract.consumer("by-publish").queue.clone();
    let batch = KILL_BATCH.to_string();
    let child = Background::spawn(s.replay(&parking, &["--batch", &batch]));
    let moving = s.node.wait_until(SOON, || s.ready(&work) > 0);
    assert!(moving, "the replay moved nothing");
    let wait = rand::random::<u64>() % 300;
    std::thread::sleep(Duration::from_millis(wait));
    node.kill();
    let out = child.finish();
    assert_ne!(
        out.code,
        Some(0),
        "a replay whose broker died said it finished"
    );
    node.restart();
    s.client = s.rt.block_on(Client::connect(&node, &s.vhost));
    let (p, w) = settled_counts(&s, &parking, &work, TOTAL as u32);
    let doubled = p + w - TOTAL as u32;
    eprintln!(
        "{version}: broker killed {wait} ms into the move: {w} moved, {p} parked, {doubled} in both"
    );
    assert!(
        doubled <= KILL_BATCH,
        "{doubled} doubled, more than the copies in flight"
    );
    s.replay(&parking, &[]).run().expect(0);
    s.wait_for_ready(&parking, 0);
    let ids = s.drain(&work);
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), TOTAL, "a message was lost");
    assert_eq!(
        ids.len(),
        TOTAL + doubled as usize,
        "messages in the work queue"
    );
}

/// The broker takes the copies and never confirms them (a proxy keeps back every
/// publisher confirm; everything else, heartbeats included, flows). The replay waits
/// its `--timeout` for the first confirm, no longer, gives every original back to the
/// parking queue, and counts the copies it cannot vouch for as unconfirmed: nothing is
/// lost, and the work queue holds no more copies than that count. Without a bound on
/// the wait the replay waited forever. One line: what is tried is warren's side of
/// the protocol. The 180 s bound is for a replay that hangs (a 10 s `--timeout`).
#[test]
fn an_unconfirmed_replay_stops_within_its_timeout_and_loses_nothing() {
    const PARKED_HERE: u32 = 20;
    let s = Setup::start(Version::V3_10, "replay-unconfirmed", "classic");
    let parking = park_directly(&s, PARKED_HERE as usize);
    let work = s.contract.consumer("by-publish").queue.clone();
    let proxy = AmqpProxy::swallowing_confirms(s.node.amqp_port);
    let command = s.replay(
        &parking,
        &[
            "--batch",
            "5",
            "--amqp-url",
            &proxy.url(),
            "--timeout",
            "10",
            "--format",
            "json",
        ],
    );
    let run = Background::spawn(command).finish_within(Duration::from_secs(180));
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    assert!(proxy.swallowed() >= 1, "no confirm was kept back");
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["moved"], 0, "{document:#}");
    assert_eq!(document["not_moved"], PARKED_HERE, "{document:#}");
    let unconfirmed = document["unconfirmed"].as_u64().unwrap() as u32;
    assert!((1..=5).contains(&unconfirmed), "{document:#}");
    // What ends the wait is a race on a loaded machine: the bound ("did not confirm a
    // copy within 10 s"), or the client's heartbeat check cutting the connection when
    // the broker's heartbeats, through the proxy, come late. Either way the replay stops
    // on its channel, and what the broker holds is the same.
    let messages = document["error"]["messages"].to_string();
    assert!(messages.contains("the AMQP channel failed"), "{messages}");
    eprintln!("an unconfirmed replay stopped: {messages}");
    // Every original is parked again; the copies the broker took are in the work
    // queue, no more of them than were counted unconfirmed.
    let (p, w) = settled_counts(&s, &parking, &work, PARKED_HERE);
    assert_eq!(p, PARKED_HERE, "parking {p}, work {w}");
    assert!(w <= unconfirmed, "{w} copies, {unconfirmed} unconfirmed");
}
