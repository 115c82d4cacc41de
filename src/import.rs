//! Live state (or a definitions file) → a spec that reproduces it.
//!
//! Retry topologies in warren's shape are recognised and written as services and
//! consumers with ladders: a work queue that dead-letters to its own direct retry
//! exchange with routing key `1`, delay queues bound to that exchange on `1`, `2`, …
//! that dead-letter straight back (or, in reject-chain mode, to the next attempt's
//! queue), and a parking queue on `parking`. Their delays come from the generated
//! `warren.retry.<origin>.<n>` policies, so the ladders are rebuilt where they were
//! defined (top level, vhost, service, consumer or a named ladder) and the regenerated
//! policies keep their names. Everything else becomes plain exchanges, queues, bindings
//! and policies. Users keep their password hashes. Compiling the result and planning it
//! against the same broker gives no changes.

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::compile::{ObjectId, binding_id};
use serde_json::Value;

use crate::model::effective::{PatternMatcher, queue_type};
use crate::model::objects::normalize_value;
use crate::model::{
    Binding, Definitions, OPERATOR_POLICY_COMPONENT, Queue, VHOST_LIMITS_COMPONENT,
};
use crate::model::{Exchange, Policy};

use crate::spec::{
    ApplyTo, Consumer, Defaults, DeliveryLimit, DestinationType, Duration, ExchangeType,
    HashingAlgorithm, HeaderMatch, HeaderMatchMode, InnerExchange, Permission, PlainBinding,
    PlainExchange, PlainPolicy, PlainQueue, Retry, RetryMode, RetryNames, Service, Spec,
    TopicPermission, User, Vhost, VhostLimits,
};

/// What the importer could not carry over, for the user to check.
#[derive(Debug, Clone, Default)]
pub struct Notes(pub Vec<String>);

/// A recognised consumer, before it is placed in a service.
struct Recognised {
    exchange: String,
    exchange_type: ExchangeType,
    consumer_name: String,
    consumer: Consumer,
    origin: String,
    delays: Vec<Duration>,
    claimed_queues: Vec<String>,
    claimed_exchanges: Vec<String>,
    claimed_bindings: Vec<Binding>,
}

fn text(value: Option<&Value>) -> Option<&str> {
    value.and_then(|v| v.as_str())
}

/// Builds a spec named `name` from definitions; `only` restricts it to some vhosts
/// (users are imported when they have permissions in an imported vhost).
pub fn import(definitions: &Definitions, name: &str, only: &[String], notes: &mut Notes) -> Spec {
    let mut spec = Spec {
        version: 1,
        lint: None,
        name: Some(name.to_string()),
        defaults: Defaults::default(),
        policy_priority: None,
        ladders: IndexMap::new(),
        vhosts: IndexMap::new(),
        users: IndexMap::new(),
        global_parameters: IndexMap::new(),
    };
    let mut vhost_names: Vec<&String> = definitions
        .vhosts
        .iter()
        .map(|v| &v.name)
        .filter(|name| only.is_empty() || only.contains(name))
        .collect();
    vhost_names.sort();
    for vhost_name in vhost_names {
        let vhost = import_vhost(definitions, vhost_name, &mut spec, notes);
        spec.vhosts.insert(vhost_name.clone(), vhost);
    }
    import_users(definitions, &mut spec, notes);
    let consumers = spec
        .vhosts
        .values()
        .flat_map(|v| v.services.values())
        .map(|s| s.consumers.len())
        .sum::<usize>();
    if consumers > 0 {
        notes.0.push(
            "retry `mode` and `max_retries` live in the consumers' code, not in the broker: check them in the imported consumers (the default is `mode: publish`, one retry per tier)"
                .to_string(),
        );
    }
    spec
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
            .filter(|p| p.vhost == vhost && p.name.starts_with("warren.retry."))
            .map(|p| (p, PatternMatcher::new(&p.pattern)))
            .collect();
        index.limit_policies = definitions
            .policies
            .iter()
            .filter(|p| {
                p.vhost == vhost
                    && p.name.starts_with("warren.delivery-limit.")
                    && !p.name.contains("unlimited")
            })
            .map(|p| (p, PatternMatcher::new(&p.pattern)))
            .collect();
        index
    }

    /// The origin and TTL of the warren retry policy that applies to a tier queue.
    fn generated_ttl_policy(&self, queue: &str) -> Option<(String, u64)> {
        self.retry_policies
            .iter()
            .filter(|(_, matcher)| matcher.is_match(queue))
            .find_map(|(p, _)| {
                let ttl = p.definition.get("message-ttl")?.as_u64()?;
                let group = p.name.trim_start_matches("warren.retry.");
                let group = group.split('+').next().unwrap_or(group);
                let origin = group
                    .rsplit_once('.')
                    .map(|(origin, _)| origin)?
                    .to_string();
                Some((origin, ttl))
            })
    }
}

fn recognise(indexed: &VhostIndex, work: &Queue) -> Option<Recognised> {
    let by_name = |name: &str| indexed.queues.get(name).copied();
    let retry_exchange = text(work.arguments.get("x-dead-letter-exchange"))?;
    if text(work.arguments.get("x-dead-letter-routing-key")) != Some("1") {
        return None;
    }
    let exchange = indexed
        .exchanges
        .get(retry_exchange)
        .filter(|e| e.kind == "direct")?;
    let from_retry: &[&Binding] = indexed
        .to_queues_from
        .get(exchange.name.as_str())
        .map_or(&[], Vec::as_slice);
    let bound = |key: &str| {
        from_retry
            .iter()
            .find(|b| b.routing_key == key)
            .map(|b| b.destination.clone())
    };
    // Delay queues on keys 1, 2, … in order.
    let mut delay_queues = Vec::new();
    while let Some(name) = bound(&(delay_queues.len() + 1).to_string()) {
        delay_queues.push(name);
    }
    if delay_queues.is_empty() || from_retry.len() > delay_queues.len() + 1 {
        return None;
    }
    let parking = bound("parking");
    let first = by_name(&delay_queues[0])?;
    let first_target = text(first.arguments.get("x-dead-letter-exchange"));
    let via_inner = first_target.is_some_and(|t| !t.is_empty());
    let chain = !via_inner
        && text(first.arguments.get("x-dead-letter-routing-key")) != Some(work.name.as_str());
    // The inner exchange: the one other binding to the work queue's source.
    let inbound: &[&Binding] = indexed
        .to_queue
        .get(work.name.as_str())
        .map_or(&[], Vec::as_slice);
    let inner = inbound.first()?.source.clone();
    if inbound.iter().any(|b| b.source != inner) {
        return None;
    }
    let mut attempt_queues = Vec::new();
    let mut delays = Vec::new();
    let mut origin = None;
    for (index, name) in delay_queues.iter().enumerate() {
        let queue = by_name(name)?;
        let expected_exchange = if via_inner { inner.as_str() } else { "" };
        if text(queue.arguments.get("x-dead-letter-exchange")) != Some(expected_exchange) {
            return None;
        }
        let (group_origin, ttl) = indexed.generated_ttl_policy(name)?;
        if origin.as_ref().is_some_and(|o| o != &group_origin) {
            return None;
        }
        origin = Some(group_origin);
        delays.push(Duration::from_millis(ttl));
        if via_inner {
            // Back through the inner exchange, with the consumer's one key or none.
            let key = text(queue.arguments.get("x-dead-letter-routing-key"));
            let fits = match key {
                None => true,
                Some(key) => inbound.len() == 1 && inbound[0].routing_key == key,
            };
            if !fits {
                return None;
            }
            continue;
        }
        let target = text(queue.arguments.get("x-dead-letter-routing-key"))?;
        if chain {
            let attempt = by_name(target)?;
            let next_key = if index + 1 < delay_queues.len() {
                (index + 2).to_string()
            } else {
                "parking".to_string()
            };
            let attempt_key = text(attempt.arguments.get("x-dead-letter-routing-key"));
            let last_drops =
                index + 1 == delay_queues.len() && parking.is_none() && attempt_key.is_none();
            if !last_drops && attempt_key != Some(next_key.as_str()) {
                return None;
            }
            attempt_queues.push(target.to_string());
        } else if target != work.name {
            return None;
        }
    }
    let inner_exchange = indexed.exchanges.get(inner.as_str())?;
    let inner_type = match inner_exchange.kind.as_str() {
        "fanout" => ExchangeType::Fanout,
        "direct" => ExchangeType::Direct,
        "topic" => ExchangeType::Topic,
        "headers" => ExchangeType::Headers,
        _ => return None,
    };
    let mut consumer = Consumer {
        queue: Some(work.name.clone()),
        kind: Some(queue_type(work)),
        ..Consumer::default()
    };
    if inner_type == ExchangeType::Headers {
        if inbound.len() != 1 {
            return None;
        }
        let mut values = IndexMap::new();
        let mut mode = HeaderMatchMode::All;
        for (key, value) in &inbound[0].arguments {
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
        consumer.headers = Some(HeaderMatch {
            mode: Some(mode),
            values,
        });
    } else if inner_type != ExchangeType::Fanout
        || inbound.iter().any(|b| !b.routing_key.is_empty())
    {
        if inbound.iter().any(|b| !b.arguments.is_empty()) {
            return None;
        }
        consumer.routing_keys = inbound.iter().map(|b| b.routing_key.clone()).collect();
    }
    let tier_type = queue_type(first);
    let work_queue = &work.name;
    let default_names =
        |n: usize| -> Vec<String> { (1..=n).map(|i| format!("{work_queue}.retry.{i}")).collect() };
    let mut names = RetryNames::default();
    if exchange.name != format!("{work_queue}.retry") {
        names.exchange = Some(exchange.name.clone());
    }
    if delay_queues != default_names(delay_queues.len()) {
        names.tiers = Some(delay_queues.clone());
    }
    if let Some(parking) = &parking
        && *parking != format!("{work_queue}.parking")
    {
        names.parking = Some(parking.clone());
    }
    let default_attempts: Vec<String> = (2..=attempt_queues.len() + 1)
        .map(|n| format!("{work_queue}.attempt.{n}"))
        .collect();
    if chain && attempt_queues != default_attempts {
        names.attempts = Some(attempt_queues.clone());
    }
    let has_names = names.exchange.is_some()
        || names.tiers.is_some()
        || names.parking.is_some()
        || names.attempts.is_some();
    consumer.retry = Some(Retry {
        mode: chain.then_some(RetryMode::RejectChain),
        return_via: via_inner.then_some(crate::spec::ReturnVia::InnerExchange),
        on_exhausted: parking.is_none().then_some(crate::spec::OnExhausted::Drop),
        queue_type: (tier_type != queue_type(work)).then_some(tier_type),
        names: has_names.then_some(names),
        ..Retry::default()
    });
    if let Some(limit) = indexed
        .limit_policies
        .iter()
        .find(|(_, matcher)| matcher.is_match(work_queue))
        .and_then(|(p, _)| p.definition.get("delivery-limit")?.as_u64())
    {
        consumer.delivery_limit = Some(DeliveryLimit::Count(limit as u32));
    }
    let mut claimed_queues = vec![work.name.clone()];
    claimed_queues.extend(delay_queues.iter().cloned());
    claimed_queues.extend(attempt_queues.iter().cloned());
    claimed_queues.extend(parking.iter().cloned());
    let mut claimed_bindings: Vec<Binding> = inbound.iter().map(|b| (*b).clone()).collect();
    claimed_bindings.extend(from_retry.iter().map(|b| (*b).clone()));
    let consumer_name = work
        .name
        .strip_prefix(&format!("{inner}."))
        .unwrap_or(&work.name)
        .to_string();
    Some(Recognised {
        exchange: inner,
        exchange_type: inner_type,
        consumer_name,
        consumer,
        origin: origin?,
        delays,
        claimed_queues,
        claimed_exchanges: vec![exchange.name.clone()],
        claimed_bindings,
    })
}

/// The service name a recognised consumer's policy origin suggests.
fn preferred_service(found: &Recognised) -> String {
    if let Some(service) = found.origin.strip_prefix("service.") {
        return service.to_string();
    }
    if let Some(rest) = found.origin.strip_prefix("consumer.") {
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
    if let Some(name) = found
        .origin
        .strip_prefix(&format!("consumer.{service}."))
        .filter(|n| !n.is_empty())
    {
        return name.to_string();
    }
    let queue = found.consumer.queue.clone().unwrap_or_default();
    queue
        .strip_prefix(&format!("{service}."))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or(queue)
}

fn import_vhost(
    definitions: &Definitions,
    vhost_name: &str,
    spec: &mut Spec,
    notes: &mut Notes,
) -> Vhost {
    let live = definitions
        .vhosts
        .iter()
        .find(|v| v.name == vhost_name)
        .expect("listed");
    let metadata = live.metadata.clone().unwrap_or_default();
    let mut vhost = Vhost {
        description: live
            .description
            .clone()
            .or_else(|| text(metadata.get("description")).map(str::to_string))
            .filter(|d| !d.is_empty()),
        tags: live.tags.as_ref().map(|t| t.to_list()).unwrap_or_default(),
        ..Vhost::default()
    };
    let in_vhost_queues: Vec<&Queue> = definitions
        .queues
        .iter()
        .filter(|q| q.vhost == vhost_name)
        .collect();
    let index = VhostIndex::new(definitions, vhost_name);
    let mut recognised: Vec<Recognised> = in_vhost_queues
        .iter()
        .filter_map(|queue| recognise(&index, queue))
        .collect();
    recognised
        .sort_by(|a, b| (&a.exchange, &a.consumer_name).cmp(&(&b.exchange, &b.consumer_name)));
    let mut claimed_queues = BTreeSet::new();
    let mut claimed_exchanges = BTreeSet::new();
    let mut claimed_bindings = Vec::new();
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
        claimed_queues.extend(found.claimed_queues.iter().cloned());
        claimed_exchanges.extend(found.claimed_exchanges.iter().cloned());
        claimed_exchanges.insert(found.exchange.clone());
        claimed_bindings.extend(found.claimed_bindings.iter().cloned());
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
        let retry = found.consumer.retry.get_or_insert_with(Retry::default);
        let origin = found.origin.clone();
        let delays = Some(found.delays.clone());
        if origin == "defaults" {
            spec.defaults
                .retry
                .get_or_insert_with(Retry::default)
                .delays = delays;
        } else if origin == "vhost" {
            vhost
                .defaults
                .retry
                .get_or_insert_with(Retry::default)
                .delays = delays;
        } else if let Some(ladder) = origin.strip_prefix("ladder.") {
            spec.ladders
                .entry(ladder.to_string())
                .or_insert_with(|| Retry {
                    delays: delays.clone(),
                    ..Retry::default()
                });
            retry.ladder = Some(ladder.to_string());
        } else if origin.strip_prefix("service.") == Some(service_name.as_str()) {
            service
                .defaults
                .retry
                .get_or_insert_with(Retry::default)
                .delays = delays;
        } else {
            retry.delays = delays;
            if origin != format!("consumer.{service_name}.{consumer_name}") {
                notes.0.push(format!(
                    "vhost `{vhost_name}`: consumer `{consumer_name}` had its delays from `{origin}`; they are now written on the consumer (its policy gets a new name)"
                ));
            }
        }
        if found.consumer.queue.as_deref() == Some(&format!("{service_name}.{consumer_name}")) {
            found.consumer.queue = None;
        }
        service.consumers.insert(consumer_name, found.consumer);
    }
    // Plain objects for everything else.
    for exchange in definitions
        .exchanges
        .iter()
        .filter(|e| e.vhost == vhost_name)
    {
        if claimed_exchanges.contains(&exchange.name)
            || exchange.name.is_empty()
            || exchange.name.starts_with("amq.")
        {
            continue;
        }
        let mut arguments: IndexMap<String, Value> = exchange
            .arguments
            .iter()
            .map(|(k, v)| (k.clone(), normalize_value(v)))
            .collect();
        let alternate = arguments
            .shift_remove("alternate-exchange")
            .and_then(|v| v.as_str().map(str::to_string));
        vhost.exchanges.insert(
            exchange.name.clone(),
            PlainExchange {
                lint: None,
                kind: exchange.kind.clone(),
                durable: (!exchange.durable).then_some(false),
                auto_delete: exchange.auto_delete.then_some(true),
                internal: exchange.internal.then_some(true),
                alternate_exchange: alternate,
                arguments,
            },
        );
    }
    for queue in in_vhost_queues {
        if claimed_queues.contains(&queue.name) {
            continue;
        }
        let arguments: IndexMap<String, Value> = queue
            .arguments
            .iter()
            .filter(|(k, _)| *k != "x-queue-type")
            .map(|(k, v)| (k.clone(), normalize_value(v)))
            .collect();
        vhost.queues.insert(
            queue.name.clone(),
            PlainQueue {
                lint: None,
                kind: Some(queue_type(queue)),
                durable: (!queue.durable).then_some(false),
                auto_delete: queue.auto_delete.then_some(true),
                arguments,
            },
        );
    }
    let claimed_binding_ids: FxHashSet<ObjectId> =
        claimed_bindings.iter().map(binding_id).collect();
    for binding in definitions
        .bindings
        .iter()
        .filter(|b| b.vhost == vhost_name && !b.source.is_empty())
    {
        if claimed_binding_ids.contains(&binding_id(binding)) {
            continue;
        }
        vhost.bindings.push(PlainBinding {
            source: binding.source.clone(),
            destination: binding.destination.clone(),
            destination_type: (binding.destination_type == "exchange")
                .then_some(DestinationType::Exchange),
            routing_key: (!binding.routing_key.is_empty()).then(|| binding.routing_key.clone()),
            arguments: binding
                .arguments
                .iter()
                .map(|(k, v)| (k.clone(), normalize_value(v)))
                .collect(),
        });
    }
    for policy in definitions
        .policies
        .iter()
        .filter(|p| p.vhost == vhost_name)
    {
        if policy
            .name
            .starts_with(crate::compile::policies::GENERATED_PREFIX)
        {
            let explained = fancy_regex::Regex::new(&policy.pattern)
                .map(|regex| {
                    definitions
                        .queues
                        .iter()
                        .filter(|q| {
                            q.vhost == vhost_name && regex.is_match(&q.name).unwrap_or(false)
                        })
                        .all(|q| claimed_queues.contains(&q.name))
                })
                .unwrap_or(false);
            if explained {
                continue; // regenerated from the recognised consumers
            }
            let renamed = format!("was-{}", policy.name);
            notes.0.push(format!(
                "vhost `{vhost_name}`: policy `{}` covers queues that were not recognised as a retry ladder; imported as plain policy `{renamed}` (`warren.` names are reserved)",
                policy.name
            ));
            vhost.policies.insert(
                renamed,
                plain_policy(
                    &policy.pattern,
                    &policy.apply_to,
                    policy.priority,
                    &policy.definition,
                    notes,
                ),
            );
            continue;
        }
        vhost.policies.insert(
            policy.name.clone(),
            plain_policy(
                &policy.pattern,
                &policy.apply_to,
                policy.priority,
                &policy.definition,
                notes,
            ),
        );
    }
    for parameter in definitions
        .parameters
        .iter()
        .filter(|p| p.vhost == vhost_name)
    {
        match parameter.component.as_str() {
            VHOST_LIMITS_COMPONENT => {
                vhost.limits = Some(VhostLimits {
                    max_queues: parameter.value["max-queues"].as_u64(),
                    max_connections: parameter.value["max-connections"].as_u64(),
                });
            }
            OPERATOR_POLICY_COMPONENT => {
                let value = &parameter.value;
                let definition = value["definition"]
                    .as_object()
                    .map(|m| m.clone().into_iter().collect())
                    .unwrap_or_default();
                vhost.operator_policies.insert(
                    parameter.name.clone(),
                    plain_policy(
                        value["pattern"].as_str().unwrap_or_default(),
                        value["apply-to"].as_str().unwrap_or("all"),
                        value["priority"].as_i64().unwrap_or(0),
                        &definition,
                        notes,
                    ),
                );
            }
            "policy" => {}
            component => {
                let value = normalize_value(&parameter.value);
                let redacted = crate::render::plan::redact_uris(&value);
                if redacted != value {
                    notes.0.push(format!(
                        "vhost `{vhost_name}`: {component} `{}` holds URI credentials; they are written as `***`: replace the URI with `{{ env: VARIABLE }}`",
                        parameter.name
                    ));
                }
                vhost
                    .parameters
                    .entry(component.to_string())
                    .or_default()
                    .insert(parameter.name.clone(), redacted);
            }
        }
    }
    vhost
}

fn plain_policy(
    pattern: &str,
    apply_to: &str,
    priority: i64,
    definition: &crate::model::Arguments,
    notes: &mut Notes,
) -> PlainPolicy {
    let apply_to = match apply_to {
        "queues" => ApplyTo::Queues,
        "classic_queues" => ApplyTo::ClassicQueues,
        "quorum_queues" => ApplyTo::QuorumQueues,
        "streams" => ApplyTo::Streams,
        "exchanges" => ApplyTo::Exchanges,
        "all" => ApplyTo::All,
        other => {
            notes
                .0
                .push(format!("apply-to `{other}` is unknown; imported as `all`"));
            ApplyTo::All
        }
    };
    PlainPolicy {
        lint: None,
        pattern: pattern.to_string(),
        apply_to: Some(apply_to),
        priority: (priority != 0).then_some(priority),
        definition: definition
            .iter()
            .map(|(k, v)| (k.clone(), normalize_value(v)))
            .collect(),
    }
}

fn import_users(definitions: &Definitions, spec: &mut Spec, notes: &mut Notes) {
    let vhosts: BTreeSet<&String> = spec.vhosts.keys().collect();
    let mut users: Vec<&crate::model::User> = definitions.users.iter().collect();
    users.sort_by(|a, b| a.name.cmp(&b.name));
    for user in users {
        let has_permissions = definitions
            .permissions
            .iter()
            .any(|p| p.user == user.name && vhosts.contains(&p.vhost));
        if !has_permissions {
            continue;
        }
        let algorithm = match user.hashing_algorithm.as_deref() {
            None | Some("rabbit_password_hashing_sha256") => None,
            Some("rabbit_password_hashing_sha512") => Some(HashingAlgorithm::Sha512),
            Some(other) => {
                notes.0.push(format!(
                    "user `{}` uses {other}, which warren cannot write; the user is left out",
                    user.name
                ));
                continue;
            }
        };
        let mut imported = User {
            password_hash: Some(user.password_hash.clone()),
            hashing_algorithm: algorithm,
            tags: user.tags.to_list(),
            limits: (!user.limits.is_empty()).then(|| crate::spec::UserLimits {
                max_connections: user.limits.get("max-connections").and_then(|v| v.as_u64()),
                max_channels: user.limits.get("max-channels").and_then(|v| v.as_u64()),
            }),
            ..User::default()
        };
        for permission in definitions
            .permissions
            .iter()
            .filter(|p| p.user == user.name && vhosts.contains(&p.vhost))
        {
            imported.permissions.insert(
                permission.vhost.clone(),
                Permission {
                    configure: permission.configure.clone(),
                    write: permission.write.clone(),
                    read: permission.read.clone(),
                },
            );
        }
        for permission in definitions
            .topic_permissions
            .iter()
            .filter(|p| p.user == user.name && vhosts.contains(&p.vhost))
        {
            imported
                .topic_permissions
                .entry(permission.vhost.clone())
                .or_default()
                .insert(
                    permission.exchange.clone(),
                    TopicPermission {
                        write: permission.write.clone(),
                        read: permission.read.clone(),
                    },
                );
        }
        spec.users.insert(user.name.clone(), imported);
    }
}

/// The spec as YAML with a header comment.
pub fn to_yaml(spec: &Spec, source: &str) -> String {
    let body = serde_saphyr::to_string(spec).unwrap_or_default();
    format!(
        "# Imported by `warren import` from {source}.\n# `warren plan` of this spec against the same broker shows no changes.\n{body}"
    )
}
