//! How the broker routes a message: the one implementation that `trace` (a message
//! with a known key and headers) and the lint's dead-letter graph (a dead letter whose
//! key or headers may be unknown) both use. What dead-lettering does to a message
//! before it is routed again (its death, its new key, the cycle rule) is
//! [`dead_letter`](super::dead_letter)'s.
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
pub struct Routes<'a> {
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

impl<'a> Routes<'a> {
    /// The version whose routing (and dead-lettering) this topology follows.
    pub fn target(&self) -> TargetVersion {
        self.target
    }

    /// Indexes the definitions; `target` decides how header values compare.
    pub fn new(definitions: &'a Definitions, target: TargetVersion) -> Routes<'a> {
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
                        // A tie: which alternate exchange applies is not known.
                        .one()
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
        Routes {
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

#[cfg(test)]
mod tests;
