//! The lock in a spec's ownership record, held while an apply runs.

use super::ApplyError;
use crate::broker::Client;
use crate::model::record::{self, Lock, Record};
use crate::plan::Plan;

/// How long a lock is honoured if its holder never releases it (e.g. it was killed).
pub const LOCK_LIFETIME_SECS: u64 = 15 * 60;

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
        holder: lock.holder.clone(),
        since: lock.acquired_at,
        expires: lock.expires_at,
    }
}

/// Takes the lock in `record` (read just before) for this process, refusing when
/// another apply holds it or when the spec was applied since the plan was made.
pub(super) async fn acquire(
    client: &Client,
    record: &mut Record,
    plan: &Plan,
) -> Result<(), ApplyError> {
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
    Ok(())
}

/// Writes the record back without the lock.
pub(super) async fn release(client: &Client, record: &mut Record) -> Result<(), ApplyError> {
    record.lock = None;
    client.write_record(record).await?;
    Ok(())
}
