//! What `warren replay` prints: the move it is about to make, the question it asks,
//! and what it made.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::broker::ReplayError;
use crate::model::headers::{ORIGINAL_ROUTING_KEY_HEADER, REPLAY_COUNT_HEADER};
use crate::replay::{Outcome, Prepared, Ran};
use crate::spec::RetryMode;
use crate::text::count;

/// The retry mode as the spec writes it.
fn mode_name(mode: RetryMode) -> &'static str {
    match mode {
        RetryMode::Publish => "publish",
        RetryMode::Reject => "reject",
        RetryMode::RejectChain => "reject-chain",
        RetryMode::Native => "native",
    }
}

/// How a replayed message starts its ladder again, in the consumer's mode.
fn restart(mode: RetryMode) -> &'static str {
    match mode {
        RetryMode::Publish => "its retry count (`warren-retries`) is removed",
        RetryMode::Reject => "its `x-death` (the broker's rejection count) is removed",
        RetryMode::RejectChain => {
            "it enters the first work queue, and its `x-death` is removed so the broker's cycle check sees only the new path"
        }
        RetryMode::Native => {
            "it enters the work queue afresh: the queue's count of failed deliveries (`x-delivery-count`) belongs to the queue that delivered it, and its `x-death` is removed"
        }
    }
}

/// The move, before it is made (and all of a `--dry-run`).
pub fn preview(out: &mut dyn Write, prepared: &Prepared, batch: u16) -> io::Result<()> {
    let target = &prepared.target;
    let work = &target.rule.work_queue;
    writeln!(
        out,
        "Replay of consumer `{}.{}` (vhost `{}`, mode {}):",
        target.service,
        target.consumer,
        target.vhost,
        mode_name(target.mode)
    )?;
    writeln!(
        out,
        "  from  {}  ({} parked)",
        target.parking,
        count(prepared.parked as usize, "message")
    )?;
    writeln!(
        out,
        "  to    {}  ({} ready, {})",
        work,
        prepared.work.messages,
        count(prepared.work.consumers as usize, "consumer")
    )?;
    let limit = match prepared.limit {
        Some(limit) if limit < u64::from(prepared.parked) => format!(" (--limit {limit})"),
        _ => String::new(),
    };
    writeln!(
        out,
        "  moves {}{limit}, oldest first, at most {} in flight",
        count(prepared.to_move as usize, "message"),
        batch
    )?;
    writeln!(
        out,
        "  each starts its ladder again: {}; its first routing key is kept in `{ORIGINAL_ROUTING_KEY_HEADER}`; `{REPLAY_COUNT_HEADER}` counts its replays",
        restart(target.mode)
    )?;
    if prepared.work.consumers == 0 && prepared.to_move > 0 {
        writeln!(
            out,
            "  note: `{work}` has no consumer now: the messages will wait there until one starts"
        )?;
    }
    Ok(())
}

/// The question asked before the move (unless `--auto-approve`).
pub fn question(prepared: &Prepared) -> String {
    format!(
        "Replay {} to `{}`?",
        count(prepared.to_move as usize, "message"),
        prepared.target.rule.work_queue
    )
}

/// What a replay asked about and declined says: nothing was moved.
pub const CANCELLED: &str = "replay cancelled; nothing was moved";

/// The last text of a replay on stdout: that a dry run moved nothing, that nothing
/// was parked, or how many moved ([`done`]). Nothing for a replay that failed: its
/// error says it.
pub fn ended(out: &mut dyn Write, ran: &Ran) -> io::Result<()> {
    match (&ran.outcome, &ran.prepared) {
        (Outcome::DryRun, _) => writeln!(out, "Dry run: nothing was moved."),
        (Outcome::NothingToMove, _) => writeln!(out, "Nothing to replay."),
        (Outcome::Replayed(replayed), Some(prepared)) => {
            done(out, prepared, replayed.moved, replayed.interrupted)
        }
        _ => Ok(()),
    }
}

/// The end of a replay that ran.
pub fn done(
    out: &mut dyn Write,
    prepared: &Prepared,
    moved: u64,
    interrupted: bool,
) -> io::Result<()> {
    let target = &prepared.target;
    let moved_text = count(moved as usize, "message");
    if interrupted {
        writeln!(
            out,
            "Stopped on a signal after replaying {moved_text} of {} from `{}` to `{}`; the rest are still parked.",
            prepared.to_move, target.parking, target.rule.work_queue
        )
    } else if moved < prepared.to_move {
        writeln!(
            out,
            "Replayed {moved_text} from `{}` to `{}`: the parking queue held no more ready messages (another reader holds some, or a stopped replay's are still being returned).",
            target.parking, target.rule.work_queue
        )
    } else {
        writeln!(
            out,
            "Replayed {moved_text} from `{}` to `{}`.",
            target.parking, target.rule.work_queue
        )
    }
}

/// Why a replay stopped, and what the broker holds: the messages moved (each copy
/// confirmed, its original acknowledged), the ones still parked, and those whose copy
/// the broker never confirmed nor refused.
pub fn stopped(prepared: &Prepared, error: &ReplayError) -> String {
    let target = &prepared.target;
    let not_moved = prepared.to_move.saturating_sub(error.moved);
    let mut text = format!(
        "the replay stopped after moving {} of {} to `{}` (each copy confirmed by the broker, its original acknowledged); {not_moved} not moved, still in `{}`: {}",
        error.moved, prepared.to_move, target.rule.work_queue, target.parking, error.failure
    );
    if error.unconfirmed > 0 {
        text.push_str(&format!(
            ". Of those not moved, {} had a copy the broker neither confirmed nor refused: should it take such a copy after all, that message is in both queues (the copy carries `{REPLAY_COUNT_HEADER}`)",
            count(error.unconfirmed as usize, "message")
        ));
    }
    text
}

/// The JSON document of a replay that found its consumer, given its `error` (the
/// handler fills that in): [`document`] of what it moved.
pub fn document_of(ran: &Ran, dry_run: bool) -> impl FnOnce(Option<Value>) -> Value + use<> {
    let (prepared, moved) = (ran.prepared.clone(), ran.moved());
    move |error| document(prepared.as_ref(), dry_run, moved, error)
}

/// The JSON document of `warren replay --format json`: what was to move, what moved
/// and did not, and how many copies the broker never answered for (`moved` is
/// `None` for a dry run or a replay that never started), and the error, if any.
pub fn document(
    prepared: Option<&Prepared>,
    dry_run: bool,
    moved: Option<(u64, u64)>,
    error: Option<Value>,
) -> Value {
    let (moved, not_moved, unconfirmed) = match (moved, prepared) {
        (Some((moved, unconfirmed)), Some(p)) => (
            Some(moved),
            Some(p.to_move.saturating_sub(moved)),
            Some(unconfirmed),
        ),
        (Some((moved, unconfirmed)), None) => (Some(moved), None, Some(unconfirmed)),
        (None, _) => (None, None, None),
    };
    json!({
        "format": "warren-replay/1",
        "dry_run": dry_run,
        "replay": prepared.map(|p| json!({
            "vhost": p.target.vhost,
            "service": p.target.service,
            "consumer": p.target.consumer,
            "mode": mode_name(p.target.mode),
            "parking": {"queue": p.target.parking, "messages": p.parked},
            "work": {
                "queue": p.target.rule.work_queue,
                "messages": p.work.messages,
                "consumers": p.work.consumers,
            },
            "limit": p.limit,
            "to_move": p.to_move,
        })),
        "moved": moved,
        "not_moved": not_moved,
        "unconfirmed": unconfirmed,
        "error": error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::QueueNow;
    use crate::model::headers::Replay;
    use crate::replay::Target;

    fn prepared(mode: RetryMode, consumers: u32) -> Prepared {
        Prepared {
            target: Target {
                vhost: "shop".into(),
                service: "orders".into(),
                consumer: "email".into(),
                mode,
                parking: "orders.email.parking".into(),
                rule: Replay {
                    work_queue: "orders.email".into(),
                },
            },
            parked: 100,
            work: QueueNow {
                messages: 3,
                consumers,
            },
            limit: Some(40),
            to_move: 40,
        }
    }

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        f(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_preview_says_what_moves_and_how_it_restarts() {
        insta::assert_snapshot!(text(|o| preview(o, &prepared(RetryMode::Reject, 0), 100)));
        insta::assert_snapshot!(text(|o| preview(o, &prepared(RetryMode::Publish, 2), 10)));
    }

    #[test]
    fn the_end_says_how_many_moved() {
        let p = prepared(RetryMode::RejectChain, 1);
        insta::assert_snapshot!(text(|o| {
            done(o, &p, 40, false)?;
            done(o, &p, 12, true)?;
            done(o, &p, 30, false)
        }));
    }

    #[test]
    fn a_dry_run_and_nothing_parked_end_on_a_line_of_their_own() {
        let p = prepared(RetryMode::Publish, 2);
        let ended_with = |outcome| {
            let ran = Ran {
                prepared: Some(p.clone()),
                outcome,
            };
            text(|o| ended(o, &ran))
        };
        assert_eq!(ended_with(Outcome::DryRun), "Dry run: nothing was moved.\n");
        assert_eq!(ended_with(Outcome::NothingToMove), "Nothing to replay.\n");
        assert_eq!(ended_with(Outcome::Cancelled), "");
        assert_eq!(question(&p), "Replay 40 messages to `orders.email`?");
    }

    #[test]
    fn a_stop_says_what_moved_what_is_parked_and_why() {
        use crate::broker::{CopyRefusal, ReplayFailure};
        let p = prepared(RetryMode::Publish, 2);
        let full = ReplayError {
            moved: 10,
            unconfirmed: 0,
            failure: ReplayFailure::Refused(CopyRefusal::Nack {
                queue: "orders.email".into(),
                now: Some(QueueNow {
                    messages: 10,
                    consumers: 0,
                }),
            }),
        };
        assert_eq!(
            stopped(&p, &full),
            "the replay stopped after moving 10 of 40 to `orders.email` (each copy confirmed by the broker, its original acknowledged); 30 not moved, still in `orders.email.parking`: RabbitMQ refused a copy (basic.nack) for queue `orders.email`, which holds 10 messages ready: a queue with `max-length` or `max-length-bytes` and `overflow: reject-publish` refuses messages while it is full; replay again once its consumers have drained it; the refused message is still parked"
        );
        let blocked = ReplayError {
            moved: 0,
            unconfirmed: 1,
            failure: ReplayFailure::Refused(CopyRefusal::Blocked {
                reason: "low on memory".into(),
            }),
        };
        let text = stopped(&p, &blocked);
        assert!(
            text.contains("connection.blocked: low on memory")
                && text.contains("1 message had a copy the broker neither confirmed nor refused"),
            "{text}"
        );
    }

    #[test]
    fn the_document_holds_the_counts() {
        let p = prepared(RetryMode::Publish, 2);
        let doc = document(Some(&p), false, Some((40, 0)), None);
        assert_eq!(doc["format"], "warren-replay/1");
        assert_eq!(doc["replay"]["parking"]["messages"], 100);
        assert_eq!(doc["replay"]["to_move"], 40);
        assert_eq!(doc["replay"]["mode"], "publish");
        assert_eq!(doc["moved"], 40);
        assert_eq!(doc["not_moved"], 0);
        assert_eq!(doc["unconfirmed"], 0);
        assert!(doc["error"].is_null());
        let dry = document(Some(&p), true, None, None);
        assert!(dry["moved"].is_null() && dry["not_moved"].is_null());
        // A replay stopped after 10 of 40, 3 copies never answered for.
        let stopped = document(Some(&p), false, Some((10, 3)), Some(json!({})));
        assert_eq!(stopped["moved"], 10);
        assert_eq!(stopped["not_moved"], 30);
        assert_eq!(stopped["unconfirmed"], 3);
    }
}
