//! `plan --format markdown` (through `diff --against`, offline): the markdown of every
//! example against an empty broker, and of the shop against a broker that differs
//! from it, is pinned; it never holds a password hash.

use crate::snapshot_settings;
use crate::support::{self, EXAMPLES, SHOP_PASSWORDS};

fn markdown(spec: &str, against: &str) -> String {
    let run = support::run_with_shop_passwords(&[
        "diff",
        spec,
        "--against",
        against,
        "--format",
        "markdown",
        "--detailed-exitcode",
    ]);
    assert_eq!(run.code, Some(2), "changes: {}", run.stderr);
    run.stdout
}

#[test]
fn markdown_of_every_example_against_an_empty_broker_is_pinned() {
    for example in EXAMPLES {
        let text = markdown(
            &support::example(example),
            "tests/definitions/empty-4.1.json",
        );
        let mut settings = snapshot_settings("snapshots");
        settings.set_snapshot_suffix(example.to_string());
        settings.bind(|| insta::assert_snapshot!("plan_markdown__empty", text));
    }
}

/// The shop's own definitions with a queue of another type, a tier's TTL changed, a
/// consumer's queue missing and a user's password changed.
pub(crate) fn changed_shop() -> tempfile::NamedTempFile {
    let export = support::run_with_shop_passwords(&[
        "export",
        "examples/shop.yaml",
        "--target-version",
        "4.1",
        "-o",
        "-",
    ]);
    let mut definitions: serde_json::Value = serde_json::from_str(&export.stdout).unwrap();
    for queue in definitions["queues"].as_array_mut().unwrap() {
        if queue["name"] == "orders.fulfilment" {
            queue["arguments"]["x-queue-type"] = "classic".into();
        }
    }
    for policy in definitions["policies"].as_array_mut().unwrap() {
        if policy["name"] == "warren.retry.defaults.1" {
            policy["definition"]["message-ttl"] = 20_000.into();
        }
    }
    definitions["queues"]
        .as_array_mut()
        .unwrap()
        .retain(|q| q["name"] != "orders.analytics");
    definitions["bindings"]
        .as_array_mut()
        .unwrap()
        .retain(|b| b["destination"] != "orders.analytics");
    for user in definitions["users"].as_array_mut().unwrap() {
        if user["name"] == "ops" {
            user["password_hash"] = "c2VjcmV0LWhhc2gtb2YtdGhlLW9sZC1wYXNzd29yZA==".into();
        }
    }
    definitions["rabbitmq_version"] = "4.1.0".into();
    let file = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(file.path(), definitions.to_string()).unwrap();
    file
}

#[test]
fn markdown_of_changes_shows_fields_and_no_password() {
    let file = changed_shop();
    let text = markdown("examples/shop.yaml", file.path().to_str().unwrap());
    assert!(
        !text.contains("c2VjcmV0LWhhc2gtb2YtdGhlLW9sZC1wYXNzd29yZA"),
        "{text}"
    );
    for (_, password) in SHOP_PASSWORDS {
        assert!(!text.contains(password), "{text}");
    }
    assert!(!text.contains("password_hash"), "{text}");
    assert!(text.contains("password changed"), "{text}");
    let mut settings = snapshot_settings("snapshots");
    settings.set_snapshot_suffix("shop");
    settings.bind(|| insta::assert_snapshot!("plan_markdown__changed", text));
}
