//! One `warren apply`, of a saved plan or of a spec, from the plan to what became of
//! it. The steps and their order are the library's (a spec is planned, locked and
//! planned again under the locks, shown, confirmed, applied, the locks given back);
//! the terminal is the caller's: it shows the plan and asks through [`Conversation`],
//! and it is told the progress. What happened comes back as an [`Outcome`], which
//! the caller renders; nothing here prints.

use std::fmt;
use std::sync::Arc;

use super::progress::Progress;
use super::{ApplyError, ApplyReport, Options, apply, apply_locked_plan, lock_and_replan};
use crate::broker::Client;
use crate::compile::secrets::MissingPassword;
use crate::model::TargetVersion;
use crate::plan::{Plan, PlanError, Planned, Refusal, against_broker};
use crate::spec::SpecFile;
use crate::spec::diagnostic::Diagnostic;

/// What is applied.
pub enum Input {
    /// A plan saved by `warren plan -o`: checked against the broker under its locks
    /// and applied as it is, never asked about (it was reviewed when it was saved).
    Saved(Box<Plan>),
    /// A loaded spec: planned now, shown, confirmed and applied under one holding of
    /// its locks.
    Spec {
        /// The spec, read for its environment.
        file: Arc<SpecFile>,
        /// The version to compile for; the broker's own when `None`.
        target: Option<TargetVersion>,
        /// `--prune-unmanaged`.
        prune_unmanaged: bool,
        /// `--auto-approve`: applied without asking.
        auto_approve: bool,
    },
}

/// The answer to "apply these changes?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// Apply them.
    Approved,
    /// Change nothing.
    Declined,
}

/// What an apply of a spec shows and asks, through whoever runs it.
pub trait Conversation {
    /// The spec planned: the compiler's warnings, said before the plan is shown.
    fn planned(&mut self, warnings: &[Diagnostic]);
    /// Shows the plan about to be applied (or, when taking its locks failed, the plan
    /// that was not); `confirming` says whether [`Conversation::confirm`] follows.
    /// `false` when it could not be shown: the apply stops, changing nothing.
    fn show(&mut self, plan: &Plan, confirming: bool) -> bool;
    /// Asks whether to apply the plan just shown.
    fn confirm(&mut self, plan: &Plan) -> Confirmation;
}

/// Why a plan shown was not applied, though nothing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declined {
    /// The plan takes over objects another spec manages.
    Conflicts,
    /// The plan's generated policies would apply to queues that are not the spec's.
    Captures,
    /// The plan's generated policies select what another spec's generated policies
    /// select.
    Overlaps,
    /// Policies of the same highest priority match an object the spec manages.
    Ties,
    /// The person asked said no (or there was no terminal to ask on).
    Cancelled,
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Declined::Conflicts => {
                "the plan takes over objects another spec manages; nothing was applied"
            }
            Declined::Captures => {
                "the plan's generated policies would apply to queues that are not the spec's (see above); nothing was applied"
            }
            Declined::Overlaps => {
                "the plan's generated policies select what another spec's generated policies select (see above); nothing was applied"
            }
            Declined::Ties => {
                "policies of the same highest priority match objects the spec manages, and which of them the broker applies cannot be known (see above); nothing was applied"
            }
            Declined::Cancelled => "apply cancelled; nothing was changed",
        })
    }
}

/// What became of an apply.
#[derive(Debug)]
pub enum Outcome {
    /// Every change was made.
    Applied(ApplyReport),
    /// The plan has no changes.
    NothingToApply,
    /// The plan was shown and not applied.
    Declined(Declined),
    /// The apply was refused or failed; [`ApplyError::report`] says what it did.
    Failed(ApplyError),
    /// The spec could not be planned.
    NotPlanned(PlanError),
    /// The plan could not be shown: nothing was applied.
    NotShown,
}

/// An apply's outcome, with the plan it was about (what a JSON document shows).
#[derive(Debug)]
pub struct Ran {
    /// The plan shown (a saved plan: the plan read), once there is one.
    pub plan: Option<Plan>,
    /// What became of it.
    pub outcome: Outcome,
}

/// Applies `input` on the broker. `progress` is told how the changes go
/// ([`super::progress::Event`]); `conversation` shows a spec's plan and confirms it.
pub async fn run(
    client: &Client,
    input: Input,
    options: &Options,
    conversation: &mut dyn Conversation,
    progress: &mut Progress<'_>,
) -> Ran {
    match input {
        Input::Saved(plan) => {
            let plan = *plan;
            let outcome = if plan.has_changes() {
                match apply(client, &plan, options, progress).await {
                    Ok(report) => Outcome::Applied(report),
                    Err(error) => Outcome::Failed(error),
                }
            } else {
                match super::held::check_still_current(client, &plan).await {
                    Ok(()) => Outcome::NothingToApply,
                    Err(error) => Outcome::Failed(error),
                }
            };
            Ran {
                plan: Some(plan),
                outcome,
            }
        }
        Input::Spec {
            file,
            target,
            prune_unmanaged,
            auto_approve,
        } => {
            // `apply` needs the applications' passwords, which `plan` can do without.
            let made = against_broker(
                client,
                file,
                target,
                prune_unmanaged,
                MissingPassword::Error,
            )
            .await;
            let Planned { plan, warnings } = match made {
                Ok(planned) => planned,
                Err(error) => {
                    return Ran {
                        plan: None,
                        outcome: Outcome::NotPlanned(error),
                    };
                }
            };
            conversation.planned(&warnings);
            apply_planned(client, plan, auto_approve, options, conversation, progress).await
        }
    }
}

/// Takes the locks a spec's plan needs and plans again under them, so that what is
/// shown and confirmed is what nobody else can change until it is applied; then
/// applies it, or gives the locks back.
async fn apply_planned(
    client: &Client,
    planned: Plan,
    auto_approve: bool,
    options: &Options,
    conversation: &mut dyn Conversation,
    progress: &mut Progress<'_>,
) -> Ran {
    let locked = if planned.refusal().is_none() && planned.has_changes() {
        match lock_and_replan(client, &planned, options.lock_wait).await {
            Ok(locked) => Some(locked),
            Err(error) => {
                conversation.show(&planned, false);
                return Ran {
                    plan: Some(planned),
                    outcome: Outcome::Failed(error),
                };
            }
        }
    } else {
        None
    };
    let plan = locked.as_ref().map_or(planned, |l| l.plan.clone());
    let confirming = plan.refusal().is_none() && plan.has_changes() && !auto_approve;
    let shown = conversation.show(&plan, confirming);
    let declined = if !shown {
        Some(Outcome::NotShown)
    } else if let Some(refusal) = plan.refusal() {
        // Said as the plan's refusal is: each kind in its own words.
        Some(Outcome::Declined(match refusal {
            Refusal::Conflict { .. } => Declined::Conflicts,
            Refusal::Captured { .. } => Declined::Captures,
            Refusal::Overlap { .. } => Declined::Overlaps,
            Refusal::Tie { .. } => Declined::Ties,
        }))
    } else if !plan.has_changes() {
        Some(Outcome::NothingToApply)
    } else if confirming && conversation.confirm(&plan) == Confirmation::Declined {
        Some(Outcome::Declined(Declined::Cancelled))
    } else {
        None
    };
    let outcome = match (declined, locked) {
        (Some(outcome), locked) => {
            if let Some(locked) = locked {
                locked.release().await;
            }
            outcome
        }
        (None, Some(locked)) => match apply_locked_plan(client, locked, options, progress).await {
            Ok(report) => Outcome::Applied(report),
            Err(error) => Outcome::Failed(error),
        },
        (None, None) => unreachable!("a plan with changes was made under its locks"),
    };
    Ran {
        plan: Some(plan),
        outcome,
    }
}
