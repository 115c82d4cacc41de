//! `warren lint` and `warren rules`.

use std::io::Write;
use std::path::PathBuf;

use super::exit::Failure;
use super::inputs::{read_definitions, read_spec, read_spec_in_every_environment};
use super::result::{CommandError, CommandResult, Success};
use super::streams::ErrorLog;
use crate::cli::{Deny, EnvArg, FindingsFormat, parse_target};
use crate::lint::{self, RULES};
use crate::model::version::TargetVersion;
use crate::render;
use crate::spec::Texts;

/// The flags of `warren lint`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// The spec: a YAML file, or a directory of YAML files read as one spec.
    #[arg(value_name = "SPEC", required_unless_present = "definitions")]
    pub spec: Option<PathBuf>,
    #[command(flatten)]
    pub env: EnvArg,
    /// Lint the spec in every environment it declares (a pull request changes
    /// them all); a finding is reported once, with the environments it is in.
    #[arg(long, conflicts_with_all = ["env", "definitions"])]
    pub all_envs: bool,
    /// Lint a RabbitMQ definitions file (e.g. a broker's export) instead of a spec.
    #[arg(long, value_name = "FILE", conflicts_with = "spec")]
    pub definitions: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = FindingsFormat::parser(FORMATS), default_value = "human")]
    pub format: FindingsFormat,
    /// `--deny warnings` makes warnings fail the run too.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub deny: Vec<Deny>,
    /// RabbitMQ version the topology runs on (default: 4.1, or the definitions file's).
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", hide_env_values = true, value_parser = parse_target)]
    pub target_version: Option<TargetVersion>,
    /// The vhost of a vhost-scoped definitions file (the format of
    /// `GET /api/definitions/{vhost}`, whose objects carry no `vhost`).
    #[arg(long, value_name = "VHOST", requires = "definitions")]
    pub vhost: Option<String>,
}

/// The formats `warren lint` writes, as its `--help` describes them.
const FORMATS: &[(FindingsFormat, &str)] = &[
    (
        FindingsFormat::Text,
        "For people: messages with the source line (like rustc)",
    ),
    (
        FindingsFormat::Github,
        "GitHub Actions workflow commands (annotations on the pull request)",
    ),
    (FindingsFormat::Sarif, "SARIF 2.1.0, for code-scanning UIs"),
    (FindingsFormat::Json, "Stable JSON"),
];

/// The flags of `warren rules`.
#[derive(Debug, clap::Args)]
pub struct RulesArgs {
    /// A rule id, e.g. `dead-letter-cycle-dropped`.
    #[arg(value_name = "ID")]
    pub id: Option<String>,
}

/// `warren lint SPEC | --definitions FILE`.
pub fn lint(args: &LintArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> CommandResult {
    let target = args.target_version;
    let (file, texts, diagnostics) = match (&args.spec, &args.definitions) {
        (Some(path), _) => {
            let (texts, diagnostics) = if args.all_envs {
                match read_spec_in_every_environment(path) {
                    Ok(environments) => {
                        lint::lint_spec_in_every_environment(path, environments, target)
                    }
                    Err(found) => lint::lint_spec(path, Err(found.into()), target),
                }
            } else {
                lint::lint_spec(path, read_spec(path, &args.env), target)
            };
            (path, texts, diagnostics)
        }
        (None, Some(path)) => {
            let read = read_definitions(path, args.vhost.as_deref(), target, stderr)?;
            (
                path,
                Texts::default(),
                lint::lint_definitions(&read.definitions, read.target.target),
            )
        }
        (None, None) => {
            return Err(CommandError::error(
                "give a spec file or --definitions FILE",
            ));
        }
    };
    let file = file.as_path();
    let written = match args.format {
        FindingsFormat::Text => render::lint::human(stdout, file, &texts, &diagnostics),
        FindingsFormat::Github => {
            render::github::annotations(stdout, &render::lint::reporter(file), &diagnostics)
        }
        FindingsFormat::Json => {
            render::json_document(stdout, &render::lint::json_document(file, &diagnostics))
        }
        FindingsFormat::Sarif => render::json_document(
            stdout,
            &render::sarif::document(&render::lint::reporter(file), RULES, &diagnostics),
        ),
        // Not among lint's formats (`FORMATS`): the parser refuses it.
        FindingsFormat::Markdown => unreachable!("lint writes no markdown"),
    };
    written.map_err(CommandError::unwritten)?;
    let deny_warnings = !args.deny.is_empty();
    match diagnostics.iter().any(|d| d.is_error() || deny_warnings) {
        // The report is the output: it says what failed.
        true => Err(CommandError::already_shown(Failure::Error)),
        false => Ok(Success::Done),
    }
}

/// `warren rules [ID]`. A failed write (a closed pipe) does not fail it: the listing is
/// all it does.
pub fn rules(args: &RulesArgs, stdout: &mut dyn Write) -> CommandResult {
    match args.id.as_deref() {
        None => {
            let _ = render::lint::rules(stdout);
            Ok(Success::Done)
        }
        Some(id) => match lint::rule(id) {
            Some(rule) => {
                let _ = render::lint::rule(stdout, rule);
                Ok(Success::Done)
            }
            None => {
                let ids: Vec<String> = RULES.iter().map(|r| r.id.to_string()).collect();
                let hint = crate::suggest::closest(id, &ids)
                    .map(|best| format!("; did you mean `{best}`?"))
                    .unwrap_or_default();
                Err(CommandError::error(format!("no lint rule `{id}`{hint}")))
            }
        },
    }
}
