//! What a consumer that only rejects (`basic.reject`, requeue=false), as the classic
//! loop's consumers do, gets from the modes whose ladders wait in delay queues. In
//! `publish`, the default, a plain reject enters the first tier and counts nothing: the
//! message comes back again and again, past `max_retries`, and never parks; the
//! broker's own `x-death` count shows how often. `reject-chain` climbs the same ladder
//! and parks after the last retry with the consumer doing nothing else. This is the
//! measured reason docs/retry-modes.md gives for keeping `publish` the default and
//! saying what its consumer must do.

use std::time::{Duration, Instant};

use lapin::BasicProperties;
use lapin::options::BasicGetOptions;
use serde_json::json;

use crate::amqp::{self, Client, Contract};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;

/// Rejects whatever reaches the consumer's queues until it has rejected `limit` times
/// or the message is parked; returns the rejections, whether it parked, and the
/// broker's count of the work queue's rejections on the last delivery.
async fn reject_everything(
    client: &Client,
    consume_from: &[String],
    work: &str,
    parking: &str,
    limit: u32,
) -> (u32, bool, u64) {
    let channel = client.connection.create_channel().await.expect("channel");
    let mut rejections = 0;
    let mut counted = 0;
    // A deadline for a loaded machine, not a bound: each round waits the 1 s delay.
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        if client.ready(parking).await == 1 {
            let _ = channel.close(200, "".into()).await;
            return (rejections, true, counted);
        }
        if rejections == limit {
            break;
        }
        let mut got = None;
        for queue in consume_from {
            got = channel
                .basic_get(queue.as_str().into(), BasicGetOptions { no_ack: false })
                .await
                .unwrap();
            if got.is_some() {
                break;
            }
        }
        match got {
            Some(message) => {
                counted = amqp::x_death_count(&message.delivery, work, "rejected");
                amqp::reject(&message.delivery).await.unwrap();
                rejections += 1;
            }
            None => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let _ = channel.close(200, "".into()).await;
    (rejections, false, counted)
}

fn a_consumer_that_only_rejects_parks_in_reject_chain_and_circles_in_publish(version: Version) {
    let node = Node::shared(version);
    let max_retries = 2;
    for (mode, parks) in [("reject-chain", true), ("publish", false)] {
        let vhost = node.unused_vhost("reject-only");
        let spec = Spec::new(&format!(
            "version: 1\nname: reject-only-{vhost}\nvhosts:\n  {vhost}:\n    services:\n      s:\n        exchange: {{ type: fanout }}\n        consumers:\n          c:\n            type: classic\n            retry: {{ mode: {mode}, delays: [1s], max_retries: {max_retries} }}\n"
        ));
        node.apply(spec.arg())
            .with(&["--lock-timeout", "2m"])
            .expect(0);
        node.put(
            &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
            &json!({"configure": ".*", "write": ".*", "read": ".*"}),
        );
        let contract = Contract::of(&spec.path, version.target());
        let consumer = contract.consumer("c").clone();
        let retry = consumer.retry.clone().unwrap();
        let parking = retry.on_exhausted.queue.clone().unwrap();
        let runtime = amqp::runtime();
        let (rejections, parked, counted) = runtime.block_on(async {
            let client = Client::connect(node, &vhost).await;
            client
                .publish("s", "", b"job", BasicProperties::default())
                .await
                .unwrap();
            // Two rejections more than the ladder allows: enough to see it circle.
            let found = reject_everything(
                &client,
                &consumer.consume_from,
                &consumer.queue,
                &parking,
                max_retries + 3,
            )
            .await;
            client.close().await;
            found
        });
        if parks {
            // The first delivery and each retry rejected, then parked by the broker.
            assert!(parked, "{mode}: never parked after {rejections} rejections");
            assert_eq!(rejections, max_retries + 1, "{mode}");
        } else {
            assert!(!parked, "{mode}: parked");
            assert_eq!(rejections, max_retries + 3, "{mode}");
            // The broker counted every plain reject; the contract counts none of them.
            assert!(
                counted > u64::from(max_retries),
                "{mode}: x-death counted {counted}"
            );
        }
        node.remove_vhost(&vhost);
    }
}

per_version!(a_consumer_that_only_rejects_parks_in_reject_chain_and_circles_in_publish);
