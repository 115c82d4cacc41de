//! Whether an apply's report says exactly what the broker holds: each change of the
//! plan is named in one list of `apply --format json`'s document (`done`,
//! `unconfirmed`, `not_done`), each change named done is made in the broker, and each
//! change named not done left the object as it was. Tests of applies that stop part
//! way (the broker's own check refusing a queue, a signal) read it.

use serde_json::Value;

use crate::node::{Node, pct};

/// How warren names a change in a report: `delete queue "orders" in vhost "shop"`.
fn described(change: &Value) -> String {
    let id = &change["id"];
    let kind = id["kind"].as_str().unwrap_or_default();
    let name = id["name"].as_str().unwrap_or_default();
    let action = change["action"].as_str().unwrap_or_default();
    match id["vhost"].as_str() {
        Some(vhost) => format!("{action} {kind} {name:?} in vhost {vhost:?}"),
        None => format!("{action} {kind} {name:?}"),
    }
}

/// Which list of `applied` names `change`, and the entry (with what follows the
/// change's name, e.g. "(DELETED AND NOT DECLARED AGAIN …)"); every list that does.
fn named_in<'a>(applied: &'a Value, change: &str) -> Vec<(&'static str, &'a str)> {
    let mut found = Vec::new();
    for list in ["done", "unconfirmed", "not_done"] {
        for entry in applied[list].as_array().into_iter().flatten() {
            let entry = entry.as_str().unwrap_or_default();
            if entry == change || entry.starts_with(&format!("{change} (")) {
                found.push((list, entry));
            }
        }
    }
    found
}

/// Whether the object of `change` is in `definitions` (a vhost's, `GET
/// /api/definitions/{vhost}`) as `value` describes it (the change's `before` or
/// `after`).
fn holds(definitions: &Value, change: &Value, value: &Value) -> bool {
    let name = change["id"]["name"].as_str().unwrap_or_default();
    let section =
        |key: &str| -> Vec<Value> { definitions[key].as_array().cloned().unwrap_or_default() };
    let queue_type = |v: &Value| {
        v["arguments"]["x-queue-type"]
            .as_str()
            .unwrap_or("classic")
            .to_string()
    };
    match change["id"]["kind"].as_str().unwrap_or_default() {
        "queue" => section("queues")
            .iter()
            .any(|q| q["name"] == name && queue_type(q) == queue_type(value)),
        "exchange" => section("exchanges")
            .iter()
            .any(|e| e["name"] == name && e["type"] == value["type"]),
        "binding" => section("bindings").iter().any(|b| {
            ["source", "destination", "destination_type", "routing_key"]
                .iter()
                .all(|field| b[*field] == value[*field])
        }),
        "policy" => section("policies")
            .iter()
            .any(|p| p["name"] == name && p["definition"] == value["definition"]),
        // Objects outside a vhost's definitions: present is all this checks.
        _ => true,
    }
}

/// Whether both ends of a binding's change are in `definitions`.
fn ends_exist(definitions: &Value, change: &Value) -> bool {
    let binding = &change["after"];
    let named = |section: &str, name: &Value| {
        definitions[section]
            .as_array()
            .into_iter()
            .flatten()
            .any(|o| o["name"] == *name)
    };
    let destination = if binding["destination_type"] == "exchange" {
        "exchanges"
    } else {
        "queues"
    };
    named("exchanges", &binding["source"]) && named(destination, &binding["destination"])
}

/// Checks that the report of `document` (`apply --format json`) is exact against
/// what `node` holds now in `vhost`; what is wrong with it, if anything.
pub fn exact(node: &Node, vhost: &str, document: &Value) -> Result<(), String> {
    let definitions = node.get(&format!("/api/definitions/{}", pct(vhost)));
    let applied = &document["applied"];
    let changes = document["plan"]["changes"]
        .as_array()
        .ok_or("the document has no plan")?;
    let listed: usize = ["done", "unconfirmed", "not_done"]
        .iter()
        .map(|list| applied[*list].as_array().map_or(0, Vec::len))
        .sum();
    // Migrations are named besides their changes; no plan here has any.
    if listed != changes.len() {
        return Err(format!(
            "{} changes planned, {listed} named in the report",
            changes.len()
        ));
    }
    let absent = |change: &Value| -> bool {
        let value = if change["before"].is_null() {
            &change["after"]
        } else {
            &change["before"]
        };
        !holds(&definitions, change, value)
    };
    for change in changes {
        let name = described(change);
        let lists = named_in(applied, &name);
        let [(list, entry)] = lists.as_slice() else {
            return Err(format!(
                "{name}: named in {lists:?}, not in exactly one list"
            ));
        };
        let action = change["action"].as_str().unwrap_or_default();
        let as_reported = match (*list, action) {
            ("unconfirmed", _) => true,
            ("done", "delete") => absent(change),
            ("done", _) => holds(&definitions, change, &change["after"]),
            ("not_done", _) if entry.contains("DELETED AND NOT DECLARED AGAIN") => absent(change),
            // A binding created again because its queue or exchange is replaced
            // (`reason` says so): not made, the binding of the old queue is there
            // exactly while that queue is.
            ("not_done", "create") if change["reason"].is_string() => {
                holds(&definitions, change, &change["after"]) == ends_exist(&definitions, change)
            }
            ("not_done", "create") => absent(change),
            ("not_done", _) => holds(&definitions, change, &change["before"]),
            _ => false,
        };
        if !as_reported {
            return Err(format!("{name}: reported {list}, the broker disagrees"));
        }
    }
    Ok(())
}
