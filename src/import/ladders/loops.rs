//! Recognising a retry loop from what the broker holds, whoever built it: warren, a
//! client library or a person with `rabbitmqadmin`.
//!
//! A loop starts at a work queue that dead-letters to an exchange (the retry exchange)
//! whose queues dead-letter onward. Every queue bound to the retry exchange is a delay
//! queue (it has a TTL and dead-letters back) or the parking queue (it has neither).
//! Delays live in warren's retry policies or in each delay queue's `x-message-ttl`; the
//! routing keys, the retry exchange's type (direct, or fanout for the classic single
//! loop) and the way back (the default exchange with the work queue's name, the inner
//! exchange, a return exchange of the consumer's own, or the next attempt's queue in
//! `reject-chain` mode) are read as they are. Whatever the spec could not declare as it
//! is makes the queue a [`Misfit`], with the reason, so that `import` names the loop
//! instead of importing it silently as plain queues.

use serde_json::Value;

use super::{Recognised, VhostIndex, consumer_name_of, overridden_names};
use crate::compile::naming;
use crate::import::text;
use crate::model::{Binding, Policy, Queue, QueueType};
use crate::spec::{
    Consumer, DelaysIn, DeliveryLimit, Duration, ExchangeType, HeaderMatch, HeaderMatchMode,
    OnExhausted, Retry, RetryExchangeType, RetryMode, ReturnVia,
};

mod fit;
#[cfg(test)]
mod tests;
mod way_back;

pub(super) use fit::Misfit;
use fit::{
    DELAY_ARGUMENTS, Found, PARKING_ARGUMENTS, WORK_ARGUMENTS, because, durable, only_arguments,
    plain_exchange,
};
use way_back::{Back, returns_to_another, way_back};

/// The policy that gives `queue` its dead-letter exchange, and that exchange, when the
/// queue has no `x-dead-letter-exchange` of its own (an argument takes precedence over
/// a policy's dead-lettering).
fn dead_letter_policy<'a>(
    indexed: &VhostIndex<'a>,
    queue: &Queue,
) -> Option<(&'a Policy, &'a str)> {
    if queue.arguments.contains_key("x-dead-letter-exchange") {
        return None;
    }
    let (policy, exchange) = indexed.policy_setting(queue, "dead-letter-exchange")?;
    Some((policy, exchange.as_str()?))
}

/// Where a delay queue's TTL comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DelaySource {
    /// Its `x-message-ttl` argument.
    Argument,
    /// warren's retry policy of this origin.
    Policy(String),
}

/// One queue bound to the retry exchange.
struct Bound<'a> {
    queue: &'a Queue,
    key: &'a str,
    /// The TTL and where it comes from, for a delay queue.
    delay: Option<(u64, DelaySource)>,
}

impl Bound<'_> {
    fn dead_letters(&self) -> bool {
        self.queue.arguments.contains_key("x-dead-letter-exchange")
    }
}

/// Recognises the loop that starts at `work`, or says why it is not one.
#[expect(
    clippy::too_many_lines,
    reason = "recognising a loop checks each of its objects in turn; each early return says why the queue is not one"
)]
pub(super) fn recognise(indexed: &VhostIndex, work: &Queue) -> Found<Recognised> {
    // Dead-lettering set by a policy still makes a loop, one the spec cannot declare as
    // it runs: found, then named below.
    let by_policy = dead_letter_policy(indexed, work);
    let Some(retry_exchange) = text(work.arguments.get("x-dead-letter-exchange"))
        .or(by_policy.map(|(_, exchange)| exchange))
        .filter(|e| !e.is_empty())
    else {
        return Err(Misfit::NotALoop);
    };
    let Some(exchange) = indexed.exchanges.get(retry_exchange).copied() else {
        return Err(Misfit::NotALoop);
    };
    // A queue with a TTL of its own is where a loop waits, not where it starts.
    if work.arguments.contains_key("x-message-ttl") {
        return Err(Misfit::NotALoop);
    }
    let from_retry: &[&Binding] = indexed
        .to_queues_from
        .get(exchange.name.as_str())
        .map_or(&[], Vec::as_slice);
    // A loop waits somewhere: a queue on the retry exchange with a TTL (its own, or a
    // policy's) that dead-letters onward. Dead letters that stay where they land, or
    // that move on at once, are a dead-letter queue, not a loop: plain.
    let onward = from_retry.iter().any(|b| {
        indexed.queues.get(b.destination.as_str()).is_some_and(|q| {
            (q.arguments.contains_key("x-dead-letter-exchange")
                || dead_letter_policy(indexed, q).is_some())
                && (q.arguments.contains_key("x-message-ttl")
                    || indexed.policy_setting(q, "message-ttl").is_some())
        })
    });
    if !onward || from_retry.iter().any(|b| b.destination == work.name) {
        return Err(Misfit::NotALoop);
    }
    if let Some((policy, _)) = by_policy {
        return because(format!(
            "its dead-lettering comes from policy `{}` (`dead-letter-exchange: {retry_exchange}`), and a ladder declares the work queue's dead-lettering in its queue arguments, which change only when the queue is replaced (declare them, then `warren apply --migrate` replaces the queue without losing messages)",
            policy.name
        ));
    }
    let exchange_type = match exchange.kind.as_str() {
        "direct" => RetryExchangeType::Direct,
        "fanout" => RetryExchangeType::Fanout,
        other => {
            return because(format!(
                "its dead-letter exchange `{}` is a {other} exchange; a ladder's retry exchange is direct or fanout",
                exchange.name
            ));
        }
    };
    plain_exchange(exchange, "its dead-letter exchange")?;
    only_arguments(work, WORK_ARGUMENTS, "the work queue")?;
    durable(work, "the work queue")?;
    let dead_letter_key = text(work.arguments.get("x-dead-letter-routing-key"));
    let mut bound = Vec::with_capacity(from_retry.len());
    for binding in from_retry {
        let Some(queue) = indexed.queues.get(binding.destination.as_str()).copied() else {
            return because(format!(
                "`{}` is bound to `{}` but is not in the definitions",
                binding.destination, exchange.name
            ));
        };
        if !binding.arguments.is_empty() {
            return because(format!(
                "the binding of `{}` to `{}` has arguments",
                queue.name, exchange.name
            ));
        }
        if bound.iter().any(|b: &Bound| b.queue.name == queue.name) {
            return because(format!(
                "`{}` is bound to `{}` twice",
                queue.name, exchange.name
            ));
        }
        bound.push(Bound {
            queue,
            key: &binding.routing_key,
            delay: delay_of(indexed, queue),
        });
    }
    // Every queue on the retry exchange waits (a delay queue) or keeps (the parking
    // queue).
    let mut parking: Option<&Bound> = None;
    for candidate in &bound {
        match (candidate.delay.is_some(), candidate.dead_letters()) {
            (true, true) => {}
            (false, false) => {
                if let Some(other) = parking {
                    return because(format!(
                        "two queues on `{}` keep what they receive (`{}` and `{}`); a ladder has one parking queue",
                        exchange.name, other.queue.name, candidate.queue.name
                    ));
                }
                parking = Some(candidate);
            }
            (false, true) => {
                let policy = indexed
                    .policy_setting(candidate.queue, "message-ttl")
                    .map(|(policy, _)| format!(" (policy `{}` gives it one; a ladder keeps its delays in warren's retry policies or in queue arguments)", policy.name))
                    .unwrap_or_else(|| " of its own".to_string());
                return because(format!(
                    "`{}` on `{}` dead-letters onward but has no TTL{policy}",
                    candidate.queue.name, exchange.name
                ));
            }
            (true, false) => {
                if let Some((policy, _)) = dead_letter_policy(indexed, candidate.queue) {
                    return because(format!(
                        "`{}` on `{}` dead-letters by policy `{}`, and a ladder declares a delay queue's dead-lettering in its queue arguments",
                        candidate.queue.name, exchange.name, policy.name
                    ));
                }
                return because(format!(
                    "`{}` on `{}` has a TTL but dead-letters nowhere: its messages expire and are dropped",
                    candidate.queue.name, exchange.name
                ));
            }
        }
    }
    if let Some(parking) = parking {
        only_arguments(parking.queue, PARKING_ARGUMENTS, "the parking queue")?;
        durable(parking.queue, "the parking queue")?;
    }
    let mut delays: Vec<&Bound> = bound.iter().filter(|b| b.delay.is_some()).collect();
    // The first tier: the one the work queue's dead letters reach.
    let first = match exchange_type {
        RetryExchangeType::Fanout => {
            if dead_letter_key.is_some() {
                return because(format!(
                    "it dead-letters with routing key `{}` to fanout exchange `{}`, which ignores it",
                    dead_letter_key.unwrap_or_default(),
                    exchange.name
                ));
            }
            if let Some(parking) = parking {
                return because(format!(
                    "`{}` on fanout exchange `{}` receives every retry, not only the exhausted ones",
                    parking.queue.name, exchange.name
                ));
            }
            if delays.len() != 1 {
                return because(format!(
                    "fanout exchange `{}` sends every dead letter to its {} delay queues at once",
                    exchange.name,
                    delays.len()
                ));
            }
            0
        }
        RetryExchangeType::Direct => {
            let Some(key) = dead_letter_key else {
                return because(format!(
                    "it dead-letters to direct exchange `{}` without a routing key, so each message keeps its own key there",
                    exchange.name
                ));
            };
            match delays.iter().position(|b| b.key == key) {
                Some(first) => first,
                None => {
                    return because(format!(
                        "it dead-letters with key `{key}`, and no delay queue is bound to `{}` with that key",
                        exchange.name
                    ));
                }
            }
        }
    };
    let first_queue = delays[first].queue;
    let back = way_back(indexed, work, first_queue)?;
    // Delay queues in order: down the chain, by key `1`, `2`, … when they are warren's,
    // else from the shortest delay to the longest.
    let mut attempt_queues: Vec<String> = Vec::new();
    if back == Back::Chain {
        let mut ordered = vec![delays.remove(first)];
        loop {
            let last = ordered[ordered.len() - 1].queue;
            let Some(attempt_name) = text(last.arguments.get("x-dead-letter-routing-key")) else {
                return because(format!("`{}` has no dead-letter routing key", last.name));
            };
            let Some(attempt) = indexed.queues.get(attempt_name).copied() else {
                return because(format!(
                    "`{}` dead-letters to `{attempt_name}`, which is not in the definitions",
                    last.name
                ));
            };
            only_arguments(attempt, WORK_ARGUMENTS, "an attempt queue")?;
            durable(attempt, "an attempt queue")?;
            if QueueType::of(attempt) != QueueType::of(work) {
                return because(format!(
                    "attempt queue `{attempt_name}` is not of the work queue's type"
                ));
            }
            attempt_queues.push(attempt_name.to_string());
            let next_exchange = text(attempt.arguments.get("x-dead-letter-exchange"));
            let next_key = text(attempt.arguments.get("x-dead-letter-routing-key"));
            match (next_exchange, next_key) {
                (None, None) if parking.is_none() => break,
                (Some(e), Some(key)) if e == exchange.name => {
                    if parking.is_some_and(|p| p.key == key) {
                        break;
                    }
                    let Some(next) = delays.iter().position(|b| b.key == key) else {
                        return because(format!(
                            "attempt queue `{attempt_name}` dead-letters with key `{key}`, which reaches no delay queue on `{}`",
                            exchange.name
                        ));
                    };
                    ordered.push(delays.remove(next));
                }
                _ => {
                    return because(format!(
                        "attempt queue `{attempt_name}` does not dead-letter to the next delay queue or the parking queue"
                    ));
                }
            }
        }
        if !delays.is_empty() {
            return because(format!(
                "`{}` on `{}` is not on the chain of attempts",
                delays[0].queue.name, exchange.name
            ));
        }
        delays = ordered;
    } else {
        let first = delays.remove(first);
        let numbered = |b: &Bound| b.key.parse::<usize>().ok();
        if delays.iter().all(|b| numbered(b).is_some()) && numbered(first).is_some() {
            delays.sort_by_key(|b| numbered(b));
        } else {
            delays.sort_by_key(|b| (b.delay.as_ref().map(|d| d.0), b.key.to_string()));
        }
        delays.insert(0, first);
        for delay in &delays[1..] {
            if let Some(other) = returns_to_another(indexed, exchange, work, delay.queue) {
                return because(format!(
                    "its retry exchange `{}` is shared with queue `{other}` (delay queue `{}` returns there); a ladder's retry exchange is its consumer's own",
                    exchange.name, delay.queue.name
                ));
            }
            if way_back(indexed, work, delay.queue)? != back {
                return because(format!(
                    "delay queues `{}` and `{}` send messages back different ways",
                    first_queue.name, delay.queue.name
                ));
            }
        }
    }
    let tier_type = QueueType::of(first_queue);
    let mut source = None;
    let mut durations = Vec::with_capacity(delays.len());
    for delay in &delays {
        only_arguments(delay.queue, DELAY_ARGUMENTS, "a delay queue")?;
        durable(delay.queue, "a delay queue")?;
        if QueueType::of(delay.queue) != tier_type {
            return because(format!(
                "delay queues `{}` and `{}` are of different types",
                first_queue.name, delay.queue.name
            ));
        }
        let (ttl, from) = delay.delay.clone().expect("delay queues have a delay");
        if source.as_ref().is_some_and(|s| *s != from) {
            return because(format!(
                "delay queues `{}` and `{}` keep their delays in different places",
                first_queue.name, delay.queue.name
            ));
        }
        source = Some(from);
        durations.push(Duration::from_millis(ttl));
    }
    if let Some(parking) = parking
        && QueueType::of(parking.queue) != tier_type
    {
        return because(format!(
            "parking queue `{}` is not of the delay queues' type",
            parking.queue.name
        ));
    }
    let return_exchange = match &back {
        Back::ReturnExchange(name) => Some(name.clone()),
        _ => None,
    };
    // The inner exchange: the source of every other binding to the work queue.
    let inbound: Vec<&Binding> = indexed
        .to_queue
        .get(work.name.as_str())
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .copied()
        .filter(|b| Some(&b.source) != return_exchange.as_ref())
        .collect();
    let Some(inner) = inbound.first().map(|b| b.source.clone()) else {
        return because(
            "the work queue is bound to no exchange; a consumer receives through its service's exchange",
        );
    };
    if inbound.iter().any(|b| b.source != inner) {
        return because("the work queue is bound to more than one exchange");
    }
    let Some(inner_exchange) = indexed.exchanges.get(inner.as_str()).copied() else {
        return because(format!("exchange `{inner}` is not in the definitions"));
    };
    let inner_type = match inner_exchange.kind.as_str() {
        "fanout" => ExchangeType::Fanout,
        "direct" => ExchangeType::Direct,
        "topic" => ExchangeType::Topic,
        "headers" => ExchangeType::Headers,
        other => {
            return because(format!(
                "its exchange `{inner}` is of plugin type `{other}`"
            ));
        }
    };
    if back == Back::Inner {
        // Back through the inner exchange, with the consumer's one key or none.
        for delay in &delays {
            let fits = match text(delay.queue.arguments.get("x-dead-letter-routing-key")) {
                None => true,
                Some(key) => inbound.len() == 1 && inbound[0].routing_key == key,
            };
            if !fits {
                return because(format!(
                    "delay queue `{}` returns through `{inner}` with a key the work queue is not bound with",
                    delay.queue.name
                ));
            }
        }
    }
    let mut consumer = Consumer {
        queue: Some(work.name.clone()),
        kind: Some(QueueType::of(work)),
        ..Consumer::default()
    };
    if inner_type == ExchangeType::Headers {
        let [binding] = inbound.as_slice() else {
            return because("the work queue is bound to its headers exchange more than once");
        };
        consumer.headers = Some(header_match(binding));
    } else if inner_type != ExchangeType::Fanout
        || inbound.iter().any(|b| !b.routing_key.is_empty())
    {
        if inbound.iter().any(|b| !b.arguments.is_empty()) {
            return because("the work queue's bindings have arguments");
        }
        consumer.routing_keys = inbound.iter().map(|b| b.routing_key.clone()).collect();
    }
    let chain = back == Back::Chain;
    let delay_queues: Vec<String> = delays.iter().map(|b| b.queue.name.clone()).collect();
    let keys: Vec<String> = delays.iter().map(|b| b.key.to_string()).collect();
    let default_keys: Vec<String> = (0..keys.len()).map(naming::delay_routing_key).collect();
    let in_arguments = source == Some(DelaySource::Argument);
    let origin = match source {
        Some(DelaySource::Policy(origin)) => origin,
        _ => String::new(),
    };
    let parking_name = parking.map(|p| p.queue.name.clone());
    let mut names = overridden_names(
        &work.name,
        &origin,
        &exchange.name,
        &delay_queues,
        parking_name.as_deref(),
        chain.then_some(attempt_queues.as_slice()),
    )
    .unwrap_or_default();
    let fanout_keys_empty =
        exchange_type == RetryExchangeType::Fanout && keys.iter().all(String::is_empty);
    if keys != default_keys && !fanout_keys_empty {
        names.keys = Some(keys);
    }
    names.parking_key = parking
        .map(|p| p.key)
        .filter(|key| *key != naming::PARKING_ROUTING_KEY)
        .map(str::to_string);
    names.return_exchange = return_exchange
        .clone()
        .filter(|name| *name != naming::return_exchange(&work.name));
    // A loop of one tier built outside warren is the classic one: its consumer rejects,
    // and the broker's `x-death` counts the retries.
    let single_loop = in_arguments && !chain && delays.len() == 1;
    consumer.retry = Some(Retry {
        mode: if chain {
            Some(RetryMode::RejectChain)
        } else if single_loop {
            Some(RetryMode::Reject)
        } else {
            None
        },
        return_via: match back {
            Back::Inner => Some(ReturnVia::InnerExchange),
            Back::ReturnExchange(_) => Some(ReturnVia::ReturnExchange),
            Back::WorkQueue | Back::Chain => None,
        },
        on_exhausted: parking.is_none().then_some(OnExhausted::Drop),
        queue_type: (tier_type != QueueType::of(work)).then_some(tier_type),
        delays_in: in_arguments.then_some(DelaysIn::Arguments),
        exchange_type: (exchange_type == RetryExchangeType::Fanout)
            .then_some(RetryExchangeType::Fanout),
        names: Some(names),
        ..Retry::default()
    });
    if let Some(limit) = indexed
        .limit_policies
        .iter()
        .find(|(_, matcher)| matcher.is_match(&work.name))
        .and_then(|(p, _)| p.definition.get("delivery-limit")?.as_u64())
    {
        consumer.delivery_limit = Some(DeliveryLimit::Count(limit as u32));
    }
    let mut claimed_queues = vec![work.name.clone()];
    claimed_queues.extend(delay_queues.iter().cloned());
    claimed_queues.extend(attempt_queues.iter().cloned());
    claimed_queues.extend(parking_name.iter().cloned());
    let mut claimed_bindings: Vec<Binding> = indexed
        .to_queue
        .get(work.name.as_str())
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|b| (*b).clone())
        .collect();
    claimed_bindings.extend(from_retry.iter().map(|b| (*b).clone()));
    let mut claimed_exchanges = vec![exchange.name.clone()];
    claimed_exchanges.extend(return_exchange);
    let consumer_name = consumer_name_of(&inner, work);
    Ok(Recognised {
        exchange: inner,
        exchange_type: inner_type,
        consumer_name,
        consumer,
        origin,
        delays: durations,
        delay_queues,
        claimed_queues,
        claimed_exchanges,
        claimed_bindings,
        native: false,
        delays_in_arguments: in_arguments,
    })
}

/// A delay queue's TTL: its `x-message-ttl` argument, else the warren retry policy that
/// applies to it.
fn delay_of(indexed: &VhostIndex, queue: &Queue) -> Option<(u64, DelaySource)> {
    if let Some(ttl) = queue.arguments.get("x-message-ttl").and_then(Value::as_u64) {
        return Some((ttl, DelaySource::Argument));
    }
    indexed
        .generated_ttl_policy(&queue.name)
        .map(|(origin, ttl)| (ttl, DelaySource::Policy(origin)))
}

fn header_match(binding: &Binding) -> HeaderMatch {
    let mut values = indexmap::IndexMap::new();
    let mut mode = HeaderMatchMode::All;
    for (key, value) in &binding.arguments {
        if key == "x-match" {
            mode = if value == "any" {
                HeaderMatchMode::Any
            } else {
                HeaderMatchMode::All
            };
        } else {
            values.insert(key.clone(), value.clone());
        }
    }
    HeaderMatch {
        mode: Some(mode),
        values,
    }
}
