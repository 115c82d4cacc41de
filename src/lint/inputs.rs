//! Linting what a user hands in: a spec file (compile errors reported like findings)
//! or a definitions document (a broker's export).

use std::path::Path;

use super::{Context, run};
use crate::compile;
use crate::model::{Definitions, TargetVersion};
use crate::spec::diagnostic::Diagnostic;

/// Loads, compiles and lints a spec file; load and compile errors are reported like
/// findings. Returns the source (for showing lines) and the findings.
pub fn lint_spec_file(path: &Path, target: TargetVersion) -> (Option<String>, Vec<Diagnostic>) {
    let file = match crate::spec::load_file(path) {
        Ok(file) => file,
        Err(diagnostics) => return (crate::spec::load::source_for_report(path), diagnostics),
    };
    let options = compile::Options {
        target,
        // Linting needs no secrets.
        secrets: None,
    };
    let diagnostics = match compile::compile(&file, &options) {
        Err(diagnostics) => diagnostics,
        Ok(compiled) => {
            let context = Context::for_spec(&file.spec, &compiled, target);
            let mut found = compiled.warnings.clone();
            found.extend(run(&context));
            drop(context);
            let diagnostics = compile::resolve_locations(&file, found);
            // `warren lint` exits once the findings are printed: the system takes the
            // memory back at once, while freeing a large spec's ~1M small allocations
            // one by one would cost a tenth of the run.
            std::mem::forget(compiled);
            diagnostics
        }
    };
    (Some(file.source), diagnostics)
}

/// Lints a definitions file's content for `target` (see
/// [`crate::model::version::Chosen`] for the version a file is checked for).
pub fn lint_definitions(definitions: &Definitions, target: TargetVersion) -> Vec<Diagnostic> {
    let context = Context::for_definitions(definitions, target);
    let mut diagnostics = run(&context);
    diagnostics.sort_by(|a, b| (a.severity, &a.message).cmp(&(b.severity, &b.message)));
    diagnostics
}
