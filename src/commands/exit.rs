//! warren's exit codes, and which failure takes which: the one table scripts read
//! (docs/exit-codes.md mirrors it). A CI job tells "the spec is wrong" from "the
//! broker is down" from "warren refused to lose data" by the code alone.

use crate::apply::ApplyError;
use crate::apply::run::Declined;
use crate::broker::{BrokerError, ReplayFailure};

/// Success; for `plan` and `diff` also when there are changes, unless
/// `--detailed-exitcode` asks for [`CHANGES`].
pub const OK: u8 = 0;
/// Bad input (a spec, plan or definitions file that does not read, a wrong flag), a
/// failed check (`validate`, `lint`), or an error no other code names.
pub const ERROR: u8 = 1;
/// `plan` and `diff` with `--detailed-exitcode`: the plan has changes, or another's
/// policy overrides what the spec sets (Terraform's convention: 0 no changes, 1
/// error, 2 changes).
pub const CHANGES: u8 = 2;
/// The broker could not be reached, or refused the credentials or the user's
/// permissions: nothing is wrong with the spec, and running again later (or with
/// other credentials) may succeed.
pub const BROKER_UNAVAILABLE: u8 = 3;
/// warren refused to change the broker to protect it: messages would be lost, the
/// plan takes over another spec's objects or captures queues, the saved plan is
/// stale or for another broker, another apply holds the lock, or a migration is
/// under way. Nothing was changed by the refusal; a new plan or an explicit flag is
/// needed.
pub const REFUSED: u8 = 4;

/// Why a command failed, as its exit code says it: the class of a
/// [`super::result::CommandError`], and the `class` of a JSON error document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// [`ERROR`]: bad input, a failed check, a cancelled or interrupted run.
    Error,
    /// [`BROKER_UNAVAILABLE`]: the broker could not be reached or refused the user.
    BrokerUnavailable,
    /// [`REFUSED`]: warren refused to change the broker to protect it.
    Refused,
}

impl Failure {
    /// The exit code.
    pub fn code(self) -> u8 {
        match self {
            Failure::Error => ERROR,
            Failure::BrokerUnavailable => BROKER_UNAVAILABLE,
            Failure::Refused => REFUSED,
        }
    }

    /// What the code means, in a few words (the `class` of a JSON error document).
    pub fn class(self) -> &'static str {
        match self {
            Failure::Error => "error",
            Failure::BrokerUnavailable => "broker-unavailable",
            Failure::Refused => "refused",
        }
    }
}

/// The class of a broker error.
pub fn of_broker(error: &BrokerError) -> Failure {
    match error {
        BrokerError::Unreachable { .. }
        | BrokerError::UnknownHost { .. }
        | BrokerError::WrongScheme { .. }
        | BrokerError::AmqpPort { .. }
        | BrokerError::Tls { .. }
        | BrokerError::TimedOut { .. }
        | BrokerError::BadCredentials { .. }
        | BrokerError::NotManagementUser { .. }
        | BrokerError::Forbidden { .. }
        | BrokerError::NotManagementApi { .. }
        | BrokerError::Amqp { .. }
        | BrokerError::AmqpUnanswered { .. }
        | BrokerError::Inspect { .. }
        | BrokerError::LockUnavailable { .. } => Failure::BrokerUnavailable,
        BrokerError::Refused { .. }
        | BrokerError::BindingsNotRestored { .. }
        | BrokerError::Locked { .. }
        | BrokerError::DamagedRecord(_) => Failure::Refused,
        BrokerError::LostInWindow { .. }
        | BrokerError::Api { .. }
        | BrokerError::Setup(_)
        | BrokerError::LockInterrupted { .. }
        | BrokerError::LocksLost { .. }
        | BrokerError::Decode { .. } => Failure::Error,
    }
}

/// The class of an apply that did not run or did not finish.
pub fn of_apply(error: &ApplyError) -> Failure {
    match error {
        ApplyError::DataLoss(_)
        | ApplyError::HeldNow(_)
        | ApplyError::UnknownPasswords(_)
        | ApplyError::Conflict(_)
        | ApplyError::Captures(_)
        | ApplyError::NoShovels(_)
        | ApplyError::MigrationUnderWay(_)
        | ApplyError::OtherBroker(_)
        | ApplyError::Stale(_) => Failure::Refused,
        // The user's permissions, as a 403 from the broker would be: fix the user.
        ApplyError::Permissions { .. } => Failure::BrokerUnavailable,
        ApplyError::Broker { error, .. } => of_broker(error),
        ApplyError::RecordNotWritten { error, .. } => match of_apply(error) {
            // The changes were made: whatever stopped the record, the run failed.
            Failure::Refused => Failure::Error,
            failure => failure,
        },
        ApplyError::Interrupted { .. } | ApplyError::LocksLost { .. } => Failure::Error,
    }
}

/// The class of an apply that showed its plan and applied nothing: refusing another
/// spec's objects or captured queues is a refusal, a person's "no" an error.
pub fn of_declined(declined: Declined) -> Failure {
    match declined {
        Declined::Conflicts | Declined::Captures | Declined::Overlaps | Declined::Ties => {
            Failure::Refused
        }
        Declined::Cancelled => Failure::Error,
    }
}

/// The class of a replay that did not run or did not finish.
pub fn of_replay(failure: &ReplayFailure) -> Failure {
    match failure {
        ReplayFailure::Broker(error) => of_broker(error),
        ReplayFailure::Connect { .. } => Failure::BrokerUnavailable,
        ReplayFailure::QueueMissing { .. }
        | ReplayFailure::UserId { .. }
        | ReplayFailure::Channel(_)
        | ReplayFailure::Refused(_) => Failure::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct() {
        let codes = [OK, ERROR, CHANGES, BROKER_UNAVAILABLE, REFUSED];
        let mut sorted = codes.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), codes.len());
        for failure in [Failure::Error, Failure::BrokerUnavailable, Failure::Refused] {
            assert!(![OK, CHANGES].contains(&failure.code()), "{failure:?}");
        }
        assert_eq!(Failure::BrokerUnavailable.code(), BROKER_UNAVAILABLE);
        assert_eq!(Failure::BrokerUnavailable.class(), "broker-unavailable");
        assert_eq!(Failure::Refused.class(), "refused");
        assert_eq!(Failure::Error.class(), "error");
    }

    #[test]
    fn a_refused_deletion_is_a_refusal_and_a_wrong_password_is_unavailable() {
        let refused = BrokerError::Refused {
            vhost: "/".into(),
            queue: "q".into(),
            reason: "it holds 3 messages".to_string().into(),
        };
        assert_eq!(of_broker(&refused), Failure::Refused);
        assert_eq!(of_apply(&ApplyError::from(refused)), Failure::Refused);
        let credentials = BrokerError::BadCredentials { user: "u".into() };
        assert_eq!(of_broker(&credentials), Failure::BrokerUnavailable);
        assert_eq!(
            of_apply(&ApplyError::DataLoss("queue q holds 3 messages".into())),
            Failure::Refused
        );
    }
}
