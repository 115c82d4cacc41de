//! `warren trace`: the path of one message through each example, pinned as text and
//! JSON, and the errors a user meets (one line, exit 1, naming the choices).

use crate::snapshot_settings;
use crate::support::{Capture, Run, warren};

/// One trace per example: (snapshot name, spec, arguments).
const TRACES: &[(&str, &str, &[&str])] = &[
    (
        "shop-order-paid",
        "shop",
        &[
            "--exchange",
            "events",
            "--routing-key",
            "order.paid",
            "--fail",
            "4",
        ],
    ),
    (
        "shop-unrouted",
        "shop",
        &["--exchange", "events", "--routing-key", "stock.low"],
    ),
    (
        "shop-send-slow-ladder",
        "shop",
        &[
            "--exchange",
            "email",
            "--routing-key",
            "send",
            "--fail",
            "9",
        ],
    ),
    (
        "ladder-publish-mode",
        "ladder",
        &[
            "--exchange",
            "notifications",
            "--routing-key",
            "notify.sms.urgent",
            "--fail",
            "4",
        ],
    ),
    (
        "ladder-reject-chain",
        "ladder",
        &[
            "--exchange",
            "notifications",
            "--routing-key",
            "notify.push.eu",
            "--fail",
            "4",
        ],
    ),
    (
        "multi-consumer",
        "multi-consumer",
        &["--exchange", "service_a_inner_exch", "--fail", "3"],
    ),
    (
        "single-loop",
        "single-loop",
        &[
            "--exchange",
            "service_a_inner_exch",
            "--routing-key",
            "any",
            "--fail",
            "3",
        ],
    ),
    (
        "single-loop-succeeds",
        "single-loop",
        &["--exchange", "service_a_inner_exch", "--fail", "1"],
    ),
];

fn trace(spec: &str, args: &[&str], format: &str) -> Run {
    let path = format!("examples/{spec}.yaml");
    let mut all = vec!["trace", path.as_str(), "--format", format];
    all.extend_from_slice(args);
    warren(&all).run()
}

#[test]
fn traces_of_the_examples_are_pinned_as_text_and_json() {
    for (name, spec, args) in TRACES {
        let text = trace(spec, args, "text").expect(0);
        let json = trace(spec, args, "json").expect(0);
        let document: serde_json::Value =
            serde_json::from_str(&json.stdout).expect("--format json prints one JSON document");
        let mut settings = snapshot_settings("snapshots");
        settings.set_snapshot_suffix(name.to_string());
        settings.bind(|| {
            insta::assert_snapshot!("trace__text", text.stdout);
            insta::assert_json_snapshot!("trace__json", document);
        });
    }
}

#[test]
fn the_parked_and_the_dropped_ends_follow_the_contract() {
    let json = trace(
        "single-loop",
        &["--exchange", "service_a_inner_exch", "--fail", "5"],
        "json",
    )
    .expect(0);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let copy = &document["copies"][0];
    // max_retries 2: three deliveries, then the consumer drops it (`on_exhausted: drop`).
    let deliveries = copy["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "delivered")
        .count();
    assert_eq!(deliveries, 3);
    assert_eq!(copy["outcome"]["outcome"], "dropped");
    let json = trace(
        "ladder",
        &[
            "--exchange",
            "notifications",
            "--routing-key",
            "notify.push.x",
            "--fail",
            "9",
        ],
        "json",
    )
    .expect(0);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let copy = &document["copies"][0];
    assert_eq!(copy["outcome"]["queue"], "notifier.push.parking");
    let tiers: Vec<&serde_json::Value> = copy["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "waits")
        .map(|e| &e["tier"])
        .collect();
    assert_eq!(tiers, [1, 2, 3]);
}

#[test]
fn errors_are_one_line_that_names_the_choices() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["examples/shop.yaml", "--exchange", "evnets"],
            "vhost `shop` has no exchange `evnets` (did you mean `events`?); its exchanges: `email`",
        ),
        (
            &[
                "examples/shop.yaml",
                "--exchange",
                "events",
                "--vhost",
                "nope",
            ],
            "the spec has no vhost `nope`; its vhosts: `shop`",
        ),
        (
            &[
                "examples/shop.yaml",
                "--exchange",
                "events",
                "--headers",
                "format",
            ],
            "--headers `format` is not `name=value`",
        ),
    ];
    for (args, message) in cases {
        let mut all = vec!["trace"];
        all.extend_from_slice(args);
        let run = warren(&all).run().expect(1);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.contains(message), "{}", run.stderr);
    }
}

#[test]
fn several_vhosts_need_a_choice_and_internal_exchanges_refuse_a_publish() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("two.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: two\nvhosts:\n  a:\n    exchanges:\n      hidden: { type: fanout, internal: true }\n  b: {}\n",
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    let run = warren(&["trace", spec, "--exchange", "hidden"])
        .run()
        .expect(1);
    assert!(
        run.stderr
            .contains("the spec has several vhosts (`a`, `b`): choose one with --vhost"),
        "{}",
        run.stderr
    );
    let run = warren(&["trace", spec, "--exchange", "hidden", "--vhost", "a"])
        .run()
        .expect(1);
    assert!(
        run.stderr
            .contains("exchange `hidden` in vhost `a` is internal"),
        "{}",
        run.stderr
    );
    let run = warren(&[
        "trace",
        spec,
        "--exchange",
        "",
        "--routing-key",
        "q",
        "--vhost",
        "b",
    ])
    .run()
    .expect(0);
    assert!(
        run.stdout.contains("no queue gets the message"),
        "{}",
        run.stdout
    );
}
