//! `warren import` from live brokers as a team adopting warren meets them: objects
//! another spec manages, permissions of users the spec does not hold, and a vhost's
//! own export (`GET /api/definitions/{vhost}`).

use serde_json::json;

use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::{Capture, Run};

/// Imports `vhost` from `node` as spec `name`; returns the spec and the run.
fn import(node: &Node, vhost: &str, name: &str) -> (tempfile::TempDir, String, Run) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("imported.yaml");
    let spec = spec.to_str().unwrap().to_string();
    let run = node
        .cli(&["import", "--vhost", vhost, "--name", name, "-o", &spec])
        .run();
    (dir, spec, run)
}

/// A spec that manages a vhost keeps it: an import under another name leaves the
/// vhost and everything in it out, naming the owner, so the imported spec plans with
/// no conflict; an import under the owner's name takes it all, and its plan changes
/// nothing on the broker (it adopts what the owner did not manage yet).
fn objects_of_another_spec_are_left_out_unless_its_name_is_given(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("owned");
    let owner = format!("team-{vhost}");
    let spec = Spec::new(&format!(
        "version: 1\nname: {owner}\nvhosts:\n  {vhost}:\n    queues:\n      a: {{ type: classic }}\n      b: {{ type: quorum }}\n"
    ));
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    // A queue someone made by hand, which no spec manages.
    node.put(
        &format!("/api/queues/{}/loose", pct(&vhost)),
        &json!({"durable": true}),
    );

    let (_dir, imported, run) = import(node, &vhost, &format!("other-{vhost}"));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("managed by spec `{owner}`"))
            && run.stderr.contains(&format!("--name {owner}")),
        "{}",
        run.stderr
    );
    let text = std::fs::read_to_string(&imported).unwrap();
    assert!(text.contains("vhosts: {}"), "{text}");

    let (_dir, imported, run) = import(node, &vhost, &owner);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // Nothing of the owner's is left out (other tests' specs may manage users).
    assert!(
        !run.stderr.contains(&format!("managed by spec `{owner}`")),
        "{}",
        run.stderr
    );
    let text = std::fs::read_to_string(&imported).unwrap();
    assert!(text.contains("loose") && text.contains("quorum"), "{text}");
    let planned = node
        .cli(&["plan", "--detailed-exitcode", &imported, "--format", "json"])
        .expect(2);
    let plan: serde_json::Value = serde_json::from_str(&planned.stdout).unwrap();
    assert_eq!(plan["changes"], json!([]), "{}", planned.stdout);
    assert_eq!(plan["summary"]["adopt"], 1, "{}", planned.stdout);
    node.apply(&imported)
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    node.plan(&imported).expect(0);
}

/// A user made by another tool (here over the API) belongs to no spec: a spec
/// manages its permissions as an `external` user; a user that exists nowhere stops
/// the plan at the user's line before anything is applied.
fn permissions_of_users_the_spec_does_not_hold(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("external");
    let name = format!("external-{vhost}");
    let app = format!("app-{vhost}");
    node.put(
        &format!("/api/users/{}", pct(&app)),
        &json!({"password": "app-pw", "tags": ""}),
    );
    let text = |user: &str| {
        format!(
            "version: 1\nname: {name}\nvhosts:\n  {vhost}: {{}}\nusers:\n  {user}:\n    external: true\n    permissions:\n      {vhost}: {{ configure: \"^$\", write: \"^orders$\", read: \"^orders\\\\.\" }}\n"
        )
    };
    let spec = Spec::new(&text(&app));
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    let permission = node.get(&format!("/api/permissions/{}/{}", pct(&vhost), pct(&app)));
    assert_eq!(permission["write"], "^orders$", "{permission}");
    node.plan(spec.arg()).expect(0);
    let user = node.get(&format!("/api/users/{}", pct(&app)));
    assert!(
        user["password_hash"]
            .as_str()
            .is_some_and(|h| !h.is_empty()),
        "the user itself is untouched: {user}"
    );

    // Imported back from the broker, which has the user and no spec manages it: the
    // user comes with its hash, and the plan adopts it without changing anything.
    let (_dir, imported, run) = import(node, &vhost, &name);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let imported_text = std::fs::read_to_string(&imported).unwrap();
    assert!(
        imported_text.contains(&format!("{app}:\n    password_hash:"))
            && imported_text.contains("^orders$"),
        "{imported_text}"
    );
    let planned = node
        .cli(&["plan", "--detailed-exitcode", &imported, "--format", "json"])
        .expect(2);
    let plan: serde_json::Value = serde_json::from_str(&planned.stdout).unwrap();
    assert_eq!(plan["changes"], json!([]), "{}", planned.stdout);
    assert_eq!(plan["summary"]["adopt"], 1, "{}", planned.stdout);

    let missing = format!("nobody-{vhost}");
    spec.write(&text(&missing));
    let refused = node.plan(spec.arg()).expect(1);
    assert!(
        refused
            .stderr
            .contains(&format!("user `{missing}` does not exist on the broker"))
            && refused.stderr.contains(&format!("{}:6:", spec.arg())),
        "{}",
        refused.stderr
    );
}

/// A vhost's own export (`GET /api/definitions/{vhost}`: no `vhost` keys, no users)
/// imports with `--vhost`, diffs against itself with no change, and the imported
/// spec plans no change against the broker.
fn a_vhost_scoped_export_round_trips(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("scoped");
    node.put(&format!("/api/vhosts/{}", pct(&vhost)), &json!({}));
    node.put(
        &format!("/api/permissions/{}/{}", pct(&vhost), node_user(node)),
        &json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
    let scoped = json!({
        "exchanges": [{"name": "events", "type": "topic", "durable": true,
                       "auto_delete": false, "internal": false,
                       "arguments": {"alternate-exchange": "events.unrouted"}},
                      {"name": "events.unrouted", "type": "fanout", "durable": true,
                       "auto_delete": false, "internal": false, "arguments": {}}],
        "queues": [{"name": "audit", "durable": true, "auto_delete": false,
                    "arguments": {"x-queue-type": "quorum"}}],
        "bindings": [{"source": "events", "destination": "audit", "destination_type": "queue",
                      "routing_key": "#", "arguments": {}}],
        "policies": [{"name": "audit-limit", "pattern": "^audit$", "apply-to": "queues",
                      "priority": 1, "definition": {"max-length": 100000}}]
    });
    node.post(&format!("/api/definitions/{}", pct(&vhost)), &scoped);
    let export = node.get(&format!("/api/definitions/{}", pct(&vhost)));
    assert!(export["queues"][0].get("vhost").is_none(), "{export}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scoped.json");
    std::fs::write(&file, serde_json::to_string_pretty(&export).unwrap()).unwrap();
    let file = file.to_str().unwrap();
    let spec = dir.path().join("imported.yaml");
    let spec = spec.to_str().unwrap();
    let name = format!("scoped-{vhost}");

    let refused = node.cli(&["import", "--from", file, "-o", spec]).expect(1);
    assert!(
        refused.stderr.contains("--vhost NAME"),
        "{}",
        refused.stderr
    );
    node.cli(&[
        "import", "--from", file, "--vhost", &vhost, "--name", &name, "-o", spec,
    ])
    .expect(0);
    crate::support::warren(&["diff", spec, "--against", file, "--vhost", &vhost])
        .run()
        .expect(0);
    let planned = node
        .cli(&["plan", "--detailed-exitcode", spec, "--format", "json"])
        .expect(2);
    let plan: serde_json::Value = serde_json::from_str(&planned.stdout).unwrap();
    assert_eq!(plan["changes"], json!([]), "{}", planned.stdout);
    node.apply(spec).with(&["--lock-timeout", "2m"]).expect(0);
    node.plan(spec).expect(0);
}

fn node_user(node: &Node) -> String {
    node.get("/api/whoami")["name"]
        .as_str()
        .unwrap()
        .to_string()
}

/// An imported spec records the broker's line (`rabbitmq`), and validates for it with
/// no flag; a spec that names another line than the broker's is planned for the
/// broker's, with a warning at its `rabbitmq` key.
fn an_imported_spec_records_the_broker_s_line_and_plan_says_when_it_differs(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("line");
    node.put(&format!("/api/vhosts/{}", pct(&vhost)), &json!({}));
    node.put(
        &format!("/api/queues/{}/jobs", pct(&vhost)),
        &json!({"durable": true, "arguments": {"x-queue-type": "classic"}}),
    );
    let name = format!("line-{vhost}");
    let (_dir, spec, run) = import(node, &vhost, &name);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = match version {
        Version::V3_10 => "3.10",
        Version::V4_0 => "4.0",
        _ => "4.3",
    };
    let yaml = std::fs::read_to_string(&spec).unwrap();
    assert!(
        yaml.contains(&format!("rabbitmq: '{line}'"))
            || yaml.contains(&format!("rabbitmq: \"{line}\"")),
        "{yaml}"
    );
    let valid = crate::support::warren(&["validate", &spec]).run();
    assert!(
        valid.code == Some(0) && valid.stdout.contains(&format!("for RabbitMQ {line}")),
        "{}{}",
        valid.stdout,
        valid.stderr
    );
    // The same spec claiming the other line: planned for the broker's, with a warning.
    let other = if line == "3.10" { "4.3" } else { "3.10" };
    let claimed = yaml
        .replace(&format!("'{line}'"), &format!("'{other}'"))
        .replace(&format!("\"{line}\""), &format!("\"{other}\""));
    std::fs::write(&spec, claimed).unwrap();
    let plan = node.plan(&spec).expect(0);
    assert!(
        plan.stderr.contains("rabbitmq-line-differs")
            && plan
                .stderr
                .contains(&format!("planned for {line}, the broker's line"))
            && plan.stderr.contains("imported.yaml:"),
        "{}",
        plan.stderr
    );
    node.remove_vhost(&vhost);
}

/// A stream's `x-max-age` is a duration: RabbitMQ 4.3.6 takes `24h` for the `1D` a
/// stream was declared with, and warren compares them the same way on every line, so a
/// spec that writes `24h` for it adopts the stream and plans no replacement.
fn a_stream_s_max_age_compares_as_a_duration(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("max-age");
    node.put(&format!("/api/vhosts/{}", pct(&vhost)), &json!({}));
    node.put(
        &format!("/api/queues/{}/events", pct(&vhost)),
        &json!({"durable": true, "arguments": {"x-queue-type": "stream", "x-max-age": "1D"}}),
    );
    let spec = Spec::new(&format!(
        "version: 1\nname: max-age-{vhost}\nvhosts:\n  {vhost}:\n    queues:\n      events:\n        type: stream\n        arguments: {{ x-max-age: 24h }}\n"
    ));
    let planned = node.cli(&["plan", spec.arg(), "--format", "json"]).run();
    assert_eq!(planned.code, Some(0), "{}", planned.stderr);
    let plan: serde_json::Value = serde_json::from_str(&planned.stdout).unwrap();
    assert_eq!(plan["changes"], json!([]), "{}", planned.stdout);
    let adopted = plan["adopted"].as_array().cloned().unwrap_or_default();
    assert!(
        adopted
            .iter()
            .any(|id| id["kind"] == "queue" && id["name"] == "events"),
        "{}",
        planned.stdout
    );
    node.remove_vhost(&vhost);
}

per_version!(
    a_stream_s_max_age_compares_as_a_duration;
    also_on_4_0:
        objects_of_another_spec_are_left_out_unless_its_name_is_given,
        permissions_of_users_the_spec_does_not_hold,
        a_vhost_scoped_export_round_trips,
        an_imported_spec_records_the_broker_s_line_and_plan_says_when_it_differs,
);
