//! Carrying out one queue migration (`apply --migrate`), step by step; docs/migration.md
//! says what applications see.
//!
//! For queue `Q` and its temporary queue `T` (both named by
//! [`crate::model::migration`]):
//!
//! 1. **Move out** (while `Q` has its old declaration): declare `T` and the fanout
//!    exchange that feeds it; bind `T` wherever `Q` is bound, *then* unbind `Q`, so
//!    that every publish routes to a queue that exists; move `Q`'s messages to `T`
//!    with a shovel that acknowledges each only once `T` has it; once the consumers of
//!    `Q` hold no unacknowledged message, delete `Q` if the broker itself finds it
//!    empty at that moment, else move again.
//! 2. **Move back**: declare `Q` as the spec says; bind it wherever `T` is bound and
//!    where the spec binds it, *then* unbind `T`; move `T`'s messages into `Q`; delete
//!    `T` once the broker finds it empty, and the exchange.
//!
//! Every step reads what it acts on and is safe to repeat, so an apply stopped at any
//! point (a signal, a kill, a broker restart) is finished by the next
//! `apply --migrate`, which finds the temporary queue on the broker.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::Interrupt;
use super::progress::{Event, MigrationStep, Progress};
use crate::broker::{BrokerError, Client, Drained, QueueHeld};
use crate::model::ObjectId;
use crate::model::QueueType;
use crate::model::migration::temporary_name;
use crate::model::objects::Objects;
use crate::plan::{Migration, PassOn, Stage};

/// How old the broker's statistics can be: a count read this long after an event
/// includes it (8.2 s was the largest lag measured; docs/migration.md).
const STATISTICS_LAG: Duration = Duration::from_secs(10);

/// How long a drained queue's consumers may keep messages unacknowledged before the
/// migration stops (to be finished by the next `apply --migrate`).
const UNACKNOWLEDGED_WAIT: Duration = Duration::from_secs(600);

/// How long one shovel may take to move what its source held.
const MOVE_WAIT: Duration = Duration::from_secs(1800);

/// How long a shovel may find its source without ready messages before it is stopped.
const IDLE_MOVE: Duration = Duration::from_secs(2);

/// How often a running shovel is looked at.
const POLL: Duration = Duration::from_millis(200);

/// How many times in a row the guarded deletion may find the drained queue holding
/// messages again before the migration stops. Messages arrive in a queue whose
/// bindings were moved away only when something publishes to it by name (the default
/// exchange), its consumers give back what they took (a requeue, a closed channel), or
/// the temporary queue refuses the shovel's publishes (the shovel puts each back): a
/// source that keeps receiving them would be moved again forever.
const REFILLED_ROUNDS: usize = 5;

/// How long messages may wait in the queue being drained without their count going
/// below its lowest yet, while a shovel is said to move them, before the migration
/// stops: a shovel moves thousands of messages a second, so this long without progress
/// is a shovel that cannot deliver (its destination refuses its publishes, or it is not
/// running) or a queue filled faster than it is drained.
const STALL_WAIT: Duration = Duration::from_secs(120);

/// How long the broker may give no message counts for a queue being drained (the
/// queue is gone, or its statistics are not emitted) before the migration stops.
const COUNTS_MISSING_WAIT: Duration = Duration::from_secs(60);

/// Why a migration stopped before it finished.
#[derive(Debug)]
pub(super) enum Stop {
    /// A signal: stopped between two steps.
    Interrupted {
        /// The last step done.
        after: String,
    },
    /// A request failed, or the broker did not let the migration go on.
    Broker(BrokerError),
}

impl From<BrokerError> for Stop {
    fn from(error: BrokerError) -> Self {
        Stop::Broker(error)
    }
}

/// What a finished migration did.
#[derive(Debug, Default)]
pub(super) struct Moved {
    /// Shovel runs started (a run moves what its source held at its start).
    pub moves: usize,
}

struct Run<'a, 'p> {
    client: &'a Client,
    /// The queue whose messages move: the migrated queue, or a delay queue passing
    /// its messages on.
    queue: &'a ObjectId,
    /// The name of the fanout exchange and the shovel that move them (and, for a
    /// migration, of the temporary queue).
    temporary: String,
    interrupt: &'a Interrupt,
    progress: &'a mut Progress<'p>,
    moved: Moved,
}

/// Carries out `migration` from where it stands; `desired` is the plan's desired state
/// (the bindings the spec wants into the queue).
pub(super) async fn run(
    client: &Client,
    migration: &Migration,
    desired: &Objects,
    interrupt: &Interrupt,
    progress: &mut Progress<'_>,
) -> Result<Moved, Stop> {
    let mut run = Run {
        client,
        queue: &migration.queue,
        temporary: migration.temporary.clone(),
        interrupt,
        progress,
        moved: Moved::default(),
    };
    if migration.stage == Stage::MoveOut {
        run.move_out(migration).await?;
    }
    run.move_back(migration, desired).await?;
    Ok(run.moved)
}

/// Passes the messages of a delay queue the plan deletes on to the queue they expire
/// into ([`crate::plan::pass_on`]), and deletes it once the broker finds it empty:
/// its bindings are removed first (nothing new arrives through an exchange), then a
/// shovel moves its messages, acknowledging each only once the destination has it,
/// through a fanout exchange bound to the destination alone (each message keeps its
/// routing key). Safe to repeat: a stopped apply leaves the queue with what was not
/// moved yet, and the next `apply --migrate` plans the same pass-on again.
pub(super) async fn pass_on(
    client: &Client,
    pass_on: &PassOn,
    interrupt: &Interrupt,
    progress: &mut Progress<'_>,
) -> Result<Moved, Stop> {
    let Some(temporary) = temporary_name(&pass_on.from.name) else {
        return Err(stopped(
            "migrate",
            pass_on.from.to_string(),
            "its name is too long for the exchange that would move its messages".into(),
        ));
    };
    let mut run = Run {
        client,
        queue: &pass_on.from,
        temporary,
        interrupt,
        progress,
        moved: Moved::default(),
    };
    run.hand_over(&pass_on.into.name).await?;
    Ok(run.moved)
}

impl Run<'_, '_> {
    fn vhost(&self) -> &str {
        self.queue.vhost.as_deref().unwrap_or_default()
    }

    fn queue(&self) -> &str {
        &self.queue.name
    }

    fn temporary(&self) -> &str {
        &self.temporary
    }

    fn say(&mut self, step: MigrationStep<'_>) {
        let queue = self.queue;
        (self.progress)(&Event::Migration { queue, step });
    }

    /// A safe point between steps.
    fn check(&self, after: &str) -> Result<(), Stop> {
        if self.interrupt.is_set() {
            return Err(Stop::Interrupted {
                after: after.to_string(),
            });
        }
        Ok(())
    }

    async fn hand_over(&mut self, into: &str) -> Result<(), Stop> {
        let (client, vhost) = (self.client, self.vhost().to_string());
        let (queue, exchange) = (self.queue().to_string(), self.temporary().to_string());
        let Some(held) = client.queue(&vhost, &queue).await? else {
            // Already gone (a stopped apply deleted it): only the exchange may be left.
            client.delete_exchange(&vhost, &exchange).await?;
            return Ok(());
        };
        for binding in client.queue_bindings(&vhost, &queue).await? {
            client.unbind_queue(&vhost, &queue, &binding).await?;
        }
        client.declare_fanout(&vhost, &exchange).await?;
        client
            .bind_queue(&vhost, &exchange, into, "", &Value::Null)
            .await?;
        self.say(MigrationStep::PassingOn { into });
        self.check("the delay queue was unbound")?;
        let source = Source::of(&queue, queue_type(&held), Consumers::MayHoldMessages);
        self.drain(source, None).await?;
        client.delete_exchange(&vhost, &exchange).await?;
        self.say(MigrationStep::PassedOn { into });
        Ok(())
    }

    async fn move_out(&mut self, migration: &Migration) -> Result<(), Stop> {
        let (client, vhost) = (self.client, self.vhost().to_string());
        let (queue, temporary) = (self.queue().to_string(), self.temporary().to_string());
        let old_type = match client.queue(&vhost, &queue).await? {
            Some(old) => queue_type(&old),
            // Already gone (a stopped apply deleted it): nothing to move out.
            None => return Ok(()),
        };
        client
            .declare_queue(&vhost, &temporary, &migration.temporary_value)
            .await?;
        client.declare_fanout(&vhost, &temporary).await?;
        client
            .bind_queue(&vhost, &temporary, &temporary, "", &Value::Null)
            .await?;
        let bindings = client.queue_bindings(&vhost, &queue).await?;
        for binding in &bindings {
            client
                .bind_queue(
                    &vhost,
                    &binding.source,
                    &temporary,
                    &binding.routing_key,
                    &binding.arguments,
                )
                .await?;
        }
        self.say(MigrationStep::BindingsCopied {
            bindings: bindings.len(),
            temporary: &temporary,
        });
        for binding in &bindings {
            client.unbind_queue(&vhost, &queue, binding).await?;
        }
        self.say(MigrationStep::Unbound);
        self.check("the bindings were moved to the temporary queue")?;
        let after = migration.after.clone();
        let source = Source::of(&queue, old_type, Consumers::MayHoldMessages);
        self.drain(source, Some(&after)).await?;
        self.say(MigrationStep::DeclaredAnew);
        self.check("the old queue was emptied and deleted")
    }

    async fn move_back(&mut self, migration: &Migration, desired: &Objects) -> Result<(), Stop> {
        let (client, vhost) = (self.client, self.vhost().to_string());
        let (queue, temporary) = (self.queue().to_string(), self.temporary().to_string());
        client
            .declare_queue(&vhost, &queue, &migration.after)
            .await?;
        let Some(held) = client.queue(&vhost, &temporary).await? else {
            // Already moved back and deleted: only the exchange may be left.
            client.delete_exchange(&vhost, &temporary).await?;
            return Ok(());
        };
        let bindings = client.queue_bindings(&vhost, &temporary).await?;
        let copied: Vec<_> = bindings.iter().filter(|b| b.source != temporary).collect();
        for binding in &copied {
            client
                .bind_queue(
                    &vhost,
                    &binding.source,
                    &queue,
                    &binding.routing_key,
                    &binding.arguments,
                )
                .await?;
        }
        for wanted in migration.desired_bindings(desired) {
            client
                .bind_queue(
                    &vhost,
                    wanted["source"].as_str().unwrap_or_default(),
                    &queue,
                    wanted["routing_key"].as_str().unwrap_or_default(),
                    &wanted["arguments"],
                )
                .await?;
        }
        client.declare_fanout(&vhost, &temporary).await?;
        client
            .bind_queue(&vhost, &temporary, &queue, "", &Value::Null)
            .await?;
        self.say(MigrationStep::Rebound {
            bindings: copied.len(),
        });
        // Now that the queue receives everything, the temporary queue stops receiving.
        for binding in &bindings {
            client.unbind_queue(&vhost, &temporary, binding).await?;
        }
        self.check("the queue was declared anew and its bindings moved back")?;
        let source = Source::of(&temporary, queue_type(&held), Consumers::OnlyWarrens);
        self.drain(source, None).await?;
        client.delete_exchange(&vhost, &temporary).await?;
        self.say(MigrationStep::Finished);
        Ok(())
    }

    /// Moves `source`'s messages through the migration's exchange until the broker
    /// deletes `source` as empty; then declares `declare_after` under the same name at
    /// once, over the same connection.
    ///
    /// Each round first asks the queue itself how many messages it holds ready and how
    /// many consumers it has (a passive `queue.declare`): a queue with nothing ready
    /// needs no shovel, and one only warren consumes holds nothing unacknowledged once
    /// it has no consumer, so neither waits on the statistics.
    async fn drain(
        &mut self,
        source: Source<'_>,
        declare_after: Option<&Value>,
    ) -> Result<(), Stop> {
        let (client, vhost) = (self.client, self.vhost().to_string());
        let Source {
            name: source,
            queue_type: source_type,
            consumers,
        } = source;
        let mut refilled = 0;
        loop {
            let before = self.held(source).await?;
            if before.is_some_and(|held| held.ready == 0) {
                self.say(MigrationStep::NothingToMove { source });
            } else {
                self.move_messages(source).await?;
            }
            let unused = match consumers {
                Consumers::OnlyWarrens => self.without_consumers(source).await?,
                Consumers::MayHoldMessages => false,
            };
            if !unused {
                self.wait_unacknowledged(source).await?;
            }
            let timeout = Duration::from_secs(60);
            match client
                .delete_drained_queue(&vhost, source, source_type, declare_after, timeout)
                .await?
            {
                Drained::Deleted => return Ok(()),
                // Messages arrived after the shovel counted them: move again, a
                // bounded number of times.
                Drained::NotEmpty => {
                    refilled += 1;
                    if refilled >= REFILLED_ROUNDS {
                        let name = self.temporary();
                        return Err(stopped(
                            "migrate",
                            format!("queue {source:?} in vhost {vhost:?}"),
                            format!(
                                "it held messages again each time it was about to be deleted, {refilled} times in a row: something publishes to it by name (the default exchange), its consumers requeue what they take, or {name:?} refuses the shovel's publishes, which puts them back (a policy's `max-length` with `overflow: reject-publish`); stop that, then `warren apply --migrate` goes on from here"
                            ),
                        ));
                    }
                    self.say(MigrationStep::Refilled { source, refilled });
                    self.check("a move of messages")?;
                }
            }
        }
    }

    /// What `source` holds at this moment, as the queue itself counts it (`None` when
    /// it is gone).
    async fn held(&self, source: &str) -> Result<Option<QueueHeld>, Stop> {
        let queue = (self.vhost().to_string(), source.to_string());
        Ok(self.client.queues_held(&[queue]).await?.pop().flatten())
    }

    /// Whether `source` counts no consumer within [`IDLE_MOVE`]: a shovel just
    /// stopped leaves it a moment after its parameter is deleted.
    async fn without_consumers(&self, source: &str) -> Result<bool, Stop> {
        let started = Instant::now();
        loop {
            match self.held(source).await? {
                Some(held) if held.consumers > 0 => {}
                _ => return Ok(true),
            }
            if started.elapsed() >= IDLE_MOVE {
                return Ok(false);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// One shovel run that moves `source`'s ready messages through the migration's
    /// exchange, watched until the source shows none ready, then stopped.
    async fn move_messages(&mut self, source: &str) -> Result<(), Stop> {
        let (client, vhost) = (self.client, self.vhost().to_string());
        let name = self.temporary().to_string();
        {
            // A shovel of the same name may be left by a stopped apply, and one whose
            // parameter was written by a request cut off half way may never have
            // started: a parameter written again unchanged does not start it. So any
            // such shovel is removed first (what it had not had confirmed goes back).
            client.stop_move(&vhost, &name).await?;
            client.start_move(&vhost, &name, source, &name).await?;
            self.moved.moves += 1;
            self.say(MigrationStep::Moving { source });
            let started = Instant::now();
            let mut empty_since: Option<Instant> = None;
            let mut unconsumed_since: Option<Instant> = None;
            let mut uncounted_since: Option<Instant> = None;
            let mut fewest_ready: Option<u64> = None;
            let mut progress_at = Instant::now();
            while client.move_running(&vhost, &name).await? {
                let counts = client.queue_counts(&vhost, source).await?;
                let counts = counts.and_then(|c| Some((c.ready?, c.consumers?)));
                if counts.is_some() {
                    uncounted_since = None;
                } else if uncounted_since.get_or_insert_with(Instant::now).elapsed()
                    >= COUNTS_MISSING_WAIT
                {
                    return Err(stopped(
                        "migrate",
                        format!("queue {source:?} in vhost {vhost:?}"),
                        format!(
                            "the broker gave no message counts for it for {} s while a shovel moved its messages; see `GET /api/queues` and `GET /api/shovels`, then `warren apply --migrate` goes on from here",
                            COUNTS_MISSING_WAIT.as_secs()
                        ),
                    ));
                }
                if let Some((ready, _)) = counts {
                    if fewest_ready.is_none_or(|fewest| ready < fewest) {
                        fewest_ready = Some(ready);
                        progress_at = Instant::now();
                    } else if ready > 0 && progress_at.elapsed() >= STALL_WAIT {
                        let state = client
                            .move_state(&vhost, &name)
                            .await
                            .ok()
                            .flatten()
                            .unwrap_or_else(|| "not reported".into());
                        return Err(stopped(
                            "shovel",
                            format!("{name:?} in vhost {vhost:?}"),
                            format!(
                                "it moved no message of {source:?} for {} s ({} wait there; the broker reports the shovel as {state}): a policy may refuse publishes to {name:?} (`max-length` with `overflow: reject-publish`), or {source:?} is filled faster than it is drained; see `GET /api/shovels`, then `warren apply --migrate` goes on from here",
                                STALL_WAIT.as_secs(),
                                crate::text::count(ready, "message")
                            ),
                        ));
                    }
                }
                match counts {
                    // The shovel stops by itself after moving as many messages as the
                    // source held at its start; consumers of the source take some of
                    // them, so once the source shows no ready message the shovel is
                    // stopped (whatever it had not had confirmed goes back to the
                    // source, and the deletion below finds it).
                    Some((0, _)) => {
                        unconsumed_since = None;
                        let since = *empty_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= IDLE_MOVE {
                            client.stop_move(&vhost, &name).await?;
                            break;
                        }
                    }
                    // Messages wait and nothing consumes them, the shovel included,
                    // for longer than the statistics lag: the shovel is not running.
                    // Start it again.
                    Some((_, 0)) => {
                        empty_since = None;
                        let since = *unconsumed_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= STATISTICS_LAG * 2 {
                            self.say(MigrationStep::MoveRestarted);
                            client.stop_move(&vhost, &name).await?;
                            client.start_move(&vhost, &name, source, &name).await?;
                            self.moved.moves += 1;
                            unconsumed_since = None;
                        }
                    }
                    _ => {
                        empty_since = None;
                        unconsumed_since = None;
                    }
                }
                if started.elapsed() > MOVE_WAIT {
                    return Err(stopped(
                        "shovel",
                        format!("{name:?} in vhost {vhost:?}"),
                        format!(
                            "it did not finish moving the messages of {source:?} within {} s; see `GET /api/shovels`",
                            MOVE_WAIT.as_secs()
                        ),
                    ));
                }
                self.check("messages were being moved")?;
                tokio::time::sleep(POLL).await;
            }
        }
        Ok(())
    }

    /// Waits until the broker's statistics, counted after the queue stopped receiving,
    /// show none of its messages held unacknowledged by consumers: deleting a queue
    /// drops what its consumers have not acknowledged yet.
    async fn wait_unacknowledged(&mut self, source: &str) -> Result<(), Stop> {
        let (client, vhost) = (self.client, self.vhost().to_string());
        let started = Instant::now();
        let mut first_zero: Option<Instant> = None;
        loop {
            let held = client
                .queue_counts(&vhost, source)
                .await?
                .and_then(|c| c.unacknowledged);
            match held {
                Some(0) | None => {
                    let since = *first_zero.get_or_insert_with(Instant::now);
                    if since.elapsed() >= STATISTICS_LAG {
                        return Ok(());
                    }
                }
                Some(count) => {
                    first_zero = None;
                    self.say(MigrationStep::WaitingForAcknowledgements {
                        source,
                        unacknowledged: count,
                    });
                }
            }
            if started.elapsed() > UNACKNOWLEDGED_WAIT {
                return Err(stopped(
                    "migrate",
                    format!("queue {source:?} in vhost {vhost:?}"),
                    format!(
                        "its consumers still hold unacknowledged messages after {} s; `warren apply --migrate` goes on from here",
                        UNACKNOWLEDGED_WAIT.as_secs()
                    ),
                ));
            }
            self.check("the messages were moved; waiting for acknowledgements")?;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// A migration that cannot go on: `method` and `path` say what was waited for,
/// `reason` why it stopped and what to do.
fn stopped(method: &str, path: String, reason: String) -> Stop {
    Stop::Broker(BrokerError::Api {
        method: method.into(),
        path,
        status: 0,
        reason: reason.into(),
    })
}

/// Who consumes a queue being drained, which decides whether its unacknowledged
/// messages must be waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Consumers {
    /// Applications may (the migrated queue, a delay queue): their unacknowledged
    /// messages are counted only by the statistics (a `basic.get` holds them without a
    /// consumer), so they are waited for as the statistics lag.
    MayHoldMessages,
    /// Only warren's shovel does (the temporary queue): once the queue itself counts no
    /// consumer, nothing of it is unacknowledged.
    OnlyWarrens,
}

/// A queue to drain and delete.
#[derive(Debug, Clone, Copy)]
struct Source<'a> {
    name: &'a str,
    queue_type: QueueType,
    consumers: Consumers,
}

impl<'a> Source<'a> {
    fn of(name: &'a str, queue_type: QueueType, consumers: Consumers) -> Source<'a> {
        Source {
            name,
            queue_type,
            consumers,
        }
    }
}

fn queue_type(queue: &Value) -> QueueType {
    let declared = queue["arguments"]["x-queue-type"]
        .as_str()
        .or_else(|| queue["type"].as_str())
        .unwrap_or("classic");
    QueueType::from_name(declared)
}
