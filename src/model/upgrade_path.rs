//! How a RabbitMQ cluster is upgraded in place from one release line to another: which
//! lines each line accepts an upgrade from, and what must be done before each step.
//! The one owner of the table `warren upgrade-check` prints and docs/upgrading.md
//! renders (a test checks that the docs hold the rendered table).
//!
//! Sources: the release notes of each line ("Upgrading to …"), and the table "Release
//! Series Upgradeability" of <https://www.rabbitmq.com/docs/upgrade>. Lines are
//! `major.minor`; 3.11 is a line every upgrade from 3.10 passes through, though warren
//! does not compile for it.

use std::fmt;

/// A RabbitMQ release line, `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Line {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl Line {
    /// The line of a version such as `3.10.8`, `4.3.0-rc.1` or `4.2`; `None` when it
    /// does not read as one.
    pub fn of(version: &str) -> Option<Line> {
        let mut parts = version.trim().split(['.', '-', '+']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(Line { major, minor })
    }

    const fn new(major: u32, minor: u32) -> Line {
        Line { major, minor }
    }
}

impl serde::Serialize for Line {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// One line and the lines a cluster can be upgraded to it from in place.
#[derive(Debug, Clone, Copy)]
pub struct Upgradable {
    /// The line upgraded to.
    pub to: Line,
    /// The lines a running cluster can be upgraded from, newest first.
    pub from: &'static [Line],
    /// What must be done before the step (beyond running the latest patch of the line
    /// upgraded from, which every step asks).
    pub before: &'static str,
    /// Where the release notes say so.
    pub source: &'static str,
}

/// Every line warren knows the upgrade to, oldest first.
pub const UPGRADABLE: &[Upgradable] = &[
    Upgradable {
        to: Line::new(3, 10),
        from: &[Line::new(3, 9)],
        before: "enable every feature flag",
        source: "https://github.com/rabbitmq/rabbitmq-server/blob/main/release-notes/3.10.0.md",
    },
    Upgradable {
        to: Line::new(3, 11),
        from: &[Line::new(3, 10)],
        before: "enable the feature flags of 3.8 (`quorum_queue`, `implicit_default_bindings`, `virtual_host_metadata`, `maintenance_mode_status`, `user_limits`): 3.11 requires them; enabling every flag does",
        source: "https://github.com/rabbitmq/rabbitmq-server/blob/main/release-notes/3.11.0.md",
    },
    Upgradable {
        to: Line::new(3, 12),
        from: &[Line::new(3, 11)],
        before: "run 3.11.18 or later and enable every feature flag: 3.12 nodes do not start otherwise",
        source: "https://github.com/rabbitmq/rabbitmq-server/blob/main/release-notes/3.12.0.md",
    },
    Upgradable {
        to: Line::new(3, 13),
        from: &[Line::new(3, 12)],
        before: "enable every feature flag",
        source: "https://github.com/rabbitmq/rabbitmq-server/blob/main/release-notes/3.13.0.md",
    },
    Upgradable {
        to: Line::new(4, 0),
        from: &[Line::new(3, 13)],
        before: "enable every stable feature flag of 3.13; a 3.13 cluster with Khepri enabled cannot be upgraded in place (blue-green)",
        source: "https://github.com/rabbitmq/rabbitmq-server/blob/main/release-notes/4.0.1.md",
    },
    Upgradable {
        to: Line::new(4, 1),
        from: &[Line::new(4, 0), Line::new(3, 13)],
        before: "enable every stable feature flag",
        source: "https://github.com/rabbitmq/rabbitmq-server/blob/main/release-notes/4.1.0.md",
    },
    Upgradable {
        to: Line::new(4, 2),
        from: &[Line::new(4, 1), Line::new(4, 0), Line::new(3, 13)],
        before: "enable every stable feature flag",
        source: "https://github.com/rabbitmq/rabbitmq-server/blob/main/release-notes/4.2.0.md",
    },
    Upgradable {
        to: Line::new(4, 3),
        from: &[Line::new(4, 2)],
        before: "run the latest 4.2 patch and enable every feature flag, `khepri_db` included (4.3 has no Mnesia: the metadata moves to Khepri on 4.2 first)",
        source: "https://github.com/rabbitmq/rabbitmq-server/blob/main/release-notes/4.3.0.md",
    },
];

/// One step of an upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Step {
    /// The line the cluster runs before the step.
    pub from: Line,
    /// The line it runs after.
    pub to: Line,
    /// What to do before the step.
    pub before: &'static str,
    /// Where the release notes say so.
    pub source: &'static str,
}

/// Why there is no in-place path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoPath {
    /// The cluster already runs the line (or a newer patch of it).
    Same,
    /// The line asked for is older: RabbitMQ does not support downgrades.
    Downgrade,
    /// No line of the table accepts the line the cluster runs (older than 3.9, or a
    /// line warren does not know).
    Unknown,
}

/// The in-place steps from `from` to `to`: at each step the newest line not beyond
/// `to` that accepts the line the cluster runs (3.13 goes to 4.2 at once, not through
/// 4.0 and 4.1).
pub fn path(from: Line, to: Line) -> Result<Vec<Step>, NoPath> {
    if from == to {
        return Err(NoPath::Same);
    }
    if from > to {
        return Err(NoPath::Downgrade);
    }
    let mut steps = Vec::new();
    let mut at = from;
    while at < to {
        let next = UPGRADABLE
            .iter()
            .rev()
            .filter(|line| line.to <= to && line.to > at)
            .find(|line| line.from.contains(&at))
            .ok_or(NoPath::Unknown)?;
        steps.push(Step {
            from: at,
            to: next.to,
            before: next.before,
            source: next.source,
        });
        at = next.to;
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(from: &str, to: &str) -> Vec<String> {
        path(Line::of(from).unwrap(), Line::of(to).unwrap())
            .unwrap()
            .iter()
            .map(|step| step.to.to_string())
            .collect()
    }

    #[test]
    fn each_step_goes_as_far_as_the_next_line_accepts() {
        assert_eq!(
            lines("3.10.8", "4.3"),
            ["3.11", "3.12", "3.13", "4.2", "4.3"]
        );
        assert_eq!(lines("3.13.7", "4.3"), ["4.2", "4.3"]);
        assert_eq!(lines("3.10", "4.0"), ["3.11", "3.12", "3.13", "4.0"]);
        assert_eq!(lines("4.0.5", "4.3"), ["4.2", "4.3"]);
        assert_eq!(lines("4.2.1", "4.3"), ["4.3"]);
    }

    #[test]
    fn no_path_says_why() {
        let line = |text| Line::of(text).unwrap();
        assert_eq!(path(line("4.3.6"), line("4.3")), Err(NoPath::Same));
        assert_eq!(path(line("4.3"), line("4.0")), Err(NoPath::Downgrade));
        assert_eq!(path(line("3.7"), line("4.3")), Err(NoPath::Unknown));
        assert_eq!(Line::of("not a version"), None);
    }
}
