//! The lock in a spec's ownership record, held while an apply runs.
//!
//! The lock is short-lived and renewed: it expires [`LOCK_LIFETIME_SECS`] after its
//! last renewal, and a running apply renews it every [`RENEW_EVERY`]. A holder that
//! died (killed, its machine gone) therefore blocks the spec for about a minute, not
//! for the length of an apply; `warren unlock` breaks it at once. An apply that finds
//! its lock taken over stops at its next safe point.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::ApplyError;
use crate::broker::{BrokerError, Client};
use crate::model::record::{self, Lock, Record};
use crate::plan::Plan;

/// How long a lock counts after its last renewal.
pub const LOCK_LIFETIME_SECS: u64 = 60;

/// How often a running apply renews its lock.
pub const RENEW_EVERY: Duration = Duration::from_secs(15);

/// A holder name for this process: host, pid and a random token.
pub fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown-host".into());
    format!(
        "{host}:{}:{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

fn locked(spec: &str, lock: &Lock) -> ApplyError {
    ApplyError::Locked {
        spec: spec.to_string(),
        lock: lock.describe(record::now()),
        holder: lock.holder.clone(),
    }
}

/// Takes the lock in `record` (read just before) for this process, refusing when
/// another apply holds it or when the spec was applied since the plan was made.
/// Returns the holder name the lock is held under.
pub(super) async fn acquire(
    client: &Client,
    record: &mut Record,
    plan: &Plan,
) -> Result<String, ApplyError> {
    let holder = holder_name();
    if let Some(lock) = record.held_by_other(&holder) {
        return Err(locked(&plan.spec, lock));
    }
    if record.serial != plan.serial {
        return Err(ApplyError::Stale(format!(
            "spec `{}` was applied since: serial {} is now {}",
            plan.spec, plan.serial, record.serial
        )));
    }
    let now = record::now();
    record.lock = Some(Lock {
        holder: holder.clone(),
        acquired_at: now,
        expires_at: now + LOCK_LIFETIME_SECS,
    });
    client.write_record(record).await?;
    // The management API has no compare-and-set: read back to see who won.
    let confirmed = client.read_record(&plan.spec).await?;
    if let Some(lock) = confirmed.as_ref().and_then(|r| r.held_by_other(&holder)) {
        return Err(locked(&plan.spec, lock));
    }
    Ok(holder)
}

/// Renews the lock every [`RENEW_EVERY`] until `done` is notified. When the record
/// no longer shows this holder's lock (broken by hand, taken by another apply after
/// it expired), it stops renewing and sets `lost`: the apply stops at its next safe
/// point.
pub(super) async fn renew_until(
    client: &Client,
    record: &Record,
    holder: &str,
    done: &Notify,
    lost: &AtomicBool,
) {
    let mut record = record.clone();
    loop {
        tokio::select! {
            _ = done.notified() => return,
            _ = tokio::time::sleep(RENEW_EVERY) => {}
        }
        let ours = match client.read_record(&record.spec).await {
            Ok(Some(now)) => now.lock.as_ref().is_some_and(|l| l.holder == holder),
            Ok(None) => false,
            // The broker is unreachable: the apply itself will fail; keep trying.
            Err(_) => continue,
        };
        if !ours {
            lost.store(true, Ordering::SeqCst);
            return;
        }
        if let Some(lock) = record.lock.as_mut() {
            lock.expires_at = record::now() + LOCK_LIFETIME_SECS;
        }
        let _ = client.write_record(&record).await;
    }
}

/// Writes the record back without the lock.
pub(super) async fn release(client: &Client, record: &mut Record) -> Result<(), ApplyError> {
    record.lock = None;
    client.write_record(record).await?;
    Ok(())
}

/// What `warren unlock` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Unlocked {
    /// The spec was not locked (or its lock had expired).
    NotLocked,
    /// The lock was removed; it was this one.
    Removed(Lock),
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
        /// Who holds the lock.
        holder: String,
        /// Who the user named.
        given: String,
    },
    /// The broker could not be read or written.
    #[error(transparent)]
    Broker(#[from] BrokerError),
}

/// Breaks a spec's lock by hand (as Terraform's `force-unlock`), when `holder` is the
/// one that holds it: for a lock whose apply is known to be dead.
pub async fn unlock(client: &Client, spec: &str, holder: &str) -> Result<Unlocked, UnlockError> {
    let Some(mut record) = client.read_record(spec).await? else {
        return Ok(Unlocked::NotLocked);
    };
    let Some(lock) = record.lock.clone().filter(|l| l.expires_at > record::now()) else {
        return Ok(Unlocked::NotLocked);
    };
    if lock.holder != holder {
        return Err(UnlockError::OtherHolder {
            spec: spec.to_string(),
            holder: lock.holder,
            given: holder.to_string(),
        });
    }
    record.lock = None;
    client.write_record(&record).await?;
    Ok(Unlocked::Removed(lock))
}

/// A flag an apply checks at its safe points: set by a signal, or when the lock is lost.
pub type Interrupt = Arc<AtomicBool>;
