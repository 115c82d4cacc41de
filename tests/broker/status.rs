//! `warren status` against real brokers: a spec applied to a vhost of its own, known
//! numbers of messages put in its work, tier and parking queues, one consumer
//! attached, a user policy that shadows a tier's generated one and a consumer added to
//! the spec without applying it; the text, JSON and Prometheus reports must show
//! exactly that. The Prometheus output is read by Prometheus's own Python parser
//! (`prometheus_client`, installed by scripts/test; a missing parser fails the test).
//! And the reads must not grow with the consumers: a 300-consumer spec costs the
//! requests a 10-consumer one does.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use lapin::BasicProperties;
use lapin::options::{BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use serde_json::{Value, json};

use crate::amqp::{self, Client, Contract};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

/// The spec: `worker` with a two-tier ladder of classic queues (a classic parking
/// queue tells the age of its oldest message), `idle` with a one-tier quorum ladder,
/// `plain` without a ladder, and `odd`, whose work queue's name needs escaping in a
/// Prometheus label. The delays are long on purpose: a message put in a tier stays
/// there for the whole test, so its count is exact. `late` is the consumer added
/// later without applying the spec.
fn spec_yaml(vhost: &str, with_late: bool) -> String {
    let late = if with_late {
        "          late:\n            routing_keys: [late]\n"
    } else {
        ""
    };
    format!(
        r#"version: 1
name: {vhost}
vhosts:
  {vhost}:
    services:
      jobs:
        consumers:
          worker:
            routing_keys: [job]
            retry:
              delays: [1h, 2h]
              queue_type: classic
          idle:
            routing_keys: [idle]
            retry:
              delays: [1h]
          plain:
            routing_keys: [plain]
          odd:
            queue: 'jobs."odd"\q'
            routing_keys: [odd]
{late}"#
    )
}

const ODD_QUEUE: &str = r#"jobs."odd"\q"#;

fn apply(node: &Node, spec: &Spec, vhost: &str) {
    node.apply(spec.arg()).expect(0);
    node.put(
        &format!("/api/permissions/{}/{}", pct(vhost), pct(&node.user)),
        &json!({"configure": ".*", "write": ".*", "read": ".*"}),
    );
}

fn status(node: &Node, spec: &Spec, format: &str) -> String {
    node.warren(&["status", spec.arg(), "--format", format])
        .run()
        .expect(0)
        .stdout
}

/// The consumer `name` of a JSON report.
pub fn consumer<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["consumer"] == name)
        .unwrap_or_else(|| panic!("no consumer {name} in {report:#}"))
}

/// The problems of a consumer as `(kind, queue)`, without `parking-growing`: the
/// broker's publish rate decays over its last samples within seconds of the last
/// publish, so whether a report catches it above 0 depends on when it runs.
fn problems(consumer: &Value) -> Vec<(String, String)> {
    consumer["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["queue"].as_str().unwrap().to_string(),
            )
        })
        .filter(|(kind, _)| kind != "parking-growing")
        .collect()
}

fn tier_counts(consumer: &Value) -> Vec<Value> {
    consumer["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["messages"].clone())
        .collect()
}

/// Every figure the scenario put on the broker, as the JSON report shows it.
fn counts_as_put(report: &Value) -> bool {
    let worker = consumer(report, "worker");
    let idle = consumer(report, "idle");
    let plain = consumer(report, "plain");
    worker["ready"] == 3
        && worker["unacked"] == 0
        && tier_counts(worker) == [json!(2), json!(1)]
        && worker["parking"]["messages"] == 2
        && idle["ready"] == 0
        && tier_counts(idle) == [json!(0)]
        && idle["parking"]["messages"] == 0
        && plain["ready"] == 0
        && plain["unacked"] == 2
        && plain["consumers"] == 1
}

/// One row of a sample read by the parser: its name, labels and value.
type Sample = (String, BTreeMap<String, String>, f64);

/// The words of the text report's row for the consumer `name`.
fn text_row(text: &str, name: &str) -> Option<Vec<String>> {
    let line = text
        .lines()
        .find(|line| line.split_whitespace().nth(1) == Some(name))?;
    Some(line.split_whitespace().map(str::to_string).collect())
}

/// Whether the text report's rows show every count the scenario put, none unknown.
fn text_shows_counts(text: &str) -> bool {
    let shows = |name: &str, expected: &[&str]| {
        text_row(text, name).is_some_and(|row| {
            row.get(2..2 + expected.len()).is_some_and(|words| {
                words
                    .iter()
                    .map(String::as_str)
                    .eq(expected.iter().copied())
            })
        })
    };
    shows("worker", &["3", "0", "0", "2", "·", "1", "2"])
        && shows("idle", &["0", "0", "0", "0", "0"])
        && shows("plain", &["0", "2", "1", "-", "-"])
}

/// A sample the Prometheus report must hold: its name, its labels (some of them) and
/// its value (`None`: no such sample).
type ExpectedSample<'a> = (&'static str, Vec<(&'static str, &'a str)>, Option<f64>);

/// The samples of the scenario's Prometheus report whose values it knows.
fn prometheus_expected<'a>(
    vhost: &'a str,
    tier_1: &'a str,
    parking: &'a str,
) -> Vec<ExpectedSample<'a>> {
    let labels = |more: &[(&'static str, &'a str)]| {
        let mut all = vec![("vhost", vhost), ("service", "jobs")];
        all.extend_from_slice(more);
        all
    };
    let work = |c: &'static str, q: &'static str| {
        labels(&[("consumer", c), ("queue", q), ("role", "work")])
    };
    let problem = |c: &'static str, kind: &'static str| labels(&[("consumer", c), ("kind", kind)]);
    vec![
        (
            "warren_queue_messages_ready",
            work("worker", "jobs.worker"),
            Some(3.0),
        ),
        (
            "warren_queue_messages_unacked",
            work("plain", "jobs.plain"),
            Some(2.0),
        ),
        (
            "warren_queue_consumers",
            work("plain", "jobs.plain"),
            Some(1.0),
        ),
        (
            "warren_queue_consumers",
            work("worker", "jobs.worker"),
            Some(0.0),
        ),
        (
            "warren_queue_messages",
            labels(&[
                ("consumer", "worker"),
                ("role", "tier"),
                ("tier", "1"),
                ("queue", tier_1),
            ]),
            Some(2.0),
        ),
        (
            "warren_queue_messages",
            labels(&[("consumer", "worker"), ("role", "tier"), ("tier", "2")]),
            Some(1.0),
        ),
        (
            "warren_queue_messages",
            labels(&[
                ("consumer", "worker"),
                ("role", "parking"),
                ("queue", parking),
            ]),
            Some(2.0),
        ),
        (
            "warren_parking_oldest_message_age_seconds",
            labels(&[("consumer", "idle")]),
            None,
        ),
        (
            "warren_problems",
            problem("worker", "no-consumers"),
            Some(1.0),
        ),
        ("warren_problems", problem("worker", "policy"), Some(1.0)),
        (
            "warren_problems",
            problem("worker", "parking-not-empty"),
            Some(1.0),
        ),
        (
            "warren_problems",
            problem("worker", "missing-queue"),
            Some(0.0),
        ),
        (
            "warren_problems",
            problem("plain", "no-consumers"),
            Some(0.0),
        ),
        // The label with a double quote and a backslash comes back as the queue's name.
        (
            "warren_queue_consumers",
            labels(&[("consumer", "odd"), ("queue", ODD_QUEUE)]),
            Some(1.0),
        ),
    ]
}

/// Whether the Prometheus report shows every value the scenario knows, and the age of
/// the oldest parked message.
fn prometheus_shows_counts(samples: &[Sample], expected: &[ExpectedSample<'_>]) -> bool {
    expected
        .iter()
        .all(|(name, labels, value)| sample(samples, name, labels) == *value)
        && samples
            .iter()
            .any(|(name, _, _)| name == "warren_parking_oldest_message_age_seconds")
}

/// Parses a text exposition with `prometheus_client.parser`: every family must be a
/// gauge with its help text; the samples come back.
fn parse_prometheus(exposition: &str) -> Vec<Sample> {
    const SCRIPT: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    assert family.type == "gauge", (family.name, family.type)
    assert family.documentation, family.name
    for s in family.samples:
        samples.append([s.name, s.labels, s.value])
print(json.dumps(samples))
"#;
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (scripts/test installs prometheus_client)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client could not read the exposition (is it installed? scripts/test installs it):\n{}\n{exposition}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sample(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let matching: Vec<f64> = samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, _, value)| *value)
        .collect();
    assert!(matching.len() <= 1, "{name} {labels:?}: {matching:?}");
    matching.first().copied()
}

#[expect(
    clippy::too_many_lines,
    reason = "one trial read top to bottom: each state of the queues, then what status reports of it"
)]
fn reports_what_the_broker_holds(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("status");
    let spec = Spec::new(&spec_yaml(&vhost, false));
    apply(node, &spec, &vhost);

    // The tier and parking queues' names, as the contract gives them.
    let contract = Contract::of(&spec.path, version.target());
    let ladder = contract.consumer("worker").retry();
    let tier_1 = ladder.schedule[0].queue.clone();
    let tier_2 = ladder.schedule[1].queue.clone();
    let parking = ladder.on_exhausted.queue.clone().unwrap();
    let rt = amqp::runtime();
    let client = rt.block_on(Client::connect(node, &vhost));
    let put = |queue: &str, n: usize, properties: BasicProperties| {
        for i in 0..n {
            rt.block_on(client.publish("", queue, format!("m{i}").as_bytes(), properties.clone()))
                .unwrap();
        }
    };
    let parked_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 600;
    put("jobs.worker", 3, BasicProperties::default());
    put(&tier_1, 2, BasicProperties::default());
    put(&tier_2, 1, BasicProperties::default());
    put(
        &parking,
        2,
        BasicProperties::default().with_timestamp(parked_at),
    );
    // A consumer on `plain` that takes two messages and acknowledges neither.
    let channel = rt.block_on(client.connection.create_channel()).unwrap();
    rt.block_on(channel.basic_qos(10, BasicQosOptions::default()))
        .unwrap();
    let mut deliveries = rt
        .block_on(channel.basic_consume(
            "jobs.plain".into(),
            "status-test".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        ))
        .unwrap();
    put("jobs.plain", 2, BasicProperties::default());
    for _ in 0..2 {
        rt.block_on(deliveries.next()).unwrap().unwrap();
    }
    // A consumer on `odd` too, so that its only problem is the one added below.
    let _odd = rt
        .block_on(channel.basic_consume(
            ODD_QUEUE.into(),
            "status-test-odd".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        ))
        .unwrap();
    // A user policy above the generated ones (priority 100 unless the spec's
    // `policy_priority` says otherwise), on the second tier of `worker`.
    node.put(
        &format!("/api/policies/{}/ops-high", pct(&vhost)),
        &json!({
            "pattern": format!("^{}$", tier_2.replace('.', r"\.")),
            "apply-to": "queues",
            "priority": 200,
            "definition": {"max-length": 100000}
        }),
    );

    // The broker emits queue statistics every few seconds (5 s by default), so the
    // counts just put show up in a listing only some seconds later: poll the report
    // until they do, rather than sleep for a guessed time.
    let worker_problems = [
        ("no-consumers".to_string(), "jobs.worker".to_string()),
        ("policy".to_string(), tier_2.clone()),
        ("policy-hazard".to_string(), tier_2.clone()),
        ("parking-not-empty".to_string(), parking.clone()),
    ];
    let idle_problems = [("no-consumers".to_string(), "jobs.idle".to_string())];
    let mut report = Value::Null;
    let mut text = String::new();
    let mut samples = Vec::new();
    // A bound for what would never come, not for the lag: a 4.3 node beside two
    // CPU-bound processes had not listed the counts of two new quorum queues after 60 s.
    // Every figure asserted below is waited for, in each format, rather than some of
    // them: each count is emitted on its own, so one can lag when others have shown
    // (seen on 4.3: `odd`'s consumer not yet counted, and `worker` listed without
    // `consumers` in a report read after the counts had shown), and a report says
    // "unknown" for what its listing lacks.
    let seen = node.wait_until(Duration::from_secs(300), || {
        report = serde_json::from_str(&status(node, &spec, "json")).unwrap();
        // The head message's timestamp is a statistic of its own, which can show an
        // emission after the counts (seen on 4.3 under load).
        let worker = consumer(&report, "worker");
        let json_whole = counts_as_put(&report)
            && worker["consumers"] == 0
            && worker["tiers"][1].is_object()
            && worker["parking"]["oldest_age_seconds"].is_u64()
            && problems(worker) == worker_problems
            && problems(consumer(&report, "idle")) == idle_problems
            && problems(consumer(&report, "plain")).is_empty()
            && problems(consumer(&report, "odd")).is_empty();
        if !json_whole {
            return false;
        }
        text = status(node, &spec, "text");
        samples = parse_prometheus(&status(node, &spec, "prometheus"));
        text_shows_counts(&text)
            && prometheus_shows_counts(&samples, &prometheus_expected(&vhost, &tier_1, &parking))
    });
    assert!(
        seen,
        "the counts and the shadowing policy never showed in every format:\n{report:#}\n{text}"
    );

    assert_eq!(report["format"], "warren-status/1");
    let worker = consumer(&report, "worker");
    assert_eq!(
        (worker["vhost"].as_str(), worker["service"].as_str()),
        (Some(vhost.as_str()), Some("jobs"))
    );
    assert_eq!(worker["queue"], "jobs.worker");
    assert_eq!(worker["consumers"], 0);
    assert_eq!(worker["tiers"][0]["queue"], tier_1.as_str());
    assert_eq!(worker["parking"]["queue"], parking.as_str());
    assert_eq!(problems(worker), worker_problems);
    // What the shadowing policy's own limit does to the tier, in words.
    let hazard = worker["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "policy-hazard")
        .unwrap();
    assert!(
        hazard["message"].as_str().unwrap().contains(
            "policy `ops-high` sets `max-length` to 100000: past 100000 messages the oldest waiting retries are"
        ),
        "{hazard:#}"
    );
    let shadowed = worker["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "policy")
        .unwrap();
    assert!(
        shadowed["message"].as_str().unwrap().contains("`ops-high`"),
        "{shadowed:#}"
    );
    // The parked messages' timestamp is 600 s old: a classic queue tells it.
    let age = worker["parking"]["oldest_age_seconds"]
        .as_u64()
        .unwrap_or_else(|| panic!("no age of the oldest parked message:\n{worker:#}"));
    assert!((600..900).contains(&age), "{age}");
    let idle = consumer(&report, "idle");
    assert_eq!(problems(idle), idle_problems);
    // A quorum parking queue cannot tell the age without consuming: unknown, not 0.
    assert_eq!(idle["parking"]["oldest_age_seconds"], Value::Null);
    let plain = consumer(&report, "plain");
    assert!(problems(plain).is_empty(), "{plain:#}");
    assert_eq!(plain["tiers"], json!([]));
    assert_eq!(plain["parking"], Value::Null);
    let odd = consumer(&report, "odd");
    assert!(problems(odd).is_empty(), "{odd:#}");
    assert_eq!(report["problems"].as_u64().unwrap() as usize, {
        report["consumers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["problems"].as_array().unwrap().len())
            .sum::<usize>()
    });

    // The text report: the table's rows and the problems under it.
    let row = |name: &str| -> Vec<String> {
        text_row(&text, name).unwrap_or_else(|| panic!("no row for {name}:\n{text}"))
    };
    assert_eq!(
        row("worker")[..8],
        ["jobs", "worker", "3", "0", "0", "2", "·", "1"]
    );
    assert_eq!(row("worker")[8], "2", "{text}");
    assert_eq!(row("idle")[2..], ["0", "0", "0", "0", "0"], "{text}");
    assert_eq!(row("plain")[2..], ["0", "2", "1", "-", "-"], "{text}");
    assert!(text.contains("problems:"), "{text}");
    assert!(
        text.contains(&format!(
            "jobs/worker: tier 2 queue `{tier_2}` is under policy `ops-high`"
        )),
        "{text}"
    );
    assert!(
        text.contains("jobs/idle: work queue `jobs.idle` has no consumers"),
        "{text}"
    );

    // The Prometheus report, read by Prometheus's own parser.
    for (name, labels, expected) in prometheus_expected(&vhost, &tier_1, &parking) {
        assert_eq!(
            sample(&samples, name, &labels),
            expected,
            "{name} {labels:?}"
        );
    }
    let of = |name: &str, labels: &[(&str, &str)]| {
        let mut all = vec![("vhost", vhost.as_str()), ("service", "jobs")];
        all.extend_from_slice(labels);
        sample(&samples, name, &all)
    };
    let age = of(
        "warren_parking_oldest_message_age_seconds",
        &[("consumer", "worker")],
    )
    .unwrap();
    assert!((600.0..900.0).contains(&age), "{age}");

    // A consumer added to the spec and not applied: its queue is missing, its figures
    // unknown; the report still succeeds.
    spec.write(&spec_yaml(&vhost, true));
    let report: Value = serde_json::from_str(&status(node, &spec, "json")).unwrap();
    let late = consumer(&report, "late");
    assert_eq!(
        problems(late),
        [("missing-queue".to_string(), "jobs.late".to_string())]
    );
    assert_eq!(late["exists"], false);
    assert_eq!(late["ready"], Value::Null);
    assert_eq!(late["consumers"], Value::Null);
    let text = status(node, &spec, "text");
    assert!(
        text.contains("jobs/late: work queue `jobs.late` does not exist on the broker"),
        "{text}"
    );
    let samples = parse_prometheus(&status(node, &spec, "prometheus"));
    assert_eq!(
        sample(
            &samples,
            "warren_problems",
            &[("consumer", "late"), ("kind", "missing-queue")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&samples, "warren_queue_messages", &[("consumer", "late")]),
        None,
        "an unknown figure has no sample"
    );

    // `--service` keeps one service; an unknown one lists the choices.
    let only = node
        .warren(&[
            "status",
            spec.arg(),
            "--format",
            "json",
            "--vhost",
            &vhost,
            "--service",
            "jobs",
        ])
        .run()
        .expect(0);
    let only: Value = serde_json::from_str(&only.stdout).unwrap();
    assert_eq!(only["consumers"].as_array().unwrap().len(), 5);
    let wrong = node
        .warren(&["status", spec.arg(), "--service", "job"])
        .run()
        .expect(1);
    assert!(
        wrong.stderr.contains("no service `job`") && wrong.stderr.contains("`jobs`"),
        "{}",
        wrong.stderr
    );

    drop(deliveries);
    rt.block_on(client.close());
    node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
}

/// A spec of `n` consumers, each with a one-tier ladder, in `vhost`.
fn many_consumers(vhost: &str, n: usize) -> String {
    let mut yaml = format!(
        "version: 1\nname: {vhost}\ndefaults:\n  queue_type: classic\n  retry:\n    delays: [1h]\nvhosts:\n  {vhost}:\n    services:\n      s:\n        consumers:\n"
    );
    for i in 0..n {
        yaml.push_str(&format!(
            "          c{i:04}:\n            routing_keys: [k{i}]\n"
        ));
    }
    yaml
}

/// The `requests: N` line `WARREN_REQUEST_COUNT=1` prints.
fn requests(node: &Node, spec: &Spec) -> (u64, Value) {
    let run = node
        .warren(&["status", spec.arg(), "--format", "json"])
        .env("WARREN_REQUEST_COUNT", "1")
        .run()
        .expect(0);
    let line = run
        .stderr
        .lines()
        .find_map(|line| line.strip_prefix("requests: "))
        .unwrap_or_else(|| panic!("no requests line:\n{}", run.stderr));
    (
        line.parse().unwrap(),
        serde_json::from_str(&run.stdout).unwrap(),
    )
}

fn requests_do_not_grow_with_consumers(version: Version) {
    let node = Node::shared(version);
    let mut counts = Vec::new();
    // 300 consumers are 900 queues: enough to show no growth, and a vhost the broker
    // deletes well within the tests' 30 s request timeout on a loaded machine (one of
    // 3,000 queues took longer on 4.0).
    for n in [10, 300] {
        let vhost = node.unused_vhost("status-many");
        let spec = Spec::new(&many_consumers(&vhost, n));
        apply(node, &spec, &vhost);
        let (count, report) = requests(node, &spec);
        assert_eq!(report["consumers"].as_array().unwrap().len(), n);
        // Every queue was found in the one listing: none is reported missing.
        assert!(
            report["consumers"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["exists"] == true && c["parking"]["exists"] == true),
            "a queue is missing"
        );
        counts.push(count);
        node.remove_vhost(&vhost);
    }
    assert_eq!(counts[0], counts[1], "requests for 10 and 300 consumers");
    // The login and the version (`/api/whoami`, `/api/overview`), and for the one vhost
    // its queues' statistics, its policies and its operator policies.
    assert_eq!(counts[0], 5);
}

/// Right after an apply the broker has not emitted the new queues' statistics yet (4 to
/// 10 s): status reads which policy applies from the broker's policies, so a ladder
/// just applied has no policy problem, as `plan` has no changes.
fn no_policy_alarm_while_statistics_lag(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("status-lag");
    let spec = Spec::new(&spec_text_one(&vhost));
    apply(node, &spec, &vhost);
    let report: Value = serde_json::from_str(&status(node, &spec, "json")).unwrap();
    let policy_problems: Vec<&Value> = report["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["problems"].as_array().unwrap())
        .filter(|p| p["kind"] == "policy")
        .collect();
    assert!(
        policy_problems.is_empty(),
        "{version}: {policy_problems:#?}"
    );
    node.plan(spec.arg()).expect(0);
    // A hand policy above the tier's is seen at once, statistics or not.
    node.put(
        &format!("/api/policies/{}/ops-high", pct(&vhost)),
        &json!({"pattern": "\\.retry\\..*1$", "definition": {"message-ttl": 5000},
                "priority": 1_000_000, "apply-to": "queues"}),
    );
    let report: Value = serde_json::from_str(&status(node, &spec, "json")).unwrap();
    let worker = consumer(&report, "worker");
    assert!(
        worker["problems"].as_array().unwrap().iter().any(|p| p["kind"] == "policy"
            && p["message"].as_str().unwrap().contains("`ops-high`")),
        "{version}: {worker:#}"
    );
    node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
}

/// One consumer with a one-tier ladder.
fn spec_text_one(vhost: &str) -> String {
    format!(
        "version: 1\nname: {vhost}\nvhosts:\n  {vhost}:\n    services:\n      jobs:\n        consumers:\n          worker:\n            routing_keys: [job]\n            retry:\n              delays: [1h]\n"
    )
}

per_version!(
    no_policy_alarm_while_statistics_lag,
    reports_what_the_broker_holds,
    requests_do_not_grow_with_consumers
);
