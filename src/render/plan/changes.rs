//! The text plan's changes: a heading per vhost, one per kind, a line per change with
//! its notes, then what a create will be (within the attribute budget of
//! [`super::blocks`]) or what an update changes.

use std::io::{self, Write};

use super::blocks::{self, Attributes, ShownAttributes};
use super::{Backticks, Style};
use crate::diff::{Action, Change};
use crate::model::ObjectKind;
use crate::render::sections::{self, ChangeItem, Group, Tone};

/// The changes: a heading per vhost, one per kind, a line per change with its notes,
/// then what a create will be or what an update changes.
pub(super) fn changes(out: &mut dyn Write, groups: &[Group<'_>], style: Style) -> io::Result<()> {
    let mut shown = ShownAttributes::default();
    for group in groups {
        writeln!(out)?;
        let heading = sections::scope_heading(group.vhost, &Backticks);
        writeln!(out, "{}", style.paint(Tone::Plain, true, &heading))?;
        for (kind, items) in &group.kinds {
            writeln!(out, "  {}:", sections::kind_heading(*kind))?;
            shown.new_section();
            for item in items {
                change(out, item, &mut shown, style)?;
            }
        }
    }
    Ok(())
}

fn change(
    out: &mut dyn Write,
    item: &ChangeItem<'_>,
    shown: &mut ShownAttributes,
    style: Style,
) -> io::Result<()> {
    let change = item.change;
    let sections::ActionWords { sign, tone, .. } = sections::action(
        change.action,
        item.migrated && change.id.kind == ObjectKind::Queue,
    );
    let mut line = format!(
        "    {}",
        style.paint(tone, false, &format!("{sign} {}", change.id.name))
    );
    for note in &item.notes {
        line.push(' ');
        line.push_str(&style.span(&note.span()));
    }
    let dim = |text: &str| style.paint(Tone::Dim, false, text);
    match shown.attributes(change) {
        Attributes::None => writeln!(out, "{line}")?,
        Attributes::Lines(lines) => {
            writeln!(out, "{line}")?;
            for attribute in lines {
                writeln!(out, "        {}", dim(&attribute))?;
            }
        }
        Attributes::SameAs(first) => writeln!(out, "{line} {}", dim(&blocks::same_as(&first)))?,
        Attributes::LeftOut { first } => {
            writeln!(out, "{line}")?;
            if first {
                writeln!(out, "        {}", dim(&blocks::left_out()))?;
            }
        }
    }
    if change.action == Action::Update {
        update(out, change, style)?;
    }
    Ok(())
}

/// A field-level diff of an update; passwords show as "password changed" only.
fn update(out: &mut dyn Write, change: &Change, style: Style) -> io::Result<()> {
    if sections::password_changed(change) {
        writeln!(
            out,
            "        {}",
            style.paint(Tone::Warning, false, sections::PASSWORD_CHANGED)
        )?;
    }
    for (tone, line) in sections::line_diff(change) {
        // The color ends before the line break: a reset after it would start the
        // next line with an escape, which a pager or a log viewer shows as text.
        writeln!(
            out,
            "        {}{line}{}",
            style.start(tone, false),
            style.reset
        )?;
    }
    Ok(())
}
