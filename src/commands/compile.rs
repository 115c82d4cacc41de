//! `warren validate`, `warren compile` and `warren export`.

use std::io::Write;
use std::path::Path;

use super::{EXIT_ERROR, EXIT_OK, Effect, ErrorLog, load_spec, report};
use crate::cli::SpecArgs;
use crate::compile::{self, Compiled, Options};
use crate::definitions_file;
use crate::lint;
use crate::model::redact::redact_uris;
use crate::render;

/// Loads and compiles, printing diagnostics; `None` when there were errors.
fn load_and_compile(
    args: &SpecArgs,
    read_secrets: bool,
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) -> Option<Compiled> {
    let file = load_spec(&args.spec, &args.env, effect, stderr)?;
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
            report(&file, &compiled.warnings, effect, stderr);
            Some(compiled)
        }
        Err(found) => {
            report(&file, &found, effect, stderr);
            None
        }
    }
}

/// `warren validate SPEC`: compiles, and passes the lint rules at the `deny` level.
pub fn validate(args: &SpecArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> u8 {
    let validation = lint::validate_spec_file(
        &args.spec,
        super::chosen(&args.env).as_choice(),
        args.target_version,
    );
    let _ = render::diagnostics::render_with(
        stderr,
        &args.spec,
        &validation.texts,
        &validation.shown,
        Effect::Reads.ending(),
    );
    let Some(objects) = validation.objects.filter(|_| validation.is_valid()) else {
        return EXIT_ERROR;
    };
    let warnings = match validation.lint_warnings {
        0 => String::new(),
        n => format!(
            "; `warren lint {}` shows {}",
            args.spec.display(),
            crate::text::count(n, "warning")
        ),
    };
    let _ = writeln!(
        stdout,
        "{}: valid ({} for RabbitMQ {}){warnings}",
        args.spec.display(),
        crate::text::count(objects, "object"),
        args.target_version
    );
    EXIT_OK
}

/// `warren compile SPEC [--contract]`.
pub fn compile(
    args: &SpecArgs,
    contract: bool,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let Some(compiled) = load_and_compile(args, true, Effect::Reads, stderr) else {
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
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let Some(compiled) = load_and_compile(args, true, Effect::Writes, stderr) else {
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
                "wrote {} ({}, RabbitMQ {})",
                output.display(),
                crate::text::count(compiled.definitions.object_count(), "object"),
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
