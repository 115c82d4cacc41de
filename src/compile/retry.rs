//! A consumer's retry ladder: its dead exchange, delay tiers, parking queue, and the
//! contract its consumers follow.

use std::sync::Arc;

use serde_json::Value;

use super::consumer::{ConsumerContext, delivery_limit_need, parking_delivery_need};
use super::naming::{self, PARKING_ROUTING_KEY, delay_routing_key};
use super::resolve::Ladder;
use super::{Emitter, PolicyNeed, durable_queue, queue_arguments, queue_binding};
use crate::model::{Arguments, Exchange};
use crate::spec::source_map::Segment;
use crate::spec::{
    DelaysIn, ExchangeType, OnExhausted, QueueType, RetryExchangeType, RetryMode, ReturnVia,
    SpecPath,
};

/// The names of one consumer's retry objects.
#[derive(Debug, Clone)]
pub(crate) struct RetryObjects {
    pub exchange: String,
    /// Delay queues: one per tier, or one per retry in `reject-chain` mode.
    pub delay_queues: Vec<String>,
    /// `reject-chain` only: the work queue of attempt 2, 3, …
    pub attempt_queues: Vec<String>,
    pub parking: Option<String>,
    /// The routing key of each delay queue on the retry exchange (empty on a fanout
    /// retry exchange, which ignores keys).
    pub delay_keys: Vec<String>,
    /// The parking queue's routing key on the retry exchange.
    pub parking_key: String,
    /// `return_via: return_exchange`: the consumer's own return exchange.
    pub return_exchange: Option<String>,
}

/// Works out the names: the spec's `retry.names`, else [`naming`]'s defaults.
pub(crate) fn names(context: &ConsumerContext, ladder: &Ladder) -> RetryObjects {
    let work = &context.work_queue;
    let delay_count = match ladder.mode {
        RetryMode::RejectChain => ladder.schedule.len(),
        // The work queue waits: no delay queues.
        RetryMode::Native => 0,
        _ => ladder.delays.len(),
    };
    let delay_queues = match &ladder.names.tiers {
        _ if delay_count == 0 => Vec::new(),
        Some(tiers) if tiers.len() == delay_count => tiers.clone(),
        _ => naming::delay_queues(work, &ladder.origin, &schedule(ladder)),
    };
    let attempt_queues = match ladder.mode {
        RetryMode::RejectChain => match &ladder.names.attempts {
            Some(attempts) if attempts.len() == ladder.schedule.len() => attempts.clone(),
            _ => naming::attempt_queues(work, ladder.schedule.len()),
        },
        _ => Vec::new(),
    };
    let delay_keys = match (&ladder.names.keys, ladder.exchange_type) {
        (Some(keys), _) if keys.len() == delay_queues.len() => keys.clone(),
        (_, RetryExchangeType::Fanout) => vec![String::new(); delay_queues.len()],
        _ => (0..delay_queues.len()).map(delay_routing_key).collect(),
    };
    RetryObjects {
        delay_keys,
        parking_key: ladder
            .names
            .parking_key
            .clone()
            .unwrap_or_else(|| PARKING_ROUTING_KEY.to_string()),
        return_exchange: (ladder.return_via == ReturnVia::ReturnExchange).then(|| {
            ladder
                .names
                .return_exchange
                .clone()
                .unwrap_or_else(|| naming::return_exchange(work))
        }),
        exchange: ladder
            .names
            .exchange
            .clone()
            .unwrap_or_else(|| naming::retry_exchange(work)),
        delay_queues,
        attempt_queues,
        parking: (ladder.on_exhausted == OnExhausted::Park).then(|| {
            ladder
                .names
                .parking
                .clone()
                .unwrap_or_else(|| naming::parking_queue(work))
        }),
    }
}

/// The tier (0-based) of each delay queue: one per tier, or one per retry in
/// `reject-chain` mode.
fn schedule(ladder: &Ladder) -> Vec<usize> {
    match ladder.mode {
        RetryMode::RejectChain => ladder.schedule.clone(),
        _ => (0..ladder.delays.len()).collect(),
    }
}

fn dead_letter_to(exchange: &str, routing_key: Option<&str>) -> Arguments {
    let mut arguments = Arguments::with_capacity(1 + usize::from(routing_key.is_some()));
    arguments.insert("x-dead-letter-exchange".into(), Value::from(exchange));
    if let Some(key) = routing_key {
        arguments.insert("x-dead-letter-routing-key".into(), Value::from(key));
    }
    arguments
}

/// The work queue's dead-letter arguments: a rejected message enters the first tier (on
/// a fanout retry exchange without a routing key, as the classic loop declares it); in
/// `native` mode, a message past its delivery limit (or rejected without requeue) goes to
/// the parking queue, or nowhere when the ladder drops it.
pub(crate) fn work_queue_dead_letter(context: &ConsumerContext, ladder: &Ladder) -> Arguments {
    let objects = names(context, ladder);
    if ladder.exchange_type == RetryExchangeType::Fanout {
        return dead_letter_to(&objects.exchange, None);
    }
    match ladder.mode {
        RetryMode::Native => match objects.parking {
            Some(_) => dead_letter_to(
                &objects.exchange,
                Some(&naming::work_queue_dead_letter_key()),
            ),
            None => Arguments::new(),
        },
        _ => dead_letter_to(
            &objects.exchange,
            objects.delay_keys.first().map(String::as_str),
        ),
    }
}

/// What a `native` ladder's work queue needs from generated policies: its delivery
/// limit (the number of retries: a message is delivered once, then retried that many
/// times) and its waits (`delayed-retry-*`). Both are tunables, so both live in
/// policies; each is a group of its own, merged into the queue's one policy. The type is
/// `all`: a rejected (failed) delivery waits and counts, and a `basic.nack` the contract
/// forbids at least waits the first delay instead of coming back at once.
pub(crate) fn native_needs(
    context: &ConsumerContext,
    ladder: &Ladder,
    out: &mut Emitter,
) -> Vec<Arc<PolicyNeed>> {
    let retry_path = context.path.key("retry");
    if context.delivery_limit.is_some() {
        out.error(
            "invalid-value",
            "`mode: native` sets the work queue's delivery limit itself: it is the number of retries",
            context.path.key("delivery_limit"),
        )
        .hint("remove `delivery_limit` and set `max_retries` in the retry block");
    }
    let retries = ladder.schedule.len() as u32;
    let mut limit = Arguments::new();
    limit.insert("delivery-limit".into(), Value::from(retries));
    let first = ladder.delays[0];
    let last = ladder.delays[ladder.delays.len() - 1];
    let mut waits = Arguments::new();
    waits.insert("delayed-retry-type".into(), Value::from("all"));
    waits.insert("delayed-retry-min".into(), Value::from(first.as_millis()));
    waits.insert(
        "delayed-retry-max".into(),
        Value::from(last.as_millis().max(first.as_millis())),
    );
    vec![
        Arc::new(PolicyNeed {
            group: naming::delivery_limit_group(retries),
            ending: None,
            definition: limit,
            path: retry_path.key("max_retries"),
        }),
        Arc::new(PolicyNeed {
            group: naming::native_retry_group(&first.to_string(), &last.to_string()),
            ending: None,
            definition: waits,
            path: ladder.delays_path.clone(),
        }),
    ]
}

/// Emits the retry exchange, delay queues, parking queue and their bindings.
pub(crate) fn emit(context: &ConsumerContext, ladder: &Ladder, out: &mut Emitter) {
    let retry_path = context.path.key("retry");
    check_name_overrides(ladder, &retry_path, out);
    let objects = names(context, ladder);
    let vhost = context.vhost.to_string();
    out.exchange(
        Exchange {
            name: objects.exchange.clone(),
            vhost: vhost.clone(),
            kind: match ladder.exchange_type {
                RetryExchangeType::Direct => ExchangeType::Direct,
                RetryExchangeType::Fanout => ExchangeType::Fanout,
            }
            .as_str()
            .to_string(),
            durable: true,
            auto_delete: false,
            internal: false,
            arguments: Arguments::new(),
            extra: Default::default(),
        },
        &retry_path,
    );
    let return_arguments = match ladder.return_via {
        ReturnVia::WorkQueue => None,
        ReturnVia::InnerExchange => return_through_inner_exchange(context, &retry_path, out),
        ReturnVia::ReturnExchange => {
            let exchange = objects.return_exchange.as_deref().unwrap_or_default();
            emit_return_exchange(context, exchange, &retry_path, out);
            Some(dead_letter_to(exchange, None))
        }
    };
    let delays_path = retry_path.key("delays");
    for (index, queue_name) in objects.delay_queues.iter().enumerate() {
        let tier = match ladder.mode {
            RetryMode::RejectChain => ladder.schedule[index],
            _ => index,
        };
        let mut arguments = queue_arguments(ladder.queue_type);
        arguments.extend(match ladder.mode {
            // Each retry returns to the next attempt's own work queue.
            RetryMode::RejectChain => dead_letter_to("", Some(&objects.attempt_queues[index])),
            _ => match &return_arguments {
                Some(arguments) => arguments.clone(),
                // Straight back to this consumer's queue only: the default exchange routes
                // on the queue name, so no other consumer ever sees the retry.
                None => dead_letter_to("", Some(&context.work_queue)),
            },
        });
        let needs = match ladder.delays_in {
            DelaysIn::Policies => vec![tier_need(ladder, tier, out)],
            DelaysIn::Arguments => {
                arguments.insert(
                    "x-message-ttl".into(),
                    Value::from(ladder.delays[tier].as_millis()),
                );
                Vec::new()
            }
        };
        out.queue(
            durable_queue(&vhost, queue_name, arguments),
            ladder.queue_type,
            needs,
            &delays_path.index(tier),
        );
        out.binding(
            queue_binding(
                &vhost,
                &objects.exchange,
                queue_name,
                &objects.delay_keys[index],
                Arguments::new(),
            ),
            &retry_path,
        );
    }
    for (index, queue_name) in objects.attempt_queues.iter().enumerate() {
        let next = index + 1;
        let arguments_dead_letter = if next < objects.delay_queues.len() {
            dead_letter_to(&objects.exchange, Some(&objects.delay_keys[next]))
        } else if objects.parking.is_some() {
            dead_letter_to(&objects.exchange, Some(&objects.parking_key))
        } else {
            Arguments::new()
        };
        let mut arguments = queue_arguments(context.work_type);
        arguments.extend(arguments_dead_letter);
        let needs = if context.work_type == QueueType::Quorum {
            delivery_limit_need(
                out,
                context.delivery_limit,
                true,
                &context.path.key("delivery_limit"),
            )
            .into_iter()
            .map(Arc::new)
            .collect()
        } else {
            Vec::new()
        };
        out.queue(
            durable_queue(&vhost, queue_name, arguments),
            context.work_type,
            needs,
            &retry_path.key("mode"),
        );
    }
    emit_parking(context, ladder, &objects, out);
    let target = out.options.target;
    out.contract.add_ladder(context, ladder, &objects, target);
}

/// The parking queue and its bindings on the retry exchange: under `parking`, where
/// consumers park, and in `native` mode under the work queue's dead-letter key too.
fn emit_parking(
    context: &ConsumerContext,
    ladder: &Ladder,
    objects: &RetryObjects,
    out: &mut Emitter,
) {
    let retry_path = context.path.key("retry");
    let vhost = context.vhost.to_string();
    let Some(parking) = &objects.parking else {
        return;
    };
    let needs = if ladder.queue_type == QueueType::Quorum {
        // Inspecting parked messages must never drop them after 20 requeues.
        parking_delivery_need(out, &retry_path.key("on_exhausted"))
            .into_iter()
            .map(Arc::new)
            .collect()
    } else {
        Vec::new()
    };
    out.queue(
        durable_queue(&vhost, parking, queue_arguments(ladder.queue_type)),
        ladder.queue_type,
        needs,
        &retry_path.key("on_exhausted"),
    );
    out.binding(
        queue_binding(
            &vhost,
            &objects.exchange,
            parking,
            &objects.parking_key,
            Arguments::new(),
        ),
        &retry_path,
    );
    if ladder.mode == RetryMode::Native {
        // The work queue's dead letters (past the delivery limit) park.
        out.binding(
            queue_binding(
                &vhost,
                &objects.exchange,
                parking,
                &naming::work_queue_dead_letter_key(),
                Arguments::new(),
            ),
            &retry_path,
        );
    }
}

/// What a delay queue of `tier` needs from its tier's generated policy: the tier's
/// TTL. Every consumer on one ladder needs the same, so it is made once per ladder
/// origin and tier and shared by their delay queues; a ladder with other delays or
/// written elsewhere under the same origin gets its own (and the policy stage reports
/// the clash).
fn tier_need(ladder: &Ladder, tier: usize, out: &mut Emitter) -> Arc<PolicyNeed> {
    let ttl = Value::from(ladder.delays[tier].as_millis());
    let same = |need: &PolicyNeed| {
        need.definition.get(MESSAGE_TTL) == Some(&ttl)
            && need.path.last() == Some(&Segment::Index(tier))
            && need.path.parent().as_ref() == Some(&ladder.delays_path)
    };
    if let Some(need) = out
        .tier_needs
        .get(ladder.origin.as_str())
        .and_then(|tiers| tiers.get(tier)?.as_ref())
        .filter(|need| same(need))
    {
        return Arc::clone(need);
    }
    let mut definition = Arguments::with_capacity(1);
    definition.insert(MESSAGE_TTL.into(), ttl);
    let need = Arc::new(PolicyNeed {
        group: naming::retry_group(&ladder.origin, tier + 1),
        ending: naming::selects_by_ending(&ladder.origin)
            .then(|| naming::tier_ending(&ladder.origin, tier + 1)),
        definition,
        path: ladder.delays_path.index(tier),
    });
    let tiers = out.tier_needs.entry(ladder.origin.clone()).or_default();
    if tiers.len() <= tier {
        tiers.resize(tier + 1, None);
    }
    tiers[tier] = Some(Arc::clone(&need));
    need
}

/// The policy key of a tier's TTL.
const MESSAGE_TTL: &str = "message-ttl";

/// Reports once, at the work queue, when a generated name would exceed the broker's
/// limit; the individual objects are then not emitted.
pub(crate) fn generated_names_fit(
    context: &ConsumerContext,
    ladder: &Ladder,
    out: &mut Emitter,
) -> bool {
    let objects = &names(context, ladder);
    let longest = std::iter::once(&objects.exchange)
        .chain(&objects.delay_queues)
        .chain(&objects.attempt_queues)
        .chain(&objects.parking)
        .chain(&objects.return_exchange)
        .max_by_key(|name| name.len())
        .expect("a retry exchange always exists");
    if longest.len() <= super::output_checks::MAX_NAME_BYTES {
        return true;
    }
    let extra = longest.len().saturating_sub(context.work_queue.len());
    let allowed = super::output_checks::MAX_NAME_BYTES.saturating_sub(extra);
    let shown: String = longest.chars().take(40).collect();
    out.error(
        "invalid-name",
        format!(
            "the retry objects of work queue `{}` get names of up to {} bytes (e.g. `{shown}…`); RabbitMQ allows {}",
            short(&context.work_queue),
            longest.len(),
            super::output_checks::MAX_NAME_BYTES
        ),
        context.path.key("queue"),
    )
    .hint(format!(
        "shorten the work queue name to at most {allowed} bytes, or set shorter names under `retry.names`"
    ));
    false
}

fn short(name: &str) -> String {
    if name.chars().count() <= 40 {
        name.to_string()
    } else {
        format!("{}…", name.chars().take(40).collect::<String>())
    }
}

/// The consumer's own return exchange: fanout, bound to its work queue alone, so an
/// expired retry reaches no other consumer.
fn emit_return_exchange(
    context: &ConsumerContext,
    exchange: &str,
    retry_path: &SpecPath,
    out: &mut Emitter,
) {
    let vhost = context.vhost.to_string();
    out.exchange(
        Exchange {
            name: exchange.to_string(),
            vhost: vhost.clone(),
            kind: ExchangeType::Fanout.as_str().to_string(),
            durable: true,
            auto_delete: false,
            internal: false,
            arguments: Arguments::new(),
            extra: Default::default(),
        },
        &retry_path.key("return_via"),
    );
    out.binding(
        queue_binding(&vhost, exchange, &context.work_queue, "", Arguments::new()),
        &retry_path.key("return_via"),
    );
}

/// Dead-letter arguments that send expired messages back through the inner exchange.
fn return_through_inner_exchange(
    context: &ConsumerContext,
    retry_path: &SpecPath,
    out: &mut Emitter,
) -> Option<Arguments> {
    match context.inner_type {
        // Fanout ignores the key; headers exchanges match the headers, which are kept.
        ExchangeType::Fanout | ExchangeType::Headers => {
            Some(dead_letter_to(context.inner_exchange, None))
        }
        ExchangeType::Direct | ExchangeType::Topic => {
            let concrete: Vec<&String> = context
                .routing_keys
                .iter()
                .filter(|key| !key.contains('*') && !key.contains('#'))
                .collect();
            if concrete.len() == 1 && context.routing_keys.len() == 1 {
                Some(dead_letter_to(context.inner_exchange, Some(concrete[0])))
            } else {
                let patterns: Vec<String> = context
                    .routing_keys
                    .iter()
                    .filter(|key| key.contains('*') || key.contains('#'))
                    .map(|key| format!("`{key}`"))
                    .collect();
                let why = if patterns.is_empty() {
                    format!("it has {} routing keys", context.routing_keys.len())
                } else {
                    format!("{} is a pattern, not a key", patterns.join(", "))
                };
                out.error(
                    "invalid-value",
                    format!(
                        "`return_via: inner_exchange` needs the one concrete routing key that reaches this queue through {} exchange `{}`, but {why}",
                        context.inner_type.as_str(),
                        context.inner_exchange
                    ),
                    retry_path.key("return_via"),
                )
                .hint("give the consumer exactly one routing key without wildcards, or remove `return_via`");
                None
            }
        }
    }
}

fn check_name_overrides(ladder: &Ladder, retry_path: &SpecPath, out: &mut Emitter) {
    let names_path = retry_path.key("names");
    let expected_delays = match ladder.mode {
        RetryMode::RejectChain => ladder.schedule.len(),
        _ => ladder.delays.len(),
    };
    if let Some(tiers) = &ladder.names.tiers
        && tiers.len() != expected_delays
    {
        let what = match ladder.mode {
            RetryMode::RejectChain => "retry (reject-chain has one delay queue per retry)",
            _ => "tier",
        };
        out.error(
                "invalid-value",
                format!(
                    "`names.tiers` has {} names, but the ladder needs {expected_delays}: one per {what}",
                    tiers.len()
                ),
                names_path.key("tiers"),
            )
            .hint("give one name per delay queue, or remove `names.tiers` to use the generated names (`<queue>.retry.<n>`, see docs/topology.md)");
    }
    if let Some(attempts) = &ladder.names.attempts {
        if ladder.mode != RetryMode::RejectChain {
            out.error(
                "invalid-value",
                "`names.attempts` only applies to `mode: reject-chain`",
                names_path.key("attempts"),
            );
        } else if attempts.len() != ladder.schedule.len() {
            out.error(
                "invalid-value",
                format!(
                    "`names.attempts` has {}, but the ladder makes {}",
                    crate::text::count(attempts.len(), "name"),
                    crate::text::count(ladder.schedule.len(), "retry")
                ),
                names_path.key("attempts"),
            );
        }
    }
    if ladder.names.parking.is_some() && ladder.on_exhausted == OnExhausted::Drop {
        out.error(
            "invalid-value",
            "`names.parking` is set, but `on_exhausted: drop` makes no parking queue",
            names_path.key("parking"),
        )
        .hint("remove `names.parking`, or use `on_exhausted: park`");
    }
}
