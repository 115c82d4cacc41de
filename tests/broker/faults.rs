//! Faults during an apply: the report says what the broker confirmed, what was sent
//! without a confirmation, and what was not done, never "nothing was changed" when
//! something was.

use std::time::{Duration, Instant};

use crate::background::Background;
use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;

fn queues_spec(spec: &str, vhost: &str, count: usize) -> String {
    let mut text = format!("version: 1\nname: {spec}\nvhosts:\n  {vhost}:\n    queues:\n");
    for n in 0..count {
        text.push_str(&format!("      r{n}: {{ type: classic }}\n"));
    }
    text
}

/// Reproduction: the broker is killed (kill -9) while an apply of 1,500 queues runs.
fn a_broker_killed_mid_apply_gets_an_honest_report(version: Version) {
    let node = Node::start(version, NodeOptions::default());
    let vhost = "crash";
    let spec = Spec::new(&queues_spec("crash", vhost, 1500));
    let child = Background::spawn(node.apply(spec.arg()).with(&["--timeout", "10"]).command());
    let first = format!("/api/queues/{}/r0", pct(vhost));
    let started = Instant::now();
    while node.get_opt(&first).is_none() && started.elapsed() < Duration::from_secs(60) {
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

per_version!(a_broker_killed_mid_apply_gets_an_honest_report);
