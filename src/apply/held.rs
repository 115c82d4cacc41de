//! What an apply does once it holds its locks: the spec's record read (its serial, what
//! it managed), a saved plan checked against the broker as it is now, the changes made
//! ([`super::execute`]), and the record written while the locks are still its own. An
//! apply whose locks went is never reported as applied.

use super::Options;
use super::error::{ApplyError, ApplyReport, describe, mismatch_error};
use super::execute::{broker_gone, make_changes, stop_for_lost_locks};
use super::precheck::check_before_writing;
use super::progress::Progress;
use crate::broker::{BrokerError, BrokerLock, Client};
use crate::model::GlobalParameter;
use crate::model::record::{self, RECORD_FORMAT, Record};
use crate::plan::{Plan, recheck};

/// What an apply knows of the broker once it holds its locks.
pub(super) enum UnderLocks {
    /// A saved plan: the broker is read and the plan recomputed, and refused unless
    /// its changes are the same.
    Recheck,
    /// A plan made under these locks, and the global parameters read then.
    Planned(Vec<GlobalParameter>),
}

pub(super) async fn apply_held(
    client: &Client,
    plan: &Plan,
    options: &Options,
    lock: &BrokerLock,
    under: UnderLocks,
    progress: &mut Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    // Every record is read under the locks once: this spec's (its serial, what it
    // managed) and, for a saved plan, all of them for the recheck.
    let (mut global_parameters, live) = match under {
        UnderLocks::Planned(global_parameters) => {
            // They were read under these locks, before the plan was confirmed: nobody
            // else can have written a record since, as long as the locks are still
            // ours (a confirmation may take a while; the locks may be cut off).
            if !client.still_holds(lock).await {
                let report = Box::new(ApplyReport {
                    not_done: plan.changes.iter().map(describe).collect(),
                    ..ApplyReport::default()
                });
                return Err(stop_for_lost_locks(client, report).await);
            }
            (global_parameters, None)
        }
        UnderLocks::Recheck => {
            let (global_parameters, live) =
                tokio::try_join!(client.global_parameters(), client.read_live(&plan.vhosts))?;
            (global_parameters, Some(live.definitions))
        }
    };
    let mut record = record::of_spec(&global_parameters, &plan.spec)
        .map_err(|damaged| ApplyError::from(BrokerError::from(damaged)))?
        .unwrap_or(Record {
            format: RECORD_FORMAT,
            spec: plan.spec.clone(),
            ..Record::default()
        });
    applied_since(plan, record.serial)?;
    let fresh;
    let plan = match live {
        Some(mut live) => {
            live.global_parameters = global_parameters;
            fresh =
                recheck(plan, &live, Some(client.user().to_string())).map_err(mismatch_error)?;
            // Kept for the record's write: the parts already there are not written again.
            global_parameters = live.global_parameters;
            // The fresh plan has the same changes, with the broker's handles of today.
            &fresh
        }
        None => plan,
    };
    // Before the first write: what the broker holds now, and the user's permissions.
    check_before_writing(client, plan, options).await?;
    let outcome = make_changes(client, plan, options, lock, progress).await;
    // Record what is now managed: everything the spec declares once every change was
    // made (created, updated or adopted), and after a failure what it managed before
    // plus what it declares (so nothing made is left unowned).
    let mut managed = record.object_ids();
    match &outcome {
        Ok(_) => managed = plan.managed().cloned().collect(),
        Err(error) if error.report().is_some_and(ApplyReport::changed_anything) => {
            managed.extend(plan.managed().cloned())
        }
        // Refused or failed before any change: the record stays as it is.
        Err(_) => return outcome,
    }
    if !client.still_holds(lock).await {
        // The locks were lost (the connection died): another apply may hold them now
        // and its record is the truth. What this one made is adopted by the next apply.
        // Unless the broker itself went away: then the record is simply not written.
        return not_recorded(client, outcome).await;
    }
    record.serial += 1;
    record.applied_at = record::now();
    record.format = RECORD_FORMAT;
    record.set_objects(&managed);
    let written = client.write_record(&record, &global_parameters).await;
    // Confirmed again after the write: if the locks went in between (a freeze at that
    // very moment), the user must hear that the record may have been written without
    // them, never "applied".
    if written.is_ok() && !client.still_holds(lock).await {
        return locks_lost(outcome);
    }
    match written {
        Ok(()) => outcome,
        // Not sent: the broker no longer confirmed the locks (see `broker::fence`),
        // because it went away, or because they went to another apply.
        Err(error) if error.is_locks_lost() => not_recorded(client, outcome).await,
        // The record could not be written (the broker went away): the report of
        // what was done must still reach the user, never "nothing was changed".
        Err(error) => match outcome {
            Ok(report) => Err(ApplyError::RecordNotWritten {
                error: Box::new(error.into()),
                report: Box::new(report),
            }),
            Err(first) => Err(first),
        },
    }
}

/// An apply whose record was not written because the broker no longer confirmed its
/// locks: the broker went away (the record is simply not written, exit 3), or the
/// locks went to another apply.
async fn not_recorded(
    client: &Client,
    outcome: Result<ApplyReport, ApplyError>,
) -> Result<ApplyReport, ApplyError> {
    match (broker_gone(client).await, outcome) {
        (Some(gone), Ok(report)) => Err(ApplyError::RecordNotWritten {
            error: Box::new(gone.into()),
            report: Box::new(report),
        }),
        (_, outcome) => locks_lost(outcome),
    }
}

/// An apply that lost its locks is never reported as applied.
fn locks_lost(outcome: Result<ApplyReport, ApplyError>) -> Result<ApplyReport, ApplyError> {
    outcome.and_then(|report| {
        Err(ApplyError::LocksLost {
            report: Box::new(report),
        })
    })
}

/// A saved plan without changes is checked against the broker as it is now, as one
/// with changes is under its locks: a record written since, or a broker that would no
/// longer plan "no changes" (a change, a policy tie on a managed queue, drift), makes
/// it stale. Nothing is written, so no lock is taken.
pub(super) async fn check_still_current(client: &Client, plan: &Plan) -> Result<(), ApplyError> {
    let (global_parameters, live) =
        tokio::try_join!(client.global_parameters(), client.read_live(&plan.vhosts))?;
    let serial = record::of_spec(&global_parameters, &plan.spec)
        .map_err(|damaged| ApplyError::from(BrokerError::from(damaged)))?
        .map_or(Record::default().serial, |record| record.serial);
    applied_since(plan, serial)?;
    let mut live = live.definitions;
    live.global_parameters = global_parameters;
    recheck(plan, &live, Some(client.user().to_string())).map_err(mismatch_error)?;
    Ok(())
}

/// A plan is stale once its spec was applied since it was made (the record's serial
/// moved).
fn applied_since(plan: &Plan, serial: u64) -> Result<(), ApplyError> {
    if serial == plan.serial {
        return Ok(());
    }
    Err(ApplyError::Stale(format!(
        "spec `{}` was applied since: serial {} is now {serial}",
        plan.spec, plan.serial
    )))
}
