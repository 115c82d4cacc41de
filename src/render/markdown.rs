//! A plan as GitHub-flavored markdown, for a pull request comment: a title with the
//! counts, data loss and refusals first, a summary table by kind, a Mermaid picture of
//! what changes, then the changes by vhost and kind in collapsed sections.
//!
//! It shows the facts the text plan shows (render/plan.rs), with the same redaction
//! ([`redact`]: no password hash, no URI credential). A comment on GitHub holds at most
//! 65,536 characters, so the output has a budget: at most [`ROWS_PER_GROUP`] rows per
//! vhost and kind and [`MAX_ROWS`] in all, then "and N more"; every count stays exact.
//! A plan of 10,000 changes stays under [`SIZE_GOAL`] bytes (a test checks it).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::Value;

use super::graph::{self, Marks};
use crate::diff::{Action, Change};
use crate::model::ObjectKind;
use crate::model::redact::{redact, redact_text};
use crate::model::shorten::{grouped, middle};
use crate::plan::{Plan, Stage};
use crate::text::count_irregular;
use crate::topology;

/// Rows listed per vhost and kind before "and N more".
pub const ROWS_PER_GROUP: usize = 25;
/// Rows listed in all (changes, data loss, adopted, unmanaged); past it, groups show
/// their counts only.
pub const MAX_ROWS: usize = 300;
/// Vhosts listed one by one; past it, one line counts the rest.
pub const MAX_VHOSTS: usize = 40;
/// Exchanges and queues in the picture of what changes (changed ones first, then
/// their neighbours).
pub const PICTURE_NODES: usize = 40;
/// Field changes listed per update.
const FIELDS_PER_UPDATE: usize = 6;
/// What a plan of 10,000 changes stays under, in bytes: below GitHub's limit of
/// 65,536 characters for a comment, with room for a header a CI job adds.
pub const SIZE_GOAL: usize = 60_000;

/// Writes the plan as markdown.
pub fn render_markdown(out: &mut dyn Write, plan: &Plan) -> io::Result<()> {
    out.write_all(markdown(plan).as_bytes())
}

/// The plan as markdown.
pub fn markdown(plan: &Plan) -> String {
    let mut out = String::new();
    let mut budget = MAX_ROWS;
    title(&mut out, plan);
    refusal(&mut out, plan);
    unknown_passwords(&mut out, plan);
    data_loss(&mut out, plan, &mut budget);
    if !plan.has_changes() {
        out.push_str("\n**No changes.** The broker matches the spec.\n");
    } else {
        summary_table(&mut out, plan);
        picture(&mut out, plan);
        changes(&mut out, plan, &mut budget);
        migrations(&mut out, plan, &mut budget);
    }
    listed_ids(
        &mut out,
        "Adopted",
        "existing objects that match the spec and that no spec manages: apply records them as this spec's, without changing them",
        &plan.adopted,
        &mut budget,
    );
    listed_ids(
        &mut out,
        "Not managed by any spec",
        "left alone; `--prune-unmanaged` deletes them",
        &plan.unmanaged,
        &mut budget,
    );
    out
}

fn title(out: &mut String, plan: &Plan) {
    let against = match &plan.broker_version {
        Some(version) => format!("RabbitMQ {version}, target {}", plan.target_version),
        None => format!("a definitions file, target {}", plan.target_version),
    };
    let _ = match &plan.environment {
        Some(environment) => writeln!(
            out,
            "### warren plan for spec {} in environment {}\n",
            code(crate::spec::environment::base_name(&plan.spec, environment)),
            code(environment)
        ),
        None => writeln!(out, "### warren plan for spec {}\n", code(&plan.spec)),
    };
    let vhosts: Vec<String> = plan.vhosts.iter().take(10).map(|v| code(v)).collect();
    let more = match plan.vhosts.len() {
        n if n > 10 => format!(" and {} more", grouped((n - 10) as u64)),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "Against {against}; {}: {}{more}.\n",
        counted(plan.vhosts.len(), "vhost", "vhosts"),
        vhosts.join(", ")
    );
    let s = &plan.summary;
    let mut counts = vec![
        format!("**{}** to create", grouped(s.create as u64)),
        format!("**{}** to update", grouped(s.update as u64)),
        format!("**{}** to replace", grouped(s.replace as u64)),
        format!("**{}** to delete", grouped(s.delete as u64)),
    ];
    if s.migrate > 0 {
        counts.push(format!("**{}** to migrate", grouped(s.migrate as u64)));
    }
    if s.adopt > 0 {
        counts.push(format!("{} adopted", grouped(s.adopt as u64)));
    }
    if s.recreate > 0 {
        counts.push(format!(
            "{} re-created with a replaced object",
            counted(s.recreate, "binding", "bindings")
        ));
    }
    if s.data_loss > 0 {
        counts.push(format!(
            "**{} with data loss**",
            grouped(s.data_loss as u64)
        ));
    }
    let _ = writeln!(out, "{}.", counts.join(" · "));
}

fn refusal(out: &mut String, plan: &Plan) {
    let Some(why) = plan.refusal() else {
        return;
    };
    let _ = writeln!(
        out,
        "\n> [!CAUTION]\n> **This plan cannot be applied:** {}.",
        inline(&why)
    );
}

/// Users whose password this plan could not read (planned without the applications'
/// secrets): their passwords are not compared.
fn unknown_passwords(out: &mut String, plan: &Plan) {
    if plan.unknown_passwords.is_empty() {
        return;
    }
    let users: Vec<String> = plan
        .unknown_passwords
        .iter()
        .take(ROWS_PER_GROUP)
        .map(|(user, missing)| format!("{} ({})", code(user), inline(missing)))
        .collect();
    let more = match plan.unknown_passwords.len() {
        n if n > ROWS_PER_GROUP => format!(" and {}", more(n - ROWS_PER_GROUP, "user", "users")),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "\n> [!NOTE]\n> **Passwords not known here:** {}{more}. They are not compared; `warren apply SPEC` reads them where they are set, and this plan, saved, is not applied.",
        users.join(", ")
    );
}

/// Queues whose messages the plan loses, and queues it deletes and declares again.
fn data_loss(out: &mut String, plan: &Plan, budget: &mut usize) {
    let replaced: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| c.id.kind == ObjectKind::Queue && c.action == Action::Replace)
        .collect();
    let losing: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| c.loses_data() && plan.migration_of(c).is_none())
        .collect();
    if losing.is_empty() && replaced.is_empty() {
        return;
    }
    let kind = if losing.is_empty() {
        "WARNING"
    } else {
        "CAUTION"
    };
    let _ = writeln!(out, "\n> [!{kind}]");
    if !losing.is_empty() {
        let messages: u64 = losing.iter().filter_map(|c| c.messages).sum();
        let _ = writeln!(
            out,
            "> **Data loss:** {} {} {} (counted when planned). `warren apply` refuses {} unless it is run with `--allow-data-loss`{}.",
            counted(losing.len(), "change", "changes"),
            if losing.len() == 1 { "loses" } else { "lose" },
            match (messages, losing.iter().any(|c| c.removes_stream())) {
                (0, true) => "a stream's log".to_string(),
                (n, true) => format!("{} and a stream's log", counted(n, "message", "messages")),
                (n, false) => counted(n, "message", "messages"),
            },
            if losing.len() == 1 { "it" } else { "them" },
            if losing.iter().any(|c| c.action == Action::Replace) {
                "; `--migrate` moves the messages of a replaced queue instead (docs/migration.md)"
            } else {
                ""
            }
        );
    }
    if !replaced.is_empty() {
        if !losing.is_empty() {
            out.push_str(">\n");
        }
        let _ = writeln!(
            out,
            "> **{} deleted and declared again** (a queue's type and arguments cannot change in place): consumers are cut off for a moment, and what the queue holds is lost unless it is moved with `--migrate`.",
            counted(replaced.len(), "queue is", "queues are")
        );
    }
    // Every queue that loses messages, then the other replaced queues.
    let mut rows: Vec<&Change> = losing.clone();
    rows.extend(replaced.iter().filter(|c| !losing.contains(c)));
    let shown = rows.len().min(ROWS_PER_GROUP).min(*budget);
    *budget -= shown;
    let _ = writeln!(
        out,
        ">\n> | | queue | vhost | messages | why |\n> | --- | --- | --- | ---: | --- |"
    );
    for change in &rows[..shown] {
        let held = if change.removes_stream() {
            "a stream's log".to_string()
        } else {
            match change.messages {
                Some(count) => grouped(count),
                None => "not counted".to_string(),
            }
        };
        let what = match (change.action, plan.migration_of(change)) {
            (Action::Replace, Some(_)) => "migrate",
            (Action::Replace, None) => "replace",
            _ => "delete",
        };
        let _ = writeln!(
            out,
            "> | {what} | {} | {} | {held} | {} |",
            code(&change.id.name),
            code(change.id.vhost.as_deref().unwrap_or_default()),
            change.reason.as_deref().map(cell).unwrap_or_default()
        );
    }
    if rows.len() > shown {
        let _ = writeln!(
            out,
            ">\n> … and {}.",
            more(rows.len() - shown, "queue", "queues")
        );
    }
}

/// Counts per kind and action.
fn summary_table(out: &mut String, plan: &Plan) {
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
            noun(*kind).1,
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
fn picture(out: &mut String, plan: &Plan) {
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

/// The changes, by vhost (broker-wide ones last) and kind, each kind collapsed.
fn changes(out: &mut String, plan: &Plan, budget: &mut usize) {
    let mut groups: BTreeMap<(bool, &str), BTreeMap<ObjectKind, Vec<&Change>>> = BTreeMap::new();
    for change in &plan.changes {
        let scope = (
            change.id.vhost.is_none(),
            change.id.vhost.as_deref().unwrap_or_default(),
        );
        groups
            .entry(scope)
            .or_default()
            .entry(change.id.kind)
            .or_default()
            .push(change);
    }
    let _ = writeln!(out, "\n#### Changes");
    let mut rest: Vec<(String, usize)> = Vec::new();
    for (index, ((broker_wide, vhost), kinds)) in groups.iter().enumerate() {
        let heading = match broker_wide {
            true => "broker-wide".to_string(),
            false => format!("vhost {}", code(vhost)),
        };
        if index >= MAX_VHOSTS {
            let total = kinds.values().map(Vec::len).sum();
            rest.push((heading, total));
            continue;
        }
        let _ = writeln!(out, "\n**{heading}**\n");
        for (kind, changes) in kinds {
            group(out, plan, *kind, changes, budget);
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
fn group(out: &mut String, plan: &Plan, kind: ObjectKind, changes: &[&Change], budget: &mut usize) {
    let mut counts: Vec<String> = Vec::new();
    for (action, word) in [
        (Action::Create, "to create"),
        (Action::Update, "to update"),
        (Action::Replace, "to replace"),
        (Action::Delete, "to delete"),
    ] {
        let n = changes.iter().filter(|c| c.action == action).count();
        if n > 0 {
            counts.push(format!("{} {word}", grouped(n as u64)));
        }
    }
    let (singular, plural) = noun(kind);
    let shown = changes.len().min(ROWS_PER_GROUP).min(*budget);
    *budget -= shown;
    let _ = writeln!(
        out,
        "<details><summary>{}: {}</summary>\n",
        counted(changes.len(), singular, plural),
        counts.join(", ")
    );
    if shown > 0 {
        let _ = writeln!(out, "| | {singular} | what changes |\n| --- | --- | --- |");
        for change in &changes[..shown] {
            let migration = plan.migration_of(change);
            let action = match (change.action, migration) {
                (Action::Replace, Some(_)) => "migrate",
                (Action::Create, _) => "create",
                (Action::Update, _) => "update",
                (Action::Replace, _) => "replace",
                (Action::Delete, _) => "delete",
            };
            let _ = writeln!(
                out,
                "| {action} | {} | {} |",
                code(&change.id.name),
                what_changes(change, migration.is_some(), &plan.unknown_passwords)
            );
        }
    }
    if changes.len() > shown {
        let _ = writeln!(
            out,
            "\n… and {}: `warren plan` lists every change.",
            more(changes.len() - shown, singular, plural)
        );
    }
    out.push_str("\n</details>\n");
}

/// One cell: what a change does to its object.
fn what_changes(change: &Change, migrated: bool, unknown: &BTreeMap<String, String>) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(reason) = &change.reason {
        parts.push(cell(&redact_text(reason)));
    }
    match change.action {
        Action::Update => parts.extend(field_changes(change)),
        Action::Create if change.reason.is_none() => {
            if let Some(after) = &change.after {
                parts.push(attributes(after));
            }
        }
        _ => {}
    }
    if change.unmanaged {
        parts.push("unmanaged, pruned".to_string());
    }
    if change.id.kind == ObjectKind::User
        && let Some(missing) = unknown.get(&change.id.name)
    {
        parts.push(format!("password unknown: {} not set here", cell(missing)));
    }
    if change.loses_data() && migrated {
        parts.push(format!("{}: moved with `--migrate`", change.loss()));
    } else if change.loses_data() {
        parts.push(format!("**data loss: {}**", change.loss()));
    } else if change.messages == Some(0) {
        parts.push("empty when planned".to_string());
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
    if before.get("password_hash") != after.get("password_hash") {
        lines.push("password changed".to_string());
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

/// A created object's key attributes, `type=quorum, x-message-ttl=30000`, short.
fn attributes(after: &Value) -> String {
    let mut fields = BTreeMap::new();
    flatten("", &redact(after), &mut fields);
    let text: Vec<String> = fields
        .iter()
        .filter(|(key, value)| {
            // What every object has gives nothing away.
            !matches!(
                (key.as_str(), value.as_str()),
                ("durable", "true")
                    | ("auto_delete", "false")
                    | ("internal", "false")
                    | ("password_hash", _)
                    | ("hashing_algorithm", _)
                    | ("destination_type", _)
                    | ("source", _)
                    | ("destination", _)
                    | ("routing_key", _)
                    | ("arguments", "{}")
            )
        })
        .map(|(key, value)| {
            let key = key.strip_prefix("arguments.").unwrap_or(key);
            let key = key.strip_prefix("definition.").unwrap_or(key);
            format!("{key}={value}")
        })
        .collect();
    match text.is_empty() {
        true => String::new(),
        false => code(&middle(&text.join(", "), 140)),
    }
}

/// Leaves of a JSON value by dotted path; lists and scalars as compact JSON (strings
/// bare).
fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, value) in map {
                let path = match prefix.is_empty() {
                    true => key.clone(),
                    false => format!("{prefix}.{key}"),
                };
                flatten(&path, value, out);
            }
        }
        Value::String(text) => {
            out.insert(prefix.to_string(), text.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

fn migrations(out: &mut String, plan: &Plan, budget: &mut usize) {
    if plan.migrations.is_empty() {
        return;
    }
    let shown = plan.migrations.len().min(ROWS_PER_GROUP).min(*budget);
    *budget -= shown;
    let _ = writeln!(
        out,
        "\n<details><summary>{} blue/green with <code>warren apply --migrate</code></summary>\n\n| queue | vhost | where it stands |\n| --- | --- | --- |",
        counted(plan.migrations.len(), "queue migrated", "queues migrated"),
    );
    for migration in &plan.migrations[..shown] {
        let stands = match migration.stage {
            Stage::MoveOut => format!(
                "moved to {} and back (docs/migration.md)",
                code(&migration.temporary)
            ),
            Stage::MoveBack => format!(
                "under way: {} wait in {}",
                match migration.temporary_messages {
                    Some(n) => counted(n, "message", "messages"),
                    None => "messages".to_string(),
                },
                code(&migration.temporary)
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {stands} |",
            code(&migration.queue.name),
            code(migration.queue.vhost.as_deref().unwrap_or_default())
        );
    }
    if plan.migrations.len() > shown {
        let _ = writeln!(
            out,
            "\n… and {} more.",
            grouped((plan.migrations.len() - shown) as u64)
        );
    }
    out.push_str("\n</details>\n");
}

fn listed_ids(
    out: &mut String,
    heading: &str,
    about: &str,
    ids: &[crate::model::ObjectId],
    budget: &mut usize,
) {
    if ids.is_empty() {
        return;
    }
    let shown = ids.len().min(ROWS_PER_GROUP).min(*budget);
    *budget -= shown;
    let _ = writeln!(
        out,
        "\n<details><summary>{heading}: {}</summary>\n\n{about}.\n",
        counted(ids.len(), "object", "objects")
    );
    for id in &ids[..shown] {
        let _ = writeln!(out, "- {}", inline(&id.to_string()));
    }
    if ids.len() > shown {
        let _ = writeln!(out, "- … and {} more", grouped((ids.len() - shown) as u64));
    }
    out.push_str("\n</details>\n");
}

/// `n` and its noun through [`count_irregular`], with the thousands grouped:
/// `1,975 policies`, `1 policy`.
fn counted(n: impl crate::text::Count, singular: &str, plural: &str) -> String {
    let n = n.as_u64();
    let words = count_irregular(n, singular, plural);
    match words.split_once(' ') {
        Some((_, noun)) => format!("{} {noun}", grouped(n)),
        None => words,
    }
}

/// `1,975 more policies`.
fn more(n: usize, singular: &str, plural: &str) -> String {
    let words = counted(n, singular, plural);
    match words.split_once(' ') {
        Some((number, noun)) => format!("{number} more {noun}"),
        None => words,
    }
}

/// A kind's noun, singular and plural.
fn noun(kind: ObjectKind) -> (&'static str, &'static str) {
    match kind {
        ObjectKind::Vhost => ("vhost", "vhosts"),
        ObjectKind::VhostLimits => ("vhost limits", "vhost limits"),
        ObjectKind::Exchange => ("exchange", "exchanges"),
        ObjectKind::Queue => ("queue", "queues"),
        ObjectKind::Binding => ("binding", "bindings"),
        ObjectKind::Policy => ("policy", "policies"),
        ObjectKind::OperatorPolicy => ("operator policy", "operator policies"),
        ObjectKind::User => ("user", "users"),
        ObjectKind::Permission => ("permission", "permissions"),
        ObjectKind::TopicPermission => ("topic permission", "topic permissions"),
        ObjectKind::GlobalParameter => ("global parameter", "global parameters"),
        ObjectKind::Parameter => ("parameter", "parameters"),
    }
}

/// A name as a code span that survives any content: fenced with one more backtick
/// than the longest run inside, pipes escaped (a table cell ends at a bare `|`, even in
/// a code span), control characters shown as escapes.
fn code(text: &str) -> String {
    let text = middle(text, 200).replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Text (a message that quotes names in backticks) for a table cell: pipes escaped,
/// HTML's `<` and `&` written as entities, on one line.
fn cell(text: &str) -> String {
    inline(text).replace('|', "\\|")
}

/// Text for a line of markdown: `<`, `>` and `&` as entities (no HTML is read from a
/// name), line breaks as spaces, control characters escaped.
fn inline(text: &str) -> String {
    middle(text, 400)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectId;
    use crate::plan::{Conflict, DesiredObject};
    use serde_json::json;

    fn id(kind: ObjectKind, vhost: &str, name: &str) -> ObjectId {
        ObjectId {
            kind,
            vhost: Some(vhost.into()),
            name: name.into(),
        }
    }

    fn change(action: Action, id: ObjectId, before: Option<Value>, after: Option<Value>) -> Change {
        Change::new(action, id, before, after)
    }

    fn plan(changes: Vec<Change>, desired: Vec<DesiredObject>) -> Plan {
        Plan::of_changes(changes, desired)
    }

    fn queue(kind: &str) -> Value {
        json!({"durable": true, "auto_delete": false, "arguments": {"x-queue-type": kind}})
    }

    #[test]
    fn data_loss_and_refusals_come_first_and_secrets_never_show() {
        let mut replaced = change(
            Action::Replace,
            id(ObjectKind::Queue, "shop", "audit"),
            Some(queue("classic")),
            Some(queue("quorum")),
        );
        replaced.reason = Some("arguments.x-queue-type: \"classic\" → \"quorum\"".into());
        replaced.messages = Some(12_345);
        let mut deleted = change(
            Action::Delete,
            id(ObjectKind::Queue, "shop", "old|pipe`tick"),
            Some(queue("quorum")),
            None,
        );
        deleted.messages = Some(0);
        let shovel = json!({"src-uri": "amqp://mover:s3cret@mq", "password_hash": "hash-of-it"});
        let mut plan = plan(
            vec![
                change(
                    Action::Update,
                    ObjectId {
                        kind: ObjectKind::User,
                        vhost: None,
                        name: "ops".into(),
                    },
                    Some(json!({"password_hash": "old-hash", "tags": ["monitoring"]})),
                    Some(json!({"password_hash": "new-hash", "tags": ["management"]})),
                ),
                change(
                    Action::Update,
                    id(ObjectKind::Parameter, "shop", "shovel/move"),
                    Some(json!({"src-uri": "amqp://mover:0ld@mq"})),
                    Some(shovel.clone()),
                ),
                replaced,
                deleted,
                change(
                    Action::Create,
                    id(ObjectKind::Queue, "shop", "orders.email"),
                    None,
                    Some(queue("quorum")),
                ),
            ],
            vec![
                DesiredObject {
                    id: id(ObjectKind::Queue, "shop", "audit"),
                    value: queue("quorum"),
                },
                DesiredObject {
                    id: id(ObjectKind::Queue, "shop", "orders.email"),
                    value: queue("quorum"),
                },
                DesiredObject {
                    id: id(ObjectKind::Parameter, "shop", "shovel/move"),
                    value: shovel,
                },
            ],
        );
        plan.conflicts.push(Conflict {
            id: id(ObjectKind::Queue, "shop", "orders.email"),
            owner: "billing".into(),
        });
        plan.unknown_passwords.insert(
            "ops".into(),
            "environment variable `SHOP_OPS_PASSWORD`".into(),
        );
        let text = markdown(&plan);
        assert!(
            text.contains(
                "**Passwords not known here:** `ops` (environment variable `SHOP_OPS_PASSWORD`)"
            ),
            "{text}"
        );
        for secret in ["old-hash", "new-hash", "hash-of-it", "s3cret", "0ld"] {
            assert!(!text.contains(secret), "{secret} in:\n{text}");
        }
        let loss = text
            .find("**Data loss:**")
            .expect("data loss is called out");
        let table = text.find("| kind |").expect("a summary table");
        assert!(loss < table, "data loss comes before the counts:\n{text}");
        assert!(text.contains("12,345"), "{text}");
        assert!(text.contains("--allow-data-loss"), "{text}");
        assert!(text.contains("``old\\|pipe`tick``"), "{text}");
        insta::assert_snapshot!(text);
    }

    /// 10,000 changes, in one vhost and spread over a thousand.
    fn big_plan(vhosts: usize) -> Plan {
        let mut changes = Vec::new();
        let mut desired = Vec::new();
        for n in 0..10_000 {
            let vhost = format!("vhost-{:04}", n % vhosts);
            let name = format!("service-{n:05}.consumer-with-a-long-name.retry.1");
            let (action, kind) = match n % 5 {
                0 => (Action::Update, ObjectKind::Policy),
                1 => (Action::Delete, ObjectKind::Exchange),
                2 => (Action::Replace, ObjectKind::Queue),
                _ => (Action::Create, ObjectKind::Queue),
            };
            let mut change = change(
                action,
                id(kind, &vhost, &name),
                (action != Action::Create).then(|| queue("classic")),
                (action != Action::Delete).then(|| queue("quorum")),
            );
            if action == Action::Replace {
                change.messages = Some(n as u64);
                change.reason = Some("arguments.x-queue-type: \"classic\" → \"quorum\"".into());
            }
            if action != Action::Delete && kind == ObjectKind::Queue {
                desired.push(DesiredObject {
                    id: change.id.clone(),
                    value: queue("quorum"),
                });
            }
            changes.push(change);
        }
        let mut plan = plan(changes, desired);
        plan.vhosts = (0..vhosts).map(|n| format!("vhost-{n:04}")).collect();
        plan
    }

    #[test]
    fn ten_thousand_changes_fit_in_a_pull_request_comment() {
        for vhosts in [1, 1_000] {
            let plan = big_plan(vhosts);
            let text = markdown(&plan);
            assert!(
                text.len() < SIZE_GOAL,
                "{vhosts} vhosts: {} bytes",
                text.len()
            );
            // The totals are exact, whatever is listed.
            assert!(
                text.contains("**4,000** to create · **2,000** to update · **2,000** to replace · **2,000** to delete"),
                "{}",
                &text[..600]
            );
            assert!(
                text.contains(
                    "| **all** | **4,000** | **2,000** | **2,000** | **2,000** | **0** |"
                )
            );
        }
        let one = markdown(&big_plan(1));
        assert!(one.contains("… and 5,975 more queues"), "{one}");
        assert!(one.contains("… and 1,975 more policies"), "{one}");
        assert!(
            one.contains("the first 40 of 6,000 exchanges and queues that change"),
            "{one}"
        );
    }
}
