//! The `warren` binary end to end: exit codes, outputs, snapshots of what every
//! example compiles to, and the committed JSON Schema.

use std::path::Path;

use crate::snapshot_settings;
use crate::support::{self, Capture, EXAMPLES, Run, SHOP_PASSWORDS, example};

/// `warren ARGS` with the passwords of the shop example set.
fn warren(args: &[&str]) -> Run {
    support::run_with_shop_passwords(args)
}

#[test]
fn every_example_validates_for_every_target_version() {
    for name in EXAMPLES {
        let example = &example(name);
        for target in ["3.10", "3.12", "3.13", "4.0", "4.1", "4.2", "4.3"] {
            let output = warren(&["validate", example, "--target-version", target]);
            assert_eq!(
                output.code,
                Some(0),
                "{example} for {target}: {}",
                output.stderr
            );
            assert!(output.stdout.contains("valid"), "{example}");
        }
    }
}

#[test]
fn compiled_definitions_of_every_example_are_pinned() {
    for example in EXAMPLES {
        for target in ["3.10", "4.1"] {
            let output = warren(&[
                "compile",
                &support::example(example),
                "--target-version",
                target,
            ])
            .expect(0);
            let definitions: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
            let mut settings = snapshot_settings("snapshots");
            settings.set_snapshot_suffix(format!("{example}@{target}"));
            settings.bind(|| insta::assert_json_snapshot!("cli__compile", definitions));
        }
    }
}

#[test]
fn consumer_contracts_of_every_example_are_pinned() {
    for example in EXAMPLES {
        let output = warren(&["compile", &support::example(example), "--contract"]).expect(0);
        let contract: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
        let mut settings = snapshot_settings("snapshots");
        settings.set_snapshot_suffix(example.to_string());
        settings.bind(|| insta::assert_json_snapshot!("cli__contract", contract));
    }
}

/// The contract names no password, so it is printed without the passwords'
/// variables set, the same as with them.
#[test]
fn a_contract_needs_no_password_variables() {
    let shop = support::example("shop");
    let with = warren(&["compile", &shop, "--contract"]).expect(0);
    let without = support::warren(&["compile", &shop, "--contract"])
        .run()
        .expect(0);
    assert_eq!(with.stdout, without.stdout);
    // The definitions do hold the passwords' hashes: those still need them.
    support::warren(&["compile", &shop]).run().expect(1);
}

#[test]
fn target_version_changes_policy_apply_to_and_delivery_limits() {
    let compile = |target: &str| -> serde_json::Value {
        serde_json::from_str(
            &warren(&[
                "compile",
                "examples/ladder.yaml",
                "--target-version",
                target,
            ])
            .stdout,
        )
        .unwrap()
    };
    let old = compile("3.10");
    let new = compile("4.0");
    let apply_to = |defs: &serde_json::Value| -> Vec<String> {
        defs["policies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["apply-to"].as_str().unwrap().to_string())
            .collect()
    };
    // 3.10 answers 400 to any apply-to but queues/exchanges/all.
    assert!(apply_to(&old).iter().all(|a| a == "queues"));
    assert!(apply_to(&new).iter().any(|a| a == "quorum_queues"));
    // 4.0 gives quorum queues a delivery limit of 20 unless told otherwise.
    let has_unlimited = |defs: &serde_json::Value| {
        defs["policies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["definition"]["delivery-limit"] == -1)
    };
    assert!(!has_unlimited(&old));
    assert!(has_unlimited(&new));
}

#[test]
fn export_writes_the_file_atomically_and_reports_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("definitions.json");
    let output = warren(&[
        "export",
        "examples/multi-consumer.yaml",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.code, Some(0), "{}", output.stderr);
    assert!(output.stderr.contains("19 objects"), "{}", output.stderr);
    let definitions: warren::model::Definitions =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(definitions.queues.len(), 6);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn a_bad_spec_writes_nothing_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bad.yaml");
    std::fs::write(&spec, "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          c: { routing_keys: [a], retry: { delays: [30] } }\n").unwrap();
    let out = dir.path().join("definitions.json");
    let output = warren(&[
        "export",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.code, Some(1));
    assert!(!out.exists());
    let err = output.stderr;
    assert!(err.contains("bad.yaml:7:53"), "{err}");
    assert!(err.contains("duration `30` has no unit"), "{err}");
    assert!(
        err.contains("= at: vhosts.v.services.s.consumers.c.retry.delays[0]"),
        "{err}"
    );
}

#[test]
fn validate_needs_no_secrets_but_export_does_and_never_prints_them() {
    let validate = support::warren(&["validate", "examples/shop.yaml"])
        .env_clear()
        .run();
    assert_eq!(validate.code, Some(0), "{}", validate.stderr);

    let compile = support::warren(&["compile", "examples/shop.yaml"])
        .env_clear()
        .run();
    assert_eq!(compile.code, Some(1));
    assert!(
        compile
            .stderr
            .contains("environment variable `SHOP_ORDERS_PASSWORD`")
    );

    let output = warren(&["compile", "examples/shop.yaml"]);
    let text = format!("{}{}", output.stdout, output.stderr);
    for (_, password) in SHOP_PASSWORDS {
        assert!(!text.contains(password), "password {password} printed");
    }
    assert!(text.contains("rabbit_password_hashing_sha512"));
}

#[test]
fn usage_errors_exit_1_and_help_exits_0() {
    assert_eq!(warren(&["frobnicate"]).code, Some(1));
    assert_eq!(
        warren(&[
            "compile",
            "examples/ladder.yaml",
            "--target-version",
            "3.11"
        ])
        .code,
        Some(1)
    );
    assert_eq!(warren(&["--help"]).code, Some(0));
    assert_eq!(warren(&["validate", "does-not-exist.yaml"]).code, Some(1));
}

#[test]
fn the_committed_schema_is_up_to_date() {
    let committed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/warren.schema.json"),
    )
    .expect("schemas/warren.schema.json exists");
    let generated = warren(&["schema"]).stdout;
    assert!(
        committed == generated,
        "schemas/warren.schema.json is stale: run `cargo run -- schema > schemas/warren.schema.json`"
    );
}

#[test]
fn every_example_points_editors_at_the_schema() {
    for name in EXAMPLES {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(example(name));
        // A spec in several files: each file, one directory further down.
        let (files, schema) = if path.is_dir() {
            (
                warren::spec::load::spec_files(&path).unwrap(),
                "# yaml-language-server: $schema=../../schemas/warren.schema.json",
            )
        } else {
            (
                vec![path],
                "# yaml-language-server: $schema=../schemas/warren.schema.json",
            )
        };
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(text.starts_with(schema), "{}", file.display());
        }
    }
}

/// The list the tests loop over names every spec in `examples/`: each `*.yaml`, and
/// each directory of YAML files (a spec in several files).
#[test]
fn the_list_of_examples_is_complete() {
    let mut found: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")).unwrap()
    {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().is_some_and(|e| e == "yaml")
            || (path.is_dir() && !warren::spec::load::spec_files(&path).unwrap().is_empty())
        {
            found.push(name);
        }
    }
    found.sort();
    let mut listed: Vec<String> = EXAMPLES.iter().map(|e| e.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed, "tests/support/mod.rs EXAMPLES");
}

/// A web server that is not the management API: it answers the version requests as
/// RabbitMQ would, and every other request with a proxy's HTML login page (200 OK).
/// Returns its base URL and the request lines it received.
fn login_page_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let log = std::sync::Arc::clone(&log);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut length = 0usize;
                    loop {
                        let mut header = String::new();
                        reader.read_line(&mut header).unwrap();
                        if header.trim().is_empty() {
                            break;
                        }
                        if let Some(value) =
                            header.to_ascii_lowercase().strip_prefix("content-length:")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    log.lock().unwrap().push(request_line.trim().to_string());
                    let path = request_line.split_whitespace().nth(1).unwrap_or_default();
                    let (content_type, body) = if path.starts_with("/api/whoami") {
                        (
                            "application/json",
                            r#"{"name":"guest","tags":["administrator"]}"#,
                        )
                    } else if path.starts_with("/api/overview") {
                        ("application/json", r#"{"rabbitmq_version":"3.10.8"}"#)
                    } else {
                        (
                            "text/html; charset=utf-8",
                            "<html><body><form>Sign in</form></body></html>",
                        )
                    };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                }
            });
        }
    });
    (url, seen)
}

/// A 2xx answer that is not JSON (a proxy's login page in front of the management
/// API) is an error naming the URL and the content type: read as "no objects", it
/// would make a plan create everything, or delete everything an earlier apply made.
#[test]
fn a_login_page_instead_of_the_management_api_is_an_error_and_nothing_is_written() {
    let (url, seen) = login_page_server();
    for command in [
        vec!["plan", "examples/shop.yaml", "--url", url.as_str()],
        vec![
            "apply",
            "examples/shop.yaml",
            "--auto-approve",
            "--url",
            url.as_str(),
        ],
        vec!["import", "-o", "-", "--url", url.as_str()],
    ] {
        let output = warren(&command);
        let err = &output.stderr;
        assert_eq!(output.code, Some(3), "{command:?}: {err}");
        assert!(
            err.contains(&format!("{url}/api/")) && err.contains("answered 200 with text/html"),
            "{command:?}: {err}"
        );
        assert!(
            output.stdout.is_empty(),
            "{command:?}: nothing planned or imported"
        );
    }
    let requests = seen.lock().unwrap();
    assert!(requests.iter().any(|r| r.starts_with("GET /api/")));
    assert!(
        requests.iter().all(|r| r.starts_with("GET ")),
        "only reads were sent: {requests:?}"
    );
}

/// `--timeout` is the whole wait for one request, retries included: a server that
/// accepts connections and never answers is given up on after that long (not three
/// times as long), with an error that names the request and the URL.
#[test]
fn timeout_is_the_whole_wait_and_names_the_request() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream); // accepted, never answered
        }
    });
    let started = std::time::Instant::now();
    let run = warren(&[
        "plan",
        "examples/shop.yaml",
        "--url",
        &url,
        "--timeout",
        "2",
    ])
    .expect(3);
    let waited = started.elapsed();
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "GET {url}/api/whoami timed out: no answer within 2 s"
        )),
        "{}",
        run.stderr
    );
    // 2 s of waiting plus process start; three attempts of 2 s each would be 6 s.
    assert!(
        waited < std::time::Duration::from_millis(4500),
        "gave up after {waited:?}"
    );
}

/// A truncated or edited plan file is reported as a damaged plan, not read as a spec,
/// and a plan of another format is refused with what to do.
/// `apply FILE --expect-digest D` reads the file once, and refuses it (exit 4, before
/// it is even parsed, so before any broker is asked) unless its bytes have digest D;
/// a malformed or shortened digest is a usage error, and a spec is not a plan.
#[test]
fn apply_expect_digest_refuses_any_other_file() {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let text = r#"{"format": "warren-plan/2", "spec": "shop", "chan"#;
    std::fs::write(&plan, text).unwrap();
    let path = plan.to_str().unwrap();
    let other = format!("sha256:{}", "0".repeat(64));
    let refused = warren(&["apply", path, "--expect-digest", &other]).expect(4);
    assert!(
        refused.stderr.contains("is not the plan that was reviewed")
            && refused.stderr.contains("nothing was changed")
            && refused.stderr.contains(&other),
        "{}",
        refused.stderr
    );
    // The right digest lets the file through to be read (here: a damaged plan).
    let hex: String = sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    let read = warren(&["apply", path, "--expect-digest", &hex]).expect(1);
    assert!(
        read.stderr.contains("a damaged plan file"),
        "{}",
        read.stderr
    );
    let short = warren(&["apply", path, "--expect-digest", "sha256:0badf00d"]);
    assert_eq!(short.code, Some(1), "a usage error: {}", short.stderr);
    assert!(
        short.stderr.contains("64 hexadecimal digits"),
        "{}",
        short.stderr
    );
    let spec = dir.path().join("warren.yaml");
    std::fs::write(&spec, "version: 1\nname: shop\n").unwrap();
    let not_a_plan =
        warren(&["apply", spec.to_str().unwrap(), "--expect-digest", &other]).expect(1);
    assert!(
        not_a_plan
            .stderr
            .contains("--expect-digest is for a saved plan"),
        "{}",
        not_a_plan.stderr
    );
}

#[test]
fn a_damaged_plan_file_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let truncated = dir.path().join("plan.json");
    std::fs::write(
        &truncated,
        r#"{"format": "warren-plan/2", "spec": "shop", "chan"#,
    )
    .unwrap();
    let run = warren(&["apply", truncated.to_str().unwrap()]).expect(1);
    // At its line and column, as a spec's errors are.
    assert!(
        run.stderr.contains("plan.json:1:") && run.stderr.contains(": a damaged plan file ("),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("warren plan SPEC -o FILE"),
        "{}",
        run.stderr
    );

    let older = dir.path().join("old-plan");
    std::fs::write(&older, r#"{"format": "warren-plan/1", "spec": "shop"}"#).unwrap();
    let run = warren(&["apply", older.to_str().unwrap()]).expect(1);
    assert!(
        run.stderr
            .contains("is a `warren-plan/1` plan, which this warren cannot read"),
        "{}",
        run.stderr
    );

    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, r#"{"format": "warren-plan/2", "spec": 7}"#).unwrap();
    let run = warren(&["apply", edited.to_str().unwrap()]).expect(1);
    assert!(
        run.stderr.contains("edited.json:1:")
            && run
                .stderr
                .contains(": a damaged plan file (at `spec`: invalid type"),
        "{}",
        run.stderr
    );
}

/// `--amqp-url` is for the commands that delete, take locks or read messages over AMQP
/// (`status --inspect`); the others accept it (a profile may set it) but do not list it.
#[test]
fn only_commands_that_use_amqp_list_amqp_url_in_their_help() {
    for command in [
        &["apply"][..],
        &["replay"],
        &["status"],
        &["unlock"],
        &["state", "repair"],
        &["config"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        let help = support::warren(&args).run().expect(0).stdout;
        assert!(help.contains("--amqp-url"), "{command:?}: {help}");
    }
    for command in [
        &["plan"][..],
        &["import"],
        &["upgrade-check"],
        &["state", "show"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        let help = support::warren(&args).run().expect(0).stdout;
        assert!(!help.contains("--amqp-url"), "{command:?}: {help}");
        assert!(help.contains("--url"), "{command:?}: {help}");
    }
    // Still accepted where it is not listed.
    let run = support::warren(&["plan", "--amqp-url", "amqp://localhost:1", "--help"])
        .run()
        .expect(0);
    assert!(run.stdout.contains("Usage"), "{}", run.stdout);
}

/// Mistakes the parser finds (an unknown key, a bad delay) and mistakes only the
/// compiler can see (a ladder or a user that does not exist, a consumer nothing
/// reaches) are reported in one run, each at its line; what setting an entry aside
/// leaves missing (the `delays` of a ladder whose `delays` was misspelt) is not.
#[test]
fn parser_and_compiler_mistakes_are_reported_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("mistakes.yaml");
    std::fs::write(
        &spec,
        "version: 1\n\
         vhosts:\n\
         \x20 v:\n\
         \x20   services:\n\
         \x20     s:\n\
         \x20       exchange: { type: direct }\n\
         \x20       consumers:\n\
         \x20         a:\n\
         \x20           routing_keys: [a]\n\
         \x20           retry: { delay: [30s] }\n\
         \x20         b:\n\
         \x20           routing_keys: [b]\n\
         \x20           retry: { delays: [5x] }\n\
         \x20         c:\n\
         \x20           routing_keys: [c]\n\
         \x20           retry: { ladder: nope }\n\
         \x20         d:\n\
         \x20           retry: { delays: [1s] }\n\
         \x20         e:\n\
         \x20           routing_keys: [e]\n\
         \x20           user: nobody\n",
    )
    .unwrap();
    let run = support::warren(&["validate", spec.to_str().unwrap()])
        .run()
        .expect(1);
    let stderr = &run.stderr;
    for (line, words) in [
        (10, "unknown key `delay`"),
        (13, "5x"),
        (16, "unknown retry ladder `nope`"),
        (17, "consumer `d` has no `routing_keys`"),
        (21, "nobody"),
    ] {
        assert!(
            stderr.contains(&format!("mistakes.yaml:{line}:")) && stderr.contains(words),
            "line {line}, {words}: {stderr}"
        );
    }
    // Setting `delay` aside leaves consumer `a` without `delays`: not a mistake of its own.
    assert!(!stderr.contains("has no `delays`"), "{stderr}");
}
