//! The markdown's overview of the changes: counts per kind and action, and a Mermaid
//! picture of the exchanges and queues that change with their neighbours.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::PICTURE_NODES;
use crate::diff::Action;
use crate::model::ObjectKind;
use crate::model::shorten::grouped;
use crate::plan::Plan;
use crate::render::graph::{self, Marks};
use crate::render::sections::counted;
use crate::topology;

/// Counts per kind and action.
pub(super) fn summary_table(out: &mut String, plan: &Plan) {
    #[derive(Default)]
    struct Row {
        create: usize,
        update: usize,
        replace: usize,
        delete: usize,
        migrate: usize,
    }
    let mut rows: BTreeMap<ObjectKind, Row> = BTreeMap::new();
    for change in &plan.changes {
        let row = rows.entry(change.id.kind).or_default();
        match change.action {
            Action::Create => row.create += 1,
            Action::Update => row.update += 1,
            Action::Replace => {
                row.replace += 1;
                if plan.migration_of(change).is_some() {
                    row.migrate += 1;
                }
            }
            Action::Delete => row.delete += 1,
        }
    }
    let cell = |n: usize| match n {
        0 => String::new(),
        n => grouped(n as u64),
    };
    let _ = writeln!(
        out,
        "\n| kind | create | update | replace | delete | of the replaced, migrated |\n| --- | ---: | ---: | ---: | ---: | ---: |"
    );
    let mut total = Row::default();
    for (kind, row) in &rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            kind.plural(),
            cell(row.create),
            cell(row.update),
            cell(row.replace),
            cell(row.delete),
            cell(row.migrate)
        );
        total.create += row.create;
        total.update += row.update;
        total.replace += row.replace;
        total.delete += row.delete;
        total.migrate += row.migrate;
    }
    let bold = |n: usize| format!("**{}**", grouped(n as u64));
    let _ = writeln!(
        out,
        "| **all** | {} | {} | {} | {} | {} |",
        bold(total.create),
        bold(total.update),
        bold(total.replace),
        bold(total.delete),
        bold(total.migrate)
    );
}

/// The changed exchanges and queues and their neighbours, as Mermaid.
pub(super) fn picture(out: &mut String, plan: &Plan) {
    let picture = topology::changes(plan, PICTURE_NODES);
    if picture.changed == 0 {
        return;
    }
    let what = counted(
        picture.changed,
        "exchange or queue that changes",
        "exchanges and queues that change",
    );
    let shown = if picture.drawn < picture.changed {
        format!(
            "the first {} of {what}, and their neighbours (a picture holds at most {PICTURE_NODES})",
            grouped(picture.drawn as u64)
        )
    } else {
        format!("{what}, and their neighbours")
    };
    let _ = writeln!(
        out,
        "\n<details open><summary><b>Picture</b>: {shown}</summary>\n",
    );
    out.push_str(
        "Green: created · yellow: updated (or its policy is) · purple: replaced · red, dashed: deleted · grey: unchanged. Dashed arrows: dead-lettering.\n\n",
    );
    let marks = Marks {
        nodes: &picture.nodes,
        edges: &picture.edges,
    };
    let _ = writeln!(
        out,
        "```mermaid\n{}```\n\n</details>",
        graph::mermaid(&picture.topology, Some(marks))
    );
}
