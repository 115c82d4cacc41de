//! A topology as Mermaid (for pull requests and docs) or Graphviz DOT: vhosts and
//! services as subgraphs (DOT clusters), exchanges and queues as nodes, bindings as
//! solid edges labelled with their routing key, dead-lettering and alternate
//! exchanges as dashed ones labelled with the delay and the key that selects the
//! target.
//!
//! Node ids are `n<index>` and subgraph ids `g<index>`: no name ever goes into an id,
//! so no two ids collide whatever the names hold. Names go into quoted labels only,
//! escaped for each format.

use std::fmt::Write as _;

use crate::topology::{ChangeMark, Edge, EdgeKind, Node, NodeKind, Role, Topology};

/// What to color: the changes of a plan, node by node and edge by edge.
#[derive(Debug, Clone, Copy)]
pub struct Marks<'a> {
    /// Per node: its change, `None` for an unchanged neighbour.
    pub nodes: &'a [Option<ChangeMark>],
    /// Per edge: its change, `None` when unchanged.
    pub edges: &'a [Option<ChangeMark>],
}

/// Mermaid `flowchart` text of `topology`, colored by role, or by change with `marks`.
pub fn mermaid(topology: &Topology, marks: Option<Marks<'_>>) -> String {
    let mut out = String::from("flowchart LR\n");
    let groups = groups(topology);
    for (number, vhost) in groups.iter().enumerate() {
        let _ = writeln!(
            out,
            "  subgraph g{number}[\"{}\"]\n    direction LR",
            mermaid_text(&format!("vhost {}", vhost.name))
        );
        for (index, service) in vhost.services.iter().enumerate() {
            let _ = writeln!(
                out,
                "    subgraph g{number}_{index}[\"{}\"]\n      direction LR",
                mermaid_text(&format!("service {}", service.name))
            );
            for &node in &service.nodes {
                let _ = writeln!(out, "      {}", mermaid_node(topology, node));
            }
            out.push_str("    end\n");
        }
        for &node in &vhost.loose {
            let _ = writeln!(out, "    {}", mermaid_node(topology, node));
        }
        out.push_str("  end\n");
    }
    for edge in &topology.edges {
        let arrow = match edge.kind {
            EdgeKind::Binding { .. } => "-->",
            EdgeKind::DeadLetter { .. } | EdgeKind::Alternate => "-.->",
        };
        match edge_label(edge) {
            Some(label) => {
                let _ = writeln!(
                    out,
                    "  n{} {arrow}|\"{}\"| n{}",
                    edge.from,
                    mermaid_text(&label),
                    edge.to
                );
            }
            None => {
                let _ = writeln!(out, "  n{} {arrow} n{}", edge.from, edge.to);
            }
        }
    }
    for (number, vhost) in groups.iter().enumerate() {
        let _ = writeln!(out, "  style g{number} {VHOST_STYLE}");
        for index in 0..vhost.services.len() {
            let _ = writeln!(out, "  style g{number}_{index} {SERVICE_STYLE}");
        }
    }
    match marks {
        None => {
            out.push_str(MERMAID_ROLE_CLASSES);
            for (class, members) in classes(topology, |_, node| role_class(node)) {
                let _ = writeln!(out, "  class {members} {class}");
            }
            for (index, edge) in topology.edges.iter().enumerate() {
                if !matches!(edge.kind, EdgeKind::Binding { .. }) {
                    let _ = writeln!(out, "  linkStyle {index} stroke:{DEAD_LETTER_COLOR}");
                }
            }
        }
        Some(marks) => {
            out.push_str(MERMAID_CHANGE_CLASSES);
            for (class, members) in classes(topology, |i, _| {
                marks
                    .nodes
                    .get(i)
                    .copied()
                    .flatten()
                    .map_or("context", mark_class)
            }) {
                let _ = writeln!(out, "  class {members} {class}");
            }
            for (index, mark) in marks.edges.iter().enumerate() {
                if let Some(mark) = mark {
                    let _ = writeln!(
                        out,
                        "  linkStyle {index} stroke:{},stroke-width:2px",
                        mark_color(*mark)
                    );
                }
            }
        }
    }
    out
}

/// Graphviz DOT text of `topology` (for `dot -Tsvg`).
pub fn dot(topology: &Topology) -> String {
    let mut out = String::from(
        "digraph warren {\n  rankdir=LR;\n  newrank=true;\n  nodesep=0.3;\n  ranksep=0.6;\n  fontname=\"DejaVu Sans\";\n  node [fontname=\"DejaVu Sans\", fontsize=11, style=filled, penwidth=1.2];\n  edge [fontname=\"DejaVu Sans\", fontsize=10];\n",
    );
    let groups = groups(topology);
    for (number, vhost) in groups.iter().enumerate() {
        let _ = writeln!(out, "  subgraph cluster_g{number} {{");
        let _ = writeln!(
            out,
            "    label=\"{}\"; style=\"rounded\"; color=\"#8c959f\"; fontsize=13;",
            dot_text(&format!("vhost {}", vhost.name))
        );
        for (index, service) in vhost.services.iter().enumerate() {
            let _ = writeln!(out, "    subgraph cluster_g{number}_{index} {{");
            let _ = writeln!(
                out,
                "      label=\"{}\"; style=\"rounded,filled\"; color=\"#d0d7de\"; fillcolor=\"#f6f8fa\"; fontsize=12;",
                dot_text(&format!("service {}", service.name))
            );
            for &node in &service.nodes {
                let _ = writeln!(out, "      {}", dot_node(topology, node));
            }
            ladder_columns(&mut out, topology, &service.nodes);
            out.push_str("    }\n");
        }
        for &node in &vhost.loose {
            let _ = writeln!(out, "    {}", dot_node(topology, node));
        }
        out.push_str("  }\n");
    }
    for edge in &topology.edges {
        let mut attributes = Vec::new();
        if let Some(label) = edge_label(edge) {
            attributes.push(format!("label=\"{}\"", dot_text(&label)));
        }
        if !matches!(edge.kind, EdgeKind::Binding { .. }) {
            attributes.push(format!(
                "style=dashed, color=\"{DEAD_LETTER_COLOR}\", fontcolor=\"{DEAD_LETTER_COLOR}\""
            ));
        }
        // Dead letters that go back (a tier returning to its work queue, a retry
        // to the next attempt's queue) must not pull the ladder to the left: the
        // picture reads left to right, from where messages arrive to where they wait.
        if matches!(edge.kind, EdgeKind::DeadLetter { .. }) && edge.to < edge.from {
            attributes.push("constraint=false".to_string());
        }
        let attributes = match attributes.is_empty() {
            true => String::new(),
            false => format!(" [{}]", attributes.join(", ")),
        };
        let _ = writeln!(out, "  n{} -> n{}{attributes};", edge.from, edge.to);
    }
    out.push_str("}\n");
    out
}

/// Each ladder's delay queues and parking queue in one column, tier 1 on top, the
/// parking queue last: left to itself, Graphviz orders them to save crossings. An
/// invisible chain within one rank orders them; it runs from the last to the first
/// because, with the graph running left to right, Graphviz puts a chain's head above
/// its tail.
fn ladder_columns(out: &mut String, topology: &Topology, nodes: &[usize]) {
    let mut ladders: Vec<(&Option<String>, Vec<usize>)> = Vec::new();
    for &node in nodes {
        let n = &topology.nodes[node];
        if !matches!(n.role, Role::Delay { .. } | Role::Parking) {
            continue;
        }
        match ladders.iter_mut().find(|(c, _)| *c == &n.consumer) {
            Some((_, column)) => column.push(node),
            None => ladders.push((&n.consumer, vec![node])),
        }
    }
    for (_, column) in ladders.iter().filter(|(_, c)| c.len() > 1) {
        let chain: Vec<String> = column.iter().rev().map(|n| format!("n{n}")).collect();
        let _ = writeln!(
            out,
            "      {{ rank=same; {} [style=invis]; }}",
            chain.join(" -> ")
        );
    }
}

/// The nodes of one vhost: by service, and those of no service.
struct VhostGroup {
    name: String,
    services: Vec<ServiceGroup>,
    loose: Vec<usize>,
}

struct ServiceGroup {
    name: String,
    nodes: Vec<usize>,
}

fn groups(topology: &Topology) -> Vec<VhostGroup> {
    let mut groups: Vec<VhostGroup> = Vec::new();
    for (index, node) in topology.nodes.iter().enumerate() {
        let vhost = match groups.iter().position(|g| g.name == node.vhost) {
            Some(at) => &mut groups[at],
            None => {
                groups.push(VhostGroup {
                    name: node.vhost.clone(),
                    services: Vec::new(),
                    loose: Vec::new(),
                });
                groups.last_mut().expect("just pushed")
            }
        };
        match &node.service {
            None => vhost.loose.push(index),
            Some(service) => match vhost.services.iter_mut().find(|s| &s.name == service) {
                Some(group) => group.nodes.push(index),
                None => vhost.services.push(ServiceGroup {
                    name: service.clone(),
                    nodes: vec![index],
                }),
            },
        }
    }
    groups
}

/// The lines of a node's label: its name, then what it is.
fn label_lines(node: &Node) -> (String, String) {
    let name = if node.name.is_empty() {
        "(default exchange)".to_string()
    } else {
        node.name.clone()
    };
    let what = match (&node.kind, &node.role) {
        (NodeKind::Exchange(None), _) => "exchange, not declared".to_string(),
        (NodeKind::Queue(None), _) => "queue, not declared".to_string(),
        (NodeKind::Exchange(Some(kind)), Role::ServiceExchange) => {
            format!("{kind} · service exchange")
        }
        (NodeKind::Exchange(Some(kind)), Role::RetryExchange) => {
            format!("{kind} · retry exchange")
        }
        (NodeKind::Exchange(Some(kind)), _) => format!("{kind} exchange"),
        (NodeKind::Queue(Some(kind)), role) => {
            let kind = kind.as_str();
            match role {
                Role::WorkQueue => format!("{kind} · work queue"),
                Role::WaitingWorkQueue { waits } => {
                    format!("{kind} · work queue · waits {waits} (delayed retry)")
                }
                Role::Delay { tier, written, .. } => format!("{kind} · tier {tier} · {written}"),
                Role::Attempt { attempt } => format!("{kind} · attempt {attempt}"),
                Role::Parking => format!("{kind} · parking"),
                _ => format!("{kind} queue"),
            }
        }
    };
    let owner = match &node.consumer {
        Some(consumer) => format!("{what} · {consumer}"),
        None => what,
    };
    (name, owner)
}

fn edge_label(edge: &Edge) -> Option<String> {
    match &edge.kind {
        EdgeKind::Binding {
            routing_key,
            arguments,
        } => {
            let mut parts = Vec::new();
            if !routing_key.is_empty() {
                parts.push(routing_key.clone());
            }
            parts.extend(arguments.iter().cloned());
            (!parts.is_empty()).then(|| parts.join(" "))
        }
        EdgeKind::DeadLetter { delay, routing_key } => {
            let mut label = match delay {
                Some(delay) => format!("after {delay}"),
                None => "dead letter".to_string(),
            };
            if let Some(key) = routing_key {
                label.push_str(&format!(" · key {key}"));
            }
            Some(label)
        }
        EdgeKind::Alternate => Some("unroutable".to_string()),
    }
}

/// Text for a quoted Mermaid label: every character Mermaid reads as markup written
/// as an entity code (`#quot;`), `#` first since it starts every entity.
fn mermaid_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '#' => out.push_str("#35;"),
            '"' => out.push_str("#quot;"),
            '&' => out.push_str("#amp;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '`' => out.push_str("#96;"),
            '|' => out.push_str("#124;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text for a quoted DOT string: backslashes (escapes in labels) and quotes escaped.
fn dot_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn mermaid_node(topology: &Topology, index: usize) -> String {
    let node = &topology.nodes[index];
    let (name, what) = label_lines(node);
    let label = format!(
        "{}<br/><small>{}</small>",
        mermaid_text(&name),
        mermaid_text(&what)
    );
    let (open, close) = match (&node.kind, &node.role) {
        (NodeKind::Exchange(_), _) => ("([\"", "\"])"),
        (_, Role::Parking) => ("[(\"", "\")]"),
        _ => ("[\"", "\"]"),
    };
    format!("n{index}{open}{label}{close}")
}

fn dot_node(topology: &Topology, index: usize) -> String {
    let node = &topology.nodes[index];
    let (name, what) = label_lines(node);
    let (shape, fill, border) = match (&node.kind, &node.role) {
        (NodeKind::Exchange(None) | NodeKind::Queue(None), _) => ("box", "#ffffff", "#8c959f"),
        (NodeKind::Exchange(_), _) => ("hexagon, ordering=out", "#ddf4ff", "#0969da"),
        (_, Role::WorkQueue | Role::WaitingWorkQueue { .. } | Role::Attempt { .. }) => {
            ("box", "#dafbe1", "#1a7f37")
        }
        (_, Role::Delay { .. }) => ("box", "#fff8c5", "#9a6700"),
        (_, Role::Parking) => ("cylinder", "#ffebe9", "#cf222e"),
        _ => ("box", "#f6f8fa", "#57606a"),
    };
    format!(
        "n{index} [label=\"{}\\n{}\", shape={shape}, fillcolor=\"{fill}\", color=\"{border}\"];",
        dot_text(&name),
        dot_text(&what)
    )
}

const DEAD_LETTER_COLOR: &str = "#cf222e";

const VHOST_STYLE: &str = "fill:#ffffff,stroke:#8c959f,color:#1f2328";
const SERVICE_STYLE: &str = "fill:#f6f8fa,stroke:#d0d7de,color:#1f2328";

const MERMAID_ROLE_CLASSES: &str = "  classDef exchange fill:#ddf4ff,stroke:#0969da,color:#1f2328\n  classDef work fill:#dafbe1,stroke:#1a7f37,color:#1f2328\n  classDef delay fill:#fff8c5,stroke:#9a6700,color:#1f2328\n  classDef parking fill:#ffebe9,stroke:#cf222e,color:#1f2328\n  classDef plain fill:#f6f8fa,stroke:#57606a,color:#1f2328\n  classDef undeclared fill:#ffffff,stroke:#8c959f,stroke-dasharray:4 3,color:#57606a\n";

const MERMAID_CHANGE_CLASSES: &str = "  classDef create fill:#dafbe1,stroke:#1a7f37,stroke-width:2px,color:#1f2328\n  classDef update fill:#fff8c5,stroke:#9a6700,stroke-width:2px,color:#1f2328\n  classDef replace fill:#fbefff,stroke:#8250df,stroke-width:2px,color:#1f2328\n  classDef delete fill:#ffebe9,stroke:#cf222e,stroke-width:2px,stroke-dasharray:4 3,color:#1f2328\n  classDef context fill:#f6f8fa,stroke:#8c959f,color:#57606a\n";

fn role_class(node: &Node) -> &'static str {
    match (&node.kind, &node.role) {
        (NodeKind::Exchange(None) | NodeKind::Queue(None), _) => "undeclared",
        (NodeKind::Exchange(_), _) => "exchange",
        (_, Role::WorkQueue | Role::WaitingWorkQueue { .. } | Role::Attempt { .. }) => "work",
        (_, Role::Delay { .. }) => "delay",
        (_, Role::Parking) => "parking",
        _ => "plain",
    }
}

fn mark_class(mark: ChangeMark) -> &'static str {
    match mark {
        ChangeMark::Create => "create",
        ChangeMark::Update => "update",
        ChangeMark::Replace => "replace",
        ChangeMark::Delete => "delete",
    }
}

fn mark_color(mark: ChangeMark) -> &'static str {
    match mark {
        ChangeMark::Create => "#1a7f37",
        ChangeMark::Update => "#9a6700",
        ChangeMark::Replace => "#8250df",
        ChangeMark::Delete => "#cf222e",
    }
}

/// Nodes by class, in the order classes first appear: `("work", "n1,n4")`.
fn classes<'t>(
    topology: &'t Topology,
    class_of: impl Fn(usize, &'t Node) -> &'static str,
) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, Vec<String>)> = Vec::new();
    for (index, node) in topology.nodes.iter().enumerate() {
        let class = class_of(index, node);
        match out.iter_mut().find(|(c, _)| *c == class) {
            Some((_, members)) => members.push(format!("n{index}")),
            None => out.push((class, vec![format!("n{index}")])),
        }
    }
    out.into_iter()
        .map(|(class, members)| (class, members.join(",")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::QueueType;

    fn node(vhost: &str, name: &str, kind: NodeKind) -> Node {
        Node {
            vhost: vhost.into(),
            name: name.into(),
            kind,
            role: Role::Plain,
            service: None,
            consumer: None,
        }
    }

    #[test]
    fn names_with_markup_are_escaped_and_never_become_ids() {
        let topology = Topology {
            nodes: vec![
                node(
                    "v\"1",
                    "ex \"quoted\" #1 <b>|`",
                    NodeKind::Exchange(Some("topic".into())),
                ),
                node(
                    "v\"1",
                    "q.ü \\ end",
                    NodeKind::Queue(Some(QueueType::Quorum)),
                ),
            ],
            edges: vec![Edge {
                from: 0,
                to: 1,
                kind: EdgeKind::Binding {
                    routing_key: "a.\"b\".#".into(),
                    arguments: vec![],
                },
            }],
        };
        let mermaid = mermaid(&topology, None);
        assert!(
            mermaid.contains("n0([\"ex #quot;quoted#quot; #35;1 #lt;b#gt;#124;#96;<br/>"),
            "{mermaid}"
        );
        assert!(
            mermaid.contains("n0 -->|\"a.#quot;b#quot;.#35;\"| n1"),
            "{mermaid}"
        );
        assert!(
            mermaid.contains("subgraph g0[\"vhost v#quot;1\"]"),
            "{mermaid}"
        );
        let dot = dot(&topology);
        assert!(
            dot.contains("label=\"ex \\\"quoted\\\" #1 <b>|`\\n"),
            "{dot}"
        );
        assert!(dot.contains("label=\"q.ü \\\\ end\\n"), "{dot}");
        assert!(dot.contains("n0 -> n1 [label=\"a.\\\"b\\\".#\"];"), "{dot}");
    }
}
