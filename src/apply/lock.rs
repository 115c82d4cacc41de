//! Which locks an apply holds, and breaking one by hand.
//!
//! The locks themselves are the broker's (`broker::lock`: exclusive queues, freed by
//! the broker when their holder dies). An apply holds, for its whole run:
//!
//! - its spec's lock: one apply per spec at a time;
//! - the lock of every vhost the plan looks at: every spec that touches a vhost is
//!   serialised with every other, so two specs never both claim an object there;
//! - the broker-wide lock when the plan changes or claims an object with no vhost
//!   (a user, a global parameter), for the same reason across vhosts.
//!
//! Under them, the apply reads every record again and rechecks its plan, so a claim is
//! always checked against the records as they are while nobody else can claim.

use crate::broker::{BrokerError, Client, LockName};
use crate::model::ObjectKind;
use crate::plan::Plan;

/// The locks applying `plan` needs.
pub fn needed(plan: &Plan) -> Vec<LockName> {
    let mut names = vec![LockName::Spec(plan.spec.clone())];
    names.extend(plan.vhosts.iter().cloned().map(LockName::Vhost));
    let broker_wide =
        |id: &crate::model::ObjectId| id.vhost.is_none() && id.kind != ObjectKind::Vhost;
    let touched = plan.changes.iter().map(|c| &c.id).chain(&plan.adopted);
    if touched.into_iter().any(broker_wide) {
        names.push(LockName::BrokerWide);
    }
    names
}

/// What `warren unlock` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Unlocked {
    /// Nobody held the spec's lock.
    NotLocked,
    /// The holder's connection was closed: all its locks are free. The holder, described.
    Removed(String),
}

/// Why `warren unlock` did not unlock.
#[derive(Debug, thiserror::Error)]
pub enum UnlockError {
    /// The lock is held by another holder than the one named.
    #[error(
        "spec `{spec}` is locked by {holder}, not by {given}: nothing was changed (name the holder the lock error printed)"
    )]
    OtherHolder {
        /// Spec.
        spec: String,
        /// Who holds the lock, described.
        holder: String,
        /// Who the user named.
        given: String,
    },
    /// The broker could not be read or written.
    #[error(transparent)]
    Broker(#[from] BrokerError),
}

/// Breaks a spec's lock by hand (as Terraform's `force-unlock`), when `holder` holds
/// it: the broker closes that apply's connection, which frees every lock it held. For
/// an apply that is stuck but alive; a dead one's locks are already free.
pub async fn unlock(client: &Client, spec: &str, holder: &str) -> Result<Unlocked, UnlockError> {
    match client
        .break_lock(&LockName::Spec(spec.to_string()), holder)
        .await
    {
        Ok(None) => Ok(Unlocked::NotLocked),
        Ok(Some(described)) => Ok(Unlocked::Removed(described)),
        Err(BrokerError::Locked { holder: found, .. }) => Err(UnlockError::OtherHolder {
            spec: spec.to_string(),
            holder: found,
            given: holder.to_string(),
        }),
        Err(error) => Err(error.into()),
    }
}
