//! The clap types several commands share: how to reach the broker, the environment,
//! the plan options, the output formats and the parsers of versions and waits. Each
//! command's own flags are its `Args` struct, next to it in `commands/`, and
//! `commands/mod.rs` gathers them into the command line (`Cli`, `Command`): `cli`
//! sits below `commands`, so it cannot name the commands' own structs.

use std::path::PathBuf;

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

/// How to reach the broker.
#[derive(Debug, clap::Args)]
pub struct BrokerArgs {
    /// Management API URL; repeat (or separate with commas) for the nodes of a cluster,
    /// tried in order. `http://user:password@host:15672` works too. Default:
    /// http://localhost:15672.
    // Every variable that may carry credentials hides its value in `--help`. The
    // default is applied by `broker::Endpoint`, not here, so that an error reaching it
    // can say that no URL was given.
    #[arg(
        long = "url",
        value_name = "URL",
        env = "WARREN_URL",
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub urls: Vec<String>,
    /// User name (default: from the URL, else `RABBITMQ_DEFAULT_USER`, else `guest`).
    #[arg(long, value_name = "USER", env = "WARREN_USER", hide_env_values = true)]
    pub user: Option<String>,
    /// Password (default: from the URL, else `RABBITMQ_DEFAULT_PASS`, else `guest`).
    #[arg(
        long,
        value_name = "PASSWORD",
        env = "WARREN_PASSWORD",
        hide_env_values = true
    )]
    pub password: Option<String>,
    /// AMQP URL of the broker (`amqp://host:5672`) for the checks that a queue is
    /// empty at the moment warren deletes it; credentials are those of --user.
    /// Default: the AMQP listener the broker reports, on the host of --url.
    #[arg(
        long,
        value_name = "URL",
        env = "WARREN_AMQP_URL",
        hide_env_values = true
    )]
    pub amqp_url: Option<String>,
    /// PEM file of a CA to trust for HTTPS, in addition to the system's.
    #[arg(long, value_name = "FILE", env = "WARREN_CA_CERT")]
    pub ca_cert: Option<PathBuf>,
    /// Seconds to wait for one request to the broker, retries and failover to other
    /// `--url`s included.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
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

/// Lint output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormat {
    /// For people: messages with the source line (like rustc).
    Human,
    /// GitHub Actions workflow commands (annotations on the pull request).
    Github,
    /// SARIF 2.1.0, for code-scanning UIs.
    Sarif,
    /// Stable JSON.
    Json,
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

/// Output formats of `warren trace` and `warren replay`.
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
    /// RabbitMQ version the output must be valid for.
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", hide_env_values = true, default_value_t = TargetVersion::DEFAULT, value_parser = parse_target)]
    pub target_version: TargetVersion,
}

pub(crate) fn parse_target(text: &str) -> Result<TargetVersion, String> {
    text.parse()
}

/// A wait such as `30s` or `5m`.
pub(crate) fn parse_wait(text: &str) -> Result<std::time::Duration, String> {
    crate::spec::duration::Duration::parse(text)
        .map(|d| std::time::Duration::from_millis(d.as_millis()))
}
