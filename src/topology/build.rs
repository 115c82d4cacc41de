//! The graph of a set of definitions: a node per exchange and queue, an edge per
//! binding, alternate exchange and dead-letter route.

use rustc_hash::FxHashMap;

use super::{Edge, EdgeKind, Node, NodeKind, Owners, Role, Topology};
use crate::lint::facts::{operator_policies, queue_facts};
use crate::model::{Definitions, TargetVersion};
use crate::spec::{Duration, QueueType};

/// Builds the topology of `definitions`, placing objects as `owners` says (an object
/// without an owner is a plain exchange or queue of its vhost).
pub(super) fn build(definitions: &Definitions, owners: &Owners, target: TargetVersion) -> Topology {
    let mut graph = Graph::default();
    for exchange in &definitions.exchanges {
        graph.node(
            false,
            &exchange.vhost,
            &exchange.name,
            NodeKind::Exchange(Some(exchange.kind.clone())),
            owners,
        );
    }
    for queue in &definitions.queues {
        graph.node(
            true,
            &queue.vhost,
            &queue.name,
            NodeKind::Queue(Some(QueueType::of(queue))),
            owners,
        );
    }
    let mut edges = Vec::new();
    for binding in &definitions.bindings {
        let from = graph.exchange(&binding.vhost, &binding.source, owners);
        let to = if binding.destination_type == "exchange" {
            graph.exchange(&binding.vhost, &binding.destination, owners)
        } else {
            graph.queue(&binding.vhost, &binding.destination, owners)
        };
        let arguments = binding
            .arguments
            .iter()
            .map(|(key, value)| match value.as_str() {
                Some(text) => format!("{key}={text}"),
                None => format!("{key}={value}"),
            })
            .collect();
        edges.push(Edge {
            from,
            to,
            kind: EdgeKind::Binding {
                routing_key: binding.routing_key.clone(),
                arguments,
            },
        });
    }
    // The alternate exchange in force (argument, else policy), as routing sees it.
    let routing = crate::model::routing::Routes::new(definitions, target);
    for exchange in &definitions.exchanges {
        if let Some(alternate) = routing
            .exchange(&exchange.vhost, &exchange.name)
            .and_then(|info| info.alternate)
        {
            let from = graph.exchange(&exchange.vhost, &exchange.name, owners);
            let to = graph.exchange(&exchange.vhost, alternate, owners);
            edges.push(Edge {
                from,
                to,
                kind: EdgeKind::Alternate,
            });
        }
    }
    let operators = operator_policies(definitions);
    for facts in queue_facts(definitions, &operators, target) {
        let Some(exchange) = facts.dead_letter_exchange else {
            continue;
        };
        let vhost = &facts.queue.vhost;
        let from = graph.queue(vhost, &facts.queue.name, owners);
        let delay = facts.message_ttl.map(|millis| {
            match owners
                .get(&(true, vhost.clone(), facts.queue.name.clone()))
                .and_then(|owner| owner.role.as_ref())
            {
                Some(Role::Delay {
                    written, millis: m, ..
                }) if *m == millis => written.clone(),
                _ => Duration::from_millis(millis).to_string(),
            }
        });
        let key = facts.dead_letter_routing_key;
        let (to, routing_key) = match (exchange, key) {
            // The default exchange delivers to the queue the key names.
            ("", Some(queue)) => (graph.queue(vhost, queue, owners), None),
            (exchange, key) => {
                let to = graph.exchange(vhost, exchange, owners);
                let selects = match &graph.nodes[to].kind {
                    NodeKind::Exchange(Some(kind)) => kind == "direct" || kind == "topic",
                    _ => true,
                };
                (to, key.filter(|_| selects).map(str::to_string))
            }
        };
        edges.push(Edge {
            from,
            to,
            kind: EdgeKind::DeadLetter { delay, routing_key },
        });
    }
    graph.finish(edges)
}

#[derive(Default)]
struct Graph {
    nodes: Vec<Node>,
    index: FxHashMap<(bool, String, String), usize>,
}

impl Graph {
    fn node(
        &mut self,
        is_queue: bool,
        vhost: &str,
        name: &str,
        kind: NodeKind,
        owners: &Owners,
    ) -> usize {
        let key = (is_queue, vhost.to_string(), name.to_string());
        if let Some(&at) = self.index.get(&key) {
            return at;
        }
        let owner = owners.get(&key).cloned().unwrap_or_default();
        self.nodes.push(Node {
            vhost: vhost.to_string(),
            name: name.to_string(),
            kind,
            role: owner.role.unwrap_or(Role::Plain),
            service: owner.service,
            consumer: owner.consumer,
        });
        self.index.insert(key, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    /// The node of an exchange, made undeclared when the definitions lack it.
    fn exchange(&mut self, vhost: &str, name: &str, owners: &Owners) -> usize {
        self.node(false, vhost, name, NodeKind::Exchange(None), owners)
    }

    /// The node of a queue, made undeclared when the definitions lack it.
    fn queue(&mut self, vhost: &str, name: &str, owners: &Owners) -> usize {
        self.node(true, vhost, name, NodeKind::Queue(None), owners)
    }

    /// Sorts the nodes (vhost, service, consumer, role, name) and renumbers the edges.
    fn finish(self, mut edges: Vec<Edge>) -> Topology {
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by_cached_key(|&i| {
            let node = &self.nodes[i];
            (
                node.vhost.clone(),
                node.service.is_none(),
                node.service.clone(),
                node.consumer.clone(),
                rank(&node.role),
                node.name.clone(),
            )
        });
        let mut new_index = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let mut nodes = self.nodes;
        let mut sorted: Vec<Option<Node>> = nodes.drain(..).map(Some).collect();
        let nodes: Vec<Node> = order
            .iter()
            .map(|&old| sorted[old].take().expect("each node once"))
            .collect();
        for edge in &mut edges {
            edge.from = new_index[edge.from];
            edge.to = new_index[edge.to];
        }
        edges.sort_by_key(|edge| (edge.from, edge.to));
        Topology { nodes, edges }
    }
}

/// The order of roles within a consumer: where messages arrive, then the ladder in
/// tier order, then the end of it.
fn rank(role: &Role) -> (usize, usize) {
    match role {
        Role::ServiceExchange => (0, 0),
        Role::Plain => (1, 0),
        Role::WorkQueue | Role::WaitingWorkQueue { .. } => (2, 0),
        Role::Attempt { attempt } => (3, *attempt),
        Role::RetryExchange => (4, 0),
        Role::Delay { tier, .. } => (5, *tier),
        Role::Parking => (6, 0),
    }
}
