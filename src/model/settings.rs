//! The settings the broker applies to one queue, and where each comes from: its own
//! arguments, the policy that applies, the operator policy that applies, or the
//! broker's default. The one place that knows how RabbitMQ combines them
//! (docs/topology.md, "Which value wins"): `model::queue_facts` and the role hazards
//! (`model::role_hazards`) both read it.
//!
//! - Numeric limits (`message-ttl`, `expires`, `max-length`, `max-length-bytes`): the
//!   lowest of the three wins; on quorum queues before 4.0 a policy's `expires` beats
//!   the argument instead.
//! - `delivery-limit` (quorum): policy and operator policy merge to the lower, or the
//!   higher when one is negative (unlimited); that merged value and the argument
//!   combine the same way; nothing at all means 4.0's default of 20.
//! - Dead-letter exchange and key: the argument beats the policy (operator policies
//!   cannot set them).
//! - `overflow`: the operator policy's beats everything; then the argument on classic
//!   queues, the policy on quorum queues.

use serde_json::Value;

use super::{Policy, Queue, QueueType, TargetVersion};

/// Where a setting's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The queue's own `x-…` argument.
    Argument,
    /// The policy of this name.
    Policy(String),
    /// The operator policy of this name.
    OperatorPolicy(String),
    /// The broker's default (4.0's delivery limit of 20).
    Default,
}

impl Source {
    /// The policy or operator policy that sets the value, if one does.
    pub fn policy(&self) -> Option<(&str, bool)> {
        match self {
            Source::Policy(name) => Some((name, false)),
            Source::OperatorPolicy(name) => Some((name, true)),
            Source::Argument | Source::Default => None,
        }
    }
}

/// One setting's value and its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub value: Value,
    pub source: Source,
}

impl Setting {
    /// The value as a whole number, when it is one.
    pub fn number(&self) -> Option<i64> {
        self.value
            .as_i64()
            .or_else(|| self.value.as_f64().map(|f| f as i64))
    }

    /// The value as text, when it is text.
    pub fn text(&self) -> Option<&str> {
        self.value.as_str()
    }
}

/// The settings that decide what a queue does with its messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub message_ttl: Option<Setting>,
    pub expires: Option<Setting>,
    pub max_length: Option<Setting>,
    pub max_length_bytes: Option<Setting>,
    pub overflow: Option<Setting>,
    pub dead_letter_exchange: Option<Setting>,
    pub dead_letter_routing_key: Option<Setting>,
    /// Quorum queues only; `None`: unlimited (or not a quorum queue).
    pub delivery_limit: Option<Setting>,
}

impl Settings {
    /// The setting of a policy key (`message-ttl`, …), if it is one of these.
    pub fn get(&self, key: &str) -> Option<&Setting> {
        match key {
            "message-ttl" => self.message_ttl.as_ref(),
            "expires" => self.expires.as_ref(),
            "max-length" => self.max_length.as_ref(),
            "max-length-bytes" => self.max_length_bytes.as_ref(),
            "overflow" => self.overflow.as_ref(),
            "dead-letter-exchange" => self.dead_letter_exchange.as_ref(),
            "dead-letter-routing-key" => self.dead_letter_routing_key.as_ref(),
            "delivery-limit" => self.delivery_limit.as_ref(),
            _ => None,
        }
    }
}

/// The candidates for one key, in precedence order for ties: argument, policy,
/// operator policy.
struct Candidates {
    argument: Option<Setting>,
    policy: Option<Setting>,
    operator: Option<Setting>,
}

fn is_number(value: &Value) -> bool {
    value.as_i64().is_some() || value.as_f64().is_some()
}

fn lowest(settings: impl IntoIterator<Item = Option<Setting>>) -> Option<Setting> {
    let mut best: Option<Setting> = None;
    for setting in settings.into_iter().flatten() {
        if !is_number(&setting.value) {
            continue;
        }
        match &best {
            // An equal value keeps the earlier source: the queue's own or the policy's.
            Some(b) if b.number() <= setting.number() => {}
            _ => best = Some(setting),
        }
    }
    best
}

/// How two delivery limits combine: the lower, or the higher when one is negative
/// (a negative limit means unlimited, and a positive one beats it).
fn delivery_limits(a: Option<Setting>, b: Option<Setting>) -> Option<Setting> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let (x, y) = (a.number().unwrap_or(-1), b.number().unwrap_or(-1));
            if x < 0 || y < 0 {
                Some(if y > x { b } else { a })
            } else {
                Some(if y < x { b } else { a })
            }
        }
        (a, b) => a.or(b),
    }
}

/// A setting's key in a policy's definition and as a queue argument (spelled out, not
/// formatted: every queue of every lint and trace resolves all of them).
#[derive(Debug, Clone, Copy)]
struct Key {
    policy: &'static str,
    argument: &'static str,
}

const MESSAGE_TTL: Key = Key {
    policy: "message-ttl",
    argument: "x-message-ttl",
};
const EXPIRES: Key = Key {
    policy: "expires",
    argument: "x-expires",
};
const MAX_LENGTH: Key = Key {
    policy: "max-length",
    argument: "x-max-length",
};
const MAX_LENGTH_BYTES: Key = Key {
    policy: "max-length-bytes",
    argument: "x-max-length-bytes",
};
const OVERFLOW: Key = Key {
    policy: "overflow",
    argument: "x-overflow",
};
const DEAD_LETTER_EXCHANGE: Key = Key {
    policy: "dead-letter-exchange",
    argument: "x-dead-letter-exchange",
};
const DEAD_LETTER_ROUTING_KEY: Key = Key {
    policy: "dead-letter-routing-key",
    argument: "x-dead-letter-routing-key",
};
const DELIVERY_LIMIT: Key = Key {
    policy: "delivery-limit",
    argument: "x-delivery-limit",
};

impl Candidates {
    fn of(queue: &Queue, policy: Option<&Policy>, operator: Option<&Policy>, key: Key) -> Self {
        let from = |policy: Option<&Policy>, source: fn(String) -> Source| {
            policy.and_then(|p| {
                p.definition.get(key.policy).map(|value| Setting {
                    value: value.clone(),
                    source: source(p.name.clone()),
                })
            })
        };
        Candidates {
            argument: queue.arguments.get(key.argument).map(|value| Setting {
                value: value.clone(),
                source: Source::Argument,
            }),
            policy: from(policy, Source::Policy),
            operator: from(operator, Source::OperatorPolicy),
        }
    }
}

/// What the broker applies to `queue` under `policy` and `operator` (the winners for
/// it, `model::effective`), on `target`.
pub fn resolve(
    queue: &Queue,
    policy: Option<&Policy>,
    operator: Option<&Policy>,
    target: TargetVersion,
) -> Settings {
    let kind = QueueType::of(queue);
    let candidates = |key: Key| Candidates::of(queue, policy, operator, key);
    let lowest_of = |key: Key| {
        let c = candidates(key);
        lowest([c.argument, c.policy, c.operator])
    };
    let argument_first = |key: Key| {
        let c = candidates(key);
        c.argument.or(c.policy)
    };
    let expires = {
        let c = candidates(EXPIRES);
        if kind == QueueType::Quorum && !target.has_default_delivery_limit() {
            // Before 4.0 a quorum queue takes the policies' expiry over its argument.
            lowest([c.policy, c.operator]).or(c.argument)
        } else {
            lowest([c.argument, c.policy, c.operator])
        }
    };
    let overflow = {
        let c = candidates(OVERFLOW);
        let own = match kind {
            QueueType::Quorum => c.policy.or(c.argument),
            _ => c.argument.or(c.policy),
        };
        c.operator.or(own)
    };
    let delivery_limit = (kind == QueueType::Quorum)
        .then(|| {
            let c = candidates(DELIVERY_LIMIT);
            let merged = delivery_limits(c.policy, c.operator);
            match delivery_limits(c.argument, merged) {
                None if target.has_default_delivery_limit() => Some(Setting {
                    value: Value::from(20),
                    source: Source::Default,
                }),
                limit => limit.filter(|l| l.number().is_some_and(|n| n >= 0)),
            }
        })
        .flatten();
    Settings {
        message_ttl: lowest_of(MESSAGE_TTL),
        expires,
        max_length: lowest_of(MAX_LENGTH),
        max_length_bytes: lowest_of(MAX_LENGTH_BYTES),
        overflow,
        dead_letter_exchange: argument_first(DEAD_LETTER_EXCHANGE),
        dead_letter_routing_key: argument_first(DEAD_LETTER_ROUTING_KEY),
        delivery_limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn queue(kind: &str, arguments: Value) -> Queue {
        let mut arguments = arguments.as_object().cloned().unwrap_or_default();
        arguments.insert("x-queue-type".into(), json!(kind));
        serde_json::from_value(json!({
            "name": "q", "vhost": "v", "durable": true, "auto_delete": false,
            "arguments": arguments
        }))
        .unwrap()
    }

    fn policy(name: &str, definition: Value) -> Policy {
        serde_json::from_value(json!({
            "name": name, "vhost": "v", "pattern": ".*", "apply-to": "queues",
            "priority": 0, "definition": definition
        }))
        .unwrap()
    }

    #[test]
    fn the_lowest_limit_wins_and_says_who_set_it() {
        let q = queue("classic", json!({"x-message-ttl": 30000}));
        let ops = policy(
            "safety-net",
            json!({"message-ttl": 20000, "expires": 60000}),
        );
        let s = resolve(&q, None, Some(&ops), TargetVersion::DEFAULT);
        let ttl = s.message_ttl.unwrap();
        assert_eq!(
            (ttl.number(), ttl.source),
            (Some(20000), Source::OperatorPolicy("safety-net".into()))
        );
        assert_eq!(s.expires.unwrap().number(), Some(60000));
        // A higher operator TTL changes nothing: the queue's own stays.
        let high = policy("high", json!({"message-ttl": 90000}));
        let s = resolve(&q, None, Some(&high), TargetVersion::DEFAULT);
        assert_eq!(s.message_ttl.unwrap().source, Source::Argument);
    }

    #[test]
    fn the_argument_names_the_dead_letter_exchange_and_the_operator_the_overflow() {
        let q = queue(
            "quorum",
            json!({"x-dead-letter-exchange": "mine", "x-overflow": "reject-publish"}),
        );
        let p = policy("theirs", json!({"dead-letter-exchange": "theirs"}));
        let ops = policy("ops", json!({"overflow": "drop-head"}));
        let s = resolve(&q, Some(&p), Some(&ops), TargetVersion::DEFAULT);
        assert_eq!(s.dead_letter_exchange.unwrap().text(), Some("mine"));
        assert_eq!(
            s.overflow.unwrap().source,
            Source::OperatorPolicy("ops".into())
        );
    }

    #[test]
    fn delivery_limits_merge_as_the_broker_merges_them() {
        let q = queue("quorum", json!({"x-delivery-limit": -1}));
        let p = policy("p", json!({"delivery-limit": 5}));
        let ops = policy("ops", json!({"delivery-limit": 3}));
        // Policy 5 and operator 3 merge to 3; the unlimited argument loses to it.
        let s = resolve(&q, Some(&p), Some(&ops), TargetVersion::DEFAULT);
        assert_eq!(s.delivery_limit.unwrap().number(), Some(3));
        // Nothing set: 4.0's default of 20, none before.
        let plain = queue("quorum", json!({}));
        let s = resolve(&plain, None, None, TargetVersion::DEFAULT);
        assert_eq!(s.delivery_limit.unwrap().source, Source::Default);
        let s = resolve(&plain, None, None, "3.10".parse().unwrap());
        assert!(s.delivery_limit.is_none());
        // Unlimited everywhere is unlimited.
        let s = resolve(&q, None, None, TargetVersion::DEFAULT);
        assert!(s.delivery_limit.is_none());
    }
}
