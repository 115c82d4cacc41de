//! A user whose write permission reaches the queues of several services.

use std::collections::BTreeSet;

use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::model::{ObjectId, ObjectKind};
use crate::spec::source_map::Segment;

pub const RULE: Rule = Rule {
    id: "permission-crosses-services",
    summary: "a user's write permission covers the queues of more than one service",
    level: Some(Level::Warn),
    explanation: Some(
        "Write permission on a queue lets a user bind it and, through the default exchange, publish into it directly. A service's user that can write to another service's work or retry queues can inject or reroute that service's messages. Narrow the `write` regex to the user's own exchanges (warren's consumers need write access only to their own retry exchange).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      orders:\n        consumers:\n          ship: { routing_keys: [paid] }\n      payments:\n        consumers:\n          charge: { routing_keys: [ordered] }\nusers:\n  orders_app:\n    password: { env: ORDERS_PASSWORD }\n    permissions:\n      v: { configure: '^$', write: '.*', read: '^orders\\.' }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      orders:\n        consumers:\n          ship: { routing_keys: [paid] }\n      payments:\n        consumers:\n          charge: { routing_keys: [ordered] }\nusers:\n  orders_app:\n    password: { env: ORDERS_PASSWORD }\n    permissions:\n      v: { configure: '^$', write: '^orders\\.ship\\.retry$', read: '^orders\\.' }\n",
        run: check,
    },
};

/// The service a generated queue belongs to, from its spec path.
fn service_of(context: &Context, vhost: &str, queue: &str) -> Option<String> {
    let id = ObjectId::in_vhost(ObjectKind::Queue, vhost, queue);
    let path = context.origins?.get(&id)?;
    match path.segments().as_slice() {
        [
            Segment::Key(v),
            _,
            Segment::Key(s),
            Segment::Key(service),
            ..,
        ] if v == "vhosts" && s == "services" => Some(service.clone()),
        _ => None,
    }
}

fn check(context: &Context) -> Vec<Finding> {
    if context.origins.is_none() {
        return Vec::new();
    }
    let mut findings = Vec::new();
    for permission in &context.definitions.permissions {
        let Ok(write) = fancy_regex::Regex::new(&permission.write) else {
            continue;
        };
        let services: BTreeSet<String> = context
            .definitions
            .queues
            .iter()
            .filter(|q| q.vhost == permission.vhost && write.is_match(&q.name).unwrap_or(false))
            .filter_map(|q| service_of(context, &q.vhost, &q.name))
            .collect();
        if services.len() > 1 {
            findings.push(
                Finding::on(
                    ObjectId::in_vhost(ObjectKind::Permission, &permission.vhost, &permission.user),
                    format!(
                        "user `{}` may write to the queues of services {}",
                        permission.user,
                        services
                            .iter()
                            .map(|s| format!("`{s}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .fix("narrow the `write` regex to the user's own exchanges and retry exchanges"),
            );
        }
    }
    findings
}
