//! warren's integration tests that need no RabbitMQ: the binary's exit codes and
//! outputs, the bad-spec corpus, `import` round trips, the lint rules and the layering
//! of `src/`.
//!
//! Run them alone with `cargo test --test offline`; the tests against real brokers are
//! in `tests/broker/`.

#[path = "../support/mod.rs"]
mod support;

mod bad_specs;
mod ci_script;
mod cli;
mod connect;
mod docs;
mod docs_truth;
mod environments;
mod exit_codes;
mod first_run;
mod fuzz;
mod graph;
mod import;
mod k8s;
mod layers;
mod lint_rules;
mod multi_file;
mod plan_markdown;
mod profiles;
mod rabbitmq_line;
mod refused;
mod replay;
mod secrets;
mod show;
mod status;
mod trace;
mod upgrade_check;

use std::path::Path;

/// insta settings for snapshots kept in `DIR` (relative to `tests/`), named exactly
/// as each assertion says.
///
/// By default insta keeps snapshots in `snapshots/` beside the asserting file and
/// prefixes their names with the module path. These tests were once binaries of their
/// own at the top of `tests/`, and their snapshot files keep the names they had then
/// (`tests/snapshots/cli__compile@ladder@3.10.snap`, `tests/snapshots/rule@...`,
/// `tests/snapshots/bad_specs/...`): the directory is fixed here and assertions spell
/// out any prefix.
fn snapshot_settings(dir: &str) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(dir),
    );
    settings.set_prepend_module_to_snapshot(false);
    settings
}
