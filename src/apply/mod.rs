//! Plan × broker → changes made, in dependency order.
//!
//! This module decides *what* is sent and in which order; `broker` decides *how*.
//! Creates go in bulk through the definitions import, chunked under the broker's
//! request body limit; updates and deletes are one request each, a bounded number at a
//! time. The first real error, or a signal, stops the apply with a report of what was
//! done and what was not; running plan and apply again converges.
//!
//! Its files follow the apply's course: the gates a plan passes first (`gates`), the
//! locks it needs (`lock`), the plan made again under them for `apply SPEC`
//! (`locked`), what is done under them and the record written (`held`), the order of
//! the changes (`phases`) and their making (`execute`, `migrate`); what is handed
//! back (`error`) and told on the way (`progress`); the signals that stop it at a safe
//! point (`interrupt`).

mod error;
mod execute;
mod gates;
mod held;
mod interrupt;
mod lock;
mod locked;
mod migrate;
mod phases;
mod precheck;
pub mod progress;
pub mod repair;
pub mod run;

pub use crate::broker::holder_name;
pub use error::{ApplyError, ApplyReport};
pub use gates::check_gates;
pub use interrupt::{Interrupt, STOP_AT_ONCE};
pub use lock::{UnlockError, Unlocked, needed, unlock};
pub use locked::{Locked, apply_locked_plan, lock_and_replan};

use std::time::Duration;

use crate::broker::Client;
use crate::plan::Plan;
use held::{UnderLocks, apply_held};
use progress::Progress;

/// How to apply.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Accept deleting or replacing queues that hold messages.
    pub allow_data_loss: bool,
    /// Set (by a signal handler) to stop at the next safe point: between two import
    /// chunks, two update or delete requests, two steps of a migration or two phases,
    /// with the locks released and a report of what was done.
    pub interrupt: Interrupt,
    /// How long to wait for locks other applies hold (0: refuse at once).
    pub lock_wait: Duration,
    /// Carry out queue replacements blue/green, moving their messages
    /// ([`crate::plan::Migration`]), and finish migrations under way.
    pub migrate: bool,
}

/// Applies a plan. `progress` is told about every phase, how far it has come and what
/// became of each change ([`progress::Event`]).
///
/// Every lock the plan needs is taken first ([`needed`]); under them the spec's record
/// is read, the plan is checked against the broker as it is now, the changes are made,
/// and the record is written before the locks are given back.
pub async fn apply(
    client: &Client,
    plan: &Plan,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    check_gates(plan, options)?;
    let lock = client
        .lock(&needed(plan), &holder_name(), options.lock_wait)
        .await?;
    let outcome = apply_held(client, plan, options, &lock, UnderLocks::Recheck, progress).await;
    lock.release().await;
    outcome
}
