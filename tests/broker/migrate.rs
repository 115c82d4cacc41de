//! `apply --migrate`: a queue whose type changes is moved blue/green while a publisher
//! with confirms and a slow consumer keep running; nothing confirmed is lost.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicGetOptions, BasicQosOptions};
use lapin::types::FieldTable;

use crate::amqp::{self, Client, message};
use crate::background::Background;
use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

/// Messages waiting in the queue before the migration.
fn waiting() -> usize {
    std::env::var("WARREN_MIGRATE_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// How long an `apply --migrate` that finishes a stopped migration may take in these
/// tests (the moves of a few thousand messages take seconds): longer is a wait that
/// does not end, and fails the test with what the apply was waiting for.
const FINISH_WITHIN: Duration = Duration::from_secs(600);

fn spec_text(name: &str, vhost: &str, queue_type: &str) -> String {
    format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    exchanges:\n      events: {{ type: direct }}\n    queues:\n      work: {{ type: {queue_type} }}\n    bindings:\n      - {{ source: events, destination: work, routing_key: k }}\n"
    )
}

/// What the applications around the migration saw.
#[derive(Default)]
struct Traffic {
    /// Message ids the broker confirmed.
    confirmed: Mutex<Vec<String>>,
    /// Message ids a consumer received (each delivery once).
    received: Mutex<Vec<String>>,
    /// Message ids the broker returned as unroutable.
    unroutable: Mutex<Vec<String>>,
}

/// Publishes `live-N` to `events`/`k` one at a time with confirms and `mandatory`
/// until `stop`; a message the broker returns as unroutable is counted.
async fn publish_until(
    node: &'static Node,
    vhost: String,
    traffic: Arc<Traffic>,
    stop: Arc<AtomicBool>,
) {
    let mut client = Client::connect(node, &vhost).await;
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let id = format!("live-{n}");
        match client
            .publish("events", "k", id.as_bytes(), message(&id))
            .await
        {
            Ok(()) => traffic.confirmed.lock().unwrap().push(id),
            Err(error) if error.starts_with("unroutable") => {
                traffic.unroutable.lock().unwrap().push(id);
            }
            Err(error) => {
                eprintln!("publisher: {error}; connecting again");
                tokio::time::sleep(Duration::from_millis(100)).await;
                client = Client::connect(node, &vhost).await;
            }
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Consumes `work` with prefetch 20, acknowledging each message 1 ms after it arrives;
/// when the broker cancels it (the old queue is deleted), subscribes again, and when
/// its connection fails, connects again, as client libraries that recover do.
async fn consume_until(
    node: &'static Node,
    vhost: String,
    traffic: Arc<Traffic>,
    stop: Arc<AtomicBool>,
) {
    let mut client = Client::connect(node, &vhost).await;
    while !stop.load(Ordering::SeqCst) {
        let channel = match client.connection.create_channel().await {
            Ok(channel) => channel,
            Err(error) => {
                eprintln!("consumer: connection lost ({error}); connecting again");
                tokio::time::sleep(Duration::from_millis(100)).await;
                client = Client::connect(node, &vhost).await;
                continue;
            }
        };
        if channel
            .basic_qos(20, BasicQosOptions::default())
            .await
            .is_err()
        {
            continue;
        }
        let consumer = channel
            .basic_consume(
                "work".into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await;
        let Ok(mut consumer) = consumer else {
            // The queue is being declared anew: try again shortly.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        loop {
            let next = tokio::time::timeout(Duration::from_millis(200), consumer.next()).await;
            match next {
                Ok(Some(Ok(delivery))) => {
                    let id = String::from_utf8_lossy(&delivery.data).into_owned();
                    traffic.received.lock().unwrap().push(id);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    let _ = delivery.ack(BasicAckOptions::default()).await;
                }
                Ok(_) => break, // cancelled by the broker, or the channel closed
                Err(_) if stop.load(Ordering::SeqCst) => break,
                Err(_) => {}
            }
        }
        let _ = channel.close(200, "".into()).await;
    }
}

/// Takes every message left in `queue`.
async fn drain(client: &Client, queue: &str) -> Vec<String> {
    let channel = client.connection.create_channel().await.expect("channel");
    let mut ids = Vec::new();
    while let Some(message) = channel
        .basic_get(queue.into(), BasicGetOptions { no_ack: false })
        .await
        .expect("basic.get")
    {
        ids.push(String::from_utf8_lossy(&message.delivery.data).into_owned());
        message
            .delivery
            .ack(BasicAckOptions::default())
            .await
            .unwrap();
    }
    ids
}

/// Publishes `count` persistent messages `pre-N` with confirms.
async fn fill(client: &Client, count: usize, traffic: &Traffic) {
    for batch in (0..count).collect::<Vec<_>>().chunks(500) {
        let mut pending = Vec::new();
        for n in batch {
            let id = format!("pre-{n}");
            let confirm = client
                .publish_unconfirmed("events", "k", id.as_bytes(), message(&id))
                .await
                .unwrap();
            pending.push((id, confirm));
        }
        for (id, confirm) in pending {
            assert!(confirm.await.unwrap().is_ack());
            traffic.confirmed.lock().unwrap().push(id);
        }
    }
}

/// Figures of one migration under load.
struct Figures {
    confirmed: usize,
    received: usize,
    duplicates: usize,
    left: usize,
    seconds: f64,
}

/// Runs the migration of `work` from classic to quorum under a publisher and a slow
/// consumer; `during` is called with the running apply (to kill it) and returns
/// whether the migration must be run again to finish.
fn migrate_under_load(
    node: &'static Node,
    vhost: &str,
    spec: &Spec,
    messages: usize,
    mut during: impl FnMut(&mut Background) -> bool,
) -> Figures {
    let runtime = amqp::runtime();
    let traffic = Arc::new(Traffic::default());
    let stop = Arc::new(AtomicBool::new(false));
    runtime.block_on(async {
        let client = Client::connect(node, vhost).await;
        fill(&client, messages, &traffic).await;
    });
    let publishing = runtime.spawn(publish_until(
        node,
        vhost.to_string(),
        traffic.clone(),
        stop.clone(),
    ));
    let consuming = runtime.spawn(consume_until(
        node,
        vhost.to_string(),
        traffic.clone(),
        stop.clone(),
    ));
    let started = Instant::now();
    let mut child = Background::spawn(node.apply(spec.arg()).with(&["--migrate"]).command());
    let again = during(&mut child);
    let first = child.finish();
    if again {
        assert_half_done_is_shown(node, vhost, spec);
        let mut runs = 0;
        loop {
            runs += 1;
            let run = Background::spawn(node.apply(spec.arg()).with(&["--migrate"]).command())
                .finish_within(FINISH_WITHIN);
            if run.code == Some(0) {
                break;
            }
            assert!(
                runs < 4 && run.stderr.contains("changed since this plan was made"),
                "{}\n{}",
                run.stdout,
                run.stderr
            );
        }
    } else {
        assert_eq!(first.code, Some(0), "{}\n{}", first.stdout, first.stderr);
    }
    let seconds = started.elapsed().as_secs_f64();
    // Let the applications run on the final queue a moment, then stop them.
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    runtime.block_on(async {
        publishing.await.unwrap();
        consuming.await.unwrap();
    });
    let left = runtime.block_on(async { drain(&Client::connect(node, vhost).await, "work").await });
    let confirmed: BTreeSet<String> = traffic.confirmed.lock().unwrap().iter().cloned().collect();
    let received_all = traffic.received.lock().unwrap().clone();
    let received: BTreeSet<String> = received_all.iter().chain(&left).cloned().collect();
    let unroutable = traffic.unroutable.lock().unwrap().clone();
    assert!(
        unroutable.is_empty(),
        "{} publishes were unroutable during the migration, e.g. {:?}",
        unroutable.len(),
        unroutable.iter().take(5).collect::<Vec<_>>()
    );
    let lost: Vec<&String> = confirmed.difference(&received).collect();
    assert!(
        lost.is_empty(),
        "{} confirmed messages lost, e.g. {:?}",
        lost.len(),
        lost.iter().take(5).collect::<Vec<_>>()
    );
    Figures {
        confirmed: confirmed.len(),
        received: received_all.len(),
        duplicates: received_all.len() + left.len() - received.len(),
        left: left.len(),
        seconds,
    }
}

/// After a stopped migration: the plan shows it, and while its messages wait in the
/// temporary queue for the queue declared anew, an apply without `--migrate` refuses.
fn assert_half_done_is_shown(node: &Node, vhost: &str, spec: &Spec) {
    let temporary = format!("/api/queues/{}/warren.migrate.work", pct(vhost));
    let work = format!("/api/queues/{}/work", pct(vhost));
    if node.get_opt(&temporary).is_none() {
        return;
    }
    let plan = node
        .warren(&["plan", "--detailed-exitcode", spec.arg()])
        .run();
    assert_eq!(plan.code, Some(2), "{}\n{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("1 to migrate"), "{}", plan.stdout);
    let declared_anew = node
        .get_opt(&work)
        .is_some_and(|q| q["arguments"]["x-queue-type"] == "quorum");
    if declared_anew {
        assert!(plan.stdout.contains("under way"), "{}", plan.stdout);
        let refused = node.apply(spec.arg()).run();
        assert_eq!(refused.code, Some(4), "{}", refused.stdout);
        assert!(
            refused.stderr.contains("is under way")
                && refused.stderr.contains("warren apply --migrate"),
            "{}",
            refused.stderr
        );
    }
}

fn assert_finished(node: &Node, vhost: &str, spec: &Spec) {
    let queue = node.get(&format!("/api/queues/{}/work", pct(vhost)));
    assert_eq!(queue["arguments"]["x-queue-type"], "quorum", "{queue}");
    let temporary = format!("/api/queues/{}/warren.migrate.work", pct(vhost));
    assert!(
        node.get_opt(&temporary).is_none(),
        "the temporary queue is gone"
    );
    let exchange = format!("/api/exchanges/{}/warren.migrate.work", pct(vhost));
    assert!(
        node.get_opt(&exchange).is_none(),
        "the temporary exchange is gone"
    );
    let plan = node.plan(spec.arg()).run();
    assert_eq!(plan.code, Some(0), "{}\n{}", plan.stdout, plan.stderr);
}

/// 10,000 waiting messages, a steady publisher with confirms, a consumer acking
/// slowly: `apply --migrate` turns the classic queue into a quorum queue, and every
/// confirmed message was received or is in the final queue.
fn a_classic_queue_becomes_quorum_under_load_losing_nothing(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("migrate");
    let name = format!("migrate-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, "classic"));
    node.apply(spec.arg()).expect(0);
    spec.write(&spec_text(&name, &vhost, "quorum"));
    // The plan shows a migration, not data loss, once messages wait.
    let figures = migrate_under_load(node, &vhost, &spec, waiting(), |_| false);
    assert_finished(node, &vhost, &spec);
    eprintln!(
        "migration on {version}: {} messages confirmed ({} waiting before), {} deliveries, {} duplicates, {} left in the final queue, {:.1} s",
        figures.confirmed,
        waiting(),
        figures.received,
        figures.duplicates,
        figures.left,
        figures.seconds
    );
}

/// Without `--migrate`, a replace of a queue holding messages is refused and the plan
/// shows the migration with its steps.
fn the_plan_shows_a_migration_and_apply_without_migrate_refuses(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("migplan");
    let name = format!("migplan-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, "classic"));
    node.apply(spec.arg()).expect(0);
    let runtime = amqp::runtime();
    runtime.block_on(async {
        let client = Client::connect(node, &vhost).await;
        for n in 0..3 {
            client
                .publish("events", "k", b"x", message(&format!("m{n}")))
                .await
                .unwrap();
        }
    });
    // A queue of the broker's own that dead-letters to `work` by name, as a delay
    // queue returning to its work queue does: the plan names it where `work` is
    // deleted and declared anew, the instant in which the broker drops what it
    // dead-letters.
    node.put(
        &format!("/api/queues/{}/returns", pct(&vhost)),
        &serde_json::json!({"durable": true, "auto_delete": false, "arguments":
            {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work"}}),
    );
    spec.write(&spec_text(&name, &vhost, "quorum"));
    // Statistics lag (5 s between emissions, more on a loaded node): wait for the
    // count the plan shows.
    assert!(node.wait_until(Duration::from_secs(90), || {
        node.get(&format!("/api/queues/{}/work", pct(&vhost)))["messages"] == 3
    }));
    let plan = node
        .warren(&["plan", "--detailed-exitcode", spec.arg()])
        .run()
        .expect(2);
    assert!(
        plan.stdout.contains("~> work (migrate: ")
            && plan.stdout.contains("3 messages: moved with --migrate")
            && plan.stdout.contains("Migrations")
            && plan
                .stdout
                .contains("declare `warren.migrate.work` (quorum")
            && plan.stdout.contains("1 to migrate")
            && plan
                .stdout
                .contains("and `returns` dead-letters to it that way")
            && !plan.stdout.contains("DATA LOSS"),
        "{}",
        plan.stdout
    );
    // Refused when planned (the statistics the apply's own plan reads count them) or,
    // if a loaded node's statistics do not show them to that read, under the locks
    // from the queue's own count: both are right, and both change nothing.
    let refused = node.apply(spec.arg()).expect(4);
    assert!(
        ((refused.stderr.contains("refusing to lose messages")
            && refused.stderr.contains("--migrate moves them"))
            || (refused
                .stderr
                .contains("refusing to apply: the broker counts, now,")
                && refused.stderr.contains("holds 3 ready messages")))
            && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    node.apply(spec.arg()).with(&["--migrate"]).expect(0);
    let left = runtime.block_on(async {
        let client = Client::connect(node, &vhost).await;
        drain(&client, "work").await
    });
    assert_eq!(left.len(), 3, "{left:?}");
    assert_finished(node, &vhost, &spec);
}

/// The states a migration of `work` in `vhost` passes through, in order, as the
/// broker shows them; warren is killed as soon as each is seen.
/// A step of a migration: its name, and whether the broker shows it reached.
type Step = (&'static str, fn(&Node, &str) -> bool);

fn steps() -> Vec<Step> {
    fn temporary(node: &Node, vhost: &str) -> Option<serde_json::Value> {
        node.get_opt(&format!("/api/queues/{}/warren.migrate.work", pct(vhost)))
    }
    fn work_type(node: &Node, vhost: &str) -> Option<String> {
        node.get_opt(&format!("/api/queues/{}/work", pct(vhost)))
            .map(|q| {
                q["arguments"]["x-queue-type"]
                    .as_str()
                    .unwrap_or("classic")
                    .to_string()
            })
    }
    fn bound_from_events(node: &Node, vhost: &str, queue: &str) -> bool {
        node.get_opt(&format!(
            "/api/queues/{}/{}/bindings",
            pct(vhost),
            pct(queue)
        ))
        .and_then(|b| b.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .any(|b| b["source"] == "events")
    }
    vec![
        ("temporary queue declared", |n, v| temporary(n, v).is_some()),
        ("old queue unbound", |n, v| {
            work_type(n, v).as_deref() == Some("classic") && !bound_from_events(n, v, "work")
        }),
        ("messages moving out", |n, v| {
            n.get_opt(&format!(
                "/api/parameters/shovel/{}/warren.migrate.work",
                pct(v)
            ))
            .is_some()
        }),
        ("old queue deleted", |n, v| work_type(n, v).is_none()),
        ("queue declared anew", |n, v| {
            work_type(n, v).as_deref() == Some("quorum") && temporary(n, v).is_some()
        }),
        ("temporary queue unbound", |n, v| {
            work_type(n, v).as_deref() == Some("quorum")
                && temporary(n, v).is_some()
                && !bound_from_events(n, v, "warren.migrate.work")
        }),
        ("temporary queue deleted", |n, v| {
            work_type(n, v).as_deref() == Some("quorum") && temporary(n, v).is_none()
        }),
    ]
}

/// Which steps to kill at: `WARREN_MIGRATE_KILL_STEPS` (`all`, or indexes such as
/// `1,3,5`); CI takes two, one in each half of a migration (the second stops a
/// running move back).
fn kill_steps() -> Vec<usize> {
    match std::env::var("WARREN_MIGRATE_KILL_STEPS").ok().as_deref() {
        Some("all") => (0..steps().len()).collect(),
        Some(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        None => vec![1, 5],
    }
}

/// warren is killed (SIGKILL) as soon as the broker shows each step of a migration
/// under load; `apply --migrate` run again finishes it, and nothing confirmed is lost.
fn a_migration_killed_at_any_step_is_finished_by_the_next_apply(version: Version) {
    let node = Node::shared(version);
    for index in kill_steps() {
        let (step, reached) = steps()[index];
        let vhost = node.unused_vhost("migkill");
        let name = format!("migkill-{vhost}");
        let spec = Spec::new(&spec_text(&name, &vhost, "classic"));
        node.apply(spec.arg()).expect(0);
        spec.write(&spec_text(&name, &vhost, "quorum"));
        let mut killed_at = None;
        let figures = migrate_under_load(node, &vhost, &spec, 2_000, |child| {
            let started = Instant::now();
            while child.exited().is_none() && started.elapsed() < Duration::from_secs(300) {
                if reached(node, &vhost) {
                    child.kill();
                    killed_at = Some(started.elapsed());
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            true
        });
        assert_finished(node, &vhost, &spec);
        eprintln!(
            "migration on {version} killed at \"{step}\" ({}): {} confirmed, {} duplicates, 0 lost, {:.1} s with the second apply",
            match killed_at {
                Some(at) => format!("after {:.2} s", at.as_secs_f64()),
                None => "the apply finished first".to_string(),
            },
            figures.confirmed,
            figures.duplicates,
            figures.seconds
        );
    }
}

/// On a broker without the shovel plugin, `apply --migrate` refuses before it changes
/// anything (a migration that cannot move messages would stop half way).
fn without_the_shovel_plugin_a_migration_changes_nothing(version: Version) {
    let node = Node::start(
        version,
        NodeOptions {
            plugins: Vec::new(),
            ..NodeOptions::default()
        },
    );
    let vhost = "noshovel";
    let spec = Spec::new(&spec_text("noshovel", vhost, "classic"));
    node.apply(spec.arg()).expect(0);
    let runtime = amqp::runtime();
    runtime.block_on(async {
        let client = Client::connect(&node, vhost).await;
        client
            .publish("events", "k", b"kept", message("kept"))
            .await
            .unwrap();
    });
    spec.write(&spec_text("noshovel", vhost, "quorum"));
    let refused = node.apply(spec.arg()).with(&["--migrate"]).expect(4);
    assert!(
        refused.stderr.contains("the broker has no shovel plugin")
            && refused
                .stderr
                .contains("rabbitmq-plugins enable rabbitmq_shovel")
            && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    let queue = node.get(&format!("/api/queues/{}/work", pct(vhost)));
    assert_eq!(queue["arguments"]["x-queue-type"], "classic", "{queue}");
    let temporary = format!("/api/queues/{}/warren.migrate.work", pct(vhost));
    assert!(node.get_opt(&temporary).is_none());
    let kept = runtime.block_on(async { Client::connect(&node, vhost).await.ready("work").await });
    assert_eq!(kept, 1);
}

/// Publishes `by-name-N` to the default exchange with the queue's name as routing key,
/// with confirms, every 50 ms until `stop`: the one way messages keep arriving in a
/// queue whose bindings a migration has moved away.
async fn publish_by_name_until(
    node: &'static Node,
    vhost: String,
    traffic: Arc<Traffic>,
    stop: Arc<AtomicBool>,
) {
    let client = Client::connect(node, &vhost).await;
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let id = format!("by-name-{n}");
        if client
            .publish("", "work", id.as_bytes(), message(&id))
            .await
            .is_ok()
        {
            traffic.confirmed.lock().unwrap().push(id);
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A queue that keeps receiving messages by its name while it is being drained cannot
/// be deleted empty: the migration moves it again a bounded number of times, then
/// stops with the reason and the fix instead of moving forever; once the publisher
/// stops, the next `apply --migrate` finishes, and no confirmed message is lost.
fn a_queue_refilled_by_name_stops_the_migration_with_the_reason(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("migrefill");
    let name = format!("migrefill-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, "classic"));
    node.apply(spec.arg()).expect(0);
    spec.write(&spec_text(&name, &vhost, "quorum"));
    let runtime = amqp::runtime();
    let traffic = Arc::new(Traffic::default());
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = runtime.spawn(publish_by_name_until(
        node,
        vhost.clone(),
        traffic.clone(),
        stop.clone(),
    ));
    let stopped = Background::spawn(node.apply(spec.arg()).with(&["--migrate"]).command())
        .finish_within(FINISH_WITHIN);
    stop.store(true, Ordering::SeqCst);
    runtime.block_on(async { publishing.await.unwrap() });
    assert_ne!(
        stopped.code,
        Some(0),
        "{}\n{}",
        stopped.stdout,
        stopped.stderr
    );
    assert!(
        stopped
            .stderr
            .contains("held messages again each time it was about to be deleted")
            && stopped.stderr.contains("publishes to it by name")
            && stopped
                .stderr
                .contains("`warren apply --migrate` goes on from here")
            && stopped
                .stderr
                .contains("received messages after they were counted"),
        "{}",
        stopped.stderr
    );
    let again = Background::spawn(node.apply(spec.arg()).with(&["--migrate"]).command())
        .finish_within(FINISH_WITHIN);
    assert_eq!(again.code, Some(0), "{}\n{}", again.stdout, again.stderr);
    assert_finished(node, &vhost, &spec);
    let received: BTreeSet<String> = runtime
        .block_on(async { drain(&Client::connect(node, &vhost).await, "work").await })
        .into_iter()
        .collect();
    let confirmed = traffic.confirmed.lock().unwrap().clone();
    let lost: Vec<&String> = confirmed
        .iter()
        .filter(|id| !received.contains(*id))
        .collect();
    assert!(
        lost.is_empty() && !confirmed.is_empty(),
        "{} of {} confirmed messages lost, e.g. {:?}",
        lost.len(),
        confirmed.len(),
        lost.iter().take(5).collect::<Vec<_>>()
    );
    eprintln!(
        "migration on {version} stopped by a queue refilled by name (exit {:?}); {} confirmed, 0 lost after the next apply",
        stopped.code,
        confirmed.len()
    );
}

/// A shovel whose publishes the temporary queue refuses (a policy of the broker's
/// users: `max-length` with `overflow: reject-publish`, here on the temporary queue,
/// classic: a quorum queue takes a message over its limit before it starts refusing)
/// puts every message back: the migration stops after its bounded moves with the
/// reason instead of moving forever, every message is still in the old queue or the
/// temporary one, and once the policy is gone the next `apply --migrate` finishes with
/// all of them.
fn a_temporary_queue_refusing_the_shovel_stops_the_migration_losing_nothing(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("migstall");
    let name = format!("migstall-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, "quorum"));
    node.apply(spec.arg()).expect(0);
    let runtime = amqp::runtime();
    let traffic = Traffic::default();
    runtime.block_on(async {
        let client = Client::connect(node, &vhost).await;
        fill(&client, 200, &traffic).await;
    });
    let policy = format!("/api/policies/{}/refuse-temporary", pct(&vhost));
    node.put(
        &policy,
        &serde_json::json!({
            "pattern": "^warren\\.migrate\\.",
            "apply-to": "queues",
            "priority": 1000,
            "definition": {"max-length": 0, "overflow": "reject-publish"},
        }),
    );
    spec.write(&spec_text(&name, &vhost, "classic"));
    let started = Instant::now();
    let stopped = Background::spawn(node.apply(spec.arg()).with(&["--migrate"]).command())
        .finish_within(FINISH_WITHIN);
    let took = started.elapsed();
    assert_eq!(
        stopped.code,
        Some(1),
        "{}\n{}",
        stopped.stdout,
        stopped.stderr
    );
    assert!(
        stopped.stderr.contains(
            "it held messages again each time it was about to be deleted, 5 times in a row"
        ) && stopped
            .stderr
            .contains("\"warren.migrate.work\" refuses the shovel's publishes")
            && stopped.stderr.contains("reject-publish")
            && stopped
                .stderr
                .contains("`warren apply --migrate` goes on from here"),
        "{}",
        stopped.stderr
    );
    let held = runtime.block_on(async {
        let client = Client::connect(node, &vhost).await;
        client.ready("work").await + client.ready("warren.migrate.work").await
    });
    assert_eq!(
        held, 200,
        "every message is in the old queue or the temporary one"
    );
    node.delete(&policy);
    let again = Background::spawn(node.apply(spec.arg()).with(&["--migrate"]).command())
        .finish_within(FINISH_WITHIN);
    assert_eq!(again.code, Some(0), "{}\n{}", again.stdout, again.stderr);
    let queue = node.get(&format!("/api/queues/{}/work", pct(&vhost)));
    assert_eq!(queue["arguments"]["x-queue-type"], "classic", "{queue}");
    let temporary = format!("/api/queues/{}/warren.migrate.work", pct(&vhost));
    assert!(
        node.get_opt(&temporary).is_none(),
        "the temporary queue is gone"
    );
    node.warren(&["plan", spec.arg(), "--detailed-exitcode"])
        .run()
        .expect(0);
    let received: BTreeSet<String> = runtime
        .block_on(async { drain(&Client::connect(node, &vhost).await, "work").await })
        .into_iter()
        .collect();
    let confirmed = traffic.confirmed.lock().unwrap().clone();
    assert_eq!(confirmed.len(), 200);
    let lost: Vec<&String> = confirmed
        .iter()
        .filter(|id| !received.contains(*id))
        .collect();
    assert!(
        lost.is_empty(),
        "{} lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    eprintln!(
        "migration on {version} with a temporary queue refusing the shovel stopped after {:.0} s, 200 of 200 kept",
        took.as_secs_f64()
    );
}

/// An empty queue whose type changes: `apply --migrate` starts no shovel, since the
/// queue and then the temporary queue count no ready message, and the report says so.
fn an_empty_queue_migrates_without_a_shovel(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("migrate-empty");
    let name = format!("migrate-empty-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, "classic"));
    node.apply(spec.arg()).expect(0);
    spec.write(&spec_text(&name, &vhost, "quorum"));
    let applied = node
        .apply(spec.arg())
        .with(&["--migrate", "--format", "json"])
        .expect(0);
    let document: serde_json::Value = serde_json::from_str(&applied.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", applied.stdout));
    let done: Vec<&str> = document["applied"]["done"]
        .as_array()
        .unwrap_or_else(|| panic!("no applied.done in {document}"))
        .iter()
        .filter_map(|line| line.as_str())
        .collect();
    assert!(
        done.iter()
            .any(|line| line.starts_with("migrate queue") && line.ends_with("(no message to move)")),
        "{version}: {done:?}"
    );
    assert_finished(node, &vhost, &spec);
    node.remove_vhost(&vhost);
}

per_version!(
    an_empty_queue_migrates_without_a_shovel,
    a_temporary_queue_refusing_the_shovel_stops_the_migration_losing_nothing,
    a_queue_refilled_by_name_stops_the_migration_with_the_reason,
    without_the_shovel_plugin_a_migration_changes_nothing,
    the_plan_shows_a_migration_and_apply_without_migrate_refuses,
    a_migration_killed_at_any_step_is_finished_by_the_next_apply,
    a_ladder_migrates_while_messages_wait_in_its_tier;
    also_on_4_0:
        a_classic_queue_becomes_quorum_under_load_losing_nothing,
);

/// A reject ladder whose tier returns messages through the consumer's return exchange
/// (`return_via: return_exchange`): a migration moves that exchange's binding to the
/// temporary queue before the work queue is deleted, so no returning message meets the
/// instant between the work queue's deletion and its declaration. (A tier that returns
/// by name, the default, can meet it: the broker drops what it dead-letters to a queue
/// that does not exist, and the plan says so; docs/migration.md.)
fn ladder_spec(name: &str, vhost: &str, queue_type: &str) -> String {
    format!(
        "version: 1\nname: {name}\ndefaults:\n  queue_type: {queue_type}\nvhosts:\n  {vhost}:\n    services:\n      notifier:\n        exchange: {{ name: notifications, type: topic }}\n        consumers:\n          sms:\n            routing_keys: [\"notify.sms.#\"]\n            retry:\n              mode: reject\n              delays: [20s]\n              max_retries: 3\n              on_exhausted: park\n              return_via: return_exchange\n"
    )
}

/// Every queue of `vhost` with its exact ready count (a passive declare each), for a
/// failure's message: where the messages that did not come back are.
fn queues_held(node: &'static Node, runtime: &tokio::runtime::Runtime, vhost: &str) -> String {
    let names: Vec<String> = node
        .get(&format!("/api/queues/{}", pct(vhost)))
        .as_array()
        .map(|queues| {
            queues
                .iter()
                .filter_map(|queue| queue["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    runtime.block_on(async {
        let client = Client::connect(node, vhost).await;
        let mut held = Vec::new();
        for name in names {
            let ready = client.try_ready(&name).await;
            held.push(format!("{name}: {ready:?}"));
        }
        held.join(", ")
    })
}

/// Rejects the first delivery of each message (the broker dead-letters it to the
/// ladder's tier, which returns it after the delay) and acknowledges the next one;
/// subscribes again when cancelled, connects again when the connection fails.
async fn reject_once_until(
    node: &'static Node,
    vhost: String,
    queue: String,
    rejected: Arc<Mutex<BTreeSet<String>>>,
    acked: Arc<Mutex<BTreeSet<String>>>,
    stop: Arc<AtomicBool>,
) {
    let mut client = Client::connect(node, &vhost).await;
    while !stop.load(Ordering::SeqCst) {
        let Ok(channel) = client.connection.create_channel().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            client = Client::connect(node, &vhost).await;
            continue;
        };
        let _ = channel.basic_qos(10, BasicQosOptions::default()).await;
        let Ok(mut consumer) = channel
            .basic_consume(
                queue.as_str().into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
        else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        loop {
            match tokio::time::timeout(Duration::from_millis(200), consumer.next()).await {
                Ok(Some(Ok(delivery))) => {
                    let id = String::from_utf8_lossy(&delivery.data).into_owned();
                    let first = rejected.lock().unwrap().insert(id.clone());
                    if first {
                        let _ = amqp::reject(&delivery).await;
                    } else {
                        let _ = delivery.ack(BasicAckOptions::default()).await;
                        acked.lock().unwrap().insert(id);
                    }
                }
                Ok(_) => break,
                Err(_) if stop.load(Ordering::SeqCst) => break,
                Err(_) => {}
            }
        }
        let _ = channel.close(200, "".into()).await;
    }
}

/// A reject-mode ladder turns from classic to quorum queues while messages wait in
/// its tier and a consumer keeps rejecting new ones: every message comes back to
/// the work queue after its delay, through the migration, and is acknowledged.
fn a_ladder_migrates_while_messages_wait_in_its_tier(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("migladder");
    let name = format!("migladder-{vhost}");
    let spec = Spec::new(&ladder_spec(&name, &vhost, "classic"));
    node.apply(spec.arg()).expect(0);
    let contract = amqp::Contract::of(&spec.path, version.target());
    let consumer = contract.consumer("sms");
    let work = consumer.queue.clone();
    let tier = consumer.retry().schedule[0].queue.clone();
    let runtime = amqp::runtime();
    let waiting = 100;
    let rejected = Arc::new(Mutex::new(BTreeSet::new()));
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    // Messages rejected once before the migration: they wait in the tier.
    runtime.block_on(async {
        let client = Client::connect(node, &vhost).await;
        let channel = client.connection.create_channel().await.unwrap();
        for n in 0..waiting {
            let id = format!("tiered-{n}");
            client
                .publish("notifications", "notify.sms.a", id.as_bytes(), message(&id))
                .await
                .unwrap();
            let got = channel
                .basic_get(work.as_str().into(), BasicGetOptions { no_ack: false })
                .await
                .unwrap()
                .expect("the message is in the work queue");
            amqp::reject(&got.delivery).await.unwrap();
            rejected.lock().unwrap().insert(id);
        }
        // The broker dead-letters each rejected message into the tier on its own time
        // (more of it on a loaded machine): counted exactly, waited for generously.
        let deadline = Instant::now() + Duration::from_secs(60);
        while (client.ready(&tier).await as usize) < waiting && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let in_tier = client.ready(&tier).await;
        assert_eq!(
            in_tier as usize, waiting,
            "the tier holds the rejected messages"
        );
    });
    let stop = Arc::new(AtomicBool::new(false));
    let consuming = runtime.spawn(reject_once_until(
        node,
        vhost.clone(),
        work.clone(),
        rejected.clone(),
        acked.clone(),
        stop.clone(),
    ));
    // New messages during the migration, each rejected once by the consumer.
    let publishing = {
        let (stop, vhost) = (stop.clone(), vhost.clone());
        runtime.spawn(async move {
            let client = Client::connect(node, &vhost).await;
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) && n < 200 {
                let id = format!("during-{n}");
                if client
                    .publish("notifications", "notify.sms.a", id.as_bytes(), message(&id))
                    .await
                    .is_ok()
                {
                    n += 1;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            n
        })
    };
    spec.write(&ladder_spec(&name, &vhost, "quorum"));
    let started = Instant::now();
    let run = node.apply(spec.arg()).with(&["--migrate"]).expect(0);
    let seconds = started.elapsed().as_secs_f64();
    assert!(run.stdout.contains("to migrate"), "{}", run.stdout);
    stop.store(true, Ordering::SeqCst);
    let published = runtime.block_on(publishing).unwrap();
    stop.store(false, Ordering::SeqCst);
    let consuming2 = runtime.spawn(reject_once_until(
        node,
        vhost.clone(),
        work.clone(),
        rejected.clone(),
        acked.clone(),
        stop.clone(),
    ));
    let expected = waiting + published;
    let all_back = runtime.block_on(amqp::eventually(Duration::from_secs(120), || {
        acked.lock().unwrap().len() >= expected
    }));
    stop.store(true, Ordering::SeqCst);
    runtime.block_on(async {
        let _ = consuming.await;
        let _ = consuming2.await;
    });
    let acked = acked.lock().unwrap().clone();
    let missing: Vec<String> = rejected
        .lock()
        .unwrap()
        .iter()
        .filter(|id| !acked.contains(*id))
        .cloned()
        .collect();
    assert!(
        all_back && missing.is_empty(),
        "{version}: {} of {expected} messages did not come back from the tier, e.g. {:?}; the vhost holds {}; the migration printed:\n{}{}",
        missing.len(),
        missing.iter().take(5).collect::<Vec<_>>(),
        queues_held(node, &runtime, &vhost),
        run.stdout,
        run.stderr
    );
    for queue in [&work, &tier] {
        let live = node.get(&format!("/api/queues/{}/{}", pct(&vhost), pct(queue)));
        assert_eq!(live["arguments"]["x-queue-type"], "quorum", "{queue}");
    }
    node.plan(spec.arg()).expect(0);
    eprintln!(
        "ladder migration on {version}: {waiting} messages waiting in the tier and {published} published during it, all returned and acknowledged; apply --migrate took {seconds:.1} s"
    );
}
