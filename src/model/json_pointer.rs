//! A place in a JSON document (a definitions file, a broker's definitions), written as
//! a JSON pointer (`/users/0/limits`).
//!
//! In `model/` because a [`super::finding::Finding`] about a definitions document
//! points with one; `definitions_file::locate` turns one into a line and column.

/// One reference token of a [`JsonPointer`]: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointerToken {
    Key(String),
    Index(usize),
}

impl From<&str> for PointerToken {
    fn from(key: &str) -> Self {
        PointerToken::Key(key.to_string())
    }
}

impl From<String> for PointerToken {
    fn from(key: String) -> Self {
        PointerToken::Key(key)
    }
}

impl From<usize> for PointerToken {
    fn from(index: usize) -> Self {
        PointerToken::Index(index)
    }
}

/// A path into a JSON document, written as a JSON pointer (`/users/0/limits`) where
/// it is shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPointer(pub Vec<PointerToken>);

impl JsonPointer {
    /// The path one step further down.
    pub fn then(&self, step: impl Into<PointerToken>) -> JsonPointer {
        let mut steps = self.0.clone();
        steps.push(step.into());
        JsonPointer(steps)
    }
}

impl std::fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for step in &self.0 {
            match step {
                PointerToken::Key(key) => {
                    write!(f, "/{}", key.replace('~', "~0").replace('/', "~1"))?
                }
                PointerToken::Index(index) => write!(f, "/{index}")?,
            }
        }
        Ok(())
    }
}
