//! What a replay tells while it moves messages: that the move starts, and the running
//! count moved. A replay of thousands takes seconds, and a signal's notice says how
//! many moved so far; these events carry facts only, and `render::progress` decides
//! how they look. The sink has the shape of an apply's ([`crate::apply::progress`]).

/// One event of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The move starts (the question was answered yes, or `--auto-approve`), before
    /// the locks are taken: from here on the stop flag the replay was given stops it
    /// once the copies in flight are settled, so the caller starts catching signals.
    Moving {
        /// Messages to move.
        to_move: u64,
    },
    /// Messages moved so far: each copy confirmed by the broker, its original
    /// acknowledged.
    Moved {
        /// The running total.
        moved: u64,
    },
}

/// Where a replay sends its events.
pub type Progress<'p> = dyn FnMut(&Event) + 'p;
