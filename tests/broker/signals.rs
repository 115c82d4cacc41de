//! SIGINT during a large apply (docs/reliability.md, "Signals"): the apply says so on
//! stderr at once, stops at its next safe point within seconds (between two import
//! chunks, between two delete requests), releases its locks, exits 1, and its report
//! says exactly what the broker holds; the next apply converges.
//!
//! Each test has a node of its own: its applies are thousands of objects, and on a node
//! that other tests' large applies shared, one import of a single queue went unanswered
//! for five minutes (a loaded run, 2026-12-07), failing the apply that was to converge.
//!
//! That the apply stops at its next safe point, and not at its end, is read off the
//! broker, never off a clock: the queues it holds just after the signal bound what the
//! stopped apply may still make (the import in flight) or delete (the deletions in
//! flight). `CREATES` classic queues are 4 imports of 3,000 and one of the last queue,
//! and `DELETES` queues take one guarded deletion each.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::background::Background;
use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;

/// Queues created by the interrupted apply: several imports of the fewest objects an
/// import holds (`IMPORT_CHUNK_MIN_OBJECTS`, 3,000), so that a stop after the first
/// leaves most of them unmade.
const CREATES: usize = 12_000;

/// Queues deleted by the interrupted apply, one guarded deletion each: the stop comes
/// within a second of the signal, and the deletes left take many seconds. 3,000 made
/// this the suite's slowest test on 4.3 (176 s unloaded, 2026-12-07) for no more proof.
const DELETES: usize = 1_500;

/// How soon after the signal its notice must be on stderr: warren prints it itself,
/// without a round trip to the broker, where waiting for the current chunk would take
/// seconds to tens of seconds; a loaded machine may still keep warren off the CPU for a
/// moment.
const NOTICE_BOUND: Duration = Duration::from_secs(5);

/// How soon after the signal the apply must have exited, at most: a bound for a stop
/// that does not come, wide enough for one import chunk of 3,000 queues, the report
/// and the record on a node whose machine is loaded. What shows that the stop does not
/// run the apply to its end is what the broker holds (see the module's comment).
const STOP_BOUND: Duration = Duration::from_secs(120);

/// Objects in one import of the creates test (its queues and the vhost), as warren
/// cuts them.
fn import() -> usize {
    warren::broker::import_chunk_objects(CREATES + 1)
}

fn queues_spec(spec: &str, vhost: &str, count: usize) -> String {
    let mut text = format!("version: 1\nname: {spec}\nvhosts:\n  {vhost}:\n    queues:\n");
    for n in 0..count {
        text.push_str(&format!("      q{n:05}: {{ type: classic }}\n"));
    }
    text
}

fn queue_names(node: &Node, vhost: &str) -> BTreeSet<String> {
    node.get(&format!(
        "/api/queues/{}?columns=name&disable_stats=true",
        pct(vhost)
    ))
    .as_array()
    .unwrap()
    .iter()
    .filter_map(|q| q["name"].as_str().map(str::to_string))
    .collect()
}

fn lock_queues(node: &Node) -> Vec<String> {
    node.get_opt("/api/queues/warren.locks?columns=name")
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|q| q["name"].as_str().map(str::to_string))
        .collect()
}

/// The queue names of a report list (`create queue "q00012" in vhost "…"`) whose
/// entries start with `action`.
fn reported(list: &Value, action: &str) -> BTreeSet<String> {
    list.as_array()
        .unwrap()
        .iter()
        .filter_map(|entry| entry.as_str()?.strip_prefix(action))
        .filter_map(|rest| rest.split('"').nth(1).map(str::to_string))
        .collect()
}

/// Waits until `condition` holds, at most `limit`; how long it took.
#[track_caller]
fn within(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    started.elapsed()
}

/// What a stopped apply left: its run, its JSON document, the queues of the vhost
/// counted just after the first signal, and how long the stop took.
struct Stopped {
    run: crate::support::Run,
    document: Value,
    queues_at_signal: usize,
    took: Duration,
}

/// Starts `apply SPEC --format json`, waits until `started` says the phase under test
/// runs, sends SIGINT, counts `vhost`'s queues, and sends a second SIGINT when `twice`.
/// Checks the notices and the stop bound.
fn interrupt(
    node: &Node,
    spec: &Spec,
    vhost: &str,
    twice: bool,
    mut started: impl FnMut() -> bool,
) -> Stopped {
    let mut child = Background::spawn(node.apply(spec.arg()).with(&["--format", "json"]).command());
    within(
        Duration::from_secs(300),
        "the phase under test starts",
        || {
            assert!(child.exited().is_none(), "{}", child.stderr_so_far());
            started()
        },
    );
    let signalled = Instant::now();
    child.signal(libc::SIGINT);
    // Read after the signal: at least what the stopped apply had made (or had not yet
    // deleted) when the signal came, so bounds drawn from it only widen.
    let queues_at_signal = queue_names(node, vhost).len();
    let heard = within(NOTICE_BOUND, "the first notice", || {
        child.stderr_so_far().contains("Signal received: stopping")
    });
    if twice {
        child.signal(libc::SIGINT);
        within(NOTICE_BOUND, "the second notice", || {
            child
                .stderr_so_far()
                .contains("Still stopping at the safe point")
        });
    }
    let run = child.finish_within(Duration::from_secs(300));
    let stopped = signalled.elapsed();
    eprintln!(
        "{}: notice after {} ms, exit after {} ms",
        node.rabbitmq_version(),
        heard.as_millis(),
        stopped.as_millis()
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("apply stopped before it finished: interrupted by a signal"),
        "{}",
        run.stderr
    );
    assert!(
        stopped < STOP_BOUND,
        "stopped {stopped:?} after the signal: {}",
        run.stderr
    );
    let document: Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    Stopped {
        run,
        document,
        queues_at_signal,
        took: stopped,
    }
}

/// The locks are free at once, and the next apply converges.
fn converges(node: &Node, vhost: &str, spec: &Spec, stopped: Duration) {
    assert!(
        lock_queues(node).iter().all(|q| !q.ends_with(vhost)),
        "the locks are released"
    );
    // No --lock-timeout: the locks must be free now.
    let started = Instant::now();
    node.apply(spec.arg()).expect(0);
    let rest = started.elapsed();
    eprintln!(
        "{}: the rest applied in {} ms",
        node.rabbitmq_version(),
        rest.as_millis()
    );
    eprintln!(
        "{}: the stop took {} ms",
        node.rabbitmq_version(),
        stopped.as_millis()
    );
    let plan = node.plan(spec.arg()).expect(0);
    assert!(plan.stdout.contains("No changes."), "{}", plan.stdout);
}

fn a_signal_stops_creates_after_the_current_chunk(version: Version) {
    let node = &Node::start(version, NodeOptions::default());
    let vhost = node.unused_vhost("signal-creates");
    let name = format!("signal-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, CREATES));
    let first = format!("/api/queues/{}/q00000", pct(&vhost));
    let Stopped {
        run,
        document,
        queues_at_signal,
        took,
    } = interrupt(node, &spec, &vhost, true, || node.get_opt(&first).is_some());
    assert!(
        run.stderr
            .contains("Signal received: stopping after the current chunk: creating "),
        "{}",
        run.stderr
    );
    // What the report says was made is exactly what the broker holds.
    let held = queue_names(node, &vhost);
    let done = reported(&document["applied"]["done"], "create queue ");
    let not_done = reported(&document["applied"]["not_done"], "create queue ");
    assert!(
        document["applied"]["unconfirmed"]
            .as_array()
            .is_none_or(Vec::is_empty)
    );
    assert_eq!(held, done, "made: the report against the broker");
    assert!(held.is_disjoint(&not_done));
    assert_eq!(done.len() + not_done.len(), CREATES);
    assert!(
        !done.is_empty() && done.len() < CREATES,
        "stopped part way: {} made",
        done.len()
    );
    // Whole imports, the first with the vhost.
    let made = done.len() + 1;
    assert_eq!(made % import(), 0, "whole imports: {}", done.len());
    // No import after the signal: the imports answered before it, and the one in
    // flight, whose first queues may already show.
    let answered_before = (queues_at_signal + 1) / import();
    assert!(
        made <= (answered_before + 1) * import(),
        "{} queues made, {queues_at_signal} when the signal came: an import was sent after it",
        done.len()
    );
    converges(node, &vhost, &spec, took);
    assert_eq!(queue_names(node, &vhost).len(), CREATES);
}

fn a_signal_stops_deletes_after_the_requests_in_flight(version: Version) {
    let node = &Node::start(version, NodeOptions::default());
    let vhost = node.unused_vhost("signal-deletes");
    let name = format!("signal-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, DELETES));
    node.apply(spec.arg()).with(&["--timeout", "120"]).expect(0);
    spec.write(&format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}: {{}}\n"
    ));
    let first = format!("/api/queues/{}/q00000", pct(&vhost));
    let Stopped {
        run,
        document,
        queues_at_signal,
        took,
    } = interrupt(node, &spec, &vhost, false, || {
        node.get_opt(&first).is_none()
    });
    assert!(
        run.stderr.contains(
            "Signal received: stopping once the requests in flight are answered: deleting "
        ),
        "{}",
        run.stderr
    );
    let held = queue_names(node, &vhost);
    let done = reported(&document["applied"]["done"], "delete queue ");
    let not_done = reported(&document["applied"]["not_done"], "delete queue ");
    assert!(held.is_disjoint(&done), "what was reported deleted is gone");
    assert_eq!(held, not_done, "not made: the report against the broker");
    assert_eq!(done.len() + not_done.len(), DELETES);
    assert!(
        !done.is_empty() && done.len() < DELETES,
        "stopped part way: {} deleted",
        done.len()
    );
    // No deletion started after the signal: at most those in flight finished.
    assert!(
        held.len() + warren::broker::DELETES_IN_FLIGHT >= queues_at_signal,
        "{} queues left, {queues_at_signal} when the signal came: a deletion started after it",
        held.len()
    );
    converges(node, &vhost, &spec, took);
    assert!(queue_names(node, &vhost).is_empty());
}

fn a_third_signal_stops_at_once(version: Version) {
    let node = &Node::start(version, NodeOptions::default());
    let vhost = node.unused_vhost("signal-thrice");
    let name = format!("signal-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, 2_000));
    let mut child = Background::spawn(node.apply(spec.arg()).command());
    let first = format!("/api/queues/{}/q00000", pct(&vhost));
    within(Duration::from_secs(300), "the first import starts", || {
        assert!(child.exited().is_none(), "{}", child.stderr_so_far());
        node.get_opt(&first).is_some()
    });
    let signalled = Instant::now();
    for _ in 0..3 {
        child.signal(libc::SIGINT);
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = child.finish_within(Duration::from_secs(60));
    let stopped = signalled.elapsed();
    eprintln!(
        "{}: stopped at once after {} ms",
        node.rabbitmq_version(),
        stopped.as_millis()
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    // At once: the third signal exits without waiting for the broker, where the
    // import in flight (2,000 queues) takes seconds to tens of seconds on a loaded
    // node; the bound leaves a loaded machine room to schedule warren.
    assert!(
        stopped < Duration::from_secs(10),
        "{stopped:?}: {}",
        run.stderr
    );
    assert!(run.stderr.contains("Stopping at once"), "{}", run.stderr);
    assert!(!run.stderr.contains(" made, "), "no report: {}", run.stderr);
    // The broker frees the locks with the connection; the next apply makes the rest.
    node.apply(spec.arg())
        .with(&["--lock-timeout", "10s"])
        .expect(0);
    let plan = node.plan(spec.arg()).expect(0);
    assert!(plan.stdout.contains("No changes."), "{}", plan.stdout);
    assert_eq!(queue_names(node, &vhost).len(), 2_000);
}

per_version!(
    a_signal_stops_creates_after_the_current_chunk,
    a_signal_stops_deletes_after_the_requests_in_flight,
    a_third_signal_stops_at_once,
);
