//! `warren upgrade-check` against real brokers: every hazard seeded by hand on a 3.10
//! node is found; the node's own export is refused by a fresh 4.3 node (so the
//! findings matter); after each fix as its finding describes it, the check finds no
//! error and 4.3 imports the export. And a 4.3 node's deprecated features in use are
//! read from the broker.
//!
//! The delayed-message-exchange plugin is not in Debian's package: its finding is
//! covered by a definitions file (tests/offline/upgrade_check.rs).

use serde_json::{Value, json};

use crate::node::{Node, NodeOptions, Version, pct};
use crate::support::Capture;

/// The findings of `warren upgrade-check --url NODE --to 4.3 --format json`, and its exit code.
fn check(node: &Node) -> (Value, Option<i32>) {
    let run = node
        .warren(&["upgrade-check", "--to", "4.3", "--format", "json"])
        .run();
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (report, run.code)
}

/// The ids of the findings about the object `kind`/`name` in `vhost`.
fn ids_on(report: &Value, vhost: &str, kind: &str, name: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["object"]["vhost"] == vhost
                && f["object"]["kind"] == kind
                && f["object"]["name"] == name
        })
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn errors(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect()
}

#[test]
fn a_3_10_brokers_hazards_are_found_and_their_fixes_make_4_3_import_it() {
    let old = Node::start(Version::V3_10, NodeOptions::default());
    let vhost = old.unique_vhost("legacy");
    let v = pct(&vhost);
    let long_pattern = format!(
        "^({})$",
        (0..90)
            .map(|i| format!("orders-{i:04}"))
            .collect::<Vec<_>>()
            .join("|")
    );
    assert!(long_pattern.len() > 1024);
    let queue = |name: &str, body: Value| old.put(&format!("/api/queues/{v}/{name}"), &body);
    let policy = |name: &str, body: Value| old.put(&format!("/api/policies/{v}/{name}"), &body);
    policy(
        "ha-all",
        json!({"pattern": "^mirrored\\.", "apply-to": "queues", "definition": {"ha-mode": "all"}}),
    );
    policy(
        "locator",
        json!({"pattern": "^located\\.", "apply-to": "queues", "definition": {"queue-master-locator": "min-masters"}}),
    );
    policy(
        "many-orders",
        json!({"pattern": long_pattern, "apply-to": "queues", "definition": {"max-length": 100_000}}),
    );
    queue(
        "cqv1",
        json!({"durable": true, "arguments": {"x-queue-version": 1}}),
    );
    queue(
        "located",
        json!({"durable": true, "arguments": {"x-queue-master-locator": "min-masters"}}),
    );
    queue(
        "orders",
        json!({"durable": true, "arguments": {"x-queue-type": "quorum"}}),
    );
    queue("scratch", json!({"durable": false, "auto_delete": false}));
    queue(
        "lazy",
        json!({"durable": true, "arguments": {"x-queue-mode": "lazy"}}),
    );

    let (report, code) = check(&old);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["from"]["version"], old.rabbitmq_version());
    assert_eq!(report["deprecated_features"]["state"], "cannot_tell");
    let expected = [
        ("policy", "ha-all", "classic-mirroring"),
        ("policy", "locator", "queue-master-locator"),
        ("policy", "many-orders", "import-refused"),
        ("queue", "cqv1", "classic-queue-version-1"),
        ("queue", "located", "queue-master-locator"),
        ("queue", "orders", "quorum-default-delivery-limit"),
        ("queue", "scratch", "transient-nonexclusive-queue"),
        ("queue", "lazy", "queue-mode-lazy"),
    ];
    for (kind, name, id) in expected {
        assert!(
            ids_on(&report, &vhost, kind, name).contains(&id.to_string()),
            "{kind} {name}: no {id} in {report:#}"
        );
    }
    let steps: Vec<&str> = report["upgrade_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["to"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["3.11", "3.12", "3.13", "4.2", "4.3"]);

    // The findings matter: a fresh 4.3 node refuses the 3.10 node's own export.
    let new = Node::start(Version::V4_3, NodeOptions::default());
    deprecated_features_are_read_from(&new);

    let export = |fixed: &str| {
        let text = serde_json::to_string(&old.get("/api/definitions")).unwrap();
        // Into a vhost of its own on the 4.3 node: a refused import may have made part.
        serde_json::from_str::<Value>(
            &text.replace(&format!("\"{vhost}\""), &format!("\"{fixed}\"")),
        )
        .unwrap()
    };
    let refused = new.request(
        reqwest::Method::POST,
        "/api/definitions",
        Some(&export(&format!("{vhost}-before"))),
    );
    assert!(
        !refused.is_success(),
        "4.3 imported the 3.10 export: {}",
        refused.body
    );

    fix_each_finding(&old, &v);

    let (report, code) = check(&old);
    assert_eq!(errors(&report), Vec::<&Value>::new(), "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");
    assert!(
        ids_on(&report, &vhost, "queue", "orders").contains(&"quorum-nack-not-counted".to_string()),
        "{report:#}"
    );

    let fixed = format!("{vhost}-after");
    let accepted = new.request(
        reqwest::Method::POST,
        "/api/definitions",
        Some(&export(&fixed)),
    );
    assert!(
        accepted.is_success(),
        "{}: {}",
        accepted.status,
        accepted.body
    );
    let names: Vec<String> = new
        .get(&format!("/api/queues/{}", pct(&fixed)))
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap().to_string())
        .collect();
    for name in ["cqv1", "located", "orders", "scratch", "lazy"] {
        assert!(names.contains(&name.to_string()), "{name} not in {names:?}");
    }
    let policies = new.get(&format!("/api/policies/{}", pct(&fixed)));
    assert_eq!(policies.as_array().unwrap().len(), 3, "{policies:#}");
}

/// A 4.x broker reports the deprecated features in use, and the report says so.
fn deprecated_features_are_read_from(new: &Node) {
    let probe = new.unique_vhost("probe");
    new.put(
        &format!("/api/queues/{}/transient", pct(&probe)),
        &json!({"durable": false, "auto_delete": false}),
    );
    let (on_4_3, _) = check(new);
    assert_eq!(
        on_4_3["deprecated_features"]["features"],
        json!(["transient_nonexcl_queues"]),
        "{on_4_3:#}"
    );
    let reported = on_4_3["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "deprecated-feature-used")
        .unwrap_or_else(|| panic!("{on_4_3:#}"));
    assert_eq!(reported["key"], "transient_nonexcl_queues");
    assert_eq!(reported["reported_by_broker"], true);
    let queue_finding = on_4_3["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "transient-nonexclusive-queue" && f["object"]["name"] == "transient")
        .unwrap_or_else(|| panic!("{on_4_3:#}"));
    assert_eq!(queue_finding["reported_by_broker"], true);
}

/// Each fix on the 3.10 node, as its finding describes it.
fn fix_each_finding(old: &Node, v: &str) {
    let queue = |name: &str, body: Value| old.put(&format!("/api/queues/{v}/{name}"), &body);
    let policy = |name: &str, body: Value| old.put(&format!("/api/policies/{v}/{name}"), &body);
    old.delete(&format!("/api/policies/{v}/ha-all")); // only mirroring keys: delete it
    policy(
        "locator",
        json!({"pattern": "^located\\.", "apply-to": "queues", "definition": {"queue-leader-locator": "balanced"}}),
    );
    policy(
        "many-orders",
        json!({"pattern": "^orders-00[0-8][0-9]$", "apply-to": "queues", "definition": {"max-length": 100_000}}),
    );
    old.delete(&format!("/api/queues/{v}/cqv1"));
    queue("cqv1", json!({"durable": true}));
    old.delete(&format!("/api/queues/{v}/located"));
    queue("located", json!({"durable": true}));
    policy(
        "orders-limit",
        json!({"pattern": "^orders$", "apply-to": "queues", "definition": {"delivery-limit": 20}}),
    );
    old.delete(&format!("/api/queues/{v}/scratch"));
    queue("scratch", json!({"durable": true}));
}

/// A 3.10 broker that warren manages: the quorum queues of a spec's ladders have no
/// delivery limit there, and each gets the finding in the JSON report, with advice that
/// points at the spec (which, compiled for 4.3, sets the limit itself) rather than at a
/// hand-made policy the next apply would not know; the text says it once for them all.
#[test]
fn a_managed_broker_s_findings_name_the_spec_and_are_said_once() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("managed-upgrade");
    let name = format!("upgrade-{vhost}");
    let spec = crate::spec::Spec::new(&format!(
        "version: 1\nname: {name}\ndefaults:\n  queue_type: quorum\n  retry:\n    delays: [30s]\nvhosts:\n  {vhost}:\n    services:\n      jobs:\n        exchange: {{ type: fanout }}\n        consumers:\n          a: {{}}\n          b: {{}}\n          c: {{}}\n"
    ));
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    let (report, _) = check(node);
    let managed: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["object"]["vhost"] == vhost.as_str())
        .filter(|f| f["id"] == "quorum-default-delivery-limit")
        .collect();
    let queues: Vec<&str> = managed
        .iter()
        .map(|f| f["object"]["name"].as_str().unwrap())
        .collect();
    for work in ["jobs.a", "jobs.b", "jobs.c"] {
        assert!(queues.contains(&work), "{work}: {queues:?}");
    }
    for finding in &managed {
        assert_eq!(finding["managed_by"], name.as_str(), "{finding:#}");
        let fix = finding["fix"].as_str().unwrap();
        assert!(
            fix.contains("warren upgrade-check SPEC --to 4.3") && !fix.contains("by policy"),
            "{fix}"
        );
    }
    // Other tests' objects share the node: look only at this spec's advice.
    let text = node.warren(&["upgrade-check", "--to", "4.3"]).run().stdout;
    let groups = text
        .lines()
        .filter(|line| line.contains(&format!("spec `{name}` manages the queue")))
        .count();
    // Two wordings: queues that dead-letter (work and delay queues) and those that do
    // not (the parking queues).
    assert!((1..=2).contains(&groups), "{groups} groups:\n{text}");
    assert!(
        text.contains("queues: the quorum queue has no delivery limit"),
        "{text}"
    );
    node.remove_vhost(&vhost);
}
