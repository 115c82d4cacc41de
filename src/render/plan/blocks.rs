//! The attribute blocks under a text plan's creates, within its budget: identical
//! blocks are printed once per vhost and kind (4,000 queues of one type and arguments
//! show one block, and refer to it), and [`MAX_ATTRIBUTE_BLOCKS`] in all.

use std::collections::HashMap;

use crate::diff::{Action, Change};
use crate::render::attributes::attributes;

/// How many distinct attribute blocks one text plan prints: past that, a create shows
/// its name only (a plan that creates thousands of different policies stays readable;
/// `--format json` has every value).
pub(super) const MAX_ATTRIBUTE_BLOCKS: usize = 200;

/// What is printed under a create.
pub(super) enum Attributes {
    /// Nothing: not a create, or nothing to say beyond the name (a binding).
    None,
    /// The attribute lines, printed for the first object of its section that has them.
    Lines(Vec<String>),
    /// The same lines as an earlier create of the same vhost and kind, named.
    SameAs(String),
    /// Past [`MAX_ATTRIBUTE_BLOCKS`]; `first` for the first object left out.
    LeftOut { first: bool },
}

/// The aside of a create whose block was printed for `first`.
pub(super) fn same_as(first: &str) -> String {
    format!("(same attributes as `{first}`)")
}

/// The line under the first create past the budget.
pub(super) fn left_out() -> String {
    format!(
        "(attributes of this and later new objects are left out: the plan shows {MAX_ATTRIBUTE_BLOCKS} at most; `--format json` has all of them)"
    )
}

/// The attribute blocks printed so far.
#[derive(Default)]
pub(super) struct ShownAttributes {
    /// Attribute lines → the first object of the section that has them.
    in_section: HashMap<Vec<String>, String>,
    blocks: usize,
    left_out: bool,
}

impl ShownAttributes {
    /// A new vhost or kind: blocks are shared within one only.
    pub(super) fn new_section(&mut self) {
        self.in_section.clear();
    }

    pub(super) fn attributes(&mut self, change: &Change) -> Attributes {
        let (Action::Create, Some(after)) = (change.action, &change.after) else {
            return Attributes::None;
        };
        let lines = attributes(change.id.kind, after);
        if lines.is_empty() {
            return Attributes::None;
        }
        if let Some(first) = self.in_section.get(&lines) {
            return Attributes::SameAs(first.clone());
        }
        if self.blocks >= MAX_ATTRIBUTE_BLOCKS {
            let first = !self.left_out;
            self.left_out = true;
            return Attributes::LeftOut { first };
        }
        self.blocks += 1;
        self.in_section
            .insert(lines.clone(), change.id.name.clone());
        Attributes::Lines(lines)
    }
}
