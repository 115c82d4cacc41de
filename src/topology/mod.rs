//! The topology a spec builds, as a graph: exchanges and queues as nodes; bindings,
//! dead-letter routes and alternate exchanges as edges; each node placed in its vhost
//! and, when the spec says so, its service and consumer. `warren graph` draws it
//! (render/graph.rs), and a markdown plan draws the part of it that changes.
//!
//! The graph is a picture of facts other modules own: the objects are the compiled
//! definitions, where each queue dead-letters is what lint reads
//! ([`crate::lint::facts::queue_facts`]: arguments, policies and operator policies
//! combined), and which service, consumer and ladder tier an object belongs to comes
//! from the compiler's origins and consumer contract. Nothing here names an object.

mod build;
mod changes;
mod owners;

use std::collections::BTreeSet;

use crate::compile::{self, Options};
use crate::model::TargetVersion;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{QueueType, SpecFile};

pub use changes::{ChangeMark, Picture};

/// A topology: nodes in a stable order (vhost, then service, consumer, the order
/// of the spec's ladders), and the edges between them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Topology {
    /// Exchanges and queues.
    pub nodes: Vec<Node>,
    /// Bindings, dead-letter routes and alternate exchanges, by node index.
    pub edges: Vec<Edge>,
}

/// An exchange or a queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Its vhost.
    pub vhost: String,
    /// Its name on the broker (`""` is the default exchange).
    pub name: String,
    /// Exchange or queue, with its type.
    pub kind: NodeKind,
    /// What it does in the spec.
    pub role: Role,
    /// The service it belongs to, if any.
    pub service: Option<String>,
    /// The consumer it belongs to, if any.
    pub consumer: Option<String>,
}

/// Exchange or queue.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// An exchange; `None` when it is not declared (a predefined `amq.*` exchange,
    /// the default exchange, or one a binding names that does not exist).
    Exchange(Option<String>),
    /// A queue of this type; `None` when it is not declared.
    Queue(Option<QueueType>),
}

/// What a node does in the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// An exchange or queue the spec declares as such (or one it does not declare).
    Plain,
    /// A service's inner exchange.
    ServiceExchange,
    /// A consumer's work queue.
    WorkQueue,
    /// The work queue of a `native` ladder, which holds a failed message back itself
    /// before each redelivery (RabbitMQ 4.3).
    WaitingWorkQueue {
        /// The waits of its retries, as the contract's schedule writes them, e.g.
        /// `1s, 2s, 3s`.
        waits: String,
    },
    /// A consumer's retry exchange.
    RetryExchange,
    /// A delay queue of ladder tier `tier` (from 1).
    Delay {
        /// The tier, from 1.
        tier: usize,
        /// The delay as the spec writes it, e.g. `30s`.
        written: String,
        /// The same delay in milliseconds.
        millis: u64,
    },
    /// The work queue of attempt `attempt` (from 2) of a `reject-chain` ladder.
    Attempt {
        /// The attempt, from 2.
        attempt: usize,
    },
    /// A consumer's parking queue.
    Parking,
}

/// An edge.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// The node a message leaves.
    pub from: usize,
    /// The node it reaches.
    pub to: usize,
    /// Why.
    pub kind: EdgeKind,
}

/// Why a message goes along an edge.
#[derive(Debug, Clone, PartialEq)]
pub enum EdgeKind {
    /// A binding: its routing key, and its arguments (headers bindings) as `k=v`.
    Binding {
        /// The binding's routing key.
        routing_key: String,
        /// Its arguments, `x-match=all`, `type=order`.
        arguments: Vec<String>,
    },
    /// Dead-lettering from a queue to its dead-letter exchange (or, through the
    /// default exchange, straight to the queue the dead-letter routing key names).
    DeadLetter {
        /// How long a message waits first (the queue's effective TTL), as the spec
        /// writes it when it does; `None` for a queue without a TTL (its messages
        /// are dead-lettered when rejected, or over a limit).
        delay: Option<String>,
        /// The dead-letter routing key, where it selects the target (a direct or
        /// topic exchange); `None` where the message keeps its key, or the target
        /// ignores keys, or the edge already shows the queue it names.
        routing_key: Option<String>,
    },
    /// An exchange's alternate exchange: where what it cannot route goes.
    Alternate,
}

impl Topology {
    /// The vhosts, in order.
    pub fn vhosts(&self) -> Vec<&str> {
        let mut seen = Vec::new();
        for node in &self.nodes {
            if !seen.contains(&node.vhost.as_str()) {
                seen.push(node.vhost.as_str());
            }
        }
        seen
    }

    /// Only what `vhost` and `service` select: the nodes of that vhost and service,
    /// with the nodes they connect to directly (so that a service's picture shows
    /// where its messages come from and go). An unknown vhost or service is an
    /// error that names the ones there are.
    pub fn filter(&self, vhost: Option<&str>, service: Option<&str>) -> Result<Topology, String> {
        if let Some(vhost) = vhost {
            let known: Vec<String> = self.vhosts().into_iter().map(str::to_string).collect();
            if !known.iter().any(|v| v == vhost) {
                return Err(crate::spec::not_in_spec("vhost", vhost, &known));
            }
        }
        let in_vhost = |node: &Node| vhost.is_none_or(|v| node.vhost == v);
        let mut keep: BTreeSet<usize> = match service {
            None => (0..self.nodes.len())
                .filter(|&i| in_vhost(&self.nodes[i]))
                .collect(),
            Some(service) => {
                let chosen: BTreeSet<usize> = (0..self.nodes.len())
                    .filter(|&i| {
                        let node = &self.nodes[i];
                        in_vhost(node) && node.service.as_deref() == Some(service)
                    })
                    .collect();
                if chosen.is_empty() {
                    let known: Vec<String> = self
                        .nodes
                        .iter()
                        .filter(|node| in_vhost(node))
                        .filter_map(|node| node.service.clone())
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect();
                    return Err(crate::spec::not_in_spec("service", service, &known));
                }
                chosen
            }
        };
        if service.is_some() {
            let neighbours: Vec<usize> = self
                .edges
                .iter()
                .filter_map(
                    |edge| match (keep.contains(&edge.from), keep.contains(&edge.to)) {
                        (true, false) => Some(edge.to),
                        (false, true) => Some(edge.from),
                        _ => None,
                    },
                )
                .collect();
            keep.extend(neighbours);
        }
        Ok(self.subset(&keep))
    }

    /// The nodes in `keep` and the edges between them, renumbered.
    pub fn subset(&self, keep: &BTreeSet<usize>) -> Topology {
        let mut index = vec![None; self.nodes.len()];
        let mut nodes = Vec::with_capacity(keep.len());
        for &old in keep {
            index[old] = Some(nodes.len());
            nodes.push(self.nodes[old].clone());
        }
        let edges = self
            .edges
            .iter()
            .filter_map(|edge| {
                Some(Edge {
                    from: index[edge.from]?,
                    to: index[edge.to]?,
                    kind: edge.kind.clone(),
                })
            })
            .collect();
        Topology { nodes, edges }
    }
}

/// Compiles a spec (without its secrets: a picture needs no password) and builds its
/// topology; the compiler's errors otherwise. The warnings come back with the graph.
pub fn of_spec(
    file: &SpecFile,
    target: TargetVersion,
) -> Result<(Topology, Vec<Diagnostic>), Vec<Diagnostic>> {
    let options = Options {
        target,
        secrets: None,
    };
    let compiled = compile::compile(file, &options)?;
    let owners = owners::of_compiled(file, &compiled);
    let topology = build::build(&compiled.definitions, &owners, target);
    Ok((topology, compiled.warnings))
}

/// The picture of what `plan` changes: the exchanges and queues it creates, updates,
/// replaces or deletes (or whose bindings or policy it changes), with their direct
/// neighbours, at most `cap` of them. Made from the plan alone (no spec: the nodes
/// are grouped by vhost only).
pub fn changes(plan: &crate::plan::Plan, cap: usize) -> Picture {
    let target: TargetVersion = plan
        .target_version
        .parse()
        .unwrap_or(TargetVersion::DEFAULT);
    let definitions = changes::definitions_of(plan);
    let topology = build::build(&definitions, &Owners::default(), target);
    changes::picture(plan, &definitions, topology, target, cap)
}

/// `plan` as `plan -o` saves it: its unchanged exchanges, queues and bindings counted
/// and digested instead of listed ([`crate::plan::Plan::folded`]), except those the
/// picture of its changes with at most `cap` nodes is drawn from, so that `show` of the
/// file draws the picture the plan drew.
pub fn as_saved(plan: &crate::plan::Plan, cap: usize) -> crate::plan::Plan {
    let target: TargetVersion = plan
        .target_version
        .parse()
        .unwrap_or(TargetVersion::DEFAULT);
    let definitions = changes::definitions_of(plan);
    let topology = build::build(&definitions, &Owners::default(), target);
    plan.folded(&changes::context(plan, &definitions, topology, target, cap))
}

/// Who an object belongs to and what it does, for one vhost's exchange or queue.
#[derive(Debug, Clone, Default)]
struct Owner {
    service: Option<String>,
    consumer: Option<String>,
    role: Option<Role>,
}

/// Owners by (is a queue, vhost, name).
type Owners = rustc_hash::FxHashMap<(bool, String, String), Owner>;

#[cfg(test)]
mod tests;
