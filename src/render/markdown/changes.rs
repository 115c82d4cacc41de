//! The markdown's changes: by vhost (broker-wide ones last, in name order) and kind,
//! each kind a collapsed table whose rows say, in one cell, what a change does, within
//! the row budget.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::escape::{CodeSpans, cell, code};
use super::{MAX_VHOSTS, ROWS_PER_GROUP};
use crate::diff::{Action, Change};
use crate::model::ObjectKind;
use crate::model::redact::{redact, redact_text};
use crate::model::shorten::{grouped, middle};
use crate::render::attributes::{flatten, summary};
use crate::render::sections::{self, ChangeItem, Group, Note, counted, more};

/// Field changes listed per update.
const FIELDS_PER_UPDATE: usize = 6;

/// The changes, by vhost (broker-wide ones last) and kind, each kind collapsed.
pub(super) fn changes(out: &mut String, groups: &[Group<'_>], budget: &mut usize) {
    let mut sorted: BTreeMap<(bool, &str), BTreeMap<ObjectKind, Vec<&ChangeItem<'_>>>> =
        BTreeMap::new();
    for group in groups {
        let scope = (group.vhost.is_none(), group.vhost.unwrap_or_default());
        for (kind, items) in &group.kinds {
            let rows = sorted.entry(scope).or_default().entry(*kind).or_default();
            rows.extend(items);
        }
    }
    let _ = writeln!(out, "\n#### Changes");
    let mut rest: Vec<(String, usize)> = Vec::new();
    for (index, ((broker_wide, vhost), kinds)) in sorted.iter().enumerate() {
        let vhost = (!broker_wide).then_some(*vhost);
        let heading = sections::scope_heading(vhost, &CodeSpans);
        if index >= MAX_VHOSTS {
            let total = kinds.values().map(Vec::len).sum();
            rest.push((heading, total));
            continue;
        }
        let _ = writeln!(out, "\n**{heading}**\n");
        for (kind, items) in kinds {
            group(out, *kind, items, budget);
        }
    }
    if !rest.is_empty() {
        let changes: usize = rest.iter().map(|(_, n)| n).sum();
        let _ = writeln!(
            out,
            "\n… and {} with {}: `warren plan` lists every change.",
            more(rest.len(), "vhost", "vhosts"),
            counted(changes, "change", "changes")
        );
    }
}

/// One kind's changes in one vhost: a collapsed table.
fn group(out: &mut String, kind: ObjectKind, items: &[&ChangeItem<'_>], budget: &mut usize) {
    let mut counts: Vec<String> = Vec::new();
    for (action, (_, verb)) in [
        Action::Create,
        Action::Update,
        Action::Replace,
        Action::Delete,
    ]
    .into_iter()
    .zip(sections::summary_counts(&Default::default()))
    {
        let n = items.iter().filter(|i| i.change.action == action).count();
        if n > 0 {
            counts.push(format!("{} {verb}", grouped(n as u64)));
        }
    }
    let (singular, plural) = (kind.noun(), kind.plural());
    let shown = items.len().min(ROWS_PER_GROUP).min(*budget);
    *budget -= shown;
    let _ = writeln!(
        out,
        "<details><summary>{}: {}</summary>\n",
        counted(items.len(), singular, plural),
        counts.join(", ")
    );
    if shown > 0 {
        let _ = writeln!(out, "| | {singular} | what changes |\n| --- | --- | --- |");
        for item in &items[..shown] {
            let action = sections::action(item.change.action, item.migrated).verb;
            let _ = writeln!(
                out,
                "| {action} | {} | {} |",
                code(&item.change.id.name),
                what_changes(item)
            );
        }
    }
    if items.len() > shown {
        let _ = writeln!(
            out,
            "\n… and {}: `warren plan` lists every change.",
            more(items.len() - shown, singular, plural)
        );
    }
    out.push_str("\n</details>\n");
}

/// One cell: what a change does to its object, its notes in their short form.
fn what_changes(item: &ChangeItem<'_>) -> String {
    let change = item.change;
    let mut parts: Vec<String> = Vec::new();
    let mut notes = item.notes.iter().peekable();
    if let Some(Note::Reason { reason, .. }) = notes.peek() {
        parts.push(cell(&redact_text(reason)));
        notes.next();
    }
    match change.action {
        Action::Update => parts.extend(field_changes(change)),
        Action::Create if change.reason.is_none() => {
            if let Some(after) = &change.after {
                parts.push(summary(after, &code));
            }
        }
        _ => {}
    }
    for note in notes {
        let span = note.short(&cell, &CodeSpans);
        parts.push(match span.strong {
            true => format!("**{}**", span.text),
            false => span.text,
        });
    }
    parts.retain(|p| !p.is_empty());
    parts.join("<br>")
}

/// `field: old → new` for each field an update changes; a password only as
/// "password changed".
fn field_changes(change: &Change) -> Vec<String> {
    let (Some(before), Some(after)) = (&change.before, &change.after) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    if sections::password_changed(change) {
        lines.push(sections::PASSWORD_CHANGED.to_string());
    }
    let mut old = BTreeMap::new();
    let mut new = BTreeMap::new();
    flatten("", &redact(before), &mut old);
    flatten("", &redact(after), &mut new);
    let mut fields: Vec<&String> = old.keys().chain(new.keys()).collect();
    fields.sort();
    fields.dedup();
    let changed: Vec<&String> = fields
        .into_iter()
        .filter(|f| f.as_str() != "password_hash" && old.get(*f) != new.get(*f))
        .collect();
    for field in changed.iter().take(FIELDS_PER_UPDATE) {
        let show = |v: Option<&String>| match v {
            Some(v) => code(&middle(v, 60)),
            None => "(none)".to_string(),
        };
        lines.push(format!(
            "{}: {} → {}",
            code(field),
            show(old.get(*field)),
            show(new.get(*field))
        ));
    }
    if changed.len() > FIELDS_PER_UPDATE {
        lines.push(format!(
            "and {} more",
            counted(changed.len() - FIELDS_PER_UPDATE, "field", "fields")
        ));
    }
    lines
}
