//! An apply's progress as a bar per phase on a terminal (drawn by `indicatif`): the
//! bar gives way to the phase's line when the phase ends, and migration steps and
//! signals are told above it.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::course::{Course, tally};
use super::words::{how_far, label, migration_line, phase_line};
use crate::apply::progress::{Event, Phase};
use crate::model::shorten::grouped;
use crate::render::progress_line::Missed;
use crate::render::stopping::{Step, apply_notice};
use crate::text::noun_for;

/// The bar of the phase that runs.
struct Drawn {
    bar: ProgressBar,
    phase: Phase,
    started: Instant,
}

impl Drawn {
    /// Clears the bar and prints the phase's line in its place, which stays: a whole
    /// line, so that what is printed next starts on a line of its own, whatever the
    /// terminal's width.
    fn end(self, done: usize, total: usize, missed: &Missed) {
        self.bar.finish_and_clear();
        eprintln!(
            "{}",
            phase_line(self.phase, done, total, self.started, missed, None)
        );
    }

    /// Ends a bar whose phase did not finish (the next started, or the apply stopped
    /// in it), with what it made so far.
    fn cut(self, missed: &Missed) {
        let (done, total) = (self.bar.position(), self.bar.length());
        self.end(done as usize, total.unwrap_or(done) as usize, missed);
    }
}

/// The bar's state, shared with the watch thread (which tells signals above the bar).
#[derive(Default)]
pub(super) struct Bars {
    bar: Option<Drawn>,
    missed: Missed,
    course: Course,
}

impl Bars {
    /// Where the apply stands, for a signal's notice.
    fn step(&self) -> Step {
        match &self.bar {
            Some(drawn) => how_far(
                drawn.phase,
                drawn.bar.position() as usize,
                drawn.bar.length().unwrap_or(0) as usize,
            ),
            None => self.course.idle(),
        }
    }

    /// One tick of the watch: the signals to tell, above the bar when one is drawn.
    pub(super) fn tick(&mut self, signals: std::ops::RangeInclusive<usize>) {
        for signal in signals {
            let text = apply_notice(signal, &self.step());
            match &self.bar {
                Some(drawn) => drawn.bar.println(text),
                None => eprintln!("{text}"),
            }
        }
    }

    /// A bar still drawn (the apply stopped in its phase) gives way to the phase's
    /// line, with what was made so far.
    pub(super) fn finish(&mut self) {
        if let Some(drawn) = self.bar.take() {
            drawn.cut(&self.missed);
        }
    }

    pub(super) fn event(&mut self, event: &Event<'_>) {
        let Bars {
            bar,
            missed,
            course,
        } = self;
        match *event {
            Event::Started { phase, total } => {
                course.started();
                if let Some(previous) = bar.take() {
                    previous.cut(missed);
                }
                *bar = Some(Drawn {
                    bar: drawn(phase, total),
                    phase,
                    started: Instant::now(),
                });
                *missed = Missed::default();
            }
            Event::Sent { phase, sent } => {
                if let Some(drawn) = bar {
                    let (_, noun) = label(phase);
                    let total = drawn.bar.length().unwrap_or(0) as usize;
                    drawn.bar.set_message(format!(
                        "{}; the broker is making the next {}",
                        noun_for(total, noun),
                        grouped(sent as u64)
                    ));
                }
            }
            Event::Advanced { phase, done, total } => {
                if let Some(drawn) = bar {
                    let (_, noun) = label(phase);
                    drawn.bar.set_position(done as u64);
                    drawn.bar.set_message(noun_for(total, noun));
                }
            }
            Event::Outcome { outcome, .. } => tally(missed, outcome),
            Event::Finished { phase, done, total } => {
                course.ended(phase, done, total);
                if let Some(drawn) = bar.take() {
                    drawn.end(done, total, missed);
                }
            }
            Event::Migration { queue, ref step } => {
                let text = migration_line(queue, step);
                match bar {
                    Some(drawn) => drawn.bar.println(text),
                    None => eprintln!("{text}"),
                }
            }
        }
    }
}

/// A new bar for `phase`, of `total` changes, on stderr.
fn drawn(phase: Phase, total: usize) -> ProgressBar {
    let (label, noun) = label(phase);
    let style = ProgressStyle::with_template(
        "{prefix:>17} [{bar:30}] {human_pos}/{human_len} {msg}, {elapsed}",
    )
    .expect("the template is valid")
    .progress_chars("=> ");
    let new = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr())
        .with_style(style)
        .with_prefix(label)
        .with_message(noun_for(total, noun));
    new.enable_steady_tick(Duration::from_millis(250));
    new
}
