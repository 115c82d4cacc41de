//! Desired × live × ownership → the changes that make the broker match the spec.
//!
//! Both sides are normalised first ([`crate::model::objects`]), so a spec applied once
//! compares equal to the broker's state on every later run.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::objects::Objects;
use crate::model::password::{Passwords, is_hash_of};
use crate::model::{HashingAlgorithm, ObjectId, ObjectKind};

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The object does not exist yet.
    Create,
    /// The object exists and is changed in place.
    Update,
    /// An immutable property changed: the object is deleted and created again.
    Replace,
    /// The object is removed.
    Delete,
}

/// One change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// What happens.
    pub action: Action,
    /// To which object.
    pub id: ObjectId,
    /// The live value (normalised), for update, replace and delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// The desired value (normalised), for create, update and replace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    /// Why: the immutable properties that changed, or why an unchanged object is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Messages in a queue that is deleted or replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
    /// The object is not managed by this spec (deleted only with `--prune-unmanaged`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unmanaged: bool,
    /// The broker's handle needed to delete it (a binding's `properties_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
}

impl Change {
    /// A change with no reason, message count, handle, and managed by the spec: what
    /// the comparison makes before it learns more.
    pub fn new(
        action: Action,
        id: ObjectId,
        before: Option<Value>,
        after: Option<Value>,
    ) -> Change {
        Change {
            action,
            id,
            before,
            after,
            reason: None,
            messages: None,
            unmanaged: false,
            handle: None,
        }
    }

    /// Whether this creates an unchanged object again because an object it hangs on is
    /// replaced (a binding of a replaced queue): the only creates that carry a reason.
    pub fn is_recreated(&self) -> bool {
        self.action == Action::Create && self.reason.is_some()
    }

    /// Whether applying this change loses messages, as far as the plan knows: a
    /// removed queue that held messages when planned, or any removed stream (it keeps
    /// its log). Apply checks again at the moment of deletion, whatever this says.
    pub fn loses_data(&self) -> bool {
        matches!(self.action, Action::Delete | Action::Replace)
            && (self.messages.unwrap_or(0) > 0 || self.removes_stream())
    }

    /// Whether this deletes or replaces a stream.
    pub fn removes_stream(&self) -> bool {
        self.id.kind == ObjectKind::Queue
            && matches!(self.action, Action::Delete | Action::Replace)
            && self
                .before
                .as_ref()
                .is_some_and(|b| b["arguments"]["x-queue-type"] == "stream")
    }

    /// What the change loses, for people: `12 messages`, or a stream's log.
    pub fn loss(&self) -> String {
        if self.removes_stream() {
            "a stream's log".to_string()
        } else {
            crate::text::count(self.messages.unwrap_or(0), "message")
        }
    }
}

/// Who owns what on the broker.
#[derive(Debug, Clone, Default)]
pub struct Ownership {
    /// Objects this spec manages (from its record).
    pub managed: BTreeSet<ObjectId>,
    /// Objects other specs manage, with the owning spec's name.
    pub others: BTreeMap<ObjectId, String>,
    /// The user warren logs in as: never deleted.
    pub protected_user: Option<String>,
}

/// The outcome of a comparison.
#[derive(Debug, Clone, Default)]
pub struct Diff {
    /// Changes, in a stable order.
    pub changes: Vec<Change>,
    /// Live objects in the spec's scope that no spec manages (left alone).
    pub unmanaged: Vec<ObjectId>,
    /// Desired objects another spec manages, with its name.
    pub conflicts: Vec<(ObjectId, String)>,
}

/// Compares desired and live objects.
pub fn diff(
    desired: &Objects,
    live: &Objects,
    ownership: &Ownership,
    passwords: &Passwords,
    prune_unmanaged: bool,
) -> Diff {
    let mut result = Diff::default();
    for (id, want) in desired {
        if let Some(owner) = ownership.others.get(id) {
            result.conflicts.push((id.clone(), owner.clone()));
            continue;
        }
        match live.get(id) {
            None => result
                .changes
                .push(change(Action::Create, id, None, Some(want.clone()))),
            Some(have) => {
                let want = match id.kind {
                    ObjectKind::User => same_password_as_live(&id.name, want, have, passwords),
                    _ => want.clone(),
                };
                // A vhost's description, tags and default queue type are managed only
                // when the spec sets them (and when the other side says anything about them:
                // a definitions export of 3.10 carries no vhost metadata).
                let (want, have) = match id.kind {
                    ObjectKind::Vhost => (only_keys_of(&want, have), only_keys_of(have, &want)),
                    _ => (want, have.clone()),
                };
                let have = &have;
                if &want == have {
                    continue;
                }
                let immutable = matches!(id.kind, ObjectKind::Queue | ObjectKind::Exchange);
                let mut change = change(
                    if immutable {
                        Action::Replace
                    } else {
                        Action::Update
                    },
                    id,
                    Some(have.clone()),
                    Some(want.clone()),
                );
                if immutable {
                    change.reason = Some(changed_fields(have, &want).join(", "));
                }
                result.changes.push(change);
            }
        }
    }
    let scope_users: BTreeSet<&str> = live
        .keys()
        .filter(|id| id.kind == ObjectKind::Permission)
        .map(|id| id.name.as_str())
        .collect();
    for (id, have) in live {
        if desired.contains_key(id) || ownership.others.contains_key(id) {
            continue;
        }
        let protected = ownership.protected_user.as_deref().is_some_and(|user| {
            matches!(
                id.kind,
                ObjectKind::User | ObjectKind::Permission | ObjectKind::TopicPermission
            ) && (id.name == user || id.name.starts_with(&format!("{user} on ")))
        });
        if ownership.managed.contains(id) && !protected {
            result
                .changes
                .push(change(Action::Delete, id, Some(have.clone()), None));
            continue;
        }
        let in_scope = match id.kind {
            ObjectKind::User => scope_users.contains(id.name.as_str()),
            ObjectKind::Vhost | ObjectKind::GlobalParameter => false,
            _ => true,
        };
        if !in_scope || protected {
            continue;
        }
        if prune_unmanaged {
            let mut delete = change(Action::Delete, id, Some(have.clone()), None);
            delete.unmanaged = true;
            result.changes.push(delete);
        } else {
            result.unmanaged.push(id.clone());
        }
    }
    recreate_bindings_of_replaced(desired, &mut result.changes);
    result.changes.sort_by(|a, b| {
        (a.id.vhost.as_ref(), a.id.kind, &a.id.name, a.action).cmp(&(
            b.id.vhost.as_ref(),
            b.id.kind,
            &b.id.name,
            b.action,
        ))
    });
    result
}

fn only_keys_of(value: &Value, keys_from: &Value) -> Value {
    match (value, keys_from) {
        (Value::Object(map), Value::Object(keys)) => Value::Object(
            map.iter()
                .filter(|(k, _)| keys.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => value.clone(),
    }
}

fn change(action: Action, id: &ObjectId, before: Option<Value>, after: Option<Value>) -> Change {
    Change::new(action, id.clone(), before, after)
}

/// Deleting a queue or exchange removes its bindings: bindings that are unchanged but
/// touch a replaced object must be created again.
fn recreate_bindings_of_replaced(desired: &Objects, changes: &mut Vec<Change>) {
    let replaced: BTreeSet<(Option<String>, String, ObjectKind)> = changes
        .iter()
        .filter(|c| c.action == Action::Replace)
        .map(|c| (c.id.vhost.clone(), c.id.name.clone(), c.id.kind))
        .collect();
    if replaced.is_empty() {
        return;
    }
    let planned: BTreeSet<ObjectId> = changes.iter().map(|c| c.id.clone()).collect();
    for (id, value) in desired {
        if id.kind != ObjectKind::Binding || planned.contains(id) {
            continue;
        }
        let source = value["source"].as_str().unwrap_or_default().to_string();
        let destination = value["destination"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let destination_kind = if value["destination_type"] == "exchange" {
            ObjectKind::Exchange
        } else {
            ObjectKind::Queue
        };
        let touched = replaced
            .contains(&(id.vhost.clone(), source.clone(), ObjectKind::Exchange))
            .then_some(source)
            .or_else(|| {
                replaced
                    .contains(&(id.vhost.clone(), destination.clone(), destination_kind))
                    .then_some(destination)
            });
        if let Some(name) = touched {
            let mut create = change(Action::Create, id, None, Some(value.clone()));
            create.reason = Some(format!("`{name}` is replaced, which removes this binding"));
            changes.push(create);
        }
    }
}

/// The differing fields of two objects, as `field: old → new`.
pub fn changed_fields(before: &Value, after: &Value) -> Vec<String> {
    let mut fields = Vec::new();
    collect_changes("", before, after, &mut fields);
    fields
}

fn collect_changes(prefix: &str, before: &Value, after: &Value, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let keys: BTreeSet<&String> = b.keys().chain(a.keys()).collect();
            for key in keys {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                match (b.get(key), a.get(key)) {
                    (Some(x), Some(y)) => collect_changes(&path, x, y, out),
                    (Some(x), None) => out.push(format!("{path}: {x} → (none)")),
                    (None, Some(y)) => out.push(format!("{path}: (none) → {y}")),
                    (None, None) => {}
                }
            }
        }
        (x, y) if x != y => out.push(format!("{prefix}: {x} → {y}")),
        _ => {}
    }
}

/// When the live hash is the desired password under the live salt, the password did
/// not change: use the live hash so the user compares equal. A password not known
/// while planning is not compared: the live hash stands in for it.
fn same_password_as_live(user: &str, want: &Value, have: &Value, passwords: &Passwords) -> Value {
    let mut want = want.clone();
    if passwords.unknown.contains_key(user) {
        for key in ["password_hash", "hashing_algorithm"] {
            want[key] = have[key].clone();
        }
        return want;
    }
    let Some(password) = passwords.clear.get(user) else {
        return want;
    };
    let Some(live_hash) = have["password_hash"].as_str() else {
        return want;
    };
    let algorithm = match have["hashing_algorithm"].as_str() {
        None => HashingAlgorithm::Sha256,
        Some(module) => match HashingAlgorithm::from_module(module) {
            Some(algorithm) => algorithm,
            None => return want,
        },
    };
    if want["hashing_algorithm"] != have["hashing_algorithm"] {
        return want;
    }
    if is_hash_of(live_hash, algorithm, password) {
        want["password_hash"] = Value::from(live_hash);
    }
    want
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identical_sides_make_no_changes() {
        let mut objects = Objects::new();
        objects.insert(
            ObjectId::in_vhost(ObjectKind::Queue, "v", "q"),
            json!({"durable": true}),
        );
        let result = diff(
            &objects,
            &objects,
            &Ownership::default(),
            &Passwords::default(),
            false,
        );
        assert!(result.changes.is_empty() && result.unmanaged.is_empty());
    }

    #[test]
    fn queues_are_replaced_and_their_bindings_recreated_policies_updated() {
        let queue = ObjectId::in_vhost(ObjectKind::Queue, "v", "q");
        let policy = ObjectId::in_vhost(ObjectKind::Policy, "v", "p");
        let binding = ObjectId::in_vhost(ObjectKind::Binding, "v", "x -> queue q [k]");
        let mut desired = Objects::new();
        desired.insert(
            queue.clone(),
            json!({"arguments": {"x-queue-type": "quorum"}}),
        );
        desired.insert(policy.clone(), json!({"priority": 1}));
        desired.insert(
            binding.clone(),
            json!({"source": "x", "destination": "q", "destination_type": "queue"}),
        );
        let mut live = desired.clone();
        live.insert(
            queue.clone(),
            json!({"arguments": {"x-queue-type": "classic"}}),
        );
        live.insert(policy.clone(), json!({"priority": 0}));
        let result = diff(
            &desired,
            &live,
            &Ownership::default(),
            &Passwords::default(),
            false,
        );
        let actions: Vec<(Action, &str)> = result
            .changes
            .iter()
            .map(|c| (c.action, c.id.name.as_str()))
            .collect();
        assert!(actions.contains(&(Action::Replace, "q")));
        assert!(actions.contains(&(Action::Update, "p")));
        assert!(actions.contains(&(Action::Create, "x -> queue q [k]")));
        let replace = result
            .changes
            .iter()
            .find(|c| c.action == Action::Replace)
            .unwrap();
        assert_eq!(
            replace.reason.as_deref(),
            Some("arguments.x-queue-type: \"classic\" → \"quorum\"")
        );
    }

    #[test]
    fn only_managed_objects_are_deleted_and_others_are_refused() {
        let mine = ObjectId::in_vhost(ObjectKind::Queue, "v", "mine");
        let handmade = ObjectId::in_vhost(ObjectKind::Queue, "v", "handmade");
        let theirs = ObjectId::in_vhost(ObjectKind::Queue, "v", "theirs");
        let mut live = Objects::new();
        for q in [&mine, &handmade, &theirs] {
            live.insert(q.clone(), json!({}));
        }
        let mut desired = Objects::new();
        desired.insert(theirs.clone(), json!({}));
        let ownership = Ownership {
            managed: [mine.clone()].into(),
            others: [(theirs.clone(), "billing".to_string())].into(),
            protected_user: None,
        };
        let result = diff(&desired, &live, &ownership, &Passwords::default(), false);
        assert_eq!(result.changes.len(), 1);
        assert_eq!(
            (result.changes[0].action, &result.changes[0].id),
            (Action::Delete, &mine)
        );
        assert_eq!(result.unmanaged, vec![handmade.clone()]);
        assert_eq!(result.conflicts, vec![(theirs, "billing".to_string())]);
        let pruned = diff(&desired, &live, &ownership, &Passwords::default(), true);
        assert!(
            pruned
                .changes
                .iter()
                .any(|c| c.id == handmade && c.unmanaged)
        );
    }

    #[test]
    fn an_unchanged_password_under_another_salt_is_not_a_change() {
        let user = ObjectId::global(ObjectKind::User, "u");
        let broker_hash =
            crate::model::password::hash_with_salt(&[9, 9, 9, 9], "pw", HashingAlgorithm::Sha256);
        let ours = crate::model::password::hash_password("u", "pw", HashingAlgorithm::Sha256);
        let algorithm = "rabbit_password_hashing_sha256";
        let desired: Objects = [(
            user.clone(),
            json!({"password_hash": ours, "hashing_algorithm": algorithm}),
        )]
        .into();
        let live: Objects = [(
            user.clone(),
            json!({"password_hash": broker_hash, "hashing_algorithm": algorithm}),
        )]
        .into();
        let secrets = Passwords::known([("u".to_string(), "pw".to_string())].into());
        assert!(
            diff(&desired, &live, &Ownership::default(), &secrets, false)
                .changes
                .is_empty()
        );
        let changed = Passwords::known([("u".to_string(), "new".to_string())].into());
        let desired_new: Objects = [(user.clone(), json!({"password_hash": crate::model::password::hash_password("u", "new", HashingAlgorithm::Sha256), "hashing_algorithm": algorithm}))].into();
        assert_eq!(
            diff(&desired_new, &live, &Ownership::default(), &changed, false).changes[0].action,
            Action::Update
        );
    }
}
