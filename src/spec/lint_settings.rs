//! How a spec sets the lint's rule levels: for the whole spec ([`LintSettings`]) and
//! for one object and everything in it ([`InlineLint`]). Every part of the spec
//! format that holds objects uses the second, so it is a file of its own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Lint rule levels for the whole spec (`warren rules` lists the ids).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintSettings {
    /// Rules turned off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Rules reported as warnings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warn: Vec<String>,
    /// Rules reported as errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

/// Lint rules turned off for one object and everything in it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InlineLint {
    /// Rules turned off.
    #[serde(default)]
    pub allow: Vec<String>,
}
