//! One function per subcommand: flags in, one library call, rendered output and a
//! [`CommandResult`] out, which one handler ([`output::finish`]) turns into the
//! command's error output and its exit code. Each command's flags are one `Args`
//! struct in its own file, and the command line below gathers them. What commands
//! share is in files of its own: what they read ([`inputs`]), a spec's diagnostics
//! ([`diagnostics`]), the streams they write to ([`streams`]), the runtime and signals
//! of the broker commands ([`runtime`]), what they return ([`result`]) and the exit
//! codes ([`exit`]).

mod apply;
mod ask;
mod compile;
mod config;
mod diagnostics;
pub mod exit;
mod graph;
mod import;
mod inputs;
mod lint;
mod output;
mod plan;
mod replay;
mod result;
mod runtime;
mod schema;
mod shell;
mod show;
mod state;
mod status;
mod streams;
mod trace;
mod unlock;
mod upgrade_check;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cli::ColorWhen;
use output::Reply;
use result::CommandResult;
use streams::{ClosedPipeIsEnd, ErrorLog, Stderr};

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

/// Subcommands: each takes the `Args` of its file.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a spec: exit 0 when it compiles and passes the lint rules at the `deny` level,
    /// 1 otherwise. Needs no secrets. `warren lint` also shows the warnings.
    Validate(compile::ValidateArgs),
    /// Print the definitions a spec compiles to (JSON), or its consumer contract.
    Compile(compile::CompileArgs),
    /// Write a definitions file for a broker to load at boot or import.
    Export(compile::ExportArgs),
    /// Print the JSON Schema of the spec format.
    Schema,
    /// Show what applying a spec would change on a broker; exit 0 on success (with
    /// --detailed-exitcode: 0 = no changes, 2 = changes), other codes on errors
    /// (docs/exit-codes.md).
    Plan(plan::PlanArgs),
    /// Apply a saved plan, or plan a spec, show it, ask, and apply it.
    Apply(apply::ApplyArgs),
    /// Print a plan saved with `warren plan -o FILE` as `warren plan` printed it (text,
    /// JSON or markdown), without a broker or passwords; exit 1 when the file is not a
    /// plan this warren reads.
    Show(show::ShowArgs),
    /// Check a spec (or a definitions file) for topologies that lose, duplicate or
    /// hot-loop messages; exit 1 on errors (and on warnings with `--deny warnings`).
    Lint(lint::LintArgs),
    /// Write a spec from a live broker (or a definitions file), to adopt an existing
    /// broker: applying it to the same broker plans no changes.
    Import(import::ImportArgs),
    /// List the lint rules, or explain one with a bad and a good example.
    Rules(lint::RulesArgs),
    /// Break the locks of an apply that is stuck (as Terraform's `force-unlock`): the
    /// broker closes its connection, which frees every lock it held. Only when --holder
    /// names the holder the lock error printed. A dead apply's locks are already free.
    Unlock(unlock::UnlockArgs),
    /// Show or repair a spec's ownership record (the list of objects it manages).
    State(state::StateArgs),
    /// Show the plan of a spec against a definitions file instead of a live broker.
    Diff(plan::DiffArgs),
    /// Draw the topology a spec builds: exchanges, queues, bindings with their routing
    /// keys, dead-letter routes with their delays, parking queues; grouped by vhost and
    /// service. Mermaid (for pull requests and docs) or Graphviz DOT (`dot -Tsvg`).
    Graph(graph::GraphArgs),
    /// Report each consumer of a spec on the live broker: its work queue (messages,
    /// consumers, rates), each retry tier's waiting messages, the parking queue and the
    /// age of its oldest message, and what is wrong (docs/operating.md). Exit 0 when it
    /// reports, problems included; 1 on a bad spec or flag; 3 when the broker is
    /// unreachable.
    Status(status::StatusArgs),
    /// Follow one message offline, step by step: the queues that get a copy, and for
    /// each consumer that fails it `--fail` times, every retry tier, wait and return,
    /// then parking or drop (docs/trace.md).
    Trace(trace::TraceArgs),
    /// Send a consumer's parked messages back to its work queue once the fault that
    /// parked them is fixed: oldest first, each original acknowledged once the broker
    /// confirmed its copy, each starting its retry ladder again (docs/operating.md).
    Replay(replay::ReplayArgs),
    /// Check what breaks, changes meaning or needs doing first when a broker (or a
    /// definitions file, or a spec) moves to another RabbitMQ line: the upgrade path,
    /// what the target refuses or ignores, deprecated features in use
    /// (docs/upgrading.md). Exit 0 without errors, 1 with errors (or warnings with
    /// `--deny warnings`), 3 when the broker cannot be reached.
    UpgradeCheck(upgrade_check::UpgradeCheckArgs),
    /// Show the broker settings in force and where each came from (flag, `WARREN_*`
    /// variable, profile, default), the config file read and the profiles it
    /// defines (docs/profiles.md). Never shows a password; contacts no broker.
    Config(config::ConfigArgs),
    /// Print a shell completion script, e.g. `warren completions bash >
    /// /etc/bash_completion.d/warren` (zsh: into a directory of `$fpath` as `_warren`).
    Completions(shell::CompletionsArgs),
    /// Print warren's man page (roff: `warren man | man -l -`), or write one page per
    /// command into a directory (`warren.1`, `warren-plan.1`, …).
    Man(shell::ManArgs),
}

/// What every command may need besides its own flags: the global ones.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    /// `--color`.
    pub color: ColorWhen,
}

/// Parses the command line, runs the command and hands its result to the handler.
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            print_usage_error(&err);
            // Usage errors exit 1, not clap's 2: `plan` uses 2 for "changes pending".
            return ExitCode::from(if err.use_stderr() {
                exit::ERROR
            } else {
                exit::OK
            });
        }
    };
    let stdout = &mut ClosedPipeIsEnd::new(std::io::stdout().lock());
    // Not locked for the whole command, unlike stdout: an apply's progress (the bar's
    // ticker, the plain lines' heartbeat) writes to stderr from a thread of its own,
    // which would wait for the lock forever.
    let stderr = &mut Stderr::new(std::io::stderr());
    let context = Context { color: cli.color };
    let reply = dispatch(&cli.command, &context, stdout, stderr);
    let code = output::finish(reply, cli.command.prints_json(), stdout, stderr);
    let _ = stdout.flush();
    ExitCode::from(code)
}

/// Runs the command. `apply` and `replay` reply with the JSON document they print
/// whatever happened; the others with their result alone.
fn dispatch(
    command: &Command,
    context: &Context,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> Reply {
    let result: CommandResult = match command {
        Command::Apply(args) => return apply::apply(args, context, stdout, stderr),
        Command::Replay(args) => return replay::replay(args, stdout, stderr),
        Command::Validate(args) => compile::validate(args, stdout, stderr),
        Command::Compile(args) => compile::compile(args, stdout, stderr),
        Command::Export(args) => compile::export(args, stdout, stderr),
        Command::Schema => schema::print(stdout),
        Command::Plan(args) => plan::plan(args, context, stdout, stderr),
        Command::Show(args) => show::show(args, context, stdout),
        Command::Lint(args) => lint::lint(args, stdout, stderr),
        Command::Import(args) => import::import(args, stdout, stderr),
        Command::Rules(args) => lint::rules(args, stdout),
        Command::Unlock(args) => unlock::unlock(args, stdout),
        Command::Diff(args) => plan::diff(args, context, stdout, stderr),
        Command::Graph(args) => graph::graph(args, stdout, stderr),
        Command::Trace(args) => trace::trace(args, stdout),
        Command::Status(args) => status::status(args, stdout, stderr),
        Command::Config(args) => config::config(args, stdout),
        Command::Completions(args) => shell::completions(args, stdout),
        Command::Man(args) => shell::man(args, stdout, stderr),
        Command::State(args) => state::state(args, stdout, stderr),
        Command::UpgradeCheck(args) => upgrade_check::upgrade_check(args, stdout),
    };
    Reply::from(result)
}

/// Prints a command-line error. A missing argument's usage line names only what the
/// command needs: clap also lists there the arguments its environment variables gave
/// (`--url <URL> --user <USER> --password <PASSWORD>` with `WARREN_*` set), which
/// reads as if they were required.
fn print_usage_error(err: &clap::Error) {
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    if err.kind() != ErrorKind::MissingRequiredArgument {
        let _ = err.print();
        return;
    }
    let mut command = Cli::command();
    command.build();
    let words: Vec<String> = std::env::args().skip(1).collect();
    let mut chosen = &mut command;
    for word in &words {
        if chosen.find_subcommand(word).is_none() {
            continue;
        }
        chosen = chosen.find_subcommand_mut(word).expect("found above");
    }
    let usage = chosen.render_usage().to_string();
    let text = err.render().to_string();
    let mut fixed: Vec<&str> = Vec::new();
    for line in text.lines() {
        fixed.push(if line.starts_with("Usage: ") {
            usage.as_str()
        } else {
            line
        });
    }
    eprintln!("{}", fixed.join("\n"));
}

impl Command {
    /// Whether the command was asked for JSON on stdout.
    fn prints_json(&self) -> bool {
        use crate::cli::{FindingsFormat, Format, StatusFormat, TraceFormat};
        match self {
            Command::Plan(args) => args.plan.format == Format::Json,
            Command::Apply(args) => args.plan.format == Format::Json,
            Command::Diff(args) => args.plan.format == Format::Json,
            Command::Show(args) => args.format == Format::Json,
            Command::Lint(args) => args.format == FindingsFormat::Json,
            Command::Trace(args) => args.format == TraceFormat::Json,
            Command::Replay(args) => args.format == TraceFormat::Json,
            Command::Status(args) => args.format == StatusFormat::Json,
            Command::UpgradeCheck(args) => args.format == FindingsFormat::Json,
            Command::Config(args) => args.format == TraceFormat::Json,
            _ => false,
        }
    }
}
