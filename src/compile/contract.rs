//! The consumer contract: what a consumer does when it cannot process a message.
//!
//! `warren compile --contract` prints it as JSON so client libraries can follow it
//! without hard-coding names; docs/consumer-contract.md explains it for people.

use serde::Serialize;

use super::consumer::ConsumerContext;
use super::resolve::Ladder;
use super::retry::RetryObjects;
use crate::model::TargetVersion;
use crate::model::headers::{
    DEATH_HEADERS, DELIVERY_COUNT_HEADER, ORIGINAL_ROUTING_KEY_HEADER, RETRY_COUNT_HEADER,
};
use crate::model::role_hazards::QueueRole;
use crate::spec::{OnExhausted, QueueType, RetryMode, SpecPath};

/// The contract of every consumer in a spec.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Contract {
    /// Format version of this document.
    pub version: u32,
    /// Consumers in spec order.
    pub consumers: Vec<ConsumerContract>,
}

/// One consumer's contract.
#[derive(Debug, Clone, Serialize)]
pub struct ConsumerContract {
    /// Vhost.
    pub vhost: String,
    /// Service.
    pub service: String,
    /// Consumer.
    pub consumer: String,
    /// The user the consumer's application logs in as, when the spec names it: warren
    /// generates its permissions from this contract.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The work queue.
    pub queue: String,
    /// Every queue the consumer reads from (more than one in `reject-chain` mode).
    pub consume_from: Vec<String>,
    /// The retry ladder, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryContract>,
    /// How to hand a message back for an immediate redelivery, when the work queue is
    /// a quorum queue (whose delivery limit counts some requeues and not others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue: Option<Requeue>,
}

/// How a consumer of a quorum queue requeues a message (requeue=true): the method that
/// counts toward the queue's delivery limit on the target version. Only the version is
/// kept; the words are written out when the contract is serialized.
#[derive(Debug, Clone, Copy)]
pub struct Requeue {
    /// The version the contract is for.
    pub target: TargetVersion,
}

impl Requeue {
    /// The requeue instructions for a consumer of a `work_type` queue on `target`.
    fn of(work_type: QueueType, target: TargetVersion) -> Option<Requeue> {
        (work_type == QueueType::Quorum).then_some(Requeue { target })
    }

    /// The method to use: `basic.reject` counts on every version.
    pub fn with(self) -> &'static str {
        "basic.reject"
    }

    /// The method never to use on this version, when there is one.
    pub fn never_with(self) -> Option<&'static str> {
        (!self.target.counts_nack_toward_delivery_limit()).then_some("basic.nack")
    }

    /// Why.
    pub fn why(self) -> String {
        let target = self.target;
        if target.counts_nack_toward_delivery_limit() {
            format!(
                "on RabbitMQ {target} basic.reject and basic.nack with requeue=true both count toward the queue's delivery limit; from 4.3 only basic.reject does, so a consumer that rejects stays right after an upgrade"
            )
        } else {
            format!(
                "on RabbitMQ {target} a basic.nack with requeue=true returns the message without counting it toward the queue's delivery limit, so a message every delivery nacks is redelivered without end; basic.reject with requeue=true counts"
            )
        }
    }
}

impl Serialize for Requeue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Document {
            with: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            never_with: Option<&'static str>,
            why: String,
        }
        Document {
            with: self.with(),
            never_with: self.never_with(),
            why: self.why(),
        }
        .serialize(serializer)
    }
}

/// How a consumer retries. The instructions (`count_from`, `on_failure`,
/// `strip_headers`) are written out when the contract is serialized: a spec with
/// thousands of consumers keeps only the facts they are made from.
#[derive(Debug, Clone)]
pub struct RetryContract {
    /// How the consumer fails a message.
    pub mode: RetryMode,
    /// The consumer's own retry exchange.
    pub exchange: String,
    /// The consumer's work queue (whose `x-death` entry counts in `reject` mode).
    pub work_queue: String,
    /// Retries after the first attempt; the message is handled at most `max_retries + 1` times.
    pub max_retries: usize,
    /// The ladder, one step per retry.
    pub schedule: Vec<RetryStep>,
    /// What happens after the last retry.
    pub on_exhausted: Exhausted,
}

impl RetryContract {
    /// Where the retry count comes from.
    pub fn count_from(&self) -> String {
        match self.mode {
            RetryMode::Publish => {
                format!("header `{RETRY_COUNT_HEADER}` (absent on the first delivery = 0)")
            }
            RetryMode::Reject => format!(
                "`x-death`: the `count` of the entry whose `queue` is `{}` and `reason` is `rejected` (0 when absent)",
                self.work_queue
            ),
            RetryMode::RejectChain => {
                "the queue the message was consumed from: `consume_from[n]` is attempt n + 1"
                    .to_string()
            }
            RetryMode::Native => format!(
                "header `{DELIVERY_COUNT_HEADER}`: the broker's count of failed deliveries (absent on the first delivery = 0); the broker counts and parks, the consumer need not read it"
            ),
        }
    }

    /// What to do on a failure, step by step.
    pub fn on_failure(&self) -> Vec<String> {
        let max = self.max_retries;
        let exhausted_step = if self.on_exhausted.action == "park" {
            format!(
                "otherwise publish the message unchanged to exchange `{}` with routing key `{}`, then ack",
                self.exchange,
                self.on_exhausted.routing_key.as_deref().unwrap_or_default()
            )
        } else {
            "otherwise ack it: the message is dropped".to_string()
        };
        match self.mode {
            RetryMode::Publish => vec![
                format!("read n = `{RETRY_COUNT_HEADER}` (0 when absent)"),
                format!(
                    "if n < {max}: publish a copy to exchange `{}` with routing key schedule[n].routing_key, header `{RETRY_COUNT_HEADER}` = n + 1, header `{ORIGINAL_ROUTING_KEY_HEADER}` = the delivery's routing key if the header is absent, the `x-death`/`x-first-death-*`/`x-last-death-*` headers removed and every other property kept; wait for the publisher confirm, then ack",
                    self.exchange
                ),
                exhausted_step,
                "a plain reject (requeue=false) also enters the first tier, but does not count".to_string(),
            ],
            RetryMode::Reject => vec![
                "read n from `x-death` as `count_from` says".to_string(),
                format!("if n < {max}: reject with requeue=false"),
                exhausted_step,
            ],
            RetryMode::RejectChain => vec![
                "reject with requeue=false; the broker moves the message to the next tier, and after the last retry to the parking queue (or drops it with `on_exhausted: drop`)".to_string(),
            ],
            RetryMode::Native => vec![
                format!(
                    "reject with requeue=true (basic.reject): the broker keeps the message in the work queue and redelivers it after schedule[n].delay (retry n + 1), and after {max} retries {}",
                    if self.on_exhausted.action == "park" {
                        "moves it to the parking queue"
                    } else {
                        "drops it"
                    }
                ),
                "never basic.nack with requeue=true: the broker counts a nack as a returned delivery, which never reaches the delivery limit, so the message would wait the first delay again and again and never leave the queue".to_string(),
                if self.on_exhausted.action == "park" {
                    "to give up on a message at once, reject it with requeue=false: the broker moves it to the parking queue".to_string()
                } else {
                    "to give up on a message at once, ack it: it is dropped".to_string()
                },
            ],
        }
    }

    /// Whether the consumer publishes to its retry exchange: retries and parking in
    /// `publish` mode, parking in `reject` mode when it parks; never in `reject-chain`
    /// mode, where the broker parks.
    pub fn publishes(&self) -> bool {
        match self.mode {
            RetryMode::Publish => true,
            RetryMode::Reject => self.on_exhausted.action == "park",
            RetryMode::RejectChain | RetryMode::Native => false,
        }
    }

    /// Headers to remove before re-publishing (`publish` mode).
    pub fn strip_headers(&self) -> &'static [&'static str] {
        match self.mode {
            RetryMode::Publish => DEATH_HEADERS,
            _ => &[],
        }
    }

    /// Header that keeps the original routing key across re-publishes (`publish` mode).
    pub fn original_routing_key_header(&self) -> Option<&'static str> {
        (self.mode == RetryMode::Publish).then_some(ORIGINAL_ROUTING_KEY_HEADER)
    }
}

impl Serialize for RetryContract {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Document<'a> {
            mode: &'static str,
            exchange: &'a str,
            max_retries: usize,
            count_from: String,
            on_failure: Vec<String>,
            schedule: &'a [RetryStep],
            on_exhausted: &'a Exhausted,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            strip_headers: &'static [&'static str],
            #[serde(skip_serializing_if = "Option::is_none")]
            original_routing_key_header: Option<&'static str>,
        }
        Document {
            mode: match self.mode {
                RetryMode::Publish => "publish",
                RetryMode::Reject => "reject",
                RetryMode::RejectChain => "reject-chain",
                RetryMode::Native => "native",
            },
            exchange: &self.exchange,
            max_retries: self.max_retries,
            count_from: self.count_from(),
            on_failure: self.on_failure(),
            schedule: &self.schedule,
            on_exhausted: &self.on_exhausted,
            strip_headers: self.strip_headers(),
            original_routing_key_header: self.original_routing_key_header(),
        }
        .serialize(serializer)
    }
}

/// One retry.
#[derive(Debug, Clone, Serialize)]
pub struct RetryStep {
    /// Retry number, from 1.
    pub retry: usize,
    /// Tier number, from 1.
    pub tier: usize,
    /// Delay in milliseconds.
    pub delay_ms: u64,
    /// Delay as written.
    pub delay: String,
    /// Routing key on the retry exchange that reaches this step's delay queue (none in
    /// `native` mode, where the message waits in the work queue, and on a fanout retry
    /// exchange, where any key does).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub routing_key: String,
    /// The delay queue.
    pub queue: String,
    /// Where the delay is written: the consumer's own `retry`, a named ladder or a
    /// `defaults` block that it inherits. Lint reports a delay there, once.
    #[serde(skip)]
    pub delay_path: SpecPath,
}

/// The end of the ladder.
#[derive(Debug, Clone, Serialize)]
pub struct Exhausted {
    /// `park` or `drop`.
    pub action: String,
    /// Exchange to publish to when parking by hand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exchange: Option<String>,
    /// Routing key that reaches the parking queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing_key: Option<String>,
    /// The parking queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

impl ConsumerContract {
    /// Each of the consumer's queues with what it is for: the work queue, its attempt
    /// queues, its delay tiers (numbered from 1, one per queue) and its parking queue.
    pub fn roles(&self) -> Vec<(&str, QueueRole)> {
        let retry = self.retry.as_ref();
        let waits = retry.is_some_and(|r| r.mode == RetryMode::Native);
        let mut roles = vec![(self.queue.as_str(), QueueRole::Work { waits })];
        roles.extend(
            self.consume_from
                .iter()
                .filter(|queue| **queue != self.queue)
                .map(|queue| (queue.as_str(), QueueRole::Attempt)),
        );
        let Some(retry) = retry else {
            return roles;
        };
        let mut tiers = 0;
        for step in retry.schedule.iter().filter(|_| !waits) {
            if roles.iter().any(|(queue, _)| *queue == step.queue) {
                continue;
            }
            tiers += 1;
            roles.push((
                step.queue.as_str(),
                QueueRole::Tier {
                    tier: tiers,
                    delay_ms: step.delay_ms,
                },
            ));
        }
        roles.extend(
            retry
                .on_exhausted
                .queue
                .as_deref()
                .map(|queue| (queue, QueueRole::Parking)),
        );
        roles
    }
}

impl Contract {
    /// Every consumer's queues with what each is for, by (vhost, queue).
    pub fn roles(&self) -> crate::model::role_hazards::QueueRoles {
        self.consumers
            .iter()
            .flat_map(|consumer| {
                consumer
                    .roles()
                    .into_iter()
                    .map(|(queue, role)| ((consumer.vhost.clone(), queue.to_string()), role))
            })
            .collect()
    }

    pub(crate) fn add_plain(&mut self, context: &ConsumerContext, target: TargetVersion) {
        self.version = 1;
        self.consumers.push(ConsumerContract {
            vhost: context.vhost.to_string(),
            service: context.service.to_string(),
            consumer: context.consumer.to_string(),
            user: context.user.map(str::to_string),
            queue: context.work_queue.clone(),
            consume_from: vec![context.work_queue.clone()],
            retry: None,
            requeue: Requeue::of(context.work_type, target),
        });
    }

    pub(crate) fn add_ladder(
        &mut self,
        context: &ConsumerContext,
        ladder: &Ladder,
        objects: &RetryObjects,
        target: TargetVersion,
    ) {
        self.version = 1;
        let schedule: Vec<RetryStep> = ladder
            .schedule
            .iter()
            .enumerate()
            .map(|(index, &tier)| {
                if ladder.mode == RetryMode::Native {
                    let first = ladder.delays[0];
                    let last = ladder.delays[ladder.delays.len() - 1];
                    let delay = super::resolve::native::wait(first, last, index + 1);
                    return RetryStep {
                        retry: index + 1,
                        tier: tier + 1,
                        delay_ms: delay.as_millis(),
                        delay: delay.to_string(),
                        routing_key: String::new(),
                        queue: context.work_queue.clone(),
                        delay_path: ladder.delays_path.index(tier),
                    };
                }
                let delay_index = match ladder.mode {
                    RetryMode::RejectChain => index,
                    _ => tier,
                };
                RetryStep {
                    retry: index + 1,
                    tier: tier + 1,
                    delay_ms: ladder.delays[tier].as_millis(),
                    delay: ladder.delays[tier].to_string(),
                    routing_key: objects.delay_keys[delay_index].clone(),
                    queue: objects.delay_queues[delay_index].clone(),
                    delay_path: ladder.delays_path.index(tier),
                }
            })
            .collect();
        let park = ladder.on_exhausted == OnExhausted::Park;
        let mut consume_from = vec![context.work_queue.clone()];
        consume_from.extend(objects.attempt_queues.iter().cloned());
        self.consumers.push(ConsumerContract {
            vhost: context.vhost.to_string(),
            service: context.service.to_string(),
            consumer: context.consumer.to_string(),
            user: context.user.map(str::to_string),
            queue: context.work_queue.clone(),
            consume_from,
            retry: Some(RetryContract {
                mode: ladder.mode,
                exchange: objects.exchange.clone(),
                work_queue: context.work_queue.clone(),
                max_retries: schedule.len(),
                schedule,
                on_exhausted: Exhausted {
                    action: if park { "park" } else { "drop" }.to_string(),
                    exchange: park.then(|| objects.exchange.clone()),
                    routing_key: park.then(|| objects.parking_key.clone()),
                    queue: objects.parking.clone(),
                },
            }),
            requeue: Requeue::of(context.work_type, target),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::compile::{Options, compile};
    use crate::spec::load_str;

    fn contract(mode: &str) -> serde_json::Value {
        let yaml = format!(
            "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          c:\n            routing_keys: [a.b]\n            retry: {{ delays: [1s, 2s], mode: {mode} }}\n"
        );
        let file = load_str(Path::new("test.yaml"), yaml).unwrap();
        let compiled = compile(&file, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
        serde_json::to_value(&compiled.contract).unwrap()["consumers"][0]["retry"].clone()
    }

    #[test]
    fn publish_mode_keeps_the_original_routing_key_in_a_header() {
        let retry = contract("publish");
        assert_eq!(retry["original_routing_key_header"], "warren-routing-key");
        let step = retry["on_failure"][1].as_str().unwrap();
        assert!(
            step.contains("`warren-routing-key` = the delivery's routing key"),
            "{step}"
        );
        // The broker keeps the key in `x-death` in the reject modes.
        assert!(
            contract("reject-chain")
                .get("original_routing_key_header")
                .is_none()
        );
    }
}
