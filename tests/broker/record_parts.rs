//! A spec's ownership record is stored in parts (its head names them): each apply
//! writes the parts whose content changed and its head, then deletes the parts the head
//! no longer names; parts left by an apply stopped before its head do no harm and are
//! deleted by the next apply.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::node::{Node, Version, pct};
use crate::spec::Spec;

fn queues_spec(spec: &str, vhost: &str, count: usize) -> String {
    let mut text = format!("version: 1\nname: {spec}\nvhosts:\n  {vhost}:\n    queues:\n");
    for n in 0..count {
        text.push_str(&format!("      q{n:05}: {{ type: classic }}\n"));
    }
    text
}

/// The parts the record's head names.
fn named_parts(record: &Value) -> BTreeSet<String> {
    record["parts"]
        .as_array()
        .unwrap_or_else(|| panic!("a head without parts: {record}"))
        .iter()
        .map(|part| part.as_str().unwrap().to_string())
        .collect()
}

/// The record's queues, by name.
fn recorded_queues(record: &Value) -> BTreeSet<String> {
    record["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry[0] == "queue")
        .map(|entry| entry[2].as_str().unwrap().to_string())
        .collect()
}

fn a_record_is_written_where_it_changed(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("parts");
    let name = format!("parts-{vhost}");
    // Past the most entries a part holds (4,096), so that the record is in two parts at
    // least whatever the vhost's name: where parts end below that depends on the hash of
    // each entry, and the vhost's name differs in every run.
    let count = 4_200;
    let spec = Spec::new(&queues_spec(&name, &vhost, count));
    node.apply(spec.arg()).expect(0);
    let record = node.record(&name).expect("a record");
    assert_eq!(record["format"], 2, "{version}");
    let parts = named_parts(&record);
    assert!(parts.len() >= 2, "{version}: {} parts", parts.len());
    assert_eq!(recorded_queues(&record).len(), count, "{version}");
    // Every part is far below the smallest body limit of a supported line (8 MB).
    for part in &parts {
        let stored = node.get(&format!("/api/global-parameters/{}", pct(part)));
        let size = stored["value"].to_string().len();
        assert!(
            size < 1_000_000,
            "{version}: part {part} holds {size} bytes"
        );
    }
    let left = |record: &Value| -> BTreeSet<String> {
        let named = named_parts(record);
        node.record_parts(&name)
            .into_iter()
            .filter(|part| !named.contains(part))
            .collect()
    };
    assert!(left(&record).is_empty(), "{version}: no part left over");

    // One queue fewer: the part that listed it is written anew, the others stay.
    spec.write(&queues_spec(&name, &vhost, count - 1));
    node.apply(spec.arg()).expect(0);
    let after = node.record(&name).unwrap();
    let after_parts = named_parts(&after);
    let new: Vec<&String> = after_parts.difference(&parts).collect();
    assert!(
        (1..=2).contains(&new.len()),
        "{version}: {} of {} parts written again",
        new.len(),
        parts.len()
    );
    assert_eq!(recorded_queues(&after).len(), count - 1, "{version}");
    assert_eq!(after["serial"], record["serial"].as_u64().unwrap() + 1);
    assert!(
        left(&after).is_empty(),
        "{version}: the replaced part is deleted"
    );

    // A part no head names, as an apply stopped between its parts and its head leaves
    // it: the record reads as before, and the next apply deletes it.
    let stray = format!("warren.{name}@@0000000000000000");
    node.put(
        &format!("/api/global-parameters/{}", pct(&stray)),
        &json!({"name": stray, "value": {"spec": name, "objects": json!([["queue", vhost, "elsewhere"]]).to_string()}}),
    );
    node.plan(spec.arg()).expect(0);
    spec.write(&queues_spec(&name, &vhost, count - 2));
    node.apply(spec.arg()).expect(0);
    let last = node.record(&name).unwrap();
    assert!(
        left(&last).is_empty(),
        "{version}: the stray part is deleted"
    );
    assert!(!recorded_queues(&last).contains("elsewhere"));
    node.plan(spec.arg()).expect(0);
    node.remove_vhost(&vhost);
    node.delete_record(&name);
}

per_version!(a_record_is_written_where_it_changed);
