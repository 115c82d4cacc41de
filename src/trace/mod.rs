//! `warren trace`: where one published message goes, step by step, without a broker.
//!
//! Routing and dead-lettering are `model::routing` and `model::dead_letter` (the code the lint's dead-letter
//! graph uses); each queue's effective settings are `model::queue_facts`; what a
//! consumer does on a failure is the consumer contract (`compile::contract`). This
//! module only walks: it publishes the message, hands each copy to the consumer of
//! its queue, lets that consumer fail the first `failures` deliveries as the contract
//! says, and follows every retry, expiry and dead letter to the copy's end.
//!
//! Here: what is asked ([`Request`]), why there may be no trace ([`Error`]), and the
//! start of the walk (the vhost, the publish). The walk itself is `walk`; what it
//! finds, the [`Trace`] that `render::trace` prints, is `report`.

mod report;
mod walk;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::compile::contract::{ConsumerContract, Contract};
use crate::model::dead_letter::Letter;
use crate::model::queue_facts::{QueueFacts, operator_policies, queue_facts};
use crate::model::routing::{Headers, PublishError, Routes};
use crate::model::{Definitions, TargetVersion};

use report::steps;
pub use report::{CopyEnd, Event, MessageCopy, RouteStep, Trace};
use walk::{Pending, Walk};

/// What to publish, and how often its consumers fail.
#[derive(Debug, Clone)]
pub struct Request {
    /// The vhost (`None`: the spec's only vhost).
    pub vhost: Option<String>,
    /// The exchange (`""`: the default exchange).
    pub exchange: String,
    /// The routing key.
    pub routing_key: String,
    /// Message headers.
    pub headers: Headers,
    /// How many deliveries of a copy each consumer fails before it succeeds.
    pub failures: usize,
}

/// Why there is no trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The spec has no vhost of this name.
    UnknownVhost {
        /// The name asked for.
        vhost: String,
        /// The spec's vhosts.
        choices: Vec<String>,
    },
    /// The spec has several vhosts and none was chosen.
    VhostAmbiguous {
        /// The spec's vhosts.
        choices: Vec<String>,
    },
    /// The exchange does not exist in the vhost.
    UnknownExchange {
        /// The vhost.
        vhost: String,
        /// The exchange.
        exchange: String,
        /// The closest existing name, if any.
        suggestion: Option<String>,
        /// The vhost's exchanges.
        choices: Vec<String>,
    },
    /// The exchange is internal: clients cannot publish to it.
    InternalExchange {
        /// The vhost.
        vhost: String,
        /// The exchange.
        exchange: String,
    },
    /// A `--headers` value is not `name=value`.
    BadHeader(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |names: &[String]| {
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Error::UnknownVhost { vhost, choices } => write!(
                f,
                "the spec has no vhost `{vhost}`; its vhosts: {}",
                list(choices)
            ),
            Error::VhostAmbiguous { choices } => write!(
                f,
                "the spec has several vhosts ({}): choose one with --vhost",
                list(choices)
            ),
            Error::UnknownExchange {
                vhost,
                exchange,
                suggestion,
                choices,
            } => {
                write!(f, "vhost `{vhost}` has no exchange `{exchange}`")?;
                if let Some(suggestion) = suggestion {
                    write!(f, " (did you mean `{suggestion}`?)")?;
                }
                write!(
                    f,
                    "; its exchanges: {} (or `\"\"`, the default exchange)",
                    list(choices)
                )
            }
            Error::InternalExchange { vhost, exchange } => write!(
                f,
                "exchange `{exchange}` in vhost `{vhost}` is internal: clients cannot publish to it (the broker refuses with 403); publish to an exchange bound to it"
            ),
            Error::BadHeader(text) => write!(
                f,
                "--headers `{text}` is not `name=value` (e.g. --headers format=pdf)"
            ),
        }
    }
}

/// Reads one `--headers name=value`: the value is a string, as most clients send it.
pub fn parse_header(text: &str) -> Result<(String, Value), Error> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => {
            Ok((name.to_string(), Value::String(value.to_string())))
        }
        _ => Err(Error::BadHeader(text.to_string())),
    }
}

/// Traces `request` through the compiled spec's definitions for `target`.
pub fn trace(
    definitions: &Definitions,
    contract: &Contract,
    target: TargetVersion,
    request: &Request,
) -> Result<Trace, Error> {
    let vhost = choose_vhost(definitions, request.vhost.as_deref())?;
    let topology = Routes::new(definitions, target);
    let exchange = request.exchange.as_str();
    match topology.check_publish(vhost, exchange) {
        Ok(()) => {}
        Err(PublishError::Missing) => {
            let choices: Vec<String> = definitions
                .exchanges
                .iter()
                .filter(|e| e.vhost == vhost)
                .map(|e| e.name.clone())
                .collect();
            return Err(Error::UnknownExchange {
                vhost: vhost.to_string(),
                exchange: exchange.to_string(),
                suggestion: crate::suggest::closest(exchange, &choices).map(str::to_string),
                choices,
            });
        }
        Err(PublishError::Internal) => {
            return Err(Error::InternalExchange {
                vhost: vhost.to_string(),
                exchange: exchange.to_string(),
            });
        }
    }
    let operators = operator_policies(definitions);
    let facts = queue_facts(definitions, &operators, target);
    let facts: BTreeMap<&str, &QueueFacts> = facts
        .iter()
        .filter(|f| f.queue.vhost == vhost)
        .map(|f| (f.queue.name.as_str(), f))
        .collect();
    let consumers: Vec<&ConsumerContract> = contract
        .consumers
        .iter()
        .filter(|c| c.vhost == vhost)
        .collect();
    let letter = Letter::published(&request.routing_key, request.headers.clone());
    let route = topology.route(vhost, exchange, letter.message());
    let mut walk = Walk {
        vhost,
        topology: &topology,
        facts: &facts,
        consumers: &consumers,
        failures: request.failures,
        target,
        copies: Vec::new(),
        pending: Vec::new(),
        steps: 0,
        notes: Vec::new(),
    };
    if !route.unknown_types.is_empty() {
        walk.note_unknown_types(&route);
    }
    for queue in &route.queues {
        walk.pending.push(Pending {
            letter: letter.clone(),
            queue: queue.to_string(),
            split_from: None,
            deliveries: vec![0; consumers.len()],
        });
    }
    walk.run();
    Ok(Trace {
        vhost: vhost.to_string(),
        exchange: request.exchange.clone(),
        routing_key: request.routing_key.clone(),
        headers: request.headers.clone(),
        failures: request.failures,
        target_version: target.to_string(),
        route: steps(&route),
        queues: route.queues.iter().map(|q| q.to_string()).collect(),
        copies: walk.copies,
        notes: walk.notes,
    })
}

fn choose_vhost<'d>(definitions: &'d Definitions, asked: Option<&str>) -> Result<&'d str, Error> {
    let mut names: Vec<&'d str> = definitions.vhosts.iter().map(|v| v.name.as_str()).collect();
    for queue in &definitions.queues {
        if !names.contains(&queue.vhost.as_str()) {
            names.push(&queue.vhost);
        }
    }
    let choices = || names.iter().map(|n| n.to_string()).collect();
    match asked {
        Some(asked) => {
            names
                .iter()
                .copied()
                .find(|n| *n == asked)
                .ok_or_else(|| Error::UnknownVhost {
                    vhost: asked.to_string(),
                    choices: choices(),
                })
        }
        None => match names.as_slice() {
            [only] => Ok(only),
            _ => Err(Error::VhostAmbiguous { choices: choices() }),
        },
    }
}
