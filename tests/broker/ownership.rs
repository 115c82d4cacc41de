//! Ownership records as users meet them: objects found as declared are adopted, a
//! saved plan survives unrelated noise but not a policy that changes what its objects
//! do, and a record that does not read stops every plan until it is repaired.

use serde_json::{Value, json};

use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;

fn spec_text(name: &str, vhost: &str, queues: &[&str]) -> String {
    let mut text = format!("version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    queues:\n");
    for queue in queues {
        text.push_str(&format!("      {queue}: {{ type: classic }}\n"));
    }
    text
}

fn record_path(spec: &str) -> String {
    format!("/api/global-parameters/{}", pct(&format!("warren.{spec}")))
}

fn adoption_takes_ownership(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("adopt");
    let name = format!("adopt-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, &["a", "b"]));
    node.apply(spec.arg()).expect(0);
    // As after booting a broker from `warren export`: the objects, no record.
    node.delete_record(&name);
    let planned = node
        .cli(&["plan", "--detailed-exitcode", spec.arg()])
        .expect(2);
    assert!(
        planned.stdout.contains("3 existing objects adopted")
            && planned.stdout.contains("= queue \"a\""),
        "{}",
        planned.stdout
    );
    let applied = node.apply(spec.arg()).expect(0);
    assert!(
        applied.stdout.contains("3 existing objects adopted"),
        "{}",
        applied.stdout
    );
    node.plan(spec.arg()).expect(0);
    // Now removing one from the spec deletes it: it is managed.
    spec.write(&spec_text(&name, &vhost, &["a"]));
    let planned = node
        .cli(&["plan", "--detailed-exitcode", spec.arg()])
        .expect(2);
    assert!(planned.stdout.contains("- b"), "{}", planned.stdout);
    // Another spec's objects are never adopted.
    let other = Spec::new(&spec_text(&format!("other-{vhost}"), &vhost, &["a"]));
    let refused = node.plan(other.arg()).expect(4);
    assert!(
        refused.stdout.contains(&format!("(spec `{name}`)")) && !refused.stdout.contains("adopted"),
        "{}",
        refused.stdout
    );
}

fn saved_plans_survive_noise_but_not_a_policy_that_changes_their_objects(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("noise");
    let name = format!("noise-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, &["orders"]));
    node.apply(spec.arg()).expect(0);
    spec.write(&spec_text(&name, &vhost, &["orders", "invoices"]));
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let plan = plan.to_str().unwrap();
    node.cli(&["plan", "--detailed-exitcode", spec.arg(), "-o", plan])
        .expect(2);
    // An application's reply queue and another team's queue appear: not this plan's
    // business.
    let queue = |q: &str, body: Value| {
        node.put(&format!("/api/queues/{}/{q}", pct(&vhost)), &body);
    };
    queue("reply-4711", json!({"durable": false, "auto_delete": true}));
    queue("team-b-jobs", json!({"durable": true}));
    node.cli(&["apply", plan]).expect(0);

    // A policy of another team that starts applying to `orders` changes what it does.
    spec.write(&spec_text(
        &name,
        &vhost,
        &["orders", "invoices", "refunds"],
    ));
    node.cli(&["plan", "--detailed-exitcode", spec.arg(), "-o", plan])
        .expect(2);
    node.put(
        &format!("/api/policies/{}/team-b-ttl", pct(&vhost)),
        &json!({"pattern": "^orders$", "apply-to": "queues", "definition": {"message-ttl": 1000}, "priority": 5}),
    );
    let stale = node.cli(&["apply", plan]).expect(4);
    assert!(
        stale.stderr.contains("changed since this plan was made")
            && stale.stderr.contains("policy applied to queue \"orders\"")
            && stale.stderr.contains("is now `team-b-ttl`"),
        "{}",
        stale.stderr
    );
    assert!(
        node.get_opt(&format!("/api/queues/{}/refunds", pct(&vhost)))
            .is_none(),
        "nothing was changed"
    );
}

fn a_damaged_record_fails_closed_until_repaired(version: Version) {
    // A node of its own: a record whose claims cannot be read stops every plan on it.
    let node = &Node::start(version, NodeOptions::default());
    let vhost = node.unused_vhost("damaged");
    let team_c = format!("c-{vhost}");
    let c = Spec::new(&spec_text(&team_c, &vhost, &["jobs", "audit"]));
    node.apply(c.arg()).expect(0);
    let mut record = node.get(&record_path(&team_c))["value"].clone();
    record["applied_at"] = json!("yesterday");
    node.put(
        &record_path(&team_c),
        &json!({"name": format!("warren.{team_c}"), "value": record}),
    );
    // Another spec declaring teamC's queue: its claims still read, so they hold: the
    // plan shows the conflict, and teamC's other queue is not "unmanaged".
    let d = Spec::new(&spec_text(&format!("d-{vhost}"), &vhost, &["jobs"]));
    let refused = node.cli(&["plan", d.arg(), "--prune-unmanaged"]).expect(4);
    assert!(
        refused.stdout.contains(&format!(
            "queue \"jobs\" in vhost \"{vhost}\" (spec `{team_c}`)"
        )) && !refused.stdout.contains("audit"),
        "{}",
        refused.stdout
    );
    let says = format!("the ownership record `warren.{team_c}` cannot be read");
    // teamC's own plan and apply stop too, instead of "No changes".
    let own = node.plan(c.arg()).expect(4);
    assert!(own.stderr.contains(&says), "{}", own.stderr);
    node.apply(c.arg()).expect(4);
    let shown = node.cli(&["state", "show", &team_c]).expect(0);
    assert!(
        shown.stdout.contains("is DAMAGED") && shown.stdout.contains("\"yesterday\""),
        "{}",
        shown.stdout
    );
    let repaired = node
        .cli(&["state", "repair", c.arg(), "--auto-approve"])
        .expect(0);
    assert!(
        repaired.stdout.contains("keeps 3 object entries")
            && repaired.stdout.contains("written with 3 objects"),
        "{}",
        repaired.stdout
    );
    node.plan(c.arg()).expect(0);
    let conflict = node.plan(d.arg()).expect(4);
    assert!(
        conflict.stdout.contains(&format!("(spec `{team_c}`)")),
        "{}",
        conflict.stdout
    );
    let again = node.cli(&["state", "repair", &team_c]).expect(0);
    assert!(
        again.stdout.contains("nothing to repair"),
        "{}",
        again.stdout
    );

    // A record whose claims cannot be read at all stops every spec's plan: any
    // object may be one of them. Repair without the spec keeps what reads.
    // The record's first part: its objects are stored there.
    let record = node.record(&team_c).unwrap();
    let part = record["parts"][0].as_str().unwrap().to_string();
    let part_path = format!("/api/global-parameters/{}", pct(&part));
    let mut stored = node.get(&part_path)["value"].clone();
    let mut entries: Vec<Value> =
        serde_json::from_str(stored["objects"].as_str().unwrap()).unwrap();
    entries[0] = json!(["teapot", vhost, "jobs"]);
    stored["objects"] = json!(serde_json::to_string(&entries).unwrap());
    node.put(&part_path, &json!({"name": part, "value": stored}));
    let stopped = node.plan(d.arg()).expect(4);
    assert!(stopped.stderr.contains(&says), "{}", stopped.stderr);
    let repaired = node
        .cli(&["state", "repair", &team_c, "--auto-approve"])
        .expect(0);
    assert!(
        repaired.stdout.contains("keeps 2 object entries")
            && repaired.stdout.contains("dropped, unreadable"),
        "{}",
        repaired.stdout
    );
    let repaired = node
        .cli(&["state", "repair", c.arg(), "--auto-approve"])
        .expect(0);
    assert!(
        repaired.stdout.contains("nothing to repair"),
        "{}",
        repaired.stdout
    );
    node.plan(d.arg()).expect(4);
}

/// A second spec that declares a queue the first one manages, and nothing else: its
/// plan is refused, and it does not say the broker matches it.
fn a_refused_plan_does_not_say_the_broker_matches_the_spec(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("refused");
    let owner = Spec::new(&spec_text(&format!("owner-{vhost}"), &vhost, &["shared"]));
    node.apply(owner.arg()).expect(0);
    let other = Spec::new(&spec_text(&format!("other-{vhost}"), &vhost, &["shared"]));
    for format in ["text", "markdown"] {
        let refused = node
            .cli(&["plan", other.arg(), "--format", format])
            .expect(4);
        assert!(
            refused.stdout.contains("spec `owner-")
                && refused.stdout.contains("No other changes.")
                && !refused.stdout.contains("The broker matches the spec."),
            "{version} {format}:\n{}",
            refused.stdout
        );
    }
    node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
}

per_version!(
    a_refused_plan_does_not_say_the_broker_matches_the_spec,
    adoption_takes_ownership,
    saved_plans_survive_noise_but_not_a_policy_that_changes_their_objects,
    a_damaged_record_fails_closed_until_repaired,
);
