//! Objects other specs manage are not imported: the imported spec would claim them,
//! and its plan would stop on every one ("managed by another spec"). Naming the spec
//! that manages them (`--name`) imports them, to take that spec over.

use std::collections::BTreeMap;

use super::Notes;
use crate::model::objects::retain;
use crate::model::record::records;
use crate::model::{Definitions, ObjectId, ObjectKind};

/// Leaves out of `definitions` what specs other than `name` manage, with a note per
/// spec. A record whose claims cannot be read is an error: any object may be one of
/// them.
pub(super) fn leave_out_others(
    definitions: &mut Definitions,
    name: &str,
    notes: &mut Notes,
) -> Result<(), String> {
    let records = records(&definitions.global_parameters).map_err(|damaged| {
        format!("{damaged}; nothing can be imported until it is repaired (`warren state repair`)")
    })?;
    let claimed: BTreeMap<ObjectId, &str> = records
        .iter()
        .filter(|(spec, _)| spec.as_str() != name)
        .flat_map(|(spec, record)| {
            record
                .object_ids()
                .into_iter()
                .map(move |id| (id, spec.as_str()))
        })
        .collect();
    if claimed.is_empty() {
        return Ok(());
    }
    let mut removed = retain(definitions, |id| !claimed.contains_key(id));
    // A vhost another spec manages cannot be declared by this one, and neither can
    // anything in it: those objects go with the vhost, counted as its owner's.
    let vhost_owners: BTreeMap<String, &str> = removed
        .iter()
        .filter(|id| id.kind == ObjectKind::Vhost)
        .map(|id| (id.name.clone(), claimed[id]))
        .collect();
    let inside = retain(definitions, |id| {
        !id.vhost
            .as_ref()
            .is_some_and(|vhost| vhost_owners.contains_key(vhost))
    });
    let mut by_owner: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &removed {
        *by_owner.entry(claimed[id]).or_default() += 1;
    }
    for id in &inside {
        let vhost = id.vhost.as_deref().unwrap_or_default();
        *by_owner.entry(vhost_owners[vhost]).or_default() += 1;
    }
    removed.extend(inside);
    for (owner, count) in by_owner {
        notes.0.push(format!(
            "{count} object{} managed by spec `{owner}` (or in a vhost it manages) {} left out (give --name {owner} to import them and take that spec over)",
            if count == 1 { "" } else { "s" },
            if count == 1 { "is" } else { "are" },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::Record;
    use serde_json::json;

    fn definitions_with_record() -> Definitions {
        let mut record = Record {
            format: 1,
            spec: "orders-team".into(),
            serial: 1,
            ..Record::default()
        };
        record.set_objects(&[
            ObjectId::global(ObjectKind::Vhost, "orders"),
            ObjectId::in_vhost(ObjectKind::Queue, "orders", "work"),
            ObjectId::in_vhost(ObjectKind::Queue, "shared", "owned"),
        ]);
        serde_json::from_value(json!({
            "vhosts": [{"name": "orders"}, {"name": "shared"}],
            "queues": [
                {"name": "work", "vhost": "orders", "durable": true, "auto_delete": false, "arguments": {}},
                {"name": "by-hand", "vhost": "orders", "durable": true, "auto_delete": false, "arguments": {}},
                {"name": "owned", "vhost": "shared", "durable": true, "auto_delete": false, "arguments": {}},
                {"name": "free", "vhost": "shared", "durable": true, "auto_delete": false, "arguments": {}}
            ],
            "global_parameters": [{"name": Record::parameter_name("orders-team"),
                                   "value": serde_json::to_value(&record).unwrap()}]
        }))
        .unwrap()
    }

    fn queues(definitions: &Definitions) -> Vec<String> {
        definitions
            .queues
            .iter()
            .map(|q| format!("{}/{}", q.vhost, q.name))
            .collect()
    }

    #[test]
    fn another_specs_objects_and_its_vhosts_are_left_out_with_a_note() {
        let mut definitions = definitions_with_record();
        let mut notes = Notes::default();
        leave_out_others(&mut definitions, "imported", &mut notes).unwrap();
        assert_eq!(queues(&definitions), ["shared/free"]);
        assert_eq!(definitions.vhosts.len(), 1);
        assert_eq!(notes.0.len(), 1, "{:?}", notes.0);
        assert!(
            notes.0[0].starts_with("4 objects managed by spec `orders-team`")
                && notes.0[0].contains("--name orders-team"),
            "{:?}",
            notes.0
        );
    }

    #[test]
    fn naming_the_owner_imports_everything() {
        let mut definitions = definitions_with_record();
        let mut notes = Notes::default();
        leave_out_others(&mut definitions, "orders-team", &mut notes).unwrap();
        assert_eq!(queues(&definitions).len(), 4);
        assert!(notes.0.is_empty());
    }
}
