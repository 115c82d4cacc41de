//! `warren validate`, `warren compile` and `warren export`.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::diagnostics::{Effect, invalid, say_warnings};
use super::exit::Failure;
use super::inputs::{load_spec, read_spec};
use super::result::{CommandError, CommandResult, Success};
use super::streams::ErrorLog;
use crate::cli::{ExportFormat, SpecArgs};
use crate::compile::{self, Compiled, Options};
use crate::definitions_file;
use crate::k8s;
use crate::lint;
use crate::model::TargetVersion;
use crate::model::redact::redact_uris;
use crate::render;
use crate::spec::SpecFile;

/// Loads and compiles for `--target-version`, else the spec's `rabbitmq`
/// ([`SpecFile::target`]), printing the warnings: the spec read, what it compiled to
/// and the line it compiled for; or the error of a spec with errors.
fn load_and_compile(
    args: &SpecArgs,
    read_secrets: bool,
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) -> Result<(SpecFile, Compiled, TargetVersion), CommandError> {
    let file = load_spec(&args.spec, &args.env, effect)?;
    let target = file.target(args.target_version);
    let options = if read_secrets {
        Options::reading_secrets(&file, target)
    } else {
        Options {
            target,
            secrets: None,
        }
    };
    match compile::compile(&file, &options) {
        Ok(compiled) => {
            say_warnings(&file, &compiled.warnings, effect, stderr);
            Ok((file, compiled, target))
        }
        Err(found) => Err(invalid(&file, &found, effect)),
    }
}

/// The flags of `warren validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
}

/// The flags of `warren compile`.
#[derive(Debug, clap::Args)]
pub struct CompileArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Print the consumer contract (what consumers do on failure) instead.
    #[arg(long)]
    pub contract: bool,
}

/// The flags of `warren export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Where to write the file; `-` for standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// What to write: a RabbitMQ definitions file, or RabbitMQ Messaging Topology
    /// Operator resources for Kubernetes (docs/kubernetes.md).
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// With `--format k8s` (and required by it): the `RabbitmqCluster` the
    /// resources are for (`spec.rabbitmqClusterReference.name`).
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// With `--format k8s`: the resources' `metadata.namespace`.
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
}

/// `warren validate SPEC`: compiles, and passes the lint rules at the `deny` level.
pub fn validate(
    args: &ValidateArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    let args = &args.spec;
    let read = read_spec(&args.spec, &args.env);
    let validation = lint::validate_spec(&args.spec, read, args.target_version);
    let _ = render::diagnostics::render_with(
        stderr,
        &args.spec,
        &validation.texts,
        &validation.shown,
        Effect::Reads.ending(),
    );
    // The diagnostics just said are the output of a spec that is not valid.
    let objects = validation
        .objects
        .filter(|_| validation.is_valid())
        .ok_or_else(|| CommandError::already_shown(Failure::Error))?;
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
        validation.target
    );
    Ok(Success::Done)
}

/// `warren compile SPEC [--contract]`.
pub fn compile(
    args: &CompileArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    let CompileArgs {
        spec: args,
        contract,
    } = args;
    // The contract names queues and exchanges, never a password: it needs no secrets.
    let (_, compiled, target) = load_and_compile(args, !*contract, Effect::Reads, stderr)?;
    // On standard error, as `export -o -` does: the JSON goes to a pipe or a file, and
    // the reader still learns which broker it is for.
    let what = if *contract {
        "the consumer contract".to_string()
    } else {
        crate::text::count(compiled.definitions.object_count(), "object")
    };
    let _ = writeln!(
        stderr,
        "compiled {what} for RabbitMQ {target}; --target-version chooses another"
    );
    let written = if *contract {
        render::json_document(stdout, &compiled.contract)
    } else {
        // Printed output never shows URI credentials; `export` writes them for the broker.
        render::json_document(
            stdout,
            &redact_uris(&definitions_file::document(&compiled.definitions, target)),
        )
    };
    written.map_err(CommandError::unwritten)?;
    Ok(Success::Done)
}

/// `warren export SPEC -o FILE [--format json|k8s]`.
pub fn export(
    args: &ExportArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    match args.format {
        ExportFormat::Json => export_definitions(args, stdout, stderr),
        ExportFormat::K8s => export_k8s(args, stdout, stderr),
    }
}

/// `warren export SPEC -o FILE`: a definitions file, with the applications' secrets.
fn export_definitions(
    args: &ExportArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    if args.cluster.is_some() || args.namespace.is_some() {
        return Err(CommandError::error(
            "--cluster and --namespace are for `--format k8s` only; a definitions file names neither",
        ));
    }
    let output = &args.output;
    let args = &args.spec;
    let (_, compiled, target) = load_and_compile(args, true, Effect::Writes, stderr)?;
    let text = definitions_file::to_json(&compiled.definitions, target);
    let what = format!(
        "{}, for RabbitMQ {target}; --target-version chooses another",
        crate::text::count(compiled.definitions.object_count(), "object")
    );
    if output == Path::new("-") {
        // The file goes to standard output: the version it is for goes to standard
        // error, so a pipeline still learns which broker takes it.
        let _ = writeln!(stderr, "wrote definitions to standard output ({what})");
    }
    write_output(output, &text, &what, stdout, stderr)
}

/// `warren export SPEC --format k8s --cluster NAME`: reads no secrets (the resources
/// refer to Secrets instead), and writes nothing when the operator cannot express
/// some object.
fn export_k8s(
    args: &ExportArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    // No default: a guessed cluster name renders resources the operator never
    // reconciles, and only the person exporting knows the cluster's name.
    let cluster = args.cluster.clone().ok_or_else(|| {
        CommandError::error(
            "--format k8s needs --cluster NAME: the RabbitmqCluster the resources are for",
        )
    })?;
    let options = k8s::Options::new(cluster, args.namespace.clone())?;
    let output = &args.output;
    // The resources refer to Secrets: no secret is read.
    let (file, compiled, _) = load_and_compile(&args.spec, false, Effect::Writes, stderr)?;
    let manifests = k8s::manifests(&file.spec, &compiled.definitions, &options)
        .map_err(|refusals| CommandError::saying(render::k8s::refusals(&refusals)))?;
    let text =
        render::k8s::yaml(&manifests).map_err(|message| format!("cannot write YAML: {message}"))?;
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
) -> CommandResult {
    if output == Path::new("-") {
        stdout
            .write_all(text.as_bytes())
            .map_err(CommandError::unwritten)?;
    } else {
        definitions_file::write_atomically(output, text)
            .map_err(|err| format!("cannot write {}: {err}", output.display()))?;
        let _ = writeln!(stderr, "wrote {} ({what})", output.display());
    }
    Ok(Success::Done)
}
