//! Exit codes, JSON documents and colors, as a script or a CI job sees them
//! (docs/exit-codes.md), and planning without the applications' passwords.

use serde_json::Value;

use crate::support::{Capture, Run, SHOP_PASSWORDS, warren};

/// A definitions file with nothing in it: every object of a spec is a change.
fn empty_definitions(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("empty.json");
    std::fs::write(&path, r#"{"rabbit_version": "4.0.5"}"#).unwrap();
    path.to_str().unwrap().to_string()
}

/// `examples/shop.yaml` exported, so that a diff against it has no changes.
fn shop_export(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("shop.json");
    warren(&[
        "export",
        "examples/shop.yaml",
        "--target-version",
        "4.0",
        "-o",
        path.to_str().unwrap(),
    ])
    .envs(SHOP_PASSWORDS.iter().copied())
    .run()
    .expect(0);
    path.to_str().unwrap().to_string()
}

/// The one JSON document on stdout.
#[track_caller]
fn document(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not one JSON document ({err}):\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        )
    })
}

#[test]
fn changes_exit_0_unless_detailed_exitcode_asks_for_2() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_definitions(&dir);
    let diff = |extra: &[&str]| {
        let mut args = vec!["diff", "examples/shop.yaml", "--against", &empty];
        args.extend_from_slice(extra);
        warren(&args).envs(SHOP_PASSWORDS.iter().copied()).run()
    };
    let plain = diff(&[]).expect(0);
    assert!(plain.stdout.contains("to create"), "{}", plain.stdout);
    diff(&["--detailed-exitcode"]).expect(2);

    let export = shop_export(&dir);
    let same = |extra: &[&str]| {
        let mut args = vec!["diff", "examples/shop.yaml", "--against", &export];
        args.extend_from_slice(extra);
        warren(&args).envs(SHOP_PASSWORDS.iter().copied()).run()
    };
    let unchanged = same(&["--detailed-exitcode"]).expect(0);
    assert!(
        unchanged.stdout.contains("No changes."),
        "{}",
        unchanged.stdout
    );
    same(&[]).expect(0);
}

#[test]
fn a_usage_error_exits_1_not_2() {
    let run = warren(&["plan", "--no-such-flag"]).run().expect(1);
    assert!(run.stderr.contains("--no-such-flag"), "{}", run.stderr);
}

#[test]
fn a_broker_that_cannot_be_reached_exits_3_with_a_json_error_document() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let text = warren(&[
        "plan",
        "examples/shop.yaml",
        "--url",
        &url,
        "--timeout",
        "2",
    ])
    .run()
    .expect(3);
    assert!(text.stdout.is_empty(), "{}", text.stdout);
    assert!(
        text.stderr.contains("cannot reach RabbitMQ"),
        "{}",
        text.stderr
    );

    for command in ["plan", "apply"] {
        let mut args = vec![
            command,
            "examples/shop.yaml",
            "--url",
            &url,
            "--timeout",
            "2",
        ];
        args.extend(["--format", "json"]);
        if command == "apply" {
            args.push("--auto-approve");
        }
        let run = warren(&args).run().expect(3);
        let json = document(&run);
        let error = if command == "apply" {
            assert_eq!(json["format"], "warren-apply/1", "{json}");
            assert!(json["applied"].is_null(), "{json}");
            &json["error"]
        } else {
            &json["error"]
        };
        assert_eq!(error["exit_code"], 3, "{json}");
        assert_eq!(error["class"], "broker-unavailable", "{json}");
        assert!(
            error["messages"][0]
                .as_str()
                .is_some_and(|m| m.contains("cannot reach RabbitMQ")),
            "{json}"
        );
        // The human form still goes to stderr.
        assert!(run.stderr.contains("error: cannot reach"), "{}", run.stderr);
    }
}

#[test]
fn a_spec_error_under_json_is_a_document_with_its_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bad.yaml");
    std::fs::write(&spec, "version: 1\nvhosts:\n  v:\n    servces: {}\n").unwrap();
    let empty = empty_definitions(&dir);
    let run = warren(&[
        "diff",
        spec.to_str().unwrap(),
        "--against",
        &empty,
        "--format",
        "json",
    ])
    .run()
    .expect(1);
    let json = document(&run);
    assert_eq!(json["error"]["class"], "error", "{json}");
    let diagnostic = &json["error"]["diagnostics"][0];
    assert_eq!(diagnostic["line"], 4, "{json}");
    assert_eq!(diagnostic["column"], 5, "{json}");
    assert!(
        diagnostic["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("bad.yaml")),
        "{json}"
    );
    assert!(
        diagnostic["message"]
            .as_str()
            .is_some_and(|m| m.contains("servces")),
        "{json}"
    );

    // A definitions file that does not exist, under `lint --format json`.
    let lint = warren(&[
        "lint",
        "--definitions",
        "/nonexistent/defs.json",
        "--format",
        "json",
    ])
    .run()
    .expect(1);
    let json = document(&lint);
    assert_eq!(json["error"]["exit_code"], 1, "{json}");
    assert!(
        json["error"]["messages"][0]
            .as_str()
            .is_some_and(|m| m.contains("/nonexistent/defs.json")),
        "{json}"
    );
}

#[test]
fn colors_follow_the_flag_no_color_and_clicolor_force() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_definitions(&dir);
    let diff = |color: Option<&str>, env: &[(&str, &str)]| {
        let mut args = vec!["diff", "examples/ladder.yaml", "--against", &empty];
        if let Some(color) = color {
            args.extend(["--color", color]);
        }
        let mut command = warren(&args);
        command.env_remove("NO_COLOR");
        command.env_remove("CLICOLOR_FORCE");
        command.env_remove("CLICOLOR");
        command.envs(env.iter().copied());
        command.run().expect(0).stdout
    };
    let escape = '\x1b';
    // A pipe is not a terminal: no colors by default.
    assert!(!diff(None, &[]).contains(escape));
    assert!(diff(Some("always"), &[]).contains(escape));
    assert!(diff(Some("always"), &[("NO_COLOR", "1")]).contains(escape));
    assert!(diff(None, &[("CLICOLOR_FORCE", "1")]).contains(escape));
    assert!(!diff(Some("never"), &[("CLICOLOR_FORCE", "1")]).contains(escape));
    assert!(!diff(None, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains(escape));
    // The flag is global: before the command too.
    let mut before = warren(&[
        "--color",
        "always",
        "diff",
        "examples/ladder.yaml",
        "--against",
        &empty,
    ]);
    assert!(before.run().expect(0).stdout.contains(escape));
    // JSON never holds color codes.
    let json = warren(&[
        "diff",
        "examples/ladder.yaml",
        "--against",
        &empty,
        "--format",
        "json",
        "--color",
        "always",
    ])
    .run()
    .expect(0);
    assert!(!json.stdout.contains(escape));
    document(&json);
}

#[test]
fn a_plan_without_the_applications_passwords_says_which_are_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let empty = empty_definitions(&dir);
    // Only one of the four passwords is set.
    let run = warren(&["diff", "examples/shop.yaml", "--against", &empty])
        .env("SHOP_ORDERS_PASSWORD", "orders-pw")
        .run()
        .expect(0);
    for variable in [
        "SHOP_PAYMENTS_PASSWORD",
        "SHOP_EMAIL_PASSWORD",
        "SHOP_OPS_PASSWORD",
    ] {
        assert!(
            run.stderr
                .contains("warning[unknown-secret]: the password of user")
                && run.stderr.contains(variable),
            "{variable}: {}",
            run.stderr
        );
        assert!(run.stdout.contains(variable), "{variable}: {}", run.stdout);
    }
    assert!(
        !run.stderr.contains("SHOP_ORDERS_PASSWORD"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("Passwords not known here:"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("(password unknown:"), "{}", run.stdout);

    let json = warren(&[
        "diff",
        "examples/shop.yaml",
        "--against",
        &empty,
        "--format",
        "json",
    ])
    .run()
    .expect(0);
    let plan = document(&json);
    let unknown = plan["unknown_passwords"]
        .as_object()
        .expect("unknown_passwords");
    assert_eq!(unknown.len(), 4, "{plan}");

    // Against the broker's own export, an unknown password is not a change.
    let export = shop_export(&dir);
    let same = warren(&[
        "diff",
        "examples/shop.yaml",
        "--against",
        &export,
        "--detailed-exitcode",
    ])
    .run()
    .expect(0);
    assert!(same.stdout.contains("No changes."), "{}", same.stdout);

    // Commands that need the passwords still refuse without them.
    let export_run = warren(&[
        "export",
        "examples/shop.yaml",
        "-o",
        dir.path().join("x.json").to_str().unwrap(),
    ])
    .run()
    .expect(1);
    assert!(
        export_run.stderr.contains("error[missing-secret]"),
        "{}",
        export_run.stderr
    );
}
