//! The report on a spec's consumers: what was read of the broker ([`Live`]) against the
//! compiled spec, consumer by consumer — its work and attempt queues, its tiers in
//! ladder order, its parking queue — with `now` to date parked messages. This is the
//! pure part of status: no request is made here.

use std::time::{SystemTime, UNIX_EPOCH};

use super::inspect::Waiting;
use super::queues::{Lookup, parking_status};
use super::report::{ConsumerStatus, FORMAT, Report, Tier, WorkQueue};
use crate::broker::QueueStatistics;
use crate::compile::contract::ConsumerContract;
use crate::model::effective::CompiledPolicies;
use crate::model::role_hazards::QueueRole;
use crate::model::{Definitions, Policy, TargetVersion};
use crate::spec::RetryMode;

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
