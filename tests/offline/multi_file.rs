//! Specs in several files (a directory): each file of every example validates on its
//! own against the JSON Schema, an error that spans two files names both, and a
//! diagnostic in a team's file points at that file's line in every output format.
//! (The example's compiled output is pinned with the other examples', in `cli.rs`.)

use std::path::{Path, PathBuf};

use crate::snapshot_settings;
use crate::support::{self, Capture, EXAMPLES, Run, SHOP_PASSWORDS};

const SCHEMA: &str = "schemas/warren.schema.json";

/// A copy of `examples/multi-file` in `spec/` of a new temporary directory, with
/// `edit` applied to it; warren runs in the temporary directory, so messages say
/// `spec/payments.yaml` whatever the machine.
fn example_copy(edit: impl FnOnce(&Path)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec");
    std::fs::create_dir(&spec).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/multi-file");
    for file in warren::spec::load::spec_files(&example).unwrap() {
        std::fs::copy(&file, spec.join(file.file_name().unwrap())).unwrap();
    }
    edit(&spec);
    dir
}

fn append(file: &Path, text: &str) {
    let mut all = std::fs::read_to_string(file).unwrap();
    all.push_str(text);
    std::fs::write(file, all).unwrap();
}

fn replace(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{}: no `{from}`", file.display());
    std::fs::write(file, text.replacen(from, to, 1)).unwrap();
}

/// `warren ARGS` run in `dir`.
fn warren_in(dir: &Path, args: &[&str]) -> Run {
    support::warren(args)
        .current_dir(dir)
        .envs(SHOP_PASSWORDS.iter().copied())
        .run()
}

/// The YAML files of an example: the file, or each file of its directory.
fn files_of(example: &str) -> Vec<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(support::example(example));
    if path.is_dir() {
        warren::spec::load::spec_files(&path).unwrap()
    } else {
        vec![path]
    }
}

/// The committed JSON Schema, compiled, and a check of one YAML text against it.
pub(crate) struct Schema {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Schema {
    pub(crate) fn load() -> Schema {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA)).unwrap();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(
                "https://warren.invalid/warren.schema.json",
                serde_json::from_str(&text).unwrap(),
            )
            .unwrap();
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile("https://warren.invalid/warren.schema.json", &mut schemas)
            .unwrap();
        Schema { schemas, index }
    }

    /// `Err` with the validator's words when `yaml` does not validate.
    pub(crate) fn check(&self, yaml: &str) -> Result<(), String> {
        let value: serde_json::Value = serde_saphyr::from_str(yaml).map_err(|e| e.to_string())?;
        self.schemas
            .validate(&value, self.index)
            .map_err(|e| format!("{e:#}"))
    }
}

/// What an editor checks as the team types: each file alone, against the schema. A
/// team's file has no `name`, ladders or vhost settings, so the schema must require
/// none of them (it requires `version`, which every file carries).
#[test]
fn each_file_of_every_example_validates_on_its_own_against_the_schema() {
    let schema = Schema::load();
    for example in EXAMPLES {
        for file in files_of(example) {
            let text = std::fs::read_to_string(&file).unwrap();
            if let Err(problem) = schema.check(&text) {
                panic!("{}: {problem}", file.display());
            }
        }
    }
    // The check is a real one: what the schema refuses is refused.
    assert!(
        schema
            .check("vhosts:\n  store:\n    services: {}\n")
            .unwrap_err()
            .contains("version")
    );
    assert!(
        schema
            .check("version: 1\nvhosts:\n  store:\n    servics: {}\n")
            .unwrap_err()
            .contains("servics")
    );
}

/// The same service in two teams' files: one error naming both places, each
/// `file:line:column`, pointed at the second file's line.
#[test]
fn a_service_defined_in_two_files_is_an_error_naming_both() {
    let dir = example_copy(|spec| {
        append(
            &spec.join("payments.yaml"),
            "      orders:\n        consumers:\n          audit:\n            routing_keys: [\"#\"]\n",
        );
    });
    let run = warren_in(dir.path(), &["validate", "spec"]).expect(1);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let mut settings = snapshot_settings("snapshots");
    settings.set_snapshot_suffix("service-twice");
    settings.bind(|| insta::assert_snapshot!("multi_file__error", run.stderr));
}

/// `version` is in every file (the schema requires it): files that disagree are one
/// error naming each file's.
#[test]
fn files_that_disagree_on_the_version_are_one_error_naming_each() {
    let dir = example_copy(|spec| replace(&spec.join("orders.yaml"), "version: 1", "version: 2"));
    let run = warren_in(dir.path(), &["compile", "spec"]).expect(1);
    let mut settings = snapshot_settings("snapshots");
    settings.set_snapshot_suffix("version-mismatch");
    settings.bind(|| insta::assert_snapshot!("multi_file__error", run.stderr));
}

/// A setting (here a vhost's `limits`) is written in one file only.
#[test]
fn a_setting_written_in_two_files_is_an_error() {
    let dir = example_copy(|spec| {
        replace(
            &spec.join("orders.yaml"),
            "  store:\n",
            "  store:\n    limits:\n      max_queues: 10\n",
        );
        replace(
            &spec.join("orders.yaml"),
            "version: 1\n",
            "version: 1\nname: orders\n",
        );
    });
    let run = warren_in(dir.path(), &["validate", "spec"]).expect(1);
    assert!(
        run.stderr.contains(
            "`limits` of vhost `store` is defined in spec/orders.yaml:10:5 and in spec/platform.yaml:27:5"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "the spec's `name` is defined in spec/orders.yaml:6:1 and in spec/platform.yaml:11:1"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("spec: 2 errors"), "{}", run.stderr);
}

/// A lint finding about a consumer of the payments team's file: every format points
/// at payments.yaml and its line, and the text quotes that file's line.
#[test]
fn a_finding_in_a_team_file_points_at_that_file_in_every_format() {
    let dir = example_copy(|spec| {
        replace(
            &spec.join("payments.yaml"),
            "            retry:\n              ladder: standard\n",
            "            retry:\n              delays: [5m, 30s]\n",
        );
    });
    let lint = |format: &str| warren_in(dir.path(), &["lint", "spec", "--format", format]);
    let human = lint("human").expect(0);
    assert!(
        human.stdout.contains("--> spec/payments.yaml:"),
        "{}",
        human.stdout
    );
    let sarif: serde_json::Value = serde_json::from_str(&lint("sarif").expect(0).stdout).unwrap();
    let results = &sarif["runs"][0]["results"];
    let github = lint("github").expect(0).stdout;
    let json: serde_json::Value = serde_json::from_str(&lint("json").expect(0).stdout).unwrap();
    assert_eq!(json["file"], "spec");
    assert_eq!(json["diagnostics"][0]["file"], "spec/payments.yaml");
    let mut settings = snapshot_settings("snapshots");
    settings.set_snapshot_suffix("team-file");
    settings.bind(|| {
        insta::assert_snapshot!("multi_file__lint_human", human.stdout);
        insta::assert_json_snapshot!("multi_file__lint_sarif_results", results);
        insta::assert_snapshot!("multi_file__lint_github", github);
    });
}

/// A compile error in a team's file, under `validate`: the file and line of the value
/// that file wrote, and its line quoted.
#[test]
fn a_compile_error_in_a_team_file_quotes_that_file() {
    let dir = example_copy(|spec| {
        replace(&spec.join("payments.yaml"), "ladder: quick", "ladder: quik");
    });
    let run = warren_in(dir.path(), &["validate", "spec"]).expect(1);
    assert!(
        run.stderr
            .contains("  --> spec/payments.yaml:19:23\n   |\n19 |               ladder: quik\n"),
        "{}",
        run.stderr
    );
}

/// Bad input: no YAML file, a YAML error or text that is not UTF-8 in one file; each
/// a clear error naming the directory or the file, exit 1, nothing written.
#[test]
fn bad_directories_are_clear_errors_naming_the_file() {
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("README.md"), "not a spec").unwrap();
    std::fs::write(empty.path().join(".hidden.yaml"), "version: 1\n").unwrap();
    std::fs::create_dir(empty.path().join("sub")).unwrap();
    std::fs::write(empty.path().join("sub/deeper.yaml"), "version: 1\n").unwrap();
    let run = warren_in(empty.path(), &["validate", "."]).expect(1);
    assert!(
        run.stderr
            .contains("error[no-spec-files]: the directory . holds no `*.yaml` or `*.yml` file"),
        "{}",
        run.stderr
    );

    let dir = example_copy(|spec| {
        std::fs::write(spec.join("broken.yml"), "version: 1\nvhosts: [\n").unwrap();
        std::fs::write(spec.join("latin1.yaml"), b"version: 1\n# caf\xe9\n").unwrap();
    });
    let out = dir.path().join("definitions.json");
    let run = warren_in(dir.path(), &["export", "spec", "-o", out.to_str().unwrap()]).expect(1);
    assert!(
        run.stderr.contains("--> spec/broken.yml:2:9"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("error[not-utf8]") && run.stderr.contains("--> spec/latin1.yaml:2:"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("spec: 2 errors; nothing was written"),
        "{}",
        run.stderr
    );
    assert!(!out.exists());
}

/// The commands that take a plan or a spec's name as well (`apply`, `state`) take a
/// directory as a spec: a directory with a broken file is refused with that file's
/// error (exit 1), a good one gets as far as the broker (here none: exit 3).
#[test]
fn apply_and_state_take_a_directory_as_a_spec() {
    let good = example_copy(|_| {});
    let broken = example_copy(|spec| std::fs::write(spec.join("z.yaml"), "version: [\n").unwrap());
    let broker = ["--url", "http://127.0.0.1:1", "--timeout", "5"];
    for command in [
        &["apply", "spec", "--auto-approve"][..],
        &["state", "show", "spec"],
        &["state", "repair", "spec"],
        &["unlock", "spec", "--holder", "h"],
    ] {
        let args: Vec<&str> = command.iter().chain(&broker).copied().collect();
        let run = warren_in(broken.path(), &args).expect(1);
        assert!(
            run.stderr.contains("--> spec/z.yaml:"),
            "{command:?}: {}",
            run.stderr
        );
        let run = warren_in(good.path(), &args).expect(3);
        assert!(
            !run.stderr.contains("cannot read"),
            "{command:?}: {}",
            run.stderr
        );
    }
}
