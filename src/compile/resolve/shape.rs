//! What a ladder's shape options allow together: the retry exchange's type, the routing
//! keys on it, where the delays live and the return exchange.
//!
//! These options exist so that a spec can describe a loop that was built by hand or by
//! a client library exactly as it runs, and adopt it without replacing a queue. Each
//! check refuses a combination whose messages would go somewhere the ladder does not
//! mean: a parking queue on a fanout exchange would receive every retry.

use super::Report;
use crate::spec::diagnostic::{Diagnostic, Severity};
use crate::spec::{DelaysIn, OnExhausted, RetryExchangeType, RetryMode, RetryNames, ReturnVia};

/// The settings of one ladder that decide its shape.
pub(super) struct Shape<'a> {
    pub mode: RetryMode,
    pub return_via: ReturnVia,
    pub on_exhausted: OnExhausted,
    pub exchange_type: RetryExchangeType,
    pub delays_in: Option<DelaysIn>,
    pub names: Option<&'a RetryNames>,
    /// How many delay queues the ladder makes.
    pub delay_queues: usize,
}

/// Reports every problem with the shape and says whether the ladder compiles.
pub(super) fn check(report: &Report, shape: &Shape, diagnostics: &mut Vec<Diagnostic>) -> bool {
    let before = diagnostics.len();
    let names = shape.names.cloned().unwrap_or_default();
    if shape.exchange_type == RetryExchangeType::Fanout {
        fanout(report, shape, &names, diagnostics);
    }
    if shape.mode == RetryMode::Native {
        if shape.delays_in == Some(DelaysIn::Arguments) {
            diagnostics.push(report.about(
                "delays_in",
                Diagnostic::error(
                    "invalid-value",
                    "`mode: native` has no delay queues: its waits are in the work queue's policy",
                )
                .help("remove `delays_in`"),
            ));
        }
    } else if let Some(keys) = names
        .keys
        .as_ref()
        .filter(|_| shape.exchange_type == RetryExchangeType::Direct)
    {
        keys_fit(report, shape, keys, &names, diagnostics);
    }
    if names.parking_key.is_some() && shape.on_exhausted == OnExhausted::Drop {
        diagnostics.push(
            report.about(
                "names",
                Diagnostic::error(
                    "invalid-value",
                    "`names.parking_key` is set, but `on_exhausted: drop` makes no parking queue",
                )
                .help("remove `names.parking_key`, or use `on_exhausted: park`"),
            ),
        );
    }
    if names.return_exchange.is_some() && shape.return_via != ReturnVia::ReturnExchange {
        diagnostics.push(
            report.about(
                "names",
                Diagnostic::error(
                    "invalid-value",
                    "`names.return_exchange` is set, but the ladder does not return through it",
                )
                .help("add `return_via: return_exchange`, or remove `names.return_exchange`"),
            ),
        );
    }
    diagnostics[before..]
        .iter()
        .all(|d| d.severity != Severity::Error)
}

/// A fanout retry exchange delivers every dead letter to every queue bound to it: one
/// delay queue, no parking queue, and a mode whose consumers never need a second tier.
/// Its one binding may still carry a key (some clients bind with the queue's name),
/// which `names.keys` keeps.
fn fanout(report: &Report, shape: &Shape, names: &RetryNames, diagnostics: &mut Vec<Diagnostic>) {
    if matches!(shape.mode, RetryMode::RejectChain | RetryMode::Native) {
        diagnostics.push(report.about(
            "exchange_type",
            Diagnostic::error(
                "invalid-value",
                "a fanout retry exchange works with `mode: publish` or `mode: reject` only: it cannot tell one retry's delay queue from the next",
            )
            .help("remove `exchange_type`"),
        ));
        return;
    }
    if shape.delay_queues != 1 {
        diagnostics.push(report.about(
            "exchange_type",
            Diagnostic::error(
                "invalid-value",
                format!(
                    "a fanout retry exchange sends every dead letter to every queue bound to it, so it has one delay queue, and this ladder has {}",
                    shape.delay_queues
                ),
            )
            .help("keep one delay, or remove `exchange_type` (a direct retry exchange routes each tier on its own key)"),
        ));
    }
    if shape.on_exhausted == OnExhausted::Park {
        diagnostics.push(report.about(
            "exchange_type",
            Diagnostic::error(
                "invalid-value",
                "a parking queue bound to a fanout retry exchange would receive every retry, not only the exhausted ones",
            )
            .help("set `on_exhausted: drop`, or remove `exchange_type` to route parked messages on their own key"),
        ));
    }
    if names.keys.as_ref().is_some_and(|keys| keys.len() != 1) {
        diagnostics.push(
            report.about(
                "names",
                Diagnostic::error(
                    "invalid-value",
                    "a fanout retry exchange has one delay queue, so `names.keys` holds one key (which the exchange ignores)",
                )
                .help("give the one key its binding has, or remove `names.keys`"),
            ),
        );
    }
}

/// `names.keys`: one distinct key per delay queue, none of them the parking key.
fn keys_fit(
    report: &Report,
    shape: &Shape,
    keys: &[String],
    names: &RetryNames,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if keys.len() != shape.delay_queues {
        diagnostics.push(
            report.about(
                "names",
                Diagnostic::error(
                    "invalid-value",
                    format!(
                        "`names.keys` has {}, but the ladder has {}: one key per delay queue",
                        crate::text::count(keys.len(), "key"),
                        crate::text::count(shape.delay_queues, "delay queue")
                    ),
                )
                .help("give one routing key per delay queue, or remove `names.keys` to use `1`, `2`, …"),
            ),
        );
    }
    let parking_key = names
        .parking_key
        .as_deref()
        .unwrap_or(crate::compile::naming::PARKING_ROUTING_KEY);
    let parks = shape.on_exhausted == OnExhausted::Park;
    for (index, key) in keys.iter().enumerate() {
        let repeated = keys[..index].contains(key);
        let is_parking = parks && key == parking_key;
        if repeated || is_parking {
            let why = if repeated {
                "is given twice: both delay queues would receive each message"
            } else {
                "is the parking queue's key: parked messages would wait and come back"
            };
            diagnostics.push(
                report.about(
                    "names",
                    Diagnostic::error(
                        "invalid-value",
                        format!("routing key `{key}` in `names.keys` {why}"),
                    )
                    .help("give each delay queue and the parking queue a routing key of its own"),
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use crate::compile::{Options, compile};
    use crate::model::{Definitions, Queue};
    use crate::spec::load_str;

    fn compiled(retry: &str, extra: &str) -> Result<Definitions, Vec<String>> {
        let yaml = format!(
            "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: {{ type: fanout }}\n        consumers:\n          c:\n            type: classic\n            retry: {retry}\n{extra}"
        );
        let file = load_str(Path::new("test.yaml"), yaml).map_err(|d| vec![format!("{d:?}")])?;
        compile(&file, &Options::default())
            .map(|c| c.definitions)
            .map_err(|found| found.into_iter().map(|d| d.message).collect())
    }

    fn queue<'a>(defs: &'a Definitions, name: &str) -> &'a Queue {
        defs.queues.iter().find(|q| q.name == name).unwrap()
    }

    fn binding_keys(defs: &Definitions, source: &str) -> Vec<(String, String)> {
        defs.bindings
            .iter()
            .filter(|b| b.source == source)
            .map(|b| (b.destination.clone(), b.routing_key.clone()))
            .collect()
    }

    #[test]
    fn the_classic_loop_compiles_as_it_runs() {
        let defs = compiled(
            "{ mode: reject, delays: [60s], on_exhausted: drop, return_via: inner_exchange, delays_in: arguments, exchange_type: fanout, names: { exchange: dead, tiers: [wait], keys: [wait] } }",
            "",
        )
        .unwrap();
        let work = queue(&defs, "s.c");
        assert_eq!(work.arguments["x-dead-letter-exchange"], json!("dead"));
        assert!(!work.arguments.contains_key("x-dead-letter-routing-key"));
        let dead = defs.exchanges.iter().find(|e| e.name == "dead").unwrap();
        assert_eq!(dead.kind, "fanout");
        let wait = queue(&defs, "wait");
        assert_eq!(wait.arguments["x-message-ttl"], json!(60_000));
        assert_eq!(wait.arguments["x-dead-letter-exchange"], json!("s"));
        assert_eq!(
            binding_keys(&defs, "dead"),
            [("wait".into(), "wait".into())]
        );
        assert!(
            !defs
                .policies
                .iter()
                .any(|p| p.definition.contains_key("message-ttl")),
            "{:?}",
            defs.policies
        );
    }

    #[test]
    fn a_return_exchange_is_bound_to_its_work_queue_alone() {
        let defs = compiled(
            "{ mode: reject, delays: [5s], on_exhausted: drop, return_via: return_exchange }",
            "",
        )
        .unwrap();
        let back = defs
            .exchanges
            .iter()
            .find(|e| e.name == "s.c.return")
            .unwrap();
        assert_eq!(back.kind, "fanout");
        assert_eq!(
            binding_keys(&defs, "s.c.return"),
            [("s.c".into(), String::new())]
        );
        let tier = queue(&defs, "s.c.retry.own.1");
        assert_eq!(
            tier.arguments["x-dead-letter-exchange"],
            json!("s.c.return")
        );
        assert!(!tier.arguments.contains_key("x-dead-letter-routing-key"));
    }

    #[test]
    fn keys_of_its_own_route_the_tiers_the_parking_queue_and_the_chain() {
        let defs = compiled(
            "{ delays: [1s, 2s], names: { keys: [short, long], parking_key: dead } }",
            "",
        )
        .unwrap();
        assert_eq!(
            queue(&defs, "s.c").arguments["x-dead-letter-routing-key"],
            json!("short")
        );
        let mut keys = binding_keys(&defs, "s.c.retry");
        keys.sort();
        assert_eq!(
            keys,
            [
                ("s.c.parking".into(), "dead".into()),
                ("s.c.retry.own.1".into(), "short".into()),
                ("s.c.retry.own.2".into(), "long".into()),
            ]
        );
        let chain = compiled(
            "{ mode: reject-chain, delays: [1s, 2s], names: { keys: [a, b], parking_key: p } }",
            "",
        )
        .unwrap();
        assert_eq!(
            queue(&chain, "s.c.attempt.2").arguments["x-dead-letter-routing-key"],
            json!("b")
        );
        assert_eq!(
            queue(&chain, "s.c.attempt.3").arguments["x-dead-letter-routing-key"],
            json!("p")
        );
    }

    #[test]
    fn shapes_whose_messages_would_go_astray_are_refused() {
        let refused = |retry: &str, words: &str| {
            let found = compiled(retry, "").expect_err(retry);
            assert!(
                found.iter().any(|m| m.contains(words)),
                "{retry}: {found:#?}"
            );
        };
        refused(
            "{ delays: [1s, 2s], on_exhausted: drop, exchange_type: fanout }",
            "so it has one delay queue, and this ladder has 2",
        );
        refused(
            "{ delays: [1s], exchange_type: fanout }",
            "would receive every retry",
        );
        refused(
            "{ mode: reject-chain, delays: [1s], on_exhausted: drop, exchange_type: fanout }",
            "works with `mode: publish` or `mode: reject` only",
        );
        refused(
            "{ delays: [1s, 2s], names: { keys: [a, a] } }",
            "routing key `a` in `names.keys` is given twice",
        );
        refused(
            "{ delays: [1s], names: { keys: [parking] } }",
            "is the parking queue's key",
        );
        refused(
            "{ delays: [1s, 2s], names: { keys: [a] } }",
            "`names.keys` has 1 key, but the ladder has 2 delay queues",
        );
        refused(
            "{ delays: [1s], on_exhausted: drop, names: { parking_key: p } }",
            "`names.parking_key` is set, but `on_exhausted: drop`",
        );
        refused(
            "{ delays: [1s], names: { return_exchange: back } }",
            "the ladder does not return through it",
        );
        refused(
            "{ mode: reject-chain, delays: [1s], return_via: return_exchange }",
            "not through the inner exchange or a return exchange",
        );
    }
}
