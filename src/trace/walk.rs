//! The walk of a trace: each copy of the message from the queue it entered to its end,
//! delivery by delivery, as the consumer contract says its consumer fails and retries
//! and as the broker expires and dead-letters it. Copies a dead letter splits off wait
//! in `pending` and are walked in turn, up to a bound on the work.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::compile::contract::{ConsumerContract, RetryContract};
use crate::model::TargetVersion;
use crate::model::dead_letter::{Death, DeathReason, Letter};
use crate::model::headers::{
    DEATH_HEADERS, DELIVERY_COUNT_HEADER, ORIGINAL_ROUTING_KEY_HEADER, RETRY_COUNT_HEADER,
};
use crate::model::queue_facts::QueueFacts;
use crate::model::routing::{Route, Routes};
use crate::spec::RetryMode;
use crate::spec::duration::Duration;

use super::report::{CopyEnd, Event, MessageCopy, steps};

/// Work a trace does at most: a topology that multiplies copies on every dead letter
/// would otherwise never end.
const MAX_STEPS: usize = 10_000;

/// The state of a trace in progress.
pub(super) struct Walk<'w, 'a> {
    pub(super) vhost: &'a str,
    pub(super) topology: &'w Routes<'a>,
    pub(super) facts: &'w BTreeMap<&'a str, &'w QueueFacts<'a>>,
    pub(super) consumers: &'w [&'a ConsumerContract],
    pub(super) failures: usize,
    pub(super) target: TargetVersion,
    pub(super) copies: Vec<MessageCopy>,
    /// Copies to walk: the message, the queue it entered, the copy it split from, and
    /// the deliveries of it (and of the copies it split from) to each consumer.
    pub(super) pending: Vec<Pending>,
    pub(super) steps: usize,
    pub(super) notes: Vec<String>,
}

/// A copy waiting to be walked.
#[derive(Clone)]
pub(super) struct Pending {
    pub(super) letter: Letter,
    pub(super) queue: String,
    pub(super) split_from: Option<usize>,
    /// Deliveries so far, per consumer: a consumer fails the first `failures` of each
    /// copy, which is what it can count itself (`x-death`, `warren-retries`).
    pub(super) deliveries: Vec<usize>,
}

/// What the consumer does with a failed delivery.
enum Action<'c> {
    Reject(u64),
    /// `mode: native`: reject with requeue; the failed deliveries so far.
    Requeue(&'c RetryContract, usize),
    Retry(&'c RetryContract, usize),
    Park(&'c RetryContract),
    Drop,
}

impl<'w, 'a> Walk<'w, 'a> {
    pub(super) fn run(&mut self) {
        // Copies are walked in the order they appear: a queue-first, breadth-wise order
        // would read no better and cost the same.
        let mut next = 0;
        while next < self.pending.len() {
            let pending = self.pending[next].clone();
            next += 1;
            let number = self.copies.len() + 1;
            let mut copy = MessageCopy {
                number,
                split_from: pending.split_from,
                events: Vec::new(),
                outcome: CopyEnd::Unfinished,
                x_death: Vec::new(),
            };
            let (outcome, deaths) = self.follow(pending, number, &mut copy.events);
            copy.outcome = outcome;
            copy.x_death = deaths;
            self.copies.push(copy);
        }
    }

    /// Follows one copy from `queue` to its end.
    fn follow(
        &mut self,
        start: Pending,
        number: usize,
        events: &mut Vec<Event>,
    ) -> (CopyEnd, Vec<Death>) {
        let mut letter = start.letter.clone();
        let outcome = self.walk(start, number, events, &mut letter);
        (outcome, letter.deaths)
    }

    /// Walks one copy; `letter` is the message as it is at the end.
    #[expect(
        clippy::too_many_lines,
        reason = "the broker's routing of one message, step by step, as RabbitMQ does it"
    )]
    fn walk(
        &mut self,
        start: Pending,
        number: usize,
        events: &mut Vec<Event>,
        letter: &mut Letter,
    ) -> CopyEnd {
        let Pending {
            mut queue,
            mut deliveries,
            ..
        } = start;
        loop {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                if !self
                    .notes
                    .iter()
                    .any(|n| n.starts_with("the trace stopped"))
                {
                    self.notes.push(format!(
                        "the trace stopped after {}: this topology keeps copying the message",
                        crate::text::count(MAX_STEPS, "step")
                    ));
                }
                return CopyEnd::Unfinished;
            }
            let Some(facts) = self.facts.get(queue.as_str()).copied() else {
                return CopyEnd::Dropped {
                    because: format!("queue `{queue}` does not exist"),
                };
            };
            if let Some((index, consumer)) = self.consumer_of(&queue) {
                deliveries[index] += 1;
                let attempt = deliveries[index];
                let name = format!("{}.{}", consumer.service, consumer.consumer);
                events.push(Event::Delivered {
                    queue: queue.clone(),
                    consumer: name.clone(),
                    attempt,
                    routing_key: letter.routing_keys.first().cloned().unwrap_or_default(),
                    x_death: letter.deaths.clone(),
                    retries_header: letter
                        .headers
                        .get(RETRY_COUNT_HEADER)
                        .and_then(Value::as_u64),
                });
                if attempt > self.failures {
                    events.push(Event::Processed {
                        consumer: name.clone(),
                    });
                    return CopyEnd::Processed {
                        queue,
                        consumer: name,
                    };
                }
                if consumer.retry.is_none() {
                    let note = format!(
                        "consumer `{name}` has no retry ladder: a failure is taken as a reject without requeue"
                    );
                    if !self.notes.contains(&note) {
                        self.notes.push(note);
                    }
                }
                match action(consumer, letter) {
                    Action::Reject(retries) => {
                        events.push(Event::Rejected { retries });
                        match self.dead_letter(
                            letter,
                            facts,
                            DeathReason::Rejected,
                            number,
                            &deliveries,
                            events,
                        ) {
                            Ok((next_letter, next_queue)) => {
                                *letter = next_letter;
                                queue = next_queue;
                            }
                            Err(outcome) => return outcome,
                        }
                    }
                    Action::Requeue(retry, failed_before) => {
                        let failed = failed_before + 1;
                        letter.headers.insert(
                            DELIVERY_COUNT_HEADER.to_string(),
                            Value::from(failed as u64),
                        );
                        if failed <= retry.max_retries {
                            let step = &retry.schedule[failed_before];
                            events.push(Event::Requeued {
                                retry: step.retry,
                                delay: step.delay.clone(),
                                queue: queue.clone(),
                            });
                            continue;
                        }
                        // Past the delivery limit: the queue dead-letters it.
                        match self.dead_letter(
                            letter,
                            facts,
                            DeathReason::DeliveryLimit,
                            number,
                            &deliveries,
                            events,
                        ) {
                            Ok((next_letter, next_queue)) => {
                                *letter = next_letter;
                                queue = next_queue;
                            }
                            Err(outcome) => return outcome,
                        }
                    }
                    Action::Retry(retry, n) => {
                        let step = &retry.schedule[n];
                        let mut copy = letter.clone();
                        for header in DEATH_HEADERS {
                            copy.headers.remove(*header);
                        }
                        copy.deaths.clear();
                        copy.headers
                            .entry(ORIGINAL_ROUTING_KEY_HEADER.to_string())
                            .or_insert_with(|| {
                                Value::from(
                                    letter.routing_keys.first().cloned().unwrap_or_default(),
                                )
                            });
                        copy.headers
                            .insert(RETRY_COUNT_HEADER.to_string(), Value::from(n as u64 + 1));
                        copy.routing_keys = vec![step.routing_key.clone()];
                        let route =
                            self.topology
                                .route(self.vhost, &retry.exchange, copy.message());
                        events.push(Event::Retried {
                            retry: step.retry,
                            tier: step.tier,
                            delay: step.delay.clone(),
                            exchange: retry.exchange.clone(),
                            routing_key: step.routing_key.clone(),
                            route: steps(&route),
                            queues: route.queues.iter().map(|q| q.to_string()).collect(),
                        });
                        match self.spread(copy, &route.queues, number, &deliveries) {
                            Some((next_letter, next_queue)) => {
                                *letter = next_letter;
                                queue = next_queue;
                            }
                            None => {
                                return CopyEnd::Dropped {
                                    because: format!(
                                        "the retry publish to `{}` with key `{}` reaches no queue: the broker returns it and the consumer does not ack",
                                        retry.exchange, step.routing_key
                                    ),
                                };
                            }
                        }
                    }
                    Action::Park(retry) => {
                        let exchange = retry.on_exhausted.exchange.as_deref().unwrap_or_default();
                        let key = retry.on_exhausted.routing_key.clone().unwrap_or_default();
                        let mut parked = letter.clone();
                        if !self.target.interprets_published_x_death() {
                            parked.deaths.clear();
                        }
                        parked.routing_keys = vec![key.clone()];
                        let route = self.topology.route(self.vhost, exchange, parked.message());
                        events.push(Event::ParkPublished {
                            exchange: exchange.to_string(),
                            routing_key: key.clone(),
                            route: steps(&route),
                            queues: route.queues.iter().map(|q| q.to_string()).collect(),
                        });
                        match self.spread(parked, &route.queues, number, &deliveries) {
                            Some((next_letter, next_queue)) => {
                                *letter = next_letter;
                                queue = next_queue;
                            }
                            None => {
                                return CopyEnd::Dropped {
                                    because: format!(
                                        "the parking publish to `{exchange}` with key `{key}` reaches no queue"
                                    ),
                                };
                            }
                        }
                    }
                    Action::Drop => {
                        let because = "retries used up and the ladder drops (`on_exhausted: drop`)";
                        events.push(Event::Acked {
                            because: because.to_string(),
                        });
                        return CopyEnd::Dropped {
                            because: because.to_string(),
                        };
                    }
                }
                continue;
            }
            // No consumer of the spec reads this queue.
            let parking = self.consumers.iter().any(|c| {
                c.retry
                    .as_ref()
                    .and_then(|r| r.on_exhausted.queue.as_deref())
                    == Some(queue.as_str())
            });
            let Some(ttl) = facts.message_ttl.filter(|_| !parking) else {
                return if parking {
                    CopyEnd::Parked { queue }
                } else {
                    CopyEnd::Stays { queue }
                };
            };
            let (delay, tier) = self.delay_of(&queue, ttl);
            events.push(Event::Waits {
                queue: queue.clone(),
                ttl_ms: ttl,
                delay,
                tier,
            });
            match self.dead_letter(
                letter,
                facts,
                DeathReason::Expired,
                number,
                &deliveries,
                events,
            ) {
                Ok((next_letter, next_queue)) => {
                    *letter = next_letter;
                    queue = next_queue;
                }
                Err(outcome) => return outcome,
            }
        }
    }

    /// Dead-letters from `facts`' queue; the first queue reached continues this copy,
    /// the others start copies of their own.
    fn dead_letter(
        &mut self,
        letter: &Letter,
        facts: &QueueFacts<'a>,
        reason: DeathReason,
        number: usize,
        deliveries: &[usize],
        events: &mut Vec<Event>,
    ) -> Result<(Letter, String), CopyEnd> {
        let queue = facts.queue.name.as_str();
        let dead = self.topology.dead_letter(
            self.vhost,
            queue,
            reason,
            letter,
            facts.dead_letter_exchange,
            facts.dead_letter_routing_key,
        );
        let route = dead.route.as_ref();
        if let Some(route) = route
            && !route.unknown_types.is_empty()
        {
            self.note_unknown_types(route);
        }
        events.push(Event::DeadLettered {
            queue: queue.to_string(),
            reason,
            exchange: facts.dead_letter_exchange.map(str::to_string),
            routing_key: dead
                .letter
                .routing_keys
                .first()
                .cloned()
                .unwrap_or_default(),
            route: route.map(steps).unwrap_or_default(),
            queues: dead.queues.iter().map(|q| q.to_string()).collect(),
            dropped_by_cycle: dead
                .dropped_by_cycle
                .iter()
                .map(|q| q.to_string())
                .collect(),
        });
        let revisits = dead
            .queues
            .iter()
            .any(|q| dead.letter.deaths.iter().any(|d| d.queue == *q));
        if revisits
            && self.target == TargetVersion::V3_13
            && !self.notes.iter().any(|n| n.contains("3.13.0"))
        {
            self.notes.push("RabbitMQ 3.13.0–3.13.2 may drop a dead letter in a multi-hop cycle even with a rejection in it (fixed in 3.13.3)".to_string());
        }
        let key = dead
            .letter
            .routing_keys
            .first()
            .cloned()
            .unwrap_or_default();
        let queues = dead.queues.clone();
        match self.spread(dead.letter, &queues, number, deliveries) {
            Some(next) => Ok(next),
            None => Err(CopyEnd::Dropped {
                because: match (facts.dead_letter_exchange, dead.dropped_by_cycle.is_empty()) {
                    (None, _) => format!(
                        "`{queue}` has no dead-letter exchange: the {} message is discarded",
                        reason.as_str()
                    ),
                    (Some(_), false) => format!(
                        "dead-letter cycle without a rejection: the broker drops the copy for `{}`",
                        dead.dropped_by_cycle.join("`, `")
                    ),
                    (Some(exchange), true) => match route.and_then(|r| r.missing_exchange) {
                        Some(missing) => format!(
                            "dead-letter exchange `{missing}` does not exist: the broker drops the message"
                        ),
                        None => format!(
                            "dead-letter exchange `{exchange}` routes key `{key}` to no queue"
                        ),
                    },
                },
            }),
        }
    }

    /// Continues with the first of `queues` and queues copies for the others.
    fn spread(
        &mut self,
        letter: Letter,
        queues: &[&str],
        number: usize,
        deliveries: &[usize],
    ) -> Option<(Letter, String)> {
        let (first, rest) = queues.split_first()?;
        for other in rest {
            self.pending.push(Pending {
                letter: letter.clone(),
                queue: other.to_string(),
                split_from: Some(number),
                deliveries: deliveries.to_vec(),
            });
        }
        Some((letter, first.to_string()))
    }

    /// The consumer that reads `queue`, with its index.
    fn consumer_of(&self, queue: &str) -> Option<(usize, &'a ConsumerContract)> {
        self.consumers
            .iter()
            .enumerate()
            .find(|(_, c)| c.consume_from.iter().any(|q| q == queue))
            .map(|(i, c)| (i, *c))
    }

    /// The delay as the spec writes it when `queue` is a retry tier with that TTL.
    fn delay_of(&self, queue: &str, ttl: u64) -> (String, Option<usize>) {
        let step = self
            .consumers
            .iter()
            .filter_map(|c| c.retry.as_ref())
            .flat_map(|r| r.schedule.iter())
            .find(|s| s.queue == queue);
        match step {
            Some(step) if step.delay_ms == ttl => (step.delay.clone(), Some(step.tier)),
            Some(step) => (Duration::from_millis(ttl).to_string(), Some(step.tier)),
            None => (Duration::from_millis(ttl).to_string(), None),
        }
    }

    pub(super) fn note_unknown_types(&mut self, route: &Route) {
        for name in &route.unknown_types {
            let note = format!(
                "exchange `{name}` is of a type trace does not simulate: every binding of it was followed"
            );
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
    }
}

/// What the contract tells `consumer` to do with a delivery it failed.
fn action<'c>(consumer: &'c ConsumerContract, letter: &Letter) -> Action<'c> {
    let Some(retry) = consumer.retry.as_ref() else {
        // No ladder, so no contract for failures: taken as a reject without requeue
        // (the trace says so in a note), and the queue's dead-lettering decides.
        return Action::Reject(0);
    };
    let exhausted = || {
        if retry.on_exhausted.action == "park" {
            Action::Park(retry)
        } else {
            Action::Drop
        }
    };
    match retry.mode {
        RetryMode::Publish => {
            let n = letter
                .headers
                .get(RETRY_COUNT_HEADER)
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize;
            if n < retry.max_retries {
                Action::Retry(retry, n)
            } else {
                exhausted()
            }
        }
        RetryMode::Reject => {
            let n = u64::from(letter.death_count(&retry.work_queue, DeathReason::Rejected));
            if (n as usize) < retry.max_retries {
                Action::Reject(n)
            } else {
                exhausted()
            }
        }
        // The queue counts the failed deliveries and parks at its limit.
        RetryMode::Native => Action::Requeue(
            retry,
            letter
                .headers
                .get(DELIVERY_COUNT_HEADER)
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize,
        ),
        // Every attempt queue rejects once: the rejections so far are the retries.
        RetryMode::RejectChain => Action::Reject(
            letter
                .deaths
                .iter()
                .filter(|d| d.reason == DeathReason::Rejected)
                .count() as u64,
        ),
    }
}
