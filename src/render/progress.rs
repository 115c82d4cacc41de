//! An apply's progress on stderr, so that one of thousands of objects, which takes
//! minutes, never looks hung: a progress bar per phase on a terminal (`indicatif`,
//! `progress/bar.rs`), plain lines elsewhere (a CI log, `progress/lines.rs`), at each
//! tenth of a phase, whenever the broker's answers moved the count [`MOVED_LINE`] after
//! the last line, and at least every [`HEARTBEAT`] while one runs. Never on stdout,
//! which may hold JSON. A signal is told at once, in the bar's place or among the
//! lines ([`super::stopping`]). What both say is `progress/words.rs`'s; where an apply
//! stands between events, `progress/course.rs`'s.
//!
//! A replay's progress on stderr ([`ReplayProgress`]) is its signals alone, each told
//! at once with the count moved so far.

mod bar;
mod course;
mod lines;
mod replay;
mod words;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bar::Bars;
use lines::Lines;
pub use replay::ReplayProgress;

use super::stopping::Watch;
use crate::apply::Interrupt;
use crate::apply::progress::Event;

/// How often a plain line is printed while a phase runs, even when it has not moved: an
/// import chunk is answered only once it is done.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How soon after the last plain line a count the broker's answers moved is printed
/// (between the tenths of a phase): each import chunk answered shows within seconds.
pub const MOVED_LINE: Duration = Duration::from_secs(2);

/// How progress is shown: the state the events change, shared with the [`Watch`]
/// thread, which tells signals at once and, for plain lines, prints one every
/// [`HEARTBEAT`] while a phase runs without moving.
enum Shown<W: Write + Send + 'static> {
    /// A bar per phase, on a terminal.
    Bar(Arc<Mutex<Bars>>),
    /// Plain lines.
    Lines(Arc<Mutex<Lines<W>>>),
}

/// Shows an apply's progress events ([`Event`]), and tells each signal the apply
/// receives as it arrives; [`ApplyProgress::finish`] before the apply's summary is
/// printed, so that a bar never draws over it.
pub struct ApplyProgress<W: Write + Send + 'static> {
    shown: Shown<W>,
    watch: Watch,
}

impl ApplyProgress<std::io::Stderr> {
    /// On stderr: a bar when it is a terminal, plain lines otherwise.
    pub fn on_stderr(interrupt: &Interrupt) -> Self {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            ApplyProgress::bar(interrupt)
        } else {
            ApplyProgress::lines(std::io::stderr(), interrupt)
        }
    }

    /// A bar per phase on stderr (drawn by `indicatif`, which draws nothing when stderr
    /// is not a terminal).
    pub fn bar(interrupt: &Interrupt) -> Self {
        let bars = Arc::new(Mutex::new(Bars::default()));
        let shared = Arc::clone(&bars);
        let watch = Watch::start(interrupt.clone(), move |signals| {
            if !signals.is_empty() {
                shared
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .tick(signals);
            }
        });
        ApplyProgress {
            shown: Shown::Bar(bars),
            watch,
        }
    }
}

impl<W: Write + Send + 'static> ApplyProgress<W> {
    /// Plain lines on `out`.
    pub fn lines(out: W, interrupt: &Interrupt) -> Self {
        let lines = Arc::new(Mutex::new(Lines::new(out)));
        let shared = Arc::clone(&lines);
        let watch = Watch::start(interrupt.clone(), move |signals| {
            shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .tick(signals);
        });
        ApplyProgress {
            shown: Shown::Lines(lines),
            watch,
        }
    }

    /// Shows one event.
    pub fn event(&mut self, event: &Event<'_>) {
        match &self.shown {
            Shown::Lines(lines) => lines.lock().unwrap_or_else(|e| e.into_inner()).event(event),
            Shown::Bar(bars) => bars.lock().unwrap_or_else(|e| e.into_inner()).event(event),
        }
    }

    /// Stops the watch; a bar still drawn (the apply stopped in its phase) gives way
    /// to the phase's line, with what was made so far.
    pub fn finish(&mut self) {
        self.watch.finish();
        if let Shown::Bar(bars) = &self.shown {
            bars.lock().unwrap_or_else(|e| e.into_inner()).finish();
        }
    }
}

impl<W: Write + Send + 'static> Drop for ApplyProgress<W> {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::apply::progress::{ChangeOutcome, Phase};

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn plain_lines_come_at_each_tenth_and_at_the_end() {
        let out = Shared::default();
        let mut progress = ApplyProgress::lines(out.clone(), &Interrupt::default());
        let total = 8000;
        progress.event(&Event::Started {
            phase: Phase::Create,
            total,
        });
        // A chunk answered every 100 objects: 80 events, a line at each tenth only.
        for done in (100..=total).step_by(100) {
            progress.event(&Event::Advanced {
                phase: Phase::Create,
                done,
                total,
            });
        }
        progress.event(&Event::Finished {
            phase: Phase::Create,
            done: total,
            total,
        });
        progress.event(&Event::Started {
            phase: Phase::DeleteQueues,
            total: 1,
        });
        progress.event(&Event::Finished {
            phase: Phase::DeleteQueues,
            done: 0,
            total: 1,
        });
        progress.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 9 + 1 + 2, "{text}");
        assert_eq!(lines[0], "creating: 0 of 8,000 objects, 0 s");
        assert_eq!(lines[1], "creating: 800 of 8,000 objects, 0 s");
        assert_eq!(lines[9], "creating: 7,200 of 8,000 objects, 0 s");
        assert_eq!(lines[10], "creating: 8,000 of 8,000 objects, 0 s");
        assert_eq!(lines[11], "deleting: 0 of 1 queue, 0 s");
        assert_eq!(lines[12], "deleting: 0 of 1 queue, 0 s");
    }

    #[test]
    fn a_phase_that_stops_says_what_was_not_made() {
        let out = Shared::default();
        let mut progress = ApplyProgress::lines(out.clone(), &Interrupt::default());
        let change = crate::diff::Change {
            action: crate::diff::Action::Create,
            id: crate::model::ObjectId::in_vhost(crate::model::ObjectKind::Queue, "shop", "audit"),
            before: None,
            after: None,
            reason: None,
            messages: None,
            unmanaged: false,
            handle: None,
        };
        progress.event(&Event::Started {
            phase: Phase::Create,
            total: 3,
        });
        for outcome in [
            ChangeOutcome::Done,
            ChangeOutcome::Unconfirmed,
            ChangeOutcome::NotSent,
        ] {
            progress.event(&Event::Outcome {
                change: &change,
                outcome,
            });
        }
        progress.event(&Event::Finished {
            phase: Phase::Create,
            done: 1,
            total: 3,
        });
        progress.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text.lines().last(),
            Some("creating: 1 of 3 objects, 0 s; 1 not confirmed, 1 not sent")
        );
    }

    #[test]
    fn the_heartbeat_prints_while_a_phase_does_not_move() {
        let out = Shared::default();
        let mut progress = ApplyProgress::lines(out.clone(), &Interrupt::default());
        progress.event(&Event::Started {
            phase: Phase::Create,
            total: 10,
        });
        // As if the last line were a heartbeat ago: the thread prints the state again.
        if let Shown::Lines(lines) = &progress.shown {
            lines.lock().unwrap().last_line = Instant::now() - HEARTBEAT;
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while out
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            < 2
        {
            assert!(Instant::now() < deadline, "no heartbeat line");
            std::thread::sleep(Duration::from_millis(50));
        }
        progress.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.lines()
                .all(|l| l.starts_with("creating: 0 of 10 objects")),
            "{text}"
        );
    }

    #[test]
    fn a_heartbeat_while_an_import_part_is_in_flight_says_what_the_broker_is_making() {
        let out = Shared::default();
        let mut progress = ApplyProgress::lines(out.clone(), &Interrupt::default());
        progress.event(&Event::Started {
            phase: Phase::Create,
            total: 22_204,
        });
        progress.event(&Event::Sent {
            phase: Phase::Create,
            sent: 5_000,
        });
        if let Shown::Lines(lines) = &progress.shown {
            lines.lock().unwrap().last_line = Instant::now() - HEARTBEAT;
        }
        let line = wait_for_line(&out, "making");
        assert!(
            line.starts_with("creating: 0 of 22,204 objects, 0 s; the broker is making the next 5,000 objects (sent 0 s ago"),
            "{line}"
        );
        // Once answered, the lines count again and no longer speak of a part in flight.
        progress.event(&Event::Advanced {
            phase: Phase::Create,
            done: 5_000,
            total: 22_204,
        });
        progress.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("creating: 5,000 of 22,204 objects"),
            "{text}"
        );
        assert!(!last.contains("making"), "{text}");
    }

    /// Waits until `out` holds a line containing `text`.
    fn wait_for_line(out: &Shared, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let all = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
            if let Some(line) = all.lines().find(|l| l.contains(text)) {
                return line.to_string();
            }
            assert!(Instant::now() < deadline, "no line with {text:?}: {all}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_signal_is_told_at_once_with_where_the_apply_stops() {
        let out = Shared::default();
        let interrupt = Interrupt::default();
        let mut progress = ApplyProgress::lines(out.clone(), &interrupt);
        let (phase, total) = (Phase::Create, 22_204);
        progress.event(&Event::Started { phase, total });
        progress.event(&Event::Advanced {
            phase,
            done: 6_000,
            total,
        });
        interrupt.raise();
        assert_eq!(
            wait_for_line(&out, "Signal received"),
            "Signal received: stopping after the current chunk: creating 6,000 of 22,204 objects; then the apply releases its locks, reports what was made and what was not, and exits 1."
        );
        // The stop cut the phase short before the second signal: it is still where
        // the apply stops.
        progress.event(&Event::Finished {
            phase,
            done: 6_000,
            total,
        });
        interrupt.raise();
        wait_for_line(&out, "Still stopping at the safe point");
        progress.finish();
        assert!(interrupt.announced(2));
    }

    #[test]
    fn a_count_the_broker_moved_is_printed_seconds_after_the_last_line() {
        let out = Shared::default();
        let mut progress = ApplyProgress::lines(out.clone(), &Interrupt::default());
        let (phase, total) = (Phase::Create, 22_204);
        progress.event(&Event::Started { phase, total });
        // A chunk answered under a tenth of the phase, MOVED_LINE after the last line.
        if let Shown::Lines(lines) = &progress.shown {
            lines.lock().unwrap().last_line = Instant::now() - MOVED_LINE;
        }
        progress.event(&Event::Advanced {
            phase,
            done: 1_111,
            total,
        });
        // One at once after it is not printed.
        progress.event(&Event::Advanced {
            phase,
            done: 2_000,
            total,
        });
        progress.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "creating: 0 of 22,204 objects, 0 s",
                "creating: 1,111 of 22,204 objects, 0 s"
            ],
            "{text}"
        );
    }
}
