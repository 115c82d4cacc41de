//! What warren says at once when it receives SIGINT or SIGTERM during an apply or a
//! replay, and the thread that says it: the work only stops at its next safe point,
//! which can be seconds away, so the user hears at once that the signal was heard,
//! where the work will stop, and (on a second signal) what the wait protects.
//!
//! The signal handler runs on the async runtime and must never block on stderr (a
//! full pipe would stall the apply), so it only counts signals
//! ([`crate::apply::Interrupt`]); a thread of its own ([`Watch`]) prints.

use std::ops::RangeInclusive;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::apply::progress::Phase;
use crate::apply::{Interrupt, STOP_AT_ONCE};
use crate::text::noun_for;

/// How often the watch looks for new signals (and ticks the caller's heartbeat).
pub const TICK: Duration = Duration::from_millis(100);

/// Where an apply stands when a signal arrives, as the progress saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// No phase has started: nothing was changed.
    BeforeChanges,
    /// A phase runs.
    In {
        /// The phase.
        phase: Phase,
        /// How far the broker's answers have brought it: `creating 6,000 of 22,204
        /// objects`.
        how_far: String,
    },
    /// A phase ended and the next has not started.
    BetweenPhases,
}

/// What an apply says on its `signal`th signal.
pub fn apply_notice(signal: usize, step: &Step) -> String {
    match signal {
        1 => {
            let at = match step {
                Step::BeforeChanges => "before the first change: nothing has been changed".into(),
                Step::BetweenPhases => "before the next phase".into(),
                Step::In { phase, how_far } => {
                    let safe_point = match phase {
                        Phase::Create => "after the current chunk",
                        Phase::RemoveReplaced => "once the replaced objects are declared again",
                        Phase::Migrate => "at the migration's next safe step",
                        Phase::Supersede
                        | Phase::Update
                        | Phase::DeleteBindings
                        | Phase::DeleteQueues
                        | Phase::DeleteOthers => "once the requests in flight are answered",
                    };
                    format!("{safe_point}: {how_far}")
                }
            };
            format!(
                "Signal received: stopping {at}; then the apply releases its locks, reports what was made and what was not, and exits 1."
            )
        }
        2 => format!(
            "Still stopping at the safe point, which keeps every object whole (an import chunk or request in flight is answered; a replaced queue is never left deleted), makes the report exact and releases the locks. {}",
            at_once_warning()
        ),
        _ => at_once(),
    }
}

/// What a replay says on its `signal`th signal, `moved` of `to_move` messages moved.
pub fn replay_notice(signal: usize, moved: u64, to_move: u64) -> String {
    match signal {
        1 => format!(
            "Signal received: stopping once the copies in flight are settled: {} of {} {} moved; then the replay releases its locks, says how many moved, and exits 1.",
            crate::model::shorten::grouped(moved),
            crate::model::shorten::grouped(to_move),
            noun_for(to_move, "message")
        ),
        2 => format!(
            "Still stopping once the copies in flight are settled: each original is acknowledged only after the broker confirmed its copy, so no message is lost or left in both queues, and the count moved is exact. {}",
            at_once_warning()
        ),
        _ => at_once(),
    }
}

/// What the second signal says the third does.
fn at_once_warning() -> String {
    format!(
        "A {} signal stops warren at once, without that.",
        ordinal(STOP_AT_ONCE)
    )
}

/// What the last signal says, just before the process ends.
fn at_once() -> String {
    "Stopping at once: what was in flight may be part made and is not reported (the broker frees the locks with the connection); run `warren plan` to see where the broker stands.".into()
}

fn ordinal(number: usize) -> &'static str {
    match number {
        1 => "first",
        2 => "second",
        3 => "third",
        _ => "further",
    }
}

/// A thread that, every [`TICK`] until it is finished and once more then, calls its
/// caller's `tick` with the signals received and not yet told (often none), then
/// counts them as told.
pub struct Watch {
    running: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl Watch {
    /// Starts the thread.
    pub fn start(
        interrupt: Interrupt,
        mut tick: impl FnMut(RangeInclusive<usize>) + Send + 'static,
    ) -> Watch {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            loop {
                let finishing =
                    !matches!(stopped.recv_timeout(TICK), Err(RecvTimeoutError::Timeout));
                let signals = interrupt.to_announce();
                let last = *signals.end();
                tick(signals);
                interrupt.told(last);
                // The last tick tells a signal the work stopped on before a tick came.
                if finishing {
                    break;
                }
            }
        });
        Watch {
            running: Some((stop, thread)),
        }
    }

    /// Stops the thread, after a last tick.
    pub fn finish(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            let _ = stop.send(());
            let _ = thread.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_signal_says_where_the_apply_stops() {
        let step = Step::In {
            phase: Phase::Create,
            how_far: "creating 6,000 of 22,204 objects".into(),
        };
        assert_eq!(
            apply_notice(1, &step),
            "Signal received: stopping after the current chunk: creating 6,000 of 22,204 objects; then the apply releases its locks, reports what was made and what was not, and exits 1."
        );
        assert!(apply_notice(1, &Step::BeforeChanges).contains("nothing has been changed"));
        let deleting = Step::In {
            phase: Phase::DeleteQueues,
            how_far: "deleting 40 of 11,100 queues".into(),
        };
        assert!(
            apply_notice(1, &deleting)
                .contains("once the requests in flight are answered: deleting 40 of 11,100 queues")
        );
    }

    #[test]
    fn the_second_signal_says_what_the_wait_protects_and_the_third_stops() {
        let second = apply_notice(2, &Step::BetweenPhases);
        assert!(
            second.contains("a replaced queue is never left deleted"),
            "{second}"
        );
        assert!(second.ends_with("A third signal stops warren at once, without that."));
        assert!(apply_notice(3, &Step::BetweenPhases).starts_with("Stopping at once"));
        assert!(replay_notice(1, 300, 1_000).contains("300 of 1,000 messages moved"));
        assert!(replay_notice(2, 300, 1_000).contains("only after the broker confirmed its copy"));
    }

    #[test]
    fn the_watch_tells_each_signal_once() {
        let interrupt = Interrupt::default();
        let (seen, heard) = mpsc::channel();
        let mut watch = Watch::start(interrupt.clone(), move |signals| {
            for signal in signals {
                let _ = seen.send(signal);
            }
        });
        interrupt.raise();
        assert_eq!(heard.recv_timeout(Duration::from_secs(5)), Ok(1));
        interrupt.raise();
        assert_eq!(heard.recv_timeout(Duration::from_secs(5)), Ok(2));
        // A signal just before the end is still told.
        interrupt.raise();
        watch.finish();
        assert_eq!(heard.try_recv(), Ok(3));
        assert!(interrupt.announced(3));
        assert!(heard.try_recv().is_err());
    }
}
