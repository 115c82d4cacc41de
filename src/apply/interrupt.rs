//! The signals an apply (or a replay) has received, shared by three parties: the
//! signal handler counts them, the work checks at its safe points whether to stop, and
//! whoever prints (the progress on stderr) tells the user, once per signal, what the
//! stop waits for.
//!
//! The first signal asks for a stop at the next safe point; the second only explains
//! why the wait is worth it; the third ends the process at once ([`STOP_AT_ONCE`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signal that ends the process at once, without waiting for a safe point: the
/// first stops cleanly, the second says what that protects, so only a user who has
/// been told what is given up gets the immediate stop.
pub const STOP_AT_ONCE: usize = 3;

/// Signals received, shared by the handler, the work and the progress.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<Signals>);

#[derive(Debug, Default)]
struct Signals {
    /// Set by the first signal: stop at the next safe point.
    stop: AtomicBool,
    /// Signals received so far.
    received: AtomicUsize,
    /// Signals the user was told about so far.
    announced: AtomicUsize,
}

impl Interrupt {
    /// A signal arrived: the stop is asked for. How many have arrived, this one
    /// included.
    pub fn raise(&self) -> usize {
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.received.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Whether a stop was asked for.
    pub fn is_set(&self) -> bool {
        self.0.stop.load(Ordering::SeqCst)
    }

    /// The flag itself, for loops that take a plain flag (a replay's batches).
    pub fn flag(&self) -> &AtomicBool {
        &self.0.stop
    }

    /// Signals received so far.
    pub fn received(&self) -> usize {
        self.0.received.load(Ordering::SeqCst)
    }

    /// The signals received that the user was not told about yet, as the number of
    /// each (1 for the first signal…).
    pub fn to_announce(&self) -> std::ops::RangeInclusive<usize> {
        (self.0.announced.load(Ordering::SeqCst) + 1)..=self.received()
    }

    /// The user was told about the signals up to the `signal`th.
    pub fn told(&self, signal: usize) {
        self.0.announced.fetch_max(signal, Ordering::SeqCst);
    }

    /// Whether the user was told about the `signal`th signal.
    pub fn announced(&self, signal: usize) -> bool {
        self.0.announced.load(Ordering::SeqCst) >= signal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_is_announced_once() {
        let interrupt = Interrupt::default();
        assert!(!interrupt.is_set());
        assert!(interrupt.to_announce().is_empty());
        assert_eq!(interrupt.raise(), 1);
        assert!(interrupt.is_set());
        assert_eq!(interrupt.to_announce(), 1..=1);
        interrupt.told(1);
        assert!(interrupt.to_announce().is_empty());
        interrupt.raise();
        interrupt.raise();
        assert_eq!(interrupt.to_announce().collect::<Vec<_>>(), vec![2, 3]);
        assert!(!interrupt.announced(STOP_AT_ONCE));
        interrupt.told(STOP_AT_ONCE);
        assert!(interrupt.announced(STOP_AT_ONCE));
    }
}
