//! No write after the locks are lost.
//!
//! An apply's locks are exclusive queues held by one AMQP connection (`lock`). A
//! process that is frozen (SIGSTOP, a stalled container, a paused VM) for longer than
//! about three heartbeats loses that connection, and with it its locks, while it is
//! frozen; thawed, it still believes in them until something tells it otherwise, and
//! another apply may hold them by then. Checking between phases only left it a whole
//! phase of writes over the other apply's work.
//!
//! So every write an apply sends while it holds locks is preceded by a confirmation
//! of the lock *by the broker, over the lock connection itself*: a passive
//! `queue.declare` of one of its lock queues. The broker answers it only while that
//! connection is open and owns the queue (another connection gets 405
//! RESOURCE_LOCKED, a closed one no answer at all), and an answer proves the lock was
//! held at some instant between asking and hearing back. An answer that took longer
//! than [`PROMPT`] is not trusted (the process may have been frozen while it waited in
//! the socket) and the lock is asked again; a write is sent only right after a
//! trusted answer. What remains is the time between that answer and the write leaving
//! the process, a few lines of code (docs/reliability.md has its measured size): a
//! freeze of more than three heartbeats exactly there is the one window left.
//!
//! The other half is the broker's: every other AMQP connection an apply writes over
//! asks for a heartbeat shorter than the lock's (`amqp::WRITER_HEARTBEAT_SECS`), so the
//! broker closes it before it frees the locks, and an AMQP write queued in the process
//! before a freeze and sent after it meets a closed connection, which cannot write.
//! HTTP has no such connection: for an HTTP write, the window is what remains.

use std::time::{Duration, Instant};

use lapin::Channel;
use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;

use super::BrokerError;
use super::amqp::{CloseReason, LOCK_HEARTBEAT_SECS};

/// How fast the broker must confirm a lock for the answer to count: a heartbeat and a
/// half. The broker frees a silent holder's locks only after about three heartbeats
/// (15 s; measured 12.0 s at a 4 s heartbeat on 3.10 and 4.0), counted from the last
/// frame it received, and the confirmation's own request is such a frame: an answer
/// this fresh was given while the lock was held, and the lock stays held for at least
/// a heartbeat after it. Half a heartbeat read a management API that a loaded machine
/// slowed past 2.5 s as a lost lock, and failed applies that held their locks the
/// whole time.
pub(super) const PROMPT: Duration = Duration::from_millis(LOCK_HEARTBEAT_SECS as u64 * 1500);

/// How many times a lock confirmed too slowly is asked again before it counts as lost:
/// a slow answer is doubt, not loss, and a fresh one settles it either way.
const SLOW_ANSWERS: usize = 3;

/// The broker's confirmation of a held lock, asked before each write.
pub(crate) struct Fence {
    /// A channel of the lock connection, used for nothing else.
    channel: Channel,
    /// One of the lock queues that connection holds: all of them live and die with it.
    queue: String,
    /// One confirmation at a time (requests of a channel are answered in order; the
    /// writes that wait meanwhile each ask afterwards).
    asking: tokio::sync::Mutex<()>,
    /// Why the lock connection closed, once it has: said with the lost locks.
    closed_because: CloseReason,
}

impl Fence {
    pub(super) fn new(channel: Channel, queue: String, closed_because: CloseReason) -> Fence {
        Fence {
            channel,
            queue,
            asking: tokio::sync::Mutex::new(()),
            closed_because,
        }
    }

    /// "the lock connection is closed", with the client's reason when it gave one.
    fn closed(&self) -> String {
        match self.closed_because.get() {
            Some(reason) => format!("the lock connection is closed: {reason}"),
            None => "the lock connection is closed".into(),
        }
    }

    /// `Ok` when the broker confirmed, promptly, that this process's lock connection
    /// is open and holds its lock queue; [`BrokerError::LocksLost`] otherwise (`sent`
    /// says whether the write this confirmation was for had already been sent once).
    pub(super) async fn confirm(&self, sent: bool) -> Result<(), BrokerError> {
        let _one_at_a_time = self.asking.lock().await;
        let lost = |reason: String| BrokerError::LocksLost {
            sent,
            reason: reason.into(),
        };
        let mut why = String::new();
        for _ in 0..SLOW_ANSWERS {
            if !self.channel.status().connected() {
                return Err(lost(self.closed()));
            }
            let asked = Instant::now();
            let passive = QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            };
            let answer = tokio::time::timeout(
                PROMPT,
                self.channel.queue_declare(
                    self.queue.as_str().into(),
                    passive,
                    FieldTable::default(),
                ),
            )
            .await;
            match answer {
                Ok(Ok(_)) if asked.elapsed() < PROMPT => return Ok(()),
                Ok(Ok(_)) | Err(_) => {
                    why = format!(
                        "the broker did not confirm the lock within {} s, {SLOW_ANSWERS} times",
                        PROMPT.as_secs_f64()
                    );
                }
                Ok(Err(error)) => {
                    return Err(lost(match self.closed_because.get() {
                        Some(_) => self.closed(),
                        None => format!("the broker did not confirm the lock ({error})"),
                    }));
                }
            }
        }
        Err(lost(why))
    }
}
