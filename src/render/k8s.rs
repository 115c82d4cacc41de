//! `warren export --format k8s`: the Topology Operator resources as YAML (one
//! document each, `---` before every one), the refusals, and the Secrets to create.

use std::fmt::Write as _;

use crate::k8s::{Manifests, Unexpressible};

/// The first line of every file: where it comes from, so nobody edits it by hand.
pub const HEADER: &str = "# RabbitMQ Messaging Topology Operator resources written by `warren export --format k8s`.\n# Edit the warren spec and export again instead of editing this file.\n";

/// The resources as one YAML text. Nothing in it depends on the time or the machine,
/// so two exports of one spec are the same bytes (what a GitOps diff needs).
pub fn yaml(manifests: &Manifests) -> Result<String, String> {
    let mut text = String::from(HEADER);
    for resource in &manifests.resources {
        let document = serde_saphyr::to_string(&resource.document)
            .map_err(|e| format!("{} {}: {e}", resource.kind, resource.name))?;
        text.push_str("---\n");
        text.push_str(&document);
        if !document.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(text)
}

/// Why nothing was written: every refusal, and what to do about them.
pub fn refusals(refusals: &[Unexpressible]) -> String {
    let mut text = String::new();
    for refusal in refusals {
        let _ = writeln!(text, "error: {refusal}");
    }
    let _ = writeln!(
        text,
        "the RabbitMQ Messaging Topology Operator cannot express {}; nothing was written (docs/kubernetes.md lists what it lacks)",
        crate::text::count(refusals.len(), "thing")
    );
    text
}

/// The notes and the Secrets the resources refer to, for stderr after a write.
pub fn summary(manifests: &Manifests) -> String {
    let mut text = String::new();
    for note in &manifests.notes {
        let _ = writeln!(text, "note: {note}");
    }
    for secret in &manifests.secrets {
        let keys: Vec<String> = secret
            .keys
            .iter()
            .map(|(key, holds)| format!("`{key}` ({holds})"))
            .collect();
        let _ = writeln!(
            text,
            "needs Secret {} for {}: {}",
            secret.name,
            secret.object,
            keys.join(", ")
        );
    }
    text
}
