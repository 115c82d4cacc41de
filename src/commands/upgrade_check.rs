//! `warren upgrade-check`: what breaks, changes meaning or needs doing first when a
//! cluster moves to another RabbitMQ line (docs/upgrading.md).

use std::io::Write;
use std::path::PathBuf;

use super::diagnostics::Effect;
use super::exit::Failure;
use super::inputs::{client, load_spec};
use super::result::{CommandError, CommandResult, Success};
use super::runtime::runtime;
use crate::cli::{BrokerArgs, Deny, EnvArg, FindingsFormat, parse_target};
use crate::model::finding::Severity;
use crate::model::version::TargetVersion;
use crate::render;
use crate::upgrade::{self, CHECKS, Report, Running};

/// The formats `warren upgrade-check` writes (those of `lint`, and markdown), as its
/// `--help` describes them.
const FORMATS: &[(FindingsFormat, &str)] = &[
    (FindingsFormat::Text, "For people"),
    (
        FindingsFormat::Github,
        "GitHub Actions workflow commands (annotations on the pull request)",
    ),
    (FindingsFormat::Sarif, "SARIF 2.1.0, for code-scanning UIs"),
    (FindingsFormat::Json, "Stable JSON (docs/upgrading.md)"),
    (
        FindingsFormat::Markdown,
        "GitHub-flavored markdown for a pull-request comment",
    ),
];

/// The flags of `warren upgrade-check`.
#[derive(Debug, clap::Args)]
// These commands delete nothing, so the AMQP URL of the deletion checks and locks
// means nothing to them: accepted (a profile or `WARREN_AMQP_URL` may set it), not
// shown in `--help`.
#[command(mut_arg("amqp_url", |arg| arg.hide(true)))]
pub struct UpgradeCheckArgs {
    /// A spec to check (a YAML file or a directory), compiled for --from and for --to.
    /// Without it, the broker of --url is checked, or --definitions FILE.
    #[arg(value_name = "SPEC", conflicts_with = "definitions")]
    pub spec: Option<PathBuf>,
    #[command(flatten)]
    pub env: EnvArg,
    /// A RabbitMQ definitions file (a broker's export) to check instead of a broker.
    #[arg(long, value_name = "FILE")]
    pub definitions: Option<PathBuf>,
    /// The vhost of a vhost-scoped definitions file (the format of
    /// `GET /api/definitions/{vhost}`).
    #[arg(long, value_name = "VHOST", requires = "definitions")]
    pub vhost: Option<String>,
    /// The RabbitMQ line to upgrade to, e.g. 4.3.
    #[arg(long, value_name = "VERSION", value_parser = parse_target)]
    pub to: TargetVersion,
    /// The RabbitMQ version the cluster runs now, e.g. 3.13 or 3.13.7. Needed with a
    /// spec (a spec does not say which broker runs it); for a definitions file, the
    /// default is the file's `rabbitmq_version`; a broker says its own.
    #[arg(long, value_name = "VERSION")]
    pub from: Option<String>,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Output format.
    #[arg(long, value_parser = FindingsFormat::parser(FORMATS), default_value = "human")]
    pub format: FindingsFormat,
    /// `--deny warnings` makes warnings fail the run too.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub deny: Vec<Deny>,
}

/// `warren upgrade-check [SPEC | --definitions FILE | --url URL] --to VERSION`.
pub fn upgrade_check(args: &UpgradeCheckArgs, stdout: &mut dyn Write) -> CommandResult {
    let from = (args.from.as_deref().map(Running::asked).transpose())
        .map_err(|message| format!("--from: {message}"))?;
    let given = &args.broker.given;
    let names_a_broker = given.urls.is_some()
        || given
            .profile
            .as_ref()
            .is_some_and(|profile| profile.origin == crate::config::Origin::Flag);
    if (args.spec.is_some() || args.definitions.is_some()) && names_a_broker {
        return Err(CommandError::error(
            "give one input: a spec, --definitions FILE, or a broker (--url or --profile)",
        ));
    }
    let report = match (&args.spec, &args.definitions) {
        (Some(path), _) => {
            let from = from.ok_or_else(|| {
                CommandError::error(
                    "a spec does not say which RabbitMQ runs it: give the version the cluster runs now with --from (e.g. --from 3.13)",
                )
            })?;
            let file = load_spec(path, &args.env, Effect::Reads)?;
            upgrade::of_spec(&file, from, args.to)
        }
        (None, Some(path)) => {
            upgrade::of_definitions_file(path, args.vhost.as_deref(), from, args.to)?
        }
        (None, None) => {
            if from.is_some() {
                return Err(CommandError::error(
                    "--from is for a spec or a definitions file: a broker says its own version",
                ));
            }
            let client = client(&args.broker)?;
            runtime().block_on(upgrade::against_broker(&client, args.to))?
        }
    };
    print(args.format, &report, stdout).map_err(CommandError::unwritten)?;
    ending(&report, !args.deny.is_empty())
}

fn print(format: FindingsFormat, report: &Report, stdout: &mut dyn Write) -> std::io::Result<()> {
    match format {
        FindingsFormat::Text => render::upgrade::human(stdout, report),
        FindingsFormat::Github => render::github::annotations(
            stdout,
            &render::upgrade::reporter(report),
            &report.findings,
        ),
        FindingsFormat::Json => {
            render::json_document(stdout, &render::upgrade::json_document(report))
        }
        FindingsFormat::Sarif => render::json_document(
            stdout,
            &render::sarif::document(&render::upgrade::reporter(report), CHECKS, &report.findings),
        ),
        FindingsFormat::Markdown => render::upgrade::markdown(stdout, report),
    }
}

/// A failure (exit 1, the report says why) when the report has errors (or warnings,
/// with `--deny warnings`).
fn ending(report: &Report, deny_warnings: bool) -> CommandResult {
    let failing =
        report.count(Severity::Error) > 0 || (deny_warnings && report.count(Severity::Warning) > 0);
    match failing {
        true => Err(CommandError::already_shown(Failure::Error)),
        false => Ok(Success::Done),
    }
}
