//! Where a policy the spec did not mean breaks what a managed queue is for: a parking
//! queue that must keep its messages, a delay tier that must hold each retry for its
//! delay and then dead-letter it back, a work queue whose failures must reach its
//! ladder. The one owner of these rules: `plan` (hazards in the plan, a finding for
//! `--detailed-exitcode`), `status` (a problem) and the lint's
//! `operator-policy-conflict` all ask [`hazards`].
//!
//! A hazard compares two [`Settings`] of the same queue: what the spec means (its
//! arguments and the spec's own policies) and what the broker applies (every policy
//! and operator policy that wins). A setting counts only where it differs from what
//! the spec means, a policy sets it, and the difference changes what the role needs;
//! an operator's `max-length` with `reject-publish` on a work queue, say, refuses
//! publishers (who see it) and is no hazard.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::millis;
use super::settings::{Setting, Settings};

/// What a managed queue is for in its consumer's retry loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum QueueRole {
    /// Consumers read it; a failure goes into its ladder. `waits`: a `native` ladder's
    /// work queue, which holds a failed message back itself and parks it past its
    /// delivery limit.
    Work {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        waits: bool,
    },
    /// A `reject-chain` attempt's work queue.
    Attempt,
    /// A delay queue of ladder tier `tier` (from 1): no consumers; it holds each
    /// message `delay_ms` and dead-letters it back.
    Tier { tier: usize, delay_ms: u64 },
    /// Keeps the messages that used up their retries until someone replays them.
    Parking,
}

impl QueueRole {
    /// The queue in words: `parking queue `x``.
    pub fn describe(&self, queue: &str) -> String {
        match self {
            QueueRole::Work { .. } => format!("work queue `{queue}`"),
            QueueRole::Attempt => format!("attempt queue `{queue}`"),
            QueueRole::Tier { tier, .. } => format!("tier {tier} queue `{queue}`"),
            QueueRole::Parking => format!("parking queue `{queue}`"),
        }
    }
}

/// What each managed queue is for, by (vhost, queue).
pub type QueueRoles = std::collections::BTreeMap<(String, String), QueueRole>;

/// A setting of a policy or operator policy that breaks what a queue is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hazard {
    /// The policy key (`message-ttl`, …).
    pub key: String,
    /// The value the broker applies.
    pub value: Value,
    /// The policy that sets it.
    pub policy: String,
    /// It is an operator policy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
    /// What it does to the queue's messages.
    pub effect: String,
    /// What resolves it.
    pub fix: String,
}

/// The keys a role depends on, in the order hazards are reported.
const KEYS: [&str; 7] = [
    "message-ttl",
    "expires",
    "max-length",
    "max-length-bytes",
    "delivery-limit",
    "dead-letter-exchange",
    "dead-letter-routing-key",
];

/// A limit that applies where none was meant, or one lower than meant (a lower
/// value is the only way another's limit can win, `model::settings`).
fn lowered(meant: Option<&Setting>, applied: Option<&Setting>) -> Option<i64> {
    let applied = applied?.number()?;
    match meant.and_then(Setting::number) {
        Some(meant) if meant <= applied => None,
        _ => Some(applied),
    }
}

/// Where a queue's dead letters go, in words.
fn dead_letters_to(settings: &Settings) -> String {
    match settings
        .dead_letter_exchange
        .as_ref()
        .and_then(Setting::text)
    {
        Some("") => "dead-lettered through the default exchange".to_string(),
        Some(exchange) => format!("dead-lettered to `{exchange}`"),
        None => "dropped".to_string(),
    }
}

/// Every hazard of `queue` in `role`: what `applied` changes of `meant` that breaks it.
pub fn hazards(role: &QueueRole, queue: &str, meant: &Settings, applied: &Settings) -> Vec<Hazard> {
    let mut out = Vec::new();
    for key in KEYS {
        let Some(setting) = applied.get(key) else {
            continue;
        };
        let Some((policy, operator)) = setting.source.policy() else {
            continue;
        };
        if meant.get(key).map(|m| &m.value) == Some(&setting.value) {
            continue;
        }
        let Some(effect) = effect(role, key, meant, applied) else {
            continue;
        };
        let fix = if operator {
            format!(
                "narrow the pattern of operator policy `{policy}` so that it leaves out `{queue}` (operator policies belong to the broker's operators)"
            )
        } else {
            format!(
                "narrow the pattern of policy `{policy}` so that it leaves out `{queue}`, or give the spec's policy a higher priority"
            )
        };
        out.push(Hazard {
            key: key.to_string(),
            value: setting.value.clone(),
            policy: policy.to_string(),
            operator,
            effect,
            fix,
        });
    }
    out
}

/// What `applied`'s `key` does to a queue in `role`, if it breaks the role.
fn effect(role: &QueueRole, key: &str, meant: &Settings, applied: &Settings) -> Option<String> {
    let limit = || lowered(meant.get(key), applied.get(key));
    let span = |ms: i64| millis::text(ms.max(0) as u64);
    let drop_head = || {
        applied
            .overflow
            .as_ref()
            .and_then(Setting::text)
            .is_none_or(|o| o == "drop-head")
    };
    let unit = if key == "max-length-bytes" {
        "bytes"
    } else {
        "messages"
    };
    match (role, key) {
        (QueueRole::Tier { delay_ms, .. }, "message-ttl") => {
            let ttl = limit()?;
            Some(format!(
                "its retries come back after {} instead of {}",
                span(ttl),
                millis::text(*delay_ms)
            ))
        }
        (QueueRole::Parking, "message-ttl") => Some(format!(
            "parked messages expire after {}: they are {} instead of waiting to be replayed",
            span(limit()?),
            dead_letters_to(applied)
        )),
        (QueueRole::Work { .. } | QueueRole::Attempt, "message-ttl") => Some(format!(
            "a message nobody has consumed within {} expires: it is {} without a consumer having failed it",
            span(limit()?),
            dead_letters_to(applied)
        )),
        (QueueRole::Tier { .. }, "expires") => Some(format!(
            "the broker deletes it after {} unused, with the retries waiting in it (a delay queue has no consumers, so it is always unused)",
            span(limit()?)
        )),
        (QueueRole::Parking, "expires") => Some(format!(
            "the broker deletes it after {} unused, with its parked messages (nothing consumes a parking queue)",
            span(limit()?)
        )),
        (QueueRole::Work { .. } | QueueRole::Attempt, "expires") => Some(format!(
            "the broker deletes it with its messages once it has had no consumers for {}",
            span(limit()?)
        )),
        (QueueRole::Tier { .. }, "max-length" | "max-length-bytes") => {
            let n = limit()?;
            Some(if drop_head() {
                format!(
                    "past {n} {unit} the oldest waiting retries are {} before their delay",
                    dead_letters_to(applied)
                )
            } else {
                format!("past {n} {unit} the failures dead-lettered into it are dropped")
            })
        }
        (QueueRole::Parking, "max-length" | "max-length-bytes") => {
            let n = limit()?;
            Some(if drop_head() {
                format!(
                    "past {n} {unit} the oldest parked messages are {}",
                    dead_letters_to(applied)
                )
            } else {
                format!(
                    "past {n} {unit} messages that used up their retries are dropped, not parked"
                )
            })
        }
        (QueueRole::Work { .. } | QueueRole::Attempt, "max-length" | "max-length-bytes") => {
            let n = limit()?;
            drop_head().then(|| {
                format!(
                    "past {n} {unit} the oldest messages are {} before any consumer sees them",
                    dead_letters_to(applied)
                )
            })
        }
        (QueueRole::Work { waits }, "delivery-limit") => {
            let n = limit()?;
            let meant = meant
                .delivery_limit
                .as_ref()
                .and_then(Setting::number)
                .map_or("no limit".to_string(), |m| m.to_string());
            Some(if *waits {
                format!(
                    "it parks a message after {n} deliveries instead of {meant}: fewer retries than the spec's"
                )
            } else {
                format!(
                    "it dead-letters a message after {n} deliveries instead of {meant} (a requeue or a consumer that dies counts)"
                )
            })
        }
        (QueueRole::Attempt, "delivery-limit") => Some(format!(
            "it dead-letters a message after {} deliveries (a requeue or a consumer that dies counts)",
            limit()?
        )),
        (QueueRole::Tier { .. }, "dead-letter-exchange" | "dead-letter-routing-key") => {
            Some(format!(
                "its retries are {} instead of going back to the consumer",
                dead_letters_to(applied)
            ))
        }
        (
            QueueRole::Work { .. } | QueueRole::Attempt,
            "dead-letter-exchange" | "dead-letter-routing-key",
        ) => Some(format!(
            "its failures are {} instead of going into the ladder",
            dead_letters_to(applied)
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::settings::Source;
    use serde_json::json;

    fn set(value: Value, source: Source) -> Option<Setting> {
        Some(Setting { value, source })
    }

    fn operator(name: &str) -> Source {
        Source::OperatorPolicy(name.into())
    }

    #[test]
    fn an_operator_ttl_on_a_parking_queue_is_a_hazard_with_its_policy_and_fix() {
        let meant = Settings::default();
        let applied = Settings {
            message_ttl: set(json!(20000), operator("safety-net")),
            expires: set(json!(3_600_000), operator("safety-net")),
            ..Settings::default()
        };
        let found = hazards(&QueueRole::Parking, "orders.parking", &meant, &applied);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            (
                found[0].key.as_str(),
                found[0].policy.as_str(),
                found[0].operator
            ),
            ("message-ttl", "safety-net", true)
        );
        assert!(
            found[0].effect.contains("expire after 20s"),
            "{}",
            found[0].effect
        );
        assert!(
            found[1].effect.contains("deletes it after 1h"),
            "{}",
            found[1].effect
        );
        assert!(found[0].fix.contains("`orders.parking`"));
    }

    #[test]
    fn a_tier_s_own_delay_and_a_higher_limit_are_not_hazards() {
        let tier = QueueRole::Tier {
            tier: 1,
            delay_ms: 30_000,
        };
        let meant = Settings {
            message_ttl: set(json!(30000), Source::Policy("warren.retry".into())),
            ..Settings::default()
        };
        assert!(hazards(&tier, "t", &meant, &meant).is_empty());
        let shorter = Settings {
            message_ttl: set(json!(20000), operator("ops")),
            ..Settings::default()
        };
        let found = hazards(&tier, "t", &meant, &shorter);
        assert!(found[0].effect.contains("after 20s instead of 30s"));
    }

    #[test]
    fn a_work_queue_may_refuse_publishers_but_not_drop_its_oldest() {
        let work = QueueRole::Work { waits: false };
        let meant = Settings::default();
        let refusing = Settings {
            max_length: set(json!(1000), operator("cap")),
            overflow: set(json!("reject-publish"), operator("cap")),
            ..Settings::default()
        };
        assert!(hazards(&work, "w", &meant, &refusing).is_empty());
        let dropping = Settings {
            max_length: set(json!(1000), operator("cap")),
            dead_letter_exchange: set(json!("retry"), Source::Argument),
            ..Settings::default()
        };
        let found = hazards(&work, "w", &meant, &dropping);
        assert_eq!(found.len(), 1);
        assert!(found[0].effect.contains("dead-lettered to `retry`"));
    }

    #[test]
    fn a_native_work_queue_parks_early_under_a_lower_delivery_limit() {
        let work = QueueRole::Work { waits: true };
        let meant = Settings {
            delivery_limit: set(json!(6), Source::Policy("warren.retry".into())),
            ..Settings::default()
        };
        let applied = Settings {
            delivery_limit: set(json!(2), operator("ops")),
            ..Settings::default()
        };
        let found = hazards(&work, "w", &meant, &applied);
        assert!(found[0].effect.contains("after 2 deliveries instead of 6"));
    }
}
