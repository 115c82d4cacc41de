//! RabbitMQ versions warren can target, and what differs between them.

use std::fmt;
use std::str::FromStr;

/// A RabbitMQ release line the compiler can produce definitions for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TargetVersion {
    /// 3.10 (Debian bookworm ships 3.10.8).
    V3_10,
    /// 3.12.
    V3_12,
    /// 3.13.
    V3_13,
    /// 4.0.
    V4_0,
    /// 4.1.
    V4_1,
    /// 4.2 (Khepri is the default metadata store; classic queues of version 2 are the
    /// default).
    V4_2,
    /// 4.3 (Debian sid ships 4.3.6): Khepri only, classic queues of version 1 removed,
    /// quorum queues count only failed deliveries toward the delivery limit.
    V4_3,
}

impl TargetVersion {
    /// Every supported version, oldest first.
    pub const ALL: [TargetVersion; 7] = [
        TargetVersion::V3_10,
        TargetVersion::V3_12,
        TargetVersion::V3_13,
        TargetVersion::V4_0,
        TargetVersion::V4_1,
        TargetVersion::V4_2,
        TargetVersion::V4_3,
    ];

    /// The default target: the newest supported line.
    pub const DEFAULT: TargetVersion = TargetVersion::V4_3;

    /// The newest supported line.
    pub const NEWEST: TargetVersion = TargetVersion::ALL[TargetVersion::ALL.len() - 1];

    /// Policy `apply-to` accepts `classic_queues`, `quorum_queues` and `streams`
    /// (3.12+; 3.10 answers 400 "apply-to 'quorum_queues' unrecognised").
    pub fn has_queue_type_apply_to(self) -> bool {
        self >= TargetVersion::V3_12
    }

    /// Vhosts have a default queue type (3.11+; a 3.10 broker ignores the field).
    pub fn has_vhost_default_queue_type(self) -> bool {
        self >= TargetVersion::V3_12
    }

    /// Quorum queues get a delivery limit of 20 when none is set (4.0+), and a negative
    /// limit means unlimited.
    pub fn has_default_delivery_limit(self) -> bool {
        self >= TargetVersion::V4_0
    }

    /// The longest regex the broker accepts as a policy's (or operator policy's) pattern
    /// or in a permission, in bytes, when it has a limit of its own: 1,024 from 4.1 on.
    /// RabbitMQ 4.3.6 refuses a longer one (`400 … pattern must not exceed 1024 bytes`;
    /// for a permission, `invalid_regexp`): `rabbit_re`, hard-coded, not configurable.
    /// 4.0.5 accepts longer patterns, up to PCRE's 64 KiB compiled form (see
    /// `model::pattern::MAX_PATTERN_LENGTH`); warren keeps to the limit from 4.1 on, the
    /// first line after the last one measured without it.
    pub fn pattern_byte_limit(self) -> Option<usize> {
        (self >= TargetVersion::V4_1).then_some(1024)
    }

    /// Classic queues of version 1 (CQv1) exist: from 4.0 every classic queue is stored
    /// as version 2, whatever `x-queue-version` or a `queue-version` policy says
    /// (measured on 4.0.5: a queue declared with `x-queue-version: 1` reports
    /// `storage_version: 2`).
    pub fn has_classic_queue_version_1(self) -> bool {
        self < TargetVersion::V4_0
    }

    /// A declare with `x-queue-version: 1` is accepted (and, from 4.0, ignored): 4.3
    /// refuses it (`406 … unsupported queue version '1'`, measured on 4.3.6); a
    /// `queue-version: 1` policy is still accepted there.
    pub fn accepts_queue_version_1_argument(self) -> bool {
        self < TargetVersion::V4_3
    }

    /// The deprecated feature `queue_master_locator` is permitted: 4.3 denies it by
    /// default and refuses both the `x-queue-master-locator` argument and the
    /// `queue-master-locator` policy key (measured on 4.3.6; 4.0.5 permits both).
    pub fn permits_queue_master_locator(self) -> bool {
        self < TargetVersion::V4_3
    }

    /// A quorum queue counts a `basic.nack` with requeue toward its delivery limit. From
    /// 4.3 only a *failed* delivery (`basic.reject` with requeue) counts: a nacked message
    /// is *returned* and redelivered without end (measured: `x-delivery-limit: 2`, nine
    /// deliveries and never dead-lettered on 4.3.6; three then dead-lettered on 3.10.8
    /// and 4.0.5).
    pub fn counts_nack_toward_delivery_limit(self) -> bool {
        self < TargetVersion::V4_3
    }

    /// Quorum queues can delay redeliveries themselves (`x-delayed-retry-*` arguments,
    /// `delayed-retry-*` policy keys): 4.3 on (4.0.5 refuses the policy keys).
    pub fn has_native_delayed_retry(self) -> bool {
        self >= TargetVersion::V4_3
    }

    /// The broker evaluates consumer timeouts for classic queues and streams (`4.3.0`
    /// release notes: from 4.3 only queue types that support it, i.e. quorum queues, do).
    pub fn times_out_classic_consumers(self) -> bool {
        self < TargetVersion::V4_3
    }

    /// Classic queues can be mirrored (`ha-*` policy keys): 4.0 removed mirroring and
    /// no longer knows the keys, so a policy with one does not import (release notes
    /// 4.0.1, "Classic Queues is Now a Non-Replicated Queue Type"; 4.3.6 refuses the
    /// policy: `policy_keys::PolicyKey::known_on`).
    pub fn has_classic_mirroring(self) -> bool {
        self < TargetVersion::V4_0
    }

    /// Non-durable queues that are not exclusive are a deprecated feature
    /// (`transient_nonexcl_queues`, 3.13 on). The 4.3.0 release notes deny it by
    /// default; RabbitMQ 4.3.6 measured still reports it `permitted_by_default` and
    /// declares such a queue, so warren warns rather than refuses.
    pub fn deprecates_transient_nonexclusive_queues(self) -> bool {
        self >= TargetVersion::V3_13
    }

    /// The community plugin `rabbitmq_delayed_message_exchange` (exchanges of type
    /// `x-delayed-message`) has a release for the line: its last, v4.2.0, targets 4.2.x
    /// only, and 4.3 removed Mnesia, where it keeps delayed messages (release notes
    /// 4.3.0; the 4.3 release blog calls it archived and unmaintained).
    pub fn has_delayed_message_exchange_plugin(self) -> bool {
        self < TargetVersion::V4_3
    }

    /// The broker interprets an `x-death` header that a client re-publishes (3.x lines
    /// except 3.13.0–3.13.2; never on 4.x).
    pub fn interprets_published_x_death(self) -> bool {
        self < TargetVersion::V4_0
    }

    /// The version for a broker that reports `version` (e.g. "3.10.8", "4.0.5"):
    /// the newest supported line not newer than it.
    pub fn for_broker(version: &str) -> Option<TargetVersion> {
        let mut parts = version.split(['.', '-', '+']);
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next()?.parse().ok()?;
        TargetVersion::ALL
            .iter()
            .rev()
            .copied()
            .find(|target| target.major_minor() <= (major, minor))
    }

    /// [`TargetVersion::for_broker`], or the oldest supported line for a broker older
    /// than it or a version that does not read: what a command that compiles for the
    /// broker it talks to compiles for.
    pub fn of_broker(version: &str) -> TargetVersion {
        TargetVersion::for_broker(version).unwrap_or(TargetVersion::V3_10)
    }

    fn major_minor(self) -> (u32, u32) {
        match self {
            TargetVersion::V3_10 => (3, 10),
            TargetVersion::V3_12 => (3, 12),
            TargetVersion::V3_13 => (3, 13),
            TargetVersion::V4_0 => (4, 0),
            TargetVersion::V4_1 => (4, 1),
            TargetVersion::V4_2 => (4, 2),
            TargetVersion::V4_3 => (4, 3),
        }
    }
}

/// The version a definitions file (or the spec imported from it) is checked for, and
/// why: the one place that decides it for `import`, `diff --against` and `lint
/// --definitions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedVersion {
    /// The version used.
    pub target: TargetVersion,
    /// Why it was used.
    pub because: Because,
}

/// Why a [`CheckedVersion`] is the version it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Because {
    /// `--target-version` (or `WARREN_TARGET_VERSION`) said so.
    Asked,
    /// The file says which broker wrote it (`rabbitmq_version` or `rabbit_version`),
    /// and this is the newest supported line not newer than it.
    WrittenBy(String),
    /// The file was written by a broker older than every supported line; it is checked
    /// for the oldest one.
    OlderThanSupported(String),
    /// The file does not say which broker wrote it (or says something that is not a
    /// version): the default.
    Unknown,
}

impl CheckedVersion {
    /// The target for a file written by `exported_by`, unless `asked` for one.
    pub fn for_file(asked: Option<TargetVersion>, exported_by: Option<&str>) -> CheckedVersion {
        let (target, because) = match (asked, exported_by) {
            (Some(target), _) => (target, Because::Asked),
            (None, Some(version)) => match TargetVersion::for_broker(version) {
                Some(target) => (target, Because::WrittenBy(version.to_string())),
                None if version
                    .split('.')
                    .next()
                    .and_then(|major| major.parse::<u32>().ok())
                    .is_some_and(|major| major <= 3) =>
                {
                    (
                        TargetVersion::ALL[0],
                        Because::OlderThanSupported(version.to_string()),
                    )
                }
                None => (TargetVersion::DEFAULT, Because::Unknown),
            },
            (None, None) => (TargetVersion::DEFAULT, Because::Unknown),
        };
        CheckedVersion { target, because }
    }
}

impl fmt::Display for CheckedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.target;
        match &self.because {
            Because::Asked => write!(f, "checked for RabbitMQ {target} (--target-version)"),
            Because::WrittenBy(version) => write!(
                f,
                "checked for RabbitMQ {target}: the file was written by RabbitMQ {version} (--target-version chooses another)"
            ),
            Because::OlderThanSupported(version) => write!(
                f,
                "checked for RabbitMQ {target}, the oldest version warren supports: the file was written by RabbitMQ {version} (--target-version chooses another)"
            ),
            Because::Unknown => write!(
                f,
                "checked for RabbitMQ {target}, warren's default: the file does not say which RabbitMQ wrote it (--target-version chooses another)"
            ),
        }
    }
}

impl fmt::Display for TargetVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (major, minor) = self.major_minor();
        write!(f, "{major}.{minor}")
    }
}

/// A version is written as its line, `4.3`, in JSON too.
impl serde::Serialize for TargetVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A line is read from a string, `"4.3"`. A number is refused with the fix: YAML reads
/// `3.10` unquoted as the number 3.1, which would name another line.
impl<'de> serde::Deserialize<'de> for TargetVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = TargetVersion;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a RabbitMQ line as a string, e.g. \"3.10\" or \"4.3\"")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TargetVersion, E> {
                v.parse().map_err(E::custom)
            }

            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<TargetVersion, E> {
                Err(E::custom(format!(
                    "the RabbitMQ line is the number {v} here (YAML reads `3.10` unquoted as 3.1): write it as a string, e.g. \"3.10\""
                )))
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<TargetVersion, E> {
                self.visit_f64(v as f64)
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<TargetVersion, E> {
                self.visit_f64(v as f64)
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl FromStr for TargetVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        TargetVersion::ALL
            .iter()
            .copied()
            .find(|target| target.to_string() == text.trim())
            .ok_or_else(|| {
                let all: Vec<String> = TargetVersion::ALL.iter().map(|t| t.to_string()).collect();
                format!(
                    "unknown target version `{text}`: use one of {}",
                    all.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays_every_version() {
        for target in TargetVersion::ALL {
            assert_eq!(target.to_string().parse::<TargetVersion>(), Ok(target));
        }
        assert!("3.11".parse::<TargetVersion>().is_err());
    }

    #[test]
    fn maps_broker_versions_to_the_nearest_older_line() {
        assert_eq!(
            TargetVersion::for_broker("3.10.8"),
            Some(TargetVersion::V3_10)
        );
        assert_eq!(
            TargetVersion::for_broker("3.11.2"),
            Some(TargetVersion::V3_10)
        );
        assert_eq!(
            TargetVersion::for_broker("4.0.5"),
            Some(TargetVersion::V4_0)
        );
        assert_eq!(
            TargetVersion::for_broker("4.2.1"),
            Some(TargetVersion::V4_2)
        );
        assert_eq!(
            TargetVersion::for_broker("4.3.6"),
            Some(TargetVersion::V4_3)
        );
        assert_eq!(
            TargetVersion::for_broker("4.4.0"),
            Some(TargetVersion::V4_3)
        );
        assert_eq!(TargetVersion::for_broker("3.8.0"), None);
    }

    #[test]
    fn a_file_is_checked_for_the_version_that_wrote_it() {
        let chosen = |asked, version| CheckedVersion::for_file(asked, version).target;
        assert_eq!(chosen(None, Some("3.8.6.gad0c0bd")), TargetVersion::V3_10);
        assert_eq!(chosen(None, Some("3.13.0-rc.1")), TargetVersion::V3_13);
        assert_eq!(chosen(None, Some("3.12.4")), TargetVersion::V3_12);
        assert_eq!(chosen(None, Some("4.2.1")), TargetVersion::V4_2);
        assert_eq!(chosen(None, Some("2.8.7")), TargetVersion::V3_10);
        assert_eq!(chosen(None, Some("not a version")), TargetVersion::DEFAULT);
        assert_eq!(chosen(None, None), TargetVersion::DEFAULT);
        assert_eq!(
            chosen(Some(TargetVersion::V4_0), Some("3.8.6")),
            TargetVersion::V4_0
        );
        assert_eq!(
            CheckedVersion::for_file(None, Some("3.8.6.gad0c0bd")).to_string(),
            "checked for RabbitMQ 3.10, the oldest version warren supports: the file was written by RabbitMQ 3.8.6.gad0c0bd (--target-version chooses another)"
        );
    }
}
