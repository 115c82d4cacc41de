//! What a new user meets in the first ten minutes without a broker: output piped into
//! `head`, messages about empty files, counted nouns, `validate` against `lint`, shell
//! completions and the man page.

use std::io::Read;
use std::process::Stdio;

use crate::support::{self, Capture};

/// A spec with `consumers` consumers: its compiled JSON is far larger than a pipe's
/// buffer, so a reader that stops early closes the pipe while warren still writes.
fn large_spec(consumers: usize) -> tempfile::NamedTempFile {
    let mut text = String::from(
        "version: 1\nname: big\ndefaults:\n  retry:\n    delays: [30s, 5m, 30m]\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n",
    );
    for n in 0..consumers {
        text.push_str(&format!(
            "          c{n}:\n            routing_keys: [\"k.{n}\"]\n"
        ));
    }
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

#[test]
fn a_reader_that_stops_early_is_a_normal_end_not_an_error() {
    let spec = large_spec(500);
    let path = spec.path().to_str().unwrap();
    for args in [vec!["compile", path], vec!["schema"]] {
        let mut child = support::warren(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, as `head -c 1` does, then close the pipe.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        // `compile` says which RabbitMQ its output is for, and nothing else.
        let said: Vec<&str> = stderr
            .lines()
            .filter(|line| !(line.starts_with("compiled ") && line.contains(" for RabbitMQ ")))
            .collect();
        assert!(
            said.is_empty(),
            "{args:?}: nothing to say about a closed pipe: {stderr}"
        );
    }
}

/// A spec file in a temporary directory.
fn spec_file(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

const INHERITED_DELAYS: &str = "version: 1\ndefaults:\n  retry:\n    delays: [30s, 5m, 2m]\nvhosts:\n  shop:\n    services:\n      orders:\n        consumers:\n          email:\n            routing_keys: [order.paid]\n          invoicing:\n            routing_keys: [order.paid]\n            lint: { allow: [ladder-delays-not-increasing] }\n          refunds:\n            routing_keys: [order.refunded]\n";

#[test]
fn an_inherited_delay_is_reported_once_where_it_is_written_naming_who_inherits_it() {
    let spec = spec_file(INHERITED_DELAYS);
    let path = spec.path().to_str().unwrap();
    let run = support::warren(&["lint", path]).run().expect(0);
    assert_eq!(
        run.stdout
            .matches("warning[ladder-delays-not-increasing]")
            .count(),
        1,
        "{}",
        run.stdout
    );
    // At the line and column of `2m` in `defaults`, written as the spec writes it.
    assert!(
        run.stdout.contains(&format!("--> {path}:4:23")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("delay `2m` is not longer than the delay before it (`5m`)"),
        "{}",
        run.stdout
    );
    // The consumers that inherit it, except the one that allows the rule.
    assert!(
        run.stdout
            .contains("= affects: `orders.email`, `orders.refunds`"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("ms"),
        "durations as written: {}",
        run.stdout
    );

    let json = support::warren(&["lint", path, "--format", "json"])
        .run()
        .expect(0);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        document["diagnostics"][0]["affects"],
        serde_json::json!(["orders.email", "orders.refunds"])
    );
}

#[test]
fn validate_fails_what_lint_fails_and_points_at_lint_for_warnings() {
    let spec = spec_file(INHERITED_DELAYS);
    let path = spec.path().to_str().unwrap();
    let run = support::warren(&["validate", path]).run().expect(0);
    assert!(
        run.stdout.contains(&format!(
            "valid (40 objects for RabbitMQ 4.3); `warren lint {path}` shows 1 warning"
        )),
        "{}",
        run.stdout
    );
    let zero = spec_file(&INHERITED_DELAYS.replace("[30s, 5m, 2m]", "[0s, 5m]"));
    let path = zero.path().to_str().unwrap();
    let run = support::warren(&["validate", path]).run().expect(1);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("error[ladder-delay-zero]"),
        "{}",
        run.stderr
    );
    let lint = support::warren(&["lint", path]).run().expect(1);
    assert!(
        lint.stdout.contains("error[ladder-delay-zero]"),
        "{}",
        lint.stdout
    );
}

#[test]
fn counts_are_singular_for_one() {
    let spec = spec_file("version: 1\nvhosts:\n  shop: {}\n");
    let run = support::warren(&["validate", spec.path().to_str().unwrap()])
        .run()
        .expect(0);
    assert!(
        run.stdout.contains("(1 object for RabbitMQ"),
        "{}",
        run.stdout
    );
    let bad = spec_file("version: 1\nvhosts:\n  shop:\n    queus: {}\n");
    let run = support::warren(&["validate", bad.path().to_str().unwrap()])
        .run()
        .expect(1);
    assert!(
        run.stderr.ends_with(": 1 error\n"),
        "validate writes nothing, so says nothing about writing: {}",
        run.stderr
    );
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("d.json");
    let run = support::warren(&[
        "export",
        bad.path().to_str().unwrap(),
        "-o",
        target.to_str().unwrap(),
    ])
    .run()
    .expect(1);
    assert!(
        run.stderr.ends_with(": 1 error; nothing was written\n"),
        "{}",
        run.stderr
    );
}

/// The bundled examples are what a new user runs first, against the bundled broker
/// (RabbitMQ 3.10 from Debian): none of them may warn there, or on the newest target.
#[test]
fn no_example_warns_on_the_bundled_broker() {
    for example in support::EXAMPLES {
        for target in ["3.10", "4.1"] {
            let run = support::run_with_shop_passwords(&[
                "validate",
                &support::example(example),
                "--target-version",
                target,
            ])
            .expect(0);
            assert_eq!(run.stderr, "", "{example} on {target}");
            assert!(
                !run.stdout.contains("warning"),
                "{example} on {target}: {}",
                run.stdout
            );
        }
    }
}

/// Every subcommand a user can type, as `warren --help` lists them.
const SUBCOMMANDS: &[&str] = &[
    "validate",
    "compile",
    "export",
    "schema",
    "plan",
    "apply",
    "show",
    "lint",
    "import",
    "rules",
    "unlock",
    "state",
    "diff",
    "graph",
    "config",
    "completions",
    "man",
];

#[test]
fn completions_cover_every_subcommand_in_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let run = support::warren(&["completions", shell]).run().expect(0);
        for subcommand in SUBCOMMANDS {
            assert!(
                run.stdout.contains(subcommand),
                "{shell} completions lack `{subcommand}`"
            );
        }
        assert!(run.stdout.contains("prune-unmanaged"), "{shell}: flags too");
        if shell == "bash" {
            let dir = tempfile::tempdir().unwrap();
            let script = dir.path().join("warren.bash");
            std::fs::write(&script, &run.stdout).unwrap();
            let syntax = std::process::Command::new("bash")
                .arg("-n")
                .arg(&script)
                .output()
                .unwrap();
            assert!(
                syntax.status.success(),
                "{}",
                String::from_utf8_lossy(&syntax.stderr)
            );
        }
    }
    let unknown = support::warren(&["completions", "tcsh"]).run().expect(1);
    assert!(
        unknown.stderr.contains("possible values"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn man_pages_are_generated_from_the_command_line_definition() {
    let run = support::warren(&["man"]).run().expect(0);
    assert!(run.stdout.contains(".TH warren 1"), "{}", run.stdout);
    for subcommand in SUBCOMMANDS {
        assert!(
            run.stdout.contains(&format!("warren\\-{subcommand}(1)")),
            "the page lists `{subcommand}`"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    support::warren(&["man", "--output-dir", out.to_str().unwrap()])
        .run()
        .expect(0);
    for subcommand in SUBCOMMANDS {
        let page = std::fs::read_to_string(out.join(format!("warren-{subcommand}.1"))).unwrap();
        assert!(
            page.contains(&format!(".TH warren-{subcommand} 1")),
            "{page}"
        );
    }
    let plan = std::fs::read_to_string(out.join("warren-plan.1")).unwrap();
    assert!(plan.contains("prune\\-unmanaged"), "{plan}");
}

#[test]
fn diff_help_names_its_own_default_target_version() {
    let run = support::warren(&["diff", "--help"]).run().expect(0);
    let words = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(&format!(
            "for `diff`, the `rabbitmq_version` of the definitions file, else {}",
            warren::model::TargetVersion::DEFAULT
        )),
        "{}",
        run.stdout
    );
}

#[test]
fn import_says_which_file_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let definitions = dir.path().join("ladder.json");
    let spec = dir.path().join("ladder.yaml");
    support::warren(&[
        "export",
        "examples/ladder.yaml",
        "-o",
        definitions.to_str().unwrap(),
    ])
    .run()
    .expect(0);
    let run = support::warren(&[
        "import",
        "--from",
        definitions.to_str().unwrap(),
        "-o",
        spec.to_str().unwrap(),
    ])
    .run()
    .expect(0);
    assert!(
        run.stderr.contains(&format!(
            "wrote {}: imported 1 vhost, 2 consumers with retry ladders, 0 users",
            spec.display()
        )),
        "{}",
        run.stderr
    );
    assert!(spec.exists());
}

/// The subcommands `warren --help` lists (`help` aside): the list the binary itself
/// gives, so that a new command is checked without being added here.
fn listed_subcommands() -> Vec<String> {
    let run = support::warren(&["--help"]).run().expect(0);
    run.stdout
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// clap writes an unset variable as `[env: NAME=]`, as if it were set to nothing:
/// every variable is shown by its name alone.
#[test]
fn help_names_variables_without_a_trailing_equals_sign() {
    let subcommands = listed_subcommands();
    assert!(subcommands.len() >= 17, "{subcommands:?}");
    for subcommand in &subcommands {
        let run = support::warren(&[subcommand, "--help"]).run().expect(0);
        assert!(
            !run.stdout.contains("=]"),
            "warren {subcommand} --help:\n{}",
            run.stdout
        );
    }
    let plan = support::warren(&["plan", "--help"]).run().expect(0);
    for name in ["WARREN_CA_CERT", "WARREN_TIMEOUT", "WARREN_TARGET_VERSION"] {
        assert!(plan.stdout.contains(&format!("[env: {name}]")), "{name}");
    }
}

/// With the broker's variables set, a missing argument's usage line still names only
/// what the command needs, not the flags the variables gave.
#[test]
fn a_missing_argument_s_usage_does_not_list_flags_the_environment_gave() {
    let environment = [
        ("WARREN_URL", "http://127.0.0.1:1"),
        ("WARREN_USER", "ops"),
        ("WARREN_PASSWORD", "UsageSecret5"),
    ];
    for (args, usage) in [
        (
            &["replay"][..],
            "Usage: warren replay [OPTIONS] --queue <QUEUE> <SPEC>",
        ),
        (&["plan"][..], "Usage: warren plan [OPTIONS] <SPEC>"),
        (
            &["state", "show"][..],
            "Usage: warren state show [OPTIONS] <SPEC_OR_NAME>",
        ),
    ] {
        let run = support::warren(args).envs(environment).run().expect(1);
        assert!(
            run.stderr.lines().any(|line| line == usage),
            "{args:?}:\n{}",
            run.stderr
        );
        assert!(!run.stderr.contains("--url <URL>"), "{}", run.stderr);
        assert!(!run.stderr.contains("UsageSecret5"), "{}", run.stderr);
    }
}

/// `compile` and `export` say which RabbitMQ their output is for, on standard error
/// (standard output holds the JSON).
#[test]
fn compile_and_export_name_the_rabbitmq_version_of_their_output() {
    let spec = large_spec(2);
    let path = spec.path().to_str().unwrap();
    for (args, said) in [
        (
            vec!["compile", path, "--target-version", "3.10"],
            "for RabbitMQ 3.10; --target-version chooses another",
        ),
        (
            vec!["compile", path, "--contract"],
            "compiled the consumer contract for RabbitMQ 4.3",
        ),
        (
            vec!["export", path, "-o", "-", "--target-version", "4.0"],
            "for RabbitMQ 4.0; --target-version chooses another",
        ),
    ] {
        let run = support::warren(&args).run().expect(0);
        assert!(run.stderr.contains(said), "{args:?}: {}", run.stderr);
        assert!(run.stdout.starts_with('{'), "{args:?}: JSON on stdout");
    }
}
