//! `warren replay` without a broker: what it refuses before it connects (a queue that is
//! not a parking queue of the spec, a consumer that parks nothing, a bad flag), as text
//! and as the JSON error document, and the exit code when no broker answers. Moving
//! messages is tested against real brokers in `tests/broker/replay.rs`.

use serde_json::Value;

use crate::support::{self, Capture};

/// A URL where nothing listens: any request to it fails at once.
const NOBODY: &str = "http://127.0.0.1:1";

fn replay(args: &[&str]) -> support::Run {
    let mut all = vec![
        "replay",
        "examples/ladder.yaml",
        "--url",
        NOBODY,
        "--timeout",
        "1",
    ];
    all.extend_from_slice(args);
    support::warren(&all).run()
}

#[test]
fn a_queue_that_is_not_a_parking_queue_is_refused_with_the_choices() {
    let run = replay(&["--queue", "notifier.sms.retry-standard.1"]).expect(1);
    assert!(
        run.stderr.contains("is not a parking queue of the spec")
            && run.stderr.contains("did you mean `notifier.sms.parking`")
            && run.stderr.contains(
                "notifications/notifier.sms.parking, notifications/notifier.push.parking"
            ),
        "{}",
        run.stderr
    );
    // As JSON: the error document, with the same message.
    let run = replay(&["--queue", "nope", "--format", "json"]).expect(1);
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["error"]["exit_code"], 1);
    assert!(
        document["error"]["messages"][0]
            .as_str()
            .unwrap()
            .contains("queue `nope` is not a parking queue"),
        "{document:#}"
    );
}

#[test]
fn a_consumer_that_parks_nothing_has_nothing_to_replay() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("plain.yaml");
    std::fs::write(
        &spec,
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          plain:\n            routing_keys: [a]\n          dropping:\n            routing_keys: [b]\n            retry: { delays: [1s], on_exhausted: drop }\n",
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    for (queue, why) in [
        ("s.plain", "it has no retry ladder"),
        ("s.dropping", "`on_exhausted: drop`"),
    ] {
        let run = support::warren(&["replay", spec, "--queue", queue, "--url", NOBODY]).run();
        let run = run.expect(1);
        assert!(
            run.stderr.contains("has no parking queue")
                && run.stderr.contains(why)
                && run.stderr.contains("there is nothing to replay"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_batch_out_of_range_is_a_usage_error() {
    let run = replay(&["--queue", "notifier.sms", "--batch", "0"]).expect(1);
    assert!(run.stderr.contains("--batch"), "{}", run.stderr);
}

#[test]
fn no_broker_exits_3_after_finding_the_consumer() {
    let run = replay(&["--queue", "notifier.sms", "--dry-run"]).expect(3);
    assert!(run.stderr.contains("127.0.0.1:1"), "{}", run.stderr);
}
