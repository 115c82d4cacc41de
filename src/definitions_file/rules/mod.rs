//! The rules RabbitMQ's own definitions import enforces, mirrored so that warren
//! refuses exactly the files the broker would refuse, at the value that breaks the
//! rule, before it plans or imports anything.
//!
//! A rule here is something the broker refuses (`POST /api/definitions` answers 400,
//! a booting node does not start). What the broker accepts but is risky (an
//! alternate exchange that does not exist, a queue named by the server) is not here:
//! it is a lint finding (`warren lint --definitions`). docs/definitions-files.md lists
//! both, with where in the broker each rule comes from.
//!
//! The rules of each object kind are in a file of their own (`users`, `vhosts`,
//! `queues`, …); [`RULES`] lists them all, in the order they are checked and
//! documented. What the files share (the objects of a section with their paths, how
//! a value is shown in a message) is here.

mod bindings;
mod exchanges;
mod parameters;
mod permissions;
mod policies;
mod queues;
mod users;
mod vhosts;

use serde_json::Value;

use super::kind_of;
use super::locate::JsonPointer;
use crate::model::TargetVersion;
use crate::model::rule::Level;

/// A value that breaks one of the broker's rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    /// Where the value is.
    pub path: JsonPointer,
    /// The rule's id ([`RULES`]).
    pub rule: &'static str,
    /// What is wrong, and the fix when it is obvious.
    pub message: String,
}

/// One rule of the broker's import, in the shape of every rule registry of warren's
/// ([`crate::model::rule::Rule`]): its id is shown in brackets after the error, its
/// summary says what the broker refuses (docs and `--help` text), and its level is
/// `deny`: the broker refuses what breaks it.
pub type Rule = crate::model::rule::Rule<Check>;

/// How a rule of the import is checked, over a whole document.
#[derive(Debug, Clone, Copy)]
pub struct Check(fn(&Value, &mut Found));

/// Every rule, in the order they are checked.
pub const RULES: &[Rule] = &[
    users::PASSWORD_HASH_BASE64,
    users::USER_TAGS,
    users::USER_PASSWORD,
    users::USER_LIMIT,
    permissions::PERMISSION_REGEX,
    vhosts::VHOST_FIELDS,
    vhosts::VHOST_EXISTS,
    vhosts::VHOST_DEFAULT_QUEUE_TYPE,
    exchanges::EXCHANGE_TYPE,
    queues::QUEUE_ARGUMENT_VALUE,
    queues::QUEUE_ARGUMENT_FOR_TYPE,
    queues::QUEUE_ARGUMENT_ON_VERSION,
    queues::DEAD_LETTER_ROUTING_KEY_WITHOUT_EXCHANGE,
    policies::POLICY_SHAPE,
    policies::POLICY_KEYS_KNOWN,
    parameters::OPERATOR_POLICY,
    parameters::PARAMETER_COMPONENT,
    parameters::VHOST_LIMITS,
    bindings::BINDING_DESTINATION_TYPE,
    bindings::BINDING_X_MATCH,
    bindings::BINDING_ENDS_EXIST,
];

/// Every value of `document` that breaks a rule for RabbitMQ `target`, rule by rule.
pub fn check(document: &Value, target: TargetVersion) -> Vec<Broken> {
    let mut found = Found {
        target,
        broken: Vec::new(),
    };
    for rule in RULES {
        (rule.check.0)(document, &mut found);
    }
    found.broken
}

/// What the checks found, and the version they check for.
struct Found {
    target: TargetVersion,
    broken: Vec<Broken>,
}

impl Found {
    fn push(&mut self, path: JsonPointer, rule: &'static str, message: String) {
        self.broken.push(Broken {
            path,
            rule,
            message,
        });
    }
}

type Fields = serde_json::Map<String, Value>;

/// The objects of a section with their paths.
fn objects<'a>(
    document: &'a Value,
    section: &'static str,
) -> impl Iterator<Item = (JsonPointer, &'a Fields)> {
    document
        .get(section)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(move |(index, object)| {
            object
                .as_object()
                .map(|fields| (JsonPointer::default().then(section).then(index), fields))
        })
}

fn name_of(fields: &Fields) -> String {
    match fields.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(other) => other.to_string(),
        None => "?".to_string(),
    }
}

/// A value as the message shows it: a short JSON rendering.
fn shown(value: &Value) -> String {
    crate::model::shorten::value(&value.to_string())
}

/// Whether a value is a regular expression the broker of `target` accepts: a string
/// that compiles, no longer than the target's limit
/// ([`TargetVersion::pattern_byte_limit`]). Policy patterns and permission regexes.
fn is_regex(value: &Value, target: TargetVersion) -> Result<(), String> {
    match value {
        Value::String(text) => {
            if let Some(limit) = target.pattern_byte_limit()
                && text.len() > limit
            {
                return Err(format!(
                    "`{}` is {} bytes long; RabbitMQ {target} allows {limit}",
                    crate::model::shorten::value(text),
                    text.len()
                ));
            }
            fancy_regex::Regex::new(text).map(drop).map_err(|err| {
                format!(
                    "`{}` is not a valid regular expression: {err}",
                    crate::model::shorten::value(text)
                )
            })
        }
        other => Err(format!(
            "{} is {}, not a regular expression",
            shown(other),
            super::kind_of(other)
        )),
    }
}

fn arguments(fields: &Fields) -> impl Iterator<Item = (&String, &Value)> {
    fields
        .get("arguments")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

fn parameters<'a>(
    document: &'a Value,
    component: &'static str,
) -> impl Iterator<Item = (JsonPointer, &'a Fields)> {
    objects(document, "parameters").filter(move |(_, parameter)| {
        parameter.get("component").and_then(Value::as_str) == Some(component)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(document: Value) -> Vec<(String, &'static str)> {
        check(&document, TargetVersion::V4_0)
            .into_iter()
            .map(|b| (b.path.to_string(), b.rule))
            .collect()
    }

    #[test]
    fn each_rule_names_the_value_that_breaks_it() {
        assert_eq!(
            ids(json!({"users": [
                {"name": "a", "password_hash": "", "tags": [], "limits": {"max-connections": 2}},
                {"name": "b", "password_hash": "not base64!", "tags": "", "limits": {"max-channels": "two"}}
            ]})),
            [
                ("/users/1/password_hash".to_string(), "password-hash-base64"),
                ("/users/1/limits/max-channels".to_string(), "user-limit"),
            ]
        );
        assert_eq!(
            ids(json!({"bindings": [
                {"destination_type": "queue", "source": "", "destination": "amq.gen-1"},
                {"destination_type": "exchange", "source": "", "destination": "amq.topic"},
                {"destination_type": "stream", "source": "", "destination": "amq.topic"}
            ]})),
            [(
                "/bindings/2/destination_type".to_string(),
                "binding-destination-type"
            )]
        );
    }

    /// RabbitMQ 4.3 refuses a policy pattern or permission regex over 1,024 bytes; the
    /// lines before 4.1 have no such limit.
    #[test]
    fn regexes_longer_than_the_target_allows_are_refused() {
        let long = format!("^{}$", "a".repeat(1023));
        let document = json!({
            "vhosts": [{"name": "v"}],
            "policies": [{"vhost": "v", "name": "p", "pattern": long, "apply-to": "queues",
                          "definition": {"message-ttl": 1}, "priority": 0}],
            "permissions": [{"user": "u", "vhost": "v", "configure": "^$", "write": long, "read": "^q$"}],
            "topic_permissions": [{"user": "u", "vhost": "v", "exchange": "x", "write": "^$", "read": long}],
        });
        let broken = |target| -> Vec<String> {
            check(&document, target)
                .into_iter()
                .map(|b| format!("{} {}", b.path, b.rule))
                .collect()
        };
        assert_eq!(broken(TargetVersion::V4_0), Vec::<String>::new());
        assert_eq!(
            broken(TargetVersion::V4_1),
            [
                "/permissions/0/write permission-regex",
                "/topic_permissions/0/read permission-regex",
                "/policies/0/pattern policy",
            ]
        );
    }

    #[test]
    fn rule_ids_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        assert!(RULES.iter().all(|rule| seen.insert(rule.id)));
    }
}
