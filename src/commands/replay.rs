//! `warren replay`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::ask::ask_yes;
use super::diagnostics::{Effect, invalid};
use super::exit::{self, Failure};
use super::inputs::{client, load_spec};
use super::output::Reply;
use super::result::{CommandError, CommandResult, Success};
use super::runtime::{runtime, stop_on_signals};
use super::streams::ErrorLog;
use crate::cli::{BrokerArgs, EnvArg, TraceFormat, parse_wait};
use crate::compile::{self, Options};
use crate::plan::spec_name;
use crate::render;
use crate::render::stopping::{Watch, replay_notice};
use crate::replay::{self, MoveError, Prepared};

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
/// whatever happened after the spec was read.
pub fn replay(args: &ReplayArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> Reply {
    let json = args.format == TraceFormat::Json;
    let mut run = Run::default();
    let result = run.replay(args, stdout, stderr);
    let dry_run = args.dry_run;
    match json && run.started {
        true => Reply::documented(result, move |error| {
            render::replay::document(
                run.prepared.as_ref(),
                dry_run,
                run.moved.map(|moved| (moved, run.unconfirmed)),
                error,
            )
        }),
        false => Reply::from(result),
    }
}

/// What one replay got to, for its JSON document.
#[derive(Default)]
struct Run {
    /// The spec was read and the queue found: the document is this command's to print.
    started: bool,
    prepared: Option<Prepared>,
    moved: Option<u64>,
    /// Copies the broker neither confirmed nor refused, when the replay stopped.
    unconfirmed: u64,
}

impl Run {
    fn replay(
        &mut self,
        args: &ReplayArgs,
        stdout: &mut dyn Write,
        stderr: &mut dyn ErrorLog,
    ) -> CommandResult {
        let json = args.format == TraceFormat::Json;
        let file = load_spec(&args.spec, &args.env, Effect::Changes)?;
        // Which queue is whose needs no secrets.
        let options = Options {
            target: crate::model::TargetVersion::DEFAULT,
            secrets: None,
        };
        let compiled = compile::compile(&file, &options)
            .map_err(|found| invalid(&file, &found, Effect::Changes))?;
        let target = replay::find(&compiled.contract, &args.queue, args.vhost.as_deref())?;
        self.started = true;
        let client = client(&args.broker)?;
        let runtime = runtime();
        let prepared = runtime.block_on(replay::prepare(&client, target, args.limit))?;
        // The preview goes where people read: stdout for text, stderr under JSON.
        let shown: &mut dyn Write = if json { stderr } else { stdout };
        let _ = render::replay::preview(shown, &prepared, args.batch);
        self.prepared = Some(prepared.clone());
        if args.dry_run {
            if !json {
                let _ = writeln!(stdout, "Dry run: nothing was moved.");
            }
            return Ok(Success::Done);
        }
        if prepared.to_move == 0 {
            if !json {
                let _ = writeln!(stdout, "Nothing to replay.");
            }
            self.moved = Some(0);
            return Ok(Success::Done);
        }
        let question = format!(
            "Replay {} to `{}`?",
            crate::text::count(prepared.to_move as usize, "message"),
            prepared.target.rule.work_queue
        );
        if !args.auto_approve
            && !ask_yes(
                &question,
                "check the replay with --dry-run and pass --auto-approve",
                (!json).then_some(&mut *stdout),
                stderr,
            )
        {
            return Err(CommandError::cancelled(
                "replay cancelled; nothing was moved",
            ));
        }
        // A signal stops the replay once the copies in flight are settled: nothing
        // doubled. It is told at once, with the count moved so far.
        let stop = stop_on_signals(&runtime);
        let moved_so_far = Arc::new(AtomicU64::new(0));
        let to_move = prepared.to_move;
        let mut watch = {
            let moved = Arc::clone(&moved_so_far);
            Watch::start(stop.clone(), move |signals| {
                for signal in signals {
                    let moved = moved.load(Ordering::SeqCst);
                    eprintln!("{}", replay_notice(signal, moved, to_move));
                }
            })
        };
        let spec_name = spec_name(&file);
        let result = runtime.block_on(replay::move_parked(
            &client,
            &spec_name,
            &prepared,
            args.batch,
            args.lock_timeout,
            stop.flag(),
            &mut |moved| moved_so_far.store(moved, Ordering::SeqCst),
        ));
        watch.finish();
        match result {
            Ok(replayed) => {
                self.moved = Some(replayed.moved);
                if !json {
                    let _ = render::replay::done(
                        stdout,
                        &prepared,
                        replayed.moved,
                        replayed.interrupted,
                    );
                }
                match replayed.interrupted {
                    true => Err(CommandError::already_shown(Failure::Error)),
                    false => Ok(Success::Done),
                }
            }
            Err(MoveError::Lock(err)) => {
                self.moved = Some(0);
                Err(err.into())
            }
            Err(MoveError::Replay(err)) => {
                self.moved = Some(err.moved);
                self.unconfirmed = err.unconfirmed;
                let message = render::replay::stopped(&prepared, &err);
                Err(CommandError::new(exit::of_replay(&err.failure), message))
            }
        }
    }
}
