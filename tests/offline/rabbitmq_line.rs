//! A spec names the RabbitMQ line it runs on (`rabbitmq`): the offline commands check
//! and compile for it without `--target-version`, a flag still wins, an environment
//! can override it, an unquoted `3.10` is refused with the fix, and `import` writes it.

use std::path::Path;

use crate::support::{Capture, warren};

/// One consumer with a one-tier ladder, with `rabbitmq: LINE` when given.
fn spec(line: Option<&str>, extra: &str) -> String {
    let line = line.map(|l| format!("rabbitmq: {l}\n")).unwrap_or_default();
    format!(
        "version: 1\nname: line\n{line}vhosts:\n  v:\n    services:\n      s:\n        consumers:\n          c:\n            routing_keys: [job]\n            retry: {{ delays: [1s] }}\n{extra}"
    )
}

fn write(dir: &Path, text: &str) -> String {
    let path = dir.join("spec.yaml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn validate_checks_the_spec_for_its_own_line_unless_a_flag_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let default = write(dir.path(), &spec(None, ""));
    let run = warren(&["validate", &default]).run().expect(0);
    assert!(
        run.stdout.contains("for RabbitMQ 4.3"),
        "without a line the newest is checked: {}",
        run.stdout
    );
    let old = write(dir.path(), &spec(Some("\"3.10\""), ""));
    let run = warren(&["validate", &old]).run().expect(0);
    assert!(run.stdout.contains("for RabbitMQ 3.10"), "{}", run.stdout);
    let run = warren(&["compile", &old]).run().expect(0);
    assert!(run.stderr.contains("for RabbitMQ 3.10"), "{}", run.stderr);
    // A flag (or WARREN_TARGET_VERSION) still chooses.
    let run = warren(&["validate", &old, "--target-version", "4.0"])
        .run()
        .expect(0);
    assert!(run.stdout.contains("for RabbitMQ 4.0"), "{}", run.stdout);
    let run = warren(&["validate", &old])
        .env("WARREN_TARGET_VERSION", "3.12")
        .run()
        .expect(0);
    assert!(run.stdout.contains("for RabbitMQ 3.12"), "{}", run.stdout);
}

#[test]
fn lint_follows_the_line_of_each_environment() {
    let dir = tempfile::tempdir().unwrap();
    let environments =
        "environments:\n  legacy:\n    overrides:\n      rabbitmq: \"3.10\"\n  current: {}\n";
    let path = write(dir.path(), &spec(Some("\"4.3\""), environments));
    let legacy = warren(&["validate", &path, "--env", "legacy"])
        .run()
        .expect(0);
    assert!(
        legacy.stdout.contains("for RabbitMQ 3.10"),
        "{}",
        legacy.stdout
    );
    let current = warren(&["validate", &path, "--env", "current"])
        .run()
        .expect(0);
    assert!(
        current.stdout.contains("for RabbitMQ 4.3"),
        "{}",
        current.stdout
    );
}

#[test]
fn an_unquoted_line_is_refused_with_the_fix_and_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &spec(Some("3.10"), ""));
    let run = warren(&["validate", &path]).run().expect(1);
    assert!(
        run.stderr.contains("YAML reads `3.10` unquoted as 3.1")
            && run.stderr.contains("\"3.10\"")
            && run.stderr.contains("spec.yaml:3:"),
        "{}",
        run.stderr
    );
    let unknown = write(dir.path(), &spec(Some("\"3.11\""), ""));
    let run = warren(&["validate", &unknown]).run().expect(1);
    assert!(
        run.stderr.contains("unknown target version `3.11`"),
        "{}",
        run.stderr
    );
}

#[test]
fn import_writes_the_line_of_the_file_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported.yaml");
    warren(&[
        "import",
        "--from",
        "tests/definitions/corpus/app-3.10-server-named-queue-bound.json",
        "-o",
        out.to_str().unwrap(),
        "--name",
        "adopted",
    ])
    .run()
    .expect(0);
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(
        yaml.contains("rabbitmq: '3.10'") || yaml.contains("rabbitmq: \"3.10\""),
        "{yaml}"
    );
    // The imported spec validates for its own line with no flag.
    let run = warren(&["validate", out.to_str().unwrap()]).run().expect(0);
    assert!(run.stdout.contains("for RabbitMQ 3.10"), "{}", run.stdout);
}
