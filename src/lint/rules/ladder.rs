//! Rules on the delays of retry ladders, read from the consumer contract.

use indexmap::IndexMap;

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::spec::SpecPath;

/// A week: longer delays are almost always a unit mistake.
const SENSIBLE_MAX_MS: u64 = 7 * 24 * 3_600_000;

pub const NOT_INCREASING: Rule = Rule {
    id: "ladder-delays-not-increasing",
    summary: "a retry ladder's delays do not increase",
    level: Some(Level::Warn),
    explanation: Some(
        "Each tier of a ladder should wait longer than the one before, so that a longer outage downstream gets fewer, later retries. A delay equal to or shorter than the previous one is usually a typo (`5s` for `5m`).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 5s, 30m] } }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 5m, 30m] } }\n",
        run: check_not_increasing,
    },
};

pub const ZERO_DELAY: Rule = Rule {
    id: "ladder-delay-zero",
    summary: "a retry tier has a delay of zero: it retries at once, like a requeue",
    level: Some(Level::Deny),
    explanation: Some(
        "A delay of 0 expires messages as soon as they reach the tier, so the retry comes straight back and hammers the failing service, which is what delayed retries exist to prevent.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [0s, 5m] } }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 5m] } }\n",
        run: check_zero,
    },
};

pub const TOO_LONG: Rule = Rule {
    id: "ladder-delay-too-long",
    summary: "a retry tier waits longer than a week",
    level: Some(Level::Warn),
    explanation: Some(
        "Messages waiting more than a week in a delay queue are usually a unit mistake (`30d` for `30m`), and long waits keep messages in the broker's storage. Park such messages and replay them by hand instead.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 30d] } }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [30s, 30m] } }\n",
        run: check_too_long,
    },
};

/// One tier of one consumer's ladder, with where its delay is written.
struct Tier<'c> {
    delay_ms: u64,
    /// The delay as the spec writes it (`5m`, not `300000 ms`).
    delay: &'c str,
    delay_path: &'c SpecPath,
}

/// One consumer's ladder: the consumer's name and place, and its tiers in order.
struct Ladder<'c> {
    consumer: String,
    path: SpecPath,
    tiers: Vec<Tier<'c>>,
}

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
            let mut steps: Vec<_> = retry.schedule.iter().collect();
            steps.sort_by_key(|step| step.tier);
            steps.dedup_by_key(|step| step.tier);
            Some(Ladder {
                consumer: format!("{}.{}", consumer.service, consumer.consumer),
                path: SpecPath::root()
                    .key("vhosts")
                    .key(consumer.vhost.as_str())
                    .key("services")
                    .key(consumer.service.as_str())
                    .key("consumers")
                    .key(consumer.consumer.as_str()),
                tiers: steps
                    .into_iter()
                    .map(|step| Tier {
                        delay_ms: step.delay_ms,
                        delay: &step.delay,
                        delay_path: &step.delay_path,
                    })
                    .collect(),
            })
        })
        .collect()
}

/// One finding per place in the spec: a delay written once in `defaults` or a named
/// ladder is reported there once, naming every consumer that inherits it, instead of
/// once per consumer at a place the file does not have.
struct ByPlace<'c> {
    found: IndexMap<&'c SpecPath, (String, Affected)>,
}

/// Consumers a finding affects: name and place in the spec.
type Affected = Vec<(String, SpecPath)>;

impl<'c> ByPlace<'c> {
    fn new() -> Self {
        ByPlace {
            found: IndexMap::new(),
        }
    }

    fn add(&mut self, at: &'c SpecPath, message: String, ladder: &Ladder) {
        self.found
            .entry(at)
            .or_insert_with(|| (message, Vec::new()))
            .1
            .push((ladder.consumer.clone(), ladder.path.clone()));
    }

    fn findings(self, help: &str) -> Vec<Finding> {
        self.found
            .into_iter()
            .map(|(at, (message, affects))| {
                let finding = Finding::in_spec(at.clone(), message).fix(help);
                // A consumer's own delay needs no list: the place names the consumer.
                match affects.as_slice() {
                    [(_, consumer)] if at.starts_with(consumer) => finding,
                    _ => finding.affecting_each(affects),
                }
            })
            .collect()
    }
}

fn check_not_increasing(context: &Context) -> Vec<Finding> {
    let ladders = ladders(context);
    let mut found = ByPlace::new();
    for ladder in &ladders {
        for pair in ladder.tiers.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            if after.delay_ms <= before.delay_ms {
                found.add(
                    after.delay_path,
                    format!(
                        "delay `{}` is not longer than the delay before it (`{}`)",
                        after.delay, before.delay
                    ),
                    ladder,
                );
            }
        }
    }
    found.findings("order the delays from shortest to longest, e.g. `[30s, 5m, 30m]`")
}

fn check_zero(context: &Context) -> Vec<Finding> {
    let ladders = ladders(context);
    let mut found = ByPlace::new();
    for ladder in &ladders {
        for tier in ladder.tiers.iter().filter(|tier| tier.delay_ms == 0) {
            found.add(
                tier.delay_path,
                "a delay of 0 retries at once".to_string(),
                ladder,
            );
        }
    }
    found.findings("give the tier a real delay, e.g. `30s`")
}

fn check_too_long(context: &Context) -> Vec<Finding> {
    let ladders = ladders(context);
    let mut found = ByPlace::new();
    for ladder in &ladders {
        for tier in ladder
            .tiers
            .iter()
            .filter(|tier| tier.delay_ms > SENSIBLE_MAX_MS)
        {
            found.add(
                tier.delay_path,
                format!("delay `{}` is longer than a week", tier.delay),
                ladder,
            );
        }
    }
    found.findings("check the unit (`30m`, not `30d`), or park the message and replay it by hand")
}
