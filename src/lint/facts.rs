//! The lint's view of the broker: each queue's effective settings (owned by
//! `model::queue_facts`, re-exported here for the rules) and the cycles of a graph.
//! Routing, and so where dead letters go, is `model::routing`.

pub use crate::model::queue_facts::{QueueFacts, operator_policies, queue_facts};

/// Strongly connected components (Tarjan), as lists of node indexes; only those that
/// hold a cycle (more than one node, or a node with an edge to itself).
pub fn cycles(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'e> {
        edges: &'e [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.edges[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 || s.edges[v].contains(&v) {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let n = edges.len();
    let mut state = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_cycles_and_self_loops_only() {
        let edges = vec![vec![1], vec![0], vec![3], vec![], vec![4]];
        let mut found = cycles(&edges);
        found.sort();
        assert_eq!(found, vec![vec![0, 1], vec![4]]);
    }
}
