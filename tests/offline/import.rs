//! `warren import`: a spec written from definitions reproduces them exactly.

use crate::support::{self, Capture, Run};

/// `warren ARGS` with the passwords of the shop example set.
fn warren(args: &[&str]) -> Run {
    support::run_with_shop_passwords(args)
}

/// Imports `definitions` and checks that the spec compiles and diffs as no change,
/// with nothing left unmanaged.
fn round_trip(definitions: &str, target: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("imported.yaml");
    let Run { code, stderr, .. } = warren(&[
        "import",
        "--from",
        definitions,
        "-o",
        spec.to_str().unwrap(),
        "--name",
        "adopted",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"));
    let Run {
        code,
        stdout,
        stderr,
    } = warren(&[
        "diff",
        spec.to_str().unwrap(),
        "--against",
        definitions,
        "--target-version",
        target,
    ]);
    assert_eq!(
        code,
        Some(0),
        "{definitions}:\n{stdout}{stderr}\n{}",
        std::fs::read_to_string(&spec).unwrap()
    );
    assert!(!stdout.contains("Not managed"), "{stdout}");
    // Said of the file it was compared with, not of a broker.
    assert!(
        stdout.contains("The definitions file matches the spec.") && !stdout.contains("The broker"),
        "{stdout}"
    );
    std::fs::read_to_string(spec).unwrap()
}

#[test]
fn every_example_survives_export_then_import() {
    let dir = tempfile::tempdir().unwrap();
    for example in support::EXAMPLES {
        for target in ["3.10", "4.0"] {
            let file = dir.path().join(format!("{example}-{target}.json"));
            let Run { code, stderr, .. } = warren(&[
                "export",
                &support::example(example),
                "-o",
                file.to_str().unwrap(),
                "--target-version",
                target,
            ]);
            assert_eq!(code, Some(0), "{stderr}");
            let spec = round_trip(file.to_str().unwrap(), target);
            assert!(
                spec.contains("retry:"),
                "{example}: no ladder recognised:\n{spec}"
            );
        }
    }
}

#[test]
fn a_native_ladder_survives_export_then_import() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("native.yaml");
    std::fs::write(
        &spec,
        "version: 1\nvhosts:\n  shop:\n    services:\n      orders:\n        exchange: { name: orders, type: topic }\n        consumers:\n          email:\n            routing_keys: [order.paid]\n            retry: { mode: native, delays: [1s, 2s, 3s] }\n          sms:\n            routing_keys: [order.paid]\n            retry: { mode: native, delays: [10s, 20s], max_retries: 5, on_exhausted: park }\n",
    )
    .unwrap();
    let file = dir.path().join("native.json");
    let Run { code, stderr, .. } = warren(&[
        "export",
        spec.to_str().unwrap(),
        "-o",
        file.to_str().unwrap(),
        "--target-version",
        "4.3",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let imported = round_trip(file.to_str().unwrap(), "4.3");
    assert_eq!(imported.matches("mode: native").count(), 2, "{imported}");
    assert!(imported.contains("max_retries: 5"), "{imported}");
}

#[test]
fn edge_cases_of_real_definitions_files_import_exactly() {
    let spec = round_trip("tests/definitions/edge-cases.json", "3.10");
    assert!(spec.contains("tenant/eu"));
    assert!(spec.contains("ünïcode"));
    assert!(
        spec.contains("5000000000"),
        "numbers above 2^32 keep their value:\n{spec}"
    );
    assert!(spec.contains("destination_type: exchange"));
    assert!(spec.contains("password_hash"));
}

#[test]
fn a_file_that_is_not_definitions_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"queues": [{"vhost": "v"}]}"#).unwrap();
    let Run { code, stderr, .. } = warren(&["import", "--from", bad.to_str().unwrap(), "-o", "-"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("is not a RabbitMQ definitions file") && stderr.contains("name"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// `tests/definitions/corpus/` (and `tests/definitions/vhost-scoped/`) hold definitions
/// files shaped like the ones brokers, tools and public projects write; the folder's
/// README says what each one stands for and `expected.json` lists them. Each imports
/// (`--vhost V` for a vhost-scoped file) and diffs against itself as no change, with
/// nothing left unmanaged. The broker version to compile for is the file's own
/// (`rabbitmq_version`/`rabbit_version`): no `--target-version` is given. Every file is
/// tried, and the failures are listed together.
#[test]
fn the_definitions_corpus_imports_exactly() {
    let corpus = support::corpus();
    assert!(
        corpus.len() >= 42,
        "the corpus holds {} files",
        corpus.len()
    );
    let failures: Vec<String> = corpus
        .iter()
        .filter_map(|file| corpus_round_trip(file).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} corpus files do not round-trip offline:\n{}\n\n{}",
        failures.len(),
        corpus.len(),
        failures
            .iter()
            .map(|f| format!("- {}", f.lines().next().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("\n"),
        failures.join("\n\n")
    );
}

/// `warren import --from FILE` then `warren diff SPEC --against FILE`; the error names
/// the file on its first line, then shows warren's output and the imported spec.
fn corpus_round_trip(file: &support::CorpusFile) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("imported.yaml");
    let spec_arg = spec.to_str().unwrap();
    let scope: Vec<&str> = match &file.vhost {
        Some(vhost) => vec!["--vhost", vhost],
        None => Vec::new(),
    };
    let mut import_args = vec![
        "import", "--from", &file.path, "-o", spec_arg, "--name", "adopted",
    ];
    import_args.extend(&scope);
    let import = warren(&import_args);
    if import.code != Some(0) || import.stderr.contains("panicked") {
        return Err(format!(
            "{}: `warren import` exited with {:?}: {}\n`warren {}`:\n{}{}",
            file.name,
            import.code,
            support::summary(&import),
            import_args.join(" "),
            import.stdout,
            import.stderr
        ));
    }
    let imported = std::fs::read_to_string(&spec).unwrap_or_default();
    let mut diff_args = vec!["diff", spec_arg, "--against", &file.path];
    diff_args.extend(&scope);
    // The spec reads URI credentials from the environment, as a user sets them.
    let diff = support::warren(&diff_args)
        .envs(support::SHOP_PASSWORDS.iter().copied())
        .envs(file.credentials.iter().map(|(k, v)| (k, v)))
        .run();
    let unmanaged = diff.stdout.contains("Not managed");
    if diff.code != Some(0) || unmanaged {
        return Err(format!(
            "{}: `warren diff` exited with {:?}{}: {}\n--- import ---\n{}--- diff ---\n{}{}--- imported spec ---\n{}",
            file.name,
            diff.code,
            if unmanaged {
                " and lists objects as not managed"
            } else {
                ""
            },
            support::summary(&diff),
            import.stderr,
            diff.stdout,
            diff.stderr,
            imported
        ));
    }
    Ok(())
}

/// A binding to a queue the file does not hold: RabbitMQ 4.0 refuses the file, so
/// warren refuses it at the binding's place and writes nothing; 3.10 accepts it and
/// creates no binding, so warren leaves the binding out, says so, and the spec
/// round-trips.
#[test]
fn a_binding_to_nothing_is_refused_for_4_0_and_left_out_for_3_10() {
    let dir = tempfile::tempdir().unwrap();
    let file = |version: &str| {
        let path = dir.path().join(format!("bad-{version}.json"));
        std::fs::write(
            &path,
            format!(
                r##"{{"rabbitmq_version": "{version}", "vhosts": [{{"name": "/"}}],
            "exchanges": [{{"name": "orders", "vhost": "/", "type": "topic", "durable": true,
                           "auto_delete": false, "internal": false, "arguments": {{}}}}],
            "bindings": [{{"source": "orders", "vhost": "/", "destination": "missing",
                          "destination_type": "queue", "routing_key": "#", "arguments": {{}}}}]}}"##
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let out = dir.path().join("spec.yaml");
    let refused = file("4.0.5");
    let Run { code, stderr, .. } =
        warren(&["import", "--from", &refused, "-o", out.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{refused}:4:76: RabbitMQ 4.0 refuses this file"))
            && stderr.contains("[binding-ends-exist]"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!out.exists());

    let accepted = file("3.10.8");
    let Run { code, stderr, .. } =
        warren(&["import", "--from", &accepted, "-o", out.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "1 binding to or from an exchange or queue the file does not hold is left out"
        ),
        "{stderr}"
    );
    round_trip(&accepted, "3.10");
}

/// What an import leaves out or writes differently, it says: transient queues, the
/// permission of a user the file does not hold (written as an external user's), and
/// which version the spec was checked for.
#[test]
fn an_import_says_what_it_left_out_and_why() {
    let imported = |file: &str| {
        let run = warren(&["import", "--from", file, "-o", "-"]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        run
    };
    let run = imported("tests/definitions/corpus/app-3.10-server-named-queue-bound.json");
    assert!(
        run.stderr.contains("1 transient queue is left out")
            && run.stderr.contains("checked for RabbitMQ 3.10"),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("amq.gen-"), "{}", run.stdout);
    let run = imported("tests/definitions/corpus/compose-4.0-guest-permission.json");
    assert!(
        run.stderr
            .contains("permissions of `guest` are imported under `external: true`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("guest:\n    external: true"),
        "{}",
        run.stdout
    );
    let run = imported("tests/definitions/corpus/upgraded-3.7-md5-mirrored-exactly.json");
    assert!(
        run.stderr.contains("the oldest version warren supports")
            && run.stdout.contains("hashing_algorithm: md5"),
        "{}\n{}",
        run.stderr,
        run.stdout
    );
}

#[test]
fn a_delayed_message_exchange_is_imported_as_it_is_and_named_with_the_way_off_it() {
    let dir = tempfile::tempdir().unwrap();
    let definitions = dir.path().join("delayed.json");
    std::fs::write(
        &definitions,
        serde_json::json!({
            "rabbit_version": "3.13.7",
            "vhosts": [{"name": "v"}],
            "exchanges": [{"name": "later", "vhost": "v", "type": "x-delayed-message",
                           "durable": true, "auto_delete": false, "internal": false,
                           "arguments": {"x-delayed-type": "direct"}}],
            "queues": [{"name": "work", "vhost": "v", "durable": true, "auto_delete": false,
                        "arguments": {"x-queue-type": "quorum"}}],
            "bindings": [{"source": "later", "vhost": "v", "destination": "work",
                          "destination_type": "queue", "routing_key": "work", "arguments": {}}]
        })
        .to_string(),
    )
    .unwrap();
    let spec = round_trip(definitions.to_str().unwrap(), "3.13");
    assert!(spec.contains("type: x-delayed-message"), "{spec}");
    let spec = dir.path().join("again.yaml");
    let Run { code, stderr, .. } = warren(&[
        "import",
        "--from",
        definitions.to_str().unwrap(),
        "-o",
        spec.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("exchange `later` is a delayed-message exchange")
            && stderr.contains("mode: native")
            && stderr.contains("upgrade-check"),
        "{stderr}"
    );
}
