//! `warren replay`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::ask::ask_yes;
use super::diagnostics::{Effect, report};
use super::inputs::{client, load_spec};
use super::output::{broker_failed, fail, fail_with};
use super::runtime::{runtime, stop_on_signals};
use super::streams::ErrorLog;
use super::{EXIT_ERROR, EXIT_OK, exit};
use crate::cli::{BrokerArgs, EnvArg, TraceFormat, parse_wait};
use crate::compile::{self, Options};
use crate::plan::spec_name;
use crate::render;
use crate::render::stopping::{Watch, replay_notice};
use crate::replay::{self, Prepared, RunError};

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
pub fn replay(args: &ReplayArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> u8 {
    let json = args.format == TraceFormat::Json;
    let mut run = Run::default();
    let code = run.replay(args, stdout, stderr);
    if json && run.started {
        let error = (code != EXIT_OK).then(|| {
            let said = stderr.errors();
            render::errors::error_value(code, exit::class(code), &said.messages, &said.diagnostics)
        });
        let document = render::replay::document(
            run.prepared.as_ref(),
            args.dry_run,
            run.moved.map(|moved| (moved, run.unconfirmed)),
            error,
        );
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&document).expect("JSON")
        );
    }
    code
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
    ) -> u8 {
        let json = args.format == TraceFormat::Json;
        let Some(file) = load_spec(&args.spec, &args.env, Effect::Changes, stderr) else {
            return EXIT_ERROR;
        };
        // Which queue is whose needs no secrets.
        let options = Options {
            target: crate::model::TargetVersion::DEFAULT,
            secrets: None,
        };
        let compiled = match compile::compile(&file, &options) {
            Ok(compiled) => compiled,
            Err(found) => {
                report(&file, &found, Effect::Changes, stderr);
                return EXIT_ERROR;
            }
        };
        let target = match replay::find(&compiled.contract, &args.queue, args.vhost.as_deref()) {
            Ok(target) => target,
            Err(err) => return fail(stderr, &err.to_string()),
        };
        self.started = true;
        let client = match client(&args.broker) {
            Ok(client) => client,
            Err(err) => return broker_failed(stderr, &err),
        };
        let runtime = runtime();
        let prepared = match runtime.block_on(replay::prepare(&client, target, args.limit)) {
            Ok(prepared) => prepared,
            Err(failure) => {
                return fail_with(stderr, exit::of_replay(&failure), &failure.to_string());
            }
        };
        // The preview goes where people read: stdout for text, stderr under JSON.
        let shown: &mut dyn Write = if json { stderr } else { stdout };
        let _ = render::replay::preview(shown, &prepared, args.batch);
        self.prepared = Some(prepared.clone());
        if args.dry_run {
            if !json {
                let _ = writeln!(stdout, "Dry run: nothing was moved.");
            }
            return EXIT_OK;
        }
        if prepared.to_move == 0 {
            if !json {
                let _ = writeln!(stdout, "Nothing to replay.");
            }
            self.moved = Some(0);
            return EXIT_OK;
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
            let _ = writeln!(stderr, "replay cancelled; nothing was moved");
            return EXIT_ERROR;
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
        let result = runtime.block_on(replay::run(
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
                if replayed.interrupted {
                    EXIT_ERROR
                } else {
                    EXIT_OK
                }
            }
            Err(RunError::Lock(err)) => {
                self.moved = Some(0);
                broker_failed(stderr, &err)
            }
            Err(RunError::Replay(err)) => {
                self.moved = Some(err.moved);
                self.unconfirmed = err.unconfirmed;
                let message = render::replay::stopped(&prepared, &err);
                fail_with(stderr, exit::of_replay(&err.failure), &message)
            }
        }
    }
}
