//! Where a value is in a definitions file's text: a JSON pointer to a line and column.
//!
//! Checks run on the parsed document, which keeps no positions; an error needs one
//! only when there is an error, so the text is scanned then, along the one path the
//! error names, instead of recording the position of every value of a file that may
//! hold 100,000 objects.

pub use crate::model::json_pointer::{JsonPointer, PointerToken};

/// The byte offset of the value at `path` in the JSON `text`, or of the deepest value
/// on the way that exists (the object a missing key should be in). `text` is JSON the
/// parser accepted.
pub fn offset(text: &str, path: &JsonPointer) -> usize {
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        at: 0,
    };
    scanner.whitespace();
    for step in &path.0 {
        let container = scanner.at;
        let found = match (step, scanner.peek()) {
            (PointerToken::Key(key), Some(b'{')) => scanner.find_key(key),
            (PointerToken::Index(index), Some(b'[')) => scanner.find_index(*index),
            _ => false,
        };
        if !found {
            return container;
        }
    }
    scanner.at
}

/// The 1-based line and column (in characters) of the byte at `offset`.
pub fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

/// `LINE:COLUMN` of the value at `path` in `text`.
pub fn position(text: &str, path: &JsonPointer) -> String {
    let (line, column) = line_column(text.as_bytes(), offset(text, path));
    format!("{line}:{column}")
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// At `{`: moves to the value of `key` and returns true, or stays and returns
    /// false. The last of duplicate keys wins, as in the parser.
    fn find_key(&mut self, key: &str) -> bool {
        let start = self.at;
        self.at += 1;
        let mut found = None;
        loop {
            self.whitespace();
            match self.peek() {
                Some(b'"') => {}
                _ => break,
            }
            let name = self.string();
            self.whitespace();
            self.at += 1; // ':'
            self.whitespace();
            if name == key {
                found = Some(self.at);
            }
            self.skip_value();
            self.whitespace();
            if self.peek() == Some(b',') {
                self.at += 1;
            }
        }
        match found {
            Some(at) => {
                self.at = at;
                true
            }
            None => {
                self.at = start;
                false
            }
        }
    }

    /// At `[`: moves to element `index` and returns true, or stays and returns false.
    fn find_index(&mut self, index: usize) -> bool {
        let start = self.at;
        self.at += 1;
        let mut current = 0;
        loop {
            self.whitespace();
            if matches!(self.peek(), None | Some(b']')) {
                break;
            }
            if current == index {
                return true;
            }
            self.skip_value();
            self.whitespace();
            if self.peek() == Some(b',') {
                self.at += 1;
            }
            current += 1;
        }
        self.at = start;
        false
    }

    /// Reads a string at `"`, decoding its escapes, and moves past it.
    fn string(&mut self) -> String {
        let start = self.at;
        self.skip_string();
        let literal = std::str::from_utf8(&self.bytes[start..self.at]).unwrap_or("\"\"");
        serde_json::from_str(literal).unwrap_or_default()
    }

    fn skip_string(&mut self) {
        self.at += 1;
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'\\' => self.at += 1,
                b'"' => return,
                _ => {}
            }
        }
    }

    fn skip_value(&mut self) {
        let mut depth = 0usize;
        loop {
            self.whitespace();
            match self.peek() {
                None => return,
                Some(b'"') => self.skip_string(),
                Some(b'{' | b'[') => {
                    depth += 1;
                    self.at += 1;
                }
                Some(b'}' | b']') => {
                    depth = depth.saturating_sub(1);
                    self.at += 1;
                }
                Some(b',' | b':') if depth > 0 => self.at += 1,
                Some(_) => {
                    while let Some(b) = self.peek() {
                        if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                            break;
                        }
                        self.at += 1;
                    }
                }
            }
            if depth == 0 {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(steps: &[PointerToken]) -> JsonPointer {
        JsonPointer(steps.to_vec())
    }

    const TEXT: &str = "{\n  \"users\": [\n    {\"name\": \"a\", \"limits\": {}},\n    {\n      \"name\": \"b\\\"\",\n      \"limits\": {\"max-connections\": \"two\"}\n    }\n  ],\n  \"vhosts\": []\n}";

    #[test]
    fn values_are_found_by_their_path() {
        let at = |steps: &[PointerToken]| position(TEXT, &path(steps));
        assert_eq!(at(&[]), "1:1");
        assert_eq!(at(&["users".into()]), "2:12");
        assert_eq!(at(&["users".into(), 1.into()]), "4:5");
        assert_eq!(
            at(&[
                "users".into(),
                1.into(),
                "limits".into(),
                "max-connections".into()
            ]),
            "6:37"
        );
        assert_eq!(at(&["users".into(), 1.into(), "name".into()]), "5:15");
        assert_eq!(at(&["vhosts".into()]), "9:13");
    }

    #[test]
    fn a_missing_step_gives_the_container_it_should_be_in() {
        let at = |steps: &[PointerToken]| position(TEXT, &path(steps));
        assert_eq!(at(&["users".into(), 7.into(), "name".into()]), "2:12");
        assert_eq!(at(&["users".into(), 0.into(), "vhost".into()]), "3:5");
    }

    #[test]
    fn pointers_escape_slashes_and_tildes() {
        let p = path(&["parameters".into(), 0.into(), "a/b~c".into()]);
        assert_eq!(p.to_string(), "/parameters/0/a~1b~0c");
    }
}
