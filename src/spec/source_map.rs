//! Where every node of a YAML document sits in its file.
//!
//! The typed spec is deserialized by serde and carries no positions; checks that run
//! after deserialization (references, names, ladders) find the line and column of the
//! value they complain about by looking its [`SpecPath`] up in this map.

use rustc_hash::FxHashMap as HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use granit_parser::{Event, Parser};

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

/// One file of a spec: its path, text and positions.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The file's path (for a directory, the directory joined with the file's name).
    pub path: std::path::PathBuf,
    /// The file's text.
    pub source: String,
    /// Positions of every YAML node of the file.
    pub source_map: SourceMap,
}

/// Positions of every node of one YAML document, by path.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    /// Where each node (scalar, or the start of a collection) is.
    nodes: HashMap<SpecPath, Location>,
    /// Where the key of each mapping entry is, by the entry's path.
    keys: HashMap<SpecPath, Location>,
}

enum Frame {
    Mapping {
        path: SpecPath,
        pending_key: Option<(String, Location)>,
    },
    Sequence {
        path: SpecPath,
        next_index: usize,
    },
    /// A complex mapping key (a collection used as a key): skipped.
    Skip {
        depth: usize,
    },
}

impl SourceMap {
    /// Maps every node of the first document in `source`. A document that does not
    /// parse gives a partial map: the parse error itself is reported by the deserializer.
    pub fn build(source: &str) -> SourceMap {
        let mut map = SourceMap::default();
        let mut stack: Vec<Frame> = Vec::new();
        for item in Parser::new_from_str(source) {
            let Ok((event, span)) = item else { break };
            let location = Location {
                line: span.start.line(),
                column: span.start.col() + 1,
            };
            if let Some(Frame::Skip { depth }) = stack.last_mut() {
                match event {
                    Event::MappingStart(..) | Event::SequenceStart(..) => *depth += 1,
                    Event::MappingEnd | Event::SequenceEnd => {
                        *depth -= 1;
                        if *depth == 0 {
                            stack.pop();
                            map.after_value(&mut stack);
                        }
                    }
                    _ => {}
                }
                continue;
            }
            match event {
                Event::Scalar(value, ..) => {
                    if map.take_key(&mut stack, &value, location) {
                        continue;
                    }
                    if let Some((path, _)) = map.value_path(&mut stack) {
                        map.record(path, location);
                    }
                    map.after_value(&mut stack);
                }
                Event::Alias(..) => {
                    if map.take_key(&mut stack, "*", location) {
                        continue;
                    }
                    if let Some((path, _)) = map.value_path(&mut stack) {
                        map.record(path, location);
                    }
                    map.after_value(&mut stack);
                }
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let is_mapping = matches!(event, Event::MappingStart(..));
                    if matches!(
                        stack.last(),
                        Some(Frame::Mapping {
                            pending_key: None,
                            ..
                        })
                    ) {
                        stack.push(Frame::Skip { depth: 1 });
                        continue;
                    }
                    let (path, key_location) = map.value_path(&mut stack).unwrap_or_default();
                    // A collection is best pointed at by its key, when it has one.
                    map.record(path.clone(), key_location.unwrap_or(location));
                    stack.push(if is_mapping {
                        Frame::Mapping {
                            path,
                            pending_key: None,
                        }
                    } else {
                        Frame::Sequence {
                            path,
                            next_index: 0,
                        }
                    });
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                    map.after_value(&mut stack);
                }
                Event::DocumentEnd => break,
                _ => {}
            }
        }
        map
    }

    /// If the innermost collection is a mapping waiting for a key, `text` is that key.
    fn take_key(&mut self, stack: &mut [Frame], text: &str, location: Location) -> bool {
        if let Some(Frame::Mapping { pending_key, .. }) = stack.last_mut()
            && pending_key.is_none()
        {
            *pending_key = Some((text.to_string(), location));
            return true;
        }
        false
    }

    /// The path of a value that starts now, and the location of its key if it has one.
    fn value_path(&mut self, stack: &mut [Frame]) -> Option<(SpecPath, Option<Location>)> {
        match stack.last_mut() {
            None => Some((SpecPath::root(), None)),
            Some(Frame::Mapping { path, pending_key }) => {
                let (key, key_location) = pending_key.clone()?;
                let child = path.key(key);
                self.keys.insert(child.clone(), key_location);
                Some((child, Some(key_location)))
            }
            Some(Frame::Sequence { path, next_index }) => Some((path.index(*next_index), None)),
            Some(Frame::Skip { .. }) => None,
        }
    }

    fn record(&mut self, path: SpecPath, location: Location) {
        self.nodes.entry(path).or_insert(location);
    }

    /// Advances the parent collection once a value (scalar or whole collection) is done.
    fn after_value(&mut self, stack: &mut [Frame]) {
        match stack.last_mut() {
            Some(Frame::Mapping { pending_key, .. }) => *pending_key = None,
            Some(Frame::Sequence { next_index, .. }) => *next_index += 1,
            _ => {}
        }
    }

    /// Location of the node at `path`, or of its nearest ancestor that has one.
    pub fn locate(&self, path: &SpecPath) -> Option<Location> {
        let mut current = Some(path.clone());
        while let Some(p) = current {
            if let Some(location) = self.nodes.get(&p) {
                return Some(*location);
            }
            current = p.parent();
        }
        None
    }

    /// The deepest path whose node (or key) sits exactly at `location`: used to name the
    /// place of a deserializer error, which only knows line and column.
    pub fn path_at(&self, location: Location) -> Option<SpecPath> {
        self.nodes
            .iter()
            .chain(&self.keys)
            .filter(|(_, at)| **at == location)
            .map(|(path, _)| path)
            .max_by_key(|path| path.depth())
            .cloned()
    }

    /// Whether the document writes the mapping entry at `path` (its key is in the file).
    pub fn has_key(&self, path: &SpecPath) -> bool {
        self.keys.contains_key(path)
    }

    /// Location of the key of the mapping entry at `path` (falls back to [`Self::locate`]).
    pub fn locate_key(&self, path: &SpecPath) -> Option<Location> {
        self.keys.get(path).copied().or_else(|| self.locate(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "version: 1\nvhosts:\n  shop:\n    services:\n      orders:\n        consumers:\n          email:\n            retry: { delays: [30s, 5x] }\n";

    fn at(line: usize, column: usize) -> Option<Location> {
        Some(Location { line, column })
    }

    #[test]
    fn locates_scalars_collections_and_keys() {
        let map = SourceMap::build(DOC);
        assert_eq!(map.locate(&SpecPath::from_keys(["version"])), at(1, 10));
        let email =
            SpecPath::from_keys(["vhosts", "shop", "services", "orders", "consumers", "email"]);
        assert_eq!(map.locate(&email), at(7, 11));
        let delays = email.key("retry").key("delays");
        assert_eq!(map.locate(&delays.index(1)), at(8, 36));
        assert_eq!(map.locate_key(&email.key("retry")), at(8, 13));
    }

    #[test]
    fn unknown_paths_fall_back_to_the_nearest_ancestor() {
        let map = SourceMap::build(DOC);
        let missing = SpecPath::from_keys(["vhosts", "shop", "nothing", "here"]);
        assert_eq!(map.locate(&missing), at(3, 3));
    }

    #[test]
    fn renders_paths_with_indexes_and_quoted_keys() {
        let path = SpecPath::from_keys(["vhosts", "a.b", "x"]).index(2);
        assert_eq!(path.to_string(), "vhosts.\"a.b\".x[2]");
    }
}
