//! Everything warren prints goes through here.

pub mod apply;
pub mod attributes;
pub mod config;
pub mod diagnostics;
pub mod errors;
pub mod findings;
pub mod github;
pub mod graph;
pub mod k8s;
pub mod lint;
pub mod markdown;
pub mod plan;
pub mod progress;
pub mod progress_line;
pub mod replay;
pub mod sarif;
pub mod sections;
pub mod state;
pub mod status;
pub mod stopping;
pub mod trace;
pub mod upgrade;

/// Writes `document` as one JSON document, indented, and a newline: every JSON document
/// warren prints (a plan, a report, a lint or SARIF document, the error document) goes
/// through here, so all have one shape.
pub fn json_document(
    out: &mut dyn std::io::Write,
    document: &impl serde::Serialize,
) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(document).map_err(std::io::Error::other)?;
    writeln!(out, "{text}")
}

/// Runs `render` into a buffer and writes what it wrote with every character a reader
/// cannot see escaped: a name can never hide in, or reorder, a plan or a diagnostic.
/// `colored` says whether `render` colors its output: only then are color sequences
/// kept, and only those that cannot hide text ([`crate::text::visible_colored`]);
/// uncolored output (a pipe, a CI log, `NO_COLOR`) shows every escape character.
pub(crate) fn visibly(
    out: &mut dyn std::io::Write,
    colored: bool,
    render: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut buffer: Vec<u8> = Vec::new();
    render(&mut buffer)?;
    let text = String::from_utf8_lossy(&buffer);
    let shown = if colored {
        crate::text::visible_colored(&text)
    } else {
        crate::text::visible(&text)
    };
    out.write_all(shown.as_bytes())
}
