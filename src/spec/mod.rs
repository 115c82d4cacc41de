//! What the user writes: the spec types, their loader, source positions, and the
//! diagnostics that point into them.

pub mod diagnostic;
pub mod duration;
pub mod environment;
pub mod limits;
pub mod lint_settings;
pub mod load;
mod merge;
mod recover;
pub mod retry;
pub mod source_map;
pub mod types;
pub mod users;
mod yaml_errors;

pub use duration::Duration;
pub use lint_settings::*;
pub use load::{
    Place, Rest, Sources, SpecFile, Texts, Unread, load, load_file, load_for_checking, load_str,
};
pub use retry::*;
pub use source_map::{Location, SourceFile, SourceMap, SpecPath};
pub use types::*;
pub use users::*;

/// The error for a name a flag chose that the spec does not have (`--vhost`,
/// `--service` of `graph` and `status`): what was given, the closest name when it
/// looks like a typo, and every choice, so the user can pick one.
pub fn not_in_spec(what: &str, given: &str, known: &[String]) -> String {
    let choices = if known.is_empty() {
        format!("the spec has no {what}")
    } else {
        let listed: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
        format!(
            "the spec has {}: {}",
            crate::text::count(known.len(), what),
            listed.join(", ")
        )
    };
    let hint = match crate::suggest::closest(given, known) {
        Some(close) => format!(" (did you mean `{close}`?)"),
        None => String::new(),
    };
    format!("no {what} `{given}` in the spec{hint}; {choices}")
}
