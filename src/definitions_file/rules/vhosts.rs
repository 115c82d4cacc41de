//! Vhosts: their fields, their default queue type, and that every object's vhost is declared.

use serde_json::Value;

use crate::model::TargetVersion;

use super::{Check, Found, Level, Rule, kind_of, name_of, objects, shown};

pub(super) const VHOST_FIELDS: Rule = Rule {
    id: "vhost",
    summary: "a vhost's `metadata` is an object, its tags a list or a comma-separated string, its `tracing` true or false",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(vhost_fields),
};

pub(super) const VHOST_EXISTS: Rule = Rule {
    id: "vhost-exists",
    summary: "an object's vhost is declared in the file (or is `/`, which every broker starts with)",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(vhost_exists),
};

pub(super) const VHOST_DEFAULT_QUEUE_TYPE: Rule = Rule {
    id: "vhost-default-queue-type",
    summary: "a vhost's default queue type is `classic`, `quorum` or `stream`",
    level: Some(Level::Deny),
    explanation: None,
    check: Check(vhost_default_queue_type),
};

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
                    kind_of(other)
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
