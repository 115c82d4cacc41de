//! `warren status --inspect` against real brokers: a consumer that only rejects, in
//! `publish` mode, sends its message round the first tier past its ladder; the
//! broker's own `x-death` count shows it, and status names the consumer. Reading the
//! waiting messages changes nothing: each is given back where it was, a second look
//! sees the same, and on 4.3 a quorum tier's message read more often than the
//! queue's delivery limit (20 by default) still waits. On 4.0, where a message given
//! back counts toward that limit, the quorum tier is not read, and status says why.

use std::time::{Duration, Instant};

use lapin::options::{BasicGetOptions, BasicRejectOptions};
use lapin::{BasicProperties, Channel};
use serde_json::{Value, json};

use crate::amqp::{self, Client, Contract};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::status::consumer;
use crate::support::Capture;

/// `c`: a classic one-tier ladder with one retry, its delay `delay`; `q`: a quorum
/// one-tier ladder of an hour with two retries.
fn spec_yaml(vhost: &str, delay: &str) -> String {
    format!(
        "version: 1\nname: inspect-{vhost}\nvhosts:\n  {vhost}:\n    services:\n      s:\n        consumers:\n          c:\n            type: classic\n            routing_keys: [c]\n            retry: {{ delays: [{delay}], max_retries: 1 }}\n          q:\n            type: quorum\n            routing_keys: [q]\n            retry: {{ delays: [1h], max_retries: 2 }}\n"
    )
}

/// Takes the next message that reaches `queue` (waiting out a tier's delay), without
/// acknowledging it. The bound is for a message that never comes back.
async fn next(channel: &Channel, queue: &str) -> lapin::message::BasicGetMessage {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let got = channel
            .basic_get(queue.into(), BasicGetOptions { no_ack: false })
            .await
            .unwrap_or_else(|e| panic!("basic.get on {queue}: {e}"));
        if let Some(message) = got {
            return message;
        }
        assert!(Instant::now() < deadline, "nothing came back to {queue}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn reject(message: &lapin::message::BasicGetMessage) {
    message
        .delivery
        .reject(BasicRejectOptions { requeue: false })
        .await
        .expect("basic.reject");
}

/// `status --inspect --format json`.
fn inspect(node: &Node, spec: &Spec) -> Value {
    let run = node
        .warren(&["status", spec.arg(), "--inspect", "--format", "json"])
        .run()
        .expect(0);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// The first `--inspect` report: `c`'s tier holds one message rejected four times, past
/// its one retry, and `c` is named; `q`, which follows its contract, is not, and its
/// quorum tier is read except on 4.0. What `c`'s tier showed.
fn first_look_names_c_only(version: Version, report: &Value, c_tier: &str) -> Value {
    let c_status = consumer(report, "c");
    assert_eq!(
        c_status["tiers"][0]["inspected"],
        json!({"read": 1, "past_the_ladder": 1, "most_rejections": 4}),
        "{version}: {c_status:#}"
    );
    let problems: Vec<&Value> = c_status["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "retry-contract")
        .collect();
    assert_eq!(problems.len(), 1, "{version}: {c_status:#}");
    assert_eq!(problems[0]["queue"], c_tier);
    let message = problems[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("consumer `c` of service `s` does not follow its retry contract"),
        "{message}"
    );
    let q_status = consumer(report, "q");
    let q_problems = q_status["problems"].as_array().unwrap();
    assert!(
        q_problems.iter().all(|p| p["kind"] != "retry-contract"),
        "{version}: a consumer that follows its contract: {q_status:#}"
    );
    if version == Version::V4_0 {
        // A message given back counts toward the quorum tier's limit of 20.
        assert_eq!(q_status["tiers"][0]["inspected"], Value::Null);
        let why = q_status["tiers"][0]["not_inspected"].as_str().unwrap();
        assert!(why.contains("delivery limit (20)"), "{why}");
    } else {
        assert_eq!(
            q_status["tiers"][0]["inspected"],
            json!({"read": 1, "past_the_ladder": 0, "most_rejections": 0}),
            "{version}: {q_status:#}"
        );
    }
    c_status["tiers"][0]["inspected"].clone()
}

fn a_consumer_past_its_ladder_is_named_and_reading_changes_nothing(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("inspect");
    let spec = Spec::new(&spec_yaml(&vhost, "1s"));
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    node.put(
        &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
        &json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
    let contract = Contract::of(&spec.path, version.target());
    let (c, q) = (
        contract.consumer("c").clone(),
        contract.consumer("q").clone(),
    );
    let c_tier = c.retry().schedule[0].queue.clone();
    let q_tier = q.retry().schedule[0].queue.clone();
    let runtime = amqp::runtime();
    let client = runtime.block_on(Client::connect(node, &vhost));
    let channel = runtime
        .block_on(client.connection.create_channel())
        .unwrap();

    // `c` only rejects: the message goes round its one-second tier three times, then
    // is held while the tier's delay becomes an hour, and rejected a fourth time, so
    // that it waits in the tier for the rest of the test.
    let held = runtime.block_on(async {
        client
            .publish("", &c.queue, b"job", BasicProperties::default())
            .await
            .unwrap();
        for _ in 0..3 {
            reject(&next(&channel, &c.queue).await).await;
        }
        next(&channel, &c.queue).await
    });
    spec.write(&spec_yaml(&vhost, "1h"));
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    let tier_path = format!("/api/queues/{}/{}", pct(&vhost), pct(&c_tier));
    assert!(
        node.wait_until(Duration::from_secs(120), || {
            node.get(&tier_path)["effective_policy_definition"]["message-ttl"] == 3_600_000
        }),
        "{version}: the tier's delay never became an hour"
    );
    runtime.block_on(async {
        reject(&held).await;
        // A consumer that follows its contract: `q` fails a message once and
        // publishes its retry as the contract says (no deaths, a retry count).
        client
            .publish("", &q.queue, b"job", BasicProperties::default())
            .await
            .unwrap();
        let message = next(&channel, &q.queue).await;
        let action = client.fail(&q, &message.delivery, &q.queue).await.unwrap();
        assert_eq!(action, amqp::Action::Retried { retry: 1 });
    });
    let waiting = |tier: &str| runtime.block_on(client.ready(tier));
    assert!(
        node.wait_until(Duration::from_secs(120), || waiting(&c_tier) == 1
            && waiting(&q_tier) == 1),
        "{version}: a message waits in each tier"
    );

    let report = inspect(node, &spec);
    let first_look = first_look_names_c_only(version, &report, &c_tier);
    // Reading gave every message back: each tier still holds its message, and the
    // next look sees the same. On 4.3 the quorum tier's message, read more often than
    // its default delivery limit of 20, is still there: a message given back with a
    // nack does not count toward it.
    let looks = if version == Version::V4_3 { 21 } else { 2 };
    for _ in 1..looks {
        let again = inspect(node, &spec);
        assert_eq!(
            consumer(&again, "c")["tiers"][0]["inspected"],
            first_look,
            "{version}"
        );
    }
    assert_eq!(
        (waiting(&c_tier), waiting(&q_tier)),
        (1, 1),
        "{version}: the tiers hold what they held"
    );
    assert_eq!(
        (waiting(&c.queue), waiting(&q.queue)),
        (0, 0),
        "{version}: nothing came back early"
    );

    // The text report shows the tier and names the consumer.
    let text = node
        .warren(&["status", spec.arg(), "--inspect"])
        .run()
        .expect(0)
        .stdout;
    // The figure before it is the statistics' count, which lags.
    assert!(text.contains(" (1 past the ladder)"), "{text}");
    assert!(
        text.contains("s/c: consumer `c` of service `s` does not follow its retry contract"),
        "{text}"
    );
    runtime.block_on(client.close());
    node.remove_vhost(&vhost);
}

per_version!(also_on_4_0: a_consumer_past_its_ladder_is_named_and_reading_changes_nothing);

/// Without an AMQP listener, `status --inspect` fails with the queue it could not read
/// and where it looked (exit 3, as for a broker it cannot reach), and without
/// `--inspect` the same status reads nothing over AMQP and reports.
#[test]
fn without_amqp_inspect_says_what_it_could_not_read() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("inspect-noamqp");
    let spec = Spec::new(&spec_yaml(&vhost, "1s"));
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    let nowhere = "amqp://127.0.0.1:1";
    let run = node
        .warren(&["status", spec.arg(), "--inspect", "--amqp-url", nowhere])
        .run()
        .expect(3);
    assert!(
        run.stderr
            .contains("cannot read the messages waiting in queue \"s.c.retry.own.1\"")
            && run
                .stderr
                .contains("no AMQP connection at amqp://127.0.0.1:1"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(&node.password), "{}", run.stderr);
    node.warren(&["status", spec.arg(), "--amqp-url", nowhere])
        .run()
        .expect(0);
    node.remove_vhost(&vhost);
}
