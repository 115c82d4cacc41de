//! The checks of `warren upgrade-check`: the ids its findings carry, each with what it
//! finds, in the registry shape every rule registry of warren's shares
//! ([`crate::model::rule::Rule`]). The checks themselves are the other files of the
//! module; a check has no level of its own: each finding's severity is what the
//! target does with what it found (refuses it, ignores it, or the user should know).

use crate::model::rule::Rule;

/// One check.
const fn check(id: &'static str, summary: &'static str) -> Rule<()> {
    Rule {
        id,
        summary,
        level: None,
        explanation: None,
        check: (),
    }
}

/// Every check, in the order docs/upgrading.md explains them.
pub const CHECKS: &[Rule<()>] = &[
    check(
        "upgrade-path",
        "the in-place upgrade path from the line the cluster runs to the target, and what to do before each step",
    ),
    check(
        "classic-mirroring",
        "a policy or operator policy with `ha-*` keys: 4.0 removed classic queue mirroring and refuses such a policy",
    ),
    check(
        "classic-queue-version-1",
        "`x-queue-version: 1` (refused from 4.3) or a `queue-version: 1` policy key (ignored from 4.3)",
    ),
    check(
        "quorum-default-delivery-limit",
        "a quorum queue without a delivery limit: from 4.0 it gets 20, and messages redelivered more often are dead-lettered or dropped",
    ),
    check(
        "quorum-nack-not-counted",
        "a quorum queue with a delivery limit: on 4.3 `basic.nack` with requeue no longer counts toward it",
    ),
    check(
        "delayed-message-exchange",
        "an `x-delayed-message` exchange: the plugin has no release for 4.3",
    ),
    check(
        "queue-master-locator",
        "`x-queue-master-locator` or a `queue-master-locator` policy key: refused from 4.3; use the leader locator",
    ),
    check(
        "transient-nonexclusive-queue",
        "a non-durable queue that is not exclusive: the deprecated feature `transient_nonexcl_queues`",
    ),
    check(
        "queue-mode-lazy",
        "`x-queue-mode` or `queue-mode`: no effect since 3.12",
    ),
    check(
        "consumer-timeout-classic",
        "a consumer timeout on a classic queue or stream: refused as an argument, without effect as a policy key on 4.3",
    ),
    check(
        "deprecated-feature-used",
        "a deprecated feature the broker reports in use, with its phase on the target",
    ),
    check(
        "import-refused",
        "anything else the target's own definitions import refuses (a rule of docs/definitions-files.md)",
    ),
    check(
        "target-refuses-spec",
        "a spec that does not compile for the target: what to change in it",
    ),
    check(
        "spec-invalid",
        "a spec that does not compile for the line the cluster runs now",
    ),
];
