//! Carrying out a plan's phases ([`super::phases`]) against the broker, one after
//! another: each phase's requests, the outcome of each change reported as the broker
//! answers, the safe points (a signal, or locks lost, stops the apply there), the
//! migrations run one queue at a time, and the objects of a replace declared again
//! when a later removal fails.
//!
//! The safe points: between phases; within a phase, a signal is also heard between two
//! import chunks and before each update or delete request (those in flight are
//! answered). A replace never stops between its removal and its new declaration: the
//! removals run to their end, and the import goes on until the new versions and the
//! bindings into them are made.

use std::collections::{BTreeSet, HashMap};

use super::Options;
use super::error::{ApplyError, ApplyReport, LOCKS_LOST, describe};
use super::migrate;
use super::phases::{PhaseChanges, PhaseKind, phases, queue_bound_into, write_of};
use super::progress::{ChangeOutcome, Event, Phase, Progress};
use crate::broker::{
    BrokerError, BrokerLock, Client, ImportStep, ObjectWrite, WriteOutcome, WriteStop,
    removed_binding,
};
use crate::diff::{Action, Change};
use crate::model::ObjectKind;
use crate::plan::Plan;

/// Makes the plan's changes, phase by phase, under locks the caller holds; the first
/// failure stops the apply with a report of what was done and what was not. A write
/// refused because the locks were lost (every write asks the broker first: see
/// `broker::fence`) stops it as a lost lock at a safe point does.
pub(super) async fn make_changes(
    client: &Client,
    plan: &Plan,
    options: &Options,
    lock: &BrokerLock,
    progress: &mut Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    match carry_out(client, plan, options, lock, progress).await {
        Err(ApplyError::Broker { error, report }) if error.is_locks_lost() => {
            Err(stop_for_lost_locks(client, report).await)
        }
        other => other,
    }
}

/// Why the locks were lost, when it is that the broker went away (it stopped, or a
/// node died): its management API does not answer either. Said as such (exit 3) rather
/// than as a lost lock, which a running broker takes from a frozen process.
pub(super) async fn broker_gone(client: &Client) -> Option<BrokerError> {
    match client.version().await {
        Err(error) if error.is_unavailable() => Some(error),
        _ => None,
    }
}

/// The stop of an apply whose locks the broker no longer confirms, with its report:
/// the broker gone, or the locks lost to a freeze or `warren unlock`.
pub(super) async fn stop_for_lost_locks(client: &Client, report: Box<ApplyReport>) -> ApplyError {
    match broker_gone(client).await {
        Some(gone) => ApplyError::Broker {
            error: gone,
            report,
        },
        None => ApplyError::Interrupted {
            why: LOCKS_LOST.to_string(),
            report,
        },
    }
}

async fn carry_out(
    client: &Client,
    plan: &Plan,
    options: &Options,
    lock: &BrokerLock,
    progress: &mut Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    if options.migrate {
        // Before any change: a migration (or a pass-on) that cannot move messages would
        // stop half way.
        let vhosts: BTreeSet<&str> = plan
            .migrations
            .iter()
            .map(|m| &m.queue)
            .chain(plan.pass_ons.iter().map(|p| &p.from))
            .filter_map(|queue| queue.vhost.as_deref())
            .collect();
        for vhost in vhosts {
            if !client.shovels_available(vhost).await? {
                return Err(ApplyError::NoShovels(vhost.to_string()));
            }
        }
    }
    let phases = phases(plan, options.migrate);
    let mut report = ApplyReport::default();
    let mut removed_replaced = false;
    for (number, phase) in phases.iter().enumerate() {
        let migrations_to_run =
            phase.kind == PhaseKind::Migrate && options.migrate && !plan.migrations.is_empty();
        if phase.changes.is_empty() && !migrations_to_run {
            continue;
        }
        // A safe point: nothing is half done between phases (except after the removal
        // of replaced objects, which the creates must follow).
        // Nor between the import and the deletion of what it supersedes: a route the
        // import doubled (a key bound to its new queue beside the old) is halved at once.
        let why = if (phase.kind == PhaseKind::Import && removed_replaced)
            || phase.phase == Phase::Supersede
        {
            None
        } else if options.interrupt.is_set() {
            Some(SIGNALLED)
        } else if !client.still_holds(lock).await {
            Some(LOCKS_LOST)
        } else {
            None
        };
        if let Some(why) = why {
            for later in &phases[number..] {
                report
                    .not_done
                    .extend(later.all().map(|c| not_done(c, later.kind)));
            }
            let report = Box::new(report);
            return Err(match why {
                LOCKS_LOST => stop_for_lost_locks(client, report).await,
                why => ApplyError::Interrupted {
                    why: why.to_string(),
                    report,
                },
            });
        }
        let later = &phases[number + 1..];
        if phase.kind == PhaseKind::Migrate {
            migrate_phase(client, plan, options, phase, later, &mut report, progress).await?;
            continue;
        }
        removed_replaced |= phase.kind == PhaseKind::RemoveReplaced;
        if phase.phase == Phase::DeleteQueues && options.migrate {
            pass_on_all(client, plan, options, phase, later, &mut report, progress).await?;
        }
        let outcomes = run_phase(client, plan, phase, options, progress).await;
        // Without a failure, a change not sent was left out on a signal.
        let cut_short = outcomes.iter().any(|o| matches!(o, WriteOutcome::NotSent));
        let failed = report_outcomes(phase, outcomes, &mut report, progress);
        if failed.is_none() && cut_short {
            not_reached(later, &mut report);
            return Err(ApplyError::Interrupted {
                why: SIGNALLED.to_string(),
                report: Box::new(report),
            });
        }
        if let Some(Failed { error, removed }) = failed {
            if !removed.is_empty() {
                // A replace never leaves a queue deleted and not declared again.
                declare_again(client, plan, &removed, &mut report).await;
            }
            not_reached(later, &mut report);
            return Err(ApplyError::Broker {
                error,
                report: Box::new(report),
            });
        }
    }
    Ok(report)
}

/// Why an apply stopped at a safe point on a signal.
const SIGNALLED: &str = "interrupted by a signal";

/// The changes of the phases an apply that stopped did not reach, as not done; a
/// change the report already names (a replace whose queue was declared again, a
/// refused removal) is not named twice.
fn not_reached(later: &[PhaseChanges<'_>], report: &mut ApplyReport) {
    for phase in later {
        for change in phase.all() {
            report.add_not_done(describe(change));
        }
    }
}

/// The migrations phase: every migration, with the progress of the phase around them;
/// when one stops, the changes of the `later` phases are reported as not done.
async fn migrate_phase(
    client: &Client,
    plan: &Plan,
    options: &Options,
    phase: &PhaseChanges<'_>,
    later: &[PhaseChanges<'_>],
    report: &mut ApplyReport,
    progress: &mut Progress<'_>,
) -> Result<(), ApplyError> {
    let total = plan.migrations.len();
    progress(&Event::Started {
        phase: phase.phase,
        total,
    });
    if let Err(mut error) = migrate_all(client, plan, options, report, progress).await {
        if let ApplyError::Interrupted { report, .. } | ApplyError::Broker { report, .. } =
            &mut error
        {
            not_reached(later, report);
        }
        return Err(error);
    }
    progress(&Event::Finished {
        phase: phase.phase,
        done: total,
        total,
    });
    Ok(())
}

/// Passes on the messages of the delay queues the phase deletes whose messages have a
/// queue to go to ([`crate::plan::pass_on`]), one after another and in the phase's
/// order, before the phase's guarded deletions (which then find them gone); when one
/// stops, it and every later change are reported as not done.
async fn pass_on_all(
    client: &Client,
    plan: &Plan,
    options: &Options,
    phase: &PhaseChanges<'_>,
    later: &[PhaseChanges<'_>],
    report: &mut ApplyReport,
    progress: &mut Progress<'_>,
) -> Result<(), ApplyError> {
    for change in &phase.changes {
        let Some(pass_on) = plan.pass_on_of(change) else {
            continue;
        };
        let Err(stop) = migrate::pass_on(client, pass_on, &options.interrupt, progress).await
        else {
            continue;
        };
        for change in phase.all() {
            report.add_not_done(describe(change));
        }
        not_reached(later, report);
        let report = Box::new(std::mem::take(report));
        return Err(match stop {
            migrate::Stop::Interrupted { after } => ApplyError::Interrupted {
                why: format!(
                    "interrupted by a signal while the messages of {} were passed on to {} (after: {after})",
                    pass_on.from, pass_on.into
                ),
                report,
            },
            migrate::Stop::Broker(error) => ApplyError::Broker { error, report },
        });
    }
    Ok(())
}

/// Why a phase stopped the apply: the first error the broker gave, and the replaced
/// objects the phase had removed already (to declare again).
struct Failed<'a> {
    error: BrokerError,
    removed: Vec<&'a Change>,
}

/// Reports each change of a phase that ran as the broker answered for it, and the
/// phase's end; the failure that stops the apply, if any.
fn report_outcomes<'a>(
    phase: &PhaseChanges<'a>,
    outcomes: Vec<WriteOutcome>,
    report: &mut ApplyReport,
    progress: &mut Progress<'_>,
) -> Option<Failed<'a>> {
    let mut failure = None;
    let mut removed = Vec::new();
    let mut failed_or_unsent = 0;
    // The place of each queue of the phase, by vhost and name, for the bindings it carries.
    let places: HashMap<(Option<&str>, &str), usize> = phase
        .changes
        .iter()
        .enumerate()
        .filter(|(_, change)| change.id.kind == ObjectKind::Queue)
        .map(|(place, change)| ((change.id.vhost.as_deref(), change.id.name.as_str()), place))
        .collect();
    for binding in &phase.carried {
        let queue = queue_bound_into(binding)
            .and_then(|queue| places.get(&(binding.id.vhost.as_deref(), queue)));
        match carried_out(binding, queue.map(|place| &outcomes[*place])) {
            Some(true) => report.done.push(describe(binding)),
            Some(false) => report.not_done.push(describe(binding)),
            None => report.unconfirmed.push(describe(binding)),
        }
    }
    for (change, outcome) in phase.changes.iter().zip(outcomes) {
        progress(&Event::Outcome {
            change,
            outcome: match &outcome {
                WriteOutcome::Done => ChangeOutcome::Done,
                WriteOutcome::Refused(error) if error.is_locks_lost() => ChangeOutcome::NotSent,
                WriteOutcome::Refused(_) => ChangeOutcome::Refused,
                WriteOutcome::Unconfirmed(_) => ChangeOutcome::Unconfirmed,
                WriteOutcome::NotSent => ChangeOutcome::NotSent,
            },
        });
        match outcome {
            WriteOutcome::Done if phase.kind == PhaseKind::RemoveReplaced => removed.push(*change),
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
        phase: phase.phase,
        done: made,
        total: phase.changes.len(),
    });
    failure.map(|error| Failed { error, removed })
}

/// Whether the deletion of a binding into a queue the plan deletes (carried by that
/// queue's deletion, whose `outcome` is given) was made: yes when the queue was
/// deleted, or when it was refused and the binding, removed for its check, could not
/// be declared again; `None` when the queue's deletion was not confirmed.
fn carried_out(binding: &Change, outcome: Option<&WriteOutcome>) -> Option<bool> {
    let Some(outcome) = outcome else {
        return Some(false);
    };
    match outcome {
        WriteOutcome::Done => Some(true),
        WriteOutcome::Refused(BrokerError::BindingsNotRestored { bindings, .. }) => {
            let before = binding.before.as_ref().unwrap_or(&serde_json::Value::Null);
            let named = removed_binding(
                before["source"].as_str().unwrap_or_default(),
                before["destination"].as_str().unwrap_or_default(),
                before["routing_key"].as_str().unwrap_or_default(),
            );
            Some(bindings.contains(&named))
        }
        WriteOutcome::Unconfirmed(_) => None,
        WriteOutcome::Refused(_) | WriteOutcome::NotSent => Some(false),
    }
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
                    "migrate queue {} ({})",
                    migration.queue,
                    match moved.moves {
                        0 => "no message to move".to_string(),
                        moves => crate::text::count_irregular(
                            moves,
                            "move of messages",
                            "moves of messages"
                        ),
                    }
                ));
                report.done.extend(carried);
                progress(&Event::Advanced {
                    phase: Phase::Migrate,
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
/// each, in order. A signal cuts an import or a run of updates and deletes short (see
/// the module), never the removals of replaced objects.
async fn run_phase(
    client: &Client,
    plan: &Plan,
    phase: &PhaseChanges<'_>,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Vec<WriteOutcome> {
    let (name, total) = (phase.phase, phase.changes.len());
    progress(&Event::Started { phase: name, total });
    let mut done = 0;
    let step = &mut |step: ImportStep| match step {
        ImportStep::Sent(sent) => progress(&Event::Sent { phase: name, sent }),
        ImportStep::Answered(answered) => {
            done += answered;
            progress(&Event::Advanced {
                phase: name,
                done,
                total,
            });
        }
    };
    let asked = || options.interrupt.is_set();
    match phase.kind {
        PhaseKind::Import => {
            // A replace's object is in the plan once: it is created here, and the
            // bindings into it with it, before the import may stop.
            let replaced =
                replaced_names(plan.changes.iter().filter(|c| c.action == Action::Replace));
            let not_before = |index: usize| {
                let change = phase.changes[index];
                change.action == Action::Replace || binds_into(change, &replaced)
            };
            let stop = WriteStop {
                asked: &asked,
                not_before: &not_before,
            };
            client
                .import_objects(
                    phase
                        .changes
                        .iter()
                        .map(|c| (&c.id, c.after.as_ref().unwrap_or(&serde_json::Value::Null))),
                    stop,
                    step,
                )
                .await
        }
        PhaseKind::Migrate => unreachable!("migrations are run by `migrate_all`"),
        PhaseKind::RemoveReplaced | PhaseKind::OneByOne => {
            let writes: Vec<ObjectWrite> = phase
                .changes
                .iter()
                .map(|c| write_of(c, options.allow_data_loss, &plan.feeds))
                .collect();
            let stop = match phase.kind {
                PhaseKind::RemoveReplaced => WriteStop::NEVER,
                _ => WriteStop {
                    asked: &asked,
                    ..WriteStop::NEVER
                },
            };
            client
                .write_objects(&writes, stop, &mut |answered| {
                    step(ImportStep::Answered(answered))
                })
                .await
        }
    }
}

/// The queues and exchanges of `changes`, by vhost and name.
fn replaced_names<'a>(
    changes: impl Iterator<Item = &'a Change>,
) -> BTreeSet<(Option<&'a str>, &'a str)> {
    changes
        .map(|c| (c.id.vhost.as_deref(), c.id.name.as_str()))
        .collect()
}

/// Whether `change` creates a binding from or to one of `names` (which removing
/// that object took with it).
fn binds_into(change: &Change, names: &BTreeSet<(Option<&str>, &str)>) -> bool {
    if change.action != Action::Create || change.id.kind != ObjectKind::Binding {
        return false;
    }
    let value = change.after.as_ref().unwrap_or(&serde_json::Value::Null);
    let vhost = change.id.vhost.as_deref();
    ["source", "destination"]
        .iter()
        .filter_map(|end| value[*end].as_str())
        .any(|name| names.contains(&(vhost, name)))
}

/// After a failure among the removals of replaced objects: declares the removed ones
/// again as they were, with the bindings their removal took, so that the refused
/// apply leaves them as it found them (they were empty: the broker checked), and
/// reports them as not made.
///
/// The bindings are the old ones the plan knows: those it would create again
/// unchanged (the create of a binding whose end is replaced, with its reason) and
/// those it would delete. A binding into a removed queue that no spec manages went
/// with the queue, as it would have with the replace.
async fn declare_again(
    client: &Client,
    plan: &Plan,
    removed: &[&Change],
    report: &mut ApplyReport,
) {
    let names = replaced_names(removed.iter().copied());
    let old_bindings = plan.changes.iter().filter_map(|c| {
        let old = match c.action {
            Action::Create if c.reason.is_some() && binds_into(c, &names) => c.after.as_ref(),
            Action::Delete if binding_ends_in(c, &names) => c.before.as_ref(),
            _ => None,
        }?;
        Some((c, old))
    });
    let objects: Vec<(&Change, &serde_json::Value)> = removed
        .iter()
        .filter_map(|c| Some((*c, c.before.as_ref()?)))
        .chain(old_bindings)
        .collect();
    let outcomes = client
        .import_objects(
            objects.iter().map(|(c, old)| (&c.id, *old)),
            WriteStop::NEVER,
            &mut |_| {},
        )
        .await;
    for ((change, _), outcome) in objects.iter().zip(outcomes) {
        report.not_done.push(if outcome.is_done() {
            format!(
                "{} (removed and declared again as it was)",
                describe(change)
            )
        } else {
            format!(
                "{} (DELETED AND NOT DECLARED AGAIN: run `warren apply` again at once)",
                describe(change)
            )
        });
    }
}

/// Whether a binding's change (by its state before) is from or to one of `names`.
fn binding_ends_in(change: &Change, names: &BTreeSet<(Option<&str>, &str)>) -> bool {
    let Some(before) = change.before.as_ref() else {
        return false;
    };
    let vhost = change.id.vhost.as_deref();
    change.id.kind == ObjectKind::Binding
        && ["source", "destination"]
            .iter()
            .filter_map(|end| before[*end].as_str())
            .any(|name| names.contains(&(vhost, name)))
}
