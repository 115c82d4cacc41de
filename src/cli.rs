//! Command-line interface: clap types only; each command lives in `commands/`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::model::version::TargetVersion;

/// RabbitMQ topology as code: compile a short YAML spec (services, consumers, retry
/// ladders, users) into broker definitions and policies.
#[derive(Debug, Parser)]
#[command(name = "warren", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// Colors in text output: `auto` colors a terminal unless `NO_COLOR` is set
    /// (`CLICOLOR_FORCE` colors a pipe too).
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto, global = true)]
    pub color: ColorWhen,
}

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

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a spec: exit 0 when it compiles and passes the lint rules at the `deny` level,
    /// 1 otherwise. Needs no secrets. `warren lint` also shows the warnings.
    Validate(SpecArgs),
    /// Print the definitions a spec compiles to (JSON), or its consumer contract.
    Compile {
        #[command(flatten)]
        spec: SpecArgs,
        /// Print the consumer contract (what consumers do on failure) instead.
        #[arg(long)]
        contract: bool,
    },
    /// Write a definitions file for a broker to load at boot or import.
    Export {
        #[command(flatten)]
        spec: SpecArgs,
        /// Where to write the file; `-` for standard output.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// What to write: a RabbitMQ definitions file, or RabbitMQ Messaging Topology
        /// Operator resources for Kubernetes (docs/kubernetes.md).
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// With `--format k8s` (and required by it): the `RabbitmqCluster` the
        /// resources are for (`spec.rabbitmqClusterReference.name`).
        #[arg(long, value_name = "NAME")]
        cluster: Option<String>,
        /// With `--format k8s`: the resources' `metadata.namespace`.
        #[arg(long, value_name = "NS")]
        namespace: Option<String>,
    },
    /// Print the JSON Schema of the spec format.
    Schema,
    /// Show what applying a spec would change on a broker; exit 0 on success (with
    /// --detailed-exitcode: 0 = no changes, 2 = changes), other codes on errors
    /// (docs/exit-codes.md).
    Plan {
        /// The spec: a YAML file, or a directory of YAML files read as one spec.
        #[arg(value_name = "SPEC")]
        spec: PathBuf,
        #[command(flatten)]
        broker: BrokerArgs,
        #[command(flatten)]
        plan: PlanArgs,
        /// Save the plan to this file, for `warren apply FILE`.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Exit 2 when the plan has changes, 0 when it has none (Terraform's convention).
        #[arg(long)]
        detailed_exitcode: bool,
    },
    /// Apply a saved plan, or plan a spec, show it, ask, and apply it.
    Apply {
        /// A plan file from `warren plan -o`, or a spec (a file or a directory).
        #[arg(value_name = "PLAN_OR_SPEC")]
        target: PathBuf,
        #[command(flatten)]
        broker: BrokerArgs,
        #[command(flatten)]
        plan: PlanArgs,
        /// Apply without asking (required when there is no terminal to ask on).
        #[arg(long)]
        auto_approve: bool,
        /// Accept deleting or replacing queues that hold messages.
        #[arg(long)]
        allow_data_loss: bool,
        /// Replace queues blue/green: move their messages to a temporary queue and
        /// back while applications keep publishing (needs the `rabbitmq_shovel`
        /// plugin); also finishes a migration a stopped apply left under way.
        #[arg(long)]
        migrate: bool,
        /// How long to wait for locks held by other applies (e.g. `5m`); by default
        /// an apply that finds its spec or a vhost locked stops at once.
        #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_wait)]
        lock_timeout: std::time::Duration,
    },
    /// Check a spec (or a definitions file) for topologies that lose, duplicate or
    /// hot-loop messages; exit 1 on errors (and on warnings with `--deny warnings`).
    Lint {
        /// The spec: a YAML file, or a directory of YAML files read as one spec.
        #[arg(value_name = "SPEC", required_unless_present = "definitions")]
        spec: Option<PathBuf>,
        #[command(flatten)]
        env: EnvArg,
        /// Lint the spec in every environment it declares (a pull request changes
        /// them all); a finding is reported once, with the environments it is in.
        #[arg(long, conflicts_with_all = ["env", "definitions"])]
        all_envs: bool,
        /// Lint a RabbitMQ definitions file (e.g. a broker's export) instead of a spec.
        #[arg(long, value_name = "FILE", conflicts_with = "spec")]
        definitions: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = LintFormat::Human)]
        format: LintFormat,
        /// `--deny warnings` makes warnings fail the run too.
        #[arg(long, value_enum, value_name = "WHAT")]
        deny: Vec<Deny>,
        /// RabbitMQ version the topology runs on (default: 4.1, or the definitions file's).
        #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", value_parser = parse_target)]
        target_version: Option<TargetVersion>,
        /// The vhost of a vhost-scoped definitions file (the format of
        /// `GET /api/definitions/{vhost}`, whose objects carry no `vhost`).
        #[arg(long, value_name = "VHOST", requires = "definitions")]
        vhost: Option<String>,
    },
    /// Write a spec from a live broker (or a definitions file), to adopt an existing
    /// broker: applying it to the same broker plans no changes.
    Import {
        /// Read this definitions file instead of a broker.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
        #[command(flatten)]
        broker: BrokerArgs,
        /// Import only these vhosts (repeatable; default: all). A vhost-scoped file
        /// (the format of `GET /api/definitions/{vhost}`) takes one: its vhost.
        #[arg(long = "vhost", value_name = "VHOST")]
        vhosts: Vec<String>,
        /// The spec's name (its ownership record on the broker). Objects that other
        /// specs manage are left out; naming one of them imports its objects, to take
        /// that spec over.
        #[arg(long, value_name = "NAME", default_value = "imported")]
        name: String,
        /// RabbitMQ version the imported spec is checked for (default: the version
        /// that wrote the file, or the broker's).
        #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", value_parser = parse_target)]
        target_version: Option<TargetVersion>,
        /// Where to write the spec; `-` for standard output.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// List the lint rules, or explain one with a bad and a good example.
    Rules {
        /// A rule id, e.g. `dead-letter-cycle-dropped`.
        #[arg(value_name = "ID")]
        id: Option<String>,
    },
    /// Break the locks of an apply that is stuck (as Terraform's `force-unlock`): the
    /// broker closes its connection, which frees every lock it held. Only when --holder
    /// names the holder the lock error printed. A dead apply's locks are already free.
    Unlock {
        /// The spec, a file or a directory (its `name` names the spec whose lock is broken).
        #[arg(value_name = "SPEC")]
        spec: PathBuf,
        #[command(flatten)]
        env: EnvArg,
        #[command(flatten)]
        broker: BrokerArgs,
        /// The lock's holder, as printed by the refused `apply`.
        #[arg(long, value_name = "HOLDER")]
        holder: String,
    },
    /// Show or repair a spec's ownership record (the list of objects it manages).
    State {
        #[command(subcommand)]
        action: StateAction,
    },
    /// Show the plan of a spec against a definitions file instead of a live broker.
    Diff {
        /// The spec: a YAML file, or a directory of YAML files read as one spec.
        #[arg(value_name = "SPEC")]
        spec: PathBuf,
        /// A definitions file (e.g. a broker's export).
        #[arg(long, value_name = "FILE")]
        against: PathBuf,
        /// The vhost of a vhost-scoped definitions file (the format of
        /// `GET /api/definitions/{vhost}`, whose objects carry no `vhost`).
        #[arg(long, value_name = "VHOST")]
        vhost: Option<String>,
        #[command(flatten)]
        plan: PlanArgs,
        /// Exit 2 when the plan has changes, 0 when it has none (Terraform's convention).
        #[arg(long)]
        detailed_exitcode: bool,
    },
    /// Draw the topology a spec builds: exchanges, queues, bindings with their routing
    /// keys, dead-letter routes with their delays, parking queues; grouped by vhost and
    /// service. Mermaid (for pull requests and docs) or Graphviz DOT (`dot -Tsvg`).
    Graph {
        #[command(flatten)]
        spec: SpecArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
        format: GraphFormat,
        /// Draw only this vhost.
        #[arg(long, value_name = "VHOST")]
        vhost: Option<String>,
        /// Draw only this service, with the exchanges and queues it connects to.
        #[arg(long, value_name = "SERVICE")]
        service: Option<String>,
    },
    /// Report each consumer of a spec on the live broker: its work queue (messages,
    /// consumers, rates), each retry tier's waiting messages, the parking queue and the
    /// age of its oldest message, and what is wrong (docs/operating.md). Exit 0 when it
    /// reports, problems included; 1 on a bad spec or flag; 3 when the broker is
    /// unreachable.
    Status {
        /// The spec: a YAML file, or a directory of YAML files read as one spec.
        #[arg(value_name = "SPEC")]
        spec: PathBuf,
        #[command(flatten)]
        env: EnvArg,
        #[command(flatten)]
        broker: BrokerArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = StatusFormat::Text)]
        format: StatusFormat,
        /// Report only this vhost.
        #[arg(long, value_name = "VHOST")]
        vhost: Option<String>,
        /// Report only this service.
        #[arg(long, value_name = "SERVICE")]
        service: Option<String>,
        /// RabbitMQ version to compile the spec for (default: the broker's own version).
        #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", value_parser = parse_target)]
        target_version: Option<TargetVersion>,
    },
    /// Follow one message offline, step by step: the queues that get a copy, and for
    /// each consumer that fails it `--fail` times, every retry tier, wait and return,
    /// then parking or drop (docs/trace.md).
    Trace {
        /// The spec: a YAML file, or a directory of YAML files read as one spec.
        #[arg(value_name = "SPEC")]
        spec: PathBuf,
        #[command(flatten)]
        env: EnvArg,
        /// The exchange to publish to (`""` for the default exchange).
        #[arg(long, value_name = "EXCHANGE")]
        exchange: String,
        /// The message's routing key.
        #[arg(long, value_name = "KEY", default_value = "")]
        routing_key: String,
        /// A message header `name=value` (repeatable; values are strings).
        #[arg(long = "headers", value_name = "NAME=VALUE", num_args = 1..)]
        headers: Vec<String>,
        /// The vhost (needed when the spec has several).
        #[arg(long, value_name = "VHOST")]
        vhost: Option<String>,
        /// How many deliveries each consumer fails before it succeeds.
        #[arg(long = "fail", value_name = "N", default_value_t = 0)]
        failures: usize,
        /// Output format.
        #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
        format: TraceFormat,
        /// RabbitMQ version whose behaviour is simulated.
        #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", default_value_t = TargetVersion::DEFAULT, value_parser = parse_target)]
        target_version: TargetVersion,
    },
    /// Send a consumer's parked messages back to its work queue once the fault that
    /// parked them is fixed: oldest first, each exactly once (in AMQP transactions),
    /// each starting its retry ladder again (docs/operating.md).
    Replay {
        /// The spec: a YAML file, or a directory of YAML files read as one spec.
        #[arg(value_name = "SPEC")]
        spec: PathBuf,
        #[command(flatten)]
        env: EnvArg,
        /// The consumer's parking queue, or its work queue.
        #[arg(long, value_name = "QUEUE")]
        queue: String,
        /// The vhost (needed when the queue is in several).
        #[arg(long, value_name = "VHOST")]
        vhost: Option<String>,
        /// Move at most N messages (default: every message parked when the replay starts).
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        /// Messages per transaction: an interrupted replay returns at most this many
        /// taken messages to the parking queue.
        #[arg(long, value_name = "N", default_value_t = crate::replay::DEFAULT_BATCH, value_parser = clap::value_parser!(u16).range(1..=10_000))]
        batch: u16,
        /// Say what would move, and move nothing.
        #[arg(long)]
        dry_run: bool,
        /// Move without asking (required when there is no terminal to ask on).
        #[arg(long)]
        auto_approve: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
        format: TraceFormat,
        #[command(flatten)]
        broker: BrokerArgs,
        /// How long to wait for locks held by applies or other replays (e.g. `5m`).
        #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_wait)]
        lock_timeout: std::time::Duration,
    },
    /// Print a shell completion script, e.g. `warren completions bash >
    /// /etc/bash_completion.d/warren` (zsh: into a directory of `$fpath` as `_warren`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print warren's man page (roff: `warren man | man -l -`), or write one page per
    /// command into a directory (`warren.1`, `warren-plan.1`, …).
    Man {
        /// Write `warren.1` and a page per command into this directory.
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
    },
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
pub struct PlanArgs {
    #[command(flatten)]
    pub env: EnvArg,
    /// RabbitMQ version to compile for (default: the broker's own version; for `diff`,
    /// the `rabbitmq_version` of the definitions file, else 4.1).
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", value_parser = parse_target)]
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
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", default_value_t = TargetVersion::DEFAULT, value_parser = parse_target)]
    pub target_version: TargetVersion,
}

fn parse_target(text: &str) -> Result<TargetVersion, String> {
    text.parse()
}

/// `warren state …`.
#[derive(Debug, Subcommand)]
pub enum StateAction {
    /// Print a spec's ownership record: its serial, when it was applied, and the
    /// objects it manages; a damaged record is shown as the broker holds it, with
    /// what is wrong.
    Show {
        /// A spec (a file or a directory), or a spec's name.
        #[arg(value_name = "SPEC_OR_NAME")]
        spec: String,
        #[command(flatten)]
        env: EnvArg,
        #[command(flatten)]
        broker: BrokerArgs,
    },
    /// Rewrite a damaged ownership record: keep every object entry that still reads,
    /// drop what another spec's record claims, and, given the spec file, adopt what
    /// the spec declares and finds on the broker. Under the spec's lock.
    Repair {
        /// A spec (a file or a directory), or a spec's name.
        #[arg(value_name = "SPEC_OR_NAME")]
        spec: String,
        #[command(flatten)]
        env: EnvArg,
        #[command(flatten)]
        broker: BrokerArgs,
        /// Write without asking.
        #[arg(long)]
        auto_approve: bool,
    },
}

/// A wait such as `30s` or `5m`.
fn parse_wait(text: &str) -> Result<std::time::Duration, String> {
    crate::spec::duration::Duration::parse(text)
        .map(|d| std::time::Duration::from_millis(d.as_millis()))
}
