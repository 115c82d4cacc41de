//! A plan as GitHub-flavored markdown, for a pull request comment: a title with the
//! counts, data loss and refusals first, a summary table by kind, a Mermaid picture of
//! what changes, then the changes by vhost and kind in collapsed sections.
//!
//! It is a layout of the plan's sections ([`super::sections`], which owns the words
//! the text plan prints too), with the same redaction (`redact_text`: no password
//! hash, no URI credential). A comment on GitHub holds at most 65,536 characters, so
//! the output has a budget: at most [`ROWS_PER_GROUP`] rows per vhost and kind and
//! [`MAX_ROWS`] in all, then "and N more"; every count stays exact. A plan of 10,000
//! changes stays under [`SIZE_GOAL`] bytes (a test checks it). The module is
//! `markdown.rs` with its parts in `markdown/` so that its tests keep their snapshots
//! in `render/snapshots/`.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::sections::{self, ChangeItem, Header, MigrationItem, Section, counted, more};
use crate::diff::Action;
use crate::model::ObjectKind;
use crate::model::shorten::grouped;
use crate::plan::{Plan, Refusal};

mod changes;
mod escape;
mod overview;

use escape::{CodeSpans, cell, code, inline};

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
/// What a plan of 10,000 changes stays under, in bytes: below GitHub's limit of
/// 65,536 characters for a comment, with room for a header a CI job adds.
pub const SIZE_GOAL: usize = 60_000;

/// Writes the plan as markdown.
pub fn render_markdown(out: &mut dyn Write, plan: &Plan) -> io::Result<()> {
    out.write_all(crate::text::visible(&markdown(plan)).as_bytes())
}

/// The plan as markdown: what a reviewer must act on (the refusal, passwords not
/// known, data loss) first, then the changes, then the objects the plan leaves as
/// they are.
pub fn markdown(plan: &Plan) -> String {
    let all = sections::sections(plan);
    let find = |wanted: fn(&Section<'_>) -> bool| all.iter().filter(move |s| wanted(s));
    let mut out = String::new();
    let mut budget = MAX_ROWS;
    for section in find(|s| matches!(s, Section::Header(_))) {
        if let Section::Header(header) = section {
            title(&mut out, header, plan);
        }
    }
    let order: [fn(&Section<'_>) -> bool; 10] = [
        |s| matches!(s, Section::CannotBeApplied(_)),
        |s| matches!(s, Section::UnknownPasswords(_)),
        |s| matches!(s, Section::Drift(_)),
        |s| matches!(s, Section::Hazards(_)),
        |s| matches!(s, Section::DataLoss(_)),
        |s| matches!(s, Section::Stranded(_)),
        |s| matches!(s, Section::NoChanges { .. } | Section::Changes(_)),
        |s| matches!(s, Section::Migrations(_)),
        |s| matches!(s, Section::Adopted(_)),
        |s| matches!(s, Section::Unmanaged(_)),
    ];
    for wanted in order {
        for section in find(wanted) {
            match section {
                Section::CannotBeApplied(refusal) => refused(&mut out, refusal),
                Section::UnknownPasswords(users) => unknown_passwords(&mut out, users),
                Section::DataLoss(items) => data_loss(&mut out, items, &mut budget),
                Section::Stranded(strands) => {
                    let (heading, lines) = sections::stranded_lines(strands);
                    for line in lines {
                        let _ = writeln!(out, "\n> [!CAUTION]\n> **{heading}** {}", inline(&line));
                    }
                }
                Section::Drift(_) => drift(&mut out, plan),
                Section::Hazards(_) => hazards(&mut out, plan),
                Section::NoChanges { differs, compared } => {
                    let (answer, meaning) = sections::no_changes(*differs, *compared);
                    let _ = writeln!(out, "\n**{answer}** {meaning}");
                }
                Section::Changes(groups) => {
                    overview::summary_table(&mut out, plan);
                    overview::picture(&mut out, plan);
                    changes::changes(&mut out, groups, &mut budget);
                }
                Section::Migrations(items) => migrations(&mut out, items, &mut budget),
                Section::Adopted(ids) => {
                    let about = sections::adopted_about();
                    listed_ids(
                        &mut out,
                        sections::ADOPTED.heading,
                        &about,
                        ids,
                        &mut budget,
                    );
                }
                Section::Unmanaged(ids) => {
                    let sections::UnmanagedWording {
                        heading,
                        fate,
                        prune,
                    } = sections::UNMANAGED;
                    let about = format!("{fate}; {prune}");
                    listed_ids(&mut out, heading, &about, ids, &mut budget);
                }
                _ => {}
            }
        }
    }
    out
}

fn title(out: &mut String, header: &Header<'_>, plan: &Plan) {
    let _ = writeln!(out, "### warren plan {}\n", header.title(&CodeSpans));
    let vhosts: Vec<String> = header.vhosts.iter().take(10).map(|v| code(v)).collect();
    let more = match header.vhosts.len() {
        n if n > 10 => format!(" and {} more", grouped((n - 10) as u64)),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "Against {}; {}: {}{more}.\n",
        header.against,
        counted(header.vhosts.len(), "vhost", "vhosts"),
        vhosts.join(", ")
    );
    let s = &plan.summary;
    let mut counts: Vec<String> = sections::summary_counts(s)
        .iter()
        .map(|(n, verb)| format!("**{}** {verb}", grouped(*n as u64)))
        .collect();
    if s.migrate > 0 {
        let migrate = grouped(s.migrate as u64);
        counts.push(format!("**{migrate}** {}", sections::TO_MIGRATE));
    }
    if s.adopt > 0 {
        let adopted = grouped(s.adopt as u64);
        counts.push(format!("{adopted} {}", sections::ADOPTED_COUNT));
    }
    if s.recreate > 0 {
        let bindings = counted(s.recreate, "binding", "bindings");
        counts.push(format!(
            "{bindings} {} a replaced object",
            sections::RECREATED
        ));
    }
    if s.data_loss > 0 {
        let loss = grouped(s.data_loss as u64);
        counts.push(format!("**{loss} {}**", sections::WITH_DATA_LOSS));
    }
    let _ = writeln!(out, "{}.", counts.join(" · "));
}

/// Managed objects whose settings another's policy overrides, as a warning: a
/// reviewer must see it before the changes.
fn drift(out: &mut String, plan: &Plan) {
    let sections::DriftWording { heading, fix } = sections::DRIFT;
    let _ = writeln!(out, "\n> [!WARNING]\n> **{heading}**: {}.", inline(fix));
    let items = sections::drift_items(plan, &CodeSpans);
    for item in items.iter().take(ROWS_PER_GROUP) {
        let _ = writeln!(
            out,
            "> - {} ({}): {}",
            inline(&item.what),
            item.by,
            item.settings.join("; ")
        );
    }
    if items.len() > ROWS_PER_GROUP {
        let _ = writeln!(
            out,
            "> - and {}",
            more(items.len() - ROWS_PER_GROUP, "object", "objects")
        );
    }
}

/// Managed queues another's policy breaks, as a warning beside the drift.
fn hazards(out: &mut String, plan: &Plan) {
    let _ = writeln!(out, "\n> [!WARNING]\n> **{}**:", sections::HAZARDS);
    let items = sections::hazard_items(plan, &CodeSpans);
    for item in items.iter().take(ROWS_PER_GROUP) {
        let _ = writeln!(
            out,
            "> - {} ({}): {}. Fix: {}.",
            inline(&item.what),
            item.by,
            inline(&item.effect),
            inline(&item.fix)
        );
    }
    if items.len() > ROWS_PER_GROUP {
        let _ = writeln!(
            out,
            "> - and {}",
            more(items.len() - ROWS_PER_GROUP, "hazard", "hazards")
        );
    }
}

fn refused(out: &mut String, refusal: &Refusal) {
    let _ = writeln!(
        out,
        "\n> [!CAUTION]\n> **{}** {}.",
        sections::cannot_be_applied(),
        inline(&refusal.to_string())
    );
}

/// Users whose password this plan could not read (planned without the applications'
/// secrets): their passwords are not compared.
fn unknown_passwords(out: &mut String, users: &[(&str, &str)]) {
    let sections::UnknownPasswordsWording { heading, then } = sections::UNKNOWN_PASSWORDS;
    let listed: Vec<String> = users
        .iter()
        .take(ROWS_PER_GROUP)
        .map(|(user, missing)| format!("{} ({})", code(user), inline(missing)))
        .collect();
    let more = match users.len() {
        n if n > ROWS_PER_GROUP => format!(" and {}", more(n - ROWS_PER_GROUP, "user", "users")),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "\n> [!NOTE]\n> **{heading}** {}{more}. {then}",
        listed.join(", ")
    );
}

/// Queues whose messages the plan loses, and queues it deletes and declares again.
fn data_loss(out: &mut String, items: &[ChangeItem<'_>], budget: &mut usize) {
    let losing: Vec<&ChangeItem<'_>> = items.iter().filter(|i| i.loses()).collect();
    let replaced = items
        .iter()
        .filter(|i| i.change.id.kind == ObjectKind::Queue && i.change.action == Action::Replace)
        .count();
    let kind = if losing.is_empty() {
        "WARNING"
    } else {
        "CAUTION"
    };
    let _ = writeln!(out, "\n> [!{kind}]");
    if !losing.is_empty() {
        let (strong, rest) = sections::loss_sentence(&losing);
        let _ = writeln!(out, "> **{strong}** {rest}");
    }
    if replaced > 0 {
        if !losing.is_empty() {
            out.push_str(">\n");
        }
        let (strong, rest) = sections::replaced_sentence(replaced);
        let _ = writeln!(out, "> **{strong}**{rest}");
    }
    let shown = items.len().min(ROWS_PER_GROUP).min(*budget);
    *budget -= shown;
    let _ = writeln!(
        out,
        ">\n> | | queue | vhost | messages | why |\n> | --- | --- | --- | ---: | --- |"
    );
    for item in &items[..shown] {
        let change = item.change;
        let what = match change.action {
            Action::Replace | Action::Delete => sections::action(change.action, item.migrated).verb,
            _ => "delete",
        };
        let _ = writeln!(
            out,
            "> | {what} | {} | {} | {} | {} |",
            code(&change.id.name),
            code(change.id.vhost.as_deref().unwrap_or_default()),
            item.held(),
            change.reason.as_deref().map(cell).unwrap_or_default()
        );
    }
    if items.len() > shown {
        let _ = writeln!(
            out,
            ">\n> … and {}.",
            more(items.len() - shown, "queue", "queues")
        );
    }
}

/// The migrations of the plan, each with its steps, within the row budget.
fn migrations(out: &mut String, items: &[MigrationItem<'_>], budget: &mut usize) {
    let shown = items.len().min(ROWS_PER_GROUP).min(*budget);
    *budget -= shown;
    let sections::MigrationsWording {
        method, command, ..
    } = sections::MIGRATIONS;
    let _ = writeln!(
        out,
        "\n<details><summary>{} {method} <code>{command}</code></summary>\n\n| queue | vhost | where it stands |\n| --- | --- | --- |",
        counted(items.len(), "queue migrated", "queues migrated"),
    );
    for item in &items[..shown] {
        let queue = &item.migration.queue;
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            code(&queue.name),
            code(queue.vhost.as_deref().unwrap_or_default()),
            item.stands(&CodeSpans)
        );
    }
    if items.len() > shown {
        let _ = writeln!(
            out,
            "\n… and {} more.",
            grouped((items.len() - shown) as u64)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::Change;
    use crate::model::ObjectId;
    use crate::plan::{Conflict, DesiredObject};
    use serde_json::Value;
    use serde_json::json;

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
            ObjectId::in_vhost(ObjectKind::Queue, "shop", "audit"),
            Some(queue("classic")),
            Some(queue("quorum")),
        );
        replaced.reason = Some("arguments.x-queue-type: \"classic\" → \"quorum\"".into());
        replaced.messages = Some(12_345);
        let mut deleted = change(
            Action::Delete,
            ObjectId::in_vhost(ObjectKind::Queue, "shop", "old|pipe`tick"),
            Some(queue("quorum")),
            None,
        );
        deleted.messages = Some(0);
        let shovel = json!({"src-uri": "amqp://mover:s3cret@mq", "password_hash": "hash-of-it"});
        let mut plan = plan(
            vec![
                change(
                    Action::Update,
                    ObjectId::global(ObjectKind::User, "ops"),
                    Some(json!({"password_hash": "old-hash", "tags": ["monitoring"]})),
                    Some(json!({"password_hash": "new-hash", "tags": ["management"]})),
                ),
                change(
                    Action::Update,
                    ObjectId::in_vhost(ObjectKind::Parameter, "shop", "shovel/move"),
                    Some(json!({"src-uri": "amqp://mover:0ld@mq"})),
                    Some(shovel.clone()),
                ),
                replaced,
                deleted,
                change(
                    Action::Create,
                    ObjectId::in_vhost(ObjectKind::Queue, "shop", "orders.email"),
                    None,
                    Some(queue("quorum")),
                ),
            ],
            vec![
                DesiredObject {
                    id: ObjectId::in_vhost(ObjectKind::Queue, "shop", "audit"),
                    value: queue("quorum"),
                },
                DesiredObject {
                    id: ObjectId::in_vhost(ObjectKind::Queue, "shop", "orders.email"),
                    value: queue("quorum"),
                },
                DesiredObject {
                    id: ObjectId::in_vhost(ObjectKind::Parameter, "shop", "shovel/move"),
                    value: shovel,
                },
            ],
        );
        plan.conflicts.push(Conflict {
            id: ObjectId::in_vhost(ObjectKind::Queue, "shop", "orders.email"),
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
                ObjectId::in_vhost(kind, &vhost, &name),
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
