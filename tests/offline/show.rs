//! `warren show PLAN`: a saved plan printed exactly as `warren plan` printed it when it
//! made the plan, in each format, offline and without passwords; a file that is not a
//! plan warren reads is an error; and a saved plan given where a spec is expected is
//! named as one, by every command that reads a spec.
//!
//! A saved plan needs a broker to make; offline, `diff --against FILE --format json`
//! prints the same document (the plan format, password hashes redacted), which `show`
//! reads as a plan file and `apply` refuses (its secrets are hidden).

use std::path::Path;

use crate::plan_markdown::changed_shop;
use crate::snapshot_settings;
use crate::support::{self, Capture, Run, SHOP_PASSWORDS};

/// `warren diff SPEC --against AGAINST --format FORMAT [ARGS]`, as a plan's author ran it
/// (with the shop's passwords): what the plan printed.
fn printed(spec: &str, against: &str, format: &str, args: &[&str]) -> String {
    let mut all = vec!["diff", spec, "--against", against, "--format", format];
    all.extend(args);
    support::warren(&all)
        .envs(SHOP_PASSWORDS.iter().copied())
        .run()
        .expect(0)
        .stdout
}

/// `warren show ARGS`, without the shop's passwords and without a broker.
fn show(args: &[&str]) -> Run {
    let mut all = vec!["show"];
    all.extend(args);
    support::warren(&all).env_remove("RABBITMQ_URL").run()
}

/// The shop's definitions changed as in [`changed_shop`] (a replace, an update, a queue
/// missing), with its users as the spec writes them.
///
/// The users are put back because the JSON a plan prints is redacted: a changed
/// password hash reads as `"(redacted)"` before and after, so a copy of the printed JSON
/// loses the "password changed" note; the file `plan -o` writes keeps the hashes and
/// shows it (`commands::show`'s unit test reads such a file back).
fn changed_shop_same_users() -> tempfile::NamedTempFile {
    let changed = changed_shop();
    let mut definitions: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(changed.path()).unwrap()).unwrap();
    let export = support::warren(&[
        "export",
        "examples/shop.yaml",
        "--target-version",
        "4.1",
        "-o",
        "-",
    ])
    .envs(SHOP_PASSWORDS.iter().copied())
    .run()
    .expect(0);
    let exported: serde_json::Value = serde_json::from_str(&export.stdout).unwrap();
    definitions["users"] = exported["users"].clone();
    std::fs::write(changed.path(), definitions.to_string()).unwrap();
    changed
}

/// The plans compared: the shop against a broker that differs from it, and a spec read
/// for an environment (its header names it) against an empty broker.
fn plans() -> Vec<(&'static str, String, tempfile::NamedTempFile)> {
    let changed = changed_shop_same_users();
    let changed_path = changed.path().to_str().unwrap().to_string();
    vec![
        ("examples/shop.yaml", changed_path, changed),
        (
            "examples/environments.yaml",
            "tests/definitions/empty-4.1.json".to_string(),
            tempfile::NamedTempFile::new().unwrap(),
        ),
    ]
}

#[test]
fn show_prints_a_saved_plan_as_plan_printed_it_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for (n, (spec, against, _kept)) in plans().iter().enumerate() {
        let saved = dir.path().join(format!("plan-{n}.json"));
        std::fs::write(&saved, printed(spec, against, "json", &[])).unwrap();
        let saved = saved.to_str().unwrap();
        for format in ["text", "json", "markdown"] {
            let expected = printed(spec, against, format, &[]);
            assert!(
                expected.contains("create"),
                "a plan with changes: {expected}"
            );
            let run = show(&[saved, "--format", format]).expect(0);
            assert_eq!(run.stdout, expected, "{spec} as {format}");
            assert_eq!(run.stderr, "", "{spec} as {format}");
        }
        // Text is the default, and colors follow `--color` as `plan`'s do.
        assert_eq!(
            show(&[saved]).expect(0).stdout,
            printed(spec, against, "text", &[])
        );
        let colored = printed(spec, against, "text", &["--color", "always"]);
        assert!(colored.contains("\x1b["), "{colored}");
        assert_eq!(
            show(&[saved, "--color", "always"]).expect(0).stdout,
            colored
        );
    }
}

#[test]
fn show_names_the_environment_and_never_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    let changed = changed_shop();
    let against = changed.path().to_str().unwrap();
    std::fs::write(&saved, printed("examples/shop.yaml", against, "json", &[])).unwrap();
    for format in ["text", "json", "markdown"] {
        let run = show(&[saved.to_str().unwrap(), "--format", format]).expect(0);
        for (_, password) in SHOP_PASSWORDS {
            assert!(!run.stdout.contains(password), "{}", run.stdout);
        }
        assert!(
            !run.stdout
                .contains("c2VjcmV0LWhhc2gtb2YtdGhlLW9sZC1wYXNzd29yZA"),
            "{}",
            run.stdout
        );
    }
    let environment = dir.path().join("staging.json");
    std::fs::write(
        &environment,
        printed(
            "examples/environments.yaml",
            "tests/definitions/empty-4.1.json",
            "json",
            &["--env", "staging"],
        ),
    )
    .unwrap();
    let text = show(&[environment.to_str().unwrap()]).expect(0).stdout;
    assert!(
        text.starts_with("Plan for spec `billing` in environment `staging`"),
        "{text}"
    );
}

/// Writes `text` into `dir/name` and returns `name` (the commands run in `dir`, so the
/// messages name the file as the user gave it).
fn file(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

/// The shop's plan against an empty broker, as `--format json` prints it, written to
/// `plan.json` in `dir`.
fn shop_plan_in(dir: &Path) -> String {
    let json = printed(
        "examples/shop.yaml",
        "tests/definitions/empty-4.1.json",
        "json",
        &[],
    );
    file(dir, "plan.json", &json)
}

/// `warren ARGS` run in `dir`: exit 1, and what it said: its stdout (empty, but for
/// `lint`, whose report is its output), then its stderr.
fn error_in(dir: &Path, args: &[&str]) -> String {
    let run = support::warren(args).current_dir(dir).run().expect(1);
    run.stdout + &run.stderr
}

#[test]
fn show_of_a_file_that_is_not_a_plan_it_reads_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let spec = file(dir, "shop.yaml", "name: shop\nversion: 1\n");
    std::fs::create_dir(dir.join("specs")).unwrap();
    let definitions = file(dir, "definitions.json", r#"{"rabbit_version": "4.1.0"}"#);
    let truncated = file(
        dir,
        "truncated.json",
        "{\n  \"format\": \"warren-plan/2\",\n  \"spec\": \"shop\",\n  \"cha",
    );
    let older = file(
        dir,
        "old-plan.json",
        r#"{"format": "warren-plan/1", "spec": "shop"}"#,
    );
    let cases = [
        ("missing", "missing.json"),
        ("spec", spec.as_str()),
        ("directory", "specs"),
        ("definitions", definitions.as_str()),
        ("truncated", truncated.as_str()),
        ("older", older.as_str()),
    ];
    for (name, path) in cases {
        let stderr = error_in(dir, &["show", path]);
        let mut settings = snapshot_settings("snapshots");
        settings.set_snapshot_suffix(name);
        settings.bind(|| insta::assert_snapshot!("show__error", stderr));
    }
    // Asked for JSON, the error is a JSON document too, as for `plan`.
    let run = support::warren(&["show", "missing.json", "--format", "json"])
        .current_dir(dir)
        .run()
        .expect(1);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["error"]["exit_code"], 1, "{document}");
}

#[test]
fn a_saved_plan_given_for_a_spec_names_show_and_apply() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let plan = shop_plan_in(dir);
    // Cut short, or of an older format, it is still a plan, not a spec.
    let truncated = file(
        dir,
        "truncated.json",
        "{\n  \"format\": \"warren-plan/2\",\n  \"spec\": \"shop\",\n  \"cha",
    );
    let older = file(
        dir,
        "old.json",
        r#"{"format": "warren-plan/1", "spec": "shop"}"#,
    );
    for (name, args) in [
        ("plan", vec!["plan", &plan, "--url", "http://127.0.0.1:9"]),
        ("validate", vec!["validate", &plan]),
        ("lint", vec!["lint", &plan]),
        ("truncated", vec!["compile", &truncated]),
        ("older", vec!["compile", &older]),
    ] {
        let stderr = error_in(dir, &args);
        let mut settings = snapshot_settings("snapshots");
        settings.set_snapshot_suffix(name);
        settings.bind(|| insta::assert_snapshot!("show__plan_for_spec", stderr));
    }
    // Every command that reads a spec goes through the same loading.
    file(dir, "definitions.json", r#"{"rabbit_version": "4.1.0"}"#);
    let url = "http://127.0.0.1:9";
    for args in [
        vec!["compile", &plan],
        vec!["export", &plan, "-o", "-"],
        vec!["diff", &plan, "--against", "definitions.json"],
        vec!["graph", &plan],
        vec!["trace", &plan, "--exchange", "orders", "--routing-key", "k"],
        vec!["status", &plan, "--url", url],
        vec!["replay", &plan, "--queue", "orders", "--url", url],
        vec!["unlock", &plan, "--holder", "h", "--url", url],
        vec!["state", "show", &plan, "--url", url],
        vec!["upgrade-check", &plan, "--from", "3.13", "--to", "4.1"],
    ] {
        let stderr = error_in(dir, &args);
        assert!(
            stderr.contains(
                "error[saved-plan]: plan.json is a saved plan (`warren-plan/3`), not a spec"
            ) && stderr.contains("`warren show plan.json` prints it"),
            "{args:?}: {stderr}"
        );
    }
}

/// JSON is YAML: a spec written as JSON is still read as a spec (a plan's marker, not
/// the braces, makes a file a saved plan).
#[test]
fn a_spec_written_in_json_is_still_a_spec() {
    let dir = tempfile::tempdir().unwrap();
    let spec = file(
        dir.path(),
        "tiny.json",
        r##"{"version": 1, "name": "tiny", "vhosts": {"v": {"services": {"s": {
            "exchange": {"name": "s.events"},
            "consumers": {"c": {"queue": "s.work", "routing_keys": ["#"],
                                 "retry": {"delays": ["5s"]}}}}}}}}"##,
    );
    let run = support::warren(&["validate", &spec])
        .current_dir(dir.path())
        .run()
        .expect(0);
    assert!(run.stdout.contains("tiny.json: valid"), "{}", run.stdout);
}

/// A plan as `--format json` prints it hides its password hashes and URI passwords
/// (`"redacted": true`): `show` prints it, `apply` refuses it before it reaches the
/// broker (applied, it would set the users' passwords to the mask). A printed plan of
/// an earlier warren, without the marker, is refused by its masks alone.
#[test]
fn a_printed_plan_is_shown_but_never_applied() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let printed_plan = shop_plan_in(dir);
    let text = std::fs::read_to_string(dir.join(&printed_plan)).unwrap();
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(document["redacted"], true, "{text}");
    let mut unmarked = document.clone();
    unmarked.as_object_mut().unwrap().remove("redacted");
    let unmarked = file(dir, "unmarked.json", &unmarked.to_string());

    // A broker that would notice any connection.
    let broker = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    broker.set_nonblocking(true).unwrap();
    let url = format!("http://{}", broker.local_addr().unwrap());
    for plan in [&printed_plan, &unmarked] {
        let stderr = error_in(dir, &["apply", plan, "--auto-approve", "--url", &url]);
        assert!(
            stderr.contains(&format!(
                "error: {plan} is a plan as `--format json` prints it, with its password hashes and URI passwords hidden"
            )) && stderr.contains("nothing was changed")
                && stderr.contains("warren plan SPEC -o FILE"),
            "{stderr}"
        );
        assert!(
            broker.accept().is_err(),
            "apply of {plan} connected to the broker"
        );
        support::warren(&["show", plan])
            .current_dir(dir)
            .run()
            .expect(0);
    }
}

/// A saved plan given where a definitions file is expected (`diff --against`, `lint
/// --definitions`, `import --from`) is named as a plan, with what to run instead.
#[test]
fn a_saved_plan_given_for_definitions_is_named_as_a_plan() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let plan = shop_plan_in(dir);
    let spec = std::fs::canonicalize("examples/shop.yaml").unwrap();
    let spec = spec.to_str().unwrap();
    for args in [
        vec!["diff", spec, "--against", &plan],
        vec!["lint", "--definitions", &plan],
        vec!["import", "--from", &plan, "-o", "imported.yaml"],
    ] {
        let out = error_in(dir, &args);
        assert!(
            out.contains(
                "plan.json:1:1: this is a saved warren plan (`warren-plan/3`), not a RabbitMQ definitions file; `warren show FILE` prints it"
            ),
            "{args:?}: {out}"
        );
    }
}

/// A saved plan whose names hold control characters (an escape sequence that would
/// recolor, conceal or retitle a terminal, NUL, a right-to-left override) prints them
/// escaped, in every text format; a plan damaged where the broker's names are read is
/// reported at its line and column, its quoted value escaped too.
#[test]
fn show_escapes_what_a_plan_file_holds() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let saved = shop_plan_in(dir);
    let mut plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&saved)).unwrap()).unwrap();
    let hostile = "\u{1b}[8mhidden\u{1b}]0;title\u{7}\u{0}\u{202e}";
    plan["spec"] = serde_json::json!(format!("shop{hostile}"));
    let name = plan["changes"][0]["id"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    plan["changes"][0]["id"]["name"] = serde_json::json!(format!("{name}{hostile}"));
    file(dir, "hostile.json", &plan.to_string());
    let hostile_plan = dir.join("hostile.json").to_str().unwrap().to_string();
    for format in ["text", "markdown"] {
        for color in ["never", "always"] {
            let run = show(&[&hostile_plan, "--format", format, "--color", color]).expect(0);
            for raw in ['\u{0}', '\u{7}', '\u{202e}'] {
                assert!(!run.stdout.contains(raw), "{format}, {color}: {raw:?}");
            }
            assert!(
                !run.stdout.contains("\u{1b}[8m") && !run.stdout.contains("\u{1b}]0"),
                "{format}, {color}: {:?}",
                run.stdout
            );
            assert!(run.stdout.contains("\\u{1b}[8mhidden"), "{format}, {color}");
        }
    }
    plan["changes"][0]["action"] = serde_json::json!("explode\u{1b}[2J");
    file(
        dir,
        "damaged.json",
        &serde_json::to_string_pretty(&plan).unwrap(),
    );
    let damaged = dir.join("damaged.json").to_str().unwrap().to_string();
    let run = show(&[&damaged]).expect(1);
    assert!(
        run.stderr.contains("damaged.json:")
            && run
                .stderr
                .contains(": a damaged plan file (at `changes[0].action`")
            && run.stderr.contains("explode\\u{1b}[2J")
            && !run.stderr.contains('\u{1b}'),
        "{:?}",
        run.stderr
    );
}
