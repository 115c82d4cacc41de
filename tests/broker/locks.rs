//! The apply lock is the broker's: exclusive queues in vhost `warren.locks`, held over
//! one AMQP connection for the apply's duration. Two applies of one spec, or of two
//! specs sharing a vhost, never both apply and never both claim an object; a killed
//! holder's locks are free at once; a stuck holder is named and can be cut off with
//! `warren unlock`, after which it stops without writing; SIGINT stops an apply at a
//! safe point with an honest report and its locks released.
//!
//! The race trials run `WARREN_LOCK_TRIALS` times per version (default 5 here;
//! `scripts/reliability` runs 50 and records the figures in docs/reliability.md).

use std::process::Stdio;
use std::time::{Duration, Instant};

use lapin::options::QueueDeclareOptions;
use lapin::types::{AMQPValue, FieldTable};
use serde_json::Value;

use crate::background::Background;
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::Run;

fn queues_spec(spec: &str, vhost: &str, prefix: &str, count: usize) -> String {
    let mut text = format!("version: 1\nname: {spec}\nvhosts:\n  {vhost}:\n    queues:\n");
    for n in 0..count {
        text.push_str(&format!("      {prefix}{n}: {{ type: classic }}\n"));
    }
    text
}

fn record(node: &Node, spec: &str) -> Option<Value> {
    node.record(spec)
}

/// How long an apply of a spec of 1,500 queues may take to plan and take its locks on a
/// loaded machine: a bound that only stops a test that would otherwise wait forever.
const TAKES_ITS_LOCKS: Duration = Duration::from_secs(180);

/// `--timeout` for applies of a thousand queues and more: a loaded 3.10 node makes them
/// in minutes, and the default 60 s would fail a test about something else.
const SLOW_BROKER: &[&str] = &["--timeout", "300"];

fn lock_queues(node: &Node) -> Vec<String> {
    node.get_opt("/api/queues/warren.locks?columns=name")
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|q| q["name"].as_str().map(str::to_string))
        .collect()
}

fn trials() -> usize {
    std::env::var("WARREN_LOCK_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// Starts two commands at once and waits for both.
fn together(node: &Node, first: &[&str], second: &[&str]) -> (Run, Run) {
    std::thread::scope(|scope| {
        let a = scope.spawn(|| node.cli(first).run());
        let b = scope.spawn(|| node.cli(second).run());
        (a.join().unwrap(), b.join().unwrap())
    })
}

/// A refusal because another apply held a lock or got there first.
fn lost_the_race(run: &Run) -> bool {
    run.code == Some(4)
        && (run.stderr.contains("is locked by another apply")
            || run.stderr.contains("changed since this plan was made")
            || run.stderr.contains("managed by another spec")
            || run
                .stderr
                .contains("takes over objects another spec manages"))
}

fn two_applies_of_one_spec_never_both_apply(version: Version) {
    let node = Node::shared(version);
    let (mut both, mut one) = (0, 0);
    for _ in 0..trials() {
        let vhost = node.unused_vhost("race1");
        let name = format!("race1-{vhost}");
        let spec = Spec::new(&queues_spec(&name, &vhost, "q", 20));
        let args = ["apply", spec.arg(), "--auto-approve"];
        let (a, b) = together(node, &args, &args);
        // An apply that got the locks after the other finished plans again under them
        // and finds nothing left to do: it exits 0 without applying anything.
        let applied = [&a, &b]
            .iter()
            .filter(|r| r.stdout.contains("Applied:"))
            .count();
        for run in [&a, &b] {
            assert!(
                run.code == Some(0) || lost_the_race(run),
                "{version}: {}",
                run.stderr
            );
        }
        if applied == 2 {
            both += 1;
        } else {
            one += 1;
        }
        let serial = record(node, &name).unwrap()["serial"].as_u64().unwrap();
        assert_eq!(serial, 1, "{version}: exactly one apply wrote the record");
        node.plan(spec.arg()).expect(0);
    }
    eprintln!("{version}: two applies of one spec: {one} trials one applied, {both} both");
    assert_eq!(both, 0);
}

/// With `--lock-timeout`, the apply that waits plans again under the locks: it finds
/// the work done and exits 0 without changing anything, instead of a stale refusal.
fn an_apply_that_waits_plans_what_is_left(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("waits");
    let name = format!("waits-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, "q", 200));
    let args = [
        "apply",
        spec.arg(),
        "--auto-approve",
        "--lock-timeout",
        "120s",
    ];
    let (a, b) = together(node, &args, &args);
    assert_eq!(
        (a.code, b.code),
        (Some(0), Some(0)),
        "{}{}",
        a.stderr,
        b.stderr
    );
    let applied: Vec<&Run> = [&a, &b]
        .into_iter()
        .filter(|r| r.stdout.contains("Applied: 201 changes"))
        .collect();
    assert_eq!(applied.len(), 1, "{}\n{}", a.stdout, b.stdout);
    assert_eq!(record(node, &name).unwrap()["serial"], 1);
}

fn two_specs_sharing_a_vhost_never_both_claim(version: Version) {
    let node = Node::shared(version);
    let mut double_claims = 0;
    for _ in 0..trials() {
        let vhost = node.unused_vhost("race2");
        let (a_name, b_name) = (format!("a-{vhost}"), format!("b-{vhost}"));
        let a = Spec::new(&queues_spec(&a_name, &vhost, "shared", 5));
        let b = Spec::new(&queues_spec(&b_name, &vhost, "shared", 5));
        let (ran_a, ran_b) = together(
            node,
            &["apply", a.arg(), "--auto-approve"],
            &["apply", b.arg(), "--auto-approve"],
        );
        for run in [&ran_a, &ran_b] {
            assert!(
                run.code == Some(0) || lost_the_race(run),
                "{version}: {}",
                run.stderr
            );
        }
        let claims = |name: &str| {
            record(node, name)
                .map(|r| r["objects"].as_array().unwrap().len())
                .unwrap_or(0)
        };
        let claimed = [claims(&a_name), claims(&b_name)];
        if claimed.iter().all(|n| *n > 0) {
            double_claims += 1;
        }
        // The winner plans cleanly; the loser is told who owns the objects.
        let (winner, loser) = if claimed[0] > 0 { (&a, &b) } else { (&b, &a) };
        node.plan(winner.arg()).expect(0);
        let refused = node.plan(loser.arg()).expect(4);
        assert!(
            refused.stdout.contains("Managed by another spec"),
            "{}",
            refused.stdout
        );
    }
    eprintln!("{version}: two specs sharing a vhost: {double_claims} double claims");
    assert_eq!(double_claims, 0);
}

/// Holds `queue` in `warren.locks` from this test, as a stuck apply named `holder`.
fn hold(node: &Node, queue: &str, holder: &str) -> (tokio::runtime::Runtime, lapin::Connection) {
    let runtime = crate::amqp::runtime();
    let url = format!("{}warren.locks", node.amqp_url());
    let connection = runtime.block_on(async {
        let properties = lapin::ConnectionProperties::default().with_connection_name(holder.into());
        let connection = lapin::Connection::connect(&url, properties).await.unwrap();
        let channel = connection.create_channel().await.unwrap();
        let mut arguments = FieldTable::default();
        arguments.insert(
            "x-warren-holder".into(),
            AMQPValue::LongString(holder.into()),
        );
        let options = QueueDeclareOptions {
            exclusive: true,
            ..QueueDeclareOptions::default()
        };
        channel
            .queue_declare(queue.into(), options, arguments)
            .await
            .unwrap();
        connection
    });
    (runtime, connection)
}

fn a_stuck_holder_is_named_and_unlock_cuts_it_off(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("stuck");
    let name = format!("stuck-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, "q", 1));
    node.apply(spec.arg()).expect(0);
    spec.write(&queues_spec(&name, &vhost, "q", 2));
    let holder = "ci-runner-7:4242:0badf00d";
    let (runtime, connection) = hold(node, &format!("vhost.{vhost}"), holder);

    let refused = node.apply(spec.arg()).expect(4);
    assert!(
        refused.stderr.contains(&format!(
            "vhost `{vhost}` is locked by another apply: {holder} (process 4242 on host ci-runner-7"
        )) && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    // Waiting is bounded by --lock-timeout.
    let started = Instant::now();
    let waited = node
        .apply(spec.arg())
        .with(&["--lock-timeout", "2s"])
        .expect(4);
    assert!(
        started.elapsed() >= Duration::from_secs(2) && waited.stderr.contains("is locked by"),
        "{:?}: {}",
        started.elapsed(),
        waited.stderr
    );

    // The stuck apply holds the spec lock too in real life; here only the vhost.
    let wrong = node
        .cli(&["unlock", spec.arg(), "--holder", "someone:1:0"])
        .expect(0);
    assert!(wrong.stdout.contains("is not locked"), "{}", wrong.stdout);
    runtime.block_on(connection.close(200, "".into())).unwrap();
    let (_runtime, _connection) = hold(node, &format!("spec.{name}"), holder);
    let wrong = node
        .cli(&["unlock", spec.arg(), "--holder", "someone:1:0"])
        .expect(4);
    assert!(
        wrong.stderr.contains(&format!("is locked by {holder}")),
        "{}",
        wrong.stderr
    );
    // Connection statistics lag: unlock may ask to try again for a few seconds.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = node.cli(&["unlock", spec.arg(), "--holder", holder]).run();
        if run.code == Some(0) {
            assert!(run.stdout.contains("Unlocked spec"), "{}", run.stdout);
            break;
        }
        assert!(
            run.stderr.contains("try again shortly") && Instant::now() < deadline,
            "{}",
            run.stderr
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    node.apply(spec.arg())
        .with(&["--lock-timeout", "10s"])
        .expect(0);
    node.plan(spec.arg()).expect(0);
}

fn a_killed_apply_frees_its_locks_at_once(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("killed");
    let name = format!("killed-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, "q", 1500));
    let mut child = node
        .apply(spec.arg())
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let wanted = format!("spec.{name}");
    let started = Instant::now();
    while !lock_queues(node).contains(&wanted) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{version}: the apply ended first"
        );
        assert!(started.elapsed() < TAKES_ITS_LOCKS);
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    // The socket closes with the process, and the broker deletes the exclusive queues
    // of a closed connection as it notices; a holder that merely stopped answering
    // would lose them only after about three heartbeats without a frame (15 s). Freed
    // in under 8 s is the close, even on a loaded broker.
    while lock_queues(node).contains(&wanted) {
        assert!(
            killed.elapsed() < Duration::from_secs(8),
            "{version}: the killed apply's lock was not freed within 8 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("{version}: lock freed {:?} after kill -9", killed.elapsed());
    node.apply(spec.arg()).expect(0);
    node.plan(spec.arg()).expect(0);
}

/// An apply frozen mid-way (SIGSTOP) loses its locks after about three heartbeats;
/// another apply then takes them and converges; the frozen one, thawed, stops with
/// "lost its locks" and never writes its record over the other's.
fn a_frozen_apply_loses_its_locks_and_never_overwrites_the_record(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("frozen");
    let name = format!("frozen-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, "q", 1500));
    let child = Background::spawn(node.apply(spec.arg()).command());
    let wanted = format!("spec.{name}");
    let started = Instant::now();
    while !lock_queues(node).contains(&wanted) {
        assert!(started.elapsed() < TAKES_ITS_LOCKS);
        std::thread::sleep(Duration::from_millis(20));
    }
    child.signal(libc::SIGSTOP);
    let frozen = Instant::now();
    // The other apply waits for the locks; it may find the broker changed by what the
    // frozen one sent before it froze, and then runs again.
    let mut runs = 0;
    loop {
        runs += 1;
        // Its `--timeout` is wide: the broker may still be making the 1,000 queues
        // the frozen apply sent before it froze, and a loaded 3.10 node was seen
        // taking more than the default 70 s to answer the next import meanwhile.
        let run = node
            .apply(spec.arg())
            .with(&["--lock-timeout", "90s", "--timeout", "300"])
            .run();
        if run.code == Some(0) {
            break;
        }
        assert!(
            run.stderr.contains("changed since this plan was made") && runs < 5,
            "{version}: {}",
            run.stderr
        );
    }
    eprintln!(
        "{version}: a frozen apply's locks were taken over {:?} after it froze",
        frozen.elapsed()
    );
    assert!(
        frozen.elapsed() >= Duration::from_secs(5),
        "the locks outlived one heartbeat"
    );
    let serial = record(node, &name).unwrap()["serial"].clone();
    child.signal(libc::SIGCONT);
    let output = child.finish();
    let (stdout, stderr) = (&output.stdout, &output.stderr);
    if output.code == Some(0) {
        // Frozen while it planned again under its locks, it finds the work done by
        // the other apply and changes nothing (it sends no change after a plan with
        // none).
        assert!(
            stdout.contains("No changes") && !stdout.contains("Applied:"),
            "{version}: {stdout}{stderr}"
        );
    } else {
        // 1 when the apply failed, 4 when it refused a stale plan (docs/exit-codes.md).
        assert!(matches!(output.code, Some(1 | 4)), "{version}: {stderr}");
        // Frozen while it took its locks, or before it read its record under them,
        // it changes nothing; frozen later, it finds its locks gone.
        assert!(
            stderr.contains("lost its locks")
                || stderr.contains("its locks were lost")
                || stderr.contains("was applied since")
                || stderr.contains("the lock connection failed while the locks were being taken"),
            "{version}: {stderr}"
        );
    }
    assert_eq!(
        record(node, &name).unwrap()["serial"],
        serial,
        "{version}: the thawed apply left the record alone"
    );
    node.plan(spec.arg()).expect(0);
}

/// An AMQP URL where nothing listens: the apply cannot take its lock, says so at once
/// and changes nothing. "At once" is measured against the mechanism, not a fixed time:
/// the apply first plans over HTTP (as `warren plan` does, measured here as the
/// control, on the same node and the same machine load), then asks for the lock; a
/// refused port is the kernel's answer, which warren reports within two seconds even
/// when the AMQP client's own attempt does not return. The apply is given a
/// `--timeout` of 300 s, so that waiting it out (the failure this guards against)
/// cannot be mistaken for a slow plan however loaded the machine.
fn without_the_amqp_port_apply_changes_nothing(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("noamqp");
    let spec = Spec::new(&queues_spec(&format!("noamqp-{vhost}"), &vhost, "q", 1));
    let timeout = Duration::from_secs(300);
    let seconds = timeout.as_secs().to_string();
    let planning = Instant::now();
    node.plan(spec.arg())
        .with(&["--timeout", &seconds])
        .expect(0);
    let control = planning.elapsed();
    let started = Instant::now();
    let refused = node
        .apply(spec.arg())
        .with(&["--amqp-url", "amqp://127.0.0.1:1", "--timeout", &seconds])
        .expect(3);
    let took = started.elapsed();
    assert!(
        refused
            .stderr
            .contains("cannot take the apply lock at amqp://127.0.0.1:1")
            && refused
                .stderr
                .contains("connection refused: nothing listens on port 1 of 127.0.0.1")
            && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    // The plan again (control), two seconds for the kernel's answer, and the rest of a
    // plan's work three times over for the load: far below the timeout.
    let bound = control * 4 + Duration::from_secs(2) + Duration::from_secs(30);
    assert!(
        took < bound.min(timeout / 2),
        "{version}: a refused AMQP port took {took:?} to report (a plan took {control:?}): {}",
        refused.stderr
    );
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", pct(&vhost)))
            .is_none()
    );
}

/// SIGINT during an apply: it stops at the next safe point, says what was done and
/// what was not, releases the lock, and a second apply converges.
fn sigint_stops_at_a_safe_point_and_releases_the_lock(version: Version) {
    let node = Node::shared(version);
    let count = 1500;
    for trial in 0..3 {
        let vhost = node.unused_vhost("sigint");
        let name = format!("sigint-{vhost}");
        let spec = Spec::new(&queues_spec(&name, &vhost, "q", count));
        // 1,500 queues take a loaded 3.10 node more than the default 60 s: the
        // timeout is not what this test is about.
        node.apply(spec.arg()).with(SLOW_BROKER).expect(0);
        // The next apply creates `r*` (one import) and then deletes every `q*`.
        spec.write(&queues_spec(&name, &vhost, "r", count));
        let mut child = Background::spawn(node.apply(spec.arg()).with(SLOW_BROKER).command());
        let first = format!("/api/queues/{}/r0", pct(&vhost));
        let started = Instant::now();
        while node.get_opt(&first).is_none() {
            if child.exited().is_some() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "{version}: the apply did not start creating queues within 300 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child.signal(libc::SIGINT);
        let output = child.finish();
        let stderr = output.stderr;
        if stderr.contains("changed since this plan was made") {
            // The broker was still settling after the previous apply: not this test's
            // subject.
            eprintln!("trial {trial}: {stderr}; again");
            continue;
        }
        if output.code == Some(0) {
            eprintln!("trial {trial}: the apply finished before the signal; again");
            continue;
        }
        assert_eq!(output.code, Some(1), "{stderr}");
        assert!(
            stderr.contains("apply stopped before it finished: interrupted by a signal"),
            "{stderr}"
        );
        // The creates stop between two imports: whole imports made, no delete sent.
        let (made, not_made) = made_and_not(&stderr);
        assert_eq!(made + not_made, 2 * count, "{stderr}");
        assert!(made <= count, "{stderr}");
        // The apply closed its connection; the broker deletes a closed connection's
        // exclusive queues as it notices, later on a loaded node.
        let released = node.wait_until(Duration::from_secs(60), || {
            lock_queues(node).iter().all(|q| !q.ends_with(&vhost))
        });
        assert!(released, "the locks are released: {:?}", lock_queues(node));
        let queues = node.get(&format!("/api/queues/{}?columns=name", pct(&vhost)));
        assert_eq!(
            queues.as_array().unwrap().len(),
            count + made,
            "nothing was half done: {stderr}"
        );
        node.apply(spec.arg()).with(SLOW_BROKER).expect(0);
        node.plan(spec.arg()).with(SLOW_BROKER).expect(0);
        return;
    }
    panic!("{version}: every apply finished before SIGINT reached it");
}

/// `N changes were made, M changes were not` of an unfinished apply's report.
fn made_and_not(stderr: &str) -> (usize, usize) {
    let line = stderr
        .lines()
        .find(|l| l.contains(" made, ") && l.contains(" not; "))
        .unwrap_or_else(|| panic!("no report: {stderr}"));
    let number = |text: &str| {
        text.split_whitespace()
            .next()
            .and_then(|n| n.replace(',', "").parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no count in {line:?}"))
    };
    let (made, not) = line.split_once(" made, ").unwrap();
    (number(made), number(not))
}

// The broker's side of the locks (exclusive queues: refused to a second holder, freed
// when the holder dies or freezes) on 4.0 too; a missing AMQP port and SIGINT are
// warren's own side.
per_version!(
    without_the_amqp_port_apply_changes_nothing,
    sigint_stops_at_a_safe_point_and_releases_the_lock;
    also_on_4_0:
        two_applies_of_one_spec_never_both_apply,
        two_specs_sharing_a_vhost_never_both_claim,
        an_apply_that_waits_plans_what_is_left,
        a_stuck_holder_is_named_and_unlock_cuts_it_off,
        a_killed_apply_frees_its_locks_at_once,
        a_frozen_apply_loses_its_locks_and_never_overwrites_the_record,
);
