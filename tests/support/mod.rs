//! What both integration-test binaries (`tests/offline/`, `tests/broker/`) share: the
//! one way they run the `warren` binary, and the definitions corpus's manifest.
//!
//! Each binary includes this file with `#[path = "../support/mod.rs"] mod support;`.
//! Everything here is used by both; helpers that only broker tests need (nodes, the
//! AMQP client, `per_version!`) live in `tests/broker/` and are not compiled into the
//! offline binary.

use std::path::Path;
use std::process::Command;

/// Every example spec, by name: `examples/NAME.yaml`, or for a spec in several files
/// the directory `examples/NAME/`. The one list of the tests that check every example
/// (`tests/offline/cli.rs` checks that it names every spec in `examples/`).
pub const EXAMPLES: &[&str] = &[
    "single-loop",
    "multi-consumer",
    "ladder",
    "shop",
    "multi-file",
    "environments",
    "adopted",
];

/// The environment the tests that check every example read a spec with environments
/// for ([`warren`] sets it as `WARREN_ENV`, which specs without environments ignore);
/// the tests of environments read the others with `--env`.
pub const EXAMPLE_ENVIRONMENT: &str = "staging";

/// The path of the example `name`, as given to `warren` (relative to the repository
/// root, where [`warren`] runs): its directory, else its file.
pub fn example(name: &str) -> String {
    let dir = format!("examples/{name}");
    if Path::new(env!("CARGO_MANIFEST_DIR")).join(&dir).is_dir() {
        dir
    } else {
        format!("{dir}.yaml")
    }
}

/// The passwords the examples read from the environment (`examples/shop.yaml`,
/// `examples/multi-file`, `examples/environments.yaml`).
pub const SHOP_PASSWORDS: &[(&str, &str)] = &[
    ("BILLING_APP_PASSWORD", "billing-pw"),
    ("SHOP_ORDERS_PASSWORD", "orders-pw"),
    ("SHOP_PAYMENTS_PASSWORD", "payments-pw"),
    ("SHOP_EMAIL_PASSWORD", "email-pw"),
    ("SHOP_OPS_PASSWORD", "ops-pw"),
];

/// `warren ARGS`, ready to run: from the repository root (relative paths such as
/// `examples/ladder.yaml` resolve there), with `NO_COLOR` set, without a
/// `WARREN_TARGET_VERSION` of the developer's shell, without the developer's broker
/// profiles (no `WARREN_PROFILE` or `WARREN_CONFIG`, `XDG_CONFIG_HOME` pointed where
/// there is no file), and with `WARREN_ENV` set to [`EXAMPLE_ENVIRONMENT`].
///
/// Adjust it with the usual [`Command`] methods (`.env(..)`, `.envs(SHOP_PASSWORDS..)`,
/// `.env_clear()` for an empty environment), then [`Capture::run`] it. Broker tests
/// add a node's URL and credentials with `Node::warren`.
pub fn warren(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_warren"));
    command
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("WARREN_TARGET_VERSION")
        .env_remove("WARREN_PROFILE")
        .env_remove("WARREN_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/warren-tests")
        .env("WARREN_ENV", EXAMPLE_ENVIRONMENT)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    command
}

/// Runs `warren ARGS` (see [`warren`]) with the passwords of the shop example set.
pub fn run_with_shop_passwords(args: &[&str]) -> Run {
    warren(args).envs(SHOP_PASSWORDS.iter().copied()).run()
}

/// What a run of `warren` left: exit code and output.
#[derive(Debug)]
pub struct Run {
    /// `None` when the process was killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code (showing both outputs if it differs) and passes the run on.
    #[track_caller]
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code,
            Some(code),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs a [`Command`] to completion and captures its output as a [`Run`].
pub trait Capture {
    fn run(&mut self) -> Run;
}

impl Capture for Command {
    #[track_caller]
    fn run(&mut self) -> Run {
        let output = self.output().expect("warren runs");
        Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).expect("warren writes UTF-8 to stdout"),
            stderr: String::from_utf8(output.stderr).expect("warren writes UTF-8 to stderr"),
        }
    }
}

/// Where the definitions corpus lives, from the repository root.
pub const CORPUS_DIR: &str = "tests/definitions/corpus";
/// Where the corpus's vhost-scoped files (`GET /api/definitions/{vhost}`) live.
pub const VHOST_SCOPED_DIR: &str = "tests/definitions/vhost-scoped";

/// The RabbitMQ lines the broker tests run (`tests/broker/node.rs`'s `Version`s),
/// oldest first: what the corpus manifest's `accepted_by` may name.
pub const BROKER_LINES: &[&str] = &["3.10", "4.0", "4.3"];

/// One definitions file of the corpus, as its manifest
/// (`tests/definitions/corpus/expected.json`) describes it.
#[derive(Debug, Clone)]
pub struct CorpusFile {
    /// The environment variables a spec imported from the file reads URI
    /// credentials from, with the values they must hold (the file's own URIs).
    pub credentials: Vec<(String, String)>,
    /// The file name: the manifest's key.
    pub name: String,
    /// Its path from the repository root: in [`CORPUS_DIR`], or in
    /// [`VHOST_SCOPED_DIR`] for a vhost-scoped file.
    pub path: String,
    /// The broker lines (of [`BROKER_LINES`]) seen accepting it with
    /// `POST /api/definitions` (`POST /api/definitions/{vhost}` for a scoped file).
    pub accepted_by: Vec<String>,
    /// For a vhost-scoped file, the vhost it belongs to.
    pub vhost: Option<String>,
    /// The plugins the broker needs to accept it (its shovel and federation
    /// parameters and policy keys).
    pub plugins: Vec<String>,
}

/// The corpus manifest's entries, by file name. Panics unless the manifest and the
/// two folders agree: every `.json` file is listed, every listed file exists, in
/// the folder its `vhost` (or the lack of one) says.
pub fn corpus() -> Vec<CorpusFile> {
    let manifest_path = format!("{CORPUS_DIR}/expected.json");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(&manifest_path))
        .unwrap_or_else(|e| panic!("{manifest_path}: {e}"));
    let manifest: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{manifest_path}: {e}"));
    let entries = manifest
        .as_object()
        .unwrap_or_else(|| panic!("{manifest_path}: not an object"));
    let strings = |name: &str, value: Option<&serde_json::Value>| -> Vec<String> {
        value
            .map(|v| {
                v.as_array()
                    .unwrap_or_else(|| panic!("{manifest_path}: {name}: not a list"))
                    .iter()
                    .map(|s| {
                        s.as_str()
                            .unwrap_or_else(|| panic!("{manifest_path}: {name}: not a string"))
                            .to_string()
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut files = Vec::new();
    for (name, entry) in entries {
        let fields = entry
            .as_object()
            .unwrap_or_else(|| panic!("{manifest_path}: {name}: not an object"));
        for key in fields.keys() {
            assert!(
                ["accepted_by", "vhost", "plugins"].contains(&key.as_str()),
                "{manifest_path}: {name}: unknown key `{key}`"
            );
        }
        let accepted_by = strings(name, fields.get("accepted_by"));
        for version in &accepted_by {
            assert!(
                BROKER_LINES.contains(&version.as_str()),
                "{manifest_path}: {name}: accepted_by names `{version}`, not one of {BROKER_LINES:?}"
            );
        }
        let vhost = fields.get("vhost").map(|v| {
            v.as_str()
                .unwrap_or_else(|| panic!("{manifest_path}: {name}: vhost is not a string"))
                .to_string()
        });
        let dir = if vhost.is_some() {
            VHOST_SCOPED_DIR
        } else {
            CORPUS_DIR
        };
        let path = format!("{dir}/{name}");
        assert!(
            root.join(&path).is_file(),
            "{manifest_path} lists {name}, but {path} does not exist"
        );
        let credentials = warren::definitions_file::read(&root.join(&path), vhost.as_deref(), None)
            .map(|read| warren::import::credential_variables(&read.definitions))
            .unwrap_or_default();
        files.push(CorpusFile {
            credentials,
            name: name.clone(),
            path,
            accepted_by,
            vhost,
            plugins: strings(name, fields.get("plugins")),
        });
    }
    for dir in [CORPUS_DIR, VHOST_SCOPED_DIR] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}")) {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") && name != "expected.json" {
                assert!(
                    files.iter().any(|f| f.path == format!("{dir}/{name}")),
                    "{dir}/{name} is not in {manifest_path}"
                );
            }
        }
    }
    for file in &files {
        assert!(
            !file.accepted_by.is_empty(),
            "{manifest_path}: {}: no broker version accepts it; such a file does not belong in the corpus",
            file.name
        );
        let needed = plugins_needed(&root.join(&file.path));
        assert_eq!(
            file.plugins, needed,
            "{manifest_path}: {}: the plugins listed are not those its parameters and policies need",
            file.name
        );
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    files
}

/// The plugins a definitions file needs: `rabbitmq_shovel` for shovel parameters,
/// `rabbitmq_federation` for federation parameters and policy keys; sorted.
fn plugins_needed(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let definitions: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let list = |section: &str| definitions[section].as_array().cloned().unwrap_or_default();
    let mut needed = std::collections::BTreeSet::new();
    for parameter in list("parameters") {
        match parameter["component"].as_str().unwrap_or_default() {
            "shovel" => needed.insert("rabbitmq_shovel"),
            c if c.starts_with("federation-") => needed.insert("rabbitmq_federation"),
            _ => false,
        };
    }
    for policy in list("policies") {
        if let Some(definition) = policy["definition"].as_object()
            && definition.keys().any(|k| k.starts_with("federation-"))
        {
            needed.insert("rabbitmq_federation");
        }
    }
    needed.into_iter().map(String::from).collect()
}

/// One line saying what a failed `warren` run reported, for a list of failures: its
/// errors (at most two), else the changes and unmanaged objects a plan lists (at most
/// four), else its first line.
pub fn summary(run: &Run) -> String {
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .chain(run.stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("error"))
        .collect();
    let changes: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            ["+ ", "~ ", "- ", "-/+ ", "~> ", "? "]
                .iter()
                .any(|m| l.starts_with(m))
        })
        .collect();
    let (picked, shown) = if errors.is_empty() {
        (changes, 4)
    } else {
        (errors, 2)
    };
    if picked.is_empty() {
        return lines.first().copied().unwrap_or("(no output)").to_string();
    }
    let more = picked.len().saturating_sub(shown);
    let mut text = picked[..picked.len().min(shown)].join("; ");
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text
}

/// Asserts the shape every connection error has: one line, each of `parts`, never
/// `password`, and well before `--timeout` (60 s): nothing of the kind heals by
/// retrying. The bound is 40 s: a name that does not resolve can take the system
/// resolver its own timeout (5 s per attempt, two attempts), a loaded machine adds
/// seconds to a process's start, and an error retried until `--timeout` would still
/// take 20 s more. The exit code is
/// 1 for a URL that does not parse (bad input), else 3: the broker cannot be reached
/// or refused the login (docs/exit-codes.md).
#[track_caller]
pub fn assert_connection_error(
    run: &Run,
    waited: std::time::Duration,
    parts: &[&str],
    password: &str,
) {
    let bad_input =
        run.stderr.contains("invalid --url") || run.stderr.contains("invalid --amqp-url");
    assert_eq!(
        run.code,
        Some(if bad_input { 1 } else { 3 }),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    for part in parts {
        assert!(run.stderr.contains(part), "no `{part}` in: {}", run.stderr);
    }
    assert!(!run.stderr.contains(password), "{}", run.stderr);
    assert!(
        waited < std::time::Duration::from_secs(40),
        "took {waited:?}"
    );
}
