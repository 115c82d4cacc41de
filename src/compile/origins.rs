//! [`Origins`]: for every compiled object, the spec path that produced it.
//!
//! A large spec compiles to ~11 objects per consumer, and every one is recorded here.
//! Keyed by [`ObjectId`] itself, each entry kept its own copy of its vhost's name; here a
//! vhost's name is stored once and keys name it by number, which saves an allocation
//! and a third of the table per object. The object's name is kept as given (a
//! `String`): boxing it would copy every name whose text was written by `format!`.

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

use crate::model::{ObjectId, ObjectKind};
use crate::spec::SpecPath;

/// Where each compiled object came from in the spec: looked up, never iterated.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    /// The number of each vhost named by a key.
    vhosts: FxHashMap<String, u32>,
    paths: FxHashMap<Key, SpecPath>,
}

/// An [`ObjectId`] with its vhost by number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    kind: ObjectKind,
    /// [`NO_VHOST`] for objects outside vhosts.
    vhost: u32,
    name: String,
}

/// The vhost number of an object that belongs to no vhost (users, global parameters).
const NO_VHOST: u32 = u32::MAX;

impl Origins {
    /// The spec path that produced `id`.
    pub fn get(&self, id: &ObjectId) -> Option<&SpecPath> {
        let vhost = match &id.vhost {
            Some(vhost) => *self.vhosts.get(vhost.as_str())?,
            None => NO_VHOST,
        };
        self.paths.get(&Key {
            kind: id.kind,
            vhost,
            name: id.name.clone(),
        })
    }

    /// Records that `path` produced `id`, unless an object with that id is recorded
    /// already: then gives back the id and the path that produced the first one.
    pub fn claim(&mut self, id: ObjectId, path: &SpecPath) -> Result<(), (ObjectId, SpecPath)> {
        let vhost = match id.vhost {
            Some(vhost) => {
                let next = u32::try_from(self.vhosts.len()).expect("fewer vhosts than u32::MAX");
                *self.vhosts.entry(vhost).or_insert(next)
            }
            None => NO_VHOST,
        };
        let key = Key {
            kind: id.kind,
            vhost,
            name: id.name,
        };
        match self.paths.entry(key) {
            Entry::Vacant(slot) => {
                slot.insert(path.clone());
                Ok(())
            }
            Entry::Occupied(first) => {
                let key = first.key();
                let vhost = self
                    .vhosts
                    .iter()
                    .find(|(_, number)| **number == key.vhost)
                    .map(|(name, _)| name.clone());
                let id = ObjectId::new(key.kind, vhost, &key.name);
                Err((id, first.get().clone()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(vhost: &str, name: &str) -> ObjectId {
        ObjectId::in_vhost(ObjectKind::Queue, vhost, name)
    }

    #[test]
    fn keeps_the_first_path_of_an_object_and_tells_vhosts_and_kinds_apart() {
        let mut origins = Origins::default();
        let first = SpecPath::from_keys(["vhosts", "a", "queues", "q"]);
        let second = SpecPath::from_keys(["vhosts", "a", "queues", "again"]);
        assert_eq!(origins.claim(queue("a", "q"), &first), Ok(()));
        assert_eq!(
            origins.claim(queue("a", "q"), &second),
            Err((queue("a", "q"), first.clone()))
        );
        assert_eq!(origins.get(&queue("a", "q")), Some(&first));
        assert_eq!(origins.get(&queue("b", "q")), None);
        let exchange = ObjectId::in_vhost(ObjectKind::Exchange, "a", "q");
        assert_eq!(origins.get(&exchange), None);
        let user = ObjectId::global(ObjectKind::User, "q");
        assert_eq!(origins.claim(user.clone(), &second), Ok(()));
        assert_eq!(origins.get(&user), Some(&second));
    }
}
