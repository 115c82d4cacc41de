//! RabbitMQ's deprecated features (3.13 on): the phase each is in on each line, as
//! `GET /api/deprecated-features` names them, and what using one means.
//!
//! Phases go permitted by default → denied by default → removed
//! (<https://www.rabbitmq.com/docs/deprecated-features>). The lines are those of the
//! release notes and of each release's `-rabbit_deprecated_feature` attributes (3.13.0
//! introduced the subsystem; 4.3.0 denied most features by default: "Deprecated
//! Features are Now Disabled by Default"). Where a broker measured otherwise, the
//! feature's `measured` says so.

use super::TargetVersion;

/// The phase of a deprecated feature on a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Not deprecated on the line (older than its deprecation).
    NotDeprecated,
    /// Deprecated, still allowed unless the node's configuration denies it.
    PermittedByDefault,
    /// Refused unless every node's configuration permits it
    /// (`deprecated_features.permit.<name> = true`).
    DeniedByDefault,
    /// Gone: nothing permits it.
    Removed,
}

impl Phase {
    /// The phase as the management API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::NotDeprecated => "not deprecated",
            Phase::PermittedByDefault => "permitted_by_default",
            Phase::DeniedByDefault => "denied_by_default",
            Phase::Removed => "removed",
        }
    }
}

/// One deprecated feature.
#[derive(Debug, Clone, Copy)]
pub struct DeprecatedFeature {
    /// Its name in the management API.
    pub name: &'static str,
    /// What it is, for a user.
    pub what: &'static str,
    /// The first line where it is deprecated (permitted by default).
    pub deprecated: TargetVersion,
    /// The first line where it is denied by default.
    pub denied: Option<TargetVersion>,
    /// The first line where it is removed.
    pub removed: Option<TargetVersion>,
    /// What a broker measured that differs from the release notes.
    pub measured: Option<&'static str>,
}

/// The deprecated features of RabbitMQ 3.13 to 4.3.
pub const DEPRECATED_FEATURES: &[DeprecatedFeature] = &[
    DeprecatedFeature {
        name: "classic_queue_mirroring",
        what: "classic queue mirroring (`ha-*` policy keys)",
        deprecated: TargetVersion::V3_13,
        denied: None,
        removed: Some(TargetVersion::V4_0),
        measured: None,
    },
    DeprecatedFeature {
        name: "transient_nonexcl_queues",
        what: "non-durable queues that are not exclusive",
        deprecated: TargetVersion::V3_13,
        denied: Some(TargetVersion::V4_3),
        removed: None,
        measured: Some(
            "RabbitMQ 4.3.6 reports it `permitted_by_default` and declares such a queue",
        ),
    },
    DeprecatedFeature {
        name: "global_qos",
        what: "`basic.qos` with `global` set (a client's channel setting)",
        deprecated: TargetVersion::V3_13,
        denied: Some(TargetVersion::V4_3),
        removed: None,
        measured: None,
    },
    DeprecatedFeature {
        name: "ram_node_type",
        what: "RAM cluster nodes",
        deprecated: TargetVersion::V3_13,
        denied: None,
        removed: Some(TargetVersion::V4_3),
        measured: None,
    },
    DeprecatedFeature {
        name: "management_metrics_collection",
        what: "the management plugin's metrics collection",
        deprecated: TargetVersion::V3_13,
        denied: None,
        removed: None,
        measured: None,
    },
    DeprecatedFeature {
        name: "queue_master_locator",
        what: "`x-queue-master-locator` and the `queue-master-locator` policy key",
        deprecated: TargetVersion::V4_0,
        denied: Some(TargetVersion::V4_3),
        removed: None,
        measured: None,
    },
    DeprecatedFeature {
        name: "amqp_address_v1",
        what: "AMQP 1.0 address format v1 (a client's addresses)",
        deprecated: TargetVersion::V4_0,
        denied: Some(TargetVersion::V4_3),
        removed: None,
        measured: None,
    },
    DeprecatedFeature {
        name: "amqp_filter_set_bug",
        what: "the AMQP 1.0 filter-set encoding of old clients",
        deprecated: TargetVersion::V4_1,
        denied: Some(TargetVersion::V4_3),
        removed: None,
        measured: None,
    },
];

/// Looks a feature up by its API name.
pub fn find(name: &str) -> Option<&'static DeprecatedFeature> {
    DEPRECATED_FEATURES.iter().find(|f| f.name == name)
}

impl DeprecatedFeature {
    /// The feature's phase on `target`.
    pub fn phase_on(&self, target: TargetVersion) -> Phase {
        if self.removed.is_some_and(|line| target >= line) {
            Phase::Removed
        } else if self.denied.is_some_and(|line| target >= line) {
            Phase::DeniedByDefault
        } else if target >= self.deprecated {
            Phase::PermittedByDefault
        } else {
            Phase::NotDeprecated
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_follow_the_lines() {
        let phase = |name, target| find(name).unwrap().phase_on(target);
        assert_eq!(
            phase("transient_nonexcl_queues", TargetVersion::V4_2),
            Phase::PermittedByDefault
        );
        assert_eq!(
            phase("transient_nonexcl_queues", TargetVersion::V4_3),
            Phase::DeniedByDefault
        );
        assert_eq!(
            phase("classic_queue_mirroring", TargetVersion::V4_3),
            Phase::Removed
        );
        assert_eq!(
            phase("queue_master_locator", TargetVersion::V3_13),
            Phase::NotDeprecated
        );
    }
}
