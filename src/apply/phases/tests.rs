//! The order of an apply's phases, checked on small plans: which phase each change
//! lands in, and the order of the phases and of the changes within one.

use serde_json::{Value, json};

use super::*;
use crate::model::ObjectId;
use crate::plan::{Migration, Stage};

use ObjectKind::*;

const VHOST: &str = "shop";

fn change(action: Action, kind: ObjectKind, name: &str) -> Change {
    let global = matches!(kind, Vhost | User | GlobalParameter);
    let vhost = (!global).then_some(VHOST);
    let value = Some(json!({ "name": name }));
    let (before, after) = match action {
        Action::Create => (None, value),
        Action::Update | Action::Replace => (value.clone(), value),
        Action::Delete => (value, None),
    };
    Change::new(action, ObjectId::new(kind, vhost, name), before, after)
}

/// A binding from exchange `source` to queue `destination`.
fn binding(action: Action, source: &str, destination: &str) -> Change {
    let value = json!({
        "source": source,
        "destination": destination,
        "destination_type": "queue",
        "routing_key": "",
    });
    let name = format!("{source} -> {destination}");
    let mut change = change(action, Binding, &name);
    match action {
        Action::Delete => change.before = Some(value),
        _ => change.after = Some(value),
    }
    change
}

fn migration(queue: &str) -> Migration {
    Migration {
        queue: ObjectId::in_vhost(Queue, VHOST, queue),
        temporary: format!("warren.migrate.{queue}"),
        stage: Stage::MoveOut,
        temporary_value: Value::Null,
        after: json!({ "name": queue }),
        temporary_messages: None,
        returned_by_name: Vec::new(),
    }
}

/// The phases of `plan`, each as which phase it is and the changes it holds as
/// `action kind name`.
fn laid_out(plan: &Plan, migrating: bool) -> Vec<(Phase, Vec<String>)> {
    phases(plan, migrating)
        .iter()
        .map(|phase| {
            let changes = phase
                .all()
                .map(|c| format!("{:?} {:?} {}", c.action, c.id.kind, c.id.name))
                .collect();
            (phase.phase, changes)
        })
        .collect()
}

/// The changes of the phase `wanted`.
fn of_phase(laid_out: &[(Phase, Vec<String>)], wanted: Phase) -> Vec<String> {
    laid_out
        .iter()
        .find(|(s, _)| *s == wanted)
        .map(|(_, changes)| changes.clone())
        .unwrap_or_else(|| panic!("no phase {wanted:?}"))
}

/// The phases that hold `change` (`action kind name`).
fn phases_holding(laid_out: &[(Phase, Vec<String>)], change: &str) -> Vec<Phase> {
    laid_out
        .iter()
        .filter(|(_, changes)| changes.iter().any(|c| c == change))
        .map(|(phase, _)| *phase)
        .collect()
}

#[test]
fn the_phases_run_in_one_order_whatever_the_plan() {
    let order_of_phases = [
        Phase::RemoveReplaced,
        Phase::Create,
        Phase::Supersede,
        Phase::Update,
        Phase::Migrate,
        Phase::DeleteBindings,
        Phase::DeleteQueues,
        Phase::DeleteOthers,
    ];
    let empty = Plan::of_changes(vec![], vec![]);
    let full = Plan::of_changes(
        vec![
            change(Action::Delete, Vhost, "old"),
            change(Action::Create, Queue, "orders"),
            change(Action::Update, Policy, "ha"),
            change(Action::Replace, Queue, "audit"),
        ],
        vec![],
    );
    for plan in [&empty, &full] {
        for migrating in [false, true] {
            let phases = phases(plan, migrating);
            let order: Vec<Phase> = phases.iter().map(|p| p.phase).collect();
            assert_eq!(order, order_of_phases);
            let kinds: Vec<PhaseKind> = phases.iter().map(|p| p.kind).collect();
            assert_eq!(
                kinds,
                [
                    PhaseKind::RemoveReplaced,
                    PhaseKind::Import,
                    PhaseKind::OneByOne,
                    PhaseKind::OneByOne,
                    PhaseKind::Migrate,
                    PhaseKind::OneByOne,
                    PhaseKind::OneByOne,
                    PhaseKind::OneByOne,
                ]
            );
        }
    }
}

#[test]
fn every_create_is_in_the_one_import() {
    let kinds = [
        Vhost,
        VhostLimits,
        Exchange,
        Queue,
        Binding,
        Policy,
        OperatorPolicy,
        User,
        Permission,
        TopicPermission,
        GlobalParameter,
        Parameter,
    ];
    let changes = kinds
        .iter()
        .map(|kind| change(Action::Create, *kind, "new"))
        .collect();
    let plan = Plan::of_changes(changes, vec![]);
    let laid_out = laid_out(&plan, false);
    for kind in kinds {
        let created = format!("Create {kind:?} new");
        assert_eq!(
            phases_holding(&laid_out, &created),
            [Phase::Create],
            "{kind:?}"
        );
    }
    // The import orders kinds itself: the plan's order is kept.
    let created = of_phase(&laid_out, Phase::Create);
    let expected: Vec<String> = kinds.iter().map(|k| format!("Create {k:?} new")).collect();
    assert_eq!(created, expected);
}

#[test]
fn a_replace_removes_the_old_object_first_and_imports_the_new_one() {
    let plan = Plan::of_changes(
        vec![
            change(Action::Replace, Exchange, "events"),
            change(Action::Create, Queue, "orders"),
            change(Action::Replace, Queue, "audit"),
        ],
        vec![],
    );
    let laid_out = laid_out(&plan, false);
    // Queues before exchanges: a queue's bindings from the exchange go with it.
    assert_eq!(
        of_phase(&laid_out, Phase::RemoveReplaced),
        ["Replace Queue audit", "Replace Exchange events"]
    );
    // The new versions are created with the other creates, in the plan's order.
    assert_eq!(
        of_phase(&laid_out, Phase::Create),
        [
            "Replace Exchange events",
            "Create Queue orders",
            "Replace Queue audit"
        ]
    );
    assert_eq!(
        phases_holding(&laid_out, "Replace Queue audit"),
        [Phase::RemoveReplaced, Phase::Create]
    );
}

#[test]
fn updates_are_made_in_place_after_the_creates() {
    let kinds = [
        Vhost,
        User,
        Permission,
        TopicPermission,
        VhostLimits,
        Policy,
        OperatorPolicy,
        GlobalParameter,
        Parameter,
    ];
    let changes = kinds
        .iter()
        .map(|kind| change(Action::Update, *kind, "kept"))
        .collect();
    let plan = Plan::of_changes(changes, vec![]);
    let laid_out = laid_out(&plan, false);
    for kind in kinds {
        let updated = format!("Update {kind:?} kept");
        assert_eq!(
            phases_holding(&laid_out, &updated),
            [Phase::Update],
            "{kind:?}"
        );
    }
    assert!(of_phase(&laid_out, Phase::Create).is_empty());
}

#[test]
fn deletions_come_after_every_creation_bindings_then_queues_then_the_rest() {
    let plan = Plan::of_changes(
        vec![
            change(Action::Delete, Exchange, "events"),
            change(Action::Delete, Queue, "audit"),
            binding(Action::Delete, "events", "audit"),
            change(Action::Create, Queue, "orders"),
            binding(Action::Create, "events", "orders"),
            change(Action::Update, Policy, "ha"),
        ],
        vec![],
    );
    let laid_out = laid_out(&plan, false);
    let position = |change: &str| {
        let holding = phases_holding(&laid_out, change);
        assert_eq!(holding.len(), 1, "{change} is in one phase: {holding:?}");
        laid_out.iter().position(|(s, _)| *s == holding[0]).unwrap()
    };
    let deleted = [
        "Delete Binding events -> audit",
        "Delete Queue audit",
        "Delete Exchange events",
    ];
    let made = [
        "Create Queue orders",
        "Create Binding events -> orders",
        "Update Policy ha",
    ];
    for deletion in deleted {
        for creation in made {
            assert!(
                position(deletion) > position(creation),
                "{deletion} after {creation}"
            );
        }
    }
    // A binding into a deleted queue goes with the queue: removed just before its
    // emptiness check, kept when the queue is refused. A refused queue stops the
    // apply before its exchange goes.
    assert!(position(deleted[1]) < position(deleted[2]));
    assert!(of_phase(&laid_out, Phase::DeleteBindings).is_empty());
    assert_eq!(
        of_phase(&laid_out, Phase::DeleteQueues),
        [deleted[1], deleted[0]]
    );
    let phases = phases(&plan, false);
    let queues = phases
        .iter()
        .find(|p| p.phase == Phase::DeleteQueues)
        .unwrap();
    assert_eq!(queues.changes.len(), 1, "the queue is the one write sent");
    assert_eq!(queues.carried[0].id.name, "events -> audit");
    assert_eq!(of_phase(&laid_out, Phase::DeleteOthers), [deleted[2]]);
}

#[test]
fn a_binding_into_a_queue_that_stays_is_deleted_before_any_queue() {
    let plan = Plan::of_changes(
        vec![
            change(Action::Delete, Queue, "audit"),
            binding(Action::Delete, "events", "orders"),
        ],
        vec![],
    );
    let laid_out = laid_out(&plan, false);
    assert_eq!(
        of_phase(&laid_out, Phase::DeleteBindings),
        ["Delete Binding events -> orders"]
    );
    assert_eq!(
        of_phase(&laid_out, Phase::DeleteQueues),
        ["Delete Queue audit"]
    );
}

#[test]
fn other_deletes_go_from_the_leaves_up() {
    // Given from the root down, they are deleted from the leaves up: nothing is
    // deleted while something deleted after it depends on it.
    let from_the_root = [
        Vhost,
        User,
        VhostLimits,
        Permission,
        TopicPermission,
        Exchange,
        OperatorPolicy,
        Policy,
        Parameter,
        GlobalParameter,
    ];
    let changes = from_the_root
        .iter()
        .map(|kind| change(Action::Delete, *kind, "gone"))
        .collect();
    let plan = Plan::of_changes(changes, vec![]);
    let laid_out = laid_out(&plan, false);
    assert_eq!(
        of_phase(&laid_out, Phase::DeleteOthers),
        [
            "Delete GlobalParameter gone",
            "Delete Parameter gone",
            "Delete Policy gone",
            "Delete OperatorPolicy gone",
            "Delete Exchange gone",
            "Delete TopicPermission gone",
            "Delete Permission gone",
            "Delete VhostLimits gone",
            "Delete User gone",
            "Delete Vhost gone",
        ]
    );
    assert!(of_phase(&laid_out, Phase::DeleteBindings).is_empty());
    assert!(of_phase(&laid_out, Phase::DeleteQueues).is_empty());
}

/// A plan that replaces queue `audit` (with a migration found for it) and creates
/// a binding into it and one into `orders`.
fn replacing_audit() -> Plan {
    let mut plan = Plan::of_changes(
        vec![
            change(Action::Replace, Queue, "audit"),
            binding(Action::Create, "events", "audit"),
            change(Action::Create, Queue, "orders"),
            binding(Action::Create, "events", "orders"),
            change(Action::Replace, Queue, "ledger"),
            binding(Action::Delete, "events", "old"),
        ],
        vec![],
    );
    plan.migrations = vec![migration("audit")];
    plan
}

#[test]
fn a_migrated_queue_and_the_bindings_into_it_are_the_migrations_alone() {
    let plan = replacing_audit();
    let laid_out = laid_out(&plan, true);
    // The migration declares the queue anew and binds it again itself: its
    // replacement and the bindings its removal takes are in no other phase.
    assert_eq!(
        of_phase(&laid_out, Phase::Migrate),
        ["Replace Queue audit", "Create Binding events -> audit"]
    );
    assert_eq!(
        phases_holding(&laid_out, "Replace Queue audit"),
        [Phase::Migrate]
    );
    assert_eq!(
        phases_holding(&laid_out, "Create Binding events -> audit"),
        [Phase::Migrate]
    );
    // A replaced queue without a migration is replaced as ever.
    assert_eq!(
        of_phase(&laid_out, Phase::RemoveReplaced),
        ["Replace Queue ledger"]
    );
    assert_eq!(
        of_phase(&laid_out, Phase::Create),
        [
            "Create Queue orders",
            "Create Binding events -> orders",
            "Replace Queue ledger"
        ]
    );
    // After what the spec adds, before what it deletes.
    let at = |phase: Phase| laid_out.iter().position(|(s, _)| *s == phase).unwrap();
    assert!(at(Phase::Create) < at(Phase::Migrate));
    assert!(at(Phase::Update) < at(Phase::Migrate));
    assert!(at(Phase::Migrate) < at(Phase::DeleteBindings));
    assert_eq!(
        of_phase(&laid_out, Phase::DeleteBindings),
        ["Delete Binding events -> old"]
    );
}

#[test]
fn without_migrating_a_migratable_queue_is_replaced_in_place() {
    let plan = replacing_audit();
    let laid_out = laid_out(&plan, false);
    assert!(of_phase(&laid_out, Phase::Migrate).is_empty());
    assert_eq!(
        of_phase(&laid_out, Phase::RemoveReplaced),
        ["Replace Queue audit", "Replace Queue ledger"]
    );
    // The bindings into the replaced queue are created again by the import, after
    // the new queue.
    assert_eq!(
        of_phase(&laid_out, Phase::Create),
        [
            "Replace Queue audit",
            "Create Binding events -> audit",
            "Create Queue orders",
            "Create Binding events -> orders",
            "Replace Queue ledger"
        ]
    );
}

#[test]
fn a_migration_takes_only_its_own_vhost_s_queue_and_the_bindings_created_into_it() {
    let mut elsewhere = change(Action::Replace, Queue, "audit");
    elsewhere.id.vhost = Some("other".into());
    let mut plan = replacing_audit();
    plan.changes.push(elsewhere);
    // A binding into `audit` that goes is not one the migration makes.
    plan.changes
        .push(binding(Action::Delete, "legacy", "audit"));
    let phases = phases(&plan, true);
    let migrate = phases.iter().find(|p| p.phase == Phase::Migrate).unwrap();
    assert!(
        migrate
            .changes
            .iter()
            .all(|c| c.id.vhost.as_deref() == Some(VHOST)),
        "the queue of the same name in another vhost is replaced in place"
    );
    let removed = phases
        .iter()
        .find(|p| p.phase == Phase::RemoveReplaced)
        .unwrap();
    assert!(
        removed
            .changes
            .iter()
            .any(|c| c.id.vhost.as_deref() == Some("other"))
    );
    let laid_out = laid_out(&plan, true);
    assert_eq!(
        phases_holding(&laid_out, "Delete Binding legacy -> audit"),
        [Phase::DeleteBindings]
    );
}

#[test]
fn a_removal_is_guarded_unless_data_loss_is_accepted_an_update_never_is() {
    let replaced = change(Action::Replace, Queue, "audit");
    let deleted = change(Action::Delete, Queue, "old");
    let updated = change(Action::Update, Policy, "ha");
    for removal in [&replaced, &deleted] {
        let guarded = write_of(removal, false, &[]);
        assert!(guarded.if_empty, "{:?}", removal.action);
        assert_eq!(guarded.after, None, "a removal sends no new value");
        assert_eq!(guarded.before, removal.before.as_ref());
        assert!(!write_of(removal, true, &[]).if_empty);
    }
    let update = write_of(&updated, false, &[]);
    assert!(!update.if_empty);
    assert_eq!(update.after, updated.after.as_ref());
}

#[test]
fn a_route_or_a_policy_the_import_takes_over_goes_right_after_it() {
    // A consumer changing to native retry: the key of its first tier now leads to its
    // parking queue, and the delayed-retry policy takes its work queue's pattern.
    let policy = |action: Action, name: &str, pattern: &str| {
        let value = json!({"pattern": pattern, "apply-to": "queues", "definition": {}});
        let mut change = change(action, Policy, name);
        match action {
            Action::Delete => change.before = Some(value),
            _ => change.after = Some(value),
        }
        change
    };
    let keyed = |action: Action, source: &str, destination: &str| {
        let mut change = binding(action, source, destination);
        for value in [&mut change.before, &mut change.after]
            .into_iter()
            .flatten()
        {
            value["routing_key"] = "1".into();
        }
        change
    };
    let plan = Plan::of_changes(
        vec![
            keyed(Action::Create, "jobs.retry", "jobs.parking"),
            keyed(Action::Delete, "jobs.retry", "jobs.tier.1"),
            binding(Action::Create, "orders", "new"),
            binding(Action::Delete, "orders", "gone"),
            policy(Action::Create, "native", "^jobs$"),
            policy(Action::Delete, "unlimited", "^jobs$"),
            policy(Action::Delete, "tier-1", "^jobs\\.tier\\.1$"),
            change(Action::Delete, Queue, "jobs.tier.1"),
        ],
        vec![],
    );
    let laid_out = laid_out(&plan, false);
    assert_eq!(
        of_phase(&laid_out, Phase::Supersede),
        [
            "Delete Binding jobs.retry -> jobs.tier.1",
            "Delete Policy unlimited"
        ]
    );
    assert_eq!(
        phases_holding(&laid_out, "Delete Binding jobs.retry -> jobs.tier.1"),
        [Phase::Supersede],
        "not carried by its queue's deletion as well"
    );
    assert_eq!(
        phases_holding(&laid_out, "Delete Binding orders -> gone"),
        [Phase::DeleteBindings]
    );
    assert_eq!(
        phases_holding(&laid_out, "Delete Policy tier-1"),
        [Phase::DeleteOthers]
    );
}

#[test]
fn a_queue_removal_names_the_queues_that_feed_it_and_nothing_else_does() {
    let work = change(Action::Delete, Queue, "work");
    let tier = change(Action::Delete, Queue, "work.retry.30s");
    let policy = change(Action::Delete, Policy, "work");
    let feeds = [
        strand::Feed {
            from: tier.id.clone(),
            into: work.id.clone(),
        },
        strand::Feed {
            from: work.id.clone(),
            into: tier.id.clone(),
        },
        // A queue that dead-letters into itself waits for nobody.
        strand::Feed {
            from: work.id.clone(),
            into: work.id.clone(),
        },
    ];
    assert_eq!(write_of(&work, false, &feeds).fed_by, [&tier.id]);
    assert_eq!(write_of(&tier, false, &feeds).fed_by, [&work.id]);
    assert!(write_of(&policy, false, &feeds).fed_by.is_empty());
}
