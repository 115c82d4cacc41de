//! What a replay shows and asks, through whoever runs it.

use super::prepare::Prepared;

/// What a replay shows and asks, through whoever runs it (the terminal of `warren
/// replay`).
///
/// An apply has its own ([`crate::apply::run::Conversation`]), which does not fit a
/// replay: it is told a spec's warnings and shows and confirms a plan, where a replay
/// shows and confirms a move of messages (no plan, no warnings: the spec is read only
/// for which queue is whose), and the apply sits above `replay/` in the layers. The
/// shape is the same: the move is shown, then confirmed when nobody approved it
/// beforehand.
pub trait Conversation {
    /// Shows the move decided on, at most `batch` copies in flight (all of a
    /// `--dry-run`).
    fn show(&mut self, prepared: &Prepared, batch: u16);
    /// Asks whether to move the messages just shown: `false` moves nothing (a "no",
    /// or no terminal to ask on).
    fn confirm(&mut self, prepared: &Prepared) -> bool;
}
