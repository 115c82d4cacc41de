//! Removing the work queue of a `native` ladder (RabbitMQ 4.3) loses no message that
//! waits for its delayed retry.
//!
//! While a quorum queue holds a failed message back, the broker counts it nowhere a
//! client reads at once: a passive `queue.declare` says 0, and the statistics lag by
//! seconds (measured on 4.3.6). So the deletion guard waits the queue's longest delay
//! out, once the bindings into it are gone and no consumer is attached, and then lets
//! the queue count itself; a queue whose delay is longer than a minute is refused.
//! Only 4.3 has delayed retry: these scenarios run there alone (3.10 and 4.0 refuse the
//! spec, see `retry_behaviour::*::a_native_ladder_waits_in_the_work_queue_then_parks`).

use std::time::{Duration, Instant};

use crate::amqp::{self, Client};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

/// A spec of vhost `vhost` with a `keeper` consumer and, when `delays` is given, a
/// `worker` consumer whose native ladder has those delays.
fn spec(vhost: &str, delays: Option<&str>) -> String {
    let mut yaml = format!(
        "version: 1\nname: {vhost}\nvhosts:\n  {vhost}:\n    services:\n      jobs:\n        consumers:\n          keeper:\n            routing_keys: [keep]\n"
    );
    if let Some(delays) = delays {
        yaml.push_str(&format!(
            "          worker:\n            routing_keys: [job]\n            retry: {{ mode: native, delays: {delays} }}\n"
        ));
    }
    yaml
}

/// Takes the worker's message and fails it as the contract says (reject with
/// requeue): it then waits for its delayed retry.
async fn fail_once(client: &Client) {
    use lapin::options::BasicGetOptions;
    let channel = client.connection.create_channel().await.unwrap();
    let delivery = loop {
        let got = channel
            .basic_get("jobs.worker".into(), BasicGetOptions { no_ack: false })
            .await
            .unwrap();
        if let Some(m) = got {
            break m.delivery;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    amqp::requeue_failed(&delivery).await.unwrap();
    let _ = channel.close(200, "".into()).await;
}

fn messages(node: &Node, vhost: &str, queue: &str) -> Option<u64> {
    node.get_opt(&format!("/api/queues/{}/{}", pct(vhost), pct(queue)))
        .map(|q| q["messages"].as_u64().unwrap_or(0))
}

#[test]
fn a_message_waiting_for_its_retry_stops_the_removal_of_its_queue() {
    crate::run(
        module_path!(),
        "a_message_waiting_for_its_retry_stops_the_removal_of_its_queue",
        Version::V4_3,
        |version| {
            let node = Node::shared(version);
            let vhost = node.unused_vhost("native-rm");
            // The first delay is the window in which the statistics must show the
            // message waiting (they are emitted every 5 s, later on a loaded node): 20 s
            // leaves room for several emissions. The second, longer one is what the
            // guard waits out.
            let file = Spec::new(&spec(&vhost, Some("[20s, 30s]")));
            node.apply(file.arg()).expect(0);
            node.put(
                &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
                &serde_json::json!({"configure": ".*", "write": ".*", "read": ".*"}),
            );
            let rt = amqp::runtime();
            let client = rt.block_on(Client::connect(node, &vhost));
            rt.block_on(client.publish("jobs", "job", b"waits", amqp::message("w1")))
                .unwrap();
            // The consumer fails it as the contract says: it now waits 20 s, counted
            // nowhere a client reads at once.
            rt.block_on(fail_once(&client));
            // `warren status` shows it waiting in the work queue (the statistics lag).
            let waiting = || {
                let out = node
                    .warren(&["status", file.arg(), "--format", "json"])
                    .run()
                    .expect(0)
                    .stdout;
                let report: serde_json::Value = serde_json::from_str(&out).unwrap();
                report["consumers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["consumer"] == "worker")
                    .map(|c| c["waiting"].clone())
            };
            assert!(
                node.wait_until(Duration::from_secs(120), || waiting()
                    .is_some_and(|waiting| waiting == 1)),
                "status: {:?}",
                waiting()
            );
            file.write(&spec(&vhost, None));
            let started = Instant::now();
            let out = node.apply(file.arg()).run();
            assert_eq!(out.code, Some(4), "{}\n{}", out.stdout, out.stderr);
            assert!(out.stderr.contains("jobs.worker"), "{}", out.stderr);
            eprintln!("refused after {:?}: {}", started.elapsed(), out.stderr);
            // Kept, with its message, and still routed (the count is a statistic).
            assert!(
                node.wait_until(Duration::from_secs(90), || messages(
                    node,
                    &vhost,
                    "jobs.worker"
                ) == Some(1)),
                "the message is still there"
            );
            let bindings = node.get(&format!(
                "/api/exchanges/{}/jobs/bindings/source",
                pct(&vhost)
            ));
            assert!(
                bindings
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b["destination"] == "jobs.worker"),
                "its binding is declared again: {bindings}"
            );

            // Once it is handled, the queue goes, after the guard has waited its 30 s out.
            rt.block_on(async {
                let delivery = loop {
                    if let Some(d) = client.get("jobs.worker").await {
                        break d;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                };
                amqp::ack(&delivery).await.unwrap();
            });
            // The check before the first write reads the statistics' counts of held-back
            // and unacknowledged messages, which lag by seconds (more on a loaded node).
            assert!(node.wait_until(Duration::from_secs(90), || {
                node.get(&format!("/api/queues/{}/jobs.worker", pct(&vhost)))["messages_delayed"]
                    .as_u64()
                    .unwrap_or(0)
                    == 0
                    && messages(node, &vhost, "jobs.worker") == Some(0)
            }));
            let started = Instant::now();
            node.apply(file.arg()).expect(0);
            assert!(
                started.elapsed() >= Duration::from_secs(30),
                "the guard waits the longest delay out: {:?}",
                started.elapsed()
            );
            assert_eq!(messages(node, &vhost, "jobs.worker"), None, "deleted");
            rt.block_on(client.close());
        },
    );
}

#[test]
fn a_queue_whose_delay_is_longer_than_a_minute_is_not_deleted_without_the_flag() {
    crate::run(
        module_path!(),
        "a_queue_whose_delay_is_longer_than_a_minute_is_not_deleted_without_the_flag",
        Version::V4_3,
        |version| {
            let node = Node::shared(version);
            let vhost = node.unused_vhost("native-long");
            let file = Spec::new(&spec(&vhost, Some("[2m]")));
            node.apply(file.arg()).expect(0);
            file.write(&spec(&vhost, None));
            let out = node.apply(file.arg()).run();
            assert_eq!(out.code, Some(4), "{}\n{}", out.stdout, out.stderr);
            assert!(out.stderr.contains("delayed retry"), "{}", out.stderr);
            assert_eq!(messages(node, &vhost, "jobs.worker"), Some(0), "kept");
            node.apply(file.arg())
                .with(&["--allow-data-loss"])
                .expect(0);
            assert_eq!(
                messages(node, &vhost, "jobs.worker"),
                None,
                "deleted with the flag"
            );
        },
    );
}

#[test]
fn a_migration_away_from_native_keeps_a_waiting_message() {
    crate::run(
        module_path!(),
        "a_migration_away_from_native_keeps_a_waiting_message",
        Version::V4_3,
        |version| {
            let node = Node::shared(version);
            let vhost = node.unused_vhost("native-mig");
            let file = Spec::new(&spec(&vhost, Some("[2s, 4s]")));
            node.apply(file.arg()).expect(0);
            node.put(
                &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
                &serde_json::json!({"configure": ".*", "write": ".*", "read": ".*"}),
            );
            let rt = amqp::runtime();
            let client = rt.block_on(Client::connect(node, &vhost));
            rt.block_on(client.publish("jobs", "job", b"kept", amqp::message("m1")))
                .unwrap();
            rt.block_on(fail_once(&client));
            // To dropping exhausted messages: the work queue no longer dead-letters, so
            // it is replaced blue/green, and the message that waits in it must come
            // through.
            file.write(&spec(&vhost, Some("[2s, 4s], on_exhausted: drop")));
            let out = node.apply(file.arg()).with(&["--migrate"]).run();
            assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
            assert!(out.stdout.contains("~> jobs.worker"), "{}", out.stdout);
            let message = rt.block_on(async {
                // Its 2 s wait is over long before: the bound is for a message that
                // never comes.
                let deadline = Instant::now() + Duration::from_secs(90);
                loop {
                    if let Some(d) = client.get("jobs.worker").await {
                        break Some(d);
                    }
                    if Instant::now() > deadline {
                        break None;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            });
            let message = message.expect("the waiting message is in the new work queue");
            assert_eq!(message.data, b"kept");
            rt.block_on(client.close());
        },
    );
}

/// Publishes `count` messages `{prefix}{n}` to `exchange` with `key`, confirmed.
async fn seed(
    client: &Client,
    exchange: &str,
    key: &str,
    prefix: &str,
    count: usize,
) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..count {
        let id = format!("{prefix}{n}");
        client
            .publish(exchange, key, id.as_bytes(), amqp::message(&id))
            .await
            .unwrap();
        ids.push(id);
    }
    ids
}

/// Takes every message of `queue` (basic.get, acked): their ids.
async fn take_all(client: &Client, queue: &str) -> Vec<String> {
    let mut ids = Vec::new();
    while let Some(delivery) = client.get(queue).await {
        ids.push(String::from_utf8_lossy(&delivery.data).into_owned());
    }
    ids
}

/// Acks every message of `jobs.worker` as it arrives, recording its body; subscribes
/// again when the broker cancels it (a migration deletes the queue and declares it
/// anew), as client libraries that recover consumers do.
async fn ack_everything(client: Client, seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use futures::StreamExt;
    use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
    loop {
        let Ok(channel) = client.connection.create_channel().await else {
            return;
        };
        let _ = channel.basic_qos(20, BasicQosOptions::default()).await;
        let subscribed = channel
            .basic_consume(
                "jobs.worker".into(),
                "".into(),
                BasicConsumeOptions::default(),
                lapin::types::FieldTable::default(),
            )
            .await;
        if let Ok(mut consumer) = subscribed {
            while let Some(Ok(delivery)) = consumer.next().await {
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&delivery.data).into_owned());
                delivery.ack(BasicAckOptions::default()).await.unwrap();
            }
        }
        let _ = channel.close(200, "".into()).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `seen` holds every id of `expected`; then checks that it holds nothing
/// else and none twice, unless `at_least_once` (a blue/green migration delivers at least
/// once, docs/migration.md): the number of messages delivered twice.
fn all_seen(
    seen: &std::sync::Mutex<Vec<String>>,
    expected: &[String],
    within: Duration,
    at_least_once: bool,
) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let got: std::collections::BTreeSet<String> =
            seen.lock().unwrap().iter().cloned().collect();
        if expected.iter().all(|id| got.contains(id)) || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let seen = seen.lock().unwrap().clone();
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for id in &seen {
        *counts.entry(id).or_default() += 1;
    }
    let missing: Vec<&String> = expected
        .iter()
        .filter(|id| !counts.contains_key(id.as_str()))
        .collect();
    let twice: Vec<(&&str, &usize)> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(missing.is_empty(), "lost: {missing:?}");
    assert!(
        at_least_once || twice.is_empty(),
        "delivered more than once: {twice:?}"
    );
    assert_eq!(
        counts.len(),
        expected.len(),
        "unexpected messages: {seen:?}"
    );
    twice.len()
}

/// A consumer's TTL ladder becomes native retry and back, under load: the messages
/// waiting in its delay tiers are passed on to the work queue, parked messages stay
/// parked, nothing published during either apply is lost or unroutable, and no message
/// arrives twice. From a quorum work queue the work queue is never replaced (its
/// dead-letter key is the same in every mode); from a classic one
/// (`WARREN_NATIVE_SWITCH_FROM_CLASSIC=1`, which `scripts/reliability` sets) the work
/// and parking queues are migrated blue/green as well. docs/migration.md records the
/// figures.
#[test]
fn a_ttl_ladder_becomes_native_retry_and_back_under_load_losing_nothing() {
    crate::run(
        module_path!(),
        "a_ttl_ladder_becomes_native_retry_and_back_under_load_losing_nothing",
        Version::V4_3,
        |version| {
            switch_under_load(version, "quorum");
            if std::env::var_os("WARREN_NATIVE_SWITCH_FROM_CLASSIC").is_some() {
                switch_under_load(version, "classic");
            }
        },
    );
}

fn switch_under_load(version: Version, from_type: &str) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost(&format!("native-switch-{from_type}"));
    let ttl = spec(&vhost, Some("[20s, 40s]")).replace(
        "            retry: { mode: native, ",
        &format!("            type: {from_type}\n            retry: {{ "),
    );
    let native = spec(&vhost, Some("[20s, 40s]"));
    let file = Spec::new(&ttl);
    node.apply(file.arg()).expect(0);
    node.put(
        &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
        &serde_json::json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
    let rt = amqp::runtime();
    let client = rt.block_on(Client::connect(node, &vhost));
    // Retries waiting in both tiers, as a `publish` consumer leaves them, and
    // parked messages.
    let mut expected = rt.block_on(seed(&client, "jobs.worker.retry", "1", "tier1-", 30));
    expected.extend(rt.block_on(seed(&client, "jobs.worker.retry", "2", "tier2-", 30)));
    let parked = rt.block_on(seed(&client, "jobs.worker.retry", "parking", "parked-", 10));
    let work_before = node.get(&format!("/api/queues/{}/jobs.worker", pct(&vhost)));
    // Load: a publisher (confirms, mandatory) and a consumer that acks.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let consumer = rt.spawn(ack_everything(client.clone(), seen.clone()));
    let publishing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let publisher = {
        let (client, publishing) = (client.clone(), publishing.clone());
        rt.spawn(async move {
            let mut ids = Vec::new();
            let mut n = 0;
            while publishing.load(std::sync::atomic::Ordering::SeqCst) {
                let id = format!("load-{n}");
                client
                    .publish("jobs", "job", id.as_bytes(), amqp::message(&id))
                    .await
                    .unwrap_or_else(|e| panic!("{id}: {e}"));
                ids.push(id);
                n += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            ids
        })
    };
    // The plan says where the tiers' messages go; apply refuses without --migrate.
    file.write(&native);
    let started = Instant::now();
    node.apply(file.arg()).expect(4);
    let out = node.apply(file.arg()).with(&["--migrate"]).run();
    let took = started.elapsed();
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("its messages were passed on to \"jobs.worker\""),
        "{}",
        out.stderr
    );
    publishing.store(false, std::sync::atomic::Ordering::SeqCst);
    let published = rt.block_on(publisher).unwrap();
    expected.extend(published.iter().cloned());
    // From a classic ladder the work queue is migrated blue/green: at least once.
    let migrated = from_type != "quorum";
    let duplicates = all_seen(&seen, &expected, Duration::from_secs(90), migrated);
    println!(
        "TTL ladder ({from_type}) to native: {} messages published during the apply, 60 passed on from the tiers, 0 lost, {duplicates} delivered twice, apply --migrate {:.1} s",
        published.len(),
        took.as_secs_f64()
    );
    let work_after = node.get(&format!("/api/queues/{}/jobs.worker", pct(&vhost)));
    if from_type == "quorum" {
        assert_eq!(
            work_before["arguments"], work_after["arguments"],
            "the work queue keeps its declaration"
        );
    }
    assert!(messages(node, &vhost, "jobs.worker.retry.own.1").is_none());
    consumer.abort();
    rt.block_on(client.close());

    // Back to the TTL ladder while messages wait for their native retry.
    let client = rt.block_on(Client::connect(node, &vhost));
    let waiting = rt.block_on(seed(&client, "jobs", "job", "waiting-", 3));
    for _ in &waiting {
        rt.block_on(fail_once(&client));
    }
    file.write(&ttl);
    let out = node.apply(file.arg()).with(&["--migrate"]).run();
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let consumer = rt.spawn(ack_everything(client.clone(), seen.clone()));
    // Each comes back once its wait (20 s) is over.
    all_seen(&seen, &waiting, Duration::from_secs(90), migrated);
    consumer.abort();
    let mut still_parked = rt.block_on(take_all(&client, "jobs.worker.parking"));
    still_parked.sort();
    let mut parked = parked;
    parked.sort();
    assert_eq!(still_parked, parked, "parked messages stay parked");
    rt.block_on(client.close());
}
