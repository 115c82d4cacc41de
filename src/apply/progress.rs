//! What an apply tells while it runs: which phase it is in, how far that phase has come,
//! the outcome of each change, and the steps of a queue migration.
//!
//! An apply of thousands of objects takes minutes; these events let the caller show
//! that it moves. They carry facts only: `render::progress` decides how they look (a
//! progress bar on a terminal, plain lines in a log), and `apply/` formats nothing.

use crate::diff::Change;
use crate::model::ObjectId;

/// The phases of an apply, in the order they run (docs/architecture.md, "Data flow"):
/// what a progress event is about. (A step of one migration is a [`MigrationStep`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The old versions of replaced queues and exchanges are deleted.
    RemoveReplaced,
    /// New objects (and the new versions of replaced ones) are imported.
    Create,
    /// Bindings and policies whose successors the import just made (the same route
    /// to another queue, the same pattern with other settings) are deleted.
    Supersede,
    /// Objects are updated in place.
    Update,
    /// Queues are migrated blue/green (`--migrate`), one after another.
    Migrate,
    /// Bindings are deleted.
    DeleteBindings,
    /// Queues are deleted, each only if the broker finds it empty.
    DeleteQueues,
    /// Everything else is deleted, leaves first.
    DeleteOthers,
}

/// What became of one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeOutcome {
    /// The broker confirmed it.
    Done,
    /// The broker refused it.
    Refused,
    /// Sent, and not confirmed: it may or may not have been made.
    Unconfirmed,
    /// Not sent, because an earlier request failed.
    NotSent,
}

/// A step of one queue migration (docs/migration.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationStep<'a> {
    /// The queue's bindings were copied to the temporary queue.
    BindingsCopied {
        /// How many.
        bindings: usize,
        /// The temporary queue.
        temporary: &'a str,
    },
    /// The queue was unbound: new messages go to the temporary queue.
    Unbound,
    /// A shovel started moving the messages of `source`.
    Moving {
        /// The queue the messages leave.
        source: &'a str,
    },
    /// `source` counts no ready message (the queue's own count): no shovel is started.
    NothingToMove {
        /// The queue.
        source: &'a str,
    },
    /// The shovel consumed nothing for a while and was started again.
    MoveRestarted,
    /// The guarded deletion found `source` holding messages again (they arrived
    /// after the shovel counted its messages): it is moved again.
    Refilled {
        /// The queue.
        source: &'a str,
        /// How many times in a row so far.
        refilled: usize,
    },
    /// The move waits for consumers of `source` to acknowledge `unacknowledged` messages.
    WaitingForAcknowledgements {
        /// The queue.
        source: &'a str,
        /// Messages delivered and not yet acknowledged.
        unacknowledged: u64,
    },
    /// The old queue was deleted, empty, and declared with its new settings.
    DeclaredAnew,
    /// The queue was bound again where the spec binds it.
    Rebound {
        /// How many bindings.
        bindings: usize,
    },
    /// The temporary queue and exchange were deleted: the migration is over.
    Finished,
    /// A delay queue the plan deletes was unbound: its messages are passed on to
    /// `into` next.
    PassingOn {
        /// The queue they expire into.
        into: &'a str,
    },
    /// The delay queue was deleted, empty: its messages are in `into`.
    PassedOn {
        /// The queue they expire into.
        into: &'a str,
    },
}

/// One event of an apply.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A phase starts, with `total` changes (for [`Phase::Migrate`]: migrations).
    Started {
        /// The phase.
        phase: Phase,
        /// Its size.
        total: usize,
    },
    /// The broker answered for `done` of the phase's `total` changes so far.
    Advanced {
        /// The phase.
        phase: Phase,
        /// Answered so far.
        done: usize,
        /// Its size.
        total: usize,
    },
    /// `sent` more changes of the phase were sent in one request (a part of an
    /// import), which the broker answers for only once it has made them all.
    Sent {
        /// The phase.
        phase: Phase,
        /// How many.
        sent: usize,
    },
    /// The outcome of one change of the phase that just ran.
    Outcome {
        /// The change.
        change: &'a Change,
        /// What became of it.
        outcome: ChangeOutcome,
    },
    /// A phase ended: `done` of its `total` changes were made (fewer after a failure).
    Finished {
        /// The phase.
        phase: Phase,
        /// Changes made.
        done: usize,
        /// Its size.
        total: usize,
    },
    /// A step of the migration of `queue`.
    Migration {
        /// The queue migrated.
        queue: &'a ObjectId,
        /// What happened.
        step: MigrationStep<'a>,
    },
}

/// Where an apply sends its events.
pub type Progress<'p> = dyn FnMut(&Event<'_>) + 'p;
