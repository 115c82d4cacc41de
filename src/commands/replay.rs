//! `warren replay SPEC --queue Q`: the flags, and the rendering of what became of the
//! replay. The replay itself is one library call ([`crate::replay::run::run`]), on
//! the terminal of [`ReplayTerminal`].

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::ask::ReplayTerminal;
use super::diagnostics::{Effect, invalid};
use super::inputs::{client, load_spec};
use super::output::Reply;
use super::result::replayed;
use super::runtime::{count_signals, runtime};
use super::streams::ErrorLog;
use crate::apply::Interrupt;
use crate::cli::{BrokerArgs, EnvArg, TraceFormat, parse_wait};
use crate::render::progress::ReplayProgress;
use crate::render::replay as shown;
use crate::replay::Event;
use crate::replay::run::{NotFound, Request, run};

/// The flags of `warren replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The spec: a YAML file, or a directory of YAML files read as one spec.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    #[command(flatten)]
    pub env: EnvArg,
    /// The consumer's parking queue, or its work queue.
    #[arg(long, value_name = "QUEUE")]
    pub queue: String,
    /// The vhost (needed when the queue is in several).
    #[arg(long, value_name = "VHOST")]
    pub vhost: Option<String>,
    /// Move at most N messages (default: every message parked when the replay starts).
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Copies in flight at most (published and not yet confirmed, or confirmed with
    /// their originals not yet acknowledged): a kill of warren or of the broker can
    /// leave at most this many messages in both queues.
    #[arg(long, value_name = "N", default_value_t = crate::replay::DEFAULT_BATCH, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    pub batch: u16,
    /// Say what would move, and move nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Move without asking (required when there is no terminal to ask on).
    #[arg(long)]
    pub auto_approve: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    pub format: TraceFormat,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// How long to wait for locks held by applies or other replays (e.g. `5m`).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_wait)]
    pub lock_timeout: Duration,
}

/// `warren replay SPEC --queue Q …`: prints one JSON document under `--format json`,
/// whatever happened once the queue was found to be a consumer's.
pub fn replay(args: &ReplayArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> Reply {
    let file = match load_spec(&args.spec, &args.env, Effect::Changes) {
        Ok(file) => file,
        Err(error) => return Reply::from(Err(error)),
    };
    let (runtime, interrupt) = (runtime(), Interrupt::default());
    let mut progress = ReplayProgress::on_stderr(&interrupt);
    let request = Request {
        file: &file,
        queue: &args.queue,
        vhost: args.vhost.as_deref(),
        limit: args.limit,
        batch: args.batch,
        dry_run: args.dry_run,
        auto_approve: args.auto_approve,
        lock_wait: args.lock_timeout,
        stop: interrupt.flag(),
    };
    let json = args.format == TraceFormat::Json;
    let mut terminal = ReplayTerminal::new(json, stdout, stderr);
    let connect = || client(&args.broker);
    let ran = runtime.block_on(run(request, connect, &mut terminal, &mut |event| {
        // Signals are caught once messages move: until then, one ends warren at once.
        if let Event::Moving { .. } = event {
            count_signals(&runtime, &interrupt);
        }
        progress.event(event);
    }));
    progress.finish();
    let ran = match ran {
        Ok(ran) => ran,
        Err(NotFound::NotCompiled(found)) => {
            return Reply::from(Err(invalid(&file, &found, Effect::Changes)));
        }
        Err(NotFound::NoTarget(error)) => return Reply::from(Err(error.into())),
    };
    if !json {
        let _ = shown::ended(terminal.stdout, &ran);
    }
    let document = shown::document_of(&ran, args.dry_run);
    let result = replayed(ran);
    match json {
        true => Reply::documented(result, document),
        false => Reply::from(result),
    }
}
