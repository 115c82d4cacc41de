//! `warren status`: what each consumer of a spec looks like on the live broker. Its
//! work queues (messages, consumers, rates), each tier's waiting messages, the
//! parking queue and the age of its oldest message, and what is wrong: a work queue
//! nobody consumes, a queue not applied yet, a queue under another policy than the one
//! warren generated for it, a parking queue that fills.
//!
//! [`against_broker`] reads the broker in a number of requests that does not grow
//! with the consumers (the version, then per vhost one statistics listing, its
//! policies and its operator policies); [`report`] is the pure part, the compiled spec × what was read. Nothing
//! here names an object: the queues come from the consumer contract, the expected
//! policy from [`CompiledPolicies::choose`] over the compiled policies.
//!
//! Which policy applies to a queue is read from the broker's policies (its
//! definitions), not from the `policy` of a queue's statistics: those are emitted every
//! few seconds and are missing in a queue's first seconds, so right after an apply they
//! would report a policy warren just put in place as not applied.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::broker::{BrokerError, Client, QueueStatistics, WaitingDeaths};
use crate::compile::contract::{ConsumerContract, RetryContract};
use crate::compile::{self, Options};
use crate::model::dead_letter::{Death, DeathReason};
use crate::model::effective::{CompiledPolicies, Winner};
use crate::model::role_hazards::{self, QueueRole};
use crate::model::settings;
use crate::model::{Definitions, Policy, Queue, QueueType, TargetVersion};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{RetryMode, SpecFile, not_in_spec};

/// The `format` of the JSON document: bumped when a field changes meaning or goes.
pub const FORMAT: &str = "warren-status/1";

/// The report: every chosen consumer, in spec order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// [`FORMAT`].
    pub format: &'static str,
    /// How many problems the consumers have, all together.
    pub problems: usize,
    /// The consumers.
    pub consumers: Vec<ConsumerStatus>,
}

/// One consumer on the broker. A figure the broker did not give (a queue that does not
/// exist, statistics not emitted yet, a rate of a queue nothing went through) is
/// `None`: never a 0 that nobody measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConsumerStatus {
    /// Vhost.
    pub vhost: String,
    /// Service.
    pub service: String,
    /// Consumer.
    pub consumer: String,
    /// Its work queue (its fields are the consumer's own in JSON).
    #[serde(flatten)]
    pub work: WorkQueue,
    /// The other queues it consumes (one per attempt in `reject-chain` mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<WorkQueue>,
    /// Its delay queues, first to last; empty without a ladder.
    pub tiers: Vec<Tier>,
    /// Its parking queue; `None` without one.
    pub parking: Option<Parking>,
    /// What is wrong.
    pub problems: Vec<Problem>,
}

/// A queue a consumer reads: its work queue, or one of its attempt queues.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkQueue {
    /// The queue.
    pub queue: String,
    /// Whether it exists.
    pub exists: bool,
    /// Ready and unacknowledged messages.
    pub messages: Option<u64>,
    /// Ready messages.
    pub ready: Option<u64>,
    /// Unacknowledged messages.
    pub unacked: Option<u64>,
    /// Messages held back for a delayed retry (a `native` ladder's waiting retries;
    /// RabbitMQ 4.3): absent where the broker does not count them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<u64>,
    /// Consumers.
    pub consumers: Option<u64>,
    /// Messages published per second.
    pub publish_rate: Option<f64>,
    /// Messages delivered per second.
    pub deliver_rate: Option<f64>,
}

/// One delay queue of the ladder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tier {
    /// Its place in the ladder, from 1 (one per tier; in `reject-chain` mode one per
    /// retry).
    pub tier: usize,
    /// The delay as the spec writes it.
    pub delay: String,
    /// The queue.
    pub queue: String,
    /// Whether it exists.
    pub exists: bool,
    /// Messages waiting out their delay.
    pub messages: Option<u64>,
    /// What `--inspect` read of its waiting messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspected: Option<TierInspection>,
    /// Why `--inspect` did not read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_inspected: Option<String>,
}

/// What `--inspect` found at the head of a delay queue: how often the consumer's work
/// queues rejected each message, by the broker's own count (`x-death`), against what
/// its ladder allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TierInspection {
    /// Messages read (at most `--inspect`'s count, from the head of the queue).
    pub read: usize,
    /// Of those, messages rejected more often than `max_retries` allows: they have
    /// gone round the ladder more often than it has retries.
    pub past_the_ladder: usize,
    /// The most rejections one message read had.
    pub most_rejections: u32,
}

/// The parking queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parking {
    /// The queue.
    pub queue: String,
    /// Whether it exists.
    pub exists: bool,
    /// Messages parked.
    pub messages: Option<u64>,
    /// Messages parked per second.
    pub publish_rate: Option<f64>,
    /// Seconds since the oldest parked message was published: known only for a classic
    /// queue whose oldest message has a `timestamp` property (the broker reads it
    /// without consuming anything).
    pub oldest_age_seconds: Option<u64>,
}

/// Something wrong with one of a consumer's queues.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    /// What kind.
    pub kind: ProblemKind,
    /// The queue.
    pub queue: String,
    /// What is wrong, in a sentence.
    pub message: String,
}

/// The kinds of [`Problem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProblemKind {
    /// A queue of the spec does not exist on the broker: the spec is not applied.
    MissingQueue,
    /// A work queue (or attempt queue) has no consumer.
    NoConsumers,
    /// A queue is under another policy than the one warren generated for it (or under
    /// one where warren generated none, or under none).
    Policy,
    /// Messages are being parked (the parking queue's publish rate is above 0).
    ParkingGrowing,
    /// The parking queue holds messages.
    ParkingNotEmpty,
    /// A policy or operator policy on the broker breaks what a queue is for: parked
    /// messages that expire, a tier that is deleted with its retries, … (its message
    /// names the policy, the setting and the fix).
    PolicyHazard,
    /// Messages waiting in a tier were rejected more often than the consumer's ladder
    /// allows (`--inspect`): the consumer does not follow its retry contract.
    RetryContract,
}

impl ProblemKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [ProblemKind; 7] = [
        ProblemKind::MissingQueue,
        ProblemKind::NoConsumers,
        ProblemKind::Policy,
        ProblemKind::PolicyHazard,
        ProblemKind::RetryContract,
        ProblemKind::ParkingGrowing,
        ProblemKind::ParkingNotEmpty,
    ];

    /// The name in JSON and in the Prometheus `kind` label.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::MissingQueue => "missing-queue",
            ProblemKind::NoConsumers => "no-consumers",
            ProblemKind::Policy => "policy",
            ProblemKind::PolicyHazard => "policy-hazard",
            ProblemKind::RetryContract => "retry-contract",
            ProblemKind::ParkingGrowing => "parking-growing",
            ProblemKind::ParkingNotEmpty => "parking-not-empty",
        }
    }
}

impl Serialize for ProblemKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Which consumers to report: `--vhost` and `--service`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    /// Only this vhost.
    pub vhost: Option<&'a str>,
    /// Only this service.
    pub service: Option<&'a str>,
}

impl Filter<'_> {
    /// Checks that the spec has the vhost and the service asked for: an error that
    /// lists the choices otherwise.
    pub fn check(&self, file: &SpecFile) -> Result<(), String> {
        let vhosts = &file.spec.vhosts;
        if let Some(vhost) = self.vhost
            && !vhosts.contains_key(vhost)
        {
            let known: Vec<String> = vhosts.keys().cloned().collect();
            return Err(not_in_spec("vhost", vhost, &known));
        }
        if let Some(service) = self.service {
            let known: BTreeSet<String> = vhosts
                .iter()
                .filter(|(name, _)| self.vhost.is_none_or(|v| v == name.as_str()))
                .flat_map(|(_, vhost)| vhost.services.keys().cloned())
                .collect();
            if !known.contains(service) {
                let known: Vec<String> = known.into_iter().collect();
                return Err(not_in_spec("service", service, &known));
            }
        }
        Ok(())
    }

    /// Whether a consumer is chosen.
    fn keeps(&self, consumer: &ConsumerContract) -> bool {
        self.vhost.is_none_or(|v| v == consumer.vhost)
            && self.service.is_none_or(|s| s == consumer.service)
    }
}

/// Why `warren status` could not report.
#[derive(Debug)]
pub enum StatusError {
    /// The spec does not compile.
    Invalid(Vec<Diagnostic>),
    /// `--vhost` or `--service` names what the spec does not have.
    Filter(String),
    /// The broker could not be read.
    Broker(BrokerError),
}

/// Reads the broker and reports on the spec's consumers that `filter` keeps: the
/// broker's version (which the spec is compiled for, unless `target` says), then the
/// statistics of the queues of each vhost of those consumers, one request per vhost.
/// With `inspect`, up to that many messages at the head of each delay queue are read
/// over AMQP and given back ([`inspection`] says which queues).
pub async fn against_broker(
    client: &Client,
    file: &SpecFile,
    target: Option<TargetVersion>,
    filter: Filter<'_>,
    inspect: Option<usize>,
) -> Result<Report, StatusError> {
    filter.check(file).map_err(StatusError::Filter)?;
    let version = client.version().await.map_err(StatusError::Broker)?;
    let broker = TargetVersion::of_broker(&version);
    let target = target.unwrap_or(broker);
    // Only queue names and policies matter here: no secret is read.
    let options = Options {
        target,
        secrets: None,
    };
    let compiled = compile::compile(file, &options).map_err(StatusError::Invalid)?;
    let consumers: Vec<&ConsumerContract> = compiled
        .contract
        .consumers
        .iter()
        .filter(|consumer| filter.keeps(consumer))
        .collect();
    let mut vhosts: Vec<String> = Vec::new();
    for consumer in &consumers {
        if !vhosts.contains(&consumer.vhost) {
            vhosts.push(consumer.vhost.clone());
        }
    }
    let (statistics, policies, operator_policies) = tokio::try_join!(
        client.queue_statistics(&vhosts),
        client.policies(&vhosts),
        client.operator_policies(&vhosts)
    )
    .map_err(StatusError::Broker)?;
    let mut read = Vec::new();
    if let Some(per_queue) = inspect {
        let on_the_broker = BrokerPolicies::new(&policies, &operator_policies, broker);
        for (vhost, queues) in inspection(&consumers, &compiled.definitions, &on_the_broker) {
            let queues: Vec<&str> = queues.iter().map(String::as_str).collect();
            read.extend(
                client
                    .waiting_deaths(&vhost, &queues, per_queue)
                    .await
                    .map_err(StatusError::Broker)?,
            );
        }
    }
    let live = Live {
        statistics: &statistics,
        policies: &policies,
        operator_policies: &operator_policies,
        waiting: inspect.map(|_| Waiting {
            read: &read,
            broker,
        }),
    };
    Ok(report(
        &consumers,
        &compiled.definitions,
        &live,
        target,
        SystemTime::now(),
    ))
}

/// What status reads of the broker: the statistics of the vhosts' queues and the
/// vhosts' policies and operator policies.
#[derive(Debug, Clone, Copy)]
pub struct Live<'a> {
    /// Every queue's statistics, as last emitted.
    pub statistics: &'a [QueueStatistics],
    /// The user policies of the vhosts (definitions: never behind).
    pub policies: &'a [Policy],
    /// The operator policies of the vhosts (definitions too).
    pub operator_policies: &'a [Policy],
    /// What `--inspect` read; `None` without it.
    pub waiting: Option<Waiting<'a>>,
}

/// What `--inspect` read of the delay queues, and of which broker.
#[derive(Debug, Clone, Copy)]
pub struct Waiting<'a> {
    /// The messages read, queue by queue.
    pub read: &'a [WaitingDeaths],
    /// The broker's line, which decides which queues can be read
    /// ([`BrokerPolicies::uninspectable`]).
    pub broker: TargetVersion,
}

/// The broker's policies and operator policies, which decide a queue's delivery limit.
pub struct BrokerPolicies<'a> {
    policies: CompiledPolicies<'a, Policy>,
    operator_policies: CompiledPolicies<'a, Policy>,
    broker: TargetVersion,
}

impl<'a> BrokerPolicies<'a> {
    /// The policies and operator policies read of a broker of line `broker`.
    pub fn new(
        policies: &'a [Policy],
        operator_policies: &'a [Policy],
        broker: TargetVersion,
    ) -> BrokerPolicies<'a> {
        BrokerPolicies {
            policies: CompiledPolicies::new(policies),
            operator_policies: CompiledPolicies::new(operator_policies),
            broker,
        }
    }

    /// Why a delay queue is not read by `--inspect`, if it is not ([`uninspectable`]).
    pub fn uninspectable(&self, queue: &Queue) -> Option<String> {
        uninspectable(queue, &self.policies, &self.operator_policies, self.broker)
    }
}

/// Why a delay queue is not read by `--inspect`, if it is not. A message given back
/// to a quorum queue counts toward its delivery limit before RabbitMQ 4.3 (a nack with
/// requeue, `TargetVersion::counts_nack_toward_delivery_limit`), so where such a queue
/// has a limit on the broker (4.0's default of 20, or one a policy or operator policy
/// sets) each look would bring its messages nearer to being dead-lettered early.
fn uninspectable<'p>(
    queue: &Queue,
    policies: &CompiledPolicies<'p, Policy>,
    operator_policies: &CompiledPolicies<'p, Policy>,
    broker: TargetVersion,
) -> Option<String> {
    let kind = QueueType::of(queue);
    if kind != QueueType::Quorum || !broker.counts_nack_toward_delivery_limit() {
        return None;
    }
    let choose = |policies: &CompiledPolicies<'p, Policy>| -> Option<&'p Policy> {
        policies
            .choose(&queue.vhost, &queue.name, kind, broker)
            .winner
            .one()
    };
    let limit = settings::resolve(queue, choose(policies), choose(operator_policies), broker)
        .delivery_limit?;
    Some(format!(
        "a quorum queue on RabbitMQ {broker} counts each message read and given back toward its delivery limit ({})",
        limit.value
    ))
}

/// The delay queues `--inspect` reads, vhost by vhost: every tier of a ladder that
/// waits in delay queues, except those [`BrokerPolicies::uninspectable`] keeps out.
pub fn inspection(
    consumers: &[&ConsumerContract],
    desired: &Definitions,
    broker: &BrokerPolicies<'_>,
) -> Vec<(String, Vec<String>)> {
    let mut vhosts: Vec<(String, Vec<String>)> = Vec::new();
    for consumer in consumers {
        let Some(retry) = consumer
            .retry
            .as_ref()
            .filter(|r| r.mode != RetryMode::Native)
        else {
            continue;
        };
        let at = match vhosts.iter().position(|(v, _)| *v == consumer.vhost) {
            Some(at) => at,
            None => {
                vhosts.push((consumer.vhost.clone(), Vec::new()));
                vhosts.len() - 1
            }
        };
        for step in &retry.schedule {
            let readable = desired
                .queues
                .iter()
                .find(|q| q.vhost == consumer.vhost && q.name == step.queue)
                .is_none_or(|queue| broker.uninspectable(queue).is_none());
            if readable && !vhosts[at].1.contains(&step.queue) {
                vhosts[at].1.push(step.queue.clone());
            }
        }
    }
    vhosts.retain(|(_, queues)| !queues.is_empty());
    vhosts
}

/// How often the consumer's own queues rejected a message, by the broker's count: its
/// work queue's `rejected` deaths, and in `reject-chain` mode those of each attempt
/// queue too.
fn rejections(deaths: &[Death], consumer: &ConsumerContract) -> u32 {
    deaths
        .iter()
        .filter(|death| {
            death.reason == DeathReason::Rejected
                && (death.queue == consumer.queue || consumer.consume_from.contains(&death.queue))
        })
        .map(|death| death.count)
        .sum()
}

/// What a consumer must do that a message past its ladder shows it does not, by mode.
fn contract_hint(mode: RetryMode) -> &'static str {
    match mode {
        RetryMode::Publish => {
            "in `publish` mode a plain reject enters the first tier and counts nothing, so such a message never parks: the consumer must publish each retry itself with the next tier's key (`warren compile --contract`), or the spec can give it `mode: reject-chain`"
        }
        RetryMode::Reject => {
            "in `reject` mode the consumer must park a message once `x-death` counts `max_retries` rejections by its work queue (`warren compile --contract`)"
        }
        RetryMode::RejectChain | RetryMode::Native => {
            "the broker moves a message up this ladder once: something sent it back to the work queue after it left (`warren compile --contract`)"
        }
    }
}

/// The compiled spec and what was read of the broker, looked up by queue.
struct Lookup<'a> {
    live: FxHashMap<(&'a str, &'a str), &'a QueueStatistics>,
    desired: FxHashMap<(&'a str, &'a str), &'a Queue>,
    policies: CompiledPolicies<'a, Policy>,
    operator_policies: CompiledPolicies<'a, Policy>,
    live_policies: CompiledPolicies<'a, Policy>,
    live_operator_policies: CompiledPolicies<'a, Policy>,
    target: TargetVersion,
    waiting: Option<Waiting<'a>>,
}

impl<'a> Lookup<'a> {
    fn live(&self, vhost: &str, queue: &str) -> Option<&'a QueueStatistics> {
        self.live.get(&(vhost, queue)).copied()
    }

    /// The problems of one queue that every role shares: missing, or under another
    /// policy than the spec gives it.
    fn check(&self, vhost: &str, queue: &str, role: &QueueRole, problems: &mut Vec<Problem>) {
        if self.live(vhost, queue).is_none() {
            problems.push(Problem {
                kind: ProblemKind::MissingQueue,
                queue: queue.to_string(),
                message: format!(
                    "{} does not exist on the broker: the spec is not applied (run `warren plan`)",
                    role.describe(queue)
                ),
            });
            return;
        }
        let Some(desired) = self.desired.get(&(vhost, queue)) else {
            return;
        };
        let kind = QueueType::of(desired);
        let expected = self.policies.choose(vhost, queue, kind, self.target).winner;
        let actual = self
            .live_policies
            .choose(vhost, queue, kind, self.target)
            .winner;
        let what = role.describe(queue);
        // A tie on the broker (or in the spec) is a problem whoever the broker picked:
        // the queue's settings are those of a policy nobody chose.
        if let Some(tied) = [&actual, &expected]
            .into_iter()
            .map(Winner::tied)
            .find(|tied| !tied.is_empty())
        {
            let names: Vec<String> = tied.iter().map(|p| format!("`{}`", p.name)).collect();
            problems.push(Problem {
                kind: ProblemKind::Policy,
                queue: queue.to_string(),
                message: format!(
                    "{what} is matched by policies {} of the same priority {}: the broker applies one of them, and which is not knowable (give them different priorities)",
                    names.join(", "),
                    tied[0].priority
                ),
            });
            return;
        }
        let names = (
            actual.one().map(|p| p.name.as_str()),
            expected.one().map(|p| p.name.as_str()),
        );
        let message = match names {
            (actual, expected) if actual == expected => None,
            (Some(actual), Some(expected)) => Some(format!(
                "{what} is under policy `{actual}`, not `{expected}` that the spec gives it: `{actual}` shadows it (a higher priority, or a policy the spec does not have)"
            )),
            (None, Some(expected)) => Some(format!(
                "{what} is under no policy, not `{expected}` that the spec gives it: the policy is not applied (run `warren plan`)"
            )),
            (Some(actual), None) => Some(format!(
                "{what} is under policy `{actual}`, which the spec does not give it"
            )),
            (None, None) => unreachable!("equal"),
        };
        problems.extend(message.map(|message| Problem {
            kind: ProblemKind::Policy,
            queue: queue.to_string(),
            message,
        }));
        self.hazards(desired, (&expected, &actual), role, problems);
    }

    /// The settings of policies and operator policies on the broker that break what
    /// the queue is for (`model::role_hazards`): one problem each.
    fn hazards(
        &self,
        desired: &Queue,
        (expected, actual): (&Winner<'a, Policy>, &Winner<'a, Policy>),
        role: &QueueRole,
        problems: &mut Vec<Problem>,
    ) {
        let (vhost, queue, kind) = (
            desired.vhost.as_str(),
            desired.name.as_str(),
            QueueType::of(desired),
        );
        let operator = |policies: &CompiledPolicies<'a, Policy>| {
            policies
                .choose(vhost, queue, kind, self.target)
                .winner
                .one()
        };
        let meant = settings::resolve(
            desired,
            expected.one(),
            operator(&self.operator_policies),
            self.target,
        );
        let applied = settings::resolve(
            desired,
            actual.one(),
            operator(&self.live_operator_policies),
            self.target,
        );
        for hazard in role_hazards::hazards(role, queue, &meant, &applied) {
            problems.push(Problem {
                kind: ProblemKind::PolicyHazard,
                queue: queue.to_string(),
                message: format!(
                    "{}: {} `{}` sets `{}` to {}: {} ({})",
                    role.describe(queue),
                    if hazard.operator {
                        "operator policy"
                    } else {
                        "policy"
                    },
                    hazard.policy,
                    hazard.key,
                    hazard.value,
                    hazard.effect,
                    hazard.fix
                ),
            });
        }
    }

    /// What `--inspect` read of a delay queue (and the problem when messages went
    /// round its ladder more often than it allows), or why it was not read; both
    /// `None` without `--inspect`.
    fn inspected(
        &self,
        consumer: &ConsumerContract,
        retry: &RetryContract,
        queue: &str,
        role: &QueueRole,
        problems: &mut Vec<Problem>,
    ) -> (Option<TierInspection>, Option<String>) {
        let Some(waiting) = self.waiting else {
            return (None, None);
        };
        let desired = self.desired.get(&(consumer.vhost.as_str(), queue)).copied();
        let why = desired.and_then(|queue| {
            uninspectable(
                queue,
                &self.live_policies,
                &self.live_operator_policies,
                waiting.broker,
            )
        });
        if why.is_some() {
            return (None, why);
        }
        let Some(read) = waiting
            .read
            .iter()
            .find(|read| read.vhost == consumer.vhost && read.queue == queue)
        else {
            return (None, Some("not read".to_string()));
        };
        let counts: Vec<u32> = read
            .messages
            .iter()
            .map(|deaths| rejections(deaths, consumer))
            .collect();
        let allowed = u32::try_from(retry.max_retries).unwrap_or(u32::MAX);
        let inspection = TierInspection {
            read: counts.len(),
            past_the_ladder: counts.iter().filter(|&&n| n > allowed).count(),
            most_rejections: counts.iter().copied().max().unwrap_or(0),
        };
        if inspection.past_the_ladder > 0 {
            problems.push(Problem {
                kind: ProblemKind::RetryContract,
                queue: queue.to_string(),
                message: format!(
                    "consumer `{}` of service `{}` does not follow its retry contract: {} of {} read in {} {} been rejected more often than its ladder allows (max_retries {}; up to {} rejections, by the broker's `x-death` count); {}",
                    consumer.consumer,
                    consumer.service,
                    inspection.past_the_ladder,
                    crate::text::count(inspection.read, "message"),
                    role.describe(queue),
                    if inspection.past_the_ladder == 1 { "has" } else { "have" },
                    retry.max_retries,
                    inspection.most_rejections,
                    contract_hint(retry.mode)
                ),
            });
        }
        (Some(inspection), None)
    }

    fn work_queue(
        &self,
        vhost: &str,
        queue: &str,
        role: &QueueRole,
        problems: &mut Vec<Problem>,
    ) -> WorkQueue {
        self.check(vhost, queue, role, problems);
        let live = self.live(vhost, queue);
        let consumers = live.and_then(|l| l.consumers);
        if consumers == Some(0) {
            problems.push(Problem {
                kind: ProblemKind::NoConsumers,
                queue: queue.to_string(),
                message: format!("{} has no consumers", role.describe(queue)),
            });
        }
        WorkQueue {
            queue: queue.to_string(),
            exists: live.is_some(),
            messages: live.and_then(|l| l.messages),
            ready: live.and_then(|l| l.messages_ready),
            unacked: live.and_then(|l| l.messages_unacknowledged),
            waiting: live.and_then(|l| l.messages_delayed),
            consumers,
            publish_rate: live.and_then(QueueStatistics::publish_rate),
            deliver_rate: live.and_then(QueueStatistics::deliver_rate),
        }
    }
}

/// The report on `consumers`, from the spec's compiled definitions and the broker's
/// statistics of their vhosts' queues; `now` dates the parked messages.
pub fn report(
    consumers: &[&ConsumerContract],
    desired: &Definitions,
    live: &Live<'_>,
    target: TargetVersion,
    now: SystemTime,
) -> Report {
    let desired_operator_policies: Vec<Policy> = desired
        .parameters
        .iter()
        .filter_map(|p| p.as_operator_policy())
        .collect();
    let lookup = Lookup {
        live: live
            .statistics
            .iter()
            .map(|q| ((q.vhost.as_str(), q.name.as_str()), q))
            .collect(),
        desired: desired
            .queues
            .iter()
            .map(|q| ((q.vhost.as_str(), q.name.as_str()), q))
            .collect(),
        policies: CompiledPolicies::new(&desired.policies),
        operator_policies: CompiledPolicies::new(&desired_operator_policies),
        live_policies: CompiledPolicies::new(live.policies),
        live_operator_policies: CompiledPolicies::new(live.operator_policies),
        target,
        waiting: live.waiting,
    };
    let now = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let consumers: Vec<ConsumerStatus> = consumers
        .iter()
        .map(|consumer| consumer_status(consumer, &lookup, now))
        .collect();
    Report {
        format: FORMAT,
        problems: consumers.iter().map(|c| c.problems.len()).sum(),
        consumers,
    }
}

fn consumer_status(consumer: &ConsumerContract, lookup: &Lookup, now: u64) -> ConsumerStatus {
    let vhost = consumer.vhost.as_str();
    let mut problems = Vec::new();
    // Only a `native` ladder's work queue holds retries back (4.3 counts 0 for every
    // other quorum queue): the figure is that consumer's waiting retries.
    let native = consumer
        .retry
        .as_ref()
        .is_some_and(|retry| retry.mode == RetryMode::Native);
    let mut work = lookup.work_queue(
        vhost,
        &consumer.queue,
        &QueueRole::Work { waits: native },
        &mut problems,
    );
    if !native {
        work.waiting = None;
    }
    let attempts: Vec<WorkQueue> = consumer
        .consume_from
        .iter()
        .filter(|queue| **queue != consumer.queue)
        .map(|queue| lookup.work_queue(vhost, queue, &QueueRole::Attempt, &mut problems))
        .collect();
    let mut tiers: Vec<Tier> = Vec::new();
    let mut parking = None;
    if let Some(retry) = &consumer.retry {
        // In `publish` mode several retries can wait in one tier's queue; in `native`
        // mode they wait in the work queue itself (its `waiting` count).
        let tiers_of = retry
            .schedule
            .iter()
            .filter(|_| retry.mode != RetryMode::Native);
        for step in tiers_of {
            if tiers.iter().any(|tier| tier.queue == step.queue) {
                continue;
            }
            let number = tiers.len() + 1;
            let role = QueueRole::Tier {
                tier: number,
                delay_ms: step.delay_ms,
            };
            lookup.check(vhost, &step.queue, &role, &mut problems);
            let live = lookup.live(vhost, &step.queue);
            let (inspected, not_inspected) =
                lookup.inspected(consumer, retry, &step.queue, &role, &mut problems);
            tiers.push(Tier {
                tier: number,
                delay: step.delay.clone(),
                queue: step.queue.clone(),
                exists: live.is_some(),
                messages: live.and_then(|l| l.messages),
                inspected,
                not_inspected,
            });
        }
        if let Some(queue) = &retry.on_exhausted.queue {
            parking = Some(parking_status(vhost, queue, lookup, now, &mut problems));
        }
    }
    ConsumerStatus {
        vhost: consumer.vhost.clone(),
        service: consumer.service.clone(),
        consumer: consumer.consumer.clone(),
        work,
        attempts,
        tiers,
        parking,
        problems,
    }
}

fn parking_status(
    vhost: &str,
    queue: &str,
    lookup: &Lookup,
    now: u64,
    problems: &mut Vec<Problem>,
) -> Parking {
    lookup.check(vhost, queue, &QueueRole::Parking, problems);
    let live = lookup.live(vhost, queue);
    let messages = live.and_then(|l| l.messages);
    let publish_rate = live.and_then(QueueStatistics::publish_rate);
    if publish_rate.is_some_and(|rate| rate > 0.0) {
        problems.push(Problem {
            kind: ProblemKind::ParkingGrowing,
            queue: queue.to_string(),
            message: format!(
                "{} is growing: {} messages parked per second",
                QueueRole::Parking.describe(queue),
                rate_text(publish_rate.unwrap_or_default())
            ),
        });
    }
    if let Some(n) = messages.filter(|&n| n > 0) {
        problems.push(Problem {
            kind: ProblemKind::ParkingNotEmpty,
            queue: queue.to_string(),
            message: format!(
                "{} holds {} that ran out of retries",
                QueueRole::Parking.describe(queue),
                crate::text::count(n, "message")
            ),
        });
    }
    let oldest_age_seconds = live
        .filter(|_| messages.is_some_and(|n| n > 0))
        .and_then(|l| l.head_message_timestamp)
        .map(|timestamp| now.saturating_sub(u64::try_from(timestamp).unwrap_or(0)));
    Parking {
        queue: queue.to_string(),
        exists: live.is_some(),
        messages,
        publish_rate,
        oldest_age_seconds,
    }
}

/// A rate as the broker's figures deserve: two decimals at most.
fn rate_text(rate: f64) -> String {
    let text = format!("{rate:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::compile::Compiled;
    use crate::model::Arguments;
    use crate::spec::load_str;

    const SPEC: &str = "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          c:\n            routing_keys: [a]\n            retry: { delays: [1s, 2s] }\n          plain:\n            routing_keys: [b]\n";

    fn compiled() -> Compiled {
        let file = load_str(Path::new("t.yaml"), SPEC.to_string()).unwrap();
        compile::compile(&file, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"))
    }

    fn live(name: &str, messages: u64) -> QueueStatistics {
        QueueStatistics {
            vhost: "v".into(),
            name: name.into(),
            messages: Some(messages),
            messages_ready: Some(messages),
            messages_unacknowledged: Some(0),
            consumers: Some(1),
            ..QueueStatistics::default()
        }
    }

    /// The report when the broker's policies are the spec's (as after an apply).
    fn report_of(compiled: &Compiled, statistics: &[QueueStatistics]) -> Report {
        report_with(compiled, statistics, &compiled.definitions.policies)
    }

    fn report_with(
        compiled: &Compiled,
        statistics: &[QueueStatistics],
        policies: &[Policy],
    ) -> Report {
        let consumers: Vec<&ConsumerContract> = compiled.contract.consumers.iter().collect();
        report(
            &consumers,
            &compiled.definitions,
            &Live {
                statistics,
                policies,
                operator_policies: &[],
                waiting: None,
            },
            TargetVersion::DEFAULT,
            UNIX_EPOCH + Duration::from_secs(1_000),
        )
    }

    /// Every queue as the spec wants it: no problem, and the figures as read.
    fn healthy(compiled: &Compiled) -> Vec<QueueStatistics> {
        compiled
            .definitions
            .queues
            .iter()
            .map(|q| live(&q.name, 0))
            .collect()
    }

    fn death(queue: &str, reason: DeathReason, count: u32) -> Death {
        Death {
            queue: queue.into(),
            reason,
            count,
        }
    }

    #[test]
    fn messages_rejected_past_the_ladder_name_the_consumer() {
        let compiled = compiled();
        let c = &compiled.contract.consumers[0];
        let retry = c.retry.as_ref().unwrap();
        let (tier_1, tier_2) = (&retry.schedule[0].queue, &retry.schedule[1].queue);
        assert_eq!(retry.max_retries, 2);
        // Head first: a plain reject that went round three times, one within the
        // ladder, one a publishing consumer sent (no deaths).
        let read = [
            WaitingDeaths {
                vhost: "v".into(),
                queue: tier_1.clone(),
                messages: vec![
                    vec![
                        death(tier_1, DeathReason::Expired, 2),
                        death(&c.queue, DeathReason::Rejected, 3),
                    ],
                    vec![death(&c.queue, DeathReason::Rejected, 1)],
                    vec![],
                ],
            },
            WaitingDeaths {
                vhost: "v".into(),
                queue: tier_2.clone(),
                messages: vec![],
            },
        ];
        let consumers: Vec<&ConsumerContract> = compiled.contract.consumers.iter().collect();
        let statistics = healthy(&compiled);
        let report = report(
            &consumers,
            &compiled.definitions,
            &Live {
                statistics: &statistics,
                policies: &compiled.definitions.policies,
                operator_policies: &[],
                waiting: Some(Waiting {
                    read: &read,
                    broker: TargetVersion::DEFAULT,
                }),
            },
            TargetVersion::DEFAULT,
            UNIX_EPOCH,
        );
        let status = &report.consumers[0];
        assert_eq!(
            status.tiers[0].inspected,
            Some(TierInspection {
                read: 3,
                past_the_ladder: 1,
                most_rejections: 3
            })
        );
        assert_eq!(
            status.tiers[1].inspected,
            Some(TierInspection {
                read: 0,
                past_the_ladder: 0,
                most_rejections: 0
            })
        );
        assert_eq!(report.problems, 1, "{report:#?}");
        let problem = &status.problems[0];
        assert_eq!(
            (problem.kind, &problem.queue),
            (ProblemKind::RetryContract, tier_1)
        );
        assert!(
            problem.message.starts_with(&format!(
                "consumer `c` of service `s` does not follow its retry contract: 1 of 3 messages read in tier 1 queue `{tier_1}` has been rejected more often than its ladder allows (max_retries 2; up to 3 rejections"
            )),
            "{}",
            problem.message
        );
        assert!(problem.message.contains("`publish` mode"));
        // Without --inspect, nothing is said of it.
        let without = report_of(&compiled, &statistics);
        assert_eq!(without.consumers[0].tiers[0].inspected, None);
        assert_eq!(without.consumers[0].tiers[0].not_inspected, None);
    }

    #[test]
    fn quorum_tiers_are_read_only_where_a_look_cannot_bring_a_message_to_its_delivery_limit() {
        let spec = "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          q:\n            type: quorum\n            routing_keys: [a]\n            retry: { delays: [1s] }\n          c:\n            type: classic\n            routing_keys: [b]\n            retry: { delays: [1s] }\n";
        let file = load_str(Path::new("t.yaml"), spec.to_string()).unwrap();
        let compiled = compile::compile(&file, &Options::default()).unwrap();
        let consumers: Vec<&ConsumerContract> = compiled.contract.consumers.iter().collect();
        let tier = |name: &str| {
            let consumer = consumers.iter().find(|c| c.consumer == name).unwrap();
            consumer.retry.as_ref().unwrap().schedule[0].queue.clone()
        };
        let read = |policies: &[Policy], broker| {
            let on_the_broker = BrokerPolicies::new(policies, &[], broker);
            let mut queues = inspection(&consumers, &compiled.definitions, &on_the_broker)
                .pop()
                .map(|(_, queues)| queues)
                .unwrap_or_default();
            queues.sort();
            queues
        };
        let mut both = vec![tier("q"), tier("c")];
        both.sort();
        // 4.0 counts a nack toward the quorum queue's default limit of 20.
        assert_eq!(read(&[], TargetVersion::V4_0), vec![tier("c")]);
        // 4.3 does not count it; 3.10 has no limit unless a policy sets one.
        assert_eq!(read(&[], TargetVersion::V4_3), both);
        assert_eq!(read(&[], TargetVersion::V3_10), both);
        let mut limited = Policy {
            vhost: "v".into(),
            name: "limit".into(),
            pattern: ".*".into(),
            apply_to: "queues".into(),
            priority: 100,
            definition: Arguments::new(),
        };
        limited.definition.insert("delivery-limit".into(), 5.into());
        assert_eq!(
            read(&[limited.clone()], TargetVersion::V3_10),
            vec![tier("c")]
        );
        let quorum = compiled
            .definitions
            .queues
            .iter()
            .find(|q| q.name == tier("q"))
            .unwrap();
        let why = BrokerPolicies::new(&[limited], &[], TargetVersion::V3_10)
            .uninspectable(quorum)
            .unwrap();
        assert!(why.contains("delivery limit (5)"), "{why}");
    }

    #[test]
    fn a_healthy_broker_has_no_problems() {
        let compiled = compiled();
        let report = report_of(&compiled, &healthy(&compiled));
        assert_eq!(report.problems, 0, "{report:#?}");
        let c = &report.consumers[0];
        assert_eq!(c.tiers.len(), 2);
        assert_eq!(c.tiers[1].delay, "2s");
        assert!(c.parking.is_some());
        // A consumer without a ladder still shows its work queue.
        let plain = &report.consumers[1];
        assert!(plain.work.exists && plain.tiers.is_empty() && plain.parking.is_none());
    }

    #[test]
    fn missing_queues_shadowing_policies_and_parked_messages_are_problems() {
        let compiled = compiled();
        let c = &compiled.contract.consumers[0];
        let retry = c.retry.as_ref().unwrap();
        let parking = retry.on_exhausted.queue.clone().unwrap();
        let tier = retry.schedule[0].queue.clone();
        let mut statistics = healthy(&compiled);
        statistics.retain(|q| q.name != retry.schedule[1].queue);
        // A hand policy above warren's on the first tier.
        let mut policies = compiled.definitions.policies.clone();
        policies.push(Policy {
            vhost: "v".into(),
            name: "mine".into(),
            pattern: format!("^{}$", tier.replace('.', "\\.")),
            apply_to: "queues".into(),
            priority: i64::MAX,
            definition: Arguments::new(),
        });
        policies
            .last_mut()
            .unwrap()
            .definition
            .insert("message-ttl".into(), 1.into());
        for q in &mut statistics {
            if q.name == parking {
                q.messages = Some(2);
                q.head_message_timestamp = Some(900);
                q.message_stats = Some(crate::broker::MessageRates {
                    publish_details: Some(crate::broker::Rate { rate: Some(0.4) }),
                    deliver_get_details: None,
                });
            }
            if q.name == c.queue {
                q.consumers = Some(0);
            }
        }
        let report = report_with(&compiled, &statistics, &policies);
        let kinds: Vec<ProblemKind> = report.consumers[0]
            .problems
            .iter()
            .map(|p| p.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                ProblemKind::NoConsumers,
                ProblemKind::Policy,
                ProblemKind::PolicyHazard,
                ProblemKind::MissingQueue,
                ProblemKind::ParkingGrowing,
                ProblemKind::ParkingNotEmpty,
            ]
        );
        let shadowed = &report.consumers[0].problems[1].message;
        assert!(shadowed.contains("`mine`"), "{shadowed}");
        // What the shadowing policy does to the tier, in words.
        let hazard = &report.consumers[0].problems[2].message;
        assert!(
            hazard
                .contains("policy `mine` sets `message-ttl` to 1: its retries come back after 1ms"),
            "{hazard}"
        );
        let parked = report.consumers[0].parking.as_ref().unwrap();
        assert_eq!(parked.oldest_age_seconds, Some(100));
        assert_eq!(report.consumers[0].tiers[1].messages, None);
    }

    #[test]
    fn an_operator_policy_that_makes_parked_messages_expire_is_a_problem() {
        let compiled = compiled();
        let statistics = healthy(&compiled);
        let parking = compiled.contract.consumers[0]
            .retry
            .as_ref()
            .and_then(|r| r.on_exhausted.queue.clone())
            .unwrap();
        let mut safety_net = Policy {
            vhost: "v".into(),
            name: "safety-net".into(),
            pattern: ".*".into(),
            apply_to: "queues".into(),
            priority: 0,
            definition: Arguments::new(),
        };
        safety_net
            .definition
            .insert("message-ttl".into(), 20_000.into());
        let consumers: Vec<&ConsumerContract> = compiled.contract.consumers.iter().collect();
        let report = report(
            &consumers,
            &compiled.definitions,
            &Live {
                statistics: &statistics,
                policies: &compiled.definitions.policies,
                operator_policies: &[safety_net],
                waiting: None,
            },
            TargetVersion::DEFAULT,
            UNIX_EPOCH + Duration::from_secs(1_000),
        );
        let on_parking: Vec<&Problem> = report.consumers[0]
            .problems
            .iter()
            .filter(|p| p.queue == parking)
            .collect();
        assert_eq!(on_parking.len(), 1, "{:#?}", report.consumers[0].problems);
        assert_eq!(on_parking[0].kind, ProblemKind::PolicyHazard);
        assert!(
            on_parking[0].message.contains(
                "operator policy `safety-net` sets `message-ttl` to 20000: parked messages expire after 20s"
            ),
            "{}",
            on_parking[0].message
        );
        // Tiers shorter than the operator's TTL keep their delay: no problem there.
        let tier = &compiled.contract.consumers[0]
            .retry
            .as_ref()
            .unwrap()
            .schedule[0]
            .queue;
        assert!(
            report.consumers[0]
                .problems
                .iter()
                .all(|p| &p.queue != tier)
        );
    }

    #[test]
    fn unknown_figures_stay_unknown() {
        let compiled = compiled();
        let mut statistics = healthy(&compiled);
        for q in &mut statistics {
            q.messages = None;
            q.consumers = None;
        }
        let report = report_of(&compiled, &statistics);
        assert_eq!(report.problems, 0);
        assert_eq!(report.consumers[0].work.messages, None);
        assert_eq!(report.consumers[0].work.publish_rate, None);
        assert_eq!(
            report.consumers[0]
                .parking
                .as_ref()
                .unwrap()
                .oldest_age_seconds,
            None
        );
    }

    #[test]
    fn filters_name_the_choices() {
        let file = load_str(Path::new("t.yaml"), SPEC.to_string()).unwrap();
        let err = Filter {
            vhost: Some("w"),
            service: None,
        }
        .check(&file)
        .unwrap_err();
        assert!(err.contains("no vhost `w`") && err.contains("`v`"), "{err}");
        let err = Filter {
            vhost: Some("v"),
            service: Some("t"),
        }
        .check(&file)
        .unwrap_err();
        assert!(
            err.contains("no service `t`") && err.contains("`s`"),
            "{err}"
        );
    }
}
