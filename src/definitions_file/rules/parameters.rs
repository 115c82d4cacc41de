//! Runtime parameters: their component, operator policies, vhost limits.

use serde_json::Value;

use crate::model::{OPERATOR_POLICY_COMPONENT, VHOST_LIMITS_COMPONENT};

use super::policies::check_policy_keys;
use super::{Check, Found, Level, Rule, is_regex, name_of, objects, parameters, shown};

pub(super) const OPERATOR_POLICY: Rule = Rule {
    id: "operator-policy",
    summary: "an operator policy has a `pattern`, a `definition` and a `priority`, and sets only keys operator policies may set on the version",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(operator_policy),
};

pub(super) const PARAMETER_COMPONENT: Rule = Rule {
    id: "parameter-component",
    summary: "a runtime parameter's component is one the broker registers (`vhost-limits`, `operator_policy`, federation's and shovel's); never `policy`",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(parameter_component),
};

pub(super) const VHOST_LIMITS: Rule = Rule {
    id: "vhost-limits",
    summary: "vhost limits are only `max-connections` and `max-queues`, each a whole number",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(vhost_limits),
};

fn operator_policy(document: &Value, found: &mut Found) {
    for (path, parameter) in parameters(document, OPERATOR_POLICY_COMPONENT) {
        let name = name_of(parameter);
        let value_path = path.then("value");
        let Some(Value::Object(value)) = parameter.get("value") else {
            found.push(
                value_path,
                "operator-policy",
                format!("operator policy `{name}`: its `value` is not an object with `pattern`, `definition` and `priority`"),
            );
            continue;
        };
        for key in ["pattern", "definition", "priority"] {
            if !value.contains_key(key) {
                found.push(
                    value_path.clone(),
                    "operator-policy",
                    format!("operator policy `{name}`: `{key}` is missing (an operator policy needs `pattern`, `definition` and `priority`)"),
                );
            }
        }
        if let Some(pattern) = value.get("pattern")
            && let Err(what) = is_regex(pattern, found.target)
        {
            found.push(
                value_path.then("pattern"),
                "operator-policy",
                format!("operator policy `{name}`: {what}"),
            );
        }
        check_policy_keys(&value_path, &name, value.get("definition"), true, found);
    }
}

/// The components the broker registers: its own, and federation's and shovel's (which
/// it accepts only while their plugins run; warren cannot know, and reads them).
const COMPONENTS: [&str; 5] = [
    VHOST_LIMITS_COMPONENT,
    OPERATOR_POLICY_COMPONENT,
    "federation-upstream",
    "federation-upstream-set",
    "shovel",
];

fn parameter_component(document: &Value, found: &mut Found) {
    for (path, parameter) in objects(document, "parameters") {
        let component = parameter.get("component");
        let message = match component.and_then(Value::as_str) {
            Some(known) if COMPONENTS.contains(&known) => continue,
            Some("policy") => "a policy written as a runtime parameter (component `policy`): RabbitMQ refuses it; move it to `policies`".to_string(),
            Some(other) => {
                let known: Vec<String> = COMPONENTS.map(String::from).into();
                let hint = crate::suggest::closest(other, &known)
                    .map_or(String::new(), |best| format!("; did you mean `{best}`?"));
                format!("the runtime parameter component `{other}` is not one RabbitMQ registers (it knows {}){hint}", COMPONENTS.join(", "))
            }
            None => format!(
                "a runtime parameter's `component` is {}, not a component name",
                component.map_or("missing".to_string(), shown)
            ),
        };
        found.push(path.then("component"), "parameter-component", message);
    }
}

fn vhost_limits(document: &Value, found: &mut Found) {
    for (path, parameter) in parameters(document, VHOST_LIMITS_COMPONENT) {
        let vhost = parameter
            .get("vhost")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let Some(Value::Object(limits)) = parameter.get("value") else {
            found.push(
                path.then("value"),
                "vhost-limits",
                format!("the limits of vhost `{vhost}` are not an object such as {{\"max-queues\": 100}}"),
            );
            continue;
        };
        for (name, value) in limits {
            let path = path.then("value").then(name.as_str());
            if name != "max-connections" && name != "max-queues" {
                found.push(
                    path,
                    "vhost-limits",
                    format!("`{name}` is not a vhost limit; RabbitMQ knows `max-connections` and `max-queues`"),
                );
            } else if value.as_i64().is_none() {
                found.push(
                    path,
                    "vhost-limits",
                    format!(
                        "the limit `{name}` of vhost `{vhost}` is {}, not a whole number",
                        shown(value)
                    ),
                );
            }
        }
    }
}
