//! A corpus of broken specs, and the diagnostics warren prints for them: most with one
//! mistake; those named `several-mistakes*` (and the generated `many-mistakes`) with
//! several, every one of which is reported in one run.
//!
//! Every `tests/bad_specs/*.yaml` file starts with header comments:
//!
//! ```yaml
//! # what is wrong with this spec (required, first line)
//! # target: 3.10        (optional: passed as --target-version)
//! # command: export     (optional: run `export` instead of `validate`)
//! # env: prod           (optional: passed as --env, for a spec with environments)
//! ```
//!
//! The binary runs with the repository root as working directory, so diagnostics name
//! the file as `tests/bad_specs/NAME.yaml`, and with an empty environment, so no
//! password variable or `WARREN_TARGET_VERSION` of the developer's shell leaks in. For
//! every file the test checks the invariants of a failed run (exit code 1, nothing on
//! stdout, no panic, a `file:line:column` location, no output file) and snapshots
//! stderr under `tests/snapshots/bad_specs/`.
//!
//! Specs too large to commit (a 10 MB file, a 1 MB line, half a million nodes) are
//! made by [`GENERATED`] into a temporary directory at each run and checked the same
//! way, named `generated/NAME.yaml`. Committed specs may hold any bytes (invalid UTF-8,
//! a byte-order mark, NUL): the header is read from the bytes as they are.
//!
//! Accept new or changed snapshots with
//! `INSTA_UPDATE=always cargo test --test offline bad_specs` and read every changed
//! `.snap` file before committing it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::snapshot_settings;
use crate::support::{Capture, Run, warren};

/// The corpus (committed and generated specs) must not shrink below this many specs.
const MIN_SPECS: usize = 100;

/// The specs that write a password in clear text, and that password: it must never be
/// echoed back in a diagnostic.
const CLEAR_TEXT_SPECS: &[(&str, &str)] = &[
    ("clear-text-password", "hunter2"),
    ("several-mistakes-secret", "swordfish"),
];

#[derive(Debug, PartialEq, Eq)]
enum Mode {
    Validate,
    Export,
}

struct Header {
    description: String,
    target: Option<String>,
    environment: Option<String>,
    mode: Mode,
}

/// Reads the leading comment lines of a spec (after a byte-order mark, if any).
fn parse_header(name: &str, text: &str) -> Header {
    let text = text.trim_start_matches('\u{feff}');
    let mut lines = text.lines().map_while(|line| line.strip_prefix('#'));
    let description = lines
        .next()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| panic!("{name}: the first line must be `# <what is wrong>`"))
        .to_string();
    let mut header = Header {
        description,
        target: None,
        environment: None,
        mode: Mode::Validate,
    };
    for line in lines {
        let line = line.trim();
        if let Some(target) = line.strip_prefix("target:") {
            header.target = Some(target.trim().to_string());
        } else if let Some(environment) = line.strip_prefix("env:") {
            header.environment = Some(environment.trim().to_string());
        } else if let Some(command) = line.strip_prefix("command:") {
            header.mode = match command.trim() {
                "validate" => Mode::Validate,
                "export" => Mode::Export,
                other => panic!("{name}: unknown `# command: {other}`"),
            };
        }
    }
    header
}

/// A spec made at test time: name, what is wrong, and its bytes.
type Generated = (&'static str, &'static str, fn() -> Vec<u8>);

/// Specs too large to commit.
const GENERATED: &[Generated] = &[
    (
        "spec-10mb",
        "a 10 MB spec of 150,000 consumers, over the 8 MiB limit",
        ten_megabytes,
    ),
    (
        "line-1mb-error-at-end",
        "a 1 MB line: a flow map whose last key is unknown",
        long_line_error_at_end,
    ),
    (
        "line-1mb-error-at-start",
        "a 1 MB line that starts with an unknown key",
        long_line_error_at_start,
    ),
    (
        "nodes-600k",
        "a list of 600,000 numbers, over the 500,000-node limit",
        many_nodes,
    ),
    (
        "aliases-20k",
        "20,000 aliases of one anchor, over the 10,000-alias limit",
        many_aliases,
    ),
    ("nesting-100k", "100,000 nested flow lists", deep_brackets),
    ("key-1mb", "a key of 1 MB", huge_key),
    (
        "many-mistakes",
        "60 unknown keys: the first 50 are shown, and the other 10 counted",
        sixty_unknown_keys,
    ),
];

fn sixty_unknown_keys() -> Vec<u8> {
    let mut spec = String::from("version: 1\n");
    for i in 0..60 {
        spec.push_str(&format!("unknown_{i:02}: {i}\n"));
    }
    spec.into_bytes()
}

const CONSUMER_HEAD: &str =
    "version: 1\nvhosts:\n  shop:\n    services:\n      orders:\n        consumers:\n";

fn ten_megabytes() -> Vec<u8> {
    let mut spec = String::from(CONSUMER_HEAD);
    for i in 0..150_000 {
        spec.push_str(&format!(
            "          consumer{i:06}:\n            routing_keys: [\"order.{i}\"]\n"
        ));
    }
    spec.into_bytes()
}

fn long_line_error_at_end() -> Vec<u8> {
    let keys: String = (0..100_000).map(|i| format!("q{i:05}: {{}}, ")).collect();
    format!("version: 1\nvhosts: {{shop: {{queues: {{{keys}}}, bogus: 1}}}}\n").into_bytes()
}

fn long_line_error_at_start() -> Vec<u8> {
    let keys: String = (0..100_000).map(|i| format!(", q{i:05}: {{}}")).collect();
    format!("version: 1\nvhosts: {{shop: {{bogus: 1{keys}}}}}\n").into_bytes()
}

fn many_nodes() -> Vec<u8> {
    format!(
        "version: 1\nglobal_parameters:\n  x: [{}]\n",
        vec!["1"; 600_000].join(",")
    )
    .into_bytes()
}

fn many_aliases() -> Vec<u8> {
    format!(
        "version: 1\nglobal_parameters:\n  a: &a 1\n  x: [{}]\n",
        vec!["*a"; 20_000].join(",")
    )
    .into_bytes()
}

fn deep_brackets() -> Vec<u8> {
    format!(
        "version: 1\nglobal_parameters:\n  x: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    )
    .into_bytes()
}

fn huge_key() -> Vec<u8> {
    format!(
        "version: 1\nvhosts:\n  shop:\n    {}: 1\n",
        "k".repeat(1 << 20)
    )
    .into_bytes()
}

fn spec_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(root.join("tests/bad_specs"))
        .expect("tests/bad_specs exists")
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// `warren ARGS` from the repository root with an empty environment.
fn run_warren(args: &[&str]) -> Run {
    warren(args).env_clear().run()
}

/// `warren ARGS` from `cwd` with an empty environment.
fn run_warren_in(cwd: &Path, args: &[&str]) -> Run {
    warren(args).env_clear().current_dir(cwd).run()
}

/// True when `stderr` holds `--> FILE:LINE:COL` with numeric line and column.
fn has_location(stderr: &str, file: &str) -> bool {
    let prefix = format!("--> {file}:");
    stderr.lines().any(|line| {
        let Some(rest) = line.trim_start().strip_prefix(&prefix) else {
            return false;
        };
        let mut parts = rest.split(':');
        let numeric = |part: Option<&str>| {
            part.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        };
        numeric(parts.next()) && numeric(parts.next()) && parts.next().is_none()
    })
}

/// The lines warren writes itself: stderr without the quoted source lines
/// (`12 | ...`), which repeat the spec verbatim.
fn diagnostic_text(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
            !(digits > 0 && trimmed[digits..].starts_with(" |"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A password written in the spec must not reach a terminal or a CI log, not even in
/// the quoted source line under the message.
#[test]
fn clear_text_password_is_never_printed() {
    for (spec, password) in CLEAR_TEXT_SPECS {
        let relative = format!("tests/bad_specs/{spec}.yaml");
        let run = run_warren(&["validate", &relative]);
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert!(
            !run.stderr.contains(password),
            "stderr repeats the clear-text password of {spec}:\n{}",
            run.stderr
        );
    }
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "the table of what each corpus file must say is the test"
)]
fn bad_specs_fail_with_located_diagnostics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = spec_files(root);

    let scratch = tempfile::tempdir().expect("temporary directory");
    let generated_root = tempfile::tempdir().expect("temporary directory");
    fs::create_dir(generated_root.path().join("generated")).expect("generated/");
    let mut failures: Vec<String> = Vec::new();
    let mut snapshots: Vec<(String, String, String)> = Vec::new();
    let mut saw_clear_text = 0;

    // (snapshot name, path as given to warren, working directory, the spec's text)
    let mut cases: Vec<(String, String, PathBuf, String)> = files
        .iter()
        .map(|path| {
            let name = path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .expect("UTF-8 file name")
                .to_string();
            let bytes = fs::read(path).expect("readable spec");
            let text = String::from_utf8_lossy(&bytes).into_owned();
            (
                name.clone(),
                format!("tests/bad_specs/{name}.yaml"),
                root.to_path_buf(),
                text,
            )
        })
        .collect();
    for (name, description, make) in GENERATED {
        let relative = format!("generated/{name}.yaml");
        let mut bytes = format!("# {description}\n").into_bytes();
        bytes.extend(make());
        fs::write(generated_root.path().join(&relative), &bytes).expect("generated spec");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        cases.push((
            format!("generated-{name}"),
            relative,
            generated_root.path().to_path_buf(),
            text,
        ));
    }
    assert!(
        cases.len() >= MIN_SPECS,
        "the bad-spec corpus holds {} specs; it needs at least {MIN_SPECS}",
        cases.len()
    );

    for (name, relative, cwd, text) in &cases {
        let (name, relative, text) = (name.clone(), relative.clone(), text.as_str());
        let header = parse_header(&name, text);

        let output = scratch.path().join(format!("{name}.json"));
        let output_arg = output.to_str().expect("UTF-8 temporary path").to_string();
        let mut args: Vec<&str> = match header.mode {
            Mode::Validate => vec!["validate", &relative],
            Mode::Export => vec!["export", &relative, "-o", &output_arg],
        };
        if let Some(target) = &header.target {
            args.extend(["--target-version", target]);
        }
        if let Some(environment) = &header.environment {
            args.extend(["--env", environment]);
        }
        let run = run_warren_in(cwd, &args);

        let mut fail = |what: String| failures.push(format!("{relative}: {what}"));
        if run.code != Some(1) {
            fail(format!("exit code {:?}, expected 1", run.code));
        }
        if !run.stdout.is_empty() {
            fail(format!("stdout is not empty: {:?}", run.stdout));
        }
        if run.stderr.contains("panicked") {
            fail(format!("warren panicked:\n{}", run.stderr));
        }
        if !run.stderr.contains("error[") {
            fail(format!("no `error[...]` diagnostic:\n{}", run.stderr));
        }
        if !has_location(&run.stderr, &relative) {
            fail(format!(
                "stderr has no `--> {relative}:LINE:COL` location:\n{}",
                run.stderr
            ));
        }
        if header.mode == Mode::Export {
            if output.exists() {
                fail(format!(
                    "export wrote {} despite the error",
                    output.display()
                ));
            }
            // The mistake of an export-only spec (a missing secret) is invisible to
            // `validate`, which needs no secrets: the rest of the spec must be valid.
            let mut validate: Vec<&str> = vec!["validate", &relative];
            if let Some(target) = &header.target {
                validate.extend(["--target-version", target]);
            }
            let check = run_warren_in(cwd, &validate);
            if check.code != Some(0) {
                fail(format!(
                    "`validate` should accept an export-only mistake, got exit {:?}:\n{}",
                    check.code, check.stderr
                ));
            }
        }
        if let Some((_, password)) = CLEAR_TEXT_SPECS.iter().find(|(spec, _)| *spec == name) {
            saw_clear_text += 1;
            if !text.contains(password) {
                fail(format!("{name}: the spec no longer contains `{password}`"));
            }
            // The quoted source line is checked by `clear_text_password_is_never_printed`.
            if diagnostic_text(&run.stderr).contains(password) {
                fail(format!(
                    "{name}: the diagnostic repeats the clear-text password:\n{}",
                    run.stderr
                ));
            }
        }
        snapshots.push((name, header.description, run.stderr));
    }

    assert_eq!(
        saw_clear_text,
        CLEAR_TEXT_SPECS.len(),
        "a spec of CLEAR_TEXT_SPECS is missing from tests/bad_specs"
    );
    assert!(
        failures.is_empty(),
        "{} problem(s) in the bad-spec corpus:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );

    for (name, description, stderr) in snapshots {
        let mut settings = snapshot_settings("snapshots/bad_specs");
        settings.set_description(description);
        settings.set_omit_expression(true);
        settings.bind(|| insta::assert_snapshot!(name, stderr));
    }
}
