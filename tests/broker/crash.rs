//! Crash consistency: the broker (kill -9, then restarted on its data) or warren
//! (kill -9) dies at a random point of an apply; afterwards `apply` converges to a plan
//! with no changes, nothing warren made is left unmanaged, and the messages of a queue
//! the apply does not touch are all there.
//!
//! CI runs `WARREN_CRASH_TRIALS` trials of each kind (default 2) per broker version;
//! `scripts/reliability` runs 20 and prints the figures docs/reliability.md records.

use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::json;

use crate::background::Background;
use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;
use crate::support::{Capture, Run};

const VHOST: &str = "crash";
/// Consumers per generation (5 queues each): `WARREN_CRASH_CONSUMERS`, default 40.
/// Classic queues: a quorum queue's recovery after kill -9 is the broker's business,
/// and slow on a small machine.
fn consumers() -> usize {
    std::env::var("WARREN_CRASH_CONSUMERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}
const KEPT_MESSAGES: u64 = 10;

/// Generation `n` of the spec: a window of consumers on a 3-tier ladder (each apply
/// creates some consumers' queues and deletes others'), and a queue `keep` that no
/// apply changes.
fn spec_text(generation: usize) -> String {
    let mut text = format!(
        "version: 1\nname: crash\nladders:\n  standard:\n    delays: [30s, 5m, 30m]\nvhosts:\n  {VHOST}:\n    defaults:\n      queue_type: classic\n      retry: {{ ladder: standard }}\n    queues:\n      keep: {{ type: quorum }}\n    services:\n      svc:\n        exchange: {{ name: events, type: topic }}\n        consumers:\n"
    );
    let consumers = consumers();
    let first = (generation % 3) * consumers / 2;
    for n in first..first + consumers {
        text.push_str(&format!(
            "          c{n}: {{ routing_keys: [\"e.c{n}\"] }}\n"
        ));
    }
    text
}

fn trials() -> usize {
    std::env::var("WARREN_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

/// Applies until it succeeds, as an operator would: breaking a lock the killed apply
/// left behind (the holder named in the refusal), and running again when the broker
/// changed between plan and apply (a restarted broker recovers its queues for a while
/// after its API answers, so the first plans can see fewer queues than there are).
///
/// Bounded by time, not by a count of tries: a restarted broker on a loaded machine
/// recovers its queues for longer, and each try that finds the broker still moving
/// fails fast. The bound is for an apply that never converges.
#[track_caller]
fn converge(node: &Node, spec: &Spec) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        let run: Run = node.apply(spec.arg()).run();
        if run.code == Some(0) {
            return;
        }
        if run.stderr.contains("changed since this plan was made")
            || run.stderr.contains("timed out")
        {
            std::thread::sleep(Duration::from_secs(2));
            continue;
        }
        let Some(holder) = run
            .stderr
            .split("warren unlock SPEC --holder ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .map(|h| h.trim_end_matches(['`', '.', ',', ';']).to_string())
        else {
            panic!(
                "{}: apply after a crash failed: {}",
                node.version, run.stderr
            );
        };
        node.warren(&["unlock", spec.arg(), "--holder", &holder])
            .run()
            .expect(0);
    }
    panic!("{}: apply did not converge", node.version);
}

/// The number of changes a plan of the spec shows now.
#[track_caller]
fn pending(node: &Node, spec: &Spec) -> u64 {
    let run = node.plan_json(spec.arg()).run();
    let plan: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    ["create", "update", "replace", "delete"]
        .iter()
        .map(|k| plan["summary"][k].as_u64().unwrap_or(0))
        .sum()
}

#[track_caller]
fn assert_converged(node: &Node, spec: &Spec, trial: &str) {
    let plan = node.plan(spec.arg()).run();
    assert_eq!(
        plan.code,
        Some(0),
        "{trial}: a plan after converging: {}",
        plan.stdout
    );
    assert!(
        !plan.stdout.contains("Not managed by any spec"),
        "{trial}: objects were left unmanaged: {}",
        plan.stdout
    );
    let path = format!("/api/queues/{}/keep", pct(VHOST));
    let mut last = serde_json::Value::Null;
    // The statistics of a quorum queue on a restarted broker show once its Raft member
    // has recovered and emitted them: seconds, more on a loaded machine.
    let kept = node.wait_until(Duration::from_secs(120), || {
        last = node.get_opt(&path).unwrap_or_default();
        last["messages"].as_u64() == Some(KEPT_MESSAGES)
    });
    assert!(
        kept,
        "{trial}: `keep` should hold {KEPT_MESSAGES} messages: {last}"
    );
}

fn crashes_at_random_points_converge(version: Version) {
    let node = Node::start(version, NodeOptions::default());
    let spec = Spec::new(&spec_text(0));
    node.apply(spec.arg()).expect(0);
    for n in 0..KEPT_MESSAGES {
        let answer = node.post(
            &format!("/api/exchanges/{}/amq.default/publish", pct(VHOST)),
            &json!({"properties": {"delivery_mode": 2}, "routing_key": "keep",
                    "payload": format!("kept-{n}"), "payload_encoding": "string"}),
        );
        assert_eq!(answer["routed"], true);
    }
    // How long one apply takes here: the window the faults are drawn from.
    spec.write(&spec_text(1));
    let started = Instant::now();
    node.apply(spec.arg()).expect(0);
    let window = started.elapsed();
    let mut rng = rand::rng();
    let mut generation = 1;
    let mut figures = (0, 0, 0); // trials, faults that hit a running apply, wrong reports
    for kind in ["broker", "warren"] {
        for trial in 0..trials() {
            generation += 1;
            spec.write(&spec_text(generation));
            let label = format!("{version} {kind} kill, trial {trial}");
            let before = pending(&node, &spec);
            let delay = window.mul_f64(rng.random_range(0.0..1.0));
            let mut child =
                Background::spawn(node.apply(spec.arg()).with(&["--timeout", "10"]).command());
            std::thread::sleep(delay);
            let running = child.exited().is_none();
            match kind {
                "broker" => node.kill(),
                _ => child.kill(),
            }
            let output = child.finish();
            let stderr = output.stderr;
            figures.0 += 1;
            if running {
                figures.1 += 1;
            }
            if kind == "broker" {
                node.restart();
            }
            // What the broker shows now against what warren said it did.
            let after = pending(&node, &spec);
            let said_nothing = stderr.contains("nothing was changed");
            let said_all = output.code == Some(0);
            if (said_nothing && after < before) || (said_all && after > 0) {
                eprintln!(
                    "{label}: wrong report ({before} changes pending before, {after} after): {stderr}"
                );
                figures.2 += 1;
            }
            converge(&node, &spec);
            assert_converged(&node, &spec, &label);
        }
    }
    eprintln!(
        "crash trials on {version}: {} consumers, {} trials, {} faults during a running apply, {} wrong reports, 0 messages lost",
        consumers(),
        figures.0,
        figures.1,
        figures.2
    );
    assert_eq!(figures.2, 0, "wrong reports");
}

per_version!(crashes_at_random_points_converge);
