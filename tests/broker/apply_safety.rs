//! Apply never loses a message it did not show: the broker checks a queue at the
//! moment warren deletes it, so messages that arrive after the plan was made (or that
//! the lagging statistics do not show yet) stop the deletion; and a saved plan can
//! only do what a fresh plan would do, on the broker it was made against.

use serde_json::json;
use sha2::Digest;

use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

/// A spec with plain queues `name: type` in `vhost`.
fn queues_spec(spec: &str, vhost: &str, queues: &[(&str, &str)]) -> String {
    let mut text = format!("version: 1\nname: {spec}\nvhosts:\n  {vhost}:\n    queues:\n");
    for (name, kind) in queues {
        text.push_str(&format!("      {name}: {{ type: {kind} }}\n"));
    }
    text
}

/// Publishes `count` persistent messages to a queue through the default exchange.
fn publish(node: &Node, vhost: &str, queue: &str, count: usize) {
    for n in 0..count {
        let answer = node.post(
            &format!("/api/exchanges/{}/amq.default/publish", pct(vhost)),
            &json!({"properties": {"delivery_mode": 2}, "routing_key": queue,
                    "payload": format!("precious-{n}"), "payload_encoding": "string"}),
        );
        assert_eq!(answer["routed"], true, "publish to {queue}");
    }
}

/// The queue's type and, once the statistics show it, its message count. The
/// statistics are emitted every 5 s and lag further on a loaded node: the wait is a
/// bound for a count that never shows, not for a late one.
#[track_caller]
fn assert_holds(node: &Node, vhost: &str, queue: &str, kind: &str, expected: u64) {
    let path = format!("/api/queues/{}/{}", pct(vhost), pct(queue));
    let mut last = serde_json::Value::Null;
    let shown = node.wait_until(std::time::Duration::from_secs(90), || {
        last = node.get_opt(&path).unwrap_or_default();
        last["messages"].as_u64() == Some(expected)
    });
    assert!(
        shown,
        "{}: queue `{queue}` should hold {expected} messages; last answer: {last}",
        node.version
    );
    assert_eq!(last["type"], kind, "queue `{queue}` was not replaced");
}

/// Reproduction: a saved plan replaces an empty queue; messages arrive; the plan is
/// applied.
fn a_saved_replace_keeps_messages_that_arrived_after_planning(version: Version) {
    let node = Node::shared(version);
    for (from, to) in [("classic", "quorum"), ("quorum", "classic")] {
        let vhost = node.unused_vhost(&format!("guard-replace-{from}"));
        let name = format!("guard-{vhost}");
        let spec = Spec::new(&queues_spec(&name, &vhost, &[("audit", from)]));
        node.apply(spec.arg()).expect(0);
        spec.write(&queues_spec(&name, &vhost, &[("audit", to)]));
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan.json");
        let planned = node
            .cli(&[
                "plan",
                "--detailed-exitcode",
                spec.arg(),
                "-o",
                plan.to_str().unwrap(),
            ])
            .expect(2);
        assert!(planned.stdout.contains("~> audit"), "{}", planned.stdout);
        assert!(!planned.stdout.contains("DATA LOSS"), "{}", planned.stdout);

        publish(node, &vhost, "audit", 3);
        let refused = node.cli(&["apply", plan.to_str().unwrap()]).expect(4);
        // Counted by the queue under the locks, before the first write.
        assert!(
            refused
                .stderr
                .contains("refusing to apply: the broker counts")
                && refused.stderr.contains("queue \"audit\" in vhost")
                && refused.stderr.contains("holds 3 ready messages")
                && refused.stderr.contains("nothing was changed"),
            "{from} → {to}: {}",
            refused.stderr
        );
        assert_holds(node, &vhost, "audit", from, 3);
    }
}

/// Reproduction: a saved plan deletes an empty queue; messages arrive and show in the
/// statistics; the plan is applied.
fn a_saved_delete_keeps_messages_that_arrived_after_planning(version: Version) {
    let node = Node::shared(version);
    for kind in ["classic", "quorum"] {
        let vhost = node.unused_vhost(&format!("guard-delete-{kind}"));
        let name = format!("guard-{vhost}");
        let spec = Spec::new(&queues_spec(
            &name,
            &vhost,
            &[("audit", kind), ("extra", kind)],
        ));
        node.apply(spec.arg()).expect(0);
        spec.write(&queues_spec(&name, &vhost, &[("audit", kind)]));
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan.json");
        node.cli(&[
            "plan",
            "--detailed-exitcode",
            spec.arg(),
            "-o",
            plan.to_str().unwrap(),
        ])
        .expect(2);

        publish(node, &vhost, "extra", 5);
        assert_holds(node, &vhost, "extra", kind, 5);
        let refused = node.cli(&["apply", plan.to_str().unwrap()]).expect(4);
        assert!(
            refused.stderr.contains("queue \"extra\" in vhost")
                && refused.stderr.contains("holds 5 ready messages"),
            "{kind}: {}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains("nothing was changed") && !refused.stderr.contains("was made"),
            "refused before the first write: {}",
            refused.stderr
        );
        assert_holds(node, &vhost, "extra", kind, 5);
    }
}

/// Reproduction: messages published just before `apply SPEC`, which the lagging
/// statistics do not show to the plan.
fn messages_the_statistics_do_not_show_yet_are_kept(version: Version) {
    let node = Node::shared(version);
    for (from, to) in [("classic", "quorum"), ("quorum", "classic")] {
        let vhost = node.unused_vhost(&format!("guard-fresh-{from}"));
        let name = format!("guard-{vhost}");
        let spec = Spec::new(&queues_spec(&name, &vhost, &[("audit", from)]));
        node.apply(spec.arg()).expect(0);
        spec.write(&queues_spec(&name, &vhost, &[("audit", to)]));
        publish(node, &vhost, "audit", 3);
        let refused = node.apply(spec.arg()).expect(4);
        assert!(
            refused.stderr.contains("queue \"audit\""),
            "{from} → {to}: {}",
            refused.stderr
        );
        assert_holds(node, &vhost, "audit", from, 3);
        // Accepting the loss replaces it.
        node.apply(spec.arg())
            .with(&["--allow-data-loss"])
            .expect(0);
        node.plan(spec.arg()).expect(0);
    }
}

/// Streams keep their log, and the broker has no emptiness check for them: deleting
/// one is always shown as data loss and needs `--allow-data-loss`.
fn deleting_a_stream_needs_allow_data_loss(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("guard-stream");
    let name = format!("guard-{vhost}");
    let spec = Spec::new(&queues_spec(
        &name,
        &vhost,
        &[("audit", "quorum"), ("events", "stream")],
    ));
    node.apply(spec.arg()).expect(0);
    publish(node, &vhost, "events", 2);
    spec.write(&queues_spec(&name, &vhost, &[("audit", "quorum")]));
    let planned = node
        .cli(&["plan", "--detailed-exitcode", spec.arg()])
        .expect(2);
    assert!(
        planned.stdout.contains("DATA LOSS: a stream's log"),
        "{}",
        planned.stdout
    );
    let refused = node.apply(spec.arg()).expect(4);
    assert!(
        refused.stderr.contains("holds a stream's log"),
        "{}",
        refused.stderr
    );
    assert!(
        node.get_opt(&format!("/api/queues/{}/events", pct(&vhost)))
            .is_some()
    );
    node.apply(spec.arg())
        .with(&["--allow-data-loss"])
        .expect(0);
    assert!(
        node.get_opt(&format!("/api/queues/{}/events", pct(&vhost)))
            .is_none()
    );
}

/// Reproduction: a saved plan edited to delete an unmanaged queue holding messages.
/// Apply computes the changes again and refuses a plan that does more (or less) than
/// a fresh plan would.
fn an_edited_plan_is_refused_and_changes_nothing(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("edited");
    let name = format!("edited-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, &[("audit", "quorum")]));
    node.apply(spec.arg()).expect(0);
    node.put(
        &format!("/api/queues/{}/handmade_msgs", pct(&vhost)),
        &json!({"durable": true, "arguments": {"x-queue-type": "classic"}}),
    );
    publish(node, &vhost, "handmade_msgs", 3);
    spec.write(&queues_spec(
        &name,
        &vhost,
        &[("audit", "quorum"), ("audit2", "quorum")],
    ));
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    node.cli(&[
        "plan",
        "--detailed-exitcode",
        spec.arg(),
        "-o",
        plan.to_str().unwrap(),
    ])
    .expect(2);
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    document["changes"].as_array_mut().unwrap().push(json!({
        "action": "delete",
        "id": {"kind": "queue", "vhost": vhost, "name": "handmade_msgs"},
        "before": {"durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}}
    }));
    std::fs::write(&plan, document.to_string()).unwrap();

    let refused = node
        .cli(&["apply", plan.to_str().unwrap(), "--allow-data-loss"])
        .expect(4);
    assert!(
        refused
            .stderr
            .contains("1 change a fresh plan would not make")
            && refused.stderr.contains("handmade_msgs"),
        "{}",
        refused.stderr
    );
    assert_holds(node, &vhost, "handmade_msgs", "classic", 3);
    assert!(
        node.get_opt(&format!("/api/queues/{}/audit2", pct(&vhost)))
            .is_none(),
        "nothing of the plan was applied"
    );
}

/// The digest `plan -o` prints after a Markdown plan (what a pull request shows).
fn printed_digest(markdown: &str) -> String {
    let (_, after) = markdown
        .split_once("digest `")
        .unwrap_or_else(|| panic!("no digest after the plan: {markdown}"));
    after[..after.find('`').unwrap()].to_string()
}

/// A reviewed plan is the applied plan: `plan -o` prints the saved file's digest with
/// the Markdown a pull request shows, and `apply FILE --expect-digest` refuses any
/// other file, here a consistent one (the plan of a spec with one more queue, which
/// the recheck alone would accept), with exit 4 and nothing changed; the reviewed file
/// then applies.
fn only_the_reviewed_plan_applies(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("digest");
    let name = format!("digest-{vhost}");
    let dir = tempfile::tempdir().unwrap();
    let plan_of = |queues: &[(&str, &str)], file: &str| {
        let spec = Spec::new(&queues_spec(&name, &vhost, queues));
        let path = dir.path().join(file);
        let run = node
            .cli(&[
                "plan",
                spec.arg(),
                "--format",
                "markdown",
                "-o",
                path.to_str().unwrap(),
            ])
            .expect(0);
        let digest = printed_digest(&run.stdout);
        let bytes = std::fs::read(&path).unwrap();
        let hex: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            digest,
            format!("sha256:{hex}"),
            "the digest of the file's bytes"
        );
        (path, digest)
    };
    let (reviewed, digest) = plan_of(&[("audit", "quorum")], "reviewed.json");
    let (other, _) = plan_of(&[("audit", "quorum"), ("audit2", "quorum")], "other.json");
    std::fs::copy(&other, &reviewed).unwrap();
    let refused = node
        .cli(&[
            "apply",
            reviewed.to_str().unwrap(),
            "--expect-digest",
            &digest,
        ])
        .expect(4);
    assert!(
        refused.stderr.contains("is not the plan that was reviewed")
            && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", pct(&vhost)))
            .is_none(),
        "{version}: nothing of the swapped plan was applied"
    );
    let (reviewed, digest) = plan_of(&[("audit", "quorum")], "reviewed.json");
    node.cli(&[
        "apply",
        reviewed.to_str().unwrap(),
        "--expect-digest",
        &digest,
    ])
    .expect(0);
    assert_holds(node, &vhost, "audit", "quorum", 0);
}

/// A plan made against one broker is refused by another (the shared test nodes of two
/// versions are two brokers), before anything is changed there.
fn a_plan_for_another_broker_is_refused(version: Version) {
    let node = Node::shared(version);
    // The other end of the range: both its shared nodes run for every scenario anyway.
    let other = Node::shared(match version {
        Version::V3_10 => Version::V4_3,
        Version::V4_0 | Version::V4_3 => Version::V3_10,
    });
    let vhost = node.unused_vhost("elsewhere");
    let name = format!("elsewhere-{vhost}");
    let spec = Spec::new(&queues_spec(&name, &vhost, &[("audit", "quorum")]));
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    node.cli(&[
        "plan",
        "--detailed-exitcode",
        spec.arg(),
        "-o",
        plan.to_str().unwrap(),
    ])
    .expect(2);
    let refused = other
        .warren(&["apply", plan.to_str().unwrap()])
        .run()
        .expect(4);
    assert!(
        refused.stderr.contains("does not apply to this broker")
            && refused.stderr.contains("made against another broker"),
        "{}",
        refused.stderr
    );
    assert!(
        other
            .get_opt(&format!("/api/vhosts/{}", pct(&vhost)))
            .is_none()
    );
    // On its own broker it applies.
    node.cli(&["apply", plan.to_str().unwrap()]).expect(0);
}

per_version!(
    an_edited_plan_is_refused_and_changes_nothing,
    only_the_reviewed_plan_applies,
    a_plan_for_another_broker_is_refused;
    also_on_4_0:
        a_saved_replace_keeps_messages_that_arrived_after_planning,
        a_saved_delete_keeps_messages_that_arrived_after_planning,
        messages_the_statistics_do_not_show_yet_are_kept,
        deleting_a_stream_needs_allow_data_loss,
);
