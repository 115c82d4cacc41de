//! Semantics of the compiler, pinned on small specs.

use std::path::Path;

use serde_json::json;

use super::{Options, compile};
use crate::model::version::TargetVersion;
use crate::model::{Definitions, Queue};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::load_str;

fn compile_yaml(yaml: &str, target: TargetVersion) -> Result<Definitions, Vec<Diagnostic>> {
    let file = load_str(Path::new("test.yaml"), yaml.to_string())?;
    compile(
        &file,
        &Options {
            target,
            secrets: None,
        },
    )
    .map(|c| c.definitions)
}

fn ok(yaml: &str) -> Definitions {
    compile_yaml(yaml, TargetVersion::V4_1).unwrap_or_else(|d| panic!("{d:#?}"))
}

fn errors(yaml: &str) -> Vec<Diagnostic> {
    compile_yaml(yaml, TargetVersion::V4_1).expect_err("should not compile")
}

fn queue<'a>(defs: &'a Definitions, name: &str) -> &'a Queue {
    defs.queues
        .iter()
        .find(|q| q.name == name)
        .unwrap_or_else(|| panic!("no queue {name}"))
}

fn consumers(n: usize, delays: &str) -> String {
    let mut yaml = format!(
        "version: 1\ndefaults:\n  retry:\n    delays: {delays}\nvhosts:\n  v:\n    services:\n      s:\n        exchange: {{ type: fanout }}\n        consumers:\n"
    );
    for i in 0..n {
        yaml.push_str(&format!("          c{i}: {{}}\n"));
    }
    yaml
}

#[test]
fn each_consumer_gets_its_own_dead_exchange_and_tiers_return_to_its_queue_only() {
    let defs = ok(&consumers(2, "[30s, 5m]"));
    for consumer in ["s.c0", "s.c1"] {
        let work = queue(&defs, consumer);
        assert_eq!(
            work.arguments["x-dead-letter-exchange"],
            json!(format!("{consumer}.retry"))
        );
        assert_eq!(work.arguments["x-dead-letter-routing-key"], json!("1"));
        for tier in 1..=2 {
            let delay = queue(&defs, &format!("{consumer}.retry.{tier}"));
            assert_eq!(delay.arguments["x-dead-letter-exchange"], json!(""));
            assert_eq!(
                delay.arguments["x-dead-letter-routing-key"],
                json!(consumer)
            );
            assert!(
                !delay.arguments.contains_key("x-message-ttl"),
                "TTL lives in a policy"
            );
        }
        assert!(
            defs.bindings
                .iter()
                .any(|b| b.source == format!("{consumer}.retry")
                    && b.destination == format!("{consumer}.parking")
                    && b.routing_key == "parking")
        );
    }
    // The inner exchange binds only work queues: a retry never passes it again.
    let from_inner: Vec<&str> = defs
        .bindings
        .iter()
        .filter(|b| b.source == "s")
        .map(|b| b.destination.as_str())
        .collect();
    assert_eq!(from_inner, vec!["s.c0", "s.c1"]);
}

#[test]
fn policies_grow_with_ladders_not_with_queues() {
    let small = ok(&consumers(1, "[30s, 5m, 30m]"));
    let large = ok(&consumers(200, "[30s, 5m, 30m]"));
    assert_eq!(small.policies.len(), large.policies.len());
    assert_eq!(
        large.policies.len(),
        4,
        "3 tiers + the delivery limit of quorum queues"
    );
    assert_eq!(large.queues.len(), 200 * 5);
}

#[test]
fn changing_a_delay_changes_one_policy_and_no_queue() {
    let before = ok(&consumers(3, "[30s, 5m]"));
    let after = ok(&consumers(3, "[45s, 5m]"));
    assert_eq!(before.queues, after.queues);
    assert_eq!(before.exchanges, after.exchanges);
    assert_eq!(before.bindings, after.bindings);
    let changed: Vec<_> = before
        .policies
        .iter()
        .zip(&after.policies)
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].1.definition["message-ttl"], json!(45_000));
}

#[test]
fn reject_chain_gives_every_attempt_its_own_queue_and_parks_after_the_last() {
    let defs = ok(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c:\n            retry: { delays: [1s, 2s], mode: reject-chain }\n",
    );
    assert_eq!(
        queue(&defs, "s.c").arguments["x-dead-letter-routing-key"],
        json!("1")
    );
    assert_eq!(
        queue(&defs, "s.c.retry.1").arguments["x-dead-letter-routing-key"],
        json!("s.c.attempt.2")
    );
    assert_eq!(
        queue(&defs, "s.c.attempt.2").arguments["x-dead-letter-routing-key"],
        json!("2")
    );
    assert_eq!(
        queue(&defs, "s.c.retry.2").arguments["x-dead-letter-routing-key"],
        json!("s.c.attempt.3")
    );
    assert_eq!(
        queue(&defs, "s.c.attempt.3").arguments["x-dead-letter-routing-key"],
        json!("parking")
    );
}

#[test]
fn drop_makes_no_parking_queue_and_must_be_explicit() {
    let parked = ok(&consumers(1, "[1s]"));
    assert!(parked.queues.iter().any(|q| q.name == "s.c0.parking"));
    let dropped = ok(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [1s], on_exhausted: drop } }\n",
    );
    assert!(!dropped.queues.iter().any(|q| q.name.ends_with(".parking")));
}

#[test]
fn user_policies_that_overlap_generated_queues_are_merged() {
    let defs = ok(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [1s] } }\n    policies:\n      cap: { pattern: '^s\\.', priority: 5, definition: { max-length: 10 } }\n",
    );
    let tier = defs
        .policies
        .iter()
        .find(|p| p.name == "warren.retry.consumer.s.c.1+cap")
        .expect("merged policy");
    assert_eq!(tier.definition["message-ttl"], json!(1000));
    assert_eq!(tier.definition["max-length"], json!(10));
    assert!(tier.priority > 5);
}

#[test]
fn conflicting_or_outranking_user_policies_are_errors() {
    let conflict = errors(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [1s] } }\n    policies:\n      ttl: { pattern: 'retry', priority: 5, definition: { message-ttl: 5 } }\n",
    );
    assert!(
        conflict
            .iter()
            .any(|d| d.code == "policy-overlap" && d.message.contains("message-ttl"))
    );
    let outrank = errors(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [1s] } }\n    policies:\n      all: { pattern: '.*', priority: 500, definition: { max-length: 5 } }\n",
    );
    assert!(
        outrank
            .iter()
            .any(|d| d.code == "policy-overlap" && d.message.contains("priority 500"))
    );
}

#[test]
fn target_3_10_gets_no_delivery_limit_and_no_typed_apply_to() {
    let defs = compile_yaml(&consumers(1, "[1s]"), TargetVersion::V3_10).unwrap();
    assert!(defs.policies.iter().all(|p| p.apply_to == "queues"));
    assert!(
        defs.policies
            .iter()
            .all(|p| !p.definition.contains_key("delivery-limit"))
    );
    let typed = "version: 1\nvhosts:\n  v:\n    policies:\n      p: { pattern: x, apply_to: quorum_queues, definition: { max-length: 1 } }\n";
    assert!(compile_yaml(typed, TargetVersion::V3_10).is_err());
    assert!(compile_yaml(typed, TargetVersion::V3_12).is_ok());
}

#[test]
fn the_articles_single_loop_returns_through_the_inner_exchange() {
    let yaml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/single-loop.yaml"
    ))
    .unwrap();
    let defs = ok(&yaml);
    let dlq = queue(&defs, "dead_letter_queue");
    assert_eq!(
        dlq.arguments["x-dead-letter-exchange"],
        json!("service_a_inner_exch")
    );
    assert_eq!(
        queue(&defs, "service_a_input_q").arguments["x-dead-letter-exchange"],
        json!("dead_letter_exchange")
    );
    let ttl = defs
        .policies
        .iter()
        .find(|p| p.pattern == "^dead_letter_queue$")
        .unwrap();
    assert_eq!(ttl.definition["message-ttl"], json!(60_000));
}

#[test]
fn ladders_from_different_places_never_share_a_policy_by_accident() {
    // A service called `vhost` and a vhost-level ladder keep their own delays.
    let defs = ok(
        "version: 1\nvhosts:\n  v:\n    defaults: { retry: { delays: [30s] } }\n    services:\n      vhost:\n        exchange: { type: fanout }\n        defaults: { retry: { delays: [5m] } }\n        consumers: { a: {} }\n      other:\n        exchange: { type: fanout }\n        consumers: { b: {} }\n",
    );
    let ttl = |queue: &str| {
        defs.policies
            .iter()
            .find(|p| {
                fancy_regex::Regex::new(&p.pattern)
                    .unwrap()
                    .is_match(queue)
                    .unwrap()
            })
            .map(|p| p.definition["message-ttl"].clone())
    };
    assert_eq!(ttl("vhost.a.retry.1"), Some(json!(300_000)));
    assert_eq!(ttl("other.b.retry.1"), Some(json!(30_000)));
    // Names that run together with dots and differ are refused, not mixed up.
    let clash = errors(
        "version: 1\nvhosts:\n  v:\n    services:\n      a.b:\n        exchange: { type: fanout }\n        consumers: { c: { queue: q1, retry: { delays: [1s] } } }\n      a:\n        exchange: { type: fanout }\n        consumers: { b.c: { queue: q2, retry: { delays: [2s] } } }\n",
    );
    assert!(
        clash
            .iter()
            .any(|d| d.message.contains("would share the generated policy"))
    );
}

#[test]
fn delays_written_at_a_level_turn_retries_back_on() {
    let defs = ok(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        defaults: { retry: { enabled: false, delays: [1s] } }\n        consumers:\n          off: {}\n          on: { retry: { delays: [2s] } }\n",
    );
    assert!(!defs.queues.iter().any(|q| q.name == "s.off.retry.1"));
    assert!(defs.queues.iter().any(|q| q.name == "s.on.retry.1"));
}

#[test]
fn unused_named_ladders_are_checked_too() {
    let found = errors("version: 1\nladders:\n  broken: { delays: [] }\nvhosts: {}\n");
    assert!(found.iter().any(|d| d.message.contains("empty `delays`")));
}

#[test]
fn the_brokers_identity_cannot_be_declared() {
    let found = compile_yaml(
        "version: 1\nglobal_parameters:\n  internal_cluster_id: rabbitmq-cluster-id-copied\n  team: platform\n",
        TargetVersion::DEFAULT,
    )
    .unwrap_err();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].message.contains("the broker's own identity"),
        "{found:#?}"
    );
}
