//! What both integration-test binaries (`tests/offline/`, `tests/broker/`) share: the
//! one way they run the `warren` binary.
//!
//! Each binary includes this file with `#[path = "../support/mod.rs"] mod support;`.
//! Everything here is used by both; helpers that only broker tests need (nodes, the
//! AMQP client, `per_version!`) live in `tests/broker/` and are not compiled into the
//! offline binary.

use std::process::Command;

/// The passwords `examples/shop.yaml` reads from the environment.
pub const SHOP_PASSWORDS: &[(&str, &str)] = &[
    ("SHOP_ORDERS_PASSWORD", "orders-pw"),
    ("SHOP_PAYMENTS_PASSWORD", "payments-pw"),
    ("SHOP_EMAIL_PASSWORD", "email-pw"),
    ("SHOP_OPS_PASSWORD", "ops-pw"),
];

/// `warren ARGS`, ready to run: from the repository root (relative paths such as
/// `examples/ladder.yaml` resolve there), with `NO_COLOR` set and without a
/// `WARREN_TARGET_VERSION` of the developer's shell.
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
