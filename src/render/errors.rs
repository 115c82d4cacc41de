//! Why a command failed, as JSON: what a command asked for `--format json` prints on
//! stdout instead of nothing, so a script reads one document whatever happened.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::spec::diagnostic::Diagnostic;

/// The `error` object: exit code, its class, the error lines and the diagnostics.
pub fn error_value(
    code: u8,
    class: &str,
    messages: &[String],
    diagnostics: &[(PathBuf, Diagnostic)],
) -> Value {
    json!({
        "exit_code": code,
        "class": class,
        "messages": messages,
        "diagnostics": diagnostics
            .iter()
            .map(|(file, d)| super::diagnostics::json_value(d, file, None))
            .collect::<Vec<_>>(),
    })
}

/// `{"error": …}`: the whole document of a failed command, around its `error` object
/// ([`error_value`]).
pub fn error_document(error: Value) -> Value {
    json!({ "error": error })
}
