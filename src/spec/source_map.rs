//! Where every node of a YAML document sits in its file.
//!
//! The typed spec is deserialized by serde and carries no positions; checks that run
//! after deserialization (references, names, ladders) find the line and column of the
//! value they complain about by looking its [`SpecPath`] up in this map.

use rustc_hash::FxHashMap as HashMap;

use granit_parser::{Event, Parser};

pub use crate::model::spec_path::{Location, Segment, SpecPath};

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
