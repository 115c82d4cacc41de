//! The dead-letter graph: an edge from each queue to every queue its dead letters can
//! reach (through its dead-letter exchange, exchange-to-exchange bindings and
//! alternate exchanges), routed by `model::routing`.

use rustc_hash::FxHashMap;

use crate::lint::Context;
use crate::lint::facts::{QueueFacts, cycles};
use crate::model::routing::{Message, Route, Routes};
use crate::model::{ObjectId, ObjectKind};

/// Queues, their facts, and where their dead letters go.
pub struct Graph<'a> {
    /// Facts per queue (index = node).
    pub facts: Vec<QueueFacts<'a>>,
    /// Dead-letter route per queue (`None`: no dead-letter exchange).
    pub routes: Vec<Option<Route<'a>>>,
    /// Edges per queue.
    pub edges: Vec<Vec<usize>>,
}

impl<'a> Graph<'a> {
    /// Builds the graph.
    pub fn new(context: &Context<'a>) -> Graph<'a> {
        let facts = context.queue_facts();
        let topology = Routes::new(context.definitions, context.target);
        let index: FxHashMap<(&str, &str), usize> = facts
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.queue.vhost.as_str(), f.queue.name.as_str()), i))
            .collect();
        let mut routes = Vec::with_capacity(facts.len());
        let mut edges = Vec::with_capacity(facts.len());
        for fact in &facts {
            // A dead letter keeps its own routing keys unless the queue sets one, and
            // its headers are the publisher's: what the lint cannot know may match.
            let keys: Option<[String; 1]> = fact.dead_letter_routing_key.map(|k| [k.to_string()]);
            let message = Message {
                routing_keys: keys.as_ref().map(|k| k.as_slice()),
                headers: None,
            };
            let route = fact
                .dead_letter_exchange
                .map(|exchange| topology.route(&fact.queue.vhost, exchange, message));
            let targets = route
                .iter()
                .flat_map(|r| r.queues.iter())
                .filter_map(|name| index.get(&(fact.queue.vhost.as_str(), *name)).copied())
                .collect();
            routes.push(route);
            edges.push(targets);
        }
        Graph {
            facts,
            routes,
            edges,
        }
    }

    /// Cycles among the queues for which `keep` holds (edges between kept queues only).
    pub fn cycles_among(&self, keep: impl Fn(&QueueFacts) -> bool) -> Vec<Vec<usize>> {
        let kept: Vec<bool> = self.facts.iter().map(&keep).collect();
        let edges: Vec<Vec<usize>> = self
            .edges
            .iter()
            .enumerate()
            .map(|(v, targets)| {
                if !kept[v] {
                    return Vec::new();
                }
                targets.iter().copied().filter(|w| kept[*w]).collect()
            })
            .collect();
        cycles(&edges)
    }

    /// For each node, whether it is in a dead-letter cycle.
    pub fn in_cycle(&self) -> Vec<bool> {
        let mut marks = vec![false; self.facts.len()];
        for node in self.all_cycles().into_iter().flatten() {
            marks[node] = true;
        }
        marks
    }

    /// Every cycle of the graph.
    pub fn all_cycles(&self) -> Vec<Vec<usize>> {
        cycles(&self.edges)
    }

    /// The id of queue `node`.
    pub fn id(&self, node: usize) -> ObjectId {
        queue_id(&self.facts[node])
    }

    /// Names of the queues of a cycle, in its order, for messages.
    pub fn names(&self, nodes: &[usize]) -> String {
        self.listed(nodes, " → ")
    }

    /// Names of queues, each quoted, between `separator`s.
    pub fn listed(&self, nodes: &[usize], separator: &str) -> String {
        let mut text = String::new();
        for (at, node) in nodes.iter().enumerate() {
            if at > 0 {
                text.push_str(separator);
            }
            text.push('`');
            text.push_str(&self.facts[*node].queue.name);
            text.push('`');
        }
        text
    }
}

/// The id of a queue.
pub fn queue_id(fact: &QueueFacts) -> ObjectId {
    ObjectId::in_vhost(ObjectKind::Queue, &fact.queue.vhost, &fact.queue.name)
}
