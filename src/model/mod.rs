//! The RabbitMQ vocabulary every layer shares, and the leaf of the crate: it imports
//! nothing from the modules above it.
//!
//! [`Definitions`] is the one type for desired state (what the compiler produces) and
//! live state (what a broker exports). The field names and shapes follow RabbitMQ's
//! definitions format, so a broker's own export deserializes without loss: every
//! object keeps fields warren does not know in `extra`, and values keep their JSON
//! types. Around it: object identity ([`id`]), the normal form both sides are compared
//! in and its inverse ([`objects`]), policy keys, patterns and the effective-policy
//! rule, password hashing, redaction, target versions, and the ownership record's
//! format.
//!
//! Every report warren makes is also here, since every layer makes one: a
//! [`finding::Finding`] and its severity, the places it points at (a spec path and a
//! line and column, [`spec_path`]; a place in a definitions document,
//! [`json_pointer`]), and the shape every registry of rules shares ([`rule`]).

pub mod addressable;
pub mod arguments;
pub mod dead_letter;
pub mod deprecated_features;
pub mod effective;
pub mod finding;
pub mod headers;
pub mod id;
pub mod json_pointer;
pub mod migration;
pub mod millis;
pub mod objects;
pub mod password;
pub mod pattern;
pub mod plan_format;
pub mod policy_keys;
pub mod queue_arguments;
pub mod queue_facts;
pub mod queue_type;
pub mod record;
pub mod redact;
pub mod reserved;
pub mod role_hazards;
pub mod routing;
pub mod rule;
pub mod settings;
pub mod shorten;
pub mod spec_path;
pub mod upgrade_path;
pub mod version;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use arguments::Arguments;
pub use id::{ObjectId, ObjectKind, binding_id};
pub use password::HashingAlgorithm;
pub use queue_type::QueueType;
pub use version::TargetVersion;

pub use reserved::{LOCK_VHOST, RESERVED_PREFIX, is_own_vhost};

/// A whole definitions document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Definitions {
    /// Version of the broker that exported the file (older brokers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rabbit_version: Option<String>,
    /// Version of the broker that exported the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rabbitmq_version: Option<String>,
    /// Users.
    #[serde(default)]
    pub users: Vec<User>,
    /// Virtual hosts.
    #[serde(default)]
    pub vhosts: Vec<Vhost>,
    /// Per-vhost permissions.
    #[serde(default)]
    pub permissions: Vec<Permission>,
    /// Per-exchange topic permissions.
    #[serde(default)]
    pub topic_permissions: Vec<TopicPermission>,
    /// Runtime parameters: vhost limits, operator policies, shovels, federation…
    #[serde(default)]
    pub parameters: Vec<Parameter>,
    /// Global runtime parameters.
    #[serde(default)]
    pub global_parameters: Vec<GlobalParameter>,
    /// User policies.
    #[serde(default)]
    pub policies: Vec<Policy>,
    /// Queues.
    #[serde(default)]
    pub queues: Vec<Queue>,
    /// Exchanges.
    #[serde(default)]
    pub exchanges: Vec<Exchange>,
    /// Bindings.
    #[serde(default)]
    pub bindings: Vec<Binding>,
    /// Top-level fields warren does not interpret (e.g. `product_name`).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// A user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    /// User name.
    pub name: String,
    /// Salted password hash, base64.
    #[serde(default)]
    pub password_hash: String,
    /// Hashing module, e.g. `rabbit_password_hashing_sha256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashing_algorithm: Option<String>,
    /// Tags: a list in recent exports, a comma-separated string in older ones.
    #[serde(default)]
    pub tags: Tags,
    /// User limits (`max-connections`, `max-channels`).
    #[serde(default, skip_serializing_if = "Arguments::is_empty")]
    pub limits: Arguments,
    /// Fields warren does not interpret.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Tags as written by different broker versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Tags {
    /// `["administrator", "monitoring"]`
    List(Vec<String>),
    /// `"administrator,monitoring"`
    Text(String),
}

impl Default for Tags {
    fn default() -> Self {
        Tags::List(Vec::new())
    }
}

impl Tags {
    /// The tags as a sorted list, whichever way they were written.
    pub fn to_list(&self) -> Vec<String> {
        let mut tags: Vec<String> = match self {
            Tags::List(list) => list.clone(),
            Tags::Text(text) => text
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect(),
        };
        tags.sort();
        tags.dedup();
        tags
    }
}

/// A virtual host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vhost {
    /// Vhost name.
    pub name: String,
    /// Description (import format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Tags (import format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// Default queue type (import format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_queue_type: Option<String>,
    /// Metadata as exported by recent brokers (description, tags, default_queue_type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Arguments>,
    /// Fields warren does not interpret (e.g. `limits`).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Permissions of a user in a vhost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permission {
    /// User name.
    pub user: String,
    /// Vhost name.
    pub vhost: String,
    /// Configure regex.
    pub configure: String,
    /// Write regex.
    pub write: String,
    /// Read regex.
    pub read: String,
}

/// Topic permissions of a user on an exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicPermission {
    /// User name.
    pub user: String,
    /// Vhost name.
    pub vhost: String,
    /// Topic exchange name.
    pub exchange: String,
    /// Write regex over routing keys.
    pub write: String,
    /// Read regex over routing keys.
    pub read: String,
}

/// A vhost-scoped runtime parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    /// Vhost name.
    pub vhost: String,
    /// Component, e.g. `vhost-limits`, `operator_policy`, `shovel`, `federation-upstream`.
    pub component: String,
    /// Parameter name.
    pub name: String,
    /// Parameter value (any JSON).
    pub value: Value,
}

/// The component of the runtime parameters RabbitMQ 4.0 writes while it deletes an
/// exchange (`exchange-delete-in-progress/<exchange>`): it removes them when the
/// deletion completes, and a deletion interrupted (the client killed mid-request)
/// leaves them behind. They are the broker's own bookkeeping, no spec's object.
pub const EXCHANGE_DELETE_IN_PROGRESS_COMPONENT: &str = "exchange-delete-in-progress";

impl Parameter {
    /// Whether the broker writes this parameter for itself
    /// ([`EXCHANGE_DELETE_IN_PROGRESS_COMPONENT`]): plans and imports leave it out.
    pub fn is_broker_internal(&self) -> bool {
        self.component == EXCHANGE_DELETE_IN_PROGRESS_COMPONENT
    }
}

/// Component name under which vhost limits are stored.
pub const VHOST_LIMITS_COMPONENT: &str = "vhost-limits";
/// The name of a vhost's limits, as a parameter and as an object id (a vhost has one).
pub const VHOST_LIMITS_NAME: &str = "limits";
/// Component name under which operator policies are stored.
pub const OPERATOR_POLICY_COMPONENT: &str = "operator_policy";

/// The global parameter that identifies a broker (or cluster): shared by the nodes of
/// a cluster, kept across restarts, and copied by a definitions import that carries
/// it, so definitions warren writes never carry it.
pub const BROKER_ID_PARAMETER: &str = "internal_cluster_id";

/// Component name under which the definitions format may list user policies.
pub const POLICY_COMPONENT: &str = "policy";

/// Components that are runtime parameters on the broker but objects of their own kind
/// in warren (vhost limits, operator policies) or in the definitions format (policies):
/// a spec's `parameters` cannot hold them, and they are never read as plain parameters.
pub fn is_own_kind_component(component: &str) -> bool {
    matches!(
        component,
        VHOST_LIMITS_COMPONENT | OPERATOR_POLICY_COMPONENT | POLICY_COMPONENT
    )
}

impl Parameter {
    /// An operator policy as the runtime parameter the broker stores it in: the value
    /// holds the policy's pattern, `apply-to`, definition and priority.
    pub fn operator_policy(policy: &Policy) -> Parameter {
        Parameter {
            vhost: policy.vhost.clone(),
            component: OPERATOR_POLICY_COMPONENT.into(),
            name: policy.name.clone(),
            value: serde_json::json!({
                "pattern": policy.pattern,
                "apply-to": policy.apply_to,
                "definition": policy.definition,
                "priority": policy.priority,
            }),
        }
    }

    /// The operator policy this parameter holds, with the broker's defaults for what
    /// its value leaves out; `None` for any other component.
    pub fn as_operator_policy(&self) -> Option<Policy> {
        if self.component != OPERATOR_POLICY_COMPONENT {
            return None;
        }
        let value = &self.value;
        Some(Policy {
            vhost: self.vhost.clone(),
            name: self.name.clone(),
            pattern: value["pattern"].as_str().unwrap_or_default().to_string(),
            apply_to: value["apply-to"].as_str().unwrap_or("all").to_string(),
            definition: value["definition"]
                .as_object()
                .map(|m| m.clone().into_iter().collect())
                .unwrap_or_default(),
            priority: value["priority"]
                .as_i64()
                .or_else(|| value["priority"].as_f64().map(|f| f as i64))
                .unwrap_or(0),
        })
    }
}

/// A global runtime parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobalParameter {
    /// Parameter name.
    pub name: String,
    /// Parameter value (any JSON).
    pub value: Value,
}

/// A user policy (operator policies use the same shape inside a [`Parameter`] value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Vhost name.
    pub vhost: String,
    /// Policy name.
    pub name: String,
    /// Regex over object names.
    pub pattern: String,
    /// `queues`, `classic_queues`, `quorum_queues`, `streams`, `exchanges` or `all`.
    #[serde(rename = "apply-to", default = "default_apply_to")]
    pub apply_to: String,
    /// Policy keys.
    #[serde(default)]
    pub definition: Arguments,
    /// Higher wins.
    #[serde(default)]
    pub priority: i64,
}

impl AsRef<Policy> for Policy {
    fn as_ref(&self) -> &Policy {
        self
    }
}

fn default_apply_to() -> String {
    "all".to_string()
}

/// A queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    /// Queue name.
    pub name: String,
    /// Vhost name.
    pub vhost: String,
    /// Durable queues survive a restart.
    #[serde(default = "yes")]
    pub durable: bool,
    /// Deleted when the last consumer leaves.
    #[serde(default)]
    pub auto_delete: bool,
    /// `x-` arguments.
    #[serde(default)]
    pub arguments: Arguments,
    /// Fields warren does not interpret (e.g. `type` in recent exports).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

fn yes() -> bool {
    true
}

/// Exchanges every vhost has.
pub const PREDEFINED_EXCHANGES: &[&str] = &[
    "amq.direct",
    "amq.fanout",
    "amq.topic",
    "amq.headers",
    "amq.match",
    "amq.rabbitmq.trace",
];

/// The prefix of the names the broker gives queues declared without one.
pub const SERVER_NAMED_QUEUE_PREFIX: &str = "amq.gen-";

impl Queue {
    /// Whether the queue belongs to a running application's connection rather than
    /// to the topology: exclusive (it dies with its connection) or named by the
    /// server (`amq.gen-…`; a client cannot declare that name again). No spec manages
    /// such a queue: plans and imports leave it out.
    pub fn is_transient(&self) -> bool {
        self.name.starts_with(SERVER_NAMED_QUEUE_PREFIX)
            || self.extra.get("exclusive").and_then(Value::as_bool) == Some(true)
    }
}

/// An exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// Exchange name.
    pub name: String,
    /// Vhost name.
    pub vhost: String,
    /// Exchange type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Durable exchanges survive a restart.
    #[serde(default = "yes")]
    pub durable: bool,
    /// Deleted when the last binding goes.
    #[serde(default)]
    pub auto_delete: bool,
    /// Internal exchanges accept no client publishes.
    #[serde(default)]
    pub internal: bool,
    /// `x-` arguments (e.g. `alternate-exchange`).
    #[serde(default)]
    pub arguments: Arguments,
    /// Fields warren does not interpret.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// The exchange type of the `rabbitmq_delayed_message_exchange` plugin, which holds each
/// message for its `x-delay` header before routing it as its `x-delayed-type` says.
pub const DELAYED_MESSAGE_EXCHANGE_TYPE: &str = "x-delayed-message";

impl Exchange {
    /// Whether the delayed-message plugin's exchange type (or its `x-delayed-type`
    /// argument) makes this a delayed-message exchange: the plugin keeps its delayed
    /// messages on one node, unreplicated, and has no release for RabbitMQ 4.3.
    pub fn is_delayed_message(&self) -> bool {
        self.kind == DELAYED_MESSAGE_EXCHANGE_TYPE || self.arguments.contains_key("x-delayed-type")
    }
}

/// A binding from an exchange to a queue or exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Binding {
    /// Source exchange.
    pub source: String,
    /// Vhost name.
    pub vhost: String,
    /// Destination name.
    pub destination: String,
    /// `queue` or `exchange`.
    pub destination_type: String,
    /// Routing key.
    #[serde(default)]
    pub routing_key: String,
    /// Binding arguments; two bindings that differ only here are different bindings.
    #[serde(default)]
    pub arguments: Arguments,
    /// Fields warren does not compare (e.g. the broker's `properties_key`, needed to
    /// delete the binding).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Definitions {
    /// Puts every list in a stable order, so output and snapshots never depend on
    /// the order objects were produced in.
    pub fn sort(&mut self) {
        self.users.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        self.vhosts.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        self.permissions
            .sort_unstable_by(|a, b| (&a.vhost, &a.user).cmp(&(&b.vhost, &b.user)));
        self.topic_permissions.sort_unstable_by(|a, b| {
            (&a.vhost, &a.user, &a.exchange).cmp(&(&b.vhost, &b.user, &b.exchange))
        });
        self.parameters.sort_unstable_by(|a, b| {
            (&a.vhost, &a.component, &a.name).cmp(&(&b.vhost, &b.component, &b.name))
        });
        self.global_parameters
            .sort_unstable_by(|a, b| a.name.cmp(&b.name));
        self.policies
            .sort_unstable_by(|a, b| (&a.vhost, &a.name).cmp(&(&b.vhost, &b.name)));
        self.queues
            .sort_unstable_by(|a, b| (&a.vhost, &a.name).cmp(&(&b.vhost, &b.name)));
        self.exchanges
            .sort_unstable_by(|a, b| (&a.vhost, &a.name).cmp(&(&b.vhost, &b.name)));
        // Bindings that differ only by arguments are rare: their arguments are compared
        // as JSON text only then.
        fn key(x: &Binding) -> (&str, &str, &str, &str, &str) {
            (
                &x.vhost,
                &x.source,
                &x.destination_type,
                &x.destination,
                &x.routing_key,
            )
        }
        self.bindings.sort_unstable_by(|a, b| {
            key(a).cmp(&key(b)).then_with(|| {
                let text = |b: &Binding| serde_json::to_string(&b.arguments).unwrap_or_default();
                text(a).cmp(&text(b))
            })
        });
    }

    /// Removes the transient queues ([`Queue::is_transient`]) and the bindings to
    /// them; returns how many queues were removed.
    pub fn leave_out_transient(&mut self) -> usize {
        let transient: std::collections::BTreeSet<(String, String)> = self
            .queues
            .iter()
            .filter(|q| q.is_transient())
            .map(|q| (q.vhost.clone(), q.name.clone()))
            .collect();
        if transient.is_empty() {
            return 0;
        }
        self.queues.retain(|q| !q.is_transient());
        self.bindings.retain(|b| {
            b.destination_type != "queue"
                || !transient.contains(&(b.vhost.clone(), b.destination.clone()))
        });
        transient.len()
    }

    /// The version of the broker that exported the document, if it says.
    pub fn exported_by(&self) -> Option<&str> {
        self.rabbitmq_version
            .as_deref()
            .or(self.rabbit_version.as_deref())
    }

    /// Number of objects of every kind, for summaries.
    pub fn object_count(&self) -> usize {
        self.users.len()
            + self.vhosts.len()
            + self.permissions.len()
            + self.topic_permissions.len()
            + self.parameters.len()
            + self.global_parameters.len()
            + self.policies.len()
            + self.queues.len()
            + self.exchanges.len()
            + self.bindings.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_broker_export_without_losing_fields() {
        let export = r##"{
          "rabbit_version": "3.10.8", "rabbitmq_version": "3.10.8", "product_name": "RabbitMQ",
          "users": [{"name": "guest", "password_hash": "abc", "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": "administrator", "limits": {}}],
          "vhosts": [{"name": "/", "limits": [], "metadata": {"description": "Default", "tags": []}}],
          "permissions": [{"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"}],
          "topic_permissions": [],
          "parameters": [{"value": {"max-queues": 10}, "vhost": "/", "component": "vhost-limits", "name": "limits"}],
          "global_parameters": [{"name": "cluster_name", "value": "rabbit@x"}],
          "policies": [{"vhost": "/", "name": "ttl", "pattern": "^t$", "apply-to": "queues", "definition": {"message-ttl": 5000}, "priority": 0}],
          "queues": [{"name": "q", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum"}, "type": "quorum"}],
          "exchanges": [{"name": "x", "vhost": "/", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {}}],
          "bindings": [{"source": "x", "vhost": "/", "destination": "q", "destination_type": "queue", "routing_key": "#", "arguments": {}}]
        }"##;
        let defs: Definitions = serde_json::from_str(export).unwrap();
        assert_eq!(defs.users[0].tags.to_list(), vec!["administrator"]);
        assert_eq!(defs.queues[0].extra["type"], "quorum");
        assert_eq!(defs.extra["product_name"], "RabbitMQ");
        assert_eq!(defs.policies[0].definition["message-ttl"], 5000);
        let again: Definitions =
            serde_json::from_str(&serde_json::to_string(&defs).unwrap()).unwrap();
        assert_eq!(again, defs);
    }
}
