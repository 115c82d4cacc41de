//! Plan × broker → changes made, in dependency order.
//!
//! This module decides *what* is sent and in which order; `broker` decides *how*.
//! Creates go in bulk through the definitions import, chunked under the broker's
//! request body limit; updates and deletes are one request each, a bounded number at a
//! time. The first real error stops the apply with a report of what was done and what
//! was not; running plan and apply again converges.

mod lock;
mod migrate;
pub mod progress;
pub mod repair;

pub use crate::broker::holder_name;
pub use lock::{Interrupt, UnlockError, Unlocked, needed, unlock};

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::broker::{BrokerError, BrokerLock, Client, ObjectWrite, WriteOutcome};
use crate::diff::{Action, Change};
use crate::model::record::{self, RECORD_FORMAT, Record};
use crate::model::{Definitions, GlobalParameter, ObjectKind};
use crate::plan::{Mismatch, Plan, Stage, recheck, replan};
use progress::{ChangeOutcome, Event, Progress, Step};

/// Why an apply did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Changes would lose messages and `--allow-data-loss` was not given.
    #[error("refusing to lose messages: {0} (re-run with --allow-data-loss to accept)")]
    DataLoss(String),
    /// The plan was made without some users' passwords (`plan` without the
    /// applications' secrets): it cannot create or keep those users right.
    #[error(
        "this plan was made without the passwords of {0}: plan again where they are set (`warren apply SPEC` reads them itself)"
    )]
    UnknownPasswords(String),
    /// The plan wants objects another spec manages.
    #[error("refusing to take over objects managed by another spec: {0}")]
    Conflict(String),
    /// A generated policy of the plan would apply to queues the spec does not declare,
    /// or select names another spec's generated policy selects.
    #[error("refusing to apply: {0}; nothing was changed")]
    Captures(String),
    /// `--migrate` on a broker without the shovel plugin.
    #[error(
        "cannot migrate queues in vhost `{0}`: the broker has no shovel plugin, which moves their messages; enable it on every node (`rabbitmq-plugins enable rabbitmq_shovel`) and apply again"
    )]
    NoShovels(String),
    /// A migration is under way and the apply was not asked to carry migrations out.
    #[error(
        "the migration of {0} is under way (its messages wait in a temporary queue): run `warren apply --migrate` to finish it"
    )]
    MigrationUnderWay(String),
    /// The plan was made against another broker.
    #[error("this plan does not apply to this broker: {0}")]
    OtherBroker(String),
    /// The broker changed since the plan was made.
    #[error("the broker changed since this plan was made ({0}); run `warren plan` again")]
    Stale(String),
    /// The apply stopped at a safe point: a signal, or its locks were lost.
    #[error("apply stopped before it finished: {why}")]
    Interrupted {
        /// Why.
        why: String,
        /// The report up to the stop.
        report: Box<ApplyReport>,
    },
    /// Every change was made, but the ownership record could not be written after.
    #[error(
        "the changes were made, but the spec's ownership record could not be written ({error}): run `warren apply` again to record them"
    )]
    RecordNotWritten {
        /// Why the record was not written.
        error: Box<ApplyError>,
        /// What was done.
        report: Box<ApplyReport>,
    },
    /// The apply's locks were lost (its lock connection closed: frozen for longer than
    /// the heartbeat, or cut off by `warren unlock`) before its record was written.
    #[error(
        "the apply lost its locks before it had recorded what it did (its lock connection closed; another apply may hold them now): its record may not show this apply; what it made is adopted by the next apply, so run `warren plan` again, and `warren state show` to see the record"
    )]
    LocksLost {
        /// What was done.
        report: Box<ApplyReport>,
    },
    /// The broker refused a request, after `done` changes.
    #[error("{error}")]
    Broker {
        /// What failed.
        error: BrokerError,
        /// The report up to the failure.
        report: Box<ApplyReport>,
    },
}

impl From<BrokerError> for ApplyError {
    fn from(error: BrokerError) -> Self {
        ApplyError::Broker {
            error,
            report: Box::default(),
        }
    }
}

/// What an apply did, from what warren sent and what the broker confirmed.
#[derive(Debug, Clone, Default)]
pub struct ApplyReport {
    /// Changes the broker confirmed, as `action kind name`.
    pub done: Vec<String>,
    /// Changes sent that the broker did not confirm (it stopped answering): they may
    /// or may not have been made.
    pub unconfirmed: Vec<String>,
    /// Changes not made: refused by the broker, or not sent after an earlier error.
    pub not_done: Vec<String>,
}

/// How to apply.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Accept deleting or replacing queues that hold messages.
    pub allow_data_loss: bool,
    /// Set (by a signal handler) to stop at the next safe point: between phases, with
    /// the locks released and a report of what was done.
    pub interrupt: Interrupt,
    /// How long to wait for locks other applies hold (0: refuse at once).
    pub lock_wait: Duration,
    /// Carry out queue replacements blue/green, moving their messages
    /// ([`crate::plan::Migration`]), and finish migrations under way.
    pub migrate: bool,
}

impl ApplyReport {
    /// Whether the broker confirmed (or may have made) any change.
    pub fn changed_anything(&self) -> bool {
        !self.done.is_empty() || !self.unconfirmed.is_empty()
    }
}

impl ApplyError {
    /// The report of what was done and not done, when the apply changed anything.
    pub fn report(&self) -> Option<&ApplyReport> {
        match self {
            ApplyError::Interrupted { report, .. } | ApplyError::LocksLost { report } => {
                Some(report)
            }
            // A failure before the first change (a lock held elsewhere, an unreadable
            // broker) has nothing to report: "nothing was changed".
            ApplyError::Broker { report, .. } => {
                Some(report.as_ref()).filter(|r| r.changed_anything() || !r.not_done.is_empty())
            }
            _ => None,
        }
    }
}

fn describe(change: &Change) -> String {
    let action = match change.action {
        Action::Create => "create",
        Action::Update => "update",
        Action::Replace => "replace",
        Action::Delete => "delete",
    };
    format!("{action} {}", change.id)
}

/// Refuses plans that lose data without permission or take over others' objects.
pub fn check_gates(plan: &Plan, options: &Options) -> Result<(), ApplyError> {
    if !plan.unknown_passwords.is_empty() {
        let list: Vec<String> = plan
            .unknown_passwords
            .iter()
            .map(|(user, missing)| format!("user `{user}` ({missing})"))
            .collect();
        return Err(ApplyError::UnknownPasswords(list.join(", ")));
    }
    if !plan.conflicts.is_empty() {
        let list: Vec<String> = plan
            .conflicts
            .iter()
            .map(|c| format!("{} (spec `{}`)", c.id, c.owner))
            .collect();
        return Err(ApplyError::Conflict(list.join("; ")));
    }
    if let Some(refusal) = plan.refusal() {
        return Err(ApplyError::Captures(refusal));
    }
    if !options.migrate
        && let Some(under_way) = plan.migrations.iter().find(|m| m.stage == Stage::MoveBack)
    {
        return Err(ApplyError::MigrationUnderWay(under_way.queue.to_string()));
    }
    let losing: Vec<String> = plan
        .changes
        .iter()
        .filter(|c| c.loses_data() && !(options.migrate && plan.migration_of(c).is_some()))
        .map(|c| {
            let hint = match (plan.migration_of(c).is_some(), c.messages) {
                (false, _) => "",
                (true, Some(1)) => " (--migrate moves it)",
                (true, _) => " (--migrate moves them)",
            };
            format!("{} holds {}{hint}", c.id, c.loss())
        })
        .collect();
    if !losing.is_empty() && !options.allow_data_loss {
        return Err(ApplyError::DataLoss(losing.join("; ")));
    }
    Ok(())
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

/// A plan made under the locks that apply it (`apply SPEC`).
pub struct Locked {
    /// The plan, made while the locks were held: what the apply will do.
    pub plan: Plan,
    lock: BrokerLock,
    /// The global parameters (every ownership record) as read under the locks.
    global_parameters: Vec<GlobalParameter>,
}

impl Locked {
    /// Gives the locks back without applying (the user declined).
    pub async fn release(self) {
        self.lock.release().await;
    }
}

fn mismatch_error(mismatch: Mismatch) -> ApplyError {
    match mismatch {
        Mismatch::OtherBroker { .. } => ApplyError::OtherBroker(mismatch.to_string()),
        Mismatch::Changes(text) => ApplyError::Stale(text),
        Mismatch::DamagedRecord(damaged) => ApplyError::from(BrokerError::from(damaged)),
    }
}

/// For `apply SPEC`, as Terraform does: takes the locks `planned` needs, then checks
/// its desired state again under them, so that what is shown (and confirmed) is what
/// the broker holds while nobody else can change it. An apply that waited for another
/// one (`--lock-timeout`) therefore plans what is left, instead of refusing a plan that
/// went stale while it waited.
pub async fn lock_and_replan(
    client: &Client,
    planned: &Plan,
    lock_wait: Duration,
) -> Result<Locked, ApplyError> {
    let lock = client
        .lock(&needed(planned), &holder_name(), lock_wait)
        .await?;
    let fresh = async {
        let (mut fresh, global_parameters) = plan_under_locks(client, planned).await?;
        let queues = fresh.queues_needing_counts();
        if !queues.is_empty() {
            let counts = client.message_counts(&queues).await?;
            fresh.set_message_counts(&queues, counts);
        }
        let held = lock.names();
        if let Some(missing) = needed(&fresh).into_iter().find(|n| !held.contains(n)) {
            return Err(ApplyError::Stale(format!(
                "it now also changes objects under the lock of {}",
                missing.describe()
            )));
        }
        Ok((fresh, global_parameters))
    }
    .await;
    match fresh {
        Ok((plan, global_parameters)) => Ok(Locked {
            plan,
            lock,
            global_parameters,
        }),
        Err(error) => {
            lock.release().await;
            Err(error)
        }
    }
}

/// `planned` as it stands under the locks, with the global parameters read there.
/// When what it was made from reads the same again ([`crate::plan::Basis`]: the
/// records, the small listings and the objects it touches), it is what a fresh plan
/// would be; otherwise the broker is read in full and the plan made again.
async fn plan_under_locks(
    client: &Client,
    planned: &Plan,
) -> Result<(Plan, Vec<GlobalParameter>), ApplyError> {
    if let Some(basis) = &planned.basis {
        let (small, named, global_parameters) = tokio::try_join!(
            client.read_live_small(&planned.vhosts),
            client.read_named(basis.named()),
            client.global_parameters(),
        )?;
        let now = Definitions {
            queues: named.queues,
            exchanges: named.exchanges,
            bindings: named.bindings,
            global_parameters,
            ..small.definitions
        };
        if basis.holds(&now) {
            return Ok((planned.clone(), now.global_parameters));
        }
    }
    let (live, global_parameters) = tokio::try_join!(
        client.read_live(&planned.vhosts),
        client.global_parameters()
    )?;
    let mut live = live.definitions;
    live.global_parameters = global_parameters;
    let fresh = replan(planned, &live, Some(client.user().to_string())).map_err(mismatch_error)?;
    Ok((fresh, live.global_parameters))
}

/// Applies a plan made under its locks ([`lock_and_replan`]), then gives them back.
pub async fn apply_locked_plan(
    client: &Client,
    locked: Locked,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    let Locked {
        plan,
        lock,
        global_parameters,
    } = locked;
    let outcome = match check_gates(&plan, options) {
        Ok(()) => {
            let under = UnderLocks::Planned(global_parameters);
            apply_held(client, &plan, options, &lock, under, progress).await
        }
        Err(error) => Err(error),
    };
    lock.release().await;
    outcome
}

/// Why an apply stops at a safe point whose locks the broker no longer holds for it.
const LOCKS_LOST: &str = "its locks were lost: the broker closed its lock connection";

/// What an apply knows of the broker once it holds its locks.
enum UnderLocks {
    /// A saved plan: the broker is read and the plan recomputed, and refused unless
    /// its changes are the same.
    Recheck,
    /// A plan made under these locks, and the global parameters read then.
    Planned(Vec<GlobalParameter>),
}

async fn apply_held(
    client: &Client,
    plan: &Plan,
    options: &Options,
    lock: &BrokerLock,
    under: UnderLocks,
    progress: &mut Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    // Every record is read under the locks once: this spec's (its serial, what it
    // managed) and, for a saved plan, all of them for the recheck.
    let (global_parameters, live) = match under {
        UnderLocks::Planned(global_parameters) => {
            // They were read under these locks, before the plan was confirmed: nobody
            // else can have written a record since, as long as the locks are still
            // ours (a confirmation may take a while; the locks may be cut off).
            if !client.still_holds(lock).await {
                return Err(ApplyError::Interrupted {
                    why: LOCKS_LOST.to_string(),
                    report: Box::new(ApplyReport {
                        not_done: plan.changes.iter().map(describe).collect(),
                        ..ApplyReport::default()
                    }),
                });
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
    if record.serial != plan.serial {
        return Err(ApplyError::Stale(format!(
            "spec `{}` was applied since: serial {} is now {}",
            plan.spec, plan.serial, record.serial
        )));
    }
    let fresh;
    let plan = match live {
        Some(mut live) => {
            live.global_parameters = global_parameters;
            fresh =
                recheck(plan, &live, Some(client.user().to_string())).map_err(mismatch_error)?;
            // The fresh plan has the same changes, with the broker's handles of today.
            &fresh
        }
        None => plan,
    };
    let outcome = apply_locked(client, plan, options, lock, progress).await;
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
        return locks_lost(outcome);
    }
    record.serial += 1;
    record.applied_at = record::now();
    record.format = RECORD_FORMAT;
    record.set_objects(&managed);
    let written = client.write_record(&record).await;
    // Confirmed again after the write: if the locks went in between (a freeze at that
    // very moment), the user must hear that the record may have been written without
    // them, never "applied".
    if written.is_ok() && !client.still_holds(lock).await {
        return locks_lost(outcome);
    }
    match written {
        Ok(()) => outcome,
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

/// An apply that lost its locks is never reported as applied.
fn locks_lost(outcome: Result<ApplyReport, ApplyError>) -> Result<ApplyReport, ApplyError> {
    outcome.and_then(|report| {
        Err(ApplyError::LocksLost {
            report: Box::new(report),
        })
    })
}

async fn apply_locked(
    client: &Client,
    plan: &Plan,
    options: &Options,
    lock: &BrokerLock,
    progress: &mut Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    let allow_data_loss = options.allow_data_loss;
    if options.migrate {
        // Before any change: a migration that cannot move messages would stop half way.
        let vhosts: BTreeSet<&str> = plan
            .migrations
            .iter()
            .filter_map(|m| m.queue.vhost.as_deref())
            .collect();
        for vhost in vhosts {
            if !client.shovels_available(vhost).await? {
                return Err(ApplyError::NoShovels(vhost.to_string()));
            }
        }
    }
    let phases = phases(plan, options.migrate);
    let mut report = ApplyReport::default();
    for (number, phase) in phases.iter().enumerate() {
        let migrations_to_run =
            phase.kind == PhaseKind::Migrate && options.migrate && !plan.migrations.is_empty();
        if phase.changes.is_empty() && !migrations_to_run {
            continue;
        }
        // A safe point: nothing is half done between phases (except after the removal
        // of replaced objects, which the creates must follow).
        let why = if phase.kind == PhaseKind::Import {
            None
        } else if options.interrupt.load(Ordering::SeqCst) {
            Some("interrupted by a signal")
        } else if !client.still_holds(lock).await {
            Some(LOCKS_LOST)
        } else {
            None
        };
        if let Some(why) = why {
            for later in &phases[number..] {
                report
                    .not_done
                    .extend(later.changes.iter().map(|c| not_done(c, later.kind)));
            }
            return Err(ApplyError::Interrupted {
                why: why.to_string(),
                report: Box::new(report),
            });
        }
        if phase.kind == PhaseKind::Migrate {
            let total = plan.migrations.len();
            progress(&Event::Started {
                step: phase.step,
                total,
            });
            if let Err(mut error) = migrate_all(client, plan, options, &mut report, progress).await
            {
                if let ApplyError::Interrupted { report, .. } | ApplyError::Broker { report, .. } =
                    &mut error
                {
                    for later in &phases[number + 1..] {
                        report
                            .not_done
                            .extend(later.changes.iter().map(|c| describe(c)));
                    }
                }
                return Err(error);
            }
            progress(&Event::Finished {
                step: phase.step,
                done: total,
                total,
            });
            continue;
        }
        let outcomes = run_phase(client, phase, allow_data_loss, progress).await;
        let mut failure = None;
        let mut removed = Vec::new();
        let mut failed_or_unsent = 0;
        for (change, outcome) in phase.changes.iter().zip(outcomes) {
            progress(&Event::Outcome {
                change,
                outcome: match &outcome {
                    WriteOutcome::Done => ChangeOutcome::Done,
                    WriteOutcome::Refused(_) => ChangeOutcome::Refused,
                    WriteOutcome::Unconfirmed(_) => ChangeOutcome::Unconfirmed,
                    WriteOutcome::NotSent => ChangeOutcome::NotSent,
                },
            });
            match outcome {
                WriteOutcome::Done if phase.kind == PhaseKind::RemoveReplaced => {
                    removed.push(*change)
                }
                WriteOutcome::Done => report.done.push(describe(change)),
                WriteOutcome::Refused(error) => {
                    failed_or_unsent += 1;
                    failure.get_or_insert(error);
                    report.not_done.push(not_done(change, phase.kind));
                }
                WriteOutcome::Unconfirmed(error) => {
                    failed_or_unsent += 1;
                    failure.get_or_insert(error);
                    report.unconfirmed.push(not_done(change, phase.kind));
                }
                WriteOutcome::NotSent => {
                    failed_or_unsent += 1;
                    report.not_done.push(not_done(change, phase.kind))
                }
            }
        }
        let made = phase.changes.len() - failed_or_unsent;
        progress(&Event::Finished {
            step: phase.step,
            done: made,
            total: phase.changes.len(),
        });
        if let Some(error) = failure {
            if !removed.is_empty() {
                // A replace never leaves a queue deleted and not declared again.
                declare_again(client, plan, &removed, &mut report).await;
            }
            for later in &phases[number + 1..] {
                report
                    .not_done
                    .extend(later.changes.iter().map(|c| describe(c)));
            }
            return Err(ApplyError::Broker {
                error,
                report: Box::new(report),
            });
        }
    }
    Ok(report)
}

/// Carries out every migration of the plan, one after another; the changes each one
/// carries out are reported with it.
async fn migrate_all(
    client: &Client,
    plan: &Plan,
    options: &Options,
    report: &mut ApplyReport,
    progress: &mut Progress<'_>,
) -> Result<(), ApplyError> {
    let desired = plan.desired_objects();
    for (index, migration) in plan.migrations.iter().enumerate() {
        let carried: Vec<String> = plan
            .changes
            .iter()
            .filter(|c| migration.carries_out(c))
            .map(describe)
            .collect();
        let outcome = migrate::run(client, migration, &desired, &options.interrupt, progress).await;
        let left = |report: &mut ApplyReport, carried: Vec<String>| {
            report.not_done.push(format!(
                "migrate queue {} (under way: `warren apply --migrate` finishes it)",
                migration.queue
            ));
            report.not_done.extend(carried);
            for later in &plan.migrations[index + 1..] {
                report
                    .not_done
                    .push(format!("migrate queue {}", later.queue));
                report.not_done.extend(
                    plan.changes
                        .iter()
                        .filter(|c| later.carries_out(c))
                        .map(describe),
                );
            }
        };
        match outcome {
            Ok(moved) => {
                report.done.push(format!(
                    "migrate queue {} ({} moves of messages)",
                    migration.queue, moved.moves
                ));
                report.done.extend(carried);
                progress(&Event::Advanced {
                    step: Step::Migrate,
                    done: index + 1,
                    total: plan.migrations.len(),
                });
            }
            Err(migrate::Stop::Interrupted { after }) => {
                left(report, carried);
                return Err(ApplyError::Interrupted {
                    why: format!(
                        "interrupted by a signal during the migration of {} (after: {after})",
                        migration.queue
                    ),
                    report: Box::new(std::mem::take(report)),
                });
            }
            Err(migrate::Stop::Broker(error)) => {
                left(report, carried);
                return Err(ApplyError::Broker {
                    error,
                    report: Box::new(std::mem::take(report)),
                });
            }
        }
    }
    Ok(())
}

/// How a change that was not made is reported: loudly for a replaced object whose old
/// version is already gone.
fn not_done(change: &Change, kind: PhaseKind) -> String {
    if kind == PhaseKind::Import && change.action == Action::Replace {
        format!(
            "{} (DELETED AND NOT DECLARED AGAIN: run `warren apply` again at once)",
            describe(change)
        )
    } else {
        describe(change)
    }
}

/// Sends one phase's changes, telling `progress` how far it has come; the outcome of
/// each, in order.
async fn run_phase(
    client: &Client,
    phase: &Phase<'_>,
    allow_data_loss: bool,
    progress: &mut Progress<'_>,
) -> Vec<WriteOutcome> {
    let (step, total) = (phase.step, phase.changes.len());
    progress(&Event::Started { step, total });
    let mut done = 0;
    let answered = &mut |answered: usize| {
        done += answered;
        progress(&Event::Advanced { step, done, total });
    };
    match phase.kind {
        PhaseKind::Import => {
            // A replace's object is in the plan once: it is created here.
            client
                .import_objects(
                    phase
                        .changes
                        .iter()
                        .map(|c| (&c.id, c.after.as_ref().unwrap_or(&serde_json::Value::Null))),
                    answered,
                )
                .await
        }
        PhaseKind::Migrate => unreachable!("migrations are run by `migrate_all`"),
        PhaseKind::RemoveReplaced | PhaseKind::OneByOne => {
            let writes: Vec<ObjectWrite> = phase
                .changes
                .iter()
                .map(|c| write_of(c, allow_data_loss))
                .collect();
            client.write_objects(&writes, answered).await
        }
    }
}

/// After a failure among the removals of replaced objects: declares the removed ones
/// again, with the bindings their removal took, and reports them.
async fn declare_again(
    client: &Client,
    plan: &Plan,
    removed: &[&Change],
    report: &mut ApplyReport,
) {
    let names: BTreeSet<(Option<&str>, &str)> = removed
        .iter()
        .map(|c| (c.id.vhost.as_deref(), c.id.name.as_str()))
        .collect();
    let touches = |change: &Change| {
        let value = change.after.as_ref().unwrap_or(&serde_json::Value::Null);
        let vhost = change.id.vhost.as_deref();
        ["source", "destination"]
            .iter()
            .filter_map(|end| value[*end].as_str())
            .any(|name| names.contains(&(vhost, name)))
    };
    let bindings: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| c.action == Action::Create && c.id.kind == ObjectKind::Binding && touches(c))
        .collect();
    let objects: Vec<&Change> = removed.iter().copied().chain(bindings).collect();
    let outcomes = client
        .import_objects(
            objects
                .iter()
                .filter_map(|c| Some((&c.id, c.after.as_ref()?))),
            &mut |_| {},
        )
        .await;
    for (change, outcome) in objects.iter().zip(outcomes) {
        if outcome.is_done() {
            report.done.push(describe(change));
        } else {
            report.not_done.push(format!(
                "{} (DELETED AND NOT DECLARED AGAIN: run `warren apply` again at once)",
                describe(change)
            ));
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PhaseKind {
    /// Removals of objects that are replaced: undone if one of them fails.
    RemoveReplaced,
    /// Creates, through the definitions import.
    Import,
    /// Updates and deletes, a request each.
    OneByOne,
    /// Queue migrations (`--migrate`), one after another.
    Migrate,
}

struct Phase<'a> {
    step: Step,
    kind: PhaseKind,
    changes: Vec<&'a Change>,
}

/// Replaced objects are deleted first, then everything new is imported in one go
/// (the import orders kinds itself), then updates, then migrations (with `migrating`:
/// they need what the spec adds, and come before what it deletes), then deletes from
/// the leaves up.
fn phases(plan: &Plan, migrating: bool) -> Vec<Phase<'_>> {
    let ordinary: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| !(migrating && plan.migration_of(c).is_some()))
        .collect();
    let migrated: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| migrating && plan.migration_of(c).is_some())
        .collect();
    let of = |action: Action, kinds: &[ObjectKind]| -> Vec<&Change> {
        ordinary
            .iter()
            .copied()
            .filter(|c| c.action == action && kinds.contains(&c.id.kind))
            .collect()
    };
    use ObjectKind::*;
    // A replace first removes the old object (queues before exchanges), then the
    // import below creates the new one.
    let mut removals_of_replaced: Vec<&Change> = of(Action::Replace, &[Queue, Exchange]);
    removals_of_replaced.sort_by_key(|c| c.id.kind != Queue);
    let creates: Vec<&Change> = ordinary
        .iter()
        .copied()
        .filter(|c| matches!(c.action, Action::Create | Action::Replace))
        .collect();
    // Inflow first (bindings), then the queues, each checked for messages by the
    // broker at its deletion, then everything else from the leaves up: a refused
    // queue stops the apply before its policies or exchanges go.
    let delete_order = [
        GlobalParameter,
        Parameter,
        Policy,
        OperatorPolicy,
        Exchange,
        TopicPermission,
        Permission,
        VhostLimits,
        User,
        Vhost,
    ];
    let mut deletes: Vec<&Change> = ordinary
        .iter()
        .copied()
        .filter(|c| c.action == Action::Delete && !matches!(c.id.kind, Binding | Queue))
        .collect();
    deletes.sort_by_key(|c| delete_order.iter().position(|k| *k == c.id.kind));
    vec![
        Phase {
            step: Step::RemoveReplaced,
            kind: PhaseKind::RemoveReplaced,
            changes: removals_of_replaced,
        },
        Phase {
            step: Step::Create,
            kind: PhaseKind::Import,
            changes: creates,
        },
        Phase {
            step: Step::Update,
            kind: PhaseKind::OneByOne,
            changes: of(
                Action::Update,
                &[
                    Vhost,
                    User,
                    Permission,
                    TopicPermission,
                    VhostLimits,
                    Policy,
                    OperatorPolicy,
                    GlobalParameter,
                    Parameter,
                ],
            ),
        },
        Phase {
            step: Step::Migrate,
            kind: PhaseKind::Migrate,
            changes: if migrating && !plan.migrations.is_empty() {
                migrated
            } else {
                Vec::new()
            },
        },
        Phase {
            step: Step::DeleteBindings,
            kind: PhaseKind::OneByOne,
            changes: of(Action::Delete, &[Binding]),
        },
        Phase {
            step: Step::DeleteQueues,
            kind: PhaseKind::OneByOne,
            changes: of(Action::Delete, &[Queue]),
        },
        Phase {
            step: Step::DeleteOthers,
            kind: PhaseKind::OneByOne,
            changes: deletes,
        },
    ]
}

/// The write that carries out an update or delete, or a replace's removal; a queue
/// is removed only if the broker finds it empty, unless data loss is accepted.
fn write_of(change: &Change, allow_data_loss: bool) -> ObjectWrite<'_> {
    let removing = matches!(change.action, Action::Delete | Action::Replace);
    ObjectWrite {
        id: &change.id,
        before: change.before.as_ref(),
        after: if removing {
            None
        } else {
            change.after.as_ref()
        },
        handle: change.handle.as_deref(),
        if_empty: removing && !allow_data_loss,
    }
}
