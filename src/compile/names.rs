//! Name rules and cross-references between the objects of the output.

use std::collections::BTreeSet;

use super::{Emitter, ObjectId, ObjectKind, binding_id};
use crate::spec::SpecPath;

/// The longest name RabbitMQ accepts (an AMQP 0-9-1 short string), in bytes.
pub const MAX_NAME_BYTES: usize = 255;

/// Exchanges every vhost has.
pub const PREDEFINED_EXCHANGES: &[&str] = &[
    "amq.direct",
    "amq.fanout",
    "amq.topic",
    "amq.headers",
    "amq.match",
    "amq.rabbitmq.trace",
];

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
pub(crate) fn check_references(out: &mut Emitter) {
    let exchanges: BTreeSet<(String, String)> = out
        .definitions
        .exchanges
        .iter()
        .map(|e| (e.vhost.clone(), e.name.clone()))
        .collect();
    let queues: BTreeSet<(String, String)> = out
        .definitions
        .queues
        .iter()
        .map(|q| (q.vhost.clone(), q.name.clone()))
        .collect();
    let exchange_exists = |vhost: &str, name: &str| {
        PREDEFINED_EXCHANGES.contains(&name)
            || exchanges.contains(&(vhost.to_string(), name.to_string()))
    };
    let mut problems = Vec::new();
    for binding in &out.definitions.bindings {
        let path = out
            .origins
            .get(&binding_id(binding))
            .cloned()
            .unwrap_or_default();
        if binding.source.is_empty() {
            problems.push((
                "invalid-reference",
                "the default exchange cannot be bound: it routes to every queue by name already"
                    .to_string(),
                path.key("source"),
                None,
            ));
        } else if !exchange_exists(&binding.vhost, &binding.source) {
            problems.push((
                "invalid-reference",
                format!(
                    "binding source exchange `{}` does not exist in vhost `{}`",
                    binding.source, binding.vhost
                ),
                path.key("source"),
                suggestion(
                    &binding.source,
                    exchanges
                        .iter()
                        .filter(|(v, _)| *v == binding.vhost)
                        .map(|(_, n)| n),
                ),
            ));
        }
        let destination_exists = match binding.destination_type.as_str() {
            "exchange" => exchange_exists(&binding.vhost, &binding.destination),
            _ => queues.contains(&(binding.vhost.clone(), binding.destination.clone())),
        };
        if !destination_exists {
            let candidates: Vec<&String> = if binding.destination_type == "exchange" {
                exchanges
                    .iter()
                    .filter(|(v, _)| *v == binding.vhost)
                    .map(|(_, n)| n)
                    .collect()
            } else {
                queues
                    .iter()
                    .filter(|(v, _)| *v == binding.vhost)
                    .map(|(_, n)| n)
                    .collect()
            };
            problems.push((
                "invalid-reference",
                format!(
                    "binding destination {} `{}` does not exist in vhost `{}`",
                    binding.destination_type, binding.destination, binding.vhost
                ),
                path.key("destination"),
                suggestion(&binding.destination, candidates.into_iter()),
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
            problems.push((
                    "invalid-reference",
                    format!(
                        "alternate exchange `{alternate}` of `{}` does not exist: unroutable messages would be dropped",
                        exchange.name
                    ),
                    path.key("alternate_exchange"),
                    suggestion(alternate, exchanges.iter().filter(|(v, _)| *v == exchange.vhost).map(|(_, n)| n)),
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
            problems.push((
                    "invalid-reference",
                    format!(
                        "dead-letter exchange `{dlx}` of queue `{}` does not exist: dead-lettered messages would be dropped silently",
                        queue.name
                    ),
                    path.key("arguments").key("x-dead-letter-exchange"),
                    suggestion(dlx, exchanges.iter().filter(|(v, _)| *v == queue.vhost).map(|(_, n)| n)),
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

fn origin(out: &Emitter, kind: ObjectKind, vhost: &str, name: &str) -> SpecPath {
    out.origins
        .get(&ObjectId {
            kind,
            vhost: Some(vhost.to_string()),
            name: name.to_string(),
        })
        .cloned()
        .unwrap_or_default()
}

fn suggestion<'a>(given: &str, candidates: impl Iterator<Item = &'a String>) -> Option<String> {
    let candidates: Vec<String> = candidates.cloned().collect();
    crate::suggest::closest(given, &candidates).map(|best| format!("did you mean `{best}`?"))
}
