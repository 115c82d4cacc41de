//! `warren schema`.

use std::io::Write;

use super::result::{CommandError, CommandResult, Success};

/// Prints the JSON Schema of the spec.
pub fn print(stdout: &mut dyn Write) -> CommandResult {
    writeln!(stdout, "{}", crate::schema::spec_schema_json()).map_err(CommandError::unwritten)?;
    Ok(Success::Done)
}
