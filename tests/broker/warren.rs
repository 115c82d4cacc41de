//! The words broker tests run warren in: `node.apply(spec)`, `node.plan(spec)`,
//! `node.plan_json(spec)`, each a [`Warren`] that more flags (`.with(&[..])`) or
//! environment (`.envs(..)`, `.env_remove(..)`) or another management URL (`.at(..)`,
//! a proxy) can be added to before it runs
//! (`.run()`, `.expect(code)`) or is handed on as a [`Command`] (`.command()`, for a
//! run in the background). Any other command line is `node.cli(&[..])`, the same
//! builder, or `node.warren(&[..])`, the [`Command`] itself.

use std::process::Command;

use crate::node::Node;
use crate::support::{Capture, Run};

/// A `warren` command line against one node, not yet run.
#[must_use = "a Warren does nothing until it is run"]
pub struct Warren<'n> {
    node: &'n Node,
    args: Vec<String>,
    /// The management URL, when not the node's own (a proxy in front of it).
    url: Option<String>,
    /// Variables set (`Some`) or removed (`None`), in order.
    env: Vec<(String, Option<String>)>,
}

impl Node {
    /// `warren ARGS` against this node, as a [`Warren`] (see [`Node::warren`] for the
    /// [`Command`]).
    pub fn cli(&self, args: &[&str]) -> Warren<'_> {
        Warren::new(self, args)
    }

    /// `warren apply SPEC --auto-approve` against this node.
    pub fn apply(&self, spec: &str) -> Warren<'_> {
        Warren::new(self, &["apply", spec, "--auto-approve"])
    }

    /// `warren plan SPEC` against this node.
    pub fn plan(&self, spec: &str) -> Warren<'_> {
        Warren::new(self, &["plan", spec])
    }

    /// `warren plan SPEC --format json` against this node.
    pub fn plan_json(&self, spec: &str) -> Warren<'_> {
        Warren::new(self, &["plan", spec, "--format", "json"])
    }
}

impl<'n> Warren<'n> {
    fn new(node: &'n Node, args: &[&str]) -> Warren<'n> {
        Warren {
            node,
            args: args.iter().map(|a| a.to_string()).collect(),
            url: None,
            env: Vec::new(),
        }
    }

    /// With more arguments, after those already given.
    pub fn with(mut self, args: &[&str]) -> Warren<'n> {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Through `url` (a proxy in front of the node's management port) instead of the
    /// node's own management URL.
    pub fn at(mut self, url: &str) -> Warren<'n> {
        self.url = Some(url.to_string());
        self
    }

    /// With these environment variables set.
    pub fn envs(mut self, vars: &[(&str, &str)]) -> Warren<'n> {
        self.env.extend(
            vars.iter()
                .map(|(key, value)| (key.to_string(), Some(value.to_string()))),
        );
        self
    }

    /// Without the environment variable `key` (which [`crate::support::warren`] may set).
    pub fn env_remove(mut self, key: &str) -> Warren<'n> {
        self.env.push((key.to_string(), None));
        self
    }

    /// The command: [`Node::warren`] with the arguments, then the environment.
    pub fn command(&self) -> Command {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let url = self.url.as_deref().unwrap_or(&self.node.mgmt_url);
        let mut command = self.node.warren_at(url, &args);
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command
    }

    /// Runs it to completion.
    #[track_caller]
    pub fn run(&self) -> Run {
        self.command().run()
    }

    /// Runs it and asserts its exit code (see [`Run::expect`]).
    #[track_caller]
    pub fn expect(&self, code: i32) -> Run {
        self.run().expect(code)
    }
}
