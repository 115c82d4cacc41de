//! The spec as the user writes it: plain serde types with a JSON Schema.
//!
//! Every struct denies unknown keys so that a typo is an error, never a silently ignored
//! setting. Maps keep the order the user wrote them in (`IndexMap`), which keeps
//! diagnostics in reading order; everything printed later is sorted.
//!
//! One file on purpose, though long: it is the spec format itself, read top to bottom
//! in the order a user writes a spec, and its doc comments are the JSON Schema's
//! descriptions (`schemas/warren.schema.json`). Three parts have files of their own:
//! users and their permissions (`users`) and the lint settings every object may carry
//! (`lint_settings`), which stand apart from the topology, and the retry ladder
//! (`retry`), which `defaults`, `ladders` and each consumer write in the same shape.

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lint_settings::{InlineLint, LintSettings};
use super::retry::Retry;
use super::users::User;
pub use crate::model::{HashingAlgorithm, QueueType};

/// A warren spec: the RabbitMQ topology of one team or system, as code.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Version of the spec format. Only `1` exists.
    pub version: u32,
    /// Lint rule levels for the whole spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<LintSettings>,
    /// Name of this spec. Several specs can manage disjoint parts of one broker; the name
    /// says which spec owns an object. Defaults to the file name without its extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The RabbitMQ line the spec's broker runs, written as a string (`"3.10"`,
    /// `"4.0"`, … `"4.3"`): what `validate`, `lint`, `compile` and `export` check and
    /// compile for when no `--target-version` is given. `plan` and `apply` compile for
    /// the broker they talk to and say so when its line differs. An environment may
    /// override it (a staging broker upgraded first). `warren import` writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub rabbitmq: Option<crate::model::TargetVersion>,
    /// Defaults inherited by every vhost, service and consumer.
    #[serde(default, skip_serializing_if = "Defaults::is_empty")]
    pub defaults: Defaults,
    /// Priority of the policies warren generates. User policies that match a generated
    /// queue must have a lower priority. Default: 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_priority: Option<i64>,
    /// Named retry ladders that consumers can refer to with `retry: { ladder: NAME }`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub ladders: IndexMap<String, Retry>,
    /// Virtual hosts, keyed by name.
    #[serde(default)]
    pub vhosts: IndexMap<String, Vhost>,
    /// Users, keyed by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub users: IndexMap<String, User>,
    /// Global runtime parameters (any JSON value), keyed by name. Names starting with
    /// `warren.` are reserved for ownership records.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub global_parameters: IndexMap<String, serde_json::Value>,
    /// The places this spec runs in (`staging`, `prod` …), keyed by name, each with
    /// what differs there. A spec that declares environments is always read for one
    /// of them (`--env NAME` or `WARREN_ENV`); docs/environments.md.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub environments: IndexMap<String, Environment>,
}

/// The keys of a spec an environment may not override, and why.
pub const FIXED_KEYS: &[(&str, &str)] = &[
    (
        "version",
        "the spec format's version is the same in every environment",
    ),
    (
        "name",
        "the spec's name is the same in every environment (each environment's ownership record is `<name>@<environment>` already)",
    ),
    ("environments", "environments do not nest"),
];

/// One environment of a spec: what differs from the rest of the spec there.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// What the environment is, for readers of the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Vhosts whose name differs in this environment: the spec's vhost name → the
    /// name on this environment's broker (users' permissions follow the rename).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub vhost_names: IndexMap<String, String>,
    /// The values that differ, written where they sit in the spec (`defaults`,
    /// `ladders`, `vhosts`, `users`, `global_parameters`, `policy_priority`, `lint`,
    /// `rabbitmq`), merged onto the rest of the spec as a JSON merge patch (RFC 7386): maps merge
    /// key by key, any other value (a list, a number, a string) replaces the spec's,
    /// and `null` removes an entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "overrides_schema")]
    pub overrides: Option<serde_json::Value>,
}

/// Settings inherited downwards: top level → vhost → service → consumer.
/// A value set at a lower level replaces the inherited one.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// Queue type of work queues (and, unless a ladder says otherwise, of their retry
    /// tiers and parking queue). Default: `quorum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_type: Option<QueueType>,
    /// Type of service inner exchanges. Default: `topic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_type: Option<ExchangeType>,
    /// Retry ladder inherited by consumers; a consumer's own `retry` block is merged
    /// over it key by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// Delivery limit of quorum work queues (with a ladder the default is `unlimited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_limit: Option<DeliveryLimit>,
}

impl Defaults {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.queue_type.is_none()
            && self.exchange_type.is_none()
            && self.retry.is_none()
            && self.delivery_limit.is_none()
    }
}

/// Exchange types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExchangeType {
    /// Routes to every bound queue.
    Fanout,
    /// Routes on exact routing key.
    Direct,
    /// Routes on routing-key patterns (`*`, `#`).
    Topic,
    /// Routes on message headers.
    Headers,
}

impl ExchangeType {
    /// The broker's name for the type.
    pub fn as_str(self) -> &'static str {
        match self {
            ExchangeType::Fanout => "fanout",
            ExchangeType::Direct => "direct",
            ExchangeType::Topic => "topic",
            ExchangeType::Headers => "headers",
        }
    }
}

/// A delivery limit: a number of redeliveries, or `unlimited`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DeliveryLimit {
    /// At most this many redeliveries before the broker dead-letters the message.
    Count(u32),
    /// The word `unlimited`.
    Keyword(Unlimited),
}

/// The keyword `unlimited`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unlimited {
    /// No delivery limit.
    Unlimited,
}

/// A virtual host.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vhost {
    /// Lint rules turned off for this object and everything in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<InlineLint>,
    /// Free-text description shown in the management UI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Tags of the vhost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Queue type the broker uses for queues declared without `x-queue-type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_queue_type: Option<QueueType>,
    /// Vhost limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<VhostLimits>,
    /// Defaults for the services of this vhost.
    #[serde(default, skip_serializing_if = "Defaults::is_empty")]
    pub defaults: Defaults,
    /// Services, keyed by name. A service owns an inner exchange that others publish to.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub services: IndexMap<String, Service>,
    /// Plain exchanges (escape hatch), keyed by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub exchanges: IndexMap<String, PlainExchange>,
    /// Plain queues (escape hatch), keyed by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub queues: IndexMap<String, PlainQueue>,
    /// Plain bindings (escape hatch), to queues or exchanges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bindings: Vec<PlainBinding>,
    /// User policies, keyed by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub policies: IndexMap<String, PlainPolicy>,
    /// Operator policies, keyed by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub operator_policies: IndexMap<String, PlainPolicy>,
    /// Runtime parameters by component and name, e.g. `shovel`, `federation-upstream`,
    /// `federation-upstream-set`. Values are JSON; a value written `{ env: VARIABLE }`
    /// anywhere inside is read from that environment variable (for URIs holding
    /// credentials), and credentials in URIs are never printed.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub parameters: IndexMap<String, IndexMap<String, serde_json::Value>>,
}

/// Vhost limits.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VhostLimits {
    /// Maximum number of queues (a negative number: no limit, as the broker reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queues: Option<i64>,
    /// Maximum number of client connections (a negative number: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<i64>,
}

/// A service: it owns an inner exchange and the consumers reading from it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// Lint rules turned off for this object and everything in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<InlineLint>,
    /// The inner exchange other services publish to.
    #[serde(default)]
    pub exchange: InnerExchange,
    /// Defaults for this service's consumers.
    #[serde(default, skip_serializing_if = "Defaults::is_empty")]
    pub defaults: Defaults,
    /// Consumers, keyed by name: each gets its own work queue bound to the inner exchange.
    #[serde(default)]
    pub consumers: IndexMap<String, Consumer>,
    /// Users (declared under top-level `users`) that publish to the inner exchange:
    /// warren grants each write permission on it and nothing else. An entry
    /// `{ user: NAME, routing_keys: [...] }` on a topic exchange also limits the routing
    /// keys it may publish with (a topic permission).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publishers: Vec<Publisher>,
}

/// A user that publishes to a service's inner exchange.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Publisher {
    /// The user's name: it may publish with any routing key.
    Name(String),
    /// The user, possibly limited to some routing keys (topic exchanges only).
    Restricted(RestrictedPublisher),
}

impl Publisher {
    /// The user's name.
    pub fn user(&self) -> &str {
        match self {
            Publisher::Name(name) => name,
            Publisher::Restricted(restricted) => &restricted.user,
        }
    }

    /// The routing keys the user is limited to, if any.
    pub fn routing_keys(&self) -> Option<&[String]> {
        match self {
            Publisher::Name(_) => None,
            Publisher::Restricted(restricted) => restricted.routing_keys.as_deref(),
        }
    }
}

impl<'de> Deserialize<'de> for Publisher {
    /// A name or a map: the map's own errors (an unknown key, a missing `user`) are
    /// reported as they are, instead of an untagged enum's "did not match any variant".
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Publisher;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a user name, or `{ user: NAME, routing_keys: [KEY, …] }`")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Publisher, E> {
                Ok(Publisher::Name(name.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Publisher, A::Error> {
                RestrictedPublisher::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Publisher::Restricted)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A publisher limited to some routing keys.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestrictedPublisher {
    /// The user's name (declared under top-level `users`).
    pub user: String,
    /// Routing keys, or topic patterns (`*` one word, `#` zero or more), the user may
    /// publish with. Only on a topic exchange, where the broker enforces them with a
    /// topic permission. Default: any key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_keys: Option<Vec<String>>,
}

/// The inner exchange of a service.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InnerExchange {
    /// Exchange name. Default: the service name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Exchange type. Default: inherited `exchange_type`, else `topic`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<ExchangeType>,
    /// Durable exchanges survive a broker restart. Default: true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable: Option<bool>,
}

/// A consumer of a service.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Consumer {
    /// Lint rules turned off for this object and everything in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<InlineLint>,
    /// Work queue name. Default: `<service>.<consumer>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Queue type of the work queue. Default: inherited `queue_type`, else `quorum`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<QueueType>,
    /// Routing keys binding the work queue to the inner exchange (direct and topic
    /// exchanges). Fanout exchanges need none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routing_keys: Vec<String>,
    /// Header match binding the work queue to a headers inner exchange.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<HeaderMatch>,
    /// Retry ladder. Inherits the defaults; `enabled: false` turns retries off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// Delivery limit of a quorum work queue. Default: `unlimited` when the consumer has a
    /// retry ladder (see the consumer contract), the broker's default otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_limit: Option<DeliveryLimit>,
    /// The user (declared under top-level `users`) the consumer's application logs in
    /// as: warren grants it read permission on the queues it consumes from and write
    /// permission on its retry exchange when the contract has it publish there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// How a headers binding matches.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeaderMatch {
    /// `all` headers must match, or `any` one of them. Default: `all`.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub mode: Option<HeaderMatchMode>,
    /// Header names and the values they must have.
    pub values: IndexMap<String, Value>,
}

/// `x-match` of a headers binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HeaderMatchMode {
    /// Every header must match.
    All,
    /// One header is enough.
    Any,
}

/// A plain exchange.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlainExchange {
    /// Lint rules turned off for this object and everything in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<InlineLint>,
    /// Exchange type: fanout, direct, topic, headers, or a plugin type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Default: true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable: Option<bool>,
    /// Default: false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_delete: Option<bool>,
    /// Internal exchanges accept no client publishes. Default: false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal: Option<bool>,
    /// Exchange receiving messages this one cannot route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternate_exchange: Option<String>,
    /// Further `x-` arguments, kept with their JSON types.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub arguments: IndexMap<String, Value>,
    /// Users (declared under top-level `users`) that publish to this exchange, as a
    /// service's `publishers`: warren grants each write permission on it (and, with
    /// `routing_keys` on a topic exchange, a topic permission for those keys).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publishers: Vec<Publisher>,
}

/// A plain queue.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlainQueue {
    /// Lint rules turned off for this object and everything in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<InlineLint>,
    /// Queue type. Default: inherited `queue_type`, else `quorum`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<QueueType>,
    /// Default: true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable: Option<bool>,
    /// Default: false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_delete: Option<bool>,
    /// Further `x-` arguments, kept with their JSON types.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub arguments: IndexMap<String, Value>,
}

/// A plain binding.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlainBinding {
    /// Source exchange.
    pub source: String,
    /// Destination queue or exchange.
    pub destination: String,
    /// `queue` (default) or `exchange`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_type: Option<DestinationType>,
    /// Routing key. Default: empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_key: Option<String>,
    /// Binding arguments (header matches for headers exchanges).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub arguments: IndexMap<String, Value>,
}

/// Binding destination kinds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum DestinationType {
    /// A queue.
    Queue,
    /// An exchange (exchange-to-exchange binding).
    Exchange,
}

/// A user or operator policy.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlainPolicy {
    /// Lint rules turned off for this object and everything in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<InlineLint>,
    /// Regular expression matched against object names.
    pub pattern: String,
    /// What the policy applies to. Default: `queues`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_to: Option<ApplyTo>,
    /// Higher wins; only one policy applies to an object. Default: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Policy keys and values, e.g. `max-length: 10000`; the schema gives each known
    /// key its JSON type.
    #[schemars(schema_with = "crate::model::policy_keys::definition_schema")]
    pub definition: IndexMap<String, Value>,
}

/// Policy `apply-to` values.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ApplyTo {
    /// Every queue type.
    Queues,
    /// Classic queues only (RabbitMQ 3.12+).
    ClassicQueues,
    /// Quorum queues only (RabbitMQ 3.12+).
    QuorumQueues,
    /// Streams only (RabbitMQ 3.12+).
    Streams,
    /// Exchanges.
    Exchanges,
    /// Queues and exchanges.
    All,
}

impl ApplyTo {
    /// The broker's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyTo::Queues => "queues",
            ApplyTo::ClassicQueues => "classic_queues",
            ApplyTo::QuorumQueues => "quorum_queues",
            ApplyTo::Streams => "streams",
            ApplyTo::Exchanges => "exchanges",
            ApplyTo::All => "all",
        }
    }
}

/// The JSON Schema of an environment's `overrides`: the spec's own keys (but those
/// no environment changes), none of them required, and `null` anywhere (it removes
/// what it stands for).
fn overrides_schema(generator: &mut SchemaGenerator) -> Schema {
    let spec = Spec::json_schema(generator);
    let mut schema = spec.as_value().clone();
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for (key, _) in FIXED_KEYS {
            properties.shift_remove(*key);
        }
    }
    partial(&mut schema);
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "description".into(),
            "What differs in this environment, in the spec's own shape: merged onto the spec as a JSON merge patch (RFC 7386; `null` removes an entry).".into(),
        );
    }
    Schema::try_from(schema).expect("a schema is an object")
}

/// `schema` with no required keys and `null` allowed for every property, in place.
/// References to other definitions are left as they are: definitions are shared with
/// the spec's own schema, so a partial entry below the first level may be reported
/// as incomplete by an editor, never wrongly accepted.
fn partial(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    object.shift_remove("required");
    let or_null = |schema: &mut Value| {
        let inner = std::mem::take(schema);
        *schema = serde_json::json!({ "anyOf": [inner, { "type": "null" }] });
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for property in properties.values_mut() {
            partial(property);
            or_null(property);
        }
    }
    // A map of named entries (`vhosts`, `users` …): `null` removes an entry.
    if let Some(entries) = object.get_mut("additionalProperties")
        && entries
            .as_object()
            .is_some_and(|entries| !entries.is_empty())
    {
        or_null(entries);
    }
}
