//! warren's integration tests against real RabbitMQ 3.10, 4.0 and 4.3 nodes: nodes
//! booted from exported definitions, `plan`/`apply`/`diff`/`import` against live
//! brokers, and the retry topologies exercised with a real AMQP client.
//!
//! The brokers are installed by `scripts/install-brokers` (run as root). A broker that
//! is missing fails the tests that need it; nothing here is ever skipped. Run these
//! tests alone with `cargo test --test broker`; the tests that need no broker are in
//! `tests/offline/`.
//!
//! Most scenarios share one node per version for the whole binary (`Node::shared`) and
//! isolate themselves by vhost and spec name; tests that need a node of their own (to
//! boot it from definitions, or because examples share a vhost) start one.

#[path = "../support/mod.rs"]
mod support;

/// Turns scenarios, functions taking a [`node::Version`], into one test per broker
/// version they run on. Every scenario runs on the oldest and the newest line the
/// tests install, 3.10 and 4.3; the scenarios listed after `also_on_4_0:` run on 4.0
/// as well. In the calling module, `per_version!(a, b; also_on_4_0: c)` defines the
/// tests `on_3_10::{a, b, c}`, `on_4_0::c` and `on_4_3::{a, b, c}`;
/// `per_version!(also_on_4_0: c)` is a module whose every scenario runs on 4.0 too.
///
/// Why not every scenario on every line: the suite's time (docs/development.md). The
/// 4.0 set is what changed between the lines and what the product's guards lean on:
/// policies and queue arguments, the guards of deletes and replaces, quorum queues,
/// the locks, and definitions (export, import, boot). A scenario that is not about
/// one of them runs on both ends of the range, which is where a difference shows.
///
/// With `WARREN_BROKER_TEST_TIMES` set to a file, each test appends a line to it:
/// its seconds and its name, e.g. `12.3 locks::on_4_3::a_killed_apply_frees_its_locks_at_once`
/// (how the figures in docs/development.md are measured).
///
/// Defined before the modules below so that they can all use it.
macro_rules! per_version {
    (also_on_4_0: $($also:ident),* $(,)?) => {
        per_version!(; also_on_4_0: $($also),*);
    };
    ($($scenario:ident),* $(,)? $(; also_on_4_0: $($also:ident),* $(,)?)?) => {
        mod on_3_10 {
            $(#[test] fn $scenario() {
                $crate::run(module_path!(), stringify!($scenario), $crate::node::Version::V3_10, super::$scenario)
            })*
            $($(#[test] fn $also() {
                $crate::run(module_path!(), stringify!($also), $crate::node::Version::V3_10, super::$also)
            })*)?
        }
        mod on_4_0 {
            $($(#[test] fn $also() {
                $crate::run(module_path!(), stringify!($also), $crate::node::Version::V4_0, super::$also)
            })*)?
        }
        mod on_4_3 {
            $(#[test] fn $scenario() {
                $crate::run(module_path!(), stringify!($scenario), $crate::node::Version::V4_3, super::$scenario)
            })*
            $($(#[test] fn $also() {
                $crate::run(module_path!(), stringify!($also), $crate::node::Version::V4_3, super::$also)
            })*)?
        }
    };
}

/// Runs `body`, the whole of test `test`: when it fails, says so on the process's
/// standard error at once, with its message, and fails on. The harness prints a
/// failure's output only when the whole binary is done, an hour into a loaded run, and
/// never when the run is stopped before that.
fn saying_failures(test: &str, body: impl FnOnce() + std::panic::UnwindSafe) {
    let started = std::time::Instant::now();
    if let Err(panic) = std::panic::catch_unwind(body) {
        use std::io::Write as _;
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        // Straight to the file descriptor: the harness captures `eprintln!`.
        let _ = std::io::stderr().write_all(
            format!(
                "warren-test: {test} failed after {:.0} s: {message}\n",
                started.elapsed().as_secs_f64()
            )
            .as_bytes(),
        );
        std::panic::resume_unwind(panic);
    }
}

/// Runs one scenario of [`per_version!`] on `version`, and records its time when
/// `WARREN_BROKER_TEST_TIMES` names a file (a line `SECONDS MODULE::NAME`, appended
/// when the scenario returns: a failed one is not timed).
/// A scenario that fails says so at once ([`saying_failures`]).
fn run(module: &str, name: &str, version: node::Version, scenario: fn(node::Version)) {
    let started = std::time::Instant::now();
    let test = module.split_once("::").map_or(module, |(_, rest)| rest);
    saying_failures(&format!("{test}::{name}"), || scenario(version));
    if let Some(path) = std::env::var_os("WARREN_BROKER_TEST_TIMES") {
        use std::io::Write as _;
        let line = format!("{:.1} {test}::{name}\n", started.elapsed().as_secs_f64());
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path);
        // One write per line, so that lines of tests running at once do not mix.
        if let Err(e) = file.and_then(|mut f| f.write_all(line.as_bytes())) {
            panic!("cannot record the time in {}: {e}", path.display());
        }
    }
}

mod amqp;
mod amqp_proxy;
mod background;
mod http_tap;
mod import_filter;
mod node;
mod report;
mod spec;
mod warren;

mod adopt;
mod apply_safety;
mod boot_definitions;
mod ci_script;
mod cluster;
mod connect;
mod corpus;
mod crash;
mod demo;
mod environments;
mod faults;
mod fencing;
mod import;
mod locks;
mod migrate;
mod name_endings;
mod native_retry;
mod ownership;
mod permissions;
mod plan_apply;
mod policy_truth;
mod progress;
mod pull_request;
mod record_parts;
mod refusals;
mod reject_only;
mod replay;
mod reserved_names;
mod role_hazards;

mod retry_behaviour;
mod secrets;
mod signals;
mod smoke;
mod status;
mod status_inspect;
mod trace;
mod upgrade_check;
