//! Rules on the delays of retry ladders, read from the consumer contract.

use crate::lint::{Context, Finding, Level, Rule};
use crate::model::{ObjectId, ObjectKind};

/// A week: longer delays are almost always a unit mistake.
const SENSIBLE_MAX_MS: u64 = 7 * 24 * 3_600_000;

pub const NOT_INCREASING: Rule = Rule {
    id: "ladder-delays-not-increasing",
    level: Level::Warn,
    summary: "a retry ladder's delays do not increase",
    explanation: "Each tier of a ladder should wait longer than the one before, so that a longer outage downstream gets fewer, later retries. A delay equal to or shorter than the previous one is usually a typo (`5s` for `5m`).",
    bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 5s, 30m] } }\n",
    good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 5m, 30m] } }\n",
    check: check_not_increasing,
};

pub const ZERO_DELAY: Rule = Rule {
    id: "ladder-delay-zero",
    level: Level::Deny,
    summary: "a retry tier has a delay of zero: it retries at once, like a requeue",
    explanation: "A delay of 0 expires messages as soon as they reach the tier, so the retry comes straight back and hammers the failing service, which is what delayed retries exist to prevent.",
    bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [0s, 5m] } }\n",
    good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 5m] } }\n",
    check: check_zero,
};

pub const TOO_LONG: Rule = Rule {
    id: "ladder-delay-too-long",
    level: Level::Warn,
    summary: "a retry tier waits longer than a week",
    explanation: "Messages waiting more than a week in a delay queue are usually a unit mistake (`30d` for `30m`), and long waits keep messages in the broker's storage. Park such messages and replay them by hand instead.",
    bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 30d] } }\n",
    good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 30m] } }\n",
    check: check_too_long,
};

/// One consumer's ladder: its vhost, and (delay, tier queue) in tier order.
type Ladder<'c> = (&'c str, Vec<(u64, &'c str)>);

/// Every consumer's ladder.
fn ladders<'c>(context: &'c Context) -> Vec<Ladder<'c>> {
    let Some(contract) = context.contract else {
        return Vec::new();
    };
    contract
        .consumers
        .iter()
        .filter_map(|consumer| {
            let retry = consumer.retry.as_ref()?;
            let mut tiers: Vec<(usize, u64, &str)> = retry
                .schedule
                .iter()
                .map(|step| (step.tier, step.delay_ms, step.queue.as_str()))
                .collect();
            tiers.sort();
            tiers.dedup_by_key(|t| t.0);
            Some((
                consumer.vhost.as_str(),
                tiers
                    .into_iter()
                    .map(|(_, delay, queue)| (delay, queue))
                    .collect(),
            ))
        })
        .collect()
}

fn tier(vhost: &str, queue: &str) -> ObjectId {
    ObjectId {
        kind: ObjectKind::Queue,
        vhost: Some(vhost.to_string()),
        name: queue.to_string(),
    }
}

fn check_not_increasing(context: &Context) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (vhost, tiers) in ladders(context) {
        for pair in tiers.windows(2) {
            let ((before, _), (after, queue)) = (pair[0], pair[1]);
            if after <= before {
                findings.push(
                    Finding::on(
                        tier(vhost, queue),
                        format!("tier `{queue}` waits {after} ms, not longer than the tier before it ({before} ms)"),
                    )
                    .help("order the delays from shortest to longest, e.g. `[30s, 5m, 30m]`"),
                );
            }
        }
    }
    findings
}

fn check_zero(context: &Context) -> Vec<Finding> {
    ladders(context)
        .into_iter()
        .flat_map(|(vhost, tiers)| {
            tiers
                .into_iter()
                .filter(|(delay, _)| *delay == 0)
                .map(move |(_, queue)| {
                    Finding::on(
                        tier(vhost, queue),
                        format!("tier `{queue}` has a delay of 0: it retries at once"),
                    )
                    .help("give the tier a real delay, e.g. `30s`")
                })
        })
        .collect()
}

fn check_too_long(context: &Context) -> Vec<Finding> {
    ladders(context)
        .into_iter()
        .flat_map(|(vhost, tiers)| {
            tiers
                .into_iter()
                .filter(|(delay, _)| *delay > SENSIBLE_MAX_MS)
                .map(move |(delay, queue)| {
                    Finding::on(
                        tier(vhost, queue),
                        format!("tier `{queue}` waits {} days", delay / 86_400_000),
                    )
                    .help("check the unit (`30m`, not `30d`), or park the message and replay it by hand")
                })
        })
        .collect()
}
