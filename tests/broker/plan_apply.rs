//! `warren plan`, `apply` and `diff` against real RabbitMQ nodes (3.10 and 4.3; the
//! scenarios about policies, arguments and deletion guards on 4.0 too).
//!
//! Scenario tests share one node per version and isolate themselves by vhost and spec
//! name; the examples test gets a fresh node, because two examples use the same vhost.

use serde_json::{Value, json};

use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;
use crate::support::{self, Capture, Run, SHOP_PASSWORDS};

/// `warren ARGS` without a broker, with the passwords of the shop example set.
fn warren_offline(args: &[&str]) -> Run {
    support::run_with_shop_passwords(args)
}

/// The JSON document a run printed (`plan --format json`).
fn plan_json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

fn ladder_spec(name: &str, vhost: &str, first_delay: &str, with_push: bool) -> String {
    let push = if with_push {
        "          push:\n            routing_keys: [\"notify.push.#\"]\n"
    } else {
        ""
    };
    format!(
        "version: 1\nname: {name}\nladders:\n  standard:\n    delays: [{first_delay}, 5m, 30m]\nvhosts:\n  {vhost}:\n    defaults:\n      retry: {{ ladder: standard }}\n    services:\n      notifier:\n        exchange: {{ name: notifications, type: topic }}\n        consumers:\n          sms:\n            routing_keys: [\"notify.sms.#\"]\n{push}"
    )
}

fn publish(node: &Node, vhost: &str, queue: &str, body: &str) {
    let answer = node.post(
        &format!("/api/exchanges/{}/amq.default/publish", pct(vhost)),
        &json!({"properties": {"delivery_mode": 2}, "routing_key": queue, "payload": body, "payload_encoding": "string"}),
    );
    assert_eq!(answer["routed"], true, "publish to {queue}");
}

/// The number of messages in a queue that is expected to hold some.
fn messages(node: &Node, vhost: &str, queue: &str) -> u64 {
    let mut count = 0;
    let mut last = Value::Null;
    // Message counts are statistics: wait until they show.
    let shown = node.wait_until(std::time::Duration::from_secs(30), || {
        last = node
            .get_opt(&format!("/api/queues/{}/{}", pct(vhost), pct(queue)))
            .unwrap_or(Value::Null);
        count = last["messages"].as_u64().unwrap_or(0);
        count > 0
    });
    assert!(
        shown,
        "{}: no message count for queue `{queue}` in vhost `{vhost}` after 30 s; last answer: {last}",
        node.version
    );
    count
}

fn changes(plan: &Value) -> Vec<(String, String, String)> {
    plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["action"].as_str().unwrap().to_string(),
                c["id"]["kind"].as_str().unwrap().to_string(),
                c["id"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn examples_apply_and_then_plan_no_changes(version: Version) {
    let node = Node::start(version, NodeOptions::default());
    for example in crate::support::EXAMPLES {
        let spec = crate::support::example(example);
        let first = node
            .cli(&["plan", "--detailed-exitcode", &spec])
            .envs(SHOP_PASSWORDS)
            .expect(2);
        assert!(first.stdout.contains("to create"), "{}", first.stdout);
        node.apply(&spec).envs(SHOP_PASSWORDS).expect(0);
        let again = node.plan(&spec).envs(SHOP_PASSWORDS).expect(0);
        assert!(
            again.stdout.contains("No changes."),
            "{example} on {version}:\n{}",
            again.stdout
        );

        // The broker's own export, compared offline, is also no change.
        let export = node.get("/api/definitions");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("export.json");
        std::fs::write(&file, serde_json::to_vec(&export).unwrap()).unwrap();
        let offline = warren_offline(&[
            "diff",
            &spec,
            "--against",
            file.to_str().unwrap(),
            "--target-version",
            version.target(),
        ]);
        assert_eq!(
            offline.code,
            Some(0),
            "{example} on {version} diff --against export:\n{}{}",
            offline.stdout,
            offline.stderr
        );

        // Adopting the broker: a spec imported from it plans as no change, under the
        // same name (nothing it manages is left out) and with nothing unmanaged.
        let imported = dir.path().join("imported.yaml");
        let name = spec_name(&node, &spec);
        let vhosts = vhosts_of(&node, &spec);
        let mut args = vec![
            "import",
            "--name",
            name.as_str(),
            "-o",
            imported.to_str().unwrap(),
        ];
        for vhost in &vhosts {
            args.extend(["--vhost", vhost.as_str()]);
        }
        let import = node.cli(&args).envs(SHOP_PASSWORDS).run();
        assert_eq!(import.code, Some(0), "{}", import.stderr);
        // A record of one environment (`billing@staging`) is imported as spec
        // `billing` declaring that environment.
        let mut replan = vec!["plan", imported.to_str().unwrap()];
        if let Some((_, environment)) = name.split_once('@') {
            replan.extend(["--env", environment]);
        }
        let replanned = node.cli(&replan).envs(SHOP_PASSWORDS).run();
        assert_eq!(
            replanned.code,
            Some(0),
            "{example} on {version}: imported spec plans changes:\n{}\n{}",
            replanned.stdout,
            std::fs::read_to_string(&imported).unwrap()
        );
        assert!(
            !replanned.stdout.contains("Not managed"),
            "{}",
            replanned.stdout
        );

        // Clean up for the next example (two examples share a vhost).
        let plan = plan_document(&node, &spec);
        for vhost in plan["vhosts"].as_array().unwrap() {
            node.delete(&format!("/api/vhosts/{}", pct(vhost.as_str().unwrap())));
        }
        node.delete_record(plan["spec"].as_str().unwrap());
    }
}

/// `warren plan SPEC --format json` against `node`, whatever its exit code.
fn plan_document(node: &Node, spec: &str) -> Value {
    serde_json::from_str(&node.plan_json(spec).envs(SHOP_PASSWORDS).run().stdout).unwrap()
}

fn vhosts_of(node: &Node, spec: &str) -> Vec<String> {
    plan_document(node, spec)["vhosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn spec_name(node: &Node, spec: &str) -> String {
    plan_document(node, spec)["spec"]
        .as_str()
        .unwrap()
        .to_string()
}

fn a_delay_change_is_one_policy_update_and_leaves_queues_alone(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("delay");
    let spec = Spec::new(&ladder_spec(
        &format!("delay-{vhost}"),
        &vhost,
        "30s",
        false,
    ));
    node.apply(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
    publish(
        node,
        &vhost,
        "notifier.sms.retry-standard.3",
        "waiting in the 30m tier",
    );
    publish(node, &vhost, "notifier.sms", "waiting for a consumer");
    assert_eq!(messages(node, &vhost, "notifier.sms.retry-standard.3"), 1);

    spec.write(&ladder_spec(
        &format!("delay-{vhost}"),
        &vhost,
        "45s",
        false,
    ));
    let plan = plan_json(
        &node
            .cli(&[
                "plan",
                "--detailed-exitcode",
                spec.arg(),
                "--format",
                "json",
            ])
            .envs(SHOP_PASSWORDS)
            .expect(2),
    );
    assert_eq!(
        changes(&plan),
        vec![(
            "update".into(),
            "policy".into(),
            "warren.retry.ladder.standard.1".into()
        )]
    );
    node.apply(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
    let policy = node.get(&format!(
        "/api/policies/{}/warren.retry.ladder.standard.1",
        pct(&vhost)
    ));
    assert_eq!(policy["definition"]["message-ttl"], 45_000);
    assert_eq!(
        messages(node, &vhost, "notifier.sms.retry-standard.3"),
        1,
        "tier kept its message"
    );
    assert_eq!(
        messages(node, &vhost, "notifier.sms"),
        1,
        "work queue kept its message"
    );
    node.plan(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
}

fn removing_a_consumer_deletes_only_what_warren_made(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("remove");
    let name = format!("remove-{vhost}");
    let spec = Spec::new(&ladder_spec(&name, &vhost, "30s", true));
    node.apply(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
    node.put(
        &format!("/api/queues/{}/handmade", pct(&vhost)),
        &json!({"durable": true}),
    );

    spec.write(&ladder_spec(&name, &vhost, "30s", false));
    let run = node
        .cli(&[
            "plan",
            "--detailed-exitcode",
            spec.arg(),
            "--format",
            "json",
        ])
        .envs(SHOP_PASSWORDS)
        .expect(2);
    let plan = plan_json(&run);
    let deleted: Vec<String> = changes(&plan)
        .into_iter()
        .filter(|(action, _, _)| action == "delete")
        .map(|(_, kind, name)| format!("{kind} {name}"))
        .collect();
    for expected in [
        "queue notifier.push",
        "queue notifier.push.retry-standard.1",
        "queue notifier.push.retry-standard.3",
        "queue notifier.push.parking",
        "exchange notifier.push.retry",
    ] {
        assert!(
            deleted.contains(&expected.to_string()),
            "{expected} not deleted: {deleted:?}"
        );
    }
    assert!(
        deleted
            .iter()
            .any(|d| d.starts_with("binding notifications -> queue notifier.push"))
    );
    assert!(!deleted.iter().any(|d| d.contains("handmade")));
    assert!(
        plan["unmanaged"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| id["name"] == "handmade")
    );
    let text = node
        .cli(&["plan", "--detailed-exitcode", spec.arg()])
        .envs(SHOP_PASSWORDS)
        .expect(2)
        .stdout;
    assert!(text.contains("? queue \"handmade\""), "{text}");

    node.apply(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
    assert!(
        node.get_opt(&format!("/api/queues/{}/notifier.push", pct(&vhost)))
            .is_none()
    );
    assert!(
        node.get_opt(&format!("/api/queues/{}/handmade", pct(&vhost)))
            .is_some()
    );
    node.plan(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
}

fn plain_queue_spec(name: &str, vhost: &str, kind: &str) -> String {
    format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    queues:\n      audit: {{ type: {kind} }}\n"
    )
}

fn replacing_a_queue_with_messages_needs_allow_data_loss(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("replace");
    let name = format!("replace-{vhost}");
    let spec = Spec::new(&plain_queue_spec(&name, &vhost, "classic"));
    node.apply(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
    publish(node, &vhost, "audit", "precious");
    assert_eq!(messages(node, &vhost, "audit"), 1);

    spec.write(&plain_queue_spec(&name, &vhost, "quorum"));
    let text = node
        .cli(&["plan", "--detailed-exitcode", spec.arg()])
        .envs(SHOP_PASSWORDS)
        .expect(2)
        .stdout;
    // A queue replace that can be migrated: the plan says how to keep the message.
    assert!(text.contains("~> audit (migrate: "), "{text}");
    assert!(text.contains("1 message: moved with --migrate"), "{text}");
    assert!(
        text.contains("x-queue-type: \"classic\" → \"quorum\""),
        "{text}"
    );

    // Refused when planned, if the statistics the apply's own plan reads count the
    // message, else under the locks from the queue's own count: both are right, and
    // which comes first races with the statistics (a loaded 4.3 node was seen
    // answering the second read without the count the first had shown).
    let refused = node.apply(spec.arg()).envs(SHOP_PASSWORDS).expect(4);
    assert!(
        refused.stderr.contains("queue \"audit\" in vhost")
            && refused.stderr.contains("nothing was changed"),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("holds 1 message (--migrate moves it)")
            || refused.stderr.contains("holds 1 ready message"),
        "{}",
        refused.stderr
    );
    assert_eq!(messages(node, &vhost, "audit"), 1, "nothing was changed");

    node.apply(spec.arg())
        .with(&["--allow-data-loss"])
        .envs(SHOP_PASSWORDS)
        .expect(0);
    // A loaded 4.3 node was seen answering 404 for the new quorum queue right after
    // the apply that declared it: the management API lists it a moment later.
    let path = format!("/api/queues/{}/audit", pct(&vhost));
    let mut queue = Value::Null;
    let listed = node.wait_until(std::time::Duration::from_secs(90), || {
        queue = node.get_opt(&path).unwrap_or(Value::Null);
        !queue.is_null()
    });
    assert!(listed, "{}: the replaced queue is not listed", node.version);
    assert_eq!(queue["type"], "quorum");
    node.plan(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
}

fn stale_plans_are_refused(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("stale");
    let name = format!("stale-{vhost}");
    let spec = Spec::new(&plain_queue_spec(&name, &vhost, "quorum"));
    let dir = tempfile::tempdir().unwrap();
    let plan_file = dir.path().join("plan.json");
    node.cli(&[
        "plan",
        "--detailed-exitcode",
        spec.arg(),
        "-o",
        plan_file.to_str().unwrap(),
    ])
    .envs(SHOP_PASSWORDS)
    .expect(2);
    // Somebody changes the broker in between: the saved plan no longer applies.
    node.apply(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
    let stale = node
        .cli(&["apply", plan_file.to_str().unwrap()])
        .envs(SHOP_PASSWORDS)
        .expect(4);
    assert!(
        stale.stderr.contains("changed since this plan was made"),
        "{}",
        stale.stderr
    );

    // A fresh plan applies (held locks: tests/broker/locks.rs).
    spec.write(&plain_queue_spec(&name, &vhost, "quorum").replace("audit:", "audit2:"));
    node.cli(&[
        "plan",
        "--detailed-exitcode",
        spec.arg(),
        "-o",
        plan_file.to_str().unwrap(),
    ])
    .envs(SHOP_PASSWORDS)
    .expect(2);
    node.cli(&["apply", plan_file.to_str().unwrap()])
        .envs(SHOP_PASSWORDS)
        .expect(0);
    node.plan(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
}

fn another_specs_objects_are_not_taken_over(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("owners");
    let team_a = Spec::new(&plain_queue_spec(&format!("a-{vhost}"), &vhost, "quorum"));
    node.apply(team_a.arg()).envs(SHOP_PASSWORDS).expect(0);
    let team_b = Spec::new(&plain_queue_spec(&format!("b-{vhost}"), &vhost, "quorum"));
    let run = node.plan(team_b.arg()).envs(SHOP_PASSWORDS).expect(4);
    assert!(
        run.stdout.contains(&format!("(spec `a-{vhost}`)")),
        "{}",
        run.stdout
    );
    let refused = node.apply(team_b.arg()).envs(SHOP_PASSWORDS).expect(4);
    assert!(
        refused.stderr.contains("another spec"),
        "{}",
        refused.stderr
    );
}

fn connection_problems_are_one_line_errors(version: Version) {
    let node = Node::shared(version);
    let spec = "examples/ladder.yaml";
    let wrong = support::warren(&[
        "plan",
        spec,
        "--url",
        &node.mgmt_url,
        "--user",
        "guest",
        "--password",
        "not-the-password",
    ])
    .run()
    .expect(3);
    assert_eq!(wrong.stderr.lines().count(), 1, "{}", wrong.stderr);
    assert!(
        wrong
            .stderr
            .contains("refused the credentials of user `guest`"),
        "{}",
        wrong.stderr
    );
    assert!(!wrong.stderr.contains("not-the-password"));

    let unreachable = support::warren(&[
        "plan",
        spec,
        "--url",
        "http://127.0.0.1:9",
        "--timeout",
        "5",
    ])
    .run()
    .expect(3);
    assert_eq!(
        unreachable.stderr.lines().count(),
        1,
        "{}",
        unreachable.stderr
    );
    assert!(
        unreachable
            .stderr
            .contains("cannot reach RabbitMQ at http://127.0.0.1:9/"),
        "{}",
        unreachable.stderr
    );

    // A cluster URL list fails over to the node that answers.
    let failover = support::warren(&[
        "plan",
        spec,
        "--url",
        &format!("http://127.0.0.1:9,{}", node.mgmt_url),
        "--user",
        &node.user,
        "--password",
        &node.password,
    ])
    .run();
    assert!(
        matches!(failover.code, Some(0) | Some(2)),
        "{}",
        failover.stderr
    );

    // A user that may not see the vhost.
    let vhost = node.unique_vhost("noperm");
    node.put(
        "/api/users/outsider",
        &json!({"password": "outsider-pw", "tags": "management"}),
    );
    let spec = Spec::new(&plain_queue_spec(&format!("np-{vhost}"), &vhost, "quorum"));
    let denied = support::warren(&[
        "plan",
        spec.arg(),
        "--url",
        &node.mgmt_url,
        "--user",
        "outsider",
        "--password",
        "outsider-pw",
    ])
    .run()
    .expect(3);
    assert_eq!(denied.stderr.lines().count(), 1, "{}", denied.stderr);
    assert!(
        denied.stderr.contains("user `outsider` is not allowed"),
        "{}",
        denied.stderr
    );
    assert!(!denied.stderr.contains("outsider-pw"));
}

per_version!(
    removing_a_consumer_deletes_only_what_warren_made,
    stale_plans_are_refused,
    another_specs_objects_are_not_taken_over,
    connection_problems_are_one_line_errors,
    runtime_parameters_keep_their_credentials_out_of_plans,
    a_saved_plan_counts_what_it_leaves_unchanged;
    also_on_4_0:
        examples_apply_and_then_plan_no_changes,
        a_delay_change_is_one_policy_update_and_leaves_queues_alone,
        replacing_a_queue_with_messages_needs_allow_data_loss,
        user_limits_and_global_parameters_converge,
);

fn user_limits_and_global_parameters_converge(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("limits");
    let name = format!("limits-{vhost}");
    let spec_text = |channels: u64| {
        format!(
            "version: 1\nname: {name}\nglobal_parameters:\n  {name}-setting: {{ owner: platform, replicas: 3 }}\nvhosts:\n  {vhost}: {{}}\nusers:\n  {vhost}-app:\n    password_hash: \"\"\n    limits: {{ max_connections: 10, max_channels: {channels} }}\n    permissions:\n      {vhost}: {{ configure: '^$', write: '^$', read: '.*' }}\n"
        )
    };
    let spec = Spec::new(&spec_text(100));
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .envs(SHOP_PASSWORDS)
        .expect(0);
    node.plan(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
    let limits = node.get(&format!("/api/user-limits/{vhost}-app"));
    assert_eq!(limits[0]["value"]["max-channels"], 100, "{limits}");
    let parameter = node.get(&format!("/api/global-parameters/{name}-setting"));
    assert_eq!(parameter["value"]["replicas"], 3);

    spec.write(&spec_text(50));
    let plan = plan_json(
        &node
            .cli(&[
                "plan",
                "--detailed-exitcode",
                spec.arg(),
                "--format",
                "json",
            ])
            .envs(SHOP_PASSWORDS)
            .expect(2),
    );
    assert_eq!(
        changes(&plan),
        vec![("update".into(), "user".into(), format!("{vhost}-app"))]
    );
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .envs(SHOP_PASSWORDS)
        .expect(0);
    assert_eq!(
        node.get(&format!("/api/user-limits/{vhost}-app"))[0]["value"]["max-channels"],
        50
    );
    node.plan(spec.arg()).envs(SHOP_PASSWORDS).expect(0);
}

fn runtime_parameters_keep_their_credentials_out_of_plans(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("params");
    let name = format!("params-{vhost}");
    let upstream_password = format!("up-{vhost}-secret");
    let spec_text = |expires: u64| {
        format!(
            "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    parameters:\n      federation-upstream:\n        origin:\n          uri: {{ env: UPSTREAM_URI }}\n          expires: {expires}\n"
        )
    };
    let spec = Spec::new(&spec_text(3_600_000));
    let run = |args: &[&str]| {
        node.warren(args)
            .env(
                "UPSTREAM_URI",
                format!(
                    "amqp://federator:{upstream_password}@127.0.0.1:{}",
                    node.amqp_port
                ),
            )
            .run()
    };
    let first = run(&["plan", "--detailed-exitcode", spec.arg()]).expect(2);
    assert!(
        first.stdout.contains("+ federation-upstream/origin"),
        "{}",
        first.stdout
    );
    run(&["apply", spec.arg(), "--auto-approve"]).expect(0);
    let stored = node.get(&format!(
        "/api/parameters/federation-upstream/{}/origin",
        pct(&vhost)
    ));
    assert!(
        stored["value"]["uri"]
            .as_str()
            .unwrap()
            .contains(&upstream_password),
        "the broker gets the real URI"
    );
    run(&["plan", spec.arg()]).expect(0);

    spec.write(&spec_text(7_200_000));
    let changed = run(&["plan", "--detailed-exitcode", spec.arg()]).expect(2);
    assert!(
        changed.stdout.contains("~ federation-upstream/origin"),
        "{}",
        changed.stdout
    );
    let json = run(&[
        "plan",
        "--detailed-exitcode",
        spec.arg(),
        "--format",
        "json",
    ])
    .expect(2);
    for output in [&changed.stdout, &changed.stderr, &json.stdout] {
        assert!(
            !output.contains(&upstream_password),
            "credentials printed:\n{output}"
        );
    }
    assert!(json.stdout.contains("federator:***@"), "{}", json.stdout);
    run(&["apply", spec.arg(), "--auto-approve"]).expect(0);
    run(&["plan", spec.arg()]).expect(0);
}

/// A saved plan lists its changes and what its picture draws, and counts the rest
/// (`unchanged`): it still applies, and an object it counted that is gone by the
/// apply makes it stale before anything is written. A `warren-plan/2` plan, which
/// lists everything, still applies.
fn a_saved_plan_counts_what_it_leaves_unchanged(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("saved");
    let name = format!("saved-{vhost}");
    let before = ladder_spec(&name, &vhost, "30s", true);
    let spec = Spec::new(&before);
    node.apply(spec.arg()).expect(0);
    let after = format!("{before}          mail:\n            routing_keys: [\"notify.mail.#\"]\n");
    spec.write(&after);
    let dir = tempfile::tempdir().unwrap();
    let plan_file = dir.path().join("plan.json");
    let save = |file: &std::path::Path| {
        node.cli(&[
            "plan",
            "--detailed-exitcode",
            spec.arg(),
            "-o",
            file.to_str().unwrap(),
        ])
        .expect(2);
        let text = std::fs::read_to_string(file).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()
    };
    let saved = save(&plan_file);
    let printed = plan_json(
        &node
            .cli(&["plan", spec.arg(), "--format", "json"])
            .expect(0),
    );
    assert_eq!(saved["format"], "warren-plan/3");
    let counted: u64 = saved["unchanged"]
        .as_array()
        .unwrap_or_else(|| panic!("nothing counted: {saved:#}"))
        .iter()
        .map(|group| group["count"].as_u64().unwrap())
        .sum();
    let listed = saved["desired"].as_array().unwrap().len() as u64;
    assert_eq!(
        listed + counted,
        printed["desired"].as_array().unwrap().len() as u64,
        "every desired object is listed or counted"
    );
    assert!(counted > 0 && listed > 0, "{saved:#}");

    // Somebody deletes a queue the plan counted: the plan is stale, nothing is made.
    let listed_ids: Vec<&str> = saved["desired"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["id"]["kind"] == "queue")
        .map(|d| d["id"]["name"].as_str().unwrap())
        .collect();
    let queues = node.get(&format!("/api/queues/{}?columns=name", pct(&vhost)));
    let counted_queue = queues
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap().to_string())
        .find(|q| !listed_ids.contains(&q.as_str()))
        .expect("a queue the plan counted");
    node.delete(&format!(
        "/api/queues/{}/{}",
        pct(&vhost),
        pct(&counted_queue)
    ));
    let stale = node.cli(&["apply", plan_file.to_str().unwrap()]).expect(4);
    assert!(
        stale.stderr.contains("changed since this plan was made")
            && stale.stderr.contains(&format!(
                "queues in vhost `{vhost}` that the plan leaves unchanged were changed since it was made"
            ))
            && stale.stderr.contains("some are gone"),
        "{}",
        stale.stderr
    );
    let mail_made = node
        .get(&format!("/api/queues/{}?columns=name", pct(&vhost)))
        .as_array()
        .unwrap()
        .iter()
        .any(|q| q["name"].as_str().unwrap().contains("mail"));
    assert!(!mail_made, "a stale plan made nothing");

    // The queue is back (the old spec applied again); a plan written as version 2
    // lists everything, and still applies.
    spec.write(&before);
    node.apply(spec.arg()).expect(0);
    spec.write(&after);
    let mut saved = save(&plan_file);
    let printed = plan_json(
        &node
            .cli(&["plan", spec.arg(), "--format", "json"])
            .expect(0),
    );
    saved["format"] = json!("warren-plan/2");
    let object = saved.as_object_mut().unwrap();
    object.remove("unchanged");
    object.remove("unchanged_dependencies");
    object.insert("desired".into(), printed["desired"].clone());
    object.insert("dependencies".into(), printed["dependencies"].clone());
    std::fs::write(&plan_file, serde_json::to_string(&saved).unwrap()).unwrap();
    node.cli(&["apply", plan_file.to_str().unwrap()]).expect(0);
    node.plan(spec.arg()).expect(0);

    // And a version 3 plan with objects counted applies as well.
    spec.write(&before);
    save(&plan_file);
    node.cli(&["apply", plan_file.to_str().unwrap()]).expect(0);
    node.plan(spec.arg()).expect(0);
}
