//! Routing as the broker does it, checked case by case against what RabbitMQ routes.

use serde_json::json;

use super::*;

fn definitions(value: serde_json::Value) -> Definitions {
    serde_json::from_value(value).unwrap()
}

fn headers(pairs: &[(&str, Value)]) -> Headers {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn arguments(value: Value) -> crate::model::Arguments {
    serde_json::from_value(value).unwrap()
}

fn route<'a>(
    topology: &Routes<'a>,
    exchange: &'a str,
    key: &str,
    headers: &Headers,
) -> Vec<&'a str> {
    let keys = [key.to_string()];
    topology
        .route(
            "v",
            exchange,
            Message {
                routing_keys: Some(&keys),
                headers: Some(headers),
            },
        )
        .queues
}

#[test]
fn topic_regexes_match_the_keys_the_broker_routes() {
    use crate::model::pattern::topic_patterns_regex;
    let patterns = [
        "", "a", "*", "#", "a.b", "a.*", "*.b", "a.#", "#.b", "a.#.b", "#.#", "a.*.#", "#.*",
        "*.#.*", "a.#.#.b", "a.b.c", "a+b.(x)", "#.", ".", "*.*", "a..b",
    ];
    let keys = [
        "", "a", "b", "a.b", "a.c", "x.b", "a.x.b", "a.x.y.b", "a.b.c", "a..b", ".", "a.", ".b",
        "ab", "a.bb", "a+b.(x)", "aab", "a.b.c.d",
    ];
    for pattern in patterns {
        let regex = fancy_regex::Regex::new(&topic_patterns_regex(&[pattern])).unwrap();
        for key in keys {
            assert_eq!(
                regex.is_match(key).unwrap(),
                topic_matches(pattern, key),
                "pattern `{pattern}` ({}) on key `{key}`",
                topic_patterns_regex(&[pattern])
            );
        }
    }
    assert_eq!(
        topic_patterns_regex(&["order.paid", "order.*"]),
        "^(?:order\\.[^.]*|order\\.paid)$"
    );
}

#[test]
fn topic_words_are_split_like_the_broker() {
    assert!(topic_matches("order.#", "order"));
    assert!(topic_matches("order.#", "order.paid.eu"));
    assert!(topic_matches("*.paid", "order.paid"));
    assert!(!topic_matches("*.paid", "order.eu.paid"));
    assert!(topic_matches("#", "anything.at.all"));
    assert!(topic_matches("#", ""));
    assert!(!topic_matches("*", ""), "the empty key has no words");
    assert!(topic_matches("", ""));
    assert!(topic_matches("a.*.b", "a..b"), "an empty word is a word");
    assert!(topic_matches("*.*", "."));
    assert!(topic_matches("a.#.b", "a.b"));
    assert!(!topic_matches("order.paid", "order.refunded"));
}

#[test]
fn headers_match_all_any_and_the_with_x_variants() {
    let target = TargetVersion::V4_1;
    let message = headers(&[("format", json!("pdf")), ("x-tag", json!("a"))]);
    let all = arguments(json!({"x-match": "all", "format": "pdf", "x-tag": "b"}));
    assert!(
        headers_match(&all, &message, target),
        "x- keys are ignored by `all`"
    );
    let all_x = arguments(json!({"x-match": "all-with-x", "format": "pdf", "x-tag": "b"}));
    assert!(!headers_match(&all_x, &message, target));
    let any_x = arguments(json!({"x-match": "any-with-x", "format": "doc", "x-tag": "a"}));
    assert!(headers_match(&any_x, &message, target));
    let any = arguments(json!({"x-match": "any", "x-tag": "a"}));
    assert!(
        !headers_match(&any, &message, target),
        "`any` with nothing to compare"
    );
    assert!(headers_match(
        &arguments(json!({})),
        &Headers::new(),
        target
    ));
    let presence = arguments(json!({"format": null}));
    assert!(headers_match(&presence, &message, target));
    let number = arguments(json!({"n": 1}));
    let float = headers(&[("n", json!(1.0))]);
    assert!(headers_match(&number, &float, TargetVersion::V3_12));
    assert!(!headers_match(&number, &float, TargetVersion::V4_0));
}

#[test]
fn alternate_exchanges_take_only_what_matched_no_binding() {
    let d = definitions(json!({
        "exchanges": [
            {"name": "x", "vhost": "v", "type": "direct", "arguments": {"alternate-exchange": "ae"}},
            {"name": "ae", "vhost": "v", "type": "fanout"},
            {"name": "empty", "vhost": "v", "type": "fanout"},
        ],
        "queues": [{"name": "q", "vhost": "v"}, {"name": "unrouted", "vhost": "v"}],
        "bindings": [
            {"source": "x", "vhost": "v", "destination": "q", "destination_type": "queue", "routing_key": "a"},
            {"source": "x", "vhost": "v", "destination": "empty", "destination_type": "exchange", "routing_key": "b"},
            {"source": "ae", "vhost": "v", "destination": "unrouted", "destination_type": "queue", "routing_key": ""},
        ],
    }));
    let t = Routes::new(&d, TargetVersion::V4_1);
    let none = Headers::new();
    assert_eq!(route(&t, "x", "a", &none), ["q"]);
    assert_eq!(route(&t, "x", "c", &none), ["unrouted"]);
    // A binding to an exchange that routes nowhere is still a match.
    assert!(route(&t, "x", "b", &none).is_empty());
}

#[test]
fn exchange_to_exchange_paths_give_one_copy_and_end_in_cycles() {
    let d = definitions(json!({
        "exchanges": [
            {"name": "a", "vhost": "v", "type": "fanout"},
            {"name": "b", "vhost": "v", "type": "fanout"},
            {"name": "c", "vhost": "v", "type": "topic", "internal": true},
        ],
        "queues": [{"name": "q", "vhost": "v"}],
        "bindings": [
            {"source": "a", "vhost": "v", "destination": "b", "destination_type": "exchange"},
            {"source": "a", "vhost": "v", "destination": "c", "destination_type": "exchange"},
            {"source": "b", "vhost": "v", "destination": "a", "destination_type": "exchange"},
            {"source": "b", "vhost": "v", "destination": "q", "destination_type": "queue"},
            {"source": "c", "vhost": "v", "destination": "q", "destination_type": "queue", "routing_key": "#"},
            {"source": "a", "vhost": "v", "destination": "gone", "destination_type": "exchange"},
        ],
    }));
    let t = Routes::new(&d, TargetVersion::V4_1);
    assert_eq!(route(&t, "a", "k", &Headers::new()), ["q"]);
    assert_eq!(t.check_publish("v", "c"), Err(PublishError::Internal));
    assert_eq!(t.check_publish("v", "nope"), Err(PublishError::Missing));
    assert_eq!(t.check_publish("v", ""), Ok(()));
    assert_eq!(route(&t, "", "q", &Headers::new()), ["q"]);
    assert!(route(&t, "", "missing", &Headers::new()).is_empty());
}
