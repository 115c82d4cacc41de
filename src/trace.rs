//! `warren trace`: where one published message goes, step by step, without a broker.
//!
//! Routing and dead-lettering are `model::routing` and `model::dead_letter` (the code the lint's dead-letter
//! graph uses); each queue's effective settings are `model::queue_facts`; what a
//! consumer does on a failure is the consumer contract (`compile::contract`). This
//! module only walks: it publishes the message, hands each copy to the consumer of
//! its queue, lets that consumer fail the first `failures` deliveries as the contract
//! says, and follows every retry, expiry and dead letter to the copy's end.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::compile::contract::{ConsumerContract, Contract, RetryContract};
use crate::model::dead_letter::{Death, DeathReason, Letter};
use crate::model::headers::{DEATH_HEADERS, ORIGINAL_ROUTING_KEY_HEADER, RETRY_COUNT_HEADER};
use crate::model::queue_facts::{QueueFacts, operator_policies, queue_facts};
use crate::model::routing::{Headers, Hop, PublishError, Route, Topology};
use crate::model::{Definitions, TargetVersion};
use crate::spec::RetryMode;
use crate::spec::duration::Duration;

/// Work a trace does at most: a topology that multiplies copies on every dead letter
/// would otherwise never end.
const MAX_STEPS: usize = 10_000;

/// What to publish, and how often its consumers fail.
#[derive(Debug, Clone)]
pub struct Request {
    /// The vhost (`None`: the spec's only vhost).
    pub vhost: Option<String>,
    /// The exchange (`""`: the default exchange).
    pub exchange: String,
    /// The routing key.
    pub routing_key: String,
    /// Message headers.
    pub headers: Headers,
    /// How many deliveries of a copy each consumer fails before it succeeds.
    pub failures: usize,
}

/// Why there is no trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The spec has no vhost of this name.
    UnknownVhost {
        /// The name asked for.
        vhost: String,
        /// The spec's vhosts.
        choices: Vec<String>,
    },
    /// The spec has several vhosts and none was chosen.
    VhostAmbiguous {
        /// The spec's vhosts.
        choices: Vec<String>,
    },
    /// The exchange does not exist in the vhost.
    UnknownExchange {
        /// The vhost.
        vhost: String,
        /// The exchange.
        exchange: String,
        /// The closest existing name, if any.
        suggestion: Option<String>,
        /// The vhost's exchanges.
        choices: Vec<String>,
    },
    /// The exchange is internal: clients cannot publish to it.
    InternalExchange {
        /// The vhost.
        vhost: String,
        /// The exchange.
        exchange: String,
    },
    /// A `--headers` value is not `name=value`.
    BadHeader(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |names: &[String]| {
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Error::UnknownVhost { vhost, choices } => write!(
                f,
                "the spec has no vhost `{vhost}`; its vhosts: {}",
                list(choices)
            ),
            Error::VhostAmbiguous { choices } => write!(
                f,
                "the spec has several vhosts ({}): choose one with --vhost",
                list(choices)
            ),
            Error::UnknownExchange {
                vhost,
                exchange,
                suggestion,
                choices,
            } => {
                write!(f, "vhost `{vhost}` has no exchange `{exchange}`")?;
                if let Some(suggestion) = suggestion {
                    write!(f, " (did you mean `{suggestion}`?)")?;
                }
                write!(
                    f,
                    "; its exchanges: {} (or `\"\"`, the default exchange)",
                    list(choices)
                )
            }
            Error::InternalExchange { vhost, exchange } => write!(
                f,
                "exchange `{exchange}` in vhost `{vhost}` is internal: clients cannot publish to it (the broker refuses with 403); publish to an exchange bound to it"
            ),
            Error::BadHeader(text) => write!(
                f,
                "--headers `{text}` is not `name=value` (e.g. --headers format=pdf)"
            ),
        }
    }
}

/// Reads one `--headers name=value`: the value is a string, as most clients send it.
pub fn parse_header(text: &str) -> Result<(String, Value), Error> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => {
            Ok((name.to_string(), Value::String(value.to_string())))
        }
        _ => Err(Error::BadHeader(text.to_string())),
    }
}

/// A whole trace.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    /// The vhost.
    pub vhost: String,
    /// The exchange published to.
    pub exchange: String,
    /// The routing key.
    pub routing_key: String,
    /// The message's headers.
    pub headers: Headers,
    /// Deliveries each consumer fails.
    pub failures: usize,
    /// The RabbitMQ version simulated.
    pub target_version: String,
    /// How the publish was routed.
    pub route: Vec<Step>,
    /// Queues the publish reached (each gets one copy).
    pub queues: Vec<String>,
    /// Each copy's path, in order; a dead letter that reaches several queues starts a
    /// copy for each queue after the first.
    pub copies: Vec<Copy>,
    /// Things the simulation cannot see that may change the outcome.
    pub notes: Vec<String>,
}

/// One copy of the message, from the queue it entered to its end.
#[derive(Debug, Clone, Serialize)]
pub struct Copy {
    /// Its number, from 1.
    pub number: usize,
    /// The copy (and event index) it split from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_from: Option<usize>,
    /// What happened to it.
    pub events: Vec<Event>,
    /// How it ended.
    pub outcome: Outcome,
    /// Its `x-death` entries at the end, most recent first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub x_death: Vec<Death>,
}

/// A step of a route: a binding followed, or an alternate exchange taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    /// A binding matched.
    Binding {
        /// The exchange.
        source: String,
        /// Where it leads.
        destination: String,
        /// `queue` or `exchange`.
        destination_type: &'static str,
        /// The binding key.
        key: String,
    },
    /// Nothing matched: the alternate exchange takes the message.
    Alternate {
        /// The exchange.
        from: String,
        /// Its alternate exchange.
        to: String,
    },
    /// The default exchange delivers by queue name.
    Default {
        /// The queue.
        queue: String,
    },
}

fn steps(route: &Route) -> Vec<Step> {
    route
        .hops
        .iter()
        .map(|hop| match *hop {
            Hop::Binding {
                source,
                destination,
                to_exchange,
                key,
                ..
            } => Step::Binding {
                source: source.to_string(),
                destination: destination.to_string(),
                destination_type: if to_exchange { "exchange" } else { "queue" },
                key: key.to_string(),
            },
            Hop::Alternate { from, to } => Step::Alternate {
                from: from.to_string(),
                to: to.to_string(),
            },
            Hop::Default { queue } => Step::Default {
                queue: queue.to_string(),
            },
        })
        .collect()
}

/// Something that happened to a copy.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A consumer got it.
    Delivered {
        /// The queue.
        queue: String,
        /// `service.consumer`.
        consumer: String,
        /// The consumer's delivery of this message, from 1.
        attempt: usize,
        /// The routing key it carries.
        routing_key: String,
        /// Its `x-death` entries, most recent first.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        x_death: Vec<Death>,
        /// The `warren-retries` header, if set.
        #[serde(skip_serializing_if = "Option::is_none")]
        retries_header: Option<u64>,
    },
    /// The consumer processed it and acked.
    Processed {
        /// `service.consumer`.
        consumer: String,
    },
    /// The consumer rejected it (`requeue=false`).
    Rejected {
        /// Retries so far, as the contract counts them.
        retries: u64,
    },
    /// The consumer published it to its retry exchange for a retry, then acked.
    Retried {
        /// Retry number, from 1.
        retry: usize,
        /// Tier, from 1.
        tier: usize,
        /// The delay as written in the spec.
        delay: String,
        /// The exchange.
        exchange: String,
        /// The routing key.
        routing_key: String,
        /// How it was routed.
        route: Vec<Step>,
        /// Queues reached.
        queues: Vec<String>,
    },
    /// Retries are used up: the consumer publishes it to be parked, then acks.
    ParkPublished {
        /// The exchange.
        exchange: String,
        /// The routing key.
        routing_key: String,
        /// How it was routed.
        route: Vec<Step>,
        /// Queues reached.
        queues: Vec<String>,
    },
    /// Retries are used up and the ladder drops: the consumer acks.
    Acked {
        /// Why.
        because: String,
    },
    /// It waits in a queue with a message TTL and no consumer.
    Waits {
        /// The queue.
        queue: String,
        /// The TTL in force, in milliseconds.
        ttl_ms: u64,
        /// The TTL as written in the spec (a retry delay) or in milliseconds.
        delay: String,
        /// The retry tier this queue is, if it is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        tier: Option<usize>,
    },
    /// The broker dead-lettered it.
    DeadLettered {
        /// From this queue.
        queue: String,
        /// Why.
        reason: DeathReason,
        /// Through this exchange (`None`: the queue has none; the message is gone).
        #[serde(skip_serializing_if = "Option::is_none")]
        exchange: Option<String>,
        /// With this routing key.
        routing_key: String,
        /// How it was routed.
        route: Vec<Step>,
        /// Queues that get a copy.
        queues: Vec<String>,
        /// Queues whose copy the broker's cycle rule drops.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        dropped_by_cycle: Vec<String>,
    },
}

/// How a copy ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// A consumer processed it.
    Processed {
        /// The queue.
        queue: String,
        /// `service.consumer`.
        consumer: String,
    },
    /// It sits in a parking queue.
    Parked {
        /// The queue.
        queue: String,
    },
    /// It sits in a queue no consumer of the spec reads (and that has no TTL).
    Stays {
        /// The queue.
        queue: String,
    },
    /// It is gone.
    Dropped {
        /// Why.
        because: String,
    },
    /// The trace stopped before this copy ended.
    Unfinished,
}

/// Traces `request` through the compiled spec's definitions for `target`.
pub fn trace(
    definitions: &Definitions,
    contract: &Contract,
    target: TargetVersion,
    request: &Request,
) -> Result<Trace, Error> {
    let vhost = choose_vhost(definitions, request.vhost.as_deref())?;
    let topology = Topology::new(definitions, target);
    let exchange = request.exchange.as_str();
    match topology.check_publish(vhost, exchange) {
        Ok(()) => {}
        Err(PublishError::Missing) => {
            let choices: Vec<String> = definitions
                .exchanges
                .iter()
                .filter(|e| e.vhost == vhost)
                .map(|e| e.name.clone())
                .collect();
            return Err(Error::UnknownExchange {
                vhost: vhost.to_string(),
                exchange: exchange.to_string(),
                suggestion: crate::suggest::closest(exchange, &choices).map(str::to_string),
                choices,
            });
        }
        Err(PublishError::Internal) => {
            return Err(Error::InternalExchange {
                vhost: vhost.to_string(),
                exchange: exchange.to_string(),
            });
        }
    }
    let operators = operator_policies(definitions);
    let facts = queue_facts(definitions, &operators, target);
    let facts: BTreeMap<&str, &QueueFacts> = facts
        .iter()
        .filter(|f| f.queue.vhost == vhost)
        .map(|f| (f.queue.name.as_str(), f))
        .collect();
    let consumers: Vec<&ConsumerContract> = contract
        .consumers
        .iter()
        .filter(|c| c.vhost == vhost)
        .collect();
    let letter = Letter::published(&request.routing_key, request.headers.clone());
    let route = topology.route(vhost, exchange, letter.message());
    let mut walk = Walk {
        vhost,
        topology: &topology,
        facts: &facts,
        consumers: &consumers,
        failures: request.failures,
        target,
        copies: Vec::new(),
        pending: Vec::new(),
        steps: 0,
        notes: Vec::new(),
    };
    if !route.unknown_types.is_empty() {
        walk.note_unknown_types(&route);
    }
    for queue in &route.queues {
        walk.pending.push(Pending {
            letter: letter.clone(),
            queue: queue.to_string(),
            split_from: None,
            deliveries: vec![0; consumers.len()],
        });
    }
    walk.run();
    Ok(Trace {
        vhost: vhost.to_string(),
        exchange: request.exchange.clone(),
        routing_key: request.routing_key.clone(),
        headers: request.headers.clone(),
        failures: request.failures,
        target_version: target.to_string(),
        route: steps(&route),
        queues: route.queues.iter().map(|q| q.to_string()).collect(),
        copies: walk.copies,
        notes: walk.notes,
    })
}

fn choose_vhost<'d>(definitions: &'d Definitions, asked: Option<&str>) -> Result<&'d str, Error> {
    let mut names: Vec<&'d str> = definitions.vhosts.iter().map(|v| v.name.as_str()).collect();
    for queue in &definitions.queues {
        if !names.contains(&queue.vhost.as_str()) {
            names.push(&queue.vhost);
        }
    }
    let choices = || names.iter().map(|n| n.to_string()).collect();
    match asked {
        Some(asked) => {
            names
                .iter()
                .copied()
                .find(|n| *n == asked)
                .ok_or_else(|| Error::UnknownVhost {
                    vhost: asked.to_string(),
                    choices: choices(),
                })
        }
        None => match names.as_slice() {
            [only] => Ok(only),
            _ => Err(Error::VhostAmbiguous { choices: choices() }),
        },
    }
}

/// The state of a trace in progress.
struct Walk<'w, 'a> {
    vhost: &'a str,
    topology: &'w Topology<'a>,
    facts: &'w BTreeMap<&'a str, &'w QueueFacts<'a>>,
    consumers: &'w [&'a ConsumerContract],
    failures: usize,
    target: TargetVersion,
    copies: Vec<Copy>,
    /// Copies to walk: the message, the queue it entered, the copy it split from, and
    /// the deliveries of it (and of the copies it split from) to each consumer.
    pending: Vec<Pending>,
    steps: usize,
    notes: Vec<String>,
}

/// A copy waiting to be walked.
#[derive(Clone)]
struct Pending {
    letter: Letter,
    queue: String,
    split_from: Option<usize>,
    /// Deliveries so far, per consumer: a consumer fails the first `failures` of each
    /// copy, which is what it can count itself (`x-death`, `warren-retries`).
    deliveries: Vec<usize>,
}

/// What the consumer does with a failed delivery.
enum Action<'c> {
    Reject(u64),
    Retry(&'c RetryContract, usize),
    Park(&'c RetryContract),
    Drop,
}

impl<'w, 'a> Walk<'w, 'a> {
    fn run(&mut self) {
        // Copies are walked in the order they appear: a queue-first, breadth-wise order
        // would read no better and cost the same.
        let mut next = 0;
        while next < self.pending.len() {
            let pending = self.pending[next].clone();
            next += 1;
            let number = self.copies.len() + 1;
            let mut copy = Copy {
                number,
                split_from: pending.split_from,
                events: Vec::new(),
                outcome: Outcome::Unfinished,
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
    ) -> (Outcome, Vec<Death>) {
        let mut letter = start.letter.clone();
        let outcome = self.walk(start, number, events, &mut letter);
        (outcome, letter.deaths)
    }

    /// Walks one copy; `letter` is the message as it is at the end.
    fn walk(
        &mut self,
        start: Pending,
        number: usize,
        events: &mut Vec<Event>,
        letter: &mut Letter,
    ) -> Outcome {
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
                return Outcome::Unfinished;
            }
            let Some(facts) = self.facts.get(queue.as_str()).copied() else {
                return Outcome::Dropped {
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
                    return Outcome::Processed {
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
                                return Outcome::Dropped {
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
                                return Outcome::Dropped {
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
                        return Outcome::Dropped {
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
                    Outcome::Parked { queue }
                } else {
                    Outcome::Stays { queue }
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
    ) -> Result<(Letter, String), Outcome> {
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
            None => Err(Outcome::Dropped {
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

    fn note_unknown_types(&mut self, route: &Route) {
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
