//! `warren validate`, `warren compile` and `warren export`.

use std::io::Write;
use std::path::Path;

use super::{EXIT_ERROR, EXIT_OK, Effect, ErrorLog, load_spec, report};
use crate::cli::{ExportFormat, SpecArgs};
use crate::compile::{self, Compiled, Options};
use crate::definitions_file;
use crate::k8s;
use crate::lint;
use crate::model::redact::redact_uris;
use crate::render;
use crate::spec::SpecFile;

/// Loads and compiles, printing diagnostics: the spec read and what it compiled to;
/// `None` when there were errors.
fn load_and_compile(
    args: &SpecArgs,
    read_secrets: bool,
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) -> Option<(SpecFile, Compiled)> {
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
            Some((file, compiled))
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
    let Some((_, compiled)) = load_and_compile(args, true, Effect::Reads, stderr) else {
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

/// What `warren export` writes, with the flags only `--format k8s` takes.
#[derive(Debug, Clone)]
pub struct ExportTarget {
    /// `--format`.
    pub format: ExportFormat,
    /// `--cluster`.
    pub cluster: Option<String>,
    /// `--namespace`.
    pub namespace: Option<String>,
}

/// `warren export SPEC -o FILE [--format json|k8s]`.
pub fn export(
    args: &SpecArgs,
    output: &Path,
    target: &ExportTarget,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    if target.format == ExportFormat::K8s {
        return export_k8s(args, output, target, stdout, stderr);
    }
    if target.cluster.is_some() || target.namespace.is_some() {
        let _ = writeln!(
            stderr,
            "error: --cluster and --namespace are for `--format k8s` only; a definitions file names neither"
        );
        return EXIT_ERROR;
    }
    let Some((_, compiled)) = load_and_compile(args, true, Effect::Writes, stderr) else {
        return EXIT_ERROR;
    };
    let text = definitions_file::to_json(&compiled.definitions, args.target_version);
    let what = format!(
        "{}, RabbitMQ {}",
        crate::text::count(compiled.definitions.object_count(), "object"),
        args.target_version
    );
    write_output(output, &text, &what, stdout, stderr)
}

/// `warren export SPEC --format k8s --cluster NAME`: reads no secrets (the resources
/// refer to Secrets instead), and writes nothing when the operator cannot express
/// some object.
fn export_k8s(
    args: &SpecArgs,
    output: &Path,
    target: &ExportTarget,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    // No default: a guessed cluster name renders resources the operator never
    // reconciles, and only the person exporting knows the cluster's name.
    let Some(cluster) = target.cluster.clone() else {
        let _ = writeln!(
            stderr,
            "error: --format k8s needs --cluster NAME: the RabbitmqCluster the resources are for"
        );
        return EXIT_ERROR;
    };
    let options = match k8s::Options::new(cluster, target.namespace.clone()) {
        Ok(options) => options,
        Err(message) => {
            let _ = writeln!(stderr, "error: {message}");
            return EXIT_ERROR;
        }
    };
    // The resources refer to Secrets: no secret is read.
    let Some((file, compiled)) = load_and_compile(args, false, Effect::Writes, stderr) else {
        return EXIT_ERROR;
    };
    let manifests = match k8s::manifests(&file.spec, &compiled.definitions, &options) {
        Ok(manifests) => manifests,
        Err(refusals) => {
            let _ = write!(stderr, "{}", render::k8s::refusals(&refusals));
            return EXIT_ERROR;
        }
    };
    let text = match render::k8s::yaml(&manifests) {
        Ok(text) => text,
        Err(message) => {
            let _ = writeln!(stderr, "error: cannot write YAML: {message}");
            return EXIT_ERROR;
        }
    };
    let _ = write!(stderr, "{}", render::k8s::summary(&manifests));
    let what = format!(
        "{} for RabbitmqCluster {}",
        crate::text::count(manifests.resources.len(), "resource"),
        options.cluster
    );
    write_output(output, &text, &what, stdout, stderr)
}

/// Writes `text` to `output` (`-`: standard output), saying `what` was written.
fn write_output(
    output: &Path,
    text: &str,
    what: &str,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    if output == Path::new("-") {
        return match stdout.write_all(text.as_bytes()) {
            Ok(()) => EXIT_OK,
            Err(_) => EXIT_ERROR,
        };
    }
    match definitions_file::write_atomically(output, text) {
        Ok(()) => {
            let _ = writeln!(stderr, "wrote {} ({what})", output.display());
            EXIT_OK
        }
        Err(err) => {
            let _ = writeln!(stderr, "error: cannot write {}: {err}", output.display());
            EXIT_ERROR
        }
    }
}
