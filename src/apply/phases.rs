//! The phases of an apply and which changes each holds: the order a plan's changes
//! are made in, decided from the plan alone (no broker), so that it can be read and
//! tested on its own. [`super::execute`] carries the phases out.

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
    let creates: Vec<&Change> = ordinary
        .iter()
        .copied()
        .filter(|c| matches!(c.action, Action::Create | Action::Replace))
        .collect();
    // Inflow first (bindings), then the queues, each checked for messages by the
    // broker at its deletion, then everything else from the leaves up: a refused
    // queue stops the apply before its policies or exchanges go.
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
    vec![
        PhaseChanges {
            phase: Phase::RemoveReplaced,
            kind: PhaseKind::RemoveReplaced,
            changes: removals_of_replaced,
        },
        PhaseChanges {
            phase: Phase::Create,
            kind: PhaseKind::Import,
            changes: creates,
        },
        PhaseChanges {
            phase: Phase::Update,
            kind: PhaseKind::OneByOne,
            changes: of(
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
        },
        PhaseChanges {
            phase: Phase::Migrate,
            kind: PhaseKind::Migrate,
            changes: if migrating && !plan.migrations.is_empty() {
                migrated
            } else {
                Vec::new()
            },
        },
        PhaseChanges {
            phase: Phase::DeleteBindings,
            kind: PhaseKind::OneByOne,
            changes: of(Action::Delete, &[Binding]),
        },
        PhaseChanges {
            phase: Phase::DeleteQueues,
            kind: PhaseKind::OneByOne,
            changes: strand::delete_order(&of(Action::Delete, &[Queue]), &plan.feeds),
        },
        PhaseChanges {
            phase: Phase::DeleteOthers,
            kind: PhaseKind::OneByOne,
            changes: deletes,
        },
    ]
}

/// The write that carries out an update or delete, or a replace's removal; a queue
/// is removed only if the broker finds it empty, unless data loss is accepted.
pub(super) fn write_of(change: &Change, allow_data_loss: bool) -> ObjectWrite<'_> {
    let removing = matches!(change.action, Action::Delete | Action::Replace);
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
    }
}

#[cfg(test)]
mod tests;
