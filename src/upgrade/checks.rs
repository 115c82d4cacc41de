//! The checks of `warren upgrade-check`: the ids its findings carry, each with what it
//! finds. The checks themselves are the other files of the module.

/// One kind of finding: its stable id and what it is about.
pub struct Check {
    /// The id findings carry.
    pub id: &'static str,
    /// What it finds, in one line.
    pub summary: &'static str,
}

/// Every kind of finding, in the order docs/upgrading.md explains them.
pub const CHECKS: &[Check] = &[
    Check {
        id: "upgrade-path",
        summary: "the in-place upgrade path from the line the cluster runs to the target, and what to do before each step",
    },
    Check {
        id: "classic-mirroring",
        summary: "a policy or operator policy with `ha-*` keys: 4.0 removed classic queue mirroring and refuses such a policy",
    },
    Check {
        id: "classic-queue-version-1",
        summary: "`x-queue-version: 1` (refused from 4.3) or a `queue-version: 1` policy key (ignored from 4.3)",
    },
    Check {
        id: "quorum-default-delivery-limit",
        summary: "a quorum queue without a delivery limit: from 4.0 it gets 20, and messages redelivered more often are dead-lettered or dropped",
    },
    Check {
        id: "quorum-nack-not-counted",
        summary: "a quorum queue with a delivery limit: on 4.3 `basic.nack` with requeue no longer counts toward it",
    },
    Check {
        id: "delayed-message-exchange",
        summary: "an `x-delayed-message` exchange: the plugin has no release for 4.3",
    },
    Check {
        id: "queue-master-locator",
        summary: "`x-queue-master-locator` or a `queue-master-locator` policy key: refused from 4.3; use the leader locator",
    },
    Check {
        id: "transient-nonexclusive-queue",
        summary: "a non-durable queue that is not exclusive: the deprecated feature `transient_nonexcl_queues`",
    },
    Check {
        id: "queue-mode-lazy",
        summary: "`x-queue-mode` or `queue-mode`: no effect since 3.12",
    },
    Check {
        id: "consumer-timeout-classic",
        summary: "a consumer timeout on a classic queue or stream: refused as an argument, without effect as a policy key on 4.3",
    },
    Check {
        id: "deprecated-feature-used",
        summary: "a deprecated feature the broker reports in use, with its phase on the target",
    },
    Check {
        id: "import-refused",
        summary: "anything else the target's own definitions import refuses (a rule of docs/definitions-files.md)",
    },
    Check {
        id: "target-refuses-spec",
        summary: "a spec that does not compile for the target: what to change in it",
    },
    Check {
        id: "spec-invalid",
        summary: "a spec that does not compile for the line the cluster runs now",
    },
];
