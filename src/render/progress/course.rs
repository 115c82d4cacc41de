//! Where an apply stands between the events that move it, as a bar or the plain lines
//! keep it: which phases it has been through (for a signal's notice when none runs),
//! and what a phase did not make. Both ways of showing progress keep it alike.

use super::words::how_far;
use crate::apply::progress::{ChangeOutcome, Phase};
use crate::render::progress_line::Missed;
use crate::render::stopping::Step;

/// Which phases an apply has been through, for a signal's notice when none runs.
#[derive(Default)]
pub(super) struct Course {
    /// Whether a phase has started: before, nothing was changed.
    started_any: bool,
    /// The last phase that ended, when it ended short of its size (a stop cut it
    /// short, or a failure): phase, made, size.
    cut_short: Option<(Phase, usize, usize)>,
}

impl Course {
    pub(super) fn started(&mut self) {
        self.started_any = true;
        self.cut_short = None;
    }

    pub(super) fn ended(&mut self, phase: Phase, done: usize, total: usize) {
        self.cut_short = (done < total).then_some((phase, done, total));
    }

    /// Where the apply stands while no phase runs: a phase cut short is where it
    /// stops (a signal that arrived just before its end is told where it was heard).
    pub(super) fn idle(&self) -> Step {
        match self.cut_short {
            Some((phase, done, total)) => how_far(phase, done, total),
            None if self.started_any => Step::BetweenPhases,
            None => Step::BeforeChanges,
        }
    }
}

/// Counts one change of the running phase that was not made, by why.
pub(super) fn tally(missed: &mut Missed, outcome: ChangeOutcome) {
    match outcome {
        ChangeOutcome::Done => {}
        ChangeOutcome::Refused => missed.refused += 1,
        ChangeOutcome::Unconfirmed => missed.unconfirmed += 1,
        ChangeOutcome::NotSent => missed.not_sent += 1,
    }
}
