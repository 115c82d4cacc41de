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
use crate::model::{
    OPERATOR_POLICY_COMPONENT, PREDEFINED_EXCHANGES, QueueType, TargetVersion,
    VHOST_LIMITS_COMPONENT, policy_keys, queue_arguments,
};

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
    check: fn(&Value, &mut Found),
}

/// Every rule, in the order they are checked.
pub const RULES: &[Rule] = &[
    Rule {
        id: "password-hash-base64",
        summary: "a user's `password_hash` is base64 (or empty, for a user without a password)",
        check: password_hash_base64,
    },
    Rule {
        id: "user-tags",
        summary: "a user has `tags` (a list or a comma-separated string)",
        check: user_tags,
    },
    Rule {
        id: "user-password",
        summary: "a user gives `password` or `password_hash`, not both, and `administrator` (old exports) is true or false",
        check: user_password,
    },
    Rule {
        id: "user-limit",
        summary: "a user's limits are only `max-connections` and `max-channels`, each a whole number",
        check: user_limit,
    },
    Rule {
        id: "permission-regex",
        summary: "a permission's `configure`, `write` and `read` (and a topic permission's `write` and `read`) are regular expressions",
        check: permission_regex,
    },
    Rule {
        id: "vhost",
        summary: "a vhost's `metadata` is an object, its tags a list or a comma-separated string, its `tracing` true or false",
        check: vhost_fields,
    },
    Rule {
        id: "vhost-exists",
        summary: "an object's vhost is declared in the file (or is `/`, which every broker starts with)",
        check: vhost_exists,
    },
    Rule {
        id: "vhost-default-queue-type",
        summary: "a vhost's default queue type is `classic`, `quorum` or `stream`",
        check: vhost_default_queue_type,
    },
    Rule {
        id: "exchange-type",
        summary: "an exchange's type is `direct`, `fanout`, `topic`, `headers` or a plugin's `x-…` type",
        check: exchange_type,
    },
    Rule {
        id: "queue-argument-value",
        summary: "a queue argument the broker knows has a value of its type and range (e.g. `x-max-priority` 0–255, `x-expires` ≥ 1, no `null`)",
        check: queue_argument_value,
    },
    Rule {
        id: "queue-argument-for-type",
        summary: "a queue argument is one its queue type takes (e.g. no `x-max-priority` on a quorum queue)",
        check: queue_argument_for_type,
    },
    Rule {
        id: "dead-letter-routing-key-without-exchange",
        summary: "a queue with `x-dead-letter-routing-key` also has `x-dead-letter-exchange`",
        check: dead_letter_routing_key_without_exchange,
    },
    Rule {
        id: "policy",
        summary: "a policy has a `pattern` that is a regular expression, a numeric `priority`, an `apply-to` the version knows and a non-empty `definition`",
        check: policy_shape,
    },
    Rule {
        id: "policy-key",
        summary: "every key of a policy's definition is one the version knows, with a value of its type",
        check: policy_keys_known,
    },
    Rule {
        id: "operator-policy",
        summary: "an operator policy has a `pattern`, a `definition` and a `priority`, and sets only keys operator policies may set on the version",
        check: operator_policy,
    },
    Rule {
        id: "parameter-component",
        summary: "a runtime parameter's component is one the broker registers (`vhost-limits`, `operator_policy`, federation's and shovel's); never `policy`",
        check: parameter_component,
    },
    Rule {
        id: "vhost-limits",
        summary: "vhost limits are only `max-connections` and `max-queues`, each a whole number",
        check: vhost_limits,
    },
    Rule {
        id: "binding-destination-type",
        summary: "a binding's `destination_type` is `queue` or `exchange`",
        check: binding_destination_type,
    },
    Rule {
        id: "binding-x-match",
        summary: "a binding's `x-match` is `all`, `any`, `all-with-x` or `any-with-x` (4.0 and later)",
        check: binding_x_match,
    },
    Rule {
        id: "binding-ends-exist",
        summary: "a binding's source and destination exist (4.0 and later refuse a binding to nothing; 3.10 accepts it and creates nothing)",
        check: binding_ends_exist,
    },
];

/// Every value of `document` that breaks a rule for RabbitMQ `target`, rule by rule.
pub fn check(document: &Value, target: TargetVersion) -> Vec<Broken> {
    let mut found = Found {
        target,
        broken: Vec::new(),
    };
    for rule in RULES {
        (rule.check)(document, &mut found);
    }
    found.broken
}

/// What the checks found, and the version they check for.
struct Found {
    target: TargetVersion,
    broken: Vec<Broken>,
}

impl Found {
    fn push(&mut self, path: Path, rule: &'static str, message: String) {
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
) -> impl Iterator<Item = (Path, &'a Fields)> {
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

fn is_regex(value: &Value) -> Result<(), String> {
    match value {
        Value::String(text) => fancy_regex::Regex::new(text).map(drop).map_err(|err| {
            format!(
                "`{}` is not a valid regular expression: {err}",
                crate::model::shorten::value(text)
            )
        }),
        other => Err(format!(
            "{} is {}, not a regular expression",
            shown(other),
            super::kind_of(other)
        )),
    }
}

fn password_hash_base64(document: &Value, found: &mut Found) {
    for (path, user) in objects(document, "users") {
        let ok = match user.get("password_hash") {
            None => true,
            Some(Value::String(hash)) => {
                hash.is_empty()
                    || base64::engine::general_purpose::STANDARD
                        .decode(hash)
                        .is_ok()
            }
            Some(_) => false,
        };
        if !ok {
            found.push(
                path.then("password_hash"),
                "password-hash-base64",
                format!(
                    "the `password_hash` of user `{}` is not base64 (RabbitMQ stores base64(salt ++ hash); use \"\" for a user without a password)",
                    name_of(user)
                ),
            );
        }
    }
}

fn user_tags(document: &Value, found: &mut Found) {
    for (path, user) in objects(document, "users") {
        match user.get("tags") {
            None if !user.contains_key("administrator") => found.push(
                path,
                "user-tags",
                format!(
                    "user `{}` has no `tags`: RabbitMQ refuses it (tags_not_present); write `\"tags\": []` for a user without tags",
                    name_of(user)
                ),
            ),
            Some(Value::String(_) | Value::Array(_)) | None => {}
            Some(other) => found.push(
                path.then("tags"),
                "user-tags",
                format!(
                    "the `tags` of user `{}` are {}, not a list or a comma-separated string",
                    name_of(user),
                    super::kind_of(other)
                ),
            ),
        }
    }
}

fn user_password(document: &Value, found: &mut Found) {
    for (path, user) in objects(document, "users") {
        if user.contains_key("password") && user.contains_key("password_hash") {
            found.push(
                path.then("password"),
                "user-password",
                format!(
                    "user `{}` has both `password` and `password_hash`; keep one",
                    name_of(user)
                ),
            );
        }
        if let Some(flag) = user.get("administrator")
            && !matches!(flag, Value::Bool(_))
            && !matches!(flag.as_str(), Some("true" | "false"))
        {
            found.push(
                path.then("administrator"),
                "user-password",
                format!(
                    "the `administrator` flag of user `{}` is {}, not true or false",
                    name_of(user),
                    shown(flag)
                ),
            );
        }
    }
}

fn user_limit(document: &Value, found: &mut Found) {
    for (path, user) in objects(document, "users") {
        let Some(limits) = user.get("limits") else {
            continue;
        };
        let Value::Object(limits) = limits else {
            found.push(
                path.then("limits"),
                "user-limit",
                format!(
                    "the `limits` of user `{}` are {}, not an object such as {{\"max-connections\": 10}}",
                    name_of(user),
                    super::kind_of(limits)
                ),
            );
            continue;
        };
        for (name, value) in limits {
            let path = path.then("limits").then(name.as_str());
            if name != "max-connections" && name != "max-channels" {
                found.push(
                    path,
                    "user-limit",
                    format!(
                        "`{name}` is not a user limit; RabbitMQ knows `max-connections` and `max-channels`"
                    ),
                );
            } else if value.as_i64().is_none() {
                found.push(
                    path,
                    "user-limit",
                    format!(
                        "the limit `{name}` of user `{}` is {}, not a whole number",
                        name_of(user),
                        shown(value)
                    ),
                );
            }
        }
    }
}

fn permission_regex(document: &Value, found: &mut Found) {
    for (section, fields) in [
        ("permissions", &["configure", "write", "read"][..]),
        ("topic_permissions", &["write", "read"][..]),
    ] {
        for (path, permission) in objects(document, section) {
            for field in fields {
                let problem = match permission.get(*field) {
                    None => Err(format!("`{field}` is missing")),
                    Some(value) => is_regex(value),
                };
                if let Err(problem) = problem {
                    found.push(
                        path.then(*field),
                        "permission-regex",
                        format!(
                            "the `{field}` permission of user `{}` in vhost `{}`: {problem}",
                            permission
                                .get("user")
                                .and_then(Value::as_str)
                                .unwrap_or("?"),
                            permission
                                .get("vhost")
                                .and_then(Value::as_str)
                                .unwrap_or("?"),
                        ),
                    );
                }
            }
        }
    }
}

fn vhost_fields(document: &Value, found: &mut Found) {
    for (path, vhost) in objects(document, "vhosts") {
        let name = name_of(vhost);
        let tags_ok = |tags: &Value| match tags {
            Value::String(_) => true,
            Value::Array(items) => {
                found.target < TargetVersion::V4_0 || items.iter().all(Value::is_string)
            }
            _ => false,
        };
        let mut broken = Vec::new();
        match vhost.get("metadata") {
            None | Some(Value::Null) => {}
            Some(Value::Object(metadata)) => {
                if let Some(tags) = metadata.get("tags")
                    && !tags_ok(tags)
                {
                    broken.push((path.then("metadata").then("tags"), format!("the tags of vhost `{name}` are {}, not a list of strings or a comma-separated string", shown(tags))));
                }
            }
            Some(other) => broken.push((
                path.then("metadata"),
                format!(
                    "the `metadata` of vhost `{name}` is {}, not an object",
                    super::kind_of(other)
                ),
            )),
        }
        if let Some(tags) = vhost.get("tags")
            && !tags_ok(tags)
        {
            broken.push((path.then("tags"), format!("the tags of vhost `{name}` are {}, not a list of strings or a comma-separated string", shown(tags))));
        }
        if let Some(tracing) = vhost.get("tracing")
            && !tracing.is_boolean()
        {
            broken.push((
                path.then("tracing"),
                format!(
                    "the `tracing` of vhost `{name}` is {}, not true or false",
                    shown(tracing)
                ),
            ));
        }
        for (path, message) in broken {
            found.push(path, "vhost", message);
        }
    }
}

fn vhost_exists(document: &Value, found: &mut Found) {
    let declared: std::collections::HashSet<&str> = objects(document, "vhosts")
        .filter_map(|(_, vhost)| vhost.get("name")?.as_str())
        .collect();
    for section in [
        "queues",
        "exchanges",
        "policies",
        "parameters",
        "permissions",
        "topic_permissions",
    ] {
        for (path, object) in objects(document, section) {
            let Some(vhost) = object.get("vhost").and_then(Value::as_str) else {
                continue;
            };
            if vhost != "/" && !declared.contains(vhost) {
                found.push(
                    path.then("vhost"),
                    "vhost-exists",
                    format!(
                        "vhost `{vhost}` is not declared in the file (add it to `vhosts`; the broker refuses objects of a vhost that does not exist)"
                    ),
                );
            }
        }
    }
}

const QUEUE_TYPES: [&str; 3] = ["classic", "quorum", "stream"];

fn vhost_default_queue_type(document: &Value, found: &mut Found) {
    for (path, vhost) in objects(document, "vhosts") {
        let Some(kind) = vhost
            .get("metadata")
            .and_then(|m| m.get("default_queue_type"))
        else {
            continue;
        };
        // 3.10 accepts the file and skips the vhost; 4.0 refuses it.
        if found.target >= TargetVersion::V4_0
            && !kind
                .as_str()
                .is_some_and(|k| QUEUE_TYPES.contains(&k) || k == "undefined")
        {
            found.push(
                path.then("metadata").then("default_queue_type"),
                "vhost-default-queue-type",
                format!(
                    "vhost `{}` has the default queue type {}; RabbitMQ knows classic, quorum and stream (4.0 refuses the file, 3.10 skips the vhost)",
                    name_of(vhost),
                    shown(kind)
                ),
            );
        }
    }
}

const EXCHANGE_TYPES: [&str; 4] = ["direct", "fanout", "topic", "headers"];

fn exchange_type(document: &Value, found: &mut Found) {
    for (path, exchange) in objects(document, "exchanges") {
        let name = name_of(exchange);
        if name.is_empty() || name.starts_with("amq.") {
            continue; // the broker skips these
        }
        let ok = match exchange.get("type") {
            Some(Value::String(kind)) => {
                EXCHANGE_TYPES.contains(&kind.as_str()) || kind.starts_with("x-")
            }
            _ => false,
        };
        if !ok {
            let given = exchange.get("type").map_or("missing".to_string(), shown);
            let known: Vec<String> = EXCHANGE_TYPES.map(String::from).into();
            let hint = exchange
                .get("type")
                .and_then(Value::as_str)
                .and_then(|kind| crate::suggest::closest(kind, &known))
                .map_or(String::new(), |best| format!("; did you mean `{best}`?"));
            found.push(
                path.then("type"),
                "exchange-type",
                format!(
                    "exchange `{name}` has the type {given}; RabbitMQ knows direct, fanout, topic, headers and the `x-…` types of plugins{hint}"
                ),
            );
        }
    }
}

/// The queues the broker declares (it skips `amq.` names), with their type.
fn declared_queues(
    document: &Value,
    target: TargetVersion,
) -> impl Iterator<Item = (Path, &Fields, QueueType)> {
    let vhost_defaults: std::collections::HashMap<&str, &str> = objects(document, "vhosts")
        .filter_map(|(_, vhost)| {
            Some((
                vhost.get("name")?.as_str()?,
                vhost.get("metadata")?.get("default_queue_type")?.as_str()?,
            ))
        })
        .collect();
    objects(document, "queues")
        .filter(|(_, queue)| !name_of(queue).starts_with("amq."))
        .map(move |(path, queue)| {
            let declared = queue
                .get("arguments")
                .and_then(|a| a.get("x-queue-type"))
                .and_then(Value::as_str);
            // 4.0 falls back to the vhost's default queue type; 3.10 to classic.
            let fallback = (target >= TargetVersion::V4_0)
                .then(|| {
                    queue
                        .get("vhost")
                        .and_then(Value::as_str)
                        .and_then(|v| vhost_defaults.get(v).copied())
                })
                .flatten();
            let kind = declared
                .or(fallback)
                .map_or(QueueType::Classic, QueueType::from_name);
            (path, queue, kind)
        })
}

fn arguments(fields: &Fields) -> impl Iterator<Item = (&String, &Value)> {
    fields
        .get("arguments")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

fn queue_argument_value(document: &Value, found: &mut Found) {
    for (path, queue, _) in declared_queues(document, found.target) {
        for (key, value) in arguments(queue) {
            let problem = if value.is_null() {
                Some("`null`: the broker takes no null argument".to_string())
            } else {
                queue_arguments::find(key)
                    .filter(|known| known.broker_checks_value())
                    .and_then(|known| known.check_value(value).err())
                    .map(|expected| format!("{}, and it takes {expected}", shown(value)))
            };
            if let Some(problem) = problem {
                found.push(
                    path.then("arguments").then(key.as_str()),
                    "queue-argument-value",
                    format!(
                        "argument `{key}` of queue `{}` is {problem}",
                        name_of(queue)
                    ),
                );
            }
        }
    }
}

fn queue_argument_for_type(document: &Value, found: &mut Found) {
    let target = found.target;
    for (path, queue, kind) in declared_queues(document, target) {
        for (key, _) in arguments(queue) {
            if queue_arguments::find(key).is_some_and(|known| !known.accepted_by(kind, target)) {
                found.push(
                    path.then("arguments").then(key.as_str()),
                    "queue-argument-for-type",
                    format!(
                        "{} queue `{}` has the argument `{key}`, which its type does not take on RabbitMQ {target}",
                        kind.as_str(),
                        name_of(queue)
                    ),
                );
            }
        }
    }
}

fn dead_letter_routing_key_without_exchange(document: &Value, found: &mut Found) {
    for (path, queue, _) in declared_queues(document, found.target) {
        let has = |key: &str| arguments(queue).any(|(k, _)| k == key);
        if has("x-dead-letter-routing-key") && !has("x-dead-letter-exchange") {
            found.push(
                path.then("arguments").then("x-dead-letter-routing-key"),
                "dead-letter-routing-key-without-exchange",
                format!(
                    "queue `{}` has `x-dead-letter-routing-key` without `x-dead-letter-exchange` (to dead-letter through the default exchange, set `x-dead-letter-exchange` to \"\")",
                    name_of(queue)
                ),
            );
        }
    }
}

/// A policy's checks shared by user and operator policies: the pattern and the
/// definition's keys. `operator` restricts the keys.
fn check_policy_keys(
    path: &Path,
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
                if let Err(what) = is_regex(pattern) {
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
                    super::kind_of(other)
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

fn parameters<'a>(
    document: &'a Value,
    component: &'static str,
) -> impl Iterator<Item = (Path, &'a Fields)> {
    objects(document, "parameters").filter(move |(_, parameter)| {
        parameter.get("component").and_then(Value::as_str) == Some(component)
    })
}

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
            && let Err(what) = is_regex(pattern)
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

fn binding_destination_type(document: &Value, found: &mut Found) {
    for (path, binding) in objects(document, "bindings") {
        match binding.get("destination_type") {
            Some(Value::String(kind)) if kind == "queue" || kind == "exchange" => {}
            other => found.push(
                path.then("destination_type"),
                "binding-destination-type",
                format!(
                    "a binding's `destination_type` is {}; RabbitMQ binds to a `queue` or an `exchange`",
                    other.map_or("missing".to_string(), shown)
                ),
            ),
        }
    }
}

fn binding_x_match(document: &Value, found: &mut Found) {
    if found.target < TargetVersion::V4_0 {
        return; // 3.10 accepts it and creates no binding
    }
    for (path, binding) in objects(document, "bindings") {
        let Some(x_match) = binding.get("arguments").and_then(|a| a.get("x-match")) else {
            continue;
        };
        if !x_match
            .as_str()
            .is_some_and(|m| ["all", "any", "all-with-x", "any-with-x"].contains(&m))
        {
            found.push(
                path.then("arguments").then("x-match"),
                "binding-x-match",
                format!(
                    "a headers binding's `x-match` is {}; RabbitMQ takes all, any, all-with-x or any-with-x",
                    shown(x_match)
                ),
            );
        }
    }
}

fn binding_ends_exist(document: &Value, found: &mut Found) {
    if found.target < TargetVersion::V4_0 {
        return; // 3.10 accepts it and creates no binding
    }
    let declared = |section: &'static str| -> std::collections::HashSet<(String, String)> {
        objects(document, section)
            .filter_map(|(_, fields)| {
                Some((
                    fields.get("vhost")?.as_str()?.to_string(),
                    fields.get("name")?.as_str()?.to_string(),
                ))
            })
            .collect()
    };
    let exchanges = declared("exchanges");
    let queues = declared("queues");
    let exchange_exists = |vhost: &str, name: &str| {
        name.is_empty()
            || PREDEFINED_EXCHANGES.contains(&name)
            || exchanges.contains(&(vhost.to_string(), name.to_string()))
    };
    for (path, binding) in objects(document, "bindings") {
        let text = |key: &str| binding.get(key).and_then(Value::as_str).unwrap_or_default();
        let vhost = text("vhost");
        let (source, destination) = (text("source"), text("destination"));
        if !exchange_exists(vhost, source) {
            found.push(
                path.then("source"),
                "binding-ends-exist",
                format!("the binding from `{source}` to `{destination}` in vhost `{vhost}`: exchange `{source}` is not in the file"),
            );
        }
        let destination_exists = match text("destination_type") {
            "exchange" => exchange_exists(vhost, destination),
            _ => {
                destination.starts_with("amq.")
                    || queues.contains(&(vhost.to_string(), destination.to_string()))
            }
        };
        if !destination_exists {
            found.push(
                path.then("destination"),
                "binding-ends-exist",
                format!(
                    "the binding from `{source}` to `{destination}` in vhost `{vhost}`: {} `{destination}` is not in the file",
                    text("destination_type")
                ),
            );
        }
    }
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

    #[test]
    fn rule_ids_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        assert!(RULES.iter().all(|rule| seen.insert(rule.id)));
    }
}
