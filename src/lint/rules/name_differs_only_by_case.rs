//! Names that differ only by letter case.

use rustc_hash::FxHashMap;

use crate::compile::{ObjectId, ObjectKind};
use crate::lint::{Context, Finding, Level, Rule};

pub const RULE: Rule = Rule {
    id: "name-differs-only-by-case",
    level: Level::Warn,
    summary: "two queues or two exchanges in a vhost differ only by letter case",
    explanation: "RabbitMQ names are case-sensitive, so `Orders` and `orders` are two different queues: publishers and consumers that disagree on case silently talk to different objects. Pick one spelling.",
    bad: "version: 1\nvhosts:\n  v:\n    queues:\n      Orders: {}\n      orders: {}\n",
    good: "version: 1\nvhosts:\n  v:\n    queues:\n      orders: {}\n",
    check,
};

fn check(context: &Context) -> Vec<Finding> {
    let mut findings = Vec::new();
    let names = context
        .definitions
        .queues
        .iter()
        .map(|q| (ObjectKind::Queue, &q.vhost, &q.name))
        .chain(
            context
                .definitions
                .exchanges
                .iter()
                .map(|e| (ObjectKind::Exchange, &e.vhost, &e.name)),
        );
    let mut seen: FxHashMap<(ObjectKind, &str, String), &String> = FxHashMap::default();
    for (kind, vhost, name) in names {
        let key = (kind, vhost.as_str(), name.to_lowercase());
        match seen.get(&key) {
            Some(first) if *first != name => findings.push(
                Finding::on(
                    ObjectId {
                        kind,
                        vhost: Some(vhost.clone()),
                        name: name.clone(),
                    },
                    format!("`{name}` and `{first}` differ only by letter case"),
                )
                .help("use one spelling"),
            ),
            _ => {
                seen.insert(key, name);
            }
        }
    }
    findings
}
