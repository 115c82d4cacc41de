//! How the broker routes a message, and what dead-lettering does to it: the one
//! implementation that `trace` (a message with a known key and headers) and the lint's
//! dead-letter graph (a dead letter whose key or headers may be unknown) both use.
//!
//! It follows RabbitMQ's own code (`rabbit_exchange:route/2`, the exchange type
//! modules, `rabbit_dead_letter`):
//!
//! - The default exchange (`""`) delivers to the queue named by the routing key.
//! - direct: binding key = routing key; fanout: every binding; topic: `*` one word,
//!   `#` zero or more, words split on `.` (empty words count; an empty key has none).
//! - headers: `x-match` `all` (the default, also for a binding with no arguments) or
//!   `any`; binding arguments starting with `x-` are ignored unless `x-match` is
//!   `all-with-x` or `any-with-x` (`x-match` itself always is). A binding argument
//!   without a value (`null`) asks only that the header be present. Values compare as
//!   Erlang's `==` up to 3.12 (numbers by value: `1` equals `1.0`) and `=:=` from 3.13
//!   (the message-container rewrite). `any` with nothing to compare matches nothing.
//! - Exchange-to-exchange bindings are followed, each exchange at most once; every
//!   queue reached gets one copy however many paths lead to it.
//! - An exchange's alternate exchange (its `alternate-exchange` argument, else its
//!   policy's) is consulted when the exchange's own bindings matched nothing, queues
//!   or exchanges alike: an exchange binding that leads nowhere still counts as a match.
//! - A binding to a missing exchange, or a missing alternate exchange, is skipped.
//!
//! A message's routing keys or headers may be unknown (the lint asks where a dead letter
//! without a dead-letter routing key can go): a binding that depends on them *may*
//! match and is followed, and the alternate exchange is then consulted only when no
//! binding matches or may match.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use serde_json::Value;

use super::effective::CompiledPolicies;
use super::{Binding, Definitions, PREDEFINED_EXCHANGES, TargetVersion};

/// Message headers, by name.
pub type Headers = BTreeMap<String, Value>;

/// What is known about a message, for routing.
#[derive(Debug, Clone, Copy)]
pub struct Message<'m> {
    /// Its routing keys (`None`: unknown).
    pub routing_keys: Option<&'m [String]>,
    /// Its headers (`None`: unknown).
    pub headers: Option<&'m Headers>,
}

/// An exchange as routing sees it.
#[derive(Debug, Clone, Copy)]
pub struct ExchangeInfo<'a> {
    /// Its type (`direct`, `fanout`, `topic`, `headers`, or a plugin's).
    pub kind: &'a str,
    /// Clients cannot publish to an internal exchange.
    pub internal: bool,
    /// The alternate exchange in force (argument, else policy).
    pub alternate: Option<&'a str>,
}

/// One step of a route, for explaining it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Hop<'a> {
    /// A binding that matched (or, with unknown keys or headers, may match).
    Binding {
        /// The exchange.
        source: &'a str,
        /// The queue or exchange it leads to.
        destination: &'a str,
        /// Whether that is an exchange.
        to_exchange: bool,
        /// Its binding key.
        key: &'a str,
        /// False when the match depends on an unknown key or header.
        certain: bool,
    },
    /// The exchange matched nothing: its alternate exchange takes the message.
    Alternate {
        /// The exchange.
        from: &'a str,
        /// Its alternate exchange.
        to: &'a str,
    },
    /// The default exchange delivers to the queue named by the key.
    Default {
        /// The queue.
        queue: &'a str,
    },
}

/// Where a message published to an exchange ends up.
#[derive(Debug, Clone, Default)]
pub struct Route<'a> {
    /// Queues reached (each once), by name, sorted.
    pub queues: Vec<&'a str>,
    /// How they were reached, in the order the broker's walk takes.
    pub hops: Vec<Hop<'a>>,
    /// The first exchange on the way (the starting one included) that does not exist.
    pub missing_exchange: Option<&'a str>,
    /// Exchanges of a type this module does not know (a plugin's): routed as if every
    /// binding may match.
    pub unknown_types: Vec<&'a str>,
}

/// Why publishing cannot start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishError {
    /// The exchange does not exist (the broker closes the channel: 404).
    Missing,
    /// The exchange is internal (the broker refuses: 403).
    Internal,
}

/// The exchange types routed here; any other (a plugin's) is routed as "may match".
const KNOWN_TYPES: [&str; 4] = ["direct", "fanout", "topic", "headers"];

/// Match of one binding: yes, no, or "depends on what is unknown".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    Yes,
    No,
    Maybe,
}

impl Match {
    fn of(value: bool) -> Match {
        if value { Match::Yes } else { Match::No }
    }
}

/// Exchanges, bindings and queues of a broker, indexed for routing.
pub struct Topology<'a> {
    exchanges: FxHashMap<(&'a str, &'a str), ExchangeInfo<'a>>,
    bindings: FxHashMap<(&'a str, &'a str), Vec<&'a Binding>>,
    queues: FxHashMap<&'a str, FxHashSet<&'a str>>,
    target: TargetVersion,
}

/// The type of a predefined exchange (`amq.…`), which every vhost has.
fn predefined(name: &str) -> Option<ExchangeInfo<'static>> {
    let kind = match name {
        "amq.direct" => "direct",
        "amq.fanout" => "fanout",
        "amq.topic" | "amq.rabbitmq.trace" => "topic",
        "amq.headers" | "amq.match" => "headers",
        _ => return None,
    };
    debug_assert!(PREDEFINED_EXCHANGES.contains(&name));
    Some(ExchangeInfo {
        kind,
        internal: name == "amq.rabbitmq.trace",
        alternate: None,
    })
}

impl<'a> Topology<'a> {
    /// Indexes the definitions; `target` decides how header values compare.
    pub fn new(definitions: &'a Definitions, target: TargetVersion) -> Topology<'a> {
        let policies = CompiledPolicies::new(&definitions.policies);
        let mut exchanges = FxHashMap::default();
        for exchange in &definitions.exchanges {
            let alternate = exchange
                .arguments
                .get("alternate-exchange")
                .and_then(Value::as_str)
                .or_else(|| {
                    policies
                        .choose_for_exchange(&exchange.vhost, &exchange.name)
                        .and_then(|p| p.definition.get("alternate-exchange"))
                        .and_then(Value::as_str)
                });
            exchanges.insert(
                (exchange.vhost.as_str(), exchange.name.as_str()),
                ExchangeInfo {
                    kind: exchange.kind.as_str(),
                    internal: exchange.internal,
                    alternate,
                },
            );
        }
        let mut bindings: FxHashMap<_, Vec<&Binding>> = FxHashMap::default();
        for binding in &definitions.bindings {
            bindings
                .entry((binding.vhost.as_str(), binding.source.as_str()))
                .or_default()
                .push(binding);
        }
        let mut queues: FxHashMap<&str, FxHashSet<&str>> = FxHashMap::default();
        for queue in &definitions.queues {
            queues
                .entry(queue.vhost.as_str())
                .or_default()
                .insert(queue.name.as_str());
        }
        Topology {
            exchanges,
            bindings,
            queues,
            target,
        }
    }

    /// The exchange `name` of `vhost` (predefined ones included); `None` if missing.
    pub fn exchange(&self, vhost: &str, name: &str) -> Option<ExchangeInfo<'a>> {
        self.exchanges
            .get(&(vhost, name))
            .copied()
            .or_else(|| predefined(name))
    }

    /// Whether queue `name` exists in `vhost`.
    pub fn has_queue(&self, vhost: &str, name: &str) -> bool {
        self.queue(vhost, name).is_some()
    }

    /// Queue `name` of `vhost`, as the definitions spell it.
    fn queue(&self, vhost: &str, name: &str) -> Option<&'a str> {
        self.queues.get(vhost)?.get(name).copied()
    }

    /// Whether a client may publish to `exchange` (`""` is the default exchange).
    pub fn check_publish(&self, vhost: &str, exchange: &str) -> Result<(), PublishError> {
        if exchange.is_empty() {
            return Ok(());
        }
        match self.exchange(vhost, exchange) {
            None => Err(PublishError::Missing),
            Some(info) if info.internal => Err(PublishError::Internal),
            Some(_) => Ok(()),
        }
    }

    /// Routes `message` through `exchange` of `vhost`, as the broker does for a publish
    /// or a dead letter.
    pub fn route(&self, vhost: &'a str, exchange: &'a str, message: Message) -> Route<'a> {
        let mut route = Route::default();
        let mut queues = Vec::new();
        if exchange.is_empty() {
            // With unknown keys any queue could be named: the lint cannot say which.
            for key in message.routing_keys.into_iter().flatten() {
                if let Some(name) = self.queue(vhost, key) {
                    route.hops.push(Hop::Default { queue: name });
                    queues.push(name);
                }
            }
        } else {
            // The broker's walk: a work list and the set of exchanges seen.
            let mut seen: Vec<&'a str> = vec![exchange];
            let mut work: Vec<&'a str> = Vec::new();
            match self.exchange(vhost, exchange) {
                Some(_) => work.push(exchange),
                None => route.missing_exchange = Some(exchange),
            }
            while let Some(name) = work.pop() {
                let Some(info) = self.exchange(vhost, name) else {
                    continue;
                };
                let mut matched_for_sure = false;
                let mut matched_maybe = false;
                let mut next: Vec<&'a str> = Vec::new();
                for binding in self.bindings.get(&(vhost, name)).into_iter().flatten() {
                    let found = self.matches(info.kind, binding, message);
                    if found == Match::Maybe
                        && !KNOWN_TYPES.contains(&info.kind)
                        && !route.unknown_types.contains(&name)
                    {
                        route.unknown_types.push(name);
                    }
                    if found == Match::No {
                        continue;
                    }
                    let to_exchange = binding.destination_type == "exchange";
                    // A binding outlives no queue on the broker; one in a file may.
                    if !to_exchange && !self.has_queue(vhost, &binding.destination) {
                        continue;
                    }
                    matched_for_sure |= found == Match::Yes;
                    matched_maybe |= found == Match::Maybe;
                    route.hops.push(Hop::Binding {
                        source: name,
                        destination: &binding.destination,
                        to_exchange,
                        key: &binding.routing_key,
                        certain: found == Match::Yes,
                    });
                    if to_exchange {
                        next.push(&binding.destination);
                    } else {
                        queues.push(binding.destination.as_str());
                    }
                }
                if !matched_for_sure
                    && !matched_maybe
                    && let Some(alternate) = info.alternate
                {
                    route.hops.push(Hop::Alternate {
                        from: name,
                        to: alternate,
                    });
                    next.push(alternate);
                }
                for destination in next {
                    if seen.contains(&destination) {
                        continue;
                    }
                    seen.push(destination);
                    if self.exchange(vhost, destination).is_some() {
                        work.push(destination);
                    } else if route.missing_exchange.is_none() {
                        route.missing_exchange = Some(destination);
                    }
                }
            }
        }
        queues.sort_unstable();
        queues.dedup();
        route.queues = queues;
        route
    }

    fn matches(&self, kind: &str, binding: &Binding, message: Message) -> Match {
        let any_key = |test: &dyn Fn(&str) -> bool| match message.routing_keys {
            Some(keys) => Match::of(keys.iter().any(|k| test(k))),
            None => Match::Maybe,
        };
        match kind {
            "fanout" => Match::Yes,
            "direct" => any_key(&|key| key == binding.routing_key),
            "topic" => any_key(&|key| topic_matches(&binding.routing_key, key)),
            "headers" => match message.headers {
                Some(headers) => Match::of(headers_match(&binding.arguments, headers, self.target)),
                None => Match::Maybe,
            },
            _ => Match::Maybe,
        }
    }
}

/// Topic matching as the broker's trie does it: words split on `.` (so `a..b` has an
/// empty middle word, and the empty key has no words at all), `*` one word, `#` zero
/// or more.
pub fn topic_matches(pattern: &str, key: &str) -> bool {
    fn words(text: &str) -> Vec<&str> {
        if text.is_empty() {
            Vec::new()
        } else {
            text.split('.').collect()
        }
    }
    fn go(pattern: &[&str], key: &[&str]) -> bool {
        match (pattern.first(), key.first()) {
            (None, None) => true,
            (Some(&"#"), _) => {
                go(&pattern[1..], key) || (!key.is_empty() && go(pattern, &key[1..]))
            }
            (Some(&"*"), Some(_)) => go(&pattern[1..], &key[1..]),
            (Some(p), Some(k)) if p == k => go(&pattern[1..], &key[1..]),
            _ => false,
        }
    }
    go(&words(pattern), &words(key))
}

/// Whether a headers-exchange binding with `arguments` matches a message's `headers`.
pub fn headers_match(
    arguments: &super::Arguments,
    headers: &Headers,
    target: TargetVersion,
) -> bool {
    let mode = arguments
        .get("x-match")
        .and_then(Value::as_str)
        .unwrap_or("all");
    let (any, with_x) = match mode {
        "any" => (true, false),
        "any-with-x" => (true, true),
        "all-with-x" => (false, true),
        // The broker validates `x-match`; anything else is read as `all`.
        _ => (false, false),
    };
    let mut compared = arguments
        .iter()
        .filter(|(key, _)| key.as_str() != "x-match" && (with_x || !key.starts_with("x-")))
        .map(
            |(key, expected)| match (expected, headers.get(key.as_str())) {
                (_, None) => false,
                (Value::Null, Some(_)) => true,
                (expected, Some(actual)) => values_equal(expected, actual, target),
            },
        );
    if any {
        compared.any(|m| m)
    } else {
        compared.all(|m| m)
    }
}

/// Erlang's `==` up to 3.12 (numbers compare by value) and `=:=` from 3.13.
fn values_equal(expected: &Value, actual: &Value, target: TargetVersion) -> bool {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) if target < TargetVersion::V3_13 => {
            a.as_f64() == b.as_f64()
        }
        (Value::Number(a), Value::Number(b)) => a == b && (a.is_f64() == b.is_f64()),
        (a, b) => a == b,
    }
}

/// Why a queue dead-letters a message (the `reason` of its `x-death` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A consumer rejected it with `requeue=false`.
    Rejected,
    /// Its time to live ran out.
    Expired,
    /// A length limit pushed it out.
    Maxlen,
    /// A quorum queue's delivery limit was passed.
    DeliveryLimit,
}

impl Reason {
    /// The name the broker writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Rejected => "rejected",
            Reason::Expired => "expired",
            Reason::Maxlen => "maxlen",
            Reason::DeliveryLimit => "delivery_limit",
        }
    }
}

/// One entry of a message's death history: the broker keeps one per (queue, reason),
/// most recent first, and counts repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Death {
    /// The queue that dead-lettered it.
    pub queue: String,
    /// Why.
    pub reason: Reason,
    /// How many times.
    pub count: u32,
}

/// A message as dead-lettering sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Letter {
    /// Its routing keys.
    pub routing_keys: Vec<String>,
    /// Its headers.
    pub headers: Headers,
    /// Its deaths, most recent first (what `x-death` shows).
    pub deaths: Vec<Death>,
}

impl Letter {
    /// A message published with one routing key and these headers.
    pub fn published(routing_key: &str, headers: Headers) -> Letter {
        Letter {
            routing_keys: vec![routing_key.to_string()],
            headers,
            deaths: Vec::new(),
        }
    }

    /// The `count` of the death entry for (`queue`, `reason`), 0 when absent.
    pub fn death_count(&self, queue: &str, reason: Reason) -> u32 {
        self.deaths
            .iter()
            .find(|d| d.queue == queue && d.reason == reason)
            .map_or(0, |d| d.count)
    }

    /// As routing sees it.
    pub fn message(&self) -> Message<'_> {
        Message {
            routing_keys: Some(&self.routing_keys),
            headers: Some(&self.headers),
        }
    }
}

/// Where a dead letter goes.
#[derive(Debug, Clone)]
pub struct DeadLetter<'a> {
    /// The message as it leaves (death recorded, routing keys replaced by the
    /// dead-letter routing key if the queue has one).
    pub letter: Letter,
    /// The route through the dead-letter exchange (`None`: the queue has none, the
    /// message is dropped).
    pub route: Option<Route<'a>>,
    /// Queues that get a copy.
    pub queues: Vec<&'a str>,
    /// Queues whose copy the cycle rule drops.
    pub dropped_by_cycle: Vec<&'a str>,
}

impl<'a> Topology<'a> {
    /// Dead-letters `letter` from `queue` for `reason`, through the queue's
    /// dead-letter exchange and routing key: records the death (before routing, as the
    /// broker does), routes with the dead-letter routing key or else the message's own
    /// keys, and applies the cycle rule: unless the reason is `rejected`, a copy for a
    /// queue already in the message's deaths is dropped when no death from the newest
    /// back to that queue's newest one is a rejection.
    pub fn dead_letter(
        &self,
        vhost: &'a str,
        queue: &str,
        reason: Reason,
        letter: &Letter,
        dead_letter_exchange: Option<&'a str>,
        dead_letter_routing_key: Option<&str>,
    ) -> DeadLetter<'a> {
        let mut out = letter.clone();
        record_death(&mut out, queue, reason, self.target);
        let Some(exchange) = dead_letter_exchange else {
            return DeadLetter {
                letter: out,
                route: None,
                queues: Vec::new(),
                dropped_by_cycle: Vec::new(),
            };
        };
        if let Some(key) = dead_letter_routing_key {
            out.routing_keys = vec![key.to_string()];
            out.headers.remove("CC");
        }
        out.headers.remove("BCC");
        let route = self.route(vhost, exchange, out.message());
        let (mut queues, mut dropped) = (Vec::new(), Vec::new());
        for &target in &route.queues {
            if reason != Reason::Rejected && is_cycle(&out.deaths, target) {
                dropped.push(target);
            } else {
                queues.push(target);
            }
        }
        DeadLetter {
            letter: out,
            route: Some(route),
            queues,
            dropped_by_cycle: dropped,
        }
    }
}

/// Adds a death: the entry for (queue, reason) counts one more and moves to the front;
/// the `x-first-death-*` headers are set once, `x-last-death-*` (from 3.13) every time.
///
/// Up to 3.12 the broker regroups the `x-death` array by (queue, reason) before each
/// update, and its grouping (`group_by_queue_and_reason`, a fold that prepends)
/// reverses an array of two or more entries: the new entry goes first, the others
/// follow in reverse. The order matters beyond display, because the cycle rule reads
/// the array in that order. From 3.13.3 (and on 4.x) deaths are a recency-ordered list.
fn record_death(letter: &mut Letter, queue: &str, reason: Reason, target: TargetVersion) {
    if target < TargetVersion::V3_13 && letter.deaths.len() >= 2 {
        letter.deaths.reverse();
    }
    let death = match letter
        .deaths
        .iter()
        .position(|d| d.queue == queue && d.reason == reason)
    {
        Some(at) => {
            let mut death = letter.deaths.remove(at);
            death.count += 1;
            death
        }
        None => Death {
            queue: queue.to_string(),
            reason,
            count: 1,
        },
    };
    letter.deaths.insert(0, death);
    let headers = &mut letter.headers;
    if !headers.contains_key("x-first-death-queue") {
        headers.insert("x-first-death-queue".into(), Value::from(queue));
        headers.insert("x-first-death-reason".into(), Value::from(reason.as_str()));
    }
    if target >= TargetVersion::V3_13 {
        headers.insert("x-last-death-queue".into(), Value::from(queue));
        headers.insert("x-last-death-reason".into(), Value::from(reason.as_str()));
    }
}

/// The broker's cycle test: `deaths` (newest first, the current death included) up to
/// and including the newest death at `target` hold no rejection.
fn is_cycle(deaths: &[Death], target: &str) -> bool {
    let Some(at) = deaths.iter().position(|d| d.queue == target) else {
        return false;
    };
    deaths[..=at].iter().all(|d| d.reason != Reason::Rejected)
}

#[cfg(test)]
mod tests {
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

    fn arguments(value: Value) -> super::super::Arguments {
        serde_json::from_value(value).unwrap()
    }

    fn route<'a>(
        topology: &Topology<'a>,
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
            "", "a", "b", "a.b", "a.c", "x.b", "a.x.b", "a.x.y.b", "a.b.c", "a..b", ".", "a.",
            ".b", "ab", "a.bb", "a+b.(x)", "aab", "a.b.c.d",
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
        let t = Topology::new(&d, TargetVersion::V4_1);
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
        let t = Topology::new(&d, TargetVersion::V4_1);
        assert_eq!(route(&t, "a", "k", &Headers::new()), ["q"]);
        assert_eq!(t.check_publish("v", "c"), Err(PublishError::Internal));
        assert_eq!(t.check_publish("v", "nope"), Err(PublishError::Missing));
        assert_eq!(t.check_publish("v", ""), Ok(()));
        assert_eq!(route(&t, "", "q", &Headers::new()), ["q"]);
        assert!(route(&t, "", "missing", &Headers::new()).is_empty());
    }

    #[test]
    fn x_death_order_follows_each_version() {
        let d = definitions(json!({"queues": [{"name": "w", "vhost": "v"}]}));
        let order = |target| {
            let t = Topology::new(&d, target);
            let mut letter = Letter::published("k", Headers::new());
            for (queue, reason) in [
                ("w", Reason::Rejected),
                ("r1", Reason::Expired),
                ("w2", Reason::Rejected),
                ("r2", Reason::Expired),
            ] {
                letter = t
                    .dead_letter("v", queue, reason, &letter, None, None)
                    .letter;
            }
            letter
                .deaths
                .iter()
                .map(|d| d.queue.clone())
                .collect::<Vec<_>>()
        };
        // Seen on RabbitMQ 3.10.8 (tests/broker/trace.rs, the reject-chain ladder).
        assert_eq!(order(TargetVersion::V3_10), ["r2", "r1", "w", "w2"]);
        assert_eq!(order(TargetVersion::V4_0), ["r2", "w2", "r1", "w"]);
    }

    #[test]
    fn the_cycle_rule_drops_only_loops_without_a_rejection() {
        let d = definitions(json!({
            "queues": [{"name": "w", "vhost": "v"}, {"name": "r", "vhost": "v"}],
        }));
        let t = Topology::new(&d, TargetVersion::V4_1);
        let start = Letter::published("w", Headers::new());
        // w rejects into r (by name on the default exchange), r expires back into w.
        let rejected = t.dead_letter("v", "w", Reason::Rejected, &start, Some(""), Some("r"));
        assert_eq!(rejected.queues, ["r"]);
        let back = t.dead_letter(
            "v",
            "r",
            Reason::Expired,
            &rejected.letter,
            Some(""),
            Some("w"),
        );
        assert_eq!(back.queues, ["w"], "a rejection is in the cycle");
        assert_eq!(back.letter.death_count("w", Reason::Rejected), 1);
        // w expires (no consumer, a TTL) into r, and r back into w: dropped.
        let expired = t.dead_letter("v", "w", Reason::Expired, &start, Some(""), Some("r"));
        let again = t.dead_letter(
            "v",
            "r",
            Reason::Expired,
            &expired.letter,
            Some(""),
            Some("w"),
        );
        assert!(again.queues.is_empty());
        assert_eq!(again.dropped_by_cycle, ["w"]);
        // A queue dead-lettering to itself by its own name (no routing key) on expiry.
        let own = t.dead_letter("v", "w", Reason::Expired, &start, Some(""), None);
        assert_eq!(own.dropped_by_cycle, ["w"]);
        assert!(
            t.dead_letter("v", "w", Reason::Expired, &start, None, None)
                .route
                .is_none()
        );
    }
}
