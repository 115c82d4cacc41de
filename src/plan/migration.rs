//! Queues whose replacement `apply --migrate` carries out blue/green, and migrations a
//! stopped apply left half done.
//!
//! A queue whose type, durability or arguments change must be deleted and declared
//! again. As a plain replace that loses what it holds and drops what is published
//! while it is gone; a migration moves its messages to a temporary queue and back
//! (docs/migration.md). The plan finds both kinds here, from its changes and from the
//! broker: a temporary queue named by [`crate::model::migration`] beside a queue the
//! spec declares is a migration under way, whatever the spec's record says (a killed
//! apply writes no record).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::diff::{Action, Change};
use crate::model::effective::CompiledPolicies;
use crate::model::migration::{migrated_queue, temporary_name};
use crate::model::objects::Objects;
use crate::model::{ObjectId, ObjectKind, Policy, QueueType, TargetVersion, queue_arguments};

/// Where a migration stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The queue still has its old declaration: its bindings and messages move to the
    /// temporary queue, then it is deleted once the broker finds it empty.
    MoveOut,
    /// The queue is (or is about to be) declared as the spec says: the temporary
    /// queue's bindings and messages move back into it, then the temporary queue and
    /// exchange are deleted.
    MoveBack,
}

/// One queue migration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Migration {
    /// The queue: its name does not change.
    pub queue: ObjectId,
    /// The temporary queue (and the name of the fanout exchange and shovel that move
    /// the messages).
    pub temporary: String,
    /// Where it stands.
    pub stage: Stage,
    /// The temporary queue's declaration (normal form): the queue's new one, with the
    /// settings its policies give it written as arguments, so that dead-lettering and
    /// delays keep working under the temporary name.
    pub temporary_value: Value,
    /// The queue's declaration as the spec wants it (normal form).
    pub after: Value,
    /// Messages waiting in the temporary queue when planned (for a migration under
    /// way); the old queue's count is its replace change's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporary_messages: Option<u64>,
    /// The queues that dead-letter to this one by name (the default exchange, with the
    /// queue's name as routing key), such as a delay queue that returns to its work
    /// queue: what they dead-letter in the instant the queue is deleted and declared
    /// anew is dropped by the broker, as a publish by name is. A return through an
    /// exchange has no such instant (the migration moves its binding first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub returned_by_name: Vec<String>,
}

impl Migration {
    fn vhost(&self) -> &str {
        self.queue.vhost.as_deref().unwrap_or_default()
    }

    /// Whether `change` is carried out by this migration rather than by the apply's
    /// phases: the queue's replacement, and the creation of the bindings into it that
    /// the replacement takes away (they are made once it is declared anew).
    pub fn carries_out(&self, change: &Change) -> bool {
        if change.id.vhost != self.queue.vhost {
            return false;
        }
        match change.id.kind {
            ObjectKind::Queue => change.id.name == self.queue.name,
            ObjectKind::Binding => {
                change.action == Action::Create
                    && change.after.as_ref().is_some_and(|after| {
                        after["destination_type"] == "queue"
                            && after["destination"] == self.queue.name.as_str()
                    })
            }
            _ => false,
        }
    }

    /// The bindings the spec wants into the queue (their normal forms).
    pub fn desired_bindings<'a>(&self, desired: &'a Objects) -> Vec<&'a Value> {
        desired
            .iter()
            .filter(|(id, value)| {
                id.kind == ObjectKind::Binding
                    && id.vhost.as_deref() == Some(self.vhost())
                    && value["destination_type"] == "queue"
                    && value["destination"] == self.queue.name.as_str()
            })
            .map(|(_, value)| value)
            .collect()
    }
}

/// The queues whose types, durability or arguments change and can be migrated, and
/// the migrations under way, for the queues the spec declares.
///
/// `temporaries` are the live migration objects of the plan's vhosts, `live` the
/// broker's other objects there (normal form): the queues among them that dead-letter
/// to a migrated queue by name are named in its migration.
pub fn find(
    desired: &Objects,
    temporaries: &Objects,
    live: &Objects,
    changes: &[Change],
    target: TargetVersion,
) -> Vec<Migration> {
    let policies = desired_policies(desired);
    let compiled = CompiledPolicies::new(policies.iter());
    let replaced: BTreeMap<&ObjectId, &Change> = changes
        .iter()
        .filter(|c| c.id.kind == ObjectKind::Queue && c.action == Action::Replace)
        .map(|c| (&c.id, c))
        .collect();
    let mut migrations = Vec::new();
    for (id, after) in desired {
        if id.kind != ObjectKind::Queue {
            continue;
        }
        let Some(temporary) = temporary_name(&id.name) else {
            continue;
        };
        let temporary_id = ObjectId::new(ObjectKind::Queue, id.vhost.as_deref(), &temporary);
        let under_way = temporaries.get(&temporary_id);
        let stage = match (replaced.get(id), under_way) {
            (Some(change), _) if migratable(change) => Stage::MoveOut,
            (Some(_), None) | (None, None) => continue,
            (Some(_), Some(_)) | (None, Some(_)) => Stage::MoveBack,
        };
        let temporary_value = match under_way {
            Some(value) => value.clone(),
            None => temporary_declaration(id, after, &compiled, target),
        };
        migrations.push(Migration {
            queue: id.clone(),
            temporary,
            stage,
            temporary_value,
            after: after.clone(),
            temporary_messages: None,
            returned_by_name: Vec::new(),
        });
    }
    if !migrations.is_empty() {
        let by_name = dead_lettered_by_name(desired, live, &compiled, target);
        for migration in &mut migrations {
            let key = (migration.queue.vhost.clone(), migration.queue.name.clone());
            migration.returned_by_name = by_name.get(&key).cloned().unwrap_or_default();
        }
    }
    migrations
}

/// For each queue that some queue dead-letters to by name, the names of those queues
/// (sorted, each once), from the spec's queues and the broker's: a dead-letter
/// exchange of `""` (the default exchange) with a dead-letter routing key, as queue
/// arguments or, for a queue the spec declares, from the policy that will apply to it
/// (arguments win, as on the broker). Migration temporaries are left out.
fn dead_lettered_by_name(
    desired: &Objects,
    live_queues: &Objects,
    policies: &CompiledPolicies<'_, Policy>,
    target: TargetVersion,
) -> BTreeMap<(Option<String>, String), Vec<String>> {
    let mut by_name: BTreeMap<(Option<String>, String), Vec<String>> = BTreeMap::new();
    let queues = desired
        .iter()
        .map(|entry| (entry, true))
        .chain(live_queues.iter().map(|entry| (entry, false)));
    for ((id, value), declared) in queues {
        if id.kind != ObjectKind::Queue || is_migration_object(id, value) {
            continue;
        }
        let policy = declared
            .then(|| {
                let queue_type = QueueType::from_name(
                    value["arguments"]["x-queue-type"]
                        .as_str()
                        .unwrap_or("classic"),
                );
                let vhost = id.vhost.as_deref().unwrap_or_default();
                policies
                    .choose(vhost, &id.name, queue_type, target)
                    .winner
                    .one()
            })
            .flatten();
        let setting = |argument: &str, key: &str| {
            value["arguments"][argument]
                .as_str()
                .or_else(|| policy.and_then(|p| p.definition.get(key)?.as_str()))
        };
        let exchange = setting("x-dead-letter-exchange", "dead-letter-exchange");
        let routing_key = setting("x-dead-letter-routing-key", "dead-letter-routing-key");
        if let (Some(""), Some(target_queue)) = (exchange, routing_key)
            && target_queue != id.name
        {
            let feeders = by_name
                .entry((id.vhost.clone(), target_queue.to_string()))
                .or_default();
            if !feeders.contains(&id.name) {
                feeders.push(id.name.clone());
            }
        }
    }
    for feeders in by_name.values_mut() {
        feeders.sort();
    }
    by_name
}

/// Whether a replaced queue can be migrated: a stream neither gives its log to a
/// shovel as a queue does nor can be checked empty, so streams stay plain replaces.
fn migratable(change: &Change) -> bool {
    let is_stream = |value: &Option<Value>| {
        value
            .as_ref()
            .is_some_and(|v| v["arguments"]["x-queue-type"] == "stream")
    };
    !is_stream(&change.before) && !is_stream(&change.after)
}

/// The desired policies of the plan, as the broker will hold them.
fn desired_policies(desired: &Objects) -> Vec<Policy> {
    desired
        .iter()
        .filter(|(id, _)| id.kind == ObjectKind::Policy)
        .filter_map(|(id, value)| {
            let mut entry = value.clone();
            entry["name"] = json!(id.name);
            entry["vhost"] = json!(id.vhost);
            serde_json::from_value(entry).ok()
        })
        .collect()
}

/// The temporary queue of `queue`: declared as the spec declares the queue, plus, as
/// arguments, every setting that the policy which will apply to the queue gives it and
/// a queue of that type takes as an argument (the temporary name may not be selected
/// by that policy). `expires` is left out: the temporary queue must not vanish while
/// it holds the messages.
fn temporary_declaration(
    queue: &ObjectId,
    after: &Value,
    policies: &CompiledPolicies<'_, Policy>,
    target: TargetVersion,
) -> Value {
    let mut value = after.clone();
    let queue_type = QueueType::from_name(
        after["arguments"]["x-queue-type"]
            .as_str()
            .unwrap_or("classic"),
    );
    let vhost = queue.vhost.as_deref().unwrap_or_default();
    let Some(policy) = policies
        .choose(vhost, &queue.name, queue_type, target)
        .winner
        .one()
    else {
        return value;
    };
    if !value["arguments"].is_object() {
        value["arguments"] = json!({});
    }
    let arguments = value["arguments"].as_object_mut().expect("an object");
    for (key, setting) in &policy.definition {
        if key == "expires" {
            continue;
        }
        let argument = format!("x-{key}");
        let accepted = queue_arguments::find(&argument)
            .is_some_and(|known| known.accepted_by(queue_type, target));
        if accepted && !arguments.contains_key(&argument) {
            arguments.insert(argument, setting.clone());
        }
    }
    value
}

/// Whether a live object is part of a migration (its temporary queue, exchange, their
/// bindings, its shovel): no spec's object, never compared or shown as unmanaged.
pub fn is_migration_object(id: &ObjectId, value: &Value) -> bool {
    match id.kind {
        ObjectKind::Queue | ObjectKind::Exchange => migrated_queue(&id.name).is_some(),
        ObjectKind::Binding => ["source", "destination"]
            .iter()
            .any(|end| value[*end].as_str().and_then(migrated_queue).is_some()),
        ObjectKind::Parameter => id
            .name
            .strip_prefix("shovel/")
            .and_then(migrated_queue)
            .is_some(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(name: &str) -> ObjectId {
        ObjectId::in_vhost(ObjectKind::Queue, "v", name)
    }

    fn classic() -> Value {
        json!({"durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}})
    }

    fn quorum() -> Value {
        json!({"durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum"}})
    }

    fn replace(name: &str) -> Change {
        Change {
            messages: Some(3),
            ..Change::new(
                Action::Replace,
                queue(name),
                Some(classic()),
                Some(quorum()),
            )
        }
    }

    #[test]
    fn a_replaced_queue_migrates_through_a_temporary_queue_that_keeps_its_policy() {
        let mut desired = Objects::new();
        desired.insert(queue("orders"), quorum());
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "dlx"),
            json!({"pattern": "^orders$", "apply-to": "queues", "priority": 0,
                   "definition": {"dead-letter-exchange": "orders.retry", "expires": 60000,
                                  "max-length": 10}}),
        );
        let live = Objects::new();
        let found = find(
            &desired,
            &live,
            &Objects::new(),
            &[replace("orders")],
            TargetVersion::V4_0,
        );
        assert_eq!(found.len(), 1);
        let migration = &found[0];
        assert_eq!(migration.stage, Stage::MoveOut);
        assert_eq!(migration.temporary, "warren.migrate.orders");
        let arguments = &migration.temporary_value["arguments"];
        assert_eq!(arguments["x-dead-letter-exchange"], "orders.retry");
        assert_eq!(arguments["x-queue-type"], "quorum");
        assert!(arguments.get("x-expires").is_none(), "{arguments}");
        assert!(
            arguments.get("x-queue-mode").is_none(),
            "quorum queues refuse it"
        );
    }

    #[test]
    fn a_temporary_queue_on_the_broker_is_a_migration_under_way() {
        let mut desired = Objects::new();
        desired.insert(queue("orders"), quorum());
        desired.insert(queue("other"), quorum());
        let mut live = Objects::new();
        live.insert(queue("warren.migrate.orders"), quorum());
        let found = find(&desired, &live, &Objects::new(), &[], TargetVersion::V4_0);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].stage, Stage::MoveBack);
        assert_eq!(found[0].temporary_value, quorum());
        // Old queue still there: the move out goes on.
        let found = find(
            &desired,
            &live,
            &Objects::new(),
            &[replace("orders")],
            TargetVersion::V4_0,
        );
        assert_eq!(found[0].stage, Stage::MoveOut);
    }

    #[test]
    fn the_queues_that_dead_letter_to_a_migrated_one_by_name_are_named() {
        let by_name = |key: &str| {
            json!({"durable": true, "auto_delete": false,
                   "arguments": {"x-queue-type": "classic", "x-dead-letter-exchange": "",
                                 "x-dead-letter-routing-key": key}})
        };
        let mut desired = Objects::new();
        desired.insert(queue("orders"), quorum());
        // A delay queue returning by name, from its arguments.
        desired.insert(queue("orders.retry.1"), by_name("orders"));
        // One returning through an exchange: no instant to meet.
        desired.insert(
            queue("orders.retry.2"),
            json!({"durable": true, "auto_delete": false,
                   "arguments": {"x-dead-letter-exchange": "orders.return"}}),
        );
        // One that a policy makes return by name.
        desired.insert(queue("orders.late"), classic());
        desired.insert(
            ObjectId::in_vhost(ObjectKind::Policy, "v", "late"),
            json!({"pattern": "^orders\\.late$", "apply-to": "queues", "priority": 0,
                   "definition": {"dead-letter-exchange": "", "dead-letter-routing-key": "orders"}}),
        );
        // One on the broker alone (a queue the spec does not declare), and one of
        // another vhost.
        let mut live = Objects::new();
        live.insert(queue("legacy.delay"), by_name("orders"));
        live.insert(
            ObjectId::in_vhost(ObjectKind::Queue, "elsewhere", "delay"),
            by_name("orders"),
        );
        // The migration's own temporary queue takes the queue's settings: not a feeder.
        live.insert(queue("warren.migrate.other"), by_name("orders"));
        let none = Objects::new();
        let found = find(
            &desired,
            &none,
            &live,
            &[replace("orders")],
            TargetVersion::V4_0,
        );
        assert_eq!(
            found[0].returned_by_name,
            ["legacy.delay", "orders.late", "orders.retry.1"]
        );
        // A migration without such queues names none.
        let found = find(
            &desired,
            &none,
            &live,
            &[replace("orders.retry.2")],
            TargetVersion::V4_0,
        );
        assert!(found.iter().all(|m| m.returned_by_name.is_empty()));
    }

    #[test]
    fn streams_are_not_migrated() {
        let mut desired = Objects::new();
        let stream = json!({"durable": true, "auto_delete": false,
                            "arguments": {"x-queue-type": "stream"}});
        desired.insert(queue("log"), stream.clone());
        let mut change = replace("log");
        change.after = Some(stream);
        assert!(
            find(
                &desired,
                &Objects::new(),
                &Objects::new(),
                &[change],
                TargetVersion::V4_0
            )
            .is_empty()
        );
    }

    #[test]
    fn migration_objects_are_recognised() {
        assert!(is_migration_object(&queue("warren.migrate.q"), &json!({})));
        let binding = ObjectId::in_vhost(ObjectKind::Binding, "v", "x");
        assert!(is_migration_object(
            &binding,
            &json!({"source": "e", "destination": "warren.migrate.q"})
        ));
        assert!(!is_migration_object(
            &binding,
            &json!({"source": "e", "destination": "q"})
        ));
        let shovel = ObjectId::in_vhost(ObjectKind::Parameter, "v", "shovel/warren.migrate.q");
        assert!(is_migration_object(&shovel, &json!({})));
    }
}
