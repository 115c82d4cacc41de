//! `warren schema`.

use std::io::Write;

use super::{EXIT_ERROR, EXIT_OK};

/// Prints the JSON Schema of the spec.
pub fn print(stdout: &mut dyn Write) -> u8 {
    match writeln!(stdout, "{}", crate::schema::spec_schema_json()) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_ERROR,
    }
}
