//! `warren replay`: sending a consumer's parked messages back to its work queue, once
//! the fault that parked them is fixed (docs/operating.md).
//!
//! Which queue is whose comes from the compiled consumer contract ([`target`]), so only
//! a parking queue of the spec can be emptied, and only into its own consumer's work
//! queue: the default exchange routes on the queue's name, so no other consumer sees a
//! replayed message. The move itself is `broker::replay` (publisher confirms: nothing
//! lost, a refused copy's original left parked, at most `batch` doubled by a kill),
//! under the locks an apply of the spec takes, so that no apply deletes or replaces the
//! two queues while messages move ([`moving`]). What each message's headers lose is
//! [`Replay`](crate::model::headers::Replay).

pub mod moving;
pub mod prepare;
pub mod target;

pub use moving::{MoveError, Replayed, move_parked};
pub use prepare::{Prepared, prepare};
pub use target::{Target, TargetError, find};

/// Copies in flight when `--batch` is not given: large enough that a replay of
/// thousands takes seconds, small enough that a kill doubles few messages.
pub const DEFAULT_BATCH: u16 = 100;
