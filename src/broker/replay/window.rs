//! The move itself: a window of copies in flight, each original acknowledged once the
//! broker has confirmed its copy, and rejected back to the parking queue when it has
//! refused it.
//!
//! Copies are published ahead of their confirms, at most `batch` at once, and the
//! window is settled in order: an original's ack goes out before the copy `batch`
//! places after it is published, so a kill of warren leaves at most `batch` messages
//! whose copy the broker took and whose original's ack it did not.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::{FutureExt, Stream, StreamExt};
use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions, ConfirmSelectOptions,
};
use lapin::{Channel, Confirmation, Connection, Event, PublisherConfirm};

use super::super::amqp::answered;
use super::copy::rewrite;
use super::{
    Client, CopyRefusal, NOT_FOUND, Publisher, ReplayError, ReplayFailure, ReplayMove,
    declare_passive, failure_of, new_channel, reply_of,
};

/// How often a wait on the publishing connection looks at whether it is blocked.
const BLOCKED_POLL: Duration = Duration::from_millis(100);

/// How long warren waits on a blocked publishing connection before it stops: what the
/// broker read before it blocked is confirmed at once; the rest waits for the alarm.
const BLOCKED_WAIT: Duration = Duration::from_secs(5);

/// A copy published and not yet settled: the delivery tag of its original.
struct InFlight {
    tag: u64,
    confirm: PublisherConfirm,
}

/// What a wait on the publishing connection came to.
enum Waited<T> {
    Done(T),
    /// The connection stayed blocked for [`BLOCKED_WAIT`].
    Blocked,
    /// The broker, not blocked, did not answer within `--timeout`.
    Unanswered,
}

/// One replay's channels and what it has done so far.
pub(super) struct Window<'a> {
    /// Gets, acks and rejects (on the taking connection, which never publishes and so
    /// is never blocked).
    taker: Channel,
    /// The taking connection, for passive declares (a missing queue closes a channel).
    taking: &'a Connection,
    /// Publishes, in confirm mode.
    sender: Channel,
    sending: &'a Connection,
    events: Pin<Box<dyn Stream<Item = Event> + Send>>,
    /// How long the broker has to answer one request (`--timeout`), when it has not
    /// blocked the publishing connection.
    wait: Duration,
    /// Whether a publish or confirm went unanswered: the copies after it had the same
    /// time, so only what is ready counts for them.
    unanswered: bool,
    blocked_reason: Option<String>,
    blocked_since: Option<Instant>,
    request: &'a ReplayMove<'a>,
    publisher: &'a Publisher,
    /// The client that holds the replay's locks: each message is taken only once the
    /// broker confirms them (see `broker::fence`).
    client: &'a Client,
    in_flight: VecDeque<InFlight>,
    taken: u64,
    acked: u64,
    /// Originals whose copies are confirmed and whose ack is not sent yet (one
    /// `multiple` ack sends them), and the last one's tag.
    unacked: u64,
    last_confirmed: Option<u64>,
    uncertain: u64,
    empty: bool,
    stopped: Option<ReplayFailure>,
}

impl<'a> Window<'a> {
    /// The channels of a replay, once both queues are known to exist.
    pub(super) async fn open(
        taking: &'a Connection,
        sending: &'a Connection,
        request: &'a ReplayMove<'a>,
        publisher: &'a Publisher,
        client: &'a Client,
    ) -> Result<Window<'a>, ReplayFailure> {
        let wait = client.endpoint.timeout;
        let check = new_channel(taking, wait).await?;
        for queue in [request.parking, request.rule.work_queue.as_str()] {
            if declare_passive(&check, queue, wait).await?.is_none() {
                return Err(ReplayFailure::QueueMissing {
                    vhost: request.vhost.to_string(),
                    queue: queue.to_string(),
                });
            }
        }
        crate::broker::amqp::close_channel(&check).await;
        let taker = new_channel(taking, wait).await?;
        let sender = new_channel(sending, wait).await?;
        answered(wait, sender.confirm_select(ConfirmSelectOptions::default()))
            .await
            .map_err(|e| failure_of(&e))?;
        Ok(Window {
            taker,
            taking,
            sender,
            sending,
            events: Box::pin(sending.events_listener()),
            wait,
            unanswered: false,
            blocked_reason: None,
            blocked_since: None,
            request,
            publisher,
            client,
            in_flight: VecDeque::new(),
            taken: 0,
            acked: 0,
            unacked: 0,
            last_confirmed: None,
            uncertain: 0,
            empty: false,
            stopped: None,
        })
    }

    /// Copies in flight, and originals whose copies are confirmed and not yet acked:
    /// the messages a kill now could leave in both queues.
    fn held(&self) -> u64 {
        self.in_flight.len() as u64 + self.unacked
    }

    /// Originals acknowledged so far.
    pub(super) fn acked(&self) -> u64 {
        self.acked
    }

    /// Moves until the limit, an empty parking queue, a refusal or `stop`; settles
    /// every copy in flight before it returns.
    pub(super) async fn run(
        &mut self,
        stop: &AtomicBool,
        moved: &mut dyn FnMut(u64),
    ) -> Result<u64, ReplayError> {
        // Acks go out in one `multiple` ack per half window: the copies in flight and
        // the confirmed originals not yet acknowledged stay within `batch`.
        let flush_at = u64::from(self.request.batch / 2).max(1);
        loop {
            self.fill(stop).await;
            let Some(next) = self.in_flight.pop_front() else {
                break;
            };
            self.settle(next).await;
            if self.unacked >= flush_at || self.in_flight.is_empty() {
                self.flush_acks(moved).await;
            }
        }
        self.flush_acks(moved).await;
        match self.stopped.take() {
            None => Ok(self.acked),
            Some(failure) => Err(ReplayError {
                moved: self.acked,
                unconfirmed: self.uncertain,
                failure,
            }),
        }
    }

    /// Takes parked messages and publishes their copies until the window is full.
    async fn fill(&mut self, stop: &AtomicBool) {
        while self.stopped.is_none()
            && !self.empty
            && !stop.load(Ordering::SeqCst)
            && self.held() < u64::from(self.request.batch.max(1))
            && self.taken < self.request.limit
        {
            if self.sending.status().blocked() {
                let reason = self.blocked_reason();
                self.stop(ReplayFailure::Refused(CopyRefusal::Blocked { reason }));
                break;
            }
            // No message is moved once the locks are lost: the copies in flight are
            // settled and their originals acknowledged, nothing more is taken.
            if let Err(lost) = self.client.fenced(false).await {
                self.stop(ReplayFailure::Broker(lost));
                break;
            }
            let got = answered(
                self.wait,
                self.taker.basic_get(
                    self.request.parking.into(),
                    BasicGetOptions { no_ack: false },
                ),
            )
            .await;
            let message = match got {
                Ok(Some(message)) => message,
                Ok(None) => {
                    self.empty = true;
                    break;
                }
                Err(error) => {
                    let failure = match reply_of(&error) {
                        Some((NOT_FOUND, _)) => ReplayFailure::QueueMissing {
                            vhost: self.request.vhost.to_string(),
                            queue: self.request.parking.to_string(),
                        },
                        _ => failure_of(&error),
                    };
                    self.stop(failure);
                    break;
                }
            };
            self.taken += 1;
            let delivery = message.delivery;
            let tag = delivery.delivery_tag;
            // The broker would close the channel on this publish; stop before it.
            if let Some(reply) = self.publisher.refusal(&delivery.properties) {
                self.requeue(tag).await;
                self.stop(ReplayFailure::UserId { reply });
                break;
            }
            let properties = rewrite(&delivery.properties, self.request.rule);
            let sender = self.sender.clone();
            let work = self.request.rule.work_queue.clone();
            let publish = Box::pin(async move {
                let options = BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                };
                sender
                    .basic_publish(
                        "".into(),
                        work.as_str().into(),
                        options,
                        &delivery.data,
                        properties,
                    )
                    .await
            });
            match self.unless_blocked(publish).await {
                Waited::Done(Ok(confirm)) => self.in_flight.push_back(InFlight { tag, confirm }),
                Waited::Done(Err(error)) => {
                    self.requeue(tag).await;
                    self.stop(failure_of(&error));
                }
                // Queued in warren and not sent: sent only if the alarm clears before
                // warren closes the connection.
                Waited::Blocked => self.stop_blocked(tag).await,
                Waited::Unanswered => self.stop_unanswered(tag, "read a copy").await,
            }
        }
    }

    /// The broker's word on the oldest copy in flight, and its original's fate.
    async fn settle(&mut self, next: InFlight) {
        let InFlight { tag, confirm } = next;
        match self.unless_blocked(confirm).await {
            Waited::Done(Ok(Confirmation::Ack(None))) => {
                self.unacked += 1;
                self.last_confirmed = Some(tag);
            }
            Waited::Done(Ok(
                Confirmation::Ack(Some(returned)) | Confirmation::Nack(Some(returned)),
            )) => {
                self.requeue(tag).await;
                let queue = self.request.rule.work_queue.clone();
                let missing = self.work_now().await.is_none();
                self.stop(ReplayFailure::Refused(CopyRefusal::Returned {
                    queue,
                    code: returned.reply_code,
                    text: returned.reply_text.to_string(),
                    missing,
                }));
            }
            Waited::Done(Ok(Confirmation::Nack(None))) => {
                self.requeue(tag).await;
                let queue = self.request.rule.work_queue.clone();
                let now = self.work_now().await;
                self.stop(ReplayFailure::Refused(CopyRefusal::Nack { queue, now }));
            }
            Waited::Done(Ok(Confirmation::NotRequested)) => {
                self.uncertain += 1;
                self.requeue(tag).await;
                self.stop(ReplayFailure::Channel(
                    "the broker did not confirm a publish (confirm mode is off)".into(),
                ));
            }
            Waited::Done(Err(error)) => {
                self.uncertain += 1;
                self.requeue(tag).await;
                self.stop(failure_of(&error));
            }
            Waited::Blocked => self.stop_blocked(tag).await,
            Waited::Unanswered => self.stop_unanswered(tag, "confirm a copy").await,
        }
    }

    /// Acknowledges every original whose copy is confirmed, in one `multiple` ack: the
    /// window is settled in order, so every earlier delivery is acknowledged or
    /// rejected already. `moved` hears the new total.
    async fn flush_acks(&mut self, moved: &mut dyn FnMut(u64)) {
        let Some(tag) = self.last_confirmed.take() else {
            return;
        };
        let count = std::mem::take(&mut self.unacked);
        match answered(
            self.wait,
            self.taker
                .basic_ack(tag, BasicAckOptions { multiple: true }),
        )
        .await
        {
            Ok(()) => {
                self.acked += count;
                moved(self.acked);
            }
            Err(error) => {
                // The copies are in the work queue; their originals come back to the
                // parking queue when the connection closes.
                self.uncertain += count;
                self.stop(failure_of(&error));
            }
        }
    }

    /// Waits for `work`, unless the publishing connection stays blocked for
    /// [`BLOCKED_WAIT`] (counted once per replay: a window of copies the broker has
    /// not read waits that long in all), or the broker, not blocking it, leaves it
    /// unanswered for `--timeout` (counted once per replay too). The client does not
    /// always answer a publish or a confirm whose connection is gone, and a broker
    /// stuck on a request keeps the connection open: neither holds a replay forever.
    async fn unless_blocked<F: Future + Unpin>(&mut self, mut work: F) -> Waited<F::Output> {
        let mut unblocked_wait = Duration::ZERO;
        loop {
            let blocked_out = self
                .blocked_since
                .is_some_and(|since| since.elapsed() >= BLOCKED_WAIT);
            let limit = if self.unanswered {
                Duration::ZERO
            } else {
                self.wait
            };
            let unanswered = self.blocked_since.is_none() && unblocked_wait >= limit;
            if blocked_out || unanswered {
                // Whatever is ready now still counts.
                return match (&mut work).now_or_never() {
                    Some(output) => Waited::Done(output),
                    None if blocked_out => Waited::Blocked,
                    None => {
                        self.unanswered = true;
                        Waited::Unanswered
                    }
                };
            }
            let polled = Instant::now();
            match tokio::time::timeout(BLOCKED_POLL, &mut work).await {
                Ok(output) => return Waited::Done(output),
                Err(_) if self.sending.status().blocked() => {
                    self.blocked_since.get_or_insert_with(Instant::now);
                }
                Err(_) => {
                    self.blocked_since = None;
                    unblocked_wait += polled.elapsed();
                }
            }
        }
    }

    /// The reason of the broker's last `connection.blocked`.
    fn blocked_reason(&mut self) -> String {
        while let Some(Some(event)) = self.events.next().now_or_never() {
            match event {
                Event::ConnectionBlocked(reason) => self.blocked_reason = Some(reason),
                Event::ConnectionUnblocked => self.blocked_reason = None,
                _ => {}
            }
        }
        self.blocked_reason
            .clone()
            .unwrap_or_else(|| "no reason given".into())
    }

    /// Stops on a blocked connection: the copy of `tag` is not known to be sent (it is
    /// counted as uncertain) and its original goes back to the parking queue.
    async fn stop_blocked(&mut self, tag: u64) {
        self.uncertain += 1;
        self.requeue(tag).await;
        let reason = self.blocked_reason();
        self.stop(ReplayFailure::Refused(CopyRefusal::Blocked { reason }));
    }

    /// Stops on a publish or confirm the broker left unanswered for `--timeout`
    /// (`what` it did not do): the copy of `tag` is not known to be taken (it is counted
    /// as uncertain) and its original goes back to the parking queue.
    async fn stop_unanswered(&mut self, tag: u64, what: &str) {
        self.uncertain += 1;
        self.requeue(tag).await;
        self.stop(ReplayFailure::Channel(format!(
            "the broker did not {what} within {} s (--timeout)",
            self.wait.as_secs()
        )));
    }

    /// Rejects an original with `requeue`: the broker puts it back in the parking
    /// queue, in its place where the queue type keeps places. Should the reject not
    /// go out, the connection's close returns it all the same.
    async fn requeue(&mut self, tag: u64) {
        let options = BasicNackOptions {
            multiple: false,
            requeue: true,
        };
        if let Err(error) = answered(self.wait, self.taker.basic_nack(tag, options)).await {
            self.stop(failure_of(&error));
        }
    }

    /// The work queue's counts now, `None` when it does not exist.
    async fn work_now(&self) -> Option<super::QueueNow> {
        let channel = new_channel(self.taking, self.wait).await.ok()?;
        let now = declare_passive(&channel, &self.request.rule.work_queue, self.wait)
            .await
            .ok()
            .flatten();
        if now.is_some() {
            crate::broker::amqp::close_channel(&channel).await;
        }
        now
    }

    /// Stops taking messages; the first reason is the one reported.
    fn stop(&mut self, failure: ReplayFailure) {
        self.stopped.get_or_insert(failure);
    }
}
