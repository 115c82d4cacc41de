//! The one shape of warren's rule registries: the lint rules (`lint::RULES`), the
//! checks of `warren upgrade-check` (`upgrade::CHECKS`) and the rules RabbitMQ's own
//! definitions import enforces (`definitions_file::rules::RULES`).
//!
//! Every registry says the same things about a rule (its id, what it catches, the
//! level it reports at, why it matters), so that `warren rules`, the docs tests and
//! the SARIF writer read any of them alike; what only one registry has (lint's bad and
//! good examples, the function that runs a rule) is its `check`.

use serde::Serialize;

/// How a rule reports, unless a spec's `lint:` settings say otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Not reported.
    Allow,
    /// Reported as a warning; fails the run only with `--deny warnings`.
    Warn,
    /// Reported as an error; fails the run.
    Deny,
}

/// One rule of a registry.
#[derive(Debug, Clone, Copy)]
pub struct Rule<Check> {
    /// Its stable id, the `code` of its findings: `dead-letter-cycle-dropped`.
    pub id: &'static str,
    /// What it catches, in one line.
    pub summary: &'static str,
    /// The level its findings take. `None` for a rule whose findings each carry the
    /// severity of what they found (an upgrade-check check: the same check is an error
    /// for what the target refuses and a warning for what it only ignores).
    pub level: Option<Level>,
    /// Why it matters and what to do, in a paragraph (lint's rules have one).
    pub explanation: Option<&'static str>,
    /// What only its registry knows: how it is run, and what else it shows.
    pub check: Check,
}
