//! Whole-broker and vhost-scoped definitions files.
//!
//! `GET /api/definitions` writes a whole broker: every queue, exchange, binding,
//! policy, parameter and permission names its `vhost`. `GET /api/definitions/{vhost}`
//! (and `POST` to the same path) writes one vhost's objects with no `vhost` key and no
//! users, vhosts or permissions: which vhost they belong to is said only by the URL.
//! warren reads such a file when told the vhost (`--vhost NAME`), by writing that
//! vhost into every object and declaring the vhost, so the rest of warren sees a
//! whole-broker document.

use serde_json::{Map, Value};

use super::locate::JsonPointer;

/// The sections whose objects belong to a vhost.
pub const VHOST_SECTIONS: [&str; 7] = [
    "queues",
    "exchanges",
    "bindings",
    "policies",
    "parameters",
    "permissions",
    "topic_permissions",
];

/// Makes `document` a whole-broker document: a vhost-scoped one gets `vhost` in every
/// object and a `vhosts` entry for it. `vhost` is the vhost a scoped file belongs to.
///
/// A file is vhost-scoped when any of its objects lacks `vhost` (3.10 writes `vhost`
/// into the policies of a vhost's export, and into nothing else). As the broker does
/// for `POST /api/definitions/{vhost}`, every object of such a file goes into the
/// vhost given, whatever its own `vhost` key says.
///
/// Returns whether the file was scoped; the error is a path and what is wrong (a
/// scoped file without `vhost`).
pub fn settle(document: &mut Value, vhost: Option<&str>) -> Result<bool, (JsonPointer, String)> {
    let Some(sections) = document.as_object_mut() else {
        return Ok(false);
    };
    let first_without = VHOST_SECTIONS.iter().find_map(|section| {
        let Some(Value::Array(objects)) = sections.get(*section) else {
            return None;
        };
        objects
            .iter()
            .position(|o| {
                o.as_object()
                    .is_some_and(|fields| !fields.contains_key("vhost"))
            })
            .map(|index| JsonPointer::default().then(*section).then(index))
    });
    let Some(first_without) = first_without else {
        return Ok(false);
    };
    let Some(vhost) = vhost else {
        return Err((
            first_without,
            "this object names no `vhost`: the file is one vhost's definitions (as `GET /api/definitions/{vhost}` writes them), so say which vhost with --vhost NAME (in a whole broker's definitions every object names its vhost)".to_string(),
        ));
    };
    for section in VHOST_SECTIONS {
        if let Some(Value::Array(objects)) = sections.get_mut(section) {
            for object in objects.iter_mut() {
                if let Value::Object(fields) = object {
                    fields.insert("vhost".into(), Value::from(vhost));
                }
            }
        }
    }
    let vhosts = sections
        .entry("vhosts")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(vhosts) = vhosts {
        let declared = vhosts
            .iter()
            .any(|v| v.get("name").and_then(Value::as_str) == Some(vhost));
        if !declared {
            let mut entry = Map::new();
            entry.insert("name".into(), Value::from(vhost));
            vhosts.push(Value::Object(entry));
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_scoped_file_gets_its_vhost_everywhere_and_a_vhost_entry() {
        let mut document = json!({
            "rabbit_version": "3.12.4",
            "queues": [{"name": "q", "durable": true, "auto_delete": false, "arguments": {}}],
            "bindings": [{"source": "x", "destination": "q", "destination_type": "queue",
                          "routing_key": "", "arguments": {}}]
        });
        assert!(settle(&mut document, Some("tenant/eu")).unwrap());
        assert_eq!(document["queues"][0]["vhost"], "tenant/eu");
        assert_eq!(document["bindings"][0]["vhost"], "tenant/eu");
        assert_eq!(document["vhosts"], json!([{"name": "tenant/eu"}]));
    }

    #[test]
    fn a_scoped_file_needs_its_vhost() {
        let mut document = json!({"queues": [{"name": "q"}]});
        let (path, what) = settle(&mut document, None).unwrap_err();
        assert_eq!(path.to_string(), "/queues/0");
        assert!(what.contains("--vhost NAME"), "{what}");
    }

    #[test]
    fn every_object_of_a_scoped_file_goes_into_the_vhost_given() {
        // 3.10 writes `vhost` into the policies of a vhost's export only.
        let mut document = json!({
            "queues": [{"name": "a"}],
            "policies": [{"name": "p", "vhost": "orders"}]
        });
        assert!(settle(&mut document, Some("orders-copy")).unwrap());
        assert_eq!(document["policies"][0]["vhost"], "orders-copy");
        assert_eq!(document["queues"][0]["vhost"], "orders-copy");
    }

    #[test]
    fn whole_broker_files_are_left_as_they_are() {
        let mut document = json!({"queues": [{"name": "a", "vhost": "/"}], "vhosts": []});
        let before = document.clone();
        assert!(!settle(&mut document, Some("other")).unwrap());
        assert_eq!(document, before);
    }
}
