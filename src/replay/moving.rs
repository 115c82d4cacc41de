//! The move itself, under the locks an apply of the spec takes (the spec's and the
//! vhost's), so that no apply deletes or replaces the two queues while messages move.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::prepare::Prepared;
use super::progress::{Event, Progress};
use crate::broker::{BrokerError, Client, LockName, ReplayError, ReplayMove, holder_name};

/// What a replay did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replayed {
    /// Messages moved.
    pub moved: u64,
    /// Whether it stopped on a signal before moving `to_move`.
    pub interrupted: bool,
}

/// Why a move did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    /// The locks could not be taken (another apply or replay holds them).
    #[error(transparent)]
    Lock(BrokerError),
    /// The move stopped.
    #[error(transparent)]
    Replay(ReplayError),
}

/// Moves `prepared.to_move` messages (fewer when the parking queue empties first),
/// holding the locks of `spec` and of the vhost (waited for at most `lock_wait`), at
/// most `batch` copies in flight. Stops once the copies in flight are settled when
/// `stop` is set; `progress` hears the running total ([`Event::Moved`]).
pub async fn move_parked(
    client: &Client,
    spec: &str,
    prepared: &Prepared,
    batch: u16,
    lock_wait: Duration,
    stop: &AtomicBool,
    progress: &mut Progress<'_>,
) -> Result<Replayed, MoveError> {
    let target = &prepared.target;
    if prepared.to_move == 0 {
        return Ok(Replayed {
            moved: 0,
            interrupted: false,
        });
    }
    let names = [
        LockName::Spec(spec.to_string()),
        LockName::Vhost(target.vhost.clone()),
    ];
    let lock = client
        .lock(&names, &holder_name(), lock_wait)
        .await
        .map_err(MoveError::Lock)?;
    let request = ReplayMove {
        vhost: &target.vhost,
        parking: &target.parking,
        rule: &target.rule,
        limit: prepared.to_move,
        batch,
    };
    let result = client
        .replay(&request, stop, &mut |moved| {
            progress(&Event::Moved { moved });
        })
        .await;
    lock.release().await;
    let done = result.map_err(MoveError::Replay)?;
    Ok(Replayed {
        moved: done,
        interrupted: done < prepared.to_move && stop.load(Ordering::SeqCst),
    })
}
