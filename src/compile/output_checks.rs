//! Checks of the compiled output: every name the spec asks the broker to create is one
//! the broker accepts (not empty, at most 255 bytes, not `amq.`), every reference
//! between objects (a binding's ends, an alternate or dead-letter exchange) names an
//! object that exists, and every permission regex is one the target's broker accepts
//! (its length). It generates no name: that is `naming`'s job.

use rustc_hash::FxHashSet;

use super::{Emitter, ObjectId, ObjectKind, binding_id};
use crate::model::addressable::unaddressable;
use crate::spec::SpecPath;

/// The longest name RabbitMQ accepts (an AMQP 0-9-1 short string), in bytes.
pub const MAX_NAME_BYTES: usize = 255;

pub use crate::model::PREDEFINED_EXCHANGES;

/// Checks a name the spec asks the broker to create.
pub(crate) fn check_name(out: &mut Emitter, kind: &str, name: &str, path: &SpecPath) {
    if name.is_empty() {
        out.error("invalid-name", format!("{kind} name is empty"), path.clone())
            .hint("give it a name: empty names are reserved for the default exchange and server-named queues");
        return;
    }
    if name.len() > MAX_NAME_BYTES {
        out.error(
            "invalid-name",
            format!(
                "{kind} name `{name}` is {} bytes long; RabbitMQ allows {MAX_NAME_BYTES}",
                name.len()
            ),
            path.clone(),
        )
        .hint("shorten the name (generated names add suffixes such as `.retry.1` and `.parking` to the work queue name)");
    }
    if name.starts_with("amq.") {
        out.error(
            "invalid-name",
            format!("{kind} name `{name}` starts with `amq.`, which RabbitMQ reserves"),
            path.clone(),
        )
        .hint("pick a name without the `amq.` prefix");
    }
    if name.contains(['\r', '\n']) {
        out.error(
            "invalid-name",
            format!("{kind} name {name:?} contains a line break"),
            path.clone(),
        );
    }
}

/// Checks that every binding, alternate exchange and dead-letter exchange names an
/// object that exists.
#[expect(
    clippy::too_many_lines,
    reason = "one check per kind of cross-reference, in the order the output is emitted"
)]
pub(crate) fn check_references(out: &mut Emitter) {
    let exchanges: FxHashSet<(&str, &str)> = out
        .definitions
        .exchanges
        .iter()
        .map(|e| (e.vhost.as_str(), e.name.as_str()))
        .collect();
    let queues: FxHashSet<(&str, &str)> = out
        .definitions
        .queues
        .iter()
        .map(|q| (q.vhost.as_str(), q.name.as_str()))
        .collect();
    // Candidates for a did-you-mean, in a stable order.
    let names_in = |set: &FxHashSet<(&str, &str)>, vhost: &str| -> Vec<String> {
        let mut names: Vec<String> = set
            .iter()
            .filter(|(v, _)| *v == vhost)
            .map(|(_, n)| n.to_string())
            .collect();
        names.sort();
        names
    };
    let exchange_exists = |vhost: &str, name: &str| {
        PREDEFINED_EXCHANGES.contains(&name) || exchanges.contains(&(vhost, name))
    };
    let mut problems = Vec::new();
    for binding in &out.definitions.bindings {
        // Looked up only when there is something to report.
        let path = || {
            out.origins
                .get(&binding_id(binding))
                .cloned()
                .unwrap_or_default()
        };
        if binding.source.is_empty() {
            problems.push((
                "invalid-reference",
                "the default exchange cannot be bound: it routes to every queue by name already"
                    .to_string(),
                path().key("source"),
                None,
            ));
        } else if !exchange_exists(&binding.vhost, &binding.source) {
            problems.push((
                "invalid-reference",
                format!(
                    "binding source exchange `{}` does not exist in vhost `{}`",
                    binding.source, binding.vhost
                ),
                path().key("source"),
                suggestion(&binding.source, names_in(&exchanges, &binding.vhost)),
            ));
        }
        let destination_exists = match binding.destination_type.as_str() {
            "exchange" => exchange_exists(&binding.vhost, &binding.destination),
            _ => queues.contains(&(binding.vhost.as_str(), binding.destination.as_str())),
        };
        if !destination_exists {
            let candidates = if binding.destination_type == "exchange" {
                names_in(&exchanges, &binding.vhost)
            } else {
                names_in(&queues, &binding.vhost)
            };
            problems.push((
                "invalid-reference",
                format!(
                    "binding destination {} `{}` does not exist in vhost `{}`",
                    binding.destination_type, binding.destination, binding.vhost
                ),
                path().key("destination"),
                suggestion(&binding.destination, candidates),
            ));
        }
    }
    for exchange in &out.definitions.exchanges {
        if let Some(alternate) = exchange
            .arguments
            .get("alternate-exchange")
            .and_then(|v| v.as_str())
            && !exchange_exists(&exchange.vhost, alternate)
        {
            let path = origin(out, ObjectKind::Exchange, &exchange.vhost, &exchange.name);
            if is_plain(&path) {
                continue; // legal, and lint's `alternate-exchange-missing`
            }
            problems.push((
                    "invalid-reference",
                    format!(
                        "alternate exchange `{alternate}` of `{}` does not exist: unroutable messages would be dropped",
                        exchange.name
                    ),
                    path.key("alternate_exchange"),
                    suggestion(alternate, names_in(&exchanges, &exchange.vhost)),
                ));
        }
    }
    for queue in &out.definitions.queues {
        if let Some(dlx) = queue
            .arguments
            .get("x-dead-letter-exchange")
            .and_then(|v| v.as_str())
            && !dlx.is_empty()
            && !exchange_exists(&queue.vhost, dlx)
        {
            let path = origin(out, ObjectKind::Queue, &queue.vhost, &queue.name);
            if is_plain(&path) {
                continue; // legal, and lint's `dead-letter-exchange-missing`
            }
            problems.push((
                    "invalid-reference",
                    format!(
                        "dead-letter exchange `{dlx}` of queue `{}` does not exist: dead-lettered messages would be dropped silently",
                        queue.name
                    ),
                    path.key("arguments").key("x-dead-letter-exchange"),
                    suggestion(dlx, names_in(&exchanges, &queue.vhost)),
                ));
        }
    }
    for (code, message, path, help) in problems {
        let diagnostic = out.error(code, message, path);
        if let Some(help) = help {
            diagnostic.hint(help);
        }
    }
}

/// Whether an object was written by the user under `vhosts.V.exchanges` or
/// `vhosts.V.queues` (the escape hatch, and everything `warren import` writes) rather
/// than generated from services and consumers.
///
/// The broker accepts a plain object that names a missing alternate or dead-letter
/// exchange (its messages are then dropped), so such an object is a lint finding, not
/// a compile error: an imported spec always compiles, and the team tightens it later.
/// In generated topology the same reference is a compile error: warren's own output
/// must never drop a message.
fn is_plain(path: &SpecPath) -> bool {
    use crate::spec::source_map::Segment;
    matches!(
        path.segments().as_slice(),
        [Segment::Key(vhosts), _, Segment::Key(section), ..]
            if vhosts == "vhosts" && (section == "exchanges" || section == "queues")
    )
}

fn origin(out: &Emitter, kind: ObjectKind, vhost: &str, name: &str) -> SpecPath {
    out.origins
        .get(&ObjectId::in_vhost(kind, vhost, name))
        .cloned()
        .unwrap_or_default()
}

fn suggestion(given: &str, candidates: Vec<String>) -> Option<String> {
    crate::suggest::closest(given, &candidates).map(|best| format!("did you mean `{best}`?"))
}

/// Refuses every name of the output the management API cannot address
/// ([`unaddressable`]), at the line that wrote it. Objects of a vhost that cannot be
/// addressed are not named again: the vhost's error says it.
pub(crate) fn check_addressable(out: &mut Emitter) {
    let d = &out.definitions;
    let vhosts = d.vhosts.iter().map(|v| (ObjectKind::Vhost, None, &v.name));
    let users = d.users.iter().map(|u| (ObjectKind::User, None, &u.name));
    let queues = d
        .queues
        .iter()
        .map(|q| (ObjectKind::Queue, Some(&q.vhost), &q.name));
    let exchanges = d
        .exchanges
        .iter()
        .map(|e| (ObjectKind::Exchange, Some(&e.vhost), &e.name));
    let policies = d
        .policies
        .iter()
        .map(|p| (ObjectKind::Policy, Some(&p.vhost), &p.name));
    let parameters = d.parameters.iter().map(|p| {
        let kind = if p.as_operator_policy().is_some() {
            ObjectKind::OperatorPolicy
        } else {
            ObjectKind::Parameter
        };
        (kind, Some(&p.vhost), &p.name)
    });
    let found: Vec<(ObjectId, &'static str)> = vhosts
        .chain(users)
        .chain(queues)
        .chain(exchanges)
        .chain(policies)
        .chain(parameters)
        .filter(|(_, vhost, _)| vhost.is_none_or(|v| unaddressable(v).is_none()))
        .filter_map(|(kind, vhost, name)| {
            let why = unaddressable(name)?;
            Some((ObjectId::new(kind, vhost, name), why))
        })
        .collect();
    for (id, why) in found {
        let path = out.origins.get(&id).cloned().unwrap_or_else(|| {
            let vhost =
                ObjectId::global(ObjectKind::Vhost, id.vhost.as_deref().unwrap_or_default());
            out.origins.get(&vhost).cloned().unwrap_or_default()
        });
        out.error(
            "invalid-name",
            format!("the name of {id} cannot be used: {why}"),
            path,
        )
        .hint("rename it: any name but `.` and `..` works");
    }
}

/// Refuses a permission or topic permission whose regex (written, generated, or both
/// joined) is longer than the target's broker accepts
/// ([`TargetVersion::pattern_byte_limit`](crate::model::TargetVersion::pattern_byte_limit)):
/// the broker would refuse it in the middle of an apply. Unlike a policy's pattern, a
/// permission cannot be split: a user has one regex per vhost and field.
pub(crate) fn check_permission_lengths(out: &mut Emitter) {
    let target = out.options.target;
    let Some(limit) = target.pattern_byte_limit() else {
        return;
    };
    let d = &out.definitions;
    let permissions = d.permissions.iter().flat_map(|p| {
        let id = ObjectId::in_vhost(ObjectKind::Permission, &p.vhost, &p.user);
        [
            ("configure", &p.configure),
            ("write", &p.write),
            ("read", &p.read),
        ]
        .map(|(field, regex)| (id.clone(), &p.user, field, regex.len()))
    });
    let topic_permissions = d.topic_permissions.iter().flat_map(|t| {
        let id = ObjectId::in_vhost(
            ObjectKind::TopicPermission,
            &t.vhost,
            format!("{} on {}", t.user, t.exchange),
        );
        [("write", &t.write), ("read", &t.read)]
            .map(|(field, regex)| (id.clone(), &t.user, field, regex.len()))
    });
    let found: Vec<(ObjectId, String, &'static str, usize)> = permissions
        .chain(topic_permissions)
        .filter(|(_, _, _, length)| *length > limit)
        .map(|(id, user, field, length)| (id, user.clone(), field, length))
        .collect();
    for (id, user, field, length) in found {
        let path = out.origins.get(&id).cloned().unwrap_or_default();
        out.error(
            "unsupported-by-target",
            format!(
                "the `{field}` regex of {id} is {length} bytes; the target {target} allows {limit} (RabbitMQ 4.3 refuses a longer one, and the whole apply with it)"
            ),
            path,
        )
        .hint(format!(
            "give the consumers and publishers of user `{user}` users of their own (each one's regex lists only its queues and exchanges), shorten the written regex, or compile for an older `--target-version`"
        ));
    }
}
