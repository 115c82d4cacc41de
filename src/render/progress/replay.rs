//! A replay's progress on stderr: nothing while the messages move (a replay of
//! thousands takes seconds), and each signal told at once with the count moved so far
//! ([`crate::render::stopping::replay_notice`]), from a thread of its own ([`Watch`]),
//! since the move only stops once the copies in flight are settled.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::apply::Interrupt;
use crate::render::stopping::{Watch, replay_notice};
use crate::replay::Event;

/// Shows a replay's progress events ([`Event`]): once the move starts, each signal the
/// replay receives is told as it arrives; [`ReplayProgress::finish`] before the
/// replay's summary is printed.
pub struct ReplayProgress {
    interrupt: Interrupt,
    /// Messages moved so far, shared with the watch.
    moved: Arc<AtomicU64>,
    watch: Option<Watch>,
}

impl ReplayProgress {
    /// On stderr, telling the signals `interrupt` counts.
    pub fn on_stderr(interrupt: &Interrupt) -> Self {
        ReplayProgress {
            interrupt: interrupt.clone(),
            moved: Arc::new(AtomicU64::new(0)),
            watch: None,
        }
    }

    /// Shows one event.
    pub fn event(&mut self, event: &Event) {
        match *event {
            Event::Moving { to_move } => {
                let moved = Arc::clone(&self.moved);
                self.watch = Some(Watch::start(self.interrupt.clone(), move |signals| {
                    for signal in signals {
                        let moved = moved.load(Ordering::SeqCst);
                        eprintln!("{}", replay_notice(signal, moved, to_move));
                    }
                }));
            }
            Event::Moved { moved } => self.moved.store(moved, Ordering::SeqCst),
        }
    }

    /// Stops the watch, after it told the signals received.
    pub fn finish(&mut self) {
        if let Some(watch) = &mut self.watch {
            watch.finish();
        }
    }
}
