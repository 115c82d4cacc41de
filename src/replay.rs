//! `warren replay`: sending a consumer's parked messages back to its work queue, once
//! the fault that parked them is fixed (docs/operating.md).
//!
//! Which queue is whose comes from the compiled consumer contract, so only a parking
//! queue of the spec can be emptied, and only into its own consumer's work queue: the
//! default exchange routes on the queue's name, so no other consumer sees a replayed
//! message. The move itself is `broker::replay` (publisher confirms: nothing lost, a
//! refused copy's original left parked, at most `batch` doubled by a kill), under the locks an apply of the spec takes, so that no apply deletes or
//! replaces the two queues while messages move. What each message's headers lose is
//! [`Replay`].

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::broker::{
    BrokerError, Client, LockName, QueueNow, ReplayError, ReplayFailure, ReplayMove, holder_name,
};
use crate::compile::contract::{ConsumerContract, Contract};
use crate::model::headers::Replay;
use crate::spec::RetryMode;

/// Copies in flight when `--batch` is not given: large enough that a replay of
/// thousands takes seconds, small enough that a kill doubles few messages.
pub const DEFAULT_BATCH: u16 = 100;

/// The consumer whose parked messages a replay moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Vhost.
    pub vhost: String,
    /// Service.
    pub service: String,
    /// Consumer.
    pub consumer: String,
    /// How the consumer retries (what a replay resets, docs/operating.md).
    pub mode: RetryMode,
    /// The parking queue.
    pub parking: String,
    /// What happens to each message; names the work queue.
    pub rule: Replay,
}

/// Why `--queue` names no consumer whose messages can be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// No consumer of the spec has this work or parking queue.
    #[error("{}", not_parking(queue, vhost.as_deref(), choices))]
    NotParking {
        /// The queue given.
        queue: String,
        /// `--vhost`, when given.
        vhost: Option<String>,
        /// The parking queues of the spec, as `vhost/queue`.
        choices: Vec<String>,
    },
    /// The consumer parks nothing: no ladder, or `on_exhausted: drop`.
    #[error(
        "consumer `{service}.{consumer}` has no parking queue ({why}): there is nothing to replay"
    )]
    NoParking {
        /// Service.
        service: String,
        /// Consumer.
        consumer: String,
        /// Why, in words.
        why: String,
    },
    /// The queue name is a consumer's in several vhosts.
    #[error("queue `{queue}` is in vhosts {}: choose one with --vhost", vhosts.join(", "))]
    Ambiguous {
        /// The queue.
        queue: String,
        /// The vhosts, as `vhost`.
        vhosts: Vec<String>,
    },
}

fn not_parking(queue: &str, vhost: Option<&str>, choices: &[String]) -> String {
    let place = vhost.map_or(String::new(), |v| format!(" in vhost `{v}`"));
    let mut text = format!(
        "queue `{queue}`{place} is not a parking queue of the spec, nor the work queue of a consumer that parks messages"
    );
    let names: Vec<String> = choices
        .iter()
        .map(|c| {
            c.rsplit_once('/')
                .map_or(c.as_str(), |(_, q)| q)
                .to_string()
        })
        .collect();
    if let Some(close) = crate::suggest::closest(queue, &names) {
        text.push_str(&format!(" (did you mean `{close}`?)"));
    }
    if choices.is_empty() {
        text.push_str("; the spec parks no messages");
    } else {
        text.push_str(&format!("; its parking queues: {}", choices.join(", ")));
    }
    text
}

/// The consumer whose work queue or parking queue is `queue` (in `vhost` when given).
pub fn find(contract: &Contract, queue: &str, vhost: Option<&str>) -> Result<Target, TargetError> {
    let in_vhost = |c: &&ConsumerContract| vhost.is_none_or(|v| c.vhost == v);
    let parking =
        |c: &ConsumerContract| c.retry.as_ref().and_then(|r| r.on_exhausted.queue.clone());
    let matches: Vec<&ConsumerContract> = contract
        .consumers
        .iter()
        .filter(in_vhost)
        .filter(|c| c.queue == queue || parking(c).as_deref() == Some(queue))
        .collect();
    let consumer = match matches.as_slice() {
        [one] => *one,
        [] => {
            return Err(TargetError::NotParking {
                queue: queue.to_string(),
                vhost: vhost.map(str::to_string),
                choices: contract
                    .consumers
                    .iter()
                    .filter(in_vhost)
                    .filter_map(|c| parking(c).map(|p| format!("{}/{p}", c.vhost)))
                    .collect(),
            });
        }
        several => {
            let mut vhosts: Vec<String> =
                several.iter().map(|c| format!("`{}`", c.vhost)).collect();
            vhosts.dedup();
            return Err(TargetError::Ambiguous {
                queue: queue.to_string(),
                vhosts,
            });
        }
    };
    let no_parking = |why: &str| TargetError::NoParking {
        service: consumer.service.clone(),
        consumer: consumer.consumer.clone(),
        why: why.to_string(),
    };
    let Some(retry) = &consumer.retry else {
        return Err(no_parking("it has no retry ladder"));
    };
    let Some(parking) = retry.on_exhausted.queue.clone() else {
        return Err(no_parking(
            "its ladder drops exhausted messages: `on_exhausted: drop`",
        ));
    };
    Ok(Target {
        vhost: consumer.vhost.clone(),
        service: consumer.service.clone(),
        consumer: consumer.consumer.clone(),
        mode: retry.mode,
        parking,
        rule: Replay {
            work_queue: consumer.queue.clone(),
        },
    })
}

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

/// What a replay did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replayed {
    /// Messages moved.
    pub moved: u64,
    /// Whether it stopped on a signal before moving `to_move`.
    pub interrupted: bool,
}

/// Why a replay did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The locks could not be taken (another apply or replay holds them).
    #[error(transparent)]
    Lock(BrokerError),
    /// The move stopped.
    #[error(transparent)]
    Replay(ReplayError),
}

/// Moves `prepared.to_move` messages (fewer when the parking queue empties first),
/// holding the spec's and the vhost's locks, at most `batch` copies in flight. Stops
/// once the copies in flight are settled when `stop` is set; `moved` hears the running
/// total.
pub async fn run(
    client: &Client,
    spec: &str,
    prepared: &Prepared,
    batch: u16,
    lock_wait: Duration,
    stop: &AtomicBool,
    moved: &mut dyn FnMut(u64),
) -> Result<Replayed, RunError> {
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
        .map_err(RunError::Lock)?;
    let request = ReplayMove {
        vhost: &target.vhost,
        parking: &target.parking,
        rule: &target.rule,
        limit: prepared.to_move,
        batch,
    };
    let result = client.replay(&request, stop, moved).await;
    lock.release().await;
    let done = result.map_err(RunError::Replay)?;
    Ok(Replayed {
        moved: done,
        interrupted: done < prepared.to_move && stop.load(std::sync::atomic::Ordering::SeqCst),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::compile::{Options, compile};
    use crate::spec::load_str;

    fn contract(yaml: &str) -> Contract {
        let file = load_str(Path::new("t.yaml"), yaml.to_string()).unwrap();
        compile(&file, &Options::default())
            .unwrap_or_else(|d| panic!("{d:#?}"))
            .contract
    }

    const SPEC: &str = "version: 1
vhosts:
  a:
    services:
      orders:
        consumers:
          email:
            routing_keys: [order.created]
            retry: { delays: [1s, 2s], mode: reject-chain }
          audit:
            routing_keys: [order.created]
          sms:
            routing_keys: [order.created]
            retry: { delays: [1s], on_exhausted: drop }
  b:
    services:
      orders:
        consumers:
          email:
            routing_keys: [order.created]
            retry: { delays: [1s] }
";

    #[test]
    fn a_parking_queue_or_its_work_queue_names_the_consumer() {
        let contract = contract(SPEC);
        let by_parking = find(&contract, "orders.email.parking", Some("a")).unwrap();
        let by_work = find(&contract, "orders.email", Some("a")).unwrap();
        assert_eq!(by_parking, by_work);
        assert_eq!(by_parking.vhost, "a");
        assert_eq!(by_parking.mode, RetryMode::RejectChain);
        assert_eq!(by_parking.rule.work_queue, "orders.email");
        assert_eq!(by_parking.parking, "orders.email.parking");
    }

    #[test]
    fn a_queue_in_two_vhosts_needs_the_vhost() {
        let contract = contract(SPEC);
        let err = find(&contract, "orders.email.parking", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "queue `orders.email.parking` is in vhosts `a`, `b`: choose one with --vhost"
        );
    }

    #[test]
    fn other_queues_are_refused_with_the_choices() {
        let contract = contract(SPEC);
        let err = find(&contract, "orders.email.retry.1", Some("a")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "queue `orders.email.retry.1` in vhost `a` is not a parking queue of the spec, nor the work queue of a consumer that parks messages (did you mean `orders.email.parking`?); its parking queues: a/orders.email.parking"
        );
        let err = find(&contract, "orders.audit", Some("a")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "consumer `orders.audit` has no parking queue (it has no retry ladder): there is nothing to replay"
        );
        let err = find(&contract, "orders.sms", Some("a")).unwrap_err();
        assert!(err.to_string().contains("`on_exhausted: drop`"), "{err}");
    }
}
