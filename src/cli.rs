//! The clap types several commands share: how to reach the broker, the environment,
//! the plan options, the output formats and the parsers of versions and waits. Each
//! command's own flags are its `Args` struct, next to it in `commands/`, and
//! `commands/mod.rs` gathers them into the command line (`Cli`, `Command`): `cli`
//! sits below `commands`, so it cannot name the commands' own structs.

use std::path::PathBuf;

use crate::config::{Given, Input, Origin, Stated};
use crate::model::version::TargetVersion;

/// When text output has colors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set; also on a pipe with `CLICOLOR_FORCE`.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// How to reach the broker: what the flags and `WARREN_*` variables said, each with
/// where it came from, for [`crate::config::resolve`] to weigh against the profile.
/// Built from clap's matches by hand (`FromArgMatches` below), since the derived
/// struct alone cannot tell a flag from its variable.
#[derive(Debug, Clone, Default)]
pub struct BrokerArgs {
    /// The flags and variables given.
    pub given: Given,
}

/// The connection flags as clap reads them.
#[derive(Debug, clap::Args)]
struct BrokerFlags {
    /// Management API URL; repeat (or separate with commas) for the nodes of a cluster,
    /// tried in order. `http://user:password@host:15672` works too. Default: the
    /// profile's `url`, else http://localhost:15672.
    // Every variable that may carry credentials hides its value in `--help`. The
    // default is applied by `config::resolve`, not here, so that an error reaching it
    // can say that no URL was given.
    #[arg(
        long = "url",
        value_name = "URL",
        env = Input::Url.variable(),
        hide_env_values = true,
        value_delimiter = ','
    )]
    urls: Vec<String>,
    /// User name (default: the profile's, else from the URL, else
    /// `RABBITMQ_DEFAULT_USER`, else `guest`).
    #[arg(long, value_name = "USER", env = Input::User.variable(), hide_env_values = true)]
    user: Option<String>,
    /// Password (default: the profile's, else from the URL, else
    /// `RABBITMQ_DEFAULT_PASS`, else `guest`).
    #[arg(
        long,
        value_name = "PASSWORD",
        env = Input::Password.variable(),
        hide_env_values = true
    )]
    password: Option<String>,
    /// AMQP URL of the broker (`amqp://host:5672`) for what the management API cannot
    /// do: the apply's locks, the checks that a queue is empty at the moment warren
    /// deletes it, replays, `status --inspect`; credentials are those of --user.
    /// Default: the profile's `amqp_url`, else the AMQP listener the broker reports, on
    /// the host of --url.
    #[arg(
        long,
        value_name = "URL",
        env = Input::AmqpUrl.variable(),
        hide_env_values = true
    )]
    amqp_url: Option<String>,
    /// PEM file of a CA to trust for HTTPS, in addition to the system's.
    #[arg(long, value_name = "FILE", env = Input::CaCert.variable(), hide_env_values = true)]
    ca_cert: Option<PathBuf>,
    /// Seconds to wait for one request to the broker, retries and failover to other
    /// `--url`s included (default: the profile's `timeout`, else 60).
    #[arg(long, value_name = "SECONDS", env = Input::Timeout.variable(), hide_env_values = true)]
    timeout: Option<u64>,
    /// The broker profile of the config file to use (docs/profiles.md; default: the
    /// profile named `default`, if the file has one). Flags and variables win over it.
    #[arg(long, value_name = "NAME", env = Input::Profile.variable(), hide_env_values = true)]
    profile: Option<String>,
    /// The config file of broker profiles (default:
    /// `$XDG_CONFIG_HOME/warren/config.toml`, else `~/.config/warren/config.toml`).
    #[arg(long, value_name = "FILE", env = Input::Config.variable(), hide_env_values = true)]
    config: Option<PathBuf>,
}

/// The clap ids of the inputs: the fields of [`BrokerFlags`].
const IDS: [(Input, &str); 8] = [
    (Input::Url, "urls"),
    (Input::User, "user"),
    (Input::Password, "password"),
    (Input::AmqpUrl, "amqp_url"),
    (Input::CaCert, "ca_cert"),
    (Input::Timeout, "timeout"),
    (Input::Profile, "profile"),
    (Input::Config, "config"),
];

impl BrokerArgs {
    /// The flags read, with where each came from (`None`: neither given).
    fn of(flags: BrokerFlags, matches: &clap::ArgMatches) -> BrokerArgs {
        let origin = |input: Input| {
            let id = IDS.iter().find(|(i, _)| *i == input).map(|(_, id)| *id)?;
            match matches.value_source(id)? {
                clap::parser::ValueSource::CommandLine => Some(Origin::Flag),
                clap::parser::ValueSource::EnvVariable => Some(Origin::Variable),
                _ => None,
            }
        };
        fn stated<T>(value: Option<T>, origin: Option<Origin>) -> Option<Stated<T>> {
            Some(Stated {
                value: value?,
                origin: origin?,
            })
        }
        let urls = (!flags.urls.is_empty()).then(|| crate::config::url_list(flags.urls));
        BrokerArgs {
            given: Given {
                urls: stated(urls, origin(Input::Url)),
                user: stated(flags.user, origin(Input::User)),
                password: stated(flags.password, origin(Input::Password)),
                amqp_url: stated(flags.amqp_url, origin(Input::AmqpUrl)),
                ca_cert: stated(flags.ca_cert, origin(Input::CaCert)),
                timeout: stated(flags.timeout, origin(Input::Timeout)),
                profile: stated(flags.profile, origin(Input::Profile)),
                config: stated(flags.config, origin(Input::Config)),
            },
        }
    }
}

impl clap::FromArgMatches for BrokerArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let flags = <BrokerFlags as clap::FromArgMatches>::from_arg_matches(matches)?;
        Ok(BrokerArgs::of(flags, matches))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = BrokerArgs::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for BrokerArgs {
    fn augment_args(command: clap::Command) -> clap::Command {
        BrokerFlags::augment_args(command)
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        BrokerFlags::augment_args_for_update(command)
    }
}

/// The environment a spec is read for: every command that reads a spec takes it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EnvArg {
    /// The environment to read the spec for, when it declares `environments`
    /// (docs/environments.md); a spec that declares them needs one. Default:
    /// `WARREN_ENV`, which a spec without environments ignores.
    #[arg(long = "env", value_name = "NAME")]
    pub env: Option<String>,
}

/// Options shared by plan, apply and diff.
#[derive(Debug, clap::Args)]
pub struct PlanOptions {
    #[command(flatten)]
    pub env: EnvArg,
    /// RabbitMQ version to compile for (default: the broker's own version; for `diff`,
    /// the `rabbitmq_version` of the definitions file, else 4.3).
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", hide_env_values = true, value_parser = parse_target)]
    pub target_version: Option<TargetVersion>,
    /// Also delete objects in the spec's vhosts that no spec manages.
    #[arg(long)]
    pub prune_unmanaged: bool,
    /// Output format of the plan.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// What `warren export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// A RabbitMQ definitions file (JSON), for a broker to load at boot or import.
    Json,
    /// RabbitMQ Messaging Topology Operator resources (YAML, one document each).
    K8s,
}

/// Output formats of a report of findings: `warren lint` and `warren upgrade-check`.
/// Each command takes the formats it writes, with its own words for them in `--help`
/// ([`FindingsFormat::parser`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingsFormat {
    /// Text for people. Written `human` (`text`, the word the other commands use for
    /// it, is taken too).
    Text,
    /// GitHub Actions workflow commands (annotations on the pull request).
    Github,
    /// SARIF 2.1.0, for code-scanning UIs.
    Sarif,
    /// Stable JSON.
    Json,
    /// GitHub-flavored markdown for a pull-request comment.
    Markdown,
}

impl FindingsFormat {
    /// The name `--format` takes and `--help` shows.
    pub fn name(self) -> &'static str {
        match self {
            FindingsFormat::Text => "human",
            FindingsFormat::Github => "github",
            FindingsFormat::Sarif => "sarif",
            FindingsFormat::Json => "json",
            FindingsFormat::Markdown => "markdown",
        }
    }

    /// The names it is also taken by.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            FindingsFormat::Text => &["text"],
            _ => &[],
        }
    }

    /// The parser of a command's `--format`: the formats it writes, in the order its
    /// `--help` lists them, each with what its `--help` says of it.
    pub fn parser(
        formats: &'static [(FindingsFormat, &'static str)],
    ) -> impl clap::builder::TypedValueParser<Value = FindingsFormat> {
        use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
        let values = formats.iter().map(|&(format, help)| {
            PossibleValue::new(format.name())
                .help(help)
                .aliases(format.aliases().iter().copied())
        });
        PossibleValuesParser::new(values).map(move |given: String| {
            formats
                .iter()
                .map(|&(format, _)| format)
                .find(|format| format.name() == given || format.aliases().contains(&given.as_str()))
                .expect("the parser takes only these formats")
        })
    }
}

/// What `--deny` can make fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Deny {
    /// Warnings fail the run.
    Warnings,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people (colored as --color says).
    Text,
    /// Stable JSON (docs/plan-format.md); password hashes redacted.
    Json,
    /// GitHub-flavored markdown for a pull request comment (docs/plan-format.md).
    Markdown,
}

/// `warren graph` output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    /// A Mermaid flowchart (GitHub renders it in markdown).
    Mermaid,
    /// Graphviz DOT.
    Dot,
}

/// `warren status` output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFormat {
    /// A table per vhost, for people.
    Text,
    /// One JSON document (`format`: `warren-status/1`).
    Json,
    /// Prometheus text exposition format, for node_exporter's textfile collector.
    Prometheus,
}

/// Output formats of `warren trace`, `warren replay` and `warren config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Text for people.
    Text,
    /// One JSON document.
    Json,
}

/// Arguments shared by the commands that read a spec.
#[derive(Debug, clap::Args)]
pub struct SpecArgs {
    /// The spec: a YAML file, or a directory of YAML files read as one spec.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    #[command(flatten)]
    pub env: EnvArg,
    /// RabbitMQ version the output must be valid for (default: the spec's `rabbitmq`,
    /// else 4.3).
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", hide_env_values = true, value_parser = parse_target)]
    pub target_version: Option<TargetVersion>,
}

pub(crate) fn parse_target(text: &str) -> Result<TargetVersion, String> {
    text.parse()
}

/// A wait such as `30s` or `5m`.
pub(crate) fn parse_wait(text: &str) -> Result<std::time::Duration, String> {
    crate::spec::duration::Duration::parse(text)
        .map(|d| std::time::Duration::from_millis(d.as_millis()))
}
