//! The escape hatch: plain exchanges, queues, bindings and policies written as they are.

use serde_json::Value;

use super::{Emitter, queue_arguments};
use crate::model::{
    Arguments, Binding, Exchange, ObjectId, ObjectKind, Parameter, Policy, Queue,
    is_own_kind_component, policy_keys, queue_arguments,
};
use crate::spec::{ApplyTo, DestinationType, PlainPolicy, QueueType, Spec, SpecPath};

/// Emits the escape-hatch objects of every vhost.
#[expect(
    clippy::too_many_lines,
    reason = "one block per kind of plain object, in the order they are emitted"
)]
pub(crate) fn emit_all(spec: &Spec, out: &mut Emitter) {
    for (vhost_name, vhost) in &spec.vhosts {
        let vhost_path = SpecPath::root().key("vhosts").key(vhost_name);
        let default_type = vhost
            .defaults
            .queue_type
            .or(spec.defaults.queue_type)
            .unwrap_or(QueueType::Quorum);
        for (name, exchange) in &vhost.exchanges {
            let path = vhost_path.key("exchanges").key(name);
            let builtin: Vec<String> = ["direct", "fanout", "topic", "headers"]
                .map(String::from)
                .into();
            if !builtin.contains(&exchange.kind) && !exchange.kind.starts_with("x-") {
                let diagnostic = out.error(
                    "invalid-value",
                    format!("unknown exchange type `{}`", exchange.kind),
                    path.key("type"),
                );
                match crate::suggest::closest(&exchange.kind, &builtin) {
                    Some(best) => diagnostic.hint(format!("did you mean `{best}`?")),
                    None => diagnostic.hint(
                        "use direct, fanout, topic or headers (plugin types start with `x-`)",
                    ),
                };
            }
            for (index, publisher) in exchange.publishers.iter().enumerate() {
                out.publishers.push(super::permissions::PublisherUse {
                    vhost: vhost_name.clone(),
                    exchange: name.clone(),
                    exchange_type: exchange.kind.clone(),
                    user: publisher.user().to_string(),
                    routing_keys: publisher.routing_keys().map(<[String]>::to_vec),
                    path: path.key("publishers").index(index),
                });
            }
            let mut arguments: Arguments = exchange.arguments.clone().into_iter().collect();
            if let Some(alternate) = &exchange.alternate_exchange {
                arguments.insert("alternate-exchange".into(), Value::from(alternate.clone()));
            }
            out.exchange(
                Exchange {
                    name: name.clone(),
                    vhost: vhost_name.clone(),
                    kind: exchange.kind.clone(),
                    durable: exchange.durable.unwrap_or(true),
                    auto_delete: exchange.auto_delete.unwrap_or(false),
                    internal: exchange.internal.unwrap_or(false),
                    arguments,
                    extra: Default::default(),
                },
                &path,
            );
        }
        for (name, queue) in &vhost.queues {
            let path = vhost_path.key("queues").key(name);
            let queue_type = queue.kind.unwrap_or(default_type);
            let durable = queue.durable.unwrap_or(true);
            let auto_delete = queue.auto_delete.unwrap_or(false);
            if queue_type != QueueType::Classic && (!durable || auto_delete) {
                out.error(
                    "invalid-value",
                    format!(
                        "{} queues must be durable and cannot be auto-delete",
                        queue_type.as_str()
                    ),
                    path.key(if durable { "auto_delete" } else { "durable" }),
                )
                .hint("remove the setting, or use `type: classic`");
            }
            let mut arguments = queue_arguments(queue_type);
            for (key, value) in &queue.arguments {
                check_queue_argument(out, key, value, queue_type, &path.key("arguments").key(key));
                if key != "x-queue-type" {
                    arguments.insert(key.clone(), value.clone());
                }
            }
            out.queue(
                Queue {
                    name: name.clone(),
                    vhost: vhost_name.clone(),
                    durable,
                    auto_delete,
                    arguments,
                    extra: Default::default(),
                },
                queue_type,
                Vec::new(),
                &path,
            );
        }
        for (index, binding) in vhost.bindings.iter().enumerate() {
            let path = vhost_path.key("bindings").index(index);
            out.binding(
                Binding {
                    source: binding.source.clone(),
                    vhost: vhost_name.clone(),
                    destination: binding.destination.clone(),
                    destination_type: match binding
                        .destination_type
                        .unwrap_or(DestinationType::Queue)
                    {
                        DestinationType::Queue => "queue".into(),
                        DestinationType::Exchange => "exchange".into(),
                    },
                    routing_key: binding.routing_key.clone().unwrap_or_default(),
                    arguments: binding.arguments.clone().into_iter().collect(),
                    extra: Default::default(),
                },
                &path,
            );
        }
        for (name, policy) in &vhost.policies {
            let path = vhost_path.key("policies").key(name);
            if let Some(policy) = checked_policy(out, vhost_name, name, policy, false, &path) {
                let id = ObjectId::in_vhost(ObjectKind::Policy, vhost_name, name);
                if out.claim(id, &path) {
                    out.definitions.policies.push(policy);
                }
            }
        }
        for (component, parameters) in &vhost.parameters {
            if is_own_kind_component(component) {
                out.error(
                    "invalid-value",
                    format!("component `{component}` is written with its own key"),
                    vhost_path.key("parameters").key(component),
                )
                .hint("use `limits`, `operator_policies` or `policies`");
                continue;
            }
            for (name, value) in parameters {
                let path = vhost_path.key("parameters").key(component).key(name);
                let value = resolve_env_values(out, value);
                let id = ObjectId::in_vhost(
                    ObjectKind::Parameter,
                    vhost_name,
                    format!("{component}/{name}"),
                );
                if out.claim(id, &path) {
                    out.definitions.parameters.push(Parameter {
                        vhost: vhost_name.clone(),
                        component: component.clone(),
                        name: name.clone(),
                        value,
                    });
                }
            }
        }
        for (name, policy) in &vhost.operator_policies {
            let path = vhost_path.key("operator_policies").key(name);
            if let Some(policy) = checked_policy(out, vhost_name, name, policy, true, &path) {
                let id = ObjectId::in_vhost(ObjectKind::OperatorPolicy, vhost_name, name);
                if out.claim(id, &path) {
                    out.definitions
                        .parameters
                        .push(Parameter::operator_policy(&policy));
                }
            }
        }
    }
}

/// Replaces every `{ env: VARIABLE }` inside a parameter value by the variable's
/// content, as read by [`super::secrets::read`] (an empty string without secrets, or
/// when the variable is unset: that is among the secrets' problems).
fn resolve_env_values(out: &Emitter, value: &Value) -> Value {
    if let Some(variable) = super::secrets::env_reference(value) {
        let found = out
            .options
            .secrets
            .as_ref()
            .and_then(|secrets| secrets.variables.get(variable));
        return Value::from(found.cloned().unwrap_or_default());
    }
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), resolve_env_values(out, v)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| resolve_env_values(out, v)).collect())
        }
        other => other.clone(),
    }
}

fn check_queue_argument(
    out: &mut Emitter,
    key: &str,
    value: &Value,
    queue_type: QueueType,
    path: &SpecPath,
) {
    if key == "x-queue-type" {
        out.error(
            "invalid-value",
            "the queue type is set with `type:`, not as an argument",
            path.clone(),
        )
        .hint(format!(
            "write `type: {}` on the queue",
            value.as_str().unwrap_or("quorum")
        ));
        return;
    }
    if let Some(known) = queue_arguments::find(key) {
        let target = out.options.target;
        if !known.accepted_by(queue_type, target) {
            out.error(
                "invalid-value",
                format!(
                    "{} queues do not accept the argument `{key}` on RabbitMQ {target}",
                    queue_type.as_str()
                ),
                path.clone(),
            )
            .hint("the broker refuses to declare the queue (406 PRECONDITION_FAILED): remove the argument or change the queue type");
        }
        if let Some(refusal) = known.refusal_on(value, target) {
            out.error("invalid-value", refusal, path.clone());
        }
        if let Err(expected) = known.check_value(value) {
            let diagnostic = out.error(
                "invalid-value",
                format!("`{key}` takes {expected}, got {value}"),
                path.clone(),
            );
            if value.is_string() && expected.contains("number") {
                diagnostic.hint("write the number without quotes, in the unit the broker uses (milliseconds for TTLs)");
            }
        }
    } else if key.starts_with("x-")
        && let Some(best) = crate::suggest::closest(key, &queue_arguments::names())
    {
        out.warn(
            "unknown-argument",
            format!("unknown queue argument `{key}`: the broker stores it and ignores it"),
            path.clone(),
        )
        .hint(format!("did you mean `{best}`?"));
    }
}

/// Validates a policy written in the spec and turns it into the output shape.
fn checked_policy(
    out: &mut Emitter,
    vhost: &str,
    name: &str,
    policy: &PlainPolicy,
    operator: bool,
    path: &SpecPath,
) -> Option<Policy> {
    let target = out.options.target;
    let mut ok = true;
    if name.is_empty() {
        out.error("invalid-name", "policy name is empty", path.clone());
        ok = false;
    }
    if let Err(err) = fancy_regex::Regex::new(&policy.pattern) {
        out.error(
            "invalid-regex",
            format!(
                "pattern `{}` is not a valid regular expression: {err}",
                policy.pattern
            ),
            path.key("pattern"),
        );
        ok = false;
    }
    if let Some(limit) = target.pattern_byte_limit()
        && policy.pattern.len() > limit
    {
        out.error(
            "unsupported-by-target",
            format!(
                "pattern is {} bytes; the target {target} allows {limit} (RabbitMQ 4.3 refuses a longer one)",
                policy.pattern.len()
            ),
            path.key("pattern"),
        )
        .hint("match the queues by a prefix or an ending they share, split the policy in two, or compile for an older `--target-version`");
        ok = false;
    }
    let apply_to = policy.apply_to.unwrap_or(ApplyTo::Queues);
    let typed = matches!(
        apply_to,
        ApplyTo::ClassicQueues | ApplyTo::QuorumQueues | ApplyTo::Streams
    );
    if typed && !target.has_queue_type_apply_to() {
        out.error(
            "unsupported-by-target",
            format!(
                "`apply_to: {}` needs RabbitMQ 3.12 or later; the target is {target}",
                apply_to.as_str()
            ),
            path.key("apply_to"),
        )
        .hint("use `apply_to: queues`, or compile with a newer `--target-version`");
        ok = false;
    }
    if policy.definition.is_empty() {
        out.error(
            "invalid-value",
            "policy definition is empty",
            path.key("definition"),
        );
        ok = false;
    }
    for (key, value) in &policy.definition {
        let key_path = path.key("definition").key(key);
        match policy_keys::find(key) {
            None => {
                let help = match crate::suggest::closest(key, &policy_keys::names()) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => "see the policy keys in RabbitMQ's policy guide".to_string(),
                };
                out.error(
                    "invalid-policy-key",
                    format!("`{key}` is not a policy key RabbitMQ recognises"),
                    key_path,
                )
                .hint(help);
                ok = false;
            }
            Some(known) => {
                if let Err(expected) = known.check_value_on(value, target) {
                    let diagnostic = out.error(
                        "invalid-value",
                        format!("policy key `{key}` takes {expected}, got {value}"),
                        key_path.clone(),
                    );
                    if value.is_string() && expected.contains("number") {
                        diagnostic.hint("write the number without quotes (milliseconds for TTLs)");
                    }
                    ok = false;
                }
                if operator && !known.operator_on(target) {
                    out.error(
                        "invalid-policy-key",
                        format!("`{key}` cannot be set by an operator policy"),
                        key_path.clone(),
                    )
                    .hint("operator policies accept expires, message-ttl, max-length, max-length-bytes, overflow, delivery-limit, queue-version, target-group-size and the quorum in-memory limits");
                    ok = false;
                }
                if !known.known_on(target) {
                    let diagnostic = out.error(
                        "unsupported-by-target",
                        format!("RabbitMQ {target} does not know the policy key `{key}`"),
                        key_path,
                    );
                    if known.name.starts_with("ha-") {
                        diagnostic.hint("`ha-*` keys configured classic queue mirroring, which RabbitMQ 4.0 removed: use quorum queues for replicated queues");
                    } else if known.name == "queue-master-locator" {
                        diagnostic.hint("RabbitMQ 4.3 denies the deprecated feature `queue_master_locator` by default: use `queue-leader-locator` (`client-local`, or `balanced` for `min-masters`)");
                    } else {
                        diagnostic
                            .hint("compile for a newer `--target-version`, or remove the key");
                    }
                    ok = false;
                }
            }
        }
    }
    ok.then(|| Policy {
        vhost: vhost.to_string(),
        name: name.to_string(),
        pattern: policy.pattern.clone(),
        apply_to: apply_to.as_str().to_string(),
        definition: policy.definition.clone().into_iter().collect(),
        priority: policy.priority.unwrap_or(0),
    })
}
