//! What a command reads before its one library call: the broker client, the
//! environment chosen, a spec (for the command, or for checking it) and a definitions
//! file. The one place that builds a broker client, loads a spec for a command and
//! reads `WARREN_ENV`.

use std::path::Path;

use super::diagnostics::{Effect, unloaded};
use super::result::CommandError;
use super::streams::ErrorLog;
use crate::broker::{BrokerError, Client};
use crate::cli::{BrokerArgs, EnvArg};
use crate::model::TargetVersion;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::environment::Choice;
use crate::spec::{self, SpecFile};

/// The broker client for the connection flags and variables, the profile and the
/// defaults, as [`crate::config::resolve`] weighs them. A profiles file that does not
/// read, an unknown profile or a password its profile cannot give is bad input.
pub(super) fn client(args: &BrokerArgs) -> Result<Client, BrokerError> {
    let resolved = crate::config::resolve(&args.given, &environment)
        .map_err(|err| BrokerError::Setup(err.into()))?;
    Client::new(resolved.endpoint()?)
}

/// The process's environment, for [`crate::config::resolve`].
pub(super) fn environment(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The environment a command reads its spec for: `--env`, else `WARREN_ENV` (what
/// [`Choice`] borrows from).
pub(super) struct EnvironmentChoice {
    flag: Option<String>,
    variable: Option<String>,
}

impl EnvironmentChoice {
    pub(super) fn as_choice(&self) -> Choice<'_> {
        Choice::of(self.flag.as_deref(), self.variable.as_deref())
    }
}

/// The environment `--env` or `WARREN_ENV` chose (the one place that reads the
/// variable).
pub(super) fn environment_choice(environment: &EnvArg) -> EnvironmentChoice {
    EnvironmentChoice {
        flag: environment.env.clone(),
        variable: std::env::var("WARREN_ENV").ok(),
    }
}

/// Loads a spec (a file or a directory) for the environment chosen; when it does not
/// load, the error that says its diagnostics.
pub(super) fn load_spec(
    path: &Path,
    environment: &EnvArg,
    effect: Effect,
) -> Result<SpecFile, CommandError> {
    spec::load(path, environment_choice(environment).as_choice())
        .map_err(|found| unloaded(path, &found, effect))
}

/// Reads a spec for a command that reports its load errors itself, as findings
/// (`lint`, `validate`): the spec for the environment chosen, or why it did not load.
pub(super) fn read_spec(path: &Path, environment: &EnvArg) -> crate::lint::Read {
    spec::load_for_checking(path, environment_choice(environment).as_choice())
}

/// Reads a spec in each environment it declares (`lint --all-envs`): the names and
/// the spec read for each, or the spec as it is when it declares none (`Ok` with no
/// names), or why it did not load.
pub(super) fn read_spec_in_every_environment(
    path: &Path,
) -> Result<crate::lint::Environments, Vec<Diagnostic>> {
    let file = spec::load_file(path)?;
    let names = file.environment_names();
    if names.is_empty() {
        return file
            .for_environment(Choice::None)
            .map(|file| crate::lint::Environments::NoneDeclared(Box::new(file)));
    }
    Ok(crate::lint::Environments::Each(
        names
            .into_iter()
            .map(|name| {
                let read = file
                    .clone()
                    .for_environment(Choice::Flag(&name))
                    .map_err(spec::Unread::from);
                (name, read)
            })
            .collect(),
    ))
}

/// Reads the definitions file of `diff --against` or `lint --definitions`; `vhost`
/// names the vhost of a vhost-scoped file and is refused for a whole broker's file
/// (where it would be silently meaningless).
pub(super) fn read_definitions(
    path: &Path,
    vhost: Option<&str>,
    target: Option<TargetVersion>,
    stderr: &mut dyn ErrorLog,
) -> Result<crate::definitions_file::Read, String> {
    let read = crate::definitions_file::read(path, vhost, target)?;
    if let (Some(vhost), None) = (vhost, &read.scoped_to) {
        return Err(format!(
            "{}: --vhost {vhost} is for a vhost-scoped file, and this file holds a whole broker's definitions (every object names its vhost)",
            path.display()
        ));
    }
    let _ = writeln!(stderr, "note: {} {}", path.display(), read.target);
    for note in &read.notes {
        let _ = writeln!(stderr, "note: {note}");
    }
    Ok(read)
}
