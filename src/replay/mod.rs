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
//!
//! A whole replay is one call, [`run::run`]: the steps and their order are the
//! library's; the terminal is the caller's, which shows the move and asks through
//! [`Conversation`] and is told the progress ([`Event`]).

pub mod conversation;
pub mod moving;
pub mod prepare;
pub mod progress;
pub mod run;
pub mod target;

pub use conversation::Conversation;
pub use moving::Replayed;
pub use prepare::Prepared;
pub use progress::{Event, Progress};
pub use run::{NotFound, Outcome, Ran, Request};
pub use target::{Target, TargetError};

/// Copies in flight when `--batch` is not given: large enough that a replay of
/// thousands takes seconds, small enough that a kill doubles few messages.
pub const DEFAULT_BATCH: u16 = 100;
