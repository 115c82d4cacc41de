//! A refused apply changes nothing: whatever the plan's lagging statistics said, an
//! apply that would lose messages (deleted, replaced or stranded queues) or that the
//! user's permissions would stop half way is refused before its first write, and the
//! broker's definitions and every queue's messages are exactly as before, counted by
//! the queues themselves over AMQP.
//!
//! The randomized trial (`a_random_apply_loses_nothing_or_changes_nothing`) runs
//! `WARREN_REFUSAL_TRIALS` trials per version (3 by default; `scripts/reliability`
//! runs 50) and prints its figures.

use std::collections::BTreeMap;
use std::time::Duration;

use lapin::options::{BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use rand::Rng;
use serde_json::{Value, json};

use crate::amqp::{self, Client};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

/// The base file of a spec: its name, the ladder, and a queue no change touches.
fn platform(name: &str, vhost: &str, queue_type: &str) -> String {
    format!(
        "version: 1\nname: {name}\ndefaults:\n  queue_type: {queue_type}\n\
         ladders:\n  slow:\n    delays: [10m, 20m]\n    on_exhausted: park\n\
         vhosts:\n  {vhost}:\n    queues:\n      keep: {{}}\n"
    )
}

/// The orders team's file: one consumer `orders.email` on the ladder, with
/// `routing_keys` as given.
fn orders(vhost: &str, keys: &str) -> String {
    format!(
        "version: 1\nvhosts:\n  {vhost}:\n    services:\n      orders:\n        exchange:\n          type: topic\n\
         \x20       consumers:\n          email:\n            routing_keys: [{keys}]\n            retry:\n              ladder: slow\n"
    )
}

/// The spec in one file.
fn single(name: &str, vhost: &str, queue_type: &str, keys: &str) -> String {
    let orders = orders(vhost, keys);
    let services = orders.split_once(&format!("  {vhost}:\n")).unwrap().1;
    format!("{}{services}", platform(name, vhost, queue_type))
}

/// What a vhost holds: its definitions (queues, exchanges, bindings, policies, each
/// sorted) and every queue's ready messages, counted by the queue.
#[derive(Debug, PartialEq)]
struct Snapshot {
    definitions: BTreeMap<&'static str, Vec<String>>,
    messages: BTreeMap<String, u32>,
}

fn snapshot(node: &Node, vhost: &str) -> Snapshot {
    let definitions = node.get(&format!("/api/definitions/{}", pct(vhost)));
    let mut sections = BTreeMap::new();
    for section in ["queues", "exchanges", "bindings", "policies"] {
        let mut entries: Vec<String> = definitions[section]
            .as_array()
            .into_iter()
            .flatten()
            .map(Value::to_string)
            .collect();
        entries.sort();
        sections.insert(section, entries);
    }
    let names: Vec<String> = definitions["queues"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|q| q["name"].as_str().map(String::from))
        .collect();
    let messages = amqp::runtime().block_on(async {
        let client = Client::connect(node, vhost).await;
        let mut counts = BTreeMap::new();
        for name in names {
            let count = client.ready(&name).await;
            counts.insert(name, count);
        }
        client.close().await;
        counts
    });
    Snapshot {
        definitions: sections,
        messages,
    }
}

/// Publishes `count` confirmed messages straight into `queue`.
fn fill(node: &Node, vhost: &str, queue: &str, count: u32) {
    amqp::runtime().block_on(async {
        let client = Client::connect(node, vhost).await;
        for n in 0..count {
            client
                .publish(
                    "",
                    queue,
                    format!("m{n}").as_bytes(),
                    amqp::message(&format!("m{n}")),
                )
                .await
                .unwrap();
        }
        client.close().await;
    });
}

/// Publishes up to `count` messages into `queue`, which an apply may be deleting: the
/// number the broker confirmed routing (a queue gone returns them).
fn fill_late(node: &Node, vhost: &str, queue: &str, count: u32) -> u32 {
    amqp::runtime().block_on(async {
        let client = Client::connect(node, vhost).await;
        let mut routed = 0;
        for n in 0..count {
            let body = format!("late{n}");
            if client
                .publish("", queue, body.as_bytes(), amqp::message(&body))
                .await
                .is_ok()
            {
                routed += 1;
            }
        }
        client.close().await;
        routed
    })
}

/// The queues of the consumer, by role, from the live vhost.
fn ladder_queues(node: &Node, vhost: &str) -> (String, Vec<String>, String) {
    let queues = node.get(&format!("/api/queues/{}?disable_stats=true", pct(vhost)));
    let mut names: Vec<String> = queues
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|q| q["name"].as_str().map(String::from))
        .filter(|n| n.starts_with("orders.email"))
        .collect();
    names.sort();
    let tiers: Vec<String> = names
        .iter()
        .filter(|n| n.contains(".retry"))
        .cloned()
        .collect();
    let parking = names
        .iter()
        .find(|n| n.ends_with(".parking"))
        .unwrap()
        .clone();
    assert_eq!(tiers.len(), 2, "{names:?}");
    ("orders.email".to_string(), tiers, parking)
}

/// Reproduction 1: a consumer's ladder goes from classic to quorum (every queue is
/// replaced); messages reach the work queue a moment before the apply, too late for
/// the plan's statistics. The apply is refused before it replaces anything.
fn a_replace_refused_for_fresh_messages_changes_nothing(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("refuse-replace");
    let name = format!("refuse-{vhost}");
    let spec = Spec::new(&single(&name, &vhost, "classic", "\"order.#\""));
    node.apply(spec.arg()).expect(0);
    spec.write(&single(&name, &vhost, "quorum", "\"order.#\""));
    fill(node, &vhost, "orders.email", 5);
    let before = snapshot(node, &vhost);
    let refused = node.apply(spec.arg()).expect(4);
    assert!(
        refused
            .stderr
            .contains("refusing to apply: the broker counts")
            && refused.stderr.contains("queue \"orders.email\" in vhost")
            && refused.stderr.contains("holds 5 ready messages")
            && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("change was made")
            && !refused.stderr.contains("changes were made"),
        "no report of changes: {}",
        refused.stderr
    );
    assert_eq!(snapshot(node, &vhost), before, "{version}: nothing changed");
}

/// Reproduction 2: a spec directory; the orders team's file is removed while its
/// tiers hold messages the statistics may not show yet. Without `--allow-data-loss`
/// the apply is refused before it deletes the work queue the tiers dead-letter into.
fn removing_a_consumer_whose_tiers_hold_messages_changes_nothing(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("refuse-remove");
    let name = format!("refuse-{vhost}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("platform.yaml"),
        platform(&name, &vhost, "classic"),
    )
    .unwrap();
    let orders_file = dir.path().join("orders.yaml");
    std::fs::write(&orders_file, orders(&vhost, "\"order.#\"")).unwrap();
    let spec = dir.path().to_str().unwrap();
    node.apply(spec).expect(0);
    let (_, tiers, _) = ladder_queues(node, &vhost);
    fill(node, &vhost, &tiers[0], 7);
    fill(node, &vhost, &tiers[1], 3);
    std::fs::remove_file(&orders_file).unwrap();
    let before = snapshot(node, &vhost);
    let refused = node.apply(spec).expect(4);
    assert!(
        refused.stderr.contains("holds 7 ready messages")
            && refused.stderr.contains("holds 3 ready messages")
            && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    assert_eq!(snapshot(node, &vhost), before, "{version}: nothing changed");
    assert_eq!(before.messages["orders.email"], 0);
    assert_eq!(before.messages[&tiers[0]], 7);
}

/// Reproduction 6: the CI user as docs/ci.md once set it up (the `administrator`
/// tag, no permissions in any vhost). A plan that deletes a binding is refused
/// before anything is written, naming the vhost, the permission and the fix; with
/// the permissions docs/ci.md now gives, the same apply succeeds.
fn a_user_without_vhost_permissions_is_refused_before_any_change(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("refuse-perms");
    let name = format!("refuse-{vhost}");
    let spec = Spec::new(&single(
        &name,
        &vhost,
        "classic",
        "\"order.#\", \"refund.#\"",
    ));
    node.apply(spec.arg()).expect(0);
    // One binding less, and a queue more: a delete and a create.
    let changed = single(&name, &vhost, "classic", "\"order.#\"")
        .replace("      keep: {}\n", "      keep: {}\n      added: {}\n");
    spec.write(&changed);
    let user = format!("ci-{vhost}");
    node.put(
        &format!("/api/users/{}", pct(&user)),
        &json!({"password": "ci-password", "tags": "administrator"}),
    );
    let as_ci = |args: &[&str]| {
        crate::support::warren(args)
            .args([
                "--url",
                &node.url(""),
                "--user",
                &user,
                "--password",
                "ci-password",
            ])
            .run()
    };
    let before = snapshot(node, &vhost);
    let refused = as_ci(&["apply", spec.arg(), "--auto-approve"]).expect(3);
    assert!(
        refused
            .stderr
            .contains(&format!("user `{user}` lacks permissions"))
            && refused.stderr.contains(&format!("in vhost {vhost:?}"))
            && refused.stderr.contains("set_permissions")
            && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains("was made"), "{}", refused.stderr);
    assert_eq!(snapshot(node, &vhost), before, "{version}: nothing changed");
    // docs/ci.md's setup: permissions on the vhosts the spec manages.
    node.ctl(&["set_permissions", "-p", &vhost, &user, ".*", ".*", ".*"]);
    as_ci(&["apply", spec.arg(), "--auto-approve"]).expect(0);
    node.delete(&format!("/api/users/{}", pct(&user)));
}

/// What the randomized trial counted, over all its trials.
#[derive(Debug, Default)]
struct Figures {
    trials: u32,
    applied: u32,
    refused: u32,
    messages: u64,
    lost: u64,
    wrong_reports: u32,
}

/// A randomized trial: a ladder with random messages in its work queue, tiers and
/// parking queue, some of them held unacknowledged by a consumer that never acks,
/// some published a random moment (up to 1.5 s) before the apply; the plan deletes the consumer,
/// or replaces its queues. Either the apply succeeds and lost nothing (there was
/// nothing to lose), or it is refused and the broker is exactly as before.
fn a_random_apply_loses_nothing_or_changes_nothing(version: Version) {
    let trials: u32 = std::env::var("WARREN_REFUSAL_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(3);
    let node = Node::shared(version);
    let mut figures = Figures::default();
    let mut rng = rand::rng();
    for trial in 0..trials {
        let vhost = node.unused_vhost(&format!("refuse-trial-{trial}"));
        let name = format!("refuse-{vhost}");
        let spec = Spec::new(&single(&name, &vhost, "classic", "\"order.#\""));
        node.apply(spec.arg()).expect(0);
        let (work, tiers, parking) = ladder_queues(node, &vhost);
        let replace = rng.random_bool(0.5);
        let next = if replace {
            single(&name, &vhost, "quorum", "\"order.#\"")
        } else {
            platform(&name, &vhost, "classic")
        };
        spec.write(&next);
        // Where messages go: nothing at all in about a third of the trials.
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        if rng.random_bool(0.67) {
            for queue in [&work, &tiers[0], &tiers[1], &parking] {
                if rng.random_bool(0.5) {
                    counts.insert(queue.clone(), rng.random_range(1..6));
                }
            }
        }
        let unacked = if rng.random_bool(0.3) {
            rng.random_range(1..4)
        } else {
            0
        };
        let late: Option<(String, u32, Duration)> = rng.random_bool(0.3).then(|| {
            let queues = [&work, &tiers[0], &tiers[1], &parking];
            let queue = queues[rng.random_range(0..4)].clone();
            (
                queue,
                rng.random_range(1..4),
                Duration::from_millis(rng.random_range(0..1500)),
            )
        });
        for (queue, count) in &counts {
            fill(node, &vhost, queue, *count);
        }
        let runtime = amqp::runtime();
        // A consumer that takes messages and never acknowledges them.
        let holder = (unacked > 0).then(|| {
            fill(node, &vhost, &work, unacked);
            runtime.block_on(hold_unacked(node, &vhost, &work, unacked))
        });
        let before = snapshot(node, &vhost);
        // Late messages: published a random moment (up to 1.5 s) before the apply
        // starts, too late for the statistics its plan reads.
        if let Some((queue, count, at)) = &late {
            let routed = fill_late(node, &vhost, queue, *count);
            *counts.entry(queue.clone()).or_default() += routed;
            std::thread::sleep(*at);
        }
        let mut child = node.apply(spec.arg()).command();
        let applying = std::thread::spawn(move || child.run());
        let run = applying.join().unwrap();
        if let Some((connection, _, _)) = &holder {
            runtime.block_on(async {
                let _ = connection.close(200, "".into()).await;
            });
            *counts.entry(work.clone()).or_default() += unacked;
        }
        let total: u64 = counts.values().map(|c| u64::from(*c)).sum();
        figures.trials += 1;
        figures.messages += total;
        // What the queues hold now, the unacknowledged messages back in their queue.
        let after = snapshot(node, &vhost);
        let held_now: u64 = after.messages.values().map(|c| u64::from(*c)).sum();
        figures.lost += total.saturating_sub(held_now);
        judge(trial, &run, &before, &after, &counts, &mut figures);
        assert_eq!(
            figures.lost, 0,
            "trial {trial} lost messages: {}\n{after:?}",
            run.stderr
        );
    }
    println!(
        "refusal trials on {version}: trials {}, applied {}, refused {}, messages {}, lost {}, wrong reports {}",
        figures.trials,
        figures.applied,
        figures.refused,
        figures.messages,
        figures.lost,
        figures.wrong_reports
    );
    assert_eq!(figures.wrong_reports, 0);
}

/// Whether one trial's apply kept its word: applied, or refused with the broker
/// exactly as before (or, in the race, a report that names each change once).
fn judge(
    trial: u32,
    run: &crate::support::Run,
    before: &Snapshot,
    after: &Snapshot,
    counts: &BTreeMap<String, u32>,
    figures: &mut Figures,
) {
    match run.code {
        Some(0) => figures.applied += 1,
        Some(4) => {
            figures.refused += 1;
            let changed = run.stderr.contains("was made") || run.stderr.contains("were made");
            if changed {
                // The race: a message arrived after the check, and the broker's
                // own check at the deletion stopped the apply there; the report
                // names each change once.
                if !report_is_exact(&run.stderr) {
                    figures.wrong_reports += 1;
                }
            } else {
                // Refused before the first write: exactly as before.
                let expected: BTreeMap<String, u32> = after
                    .messages
                    .keys()
                    .map(|q| (q.clone(), counts.get(q).copied().unwrap_or(0)))
                    .collect();
                let exact = run.stderr.contains("nothing was changed")
                    && after.definitions == before.definitions
                    && after.messages == expected;
                if !exact {
                    figures.wrong_reports += 1;
                    eprintln!(
                        "trial {trial}: {}\n{after:?}\nexpected {expected:?}",
                        run.stderr
                    );
                }
            }
        }
        code => panic!(
            "trial {trial}: exit {code:?}\n{}\n{}",
            run.stdout, run.stderr
        ),
    }
}

/// Each change named once in a stopped apply's report.
fn report_is_exact(stderr: &str) -> bool {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| {
            ["create ", "replace ", "delete ", "update "]
                .iter()
                .any(|p| l.trim_start_matches("- ").starts_with(p))
        })
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    lines.iter().all(|l| {
        let change = l.trim_start_matches("- ").split(" (").next().unwrap_or(l);
        seen.insert(change.to_string())
    })
}

/// A consumer on `queue` that takes `count` messages and never acknowledges them.
async fn hold_unacked(
    node: &Node,
    vhost: &str,
    queue: &str,
    count: u32,
) -> (lapin::Connection, lapin::Channel, lapin::Consumer) {
    let url = format!("{}{}", node.amqp_url(), pct(vhost));
    let connection = lapin::Connection::connect(&url, lapin::ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    channel
        .basic_qos(count as u16, BasicQosOptions::default())
        .await
        .unwrap();
    let mut consumer = channel
        .basic_consume(
            queue.into(),
            "holder".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    use futures::StreamExt;
    for _ in 0..count {
        let _ = tokio::time::timeout(Duration::from_secs(5), consumer.next()).await;
    }
    // The consumer is kept, not dropped: a consumer gone leaves its unacknowledged
    // messages held by the channel alone, which no exact count shows.
    (connection, channel, consumer)
}

per_version!(
    a_user_without_vhost_permissions_is_refused_before_any_change;
    also_on_4_0:
        a_replace_refused_for_fresh_messages_changes_nothing,
        removing_a_consumer_whose_tiers_hold_messages_changes_nothing,
        a_random_apply_loses_nothing_or_changes_nothing,
);
