//! Specs with environments (`examples/environments.yaml`): each environment's compiled
//! output pinned, the differences it declares present, the choice required and
//! checked, errors pointing at the line of the environment that wrote the value,
//! plans naming their environment, `lint --all-envs`, and saved plans refused for
//! another environment.

use std::path::Path;

use crate::snapshot_settings;
use crate::support::{self, Capture, Run, SHOP_PASSWORDS};

const EXAMPLE: &str = "examples/environments.yaml";

/// `warren ARGS` with the examples' passwords and no `WARREN_ENV`: every choice of an
/// environment in these tests is explicit.
fn warren(args: &[&str]) -> Run {
    support::warren(args)
        .envs(SHOP_PASSWORDS.iter().copied())
        .env_remove("WARREN_ENV")
        .run()
}

fn compiled(environment: &str) -> serde_json::Value {
    let run = warren(&["compile", EXAMPLE, "--env", environment]).expect(0);
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn each_environments_compiled_output_is_pinned() {
    for environment in ["staging", "prod"] {
        let mut settings = snapshot_settings("snapshots");
        settings.set_snapshot_suffix(environment);
        settings.bind(|| {
            insta::assert_json_snapshot!("environments__compile", compiled(environment));
        });
    }
}

/// What the example says differs: the vhost's name, the first delay, the queue type
/// and the vhost limit; what it does not override is the same.
#[test]
fn the_declared_differences_are_what_differs() {
    let (staging, prod) = (compiled("staging"), compiled("prod"));
    let names = |d: &serde_json::Value| -> Vec<String> {
        d["vhosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&staging), ["billing-staging"]);
    assert_eq!(names(&prod), ["billing"]);
    let queue = |d: &serde_json::Value, name: &str| -> serde_json::Value {
        d["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["name"] == name)
            .unwrap_or_else(|| panic!("no queue {name} in {d}"))
            .clone()
    };
    assert_eq!(
        queue(&staging, "invoices.pdf")["arguments"]["x-queue-type"],
        "classic"
    );
    assert_eq!(
        queue(&prod, "invoices.pdf")["arguments"]["x-queue-type"],
        "quorum"
    );
    let limit = |d: &serde_json::Value| -> i64 {
        d["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["component"] == "vhost-limits")
            .unwrap()["value"]["max-queues"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(limit(&staging), 200);
    assert_eq!(limit(&prod), 2000);
    // Each tier's delay: the TTL of the generated policy of its tier.
    let ttls = |d: &serde_json::Value| -> Vec<i64> {
        d["policies"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["definition"]["message-ttl"].as_i64())
            .collect()
    };
    assert_eq!(ttls(&staging), [5_000, 300_000, 1_800_000]);
    assert_eq!(ttls(&prod), [30_000, 300_000, 3_600_000]);
    // The users' permissions follow the vhost's rename.
    let vhosts_of_permissions = |d: &serde_json::Value| -> Vec<String> {
        d["permissions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["vhost"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        vhosts_of_permissions(&staging)
            .iter()
            .all(|v| v == "billing-staging")
    );
    assert!(vhosts_of_permissions(&prod).iter().all(|v| v == "billing"));
}

#[test]
fn a_spec_with_environments_needs_one_and_a_known_one() {
    let missing = warren(&["validate", EXAMPLE]).expect(1);
    assert!(
        missing.stderr.contains("the spec declares 2 environments: `staging`, `prod`: choose one with --env NAME (or WARREN_ENV)"),
        "{}",
        missing.stderr
    );
    let unknown = warren(&["plan", EXAMPLE, "--env", "prdo"]).expect(1);
    assert!(
        unknown
            .stderr
            .contains("no environment `prdo` in the spec (did you mean `prod`?)"),
        "{}",
        unknown.stderr
    );
    // WARREN_ENV does what --env does.
    let by_variable = support::warren(&["validate", EXAMPLE])
        .env("WARREN_ENV", "prod")
        .run()
        .expect(0);
    assert!(
        by_variable.stdout.contains("valid"),
        "{}",
        by_variable.stdout
    );
}

/// Every command that reads a spec reads it for an environment: without one it stops
/// at the spec, before any broker is asked (the URL given answers nothing); with one
/// it reads the environment's spec.
#[test]
fn every_command_that_reads_a_spec_needs_the_environment() {
    let nowhere = ["--url", "http://127.0.0.1:9"];
    let commands: &[&[&str]] = &[
        &["validate"],
        &["compile"],
        &["export", "-o", "-"],
        &[
            "export",
            "-o",
            "-",
            "--format",
            "k8s",
            "--cluster",
            "rabbitmq",
        ],
        &["lint"],
        &["graph"],
        &[
            "trace",
            "--exchange",
            "invoices",
            "--routing-key",
            "invoice.created",
        ],
        &["diff", "--against", "tests/definitions/empty-4.1.json"],
        &["plan", nowhere[0], nowhere[1]],
        &["apply", "--auto-approve", nowhere[0], nowhere[1]],
        &["status", nowhere[0], nowhere[1]],
        &[
            "replay",
            "--queue",
            "invoices.pdf.parking",
            nowhere[0],
            nowhere[1],
        ],
        &["unlock", "--holder", "h", nowhere[0], nowhere[1]],
        &["state", "show", nowhere[0], nowhere[1]],
    ];
    for command in commands {
        let (name, rest) = command.split_first().unwrap();
        let (name, rest) = if *name == "state" {
            ("state show", &rest[1..])
        } else {
            (*name, rest)
        };
        let mut args: Vec<&str> = name.split(' ').collect();
        args.push(EXAMPLE);
        args.extend_from_slice(rest);
        let run = warren(&args).expect(1);
        let said = format!("{}{}", run.stdout, run.stderr);
        assert!(
            said.contains("choose one with --env NAME (or WARREN_ENV)")
                && !said.contains("127.0.0.1"),
            "{args:?}: {said}"
        );
        args.extend(["--env", "prod"]);
        let run = warren(&args);
        let said = format!("{}{}", run.stdout, run.stderr);
        assert!(!said.contains("choose one with --env"), "{args:?}: {said}");
        let offline = !rest.contains(&nowhere[0]);
        assert!(
            !offline || run.code == Some(0),
            "{args:?} reads prod's spec: {said}"
        );
    }
    // trace follows prod's ladder: its first delay is prod's.
    let trace = warren(&[
        "trace",
        EXAMPLE,
        "--env",
        "prod",
        "--exchange",
        "invoices",
        "--routing-key",
        "invoice.created",
        "--fail",
        "1",
    ])
    .expect(0);
    let staging = warren(&[
        "trace",
        EXAMPLE,
        "--env",
        "staging",
        "--exchange",
        "invoices",
        "--routing-key",
        "invoice.created",
        "--fail",
        "1",
    ])
    .expect(0);
    assert!(
        trace.stdout.contains("30s") && !trace.stdout.contains(" 5s"),
        "{}",
        trace.stdout
    );
    assert!(staging.stdout.contains("5s"), "{}", staging.stdout);
}

#[test]
fn warren_env_is_ignored_by_a_spec_without_environments_but_env_is_not() {
    let ladder = "examples/ladder.yaml";
    support::warren(&["validate", ladder])
        .env("WARREN_ENV", "prod")
        .run()
        .expect(0);
    let flagged = warren(&["validate", ladder, "--env", "prod"]).expect(1);
    assert!(
        flagged
            .stderr
            .contains("--env prod was given, but the spec declares no environments"),
        "{}",
        flagged.stderr
    );
}

/// A spec file in a temporary directory, `examples/environments.yaml` with `from`
/// replaced by `to`.
fn edited(from: &str, to: &str) -> (tempfile::TempDir, String) {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE)).unwrap();
    assert!(text.contains(from), "no `{from}` in the example");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("billing.yaml");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    (dir, path.to_string_lossy().into_owned())
}

fn line_of(path: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn an_error_in_a_value_an_environment_wrote_points_at_the_environments_line() {
    // A value of the wrong type in prod's overrides: a delay without a unit.
    let (_dir, path) = edited("delays: [30s, 5m, 1h]", "delays: [30s, 5m, 60]");
    let run = warren(&["validate", &path, "--env", "prod"]).expect(1);
    let line = line_of(&path, "delays: [30s, 5m, 60]");
    assert!(
        run.stderr.contains(&format!("{path}:{line}:"))
            && run.stderr.contains("in environment `prod`"),
        "line {line}:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("delays: [30s, 5m, 60]"),
        "quotes the line: {}",
        run.stderr
    );
    // The other environment is not affected.
    warren(&["validate", &path, "--env", "staging"]).expect(0);
    // A value that reads but does not compile: decreasing delays would be fine, a
    // zero delay is refused by the compiler, at the override's line.
    let (_dir, path) = edited("delays: [5s, 5m, 30m]", "delays: [0s, 5m, 30m]");
    let run = warren(&["lint", &path, "--env", "staging"]);
    let line = line_of(&path, "delays: [0s, 5m, 30m]");
    assert!(
        run.stdout.contains(&format!("{path}:{line}:"))
            || run.stderr.contains(&format!("{path}:{line}:")),
        "line {line}:\n{}\n{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn an_environment_cannot_override_the_spec_name_or_rename_an_unknown_vhost() {
    let (_dir, path) = edited(
        "    description: production\n",
        "    description: production\n    vhost_names: { biling: b }\n",
    );
    let run = warren(&["validate", &path, "--env", "prod"]).expect(1);
    assert!(
        run.stderr
            .contains("no vhost `biling` in the spec (did you mean `billing`?)"),
        "{}",
        run.stderr
    );
    let (_dir, path) = edited(
        "    description: production\n    overrides:\n",
        "    description: production\n    overrides:\n      name: other\n",
    );
    let run = warren(&["validate", &path, "--env", "prod"]).expect(1);
    assert!(
        run.stderr.contains("an environment cannot override `name`"),
        "{}",
        run.stderr
    );
}

/// The plan of the example in `environment` against an empty broker's definitions, as
/// `format` prints it.
fn diff(environment: &str, format: &str) -> String {
    let empty = "tests/definitions/empty-4.1.json";
    let args = ["diff", EXAMPLE, "--env", environment, "--against", empty];
    warren(&[&args[..], &["--format", format]].concat())
        .expect(0)
        .stdout
}

#[test]
fn a_plan_names_its_environment_and_its_own_ownership_record() {
    let text = diff("prod", "text");
    assert!(
        text.starts_with("Plan for spec `billing` in environment `prod`"),
        "{text}"
    );
    let plan: serde_json::Value = serde_json::from_str(&diff("staging", "json")).unwrap();
    assert_eq!(plan["spec"], "billing@staging");
    assert_eq!(plan["environment"], "staging");
    let markdown = diff("prod", "markdown");
    assert!(
        markdown.contains("### warren plan for spec `billing` in environment `prod`"),
        "{markdown}"
    );
}

#[test]
fn a_saved_plan_is_refused_for_another_environment() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    // A saved plan as `plan -o` writes it needs a broker; the printed one is the same
    // document but for its `redacted` flag and the password hashes it hides.
    let mut saved: serde_json::Value = serde_json::from_str(&diff("staging", "json")).unwrap();
    assert_eq!(saved["redacted"], true);
    saved.as_object_mut().unwrap().remove("redacted");
    fill_hidden_hashes(&mut saved);
    std::fs::write(&plan, saved.to_string()).unwrap();
    let plan = plan.to_string_lossy().into_owned();
    let run = warren(&[
        "apply",
        &plan,
        "--env",
        "prod",
        "--url",
        "http://127.0.0.1:9",
        "--auto-approve",
    ])
    .expect(1);
    assert!(
        run.stderr
            .contains("was made for environment `staging`, not for environment `prod`")
            && run.stderr.contains("nothing was changed"),
        "{}",
        run.stderr
    );
    // The environment it was made for is accepted (and then needs the broker).
    let run = warren(&[
        "apply",
        &plan,
        "--env",
        "staging",
        "--url",
        "http://127.0.0.1:9",
        "--auto-approve",
    ]);
    assert!(!run.stderr.contains("was made for"), "{}", run.stderr);
}

/// Puts a made-up password hash where a printed plan hides one.
fn fill_hidden_hashes(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if map.get("password_hash").is_some_and(|h| h == "(redacted)") {
                map.insert("password_hash".into(), "bWFkZS11cC1oYXNo".into());
            }
            map.values_mut().for_each(fill_hidden_hashes);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(fill_hidden_hashes),
        _ => {}
    }
}

/// The messages of `warren lint ARGS --format json`.
fn findings(args: &[&str]) -> Vec<String> {
    let mut args = args.to_vec();
    args.extend(["--format", "json"]);
    let run = warren(&args);
    let report: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    report["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn lint_all_envs_reports_a_finding_once_with_the_environments_it_is_in() {
    let clean = warren(&["lint", EXAMPLE, "--all-envs"]).expect(0);
    assert!(
        clean.stdout.contains("no problems found"),
        "{}",
        clean.stdout
    );
    // prod turns to classic queues too, without staging's allowance: a finding of
    // prod alone, which says so.
    let prod_classic = (
        "    overrides:\n      defaults:\n        retry:\n          delays: [30s, 5m, 1h]",
        "    overrides:\n      defaults:\n        queue_type: classic\n        retry:\n          delays: [30s, 5m, 1h]",
    );
    let (_dir, path) = edited(prod_classic.0, prod_classic.1);
    let in_prod = findings(&["lint", &path, "--env", "prod"]);
    assert!(!in_prod.is_empty());
    assert!(findings(&["lint", &path, "--env", "staging"]).is_empty());
    let all = findings(&["lint", &path, "--all-envs"]);
    assert_eq!(all.len(), in_prod.len(), "{all:?}");
    assert!(
        all.iter().all(|m| m.ends_with("(in environment `prod`)")),
        "{all:?}"
    );
    // Without staging's allowance as well, the same findings are in both: each is
    // reported once, naming no environment.
    let text = std::fs::read_to_string(&path).unwrap();
    let both = text.replacen(
        "      lint:\n        allow: [classic-queue-in-retry-loop]   # staging's queues need no replicas\n",
        "",
        1,
    );
    assert_ne!(both, text);
    std::fs::write(&path, both).unwrap();
    let all = findings(&["lint", &path, "--all-envs"]);
    assert_eq!(
        all,
        in_prod.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
        "{all:?}"
    );
}

/// The JSON Schema an editor checks with: an environment's keys, its overrides in the
/// spec's shape (none required, `null` removing an entry), and what no environment
/// may override.
#[test]
fn the_schema_describes_environments() {
    let schema = crate::multi_file::Schema::load();
    let spec = |environments: &str| {
        format!("version: 1\nvhosts: {{ shop: {{}} }}\nenvironments:\n{environments}")
    };
    for good in [
        "  prod: {}\n",
        "  prod:\n    description: production\n    vhost_names: { shop: shop-prod }\n",
        "  prod:\n    overrides:\n      defaults: { queue_type: classic, retry: { delays: [5s] } }\n      vhosts: { shop: { limits: { max_queues: 3 } }, old: null }\n      users: { gone: null }\n",
    ] {
        schema
            .check(&spec(good))
            .unwrap_or_else(|e| panic!("{good}: {e}"));
    }
    for bad in [
        "  prod:\n    overides: {}\n",
        "  prod:\n    overrides: { version: 2 }\n",
        "  prod:\n    overrides: { name: other }\n",
        "  prod:\n    overrides: { vhostz: {} }\n",
        "  prod:\n    overrides: { defaults: { queue_type: clasic } }\n",
        "  prod:\n    vhost_names: { shop: 3 }\n",
    ] {
        assert!(schema.check(&spec(bad)).is_err(), "{bad} validates");
    }
}

/// A copy of `examples/multi-file` in a temporary directory, with `platform` appended
/// to its `platform.yaml` and `orders` to its `orders.yaml`.
fn multi_file_with(platform: &str, orders: &str) -> (tempfile::TempDir, String) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/multi-file");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec");
    std::fs::create_dir(&spec).unwrap();
    for file in warren::spec::load::spec_files(&example).unwrap() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let mut text = std::fs::read_to_string(&file).unwrap();
        match name.as_str() {
            "platform.yaml" => text.push_str(platform),
            "orders.yaml" => text.push_str(orders),
            _ => {}
        }
        std::fs::write(spec.join(&name), text).unwrap();
    }
    (dir, spec.to_string_lossy().into_owned())
}

/// In a spec of several files, an environment is written whole in one file (as any
/// named entry), may override what other files write, and its errors name its file.
#[test]
fn an_environment_of_a_spec_in_several_files() {
    let prod = "\nenvironments:\n  prod:\n    overrides:\n      vhosts:\n        store:\n          services:\n            orders:\n              consumers:\n                fulfilment:\n                  retry: { ladder: quick }\n";
    let (_dir, spec) = multi_file_with(prod, "");
    let compiled = warren(&["compile", &spec, "--env", "prod"]).expect(0);
    assert!(
        compiled.stdout.contains("orders.fulfilment.retry-quick.2")
            && !compiled.stdout.contains("orders.fulfilment.retry-quick.3"),
        "prod's ladder is `quick`, of two tiers: {}",
        compiled.stdout
    );
    assert!(!compiled.stdout.contains("orders.fulfilment.retry-standard"));
    let (_dir, spec) = multi_file_with(&prod.replace("ladder: quick", "ladder: quikc"), "");
    let run = warren(&["validate", &spec, "--env", "prod"]).expect(1);
    let platform = format!("{spec}/platform.yaml");
    let line = line_of(&platform, "ladder: quikc");
    assert!(
        run.stderr.contains(&format!("{platform}:{line}:")),
        "line {line} of platform.yaml: {}",
        run.stderr
    );
    let staging = "\nenvironments:\n  prod: {}\n";
    let (_dir, spec) = multi_file_with(prod, staging);
    let run = warren(&["validate", &spec, "--env", "prod"]).expect(1);
    assert!(
        run.stderr.contains("environment `prod`")
            && run.stderr.contains("orders.yaml")
            && run.stderr.contains("platform.yaml"),
        "{}",
        run.stderr
    );
}

/// A picture labels each tier with its delay as written, also when an environment
/// wrote it (`90m` stays `90m`, not `1h30m`).
#[test]
fn a_graph_labels_an_environments_delay_as_it_wrote_it() {
    let (_dir, path) = edited("delays: [30s, 5m, 1h]", "delays: [30s, 5m, 90m]");
    let graph = warren(&["graph", &path, "--env", "prod"]).expect(0);
    assert!(graph.stdout.contains("tier 3 · 90m"), "{}", graph.stdout);
}
