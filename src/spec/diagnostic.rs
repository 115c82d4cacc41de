//! Findings about a spec: what is wrong, where, and how to fix it.
//!
//! A diagnostic is a [`Finding`] (`model/finding.rs`), the one type every report of
//! warren's shares: reading and compiling a spec makes them, and `lint` and `validate`
//! add the findings of the lint rules to them. What is here is what only a spec's
//! diagnostics need: how the things an inherited setting affects are merged (how they
//! are listed is `render::diagnostics::affects_text`'s).

pub use crate::model::finding::{Affected, Finding, Severity};

use super::SpecPath;

/// A finding about a spec, as the spec's reader and compiler call it.
pub type Diagnostic = Finding;

/// Merges diagnostics that say the same thing at the same place and differ only in
/// what they affect: an inherited setting is checked once per consumer that inherits
/// it, and reported once. Keeps the order of first appearance.
pub fn merge_affected(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut merged: Vec<Diagnostic> = Vec::with_capacity(diagnostics.len());
    let mut index: std::collections::HashMap<
        (Severity, &'static str, String, Option<SpecPath>),
        usize,
    > = std::collections::HashMap::new();
    for diagnostic in diagnostics {
        if diagnostic.affects.is_empty() {
            merged.push(diagnostic);
            continue;
        }
        let key = (
            diagnostic.severity,
            diagnostic.code,
            diagnostic.message.clone(),
            diagnostic.path.clone(),
        );
        match index.get(&key) {
            Some(&at) => {
                for affected in diagnostic.affects {
                    if !merged[at]
                        .affects
                        .iter()
                        .any(|known| known.name == affected.name)
                    {
                        merged[at].affects.push(affected);
                    }
                }
            }
            None => {
                index.insert(key, merged.len());
                merged.push(diagnostic);
            }
        }
    }
    merged
}
