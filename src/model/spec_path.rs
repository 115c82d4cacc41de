//! Where a finding points in a spec: a path through its structure ([`SpecPath`]) and
//! a line and column in a file ([`Location`]).
//!
//! They live in `model/`, under the spec's source map (`spec::source_map`, which
//! builds them from the YAML and re-exports them), because a [`super::finding::Finding`]
//! carries them and every layer that reports findings shares that type.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// One step of a path into the document.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A mapping key.
    Key(String),
    /// A sequence index (0-based).
    Index(usize),
}

/// A path into the spec, e.g. `vhosts.shop.services.orders.consumers.email.retry.delays[1]`.
///
/// Paths share their prefixes: extending a path allocates one step, and cloning one
/// (every compiled object keeps the path it came from) copies a pointer.
#[derive(Clone, Default)]
pub struct SpecPath(Option<Arc<Step>>);

struct Step {
    parent: SpecPath,
    segment: Segment,
    depth: usize,
}

impl SpecPath {
    /// The document root.
    pub fn root() -> Self {
        SpecPath(None)
    }

    fn child(&self, segment: Segment) -> Self {
        SpecPath(Some(Arc::new(Step {
            parent: self.clone(),
            segment,
            depth: self.depth() + 1,
        })))
    }

    /// This path extended by a mapping key.
    pub fn key(&self, key: impl Into<String>) -> Self {
        self.child(Segment::Key(key.into()))
    }

    /// This path extended by a sequence index.
    pub fn index(&self, index: usize) -> Self {
        self.child(Segment::Index(index))
    }

    /// Builds a path from dotted keys, for tests and fixed paths: `"vhosts.shop"`.
    pub fn from_keys<'a>(keys: impl IntoIterator<Item = &'a str>) -> Self {
        keys.into_iter()
            .fold(SpecPath::root(), |path, key| path.key(key))
    }

    /// Number of segments (0 for the root).
    pub fn depth(&self) -> usize {
        self.0.as_ref().map_or(0, |step| step.depth)
    }

    /// Whether this is the document root.
    pub fn is_root(&self) -> bool {
        self.0.is_none()
    }

    /// The last segment (`None` for the root).
    pub fn last(&self) -> Option<&Segment> {
        self.0.as_ref().map(|step| &step.segment)
    }

    /// The segments of the path, from the root.
    pub fn segments(&self) -> Vec<&Segment> {
        let mut segments = Vec::with_capacity(self.depth());
        let mut current = self;
        while let Some(step) = &current.0 {
            segments.push(&step.segment);
            current = &step.parent;
        }
        segments.reverse();
        segments
    }

    /// The path one segment up (`None` for the root).
    pub fn parent(&self) -> Option<SpecPath> {
        self.0.as_ref().map(|step| step.parent.clone())
    }

    /// The ancestor of this path (or the path itself) with `depth` segments.
    fn ancestor_at(&self, depth: usize) -> &SpecPath {
        let mut current = self;
        while current.depth() > depth {
            match &current.0 {
                Some(step) => current = &step.parent,
                None => break,
            }
        }
        current
    }

    /// Whether `ancestor` is this path or one of its ancestors.
    pub fn starts_with(&self, ancestor: &SpecPath) -> bool {
        self.depth() >= ancestor.depth() && self.ancestor_at(ancestor.depth()) == ancestor
    }
}

impl PartialEq for SpecPath {
    fn eq(&self, other: &SpecPath) -> bool {
        let (mut a, mut b) = (self, other);
        loop {
            match (&a.0, &b.0) {
                (None, None) => return true,
                (Some(x), Some(y)) => {
                    if Arc::ptr_eq(x, y) {
                        return true;
                    }
                    if x.depth != y.depth || x.segment != y.segment {
                        return false;
                    }
                    a = &x.parent;
                    b = &y.parent;
                }
                _ => return false,
            }
        }
    }
}

impl Eq for SpecPath {}

impl Hash for SpecPath {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.depth().hash(state);
        let mut current = self;
        while let Some(step) = &current.0 {
            step.segment.hash(state);
            current = &step.parent;
        }
    }
}

impl Ord for SpecPath {
    fn cmp(&self, other: &SpecPath) -> std::cmp::Ordering {
        self.segments().cmp(&other.segments())
    }
}

impl PartialOrd for SpecPath {
    fn partial_cmp(&self, other: &SpecPath) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for SpecPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SpecPath({self})")
    }
}

impl fmt::Display for SpecPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str("(document)");
        }
        for (i, segment) in self.segments().into_iter().enumerate() {
            match segment {
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::Key(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    let plain = !key.is_empty()
                        && key
                            .chars()
                            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
                    if plain {
                        f.write_str(key)?;
                    } else {
                        write!(f, "{key:?}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A 1-based line and column in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}
