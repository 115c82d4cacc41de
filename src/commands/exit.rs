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

/// The exit code of a broker error.
pub fn of_broker(error: &BrokerError) -> u8 {
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
        | BrokerError::LockUnavailable { .. } => BROKER_UNAVAILABLE,
        BrokerError::Refused { .. }
        | BrokerError::BindingsNotRestored { .. }
        | BrokerError::Locked { .. }
        | BrokerError::DamagedRecord(_) => REFUSED,
        BrokerError::LostInWindow { .. }
        | BrokerError::Api { .. }
        | BrokerError::Setup(_)
        | BrokerError::LockInterrupted { .. }
        | BrokerError::LocksLost { .. }
        | BrokerError::Decode { .. } => ERROR,
    }
}

/// The exit code of an apply that did not run or did not finish.
pub fn of_apply(error: &ApplyError) -> u8 {
    match error {
        ApplyError::DataLoss(_)
        | ApplyError::HeldNow(_)
        | ApplyError::UnknownPasswords(_)
        | ApplyError::Conflict(_)
        | ApplyError::Captures(_)
        | ApplyError::NoShovels(_)
        | ApplyError::MigrationUnderWay(_)
        | ApplyError::OtherBroker(_)
        | ApplyError::Stale(_) => REFUSED,
        // The user's permissions, as a 403 from the broker would be: fix the user.
        ApplyError::Permissions { .. } => BROKER_UNAVAILABLE,
        ApplyError::Broker { error, .. } => of_broker(error),
        ApplyError::RecordNotWritten { error, .. } => match of_apply(error) {
            // The changes were made: whatever stopped the record, the run failed.
            REFUSED => ERROR,
            code => code,
        },
        ApplyError::Interrupted { .. } | ApplyError::LocksLost { .. } => ERROR,
    }
}

/// The exit code of an apply that showed its plan and applied nothing: refusing
/// another spec's objects or captured queues is a refusal, a person's "no" an error.
pub fn of_declined(declined: Declined) -> u8 {
    match declined {
        Declined::Conflicts | Declined::Captures | Declined::Overlaps | Declined::Ties => REFUSED,
        Declined::Cancelled => ERROR,
    }
}

/// The exit code of a replay that did not run or did not finish.
pub fn of_replay(failure: &ReplayFailure) -> u8 {
    match failure {
        ReplayFailure::Broker(error) => of_broker(error),
        ReplayFailure::Connect { .. } => BROKER_UNAVAILABLE,
        ReplayFailure::QueueMissing { .. }
        | ReplayFailure::UserId { .. }
        | ReplayFailure::Channel(_)
        | ReplayFailure::Refused(_) => ERROR,
    }
}

/// What a code means, in a few words (the `class` of a JSON error document).
pub fn class(code: u8) -> &'static str {
    match code {
        OK => "ok",
        CHANGES => "changes",
        BROKER_UNAVAILABLE => "broker-unavailable",
        REFUSED => "refused",
        _ => "error",
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
        assert_eq!(class(BROKER_UNAVAILABLE), "broker-unavailable");
        assert_eq!(class(REFUSED), "refused");
        assert_eq!(class(ERROR), "error");
    }

    #[test]
    fn a_refused_deletion_is_a_refusal_and_a_wrong_password_is_unavailable() {
        let refused = BrokerError::Refused {
            vhost: "/".into(),
            queue: "q".into(),
            reason: "it holds 3 messages".to_string().into(),
        };
        assert_eq!(of_broker(&refused), REFUSED);
        assert_eq!(of_apply(&ApplyError::from(refused)), REFUSED);
        let credentials = BrokerError::BadCredentials { user: "u".into() };
        assert_eq!(of_broker(&credentials), BROKER_UNAVAILABLE);
        assert_eq!(
            of_apply(&ApplyError::DataLoss("queue q holds 3 messages".into())),
            REFUSED
        );
    }
}
