//! `warren validate`, `warren compile` and `warren export`.

use std::io::Write;
use std::path::Path;

use super::{EXIT_ERROR, EXIT_OK};
use crate::cli::SpecArgs;
use crate::compile::{self, Compiled, Options};
use crate::render::diagnostics;
use crate::spec;

/// Loads a spec, printing its diagnostics; `None` when it does not load.
pub(crate) fn load_reporting(path: &Path, stderr: &mut dyn Write) -> Option<spec::SpecFile> {
    match spec::load_file(path) {
        Ok(file) => Some(file),
        Err(found) => {
            let source = std::fs::read_to_string(path).ok();
            let _ = diagnostics::render(stderr, path, source.as_deref(), &found);
            None
        }
    }
}

/// Prints a compile result's warnings or errors; `None` when there were errors.
pub(crate) fn report_compiled<T>(
    file: &spec::SpecFile,
    result: Result<T, Vec<crate::diagnostic::Diagnostic>>,
    warnings: impl Fn(&T) -> &[crate::diagnostic::Diagnostic],
    stderr: &mut dyn Write,
) -> Option<T> {
    let (value, found) = match result {
        Ok(value) => {
            let found = warnings(&value).to_vec();
            (Some(value), found)
        }
        Err(found) => (None, found),
    };
    let _ = diagnostics::render(stderr, &file.path, Some(&file.source), &found);
    value
}

/// Loads and compiles, printing diagnostics; `None` when there were errors.
pub(crate) fn load_and_compile(
    args: &SpecArgs,
    resolve_secrets: bool,
    stderr: &mut dyn Write,
) -> Option<Compiled> {
    let file = load_reporting(&args.spec, stderr)?;
    let options = Options {
        target: args.target_version,
        resolve_secrets,
        ..Options::default()
    };
    report_compiled(
        &file,
        compile::compile(&file, &options),
        |compiled| &compiled.warnings,
        stderr,
    )
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
        serde_json::to_string_pretty(&crate::render::plan::redact_uris(&crate::export::document(
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
    let text = crate::export::to_json(&compiled.definitions, args.target_version);
    if output == Path::new("-") {
        return match stdout.write_all(text.as_bytes()) {
            Ok(()) => EXIT_OK,
            Err(_) => EXIT_ERROR,
        };
    }
    match crate::export::write_atomically(output, &text) {
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
