//! Adopting retry loops that already run. Each loop is declared by an independent AMQP
//! client (lapin), in the shapes real projects use: the reference article's single loop
//! as pika declares it, the same loop fixed for several consumers with a return exchange
//! each, the aio-pika loop that returns through the default exchange, and a quorum
//! ladder of two tiers with a parking queue and keys of its own. warren then imports
//! them as consumers with ladders, the spec validates for the broker's line, plans no
//! change to any of them, `status` reports them, and once applied each loop still sends
//! a rejected message back to the consumer that failed, and to it alone.

use std::time::Duration;

use lapin::options::{
    BasicGetOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{BasicProperties, Channel, ExchangeKind};
use serde_json::{Value, json};

use crate::amqp::{self, Client};
use crate::node::{Node, Version, pct};
use crate::support::Capture;

/// Declares objects as an application would, over AMQP.
struct Declare {
    channel: Channel,
}

impl Declare {
    async fn exchange(&self, name: &str, kind: ExchangeKind) {
        self.channel
            .exchange_declare(
                name.into(),
                kind,
                ExchangeDeclareOptions {
                    durable: true,
                    ..ExchangeDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("exchange.declare {name}: {e}"));
    }

    /// A durable queue with `arguments` (strings and numbers, as JSON).
    async fn queue(&self, name: &str, arguments: Value) {
        let mut table = FieldTable::default();
        for (key, value) in arguments.as_object().unwrap() {
            let value = match value {
                Value::String(text) => AMQPValue::LongString(LongString::from(text.as_str())),
                Value::Number(n) => AMQPValue::LongLongInt(n.as_i64().unwrap()),
                other => panic!("argument {key}: {other}"),
            };
            table.insert(key.as_str().into(), value);
        }
        self.channel
            .queue_declare(
                name.into(),
                QueueDeclareOptions {
                    durable: true,
                    ..QueueDeclareOptions::default()
                },
                table,
            )
            .await
            .unwrap_or_else(|e| panic!("queue.declare {name}: {e}"));
    }

    async fn bind(&self, queue: &str, exchange: &str, key: &str) {
        self.channel
            .queue_bind(
                queue.into(),
                exchange.into(),
                key.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("queue.bind {queue} to {exchange}: {e}"));
    }
}

/// The delay of every loop: short, so that the behaviour checks wait little.
const TTL_MS: i64 = 1_000;

/// Builds the loops in `vhost`. `ladder_type` is the quorum ladder's queue type.
async fn build(client: &Client, ladder_type: &str) {
    let channel = client.connection.create_channel().await.expect("channel");
    let declare = Declare { channel };
    // The reference article's single loop, declared as its pika code does: pika binds
    // with the queue's name as routing key when none is given, even on fanout exchanges.
    declare
        .exchange("service_a_inner_exch", ExchangeKind::Fanout)
        .await;
    declare
        .exchange("dead_letter_exchange", ExchangeKind::Fanout)
        .await;
    declare
        .queue(
            "service_a_input_q",
            json!({"x-dead-letter-exchange": "dead_letter_exchange"}),
        )
        .await;
    declare
        .queue(
            "dead_letter_queue",
            json!({"x-message-ttl": TTL_MS, "x-dead-letter-exchange": "service_a_inner_exch"}),
        )
        .await;
    declare
        .bind(
            "dead_letter_queue",
            "dead_letter_exchange",
            "dead_letter_queue",
        )
        .await;
    declare
        .bind(
            "service_a_input_q",
            "service_a_inner_exch",
            "service_a_input_q",
        )
        .await;
    // The article's fix for several consumers on one exchange: each consumer's delay
    // queue returns through a dead exchange of its own, bound to its queue alone.
    declare.exchange("reports", ExchangeKind::Fanout).await;
    for consumer in ["reports.pdf", "reports.csv"] {
        let dead = format!("{consumer}.dead");
        let wait = format!("{consumer}.wait");
        let back = format!("{consumer}.back");
        declare.exchange(&dead, ExchangeKind::Fanout).await;
        declare.exchange(&back, ExchangeKind::Fanout).await;
        declare
            .queue(consumer, json!({"x-dead-letter-exchange": dead}))
            .await;
        declare
            .queue(
                &wait,
                json!({"x-message-ttl": TTL_MS, "x-dead-letter-exchange": back}),
            )
            .await;
        declare.bind(consumer, "reports", "").await;
        declare.bind(&wait, &dead, "").await;
        declare.bind(consumer, &back, "").await;
    }
    // aio-pika's loop: a direct dead-letter exchange and a retry queue that returns
    // through the default exchange with the work queue's name.
    declare.exchange("jobs_in", ExchangeKind::Direct).await;
    declare.exchange("jobs_dlx", ExchangeKind::Direct).await;
    declare
        .queue(
            "jobs_retry",
            json!({"x-message-ttl": TTL_MS, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "jobs"}),
        )
        .await;
    declare.bind("jobs_retry", "jobs_dlx", "jobs.retry").await;
    declare
        .queue(
            "jobs",
            json!({"x-dead-letter-exchange": "jobs_dlx", "x-dead-letter-routing-key": "jobs.retry"}),
        )
        .await;
    declare.bind("jobs", "jobs_in", "jobs").await;
    // A ladder of two tiers and a parking queue, with keys and names of its own.
    declare.exchange("orders", ExchangeKind::Topic).await;
    declare.exchange("orders.dlx", ExchangeKind::Direct).await;
    declare
        .queue(
            "orders.work",
            json!({"x-queue-type": ladder_type, "x-dead-letter-exchange": "orders.dlx", "x-dead-letter-routing-key": "wait.short"}),
        )
        .await;
    declare.bind("orders.work", "orders", "order.*").await;
    for (queue, key, ttl) in [
        ("orders.wait.short", "wait.short", TTL_MS),
        ("orders.wait.long", "wait.long", 5 * TTL_MS),
    ] {
        declare
            .queue(
                queue,
                json!({"x-queue-type": ladder_type, "x-message-ttl": ttl, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "orders.work"}),
            )
            .await;
        declare.bind(queue, "orders.dlx", key).await;
    }
    declare
        .queue("orders.dead", json!({"x-queue-type": ladder_type}))
        .await;
    declare.bind("orders.dead", "orders.dlx", "dead").await;
    // A loop the spec cannot declare as it runs: its work queue is a priority queue.
    declare.exchange("audit", ExchangeKind::Fanout).await;
    declare.exchange("audit.dlx", ExchangeKind::Fanout).await;
    declare
        .queue(
            "audit.work",
            json!({"x-max-priority": 5, "x-dead-letter-exchange": "audit.dlx"}),
        )
        .await;
    declare
        .queue(
            "audit.wait",
            json!({"x-message-ttl": TTL_MS, "x-dead-letter-exchange": "audit"}),
        )
        .await;
    declare.bind("audit.work", "audit", "").await;
    declare.bind("audit.wait", "audit.dlx", "").await;
    let _ = declare.channel.close(200, "".into()).await;
}

/// The work queues the import must turn into consumers with ladders.
const WORK_QUEUES: [&str; 5] = [
    "jobs",
    "orders.work",
    "reports.csv",
    "reports.pdf",
    "service_a_input_q",
];

fn loops_built_by_hand_are_adopted_as_consumers_with_ladders(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("adopt");
    node.put(&format!("/api/vhosts/{}", pct(&vhost)), &json!({}));
    node.put(
        &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
        &json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
    let runtime = amqp::runtime();
    let client = runtime.block_on(Client::connect(node, &vhost));
    runtime.block_on(build(&client, "quorum"));

    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("adopted.yaml");
    let spec = spec.to_str().unwrap().to_string();
    let name = format!("adopt-{vhost}");
    let imported = node
        .cli(&["import", "--vhost", &vhost, "--name", &name, "-o", &spec])
        .run();
    assert_eq!(imported.code, Some(0), "{}", imported.stderr);
    // Each loop outside warren's shape is named; the one that does not fit says why.
    assert!(
        imported.stderr.contains(
            "queue `audit.work` starts a retry loop that is imported as plain queues and exchanges, because the work queue `audit.work` has argument `x-max-priority`"
        ),
        "{}",
        imported.stderr
    );
    for queue in WORK_QUEUES {
        assert!(
            imported
                .stderr
                .contains(&format!("the retry loop of queue `{queue}` is consumer")),
            "{queue}: {}",
            imported.stderr
        );
    }
    let yaml = std::fs::read_to_string(&spec).unwrap();

    // The spec validates for the broker's line, with no flag.
    let valid = crate::support::warren(&["validate", &spec]).run();
    assert_eq!(
        valid.code,
        Some(0),
        "{}{}\n{yaml}",
        valid.stdout,
        valid.stderr
    );

    contract_has_every_loop(&spec, &yaml);

    // The plan changes none of them. From 4.0 on, quorum queues have a delivery limit of
    // 20 by default, which would drop parked messages after 20 requeues: warren's
    // ladders lift it with policies, the one change their plan may make.
    let planned = node.cli(&["plan", &spec, "--format", "json"]).run();
    assert_eq!(planned.code, Some(0), "{}", planned.stderr);
    let plan: Value = serde_json::from_str(&planned.stdout).unwrap();
    let changes = plan["changes"].as_array().unwrap();
    let lifts_limits = |change: &Value| {
        change["action"] == "create"
            && change["id"]["kind"] == "policy"
            && change["after"]["definition"]
                .get("delivery-limit")
                .is_some()
    };
    if version == Version::V3_10 {
        assert!(changes.is_empty(), "{}", planned.stdout);
    } else {
        // The quorum ladder's work and parking queues get their limits lifted, as the
        // import said.
        assert!(
            imported
                .stderr
                .contains("consumer `orders.work` has a quorum work queue with RabbitMQ")
                && imported
                    .stderr
                    .contains("the first plan creates the policy"),
            "{}",
            imported.stderr
        );
        assert!(
            !changes.is_empty() && changes.iter().all(lifts_limits),
            "{}",
            planned.stdout
        );
    }
    assert_eq!(plan["conflicts"], json!([]), "{}", planned.stdout);

    // `status` reports each loop as a consumer with its tiers.
    let status = node
        .warren(&["status", &spec, "--format", "json"])
        .run()
        .expect(0);
    let report: Value = serde_json::from_str(&status.stdout).unwrap();
    for queue in WORK_QUEUES {
        let consumer = report["consumers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["queue"] == queue)
            .unwrap_or_else(|| panic!("no consumer on {queue} in {report:#}"));
        assert!(consumer["tiers"][0].is_object(), "{consumer:#}");
    }

    // Adopted, each loop still works, and a rejected message goes back to the consumer
    // that failed only.
    node.apply(&spec).with(&["--lock-timeout", "2m"]).expect(0);
    node.plan(&spec).expect(0);
    runtime.block_on(async {
        reject_and_see_it_back(&client, "service_a_inner_exch", "", "service_a_input_q").await;
        reject_and_see_it_back(&client, "reports", "", "reports.pdf").await;
        // The other consumer on the same exchange got the message once, not the retry.
        let csv = client.ready("reports.csv").await;
        assert_eq!(csv, 1, "reports.csv received the retry of reports.pdf");
        reject_and_see_it_back(&client, "jobs_in", "jobs", "jobs").await;
        reject_and_see_it_back(&client, "orders", "order.created", "orders.work").await;
        client.close().await;
    });
    node.remove_vhost(&vhost);
}

/// The imported spec's contract has every loop as a consumer, with the broker's names,
/// keys and delays.
fn contract_has_every_loop(spec: &str, yaml: &str) {
    let contract = crate::support::warren(&["compile", "--contract", spec]).run();
    assert_eq!(contract.code, Some(0), "{}", contract.stderr);
    let contract: Value = serde_json::from_str(&contract.stdout).unwrap();
    let consumers = contract["consumers"].as_array().unwrap();
    let mut queues: Vec<&str> = consumers
        .iter()
        .filter(|c| c["retry"].is_object())
        .map(|c| c["queue"].as_str().unwrap())
        .collect();
    queues.sort_unstable();
    assert_eq!(queues, WORK_QUEUES, "{yaml}");
    let of = |queue: &str| -> &Value {
        &consumers.iter().find(|c| c["queue"] == queue).unwrap()["retry"]
    };
    let article = of("service_a_input_q");
    assert_eq!(article["mode"], "reject", "{yaml}");
    assert_eq!(article["exchange"], "dead_letter_exchange");
    assert_eq!(article["schedule"][0]["queue"], "dead_letter_queue");
    assert_eq!(article["on_exhausted"]["action"], "drop");
    let ladder = of("orders.work");
    assert_eq!(ladder["schedule"][0]["routing_key"], "wait.short", "{yaml}");
    assert_eq!(ladder["schedule"][1]["queue"], "orders.wait.long");
    assert_eq!(ladder["schedule"][1]["delay_ms"], 5 * TTL_MS);
    assert_eq!(ladder["on_exhausted"]["routing_key"], "dead");
    assert_eq!(ladder["on_exhausted"]["queue"], "orders.dead");
}

/// Publishes to `exchange`, takes the message from `work` and rejects it, then waits
/// until the loop has brought it back to `work` with one `x-death` entry of the work
/// queue.
async fn reject_and_see_it_back(client: &Client, exchange: &str, key: &str, work: &str) {
    client
        .publish(exchange, key, b"job", BasicProperties::default())
        .await
        .unwrap();
    let channel = client.connection.create_channel().await.expect("channel");
    let mut first = None;
    for _ in 0..600 {
        first = channel
            .basic_get(work.into(), BasicGetOptions { no_ack: false })
            .await
            .unwrap();
        if first.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = first.unwrap_or_else(|| panic!("nothing reached {work}"));
    amqp::reject(&first.delivery).await.unwrap();
    // The delay is 1 s; the deadline is for a loaded machine, not a bound.
    let mut back = None;
    for _ in 0..1_200 {
        back = channel
            .basic_get(work.into(), BasicGetOptions { no_ack: true })
            .await
            .unwrap();
        if back.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let back = back.unwrap_or_else(|| panic!("the rejected message never came back to {work}"));
    assert_eq!(
        amqp::x_death_count(&back.delivery, work, "rejected"),
        1,
        "{work}: {:?}",
        amqp::x_death(&back.delivery)
    );
    let _ = channel.close(200, "".into()).await;
}

per_version!(loops_built_by_hand_are_adopted_as_consumers_with_ladders);
