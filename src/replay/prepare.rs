//! The counts a replay is decided on: the two queues' own counts (passive declares,
//! exact where the management API's lag by seconds), and how many messages move.

use super::target::Target;
use crate::broker::{Client, QueueNow, ReplayFailure};

/// A replay ready to run: the counts it was decided on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// Whose messages.
    pub target: Target,
    /// Messages in the parking queue now (the queue's own count).
    pub parked: u32,
    /// The work queue now.
    pub work: QueueNow,
    /// `--limit`, when given.
    pub limit: Option<u64>,
    /// Messages the replay will move: the limit, or every parked message, at most the
    /// parked count. Messages parked after this count wait for the next replay.
    pub to_move: u64,
}

/// Reads the two queues' exact counts and decides how many messages move.
pub async fn prepare(
    client: &Client,
    target: Target,
    limit: Option<u64>,
) -> Result<Prepared, ReplayFailure> {
    let counts = client
        .queues_now(&target.vhost, &[&target.parking, &target.rule.work_queue])
        .await?;
    let missing = |queue: &str| ReplayFailure::QueueMissing {
        vhost: target.vhost.clone(),
        queue: queue.to_string(),
    };
    let parked = counts[0].ok_or_else(|| missing(&target.parking))?.messages;
    let work = counts[1].ok_or_else(|| missing(&target.rule.work_queue))?;
    let to_move = limit.map_or(u64::from(parked), |l| l.min(u64::from(parked)));
    Ok(Prepared {
        target,
        parked,
        work,
        limit,
        to_move,
    })
}
