//! Every lint rule fires on its bad example and stays quiet on its good one; the
//! rendered finding of each bad example is pinned by a snapshot.

use serde_json::Value;

use crate::snapshot_settings;
use crate::support::{self, Capture, Run};

fn warren(args: &[&str]) -> Run {
    support::warren(args).run()
}

/// Lints an example (a spec, or a definitions file when it starts with `{`).
fn lint(dir: &std::path::Path, name: &str, text: &str, format: &str, target: &str) -> Run {
    let definitions = text.trim_start().starts_with('{');
    let file = dir.join(format!(
        "{name}.{}",
        if definitions { "json" } else { "yaml" }
    ));
    std::fs::write(&file, text).unwrap();
    let file = file.to_str().unwrap().to_string();
    let mut args = vec!["lint"];
    if definitions {
        args.push("--definitions");
    }
    args.extend([
        file.as_str(),
        "--format",
        format,
        "--target-version",
        target,
    ]);
    warren(&args)
}

fn fired(run: &Run) -> Vec<String> {
    let document: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    document["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_string())
        .collect()
}

fn target_for(id: &str) -> &'static str {
    match id {
        "cycle-on-3-13" => "3.13",
        "quorum-without-delivery-limit" => "3.10",
        _ => "4.3",
    }
}

#[test]
fn every_rule_fires_on_its_bad_example_and_not_on_its_good_one() {
    let dir = tempfile::tempdir().unwrap();
    let rules = warren(&["rules"]).stdout;
    let ids: Vec<&str> = rules
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(ids.len() >= 20, "{rules}");
    for id in ids {
        let explained = warren(&["rules", id]).stdout;
        let bad = explained
            .split("Reported:\n\n")
            .nth(1)
            .and_then(|rest| rest.split("\nFixed:\n\n").next())
            .unwrap()
            .lines()
            .map(|l| l.strip_prefix("    ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        let good = explained
            .split("\nFixed:\n\n")
            .nth(1)
            .unwrap()
            .split("\nTurn it off")
            .next()
            .unwrap()
            .lines()
            .map(|l| l.strip_prefix("    ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        let target = target_for(id);
        let bad_run = lint(dir.path(), &format!("{id}-bad"), &bad, "json", target);
        assert!(
            fired(&bad_run).iter().any(|r| r == id),
            "{id}: bad example did not fire:\n{}",
            bad_run.stdout
        );
        let good_run = lint(dir.path(), &format!("{id}-good"), &good, "json", target);
        assert!(
            !fired(&good_run).iter().any(|r| r == id),
            "{id}: good example fired:\n{}",
            good_run.stdout
        );
        let fired_good: Vec<String> = fired(&good_run);
        assert!(
            fired_good
                .iter()
                .all(|r| !["invalid-reference", "invalid-value", "unknown-key"]
                    .contains(&r.as_str())),
            "{id}: good example does not compile cleanly: {fired_good:?}"
        );
        let human = lint(dir.path(), &format!("{id}-bad"), &bad, "human", target);
        let text = human.stdout.replace(dir.path().to_str().unwrap(), "<dir>");
        let own: Vec<&str> = text
            .split("\n\n")
            .filter(|block| block.contains(&format!("[{id}]")))
            .collect();
        let mut settings = snapshot_settings("snapshots");
        settings.set_snapshot_suffix(id.to_string());
        settings.bind(|| insta::assert_snapshot!("rule", own.join("\n\n")));
    }
}

#[test]
fn the_bundled_examples_lint_clean() {
    for example in support::EXAMPLES {
        let run = warren(&["lint", &support::example(example), "--deny", "warnings"]);
        assert_eq!(run.code, Some(0), "{example}:\n{}", run.stdout);
    }
}

/// What the broker accepts but loses messages with, written by hand or imported (a
/// plain exchange whose alternate exchange is missing), compiles: it is a lint
/// finding at the place in the spec, not a compile error.
#[test]
fn legal_but_risky_plain_objects_compile_and_are_lint_findings() {
    let dir = tempfile::tempdir().unwrap();
    let text = "version: 1\nvhosts:\n  shop:\n    exchanges:\n      events:\n        type: topic\n        alternate_exchange: events.unroutable\n      events.unrouted:\n        type: fanout\n    queues:\n      audit:\n        arguments: { x-dead-letter-exchange: audit.dead }\n";
    let file = dir.path().join("risky.yaml");
    std::fs::write(&file, text).unwrap();
    let file = file.to_str().unwrap();
    // It compiles (the broker would accept it) ...
    let compiled = warren(&["compile", file]);
    assert_eq!(compiled.code, Some(0), "{}", compiled.stderr);
    // ... but `validate` applies the rules at the `deny` level, as `lint` does: a spec
    // `lint` fails is never called valid.
    let validated = warren(&["validate", file]);
    assert_eq!(validated.code, Some(1), "{}", validated.stdout);
    assert!(
        validated.stderr.contains("[alternate-exchange-missing]")
            && !validated.stdout.contains("valid"),
        "{}",
        validated.stderr
    );
    let linted = warren(&["lint", file]);
    assert_eq!(linted.code, Some(1), "{}", linted.stdout);
    assert!(
        linted.stdout.contains("[alternate-exchange-missing]")
            && linted.stdout.contains(&format!("{file}:5:7")),
        "{}",
        linted.stdout
    );
    assert!(
        linted.stdout.contains("[dead-letter-exchange-missing]")
            && linted.stdout.contains(&format!("{file}:11:7")),
        "{}",
        linted.stdout
    );
}

const SHARED_RETURN: &str = "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        defaults:\n          retry: { mode: reject, delays: [30s], return_via: inner_exchange }\n        consumers:\n          a: {}\n          b: {}\n";

#[test]
fn levels_can_be_changed_for_the_spec_or_one_object() {
    let dir = tempfile::tempdir().unwrap();
    let warned = lint(dir.path(), "warned", SHARED_RETURN, "json", "4.1");
    assert_eq!(warned.code, Some(0), "warnings do not fail");
    assert!(fired(&warned).contains(&"retry-returns-to-several-queues".to_string()));

    let denied = SHARED_RETURN.replacen(
        "version: 1\n",
        "version: 1\nlint: { deny: [retry-returns-to-several-queues] }\n",
        1,
    );
    assert_eq!(
        lint(dir.path(), "denied", &denied, "json", "4.1").code,
        Some(1)
    );

    let inline = SHARED_RETURN.replace(
        "          a: {}\n",
        "          a: { lint: { allow: [retry-returns-to-several-queues] } }\n",
    );
    let run = lint(dir.path(), "inline", &inline, "json", "4.1");
    let paths: Vec<String> = serde_json::from_str::<Value>(&run.stdout).unwrap()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        paths.iter().all(|p| !p.contains("consumers.a")),
        "{paths:?}"
    );
    assert!(paths.iter().any(|p| p.contains("consumers.b")), "{paths:?}");

    let unknown = SHARED_RETURN.replacen(
        "version: 1\n",
        "version: 1\nlint: { allow: [retry-returns-to-several-queue] }\n",
        1,
    );
    let run = lint(dir.path(), "unknown", &unknown, "human", "4.1");
    assert_eq!(run.code, Some(1));
    assert!(
        run.stdout
            .contains("did you mean `retry-returns-to-several-queues`?"),
        "{}",
        run.stdout
    );

    let strict = dir.path().join("warned.yaml");
    let run = warren(&["lint", strict.to_str().unwrap(), "--deny", "warnings"]);
    assert_eq!(run.code, Some(1));
}

#[test]
fn ci_formats_point_at_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let github = lint(dir.path(), "gh", SHARED_RETURN, "github", "4.1");
    let line = github.stdout.lines().next().unwrap();
    assert!(line.starts_with("::warning file="), "{line}");
    assert!(line.contains("gh.yaml,line="), "{line}");
    assert!(
        line.contains(",title=warren retry-returns-to-several-queues::"),
        "{line}"
    );

    let sarif: Value =
        serde_json::from_str(&lint(dir.path(), "sarif", SHARED_RETURN, "sarif", "4.1").stdout)
            .unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "retry-returns-to-several-queues");
    assert_eq!(result["level"], "warning");
    assert!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn rules_explain_themselves_and_unknown_ids_fail() {
    let run = warren(&["rules", "dead-letter-cycle-dropped"]);
    assert_eq!(run.code, Some(0));
    assert!(run.stdout.contains("cycle detection"), "{}", run.stdout);
    assert!(run.stdout.contains("Reported:") && run.stdout.contains("Fixed:"));
    assert_eq!(warren(&["rules", "dead-letter-cycle"]).code, Some(1));
}

#[test]
fn every_rule_is_documented() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/lint.md")).unwrap();
    let rules = warren(&["rules"]).stdout;
    for line in rules.lines().take_while(|l| !l.is_empty()) {
        let id = line.split_whitespace().next().unwrap();
        assert!(
            doc.contains(&format!("| `{id}` |")),
            "docs/lint.md lacks rule {id}"
        );
    }
}

/// The parking policy (4.0 and later) selects quorum queues ending in `.parking`: a
/// quorum queue with that ending that no retry exchange routes to is captured; a classic
/// one, or a parking queue of warren's, is not.
#[test]
fn a_quorum_queue_taken_by_the_parking_policy_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let queue = |name: &str, queue_type: &str| {
        format!(
            r#"{{"name": "{name}", "vhost": "v", "durable": true, "auto_delete": false, "arguments": {{"x-queue-type": "{queue_type}"}}}}"#
        )
    };
    let text = format!(
        r#"{{"vhosts": [{{"name": "v"}}],
  "exchanges": [{{"name": "s.c.retry", "vhost": "v", "type": "direct", "durable": true, "auto_delete": false, "internal": false, "arguments": {{}}}}],
  "queues": [{}, {}, {}],
  "bindings": [{{"source": "s.c.retry", "vhost": "v", "destination": "s.c.parking", "destination_type": "queue", "routing_key": "parking", "arguments": {{}}}}],
  "policies": [{{"name": "warren.parking", "vhost": "v", "pattern": "^.*\\.parking$", "apply-to": "quorum_queues", "definition": {{"delivery-limit": -1}}, "priority": 100}}]}}"#,
        queue("s.c.parking", "quorum"),
        queue("audit.parking", "quorum"),
        queue("old.parking", "classic"),
    );
    let run = lint(dir.path(), "parking", &text, "json", "4.0");
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    let captured: Vec<&str> = document["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "queue-captured-by-retry-tier")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(captured.len(), 1, "{}", run.stdout);
    assert!(captured[0].contains("`audit.parking`"), "{}", captured[0]);
    assert!(
        captured[0].contains("`delivery-limit: -1`"),
        "{}",
        captured[0]
    );
}
