//! Operator policies that break what a queue of a retry loop is for. The rules are
//! `model::role_hazards`, the same that `plan` and `status` apply to a broker.

use super::graph::queue_id;
use crate::lint::facts::QueueFacts;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::role_hazards::{self, QueueRole, QueueRoles};
use crate::model::settings;

pub const RULE: Rule = Rule {
    id: "operator-policy-conflict",
    summary: "an operator policy breaks what a queue of a retry loop is for (TTL, expiry, length, delivery limit)",
    level: Some(Level::Warn),
    explanation: Some(
        "Operator policies are merged into every matching queue's settings and, for limits, the lower value wins even over queue arguments. An operator `message-ttl` shortens delay tiers and makes parked messages expire; an `expires` deletes a parking queue with its messages; a `max-length` with `drop-head` drops retries or parked messages; a lower `delivery-limit` parks a native-retry message early. Exclude retry queues from the operator policy's pattern. (Queue expiry on delay queues is the separate rule `delay-queue-expires`, a TTL below a queue's own `x-message-ttl` the rule `policy-ttl-shortens-queue`.) In a spec, each queue's role comes from its consumer; in a definitions file, a queue with a TTL and a dead-letter exchange is a delay tier and another queue of a dead-letter cycle a work queue (a parking queue is not recognised there).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30m] } }\n    operator_policies:\n      guard: { pattern: '.*', definition: { message-ttl: 600000 } }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30m] } }\n    operator_policies:\n      guard: { pattern: '^cache\\.', definition: { message-ttl: 600000 } }\n",
        run: check,
    },
};

/// What each queue of a definitions file is for, as far as its settings tell: a
/// queue with a TTL and a dead-letter exchange is a delay tier; another queue of a
/// dead-letter cycle, or one that dead-letters, a work queue.
fn inferred_roles(context: &Context) -> QueueRoles {
    let graph = context.graph();
    let in_loop = graph.in_cycle();
    graph
        .facts
        .iter()
        .enumerate()
        .filter_map(|(node, fact)| {
            let meant = own_settings(fact, context);
            let ttl = meant.message_ttl.as_ref().and_then(|s| s.number());
            let role = match (ttl, meant.dead_letter_exchange.is_some()) {
                (Some(ttl), true) => QueueRole::Tier {
                    tier: 0,
                    delay_ms: u64::try_from(ttl).unwrap_or(0),
                },
                (None, true) => QueueRole::Work { waits: false },
                _ if in_loop[node] => QueueRole::Work { waits: false },
                _ => return None,
            };
            Some(((fact.queue.vhost.clone(), fact.queue.name.clone()), role))
        })
        .collect()
}

/// A queue's settings without operator policies: what its spec or file means.
fn own_settings(fact: &QueueFacts, context: &Context) -> settings::Settings {
    settings::resolve(fact.queue, fact.policy, None, context.target)
}

fn check(context: &Context) -> Vec<Finding> {
    // The roles are a map of every queue: not built when no operator policy applies.
    if context
        .graph()
        .facts
        .iter()
        .all(|fact| fact.operator_policy.is_none())
    {
        return Vec::new();
    }
    let roles = match context.contract {
        Some(contract) => contract.roles(),
        None => inferred_roles(context),
    };
    let mut findings = Vec::new();
    for fact in &context.graph().facts {
        let Some(operator) = fact.operator_policy.as_deref() else {
            continue;
        };
        let Some(role) = roles.get(&(fact.queue.vhost.clone(), fact.queue.name.clone())) else {
            continue;
        };
        let meant = own_settings(fact, context);
        let applied = settings::resolve(fact.queue, fact.policy, Some(operator), context.target);
        let hazards = role_hazards::hazards(role, &fact.queue.name, &meant, &applied);
        for hazard in hazards {
            // Reported by their own rules.
            let elsewhere = match hazard.key.as_str() {
                "expires" => matches!(role, QueueRole::Tier { .. }),
                "message-ttl" => fact.ttl_argument.is_some(),
                _ => false,
            };
            if elsewhere || !hazard.operator {
                continue;
            }
            let what = match role {
                QueueRole::Tier { tier: 0, .. } => format!("delay queue `{}`", fact.queue.name),
                role => role.describe(&fact.queue.name),
            };
            findings.push(
                Finding::on(
                    queue_id(fact),
                    format!(
                        "operator policy `{}` sets `{}` to {} on {what}: {}",
                        hazard.policy, hazard.key, hazard.value, hazard.effect
                    ),
                )
                .fix(hazard.fix),
            );
        }
    }
    findings
}
