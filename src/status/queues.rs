//! One queue of a consumer as status sees it: the spec's compiled definitions and what
//! was read of the broker, looked up by queue ([`Lookup`]), and the problems of each
//! queue (missing, under another policy, a policy setting that breaks its role, no
//! consumers, a parking queue that fills). The checks are per queue, whatever consumer
//! or role the queue has; `consumers.rs` walks a consumer's queues and calls them.

use rustc_hash::FxHashMap;

use super::inspect::{Waiting, contract_hint, rejections, uninspectable};
use super::report::{Parking, Problem, ProblemKind, TierInspection, WorkQueue};
use crate::broker::QueueStatistics;
use crate::compile::contract::{ConsumerContract, RetryContract};
use crate::model::effective::{CompiledPolicies, Winner};
use crate::model::role_hazards::{self, QueueRole};
use crate::model::settings;
use crate::model::{Policy, Queue, QueueType, TargetVersion};

/// The compiled spec and what was read of the broker, looked up by queue.
pub(super) struct Lookup<'a> {
    pub(super) live: FxHashMap<(&'a str, &'a str), &'a QueueStatistics>,
    pub(super) desired: FxHashMap<(&'a str, &'a str), &'a Queue>,
    pub(super) policies: CompiledPolicies<'a, Policy>,
    pub(super) operator_policies: CompiledPolicies<'a, Policy>,
    pub(super) live_policies: CompiledPolicies<'a, Policy>,
    pub(super) live_operator_policies: CompiledPolicies<'a, Policy>,
    pub(super) target: TargetVersion,
    pub(super) waiting: Option<Waiting<'a>>,
}

impl<'a> Lookup<'a> {
    pub(super) fn live(&self, vhost: &str, queue: &str) -> Option<&'a QueueStatistics> {
        self.live.get(&(vhost, queue)).copied()
    }

    /// The problems of one queue that every role shares: missing, or under another
    /// policy than the spec gives it.
    pub(super) fn check(
        &self,
        vhost: &str,
        queue: &str,
        role: &QueueRole,
        problems: &mut Vec<Problem>,
    ) {
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
    pub(super) fn inspected(
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

    pub(super) fn work_queue(
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

pub(super) fn parking_status(
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
