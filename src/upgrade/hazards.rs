//! What in a broker's definitions breaks or changes meaning on another RabbitMQ line:
//! each check reads the facts of `model/` (the version facts, the queue arguments and
//! policy keys, the queue facts), never a version of its own.

use serde_json::Value;

use super::Detailed;
use crate::model::finding::{Finding, Severity};
use crate::model::json_pointer::JsonPointer;
use crate::model::queue_facts::{operator_policies, queue_facts};
use crate::model::upgrade_path::{self, Line};
use crate::model::{
    Definitions, ObjectId, ObjectKind, Policy, QueueType, TargetVersion, policy_keys,
    queue_arguments,
};

/// Every hazard of `definitions` (read from, or compiled for, RabbitMQ `from`) on `to`,
/// each pointing at its place in the definitions document (`serde_json::to_value` of
/// `definitions`, in its order).
pub(super) fn find(
    definitions: &Definitions,
    from: TargetVersion,
    to: TargetVersion,
) -> Vec<Finding> {
    let mut found = Vec::new();
    queues(definitions, from, to, &mut found);
    for (index, policy) in definitions.policies.iter().enumerate() {
        let at = JsonPointer::default().then("policies").then(index);
        policy_keys_of(policy, ObjectKind::Policy, &at, from, to, &mut found);
    }
    for (index, parameter) in definitions.parameters.iter().enumerate() {
        if let Some(policy) = parameter.as_operator_policy() {
            let at = JsonPointer::default()
                .then("parameters")
                .then(index)
                .then("value");
            policy_keys_of(
                &policy,
                ObjectKind::OperatorPolicy,
                &at,
                from,
                to,
                &mut found,
            );
        }
    }
    exchanges(definitions, to, &mut found);
    found
}

#[expect(
    clippy::too_many_lines,
    reason = "one block per hazard of a queue, in the order docs/upgrading.md lists them"
)]
fn queues(
    definitions: &Definitions,
    from: TargetVersion,
    to: TargetVersion,
    found: &mut Vec<Finding>,
) {
    let operators = operator_policies(definitions);
    let before = queue_facts(definitions, &operators, from);
    let after = queue_facts(definitions, &operators, to);
    for (index, ((queue, was), will)) in definitions
        .queues
        .iter()
        .zip(&before)
        .zip(&after)
        .enumerate()
    {
        let exclusive = queue.extra.get("exclusive").and_then(Value::as_bool) == Some(true);
        if exclusive {
            continue; // a connection's own queue: it goes with the connection
        }
        let object = ObjectId::in_vhost(ObjectKind::Queue, &queue.vhost, &queue.name);
        let at = JsonPointer::default().then("queues").then(index);
        let argument_at = |key: &str| at.then("arguments").then(key);
        let queue_type = QueueType::of(queue);
        if let Some(value) = queue.arguments.get("x-queue-version")
            && let Some(why) = queue_arguments::find("x-queue-version")
                .and_then(|known| known.refusal_on(value, to))
        {
            found.push(
                Finding::new("classic-queue-version-1", Severity::Error, why)
                    .about(object.clone())
                    .key("x-queue-version")
                    .fix("declare the queue again without `x-queue-version` (2 is the only version): a queue's arguments cannot change in place, so move its messages first (a new queue, then a shovel, or `warren apply --migrate`). An in-place upgrade keeps the queue (4.0 converted it to version 2 on disk); an import into a new 4.3 cluster (blue-green) refuses it")
                    .covering(argument_at("x-queue-version")),
            );
        }
        if let Some(value) = queue.arguments.get("x-queue-master-locator")
            && let Some(why) = queue_arguments::find("x-queue-master-locator")
                .and_then(|known| known.refusal_on(value, to))
        {
            found.push(
                Finding::new("queue-master-locator", Severity::Error, why)
                    .about(object.clone())
                    .key("x-queue-master-locator")
                    .fix(if queue_arguments::find("x-queue-leader-locator")
                        .is_some_and(|known| known.accepted_by(queue_type, from))
                    {
                        "declare the queue again with `x-queue-leader-locator` (`client-local`, or `balanced` for `min-masters` and `random`) instead: arguments cannot change in place, so move its messages first; or permit the feature on every node (`deprecated_features.permit.queue_master_locator = true`) until then".to_string()
                    } else {
                        format!("declare the queue again without `x-queue-master-locator` (RabbitMQ {from} takes no `x-queue-leader-locator` on this queue type; a `queue-leader-locator` policy can set it from 4.0 on): arguments cannot change in place, so move its messages first")
                    })
                    .covering(argument_at("x-queue-master-locator")),
            );
        }
        if let Some(value) = queue.arguments.get("x-queue-mode")
            && let Some(why) =
                queue_arguments::find("x-queue-mode").and_then(|known| known.ignored_on(value, to))
        {
            found.push(
                Finding::new(
                    "queue-mode-lazy",
                    Severity::Warning,
                    format!("{why} (the 4.3.0 release notes say 4.3 refuses the argument; RabbitMQ 4.3.6 measured declares it)"),
                )
                .about(object.clone())
                .key("x-queue-mode")
                .fix("leave `x-queue-mode` out when the queue is next declared (a new cluster, a migration): it changes nothing, and a later 4.3 patch may refuse it as the release notes say"),
            );
        }
        if queue.arguments.contains_key("x-consumer-timeout")
            && let Some(known) = queue_arguments::find("x-consumer-timeout")
            && known.accepted_by(queue_type, from)
            && !known.accepted_by(queue_type, to)
        {
            found.push(
                Finding::new(
                    "consumer-timeout-classic",
                    Severity::Error,
                    format!("RabbitMQ {to} evaluates consumer timeouts for quorum queues only and refuses `x-consumer-timeout` on a {} queue (measured on 4.3.6)", queue_type.as_str()),
                )
                .about(object.clone())
                .key("x-consumer-timeout")
                .fix("declare the queue again without `x-consumer-timeout`, or as a quorum queue if its consumers rely on the timeout (arguments cannot change in place: move its messages first)")
                .covering(argument_at("x-consumer-timeout")),
            );
        }
        if !queue.durable && !queue.is_transient() && to.deprecates_transient_nonexclusive_queues()
        {
            found.push(
                Finding::new(
                    "transient-nonexclusive-queue",
                    Severity::Warning,
                    format!("a non-durable queue that is not exclusive uses the deprecated feature `transient_nonexcl_queues`: the 4.3.0 release notes deny it by default from {}, so declaring or importing the queue would fail (RabbitMQ 4.3.6 measured still permits it); Khepri keeps no transient metadata", TargetVersion::V4_3),
                )
                .about(object.clone())
                .fix("make the queue durable (declare it again with `durable: true`), or exclusive to its connection if it is a reply or scratch queue"),
            );
        }
        if queue_type == QueueType::Quorum {
            if !from.has_default_delivery_limit()
                && to.has_default_delivery_limit()
                && was.delivery_limit.is_none()
            {
                // One wording for every queue of a kind, so that a report groups them.
                let end = match was.dead_letter_exchange {
                    Some(_) => "dead-lettered to the queue's dead-letter exchange",
                    None => "dropped (the queue has no dead-letter exchange)",
                };
                let nack = if to.counts_nack_toward_delivery_limit() {
                    String::new()
                } else {
                    format!("; and on {to} only `basic.reject` (not `basic.nack`) counts toward it")
                };
                found.push(
                    Finding::new(
                        "quorum-default-delivery-limit",
                        Severity::Warning,
                        format!("the quorum queue has no delivery limit; from 4.0 it gets the default of 20: a message redelivered more than 20 times is {end}{nack}"),
                    )
                    .about(object.clone())
                    .fix(format!("set the delivery limit you mean by policy (`delivery-limit`) before the upgrade: a number (e.g. 20, or more) works on every line; `-1` (unlimited) only once every node runs 4.x, since 3.x refuses a negative limit, so in that case apply the `-1` policy right after {} (messages redelivered 20 times are dead-lettered in between)", first_step_to_4(from, to))),
                );
            } else if was.delivery_limit.is_some()
                && from.counts_nack_toward_delivery_limit()
                && !to.counts_nack_toward_delivery_limit()
                && let Some(limit) = will.delivery_limit
            {
                found.push(
                    Finding::new(
                        "quorum-nack-not-counted",
                        Severity::Warning,
                        format!("the quorum queue has a delivery limit of {limit}; on {to} a consumer's `basic.nack` with requeue no longer counts toward it (only failed deliveries do: `basic.reject`, a lost connection): a consumer that nacks a poison message redelivers it without end"),
                    )
                    .about(object.clone())
                    .fix("make consumers reject (`basic.reject` with requeue) what they give up on, or dead-letter it themselves (`requeue=false`); a warren retry ladder rejects without requeue and is not affected"),
                );
            }
        }
        let _ = will;
    }
}

/// The step of the upgrade path from `from` to `to` that lands on a 4.x line, where the
/// 4.0 defaults begin (`the step to 4.2` for 3.13 → 4.2 → 4.3).
fn first_step_to_4(from: TargetVersion, to: TargetVersion) -> String {
    let line = |version: TargetVersion| Line::of(&version.to_string());
    let landing = line(from)
        .zip(line(to))
        .and_then(|(from, to)| upgrade_path::path(from, to).ok())
        .and_then(|steps| steps.into_iter().find(|step| step.to.major >= 4));
    match landing {
        Some(step) => format!("the step to {}", step.to),
        None => "the first step to a 4.x line".to_string(),
    }
}

fn policy_keys_of(
    policy: &Policy,
    kind: ObjectKind,
    at: &JsonPointer,
    from: TargetVersion,
    to: TargetVersion,
    found: &mut Vec<Finding>,
) {
    let object = ObjectId::in_vhost(kind, &policy.vhost, &policy.name);
    let key_at = |key: &str| at.then("definition").then(key);
    let what = kind.noun();
    let mirroring: Vec<&String> = policy
        .definition
        .keys()
        .filter(|key| {
            key.starts_with("ha-")
                && policy_keys::find(key)
                    .is_some_and(|known| known.known_on(from) && !known.known_on(to))
        })
        .collect();
    if !mirroring.is_empty() {
        let keys: Vec<String> = mirroring.iter().map(|key| format!("`{key}`")).collect();
        let only_mirroring = mirroring.len() == policy.definition.len();
        let mut finding = Finding::new(
            "classic-mirroring",
            Severity::Error,
            format!("the {what} mirrors classic queues ({}); RabbitMQ {to} removed classic queue mirroring and refuses a {what} with these keys (it does not import); on an in-place upgrade they stop doing anything", keys.join(", ")),
        )
        .about(object.clone())
        .key(mirroring[0])
        .fix(if only_mirroring {
            format!("delete the {what}: it holds only mirroring keys, and a policy with an empty definition is refused. Queues that need replicas become quorum queues (or streams) before 4.0")
        } else {
            format!("remove the `ha-*` keys from the {what}'s definition and keep the rest. Queues that need replicas become quorum queues (or streams) before 4.0")
        });
        for key in &mirroring {
            finding = finding.covering(key_at(key));
        }
        found.push(finding);
    }
    for (key, value) in &policy.definition {
        let Some(known) = policy_keys::find(key) else {
            continue;
        };
        match key.as_str() {
            "queue-version" => {
                if let Some(why) = known.ignored_on(value, to)
                    && known.ignored_on(value, from).is_none()
                {
                    found.push(
                        Finding::new("classic-queue-version-1", Severity::Warning, why)
                            .about(object.clone())
                            .key(key)
                            .fix(format!("remove `queue-version` from the {what}: classic queues are version 2 from 4.0 on (and a new 4.3 queue declared with version 1 is refused)")),
                    );
                }
            }
            "queue-master-locator" if known.known_on(from) && !known.known_on(to) => {
                found.push(
                    Finding::new(
                        "queue-master-locator",
                        Severity::Error,
                        format!("RabbitMQ {to} denies the deprecated feature `queue_master_locator` by default and refuses a {what} with `queue-master-locator`"),
                    )
                    .about(object.clone())
                    .key(key)
                    .fix(format!("replace `queue-master-locator` with `queue-leader-locator` in the {what} (`client-local`, or `balanced` for `min-masters` and `random`)"))
                    .covering(key_at(key)),
                );
            }
            "queue-mode" => {
                if let Some(why) = known.ignored_on(value, to) {
                    found.push(
                        Finding::new("queue-mode-lazy", Severity::Warning, why)
                            .about(object.clone())
                            .key(key)
                            .fix(format!(
                                "remove `queue-mode` from the {what}: it changes nothing"
                            )),
                    );
                }
            }
            "consumer-timeout" => {
                let reaches_classic =
                    !matches!(policy.apply_to.as_str(), "quorum_queues" | "exchanges");
                if reaches_classic
                    && let Some(why) = known.ignored_on(value, to)
                    && known.ignored_on(value, from).is_none()
                {
                    found.push(
                        Finding::new("consumer-timeout-classic", Severity::Warning, why)
                            .about(object.clone())
                            .key(key)
                            .fix(format!("if consumers of classic queues or streams rely on the timeout, move those queues to quorum queues; else narrow the {what} to `apply-to: quorum_queues`")),
                    );
                }
            }
            _ => {}
        }
    }
}

fn exchanges(definitions: &Definitions, to: TargetVersion, found: &mut Vec<Finding>) {
    if to.has_delayed_message_exchange_plugin() {
        return;
    }
    for (index, exchange) in definitions.exchanges.iter().enumerate() {
        if !exchange.is_delayed_message() {
            continue;
        }
        found.push(
            Finding::new(
                "delayed-message-exchange",
                Severity::Error,
                format!("the exchange is a delayed-message exchange (type `{}`): the plugin `rabbitmq_delayed_message_exchange` is archived and has no release for RabbitMQ {to} (its last, 4.2.0, supports 4.2 only; 4.3 removed Mnesia, where it keeps delayed messages), so the type is unknown and the exchange cannot be declared", exchange.kind),
            )
            .about(ObjectId::in_vhost(ObjectKind::Exchange, &exchange.vhost, &exchange.name))
            .covering(JsonPointer::default().then("exchanges").then(index).then("type"))
            .fix(if to.has_native_delayed_retry() {
                "replace it before the upgrade: for retries, a warren retry ladder on the consumer — `retry: { delays: [...] }` (delay queues, any ladder, every version) or, once on 4.3, `retry: { mode: native, delays: [...] }` (the quorum work queue waits itself; linear delays; docs/retry-modes.md); for other delays, a queue with `x-message-ttl` and `x-dead-letter-exchange` per delay publishers need; drain the delayed messages the plugin holds (they are lost with it)"
            } else {
                "replace it with delay queues before the upgrade: a warren retry ladder (`retry: { delays: [...] }` on the consumer: a queue per delay with a message TTL that dead-letters back), or a queue with `x-message-ttl` and `x-dead-letter-exchange` per delay publishers need; drain the delayed messages the plugin holds (they are lost with it)"
            }),
        );
    }
}
