//! The compiled topology as RabbitMQ Messaging Topology Operator resources
//! (`rabbitmq.com/v1beta1`): what `warren export --format k8s` writes.
//!
//! On such a cluster the operator, not warren, creates and owns the broker's objects,
//! so this module only maps: one resource per object of the compiled definitions,
//! with the real RabbitMQ name in the resource's spec and a derived Kubernetes name
//! ([`names`]) in `metadata.name`. What the operator's resources cannot express is a
//! [`Unexpressible`] naming the object and the missing field: rendering something else
//! would leave the broker with a topology the spec does not describe.
//!
//! The export reads no secrets: a User refers to a Secret holding its credentials,
//! a Shovel or Federation to one holding its URIs, and [`Manifests::secrets`] lists
//! them for the caller to tell the user.

pub mod names;
pub mod runtime;
mod users;

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value, json};

use crate::model::{
    Binding, Definitions, Exchange, OPERATOR_POLICY_COMPONENT, Parameter, Permission, Policy,
    Queue, TopicPermission, User, VHOST_LIMITS_COMPONENT, Vhost,
};
use crate::spec::Spec;
use names::metadata_name;
use runtime::Runtime;

/// The operator's API group and version.
pub const API_VERSION: &str = "rabbitmq.com/v1beta1";

/// The label every resource carries, so `kubectl get … -l` finds warren's.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "warren");

/// Where the resources go.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `RabbitmqCluster` the operator applies them to (`rabbitmqClusterReference.name`).
    pub cluster: String,
    /// `metadata.namespace`, when given.
    pub namespace: Option<String>,
}

impl Options {
    /// The options, or why a value is no Kubernetes name.
    pub fn new(cluster: String, namespace: Option<String>) -> Result<Options, String> {
        if !names::is_subdomain(&cluster) {
            return Err(format!(
                "--cluster {cluster:?} is not a Kubernetes object name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"
            ));
        }
        if let Some(namespace) = namespace.as_deref().filter(|ns| !names::is_label(ns)) {
            return Err(format!(
                "--namespace {namespace:?} is not a Kubernetes namespace (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)"
            ));
        }
        Ok(Options { cluster, namespace })
    }
}

/// One rendered resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its `kind`.
    pub kind: &'static str,
    /// Its `metadata.name`.
    pub name: String,
    /// The whole document: apiVersion, kind, metadata, spec.
    pub document: Value,
}

/// A Secret a resource refers to, which the user creates: the export never holds
/// passwords or URIs.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretNeeded {
    /// The Secret's name (in the resources' namespace).
    pub name: String,
    /// The keys the operator reads from it, with what each holds.
    pub keys: Vec<(String, String)>,
    /// The object it is for, e.g. `user "orders_app"`.
    pub object: String,
}

/// The resources of a spec, in the order they are written.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    /// Vhosts, exchanges, queues, bindings, policies, operator policies, users,
    /// permissions, topic permissions, shovels, federations; each kind sorted by its
    /// RabbitMQ identity.
    pub resources: Vec<Resource>,
    /// The Secrets the resources refer to.
    pub secrets: Vec<SecretNeeded>,
    /// What the broker will not have that the definitions export would give it, but
    /// that changes no routing, no message and no access (a vhost's description).
    pub notes: Vec<String>,
}

/// Something the operator's resources cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unexpressible {
    /// The object, e.g. `exchange "shop.inner" in vhost "shop"`.
    pub object: String,
    /// What the operator lacks.
    pub reason: String,
}

impl fmt::Display for Unexpressible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.object, self.reason)
    }
}

/// The resources for `definitions` (compiled from `spec`), or every refusal.
pub fn manifests(
    spec: &Spec,
    definitions: &Definitions,
    options: &Options,
) -> Result<Manifests, Vec<Unexpressible>> {
    let mut out = Builder {
        options,
        manifests: Manifests::default(),
        refusals: Vec::new(),
    };
    let mut vhosts: Vec<&Vhost> = definitions.vhosts.iter().collect();
    vhosts.sort_by(|a, b| a.name.cmp(&b.name));
    for vhost in vhosts {
        out.vhost(vhost, &definitions.parameters);
    }
    let mut exchanges: Vec<&Exchange> = definitions.exchanges.iter().collect();
    exchanges.sort_by(|a, b| (&a.vhost, &a.name).cmp(&(&b.vhost, &b.name)));
    for exchange in exchanges {
        out.exchange(exchange);
    }
    let mut queues: Vec<&Queue> = definitions.queues.iter().collect();
    queues.sort_by(|a, b| (&a.vhost, &a.name).cmp(&(&b.vhost, &b.name)));
    for queue in queues {
        out.queue(queue);
    }
    let mut bindings: Vec<(Value, &Binding)> = definitions
        .bindings
        .iter()
        .map(|b| (binding_identity(b), b))
        .collect();
    bindings.sort_by_key(|(identity, _)| identity.to_string());
    for (identity, binding) in bindings {
        out.binding(binding, identity);
    }
    let mut policies: Vec<&Policy> = definitions.policies.iter().collect();
    policies.sort_by(|a, b| (&a.vhost, &a.name).cmp(&(&b.vhost, &b.name)));
    for policy in policies {
        out.policy(policy, false);
    }
    let mut parameters: Vec<&Parameter> = definitions.parameters.iter().collect();
    parameters
        .sort_by(|a, b| (&a.component, &a.vhost, &a.name).cmp(&(&b.component, &b.vhost, &b.name)));
    for policy in parameters.iter().filter_map(|p| p.as_operator_policy()) {
        out.policy(&policy, true);
    }
    let mut users: Vec<&User> = definitions.users.iter().collect();
    users.sort_by(|a, b| a.name.cmp(&b.name));
    for user in users {
        out.user(user, spec);
    }
    let mut permissions: Vec<&Permission> = definitions.permissions.iter().collect();
    permissions.sort_by(|a, b| (&a.vhost, &a.user).cmp(&(&b.vhost, &b.user)));
    for permission in permissions {
        out.permission(permission);
    }
    let mut topic_permissions: Vec<&TopicPermission> =
        definitions.topic_permissions.iter().collect();
    topic_permissions
        .sort_by(|a, b| (&a.vhost, &a.user, &a.exchange).cmp(&(&b.vhost, &b.user, &b.exchange)));
    for permission in topic_permissions {
        out.topic_permission(permission);
    }
    for runtime in [Runtime::Shovel, Runtime::Federation] {
        for parameter in parameters
            .iter()
            .filter(|p| Runtime::of(&p.component) == Some(runtime))
        {
            let written = spec
                .vhosts
                .get(&parameter.vhost)
                .and_then(|v| v.parameters.get(&parameter.component))
                .and_then(|c| c.get(&parameter.name));
            out.runtime(runtime, parameter, written);
        }
    }
    for parameter in parameters.iter().filter(|p| {
        Runtime::of(&p.component).is_none()
            && p.component != VHOST_LIMITS_COMPONENT
            && p.component != OPERATOR_POLICY_COMPONENT
    }) {
        out.refuse(
            format!(
                "parameter {:?} of component {:?} in vhost {:?}",
                parameter.name, parameter.component, parameter.vhost
            ),
            "the operator has resources for shovels and federation upstreams only, no other runtime parameter",
        );
    }
    for parameter in &definitions.global_parameters {
        out.refuse(
            format!("global parameter {:?}", parameter.name),
            "the operator has no resource for global runtime parameters",
        );
    }
    out.check_unique_names();
    if out.refusals.is_empty() {
        Ok(out.manifests)
    } else {
        Err(out.refusals)
    }
}

/// A binding's exact identity: every field, arguments included, as RabbitMQ tells
/// two bindings apart.
fn binding_identity(binding: &Binding) -> Value {
    json!([
        binding.vhost,
        binding.source,
        binding.destination_type,
        binding.destination,
        binding.routing_key,
        Value::Object(binding.arguments.clone().into_iter().collect()),
    ])
}

struct Builder<'a> {
    options: &'a Options,
    manifests: Manifests,
    refusals: Vec<Unexpressible>,
}

impl Builder<'_> {
    fn refuse(&mut self, object: String, reason: impl Into<String>) {
        self.refusals.push(Unexpressible {
            object,
            reason: reason.into(),
        });
    }

    /// Adds the resource `kind` named `name` with `spec` (the cluster reference added).
    fn push(&mut self, kind: &'static str, name: String, mut spec: Map<String, Value>) {
        spec.insert(
            "rabbitmqClusterReference".into(),
            json!({ "name": self.options.cluster }),
        );
        let mut metadata = Map::new();
        metadata.insert("name".into(), Value::from(name.clone()));
        if let Some(namespace) = &self.options.namespace {
            metadata.insert("namespace".into(), Value::from(namespace.clone()));
        }
        metadata.insert("labels".into(), json!({ MANAGED_BY.0: MANAGED_BY.1 }));
        self.manifests.resources.push(Resource {
            kind,
            name,
            document: json!({
                "apiVersion": API_VERSION,
                "kind": kind,
                "metadata": metadata,
                "spec": spec,
            }),
        });
    }

    /// Refuses an object carrying fields warren itself does not interpret: their
    /// meaning, and so their place in a resource, is unknown.
    fn refuse_extra(
        &mut self,
        object: &str,
        extra: &std::collections::BTreeMap<String, Value>,
    ) -> bool {
        if extra.is_empty() {
            return false;
        }
        let keys: Vec<&str> = extra.keys().map(String::as_str).collect();
        self.refuse(
            object.to_string(),
            format!(
                "fields warren cannot map to the operator's resource: {}",
                keys.join(", ")
            ),
        );
        true
    }

    fn vhost(&mut self, vhost: &Vhost, parameters: &[Parameter]) {
        let object = format!("vhost {:?}", vhost.name);
        if self.refuse_extra(&object, &vhost.extra) {
            return;
        }
        let mut spec = Map::new();
        spec.insert("name".into(), Value::from(vhost.name.clone()));
        let tags = vhost.tags.as_ref().map(|t| t.to_list()).unwrap_or_default();
        if !tags.is_empty() {
            spec.insert("tags".into(), Value::from(tags));
        }
        let default_queue_type = vhost.default_queue_type.clone().or_else(|| {
            vhost
                .metadata
                .as_ref()
                .and_then(|m| m.get("default_queue_type"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        if let Some(queue_type) = default_queue_type {
            if ["quorum", "classic", "stream"].contains(&queue_type.as_str()) {
                spec.insert("defaultQueueType".into(), Value::from(queue_type));
            } else {
                self.refuse(
                    object.clone(),
                    format!("the operator's Vhost takes defaultQueueType quorum, classic or stream, not {queue_type:?}"),
                );
            }
        }
        if let Some(description) = &vhost.description {
            self.manifests.notes.push(format!(
                "{object}: the operator's Vhost has no description, so the broker's vhost will not show {description:?}"
            ));
        }
        let limits = parameters
            .iter()
            .filter(|p| p.vhost == vhost.name && p.component == VHOST_LIMITS_COMPONENT);
        let mut fields = Map::new();
        for parameter in limits {
            let Some(entries) = parameter.value.as_object() else {
                continue;
            };
            for (key, value) in entries {
                let field = match key.as_str() {
                    "max-connections" => "connections",
                    "max-queues" => "queues",
                    _ => {
                        self.refuse(
                            object.clone(),
                            format!("the operator's Vhost limits have no `{key}` (only max-connections and max-queues)"),
                        );
                        continue;
                    }
                };
                match int32(value) {
                    Some(n) => {
                        fields.insert(field.into(), Value::from(n));
                    }
                    None => self.refuse(
                        object.clone(),
                        format!("limit `{key}` {value} does not fit the operator's 32-bit field"),
                    ),
                }
            }
        }
        if !fields.is_empty() {
            spec.insert("limits".into(), Value::Object(fields));
        }
        let name = metadata_name("vhost", &[&vhost.name], &json!([vhost.name]));
        self.push("Vhost", name, spec);
    }

    fn exchange(&mut self, exchange: &Exchange) {
        let object = format!("exchange {:?} in vhost {:?}", exchange.name, exchange.vhost);
        if self.refuse_extra(&object, &exchange.extra) {
            return;
        }
        if exchange.internal {
            self.refuse(
                object,
                "it is internal, and the operator's Exchange has no `internal` field (it would declare a public exchange clients can publish to)",
            );
            return;
        }
        let mut spec = Map::new();
        spec.insert("name".into(), Value::from(exchange.name.clone()));
        spec.insert("vhost".into(), Value::from(exchange.vhost.clone()));
        spec.insert("type".into(), Value::from(exchange.kind.clone()));
        spec.insert("durable".into(), Value::from(exchange.durable));
        spec.insert("autoDelete".into(), Value::from(exchange.auto_delete));
        if !exchange.arguments.is_empty() {
            spec.insert("arguments".into(), arguments(exchange.arguments.iter()));
        }
        let identity = json!([exchange.vhost, exchange.name]);
        let name = metadata_name("exchange", &[&exchange.vhost, &exchange.name], &identity);
        self.push("Exchange", name, spec);
    }

    fn queue(&mut self, queue: &Queue) {
        let object = format!("queue {:?} in vhost {:?}", queue.name, queue.vhost);
        if self.refuse_extra(&object, &queue.extra) {
            return;
        }
        let mut spec = Map::new();
        spec.insert("name".into(), Value::from(queue.name.clone()));
        spec.insert("vhost".into(), Value::from(queue.vhost.clone()));
        // The operator declares the queue with `type` as its `x-queue-type`.
        match queue.arguments.get("x-queue-type") {
            Some(Value::String(queue_type)) => {
                spec.insert("type".into(), Value::from(queue_type.clone()));
            }
            Some(other) => {
                self.refuse(
                    object,
                    format!(
                        "its x-queue-type {other} is not text, and the operator's Queue `type` is"
                    ),
                );
                return;
            }
            None => {}
        }
        spec.insert("durable".into(), Value::from(queue.durable));
        spec.insert("autoDelete".into(), Value::from(queue.auto_delete));
        let rest: Vec<_> = queue
            .arguments
            .iter()
            .filter(|(key, _)| *key != "x-queue-type")
            .collect();
        if !rest.is_empty() {
            spec.insert("arguments".into(), arguments(rest.into_iter()));
        }
        let identity = json!([queue.vhost, queue.name]);
        let name = metadata_name("queue", &[&queue.vhost, &queue.name], &identity);
        self.push("Queue", name, spec);
    }

    fn binding(&mut self, binding: &Binding, identity: Value) {
        let object = format!(
            "binding {:?} -> {} {:?} [{:?}] in vhost {:?}",
            binding.source,
            binding.destination_type,
            binding.destination,
            binding.routing_key,
            binding.vhost
        );
        if self.refuse_extra(&object, &binding.extra) {
            return;
        }
        if !["queue", "exchange"].contains(&binding.destination_type.as_str()) {
            self.refuse(
                object,
                format!(
                    "the operator's Binding takes destinationType queue or exchange, not {:?}",
                    binding.destination_type
                ),
            );
            return;
        }
        let mut spec = Map::new();
        spec.insert("vhost".into(), Value::from(binding.vhost.clone()));
        spec.insert("source".into(), Value::from(binding.source.clone()));
        spec.insert(
            "destination".into(),
            Value::from(binding.destination.clone()),
        );
        spec.insert(
            "destinationType".into(),
            Value::from(binding.destination_type.clone()),
        );
        spec.insert(
            "routingKey".into(),
            Value::from(binding.routing_key.clone()),
        );
        if !binding.arguments.is_empty() {
            spec.insert("arguments".into(), arguments(binding.arguments.iter()));
        }
        let name = metadata_name(
            "binding",
            &[&binding.vhost, &binding.source, &binding.destination],
            &identity,
        );
        self.push("Binding", name, spec);
    }

    fn policy(&mut self, policy: &Policy, operator: bool) {
        let (kind, kind_name, word, apply_to): (&'static str, &str, &str, &[&str]) = if operator {
            (
                "OperatorPolicy",
                "operatorpolicy",
                "operator policy",
                &["queues", "classic_queues", "quorum_queues", "streams"],
            )
        } else {
            (
                "Policy",
                "policy",
                "policy",
                &[
                    "queues",
                    "classic_queues",
                    "quorum_queues",
                    "streams",
                    "exchanges",
                    "all",
                ],
            )
        };
        let object = format!("{word} {:?} in vhost {:?}", policy.name, policy.vhost);
        if !apply_to.contains(&policy.apply_to.as_str()) {
            self.refuse(
                object,
                format!(
                    "the operator's {kind} takes applyTo {}, not {:?}",
                    apply_to.join(", "),
                    policy.apply_to
                ),
            );
            return;
        }
        let mut spec = Map::new();
        spec.insert("name".into(), Value::from(policy.name.clone()));
        spec.insert("vhost".into(), Value::from(policy.vhost.clone()));
        spec.insert("pattern".into(), Value::from(policy.pattern.clone()));
        spec.insert("applyTo".into(), Value::from(policy.apply_to.clone()));
        spec.insert("priority".into(), Value::from(policy.priority));
        spec.insert("definition".into(), arguments(policy.definition.iter()));
        let identity = json!([policy.vhost, policy.name]);
        let name = metadata_name(kind_name, &[&policy.vhost, &policy.name], &identity);
        self.push(kind, name, spec);
    }

    fn runtime(&mut self, runtime: Runtime, parameter: &Parameter, written: Option<&Value>) {
        let object = format!(
            "{} {:?} in vhost {:?}",
            parameter.component, parameter.name, parameter.vhost
        );
        let mut spec = match runtime.fields_of(&parameter.value, written) {
            Ok(fields) => fields,
            Err(lacks) => {
                for reason in lacks {
                    self.refuse(object.clone(), reason);
                }
                return;
            }
        };
        spec.insert("name".into(), Value::from(parameter.name.clone()));
        spec.insert("vhost".into(), Value::from(parameter.vhost.clone()));
        let kind_name = runtime.kind().to_ascii_lowercase();
        let identity = json!([parameter.vhost, parameter.name]);
        let name = metadata_name(&kind_name, &[&parameter.vhost, &parameter.name], &identity);
        let secret = format!("{name}-uri");
        spec.insert("uriSecret".into(), json!({ "name": secret }));
        self.manifests.secrets.push(SecretNeeded {
            name: secret,
            keys: runtime
                .secret_keys()
                .iter()
                .map(|(from, key)| {
                    (
                        (*key).to_string(),
                        format!("the `{from}` of the spec (several URIs comma-separated)"),
                    )
                })
                .collect(),
            object,
        });
        self.push(runtime.kind(), name, spec);
    }

    /// Two objects of one kind with one `metadata.name` would be one resource on the
    /// cluster: refused, however unlikely (it takes a shared 40-bit hash).
    fn check_unique_names(&mut self) {
        let mut seen = BTreeSet::new();
        let mut clashes = Vec::new();
        for resource in &self.manifests.resources {
            if !seen.insert((resource.kind, resource.name.as_str())) {
                clashes.push(format!("{} {}", resource.kind, resource.name));
            }
        }
        for clash in clashes {
            self.refuse(
                clash,
                "two objects got this metadata.name; rename one of them",
            );
        }
    }
}

/// A map of arguments or a policy definition as a JSON object.
fn arguments<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>) -> Value {
    Value::Object(entries.map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// A limit as the operator's `int32` fields hold it.
fn int32(value: &Value) -> Option<i32> {
    value.as_i64().and_then(|n| i32::try_from(n).ok())
}
