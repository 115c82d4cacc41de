//! Proves the broker test harness: nodes of every RabbitMQ version the tests install
//! start, answer the management API, and boot from definitions.

use std::time::Instant;

use serde_json::json;

use warren::model::TargetVersion;

use crate::node::{Node, NodeOptions, Version, host_mounts_under, pct, rabbit_password_hash};

fn shared_node_reports_its_version(version: Version) {
    let started = Instant::now();
    let node = Node::shared(version);
    eprintln!(
        "{version}: shared node {} up in {:.1} s (waited {:.1} s)",
        node.node_name,
        node.startup.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let overview = node.get("/api/overview");
    let reported = overview["rabbitmq_version"].as_str().unwrap_or_default();
    assert!(
        reported.starts_with(&format!("{}.", version.line())),
        "{version} node reports rabbitmq_version {reported:?}"
    );

    // Tests sharing the node isolate themselves by vhost.
    let vhost = node.unique_vhost("smoke");
    let queue = format!("/api/queues/{}/q", pct(&vhost));
    node.put(&queue, &json!({"durable": true}));
    assert_eq!(node.get(&queue)["name"], "q");
    node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
    assert!(node.get_opt(&queue).is_none());
}

fn node_boots_from_definitions(version: Version) {
    let dir = tempfile::tempdir().unwrap();
    let defs = dir.path().join("definitions.json");
    let definitions = json!({
        "users": [{
            "name": "warren-admin",
            "password_hash": rabbit_password_hash("s3cret"),
            "hashing_algorithm": "rabbit_password_hashing_sha256",
            "tags": ["administrator"],
        }],
        "vhosts": [{"name": "smoke"}],
        "permissions": [{
            "user": "warren-admin", "vhost": "smoke",
            "configure": ".*", "write": ".*", "read": ".*",
        }],
        "queues": [{
            "name": "orders", "vhost": "smoke", "durable": true,
            "auto_delete": false, "arguments": {"x-queue-type": "classic"},
        }],
        "exchanges": [], "bindings": [], "policies": [], "parameters": [],
        "global_parameters": [], "topic_permissions": [],
    });
    std::fs::write(&defs, serde_json::to_vec_pretty(&definitions).unwrap()).unwrap();

    let node = Node::start(
        version,
        NodeOptions::with_definitions(&defs, "warren-admin", "s3cret"),
    );
    eprintln!(
        "{version}: node {} booted from definitions in {:.1} s",
        node.node_name,
        node.startup.as_secs_f64()
    );
    assert!(
        node.rabbitmq_version()
            .starts_with(&format!("{}.", version.line()))
    );
    let queue = node.get("/api/queues/smoke/orders");
    assert_eq!(queue["name"], "orders");
    assert_eq!(queue["durable"], true);

    // Booting from definitions creates no default user, and a wrong password
    // for the hashed user is refused.
    let guest = node.request_as(
        "guest",
        "guest",
        reqwest::Method::GET,
        "/api/overview",
        None,
    );
    assert_eq!(guest.status, 401, "guest should not exist: {}", guest.body);
    let wrong = node.request_as(
        "warren-admin",
        "wrong",
        reqwest::Method::GET,
        "/api/overview",
        None,
    );
    assert_eq!(wrong.status, 401);
}

/// The broker limits policy patterns: before 4.1 by PCRE's compiled size (a flat
/// alternation of thousands of queue names is refused), 4.3 to 1,024 bytes. warren
/// writes the names as a tree of shared prefixes and splits a group that is still too
/// large into parts (`model::pattern::split_patterns`) no longer than the target's
/// limit (`max_pattern_length`): every part is accepted. The names share little, as
/// random names would, so the tree saves little and the split is needed.
fn generated_patterns_fit_the_brokers_regex_limit(version: Version) {
    use warren::model::pattern::{escape, max_pattern_length, split_patterns};
    let target: TargetVersion = version.target().parse().unwrap();
    let max = max_pattern_length(target);
    let node = Node::shared(version);
    let vhost = node.unique_vhost("patterns");
    let names: Vec<String> = (0..4000u64)
        .map(|i| format!("{:016x}.retry.1", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let put = |name: &str, pattern: &str| {
        node.request(
            reqwest::Method::PUT,
            &format!("/api/policies/{}/{name}", pct(&vhost)),
            Some(&json!({"pattern": pattern, "definition": {"message-ttl": 1000}, "apply-to": "queues"})),
        )
    };
    let flat = format!(
        "^(?:{})$",
        names
            .iter()
            .map(|n| escape(n))
            .collect::<Vec<_>>()
            .join("|")
    );
    let refused = put("flat", &flat);
    assert_eq!(
        refused.status,
        400,
        "{version} refuses a {}-character alternation",
        flat.len()
    );
    // Where the broker has a limit of its own, it is exact, in bytes (a 2-byte `é`).
    if let Some(limit) = target.pattern_byte_limit() {
        let at_limit = format!("^{}é$", "a".repeat(limit - 4));
        assert_eq!(at_limit.len(), limit);
        let answer = put("at-limit", &at_limit);
        assert!(answer.is_success(), "{version}: {}", answer.body);
        let over = put("over-limit", &format!("^a{}", &at_limit[1..]));
        assert_eq!(over.status, 400, "{version}: {}", over.body);
        assert!(
            over.body
                .contains(&format!("must not exceed {limit} bytes")),
            "{version}: {}",
            over.body
        );
    }
    let parts = split_patterns(&names, max);
    assert!(parts.len() > 1);
    for (index, part) in parts.iter().enumerate() {
        assert!(part.len() <= max);
        let answer = put(&format!("part-{index}"), part);
        assert!(
            answer.is_success(),
            "{version}: part {index} ({} characters): {}",
            part.len(),
            answer.status
        );
    }
    // Names that share a lot make dense trees (single-character branches), the
    // form that compiles largest for its length.
    let dense: Vec<String> = (0..10_000)
        .map(|i| format!("svc{:05}.c{:03}.retry.1", i / 10, i % 10))
        .collect();
    let dense: Vec<&str> = dense.iter().map(String::as_str).collect();
    for (index, part) in split_patterns(&dense, max).iter().enumerate() {
        let answer = put(&format!("dense-{index}"), part);
        assert!(
            answer.is_success(),
            "{version}: dense part {index} ({} characters): {}",
            part.len(),
            answer.status
        );
    }
    node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
}

per_version!(
    also_on_4_0:
        shared_node_reports_its_version,
        node_boots_from_definitions,
        generated_patterns_fit_the_brokers_regex_limit,
);

/// A check of the harness itself, which needs no broker: it stays here, with the
/// harness it checks, which is only compiled into this binary.
#[test]
fn versions_have_targets() {
    assert_eq!(
        Version::all().map(Version::line),
        crate::support::BROKER_LINES
    );
    // The target is the one warren picks for a broker of that line.
    for version in Version::all() {
        assert_eq!(
            version.target(),
            TargetVersion::of_broker(&format!("{}.0", version.line())).to_string(),
            "{version}"
        );
    }
    assert_eq!(Version::V4_3.to_string(), "RabbitMQ 4.3");
    assert_eq!(pct("/"), "%2F");
}

/// A chrooted node (4.0, 4.3) gets its `/proc` and `/dev` in a mount namespace of its
/// own: they are mounted for the node and for `rabbitmqctl`, never on the host, so the
/// root holds no mount while the node runs nor after it is gone (deleting the root
/// must not walk into the host's `/dev`). Other tests may run chrooted nodes at the
/// same time: none of them may add a mount on the host either.
#[test]
fn chrooted_nodes_leave_nothing_mounted_on_the_host() {
    let rooted: Vec<Version> = Version::all()
        .into_iter()
        .filter(|v| v.root().is_some())
        .collect();
    assert_eq!(rooted, [Version::V4_0, Version::V4_3]);
    for version in rooted {
        chrooted_node_leaves_nothing_mounted_on_the_host(version);
    }
}

fn chrooted_node_leaves_nothing_mounted_on_the_host(version: Version) {
    let root = version.root().expect("a chrooted version has a root");
    let node = Node::start(version, NodeOptions::default());
    assert_eq!(
        host_mounts_under(&root),
        Vec::<String>::new(),
        "mounts under {} on the host while a {version} node runs",
        root.display()
    );

    // Inside, the node sees both (mount points relative to its root).
    let pid = node.pid().expect("the node runs");
    let inside = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    let points: Vec<&str> = inside
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .collect();
    for point in ["/proc", "/dev"] {
        assert!(
            points.contains(&point),
            "the {version} node does not see {point} mounted: {points:?}"
        );
    }
    // rabbitmqctl runs chrooted the same way.
    assert!(node.ctl(&["status"]).contains("RabbitMQ version"));

    node.kill();
    drop(node);
    assert_eq!(
        host_mounts_under(&root),
        Vec::<String>::new(),
        "mounts left under {} after a {version} node stopped",
        root.display()
    );
}
