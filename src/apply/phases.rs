//! The phases of an apply and which changes each holds: the order a plan's changes
//! are made in, decided from the plan alone (no broker), so that it can be read and
//! tested on its own. [`super::execute`] carries the phases out.

use std::collections::HashSet;

use crate::broker::ObjectWrite;
use crate::diff::{Action, Change};
use crate::model::ObjectKind;
use crate::plan::Plan;
use crate::plan::strand;

use super::progress::Phase;

/// How the changes of a phase are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PhaseKind {
    /// Removals of objects that are replaced: undone if one of them fails.
    RemoveReplaced,
    /// Creates, through the definitions import.
    Import,
    /// Updates and deletes, a request each.
    OneByOne,
    /// Queue migrations (`--migrate`), one after another.
    Migrate,
}

/// One phase of an apply as a plan fills it: which phase (what the progress shows),
/// how its changes are sent, and the changes, in the order they are sent.
pub(super) struct PhaseChanges<'a> {
    pub(super) phase: Phase,
    pub(super) kind: PhaseKind,
    pub(super) changes: Vec<&'a Change>,
    /// Deletions of bindings that the phase's queue deletions carry out: a binding
    /// into a queue the plan deletes is removed just before that queue's emptiness
    /// check (see [`crate::broker::Client::delete_queues_if_empty`]), so it is done
    /// exactly when its queue is deleted, and kept when the queue is refused.
    pub(super) carried: Vec<&'a Change>,
}

impl<'a> PhaseChanges<'a> {
    fn of(phase: Phase, kind: PhaseKind, changes: Vec<&'a Change>) -> Self {
        PhaseChanges {
            phase,
            kind,
            changes,
            carried: Vec::new(),
        }
    }

    /// Every change of the phase: those it sends, then those they carry out.
    pub(super) fn all(&self) -> impl Iterator<Item = &'a Change> + '_ {
        self.changes.iter().chain(&self.carried).copied()
    }
}

/// Replaced objects are deleted first, then everything new is imported in one go
/// (the import orders kinds itself), then updates, then migrations (with `migrating`:
/// they need what the spec adds, and come before what it deletes), then deletes from
/// the leaves up.
pub(super) fn phases(plan: &Plan, migrating: bool) -> Vec<PhaseChanges<'_>> {
    let ordinary: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| !(migrating && plan.migration_of(c).is_some()))
        .collect();
    let migrated: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| migrating && plan.migration_of(c).is_some())
        .collect();
    let creates: Vec<&Change> = ordinary
        .iter()
        .copied()
        .filter(|c| matches!(c.action, Action::Create | Action::Replace))
        .collect();
    let (superseded, ordinary): (Vec<&Change>, Vec<&Change>) = ordinary
        .into_iter()
        .partition(|c| c.action == Action::Delete && superseded_by(c, &creates));
    let of = |action: Action, kinds: &[ObjectKind]| -> Vec<&Change> {
        ordinary
            .iter()
            .copied()
            .filter(|c| c.action == action && kinds.contains(&c.id.kind))
            .collect()
    };
    use ObjectKind::*;
    // A replace first removes the old object (queues before exchanges), then the
    // import below creates the new one.
    // Queues go in dead-letter order (a queue that dead-letters into another goes
    // before the one it feeds: `plan::strand::delete_order`), exchanges after them.
    let replaced = of(Action::Replace, &[Queue, Exchange]);
    let (queues, exchanges): (Vec<&Change>, Vec<&Change>) =
        replaced.into_iter().partition(|c| c.id.kind == Queue);
    let mut removals_of_replaced = strand::delete_order(&queues, &plan.feeds);
    removals_of_replaced.extend(exchanges);
    // Inflow first (bindings into queues that stay), then the queues in dead-letter
    // order, each with the bindings into it removed just before the broker checks it
    // for messages (so a refused queue keeps its inflow, and a feeder refused before
    // it keeps its route into the queue it feeds), then everything else from the
    // leaves up: a refused queue stops the apply before its policies or exchanges go.
    let delete_order = [
        GlobalParameter,
        Parameter,
        Policy,
        OperatorPolicy,
        Exchange,
        TopicPermission,
        Permission,
        VhostLimits,
        User,
        Vhost,
    ];
    let mut deletes: Vec<&Change> = ordinary
        .iter()
        .copied()
        .filter(|c| c.action == Action::Delete && !matches!(c.id.kind, Binding | Queue))
        .collect();
    deletes.sort_by_key(|c| delete_order.iter().position(|k| *k == c.id.kind));
    let deleted_queues = of(Action::Delete, &[Queue]);
    let deleted_names: HashSet<(Option<&str>, &str)> = deleted_queues
        .iter()
        .map(|queue| (queue.id.vhost.as_deref(), queue.id.name.as_str()))
        .collect();
    let (carried, unbound): (Vec<&Change>, Vec<&Change>) = of(Action::Delete, &[Binding])
        .into_iter()
        .partition(|binding| {
            queue_bound_into(binding)
                .is_some_and(|queue| deleted_names.contains(&(binding.id.vhost.as_deref(), queue)))
        });
    vec![
        PhaseChanges::of(
            Phase::RemoveReplaced,
            PhaseKind::RemoveReplaced,
            removals_of_replaced,
        ),
        PhaseChanges::of(Phase::Create, PhaseKind::Import, creates),
        PhaseChanges::of(Phase::Supersede, PhaseKind::OneByOne, superseded),
        PhaseChanges::of(
            Phase::Update,
            PhaseKind::OneByOne,
            of(
                Action::Update,
                &[
                    Vhost,
                    User,
                    Permission,
                    TopicPermission,
                    VhostLimits,
                    Policy,
                    OperatorPolicy,
                    GlobalParameter,
                    Parameter,
                ],
            ),
        ),
        PhaseChanges::of(
            Phase::Migrate,
            PhaseKind::Migrate,
            if migrating && !plan.migrations.is_empty() {
                migrated
            } else {
                Vec::new()
            },
        ),
        PhaseChanges::of(Phase::DeleteBindings, PhaseKind::OneByOne, unbound),
        PhaseChanges {
            phase: Phase::DeleteQueues,
            kind: PhaseKind::OneByOne,
            changes: strand::delete_order(&deleted_queues, &plan.feeds),
            carried,
        },
        PhaseChanges::of(Phase::DeleteOthers, PhaseKind::OneByOne, deletes),
    ]
}

/// Whether the deletion `change` removes what a change of `creates` takes the place of:
/// a binding with the same source, routing key (not empty) and arguments (the route now leads to
/// another queue: a consumer's key `1` from its first tier to its parking queue when
/// it changes to native retry), or a policy with the same pattern and `apply-to` (the
/// queues it selects get their settings from the new one). Such a deletion is made
/// right after the import, so that the broker never runs old and new side by side for
/// longer than a request: a route bound to both would copy every message, and two
/// policies of one priority on one queue would tie.
fn superseded_by(change: &Change, creates: &[&Change]) -> bool {
    let Some(before) = change.before.as_ref() else {
        return false;
    };
    let same = |keys: &[&str], other: &Change| {
        other.action == Action::Create
            && other.id.kind == change.id.kind
            && other.id.vhost == change.id.vhost
            && other
                .after
                .as_ref()
                .is_some_and(|after| keys.iter().all(|key| after[*key] == before[*key]))
    };
    let keys: &[&str] = match change.id.kind {
        // A binding without a key (a fanout exchange's) copies to every queue bound:
        // another one beside it is an addition, not a successor.
        ObjectKind::Binding if before["routing_key"].as_str().is_none_or(str::is_empty) => {
            return false;
        }
        ObjectKind::Binding => &["source", "routing_key", "arguments", "destination_type"],
        ObjectKind::Policy | ObjectKind::OperatorPolicy => &["pattern", "apply-to"],
        _ => return false,
    };
    creates.iter().any(|other| same(keys, other))
}

/// The queue `binding` (a binding's change) binds into, by its state before the
/// change; `None` for a binding into an exchange.
pub(super) fn queue_bound_into(binding: &Change) -> Option<&str> {
    let before = binding.before.as_ref()?;
    if binding.id.kind != ObjectKind::Binding || before["destination_type"] != "queue" {
        return None;
    }
    before["destination"].as_str()
}

/// The write that carries out an update or delete, or a replace's removal; a queue
/// is removed only if the broker finds it empty, unless data loss is accepted, and
/// after the queues of `feeds` that dead-letter into it.
pub(super) fn write_of<'a>(
    change: &'a Change,
    allow_data_loss: bool,
    feeds: &'a [strand::Feed],
) -> ObjectWrite<'a> {
    let removing = matches!(change.action, Action::Delete | Action::Replace);
    let fed_by = if removing && change.id.kind == ObjectKind::Queue {
        feeds
            .iter()
            .filter(|feed| feed.into == change.id && feed.from != change.id)
            .map(|feed| &feed.from)
            .collect()
    } else {
        Vec::new()
    };
    ObjectWrite {
        id: &change.id,
        before: change.before.as_ref(),
        after: if removing {
            None
        } else {
            change.after.as_ref()
        },
        handle: change.handle.as_deref(),
        if_empty: removing && !allow_data_loss,
        fed_by,
    }
}

#[cfg(test)]
mod tests;
