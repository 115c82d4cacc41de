//! An apply's progress on stderr, so that one of thousands of objects, which takes
//! minutes, never looks hung: a progress bar per phase on a terminal (`indicatif`), plain
//! lines elsewhere (a CI log), at each tenth of a phase, whenever the broker's answers
//! moved the count [`MOVED_LINE`] after the last line, and at least every
//! [`HEARTBEAT`] while one runs. Never on stdout, which may hold JSON. A signal is
//! told at once, in the bar's place or among the lines ([`super::stopping`]).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::progress_line::{Awaiting, Missed, PhaseLine};
use super::stopping::{Step, Watch, apply_notice};
use crate::apply::Interrupt;
use crate::apply::progress::{ChangeOutcome, Event, MigrationStep, Phase};
use crate::model::shorten::grouped;
use crate::text::{count, noun_for};

/// How often a plain line is printed while a phase runs, even when it has not moved: an
/// import chunk is answered only once it is done.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How soon after the last plain line a count the broker's answers moved is printed
/// (between the tenths of a phase): each import chunk answered shows within seconds.
pub const MOVED_LINE: Duration = Duration::from_secs(2);

/// What the phase is called, and what it counts.
fn label(phase: Phase) -> (&'static str, &'static str) {
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
fn phase_line(
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
fn how_far(phase: Phase, done: usize, total: usize) -> Step {
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

/// Which phases an apply has been through, for a signal's notice when none runs.
#[derive(Default)]
struct Course {
    /// Whether a phase has started: before, nothing was changed.
    started_any: bool,
    /// The last phase that ended, when it ended short of its size (a stop cut it
    /// short, or a failure): phase, made, size.
    cut_short: Option<(Phase, usize, usize)>,
}

impl Course {
    fn started(&mut self) {
        self.started_any = true;
        self.cut_short = None;
    }

    fn ended(&mut self, phase: Phase, done: usize, total: usize) {
        self.cut_short = (done < total).then_some((phase, done, total));
    }

    /// Where the apply stands while no phase runs: a phase cut short is where it
    /// stops (a signal that arrived just before its end is told where it was heard).
    fn idle(&self) -> Step {
        match self.cut_short {
            Some((phase, done, total)) => how_far(phase, done, total),
            None if self.started_any => Step::BetweenPhases,
            None => Step::BeforeChanges,
        }
    }
}

/// The plain lines' state, shared with the watch thread (heartbeat and signals).
struct Lines<W> {
    out: W,
    running: Option<Running>,
    course: Course,
    missed: Missed,
    last_line: Instant,
    /// The count of the last line printed.
    last_done: usize,
}

impl<W: Write> Lines<W> {
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
    fn tick(&mut self, signals: std::ops::RangeInclusive<usize>) {
        for signal in signals {
            let text = apply_notice(signal, &self.step());
            self.line(&text);
        }
        if self.running.is_some() && self.last_line.elapsed() >= HEARTBEAT {
            self.state();
        }
    }

    fn event(&mut self, event: &Event<'_>) {
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
            Event::Advanced { done, .. } => {
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
            Event::Outcome { outcome, .. } => match outcome {
                ChangeOutcome::Done => {}
                ChangeOutcome::Refused => self.missed.refused += 1,
                ChangeOutcome::Unconfirmed => self.missed.unconfirmed += 1,
                ChangeOutcome::NotSent => self.missed.not_sent += 1,
            },
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
            Event::Migration { queue, ref step } => {
                let text = format!(
                    "migrating queue {:?} in vhost {:?}: {}",
                    queue.name,
                    queue.vhost.as_deref().unwrap_or_default(),
                    migration_step(step)
                );
                self.line(&text);
            }
        }
    }
}

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
}

/// The bar's state, shared with the watch thread (which tells signals above the bar).
#[derive(Default)]
struct Bars {
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
    fn tick(&mut self, signals: std::ops::RangeInclusive<usize>) {
        for signal in signals {
            let text = apply_notice(signal, &self.step());
            match &self.bar {
                Some(drawn) => drawn.bar.println(text),
                None => eprintln!("{text}"),
            }
        }
    }
}

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
        let lines = Arc::new(Mutex::new(Lines {
            out,
            running: None,
            course: Course::default(),
            missed: Missed::default(),
            last_line: Instant::now(),
            last_done: 0,
        }));
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
            Shown::Bar(bars) => {
                bar_event(&mut bars.lock().unwrap_or_else(|e| e.into_inner()), event)
            }
        }
    }

    /// Stops the watch; a bar still drawn (the apply stopped in its phase) gives way
    /// to the phase's line, with what was made so far.
    pub fn finish(&mut self) {
        self.watch.finish();
        if let Shown::Bar(bars) = &self.shown {
            let mut bars = bars.lock().unwrap_or_else(|e| e.into_inner());
            // A phase that did not finish (the apply stopped in it).
            if let Some(drawn) = bars.bar.take() {
                let (done, total) = (drawn.bar.position(), drawn.bar.length());
                drawn.end(done as usize, total.unwrap_or(done) as usize, &bars.missed);
            }
        }
    }
}

impl<W: Write + Send + 'static> Drop for ApplyProgress<W> {
    fn drop(&mut self) {
        self.finish();
    }
}

fn bar_event(bars: &mut Bars, event: &Event<'_>) {
    let Bars {
        bar,
        missed,
        course,
    } = bars;
    match *event {
        Event::Started { phase, total } => {
            course.started();
            if let Some(previous) = bar.take() {
                let (done, total) = (previous.bar.position(), previous.bar.length());
                previous.end(done as usize, total.unwrap_or(done) as usize, missed);
            }
            let (label, noun) = label(phase);
            let style = ProgressStyle::with_template(
                "{prefix:>17} [{bar:30}] {human_pos}/{human_len} {msg}, {elapsed}",
            )
            .expect("the template is valid")
            .progress_chars("=> ");
            let new =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr())
                    .with_style(style)
                    .with_prefix(label)
                    .with_message(noun_for(total, noun));
            new.enable_steady_tick(Duration::from_millis(250));
            *bar = Some(Drawn {
                bar: new,
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
        Event::Outcome { outcome, .. } => match outcome {
            ChangeOutcome::Done => {}
            ChangeOutcome::Refused => missed.refused += 1,
            ChangeOutcome::Unconfirmed => missed.unconfirmed += 1,
            ChangeOutcome::NotSent => missed.not_sent += 1,
        },
        Event::Finished { phase, done, total } => {
            course.ended(phase, done, total);
            if let Some(drawn) = bar.take() {
                drawn.end(done, total, missed);
            }
        }
        Event::Migration { queue, ref step } => {
            let text = format!(
                "migrating queue {:?} in vhost {:?}: {}",
                queue.name,
                queue.vhost.as_deref().unwrap_or_default(),
                migration_step(step)
            );
            match bar {
                Some(drawn) => drawn.bar.println(text),
                None => eprintln!("{text}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
