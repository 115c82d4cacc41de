//! `warren upgrade-check` without a broker: every finding from a seeded definitions
//! file and from a spec, the outputs pinned as snapshots, SARIF's shape, the exit
//! codes, and docs/upgrading.md's upgrade-path table against the one in `model/`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::snapshot_settings;
use crate::support::{self, Capture, Run};

const HAZARDS: &str = "tests/definitions/upgrade/hazards-3.10.json";
const SPEC: &str = "tests/definitions/upgrade/spec.yaml";

fn warren(args: &[&str]) -> Run {
    support::warren(args).run()
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// `(id, object name)` of each finding.
fn found(report: &Value) -> BTreeSet<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["object"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn has(report: &Value, id: &str, name: &str) -> bool {
    found(report).contains(&(id.to_string(), name.to_string()))
}

#[test]
fn every_hazard_of_a_definitions_file_is_found_where_it_is() {
    let run = warren(&[
        "upgrade-check",
        "--definitions",
        HAZARDS,
        "--to",
        "4.3",
        "--format",
        "json",
    ])
    .expect(1);
    let report = json(&run);
    for (id, name) in [
        ("classic-mirroring", "ha-all"),
        ("classic-queue-version-1", "cqv1"),
        ("classic-queue-version-1", "old-style"),
        ("quorum-default-delivery-limit", "orders"),
        ("quorum-nack-not-counted", "payments"),
        ("delayed-message-exchange", "delayed"),
        ("queue-master-locator", "located"),
        ("queue-master-locator", "old-style"),
        ("transient-nonexclusive-queue", "scratch"),
        ("queue-mode-lazy", "lazy"),
        ("queue-mode-lazy", "old-style"),
        ("consumer-timeout-classic", "timed"),
        ("import-refused", "many-orders"),
        ("import-refused", "app"),
        ("upgrade-path", ""),
    ] {
        assert!(has(&report, id, name), "no {id} on {name}: {report:#}");
    }
    assert_eq!(report["from"]["version"], "3.10.8");
    assert_eq!(report["from"]["because"], "file");
    // A rule of 4.3's import that a finding explains is not reported twice.
    let refused: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "import-refused")
        .collect();
    assert_eq!(refused.len(), 2, "{refused:#?}");
    // Each finding about a value points at its line in the file.
    let mirroring = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "classic-mirroring")
        .unwrap();
    assert_eq!(mirroring["pointer"], "/policies/0/definition/ha-mode");
    assert!(mirroring["line"].as_u64().unwrap() > 1);
    assert_eq!(mirroring["severity"], "error");
}

/// Findings that say the same about several objects are one in the text, with each
/// object listed (and its line, for a finding that has one); the machine formats keep
/// one per object. The advice names
/// the step of the path the report prints (3.13 → 4.2 has no 4.0 step).
#[test]
fn repeated_findings_are_one_with_their_objects_listed() {
    let run = warren(&["upgrade-check", "--definitions", HAZARDS, "--to", "4.3"]).expect(1);
    let text = &run.stdout;
    assert_eq!(
        text.matches("warning[quorum-default-delivery-limit]")
            .count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("warning[quorum-default-delivery-limit]: 3 queues: the quorum queue has no delivery limit"),
        "{text}"
    );
    for queue in ["orders", "invoices", "shipments"] {
        assert!(
            text.contains(&format!("  --> queue \"{queue}\" in vhost \"legacy\"\n")),
            "{queue}: {text}"
        );
    }
    assert!(text.contains("right after the step to 4.2"), "{text}");
    assert!(!text.contains("4.0 step"), "{text}");
    let report = json(
        &warren(&[
            "upgrade-check",
            "--definitions",
            HAZARDS,
            "--to",
            "4.3",
            "--format",
            "json",
        ])
        .expect(1),
    );
    let each = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "quorum-default-delivery-limit")
        .count();
    assert_eq!(each, 3, "{report:#}");
}

#[test]
fn a_definitions_files_report_in_each_format() {
    let settings = snapshot_settings("snapshots");
    for format in ["human", "json", "markdown", "github"] {
        let run = warren(&[
            "upgrade-check",
            "--definitions",
            HAZARDS,
            "--to",
            "4.3",
            "--format",
            format,
        ])
        .expect(1);
        settings.bind(|| {
            insta::assert_snapshot!(format!("upgrade_check__hazards@{format}"), run.stdout);
        });
    }
}

#[test]
fn sarif_names_every_rule_and_points_into_the_file() {
    let run = warren(&[
        "upgrade-check",
        "--definitions",
        HAZARDS,
        "--to",
        "4.3",
        "--format",
        "sarif",
    ])
    .expect(1);
    let sarif = json(&run);
    assert_eq!(sarif["version"], "2.1.0");
    assert!(sarif["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let run0 = &sarif["runs"][0];
    let rules: BTreeSet<&str> = run0["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let results = run0["results"].as_array().unwrap();
    assert!(results.len() >= 14);
    for result in results {
        assert!(
            rules.contains(result["ruleId"].as_str().unwrap()),
            "{result:#}"
        );
        assert!(["error", "warning", "note"].contains(&result["level"].as_str().unwrap()));
        assert!(!result["message"]["text"].as_str().unwrap().is_empty());
        if let Some(locations) = result["locations"].as_array() {
            let physical = &locations[0]["physicalLocation"];
            assert_eq!(physical["artifactLocation"]["uri"], HAZARDS);
        }
    }
    let mirroring = results
        .iter()
        .find(|r| r["ruleId"] == "classic-mirroring")
        .unwrap();
    assert!(
        mirroring["locations"][0]["physicalLocation"]["region"]["startLine"]
            .as_u64()
            .unwrap()
            > 1
    );
}

#[test]
fn a_spec_is_checked_for_both_lines_and_points_at_its_lines() {
    let run = warren(&[
        "upgrade-check",
        SPEC,
        "--from",
        "3.10",
        "--to",
        "4.3",
        "--format",
        "json",
    ])
    .expect(1);
    let report = json(&run);
    for (id, name) in [
        ("classic-mirroring", "ha-all"),
        ("classic-queue-version-1", "cqv1"),
        ("queue-master-locator", "located"),
        ("delayed-message-exchange", "delayed"),
        ("transient-nonexclusive-queue", "scratch"),
        ("queue-mode-lazy", "lazy"),
        ("quorum-default-delivery-limit", "payments"),
        ("quorum-default-delivery-limit", "orders.billing"),
    ] {
        assert!(has(&report, id, name), "no {id} on {name}: {report:#}");
    }
    let findings = report["findings"].as_array().unwrap();
    // What 4.3 refuses in the spec itself: its compile errors, at their lines.
    let refused: Vec<&Value> = findings
        .iter()
        .filter(|f| f["id"] == "target-refuses-spec")
        .collect();
    assert_eq!(refused.len(), 3, "{refused:#?}");
    for finding in findings.iter().filter(|f| f["id"] != "upgrade-path") {
        assert_eq!(finding["file"], SPEC, "{finding:#}");
        assert!(finding["line"].as_u64().is_some(), "{finding:#}");
    }
    let queue = findings
        .iter()
        .find(|f| f["id"] == "classic-queue-version-1")
        .unwrap();
    assert_eq!(
        queue["spec_change"],
        "remove `x-queue-version` from the queue's `arguments`"
    );
    assert_eq!(queue["spec_path"], "vhosts.legacy.queues.cqv1");
}

#[test]
fn a_spec_that_compiles_for_both_lines_lists_what_changes() {
    let run = warren(&[
        "upgrade-check",
        "examples/ladder.yaml",
        "--from",
        "3.10",
        "--to",
        "4.3",
        "--format",
        "json",
    ]);
    let report = json(&run);
    let changes = report["changes"].as_array().unwrap();
    assert!(!changes.is_empty(), "{report:#}");
    assert!(
        changes
            .iter()
            .all(|c| ["added", "changed", "removed"].contains(&c["change"].as_str().unwrap()))
    );
    let human = warren(&[
        "upgrade-check",
        "examples/ladder.yaml",
        "--from",
        "3.10",
        "--to",
        "4.3",
    ]);
    assert!(
        human.stdout.contains("compiled for 4.3 instead of 3.10"),
        "{}",
        human.stdout
    );
}

#[test]
fn exit_codes_follow_lint() {
    let dir = tempfile::tempdir().unwrap();
    let warned = dir.path().join("lazy.json");
    std::fs::write(
        &warned,
        r#"{"rabbitmq_version": "3.13.7", "vhosts": [{"name": "v"}],
            "queues": [{"name": "q", "vhost": "v", "durable": true, "auto_delete": false,
                        "arguments": {"x-queue-mode": "lazy"}}]}"#,
    )
    .unwrap();
    let warned = warned.to_str().unwrap();
    let run = warren(&["upgrade-check", "--definitions", warned, "--to", "4.3"]).expect(0);
    assert!(
        run.stdout.contains("0 errors, 1 warning, 1 note"),
        "{}",
        run.stdout
    );
    warren(&[
        "upgrade-check",
        "--definitions",
        warned,
        "--to",
        "4.3",
        "--deny",
        "warnings",
    ])
    .expect(1);
    warren(&["upgrade-check", "--definitions", HAZARDS, "--to", "4.3"]).expect(1);
    // From 3.13 the path goes to 4.2 first.
    let report = json(&warren(&[
        "upgrade-check",
        "--definitions",
        warned,
        "--to",
        "4.3",
        "--format",
        "json",
    ]));
    let steps: Vec<&str> = report["upgrade_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["to"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["4.2", "4.3"]);
    // A downgrade is an error.
    warren(&[
        "upgrade-check",
        "--definitions",
        warned,
        "--from",
        "4.3",
        "--to",
        "4.0",
    ])
    .expect(1);

    // A spec needs --from; a file that does not say its version too.
    let run = warren(&["upgrade-check", SPEC, "--to", "4.3"]).expect(1);
    assert!(run.stderr.contains("--from"), "{}", run.stderr);
    let unknown = dir.path().join("unknown.json");
    std::fs::write(&unknown, r#"{"vhosts": [{"name": "v"}]}"#).unwrap();
    let run = warren(&[
        "upgrade-check",
        "--definitions",
        unknown.to_str().unwrap(),
        "--to",
        "4.3",
    ])
    .expect(1);
    assert!(run.stderr.contains("--from"), "{}", run.stderr);

    // A broker that cannot be reached.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let run = warren(&[
        "upgrade-check",
        "--url",
        &url,
        "--timeout",
        "2",
        "--to",
        "4.3",
        "--format",
        "json",
    ])
    .expect(3);
    assert_eq!(json(&run)["error"]["exit_code"], 3);
}

#[test]
fn the_docs_hold_the_upgrade_path_table_of_the_code() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/upgrading.md")).unwrap();
    let table = warren::render::upgrade::upgrade_path_table();
    assert!(
        docs.contains(&table),
        "docs/upgrading.md should hold:\n{table}"
    );
    for check in warren::upgrade::CHECKS {
        assert!(
            docs.contains(&format!("`{}`", check.id)),
            "docs/upgrading.md does not explain `{}`",
            check.id
        );
    }
}
