//! An apply's progress as plain lines (a CI log): a phase's line when it starts, at
//! each tenth, whenever the broker's answers moved the count [`MOVED_LINE`] after the
//! last line, at least every [`HEARTBEAT`] while it runs, and when it ends; each
//! migration step and each signal on a line of its own.

use std::io::Write;
use std::time::Instant;

use super::course::{Course, tally};
use super::words::{how_far, migration_line, phase_line};
use super::{HEARTBEAT, MOVED_LINE};
use crate::apply::progress::{Event, Phase};
use crate::render::progress_line::Missed;
use crate::render::stopping::{Step, apply_notice};

/// The phase that runs, as the plain lines see it.
struct Running {
    phase: Phase,
    done: usize,
    total: usize,
    started: Instant,
    /// The last tenth a line was printed for.
    tenth: usize,
    /// A part of the phase sent and not yet answered for: how many, since when.
    in_flight: Option<(usize, Instant)>,
}

/// The plain lines' state, shared with the watch thread (heartbeat and signals).
pub(super) struct Lines<W> {
    out: W,
    running: Option<Running>,
    course: Course,
    missed: Missed,
    /// When the last line was printed.
    pub(super) last_line: Instant,
    /// The count of the last line printed.
    last_done: usize,
}

impl<W: Write> Lines<W> {
    /// Lines on `out`, none printed yet.
    pub(super) fn new(out: W) -> Self {
        Lines {
            out,
            running: None,
            course: Course::default(),
            missed: Missed::default(),
            last_line: Instant::now(),
            last_done: 0,
        }
    }

    fn line(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
        self.last_line = Instant::now();
    }

    /// `creating: 2,000 of 8,000 objects, 12 s`.
    fn state(&mut self) {
        if let Some(running) = &self.running {
            let text = phase_line(
                running.phase,
                running.done,
                running.total,
                running.started,
                &Missed::default(),
                running.in_flight,
            );
            self.last_done = running.done;
            self.line(&text);
        }
    }

    /// Where the apply stands, for a signal's notice.
    fn step(&self) -> Step {
        match &self.running {
            Some(running) => how_far(running.phase, running.done, running.total),
            None => self.course.idle(),
        }
    }

    /// One tick of the watch: the signals to tell, and the heartbeat.
    pub(super) fn tick(&mut self, signals: std::ops::RangeInclusive<usize>) {
        for signal in signals {
            let text = apply_notice(signal, &self.step());
            self.line(&text);
        }
        if self.running.is_some() && self.last_line.elapsed() >= HEARTBEAT {
            self.state();
        }
    }

    pub(super) fn event(&mut self, event: &Event<'_>) {
        match *event {
            Event::Started { phase, total } => {
                self.running = Some(Running {
                    phase,
                    done: 0,
                    total,
                    started: Instant::now(),
                    tenth: 0,
                    in_flight: None,
                });
                self.course.started();
                self.missed = Missed::default();
                self.state();
            }
            Event::Sent { sent, .. } => {
                if let Some(running) = &mut self.running {
                    running.in_flight = Some((sent, Instant::now()));
                }
            }
            Event::Advanced { done, .. } => self.advanced(done),
            Event::Outcome { outcome, .. } => tally(&mut self.missed, outcome),
            Event::Finished { phase, done, total } => {
                self.course.ended(phase, done, total);
                if let Some(running) = &mut self.running {
                    running.done = done;
                    running.total = total;
                }
                if let Some(running) = &self.running {
                    let text = phase_line(
                        running.phase,
                        done,
                        total,
                        running.started,
                        &self.missed,
                        None,
                    );
                    self.line(&text);
                }
                self.running = None;
            }
            Event::Migration { queue, ref step } => self.line(&migration_line(queue, step)),
        }
    }

    /// The broker answered for `done` changes of the running phase: a line at a new
    /// tenth, or when the count moved [`MOVED_LINE`] after the last line.
    fn advanced(&mut self, done: usize) {
        let Some(running) = &mut self.running else {
            return;
        };
        running.done = done;
        running.in_flight = None;
        // The last tenth is the phase's end, which `Finished` prints.
        let tenth = (done * 10) / running.total.max(1);
        let new_tenth = tenth > running.tenth && done < running.total;
        if new_tenth {
            running.tenth = tenth;
        }
        let moved = done > self.last_done && done < running.total;
        if new_tenth
            || (moved && self.last_line.elapsed() >= MOVED_LINE)
            || self.last_line.elapsed() >= HEARTBEAT
        {
            self.state();
        }
    }
}
