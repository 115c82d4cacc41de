//! `warren status` without a broker: what it refuses before it reads anything (an
//! unknown `--vhost` or `--service`, a spec that does not load), and the exit code when
//! no broker answers. What it reports is checked against real brokers in
//! `tests/broker/status.rs`, and its renderers by the snapshots of `render::status`.

use crate::support::{self, Capture};

/// A URL where nothing listens: any request to it fails at once.
const NOBODY: &str = "http://127.0.0.1:1";

fn status(args: &[&str]) -> support::Run {
    let mut all = vec![
        "status",
        "examples/shop.yaml",
        "--url",
        NOBODY,
        "--timeout",
        "1",
    ];
    all.extend_from_slice(args);
    support::warren(&all).run()
}

/// An unknown vhost or service is a mistake in the flags: exit 1 with the choices,
/// before any request (the URL answers nothing, so a request would exit 3).
#[test]
fn unknown_vhost_or_service_lists_the_choices() {
    let run = status(&["--service", "order"]).expect(1);
    assert!(
        run.stderr.contains("no service `order`")
            && run.stderr.contains("did you mean `orders`")
            && run.stderr.contains("`email`, `orders`, `payments`"),
        "{}",
        run.stderr
    );
    let run = status(&["--vhost", "nope"]).expect(1);
    assert!(
        run.stderr.contains("no vhost `nope`") && run.stderr.contains("`shop`"),
        "{}",
        run.stderr
    );
    // A service of another vhost than the one chosen is not a choice.
    let run = status(&["--vhost", "shop", "--service", "nope"]).expect(1);
    assert!(run.stderr.contains("no service `nope`"), "{}", run.stderr);
    // With --format json the error is a JSON document.
    let run = status(&["--service", "order", "--format", "json"]).expect(1);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["error"]["exit_code"], 1);
    assert!(
        document["error"]["messages"][0]
            .as_str()
            .unwrap()
            .contains("no service `order`")
    );
}

#[test]
fn a_broker_that_does_not_answer_exits_3_and_a_bad_spec_1() {
    let run = status(&[]).expect(3);
    assert!(
        run.stderr.contains("cannot reach RabbitMQ"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let run = support::warren(&[
        "status",
        "tests/bad_specs/unknown-key-delay.yaml",
        "--url",
        NOBODY,
    ])
    .run()
    .expect(1);
    assert!(run.stderr.contains("unknown key `delay`"), "{}", run.stderr);
}
