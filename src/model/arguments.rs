//! [`Arguments`]: a small map from argument or policy key to JSON value, sorted by key.
//!
//! Queues, exchanges, bindings and policies each carry one, almost always with one to
//! four entries, and a large spec has hundreds of thousands of them. A `BTreeMap`
//! allocates a whole node (eleven slots) for the first entry; this map keeps exactly
//! its entries in one sorted vector, with the same iteration order and serialized form.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A map of arguments or policy keys with JSON values, sorted by key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Arguments {
    entries: Vec<(String, Value)>,
}

impl Arguments {
    /// An empty map (allocates nothing).
    pub fn new() -> Self {
        Arguments::default()
    }

    /// An empty map with room for exactly `capacity` entries: a map whose size is known
    /// is allocated once instead of growing one entry at a time.
    pub fn with_capacity(capacity: usize) -> Self {
        Arguments {
            entries: Vec::with_capacity(capacity),
        }
    }

    fn position(&self, key: &str) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(existing, _)| existing.as_str().cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.position(key).ok().map(|at| &self.entries[at].1)
    }

    /// The value of `key`, to change it in place.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.position(key).ok().map(|at| &mut self.entries[at].1)
    }

    /// Whether `key` is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Sets `key`; returns the value it replaced.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.position(&key) {
            Ok(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            Err(at) => {
                // Most maps hold a handful of entries: grow one at a time, not by doubling.
                self.entries.reserve_exact(1);
                self.entries.insert(at, (key, value));
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.position(key).ok().map(|at| self.entries.remove(at).1)
    }

    /// Keeps the entries for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut Value) -> bool) {
        self.entries.retain_mut(|(key, value)| keep(key, value));
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&String, &Value)> + ExactSizeIterator {
        self.entries.iter().map(|(key, value)| (key, value))
    }

    /// Keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.entries.iter().map(|(key, _)| key)
    }

    /// Values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.entries.iter().map(|(_, value)| value)
    }
}

impl fmt::Debug for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl std::ops::Index<&str> for Arguments {
    type Output = Value;

    /// The value of `key`; panics when it is missing (like `BTreeMap`).
    fn index(&self, key: &str) -> &Value {
        self.get(key)
            .unwrap_or_else(|| panic!("no argument `{key}`"))
    }
}

impl Extend<(String, Value)> for Arguments {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, entries: I) {
        let entries = entries.into_iter();
        self.entries.reserve_exact(entries.size_hint().0);
        for (key, value) in entries {
            self.insert(key, value);
        }
    }
}

impl FromIterator<(String, Value)> for Arguments {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(entries: I) -> Self {
        let mut entries: Vec<(String, Value)> = entries.into_iter().collect();
        // Stable: of two equal keys the later one wins, as with repeated inserts.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut deduplicated: Vec<(String, Value)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match deduplicated.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => deduplicated.push(entry),
            }
        }
        Arguments {
            entries: deduplicated,
        }
    }
}

impl<const N: usize> From<[(String, Value); N]> for Arguments {
    fn from(entries: [(String, Value); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl IntoIterator for Arguments {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a Arguments {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(key, value)| (key, value))
    }
}

impl Serialize for Arguments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (key, value) in &self.entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ArgumentsVisitor;

        impl<'de> Visitor<'de> for ArgumentsVisitor {
            type Value = Arguments;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of keys to JSON values")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Arguments, A::Error> {
                let mut entries = Vec::with_capacity(access.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = access.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(entries.into_iter().collect())
            }
        }

        deserializer.deserialize_map(ArgumentsVisitor)
    }
}

impl schemars::JsonSchema for Arguments {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Arguments".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <std::collections::BTreeMap<String, Value>>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_keys_sorted_and_unique_like_a_btree_map() {
        let mut arguments = Arguments::new();
        arguments.insert("x-queue-type".into(), json!("quorum"));
        arguments.insert("x-dead-letter-exchange".into(), json!("a"));
        assert_eq!(
            arguments.insert("x-dead-letter-exchange".into(), json!("b")),
            Some(json!("a"))
        );
        assert_eq!(
            arguments.keys().collect::<Vec<_>>(),
            ["x-dead-letter-exchange", "x-queue-type"]
        );
        assert_eq!(arguments["x-dead-letter-exchange"], "b");
        assert_eq!(arguments.remove("x-queue-type"), Some(json!("quorum")));
        assert_eq!(arguments.len(), 1);
    }

    #[test]
    fn round_trips_through_json_in_key_order_with_the_last_duplicate_winning() {
        let arguments: Arguments =
            serde_json::from_str(r#"{"b": 1, "a": {"nested": [1, 2]}, "b": 2}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&arguments).unwrap(),
            r#"{"a":{"nested":[1,2]},"b":2}"#
        );
        let collected: Arguments = [("z".to_string(), json!(1)), ("z".to_string(), json!(2))]
            .into_iter()
            .collect();
        assert_eq!(collected["z"], 2);
    }
}
