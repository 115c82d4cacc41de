//! Names that differ only by letter case.

use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::{ObjectId, ObjectKind};

pub const RULE: Rule = Rule {
    id: "name-differs-only-by-case",
    summary: "two queues or two exchanges in a vhost differ only by letter case",
    level: Some(Level::Warn),
    explanation: Some(
        "RabbitMQ names are case-sensitive, so `Orders` and `orders` are two different queues: publishers and consumers that disagree on case silently talk to different objects. Pick one spelling.",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    queues:\n      Orders: {}\n      orders: {}\n",
        good: "version: 1\nvhosts:\n  v:\n    queues:\n      orders: {}\n",
        run: check,
    },
};

/// The name in lower case, borrowed when it is lower case already (most names are).
fn lower_case(name: &str) -> Cow<'_, str> {
    // ASCII (nearly every name) folds byte by byte, without decoding characters.
    if name.is_ascii() {
        return if name.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        };
    }
    let unchanged = |c: char| {
        let mut lower = c.to_lowercase();
        lower.next() == Some(c) && lower.next().is_none()
    };
    if name.chars().all(unchanged) {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(name.to_lowercase())
    }
}

fn check(context: &Context) -> Vec<Finding> {
    let names = || {
        context
            .definitions
            .queues
            .iter()
            .map(|q| (ObjectKind::Queue, q.vhost.as_str(), &q.name))
            .chain(
                context
                    .definitions
                    .exchanges
                    .iter()
                    .map(|e| (ObjectKind::Exchange, e.vhost.as_str(), &e.name)),
            )
    };
    // Two names can only clash if one of them changes in lower case: collect those
    // first (usually none), then look only at the names that fold onto them.
    let folded: FxHashSet<(ObjectKind, &str, Cow<str>)> = names()
        .map(|(kind, vhost, name)| (kind, vhost, lower_case(name)))
        .filter(|(_, _, lower)| matches!(lower, Cow::Owned(_)))
        .collect();
    let mut findings = Vec::new();
    if folded.is_empty() {
        return findings;
    }
    let mut seen: FxHashMap<(ObjectKind, &str, Cow<str>), &String> = FxHashMap::default();
    for (kind, vhost, name) in names() {
        let key = (kind, vhost, lower_case(name));
        if !folded.contains(&key) {
            continue;
        }
        match seen.get(&key) {
            Some(first) if *first != name => findings.push(
                Finding::on(
                    ObjectId::in_vhost(kind, vhost, name),
                    format!("`{name}` and `{first}` differ only by letter case"),
                )
                .fix("use one spelling"),
            ),
            _ => {
                seen.insert(key, name);
            }
        }
    }
    findings
}
