//! Where the broker will not apply what the spec means to a managed queue or exchange:
//! policies tied at the highest priority ([`Tie`]: the broker applies one of them and
//! which is not knowable, model::effective), and policies of others that win over the
//! spec's own and change a setting it sets ([`Drift`]).
//!
//! Both are found in the world after the plan (the desired policies and the live ones
//! the plan keeps), by plan/depends.rs, which asks for every managed object once. A tie
//! makes a plan unappliable (plan/refusal.rs); drift is shown prominently and counts as
//! a finding for `plan --detailed-exitcode`, but the spec may accept it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::effective::Winner;
use crate::model::role_hazards::{Hazard, QueueRole};
use crate::model::{ObjectId, Policy};

/// The settings warren's policies set that decide how a queue or exchange behaves: a
/// retry tier's delay and where its messages go, a limit and what happens past it.
pub const SETTINGS: [&str; 9] = [
    "message-ttl",
    "dead-letter-exchange",
    "dead-letter-routing-key",
    "delivery-limit",
    "max-length",
    "max-length-bytes",
    "overflow",
    "expires",
    "alternate-exchange",
];

/// Settings an operator policy lowers rather than replaces: the broker applies the
/// lower of the policy's and the operator policy's values.
const LOWEST_WINS: [&str; 5] = [
    "message-ttl",
    "max-length",
    "max-length-bytes",
    "expires",
    "delivery-limit",
];

/// Who owns a policy that takes part in a tie or a drift.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRef {
    /// The policy's name.
    pub name: String,
    /// The spec that manages it (this plan's spec for its own), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// Policies (or operator policies) of the same highest priority that all match a
/// managed queue or exchange: the broker applies one of them, and which one is not
/// knowable, so the plan cannot be applied until a priority decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tie {
    /// The queue or exchange.
    pub id: ObjectId,
    /// Operator policies tie, not policies.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
    /// The priority they share.
    pub priority: i64,
    /// The tied policies, in name order.
    pub policies: Vec<PolicyRef>,
}

/// A policy or operator policy that is not the spec's and changes a setting the spec
/// gives a managed queue or exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// The queue or exchange.
    pub id: ObjectId,
    /// The policy that wins.
    pub policy: PolicyRef,
    /// It is an operator policy (applied beside the policy, its limits win when lower).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
    /// The policy of the spec it wins over, if the spec gives the object one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadows: Option<String>,
    /// Each setting changed: what the spec means and what the broker will apply.
    pub settings: Vec<SettingDrift>,
}

/// A policy or operator policy that is not the spec's and breaks what a managed queue
/// is for, with a setting the spec does not set itself (`model::role_hazards`): an
/// operator's `message-ttl` that makes parked messages expire, an `expires` that
/// deletes a delay tier with its retries. A setting the spec sets and another's
/// policy changes is [`Drift`] instead, never both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleHazard {
    /// The queue.
    pub id: ObjectId,
    /// What it is for.
    pub role: QueueRole,
    /// The spec that manages the policy, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The setting, the policy that sets it, what it does and what resolves it.
    #[serde(flatten)]
    pub hazard: Hazard,
}

/// One setting of a [`Drift`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingDrift {
    /// The policy key (`message-ttl`, …).
    pub key: String,
    /// The value the spec means.
    pub spec: Value,
    /// The value the broker will apply (`null`: none).
    pub applied: Value,
}

/// The tie of `winner` on `id`, if it is one; `owner` names the spec of a policy (or,
/// `true`, an operator policy).
pub fn tie_of(
    id: &ObjectId,
    winner: &Winner<'_, Policy>,
    operator: bool,
    owner: &dyn Fn(&Policy, bool) -> Option<String>,
) -> Option<Tie> {
    let tied = winner.tied();
    let first = tied.first()?;
    Some(Tie {
        id: id.clone(),
        operator,
        priority: first.priority,
        policies: tied
            .iter()
            .map(|p| PolicyRef {
                name: p.name.clone(),
                owner: owner(p, operator),
            })
            .collect(),
    })
}

/// What the policy that wins (`applied`) changes of what the spec's own policy
/// (`meant`) sets, when `applied` is another's; `None` when nothing the spec sets
/// changes.
pub fn policy_drift(
    id: &ObjectId,
    meant: Option<&Policy>,
    applied: Option<&Policy>,
    owner: &dyn Fn(&Policy, bool) -> Option<String>,
) -> Option<Drift> {
    let (meant, applied) = (meant?, applied?);
    if applied.name == meant.name {
        return None;
    }
    let settings: Vec<SettingDrift> = SETTINGS
        .iter()
        .filter_map(|key| {
            let spec = meant.definition.get(key)?;
            let now = applied.definition.get(key).cloned().unwrap_or(Value::Null);
            (spec != &now).then(|| SettingDrift {
                key: (*key).to_string(),
                spec: spec.clone(),
                applied: now,
            })
        })
        .collect();
    (!settings.is_empty()).then(|| Drift {
        id: id.clone(),
        policy: PolicyRef {
            name: applied.name.clone(),
            owner: owner(applied, false),
        },
        operator: false,
        shadows: Some(meant.name.clone()),
        settings,
    })
}

/// What an operator policy of another's (`operator`) changes of the settings the
/// spec means (`meant`: the spec's policy and its own operator policy, in that order).
pub fn operator_drift(
    id: &ObjectId,
    meant: &[&Policy],
    operator: Option<&Policy>,
    owner: &dyn Fn(&Policy, bool) -> Option<String>,
) -> Option<Drift> {
    let operator = operator?;
    if meant.iter().any(|p| p.name == operator.name) {
        return None;
    }
    let settings: Vec<SettingDrift> = SETTINGS
        .iter()
        .filter_map(|key| {
            let spec = meant.iter().find_map(|p| p.definition.get(key))?;
            let theirs = operator.definition.get(key)?;
            let applied = if LOWEST_WINS.contains(key) {
                match (spec.as_i64(), theirs.as_i64()) {
                    (Some(a), Some(b)) if b < a => theirs.clone(),
                    (Some(_), Some(_)) => spec.clone(),
                    _ => theirs.clone(),
                }
            } else {
                theirs.clone()
            };
            (&applied != spec).then(|| SettingDrift {
                key: (*key).to_string(),
                spec: spec.clone(),
                applied,
            })
        })
        .collect();
    (!settings.is_empty()).then(|| Drift {
        id: id.clone(),
        policy: PolicyRef {
            name: operator.name.clone(),
            owner: owner(operator, true),
        },
        operator: true,
        shadows: None,
        settings,
    })
}
