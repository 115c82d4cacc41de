//! What changes between a spec compiled for one RabbitMQ line and for another: the
//! objects warren would add, change or remove on the broker after the upgrade.

use super::{Change, ChangeKind};
use crate::model::Definitions;
use crate::model::objects::objects;

/// The objects of `after` not in `before`, those in both with another value, and those
/// of `before` not in `after`, in object order.
pub(super) fn changes(before: &Definitions, after: &Definitions) -> Vec<Change> {
    let before = objects(before);
    let after = objects(after);
    let mut changes = Vec::new();
    for (id, value) in &after {
        match before.get(id) {
            None => changes.push(Change::new(
                ChangeKind::Added,
                id.clone(),
                None,
                Some(value.clone()),
            )),
            Some(old) if old != value => changes.push(Change::new(
                ChangeKind::Changed,
                id.clone(),
                Some(old.clone()),
                Some(value.clone()),
            )),
            Some(_) => {}
        }
    }
    for (id, value) in &before {
        if !after.contains_key(id) {
            changes.push(Change::new(
                ChangeKind::Removed,
                id.clone(),
                Some(value.clone()),
                None,
            ));
        }
    }
    changes.sort_by(|a, b| a.object.cmp(&b.object));
    changes
}
