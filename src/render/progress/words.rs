//! What an apply's progress says, on a bar or in a plain line: each phase's name and
//! what it counts, a phase's line, how far a phase is for a signal's notice, and each
//! step of a queue migration. The bar and the lines say it alike because they take it
//! from here.

use std::time::Instant;

use crate::apply::progress::{MigrationStep, Phase};
use crate::model::ObjectId;
use crate::model::shorten::grouped;
use crate::render::progress_line::{Awaiting, Missed, PhaseLine};
use crate::render::stopping::Step;
use crate::text::{count, noun_for};

/// What the phase is called, and what it counts.
pub(super) fn label(phase: Phase) -> (&'static str, &'static str) {
    match phase {
        Phase::RemoveReplaced => ("removing replaced", "object"),
        Phase::Create => ("creating", "object"),
        Phase::Supersede => ("deleting superseded", "object"),
        Phase::Update => ("updating", "object"),
        Phase::Migrate => ("migrating", "queue"),
        Phase::DeleteBindings => ("deleting", "binding"),
        Phase::DeleteQueues => ("deleting", "queue"),
        Phase::DeleteOthers => ("deleting", "object"),
    }
}

/// A phase's line as the grammar writes it ([`PhaseLine`]): `creating: 2,000 of 8,000
/// objects, 12 s`, what was not made (`; 1 refused`), and the import part in flight
/// (`; the broker is making the next 5,000 objects (sent 38 s ago, …)`), which the
/// broker answers for only once it has made all of it.
pub(super) fn phase_line(
    phase: Phase,
    done: usize,
    total: usize,
    started: Instant,
    missed: &Missed,
    in_flight: Option<(usize, Instant)>,
) -> String {
    let (label, noun) = label(phase);
    PhaseLine {
        label: label.to_string(),
        done: done as u64,
        total: total as u64,
        noun: noun_for(total, noun),
        elapsed: started.elapsed(),
        missed: *missed,
        awaiting: in_flight.map(|(sent, since)| Awaiting {
            sent: sent as u64,
            noun: noun_for(sent, noun),
            since: since.elapsed(),
        }),
    }
    .to_string()
}

/// `creating 6,000 of 22,204 objects`: how far a phase is, for a signal's notice.
pub(super) fn how_far(phase: Phase, done: usize, total: usize) -> Step {
    let (label, noun) = label(phase);
    Step::In {
        phase,
        how_far: format!(
            "{label} {} of {} {}",
            grouped(done as u64),
            grouped(total as u64),
            noun_for(total, noun)
        ),
    }
}

/// `migrating queue "orders" in vhost "shop": …`: one step of one queue's migration.
pub(super) fn migration_line(queue: &ObjectId, step: &MigrationStep<'_>) -> String {
    format!(
        "migrating queue {:?} in vhost {:?}: {}",
        queue.name,
        queue.vhost.as_deref().unwrap_or_default(),
        migration_step(step)
    )
}

/// What a migration step says.
fn migration_step(step: &MigrationStep<'_>) -> String {
    match step {
        MigrationStep::BindingsCopied {
            bindings,
            temporary,
        } => format!("{} copied to {temporary:?}", count(*bindings, "binding")),
        MigrationStep::Unbound => {
            "its bindings removed: new messages go to the temporary queue".into()
        }
        MigrationStep::Moving { source } => format!("moving the messages of {source:?}"),
        MigrationStep::NothingToMove { source } => {
            format!("{source:?} holds no ready message: nothing to move")
        }
        MigrationStep::MoveRestarted => "the shovel is not consuming: starting it again".into(),
        MigrationStep::Refilled { source, refilled } => format!(
            "{source:?} received messages after they were counted ({} in a row): moving them too",
            count(*refilled, "time")
        ),
        MigrationStep::WaitingForAcknowledgements {
            source,
            unacknowledged,
        } => format!(
            "waiting for consumers of {source:?} to acknowledge {}",
            count(*unacknowledged, "message")
        ),
        MigrationStep::DeclaredAnew => "old queue deleted, empty, and declared anew".into(),
        MigrationStep::Rebound { bindings } => {
            format!("declared anew and bound ({})", count(*bindings, "binding"))
        }
        MigrationStep::Finished => "temporary queue and exchange deleted: done".into(),
        MigrationStep::PassingOn { into } => {
            format!("its bindings removed: passing its messages on to {into:?}")
        }
        MigrationStep::PassedOn { into } => {
            format!("deleted, empty: its messages were passed on to {into:?}")
        }
    }
}
