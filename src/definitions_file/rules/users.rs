//! The users section: password hashes, tags, the password or its hash, user limits.

use base64::Engine;
use serde_json::Value;

use super::{Check, Found, Level, Rule, kind_of, name_of, objects, shown};

pub(super) const PASSWORD_HASH_BASE64: Rule = Rule {
    id: "password-hash-base64",
    summary: "a user's `password_hash` is base64 (or empty, for a user without a password)",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(password_hash_base64),
};

pub(super) const USER_TAGS: Rule = Rule {
    id: "user-tags",
    summary: "a user has `tags` (a list or a comma-separated string)",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(user_tags),
};

pub(super) const USER_PASSWORD: Rule = Rule {
    id: "user-password",
    summary: "a user gives `password` or `password_hash`, not both, and `administrator` (old exports) is true or false",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(user_password),
};

pub(super) const USER_LIMIT: Rule = Rule {
    id: "user-limit",
    summary: "a user's limits are only `max-connections` and `max-channels`, each a whole number",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(user_limit),
};

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
                    kind_of(other)
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
                    kind_of(limits)
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
