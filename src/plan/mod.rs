//! A plan: the changes, with everything needed to apply them later and to notice that
//! the broker changed in between. Saved as JSON by `warren plan -o`, read by
//! `warren apply PLAN`; the format is documented in docs/plan-format.md.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod against;

pub use against::{PlanError, Planned, against_broker, against_definitions, spec_name};

use crate::compile::Compiled;
use crate::diff::{self, Action, Change, Ownership};
use crate::model::objects::{Objects, normalized_binding_id, objects};
use crate::model::record::Record;
use crate::model::{Definitions, ObjectId, ObjectKind};

/// Identifies a plan document.
pub const PLAN_FORMAT: &str = "warren-plan/1";

/// A plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Always [`PLAN_FORMAT`].
    pub format: String,
    /// The spec's name (its ownership record is `warren.<spec>`).
    pub spec: String,
    /// The version the definitions were compiled for.
    pub target_version: String,
    /// The broker's version, when planned against a broker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_version: Option<String>,
    /// The vhosts compared: declared by the spec or managed by it before.
    pub vhosts: Vec<String>,
    /// The serial of the spec's record when the plan was made (0: none).
    pub serial: u64,
    /// Fingerprint of the broker's state in scope when the plan was made.
    pub live_fingerprint: String,
    /// Every object the spec manages once the plan is applied.
    pub managed: Vec<ObjectId>,
    /// The changes, grouped by vhost and kind.
    pub changes: Vec<Change>,
    /// Objects in scope that no spec manages (left alone).
    #[serde(default)]
    pub unmanaged: Vec<ObjectId>,
    /// Desired objects another spec manages: the plan cannot be applied.
    #[serde(default)]
    pub conflicts: Vec<Conflict>,
    /// Counts by action.
    pub summary: Summary,
}

/// An object another spec manages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conflict {
    /// The object.
    pub id: ObjectId,
    /// The spec that manages it.
    pub owner: String,
}

/// Counts of a plan's changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Objects created.
    pub create: usize,
    /// Objects updated in place.
    pub update: usize,
    /// Objects deleted and created again.
    pub replace: usize,
    /// Objects deleted.
    pub delete: usize,
    /// Changes that lose messages.
    pub data_loss: usize,
}

impl Plan {
    /// Whether applying the plan would change anything.
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// Recounts the summary (after message counts were filled in).
    pub fn summarize(&mut self) {
        let mut summary = Summary::default();
        for change in &self.changes {
            match change.action {
                Action::Create => summary.create += 1,
                Action::Update => summary.update += 1,
                Action::Replace => summary.replace += 1,
                Action::Delete => summary.delete += 1,
            }
            if change.loses_data() {
                summary.data_loss += 1;
            }
        }
        self.summary = summary;
    }

    /// The objects the plan manages or changes (what its fingerprint covers
    /// outside its vhosts).
    pub fn relevant_ids(&self) -> BTreeSet<ObjectId> {
        self.managed
            .iter()
            .chain(self.changes.iter().map(|c| &c.id))
            .cloned()
            .collect()
    }

    /// Records the message counts of [`Plan::queues_needing_counts`], in that order,
    /// and recounts the summary.
    pub fn set_message_counts(&mut self, queues: &[(String, String)], counts: Vec<Option<u64>>) {
        let counts: BTreeMap<(&str, &str), Option<u64>> = queues
            .iter()
            .map(|(vhost, name)| (vhost.as_str(), name.as_str()))
            .zip(counts)
            .collect();
        for change in &mut self.changes {
            if change.id.kind != ObjectKind::Queue {
                continue;
            }
            let key = (
                change.id.vhost.as_deref().unwrap_or_default(),
                change.id.name.as_str(),
            );
            if let Some(count) = counts.get(&key) {
                change.messages = *count;
            }
        }
        self.summarize();
    }

    /// Queues whose message counts the plan needs: deleted or replaced.
    pub fn queues_needing_counts(&self) -> Vec<(String, String)> {
        self.changes
            .iter()
            .filter(|c| {
                c.id.kind == ObjectKind::Queue
                    && matches!(c.action, Action::Delete | Action::Replace)
            })
            .map(|c| (c.id.vhost.clone().unwrap_or_default(), c.id.name.clone()))
            .collect()
    }
}

/// Everything a plan is made from.
pub struct Inputs<'a> {
    /// Spec name.
    pub spec: &'a str,
    /// Target version.
    pub target_version: String,
    /// Broker version, if planning against a broker.
    pub broker_version: Option<String>,
    /// Compiled spec.
    pub desired: &'a Compiled,
    /// Live definitions (of at least the vhosts in scope).
    pub live: &'a Definitions,
    /// Every spec's record found on the broker.
    pub records: BTreeMap<String, Record>,
    /// The user warren logs in as (never deleted).
    pub protected_user: Option<String>,
    /// Delete objects no spec manages.
    pub prune_unmanaged: bool,
    /// The desired objects, when the caller computed them already (`warren plan` does
    /// while the broker is being read); computed from `desired` otherwise.
    pub desired_objects: Option<Objects>,
}

/// The vhosts a spec's plan looks at: declared ones and ones it managed before.
pub fn scope(desired: &Definitions, record: Option<&Record>) -> Vec<String> {
    let mut vhosts: BTreeSet<String> = desired.vhosts.iter().map(|v| v.name.clone()).collect();
    for id in record.map(Record::object_ids).unwrap_or_default() {
        match (id.vhost, id.kind) {
            (Some(vhost), _) => vhosts.insert(vhost),
            (None, ObjectKind::Vhost) => vhosts.insert(id.name),
            (None, _) => false,
        };
    }
    vhosts.into_iter().collect()
}

/// Live objects within a scope: vhost-scoped objects of those vhosts, and users.
pub fn live_objects(live: &Definitions, vhosts: &[String]) -> Objects {
    objects(live)
        .into_iter()
        .filter(|(id, _)| match (&id.vhost, id.kind) {
            (Some(vhost), _) => vhosts.contains(vhost),
            (None, ObjectKind::Vhost) => vhosts.contains(&id.name),
            (None, _) => true,
        })
        .collect()
}

/// A stable fingerprint of what a plan depends on: the record serial, every live object
/// in its vhosts (`live` is already limited to them, see [`live_objects`]) and, of the
/// broker-wide objects (users, global parameters), only those it manages or changes.
/// Other teams' users and records change all the time and must not make a plan stale.
pub fn fingerprint(live: &Objects, relevant: &BTreeSet<ObjectId>, serial: u64) -> String {
    let mut hasher = Sha256::new();
    hasher.update(serial.to_le_bytes());
    let depended_on = live.iter().filter(|(id, _)| {
        id.vhost.is_some() || id.kind == ObjectKind::Vhost || relevant.contains(id)
    });
    for (id, value) in depended_on {
        hasher.update(serde_json::to_vec(id).unwrap_or_default());
        hasher.update(serde_json::to_vec(value).unwrap_or_default());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Builds a plan (message counts are filled in by the caller for
/// [`Plan::queues_needing_counts`], see [`Plan::set_message_counts`]).
pub fn build(inputs: Inputs<'_>) -> Plan {
    let record = inputs.records.get(inputs.spec);
    let vhosts = scope(&inputs.desired.definitions, record);
    let desired = match inputs.desired_objects {
        Some(objects) => objects,
        None => objects(&inputs.desired.definitions),
    };
    let live = live_objects(inputs.live, &vhosts);
    let mut ownership = Ownership {
        managed: record.map(Record::object_ids).unwrap_or_default(),
        protected_user: inputs.protected_user.clone(),
        ..Ownership::default()
    };
    for (spec, other) in &inputs.records {
        if spec != inputs.spec {
            for id in other.object_ids() {
                ownership.others.insert(id, spec.clone());
            }
        }
    }
    let result = diff::diff(
        &desired,
        &live,
        &ownership,
        &inputs.desired.passwords,
        inputs.prune_unmanaged,
    );
    let serial = record.map(|r| r.serial).unwrap_or(0);
    let mut changes = result.changes;
    attach_binding_handles(&mut changes, inputs.live);
    let mut plan = Plan {
        format: PLAN_FORMAT.to_string(),
        spec: inputs.spec.to_string(),
        target_version: inputs.target_version,
        broker_version: inputs.broker_version,
        vhosts: vhosts.clone(),
        serial,
        live_fingerprint: String::new(),
        managed: desired.keys().cloned().collect(),
        changes,
        unmanaged: result.unmanaged,
        conflicts: result
            .conflicts
            .into_iter()
            .map(|(id, owner)| Conflict { id, owner })
            .collect(),
        summary: Summary::default(),
    };
    plan.summarize();
    plan.live_fingerprint = fingerprint(&live, &plan.relevant_ids(), serial);
    plan
}

/// Bindings are deleted by their `properties_key`, which only the broker knows.
fn attach_binding_handles(changes: &mut [Change], live: &Definitions) {
    let handles: BTreeMap<ObjectId, String> = live
        .bindings
        .iter()
        .filter_map(|binding| {
            let key = binding.extra.get("properties_key")?.as_str()?.to_string();
            Some((normalized_binding_id(binding), key))
        })
        .collect();
    for change in changes.iter_mut() {
        if change.id.kind == ObjectKind::Binding && change.action == Action::Delete {
            change.handle = handles.get(&change.id).cloned();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definitions(json: serde_json::Value) -> Definitions {
        serde_json::from_value(json).unwrap()
    }

    fn base() -> serde_json::Value {
        serde_json::json!({
            "vhosts": [{"name": "orders"}],
            "users": [{"name": "orders-app", "password_hash": "h1", "tags": []}],
            "queues": [{"name": "work", "vhost": "orders", "durable": true, "auto_delete": false, "arguments": {}}]
        })
    }

    fn print(live: &Definitions) -> String {
        let relevant = BTreeSet::from([ObjectId {
            kind: ObjectKind::User,
            vhost: None,
            name: "orders-app".into(),
        }]);
        fingerprint(&live_objects(live, &["orders".into()]), &relevant, 3)
    }

    #[test]
    fn another_teams_user_does_not_make_a_plan_stale() {
        let before = definitions(base());
        let mut after = base();
        after["users"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"name": "billing-app", "password_hash": "h2", "tags": []}));
        assert_eq!(print(&before), print(&definitions(after)));
    }

    #[test]
    fn a_change_in_the_plans_vhost_or_to_its_user_makes_it_stale() {
        let before = print(&definitions(base()));
        let mut queue_added = base();
        queue_added["queues"].as_array_mut().unwrap().push(
            serde_json::json!({"name": "other", "vhost": "orders", "durable": true, "auto_delete": false, "arguments": {}}),
        );
        assert_ne!(before, print(&definitions(queue_added)));
        let mut user_changed = base();
        user_changed["users"][0]["password_hash"] = "h3".into();
        assert_ne!(before, print(&definitions(user_changed)));
    }
}
