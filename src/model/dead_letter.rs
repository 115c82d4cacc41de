//! What dead-lettering does to a message, as the broker does it (`rabbit_dead_letter`):
//! the death it records (`x-death`, most recent first, and the order each version keeps
//! them in), the dead-letter routing key that replaces the message's keys, and the
//! cycle rule that drops a copy going round without a rejection. Routing the dead
//! letter is [`Routes::route`]'s job; this module says what is routed and what of it
//! arrives. `trace` and the lint's dead-letter graph both use it.

use serde::Serialize;
use serde_json::Value;

use super::TargetVersion;
use super::routing::{Headers, Message, Route, Routes};

/// Why a queue dead-letters a message (the `reason` of its `x-death` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeathReason {
    /// A consumer rejected it with `requeue=false`.
    Rejected,
    /// Its time to live ran out.
    Expired,
    /// A length limit pushed it out.
    Maxlen,
    /// A quorum queue's delivery limit was passed.
    DeliveryLimit,
}

impl DeathReason {
    /// The name the broker writes.
    pub fn as_str(self) -> &'static str {
        match self {
            DeathReason::Rejected => "rejected",
            DeathReason::Expired => "expired",
            DeathReason::Maxlen => "maxlen",
            DeathReason::DeliveryLimit => "delivery_limit",
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
    pub reason: DeathReason,
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
    pub fn death_count(&self, queue: &str, reason: DeathReason) -> u32 {
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

impl<'a> Routes<'a> {
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
        reason: DeathReason,
        letter: &Letter,
        dead_letter_exchange: Option<&'a str>,
        dead_letter_routing_key: Option<&str>,
    ) -> DeadLetter<'a> {
        let mut out = letter.clone();
        record_death(&mut out, queue, reason, self.target());
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
            if reason != DeathReason::Rejected && is_cycle(&out.deaths, target) {
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
fn record_death(letter: &mut Letter, queue: &str, reason: DeathReason, target: TargetVersion) {
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
    deaths[..=at]
        .iter()
        .all(|d| d.reason != DeathReason::Rejected)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::Definitions;

    fn definitions(value: serde_json::Value) -> Definitions {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn x_death_order_follows_each_version() {
        let d = definitions(json!({"queues": [{"name": "w", "vhost": "v"}]}));
        let order = |target| {
            let t = Routes::new(&d, target);
            let mut letter = Letter::published("k", Headers::new());
            for (queue, reason) in [
                ("w", DeathReason::Rejected),
                ("r1", DeathReason::Expired),
                ("w2", DeathReason::Rejected),
                ("r2", DeathReason::Expired),
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
        let t = Routes::new(&d, TargetVersion::V4_1);
        let start = Letter::published("w", Headers::new());
        // w rejects into r (by name on the default exchange), r expires back into w.
        let rejected = t.dead_letter("v", "w", DeathReason::Rejected, &start, Some(""), Some("r"));
        assert_eq!(rejected.queues, ["r"]);
        let back = t.dead_letter(
            "v",
            "r",
            DeathReason::Expired,
            &rejected.letter,
            Some(""),
            Some("w"),
        );
        assert_eq!(back.queues, ["w"], "a rejection is in the cycle");
        assert_eq!(back.letter.death_count("w", DeathReason::Rejected), 1);
        // w expires (no consumer, a TTL) into r, and r back into w: dropped.
        let expired = t.dead_letter("v", "w", DeathReason::Expired, &start, Some(""), Some("r"));
        let again = t.dead_letter(
            "v",
            "r",
            DeathReason::Expired,
            &expired.letter,
            Some(""),
            Some("w"),
        );
        assert!(again.queues.is_empty());
        assert_eq!(again.dropped_by_cycle, ["w"]);
        // A queue dead-lettering to itself by its own name (no routing key) on expiry.
        let own = t.dead_letter("v", "w", DeathReason::Expired, &start, Some(""), None);
        assert_eq!(own.dropped_by_cycle, ["w"]);
        assert!(
            t.dead_letter("v", "w", DeathReason::Expired, &start, None, None)
                .route
                .is_none()
        );
    }
}
