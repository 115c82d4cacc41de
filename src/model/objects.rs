//! Definitions as a map from object identity to a normalised value: the form both
//! desired and live state take before they are compared, and its inverse
//! ([`definition_entry`]), which turns one object back into a definitions entry.
//!
//! Normalisation removes what the broker adds or reorders without meaning anything:
//! key order, whole numbers written as floats, tags as a comma string, an implicit
//! `x-queue-type`, the binding's `properties_key`, vhost metadata nested or not, a
//! stream's `x-max-age` spelt in another unit (`24h` for `1D`).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::record::Record;
use super::{
    Definitions, HashingAlgorithm, OPERATOR_POLICY_COMPONENT, ObjectId, ObjectKind,
    VHOST_LIMITS_COMPONENT, VHOST_LIMITS_NAME, binding_id,
};

/// Every object of a definitions document, by identity.
pub type Objects = BTreeMap<ObjectId, Value>;

/// Whole numbers written as floats (`60000.0`) become integers, recursively; maps are
/// sorted by key (serde_json keeps insertion order, so they are rebuilt).
pub fn normalize_value(value: &Value) -> Value {
    match value {
        Value::Number(number) => match number.as_f64() {
            Some(f) if number.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(normalize_value).collect()),
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, normalize_value(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        other => other.clone(),
    }
}

fn tags_value(tags: Vec<String>) -> Value {
    let mut tags = tags;
    tags.sort();
    tags.dedup();
    json!(tags)
}

/// A policy's (or operator policy's) value: what is compared, without its vhost and name.
fn policy_value(policy: &super::Policy) -> Value {
    json!({
        "pattern": policy.pattern,
        "apply-to": policy.apply_to,
        "definition": policy.definition,
        "priority": policy.priority,
    })
}

/// The identity of a binding with its arguments normalised, so that a broker's
/// spelling of them (`5.0`, reordered keys) names the same binding as the spec's.
pub fn normalized_binding_id(binding: &super::Binding) -> ObjectId {
    let mut normalized = binding.clone();
    normalized.arguments = normalize_value(&json!(binding.arguments))
        .as_object()
        .map(|m| m.clone().into_iter().collect())
        .unwrap_or_default();
    binding_id(&normalized)
}

fn vhost_id(vhost: &super::Vhost) -> ObjectId {
    ObjectId::global(ObjectKind::Vhost, &vhost.name)
}

fn user_id(user: &super::User) -> ObjectId {
    ObjectId::global(ObjectKind::User, &user.name)
}

fn permission_id(permission: &super::Permission) -> ObjectId {
    ObjectId::in_vhost(ObjectKind::Permission, &permission.vhost, &permission.user)
}

fn topic_permission_id(permission: &super::TopicPermission) -> ObjectId {
    ObjectId::in_vhost(
        ObjectKind::TopicPermission,
        &permission.vhost,
        format!("{} on {}", permission.user, permission.exchange),
    )
}

/// A runtime parameter's identity; `None` for a policy written as a parameter (it is
/// read from the `policies` section).
fn parameter_id(parameter: &super::Parameter) -> Option<ObjectId> {
    let (kind, name) = match parameter.component.as_str() {
        VHOST_LIMITS_COMPONENT => (ObjectKind::VhostLimits, VHOST_LIMITS_NAME.to_string()),
        OPERATOR_POLICY_COMPONENT => (ObjectKind::OperatorPolicy, parameter.name.clone()),
        "policy" => return None,
        component => (
            ObjectKind::Parameter,
            format!("{component}/{}", parameter.name),
        ),
    };
    Some(ObjectId::in_vhost(kind, &parameter.vhost, name))
}

fn global_parameter_id(parameter: &super::GlobalParameter) -> ObjectId {
    ObjectId::global(ObjectKind::GlobalParameter, &parameter.name)
}

fn policy_id(policy: &super::Policy) -> ObjectId {
    ObjectId::in_vhost(ObjectKind::Policy, &policy.vhost, &policy.name)
}

fn queue_id(queue: &super::Queue) -> ObjectId {
    ObjectId::in_vhost(ObjectKind::Queue, &queue.vhost, &queue.name)
}

fn exchange_id(exchange: &super::Exchange) -> ObjectId {
    ObjectId::in_vhost(ObjectKind::Exchange, &exchange.vhost, &exchange.name)
}

/// Keeps only the entries of `definitions` whose identity (as [`objects`] names it)
/// `keep` accepts; returns the identities removed.
pub fn retain(definitions: &mut Definitions, keep: impl Fn(&ObjectId) -> bool) -> Vec<ObjectId> {
    let mut removed = Vec::new();
    let mut keep = |id: ObjectId| {
        let kept = keep(&id);
        if !kept {
            removed.push(id);
        }
        kept
    };
    definitions.vhosts.retain(|v| keep(vhost_id(v)));
    definitions.users.retain(|u| keep(user_id(u)));
    definitions.permissions.retain(|p| keep(permission_id(p)));
    definitions
        .topic_permissions
        .retain(|p| keep(topic_permission_id(p)));
    definitions
        .parameters
        .retain(|p| parameter_id(p).is_none_or(&mut keep));
    definitions
        .global_parameters
        .retain(|p| Record::is_record_name(&p.name) || keep(global_parameter_id(p)));
    definitions.policies.retain(|p| keep(policy_id(p)));
    definitions.queues.retain(|q| keep(queue_id(q)));
    definitions.exchanges.retain(|e| keep(exchange_id(e)));
    definitions
        .bindings
        .retain(|b| keep(normalized_binding_id(b)));
    removed
}

/// Enumerates the objects of `definitions`, normalised.
#[expect(
    clippy::too_many_lines,
    reason = "one arm per section of a definitions file, in dependency order"
)]
pub fn objects(definitions: &Definitions) -> Objects {
    let mut objects = Objects::new();
    for vhost in &definitions.vhosts {
        let metadata = vhost.metadata.clone().unwrap_or_default();
        let description = vhost.description.clone().or_else(|| {
            metadata
                .get("description")
                .and_then(|d| d.as_str())
                .map(str::to_string)
        });
        let tags = vhost.tags.as_ref().map(|t| t.to_list()).or_else(|| {
            metadata.get("tags").and_then(|t| {
                serde_json::from_value::<super::Tags>(t.clone())
                    .ok()
                    .map(|t| t.to_list())
            })
        });
        let default_queue_type = vhost
            .default_queue_type
            .clone()
            .or_else(|| {
                metadata
                    .get("default_queue_type")
                    .and_then(|d| d.as_str())
                    .map(str::to_string)
            })
            .filter(|t| t != "undefined");
        // Only the fields a side sets: a spec that leaves one out does not manage it.
        let mut value = Map::new();
        if let Some(description) = description {
            value.insert("description".into(), json!(description));
        }
        if let Some(tags) = tags {
            value.insert("tags".into(), tags_value(tags));
        }
        if let Some(default_queue_type) = default_queue_type {
            value.insert("default_queue_type".into(), json!(default_queue_type));
        }
        objects.insert(vhost_id(vhost), Value::Object(value));
    }
    for user in &definitions.users {
        objects.insert(
            user_id(user),
            normalize_value(&json!({
                "password_hash": user.password_hash,
                "hashing_algorithm": user
                    .hashing_algorithm
                    .clone()
                    .unwrap_or_else(|| HashingAlgorithm::Sha256.module().into()),
                "tags": tags_value(user.tags.to_list()),
                "limits": user.limits,
            })),
        );
    }
    for permission in &definitions.permissions {
        objects.insert(
            permission_id(permission),
            json!({
                "user": permission.user,
                "configure": permission.configure,
                "write": permission.write,
                "read": permission.read,
            }),
        );
    }
    for permission in &definitions.topic_permissions {
        objects.insert(
            topic_permission_id(permission),
            json!({
                "user": permission.user,
                "exchange": permission.exchange,
                "write": permission.write,
                "read": permission.read,
            }),
        );
    }
    for parameter in &definitions.parameters {
        if parameter.is_broker_internal() {
            continue; // the broker's own bookkeeping, as transient queues are
        }
        let Some(parameter_id) = parameter_id(parameter) else {
            continue;
        };
        let value = match parameter.as_operator_policy() {
            Some(policy) => policy_value(&policy),
            None => parameter.value.clone(),
        };
        objects.insert(parameter_id, normalize_value(&value));
    }
    for parameter in &definitions.global_parameters {
        if Record::is_record_name(&parameter.name) {
            continue; // ownership records are not objects of any spec
        }
        objects.insert(
            global_parameter_id(parameter),
            normalize_value(&parameter.value),
        );
    }
    for policy in &definitions.policies {
        objects.insert(policy_id(policy), normalize_value(&policy_value(policy)));
    }
    // Queues of running applications' connections belong to no spec (as a broker's
    // export would hold them, or a live read); nor do bindings to them.
    let mut transient = std::collections::BTreeSet::new();
    for queue in &definitions.queues {
        if queue.is_transient() {
            transient.insert((queue.vhost.as_str(), queue.name.as_str()));
            continue;
        }
        let mut arguments = queue.arguments.clone();
        let queue_type = arguments
            .get("x-queue-type")
            .cloned()
            .or_else(|| queue.extra.get("type").cloned())
            .unwrap_or(json!("classic"));
        arguments.insert("x-queue-type".into(), queue_type);
        if let Some(age) = arguments
            .get("x-max-age")
            .and_then(Value::as_str)
            .and_then(super::queue_arguments::canonical_age)
        {
            arguments.insert("x-max-age".into(), json!(age));
        }
        objects.insert(
            queue_id(queue),
            normalize_value(&json!({
                "durable": queue.durable,
                "auto_delete": queue.auto_delete,
                "arguments": arguments,
            })),
        );
    }
    for exchange in &definitions.exchanges {
        objects.insert(
            exchange_id(exchange),
            normalize_value(&json!({
                "type": exchange.kind,
                "durable": exchange.durable,
                "auto_delete": exchange.auto_delete,
                "internal": exchange.internal,
                "arguments": exchange.arguments,
            })),
        );
    }
    for binding in &definitions.bindings {
        if binding.destination_type == "queue"
            && transient.contains(&(binding.vhost.as_str(), binding.destination.as_str()))
        {
            continue;
        }
        objects.insert(
            normalized_binding_id(binding),
            json!({
                "source": binding.source,
                "destination": binding.destination,
                "destination_type": binding.destination_type,
                "routing_key": binding.routing_key,
                "arguments": normalize_value(&json!(binding.arguments)),
            }),
        );
    }
    // warren's lock vhost and what is in it belong to no spec.
    objects.retain(|id, _| !is_own_object(id));
    objects
}

/// Whether an object is warren's own: its lock vhost or anything inside it.
pub fn is_own_object(id: &ObjectId) -> bool {
    match (&id.vhost, id.kind) {
        (Some(vhost), _) => super::is_own_vhost(vhost),
        (None, ObjectKind::Vhost) => super::is_own_vhost(&id.name),
        (None, _) => false,
    }
}

/// The sections of a definitions document, dependencies first: an entry never needs
/// one of a later section.
pub const SECTIONS: [&str; 10] = [
    "global_parameters",
    "users",
    "vhosts",
    "permissions",
    "topic_permissions",
    "parameters",
    "policies",
    "exchanges",
    "queues",
    "bindings",
];

/// The definitions-format entry of an object, and the section it goes in.
pub fn definition_entry(id: &ObjectId, value: &Value) -> (&'static str, Value) {
    let vhost = id.vhost.clone().unwrap_or_default();
    if id.kind == ObjectKind::GlobalParameter {
        return (
            "global_parameters",
            json!({"name": id.name, "value": value}),
        );
    }
    if id.kind == ObjectKind::Parameter {
        let (component, name) = id.name.split_once('/').unwrap_or(("", &id.name));
        return (
            "parameters",
            json!({"vhost": vhost, "component": component, "name": name, "value": value}),
        );
    }
    let mut entry = value.clone();
    let object = entry.as_object_mut().expect("objects are JSON objects");
    match id.kind {
        ObjectKind::Vhost => {
            // Some versions read the import's metadata map, others the top-level fields.
            let metadata = Value::Object(object.clone());
            object.insert("name".into(), json!(id.name));
            object.insert("metadata".into(), metadata);
            ("vhosts", entry)
        }
        ObjectKind::User => {
            object.insert("name".into(), json!(id.name));
            ("users", entry)
        }
        ObjectKind::Permission => {
            object.insert("vhost".into(), json!(vhost));
            ("permissions", entry)
        }
        ObjectKind::TopicPermission => {
            object.insert("vhost".into(), json!(vhost));
            ("topic_permissions", entry)
        }
        ObjectKind::VhostLimits => (
            "parameters",
            json!({"vhost": vhost, "component": VHOST_LIMITS_COMPONENT, "name": VHOST_LIMITS_NAME, "value": value}),
        ),
        ObjectKind::OperatorPolicy => (
            "parameters",
            json!({"vhost": vhost, "component": OPERATOR_POLICY_COMPONENT, "name": id.name, "value": value}),
        ),
        ObjectKind::Policy => {
            object.insert("vhost".into(), json!(vhost));
            object.insert("name".into(), json!(id.name));
            ("policies", entry)
        }
        ObjectKind::Queue => {
            object.insert("vhost".into(), json!(vhost));
            object.insert("name".into(), json!(id.name));
            ("queues", entry)
        }
        ObjectKind::Exchange => {
            object.insert("vhost".into(), json!(vhost));
            object.insert("name".into(), json!(id.name));
            ("exchanges", entry)
        }
        ObjectKind::Binding => {
            object.insert("vhost".into(), json!(vhost));
            ("bindings", entry)
        }
        ObjectKind::GlobalParameter | ObjectKind::Parameter => unreachable!("handled above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_exchange_deletion_marker_is_no_object() {
        // RabbitMQ 4.0 leaves one when a client dies while it deletes an exchange.
        let live: Definitions = serde_json::from_value(json!({
            "parameters": [{"vhost": "v", "component": "exchange-delete-in-progress",
                            "name": "svc.c0.retry", "value": true}],
        }))
        .unwrap();
        assert!(objects(&live).is_empty());
    }

    #[test]
    fn floats_that_are_whole_become_integers_and_maps_sort() {
        let value = normalize_value(&json!({"b": 60000.0, "a": [1.5, 2.0]}));
        assert_eq!(value.to_string(), r#"{"a":[1.5,2],"b":60000}"#);
    }

    #[test]
    fn broker_and_spec_spellings_of_the_same_objects_compare_equal() {
        let spec: Definitions = serde_json::from_value(json!({
            "vhosts": [{"name": "v", "description": "d", "tags": ["b", "a"]}],
            "queues": [{"name": "q", "vhost": "v", "durable": true, "auto_delete": false,
                        "arguments": {"x-queue-type": "classic", "x-message-ttl": 1000}}],
            "users": [{"name": "u", "password_hash": "h", "tags": ["m"]}],
            "bindings": [{"source": "x", "vhost": "v", "destination": "q", "destination_type": "queue",
                          "routing_key": "k", "arguments": {}}],
        }))
        .unwrap();
        let broker: Definitions = serde_json::from_value(json!({
            "vhosts": [{"name": "v", "metadata": {"description": "d", "tags": ["a", "b"]}, "tags": "a,b", "description": "d"}],
            "queues": [{"name": "q", "vhost": "v", "durable": true, "auto_delete": false, "type": "classic",
                        "arguments": {"x-message-ttl": 1000.0}}],
            "users": [{"name": "u", "password_hash": "h", "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": "m", "limits": {}}],
            "bindings": [{"source": "x", "vhost": "v", "destination": "q", "destination_type": "queue",
                          "routing_key": "k", "arguments": {}, "properties_key": "k"}],
        }))
        .unwrap();
        assert_eq!(objects(&spec), objects(&broker));
    }
}
