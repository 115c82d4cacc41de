//! What the broker will actually do with each queue: effective settings after queue
//! arguments, the winning policy and operator policies are combined, and where its
//! dead letters go.

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::model::effective::CompiledPolicies;
use crate::model::version::TargetVersion;
use crate::model::{Definitions, Policy, Queue};
use crate::spec::QueueType;

/// The effective settings of one queue.
#[derive(Debug, Clone)]
pub struct QueueFacts<'a> {
    /// The queue.
    pub queue: &'a Queue,
    /// Its type.
    pub queue_type: QueueType,
    /// The policy that applies (highest priority among the applicable).
    pub policy: Option<&'a Policy>,
    /// Every policy that matches by pattern and apply-to (applicable or not).
    pub matching: Vec<&'a Policy>,
    /// The operator policy that applies.
    pub operator_policy: Option<Arc<Policy>>,
    /// Dead-letter exchange (the argument wins over policies).
    pub dead_letter_exchange: Option<&'a str>,
    /// Dead-letter routing key (the argument wins over policies).
    pub dead_letter_routing_key: Option<&'a str>,
    /// Message TTL in ms: the lowest of argument, policy and operator policy.
    pub message_ttl: Option<u64>,
    /// The queue's own `x-message-ttl` argument.
    pub ttl_argument: Option<u64>,
    /// Queue expiry in ms: the lowest.
    pub expires: Option<u64>,
    /// Length limit: the lowest.
    pub max_length: Option<u64>,
    /// Overflow behaviour.
    pub overflow: Option<String>,
    /// Quorum delivery limit in force (including 4.0's default of 20); `None` = unlimited.
    pub delivery_limit: Option<i64>,
}

fn number(value: Option<&Value>) -> Option<u64> {
    value.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64)))
}

fn lowest(values: impl IntoIterator<Item = Option<u64>>) -> Option<u64> {
    values.into_iter().flatten().min()
}

/// Operator policies stored as parameters, in policy shape.
pub fn operator_policies(definitions: &Definitions) -> Vec<Arc<Policy>> {
    definitions
        .parameters
        .iter()
        .filter_map(|p| p.as_operator_policy())
        .map(Arc::new)
        .collect()
}

/// Computes the facts of every queue.
pub fn queue_facts<'a>(
    definitions: &'a Definitions,
    operators: &[Arc<Policy>],
    target: TargetVersion,
) -> Vec<QueueFacts<'a>> {
    let policies = CompiledPolicies::new(&definitions.policies);
    let operators = CompiledPolicies::new(operators);
    definitions
        .queues
        .iter()
        .map(|queue| {
            let kind = QueueType::of(queue);
            let choice = policies.choose(&queue.vhost, &queue.name, kind, target);
            let (policy, matching) = (choice.winner, choice.matching);
            let operator = operators
                .choose(&queue.vhost, &queue.name, kind, target)
                .winner;
            let argument = |key: &str| queue.arguments.get(key);
            let from_policy = |key: &str| policy.and_then(|p| p.definition.get(key));
            let from_operator = |key: &str| operator.and_then(|p| p.definition.get(key));
            let text = |value: Option<&'a Value>| value.and_then(|v| v.as_str());
            let owned = |value: Option<&Value>| value.and_then(|v| v.as_str()).map(str::to_string);
            let ttl_argument = number(argument("x-message-ttl"));
            let delivery_limit = if kind == QueueType::Quorum {
                let values: Vec<i64> = [
                    argument("x-delivery-limit"),
                    from_policy("delivery-limit"),
                    from_operator("delivery-limit"),
                ]
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_i64())
                .collect();
                match values.as_slice() {
                    [] if target.has_default_delivery_limit() => Some(20),
                    [] => None,
                    values
                        if values.iter().any(|v| *v < 0) && target.has_default_delivery_limit() =>
                    {
                        // A negative value means unlimited, but a positive one beats it.
                        values.iter().copied().filter(|v| *v >= 0).max()
                    }
                    values => values.iter().copied().filter(|v| *v >= 0).min(),
                }
            } else {
                None
            };
            QueueFacts {
                queue,
                queue_type: kind,
                policy,
                matching,
                operator_policy: operator.cloned(),
                dead_letter_exchange: text(argument("x-dead-letter-exchange"))
                    .or_else(|| text(from_policy("dead-letter-exchange"))),
                dead_letter_routing_key: text(argument("x-dead-letter-routing-key"))
                    .or_else(|| text(from_policy("dead-letter-routing-key"))),
                message_ttl: lowest([
                    ttl_argument,
                    number(from_policy("message-ttl")),
                    number(from_operator("message-ttl")),
                ]),
                ttl_argument,
                expires: lowest([
                    number(argument("x-expires")),
                    number(from_policy("expires")),
                    number(from_operator("expires")),
                ]),
                max_length: lowest([
                    number(argument("x-max-length")),
                    number(from_policy("max-length")),
                    number(from_operator("max-length")),
                ]),
                overflow: owned(from_operator("overflow")).or_else(|| {
                    match kind {
                        QueueType::Quorum => {
                            text(from_policy("overflow")).or_else(|| text(argument("x-overflow")))
                        }
                        _ => text(argument("x-overflow")).or_else(|| text(from_policy("overflow"))),
                    }
                    .map(str::to_string)
                }),
                delivery_limit,
            }
        })
        .collect()
}

/// Where a message published to an exchange ends up.
#[derive(Debug, Clone, Default)]
pub struct Route<'a> {
    /// Queues reached, by name, sorted.
    pub queues: Vec<&'a str>,
    /// The exchange (or one on the way) does not exist.
    pub missing_exchange: Option<&'a str>,
}

/// Exchanges and bindings of one vhost, for routing.
pub struct Router<'a> {
    exchanges: FxHashMap<(&'a str, &'a str), (&'a str, Option<&'a str>)>,
    bindings: FxHashMap<(&'a str, &'a str), Vec<&'a crate::model::Binding>>,
    queues: FxHashSet<(&'a str, &'a str)>,
}

impl<'a> Router<'a> {
    /// Indexes the definitions.
    pub fn new(definitions: &'a Definitions) -> Router<'a> {
        let mut router = Router {
            exchanges: FxHashMap::default(),
            bindings: FxHashMap::default(),
            queues: FxHashSet::default(),
        };
        for exchange in &definitions.exchanges {
            router.exchanges.insert(
                (exchange.vhost.as_str(), exchange.name.as_str()),
                (
                    exchange.kind.as_str(),
                    exchange
                        .arguments
                        .get("alternate-exchange")
                        .and_then(|v| v.as_str()),
                ),
            );
        }
        for binding in &definitions.bindings {
            router
                .bindings
                .entry((binding.vhost.as_str(), binding.source.as_str()))
                .or_default()
                .push(binding);
        }
        for queue in &definitions.queues {
            router
                .queues
                .insert((queue.vhost.as_str(), queue.name.as_str()));
        }
        router
    }

    /// Routes through `exchange` with `key` (`None`: the key is unknown, so every
    /// binding could match).
    pub fn route(&self, vhost: &str, exchange: &'a str, key: Option<&'a str>) -> Route<'a> {
        let mut route = Route::default();
        let mut seen = Vec::new();
        self.route_into(vhost, exchange, key, &mut route, &mut seen);
        route.queues.sort_unstable();
        route.queues.dedup();
        route
    }

    fn route_into(
        &self,
        vhost: &str,
        exchange: &'a str,
        key: Option<&'a str>,
        route: &mut Route<'a>,
        seen: &mut Vec<&'a str>,
    ) {
        // Exchange-to-exchange chains are short: a list is cheaper than a set.
        if seen.contains(&exchange) {
            return;
        }
        seen.push(exchange);
        if exchange.is_empty() {
            // The default exchange routes to the queue named by the key.
            if let Some(key) = key
                && self.queues.contains(&(vhost, key))
            {
                route.queues.push(key);
            }
            return;
        }
        let predefined = crate::compile::names::PREDEFINED_EXCHANGES.contains(&exchange);
        let Some((kind, alternate)) = self
            .exchanges
            .get(&(vhost, exchange))
            .copied()
            .or(predefined.then_some(("topic", None)))
        else {
            route.missing_exchange = Some(exchange);
            return;
        };
        let before = route.queues.len();
        for binding in self.bindings.get(&(vhost, exchange)).into_iter().flatten() {
            let matches = match (kind, key) {
                (_, None) | ("fanout", _) | ("headers", _) => true,
                ("direct", Some(key)) => binding.routing_key == key,
                ("topic", Some(key)) => topic_matches(&binding.routing_key, key),
                (_, Some(_)) => true,
            };
            if !matches {
                continue;
            }
            if binding.destination_type == "exchange" {
                self.route_into(vhost, &binding.destination, key, route, seen);
            } else {
                route.queues.push(&binding.destination);
            }
        }
        if route.queues.len() == before
            && let Some(alternate) = alternate
        {
            self.route_into(vhost, alternate, key, route, seen);
        }
    }
}

/// AMQP topic matching: `*` is one word, `#` zero or more.
pub fn topic_matches(pattern: &str, key: &str) -> bool {
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
    let pattern: Vec<&str> = pattern.split('.').collect();
    let key: Vec<&str> = key.split('.').collect();
    go(&pattern, &key)
}

/// Strongly connected components (Tarjan), as lists of node indexes; only those that
/// hold a cycle (more than one node, or a node with an edge to itself).
pub fn cycles(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'e> {
        edges: &'e [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.edges[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 || s.edges[v].contains(&v) {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let n = edges.len();
    let mut state = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_patterns_match_like_the_broker() {
        assert!(topic_matches("order.#", "order"));
        assert!(topic_matches("order.#", "order.paid.eu"));
        assert!(topic_matches("*.paid", "order.paid"));
        assert!(!topic_matches("*.paid", "order.eu.paid"));
        assert!(topic_matches("#", "anything.at.all"));
        assert!(!topic_matches("order.paid", "order.refunded"));
    }

    #[test]
    fn finds_cycles_and_self_loops_only() {
        let edges = vec![vec![1], vec![0], vec![3], vec![], vec![4]];
        let mut found = cycles(&edges);
        found.sort();
        assert_eq!(found, vec![vec![0, 1], vec![4]]);
    }
}
