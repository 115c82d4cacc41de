//! Names warren keeps for itself are refused before anything changes on a real
//! broker: a consumer's queue named like another queue's migration, a spec named
//! after its file `<spec>@<environment>.yaml` that would take that environment's
//! record, and a spec that declares warren's lock vhost. An import of a broker whose
//! lock vhost a real apply made leaves that vhost out.

use serde_json::Value;

use crate::amqp::{self, Client, message};
use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

/// warren's lock vhost (`model::LOCK_VHOST`), as the broker names it.
const LOCK_VHOST: &str = "warren.locks";

/// `vhost`'s own definitions, as the broker exports them.
fn vhost_definitions(node: &Node, vhost: &str) -> Value {
    node.get(&format!("/api/definitions/{}", pct(vhost)))
}

/// The value of global parameter `name`, `None` when it does not exist.
fn global_parameter(node: &Node, name: &str) -> Option<Value> {
    node.get_opt(&format!("/api/global-parameters/{}", pct(name)))
        .map(|parameter| parameter["value"].clone())
}

/// A consumer whose `queue:` is the temporary queue of a migration of another
/// consumer's queue would make every later apply move that consumer's messages:
/// validate, plan and `apply --migrate` refuse it, and the messages stay where they
/// are.
fn a_queue_named_like_a_migration_is_refused_before_anything_changes(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("reserved-migrate");
    let name = format!("shop-{vhost}");
    let clean = format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    services:\n      orders:\n        consumers:\n          email: {{ routing_keys: [order.paid] }}\n"
    );
    let spec = Spec::new(&clean);
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    let runtime = amqp::runtime();
    runtime.block_on(async {
        let client = Client::connect(node, &vhost).await;
        for n in 0..20 {
            client
                .publish("orders", "order.paid", b"paid", message(&n.to_string()))
                .await
                .unwrap();
        }
        assert_eq!(client.ready("orders.email").await, 20);
        client.close().await;
    });
    let before = vhost_definitions(node, &vhost);
    let record = global_parameter(node, &format!("warren.{name}"));

    spec.write(&format!(
        "{clean}          audit: {{ queue: warren.migrate.orders.email, routing_keys: [order.paid] }}\n"
    ));
    let refused = crate::support::warren(&["validate", spec.arg()])
        .run()
        .expect(1);
    assert!(
        refused.stderr.contains("error[reserved-name]")
            && refused.stderr.contains("migration")
            && refused.stderr.contains(&format!("{}:9:", spec.arg())),
        "{}",
        refused.stderr
    );
    node.plan(spec.arg()).expect(1);
    node.apply(spec.arg())
        .with(&["--migrate", "--lock-timeout", "2m"])
        .expect(1);

    assert_eq!(vhost_definitions(node, &vhost), before);
    assert_eq!(global_parameter(node, &format!("warren.{name}")), record);
    runtime.block_on(async {
        let client = Client::connect(node, &vhost).await;
        assert_eq!(
            client.ready("orders.email").await,
            20,
            "the consumer's messages stay in its queue"
        );
        client.close().await;
    });
    spec.write(&clean);
    node.plan(spec.arg()).expect(0);
}

/// A spec without `name:` in `<spec>@<environment>.yaml` would be named like spec
/// `<spec>` read for `<environment>`, and share its record: it is refused, pointing
/// at the file, and the environment's objects and record stay as they are.
fn a_file_named_like_another_specs_environment_is_refused(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("reserved-env");
    let name = format!("billing-{vhost}");
    let billing = Spec::new(&format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    services:\n      billing:\n        consumers:\n          invoices: {{ routing_keys: [invoice.due] }}\nenvironments:\n  prod: {{}}\n"
    ));
    node.apply(billing.arg())
        .with(&["--env", "prod", "--lock-timeout", "2m"])
        .expect(0);
    let record_name = format!("warren.{name}@prod");
    let record = global_parameter(node, &record_name).expect("the environment's record");
    let before = vhost_definitions(node, &vhost);

    let dir = tempfile::tempdir().unwrap();
    let intruder = dir.path().join(format!("{name}@prod.yaml"));
    std::fs::write(&intruder, format!("version: 1\nvhosts:\n  {vhost}: {{}}\n")).unwrap();
    let intruder = intruder.to_str().unwrap();
    let refused = crate::support::warren(&["validate", intruder])
        .run()
        .expect(1);
    assert!(
        refused.stderr.contains("error[reserved-name]")
            && refused.stderr.contains("add a `name:`")
            && refused.stderr.contains(&format!("{name}@prod.yaml:")),
        "{}",
        refused.stderr
    );
    node.plan(intruder).expect(1);
    node.apply(intruder)
        .with(&["--lock-timeout", "2m"])
        .expect(1);

    assert_eq!(vhost_definitions(node, &vhost), before);
    assert_eq!(global_parameter(node, &record_name), Some(record));
    node.plan(billing.arg()).with(&["--env", "prod"]).expect(0);
}

/// A spec that declares warren's lock vhost (with a limit that would refuse every
/// lock) is refused by validate, plan, apply and export, and the lock vhost keeps
/// no such limit: later applies still take their locks.
fn the_lock_vhost_cannot_be_declared(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("reserved-locks");
    let name = format!("locks-{vhost}");
    let clean = Spec::new(&format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    queues:\n      q: {{ type: classic }}\n"
    ));
    // An apply makes the lock vhost, if no test has yet.
    node.apply(clean.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
    let limits = node.get(&format!("/api/vhost-limits/{}", pct(LOCK_VHOST)));

    let spec = Spec::new(&format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    queues:\n      q: {{ type: classic }}\n  {LOCK_VHOST}:\n    limits: {{ max_queues: 0 }}\n"
    ));
    let refused = crate::support::warren(&["validate", spec.arg()])
        .run()
        .expect(1);
    assert!(
        refused.stderr.contains("error[reserved-name]") && refused.stderr.contains("locks"),
        "{}",
        refused.stderr
    );
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("definitions.json");
    crate::support::warren(&["export", spec.arg(), "-o", export.to_str().unwrap()])
        .run()
        .expect(1);
    assert!(!export.exists(), "export wrote the lock vhost");
    node.plan(spec.arg()).expect(1);
    node.apply(spec.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(1);

    assert_eq!(
        node.get(&format!("/api/vhost-limits/{}", pct(LOCK_VHOST))),
        limits
    );
    node.apply(clean.arg())
        .with(&["--lock-timeout", "2m"])
        .expect(0);
}

/// The lock vhost a real apply made is warren's: an import of the whole broker, and
/// of the broker's definitions file, leaves it out with a note, and the spec it
/// writes validates.
fn import_leaves_the_lock_vhost_out(version: Version) {
    let node = Node::start(version, NodeOptions::default());
    let vhost = node.unused_vhost("imported");
    let name = format!("team-{vhost}");
    let spec = Spec::new(&format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    queues:\n      q: {{ type: classic }}\n"
    ));
    node.apply(spec.arg()).expect(0);
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", pct(LOCK_VHOST)))
            .is_some(),
        "the apply took its locks in {LOCK_VHOST}"
    );

    let dir = tempfile::tempdir().unwrap();
    let definitions = dir.path().join("definitions.json");
    std::fs::write(
        &definitions,
        serde_json::to_string(&node.get("/api/definitions")).unwrap(),
    )
    .unwrap();
    let definitions = definitions.to_str().unwrap();
    for (source, from) in [("broker", None), ("file", Some(definitions))] {
        let imported = dir.path().join(format!("imported-{source}.yaml"));
        let imported = imported.to_str().unwrap();
        let run = match from {
            None => node
                .cli(&["import", "--name", &name, "-o", imported])
                .expect(0),
            Some(file) => node
                .cli(&["import", "--from", file, "--name", &name, "-o", imported])
                .expect(0),
        };
        let notes = format!("{}{}", run.stdout, run.stderr);
        assert!(
            notes.contains(&format!("vhost `{LOCK_VHOST}`")),
            "{source}: no note about the lock vhost:\n{notes}"
        );
        let text = std::fs::read_to_string(imported).unwrap();
        assert!(
            !text.contains(LOCK_VHOST),
            "{source}: the imported spec holds the lock vhost:\n{text}"
        );
        assert!(text.contains(&vhost), "{source}:\n{text}");
        crate::support::warren(&["validate", imported])
            .run()
            .expect(0);
    }
}

per_version!(
    a_queue_named_like_a_migration_is_refused_before_anything_changes,
    a_file_named_like_another_specs_environment_is_refused,
    the_lock_vhost_cannot_be_declared;
    also_on_4_0:
        import_leaves_the_lock_vhost_out,
);
