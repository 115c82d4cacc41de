//! Recognising retry ladders in warren's shape and placing them back where their
//! policies say they were defined.
//!
//! A ladder is a work queue that dead-letters to its own direct retry exchange with
//! routing key `1`, delay queues bound to that exchange on `1`, `2`, … that dead-letter
//! straight back (or, in reject-chain mode, to the next attempt's queue), and a parking
//! queue on `parking`. Their delays come from the generated retry policies, whose names
//! say where the delays were written: the top-level or vhost defaults, a service, a
//! consumer or a named ladder. Every name is read with [`crate::compile::naming`], the
//! scheme the compiler writes.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap, FxHashSet};

use super::{Notes, text};
use crate::compile::naming;
use crate::model::pattern::PatternMatcher;
use crate::model::{
    Binding, Definitions, Exchange, ObjectId, Policy, Queue, QueueType, binding_id,
};
use crate::spec::{
    Consumer, Duration, ExchangeType, InnerExchange, Retry, RetryMode, RetryNames, Service, Spec,
    Vhost,
};

mod loops;

/// The objects recognised as ladders, which the plain import leaves out.
#[derive(Debug, Default)]
pub(super) struct Claimed {
    /// Queues of a ladder (work, delay, attempt and parking queues).
    pub queues: BTreeSet<String>,
    /// Retry and inner exchanges.
    pub exchanges: BTreeSet<String>,
    /// Bindings of a ladder.
    pub bindings: FxHashSet<ObjectId>,
}

/// A recognised consumer, before it is placed in a service.
struct Recognised {
    exchange: String,
    exchange_type: ExchangeType,
    consumer_name: String,
    consumer: Consumer,
    origin: String,
    delays: Vec<Duration>,
    /// The delay queues, by tier: their default names depend on where the delays end up.
    delay_queues: Vec<String>,
    claimed_queues: Vec<String>,
    claimed_exchanges: Vec<String>,
    claimed_bindings: Vec<Binding>,
    /// A `native` ladder: its delays go on the consumer, whatever the origin.
    native: bool,
    /// Its delays are the delay queues' own `x-message-ttl` (a loop built outside
    /// warren): they go on the consumer, with `delays_in: arguments`.
    delays_in_arguments: bool,
}

/// One vhost's definitions, indexed once: recognising a ladder looks queues, exchanges,
/// bindings and policies up by name for every queue of the vhost.
struct VhostIndex<'a> {
    queues: FxHashMap<&'a str, &'a Queue>,
    exchanges: FxHashMap<&'a str, &'a Exchange>,
    /// Bindings to queues, by source exchange, in definitions order.
    to_queues_from: FxHashMap<&'a str, Vec<&'a Binding>>,
    /// Bindings to queues, by destination queue, in definitions order.
    to_queue: FxHashMap<&'a str, Vec<&'a Binding>>,
    /// warren's retry policies, patterns compiled once.
    retry_policies: Vec<(&'a Policy, PatternMatcher)>,
    /// warren's counted delivery-limit policies, patterns compiled once.
    limit_policies: Vec<(&'a Policy, PatternMatcher)>,
    /// warren's policies that give work queues their waits (`mode: native`).
    native_policies: Vec<(&'a Policy, PatternMatcher)>,
    /// Every policy of the vhost, highest priority first: where a loop that does not fit
    /// keeps a setting, for its note.
    policies: Vec<(&'a Policy, PatternMatcher)>,
}

impl<'a> VhostIndex<'a> {
    fn new(definitions: &'a Definitions, vhost: &str) -> VhostIndex<'a> {
        let mut index = VhostIndex {
            queues: FxHashMap::default(),
            exchanges: FxHashMap::default(),
            to_queues_from: FxHashMap::default(),
            to_queue: FxHashMap::default(),
            retry_policies: Vec::new(),
            limit_policies: Vec::new(),
            native_policies: Vec::new(),
            policies: Vec::new(),
        };
        for queue in definitions.queues.iter().filter(|q| q.vhost == vhost) {
            index.queues.entry(&queue.name).or_insert(queue);
        }
        for exchange in definitions.exchanges.iter().filter(|e| e.vhost == vhost) {
            index.exchanges.entry(&exchange.name).or_insert(exchange);
        }
        let queue_bindings = definitions
            .bindings
            .iter()
            .filter(|b| b.vhost == vhost && b.destination_type == "queue");
        for binding in queue_bindings {
            index
                .to_queues_from
                .entry(&binding.source)
                .or_default()
                .push(binding);
            index
                .to_queue
                .entry(&binding.destination)
                .or_default()
                .push(binding);
        }
        index.retry_policies = definitions
            .policies
            .iter()
            .filter(|p| p.vhost == vhost && naming::retry_policy_origin(&p.name).is_some())
            .map(|p| (p, PatternMatcher::new(&p.pattern)))
            .collect();
        index.native_policies = definitions
            .policies
            .iter()
            .filter(|p| {
                p.vhost == vhost
                    && p.name.starts_with(crate::model::reserved::RESERVED_PREFIX)
                    && p.definition.contains_key("delayed-retry-min")
            })
            .map(|p| (p, PatternMatcher::new(&p.pattern)))
            .collect();
        index.policies = definitions
            .policies
            .iter()
            .filter(|p| p.vhost == vhost)
            .map(|p| (p, PatternMatcher::new(&p.pattern)))
            .collect();
        index
            .policies
            .sort_by_key(|(p, _)| std::cmp::Reverse(p.priority));
        index.limit_policies = definitions
            .policies
            .iter()
            .filter(|p| p.vhost == vhost && naming::is_counted_delivery_limit_policy(&p.name))
            .map(|p| (p, PatternMatcher::new(&p.pattern)))
            .collect();
        index
    }

    /// The policy the broker applies to `queue` (the highest priority that matches), when
    /// it sets `key`.
    fn policy_setting(
        &self,
        queue: &Queue,
        key: &str,
    ) -> Option<(&'a Policy, &'a serde_json::Value)> {
        let kind = QueueType::of(queue);
        let (policy, _): &(&'a Policy, PatternMatcher) =
            self.policies.iter().find(|(p, matcher)| {
                crate::model::effective::applies_to(&p.apply_to, kind)
                    && matcher.is_match(&queue.name)
            })?;
        let policy: &'a Policy = policy;
        Some((policy, policy.definition.get(key)?))
    }

    /// The origin and TTL of the warren retry policy that applies to a tier queue.
    fn generated_ttl_policy(&self, queue: &str) -> Option<(String, u64)> {
        self.retry_policies
            .iter()
            .filter(|(_, matcher)| matcher.is_match(queue))
            .find_map(|(p, _)| {
                let ttl = p.definition.get("message-ttl")?.as_u64()?;
                Some((naming::retry_policy_origin(&p.name)?.to_string(), ttl))
            })
    }
}

/// A `native` ladder (RabbitMQ 4.3): a quorum work queue that dead-letters to its own
/// direct retry exchange with the key every mode uses
/// ([`naming::work_queue_dead_letter_key`]), a parking queue bound there on that key
/// and on `parking` and nothing else, and a generated policy that gives the work queue
/// its waits (`delayed-retry-*`) and its delivery limit. The delays are read back as the
/// shortest linear ladder from the first wait to the last; the limit beyond them is
/// `max_retries`.
fn recognise_native(indexed: &VhostIndex, work: &Queue) -> Option<Recognised> {
    let dead_letter_key = naming::work_queue_dead_letter_key();
    if QueueType::of(work) != QueueType::Quorum
        || text(work.arguments.get("x-dead-letter-routing-key")) != Some(dead_letter_key.as_str())
    {
        return None;
    }
    let retry_exchange = text(work.arguments.get("x-dead-letter-exchange"))?;
    let exchange = indexed
        .exchanges
        .get(retry_exchange)
        .filter(|e| e.kind == "direct")?;
    let from_retry: &[&Binding] = indexed
        .to_queues_from
        .get(exchange.name.as_str())
        .map_or(&[], Vec::as_slice);
    let [first, second] = from_retry else {
        return None;
    };
    let mut keys = [first.routing_key.as_str(), second.routing_key.as_str()];
    keys.sort_unstable();
    if first.destination != second.destination
        || keys != [dead_letter_key.as_str(), naming::PARKING_ROUTING_KEY]
    {
        return None;
    }
    let parking = first.destination.clone();
    let policy = indexed
        .native_policies
        .iter()
        .find_map(|(policy, matcher)| matcher.is_match(&work.name).then_some(*policy))?;
    let number = |key: &str| {
        policy
            .definition
            .get(key)
            .and_then(serde_json::Value::as_u64)
    };
    let (first, last, limit) = (
        number("delayed-retry-min")?,
        number("delayed-retry-max")?,
        number("delivery-limit")?,
    );
    if first == 0 || last < first || limit == 0 {
        return None;
    }
    let steps = last.div_ceil(first).min(limit) as usize;
    let delays: Vec<Duration> = (1..=steps)
        .map(|n| {
            crate::compile::native_wait(
                Duration::from_millis(first),
                Duration::from_millis(last),
                n,
            )
        })
        .collect();
    let inbound: &[&Binding] = indexed
        .to_queue
        .get(work.name.as_str())
        .map_or(&[], Vec::as_slice);
    let inner = inbound.first()?.source.clone();
    if inbound
        .iter()
        .any(|b| b.source != inner || !b.arguments.is_empty())
    {
        return None;
    }
    let inner_exchange = indexed.exchanges.get(inner.as_str())?;
    let inner_type = match inner_exchange.kind.as_str() {
        "fanout" => ExchangeType::Fanout,
        "direct" => ExchangeType::Direct,
        "topic" => ExchangeType::Topic,
        _ => return None,
    };
    let mut consumer = Consumer {
        queue: Some(work.name.clone()),
        kind: Some(QueueType::Quorum),
        ..Consumer::default()
    };
    if inner_type != ExchangeType::Fanout || inbound.iter().any(|b| !b.routing_key.is_empty()) {
        consumer.routing_keys = inbound.iter().map(|b| b.routing_key.clone()).collect();
    }
    let names = overridden_names(
        &work.name,
        naming::DEFAULTS_ORIGIN,
        &exchange.name,
        &[],
        Some(parking.as_str()),
        None,
    );
    consumer.retry = Some(Retry {
        mode: Some(RetryMode::Native),
        max_retries: (limit as usize != delays.len()).then_some(limit as u32),
        names,
        ..Retry::default()
    });
    let mut claimed_bindings: Vec<Binding> = inbound.iter().map(|b| (*b).clone()).collect();
    claimed_bindings.extend(from_retry.iter().map(|b| (*b).clone()));
    let consumer_name = consumer_name_of(&inner, work);
    Some(Recognised {
        exchange: inner,
        exchange_type: inner_type,
        consumer_name,
        consumer,
        origin: String::new(),
        delays,
        delay_queues: Vec::new(),
        claimed_queues: vec![work.name.clone(), parking],
        claimed_exchanges: vec![exchange.name.clone()],
        claimed_bindings,
        native: true,
        delays_in_arguments: false,
    })
}

/// A recognised consumer's name: its work queue's, without the inner exchange's
/// name and a dot in front (`orders.email` on exchange `orders` is `email`).
fn consumer_name_of(inner: &str, work: &Queue) -> String {
    work.name
        .strip_prefix(&format!("{inner}."))
        .unwrap_or(&work.name)
        .to_string()
}

/// The `retry.names` a recognised ladder needs: only the names that differ from the
/// defaults; `None` when all are the defaults.
fn overridden_names(
    work_queue: &str,
    origin: &str,
    exchange: &str,
    delay_queues: &[String],
    parking: Option<&str>,
    attempt_queues: Option<&[String]>,
) -> Option<RetryNames> {
    let names = RetryNames {
        keys: None,
        parking_key: None,
        return_exchange: None,
        exchange: (exchange != naming::retry_exchange(work_queue)).then(|| exchange.to_string()),
        tiers: overridden_tiers(work_queue, origin, delay_queues),
        parking: parking
            .filter(|parking| *parking != naming::parking_queue(work_queue))
            .map(str::to_string),
        attempts: attempt_queues
            .filter(|attempts| *attempts != naming::attempt_queues(work_queue, attempts.len()))
            .map(<[String]>::to_vec),
    };
    (!names.is_empty()).then_some(names)
}

/// The delay queue names a ladder whose delays come from `origin` needs written out:
/// `None` when they are the names warren generates for that origin.
fn overridden_tiers(
    work_queue: &str,
    origin: &str,
    delay_queues: &[String],
) -> Option<Vec<String>> {
    let schedule: Vec<usize> = (0..delay_queues.len()).collect();
    (delay_queues != naming::delay_queues(work_queue, origin, &schedule))
        .then(|| delay_queues.to_vec())
}

/// The service name a recognised consumer's policy origin suggests.
fn preferred_service(found: &Recognised) -> String {
    if let Some(service) = naming::origin_service(&found.origin) {
        return service.to_string();
    }
    if let Some(rest) = naming::origin_consumer(&found.origin) {
        // `consumer.<service>.<consumer>`: split where the work queue's default name
        // (`<service>.<consumer>`) or the inner exchange's name says.
        if rest.starts_with(&format!("{}.", found.exchange)) {
            return found.exchange.clone();
        }
        if let Some((service, _)) = rest.split_once('.') {
            return service.to_string();
        }
    }
    found.exchange.clone()
}

/// The consumer's name within its service.
fn consumer_name(found: &Recognised, service: &str) -> String {
    if let Some(name) = naming::origin_consumer(&found.origin)
        .and_then(|rest| naming::consumer_of_work_queue(service, rest))
    {
        return name.to_string();
    }
    let queue = found.consumer.queue.clone().unwrap_or_default();
    naming::consumer_of_work_queue(service, &queue)
        .map(str::to_string)
        .unwrap_or(queue)
}

/// Keeps one ladder per loop, and names each loop that is not one. An attempt queue of
/// a `reject-chain` ladder reads like the start of a shorter chain: of two ladders
/// sharing a queue, the longer one is the loop. A misfit whose queue a ladder claims is
/// part of that ladder, not a loop of its own.
fn keep_whole_loops(
    recognised: &mut Vec<Recognised>,
    misfits: &[(String, String)],
    vhost_name: &str,
    notes: &mut Notes,
) {
    recognised.sort_by_key(|found| std::cmp::Reverse(found.claimed_queues.len()));
    let mut taken: FxHashSet<String> = FxHashSet::default();
    recognised.retain(|found| {
        let free = found.claimed_queues.iter().all(|q| !taken.contains(q));
        if free {
            taken.extend(found.claimed_queues.iter().cloned());
        }
        free
    });
    for (queue, reason) in misfits.iter().filter(|(queue, _)| !taken.contains(queue)) {
        notes.0.push(format!(
            "vhost `{vhost_name}`: queue `{queue}` starts a retry loop that is imported as plain queues and exchanges, because {reason}"
        ));
    }
}

/// Recognises the ladders of a vhost and writes them into `vhost` (and, for delays
/// written at the top level or in a named ladder, into `spec`).
pub(super) fn place(
    definitions: &Definitions,
    vhost_name: &str,
    spec: &mut Spec,
    vhost: &mut Vhost,
    notes: &mut Notes,
) -> Claimed {
    let index = VhostIndex::new(definitions, vhost_name);
    let mut misfits: Vec<(String, String)> = Vec::new();
    let mut recognised: Vec<Recognised> = definitions
        .queues
        .iter()
        .filter(|q| q.vhost == vhost_name)
        .filter_map(|queue| match loops::recognise(&index, queue) {
            Ok(found) => Some(found),
            Err(misfit) => recognise_native(&index, queue).or_else(|| {
                if let loops::Misfit::Because(reason) = misfit {
                    misfits.push((queue.name.clone(), reason));
                }
                None
            }),
        })
        .collect();
    keep_whole_loops(&mut recognised, &misfits, vhost_name, notes);
    recognised
        .sort_by(|a, b| (&a.exchange, &a.consumer_name).cmp(&(&b.exchange, &b.consumer_name)));
    let mut claimed = Claimed::default();
    // Each ladder goes back where its policy's name says it was defined.
    // A service per inner exchange, named as the policies' origins say when they can.
    let mut service_names: BTreeMap<String, String> = BTreeMap::new();
    for found in &recognised {
        let preferred = preferred_service(found);
        service_names
            .entry(found.exchange.clone())
            .or_insert(preferred);
    }
    for mut found in recognised {
        claimed.queues.extend(found.claimed_queues.iter().cloned());
        claimed
            .exchanges
            .extend(found.claimed_exchanges.iter().cloned());
        claimed.exchanges.insert(found.exchange.clone());
        claimed
            .bindings
            .extend(found.claimed_bindings.iter().map(binding_id));
        let service_name = service_names[&found.exchange].clone();
        let consumer_name = consumer_name(&found, &service_name);
        let service = vhost
            .services
            .entry(service_name.clone())
            .or_insert_with(|| Service {
                exchange: InnerExchange {
                    name: (found.exchange != service_name).then(|| found.exchange.clone()),
                    kind: Some(found.exchange_type),
                    durable: definitions
                        .exchanges
                        .iter()
                        .find(|e| e.vhost == vhost_name && e.name == found.exchange)
                        .map(|e| e.durable)
                        .filter(|d| !d),
                },
                ..Service::default()
            });
        let work_queue = found.consumer.queue.clone().unwrap_or_default();
        let retry = found.consumer.retry.get_or_insert_with(Retry::default);
        let origin = found.origin.clone();
        let delays = Some(found.delays.clone());
        if found.native {
            retry.delays = delays;
        } else if found.delays_in_arguments {
            retry.delays = delays;
            let own = naming::consumer_origin(&service_name, &consumer_name);
            let names = retry.names.get_or_insert_with(Default::default);
            names.tiers = overridden_tiers(&work_queue, &own, &found.delay_queues);
            notes.0.push(format!(
                "vhost `{vhost_name}`: the retry loop of queue `{work_queue}` is consumer `{service_name}.{consumer_name}`, with its delays kept in the delay queues' arguments (`delays_in: arguments`); docs/importing.md says how to move them into policies"
            ));
        } else if origin == naming::DEFAULTS_ORIGIN {
            spec.defaults
                .retry
                .get_or_insert_with(Retry::default)
                .delays = delays;
        } else if origin == naming::VHOST_ORIGIN {
            vhost
                .defaults
                .retry
                .get_or_insert_with(Retry::default)
                .delays = delays;
        } else if let Some(ladder) = naming::origin_ladder(&origin) {
            spec.ladders
                .entry(ladder.to_string())
                .or_insert_with(|| Retry {
                    delays: delays.clone(),
                    ..Retry::default()
                });
            retry.ladder = Some(ladder.to_string());
        } else if naming::origin_service(&origin) == Some(service_name.as_str()) {
            service
                .defaults
                .retry
                .get_or_insert_with(Retry::default)
                .delays = delays;
        } else {
            retry.delays = delays;
            let own = naming::consumer_origin(&service_name, &consumer_name);
            if origin != own {
                // The tiers' generated names follow the origin: keep the live names.
                let tiers = overridden_tiers(&work_queue, &own, &found.delay_queues);
                let names = retry.names.get_or_insert_with(Default::default);
                names.tiers = tiers;
                notes.0.push(format!(
                    "vhost `{vhost_name}`: consumer `{consumer_name}` had its delays from `{origin}`; they are now written on the consumer (its policy gets a new name)"
                ));
            }
        }
        if retry.names.as_ref().is_some_and(RetryNames::is_empty) {
            retry.names = None;
        }
        if found.consumer.queue.as_deref()
            == Some(naming::work_queue(&service_name, &consumer_name).as_str())
        {
            found.consumer.queue = None;
        }
        service.consumers.insert(consumer_name, found.consumer);
    }
    claimed
}
