//! Retry tiers select their delay queues by the ending of their names (`^.*\.retry\.1$`,
//! docs/topology.md): on real brokers, a live queue with such an ending that the spec
//! does not declare is named by `plan` and stops `apply` before anything changes, and
//! two specs whose generated policies would select the same names in one vhost are
//! refused with both owners named.

use serde_json::json;

use crate::node::{Node, Version, pct};
use crate::spec::Spec;

/// How long to wait for what the management API shows from its statistics (a queue's
/// effective policy, its message count): they are emitted every 5 s and lag further
/// on a loaded node. A bound for what never shows, never reached when all is well.
const STATISTICS_WAIT: std::time::Duration = std::time::Duration::from_secs(90);

/// A spec whose consumer `orders.email` takes its delays from `place`: the top-level
/// `defaults` or the vhost's.
fn spec_text(name: &str, vhost: &str, service: &str, top_level: bool) -> String {
    let (top, local) = if top_level {
        ("defaults:\n  retry: { delays: [30s, 5m] }\n", "")
    } else {
        ("", "    defaults:\n      retry: { delays: [1m] }\n")
    };
    format!(
        "version: 1\nname: {name}\n{top}vhosts:\n  {vhost}:\n{local}    services:\n      {service}:\n        exchange: {{ type: fanout }}\n        consumers:\n          email: {{}}\n"
    )
}

fn an_undeclared_queue_with_a_tier_ending_stops_the_plan(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("ending");
    let name = format!("ending-{vhost}");
    node.put(&format!("/api/vhosts/{}", pct(&vhost)), &json!({}));
    // An application's queue that happens to end like the delay queues of tier 2 (a
    // quorum queue: from 3.12 on, the tier's policy applies to quorum queues only, as
    // the spec's delay queues are).
    node.put(
        &format!("/api/queues/{}/audit.retry.2", pct(&vhost)),
        &json!({"durable": true, "arguments": {"x-queue-type": "quorum"}}),
    );
    let spec = Spec::new(&spec_text(&name, &vhost, "orders", true));
    let planned = node.plan(spec.arg()).expect(4);
    assert!(
        planned
            .stdout
            .contains("which its generated policies would apply to")
            && planned.stdout.contains("queue \"audit.retry.2\"")
            && planned.stdout.contains("`warren.retry.defaults.2`")
            && planned.stdout.contains("no spec manages it"),
        "{}",
        planned.stdout
    );
    let json = node.plan_json(spec.arg()).expect(4);
    let plan: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(plan["captured"][0]["queue"]["name"], "audit.retry.2");
    assert_eq!(plan["captured"][0]["policy"], "warren.retry.defaults.2");
    let refused = node.apply(spec.arg()).expect(4);
    assert!(
        refused.stderr.contains("nothing was applied"),
        "{}",
        refused.stderr
    );
    assert!(
        node.get_opt(&format!(
            "/api/policies/{}/warren.retry.defaults.2",
            pct(&vhost)
        ))
        .is_none(),
        "nothing was changed"
    );
    // Renamed, the queue is left alone and the spec applies and converges.
    node.delete(&format!("/api/queues/{}/audit.retry.2", pct(&vhost)));
    node.put(
        &format!("/api/queues/{}/audit.retries", pct(&vhost)),
        &json!({"durable": true, "arguments": {"x-queue-type": "classic"}}),
    );
    node.apply(spec.arg()).expect(0);
    node.plan(spec.arg()).expect(0);
    // The broker gives the tier its policy, and the renamed queue none (the queue's
    // `policy` shows once the statistics catch up).
    let mut last = serde_json::Value::Null;
    let settled = node.wait_until(STATISTICS_WAIT, || {
        last = node.get(&format!("/api/queues/{}?columns=name,policy", pct(&vhost)));
        let policy = |queue: &str| {
            last.as_array()
                .unwrap()
                .iter()
                .find(|q| q["name"] == queue)
                .map(|q| q["policy"].clone())
        };
        policy("orders.email.retry.2") == Some(json!("warren.retry.defaults.2"))
            && policy("orders.email.retry.1") == Some(json!("warren.retry.defaults.1"))
            && policy("audit.retries").is_some_and(|p| p.is_null() || p == "")
    });
    assert!(settled, "{version}: effective policies: {last}");
    // A queue that appears afterwards stops the next apply, and a saved plan.
    node.put(
        &format!("/api/queues/{}/late.retry.1", pct(&vhost)),
        &json!({"durable": true, "arguments": {"x-queue-type": "quorum"}}),
    );
    let late = node.plan(spec.arg()).expect(4);
    assert!(
        late.stdout.contains("queue \"late.retry.1\""),
        "{}",
        late.stdout
    );
}

fn two_specs_whose_tiers_select_the_same_names_are_refused(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("overlap");
    let first = format!("first-{vhost}");
    let second = format!("second-{vhost}");
    let a = Spec::new(&spec_text(&first, &vhost, "orders", true));
    node.apply(a.arg()).expect(0);
    // The second spec's vhost defaults would select `.retry.1` too.
    let b = Spec::new(&spec_text(&second, &vhost, "billing", false));
    let planned = node.plan(b.arg()).expect(4);
    assert!(
        planned.stdout.contains("overlap another spec's")
            && planned.stdout.contains("warren.retry.vhost.1")
            && planned.stdout.contains(&format!(
                "policy `warren.retry.defaults.1` of spec `{first}`"
            ))
            && planned.stdout.contains("every name ending in `.retry.1`"),
        "{}",
        planned.stdout
    );
    let refused = node.apply(b.arg()).expect(4);
    assert!(
        refused.stderr.contains("nothing was applied"),
        "{}",
        refused.stderr
    );
    assert!(
        node.get_opt(&format!("/api/queues/{}/billing.email", pct(&vhost)))
            .is_none(),
        "nothing of the second spec was created"
    );
    // The first spec is unaffected.
    node.plan(a.arg()).expect(0);
}

/// What a deployment made before the convention sees: its tiers of a named ladder were
/// `<queue>.retry.<n>` (written here under `retry.names.tiers`, as the older warren
/// generated them). The plan creates the new tiers, deletes the old ones and updates
/// the tier policies; an old tier holding a message is kept by the data-loss gate, and
/// `apply --migrate` passes its message on to the work queue it expires into.
fn an_upgrade_renames_tiers_behind_the_data_loss_gate(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("upgrade");
    let name = format!("upgrade-{vhost}");
    let text = |old_names: bool| {
        let names = if old_names {
            ", names: { tiers: [orders.email.retry.1, orders.email.retry.2] }"
        } else {
            ""
        };
        format!(
            "version: 1\nname: {name}\nladders:\n  slow: {{ delays: [30s, 5m] }}\nvhosts:\n  {vhost}:\n    services:\n      orders:\n        exchange: {{ type: fanout }}\n        consumers:\n          email: {{ retry: {{ ladder: slow{names} }} }}\n"
        )
    };
    let spec = Spec::new(&text(true));
    node.apply(spec.arg()).expect(0);
    node.post(
        &format!("/api/exchanges/{}/amq.default/publish", pct(&vhost)),
        &json!({"properties": {"delivery_mode": 2}, "routing_key": "orders.email.retry.2", "payload": "waiting", "payload_encoding": "string"}),
    );
    spec.write(&text(false));
    let mut plan = serde_json::Value::Null;
    // The message count is a statistic: plan until it shows.
    let counted = node.wait_until(STATISTICS_WAIT, || {
        let run = node
            .cli(&[
                "plan",
                "--detailed-exitcode",
                spec.arg(),
                "--format",
                "json",
            ])
            .expect(2);
        plan = serde_json::from_str(&run.stdout).unwrap();
        plan["changes"].as_array().unwrap().iter().any(|c| {
            c["id"]["name"] == "orders.email.retry.2"
                && c["action"] == "delete"
                && c["messages"] == 1
        })
    });
    assert!(counted, "{plan}");
    let changes: Vec<String> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"]["kind"] == "queue" || c["id"]["kind"] == "policy")
        .map(|c| {
            format!(
                "{} {}",
                c["action"].as_str().unwrap(),
                c["id"]["name"].as_str().unwrap()
            )
        })
        .collect();
    for expected in [
        "create orders.email.retry-slow.1",
        "create orders.email.retry-slow.2",
        "delete orders.email.retry.1",
        "delete orders.email.retry.2",
        "update warren.retry.ladder.slow.1",
        "update warren.retry.ladder.slow.2",
    ] {
        assert!(
            changes.contains(&expected.to_string()),
            "{expected}: {changes:?}"
        );
    }
    let refused = node.apply(spec.arg()).expect(4);
    assert!(
        refused.stderr.contains("orders.email.retry.2"),
        "{}",
        refused.stderr
    );
    let old = node.get(&format!("/api/queues/{}/orders.email.retry.2", pct(&vhost)));
    assert_eq!(old["messages"], 1, "{old}");
    // The tier's message has a home that stays: the plan says so, and --migrate moves it.
    assert_eq!(plan["summary"]["data_loss"], 0, "{plan}");
    assert!(
        plan["pass_ons"].as_array().is_some_and(|p| p
            .iter()
            .any(|p| p["from"]["name"] == "orders.email.retry.2"
                && p["into"]["name"] == "orders.email")),
        "{plan}"
    );
    node.apply(spec.arg()).with(&["--migrate"]).expect(0);
    assert!(
        node.get_opt(&format!("/api/queues/{}/orders.email.retry.2", pct(&vhost)))
            .is_none()
    );
    let work = || node.get(&format!("/api/queues/{}/orders.email", pct(&vhost)))["messages"] == 1;
    assert!(
        node.wait_until(STATISTICS_WAIT, work),
        "the message waits in the work queue"
    );
}

/// From 4.0 on, the policy `warren.parking` lifts the default delivery limit of quorum
/// parking queues, selecting them by their ending: an undeclared quorum queue ending in
/// `.parking` stops the plan, a classic one does not (the policy applies to quorum
/// queues only). Before 4.0 there is no default limit and no such policy.
fn quorum_parking_queues_are_selected_by_their_ending_from_4_0_on(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("parking");
    let name = format!("parking-{vhost}");
    node.put(&format!("/api/vhosts/{}", pct(&vhost)), &json!({}));
    for (queue, queue_type) in [("audit.parking", "quorum"), ("legacy.parking", "classic")] {
        node.put(
            &format!("/api/queues/{}/{queue}", pct(&vhost)),
            &json!({"durable": true, "arguments": {"x-queue-type": queue_type}}),
        );
    }
    let spec = Spec::new(&spec_text(&name, &vhost, "orders", true));
    let with_limit = version >= Version::V4_0;
    if with_limit {
        let planned = node.plan_json(spec.arg()).expect(4);
        let plan: serde_json::Value = serde_json::from_str(&planned.stdout).unwrap();
        assert_eq!(plan["captured"].as_array().map(Vec::len), Some(1), "{plan}");
        assert_eq!(plan["captured"][0]["queue"]["name"], "audit.parking");
        assert_eq!(plan["captured"][0]["policy"], "warren.parking");
        node.delete(&format!("/api/queues/{}/audit.parking", pct(&vhost)));
    }
    node.apply(spec.arg()).expect(0);
    node.plan(spec.arg()).expect(0);
    let expected = |queue: &str| match (queue, with_limit) {
        ("orders.email.parking", true) => json!("warren.parking"),
        ("orders.email", true) => json!("warren.delivery-limit.unlimited"),
        _ => json!(""),
    };
    let mut last = serde_json::Value::Null;
    let settled = node.wait_until(STATISTICS_WAIT, || {
        last = node.get(&format!("/api/queues/{}?columns=name,policy", pct(&vhost)));
        [
            "orders.email.parking",
            "orders.email",
            "legacy.parking",
            "audit.parking",
        ]
        .iter()
        .all(|queue| {
            let found = last
                .as_array()
                .unwrap()
                .iter()
                .find(|q| q["name"] == *queue);
            match found {
                // `audit.parking` is still there before 4.0 only.
                None => *queue == "audit.parking" && with_limit,
                Some(q) => {
                    let policy = if q["policy"].is_null() {
                        json!("")
                    } else {
                        q["policy"].clone()
                    };
                    policy == expected(queue)
                }
            }
        })
    });
    assert!(settled, "{version}: effective policies: {last}");
}

per_version!(
    an_undeclared_queue_with_a_tier_ending_stops_the_plan,
    two_specs_whose_tiers_select_the_same_names_are_refused,
    an_upgrade_renames_tiers_behind_the_data_loss_gate;
    also_on_4_0:
        quorum_parking_queues_are_selected_by_their_ending_from_4_0_on,
);
