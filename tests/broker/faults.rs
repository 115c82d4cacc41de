//! Faults during an apply: the report says what the broker confirmed, what was sent
//! without a confirmation, and what was not done, never "nothing was changed" when
//! something was; and a broker that never answers a close does not hold the apply.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::amqp_proxy::AmqpProxy;
use crate::background::Background;
use crate::http_tap::HttpTap;
use crate::import_filter::ImportFilter;
use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;

fn queues_spec(spec: &str, vhost: &str, count: usize) -> String {
    queues_of_type(spec, vhost, count, "classic")
}

fn queues_of_type(spec: &str, vhost: &str, count: usize, queue_type: &str) -> String {
    let mut text = format!("version: 1\nname: {spec}\nvhosts:\n  {vhost}:\n    queues:\n");
    for n in 0..count {
        text.push_str(&format!("      r{n}: {{ type: {queue_type} }}\n"));
    }
    text
}

/// Reproduction: the broker is killed (kill -9) while an apply of 1,500 queues runs.
fn a_broker_killed_mid_apply_gets_an_honest_report(version: Version) {
    let node = Node::start(version, NodeOptions::default());
    let vhost = "crash";
    let spec = Spec::new(&queues_spec("crash", vhost, 1500));
    let child = Background::spawn(node.apply(spec.arg()).with(&["--timeout", "10"]).command());
    // Killed once the import has started making queues, however long warren takes to
    // get there on a loaded machine (the bound is for an apply that never starts).
    let first = format!("/api/queues/{}/r0", pct(vhost));
    let started = Instant::now();
    while node.get_opt(&first).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the apply made no queue: {}",
            child.stderr_so_far()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    node.kill();
    let output = child.finish();
    let stderr = output.stderr;
    assert_eq!(output.code, Some(3), "{stderr}");
    assert!(
        !stderr.contains("nothing was changed"),
        "queues were made: the report must not say otherwise: {stderr}"
    );
    assert!(
        stderr.contains("were sent but not confirmed (the broker may have made them)")
            || stderr.contains(
                "the changes were made, but the spec's ownership record could not be written"
            ),
        "{stderr}"
    );
    assert!(
        stderr.contains("run `warren plan` and `warren apply` again to finish"),
        "{stderr}"
    );
}

/// The queue a report's line names (`delete queue "r7" in vhost "crash"`, possibly
/// followed by why).
fn named_queue(line: &str) -> String {
    let quoted = line
        .strip_prefix("delete queue \"")
        .unwrap_or_else(|| panic!("not a queue's delete: {line}"));
    quoted[..quoted.find('"').unwrap()].to_string()
}

/// The broker is killed (kill -9) while an apply deletes 1,500 queues, each through
/// the AMQP delete guard. The report must match what the broker holds after its
/// restart: every delete reported made is gone, every delete reported not made is
/// still there (a delete sent whose answer never came is "not confirmed", never
/// "not made": the broker may have done it before it died), each of the 1,500 in
/// exactly one list, and never "nothing was changed".
fn a_broker_killed_mid_delete_reports_what_the_broker_holds(version: Version) {
    let node = Node::start(version, NodeOptions::default());
    let vhost = "crash";
    let spec = Spec::new(&queues_spec("crash", vhost, 1500));
    node.apply(spec.arg()).expect(0);
    spec.write(&format!(
        "version: 1\nname: crash\nvhosts:\n  {vhost}: {{}}\n"
    ));
    let mut child = Background::spawn(
        node.apply(spec.arg())
            .with(&["--timeout", "10", "--format", "json"])
            .command(),
    );
    // Killed once the deletes have begun, however long the apply takes to get there
    // on a loaded machine (the bound is for an apply that never starts deleting).
    let started = Instant::now();
    while node.queue_names(vhost).len() >= 1500 {
        assert!(
            child.exited().is_none() && started.elapsed() < Duration::from_secs(180),
            "the apply deleted no queue: {}",
            child.stderr_so_far()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    node.kill();
    let output = child.finish();
    assert_eq!(output.code, Some(3), "{}", output.stderr);
    assert!(
        !output.stderr.contains("nothing was changed"),
        "queues were deleted: {}",
        output.stderr
    );
    let document: Value = serde_json::from_str(&output.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", output.stdout));
    let list = |key: &str| -> Vec<String> {
        document["applied"][key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key} in {document}"))
            .iter()
            .map(|line| named_queue(line.as_str().unwrap()))
            .collect()
    };
    let (done, unconfirmed, not_done) = (list("done"), list("unconfirmed"), list("not_done"));
    node.restart();
    let held = node.queue_names(vhost);
    // The report says what the broker confirmed. Mnesia may lose the last deletes it
    // confirmed before the kill (`keeps_every_confirmed_change`): those queues come
    // back with the restart. Its log keeps commits in order, so what comes back is
    // always the latest deletes, never one confirmed before a delete that held.
    let back: Vec<&String> = done.iter().filter(|queue| held.contains(*queue)).collect();
    if keeps_every_confirmed_change(version) {
        assert!(
            back.is_empty(),
            "{version}: reported deleted, still there: {back:?}"
        );
    } else if let Some(first_back) = back.first() {
        let from = done.iter().position(|queue| queue == *first_back).unwrap();
        assert_eq!(
            back.len(),
            done.len() - from,
            "{version}: only the latest deletes may come back, not {back:?}"
        );
        eprintln!(
            "{version}: the last {} deletes the broker confirmed came back with its restart",
            back.len()
        );
    }
    for queue in &not_done {
        assert!(
            held.contains(queue),
            "{version}: {queue} reported not deleted, gone"
        );
    }
    let mut every: Vec<&String> = done.iter().chain(&unconfirmed).chain(&not_done).collect();
    every.sort();
    every.dedup();
    assert_eq!(
        (every.len(), done.len() + unconfirmed.len() + not_done.len()),
        (1500, 1500),
        "each delete in exactly one list: {} made, {} not confirmed, {} not made",
        done.len(),
        unconfirmed.len(),
        not_done.len()
    );
    eprintln!(
        "{version}: killed mid-delete: {} made, {} not confirmed ({} of them done by the broker), {} not made",
        done.len(),
        unconfirmed.len(),
        unconfirmed.iter().filter(|q| !held.contains(*q)).count(),
        not_done.len()
    );
}

/// `warren apply SPEC --auto-approve --format json` against `node` through `tap`, with
/// the default `--timeout` (60 s): these tests expect every change before the held
/// request to be reported made, and on a loaded node a request among up to 8 guarded
/// deletes in flight can outlast a shorter one (it is then, rightly, unconfirmed).
/// Once the node is killed and the tap cut, every request fails at once.
fn apply_through(node: &Node, tap: &HttpTap, spec: &Spec) -> Background {
    Background::spawn(
        node.apply(spec.arg())
            .at(&tap.url())
            .with(&["--format", "json", "--timeout", "60"])
            .command(),
    )
}

/// The lists of an apply's JSON report, each change as its line.
fn report_lists(run: &crate::support::Run) -> [Vec<String>; 3] {
    let document: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}{}", run.stdout, run.stderr));
    ["done", "unconfirmed", "not_done"].map(|key| {
        document["applied"][key]
            .as_array()
            .unwrap_or_else(|| panic!("no applied.{key} in {document}"))
            .iter()
            .map(|line| line.as_str().unwrap().to_string())
            .collect()
    })
}

/// The broker dies at the end of an apply: the node is killed at the very moment the
/// apply sends its record (a proxy holds that request back until the node is dead), once
/// after creating 300 queues and once after deleting them. Every change was made, and
/// the report must say so, change by change (never "nothing was changed"), with a rerun
/// path that works: after the restart, `warren apply` records them and the next plan
/// has nothing to do.
fn a_broker_killed_as_the_record_is_written_keeps_the_report(version: Version) {
    let node = Node::start(version, NodeOptions::default());
    let vhost = "crash";
    let count = 300;
    let spec = Spec::new(&queues_spec("crash", vhost, count));
    for (step, expected) in [("create", count), ("delete", 0)] {
        if step == "delete" {
            spec.write(&format!(
                "version: 1\nname: crash\nvhosts:\n  {vhost}: {{}}\n"
            ));
        }
        let tap = HttpTap::start(
            node.management_port(),
            "PUT /api/global-parameters/warren.crash ",
        );
        let child = apply_through(&node, &tap, &spec);
        assert!(
            tap.wait_tripped(Duration::from_secs(300)),
            "{version}: the apply never wrote its record: {}",
            child.stderr_so_far()
        );
        // The report is checked against what the broker held when it was killed: the
        // record's request is held back, so nothing changes after this read.
        let held_at_the_kill = node.queue_names(vhost);
        let parts_at_the_kill = node.record_parts("crash");
        node.kill();
        tap.cut();
        let output = child.finish();
        assert!(
            matches!(output.code, Some(1 | 3)),
            "{version} {step}: {}",
            output.stderr
        );
        assert!(
            !output.stderr.contains("nothing was changed"),
            "{version} {step}: every change was made: {}",
            output.stderr
        );
        assert!(
            output.stderr.contains("run `warren plan` again")
                || output.stderr.contains("run `warren apply` again"),
            "{version} {step}: a rerun path: {}",
            output.stderr
        );
        let [done, unconfirmed, not_done] = report_lists(&output);
        let queues = done
            .iter()
            .filter(|line| line.starts_with(&format!("{step} queue ")))
            .count();
        assert_eq!(
            (queues, unconfirmed.len(), not_done.len()),
            (count, 0, 0),
            "{version} {step}: every change reported made: {}",
            output.stderr
        );
        assert_eq!(
            held_at_the_kill.len(),
            expected,
            "{version} {step}: the broker held what the report says"
        );
        node.restart();
        let held_after_the_restart = node.queue_names(vhost);
        if keeps_every_confirmed_change(version) {
            assert_eq!(
                held_after_the_restart, held_at_the_kill,
                "{version} {step}: the restart kept every confirmed change"
            );
        } else {
            // Mnesia may lose the last changes it confirmed: it shows what came back.
            let (lost, back) = (
                held_at_the_kill.difference(&held_after_the_restart).count(),
                held_after_the_restart.difference(&held_at_the_kill).count(),
            );
            eprintln!(
                "{version} {step}: after the restart, {lost} queues made are missing and {back} deleted are back"
            );
        }
        node.apply(spec.arg()).expect(0);
        node.plan(spec.arg()).expect(0);
        assert_eq!(node.queue_names(vhost).len(), expected, "{version} {step}");
        // Every part the head names is there, and a part it does not name was written
        // by the stopped apply (before its held head): the next write of the record
        // deletes it (an apply with nothing to change writes none).
        let record = node.record("crash").expect("the record");
        let named: BTreeSet<String> = record["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|part| part.as_str().unwrap().to_string())
            .collect();
        let stored: BTreeSet<String> = node.record_parts("crash").into_iter().collect();
        assert!(
            named.is_subset(&stored),
            "{version} {step}: the head names parts that are missing: {named:?}, {stored:?}"
        );
        let left: BTreeSet<&String> = stored.difference(&named).collect();
        assert!(
            left.iter().all(|part| parts_at_the_kill.contains(*part)),
            "{version} {step}: a part left over that the stopped apply did not write: {left:?}"
        );
    }
}

/// Whether a node of `version` killed with kill -9 comes back with every change it
/// confirmed. Khepri (4.3) answers a change once it is in its fsynced log. Mnesia
/// (3.10, 4.0) writes a committed transaction to its log asynchronously
/// (`mnesia_log:log` appends with `disk_log:alog`), so the last changes a node
/// confirmed before it was killed may be missing after its restart: seen on 3.10
/// for the last confirmed `queue.delete` of a classic queue and for queues of an
/// import made just before the kill (docs/reliability.md).
fn keeps_every_confirmed_change(version: Version) -> bool {
    version >= Version::V4_3
}

/// The broker dies as an apply sends its first write (the import of 300 queues, held
/// back by a proxy until the node is dead): nothing was made, and the report says no
/// change was made; those sent are "not confirmed" (warren cannot know the broker
/// never read them), and after the restart none of them is there.
fn a_broker_killed_at_the_first_write_reports_nothing_made(version: Version) {
    let node = Node::start(version, NodeOptions::default());
    let vhost = "crash";
    let count = 300;
    let spec = Spec::new(&queues_spec("crash", vhost, count));
    let tap = HttpTap::start(node.management_port(), "POST /api/definitions ");
    let child = apply_through(&node, &tap, &spec);
    assert!(
        tap.wait_tripped(Duration::from_secs(300)),
        "{version}: the apply never sent its import: {}",
        child.stderr_so_far()
    );
    node.kill();
    tap.cut();
    let output = child.finish();
    assert_eq!(output.code, Some(3), "{version}: {}", output.stderr);
    let [done, unconfirmed, not_done] = report_lists(&output);
    assert!(
        done.is_empty(),
        "{version}: nothing was confirmed: {done:?}"
    );
    let document: Value = serde_json::from_str(&output.stdout).unwrap();
    let planned = document["plan"]["changes"].as_array().map_or(0, Vec::len);
    assert!(
        planned > count,
        "{version}: the vhost and its queues: {planned}"
    );
    assert_eq!(
        unconfirmed.len() + not_done.len(),
        planned,
        "{version}: every change in one list: {}",
        output.stderr
    );
    node.restart();
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", pct(vhost)))
            .is_none(),
        "{version}: the broker never read the import"
    );
    node.apply(spec.arg()).expect(0);
    node.plan(spec.arg()).expect(0);
}

/// The deletion checks' AMQP connection goes silent after three deletes (a proxy
/// passes nothing more of the broker's on it, heartbeats included, while warren's
/// requests still reach the broker): the deletes then under way are done by the broker
/// and their answers never arrive, and the client gives the connection up after two
/// missed heartbeats, as it does when a loaded broker is slow to send them.
///
/// - Classic queues: warren opens a new connection, asks again (the queues are gone:
///   their deletes carried `if-empty`, so nothing was lost with them) and finishes the
///   job.
/// - Quorum queues: a lost answer would have counted the messages deleted with the
///   queue, so those deletes stay "not confirmed" (exit 3, the report checked against
///   the broker), and the next apply finishes the job.
fn a_deletion_check_connection_lost_under_load_is_opened_again(version: Version) {
    let node = Node::shared(version);
    for (queue_type, code) in [("classic", 0), ("quorum", 3)] {
        let vhost = node.unused_vhost(&format!("silent-{queue_type}"));
        let name = format!("silent-{vhost}");
        let spec = Spec::new(&queues_of_type(&name, &vhost, 8, queue_type));
        node.apply(spec.arg()).expect(0);
        spec.write(&queues_of_type(&name, &vhost, 1, queue_type));
        let proxy = AmqpProxy::muting_after_deletes(node.amqp_port, 3);
        let command =
            node.apply(spec.arg())
                .with(&["--amqp-url", &proxy.url(), "--format", "json"]);
        let output = Background::spawn(command.command()).finish();
        assert_eq!(
            proxy.muted(),
            1,
            "{version} {queue_type}: the proxy never went silent: {}",
            output.stderr
        );
        assert_eq!(
            output.code,
            Some(code),
            "{version} {queue_type}: {}",
            output.stderr
        );
        let held = node.queue_names(&vhost);
        if code == 0 {
            assert_eq!(
                held.iter().collect::<Vec<_>>(),
                ["r0"],
                "{version}: every delete done"
            );
        } else {
            let [done, unconfirmed, not_done] = report_lists(&output).map(|lines| {
                lines
                    .iter()
                    .map(|line| named_queue(line))
                    .collect::<Vec<_>>()
            });
            // Several deletions are under way at once (docs/reliability.md): the three
            // answered are done, each whose delete the silent connection carried is not
            // confirmed (and was done: the requests reached the broker), and none starts
            // after that failure. A deletion that had not sent its delete yet asks again
            // on a new connection, so it may be done too.
            assert!(
                done.len() >= 3
                    && !unconfirmed.is_empty()
                    && done.len() + unconfirmed.len() + not_done.len() == 7,
                "{version}: {}",
                output.stdout
            );
            for queue in &unconfirmed {
                assert!(
                    !held.contains(queue),
                    "{version}: the broker did the delete of {queue}, whose answer was lost"
                );
            }
            for queue in &done {
                assert!(!held.contains(queue), "{version}: {queue} reported deleted");
            }
            for queue in &not_done {
                assert!(
                    held.contains(queue),
                    "{version}: {queue} reported not deleted"
                );
            }
            node.apply(spec.arg()).expect(0);
        }
        node.plan(spec.arg()).expect(0);
        node.remove_vhost(&vhost);
    }
}

/// The broker answers an import for a queue it did not make (a quorum queue whose Raft
/// members did not start in time on a loaded node; here a proxy takes the queue and its
/// binding out of every import): warren reads the queues back, declares the missing one
/// and binds it with requests of its own, and reports the apply done only when the
/// broker holds all of it. The next plan, against the node itself, has nothing to do.
fn a_queue_the_import_did_not_make_is_made_again(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("dropped");
    let name = format!("dropped-{vhost}");
    let spec = Spec::new(&format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    exchanges:\n      events: {{ type: direct }}\n    queues:\n      kept: {{ type: quorum }}\n      work: {{ type: quorum }}\n    bindings:\n      - {{ source: events, destination: work, routing_key: k }}\n      - {{ source: events, destination: kept, routing_key: k }}\n"
    ));
    let filter = ImportFilter::start(node.management_port(), "work");
    let applied = node
        .apply(spec.arg())
        .with(&["--url", &filter.url()])
        .expect(0);
    assert!(
        filter.taken() > 0,
        "{version}: the queue was never in an import: {}",
        applied.stderr
    );
    assert_eq!(
        node.queue_names(&vhost),
        BTreeSet::from(["kept".to_string(), "work".to_string()]),
        "{version}: {}",
        applied.stderr
    );
    let bindings = node.get(&format!("/api/bindings/{}/e/events/q/work", pct(&vhost)));
    assert_eq!(
        bindings.as_array().map(Vec::len),
        Some(1),
        "{version}: the binding into the queue made again: {bindings}"
    );
    node.plan(spec.arg()).expect(0);
    node.remove_vhost(&vhost);
}

per_version!(
    a_queue_the_import_did_not_make_is_made_again,
    a_broker_killed_mid_apply_gets_an_honest_report,
    a_broker_killed_mid_delete_reports_what_the_broker_holds,
    a_broker_killed_as_the_record_is_written_keeps_the_report,
    a_broker_killed_at_the_first_write_reports_nothing_made;
    also_on_4_0: a_deletion_check_connection_lost_under_load_is_opened_again
);

/// The broker never answers the apply's lock request (a proxy keeps back every
/// `queue.declare-ok`, heartbeats still flowing: a broker alive and stuck on one
/// request). The apply waits its `--timeout` for the answer, no longer, and stops with
/// exit 1 before its first write: nothing was changed, and its lock went with its
/// connection. Without a bound on each AMQP request it waited forever (a thawed apply
/// once waited an hour on a lock request whose connection was gone). The bound is for
/// an apply that hangs: a 10 s `--timeout`, a plan and a close of 2 s fit well within it.
#[test]
fn an_unanswered_lock_request_does_not_hold_the_apply() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("nolock");
    let proxy = AmqpProxy::swallowing_declare_oks(node.amqp_port);
    let name = format!("nolock-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, 2));
    let command = node
        .apply(spec.arg())
        .with(&["--amqp-url", &proxy.url(), "--timeout", "10"]);
    let run = Background::spawn(command.command()).finish_within(Duration::from_secs(180));
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("did not answer within 10 s"),
        "{}",
        run.stderr
    );
    assert!(proxy.swallowed() >= 1, "no declare-ok was kept back");
    // Nothing was made, and no lock is left behind.
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", pct(&vhost)))
            .is_none(),
        "the vhost was created"
    );
    node.apply(spec.arg()).expect(0);
}

/// The broker's close-ok never comes, for the apply lock's connection, the delete
/// guard's channel and its connection (a proxy keeps them back): each apply finishes
/// all the same, having waited a couple of seconds per close, instead of hanging after
/// its work is done (the bound is for an apply that hangs: a few closes of 2 s each and
/// an apply that a loaded machine may stretch to tens of seconds fit well within it).
/// One line: what is tried is warren's side of the protocol.
#[test]
fn an_unanswered_close_does_not_hold_the_apply() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("noclose");
    let proxy = AmqpProxy::swallowing_closes(node.amqp_port);
    let name = format!("noclose-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, 2));
    let apply = || {
        let command = node.apply(spec.arg()).with(&["--amqp-url", &proxy.url()]);
        Background::spawn(command.command()).finish_within(Duration::from_secs(180))
    };
    let created = apply();
    assert_eq!(created.code, Some(0), "{}", created.stderr);
    // The second apply deletes r1, through the guard's AMQP channel.
    spec.write(&queues_spec(&name, &vhost, 1));
    let deleted = apply();
    assert_eq!(deleted.code, Some(0), "{}", deleted.stderr);
    assert!(
        node.get_opt(&format!("/api/queues/{}/r1", pct(&vhost)))
            .is_none()
    );
    // Two lock connections, and the guard's channel and connection.
    assert!(
        proxy.swallowed() >= 4,
        "the proxy kept back {} close-oks",
        proxy.swallowed()
    );
}
