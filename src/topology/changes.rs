//! The part of a plan's topology that changes: the exchanges, queues and bindings a
//! plan creates, updates, replaces or deletes, with the nodes they connect to, so a
//! reviewer sees where the change sits. Built from the plan alone (its desired state
//! and the live values of what it deletes), so a saved plan draws the same picture.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::{EdgeKind, Topology};
use crate::diff::{Action, Change};
use crate::lint::facts::{operator_policies, queue_facts};
use crate::model::objects::definition_entry;
use crate::model::{Definitions, ObjectId, ObjectKind, TargetVersion};
use crate::plan::Plan;

/// What happens to a node or an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeMark {
    /// Created.
    Create,
    /// Changed in place (for a queue: also a change of the policy that applies to it).
    Update,
    /// Deleted and created again.
    Replace,
    /// Deleted.
    Delete,
}

impl ChangeMark {
    fn of(action: Action) -> ChangeMark {
        match action {
            Action::Create => ChangeMark::Create,
            Action::Update => ChangeMark::Update,
            Action::Replace => ChangeMark::Replace,
            Action::Delete => ChangeMark::Delete,
        }
    }
}

/// The picture of a plan's changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Picture {
    /// The changed nodes and their direct neighbours.
    pub topology: Topology,
    /// Per node of [`Picture::topology`]: its change, `None` for a neighbour.
    pub nodes: Vec<Option<ChangeMark>>,
    /// Per edge: its change (a binding's), `None` when unchanged.
    pub edges: Vec<Option<ChangeMark>>,
    /// Exchanges and queues that change (or hold a binding that does), in all.
    pub changed: usize,
    /// How many of them are drawn: fewer than [`Picture::changed`] when capped.
    pub drawn: usize,
}

/// What a plan changes in a topology: a mark per node and per edge, and the nodes that
/// change (or hold an edge that does), in the topology's order.
pub(super) struct Marks {
    nodes: Vec<Option<ChangeMark>>,
    edges: Vec<Option<ChangeMark>>,
    /// The changed nodes and the ends of changed edges.
    pub changed: Vec<usize>,
}

/// The picture of `plan`'s changes in `topology` (the graph of
/// [`definitions_of`]`(plan)`), with at most `cap` nodes.
pub(super) fn picture(
    plan: &Plan,
    definitions: &Definitions,
    topology: Topology,
    target: TargetVersion,
    cap: usize,
) -> Picture {
    let marks = marks(plan, definitions, &topology, target);
    drawn(topology, marks, cap)
}

/// The marks of `plan`'s changes in `topology`.
pub(super) fn marks(
    plan: &Plan,
    definitions: &Definitions,
    topology: &Topology,
    target: TargetVersion,
) -> Marks {
    // Nodes and edges found by key, not by a scan each: a plan from empty, or a
    // policy that reaches every tier queue, looks up tens of thousands of them.
    let mut nodes_by_key: HashMap<(bool, &str, &str), usize> = HashMap::new();
    for (at, node) in topology.nodes.iter().enumerate() {
        let is_queue = matches!(node.kind, super::NodeKind::Queue(_));
        nodes_by_key
            .entry((is_queue, node.vhost.as_str(), node.name.as_str()))
            .or_insert(at);
    }
    let find = |is_queue: bool, vhost: &str, name: &str| {
        nodes_by_key.get(&(is_queue, vhost, name)).copied()
    };
    let mut edges_by_ends: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    for (at, edge) in topology.edges.iter().enumerate() {
        edges_by_ends
            .entry((edge.from, edge.to))
            .or_default()
            .push(at);
    }
    let mut node_marks: Vec<Option<ChangeMark>> = vec![None; topology.nodes.len()];
    let mut edge_marks: Vec<Option<ChangeMark>> = vec![None; topology.edges.len()];
    // Queues whose policy changes: the winning policy of each queue, once applied.
    let operators = operator_policies(definitions);
    let facts = queue_facts(definitions, &operators, target);
    for change in &plan.changes {
        let vhost = change.id.vhost.as_deref().unwrap_or_default();
        let mark = ChangeMark::of(change.action);
        match change.id.kind {
            ObjectKind::Exchange | ObjectKind::Queue => {
                let is_queue = change.id.kind == ObjectKind::Queue;
                if let Some(at) = find(is_queue, vhost, &change.id.name) {
                    node_marks[at] = Some(mark);
                }
            }
            ObjectKind::Binding => {
                if let Some(at) = binding_edge(topology, &edges_by_ends, change, &find) {
                    edge_marks[at] = Some(mark);
                }
            }
            ObjectKind::Policy if change.action != Action::Delete => {
                for fact in &facts {
                    let applies = fact
                        .policy
                        .is_some_and(|p| p.vhost == vhost && p.name == change.id.name);
                    if applies && let Some(at) = find(true, vhost, &fact.queue.name) {
                        node_marks[at].get_or_insert(ChangeMark::Update);
                    }
                }
            }
            _ => {}
        }
    }
    // A changed binding changes what its ends do: both are drawn as changed neighbours.
    let mut changed: Vec<usize> = (0..node_marks.len())
        .filter(|&i| node_marks[i].is_some())
        .collect();
    let mut around: BTreeSet<usize> = BTreeSet::new();
    for (edge, mark) in topology.edges.iter().zip(&edge_marks) {
        if mark.is_some() {
            around.insert(edge.from);
            around.insert(edge.to);
        }
    }
    changed.extend(around);
    changed.sort_unstable();
    changed.dedup();
    Marks {
        nodes: node_marks,
        edges: edge_marks,
        changed,
    }
}

/// The picture of the first `cap` changed nodes and their neighbours.
fn drawn(topology: Topology, marks: Marks, cap: usize) -> Picture {
    let Marks {
        nodes: node_marks,
        edges: edge_marks,
        changed,
    } = marks;
    let total = changed.len();
    // Sets, not lists: a saved plan's picture is drawn uncapped, over every queue a
    // changed policy reaches.
    let drawn: BTreeSet<usize> = changed.into_iter().take(cap).collect();
    let mut keep: BTreeSet<usize> = drawn.clone();
    for edge in &topology.edges {
        for (here, there) in [(edge.from, edge.to), (edge.to, edge.from)] {
            if keep.len() < cap && drawn.contains(&here) {
                keep.insert(there);
            }
        }
    }
    let subset = topology.subset(&keep);
    let nodes = keep.iter().map(|&old| node_marks[old]).collect();
    let edges = topology
        .edges
        .iter()
        .zip(&edge_marks)
        .filter(|(edge, _)| keep.contains(&edge.from) && keep.contains(&edge.to))
        .map(|(_, mark)| *mark)
        .collect();
    Picture {
        topology: subset,
        nodes,
        edges,
        changed: total,
        drawn: drawn.len(),
    }
}

/// The edge of a binding change, found by its ends and key in the picture.
fn binding_edge(
    topology: &Topology,
    edges_by_ends: &HashMap<(usize, usize), Vec<usize>>,
    change: &Change,
    find: &impl Fn(bool, &str, &str) -> Option<usize>,
) -> Option<usize> {
    let value = change.after.as_ref().or(change.before.as_ref())?;
    let vhost = change.id.vhost.as_deref().unwrap_or_default();
    let from = find(false, vhost, value["source"].as_str()?)?;
    let to_queue = value["destination_type"].as_str() != Some("exchange");
    let to = find(to_queue, vhost, value["destination"].as_str()?)?;
    let key = value["routing_key"].as_str().unwrap_or_default();
    edges_by_ends.get(&(from, to))?.iter().copied().find(|&at| {
        matches!(&topology.edges[at].kind, EdgeKind::Binding { routing_key, .. } if routing_key == key)
    })
}

/// The desired exchanges and queues the picture of `plan`'s changes with at most `cap`
/// nodes is drawn from (every node that changes, since the picture counts them, and the
/// neighbours it draws), and the desired bindings between two of them.
pub(super) fn context(
    plan: &Plan,
    definitions: &Definitions,
    topology: Topology,
    target: TargetVersion,
    cap: usize,
) -> BTreeSet<ObjectId> {
    let marks = marks(plan, definitions, &topology, target);
    let changed: Vec<super::Node> = marks
        .changed
        .iter()
        .map(|&at| topology.nodes[at].clone())
        .collect();
    let picture = drawn(topology, marks, cap);
    let drawn: BTreeSet<ObjectId> = (picture.topology.nodes.iter())
        .chain(&changed)
        .map(|node| {
            let kind = match node.kind {
                super::NodeKind::Queue(_) => ObjectKind::Queue,
                super::NodeKind::Exchange(_) => ObjectKind::Exchange,
            };
            ObjectId::in_vhost(kind, &node.vhost, &node.name)
        })
        .collect();
    let between_drawn = |id: &ObjectId, value: &Value| {
        let vhost = id.vhost.as_deref().unwrap_or_default();
        let end = |kind, name: &Value| {
            name.as_str()
                .is_some_and(|name| drawn.contains(&ObjectId::in_vhost(kind, vhost, name)))
        };
        let destination_kind = if value["destination_type"] == "exchange" {
            ObjectKind::Exchange
        } else {
            ObjectKind::Queue
        };
        end(ObjectKind::Exchange, &value["source"]) && end(destination_kind, &value["destination"])
    };
    let bindings = plan
        .desired
        .iter()
        .filter(|d| d.id.kind == ObjectKind::Binding && between_drawn(&d.id, &d.value))
        .map(|d| d.id.clone());
    let mut context = drawn.clone();
    context.extend(bindings);
    context
}

/// The exchanges, queues, bindings and policies of the plan's desired state, and of
/// what it deletes (their live values), as definitions.
pub(super) fn definitions_of(plan: &Plan) -> Definitions {
    let wanted = |id: &ObjectId| {
        matches!(
            id.kind,
            ObjectKind::Exchange
                | ObjectKind::Queue
                | ObjectKind::Binding
                | ObjectKind::Policy
                | ObjectKind::OperatorPolicy
        )
    };
    let desired = plan.desired.iter().map(|d| (&d.id, &d.value));
    let deleted = plan
        .changes
        .iter()
        .filter(|c| c.action == Action::Delete)
        .filter_map(|c| Some((&c.id, c.before.as_ref()?)));
    let mut definitions = Definitions::default();
    for (id, value) in desired.chain(deleted) {
        if !wanted(id) || !value.is_object() {
            continue;
        }
        // An entry that does not read (a saved plan edited by hand) is left out of
        // the picture; the plan itself still shows it.
        let (section, entry) = definition_entry(id, value);
        let _ = match section {
            "exchanges" => read(entry).map(|e| definitions.exchanges.push(e)),
            "queues" => read(entry).map(|q| definitions.queues.push(q)),
            "bindings" => read(entry).map(|b| definitions.bindings.push(b)),
            "policies" => read(entry).map(|p| definitions.policies.push(p)),
            "parameters" => read(entry).map(|p| definitions.parameters.push(p)),
            _ => Ok(()),
        };
    }
    definitions
}

fn read<T: serde::de::DeserializeOwned>(entry: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(entry)
}
