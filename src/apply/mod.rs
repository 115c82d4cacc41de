//! Plan × broker → changes made, in dependency order.
//!
//! This module decides *what* is sent and in which order; `broker` decides *how*.
//! Creates go in bulk through the definitions import, chunked under the broker's
//! request body limit; updates and deletes are one request each, a bounded number at a
//! time. The first real error stops the apply with a report of what was done and what
//! was not; running plan and apply again converges.

mod lock;

use crate::broker::{BrokerError, Client, ObjectWrite};
use crate::diff::{Action, Change};
use crate::model::ObjectKind;
use crate::model::record::{self, Record};
use crate::plan::{Plan, fingerprint, live_objects};

/// Why an apply did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Changes would lose messages and `--allow-data-loss` was not given.
    #[error("refusing to lose messages: {0} (re-run with --allow-data-loss to accept)")]
    DataLoss(String),
    /// The plan wants objects another spec manages.
    #[error("refusing to take over objects managed by another spec: {0}")]
    Conflict(String),
    /// Another apply holds the lock.
    #[error(
        "spec `{spec}` is locked by {holder} since {since} (another apply is running; the lock expires at {expires})"
    )]
    Locked {
        /// Spec.
        spec: String,
        /// Lock holder.
        holder: String,
        /// Unix seconds.
        since: u64,
        /// Unix seconds.
        expires: u64,
    },
    /// The broker changed since the plan was made.
    #[error("the broker changed since this plan was made ({0}); run `warren plan` again")]
    Stale(String),
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

/// What an apply did.
#[derive(Debug, Clone, Default)]
pub struct ApplyReport {
    /// Changes made, as `action kind name`.
    pub done: Vec<String>,
    /// Changes not made because of an earlier error.
    pub not_done: Vec<String>,
}

/// How to apply.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Accept deleting or replacing queues that hold messages.
    pub allow_data_loss: bool,
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
    if !plan.conflicts.is_empty() {
        let list: Vec<String> = plan
            .conflicts
            .iter()
            .map(|c| format!("{} (spec `{}`)", c.id, c.owner))
            .collect();
        return Err(ApplyError::Conflict(list.join("; ")));
    }
    let losing: Vec<String> = plan
        .changes
        .iter()
        .filter(|c| c.loses_data())
        .map(|c| format!("{} holds {} messages", c.id, c.messages.unwrap_or(0)))
        .collect();
    if !losing.is_empty() && !options.allow_data_loss {
        return Err(ApplyError::DataLoss(losing.join("; ")));
    }
    Ok(())
}

/// Applies a plan. `progress` is told about every step.
pub async fn apply(
    client: &Client,
    plan: &Plan,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<ApplyReport, ApplyError> {
    check_gates(plan, options)?;
    let mut record = client.read_record(&plan.spec).await?.unwrap_or(Record {
        format: 1,
        spec: plan.spec.clone(),
        ..Record::default()
    });
    lock::acquire(client, &mut record, plan).await?;
    let outcome = apply_locked(client, plan, progress).await;
    // Whatever happened, record what is now managed and release the lock.
    let mut managed = record.object_ids();
    match &outcome {
        Ok(_) => managed = plan.managed.iter().cloned().collect(),
        Err(ApplyError::Broker { .. }) => managed.extend(plan.managed.iter().cloned()),
        Err(_) => {}
    }
    let changed_anything = !matches!(outcome, Err(ApplyError::Stale(_)));
    if changed_anything {
        record.serial += 1;
        record.applied_at = record::now();
    }
    record.set_objects(&managed);
    lock::release(client, &mut record).await?;
    outcome
}

async fn apply_locked(
    client: &Client,
    plan: &Plan,
    progress: &mut dyn FnMut(&str),
) -> Result<ApplyReport, ApplyError> {
    let mut live = client.read_live(&plan.vhosts).await?;
    live.definitions.global_parameters = client.global_parameters().await?;
    let now = fingerprint(
        &live_objects(&live.definitions, &plan.vhosts),
        &plan.relevant_ids(),
        plan.serial,
    );
    if now != plan.live_fingerprint {
        return Err(ApplyError::Stale(
            "objects in its vhosts were changed".into(),
        ));
    }
    let mut report = ApplyReport::default();
    let phases = phases(plan);
    let total: usize = phases.iter().map(|p| p.changes.len()).sum();
    let mut remaining: Vec<String> = phases
        .iter()
        .flat_map(|p| p.changes.iter().map(|c| describe(c)))
        .collect();
    for phase in &phases {
        if phase.changes.is_empty() {
            continue;
        }
        let result = match phase.kind {
            PhaseKind::Import => {
                client
                    .import_objects(
                        phase
                            .changes
                            .iter()
                            .filter_map(|c| Some((&c.id, c.after.as_ref()?))),
                    )
                    .await
            }
            PhaseKind::OneByOne => {
                let writes: Vec<ObjectWrite> = phase.changes.iter().map(|c| write_of(c)).collect();
                client.write_objects(&writes).await
            }
        };
        match result {
            Ok(()) => {
                for change in &phase.changes {
                    let text = describe(change);
                    remaining.retain(|r| r != &text);
                    report.done.push(text);
                }
                progress(&format!("{}/{total} {}", report.done.len(), phase.name));
            }
            Err(error) => {
                report.not_done = remaining;
                return Err(ApplyError::Broker {
                    error,
                    report: Box::new(report),
                });
            }
        }
    }
    Ok(report)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PhaseKind {
    Import,
    OneByOne,
}

struct Phase<'a> {
    name: &'static str,
    kind: PhaseKind,
    changes: Vec<&'a Change>,
}

/// Replaced objects are deleted first, then everything new is imported in one go
/// (the import orders kinds itself), then updates, then deletes from the leaves up.
fn phases(plan: &Plan) -> Vec<Phase<'_>> {
    let of = |action: Action, kinds: &[ObjectKind]| -> Vec<&Change> {
        plan.changes
            .iter()
            .filter(|c| c.action == action && kinds.contains(&c.id.kind))
            .collect()
    };
    use ObjectKind::*;
    // A replace first removes the old object (queues before exchanges), then the
    // import below creates the new one.
    let mut removals_of_replaced: Vec<&Change> = of(Action::Replace, &[Queue, Exchange]);
    removals_of_replaced.sort_by_key(|c| c.id.kind != Queue);
    let creates: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| matches!(c.action, Action::Create | Action::Replace))
        .collect();
    let delete_order = [
        GlobalParameter,
        Parameter,
        Policy,
        OperatorPolicy,
        Binding,
        Queue,
        Exchange,
        TopicPermission,
        Permission,
        VhostLimits,
        User,
        Vhost,
    ];
    let mut deletes: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| c.action == Action::Delete)
        .collect();
    deletes.sort_by_key(|c| delete_order.iter().position(|k| *k == c.id.kind));
    vec![
        Phase {
            name: "replaced objects removed",
            kind: PhaseKind::OneByOne,
            changes: removals_of_replaced,
        },
        Phase {
            name: "objects created",
            kind: PhaseKind::Import,
            changes: creates,
        },
        Phase {
            name: "objects updated",
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
            name: "objects deleted",
            kind: PhaseKind::OneByOne,
            changes: deletes,
        },
    ]
}

/// The write that carries out an update or delete, or a replace's removal.
fn write_of(change: &Change) -> ObjectWrite<'_> {
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
    }
}
