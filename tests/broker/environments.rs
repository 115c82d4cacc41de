//! One spec, two environments, one broker: each environment is applied as its own
//! spec (`<name>@<environment>`, its own ownership record), plans and changes of one
//! never touch the other's objects, and each ladder returns a rejected message after
//! its own environment's delay (a real AMQP client).

use std::time::{Duration, Instant};

use lapin::options::BasicGetOptions;
use serde_json::Value;

use crate::amqp::{self, Client, message};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;

/// A spec of vhost `vhost` whose staging is in vhost `staging` (or the same vhost when
/// `staging` is `vhost`, with no rename), with a 1 s first delay and classic queues,
/// and whose prod has an 8 s first delay, quorum queues and, with `prod_drops_audit`,
/// no `audit` consumer. The delays are far apart so that a message back before prod's
/// delay can only have waited staging's, however slowly a loaded broker dead-letters.
fn spec_text(name: &str, vhost: &str, staging: &str, prod_drops_audit: bool) -> String {
    let rename = if staging == vhost {
        String::new()
    } else {
        format!("    vhost_names: {{ {vhost}: {staging} }}\n")
    };
    let drop_audit = if prod_drops_audit {
        format!(
            "      vhosts:\n        {vhost}:\n          services:\n            orders:\n              consumers:\n                audit: null\n"
        )
    } else {
        String::new()
    };
    format!(
        "version: 1
name: {name}
defaults:
  retry: {{ mode: reject, delays: [8s], max_retries: 2 }}
vhosts:
  {vhost}:
    limits: {{ max_queues: 50 }}
    services:
      orders:
        consumers:
          email: {{ routing_keys: [order.paid] }}
          audit: {{ routing_keys: [order.created] }}
environments:
  staging:
{rename}    overrides:
      lint: {{ allow: [classic-queue-in-retry-loop] }}
      defaults:
        queue_type: classic
        retry: {{ delays: [1s] }}
      vhosts:
        {vhost}:
          limits: {{ max_queues: 20 }}
  prod:
    overrides:
      defaults:
        queue_type: quorum
{drop_audit}"
    )
}

/// The objects of `spec`'s ownership record, as `kind vhost name` lines.
fn recorded(node: &Node, spec: &str) -> Vec<String> {
    let record = node
        .record(spec)
        .unwrap_or_else(|| panic!("spec {spec} has no record"));
    record["objects"]
        .as_array()
        .unwrap_or_else(|| panic!("{record}"))
        .iter()
        .map(|o| {
            let o: Vec<&str> = o
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap_or(""))
                .collect();
            o.join(" ")
        })
        .collect()
}

/// How long a message rejected from `vhost`'s `orders.email` takes to come back.
fn returned_after(node: &'static Node, vhost: &str) -> Duration {
    let runtime = amqp::runtime();
    runtime.block_on(async {
        let client = Client::connect(node, vhost).await;
        client
            .publish("orders", "order.paid", b"paid", message("paid"))
            .await
            .unwrap();
        let channel = client.connection.create_channel().await.unwrap();
        let got = channel
            .basic_get("orders.email".into(), BasicGetOptions { no_ack: false })
            .await
            .unwrap()
            .expect("the message is in the work queue");
        amqp::reject(&got.delivery).await.unwrap();
        let rejected = Instant::now();
        loop {
            if let Some(back) = channel
                .basic_get("orders.email".into(), BasicGetOptions { no_ack: true })
                .await
                .unwrap()
            {
                assert_eq!(back.delivery.data, b"paid");
                return rejected.elapsed();
            }
            assert!(
                rejected.elapsed() < Duration::from_secs(90),
                "the message did not come back"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

fn two_environments_on_one_broker_keep_to_their_own_objects(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("envprod");
    let staging_vhost = format!("{vhost}-staging");
    let name = format!("envs-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, &staging_vhost, false));
    let staging = node
        .apply(spec.arg())
        .with(&["--env", "staging"])
        .env_remove("WARREN_ENV")
        .expect(0);
    assert!(
        staging
            .stdout
            .contains(&format!("Plan for spec `{name}` in environment `staging`")),
        "{}",
        staging.stdout
    );
    node.apply(spec.arg())
        .with(&["--env", "prod"])
        .env_remove("WARREN_ENV")
        .expect(0);
    // Each environment is its own spec, with its own record, in its own vhost.
    let staging_objects = recorded(node, &format!("{name}@staging"));
    let prod_objects = recorded(node, &format!("{name}@prod"));
    assert!(
        staging_objects
            .iter()
            .all(|o| !o.contains(&format!(" {vhost} "))),
        "{staging_objects:?}"
    );
    assert!(
        staging_objects.iter().any(|o| o.contains(&staging_vhost)),
        "{staging_objects:?}"
    );
    assert!(
        prod_objects.iter().all(|o| !o.contains(&staging_vhost)),
        "{prod_objects:?}"
    );
    // What each environment declares is on the broker.
    let queue_type = |vhost: &str| -> Value {
        node.get(&format!("/api/queues/{}/orders.email", pct(vhost)))["type"].clone()
    };
    assert_eq!(queue_type(&staging_vhost), "classic");
    assert_eq!(queue_type(&vhost), "quorum");
    let limit = |vhost: &str| -> Value {
        node.get(&format!("/api/vhost-limits/{}", pct(vhost)))[0]["value"]["max-queues"].clone()
    };
    assert_eq!(limit(&staging_vhost), 20);
    assert_eq!(limit(&vhost), 50);
    for environment in ["staging", "prod"] {
        node.cli(&[
            "plan",
            spec.arg(),
            "--env",
            environment,
            "--detailed-exitcode",
        ])
        .env_remove("WARREN_ENV")
        .expect(0);
    }
    // Each ladder returns a rejected message after its own delay: no sooner than it
    // (the lower bounds), and staging's before prod's delay could have let it out,
    // which is the only upper bound that tells the two apart (the broker's own
    // dead-lettering, slow on a loaded machine, has the 7 s between them).
    let staging_back = returned_after(node, &staging_vhost);
    let prod_back = returned_after(node, &vhost);
    assert!(
        staging_back >= Duration::from_millis(900) && staging_back < Duration::from_millis(7_900),
        "staging: {staging_back:?}"
    );
    assert!(
        prod_back >= Duration::from_millis(7_900),
        "prod: {prod_back:?}"
    );
    // prod drops a consumer (the message above did not reach it): its plan deletes
    // prod's objects only, and staging's plan stays empty after prod's apply.
    spec.write(&spec_text(&name, &vhost, &staging_vhost, true));
    let planned = node
        .cli(&["plan", spec.arg(), "--env", "prod", "--detailed-exitcode"])
        .env_remove("WARREN_ENV")
        .expect(2);
    assert!(
        planned.stdout.contains("orders.audit"),
        "{}",
        planned.stdout
    );
    assert!(
        !planned.stdout.contains(&staging_vhost),
        "{}",
        planned.stdout
    );
    node.apply(spec.arg())
        .with(&["--env", "prod"])
        .env_remove("WARREN_ENV")
        .expect(0);
    assert!(
        node.get_opt(&format!("/api/queues/{}/orders.audit", pct(&vhost)))
            .is_none()
    );
    assert!(
        node.get_opt(&format!("/api/queues/{}/orders.audit", pct(&staging_vhost)))
            .is_some()
    );
    node.cli(&[
        "plan",
        spec.arg(),
        "--env",
        "staging",
        "--detailed-exitcode",
    ])
    .env_remove("WARREN_ENV")
    .expect(0);
    eprintln!(
        "environments on {version}: staging's message back after {staging_back:?}, prod's after {prod_back:?}"
    );
}

/// Two environments pointed at the same vhost of one broker: the second one's plan
/// names the objects the first one's record holds, and its apply is refused without
/// changing them.
fn two_environments_in_one_vhost_refuse_each_others_objects(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("envsame");
    let name = format!("envsame-{vhost}");
    let spec = Spec::new(&spec_text(&name, &vhost, &vhost, false));
    node.apply(spec.arg())
        .with(&["--env", "staging"])
        .env_remove("WARREN_ENV")
        .expect(0);
    let refused = node
        .apply(spec.arg())
        .with(&["--env", "prod"])
        .env_remove("WARREN_ENV")
        .expect(4);
    assert!(
        refused.stdout.contains(&format!("(spec `{name}@staging`)")),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );
    assert_eq!(
        node.get(&format!("/api/queues/{}/orders.email", pct(&vhost)))["type"],
        "classic",
        "staging's queue is untouched"
    );
}

per_version!(
    two_environments_on_one_broker_keep_to_their_own_objects,
    two_environments_in_one_vhost_refuse_each_others_objects,
);
