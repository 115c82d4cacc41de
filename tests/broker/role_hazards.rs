//! An operator's policy that breaks what a managed queue is for is seen by `plan`,
//! `status` and the lint, not only a setting the spec sets: a common safety net (an
//! operator `message-ttl` and `expires` on `.*`) makes parked messages expire and
//! would delete the parking queue with them. On 4.3 the consumer's ladder is
//! `native` (the quorum work queue waits itself), as the reports of this hazard had
//! it; on 3.10 a classic `publish` ladder.
//!
//! The hazard is proven real on the broker: a message put in the parking queue is
//! gone once the operator's TTL has passed.

use std::time::Duration;

use serde_json::{Value, json};

use crate::amqp::{self, Client};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

per_version!(an_operator_policy_that_breaks_the_parking_queue_is_a_finding_everywhere);

/// One consumer with a one-tier ladder: `native` on 4.3, a classic `publish` ladder
/// before.
fn spec(vhost: &str, version: Version) -> String {
    let (defaults, retry) = if version == Version::V4_3 {
        ("", "{ mode: native, delays: [5s] }")
    } else {
        ("defaults:\n  queue_type: classic\n", "{ delays: [5s] }")
    };
    format!(
        "version: 1\nname: hazard-{vhost}\n{defaults}vhosts:\n  {vhost}:\n    services:\n      orders:\n        consumers:\n          email:\n            routing_keys: [order.placed]\n            retry: {retry}\n"
    )
}

/// The operator's safety net on every queue of `vhost`, or on `pattern`.
fn safety_net(node: &Node, vhost: &str, pattern: &str) {
    node.put(
        &format!("/api/operator-policies/{}/safety-net", pct(vhost)),
        &json!({"pattern": pattern, "definition": {"message-ttl": 3000, "expires": 3_600_000}, "priority": 0, "apply-to": "queues"}),
    );
}

fn plan_json(node: &Node, spec: &Spec) -> Value {
    let out = node.plan(spec.arg()).with(&["--format", "json"]).expect(0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn status_problems(node: &Node, spec: &Spec) -> Vec<Value> {
    let out = node
        .warren(&["status", spec.arg(), "--format", "json"])
        .run()
        .expect(0)
        .stdout;
    let report: Value = serde_json::from_str(&out).unwrap();
    report["consumers"][0]["problems"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn an_operator_policy_that_breaks_the_parking_queue_is_a_finding_everywhere(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("hazard");
    let spec = Spec::new(&spec(&vhost, version));
    node.apply(spec.arg()).expect(0);
    node.plan(spec.arg())
        .with(&["--detailed-exitcode"])
        .expect(0);
    safety_net(node, &vhost, ".*");

    // The plan: nothing to change, but the broker does not match the spec.
    let text = node.plan(spec.arg()).expect(0).stdout;
    assert!(
        text.contains("Policies that are not the spec's break what its queues are for")
            && text.contains(
                "operator policy `safety-net` (no spec manages it) sets `message-ttl` to 3000"
            )
            && text.contains("parked messages expire after 3s")
            && text.contains("No changes warren can make.")
            && !text.contains("The broker matches the spec"),
        "{version:?}: {text}"
    );
    eprintln!("{text}");
    node.plan(spec.arg())
        .with(&["--detailed-exitcode"])
        .expect(2);
    let plan = plan_json(node, &spec);
    let hazards = plan["hazards"].as_array().cloned().unwrap_or_default();
    let on = |kind: &str, key: &str| {
        hazards
            .iter()
            .find(|h| h["role"]["kind"] == kind && h["key"] == key)
            .cloned()
    };
    let parking_ttl = on("parking", "message-ttl").unwrap_or_else(|| panic!("{hazards:#?}"));
    assert_eq!(
        (
            &parking_ttl["policy"],
            &parking_ttl["operator"],
            &parking_ttl["value"]
        ),
        (&json!("safety-net"), &json!(true), &json!(3000)),
        "{parking_ttl:#?}"
    );
    assert!(on("parking", "expires").is_some(), "{hazards:#?}");
    assert!(on("work", "message-ttl").is_some(), "{hazards:#?}");
    let parking = parking_ttl["id"]["name"].as_str().unwrap().to_string();
    let markdown = node
        .plan(spec.arg())
        .with(&["--format", "markdown"])
        .expect(0)
        .stdout;
    assert!(
        markdown.contains("> [!WARNING]") && markdown.contains("parked messages expire after 3s"),
        "{markdown}"
    );

    // Status: a problem on the parking queue that names the policy and the fix.
    let problems = status_problems(node, &spec);
    assert!(
        problems.iter().any(|p| p["kind"] == "policy-hazard"
            && p["queue"] == parking.as_str()
            && p["message"]
                .as_str()
                .is_some_and(|m| m.contains("safety-net") && m.contains("narrow the pattern"))),
        "{problems:#?}"
    );

    // The broker does what the plan says: a parked message expires.
    node.put(
        &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
        &json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
    let rt = amqp::runtime();
    let client = rt.block_on(Client::connect(node, &vhost));
    rt.block_on(client.publish("", &parking, b"parked", amqp::message("p1")))
        .unwrap();
    assert!(
        node.wait_until(Duration::from_secs(60), || rt
            .block_on(client.ready(&parking))
            == 0),
        "the parked message outlives the operator's TTL"
    );
    rt.block_on(client.close());

    // Narrowing the operator's pattern resolves it everywhere.
    safety_net(node, &vhost, "^cache\\.");
    node.plan(spec.arg())
        .with(&["--detailed-exitcode"])
        .expect(0);
    let problems = status_problems(node, &spec);
    assert!(
        !problems.iter().any(|p| p["kind"] == "policy-hazard"),
        "{problems:#?}"
    );
    node.delete(&format!(
        "/api/operator-policies/{}/safety-net",
        pct(&vhost)
    ));
}
