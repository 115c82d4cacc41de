//! The plan for machines: the serialized [`Plan`] (the saved-plan format,
//! docs/plan-format.md) with secrets redacted, and the one document of
//! `apply --format json`.

use serde_json::Value;

use crate::model::redact::redact;
use crate::plan::Plan;

/// The plan as JSON with password hashes and URI credentials redacted, in the changes
/// and in the desired state (what `--format json` prints).
pub fn redacted_json(plan: &Plan) -> Value {
    let mut plan = plan.clone();
    plan.redacted = true;
    for change in &mut plan.changes {
        change.before = change.before.as_ref().map(redact);
        change.after = change.after.as_ref().map(redact);
    }
    for desired in &mut plan.desired {
        desired.value = redact(&desired.value);
    }
    serde_json::to_value(&plan).expect("plans serialize")
}

/// What an apply did, for its JSON document.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// Changes the broker confirmed, as `action kind name`.
    pub done: Vec<String>,
    /// Changes sent and not confirmed (they may or may not have been made).
    pub unconfirmed: Vec<String>,
    /// Changes not made.
    pub not_done: Vec<String>,
    /// Existing objects the spec adopted.
    pub adopted: usize,
    /// HTTP requests made.
    pub requests: u64,
}

/// The one document `apply --format json` prints: the plan it applied (redacted as
/// [`redacted_json`]), what it did, and, when it failed, why (`error`, as
/// [`crate::render::errors::error_value`]).
pub fn apply_document(
    plan: Option<&Plan>,
    applied: Option<&Applied>,
    error: Option<Value>,
) -> Value {
    serde_json::json!({
        "format": "warren-apply/1",
        "plan": plan.map(redacted_json),
        "applied": applied.map(|a| serde_json::json!({
            "done": a.done,
            "unconfirmed": a.unconfirmed,
            "not_done": a.not_done,
            "adopted": a.adopted,
            "requests": a.requests,
        })),
        "error": error,
    })
}
