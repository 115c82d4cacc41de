//! A refused apply changes nothing: whatever the plan's lagging statistics said, an
//! apply that would lose messages (deleted, replaced or stranded queues) or that the
//! user's permissions would stop half way is refused before its first write, and the
//! broker's definitions and every queue's messages are exactly as before, counted by
//! the queues themselves over AMQP.
//!
//! A message that arrives after that check, while the apply runs, is the race the
//! broker's own check at each deletion closes: the apply stops at that queue, keeps
//! every message, strands none, and its report is exact against the broker
//! ([`crate::report::exact`]).
//!
//! The randomized trial (`a_random_apply_loses_nothing_or_changes_nothing`) runs
//! `WARREN_REFUSAL_TRIALS` trials per version (3 by default; `scripts/reliability`
//! runs 50) and prints its figures.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lapin::options::{BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use rand::Rng;
use serde_json::{Value, json};

use crate::amqp::{self, Client};
use crate::background::Background;
use crate::http_tap::HttpTap;
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::{Capture, Run};

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

/// Asserts an apply was refused for the messages of `held` (queue, messages published
/// into it), and said that nothing was changed. warren refuses such a plan at one of
/// two points, both correct, and which one comes first is a race with the broker's
/// statistics, which lag publishes by seconds (more on a loaded machine): when it plans,
/// if the statistics already count the messages (`refusing to lose messages: … holds 5
/// messages`), else under the locks before the first write, from the queues' own counts
/// (`refusing to apply: the broker counts, now, … holds 5 ready messages`). A plan-time
/// refusal names the queues the statistics counted, which may be some of them, with a
/// count the statistics had reached; the under-lock one names every queue with its
/// whole count. Either way at least one queue is named, and no queue with more messages
/// than it holds. What both promise, that nothing changed, each test checks against
/// the broker.
fn assert_refused_for_messages(stderr: &str, held: &[(&str, u32)]) {
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert!(
        !stderr.contains("change was made") && !stderr.contains("changes were made"),
        "no report of changes: {stderr}"
    );
    let under_lock = stderr.contains("refusing to apply: the broker counts, now,");
    let at_plan = stderr.contains("refusing to lose messages:");
    assert!(
        under_lock || at_plan,
        "not a refusal for messages: {stderr}"
    );
    let says = |queue: &str, n: u32| {
        let ready = if n == 1 {
            "ready message"
        } else {
            "ready messages"
        };
        let plain = if n == 1 { "message" } else { "messages" };
        let quoted = format!("{queue:?}");
        stderr.contains(&quoted)
            && (stderr.contains(&format!("holds {n} {ready}"))
                || stderr.contains(&format!("holds {n} {plain}")))
    };
    if under_lock {
        for (queue, n) in held {
            assert!(says(queue, *n), "{queue} with {n} messages: {stderr}");
        }
    } else {
        let named_one = held
            .iter()
            .any(|(queue, n)| (1..=*n).any(|k| says(queue, k)));
        assert!(named_one, "no queue of {held:?} named: {stderr}");
    }
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
    assert_refused_for_messages(&refused.stderr, &[("orders.email", 5)]);
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
    assert_refused_for_messages(&refused.stderr, &[(&tiers[0], 7), (&tiers[1], 3)]);
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

/// Queues the race test's apply creates before it deletes anything: changes made
/// before the stop, which its report must name.
const RACE_CREATES: usize = 50;

/// The race: the consumer's file goes and `RACE_CREATES` queues come. Past the apply's
/// check, when it removes the routes into a delay tier the check found empty (a proxy
/// holds that request back), one message is published straight into the tier, and
/// only then does the request go on: the message always arrives after the check and
/// before the deletion, however loaded the machine. The broker's check at the tier's
/// deletion refuses it: the apply stops there (exit 4), before any queue the tier
/// dead-letters into goes, the tier keeps its message and its route back, and the
/// report names each change once, as the broker holds it.
fn a_message_after_the_check_stops_the_apply_at_its_queue_with_an_exact_report(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("refuse-race");
    let name = format!("refuse-{vhost}");
    let spec = Spec::new(&single(&name, &vhost, "classic", "\"order.#\""));
    node.apply(spec.arg()).expect(0);
    let (work, tiers, parking) = ladder_queues(node, &vhost);
    let mut next = platform(&name, &vhost, "classic");
    for n in 0..RACE_CREATES {
        next.push_str(&format!("      bulk{n:05}: {{}}\n"));
    }
    spec.write(&next);
    let before = snapshot(node, &vhost);
    let run = publish_at_deletion(node, &spec, &before, &vhost, &tiers[0]).expect(4);
    assert!(
        run.stderr
            .contains(&format!("refusing to delete queue {:?}", tiers[0]))
            && run.stderr.contains("changes were made"),
        "{}",
        run.stderr
    );
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    crate::report::exact(node, &vhost, &document)
        .unwrap_or_else(|wrong| panic!("{version}: {wrong}\n{}", run.stderr));
    let done = document["applied"]["done"].as_array().unwrap();
    assert_eq!(
        done.iter()
            .filter(|d| d.as_str().unwrap().starts_with("create queue \"bulk"))
            .count(),
        RACE_CREATES,
        "every create was made"
    );
    // The tier stays with its message, and so do the work queue it dead-letters
    // into, with its routes in, and the parking queue (deleted after the work queue).
    let after = snapshot(node, &vhost);
    let stays: Vec<&String> = after
        .messages
        .keys()
        .filter(|q| q.starts_with("orders.email"))
        .collect();
    assert!(
        stays.contains(&&work) && stays.contains(&&tiers[0]) && stays.contains(&&parking),
        "{version}: {stays:?}"
    );
    assert_eq!(after.messages[&tiers[0]], 1, "the message is kept");
    assert_eq!(
        bindings_into(&after, &work),
        bindings_into(&before, &work),
        "the work queue keeps its routes in"
    );
}

/// Runs `apply SPEC --format json` through a proxy that holds back the removal of the
/// first route into `queue` that `before` holds (the apply removes a queue's routes
/// just before its deletion, past the check), publishes one message straight into
/// `queue` (confirmed by the broker) while the request is held, then lets the request
/// go on; the apply's run.
fn publish_at_deletion(
    node: &Node,
    spec: &Spec,
    before: &Snapshot,
    vhost: &str,
    queue: &str,
) -> Run {
    let route = bindings_into(before, queue)
        .first()
        .map(|binding| serde_json::from_str::<Value>(binding).unwrap())
        .unwrap_or_else(|| panic!("no route into {queue}, so no request to hold"));
    let source = route["source"].as_str().unwrap();
    let tap = HttpTap::start(
        node.management_port(),
        &format!(
            "DELETE /api/bindings/{}/e/{}/q/{}/",
            pct(vhost),
            pct(source),
            pct(queue)
        ),
    );
    let child = Background::spawn(
        node.apply(spec.arg())
            .at(&tap.url())
            .with(&["--format", "json"])
            .command(),
    );
    assert!(
        tap.wait_tripped(Duration::from_secs(300)),
        "the apply never removed the route into {queue} from {source}: {}",
        child.stderr_so_far()
    );
    fill(node, vhost, queue, 1);
    tap.release();
    child.finish_within(Duration::from_secs(300))
}

/// The bindings into `queue` in a snapshot.
fn bindings_into<'a>(snapshot: &'a Snapshot, queue: &str) -> Vec<&'a String> {
    snapshot.definitions["bindings"]
        .iter()
        .filter(|b| b.contains(&format!("\"destination\":\"{queue}\"")))
        .collect()
}

/// Queues the replace race test replaces before the one it publishes into: removed,
/// then declared again when that one's removal is refused.
const RACE_REPLACES: usize = 20;

/// The race in a replace: a ladder goes from classic to quorum and `RACE_REPLACES`
/// classic queues and `zz-late` gain an argument (both are replaces). Past the check,
/// when the apply removes the route into `zz-late` (a proxy holds that request back),
/// one message is published straight into `zz-late`, which the check found empty, and
/// only then does the request go on. The broker refuses its removal: every queue
/// already removed is declared again as it was, with its bindings, and the broker's
/// definitions and messages are exactly as before, the message kept. Nothing was made.
fn a_message_after_the_check_stops_a_replace_and_the_broker_is_as_before(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("refuse-race-replace");
    let name = format!("refuse-{vhost}");
    let spec_of = |queue_type: &str, arguments: &str| {
        let mut text = format!(
            "version: 1\nname: {name}\ndefaults:\n  queue_type: {queue_type}\n\
             ladders:\n  slow:\n    delays: [10m, 20m]\n    on_exhausted: park\n\
             vhosts:\n  {vhost}:\n    services:\n      aa:\n        exchange:\n          type: topic\n\
             \x20       consumers:\n          email:\n            routing_keys: [\"a.#\"]\n\
             \x20           retry:\n              ladder: slow\n    queues:\n"
        );
        for n in 0..RACE_REPLACES {
            text.push_str(&format!("      q{n:05}: {{ type: classic{arguments} }}\n"));
        }
        text.push_str(&format!("      zz-late: {{ type: classic{arguments} }}\n"));
        text.push_str(
            "    exchanges:\n      late-in: { type: direct }\n    bindings:\n\
             \x20     - { source: late-in, destination: zz-late, routing_key: late }\n",
        );
        text
    };
    let spec = Spec::new(&spec_of("classic", ""));
    node.apply(spec.arg()).expect(0);
    spec.write(&spec_of("quorum", ", arguments: { x-max-priority: 5 }"));
    let before = snapshot(node, &vhost);
    let run = publish_at_deletion(node, &spec, &before, &vhost, "zz-late").expect(4);
    assert!(
        run.stderr.contains("refusing to delete queue \"zz-late\""),
        "{}",
        run.stderr
    );
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    crate::report::exact(node, &vhost, &document)
        .unwrap_or_else(|wrong| panic!("{version}: {wrong}\n{}", run.stderr));
    assert_eq!(
        document["applied"]["done"].as_array().map(Vec::len),
        Some(0),
        "nothing was made: {}",
        document["applied"]
    );
    let declared_again = document["applied"]["not_done"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| {
            entry
                .as_str()
                .unwrap()
                .ends_with("(removed and declared again as it was)")
        })
        .count();
    assert!(
        declared_again >= RACE_REPLACES,
        "the queues before `zz-late` were removed and declared again: {declared_again}"
    );
    let after = snapshot(node, &vhost);
    assert!(
        after.definitions == before.definitions,
        "{version}: the definitions are as before"
    );
    let mut expected = before.messages.clone();
    *expected.get_mut("zz-late").unwrap() += 1;
    assert!(
        after.messages == expected,
        "{version}: the messages are as before, and the new one kept"
    );
}

/// Queues a trial's plan creates, when it creates any.
const TRIAL_CREATES: usize = 1_500;

/// What the randomized trial counted, over all its trials.
#[derive(Debug, Default)]
struct Figures {
    trials: u32,
    applied: u32,
    refused: u32,
    raced: u32,
    messages: u64,
    produced: u64,
    lost: u64,
    wrong_reports: u32,
}

/// A randomized trial: a ladder of classic or quorum queues with random messages in
/// its work queue, tiers and parking queue, some of them held unacknowledged by a
/// consumer that never acks, some published straight into one of its queues a random
/// moment (up to 1.5 s) before the apply, and some published through the consumer's
/// exchange, as its producers publish, at random moments from before the apply to
/// well into it; the plan deletes the consumer, or replaces its queues by the other
/// type (and, in some trials, creates 1,500 queues first). Either the apply succeeds
/// and lost nothing, or it is refused before its first write and the broker is
/// exactly as before, or (the race: a message after the check) the broker's check at
/// a deletion stopped it, and its report is exact. No message
/// the broker confirmed and did not return is ever lost.
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
        let (from, to) = if rng.random_bool(0.5) {
            ("classic", "quorum")
        } else {
            ("quorum", "classic")
        };
        let spec = Spec::new(&single(&name, &vhost, from, "\"order.#\""));
        node.apply(spec.arg()).expect(0);
        let (work, tiers, parking) = ladder_queues(node, &vhost);
        let next = next_spec(&mut rng, &name, &vhost, (from, to));
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
        // Producers: messages through the exchange, from 0.3 s before the apply
        // starts to 2.2 s after, at random moments.
        let producing: Vec<Duration> = if rng.random_bool(0.5) {
            let mut at: Vec<Duration> = (0..rng.random_range(1..8))
                .map(|_| Duration::from_millis(rng.random_range(0..2500)))
                .collect();
            at.sort();
            at
        } else {
            Vec::new()
        };
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
        let producer = produce(node, &vhost, producing);
        std::thread::sleep(Duration::from_millis(300));
        let run = node
            .apply(spec.arg())
            .with(&["--format", "json"])
            .command()
            .run();
        let produced = producer.join().unwrap();
        *counts.entry(work.clone()).or_default() += produced;
        if let Some((connection, _, _)) = &holder {
            runtime.block_on(async {
                let _ = connection.close(200, "".into()).await;
            });
            *counts.entry(work.clone()).or_default() += unacked;
        }
        let total: u64 = counts.values().map(|c| u64::from(*c)).sum();
        figures.trials += 1;
        figures.messages += total;
        figures.produced += u64::from(produced);
        let (after, held_now) = settled_snapshot(node, &vhost, total);
        figures.lost += total.saturating_sub(held_now);
        let trial = Trial {
            number: trial,
            node,
            vhost: &vhost,
            run: &run,
        };
        trial.judge(&before, &after, &counts, &mut figures);
        assert_eq!(
            figures.lost,
            0,
            "trial {trial_number} lost messages: {}\n{after:?}",
            run.stderr,
            trial_number = trial.number
        );
    }
    println!(
        "refusal trials on {version}: trials {}, applied {}, refused {}, stopped in the race {}, messages {} ({} through the exchange during the apply), lost {}, wrong reports {}",
        figures.trials,
        figures.applied,
        figures.refused,
        figures.raced,
        figures.messages,
        figures.produced,
        figures.lost,
        figures.wrong_reports
    );
    assert_eq!(figures.wrong_reports, 0);
}

/// What the queues of `vhost` hold once the unacknowledged messages are back in their
/// queue, and how many messages that is. A queue takes back a closed channel's
/// messages after the close is answered (a quorum queue through its log), so a count
/// taken at once can miss them for a moment, longer on a loaded machine: counted again
/// until `expected` messages are seen or a minute has passed (a message lost stays
/// lost however long).
fn settled_snapshot(node: &Node, vhost: &str, expected: u64) -> (Snapshot, u64) {
    let counted_by = Instant::now() + Duration::from_secs(60);
    loop {
        let after = snapshot(node, vhost);
        let held_now: u64 = after.messages.values().map(|c| u64::from(*c)).sum();
        if held_now >= expected || Instant::now() >= counted_by {
            return (after, held_now);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A trial's next spec: the consumer deleted, or its queues replaced by type `to`;
/// in some trials, with `TRIAL_CREATES` queues more, made before any removal but
/// after the check, so that the apply runs long enough for producers to publish
/// between the two.
fn next_spec(rng: &mut impl Rng, name: &str, vhost: &str, (from, to): (&str, &str)) -> String {
    let next = if rng.random_bool(0.5) {
        single(name, vhost, to, "\"order.#\"")
    } else {
        platform(name, vhost, from)
    };
    if !rng.random_bool(0.4) {
        return next;
    }
    let bulk: String = (0..TRIAL_CREATES)
        .map(|n| format!("      bulk{n:05}: {{}}\n"))
        .collect();
    next.replace("      keep: {}\n", &format!("      keep: {{}}\n{bulk}"))
}

/// Publishes a message through the consumer's exchange (`orders`, key
/// `order.trial`) at each moment of `at` from now, with confirms and `mandatory`;
/// how many the broker confirmed and did not return. A publish it returns (no
/// queue bound), nacks, or answers by closing the channel (the exchange deleted) is
/// not counted, and the next one goes on a new connection.
fn produce(node: &Node, vhost: &str, at: Vec<Duration>) -> std::thread::JoinHandle<u32> {
    let url = format!("{}{}", node.amqp_url(), pct(vhost));
    std::thread::spawn(move || {
        amqp::runtime().block_on(async move {
            let started = std::time::Instant::now();
            let mut client: Option<Client> = None;
            let mut accepted = 0;
            for (n, moment) in at.into_iter().enumerate() {
                tokio::time::sleep(moment.saturating_sub(started.elapsed())).await;
                let open = match client.take() {
                    Some(open) => open,
                    None => Client::connect_url(&url).await,
                };
                let body = format!("produced{n}");
                match open
                    .publish(
                        "orders",
                        "order.trial",
                        body.as_bytes(),
                        amqp::message(&body),
                    )
                    .await
                {
                    Ok(()) => {
                        accepted += 1;
                        client = Some(open);
                    }
                    Err(_) => open.close().await,
                }
            }
            if let Some(open) = client {
                open.close().await;
            }
            accepted
        })
    })
}

/// One trial's apply, for judging.
struct Trial<'a> {
    number: u32,
    node: &'a Node,
    vhost: &'a str,
    run: &'a crate::support::Run,
}

impl Trial<'_> {
    /// Whether the apply kept its word: applied, or refused with the broker exactly as
    /// before, or stopped in the race with an exact report.
    fn judge(
        &self,
        before: &Snapshot,
        after: &Snapshot,
        counts: &BTreeMap<String, u32>,
        figures: &mut Figures,
    ) {
        let (trial, run) = (self.number, self.run);
        match run.code {
            Some(0) => figures.applied += 1,
            Some(4) if run.stderr.contains("was made") || run.stderr.contains("were made") => {
                // The race: a message arrived after the check, and the broker's own
                // check at the deletion stopped the apply there.
                figures.raced += 1;
                let document: Value = serde_json::from_str(&run.stdout).unwrap_or_default();
                if let Err(wrong) = crate::report::exact(self.node, self.vhost, &document) {
                    figures.wrong_reports += 1;
                    eprintln!("trial {trial}: {wrong}\n{}", run.stderr);
                }
            }
            Some(4) => {
                figures.refused += 1;
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
            code => panic!(
                "trial {trial}: exit {code:?}\n{}\n{}",
                run.stdout, run.stderr
            ),
        }
    }
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
        a_message_after_the_check_stops_the_apply_at_its_queue_with_an_exact_report,
        a_message_after_the_check_stops_a_replace_and_the_broker_is_as_before,
        a_random_apply_loses_nothing_or_changes_nothing,
);
