//! The rules RabbitMQ's own definitions import enforces, mirrored so that warren
//! refuses exactly the files the broker would refuse, at the value that breaks the
//! rule, before it plans or imports anything.
//!
//! A rule here is something the broker refuses (`POST /api/definitions` answers 400,
//! a booting node does not start). What the broker accepts but is risky (an
//! alternate exchange that does not exist, a queue named by the server) is not here:
//! it is a lint finding (`warren lint --definitions`). docs/definitions-files.md lists
//! both, with where in the broker each rule comes from.

use base64::Engine;
use serde_json::Value;

use super::locate::Path;

/// A value that breaks one of the broker's rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    /// Where the value is.
    pub path: Path,
    /// The rule's id ([`RULES`]).
    pub rule: &'static str,
    /// What is wrong, and the fix when it is obvious.
    pub message: String,
}

/// One rule of the broker's import.
pub struct Rule {
    /// A short id, shown in brackets after the error.
    pub id: &'static str,
    /// What the broker refuses, in one line (docs and `--help` text).
    pub summary: &'static str,
    check: fn(&Value, &mut Vec<Broken>),
}

/// Every rule, in the order they are checked.
pub const RULES: &[Rule] = &[
    Rule {
        id: "password-hash-base64",
        summary: "a user's `password_hash` is base64 (or empty, for a user without a password)",
        check: password_hash_base64,
    },
    Rule {
        id: "user-limit-integer",
        summary: "a user limit (`max-connections`, `max-channels`) is a whole number",
        check: user_limit_integer,
    },
    Rule {
        id: "binding-destination-type",
        summary: "a binding's `destination_type` is `queue` or `exchange`",
        check: binding_destination_type,
    },
];

/// Every value of `document` that breaks a rule, rule by rule.
pub fn check(document: &Value) -> Vec<Broken> {
    let mut broken = Vec::new();
    for rule in RULES {
        (rule.check)(document, &mut broken);
    }
    broken
}

/// The objects of a section with their paths.
fn objects<'a>(
    document: &'a Value,
    section: &'static str,
) -> impl Iterator<Item = (Path, &'a serde_json::Map<String, Value>)> {
    document
        .get(section)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(move |(index, object)| {
            object
                .as_object()
                .map(|fields| (Path::default().then(section).then(index), fields))
        })
}

fn password_hash_base64(document: &Value, broken: &mut Vec<Broken>) {
    for (path, user) in objects(document, "users") {
        let Some(Value::String(hash)) = user.get("password_hash") else {
            continue;
        };
        if !hash.is_empty()
            && base64::engine::general_purpose::STANDARD
                .decode(hash)
                .is_err()
        {
            broken.push(Broken {
                path: path.then("password_hash"),
                rule: "password-hash-base64",
                message: format!(
                    "the `password_hash` of user `{}` is not base64 (RabbitMQ stores base64(salt ++ hash); use \"\" for a user without a password)",
                    user.get("name").and_then(Value::as_str).unwrap_or("?")
                ),
            });
        }
    }
}

fn user_limit_integer(document: &Value, broken: &mut Vec<Broken>) {
    for (path, user) in objects(document, "users") {
        let Some(Value::Object(limits)) = user.get("limits") else {
            continue;
        };
        for (name, value) in limits {
            if value.as_i64().is_none() {
                broken.push(Broken {
                    path: path.then("limits").then(name.as_str()),
                    rule: "user-limit-integer",
                    message: format!(
                        "the limit `{name}` of user `{}` is {}, not a whole number",
                        user.get("name").and_then(Value::as_str).unwrap_or("?"),
                        super::kind_of(value)
                    ),
                });
            }
        }
    }
}

fn binding_destination_type(document: &Value, broken: &mut Vec<Broken>) {
    for (path, binding) in objects(document, "bindings") {
        match binding.get("destination_type") {
            Some(Value::String(kind)) if kind == "queue" || kind == "exchange" => {}
            Some(other) => broken.push(Broken {
                path: path.then("destination_type"),
                rule: "binding-destination-type",
                message: format!(
                    "a binding's `destination_type` is {}; RabbitMQ binds to a `queue` or an `exchange`",
                    match other {
                        Value::String(kind) => format!("`{kind}`"),
                        other => super::kind_of(other).to_string(),
                    }
                ),
            }),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(document: Value) -> Vec<(String, &'static str)> {
        check(&document)
            .into_iter()
            .map(|b| (b.path.to_string(), b.rule))
            .collect()
    }

    #[test]
    fn each_rule_names_the_value_that_breaks_it() {
        assert_eq!(
            ids(json!({"users": [
                {"name": "a", "password_hash": "", "limits": {"max-connections": 2}},
                {"name": "b", "password_hash": "not base64!", "limits": {"max-channels": "two"}}
            ]})),
            [
                ("/users/1/password_hash".to_string(), "password-hash-base64"),
                (
                    "/users/1/limits/max-channels".to_string(),
                    "user-limit-integer"
                ),
            ]
        );
        assert_eq!(
            ids(json!({"bindings": [
                {"destination_type": "queue"}, {"destination_type": "exchange"},
                {"destination_type": "stream"}
            ]})),
            [(
                "/bindings/2/destination_type".to_string(),
                "binding-destination-type"
            )]
        );
    }

    #[test]
    fn rule_ids_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        assert!(RULES.iter().all(|rule| seen.insert(rule.id)));
    }
}
