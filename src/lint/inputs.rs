//! Linting what a user hands in: a spec the command read (its load and compile errors
//! reported like findings), in one environment or in each it declares, or a
//! definitions document (a broker's export). Reading the spec is the command's job;
//! everything here owns what it is given and frees it when done.

use std::path::Path;

use super::{Context, run};
use crate::compile;
use crate::model::{Definitions, TargetVersion};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{Rest, SpecFile, Texts, Unread};

/// A spec as the command read it: loaded for its environment, or why it did not load
/// and what of it still reads.
pub type Read = Result<SpecFile, Unread>;

/// A spec read in each environment it declares (`warren lint --all-envs`).
pub enum Environments {
    /// The spec declares no environment: read as it is.
    NoneDeclared(Box<SpecFile>),
    /// Each environment's name, and the spec read for it.
    Each(Vec<(String, Read)>),
}

/// Compiles and lints a spec read from `path` (a file or a directory) for the line
/// `asked` names, else the spec's own ([`SpecFile::target`]); load and compile errors
/// are reported like findings. Returns the texts of its files (for showing lines) and
/// the findings.
pub fn lint_spec(
    path: &Path,
    read: Read,
    asked: Option<TargetVersion>,
) -> (Texts, Vec<Diagnostic>) {
    let checked = check_spec(path, read, asked);
    (checked.texts, checked.diagnostics)
}

/// Lints a spec in each environment it declares (`warren lint --all-envs`: a pull
/// request changes every environment at once). A finding made in several
/// environments is reported once, naming the environments it is in unless it is in
/// all of them; a spec without environments is linted as it is.
pub fn lint_spec_in_every_environment(
    path: &Path,
    environments: Environments,
    asked: Option<TargetVersion>,
) -> (Texts, Vec<Diagnostic>) {
    let each = match environments {
        Environments::NoneDeclared(file) => return lint_spec(path, Ok(*file), asked),
        Environments::Each(each) => each,
    };
    let count = each.len();
    let mut texts = Texts::default();
    // Each finding with the environments it was made in, in the order first made.
    let mut found: Vec<(Diagnostic, Vec<String>)> = Vec::new();
    for (environment, read) in each {
        // Each environment's spec and compiled definitions are freed before the next;
        // each is checked for its own line (an environment may override `rabbitmq`).
        let checked = check_spec(path, read, asked);
        for (file, text) in checked.texts.0 {
            if !texts.0.iter().any(|(known, _)| *known == file) {
                texts.0.push((file, text));
            }
        }
        for diagnostic in checked.diagnostics {
            match found
                .iter_mut()
                .find(|(seen, _)| same_finding(seen, &diagnostic))
            {
                Some((_, ins)) => ins.push(environment.clone()),
                None => found.push((diagnostic, vec![environment.clone()])),
            }
        }
    }
    let diagnostics = found
        .into_iter()
        .map(|(mut diagnostic, ins)| {
            if ins.len() < count {
                let listed: Vec<String> = ins.iter().map(|e| format!("`{e}`")).collect();
                let noun = if ins.len() == 1 {
                    "environment"
                } else {
                    "environments"
                };
                diagnostic.message =
                    format!("{} (in {noun} {})", diagnostic.message, listed.join(", "));
            }
            diagnostic
        })
        .collect();
    (texts, diagnostics)
}

/// Whether two findings of different environments are the same finding: the same
/// rule, message, file and place.
fn same_finding(a: &Diagnostic, b: &Diagnostic) -> bool {
    a.code == b.code
        && a.severity == b.severity
        && a.message == b.message
        && a.file == b.file
        && a.location == b.location
}

/// What `warren validate` reports about a spec file.
pub struct Validation {
    /// The texts of the spec's files, for showing lines.
    pub texts: Texts,
    /// What to show: load and compile errors and warnings, and the findings of
    /// rules at the `deny` level (a spec that fails `warren lint` is not valid).
    pub shown: Vec<Diagnostic>,
    /// Findings of rules at the `warn` level, left to `warren lint` to show.
    pub lint_warnings: usize,
    /// Objects the spec compiles to; `None` when it does not compile.
    pub objects: Option<usize>,
    /// The line it was checked for.
    pub target: TargetVersion,
}

impl Validation {
    /// Whether the spec is valid: it compiles and no rule at the `deny` level fails.
    pub fn is_valid(&self) -> bool {
        self.objects.is_some() && !self.shown.iter().any(Diagnostic::is_error)
    }
}

/// Validates a spec read from `path`: it must compile for the line `asked` names, else
/// the spec's own, and pass every rule at the `deny` level, the same gate `warren
/// lint` applies, so `validate` never calls valid what `lint` fails. Needs no secrets.
pub fn validate_spec(path: &Path, read: Read, asked: Option<TargetVersion>) -> Validation {
    let checked = check_spec(path, read, asked);
    let (lint_warnings, shown): (Vec<Diagnostic>, Vec<Diagnostic>) = checked
        .diagnostics
        .into_iter()
        .partition(|d| !d.is_error() && super::rule(d.code).is_some());
    Validation {
        texts: checked.texts,
        shown,
        lint_warnings: lint_warnings.len(),
        objects: checked.objects,
        target: checked.target,
    }
}

/// A spec file loaded, compiled and linted.
struct Checked {
    texts: Texts,
    diagnostics: Vec<Diagnostic>,
    objects: Option<usize>,
    target: TargetVersion,
}

fn check_spec(path: &Path, read: Read, asked: Option<TargetVersion>) -> Checked {
    let file = match read {
        Ok(file) => file,
        Err(Unread {
            mut diagnostics,
            rest,
        }) => {
            let target = rest
                .as_ref()
                .map_or(asked.unwrap_or(TargetVersion::DEFAULT), |rest| {
                    rest.file.target(asked)
                });
            if let Some(rest) = rest {
                diagnostics.extend(compile_errors_of_the_rest(*rest, target));
                diagnostics.sort_by_key(|d| (d.file.clone(), d.location));
            }
            return Checked {
                texts: Texts::for_report(path, &diagnostics),
                diagnostics,
                objects: None,
                target,
            };
        }
    };
    let target = file.target(asked);
    let options = compile::Options {
        target,
        // Linting needs no secrets.
        secrets: None,
    };
    let mut objects = None;
    let diagnostics = match compile::compile(&file, &options) {
        Err(diagnostics) => diagnostics,
        Ok(compiled) => {
            objects = Some(compiled.definitions.object_count());
            let context = Context::for_spec(&file.spec, &compiled, target);
            let mut found = compiled.warnings.clone();
            found.extend(run(&context));
            drop(context);
            compile::resolve_locations(&file, found)
        }
    };
    Checked {
        texts: file.texts(),
        diagnostics,
        objects,
        target,
    }
}

/// The compiler's errors about what still reads of a spec the parser refused entries
/// of, so that one run shows every mistake. What the compiler finds missing or wrong
/// where an entry was set aside is the setting aside's doing, and left out: an error
/// at a set-aside entry, inside it, or on the mapping that held it.
fn compile_errors_of_the_rest(rest: Rest, target: TargetVersion) -> Vec<Diagnostic> {
    let options = compile::Options {
        target,
        secrets: None,
    };
    let Err(found) = compile::compile(&rest.file, &options) else {
        return Vec::new();
    };
    let caused_by_setting_aside = |diagnostic: &Diagnostic| {
        diagnostic.path.as_ref().is_some_and(|path| {
            rest.set_aside
                .iter()
                .any(|aside| path.starts_with(aside) || aside.parent().as_ref() == Some(path))
        })
    };
    found
        .into_iter()
        .filter(|d| d.is_error() && !caused_by_setting_aside(d))
        .collect()
}

/// Lints a definitions file's content for `target` (see
/// [`crate::model::version::CheckedVersion`] for the version a file is checked for).
pub fn lint_definitions(definitions: &Definitions, target: TargetVersion) -> Vec<Diagnostic> {
    let context = Context::for_definitions(definitions, target);
    let mut diagnostics = run(&context);
    diagnostics.sort_by(|a, b| (a.severity, &a.message).cmp(&(b.severity, &b.message)));
    diagnostics
}
