//! One `warren replay`, from the spec read to what became of it. The steps and their
//! order are the library's: which consumer `--queue` names (the spec compiled without
//! secrets), the broker client made only then, the two queues counted, the move shown,
//! stopped there for a `--dry-run` or when nothing is parked, confirmed, and made
//! under the locks. The terminal is the caller's: it shows the move and asks through
//! [`Conversation`], and it is told the progress. What happened comes back as an
//! [`Outcome`], which the caller renders; nothing here prints.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::conversation::Conversation;
use super::moving::{MoveError, Replayed, move_parked};
use super::prepare::{Prepared, prepare};
use super::progress::{Event, Progress};
use super::target::{TargetError, find};
use crate::broker::{BrokerError, Client, ReplayError, ReplayFailure};
use crate::compile::{self, Options};
use crate::model::TargetVersion;
use crate::spec::SpecFile;
use crate::spec::diagnostic::Diagnostic;

/// What is replayed, and how: `warren replay`'s spec and flags.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The spec, read for its environment: which queue is whose, and the lock of its
    /// name.
    pub file: &'a SpecFile,
    /// `--queue`: the consumer's parking queue, or its work queue.
    pub queue: &'a str,
    /// `--vhost`.
    pub vhost: Option<&'a str>,
    /// `--limit`: messages to move at most.
    pub limit: Option<u64>,
    /// `--batch`: copies in flight at most.
    pub batch: u16,
    /// `--dry-run`: the move is shown, and not made.
    pub dry_run: bool,
    /// `--auto-approve`: moved without asking.
    pub auto_approve: bool,
    /// `--lock-timeout`: how long to wait for the locks.
    pub lock_wait: Duration,
    /// Set (by a signal) when the move should stop once the copies in flight are
    /// settled.
    pub stop: &'a AtomicBool,
}

/// Why a replay did not start: no consumer of the spec was found to replay the
/// messages of, so there is nothing to report but this.
#[derive(Debug)]
pub enum NotFound {
    /// The spec does not compile: its diagnostics.
    NotCompiled(Vec<Diagnostic>),
    /// `--queue` names no consumer whose messages can be replayed.
    NoTarget(TargetError),
}

/// What became of a replay whose consumer was found.
#[derive(Debug)]
pub enum Outcome {
    /// No broker client could be made from the connection settings.
    NoClient(BrokerError),
    /// The two queues could not be counted (one is missing, the broker is not there).
    NotPrepared(ReplayFailure),
    /// `--dry-run`: the move was shown, and nothing moved.
    DryRun,
    /// No message to move (the parking queue is empty, or `--limit 0`).
    NothingToMove,
    /// The person asked said no (or there was no terminal to ask on): nothing moved.
    Cancelled,
    /// The move ran: every message it was to move, as many as the parking queue still
    /// held, or those a signal left time for.
    Replayed(Replayed),
    /// The locks could not be taken (another apply or replay holds them): nothing
    /// moved.
    NotLocked(BrokerError),
    /// The move stopped on a failure, after moving some.
    Stopped(ReplayError),
}

/// A replay's outcome, with the move it was about (what its report shows, the JSON
/// document of `--format json`).
#[derive(Debug)]
pub struct Ran {
    /// The move decided on, once the two queues were counted.
    pub prepared: Option<Prepared>,
    /// What became of it.
    pub outcome: Outcome,
}

impl Ran {
    /// Messages moved, and copies the broker neither confirmed nor refused, once the
    /// replay went past its question; `None` before (a dry run, a "no", a replay that
    /// never started).
    pub fn moved(&self) -> Option<(u64, u64)> {
        match &self.outcome {
            Outcome::NothingToMove | Outcome::NotLocked(_) => Some((0, 0)),
            Outcome::Replayed(replayed) => Some((replayed.moved, 0)),
            Outcome::Stopped(error) => Some((error.moved, error.unconfirmed)),
            Outcome::NoClient(_)
            | Outcome::NotPrepared(_)
            | Outcome::DryRun
            | Outcome::Cancelled => None,
        }
    }
}

/// Replays as `request` says on the broker `connect` makes, which it calls once the
/// queue is known to be a consumer's of the spec: a wrong `--queue` is said before the
/// connection settings are read. `conversation` shows the move and confirms it;
/// `progress` is told how it goes ([`Event`]).
pub async fn run(
    request: Request<'_>,
    connect: impl FnOnce() -> Result<Client, BrokerError>,
    conversation: &mut dyn Conversation,
    progress: &mut Progress<'_>,
) -> Result<Ran, NotFound> {
    // Which queue is whose needs no secrets.
    let options = Options {
        target: TargetVersion::DEFAULT,
        secrets: None,
    };
    let compiled = compile::compile(request.file, &options).map_err(NotFound::NotCompiled)?;
    let target =
        find(&compiled.contract, request.queue, request.vhost).map_err(NotFound::NoTarget)?;
    let ended = |outcome| {
        Ok(Ran {
            prepared: None,
            outcome,
        })
    };
    let client = match connect() {
        Ok(client) => client,
        Err(error) => return ended(Outcome::NoClient(error)),
    };
    let prepared = match prepare(&client, target, request.limit).await {
        Ok(prepared) => prepared,
        Err(failure) => return ended(Outcome::NotPrepared(failure)),
    };
    conversation.show(&prepared, request.batch);
    let outcome = if request.dry_run {
        Outcome::DryRun
    } else if prepared.to_move == 0 {
        Outcome::NothingToMove
    } else if !request.auto_approve && !conversation.confirm(&prepared) {
        Outcome::Cancelled
    } else {
        moved(&client, request, &prepared, progress).await
    };
    Ok(Ran {
        prepared: Some(prepared),
        outcome,
    })
}

/// Moves the messages confirmed.
async fn moved(
    client: &Client,
    request: Request<'_>,
    prepared: &Prepared,
    progress: &mut Progress<'_>,
) -> Outcome {
    progress(&Event::Moving {
        to_move: prepared.to_move,
    });
    let spec = request.file.name();
    let result = move_parked(
        client,
        &spec,
        prepared,
        request.batch,
        request.lock_wait,
        request.stop,
        progress,
    )
    .await;
    match result {
        Ok(replayed) => Outcome::Replayed(replayed),
        Err(MoveError::Lock(error)) => Outcome::NotLocked(error),
        Err(MoveError::Replay(error)) => Outcome::Stopped(error),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::spec::load_str;

    /// A caller's side the replay must not reach.
    struct Unreached;

    impl Conversation for Unreached {
        fn show(&mut self, _: &Prepared, _: u16) {
            panic!("the move was shown");
        }
        fn confirm(&mut self, _: &Prepared) -> bool {
            panic!("the move was asked about");
        }
    }

    const SPEC: &str = "version: 1
vhosts:
  a:
    services:
      orders:
        consumers:
          email:
            routing_keys: [order.created]
            retry: { delays: [1s] }
";

    fn replay_of<'a>(file: &'a SpecFile, queue: &'a str, stop: &'a AtomicBool) -> Request<'a> {
        Request {
            file,
            queue,
            vhost: None,
            limit: None,
            batch: 10,
            dry_run: false,
            auto_approve: true,
            lock_wait: Duration::ZERO,
            stop,
        }
    }

    fn no_client() -> BrokerError {
        BrokerError::Setup("no such profile".to_string().into())
    }

    #[tokio::test]
    async fn a_queue_no_consumer_parks_into_is_said_before_the_broker_is_thought_of() {
        let file = load_str(Path::new("t.yaml"), SPEC.to_string()).unwrap();
        let stop = AtomicBool::new(false);
        let request = replay_of(&file, "orders.email.retry.1", &stop);
        let connect = || -> Result<Client, BrokerError> { panic!("a client was made") };
        let ran = run(request, connect, &mut Unreached, &mut |_| {
            panic!("progress")
        })
        .await;
        assert!(matches!(ran, Err(NotFound::NoTarget(_))), "{ran:?}");
    }

    #[tokio::test]
    async fn without_a_client_nothing_is_shown_and_nothing_counts_as_moved() {
        let file = load_str(Path::new("t.yaml"), SPEC.to_string()).unwrap();
        let stop = AtomicBool::new(false);
        let request = replay_of(&file, "orders.email.parking", &stop);
        let ran = run(request, || Err(no_client()), &mut Unreached, &mut |_| {
            panic!("progress")
        })
        .await
        .unwrap();
        assert!(ran.prepared.is_none());
        assert!(matches!(ran.outcome, Outcome::NoClient(_)), "{ran:?}");
        assert_eq!(ran.moved(), None);
    }

    #[test]
    fn what_counts_as_moved_follows_how_far_the_replay_went() {
        let moved = |outcome| {
            Ran {
                prepared: None,
                outcome,
            }
            .moved()
        };
        assert_eq!(moved(Outcome::DryRun), None);
        assert_eq!(moved(Outcome::Cancelled), None);
        assert_eq!(moved(Outcome::NothingToMove), Some((0, 0)));
        assert_eq!(moved(Outcome::NotLocked(no_client())), Some((0, 0)));
        let replayed = Replayed {
            moved: 12,
            interrupted: true,
        };
        assert_eq!(moved(Outcome::Replayed(replayed)), Some((12, 0)));
        let stopped = ReplayError {
            moved: 10,
            unconfirmed: 3,
            failure: ReplayFailure::Channel("closed".into()),
        };
        assert_eq!(moved(Outcome::Stopped(stopped)), Some((10, 3)));
    }
}
