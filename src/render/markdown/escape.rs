//! Text made safe for markdown: names as code spans that survive any content, free
//! text for a line or a table cell.

use crate::model::shorten::middle;
use crate::render::sections::Quote;

/// Names quoted for markdown (through [`code`]).
pub(super) struct CodeSpans;

impl Quote for CodeSpans {
    fn code(&self, name: &str) -> String {
        code(name)
    }
}

/// A name as a code span that survives any content: fenced with one more backtick
/// than the longest run inside, pipes escaped (a table cell ends at a bare `|`, even in
/// a code span), control characters shown as escapes.
pub(super) fn code(text: &str) -> String {
    let text = middle(text, 200).replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Text (a message that quotes names in backticks) for a table cell: pipes escaped,
/// HTML's `<` and `&` written as entities, on one line.
pub(super) fn cell(text: &str) -> String {
    inline(text).replace('|', "\\|")
}

/// Text for a line of markdown: `<`, `>` and `&` as entities (no HTML is read from a
/// name), line breaks as spaces, control characters escaped.
pub(super) fn inline(text: &str) -> String {
    middle(text, 400)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}
