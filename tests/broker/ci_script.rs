//! The CI flow of docs/ci.md, end to end, against a real RabbitMQ 3.10 node: the
//! script the GitHub Action runs, `scripts/ci/warren-ci`, itself (never a paraphrase of
//! it) for a pull request (lint, plan, comment) and for the merge (apply), then a plan
//! that finds nothing left to do. What needs no broker (`install`, the flags after
//! `--`, the GitLab comment) is in `tests/offline/ci_script.rs`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::node::{Node, Version};
use crate::support::{Capture, Run};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ci/warren-ci");

/// A repository that holds a spec, and the script's output directory.
struct Checkout {
    dir: tempfile::TempDir,
}

impl Checkout {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// `warren-ci ARGS` in the checkout, against `node`, as a CI job runs it: the
    /// broker from WARREN_URL / WARREN_USER / WARREN_PASSWORD, output in `out/`, the
    /// step outputs in `github-output`.
    fn script(&self, node: &Node, args: &[&str]) -> Command {
        let mut command = Command::new(SCRIPT);
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("WARREN", env!("CARGO_BIN_EXE_warren"))
            .env("WARREN_CI_OUT", self.path("out"))
            .env("GITHUB_OUTPUT", self.path("github-output"))
            .env("WARREN_URL", &node.mgmt_url)
            .env("WARREN_USER", &node.user)
            .env("WARREN_PASSWORD", &node.password)
            .env("NO_COLOR", "1")
            .env_remove("WARREN_TARGET_VERSION")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITLAB_CI")
            .env_remove("WARREN_ENV")
            .env_remove("CI_ORDERS_PASSWORD");
        command
    }
}

fn spec(name: &str, vhost: &str) -> String {
    format!(
        "version: 1\nname: {name}\nladders:\n  standard:\n    delays: [30s, 5m]\nvhosts:\n  {vhost}:\n    defaults:\n      retry: {{ ladder: standard }}\n    services:\n      orders:\n        exchange: {{ name: orders, type: topic }}\n        consumers:\n          email:\n            routing_keys: [\"order.created\"]\nusers:\n  {name}_app:\n    password: {{ env: CI_ORDERS_PASSWORD }}\n    permissions:\n      {vhost}:\n        configure: '^$'\n        write: '^orders$'\n        read: '^orders\\.'\n"
    )
}

#[track_caller]
fn expect(run: Run, code: i32) -> Run {
    assert_eq!(
        run.code,
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    run
}

#[test]
fn the_documented_flow_lints_plans_comments_applies_and_converges() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("ci-script");
    let name = format!("ci_{}", vhost.replace('-', "_"));
    let checkout = Checkout {
        dir: tempfile::tempdir().unwrap(),
    };
    std::fs::write(checkout.path("warren.yaml"), spec(&name, &vhost)).unwrap();

    // Pull request: lint writes SARIF.
    expect(
        checkout
            .script(node, &["lint", "warren.yaml", "--", "--deny", "warnings"])
            .run(),
        0,
    );
    let sarif: Value = serde_json::from_str(&checkout.read("out/lint.sarif")).unwrap();
    assert_eq!(sarif["version"], "2.1.0");

    // Pull request: plan without the application's password (only the merge job has
    // it). Changes are not a failure: exit 0, and the status says so.
    let plan = expect(checkout.script(node, &["plan", "warren.yaml"]).run(), 0);
    assert!(plan.stderr.contains("changes pending"), "{}", plan.stderr);
    assert_eq!(checkout.read("out/plan.status"), "changes\n");
    let outputs = checkout.read("github-output");
    assert!(
        outputs.lines().any(|l| l == "changes=true")
            && outputs.lines().any(|l| l == "written=true"),
        "{outputs}"
    );
    let markdown = checkout.read("out/plan.md");
    assert!(markdown.contains("orders.email"), "{markdown}");
    let json: Value = serde_json::from_str(&checkout.read("out/plan.json")).unwrap();
    assert!(json["summary"]["create"].as_u64().unwrap() > 0, "{json}");
    // With --detailed-exitcode, changes exit 2 (for CI systems that gate on it).
    expect(
        checkout
            .script(node, &["plan", "warren.yaml", "--detailed-exitcode"])
            .run(),
        2,
    );

    // Pull request: the comment, posted once and then updated, through `gh api`.
    let gh = FakeGh::new();
    for _ in 0..2 {
        expect(
            gh.env(checkout.script(node, &["comment", "warren.yaml"]))
                .run(),
            0,
        );
    }
    let calls = gh.calls();
    assert_eq!(
        calls.iter().filter(|c| c.contains("--method POST")).count(),
        1,
        "{calls:#?}"
    );
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.contains("--method PATCH"))
            .count(),
        1,
        "{calls:#?}"
    );
    assert!(
        calls
            .iter()
            .any(|c| c.contains("repos/example/shop/issues/comments/1001")),
        "the comment posted first is the one updated: {calls:#?}"
    );
    let body = gh.comment(1001);
    assert!(
        body.starts_with("<!-- warren-ci plan: warren.yaml -->"),
        "{body}"
    );
    assert!(body.contains(&markdown), "{body}");
    assert_eq!(
        gh.comment_count(),
        2,
        "one comment of warren and the other one"
    );

    // Merge: apply, with the application's password. (Arguments after `--` go to
    // warren: other tests' applies may hold the broker-wide lock for a moment.)
    let apply = expect(
        checkout
            .script(
                node,
                &["apply", "warren.yaml", "--", "--lock-timeout", "2m"],
            )
            .env("CI_ORDERS_PASSWORD", "orders-secret")
            .run(),
        0,
    );
    assert!(apply.stdout.contains("Applied: "), "{}", apply.stdout);

    // The next pull request's plan: nothing to do.
    std::fs::remove_file(checkout.path("github-output")).unwrap();
    expect(
        checkout
            .script(node, &["plan", "warren.yaml", "--detailed-exitcode"])
            .env("CI_ORDERS_PASSWORD", "orders-secret")
            .run(),
        0,
    );
    assert_eq!(checkout.read("out/plan.status"), "no-changes\n");
    assert!(
        checkout
            .read("github-output")
            .lines()
            .any(|l| l == "changes=false")
    );

    // Another spec's pull request that would take these objects over: warren refuses
    // the plan (exit 4), and plan.md is still written, so the comment says why.
    std::fs::write(
        checkout.path("other.yaml"),
        spec(&format!("{name}_other"), &vhost),
    )
    .unwrap();
    let refused = checkout.script(node, &["plan", "other.yaml"]).run();
    assert_eq!(refused.code, Some(4), "{}", refused.stderr);
    let markdown = checkout.read("out/plan.md");
    assert!(
        markdown.contains("This plan cannot be applied"),
        "{markdown}"
    );
    assert!(!checkout.path("out/plan.status").exists());
}

/// A spec with environments in CI: the pull request's lint checks every environment,
/// and each environment's job (`WARREN_ENV`) plans and comments on its own: two
/// comments, each found again by its own marker and updated in place.
/// The merge applies exactly the plan the review approved: `warren-ci plan` saves the
/// plan and its digest (in plan.md, OUT/plan.digest and the step outputs), and
/// `warren-ci apply PLAN --expect-digest DIGEST` refuses the file once a byte of it
/// changed (exit 4, nothing changed), then applies it as reviewed.
#[test]
fn a_pinned_apply_applies_only_the_reviewed_plan() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("ci-pinned");
    let name = format!("ci_{}", vhost.replace('-', "_"));
    let checkout = Checkout {
        dir: tempfile::tempdir().unwrap(),
    };
    let spec = format!(
        "version: 1\nname: {name}\nvhosts:\n  {vhost}:\n    queues:\n      audit: {{ type: quorum }}\n"
    );
    std::fs::write(checkout.path("warren.yaml"), spec).unwrap();
    expect(checkout.script(node, &["plan", "warren.yaml"]).run(), 0);
    let digest = checkout.read("out/plan.digest").trim().to_string();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    assert!(checkout.read("out/plan.md").contains(&digest));
    let outputs = checkout.read("github-output");
    assert!(
        outputs.lines().any(|l| l == format!("digest={digest}")),
        "{outputs}"
    );
    let saved = checkout.path("out/plan.saved.json");
    let reviewed = std::fs::read(&saved).unwrap();
    // One byte more (still the same JSON): not the reviewed file.
    let mut edited = reviewed.clone();
    edited.push(b'\n');
    std::fs::write(&saved, &edited).unwrap();
    let pinned = |node| {
        checkout.script(
            node,
            &[
                "apply",
                "out/plan.saved.json",
                "--expect-digest",
                &digest,
                "--",
                "--lock-timeout",
                "2m",
            ],
        )
    };
    let refused = expect(pinned(node).run(), 4);
    assert!(
        refused.stderr.contains("is not the plan that was reviewed"),
        "{}",
        refused.stderr
    );
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", crate::node::pct(&vhost)))
            .is_none(),
        "nothing was applied"
    );
    std::fs::write(&saved, &reviewed).unwrap();
    let applied = expect(pinned(node).run(), 0);
    assert!(applied.stdout.contains("Applied: "), "{}", applied.stdout);
}

#[test]
fn each_environment_is_linted_planned_and_commented_on_its_own() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("ci-envs");
    let name = format!("ci_envs_{}", vhost.replace('-', "_"));
    let checkout = Checkout {
        dir: tempfile::tempdir().unwrap(),
    };
    let text = format!(
        "version: 1\nname: {name}\ndefaults:\n  retry: {{ delays: [30s] }}\nvhosts:\n  {vhost}:\n    services:\n      orders:\n        consumers:\n          email: {{ routing_keys: [order.paid] }}\nenvironments:\n  staging:\n    vhost_names: {{ {vhost}: {vhost}-staging }}\n    overrides:\n      lint: {{ allow: [classic-queue-in-retry-loop] }}\n      defaults: {{ queue_type: classic }}\n  prod: {{}}\n"
    );
    std::fs::write(checkout.path("warren.yaml"), text).unwrap();
    expect(checkout.script(node, &["lint", "warren.yaml"]).run(), 0);
    // staging's queues would be classic: without its allowance, lint (every
    // environment) fails on staging's finding.
    std::fs::write(
        checkout.path("strict.yaml"),
        std::fs::read_to_string(checkout.path("warren.yaml"))
            .unwrap()
            .replace("      lint: { allow: [classic-queue-in-retry-loop] }\n", ""),
    )
    .unwrap();
    let strict = checkout
        .script(node, &["lint", "strict.yaml", "--", "--deny", "warnings"])
        .run();
    assert_eq!(strict.code, Some(1), "{}", strict.stdout);
    assert!(
        strict.stdout.contains("(in environment `staging`)"),
        "{}",
        strict.stdout
    );

    let gh = FakeGh::new();
    for environment in ["staging", "prod", "staging"] {
        expect(
            checkout
                .script(node, &["plan", "warren.yaml"])
                .env("WARREN_ENV", environment)
                .run(),
            0,
        );
        let markdown = checkout.read("out/plan.md");
        assert!(
            markdown.contains(&format!("in environment `{environment}`")),
            "{markdown}"
        );
        expect(
            gh.env(checkout.script(node, &["comment", "warren.yaml"]))
                .env("WARREN_ENV", environment)
                .run(),
            0,
        );
    }
    let calls = gh.calls();
    assert_eq!(
        calls.iter().filter(|c| c.contains("--method POST")).count(),
        2,
        "one comment per environment: {calls:#?}"
    );
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.contains("--method PATCH"))
            .count(),
        1,
        "staging's second plan updates staging's comment: {calls:#?}"
    );
    let staging = gh.comment(1001);
    assert!(
        staging.starts_with("<!-- warren-ci plan: warren.yaml environment staging -->")
            && staging.contains("in environment `staging`"),
        "{staging}"
    );
    let prod = gh.comment(1002);
    assert!(
        prod.starts_with("<!-- warren-ci plan: warren.yaml environment prod -->")
            && prod.contains("in environment `prod`"),
        "{prod}"
    );
}

#[test]
fn a_spec_error_fails_the_plan_with_warrens_code_and_no_plan_file() {
    let node = Node::shared(Version::V3_10);
    let checkout = Checkout {
        dir: tempfile::tempdir().unwrap(),
    };
    std::fs::write(checkout.path("warren.yaml"), "version: 1\nvhostz: {}\n").unwrap();
    let lint = checkout.script(node, &["lint", "warren.yaml"]).run();
    assert_eq!(lint.code, Some(1), "{}", lint.stderr);
    let plan = checkout.script(node, &["plan", "warren.yaml"]).run();
    assert_eq!(plan.code, Some(1), "{}", plan.stderr);
    assert!(plan.stderr.contains("warren.yaml:2:1"), "{}", plan.stderr);
    assert!(!checkout.path("out/plan.md").exists());
    assert!(!checkout.path("out/plan.status").exists());
}

/// A stand-in for `gh api` on PATH: the comments of one pull request
/// (`repos/example/shop`, #7) in a directory, `--jq` filters run by jq, every call
/// logged.
struct FakeGh {
    dir: tempfile::TempDir,
}

impl FakeGh {
    fn new() -> FakeGh {
        let dir = tempfile::tempdir().unwrap();
        let comments = dir.path().join("comments");
        std::fs::create_dir(&comments).unwrap();
        // Somebody else's comment is there first.
        std::fs::write(comments.join("1000"), "Looks good to me").unwrap();
        let gh = dir.path().join("gh");
        std::fs::write(
            &gh,
            r#"#!/usr/bin/env bash
# A stand-in for `gh api` with the comments of one pull request in $FAKE_GH/comments.
set -euo pipefail
printf '%s\n' "$*" >>"$FAKE_GH/calls"
[ "$1" = api ] || { echo "fake gh: only api" >&2; exit 1; }
shift
method=GET path="" body="" jq_filter="."
while [ $# -gt 0 ]; do
    case "$1" in
    --method) method=$2; shift ;;
    --paginate) ;;
    --jq) jq_filter=$2; shift ;;
    -F) body=${2#body=@}; shift ;;
    *) path=$1 ;;
    esac
    shift
done
comments="$FAKE_GH/comments"
case "$method $path" in
"GET repos/example/shop/issues/7/comments")
    for file in "$comments"/*; do
        jq -n --arg id "$(basename "$file")" --rawfile body "$file" '{id: ($id | tonumber), body: $body}'
    done | jq -s . | jq -r "$jq_filter"
    ;;
"POST repos/example/shop/issues/7/comments")
    id=$(( $(find "$comments" -type f | wc -l) + 1000 ))
    cp "$body" "$comments/$id"
    jq -n --arg id "$id" '{html_url: ("https://github.com/example/shop/pull/7#issuecomment-" + $id)}' | jq -r "$jq_filter"
    ;;
"PATCH repos/example/shop/issues/comments/"*)
    id=${path##*/}
    [ -f "$comments/$id" ] || { echo "fake gh: no comment $id" >&2; exit 1; }
    cp "$body" "$comments/$id"
    jq -n --arg id "$id" '{html_url: ("https://github.com/example/shop/pull/7#issuecomment-" + $id)}' | jq -r "$jq_filter"
    ;;
*) echo "fake gh: unexpected $method $path" >&2; exit 1 ;;
esac
"#,
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeGh { dir }
    }

    fn env(&self, mut command: Command) -> Command {
        let path = format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command
            .env("PATH", path)
            .env("FAKE_GH", self.dir.path())
            .env("GH_TOKEN", "not-a-real-token")
            .env("GITHUB_REPOSITORY", "example/shop")
            .env("WARREN_CI_PR", "7");
        command
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn comment(&self, id: u64) -> String {
        std::fs::read_to_string(self.dir.path().join("comments").join(id.to_string())).unwrap()
    }

    fn comment_count(&self) -> usize {
        std::fs::read_dir(self.dir.path().join("comments"))
            .unwrap()
            .count()
    }
}
