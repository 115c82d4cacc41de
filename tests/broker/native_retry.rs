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
            let file = Spec::new(&spec(&vhost, Some("[10s, 20s]")));
            node.apply(file.arg()).expect(0);
            node.put(
                &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
                &serde_json::json!({"configure": ".*", "write": ".*", "read": ".*"}),
            );
            let rt = amqp::runtime();
            let client = rt.block_on(Client::connect(node, &vhost));
            rt.block_on(client.publish("jobs", "job", b"waits", amqp::message("w1")))
                .unwrap();
            // The consumer fails it as the contract says: it now waits 10 s, counted
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
                node.wait_until(Duration::from_secs(15), || waiting()
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
            // Kept, with its message, and still routed.
            assert!(
                node.wait_until(Duration::from_secs(20), || messages(
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

            // Once it is handled, the queue goes, after the guard has waited its 20 s out.
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
            // and unacknowledged messages, which lag by seconds.
            assert!(node.wait_until(Duration::from_secs(20), || {
                node.get(&format!("/api/queues/{}/jobs.worker", pct(&vhost)))["messages_delayed"]
                    .as_u64()
                    .unwrap_or(0)
                    == 0
                    && messages(node, &vhost, "jobs.worker") == Some(0)
            }));
            let started = Instant::now();
            node.apply(file.arg()).expect(0);
            assert!(
                started.elapsed() >= Duration::from_secs(20),
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
            // To `publish` mode: the work queue's dead-letter key changes, so it is
            // replaced, and the message that waits in it must come through.
            file.write(&spec(&vhost, Some("[2s, 4s]")).replace("mode: native, ", ""));
            let out = node.apply(file.arg()).with(&["--migrate"]).run();
            assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
            let message = rt.block_on(async {
                let deadline = Instant::now() + Duration::from_secs(30);
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
