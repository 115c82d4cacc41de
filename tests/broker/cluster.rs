//! A real 3-node cluster on this machine (own node names, ports and data dirs, one
//! Erlang cookie, joined with `rabbitmqctl join_cluster`): quorum queues replicated
//! on the three nodes, plan and apply through several `--url`s with one node down,
//! no changes once it is back, and a message published before the node stopped is
//! still delivered.

use serde_json::json;

use crate::node::{Node, NodeOptions, Version, pct};
use crate::spec::Spec;
use crate::support::{Capture, Run};

const VHOST: &str = "notifications";
const WORK_QUEUE: &str = "notifier.sms";

/// `warren ARGS` against the cluster: every node's URL, the first node's first.
fn warren(node: &Node, urls: &str, args: &[&str]) -> Run {
    crate::support::warren(args)
        .args([
            "--url",
            urls,
            "--user",
            &node.user,
            "--password",
            &node.password,
        ])
        .run()
}

fn a_three_node_cluster_fails_over_and_keeps_messages(version: Version) {
    let options = NodeOptions {
        cookie: Some(format!("warren-cluster-{}", std::process::id())),
        ..NodeOptions::default()
    };
    let nodes: Vec<Node> = (0..3)
        .map(|_| Node::start(version, options.clone()))
        .collect();
    nodes[1].join(&nodes[0]);
    nodes[2].join(&nodes[0]);
    let status = nodes[0].ctl(&["cluster_status"]);
    for node in &nodes {
        assert!(status.contains(&node.node_name), "{status}");
    }
    let urls = nodes
        .iter()
        .map(|n| n.mgmt_url.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let spec = Spec::example("ladder.yaml", &[]);

    warren(&nodes[0], &urls, &["apply", spec.arg(), "--auto-approve"]).expect(0);
    let queue = format!("/api/queues/{}/{}", pct(VHOST), pct(WORK_QUEUE));
    // Generous: members show once every node's Ra member has started, which a loaded
    // machine slows down; the bound is for a queue that never replicates.
    let replicated = nodes[1].wait_until(std::time::Duration::from_secs(120), || {
        nodes[1].get(&queue)["members"]
            .as_array()
            .map_or(0, Vec::len)
            == 3
    });
    assert!(replicated, "{}: {}", version, nodes[1].get(&queue));
    let published = nodes[0].post(
        &format!("/api/exchanges/{}/amq.default/publish", pct(VHOST)),
        &json!({"properties": {"delivery_mode": 2}, "routing_key": WORK_QUEUE,
                "payload": "before the node stopped", "payload_encoding": "string"}),
    );
    assert_eq!(published["routed"], true);

    // The first URL's node goes down: plan and apply fail over to the others.
    nodes[0].kill();
    warren(&nodes[1], &urls, &["plan", spec.arg()]).expect(0);
    let slower = Spec::example("ladder.yaml", &[("30s", "45s")]);
    let planned = warren(
        &nodes[1],
        &urls,
        &["plan", "--detailed-exitcode", slower.arg()],
    )
    .expect(2);
    assert!(
        planned.stdout.contains("~ warren.retry."),
        "{}",
        planned.stdout
    );
    warren(&nodes[1], &urls, &["apply", slower.arg(), "--auto-approve"]).expect(0);

    // The queue elects a new leader among the two nodes left; then the message is
    // delivered from a node that never held the first leader.
    let mut got = serde_json::Value::Null;
    // An election takes a few seconds of Raft timeouts, more on a loaded machine.
    let delivered = nodes[2].wait_until(std::time::Duration::from_secs(120), || {
        let answer = nodes[2].request(
            reqwest::Method::POST,
            &format!("{queue}/get"),
            Some(&json!({"count": 1, "ackmode": "ack_requeue_false", "encoding": "auto"})),
        );
        if answer.is_success() {
            got = answer.json();
        }
        answer.is_success()
    });
    assert!(delivered, "{version}: no leader took over the queue");
    assert_eq!(
        got[0]["payload"], "before the node stopped",
        "{version}: the message survives its node: {got}"
    );

    // Back in the cluster, the node sees the same state: nothing to change.
    nodes[0].restart();
    warren(&nodes[0], &urls, &["plan", slower.arg()]).expect(0);
}

per_version!(a_three_node_cluster_fails_over_and_keeps_messages);
