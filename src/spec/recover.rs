//! Every mistake of a spec file in one run.
//!
//! The typed parser stops at the first key, type or value it refuses. A spec with a
//! misspelt key, a list where a map belongs and a bad delay would take three runs to
//! fix, one error each. So after an error, the mapping entry it is in (the key and
//! its whole value) is blanked out in a copy of the text, character for character
//! with spaces, and the copy is parsed again: every other line and column stays where
//! it was, and the next error is found at its true place. What blanking itself causes
//! (the key it removed is now missing) is not reported: the entry above it is blanked
//! in turn. A YAML syntax error, a size limit or an alias that cannot be expanded
//! ends the search: the text after it cannot be read reliably.

use granit_parser::{Event, Parser};

use super::diagnostic::Diagnostic;
use super::source_map::Location;
use super::yaml_errors::is_long_key;

/// Most errors shown for one file: the rest are counted, in one last `more-errors`
/// diagnostic at the first of them.
pub const MAX_SHOWN: usize = 50;

/// How often, and how many bytes in all, the search may read the file again (once
/// per error): past either, the errors left are not looked for, and one last
/// `more-errors` diagnostic says so. A 10 KB spec is read again up to 1,000 times,
/// a 1 MB one 16 times.
const MAX_LOOKS: usize = 1_000;
const MAX_BYTES_PARSED: usize = 16 * 1024 * 1024;

/// The codes of errors after which the file can be read on: each is about one
/// mapping entry, whose blanking leaves the YAML around it as valid as it was.
const RECOVERABLE: &[&str] = &[
    "unknown-key",
    "invalid-type",
    "invalid-value",
    "missing-key",
    "duplicate-key",
    "clear-text-password",
    "unknown-anchor",
];

/// Every error of `source`, starting from `first`, the error the parser gave for
/// the text as written: `parse` parses a text and gives its error as a diagnostic
/// (`None` when the text parses). In document order; past [`MAX_SHOWN`], one
/// `more-errors` diagnostic counts the rest.
pub fn every_error(
    source: &str,
    first: Diagnostic,
    parse: impl Fn(&str) -> Option<Diagnostic>,
) -> Vec<Diagnostic> {
    recover(source, first, parse).diagnostics
}

/// What the search found: the errors, and what is left of the text.
#[derive(Debug)]
pub struct Recovery {
    /// Every error, as [`every_error`] gives them.
    pub diagnostics: Vec<Diagnostic>,
    /// The text with every refused entry blanked out, when it parses: the rest of the
    /// spec, which the compiler can still check (lines and columns are the file's).
    pub readable: Option<String>,
    /// Where each blanked entry's key starts, as a byte offset into the text.
    pub blanked: Vec<usize>,
}

/// [`every_error`], and the rest of the text that still reads.
pub fn recover(
    source: &str,
    first: Diagnostic,
    parse: impl Fn(&str) -> Option<Diagnostic>,
) -> Recovery {
    let mut blanked: Vec<usize> = Vec::new();
    let mut parsed = false;
    let mut found: Vec<Diagnostic> = Vec::new();
    let mut text = source.to_string();
    let mut next = Some(first);
    // Keys blanked so far: a key found missing afterwards is the blanking's doing.
    let mut blanked_keys: Vec<String> = Vec::new();
    let mut looks = 0;
    // The error found when the search stopped for its cost, before it was through.
    let mut cut_at: Option<Location> = None;
    while let Some(diagnostic) = next.take() {
        let artifact = is_artifact(&diagnostic, &blanked_keys);
        let recoverable = RECOVERABLE.contains(&diagnostic.code) && !is_long_key(&diagnostic);
        let location = diagnostic.location;
        if !artifact {
            if found.iter().any(|d| same_error(d, &diagnostic)) {
                // The same error again: blanking did not get past it.
                break;
            }
            found.push(diagnostic);
        }
        let (true, Some(at)) = (recoverable || artifact, location) else {
            break;
        };
        let Some(entry) = entry_at(&text, at) else {
            break;
        };
        blanked_keys.push(entry.key.clone());
        blanked.push(entry.start);
        if !blank(&mut text, &entry) || text.trim().is_empty() {
            // Nothing left to set aside, or nothing left at all.
            break;
        }
        next = parse(&text);
        parsed = next.is_none();
        looks += 1;
        if next.is_some()
            && (looks >= MAX_LOOKS || looks.saturating_mul(text.len()) >= MAX_BYTES_PARSED)
        {
            cut_at = next.take().and_then(|d| d.location);
        }
    }
    found.sort_by_key(|d| d.location);
    if found.len() > MAX_SHOWN {
        let rest = found.split_off(MAX_SHOWN);
        found.push(more_errors(rest.len(), cut_at.is_some(), rest[0].location));
    } else if cut_at.is_some() {
        found.push(more_errors(0, true, cut_at));
    }
    Recovery {
        diagnostics: found,
        readable: parsed.then_some(text),
        blanked,
    }
}

/// The diagnostic that stands for `count` errors not shown (more when the search
/// was `cut` short), at the first of them.
fn more_errors(count: usize, cut: bool, location: Option<Location>) -> Diagnostic {
    let errors = crate::text::noun_for(count, "error");
    let message = match (count, cut) {
        (0, _) => "more errors follow, not looked for: this file is large, and each error costs a reading of it".to_string(),
        (n, false) => format!("{n} more {errors} in this file, not shown"),
        (n, true) => format!("{n} more {errors} in this file, not shown, and more not looked for"),
    };
    let mut diagnostic = Diagnostic::error("more-errors", message)
        .help("fix the errors above and run again to see the rest");
    diagnostic.location = location;
    diagnostic.omitted = count.saturating_sub(1);
    diagnostic
}

fn same_error(a: &Diagnostic, b: &Diagnostic) -> bool {
    a.location == b.location && a.code == b.code && a.message == b.message
}

/// Whether `diagnostic` is about a key this search blanked: "missing key `x`" where
/// `x` was blanked (a required key with a bad value), or an empty document.
fn is_artifact(diagnostic: &Diagnostic, blanked_keys: &[String]) -> bool {
    if diagnostic.code == "empty-spec" {
        return !blanked_keys.is_empty();
    }
    diagnostic.code == "missing-key"
        && blanked_keys
            .iter()
            .any(|key| diagnostic.message == format!("missing key `{key}`"))
}

/// One mapping entry of the text: its key, and the bytes from its key to the end of
/// its value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    key: String,
    start: usize,
    end: usize,
    /// In a flow mapping (`{ a: 1, b: 2 }`): its comma goes with it.
    in_flow: bool,
    /// The last entry left in a block mapping: blanked, it would leave the mapping
    /// empty, which YAML reads as null ("expected a map" about its parent), so `{}`
    /// takes its place.
    alone: bool,
}

enum Frame {
    Mapping {
        in_flow: bool,
        /// The key read and waiting for its value: text, first byte.
        key: Option<(String, usize)>,
        /// Keys read so far.
        entries: usize,
    },
    Sequence,
    /// A complex key (a collection used as a key): not an entry of its own.
    Key {
        depth: usize,
    },
}

/// The innermost mapping entry whose key or value holds `at`.
fn entry_at(text: &str, at: Location) -> Option<Entry> {
    let offset = byte_of(text, at)?;
    let mut stack: Vec<Frame> = Vec::new();
    // Entries whose value is a collection being read, by the depth of their mapping.
    let mut open: Vec<(usize, Entry)> = Vec::new();
    // The entry found, and the depth of its mapping (read on to count its entries).
    let mut found: Option<(Entry, usize)> = None;
    for item in Parser::new_from_str(text) {
        let Ok((event, span)) = item else { break };
        let start = span.start.byte_offset()?;
        let end = span.end.byte_offset()?;
        if let Some(Frame::Key { depth }) = stack.last_mut() {
            match event {
                Event::MappingStart(..) | Event::SequenceStart(..) => *depth += 1,
                Event::MappingEnd | Event::SequenceEnd => {
                    *depth -= 1;
                    if *depth == 0 {
                        stack.pop();
                    }
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Scalar(..) | Event::Alias(..) => {
                let key = match &event {
                    Event::Scalar(value, ..) => value.as_ref(),
                    _ => "*",
                };
                if take_key(&mut stack, key, start) {
                    continue;
                }
                if let Some(entry) = value_done(&mut stack, end)
                    && found.is_none()
                    && entry.holds(offset)
                {
                    found = Some((entry, stack.len()));
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if let Some(Frame::Mapping { key: None, .. }) = stack.last() {
                    stack.push(Frame::Key { depth: 1 });
                    continue;
                }
                if let Some(Frame::Mapping {
                    key: Some((key, key_start)),
                    in_flow,
                    ..
                }) = stack.last()
                {
                    open.push((
                        stack.len(),
                        Entry {
                            key: key.clone(),
                            start: *key_start,
                            end: 0,
                            in_flow: *in_flow,
                            alone: false,
                        },
                    ));
                }
                stack.push(if matches!(event, Event::MappingStart(..)) {
                    Frame::Mapping {
                        in_flow: text[start..].starts_with('{'),
                        key: None,
                        entries: 0,
                    }
                } else {
                    Frame::Sequence
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let closed = stack.pop();
                if let Some((mut entry, depth)) = found.take() {
                    if depth == stack.len() + 1 {
                        // The found entry's mapping ended: is the entry all it had?
                        if let Some(Frame::Mapping { entries, .. }) = closed {
                            entry.alone = entries == 1 && !entry.in_flow;
                        }
                        return Some(entry);
                    }
                    found = Some((entry, depth));
                }
                // The collection was the value of the innermost open entry, if any.
                if let Some((depth, _)) = open.last()
                    && *depth == stack.len()
                {
                    let (_, mut entry) = open.pop()?;
                    entry.end = end.max(start);
                    if found.is_none() && entry.holds(offset) {
                        found = Some((entry, stack.len()));
                    }
                }
                value_done(&mut stack, usize::MAX);
            }
            Event::DocumentEnd => break,
            _ => {}
        }
    }
    found.map(|(entry, _)| entry)
}

impl Entry {
    /// Whether the entry's key or value holds the byte at `offset`.
    fn holds(&self, offset: usize) -> bool {
        (self.start..self.end.max(self.start + 1)).contains(&offset)
    }
}

/// Records a key when the innermost collection is a mapping waiting for one.
fn take_key(stack: &mut [Frame], text: &str, start: usize) -> bool {
    if let Some(Frame::Mapping { key, entries, .. }) = stack.last_mut()
        && key.is_none()
    {
        *key = Some((text.to_string(), start));
        *entries += 1;
        return true;
    }
    false
}

/// A scalar value ended at `end`: the entry it completes, if it is a mapping's value.
fn value_done(stack: &mut [Frame], end: usize) -> Option<Entry> {
    let Some(Frame::Mapping { key, in_flow, .. }) = stack.last_mut() else {
        return None;
    };
    let (name, key_start) = key.take()?;
    Some(Entry {
        key: name,
        start: key_start,
        end,
        in_flow: *in_flow,
        alone: false,
    })
}

/// Spaces in place of the entry's characters (line ends kept), and of its comma in a
/// flow mapping; whether that changed the text (an entry already blank did not).
fn blank(text: &mut String, entry: &Entry) -> bool {
    let mut start = entry.start;
    let mut end = entry.end.min(text.len());
    if entry.in_flow {
        let after = &text[end..];
        let gap = after.len() - after.trim_start().len();
        if after.trim_start().starts_with(',') {
            end += gap + 1;
        } else {
            let before = text[..start].trim_end();
            if before.ends_with(',') {
                start = before.len() - 1;
            }
        }
    }
    let mut spaces: String = text[start..end]
        .chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect();
    if entry.alone && spaces.starts_with("  ") {
        spaces.replace_range(0..2, "{}");
    }
    let changed = text[start..end] != spaces;
    text.replace_range(start..end, &spaces);
    changed
}

/// The byte offset of a 1-based line and column (in characters).
fn byte_of(text: &str, at: Location) -> Option<usize> {
    let mut line_start = 0;
    for _ in 1..at.line {
        line_start += text[line_start..].find('\n')? + 1;
    }
    let line = &text[line_start..];
    let within = line
        .char_indices()
        .nth(at.column.saturating_sub(1))
        .map_or(line.len(), |(index, _)| index);
    Some(line_start + within)
}

#[cfg(test)]
mod tests;
