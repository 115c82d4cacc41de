//! Policies: their shape and the keys of their definition, for the version checked.

use serde_json::Value;

use crate::model::policy_keys;

use super::{Check, Found, JsonPointer, Level, Rule, is_regex, kind_of, name_of, objects, shown};

pub(super) const POLICY_SHAPE: Rule = Rule {
    id: "policy",
    summary: "a policy has a `pattern` that is a regular expression no longer than the version accepts, a numeric `priority`, an `apply-to` the version knows and a non-empty `definition`",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(policy_shape),
};

pub(super) const POLICY_KEYS_KNOWN: Rule = Rule {
    id: "policy-key",
    summary: "every key of a policy's definition is one the version knows, with a value of its type",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(policy_keys_known),
};

/// A policy's checks shared by user and operator policies: the pattern and the
/// definition's keys. `operator` restricts the keys.
pub(super) fn check_policy_keys(
    path: &JsonPointer,
    name: &str,
    definition: Option<&Value>,
    operator: bool,
    found: &mut Found,
) {
    let Some(Value::Object(definition)) = definition else {
        return;
    };
    let target = found.target;
    for (key, value) in definition {
        let path = path.then("definition").then(key.as_str());
        let problem = match policy_keys::find(key) {
            None => Some(match crate::suggest::closest(key, &policy_keys::names()) {
                Some(best) => format!(
                    "`{key}` is not a policy key RabbitMQ recognises; did you mean `{best}`?"
                ),
                None => format!("`{key}` is not a policy key RabbitMQ recognises"),
            }),
            Some(known) if !known.known_on(target) => Some(format!(
                "RabbitMQ {target} does not know the policy key `{key}`"
            )),
            Some(known) if operator && !known.operator_on(target) => Some(format!(
                "an operator policy cannot set `{key}` on RabbitMQ {target}"
            )),
            Some(known) => known
                .check_value_on(value, target)
                .err()
                .map(|expected| format!("`{key}` is {}, and it takes {expected}", shown(value))),
        };
        if let Some(problem) = problem {
            found.push(path, "policy-key", format!("policy `{name}`: {problem}"));
        }
    }
}

fn policy_shape(document: &Value, found: &mut Found) {
    let target = found.target;
    for (path, policy) in objects(document, "policies") {
        let name = name_of(policy);
        let mut problem = |field: &'static str, what: String| {
            found.push(
                path.then(field),
                "policy",
                format!("policy `{name}`: {what}"),
            );
        };
        match policy.get("pattern") {
            None => problem("pattern", "`pattern` is missing".to_string()),
            Some(pattern) => {
                if let Err(what) = is_regex(pattern, target) {
                    problem("pattern", what);
                }
            }
        }
        if let Some(priority) = policy.get("priority")
            && !priority.is_number()
        {
            problem(
                "priority",
                format!("`priority` is {}, not a number", shown(priority)),
            );
        }
        if let Some(apply_to) = policy.get("apply-to") {
            let known: &[&str] = if target.has_queue_type_apply_to() {
                &[
                    "all",
                    "queues",
                    "exchanges",
                    "classic_queues",
                    "quorum_queues",
                    "streams",
                ]
            } else {
                &["all", "queues", "exchanges"]
            };
            if !apply_to.as_str().is_some_and(|a| known.contains(&a)) {
                problem(
                    "apply-to",
                    format!(
                        "`apply-to` is {}; RabbitMQ {target} knows {}",
                        shown(apply_to),
                        known.join(", ")
                    ),
                );
            }
        }
        match policy.get("definition") {
            Some(Value::Object(definition)) if !definition.is_empty() => {}
            Some(Value::Object(_)) => {
                problem("definition", "the `definition` is empty".to_string())
            }
            Some(other) => problem(
                "definition",
                format!(
                    "the `definition` is {}, not an object of policy keys",
                    kind_of(other)
                ),
            ),
            None => problem("definition", "`definition` is missing".to_string()),
        }
    }
    let _ = target;
}

fn policy_keys_known(document: &Value, found: &mut Found) {
    for (path, policy) in objects(document, "policies") {
        check_policy_keys(
            &path,
            &name_of(policy),
            policy.get("definition"),
            false,
            found,
        );
    }
}
