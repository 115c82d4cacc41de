//! The values a spec takes from outside itself: users' passwords (`password: { env }`
//! or `{ file }`) and `{ env: VARIABLE }` inside runtime parameter values (a shovel's
//! URI with credentials).
//!
//! Reading them is the compiler's only contact with the environment and the file
//! system, and it happens here, before compiling: [`read`] collects every value and
//! every problem, and [`super::compile`] uses the result without any I/O of its own.
//! Commands that need no secrets (`validate`, `lint`) skip this step.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::model::is_own_kind_component;
use crate::model::password::Passwords;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{Spec, SpecFile, SpecPath};

/// Everything read from outside the spec. Its `Debug` shows names and counts only.
#[derive(Clone, Default)]
pub struct Secrets {
    /// Clear passwords of the users whose `password` source could be read.
    pub passwords: Passwords,
    /// Values of the environment variables that parameter values refer to (set and
    /// non-empty ones only).
    pub variables: BTreeMap<String, String>,
    /// What could not be read, each at the spec path that refers to it.
    pub problems: Vec<Diagnostic>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("passwords", &self.passwords)
            .field("variables", &self.variables.keys().collect::<Vec<_>>())
            .field("problems", &self.problems)
            .finish()
    }
}

/// What a password that cannot be read is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingPassword {
    /// An error: the command needs it (`apply`, `export`, `compile`).
    Error,
    /// Unknown, with a warning: `plan` and `diff` do not compare it, so that a
    /// pull-request job can plan without the applications' passwords. No plan with
    /// an unknown password is applied.
    Unknown,
}

/// Reads every secret a spec refers to: environment variables, and password files
/// relative to the spec file's directory (a spec directory's own). A password that cannot be read is an error.
pub fn read(file: &SpecFile) -> Secrets {
    read_with(file, MissingPassword::Error)
}

/// Reads every secret a spec refers to, a password that cannot be read being what
/// `missing` says.
pub fn read_with(file: &SpecFile, missing: MissingPassword) -> Secrets {
    let base_dir = file.base_dir();
    let mut secrets = Secrets::default();
    read_passwords(&file.spec, base_dir, missing, &mut secrets);
    read_parameter_variables(&file.spec, &mut secrets);
    secrets
}

/// The passwords of users whose `password` source is well formed (the compiler reports
/// the malformed ones).
fn read_passwords(spec: &Spec, base_dir: &Path, missing: MissingPassword, secrets: &mut Secrets) {
    for (name, user) in &spec.users {
        let path = SpecPath::root().key("users").key(name);
        let Some(source) = &user.password else {
            continue;
        };
        if name.is_empty() || user.password_hash.is_some() {
            continue;
        }
        let source_path = path.key("password");
        let secret = match (&source.env, &source.file) {
            (Some(variable), None) => match std::env::var(variable) {
                Ok(value) if !value.is_empty() => value,
                _ if missing == MissingPassword::Unknown => {
                    unknown(
                        secrets,
                        name,
                        format!("environment variable `{variable}`"),
                        source_path.key("env"),
                    );
                    continue;
                }
                _ => {
                    secrets.problems.push(
                        Diagnostic::error(
                            "missing-secret",
                            format!("environment variable `{variable}` (the password of user `{name}`) is not set"),
                        )
                        .at(source_path.key("env"))
                        .help(format!("export {variable}=… before running warren")),
                    );
                    continue;
                }
            },
            (None, Some(file)) => match std::fs::read_to_string(base_dir.join(file)) {
                Ok(text) => text.trim_end_matches(['\n', '\r']).to_string(),
                Err(_) if missing == MissingPassword::Unknown => {
                    unknown(
                        secrets,
                        name,
                        format!("password file `{file}`"),
                        source_path.key("file"),
                    );
                    continue;
                }
                Err(err) => {
                    secrets.problems.push(
                        Diagnostic::error(
                            "missing-secret",
                            format!(
                                "cannot read the password file `{file}` of user `{name}`: {err}"
                            ),
                        )
                        .at(source_path.key("file")),
                    );
                    continue;
                }
            },
            _ => continue,
        };
        secrets.passwords.clear.insert(name.clone(), secret);
    }
}

/// Records a password not known while planning, and warns where the spec names its
/// source. The warning names the variable or file, never a value.
fn unknown(secrets: &mut Secrets, user: &str, source: String, at: SpecPath) {
    secrets.problems.push(
        Diagnostic::warning(
            "unknown-secret",
            format!(
                "the password of user `{user}` is unknown: {source} is not available here, so the plan does not compare it; `warren apply` needs it"
            ),
        )
        .at(at),
    );
    secrets.passwords.unknown.insert(user.to_string(), source);
}

/// Every `{ env: VARIABLE }` inside the runtime parameter values of every vhost.
fn read_parameter_variables(spec: &Spec, secrets: &mut Secrets) {
    for (vhost_name, vhost) in &spec.vhosts {
        let vhost_path = SpecPath::root().key("vhosts").key(vhost_name);
        for (component, parameters) in &vhost.parameters {
            if is_own_kind_component(component) {
                continue;
            }
            for (name, value) in parameters {
                let path = vhost_path.key("parameters").key(component).key(name);
                read_variables(value, &path, secrets);
            }
        }
    }
}

fn read_variables(value: &Value, path: &SpecPath, secrets: &mut Secrets) {
    if let Some(variable) = env_reference(value) {
        match std::env::var(variable) {
            Ok(text) if !text.is_empty() => {
                secrets.variables.insert(variable.to_string(), text);
            }
            _ => secrets.problems.push(
                Diagnostic::error(
                    "missing-secret",
                    format!("environment variable `{variable}` is not set"),
                )
                .at(path.key("env"))
                .help(format!("export {variable}=… before running warren")),
            ),
        }
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                read_variables(inner, &path.key(key.clone()), secrets);
            }
        }
        Value::Array(items) => {
            for (index, inner) in items.iter().enumerate() {
                read_variables(inner, &path.index(index), secrets);
            }
        }
        _ => {}
    }
}

/// The variable a `{ env: VARIABLE }` value refers to.
pub(crate) fn env_reference(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get("env")?.as_str(),
        _ => None,
    }
}
