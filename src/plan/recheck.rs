//! A saved plan can only do what a fresh plan would do: at apply, the changes are
//! computed again from the plan's desired state and the broker as it is now, and the
//! plan is refused unless they are the same changes. An edited `changes` list, a plan
//! whose world moved, and a plan made against another broker are all refused.

use std::collections::BTreeSet;

use super::{Inputs, Plan, broker_id, build};
use crate::diff::Change;
use crate::model::password::Passwords;
use crate::model::record::{DamagedRecord, check_own, records};
use crate::model::{Definitions, ObjectId};

/// Why a saved plan does not apply to the broker as it is now.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Mismatch {
    /// The plan was made against another broker or cluster.
    #[error(
        "it was made against another broker (internal_cluster_id {planned}, this broker's is {now})"
    )]
    OtherBroker {
        /// The identity the plan was made against.
        planned: String,
        /// This broker's identity.
        now: String,
    },
    /// The changes needed now differ from the saved ones, or what they depend on
    /// changed.
    #[error("{0}")]
    Changes(String),
    /// An ownership record does not read.
    #[error(transparent)]
    DamagedRecord(#[from] DamagedRecord),
}

/// What identifies a change for the comparison (the plan-time message count and the
/// broker's binding handle are not part of it).
fn key(change: &Change) -> String {
    serde_json::json!([
        change.action,
        change.id,
        change.before,
        change.after,
        change.unmanaged
    ])
    .to_string()
}

/// Plans `saved`'s desired state again against `live` (its vhosts and the global
/// parameters), refusing only another broker and damaged records: for `apply SPEC`,
/// which plans again once it holds its locks (message counts are the caller's).
pub fn replan(
    saved: &Plan,
    live: &Definitions,
    protected_user: Option<String>,
) -> Result<Plan, Mismatch> {
    remade(saved, live, protected_user).map(|(plan, _)| plan)
}

/// [`replan`], with the objects the saved plan folded ([`Plan::unchanged`]) and found
/// again.
fn remade(
    saved: &Plan,
    live: &Definitions,
    protected_user: Option<String>,
) -> Result<(Plan, BTreeSet<ObjectId>), Mismatch> {
    let now = broker_id(live);
    if let Some(planned) = &saved.broker_id
        && now.as_ref() != Some(planned)
    {
        return Err(Mismatch::OtherBroker {
            planned: planned.clone(),
            now: now.unwrap_or_else(|| "not set".into()),
        });
    }
    let records = records(&live.global_parameters)?;
    check_own(&records, &saved.spec)?;
    let found = saved.desired_found_in(records.get(&saved.spec), live)?;
    let mut plan = build(Inputs {
        spec: &saved.spec,
        environment: saved.environment.as_deref(),
        target_version: saved.target_version.clone(),
        broker_version: saved.broker_version.clone(),
        desired: found.desired,
        passwords: &Passwords::default(),
        live,
        records,
        protected_user,
        prune_unmanaged: saved.prune_unmanaged,
        roles: &Default::default(),
    });
    // A saved plan does not keep its consumers' roles, so the hazards are the saved
    // plan's: they still hold, because apply refuses a plan whose dependencies (the
    // policy and operator policy that win on each managed queue) changed since.
    plan.hazards = saved.hazards.clone();
    Ok((plan, found.folded))
}

/// Computes `saved` again against `live` (its vhosts and the global parameters). The
/// fresh plan, with the saved plan's message counts for people, when its changes are
/// the saved ones.
pub fn recheck(
    saved: &Plan,
    live: &Definitions,
    protected_user: Option<String>,
) -> Result<Plan, Mismatch> {
    let (mut fresh, folded) = remade(saved, live, protected_user)?;
    if let Some(conflict) = fresh.conflicts.first() {
        return Err(Mismatch::Changes(format!(
            "{} is now managed by spec `{}`",
            conflict.id, conflict.owner
        )));
    }
    if let Some(refusal) = fresh.refusal() {
        return Err(Mismatch::Changes(format!("now {refusal}")));
    }
    let planned: BTreeSet<String> = saved.changes.iter().map(key).collect();
    let needed: BTreeSet<String> = fresh.changes.iter().map(key).collect();
    if planned != needed {
        let describe =
            |change: &Change| format!("{:?} {}", change.action, change.id).to_lowercase();
        let extra: Vec<String> = saved
            .changes
            .iter()
            .filter(|c| !needed.contains(&key(c)))
            .map(describe)
            .collect();
        let missing: Vec<String> = fresh
            .changes
            .iter()
            .filter(|c| !planned.contains(&key(c)))
            .map(describe)
            .collect();
        let mut parts = Vec::new();
        if !extra.is_empty() {
            parts.push(format!(
                "the plan has {} a fresh plan would not make (e.g. {})",
                crate::text::count(extra.len(), "change"),
                extra[0]
            ));
        }
        if !missing.is_empty() {
            parts.push(format!(
                "a fresh plan needs {} the plan does not have (e.g. {})",
                crate::text::count(missing.len(), "change"),
                missing[0]
            ));
        }
        return Err(Mismatch::Changes(parts.join("; ")));
    }
    if let (Some(planned), Some(now)) = (&saved.dependencies, &fresh.dependencies) {
        let now = saved.listed_dependencies(&folded, now)?;
        if let Some(difference) = super::depends::first_difference(planned, &now) {
            return Err(Mismatch::Changes(difference));
        }
    }
    for change in &mut fresh.changes {
        change.messages = saved
            .changes
            .iter()
            .find(|c| c.id == change.id && c.action == change.action)
            .and_then(|c| c.messages);
    }
    fresh.summarize();
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::diff::Action;
    use crate::model::objects::objects;
    use crate::model::password::{hash_password, hash_with_salt};
    use crate::model::{HashingAlgorithm, ObjectId, ObjectKind};

    fn definitions(value: Value) -> Definitions {
        serde_json::from_value(value).unwrap()
    }

    fn desired() -> Definitions {
        definitions(json!({
            "vhosts": [{"name": "shop"}],
            "users": [{"name": "app", "password_hash": hash_password("app", "pw", HashingAlgorithm::Sha256),
                       "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": []}],
            "queues": [{"name": "work", "vhost": "shop", "durable": true, "auto_delete": false,
                        "arguments": {"x-queue-type": "quorum"}}]
        }))
    }

    /// The broker: the vhost, the user with the same password under another salt, a
    /// queue `old` the spec no longer has (in its record) and the broker's identity.
    fn live_json() -> Value {
        json!({
            "vhosts": [{"name": "shop"}],
            "users": [{"name": "app", "password_hash": hash_with_salt(&[1, 2, 3, 4], "pw", HashingAlgorithm::Sha256),
                       "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": []}],
            "queues": [{"name": "old", "vhost": "shop", "durable": true, "auto_delete": false,
                        "arguments": {"x-queue-type": "classic"}}],
            "global_parameters": [
                {"name": "internal_cluster_id", "value": "rabbitmq-cluster-id-A"},
                {"name": "warren.shop", "value": {"format": 1, "spec": "shop", "serial": 1,
                  "objects": [["queue", "shop", "old"], ["user", null, "app"], ["vhost", null, "shop"]]}}
            ]
        })
    }

    fn plan_against(live: &Definitions) -> Plan {
        let passwords = Passwords::known([("app".to_string(), "pw".to_string())].into());
        build(Inputs {
            spec: "shop",
            environment: None,
            target_version: "4.1".into(),
            broker_version: None,
            desired: objects(&desired()),
            passwords: &passwords,
            live,
            records: records(&live.global_parameters).unwrap(),
            protected_user: None,
            prune_unmanaged: false,
            roles: &Default::default(),
        })
    }

    fn actions(plan: &Plan) -> Vec<(Action, String)> {
        plan.changes
            .iter()
            .map(|c| (c.action, c.id.name.clone()))
            .collect()
    }

    #[test]
    fn a_plan_rechecks_against_the_same_broker_and_ignores_unrelated_objects() {
        let live = definitions(live_json());
        let saved = plan_against(&live);
        assert_eq!(
            actions(&saved),
            vec![
                (Action::Delete, "old".into()),
                (Action::Create, "work".into())
            ],
            "an unchanged password under another salt is no change"
        );
        let fresh = recheck(&saved, &live, None).unwrap();
        assert_eq!(actions(&fresh), actions(&saved));
        // Another application's queue appears in the vhost: not this plan's business.
        let mut busier = live_json();
        busier["queues"].as_array_mut().unwrap().push(json!(
            {"name": "amq.gen-reply", "vhost": "shop", "durable": false, "auto_delete": true, "arguments": {}}
        ));
        assert!(recheck(&saved, &definitions(busier), None).is_ok());
    }

    /// `apply SPEC` plans again under its locks: the plan it shows and applies is for
    /// the environment the first one was made for.
    #[test]
    fn a_plan_made_again_keeps_its_environment() {
        let live = definitions(live_json());
        let mut saved = plan_against(&live);
        saved.environment = Some("prod".into());
        let again = replan(&saved, &live, None).unwrap();
        assert_eq!(again.environment.as_deref(), Some("prod"));
    }

    #[test]
    fn an_edited_plan_is_refused() {
        let live = definitions(live_json());
        let mut saved = plan_against(&live);
        let mut smuggled = saved.changes[0].clone();
        smuggled.id = ObjectId::in_vhost(ObjectKind::Queue, "shop", "handmade_msgs");
        saved.changes.push(smuggled);
        let refused = recheck(&saved, &live, None).unwrap_err().to_string();
        assert!(
            refused.contains("1 change a fresh plan would not make")
                && refused.contains("handmade_msgs"),
            "{refused}"
        );
        let mut dropped = plan_against(&live);
        dropped.changes.retain(|c| c.action != Action::Create);
        let refused = recheck(&dropped, &live, None).unwrap_err().to_string();
        assert!(
            refused.contains("a fresh plan needs 1 change "),
            "{refused}"
        );
    }

    #[test]
    fn a_plan_whose_world_moved_is_refused() {
        let saved = plan_against(&definitions(live_json()));
        let mut moved = live_json();
        moved["queues"][0]["arguments"]["x-queue-type"] = json!("quorum");
        assert!(matches!(
            recheck(&saved, &definitions(moved), None),
            Err(Mismatch::Changes(_))
        ));
    }

    #[test]
    fn a_plan_for_another_broker_is_refused() {
        let saved = plan_against(&definitions(live_json()));
        let mut other = live_json();
        other["global_parameters"][0]["value"] = json!("rabbitmq-cluster-id-B");
        let refused = recheck(&saved, &definitions(other), None).unwrap_err();
        assert!(matches!(refused, Mismatch::OtherBroker { .. }), "{refused}");
        assert!(refused.to_string().contains("rabbitmq-cluster-id-B"));
    }
}
