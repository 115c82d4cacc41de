//! Loops built outside warren, imported as consumers or named with the part that does
//! not fit.

use serde_json::json;

use crate::import::{Notes, import};
use crate::model::Definitions;

/// A loop whose work queue `w` dead-letters to `x` (a `kind` exchange, with `key`)
/// and whose delay queue `d` returns to `w`, plus `extra` queues on `x`.
fn definitions(
    kind: &str,
    key: Option<&str>,
    delay: serde_json::Value,
    extra: &[serde_json::Value],
) -> Definitions {
    let mut work_arguments = json!({"x-dead-letter-exchange": "x"});
    if let Some(key) = key {
        work_arguments["x-dead-letter-routing-key"] = json!(key);
    }
    let mut queues = vec![
        json!({"name": "w", "vhost": "v", "durable": true, "auto_delete": false, "arguments": work_arguments}),
        json!({"name": "d", "vhost": "v", "durable": true, "auto_delete": false, "arguments": delay}),
    ];
    let mut bindings = vec![
        json!({"source": "in", "vhost": "v", "destination": "w", "destination_type": "queue", "routing_key": "", "arguments": {}}),
        json!({"source": "x", "vhost": "v", "destination": "d", "destination_type": "queue", "routing_key": "k", "arguments": {}}),
    ];
    for (n, queue) in extra.iter().enumerate() {
        let name = format!("e{n}");
        let mut queue = queue.clone();
        queue["name"] = json!(name);
        queue["vhost"] = json!("v");
        queue["durable"] = json!(true);
        queue["auto_delete"] = json!(false);
        queues.push(queue);
        bindings.push(json!({"source": "x", "vhost": "v", "destination": name, "destination_type": "queue", "routing_key": format!("e{n}"), "arguments": {}}));
    }
    serde_json::from_value(json!({
        "vhosts": [{"name": "v"}],
        "exchanges": [
            {"name": "in", "vhost": "v", "type": "fanout", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
            {"name": "x", "vhost": "v", "type": kind, "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
        ],
        "queues": queues,
        "bindings": bindings,
        "policies": [{"name": "ops-ttl", "vhost": "v", "pattern": "^p$", "apply-to": "queues", "definition": {"message-ttl": 5000}, "priority": 1}],
    }))
    .unwrap()
}

fn notes(definitions: &Definitions) -> (usize, Vec<String>) {
    let mut notes = Notes::default();
    let spec = import(definitions, "t", &[], &mut notes);
    let consumers = spec
        .vhosts
        .values()
        .flat_map(|v| v.services.values())
        .map(|s| s.consumers.len())
        .sum();
    (consumers, notes.0)
}

fn back_to_w(ttl: bool) -> serde_json::Value {
    let mut arguments = json!({"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "w"});
    if ttl {
        arguments["x-message-ttl"] = json!(1000);
    }
    arguments
}

#[test]
fn a_loop_built_by_hand_becomes_a_consumer() {
    let (consumers, notes) = notes(&definitions(
        "direct",
        Some("k"),
        back_to_w(true),
        &[json!({"arguments": {}})],
    ));
    assert_eq!(consumers, 1, "{notes:#?}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("the retry loop of queue `w` is consumer")),
        "{notes:#?}"
    );
}

#[test]
fn a_loop_that_does_not_fit_is_named_with_the_part_that_does_not() {
    let cases = [
        (
            definitions("direct", None, back_to_w(true), &[]),
            "without a routing key, so each message keeps its own key there",
        ),
        (
            definitions("direct", Some("other"), back_to_w(true), &[]),
            "it dead-letters with key `other`, and no delay queue is bound to `x` with that key",
        ),
        (
            definitions("topic", Some("k"), back_to_w(true), &[]),
            "is a topic exchange",
        ),
        (
            definitions(
                "direct",
                Some("k"),
                back_to_w(true),
                &[json!({"arguments": {}}), json!({"arguments": {}})],
            ),
            "a ladder has one parking queue",
        ),
        (
            definitions(
                "direct",
                Some("k"),
                back_to_w(true),
                &[json!({ "arguments": back_to_w(false) })],
            ),
            "`e0` on `x` dead-letters onward but has no TTL of its own",
        ),
        (
            definitions("fanout", None, back_to_w(true), &[json!({"arguments": {}})]),
            "receives every retry, not only the exhausted ones",
        ),
        (
            definitions(
                "direct",
                Some("k"),
                back_to_w(true),
                &[json!({"arguments": {"x-max-length": 10}})],
            ),
            "the parking queue `e0` has argument `x-max-length`",
        ),
    ];
    for (definitions, words) in cases {
        let (consumers, notes) = notes(&definitions);
        assert_eq!(consumers, 0, "{words}: {notes:#?}");
        assert!(
            notes.iter().any(|n| n.starts_with("vhost `v`: queue `w` starts a retry loop that is imported as plain queues and exchanges, because") && n.contains(words)),
            "{words}: {notes:#?}"
        );
    }
}

#[test]
fn a_retry_exchange_shared_by_two_loops_is_named() {
    let mut found = definitions("direct", Some("k"), back_to_w(true), &[]);
    let other: Definitions = serde_json::from_value(json!({
        "queues": [
            {"name": "w2", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-dead-letter-exchange": "x", "x-dead-letter-routing-key": "k2"}},
            {"name": "d2", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {"x-message-ttl": 1000, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "w2"}},
        ],
        "bindings": [
            {"source": "in", "vhost": "v", "destination": "w2", "destination_type": "queue", "routing_key": "", "arguments": {}},
            {"source": "x", "vhost": "v", "destination": "d2", "destination_type": "queue", "routing_key": "k2", "arguments": {}},
        ],
    }))
    .unwrap();
    found.queues.extend(other.queues);
    found.bindings.extend(other.bindings);
    let (consumers, notes) = notes(&found);
    assert_eq!(consumers, 0, "{notes:#?}");
    assert!(
        notes.iter().any(|n| n.contains(
            "queue `w` starts a retry loop that is imported as plain queues and exchanges, because its retry exchange `x` is shared with queue `w2`"
        )),
        "{notes:#?}"
    );
}

#[test]
fn a_delay_from_a_policy_that_is_not_warren_s_is_named() {
    let mut found = definitions("direct", Some("k"), back_to_w(false), &[]);
    found.policies[0].pattern = "^d$".into();
    let (_, notes) = notes(&found);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("policy `ops-ttl` gives it one")),
        "{notes:#?}"
    );
}

#[test]
fn dead_lettering_set_by_a_policy_is_named() {
    // The work queue's: the loop is found, and named with the policy.
    let mut found = definitions("direct", Some("k"), back_to_w(true), &[]);
    found.queues[0].arguments = crate::model::Arguments::new();
    found.policies[0].pattern = "^w$".into();
    found.policies[0].definition = serde_json::from_value(
        json!({"dead-letter-exchange": "x", "dead-letter-routing-key": "k"}),
    )
    .unwrap();
    let (consumers, said) = notes(&found);
    assert_eq!(consumers, 0, "{said:#?}");
    assert!(
        said.iter().any(|n| n.contains(
            "queue `w` starts a retry loop that is imported as plain queues and exchanges, because its dead-lettering comes from policy `ops-ttl` (`dead-letter-exchange: x`)"
        )),
        "{said:#?}"
    );
    // A delay queue's.
    let mut found = definitions("direct", Some("k"), json!({"x-message-ttl": 1000}), &[]);
    found.policies[0].pattern = "^d$".into();
    found.policies[0].definition =
        serde_json::from_value(json!({"dead-letter-exchange": "", "dead-letter-routing-key": "w"}))
            .unwrap();
    let (consumers, notes) = notes(&found);
    assert_eq!(consumers, 0, "{notes:#?}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("`d` on `x` dead-letters by policy `ops-ttl`")),
        "{notes:#?}"
    );
}

#[test]
fn a_dead_letter_queue_that_does_not_wait_is_no_loop() {
    // Dead letters that stay, and dead letters passed on at once (to an alerting
    // exchange, say): neither waits, so neither is a loop, and neither is noted.
    for dead_letter_queue in [json!({}), back_to_w(false)] {
        let (consumers, notes) = notes(&definitions("direct", Some("k"), dead_letter_queue, &[]));
        assert_eq!(consumers, 0);
        assert!(
            !notes.iter().any(|n| n.contains("starts a retry loop")),
            "{notes:#?}"
        );
    }
}
