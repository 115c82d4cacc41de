//! Least-privilege permissions generated from the topology.
//!
//! A consumer that names its `user` and a service that names its `publishers` tell
//! warren exactly which queues and exchanges an application touches, so warren writes
//! the exact regexes instead of the `.*` applications usually get: `read` the queues a
//! consumer consumes from (the contract's `consume_from`), `write` the exchanges it must
//! publish to (its retry exchange when the contract has it publish there, a service's
//! inner exchange or a plain exchange for their publishers), `configure` nothing. A permission written in the
//! spec for the same user and vhost is added to the generated one, field by field.

use std::collections::{BTreeMap, BTreeSet};

use super::Emitter;
use crate::model::pattern::{either, permission_pattern, topic_patterns_regex};
use crate::model::{ObjectId, ObjectKind, Permission, TopicPermission};
use crate::spec::{ExchangeType, Spec, SpecPath};

/// A permission warren generated for a user in a vhost, before any written one is added:
/// what the user's part in the topology needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedPermission {
    /// User name.
    pub user: String,
    /// Vhost name.
    pub vhost: String,
    /// Always `^$`: applications declare and delete nothing of the topology.
    pub configure: String,
    /// The exchanges the user publishes to.
    pub write: String,
    /// The queues the user consumes from.
    pub read: String,
}

/// A user publishing to an exchange the spec declares (a service's inner exchange or a
/// plain one, `publishers:`), as its emitter found it.
#[derive(Debug, Clone)]
pub(crate) struct PublisherUse {
    pub vhost: String,
    pub exchange: String,
    /// The exchange's type as the broker names it (`topic`, `direct`, `x-…`).
    pub exchange_type: String,
    pub user: String,
    pub routing_keys: Option<Vec<String>>,
    /// The entry in `publishers`.
    pub path: SpecPath,
}

/// What one user needs in one vhost.
#[derive(Default)]
struct Need {
    read: BTreeSet<String>,
    write: BTreeSet<String>,
    /// The first reference to the user in the vhost: where the permission comes from.
    path: Option<SpecPath>,
}

/// Generates the permissions of every user a consumer or a service names, and adds them
/// to the written ones (run after [`super::users::emit_all`]).
#[expect(
    clippy::too_many_lines,
    reason = "the permissions of every role (consumers, publishers, written ones) are added in one pass so that none is counted twice"
)]
pub(crate) fn emit_all(spec: &Spec, out: &mut Emitter) {
    let known: Vec<String> = spec.users.keys().cloned().collect();
    let mut needs: BTreeMap<(String, String), Need> = BTreeMap::new();
    let mut topics: BTreeMap<(String, String, String), (BTreeSet<String>, SpecPath)> =
        BTreeMap::new();
    let consumers: Vec<_> = out
        .contract
        .consumers
        .iter()
        .filter(|c| c.user.is_some())
        .cloned()
        .collect();
    for consumer in consumers {
        let user = consumer.user.clone().expect("filtered");
        let path = SpecPath::root()
            .key("vhosts")
            .key(&consumer.vhost)
            .key("services")
            .key(&consumer.service)
            .key("consumers")
            .key(&consumer.consumer)
            .key("user");
        if !check_user(&known, &user, &path, out) {
            continue;
        }
        let need = needs.entry((consumer.vhost.clone(), user)).or_default();
        need.path.get_or_insert(path);
        need.read.extend(consumer.consume_from.iter().cloned());
        if let Some(retry) = consumer.retry.as_ref().filter(|r| r.publishes()) {
            need.write.insert(retry.exchange.clone());
        }
    }
    let mut listed: BTreeSet<(String, String, String)> = BTreeSet::new();
    for publisher in std::mem::take(&mut out.publishers) {
        let user_path = if publisher.routing_keys.is_some() {
            publisher.path.key("user")
        } else {
            publisher.path.clone()
        };
        if !check_user(&known, &publisher.user, &user_path, out) {
            continue;
        }
        // Two entries would leave unclear which routing keys hold: the broker has one
        // topic permission per user and exchange.
        if !listed.insert((
            publisher.vhost.clone(),
            publisher.exchange.clone(),
            publisher.user.clone(),
        )) {
            out.error(
                "duplicate-name",
                format!(
                    "user `{}` is listed twice in the publishers of exchange `{}`",
                    publisher.user, publisher.exchange
                ),
                user_path,
            )
            .hint("keep one entry; list every routing key it may publish with in that one");
            continue;
        }
        if let Some(keys) = &publisher.routing_keys {
            let keys_path = publisher.path.key("routing_keys");
            if publisher.exchange_type != ExchangeType::Topic.as_str() {
                out.error(
                    "invalid-value",
                    format!(
                        "`routing_keys` limits a publisher only on a topic exchange, and `{}` is {}: the broker has no way to enforce it",
                        publisher.exchange, publisher.exchange_type
                    ),
                    keys_path,
                )
                .hint(format!(
                    "write the publisher as `- {}` (any routing key), or make the exchange `type: topic`",
                    publisher.user
                ));
                continue;
            }
            if keys.is_empty() {
                out.error(
                    "invalid-value",
                    format!(
                        "publisher `{}` may publish with no routing key at all",
                        publisher.user
                    ),
                    keys_path,
                )
                .hint("list the keys it publishes with (`#` allows every key), or remove the publisher");
                continue;
            }
            let (set, _) = topics
                .entry((
                    publisher.vhost.clone(),
                    publisher.user.clone(),
                    publisher.exchange.clone(),
                ))
                .or_insert_with(|| (BTreeSet::new(), publisher.path.clone()));
            set.extend(keys.iter().cloned());
        }
        let need = needs
            .entry((publisher.vhost.clone(), publisher.user.clone()))
            .or_default();
        need.path.get_or_insert(publisher.path.clone());
        need.write.insert(publisher.exchange.clone());
    }
    for ((vhost, user), need) in needs {
        let names = |set: &BTreeSet<String>| {
            permission_pattern(&set.iter().map(String::as_str).collect::<Vec<_>>())
        };
        let generated = GeneratedPermission {
            user: user.clone(),
            vhost: vhost.clone(),
            configure: permission_pattern(&[]),
            write: names(&need.write),
            read: names(&need.read),
        };
        add_permission(&generated, need.path.expect("set with the need"), out);
        out.generated_permissions.push(generated);
    }
    for ((vhost, user, exchange), (keys, path)) in topics {
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let write = topic_patterns_regex(&keys);
        if let Some(written) = out
            .definitions
            .topic_permissions
            .iter_mut()
            .find(|t| t.user == user && t.vhost == vhost && t.exchange == exchange)
        {
            written.write = either(&write, &written.write);
            continue;
        }
        let id = ObjectId::in_vhost(
            ObjectKind::TopicPermission,
            &vhost,
            format!("{user} on {exchange}"),
        );
        if out.claim(id, &path) {
            out.definitions.topic_permissions.push(TopicPermission {
                user,
                vhost,
                exchange,
                write,
                read: String::new(),
            });
        }
    }
}

/// Adds a generated permission to the one written for the same user and vhost, or emits
/// it on its own.
fn add_permission(generated: &GeneratedPermission, path: SpecPath, out: &mut Emitter) {
    if let Some(written) = out
        .definitions
        .permissions
        .iter_mut()
        .find(|p| p.user == generated.user && p.vhost == generated.vhost)
    {
        written.configure = either(&generated.configure, &written.configure);
        written.write = either(&generated.write, &written.write);
        written.read = either(&generated.read, &written.read);
        return;
    }
    let id = ObjectId::in_vhost(ObjectKind::Permission, &generated.vhost, &generated.user);
    if out.claim(id, &path) {
        out.definitions.permissions.push(Permission {
            user: generated.user.clone(),
            vhost: generated.vhost.clone(),
            configure: generated.configure.clone(),
            write: generated.write.clone(),
            read: generated.read.clone(),
        });
    }
}

/// Whether `user` is declared under `users`; reports it at `path` when not.
fn check_user(known: &[String], user: &str, path: &SpecPath, out: &mut Emitter) -> bool {
    if known.iter().any(|k| k == user) {
        return true;
    }
    let help = match crate::suggest::closest(user, known) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!(
            "declare it under top-level `users:` (`{user}: {{ password: {{ env: VARIABLE }} }}`)"
        ),
    };
    out.error(
        "invalid-reference",
        format!("user `{user}` is not declared in this spec"),
        path.clone(),
    )
    .hint(help);
    false
}
