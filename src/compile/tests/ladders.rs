//! The objects of a ladder: each consumer's own retry exchange, delay queues that
//! return to its work queue only, `reject-chain`'s attempt queues, the parking queue
//! or none, and where a ladder's delays come from.

use serde_json::json;

use super::{consumers, errors, ok, queue};

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
fn reject_chain_gives_every_attempt_its_own_queue_and_parks_after_the_last() {
    let defs = ok(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c:\n            retry: { delays: [1s, 2s], mode: reject-chain }\n",
    );
    assert_eq!(
        queue(&defs, "s.c").arguments["x-dead-letter-routing-key"],
        json!("1")
    );
    assert_eq!(
        queue(&defs, "s.c.retry.own.1").arguments["x-dead-letter-routing-key"],
        json!("s.c.attempt.2")
    );
    assert_eq!(
        queue(&defs, "s.c.attempt.2").arguments["x-dead-letter-routing-key"],
        json!("2")
    );
    assert_eq!(
        queue(&defs, "s.c.retry.own.2").arguments["x-dead-letter-routing-key"],
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
fn delays_written_at_a_level_turn_retries_back_on() {
    let defs = ok(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        defaults: { retry: { enabled: false, delays: [1s] } }\n        consumers:\n          off: {}\n          on: { retry: { delays: [2s] } }\n",
    );
    assert!(
        !defs
            .queues
            .iter()
            .any(|q| q.name.starts_with("s.off.retry"))
    );
    assert!(defs.queues.iter().any(|q| q.name == "s.on.retry.own.1"));
}

#[test]
fn unused_named_ladders_are_checked_too() {
    let found = errors("version: 1\nladders:\n  broken: { delays: [] }\nvhosts: {}\n");
    assert!(found.iter().any(|d| d.message.contains("empty `delays`")));
}
