//! `warren lint` and `warren rules`.

use std::io::Write;
use std::path::Path;

use super::{EXIT_ERROR, EXIT_OK, ErrorLog, fail};
use crate::cli::{EnvArg, LintFormat};
use crate::lint::{self, Level, RULES};
use crate::model::version::TargetVersion;
use crate::render;
use crate::spec::Texts;

/// Which environments of a spec `warren lint` reads: the one `--env` names, or all.
pub struct Environments {
    /// `--env` / `WARREN_ENV`.
    pub env: EnvArg,
    /// `--all-envs`.
    pub all_envs: bool,
}

/// `warren lint SPEC | --definitions FILE`.
#[allow(clippy::too_many_arguments)]
pub fn lint(
    spec: Option<&Path>,
    environments: &Environments,
    definitions: Option<&Path>,
    vhost: Option<&str>,
    format: LintFormat,
    deny_warnings: bool,
    target: Option<TargetVersion>,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let (file, texts, diagnostics) = match (spec, definitions) {
        (Some(path), _) => {
            let target = target.unwrap_or(TargetVersion::DEFAULT);
            let (texts, diagnostics) = if environments.all_envs {
                lint::lint_spec_file_in_every_environment(path, target)
            } else {
                lint::lint_spec_file(path, super::chosen(&environments.env).as_choice(), target)
            };
            (path, texts, diagnostics)
        }
        (None, Some(path)) => match super::read_definitions(path, vhost, target, stderr) {
            Ok(read) => (
                path,
                Texts::default(),
                lint::lint_definitions(&read.definitions, read.target.target),
            ),
            Err(message) => return fail(stderr, &message),
        },
        (None, None) => return fail(stderr, "give a spec file or --definitions FILE"),
    };
    let written = match format {
        LintFormat::Human => {
            let result = render::diagnostics::render_with(stdout, file, &texts, &diagnostics, "");
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            if errors == 0 {
                let warnings = diagnostics.len();
                let _ = writeln!(
                    stdout,
                    "{}: {}",
                    file.display(),
                    if warnings == 0 {
                        "no problems found".to_string()
                    } else {
                        crate::text::count(warnings, "warning")
                    }
                );
            }
            result
        }
        LintFormat::Github => render::lint::github(stdout, file, &diagnostics),
        LintFormat::Json => writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&render::lint::json_document(file, &diagnostics))
                .expect("JSON")
        ),
        LintFormat::Sarif => writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&render::lint::sarif_document(file, &diagnostics))
                .expect("JSON")
        ),
    };
    if written.is_err() {
        return EXIT_ERROR;
    }
    let failing = diagnostics.iter().any(|d| d.is_error() || deny_warnings);
    if failing { EXIT_ERROR } else { EXIT_OK }
}

/// `warren rules [ID]`.
pub fn rules(id: Option<&str>, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> u8 {
    let level = |level: Level| match level {
        Level::Deny => "error",
        Level::Warn => "warning",
        Level::Allow => "off",
    };
    match id {
        None => {
            let width = RULES.iter().map(|r| r.id.len()).max().unwrap_or(0);
            for rule in RULES {
                let _ = writeln!(
                    stdout,
                    "{:width$}  {:7}  {}",
                    rule.id,
                    level(rule.level),
                    rule.summary
                );
            }
            let _ = writeln!(
                stdout,
                "\n`warren rules ID` explains a rule with a bad and a good example."
            );
            EXIT_OK
        }
        Some(id) => match lint::rule(id) {
            Some(rule) => {
                let _ = writeln!(stdout, "{} ({} by default)\n", rule.id, level(rule.level));
                let _ = writeln!(stdout, "{}\n", rule.summary);
                let _ = writeln!(stdout, "{}\n", rule.explanation);
                let _ = writeln!(stdout, "Reported:\n\n{}\n", indent(rule.bad));
                let _ = writeln!(stdout, "Fixed:\n\n{}", indent(rule.good));
                let _ = writeln!(
                    stdout,
                    "Turn it off for one object with `lint: {{ allow: [{0}] }}` on it, or for the whole spec with a top-level `lint: {{ allow: [{0}] }}`.",
                    rule.id
                );
                EXIT_OK
            }
            None => {
                let ids: Vec<String> = RULES.iter().map(|r| r.id.to_string()).collect();
                let hint = crate::suggest::closest(id, &ids)
                    .map(|best| format!("; did you mean `{best}`?"))
                    .unwrap_or_default();
                let _ = writeln!(stderr, "error: no lint rule `{id}`{hint}");
                EXIT_ERROR
            }
        },
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}
