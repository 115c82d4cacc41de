//! What a pull-request job and a merge job see against a real broker: a plan made
//! without the applications' passwords, which apply refuses, distinct exit codes for a
//! refusal, and `apply --format json` as one document.

use serde_json::Value;

use crate::node::{Node, Version};
use crate::spec::Spec;
use crate::support::{Capture, Run};

/// A spec with one user, its password from the environment, and one queue. Applies
/// wait for the broker-wide lock, which every apply that changes a user takes: the
/// other tests run at the same time.
fn spec_text(name: &str, vhost: &str, tags: &str) -> String {
    format!(
        "version: 1\nname: {name}\nusers:\n  app-{vhost}:\n    password: {{ env: APP_PASSWORD_{var} }}\n    tags: [{tags}]\n    permissions:\n      {vhost}: {{ configure: \"\", write: \".*\", read: \".*\" }}\nvhosts:\n  {vhost}:\n    queues:\n      work: {{ type: classic }}\n",
        var = vhost.replace('-', "_").to_uppercase()
    )
}

fn variable(vhost: &str) -> String {
    format!("APP_PASSWORD_{}", vhost.replace('-', "_").to_uppercase())
}

fn document(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not one JSON document ({err}):\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        )
    })
}

/// A user's password checked by logging in to the management API as that user.
fn logs_in(node: &Node, user: &str, password: &str) -> bool {
    let answer = std::process::Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-u",
            &format!("{user}:{password}"),
            &node.url("/api/whoami"),
        ])
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&answer.stdout) == "200"
}

fn plan_without_application_passwords(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("pr");
    let name = format!("pr-{vhost}");
    let user = format!("app-{vhost}");
    let var = variable(&vhost);
    let spec = Spec::new(&spec_text(&name, &vhost, "management"));
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    let saved = saved.to_str().unwrap();

    // Nothing applied yet: the user is to be created, with a password nobody knows here.
    let planned = node
        .warren(&["plan", spec.arg(), "--detailed-exitcode", "-o", saved])
        .run()
        .expect(2);
    assert!(
        planned.stderr.contains("warning[unknown-secret]") && planned.stderr.contains(&var),
        "{}",
        planned.stderr
    );
    assert!(
        planned.stdout.contains("(password unknown:"),
        "{}",
        planned.stdout
    );
    // The saved plan is refused: it would create the user without its password.
    let refused = node.apply(saved).with(&["--lock-timeout", "2m"]).expect(4);
    assert!(
        refused.stderr.contains("made without the passwords of") && refused.stderr.contains(&var),
        "{}",
        refused.stderr
    );
    assert!(
        node.get_opt(&format!("/api/users/{user}")).is_none(),
        "nothing was created"
    );
    // `apply SPEC` reads the passwords itself, and needs them.
    let missing = node
        .apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(1);
    assert!(
        missing.stderr.contains("error[missing-secret]"),
        "{}",
        missing.stderr
    );
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .command()
        .env(&var, "first-pw")
        .run()
        .expect(0);
    assert!(logs_in(node, &user, "first-pw"));

    // Applied: a plan without the password compares it as unknown, not as a change.
    let same = node
        .warren(&["plan", spec.arg(), "--detailed-exitcode"])
        .run()
        .expect(0);
    assert!(same.stdout.contains("No changes."), "{}", same.stdout);
    // Another change to the same user: shown, and the live password is kept in the
    // plan's desired state; the saved plan is still refused.
    spec.write(&spec_text(&name, &vhost, "management, monitoring"));
    let changed = node
        .warren(&[
            "plan",
            spec.arg(),
            "--detailed-exitcode",
            "--format",
            "json",
            "-o",
            saved,
        ])
        .run()
        .expect(2);
    let plan = document(&changed);
    assert_eq!(
        plan["unknown_passwords"][&user],
        format!("environment variable `{var}`"),
        "{plan}"
    );
    let saved_plan: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    let desired_user = saved_plan["desired"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"]["name"] == user.as_str() && d["id"]["kind"] == "user")
        .expect("the user is desired");
    let live_user = node.get(&format!("/api/users/{user}"));
    assert_eq!(
        desired_user["value"]["password_hash"],
        live_user["password_hash"]
    );
    node.apply(saved).with(&["--lock-timeout", "2m"]).expect(4);
    assert!(
        logs_in(node, &user, "first-pw"),
        "the password is unchanged"
    );
    // With the password, the merge job applies it, as one JSON document.
    let applied = node
        .apply(spec.arg())
        .with(&["--format", "json", "--lock-timeout", "2m"])
        .command()
        .env(&var, "first-pw")
        .run()
        .expect(0);
    let json = document(&applied);
    assert_eq!(json["format"], "warren-apply/1", "{json}");
    assert!(json["error"].is_null(), "{json}");
    assert_eq!(
        json["applied"]["done"].as_array().map(Vec::len),
        Some(1),
        "{json}"
    );
    assert!(
        !applied.stdout.contains("first-pw") && !applied.stderr.contains("first-pw"),
        "the password never shows"
    );
    assert!(logs_in(node, &user, "first-pw"));
}

fn refusals_exit_4(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("refuse");
    let name = format!("refuse-{vhost}");
    let var = variable(&vhost);
    let spec = Spec::new(&spec_text(&name, &vhost, "management"));
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .command()
        .env(&var, "pw")
        .run()
        .expect(0);
    // A queue with a message, deleted by the spec: apply refuses with 4, and under
    // `--format json` says so in its one document.
    let answer = node.post(
        &format!("/api/exchanges/{}/amq.default/publish", crate::node::pct(&vhost)),
        &serde_json::json!({"properties": {}, "routing_key": "work", "payload": "m", "payload_encoding": "string"}),
    );
    assert_eq!(answer["routed"], true, "{answer}");
    spec.write(
        &spec_text(&name, &vhost, "management")
            .replace("      work: { type: classic }\n", "")
            .replace("    queues:\n", "    queues: {}\n"),
    );
    // The statistics show the message after a moment (emitted every 5 s, later on a
    // loaded node): plan until the plan shows it.
    let shown = node.wait_until(std::time::Duration::from_secs(90), || {
        node.plan(spec.arg())
            .command()
            .env(&var, "pw")
            .run()
            .expect(0)
            .stdout
            .contains("DATA LOSS")
    });
    assert!(shown, "the plan shows the data loss");
    let refused = node
        .apply(spec.arg())
        .with(&["--format", "json", "--lock-timeout", "2m"])
        .command()
        .env(&var, "pw")
        .run()
        .expect(4);
    let json = document(&refused);
    assert_eq!(json["error"]["class"], "refused", "{json}");
    assert_eq!(json["error"]["exit_code"], 4, "{json}");
    assert!(json["plan"]["changes"].is_array(), "{json}");
    assert!(json["applied"].is_null(), "{json}");
    assert!(
        node.get_opt(&format!("/api/queues/{}/work", crate::node::pct(&vhost)))
            .is_some(),
        "the queue is still there"
    );
}

per_version!(plan_without_application_passwords, refusals_exit_4);
