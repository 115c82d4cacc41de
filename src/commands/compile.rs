//! `warren validate`, `warren compile` and `warren export`.

use std::io::Write;
use std::path::Path;

use super::{EXIT_ERROR, EXIT_OK, load_spec, report};
use crate::cli::SpecArgs;
use crate::compile::{self, Compiled, Options};
use crate::definitions_file;
use crate::model::redact::redact_uris;

/// Loads and compiles, printing diagnostics; `None` when there were errors.
fn load_and_compile(
    args: &SpecArgs,
    read_secrets: bool,
    stderr: &mut dyn Write,
) -> Option<Compiled> {
    let file = load_spec(&args.spec, stderr)?;
    let options = if read_secrets {
        Options::reading_secrets(&file, args.target_version)
    } else {
        Options {
            target: args.target_version,
            secrets: None,
        }
    };
    match compile::compile(&file, &options) {
        Ok(compiled) => {
            report(&file, &compiled.warnings, stderr);
            Some(compiled)
        }
        Err(found) => {
            report(&file, &found, stderr);
            None
        }
    }
}

/// `warren validate SPEC`.
pub fn validate(args: &SpecArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8 {
    match load_and_compile(args, false, stderr) {
        Some(compiled) => {
            let _ = writeln!(
                stdout,
                "{}: valid ({} objects for RabbitMQ {})",
                args.spec.display(),
                compiled.definitions.object_count(),
                args.target_version
            );
            EXIT_OK
        }
        None => EXIT_ERROR,
    }
}

/// `warren compile SPEC [--contract]`.
pub fn compile(
    args: &SpecArgs,
    contract: bool,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let Some(compiled) = load_and_compile(args, true, stderr) else {
        return EXIT_ERROR;
    };
    let json = if contract {
        serde_json::to_string_pretty(&compiled.contract)
    } else {
        // Printed output never shows URI credentials; `export` writes them for the broker.
        serde_json::to_string_pretty(&redact_uris(&definitions_file::document(
            &compiled.definitions,
            args.target_version,
        )))
    };
    match json.map(|text| writeln!(stdout, "{text}")) {
        Ok(Ok(())) => EXIT_OK,
        _ => EXIT_ERROR,
    }
}

/// `warren export SPEC -o FILE`.
pub fn export(
    args: &SpecArgs,
    output: &Path,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let Some(compiled) = load_and_compile(args, true, stderr) else {
        return EXIT_ERROR;
    };
    let text = definitions_file::to_json(&compiled.definitions, args.target_version);
    if output == Path::new("-") {
        return match stdout.write_all(text.as_bytes()) {
            Ok(()) => EXIT_OK,
            Err(_) => EXIT_ERROR,
        };
    }
    match definitions_file::write_atomically(output, &text) {
        Ok(()) => {
            let _ = writeln!(
                stderr,
                "wrote {} ({} objects, RabbitMQ {})",
                output.display(),
                compiled.definitions.object_count(),
                args.target_version
            );
            EXIT_OK
        }
        Err(err) => {
            let _ = writeln!(stderr, "error: cannot write {}: {err}", output.display());
            EXIT_ERROR
        }
    }
}
