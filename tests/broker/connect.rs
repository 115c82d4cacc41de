//! Connection errors against real brokers: the wrong port or scheme, and users whose
//! tags do not open what warren reads. Each is one line that names the fix, comes at
//! once (no retries until `--timeout`), and never holds the password.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::{self, Capture, Run};

const PASSWORD: &str = "tagless-s3cret";

/// Runs `warren ARGS --url URL --user USER --password PASSWORD`.
fn warren(args: &[&str], url: &str, user: &str) -> (Run, Duration) {
    let started = Instant::now();
    let mut all = args.to_vec();
    all.extend(["--url", url, "--user", user, "--password", PASSWORD]);
    let run = support::warren(&all).run();
    (run, started.elapsed())
}

#[track_caller]
fn assert_error(run: &Run, waited: Duration, parts: &[&str]) {
    support::assert_connection_error(run, waited, parts, PASSWORD);
}

/// A user with `tags` and every permission on a fresh vhost, and a spec for a queue
/// in that vhost.
fn user_with_tags(node: &Node, tags: &str) -> (String, Spec) {
    let vhost = node.unique_vhost("tags");
    let user = format!("{vhost}-{}", if tags.is_empty() { "none" } else { tags });
    node.put(
        &format!("/api/users/{}", pct(&user)),
        &json!({"password": PASSWORD, "tags": tags}),
    );
    node.put(
        &format!("/api/permissions/{}/{}", pct(&vhost), pct(&user)),
        &json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
    let spec = Spec::new(&format!(
        "version: 1\nname: {user}\nvhosts:\n  {vhost}:\n    queues:\n      audit: {{ type: classic }}\n"
    ));
    (user, spec)
}

fn https_against_the_management_port(version: Version) {
    let node = Node::shared(version);
    let https = node.mgmt_url.replacen("http://", "https://", 1);
    let (run, waited) = warren(&["plan", "examples/ladder.yaml"], &https, &node.user);
    assert_error(
        &run,
        waited,
        &[
            &format!(
                "TLS handshake with {https}/ failed: the server there speaks plain HTTP, not HTTPS"
            ),
            &format!("did you mean {}/?", node.mgmt_url),
        ],
    );
}

/// What the AMQP listener answers a request that is not AMQP with: 3.10 its AMQP
/// 0-9-1 header, 4.0 and later (where AMQP 1.0 is built in) AMQP 1.0's SASL header.
fn the_amqp_port_as_url(version: Version) {
    let node = Node::shared(version);
    let header = match version {
        Version::V3_10 => "AMQP\\x00\\x00\\x09\\x01",
        Version::V4_0 | Version::V4_3 => "AMQP\\x03\\x01\\x00\\x00",
    };
    let url = format!("http://127.0.0.1:{}", node.amqp_port);
    let (run, waited) = warren(&["plan", "examples/ladder.yaml"], &url, &node.user);
    assert_error(
        &run,
        waited,
        &[
            &format!("{url}/ is RabbitMQ's AMQP port, not its management API"),
            &format!("the server answered with the AMQP protocol header `{header}`"),
            "did you mean http://127.0.0.1:15672/?",
        ],
    );
}

/// RabbitMQ answers a right password without tags as it answers a wrong one (401),
/// with its own reason: warren tells them apart.
fn a_user_without_tags(version: Version) {
    let node = Node::shared(version);
    let (user, spec) = user_with_tags(node, "");
    for command in ["plan", "apply"] {
        let (run, waited) = warren(&[command, spec.arg()], &node.mgmt_url, &user);
        assert_error(
            &run,
            waited,
            &[
                &format!(
                    "RabbitMQ accepted the password of user `{user}` but answered \"Not management user\""
                ),
                "need the `administrator` tag",
            ],
        );
    }
    let (run, waited) = warren(&["plan", spec.arg()], &node.mgmt_url, "no-such-user");
    assert_error(
        &run,
        waited,
        &["RabbitMQ refused the credentials of user `no-such-user`"],
    );
}

/// `monitoring` and `management` open the management API but not the global
/// parameters (policymaker) nor users and permissions (administrator).
fn users_with_too_few_tags(version: Version) {
    let node = Node::shared(version);
    for tags in ["monitoring", "management", "policymaker"] {
        let (user, spec) = user_with_tags(node, tags);
        for command in ["plan", "apply"] {
            let (run, waited) = warren(&[command, spec.arg()], &node.mgmt_url, &user);
            let takes = if tags == "policymaker" {
                "this request takes the `administrator` tag"
            } else {
                "this request takes the `policymaker` tag (or `administrator`)"
            };
            assert_error(
                &run,
                waited,
                &[
                    &format!("user `{user}` is not allowed to GET /api/"),
                    takes,
                    "warren's plan, apply and import need the `administrator` tag",
                    &format!("rabbitmqctl set_user_tags {user} administrator"),
                ],
            );
        }
    }
}

/// An administrator plans and creates without permissions on a vhost (the definitions
/// import needs the tag alone), but replacing a queue needs `configure` on it: the
/// apply is refused before its first write, naming the permission and the fix, not
/// `--amqp-url`.
fn an_administrator_without_permissions_on_the_vhost(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unique_vhost("noperm-admin");
    let user = format!("{vhost}-admin");
    node.put(
        &format!("/api/users/{}", pct(&user)),
        &json!({"password": PASSWORD, "tags": "administrator"}),
    );
    let spec_text = |kind: &str| {
        format!(
            "version: 1\nname: {user}\nvhosts:\n  {vhost}:\n    queues:\n      audit: {{ type: {kind} }}\n"
        )
    };
    let spec = Spec::new(&spec_text("classic"));
    let (run, _) = warren(
        &["apply", spec.arg(), "--auto-approve"],
        &node.mgmt_url,
        &user,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    spec.write(&spec_text("quorum"));
    let (run, _) = warren(
        &["apply", spec.arg(), "--auto-approve"],
        &node.mgmt_url,
        &user,
    );
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    // The error line (progress lines of the phase that stopped come before it).
    let first = run
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    // Refused before the first write by the permission check, which names what is
    // missing and the fix, and says it once that nothing was changed.
    for part in [
        &format!(
            "lacks permissions the plan needs: in vhost \"{vhost}\", `configure` on queue \"audit\""
        ),
        "the `administrator` tag grants none",
        &format!("rabbitmqctl set_permissions -p {vhost}"),
    ] {
        assert!(first.contains(part), "no `{part}` in: {}", run.stderr);
    }
    assert_eq!(first.matches("nothing was changed").count(), 1, "{first}");
    assert!(!run.stderr.contains(PASSWORD), "{}", run.stderr);
}

per_version!(
    https_against_the_management_port,
    the_amqp_port_as_url,
    a_user_without_tags,
    users_with_too_few_tags,
    an_administrator_without_permissions_on_the_vhost,
);
