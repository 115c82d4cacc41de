//! Plans as text (for people, colored on a terminal) and as JSON (for machines).

use std::io::{self, Write};

use serde_json::Value;

use crate::diff::{Action, Change};
use crate::model::redact::redact;
use crate::model::shorten::grouped;
use crate::model::{ObjectId, ObjectKind};
use crate::plan::{Plan, Stage};
use crate::render::attributes::attributes;

/// Text styles; all empty when color is off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    green: &'static str,
    yellow: &'static str,
    red: &'static str,
    magenta: &'static str,
    bold: &'static str,
    dim: &'static str,
    reset: &'static str,
}

impl Style {
    /// Colors on or off.
    pub fn new(color: bool) -> Style {
        if color {
            Style {
                green: "\x1b[32m",
                yellow: "\x1b[33m",
                red: "\x1b[31m",
                magenta: "\x1b[35m",
                bold: "\x1b[1m",
                dim: "\x1b[2m",
                reset: "\x1b[0m",
            }
        } else {
            Style {
                green: "",
                yellow: "",
                red: "",
                magenta: "",
                bold: "",
                dim: "",
                reset: "",
            }
        }
    }
}

fn kind_heading(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Vhost => "vhost",
        ObjectKind::VhostLimits => "limits",
        ObjectKind::Exchange => "exchanges",
        ObjectKind::Queue => "queues",
        ObjectKind::Binding => "bindings",
        ObjectKind::Policy => "policies",
        ObjectKind::OperatorPolicy => "operator policies",
        ObjectKind::User => "users",
        ObjectKind::Permission => "permissions",
        ObjectKind::TopicPermission => "topic permissions",
        ObjectKind::GlobalParameter => "global parameters",
        ObjectKind::Parameter => "parameters",
    }
}

/// The plan as JSON with password hashes and URI credentials redacted, in the changes
/// and in the desired state (what `--format json` prints).
pub fn redacted_json(plan: &Plan) -> Value {
    let mut plan = plan.clone();
    for change in &mut plan.changes {
        change.before = change.before.as_ref().map(redact);
        change.after = change.after.as_ref().map(redact);
    }
    for desired in &mut plan.desired {
        desired.value = redact(&desired.value);
    }
    serde_json::to_value(&plan).expect("plans serialize")
}

/// What an apply did, for its JSON document.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// Changes the broker confirmed, as `action kind name`.
    pub done: Vec<String>,
    /// Changes sent and not confirmed (they may or may not have been made).
    pub unconfirmed: Vec<String>,
    /// Changes not made.
    pub not_done: Vec<String>,
    /// Existing objects the spec adopted.
    pub adopted: usize,
    /// HTTP requests made.
    pub requests: u64,
}

/// The one document `apply --format json` prints: the plan it applied (redacted as
/// [`redacted_json`]), what it did, and, when it failed, why (`error`, as
/// [`super::errors::error_value`]).
pub fn apply_document(
    plan: Option<&Plan>,
    applied: Option<&Applied>,
    error: Option<Value>,
) -> Value {
    serde_json::json!({
        "format": "warren-apply/1",
        "plan": plan.map(redacted_json),
        "applied": applied.map(|a| serde_json::json!({
            "done": a.done,
            "unconfirmed": a.unconfirmed,
            "not_done": a.not_done,
            "adopted": a.adopted,
            "requests": a.requests,
        })),
        "error": error,
    })
}

/// Writes the plan for people.
pub fn render_text(out: &mut dyn Write, plan: &Plan, style: Style) -> io::Result<()> {
    let Style {
        green,
        yellow,
        red,
        magenta,
        bold,
        dim,
        reset,
    } = style;
    let against = match &plan.broker_version {
        Some(version) => format!("RabbitMQ {version}, target {}", plan.target_version),
        None => format!("a definitions file, target {}", plan.target_version),
    };
    match &plan.environment {
        Some(environment) => writeln!(
            out,
            "{bold}Plan for spec `{}` in environment `{environment}`{reset} ({against})",
            crate::spec::environment::base_name(&plan.spec, environment)
        )?,
        None => writeln!(
            out,
            "{bold}Plan for spec `{}`{reset} ({against})",
            plan.spec
        )?,
    }
    if !plan.conflicts.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{red}{bold}Managed by another spec (this plan cannot be applied):{reset}"
        )?;
        for conflict in &plan.conflicts {
            writeln!(
                out,
                "  {red}!{reset} {} {dim}(spec `{}`){reset}",
                conflict.id, conflict.owner
            )?;
        }
    }
    if !plan.captured.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{red}{bold}Queues the spec does not declare, which its generated policies would apply to (this plan cannot be applied):{reset}"
        )?;
        for captured in &plan.captured {
            let owner = match &captured.owner {
                Some(owner) => format!("managed by spec `{owner}`"),
                None => "no spec manages it".to_string(),
            };
            writeln!(
                out,
                "  {red}!{reset} {} {dim}(its name ends like the delay queues of `{}`, which would give it their TTL; {owner}){reset}",
                captured.queue, captured.policy
            )?;
        }
        writeln!(
            out,
            "  {dim}rename or delete these queues: warren keeps the endings `.retry.<n>`, `.retry-<ladder>.<n>` and `.retry.own.<n>` for its delay queues{reset}"
        )?;
    }
    if !plan.overlaps.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{red}{bold}Generated policies that overlap another spec's in the same vhost (this plan cannot be applied):{reset}"
        )?;
        for overlap in &plan.overlaps {
            writeln!(
                out,
                "  {red}!{reset} {} and policy `{}` of spec `{}` both select {}",
                overlap.policy, overlap.other, overlap.owner, overlap.common
            )?;
        }
        writeln!(
            out,
            "  {dim}rename a ladder or service in one of the specs, or manage the vhost from one spec{reset}"
        )?;
    }
    if !plan.has_changes() {
        writeln!(out)?;
        writeln!(
            out,
            "{green}No changes.{reset} The broker matches the spec."
        )?;
    }
    if !plan.adopted.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{bold}{} existing objects adopted:{reset} {dim}they match the spec and no spec manages them; apply records them as this spec's, without changing them{reset}",
            plan.adopted.len()
        )?;
        for id in plan.adopted.iter().take(20) {
            writeln!(out, "  {green}={reset} {}", describe_id(id))?;
        }
        if plan.adopted.len() > 20 {
            writeln!(out, "  {dim}… and {} more{reset}", plan.adopted.len() - 20)?;
        }
    }
    let mut current_scope: Option<Option<String>> = None;
    let mut current_kind: Option<ObjectKind> = None;
    let mut shown = ShownAttributes::default();
    for change in &plan.changes {
        if current_scope.as_ref() != Some(&change.id.vhost) {
            writeln!(out)?;
            match &change.id.vhost {
                Some(vhost) => writeln!(out, "{bold}vhost `{vhost}`{reset}")?,
                None => writeln!(out, "{bold}broker-wide{reset}")?,
            }
            current_scope = Some(change.id.vhost.clone());
            current_kind = None;
        }
        if current_kind != Some(change.id.kind) {
            writeln!(out, "  {}:", kind_heading(change.id.kind))?;
            current_kind = Some(change.id.kind);
            shown.new_section();
        }
        let migration = plan.migration_of(change);
        let (sign, color) = match change.action {
            Action::Replace if migration.is_some() && change.id.kind == ObjectKind::Queue => {
                ("~>", magenta)
            }
            Action::Create => ("+", green),
            Action::Update => ("~", yellow),
            Action::Replace => ("-/+", magenta),
            Action::Delete => ("-", red),
        };
        let name = match change.id.kind {
            ObjectKind::Vhost | ObjectKind::VhostLimits => change.id.name.clone(),
            _ => change.id.name.clone(),
        };
        let mut line = format!("    {color}{sign} {name}{reset}");
        if let Some(reason) = &change.reason {
            let label = match (change.action, migration) {
                (Action::Replace, Some(_)) if change.id.kind == ObjectKind::Queue => "migrate: ",
                (Action::Replace, _) => "replace: ",
                _ => "",
            };
            line.push_str(&format!(" {dim}({label}{reason}){reset}"));
        }
        if change.unmanaged {
            line.push_str(&format!(" {dim}(unmanaged, pruned){reset}"));
        }
        if change.id.kind == ObjectKind::User
            && let Some(missing) = plan.unknown_passwords.get(&change.id.name)
        {
            line.push_str(&format!(
                " {yellow}(password unknown: {missing} not set here){reset}"
            ));
        }
        if change.loses_data() && migration.is_some() {
            line.push_str(&format!(
                " {magenta}{bold}{}: moved with --migrate{reset}",
                change.loss()
            ));
        } else if change.loses_data() {
            line.push_str(&format!(" {red}{bold}DATA LOSS: {}{reset}", change.loss()));
        } else if let Some(0) = change.messages {
            // A count is statistics: apply checks again when it deletes.
            line.push_str(&format!(" {dim}(empty when planned){reset}"));
        }
        let attributes = match (change.action, &change.after) {
            (Action::Create, Some(after)) => shown.attributes(change, after),
            _ => Attributes::None,
        };
        match attributes {
            Attributes::None => writeln!(out, "{line}")?,
            Attributes::Lines(lines) => {
                writeln!(out, "{line}")?;
                for attribute in lines {
                    writeln!(out, "        {dim}{attribute}{reset}")?;
                }
            }
            Attributes::SameAs(first) => {
                writeln!(out, "{line} {dim}(same attributes as `{first}`){reset}")?
            }
            Attributes::LeftOut { first } => {
                writeln!(out, "{line}")?;
                if first {
                    writeln!(
                        out,
                        "        {dim}(attributes of this and later new objects are left out: the plan shows {MAX_ATTRIBUTE_BLOCKS} at most; `--format json` has all of them){reset}"
                    )?;
                }
            }
        }
        if change.action == Action::Update {
            render_update(out, change, style)?;
        }
    }
    if !plan.unmanaged.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{dim}Not managed by any spec, left alone ({}; `--prune-unmanaged` deletes them):{reset}",
            crate::text::count(plan.unmanaged.len(), "object")
        )?;
        for id in plan.unmanaged.iter().take(20) {
            writeln!(out, "  {dim}? {}{reset}", describe_id(id))?;
        }
        if plan.unmanaged.len() > 20 {
            writeln!(
                out,
                "  {dim}… and {} more{reset}",
                plan.unmanaged.len() - 20
            )?;
        }
    }
    render_migrations(out, plan, style)?;
    let summary = &plan.summary;
    writeln!(out)?;
    let migrate = if summary.migrate > 0 {
        format!(", {magenta}{} to migrate{reset}", summary.migrate)
    } else {
        String::new()
    };
    let loss = if summary.data_loss > 0 {
        format!(", {red}{bold}{} with data loss{reset}", summary.data_loss)
    } else {
        String::new()
    };
    let adopt = if summary.adopt > 0 {
        format!(
            ", {} adopted",
            crate::text::count(summary.adopt, "existing object")
        )
    } else {
        String::new()
    };
    let recreate = match summary.recreate {
        0 => String::new(),
        n => format!(
            " ({} re-created with {})",
            crate::text::count(n, "binding"),
            if summary.replace == 1 { "it" } else { "them" }
        ),
    };
    writeln!(
        out,
        "{bold}Plan:{reset} {} to create, {} to update, {} to replace{recreate}, {} to delete{migrate}{adopt}{loss}.",
        summary.create, summary.update, summary.replace, summary.delete
    )?;
    // The counts alone read like a plan ready to go: the last line says when it is not.
    if plan.refusal().is_some() {
        writeln!(
            out,
            "{red}{bold}This plan cannot be applied:{reset} see the objects marked `!` above."
        )?;
    }
    if !plan.unknown_passwords.is_empty() {
        let users: Vec<String> = plan
            .unknown_passwords
            .iter()
            .map(|(user, missing)| format!("`{user}` ({missing})"))
            .collect();
        writeln!(
            out,
            "{yellow}{bold}Passwords not known here:{reset} {}. They are not compared; `warren apply SPEC` reads them where they are set, and this plan, saved, is not applied.",
            users.join(", ")
        )?;
    }
    Ok(())
}

/// The migrations of a plan, with their steps: what `apply --migrate` does, and where
/// a migration under way stands.
fn render_migrations(out: &mut dyn Write, plan: &Plan, style: Style) -> io::Result<()> {
    let Style {
        magenta,
        bold,
        dim,
        reset,
        ..
    } = style;
    if plan.migrations.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{bold}Migrations{reset} {dim}(blue/green with `warren apply --migrate`, which needs the rabbitmq_shovel plugin; docs/migration.md){reset}"
    )?;
    for migration in &plan.migrations {
        let queue = &migration.queue.name;
        let temporary = &migration.temporary;
        let vhost = migration.queue.vhost.as_deref().unwrap_or_default();
        let new_type = migration.after["arguments"]["x-queue-type"]
            .as_str()
            .unwrap_or("classic");
        let replace = plan
            .changes
            .iter()
            .find(|c| c.action == Action::Replace && migration.carries_out(c));
        match migration.stage {
            Stage::MoveOut => {
                let held = match replace.and_then(|c| c.messages) {
                    Some(count) => format!(
                        "{} {} when planned",
                        grouped(count),
                        if count == 1 { "message" } else { "messages" }
                    ),
                    None => "message count unknown".to_string(),
                };
                writeln!(
                    out,
                    "  {magenta}~>{reset} queue `{queue}` in vhost `{vhost}` {dim}({held}){reset}"
                )?;
                for (number, step) in [
                    format!("declare `{temporary}` ({new_type}, with the settings its policies give `{queue}`) and bind it wherever `{queue}` is bound"),
                    format!("unbind `{queue}`: new messages go to `{temporary}`"),
                    format!("move the messages of `{queue}` to `{temporary}` (shovel, acknowledged once `{temporary}` has each)"),
                    format!("delete `{queue}` once its consumers hold no unacknowledged message and the broker finds it empty, and at once declare it as the spec says ({new_type}); what is sent to `{queue}` by name through the default exchange in that instant is dropped"),
                    format!("bind `{queue}` wherever `{temporary}` is bound, then unbind `{temporary}`"),
                    format!("move the messages back into `{queue}`, delete `{temporary}`"),
                ]
                .iter()
                .enumerate()
                {
                    writeln!(out, "     {dim}{}. {step}{reset}", number + 1)?;
                }
            }
            Stage::MoveBack => {
                let held = match migration.temporary_messages {
                    Some(count) => format!(
                        "{} {} in `{temporary}`",
                        grouped(count),
                        if count == 1 {
                            "message waits"
                        } else {
                            "messages wait"
                        }
                    ),
                    None => format!("messages wait in `{temporary}`"),
                };
                writeln!(
                    out,
                    "  {magenta}~>{reset} queue `{queue}` in vhost `{vhost}`: {bold}under way{reset} {dim}({held}){reset}"
                )?;
                writeln!(
                    out,
                    "     {dim}next: declare `{queue}` as the spec says if needed, bind it, unbind `{temporary}`, move the messages back, delete `{temporary}`{reset}"
                )?;
            }
        }
    }
    Ok(())
}

/// How many distinct attribute blocks one text plan prints: past that, a create shows
/// its name only (a plan that creates thousands of different policies stays readable;
/// `--format json` has every value).
const MAX_ATTRIBUTE_BLOCKS: usize = 200;

/// What is printed under a create.
enum Attributes {
    /// Nothing: not a create, or nothing to say beyond the name (a binding).
    None,
    /// The attribute lines, printed for the first object of its section that has them.
    Lines(Vec<String>),
    /// The same lines as an earlier create of the same vhost and kind, named.
    SameAs(String),
    /// Past [`MAX_ATTRIBUTE_BLOCKS`]; `first` for the first object left out.
    LeftOut { first: bool },
}

/// The attribute blocks printed so far: identical ones are printed once per vhost and
/// kind (4,000 queues of one type and arguments show one block, and refer to it), and
/// [`MAX_ATTRIBUTE_BLOCKS`] in all.
#[derive(Default)]
struct ShownAttributes {
    /// Attribute lines → the first object of the section that has them.
    in_section: std::collections::HashMap<Vec<String>, String>,
    blocks: usize,
    left_out: bool,
}

impl ShownAttributes {
    fn new_section(&mut self) {
        self.in_section.clear();
    }

    fn attributes(&mut self, change: &Change, after: &Value) -> Attributes {
        let lines = attributes(change.id.kind, after);
        if lines.is_empty() {
            return Attributes::None;
        }
        if let Some(first) = self.in_section.get(&lines) {
            return Attributes::SameAs(first.clone());
        }
        if self.blocks >= MAX_ATTRIBUTE_BLOCKS {
            let first = !self.left_out;
            self.left_out = true;
            return Attributes::LeftOut { first };
        }
        self.blocks += 1;
        self.in_section
            .insert(lines.clone(), change.id.name.clone());
        Attributes::Lines(lines)
    }
}

fn describe_id(id: &ObjectId) -> String {
    id.to_string()
}

/// A field-level diff of an update; passwords show as "password changed" only.
fn render_update(out: &mut dyn Write, change: &Change, style: Style) -> io::Result<()> {
    let (Some(before), Some(after)) = (&change.before, &change.after) else {
        return Ok(());
    };
    if before.get("password_hash") != after.get("password_hash") {
        writeln!(
            out,
            "        {}password changed{}",
            style.yellow, style.reset
        )?;
    }
    let before = serde_json::to_string_pretty(&redact(before)).unwrap_or_default();
    let after = serde_json::to_string_pretty(&redact(after)).unwrap_or_default();
    let diff = similar::TextDiff::from_lines(&before, &after);
    for change in diff.iter_all_changes() {
        let (sign, color) = match change.tag() {
            similar::ChangeTag::Delete => ("-", style.red),
            similar::ChangeTag::Insert => ("+", style.green),
            similar::ChangeTag::Equal => continue,
        };
        write!(
            out,
            "        {color}{sign} {}{}",
            change.value().trim_start(),
            style.reset
        )?;
        if change.missing_newline() {
            writeln!(out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::Change;
    use serde_json::json;

    fn id(kind: ObjectKind, vhost: Option<&str>, name: &str) -> ObjectId {
        ObjectId {
            kind,
            vhost: vhost.map(str::to_string),
            name: name.into(),
        }
    }

    fn change(action: Action, id: ObjectId, before: Option<Value>, after: Option<Value>) -> Change {
        Change::new(action, id, before, after)
    }

    #[test]
    fn text_plans_group_by_vhost_and_kind_and_hide_passwords() {
        let mut replace = change(
            Action::Replace,
            id(ObjectKind::Queue, Some("shop"), "audit"),
            Some(json!({})),
            Some(json!({})),
        );
        replace.reason = Some("arguments.x-queue-type: \"classic\" → \"quorum\"".into());
        replace.messages = Some(12);
        // A binding of the replaced queue, unchanged: deleted with it and created again.
        let mut recreated = change(
            Action::Create,
            id(ObjectKind::Binding, Some("shop"), "audit-binding"),
            None,
            Some(
                json!({"source": "orders", "destination": "audit", "destination_type": "queue", "routing_key": "#", "arguments": {}}),
            ),
        );
        recreated.reason = Some("`audit` is replaced, which removes this binding".into());
        let mut plan = Plan {
            unmanaged: vec![id(ObjectKind::Queue, Some("shop"), "handmade")],
            ..Plan::of_changes(
                vec![
                    change(
                        Action::Update,
                        id(ObjectKind::User, None, "orders_app"),
                        Some(json!({"password_hash": "old", "tags": []})),
                        Some(json!({"password_hash": "new", "tags": ["management"]})),
                    ),
                    change(
                        Action::Create,
                        id(ObjectKind::User, None, "email_app"),
                        None,
                        Some(json!({"password_hash": "c2VjcmV0aGFzaA==", "tags": ["management"]})),
                    ),
                    change(
                        Action::Update,
                        id(ObjectKind::Policy, Some("shop"), "warren.retry.defaults.1"),
                        Some(json!({"definition": {"message-ttl": 30000}, "priority": 100})),
                        Some(json!({"definition": {"message-ttl": 45000}, "priority": 100})),
                    ),
                    change(
                        Action::Create,
                        id(ObjectKind::Policy, Some("shop"), "warren.retry.defaults.2"),
                        None,
                        Some(
                            json!({"pattern": "\\.retry\\.2$", "apply-to": "queues", "priority": 100,
                                "definition": {"message-ttl": 300000, "dead-letter-exchange": "warren.retry"}}),
                        ),
                    ),
                    change(
                        Action::Create,
                        id(ObjectKind::Exchange, Some("shop"), "orders"),
                        None,
                        Some(
                            json!({"type": "topic", "durable": true, "auto_delete": false,
                                "internal": false, "arguments": {"alternate-exchange": "orders.unrouted"}}),
                        ),
                    ),
                    change(
                        Action::Create,
                        id(ObjectKind::Permission, Some("shop"), "email_app"),
                        None,
                        Some(
                            json!({"user": "email_app", "configure": "", "write": "^orders$", "read": "^orders\\."}),
                        ),
                    ),
                    replace,
                    change(
                        Action::Create,
                        id(ObjectKind::Queue, Some("shop"), "orders.email"),
                        None,
                        Some(json!({"durable": true, "auto_delete": false,
                                "arguments": {"x-queue-type": "quorum", "x-delivery-limit": 5}})),
                    ),
                    change(
                        Action::Create,
                        id(ObjectKind::Queue, Some("shop"), "orders.invoice"),
                        None,
                        Some(json!({"durable": true, "auto_delete": false,
                                "arguments": {"x-queue-type": "quorum", "x-delivery-limit": 5}})),
                    ),
                    recreated,
                ],
                vec![],
            )
        };
        plan.summarize();
        assert_eq!((plan.summary.create, plan.summary.recreate), (6, 1));
        let mut out = Vec::new();
        render_text(&mut out, &plan, Style::new(false)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            !text.contains("\"old\"") && !text.contains("\"new\""),
            "{text}"
        );
        assert!(!text.contains("c2VjcmV0aGFzaA=="), "{text}");
        insta::assert_snapshot!(text);
        assert!(!text.contains("cannot be applied"), "{text}");
        let mut refused = plan.clone();
        refused.conflicts.push(crate::plan::Conflict {
            id: id(ObjectKind::Queue, Some("shop"), "orders.email"),
            owner: "other".into(),
        });
        let mut out = Vec::new();
        render_text(&mut out, &refused, Style::new(false)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with("This plan cannot be applied: see the objects marked `!` above.\n"),
            "{text}"
        );
        let json = redacted_json(&plan).to_string();
        assert!(!json.contains("\"old\"") && json.contains("(redacted)"));
        plan.desired.push(crate::plan::DesiredObject {
            id: id(ObjectKind::Parameter, Some("shop"), "shovel/move"),
            value: json!({"src-uri": "amqp://mover:s3cret@mq", "password_hash": "new"}),
        });
        let json = redacted_json(&plan).to_string();
        assert!(
            !json.contains("s3cret") && !json.contains("\"new\"") && json.contains("mover:***@"),
            "the desired state is redacted too: {json}"
        );
    }

    #[test]
    fn thousands_of_creates_print_each_attribute_block_once_and_at_most_200() {
        let queue = json!({"durable": true, "auto_delete": false,
                           "arguments": {"x-queue-type": "quorum"}});
        let mut changes: Vec<Change> = (0..4000)
            .map(|n| {
                change(
                    Action::Create,
                    id(ObjectKind::Queue, Some("shop"), &format!("q{n:04}")),
                    None,
                    Some(queue.clone()),
                )
            })
            .collect();
        // Policies that differ one from the other: past 200 blocks, names only.
        changes.extend((0..300).map(|n| {
            change(
                Action::Create,
                id(ObjectKind::Policy, Some("shop"), &format!("p{n:03}")),
                None,
                Some(
                    json!({"pattern": format!("^q{n:04}$"), "apply-to": "queues",
                            "priority": 0, "definition": {"max-length": n}}),
                ),
            )
        }));
        let mut plan = Plan {
            serial: 0,
            ..Plan::of_changes(changes, vec![])
        };
        plan.summarize();
        let mut out = Vec::new();
        render_text(&mut out, &plan, Style::new(false)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.matches("quorum, durable").count(),
            1,
            "one block for 4,000 queues"
        );
        assert!(
            text.contains("    + q0000\n        quorum, durable\n"),
            "{text}"
        );
        assert!(text.contains("    + q3999 (same attributes as `q0000`)\n"));
        // The queues' block counts as one: 199 policies get theirs.
        assert_eq!(text.matches("apply to queues").count(), 199);
        assert_eq!(
            text.matches("attributes of this and later new objects are left out")
                .count(),
            1
        );
        assert!(text.contains("    + p299\n"), "every name is still listed");
        // One line per object, and the blocks: nowhere near an attribute block each.
        assert!(
            text.lines().count() < 4000 + 300 + 2 * 200 + 20,
            "{}",
            text.lines().count()
        );
    }

    #[test]
    fn migrations_show_their_steps_and_where_one_under_way_stands() {
        use crate::plan::{Migration, Stage};
        let quorum = json!({"durable": true, "auto_delete": false,
                            "arguments": {"x-queue-type": "quorum"}});
        let mut replace = change(
            Action::Replace,
            id(ObjectKind::Queue, Some("shop"), "audit"),
            Some(json!({"durable": true, "auto_delete": false,
                        "arguments": {"x-queue-type": "classic"}})),
            Some(quorum.clone()),
        );
        replace.reason = Some("arguments.x-queue-type: \"classic\" → \"quorum\"".into());
        replace.messages = Some(10_000);
        let migration = |name: &str, stage| Migration {
            queue: id(ObjectKind::Queue, Some("shop"), name),
            temporary: format!("warren.migrate.{name}"),
            stage,
            temporary_value: quorum.clone(),
            after: quorum.clone(),
            temporary_messages: (stage == Stage::MoveBack).then_some(42),
        };
        let mut plan = Plan::of_changes(vec![replace], vec![]);
        plan.migrations = vec![
            migration("audit", Stage::MoveOut),
            migration("late", Stage::MoveBack),
        ];
        plan.summarize();
        assert_eq!(plan.summary.data_loss, 0, "moved, not lost");
        assert_eq!(plan.summary.migrate, 2);
        let mut out = Vec::new();
        render_text(&mut out, &plan, Style::new(false)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("DATA LOSS"), "{text}");
        insta::assert_snapshot!(text);
    }
}
