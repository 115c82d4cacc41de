//! Why an apply did not run or did not finish, and the report of what it did: the
//! two things every phase of an apply hands back, and the words a change is reported
//! in (`create queue shop/orders`).

use crate::broker::BrokerError;
use crate::diff::{Action, Change};
use crate::plan::Mismatch;

/// Why an apply did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Changes would lose messages and `--allow-data-loss` was not given.
    #[error("refusing to lose messages: {0} (re-run with --allow-data-loss to accept)")]
    DataLoss(String),
    /// Under the locks, before the first write: the broker counted messages (or
    /// consumers) in queues the plan deletes or whose messages it strands.
    #[error(
        "refusing to apply: the broker counts, now, what the plan would lose: {0} (re-run with --allow-data-loss to accept, or --migrate to move a replaced queue's messages)"
    )]
    HeldNow(String),
    /// Under the locks, before the first write: the user lacks a permission a write
    /// of the plan needs.
    #[error("refusing to apply: user `{user}` lacks permissions the plan needs: {missing}")]
    Permissions {
        /// The user warren logs in as.
        user: String,
        /// What is missing, vhost by vhost.
        missing: String,
    },
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
    #[error("refusing to apply: {0}")]
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

impl ApplyReport {
    /// Names a change as not done, unless the report already names it: each change
    /// is in exactly one of the three lists.
    pub(super) fn add_not_done(&mut self, change: String) {
        let named = |list: &[String]| {
            list.iter()
                .any(|line| line == &change || line.starts_with(&format!("{change} (")))
        };
        if !named(&self.done) && !named(&self.unconfirmed) && !named(&self.not_done) {
            self.not_done.push(change);
        }
    }

    /// Whether the broker confirmed (or may have made) any change.
    pub fn changed_anything(&self) -> bool {
        !self.done.is_empty() || !self.unconfirmed.is_empty()
    }
}

impl ApplyError {
    /// The report of what was done and not done; `None` when the apply failed before
    /// its first write, so that nothing was changed. The one place that decides
    /// whether "nothing was changed" may be said: every variant answers (no wildcard),
    /// so a new one cannot fall through to it by default.
    pub fn report(&self) -> Option<&ApplyReport> {
        match self {
            ApplyError::Interrupted { report, .. }
            | ApplyError::LocksLost { report }
            | ApplyError::RecordNotWritten { report, .. } => Some(report),
            // A failure before the first change (a lock held elsewhere, an unreadable
            // broker) has nothing to report: "nothing was changed".
            ApplyError::Broker { report, .. } => {
                Some(report.as_ref()).filter(|r| r.changed_anything() || !r.not_done.is_empty())
            }
            // Refusals and checks made before the first write.
            ApplyError::DataLoss(_)
            | ApplyError::HeldNow(_)
            | ApplyError::Permissions { .. }
            | ApplyError::UnknownPasswords(_)
            | ApplyError::Conflict(_)
            | ApplyError::Captures(_)
            | ApplyError::NoShovels(_)
            | ApplyError::MigrationUnderWay(_)
            | ApplyError::OtherBroker(_)
            | ApplyError::Stale(_) => None,
        }
    }
}

/// How a change is named in a report: `action kind vhost/name`.
pub(super) fn describe(change: &Change) -> String {
    let action = match change.action {
        Action::Create => "create",
        Action::Update => "update",
        Action::Replace => "replace",
        Action::Delete => "delete",
    };
    format!("{action} {}", change.id)
}

/// Why an apply stops at a safe point whose locks the broker no longer holds for it.
pub(super) const LOCKS_LOST: &str = "its locks were lost: the broker closed its lock connection";

/// The error a plan that no longer holds against the broker ends an apply with.
pub(super) fn mismatch_error(mismatch: Mismatch) -> ApplyError {
    match mismatch {
        Mismatch::OtherBroker { .. } => ApplyError::OtherBroker(mismatch.to_string()),
        Mismatch::Changes(text) => ApplyError::Stale(text),
        Mismatch::DamagedRecord(damaged) => ApplyError::from(BrokerError::from(damaged)),
    }
}
