//! Boots real RabbitMQ 3.10, 4.0 and 4.3 nodes from `warren export` of every example
//! (`load_definitions`) and checks through the management API that every object
//! exists as compiled and that each queue's effective policy is the one warren meant.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use warren::model::Definitions;
use warren::model::TargetVersion;
use warren::model::effective::effective_policy;
use warren::spec::HashingAlgorithm;

use crate::node::{Node, NodeOptions, Version, pct};
use crate::support::{Capture, SHOP_PASSWORDS, warren};

const ADMIN: &str = "warren-test-admin";
const ADMIN_PASSWORD: &str = "admin-pw";

fn export(example: &str, version: Version, out: &Path) -> Definitions {
    let run = warren(&[
        "export",
        &crate::support::example(example),
        "-o",
        out.to_str().unwrap(),
        "--target-version",
        version.target(),
    ])
    .envs(SHOP_PASSWORDS.iter().copied())
    .run();
    assert!(
        run.code == Some(0),
        "warren export {example} failed:\n{}",
        run.stderr
    );
    serde_json::from_slice(&std::fs::read(out).unwrap()).expect("export is definitions JSON")
}

/// Adds an administrator (hashed by warren itself) with full rights on every vhost.
fn with_admin(definitions: &Definitions) -> Value {
    let mut document = serde_json::to_value(definitions).unwrap();
    let hash =
        warren::model::password::hash_password(ADMIN, ADMIN_PASSWORD, HashingAlgorithm::Sha256);
    document["users"].as_array_mut().unwrap().push(json!({
        "name": ADMIN, "password_hash": hash,
        "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": ["administrator"],
    }));
    for vhost in &definitions.vhosts {
        document["permissions"].as_array_mut().unwrap().push(json!({
            "user": ADMIN, "vhost": vhost.name, "configure": ".*", "write": ".*", "read": ".*",
        }));
    }
    document
}

fn names(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect()
}

#[expect(
    clippy::too_many_lines,
    reason = "one trial read top to bottom: boot from the export, then every check of the booted node"
)]
fn boot_example(example: &str, version: Version) {
    let dir = tempfile::tempdir().unwrap();
    let desired = export(example, version, &dir.path().join("export.json"));
    let boot_file = dir.path().join("boot.json");
    std::fs::write(
        &boot_file,
        serde_json::to_vec(&with_admin(&desired)).unwrap(),
    )
    .unwrap();
    let mut options = NodeOptions::with_definitions(&boot_file, ADMIN, ADMIN_PASSWORD);
    // Effective policies show in the API after a statistics interval: make it short.
    options
        .extra_config
        .push("collect_statistics_interval = 500".into());
    let node = Node::start(version, options);
    let target: TargetVersion = version.target().parse().unwrap();

    for vhost in &desired.vhosts {
        let v = pct(&vhost.name);
        let live = node.get(&format!("/api/vhosts/{v}"));
        if let Some(description) = &vhost.description {
            assert_eq!(
                live["description"],
                json!(description),
                "{example}: vhost description"
            );
        }
        if let Some(tags) = &vhost.tags {
            assert_eq!(live["tags"], json!(tags.to_list()), "{example}: vhost tags");
        }

        let live_exchanges = node.get(&format!("/api/exchanges/{v}"));
        for exchange in desired.exchanges.iter().filter(|e| e.vhost == vhost.name) {
            let live = live_exchanges
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == json!(exchange.name))
                .unwrap_or_else(|| {
                    panic!("{example} on {version}: exchange {} missing", exchange.name)
                });
            assert_eq!(live["type"], json!(exchange.kind), "{}", exchange.name);
            assert_eq!(
                live["durable"],
                json!(exchange.durable),
                "{}",
                exchange.name
            );
            assert_eq!(
                live["internal"],
                json!(exchange.internal),
                "{}",
                exchange.name
            );
            assert_eq!(
                live["arguments"],
                json!(exchange.arguments),
                "{}",
                exchange.name
            );
        }

        let live_queues = node.get(&format!("/api/queues/{v}"));
        assert_eq!(
            names(&live_queues),
            desired
                .queues
                .iter()
                .filter(|q| q.vhost == vhost.name)
                .map(|q| q.name.clone())
                .collect(),
            "{example} on {version}: queues"
        );
        for queue in desired.queues.iter().filter(|q| q.vhost == vhost.name) {
            let live = live_queues
                .as_array()
                .unwrap()
                .iter()
                .find(|q| q["name"] == json!(queue.name))
                .unwrap();
            assert_eq!(
                live["arguments"],
                json!(queue.arguments),
                "{example}: arguments of {}",
                queue.name
            );
            assert_eq!(live["durable"], json!(queue.durable), "{}", queue.name);
        }

        let live_bindings: BTreeSet<String> = node
            .get(&format!("/api/bindings/{v}"))
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["source"] != json!(""))
            .map(|b| {
                format!(
                    "{} -> {} {} [{}] {}",
                    b["source"],
                    b["destination_type"],
                    b["destination"],
                    b["routing_key"],
                    b["arguments"]
                )
            })
            .collect();
        let desired_bindings: BTreeSet<String> = desired
            .bindings
            .iter()
            .filter(|b| b.vhost == vhost.name)
            .map(|b| {
                format!(
                    "{} -> {} {} [{}] {}",
                    json!(b.source),
                    json!(b.destination_type),
                    json!(b.destination),
                    json!(b.routing_key),
                    json!(b.arguments)
                )
            })
            .collect();
        assert_eq!(
            live_bindings, desired_bindings,
            "{example} on {version}: bindings"
        );

        let live_policies = node.get(&format!("/api/policies/{v}"));
        let desired_policies: Vec<_> = desired
            .policies
            .iter()
            .filter(|p| p.vhost == vhost.name)
            .collect();
        assert_eq!(
            live_policies.as_array().unwrap().len(),
            desired_policies.len(),
            "{example}: policy count"
        );
        for policy in desired_policies {
            let live = live_policies
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == json!(policy.name))
                .unwrap_or_else(|| {
                    panic!("{example} on {version}: policy {} missing", policy.name)
                });
            assert_eq!(live["pattern"], json!(policy.pattern), "{}", policy.name);
            assert_eq!(live["apply-to"], json!(policy.apply_to), "{}", policy.name);
            assert_eq!(live["priority"], json!(policy.priority), "{}", policy.name);
            assert_eq!(
                live["definition"],
                json!(policy.definition),
                "{}",
                policy.name
            );
        }

        for parameter in desired.parameters.iter().filter(|p| p.vhost == vhost.name) {
            let path = match parameter.component.as_str() {
                "vhost-limits" => format!("/api/vhost-limits/{v}"),
                "operator_policy" => format!("/api/operator-policies/{v}/{}", pct(&parameter.name)),
                other => format!("/api/parameters/{other}/{v}/{}", pct(&parameter.name)),
            };
            let live = node.get(&path);
            let value = if parameter.component == "vhost-limits" {
                &live[0]["value"]
            } else {
                &live["value"]
            };
            if parameter.component != "operator_policy" {
                assert_eq!(
                    value, &parameter.value,
                    "{example}: parameter {}",
                    parameter.name
                );
            }
        }

        // Every queue ends up with the policy warren's own model says applies to it.
        let expected: Vec<(String, Option<String>)> = desired
            .queues
            .iter()
            .filter(|q| q.vhost == vhost.name)
            .map(|q| {
                (
                    q.name.clone(),
                    effective_policy(&desired.policies, q, target).map(|p| p.name.clone()),
                )
            })
            .collect();
        let mut last = Vec::new();
        let settled = node.wait_until(Duration::from_secs(120), || {
            let live = node.get(&format!("/api/queues/{v}?columns=name,policy"));
            last = expected
                .iter()
                .filter(|(name, policy)| {
                    let queue = live
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|q| q["name"] == json!(name));
                    let shown = queue.and_then(|q| q["policy"].as_str()).map(str::to_string);
                    shown != *policy
                })
                .cloned()
                .collect();
            last.is_empty()
        });
        assert!(
            settled,
            "{example} on {version}: queues without their expected effective policy: {last:?}"
        );
        assert!(
            expected
                .iter()
                .any(|(_, p)| p.as_deref().is_some_and(|p| p.starts_with("warren."))),
            "{example}: no generated policy took effect anywhere"
        );
    }

    for user in &desired.users {
        let live = node.get(&format!("/api/users/{}", pct(&user.name)));
        assert_eq!(
            live["password_hash"],
            json!(user.password_hash),
            "{example}: hash of {}",
            user.name
        );
    }
    if example == "shop" {
        // The ops user (SHA-512 hash, management tag) logs in with the password from
        // its environment variable; a wrong password is refused.
        let ok = node.request_as("ops", "ops-pw", reqwest::Method::GET, "/api/whoami", None);
        assert!(
            ok.is_success(),
            "ops cannot log in: {} {}",
            ok.status,
            ok.body
        );
        let wrong = node.request_as("ops", "nope", reqwest::Method::GET, "/api/whoami", None);
        assert_eq!(wrong.status, 401);
        // orders_app's permission is generated from the consumers that name it.
        let permissions = node.get("/api/users/orders_app/permissions");
        assert_eq!(
            permissions[0]["read"],
            json!("^orders\\.(?:analytics|fulfilment|invoicing)$")
        );
    }
}

fn single_loop_boots(version: Version) {
    boot_example("single-loop", version);
}

fn multi_consumer_boots(version: Version) {
    boot_example("multi-consumer", version);
}

fn ladder_boots(version: Version) {
    boot_example("ladder", version);
}

fn shop_boots(version: Version) {
    boot_example("shop", version);
}

fn multi_file_boots(version: Version) {
    boot_example("multi-file", version);
}

per_version!(
    also_on_4_0:
        single_loop_boots,
        multi_consumer_boots,
        ladder_boots,
        multi_file_boots,
        shop_boots,
);
