//! The report from a compiled spec and the figures a broker gave: problems found and
//! not found, figures kept unknown, what `--inspect` read, and the filters' errors.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use super::Filter;
use super::consumers::{Live, report};
use super::inspect::Waiting;
use super::report::{Problem, ProblemKind, Report, TierInspection};
use crate::broker::{QueueStatistics, WaitingDeaths};
use crate::compile::contract::ConsumerContract;
use crate::compile::{self, Compiled, Options};
use crate::model::dead_letter::{Death, DeathReason};
use crate::model::{Arguments, Policy, TargetVersion};
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

fn report_with(compiled: &Compiled, statistics: &[QueueStatistics], policies: &[Policy]) -> Report {
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
        hazard.contains("policy `mine` sets `message-ttl` to 1: its retries come back after 1ms"),
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
