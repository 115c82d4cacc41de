//! Plans as text (for people, colored on a terminal) and as JSON (for machines).
//!
//! The text is a layout of the plan's sections ([`super::sections`], which owns the
//! words): this file chooses the colors, the indents and the short lists. The JSON is
//! the serialized plan ([`json`]). The module is `plan.rs` with its parts in `plan/`
//! (rather than `plan/mod.rs`) so that its tests keep their snapshots in
//! `render/snapshots/`.

use std::io::{self, Write};

use crate::model::ObjectId;
use crate::plan::Plan;
use crate::render::sections::{self, MigrationItem, Quote, Refusals, Section, Span, Tone};

mod blocks;
mod changes;
mod json;

pub use json::{Applied, apply_document, redacted_json};

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

    /// Whether this style colors its text.
    pub fn colored(&self) -> bool {
        !self.reset.is_empty()
    }

    /// The escape that starts a span of this tone: the color, then bold.
    fn start(&self, tone: Tone, strong: bool) -> String {
        let color = match tone {
            Tone::Plain => "",
            Tone::Good => self.green,
            Tone::Warning => self.yellow,
            Tone::Danger => self.red,
            Tone::Moved => self.magenta,
            Tone::Dim => self.dim,
        };
        let bold = if strong { self.bold } else { "" };
        format!("{color}{bold}")
    }

    /// A span: plain text as it is, anything else between its start and a reset.
    fn span(&self, span: &Span) -> String {
        self.paint(span.tone, span.strong, &span.text)
    }

    fn paint(&self, tone: Tone, strong: bool, text: &str) -> String {
        match (tone, strong) {
            (Tone::Plain, false) => text.to_string(),
            _ => format!("{}{text}{}", self.start(tone, strong), self.reset),
        }
    }
}

/// Names in backticks, as they are.
struct Backticks;

impl Quote for Backticks {
    fn code(&self, name: &str) -> String {
        format!("`{name}`")
    }
}

/// How many adopted or unmanaged objects the text plan lists before "and N more".
const LISTED: usize = 20;

/// Writes the plan for people: each section of [`sections::sections`] in turn.
pub fn render_text(out: &mut dyn Write, plan: &Plan, style: Style) -> io::Result<()> {
    super::visibly(out, style.colored(), |out| text_sections(out, plan, style))
}

fn text_sections(out: &mut dyn Write, plan: &Plan, style: Style) -> io::Result<()> {
    for section in sections::sections(plan) {
        match section {
            Section::Header(header) => writeln!(
                out,
                "{} ({})",
                style.paint(
                    Tone::Plain,
                    true,
                    &format!("Plan {}", header.title(&Backticks))
                ),
                header.against
            )?,
            Section::Refusals(refusals) => refused(out, &refusals, style)?,
            Section::Drift(_) => drift(out, plan, style)?,
            Section::Hazards(_) => hazards(out, plan, style)?,
            Section::NoChanges { differs, compared } => {
                let (answer, meaning) = sections::no_changes(differs, compared);
                writeln!(out)?;
                writeln!(out, "{} {meaning}", style.paint(Tone::Good, false, answer))?;
            }
            Section::Adopted(ids) => {
                writeln!(out)?;
                let heading = format!(
                    "{} adopted:",
                    crate::text::count(ids.len(), sections::ADOPTED.counted)
                );
                writeln!(
                    out,
                    "{} {}",
                    style.paint(Tone::Plain, true, &heading),
                    style.paint(Tone::Dim, false, &sections::adopted_aside())
                )?;
                listed(out, ids, style, |id| {
                    format!("{} {id}", style.paint(Tone::Good, false, "="))
                })?;
            }
            Section::DataLoss(_) => {} // each change line says what it loses
            Section::Stranded(strands) => {
                let (heading, lines) = sections::stranded_lines(&strands);
                for line in lines {
                    writeln!(out, "{} {line}", style.paint(Tone::Danger, true, heading))?;
                }
            }
            Section::Changes(groups) => changes::changes(out, &groups, style)?,
            Section::Unmanaged(ids) => {
                let sections::UnmanagedWording {
                    heading,
                    fate,
                    prune,
                } = sections::UNMANAGED;
                let count = crate::text::count(ids.len(), "object");
                writeln!(out)?;
                writeln!(
                    out,
                    "{}",
                    style.paint(
                        Tone::Dim,
                        false,
                        &format!("{heading}, {fate} ({count}; {prune}):")
                    )
                )?;
                listed(out, ids, style, |id| {
                    style.paint(Tone::Dim, false, &format!("? {id}"))
                })?;
            }
            Section::Migrations(items) => migrations(out, &items, style)?,
            Section::Summary(summary) => {
                writeln!(out)?;
                writeln!(out, "{}", summary_line(summary, style))?;
            }
            Section::CannotBeApplied(_) => {
                // The counts alone read like a plan ready to go: the last line says
                // when it is not.
                writeln!(
                    out,
                    "{} see the objects marked `!` above.",
                    style.paint(Tone::Danger, true, &sections::cannot_be_applied())
                )?;
            }
            Section::UnknownPasswords(users) => {
                let sections::UnknownPasswordsWording { heading, then } =
                    sections::UNKNOWN_PASSWORDS;
                let users: Vec<String> = users
                    .iter()
                    .map(|(user, missing)| format!("{} ({missing})", Backticks.code(user)))
                    .collect();
                writeln!(
                    out,
                    "{} {}. {then}",
                    style.paint(Tone::Warning, true, heading),
                    users.join(", ")
                )?;
            }
        }
    }
    Ok(())
}

/// Managed objects whose settings another's policy overrides: each marked `≠`, with
/// the policy that wins and every setting it changes.
fn drift(out: &mut dyn Write, plan: &Plan, style: Style) -> io::Result<()> {
    let sections::DriftWording { heading, fix } = sections::DRIFT;
    writeln!(out)?;
    writeln!(
        out,
        "{} {}",
        style.paint(Tone::Warning, true, &format!("{heading}:")),
        style.paint(Tone::Dim, false, &format!("({fix})"))
    )?;
    for item in sections::drift_items(plan, &Backticks) {
        let mark = style.paint(Tone::Warning, false, "≠");
        writeln!(
            out,
            "  {mark} {} {}",
            item.what,
            style.paint(Tone::Dim, false, &format!("({})", item.by))
        )?;
        for setting in &item.settings {
            writeln!(out, "      {setting}")?;
        }
    }
    Ok(())
}

/// Managed queues another's policy breaks: each marked `≠`, with the policy and its
/// setting, what it does to the messages and the fix.
fn hazards(out: &mut dyn Write, plan: &Plan, style: Style) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.paint(Tone::Warning, true, &format!("{}:", sections::HAZARDS))
    )?;
    for item in sections::hazard_items(plan, &Backticks) {
        let mark = style.paint(Tone::Warning, false, "≠");
        writeln!(
            out,
            "  {mark} {} {}",
            item.what,
            style.paint(Tone::Dim, false, &format!("({})", item.by))
        )?;
        writeln!(out, "      {}", item.effect)?;
        writeln!(
            out,
            "      {}",
            style.paint(Tone::Dim, false, &format!("fix: {}", item.fix))
        )?;
    }
    Ok(())
}

/// One kind of reason the plan cannot be applied: every object marked `!`.
fn refused(out: &mut dyn Write, refusals: &Refusals, style: Style) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.paint(Tone::Danger, true, &refusals.heading)
    )?;
    for item in &refusals.items {
        let aside = match &item.aside {
            Some(aside) => format!(" {}", style.paint(Tone::Dim, false, &format!("({aside})"))),
            None => String::new(),
        };
        let mark = style.paint(Tone::Danger, false, "!");
        writeln!(out, "  {mark} {}{aside}", item.what)?;
    }
    if let Some(advice) = refusals.advice {
        writeln!(out, "  {}", style.paint(Tone::Dim, false, advice))?;
    }
    Ok(())
}

/// The first [`LISTED`] ids, then how many more.
fn listed(
    out: &mut dyn Write,
    ids: &[ObjectId],
    style: Style,
    line: impl Fn(&ObjectId) -> String,
) -> io::Result<()> {
    for id in ids.iter().take(LISTED) {
        writeln!(out, "  {}", line(id))?;
    }
    if ids.len() > LISTED {
        let more = format!("… and {} more", ids.len() - LISTED);
        writeln!(out, "  {}", style.paint(Tone::Dim, false, &more))?;
    }
    Ok(())
}

/// `Plan: 6 to create, 2 to update, 1 to replace (…), 0 to delete, ….`
fn summary_line(summary: &crate::plan::Summary, style: Style) -> String {
    let counts = sections::summary_counts(summary);
    let recreate = match summary.recreate {
        0 => String::new(),
        n => format!(
            " ({} {} {})",
            crate::text::count(n, "binding"),
            sections::RECREATED,
            if summary.replace == 1 { "it" } else { "them" }
        ),
    };
    let mut extras = String::new();
    if summary.migrate > 0 {
        let migrate = format!("{} {}", summary.migrate, sections::TO_MIGRATE);
        extras.push_str(&format!(", {}", style.paint(Tone::Moved, false, &migrate)));
    }
    if summary.adopt > 0 {
        let adopted = crate::text::count(summary.adopt, "existing object");
        extras.push_str(&format!(", {adopted} {}", sections::ADOPTED_COUNT));
    }
    if summary.data_loss > 0 {
        let loss = format!("{} {}", summary.data_loss, sections::WITH_DATA_LOSS);
        extras.push_str(&format!(", {}", style.paint(Tone::Danger, true, &loss)));
    }
    let [create, update, replace, delete] = counts.map(|(n, verb)| format!("{n} {verb}"));
    format!(
        "{} {create}, {update}, {replace}{recreate}, {delete}{extras}.",
        style.paint(Tone::Plain, true, "Plan:")
    )
}

/// The migrations of a plan, with their steps: what `apply --migrate` does, and where
/// a migration under way stands.
fn migrations(out: &mut dyn Write, items: &[MigrationItem<'_>], style: Style) -> io::Result<()> {
    let dim = |text: &str| style.paint(Tone::Dim, false, text);
    writeln!(out)?;
    writeln!(
        out,
        "{} {}",
        style.paint(Tone::Plain, true, sections::MIGRATIONS.heading),
        dim(&sections::migrations_aside())
    )?;
    for item in items {
        let sign = style.paint(Tone::Moved, false, "~>");
        let held = dim(&format!("({})", item.held()));
        match item.under_way() {
            None => writeln!(out, "  {sign} {} {held}", item.queue())?,
            Some(under_way) => writeln!(
                out,
                "  {sign} {}: {} {held}",
                item.queue(),
                style.paint(Tone::Plain, true, under_way)
            )?,
        }
        // A migration to come is numbered steps; one under way, its next line.
        for (number, step) in item.steps().iter().enumerate() {
            match item.under_way() {
                None => writeln!(out, "     {}", dim(&format!("{}. {step}", number + 1)))?,
                Some(_) => writeln!(out, "     {}", dim(step))?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{Action, Change};
    use crate::model::ObjectKind;
    use serde_json::{Value, json};

    fn change(action: Action, id: ObjectId, before: Option<Value>, after: Option<Value>) -> Change {
        Change::new(action, id, before, after)
    }

    /// A colored diff line ends its color before its line break: a reset at the start
    /// of the next line shows as text in pagers and CI logs that strip line starts.
    #[test]
    fn colored_diff_lines_end_their_color_before_the_line_break() {
        let mut plan = Plan::of_changes(
            vec![change(
                Action::Update,
                ObjectId::in_vhost(ObjectKind::Policy, "shop", "warren.retry.defaults.1"),
                Some(json!({"definition": {"message-ttl": 30000}, "priority": 100})),
                Some(json!({"definition": {"message-ttl": 45000}, "priority": 100})),
            )],
            vec![],
        );
        plan.summarize();
        let mut out = Vec::new();
        render_text(&mut out, &plan, Style::new(true)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let reset = Style::new(true).reset;
        let diff: Vec<&str> = text
            .lines()
            .filter(|line| line.contains("message-ttl") && line.contains(['-', '+']))
            .collect();
        assert_eq!(diff.len(), 2, "{text:?}");
        for line in &diff {
            assert!(line.ends_with(reset), "{line:?}");
        }
        assert!(
            text.lines().all(|line| !line.starts_with(reset)),
            "a line starts with a reset: {text:?}"
        );
    }

    #[test]
    fn text_plans_group_by_vhost_and_kind_and_hide_passwords() {
        let mut replace = change(
            Action::Replace,
            ObjectId::in_vhost(ObjectKind::Queue, "shop", "audit"),
            Some(json!({})),
            Some(json!({})),
        );
        replace.reason = Some("arguments.x-queue-type: \"classic\" → \"quorum\"".into());
        replace.messages = Some(12);
        // A binding of the replaced queue, unchanged: deleted with it and created again.
        let mut recreated = change(
            Action::Create,
            ObjectId::in_vhost(ObjectKind::Binding, "shop", "audit-binding"),
            None,
            Some(
                json!({"source": "orders", "destination": "audit", "destination_type": "queue", "routing_key": "#", "arguments": {}}),
            ),
        );
        recreated.reason = Some("`audit` is replaced, which removes this binding".into());
        let mut plan = Plan {
            unmanaged: vec![ObjectId::in_vhost(ObjectKind::Queue, "shop", "handmade")],
            ..Plan::of_changes(
                vec![
                    change(
                        Action::Update,
                        ObjectId::global(ObjectKind::User, "orders_app"),
                        Some(json!({"password_hash": "old", "tags": []})),
                        Some(json!({"password_hash": "new", "tags": ["management"]})),
                    ),
                    change(
                        Action::Create,
                        ObjectId::global(ObjectKind::User, "email_app"),
                        None,
                        Some(json!({"password_hash": "c2VjcmV0aGFzaA==", "tags": ["management"]})),
                    ),
                    change(
                        Action::Update,
                        ObjectId::in_vhost(ObjectKind::Policy, "shop", "warren.retry.defaults.1"),
                        Some(json!({"definition": {"message-ttl": 30000}, "priority": 100})),
                        Some(json!({"definition": {"message-ttl": 45000}, "priority": 100})),
                    ),
                    change(
                        Action::Create,
                        ObjectId::in_vhost(ObjectKind::Policy, "shop", "warren.retry.defaults.2"),
                        None,
                        Some(
                            json!({"pattern": "\\.retry\\.2$", "apply-to": "queues", "priority": 100,
                                "definition": {"message-ttl": 300000, "dead-letter-exchange": "warren.retry"}}),
                        ),
                    ),
                    change(
                        Action::Create,
                        ObjectId::in_vhost(ObjectKind::Exchange, "shop", "orders"),
                        None,
                        Some(
                            json!({"type": "topic", "durable": true, "auto_delete": false,
                                "internal": false, "arguments": {"alternate-exchange": "orders.unrouted"}}),
                        ),
                    ),
                    change(
                        Action::Create,
                        ObjectId::in_vhost(ObjectKind::Permission, "shop", "email_app"),
                        None,
                        Some(
                            json!({"user": "email_app", "configure": "", "write": "^orders$", "read": "^orders\\."}),
                        ),
                    ),
                    replace,
                    change(
                        Action::Create,
                        ObjectId::in_vhost(ObjectKind::Queue, "shop", "orders.email"),
                        None,
                        Some(json!({"durable": true, "auto_delete": false,
                                "arguments": {"x-queue-type": "quorum", "x-delivery-limit": 5}})),
                    ),
                    change(
                        Action::Create,
                        ObjectId::in_vhost(ObjectKind::Queue, "shop", "orders.invoice"),
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
            id: ObjectId::in_vhost(ObjectKind::Queue, "shop", "orders.email"),
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
            id: ObjectId::in_vhost(ObjectKind::Parameter, "shop", "shovel/move"),
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
                    ObjectId::in_vhost(ObjectKind::Queue, "shop", format!("q{n:04}")),
                    None,
                    Some(queue.clone()),
                )
            })
            .collect();
        // Policies that differ one from the other: past 200 blocks, names only.
        changes.extend((0..300).map(|n| {
            change(
                Action::Create,
                ObjectId::in_vhost(ObjectKind::Policy, "shop", format!("p{n:03}")),
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
            ObjectId::in_vhost(ObjectKind::Queue, "shop", "audit"),
            Some(json!({"durable": true, "auto_delete": false,
                        "arguments": {"x-queue-type": "classic"}})),
            Some(quorum.clone()),
        );
        replace.reason = Some("arguments.x-queue-type: \"classic\" → \"quorum\"".into());
        replace.messages = Some(10_000);
        let migration = |name: &str, stage| Migration {
            queue: ObjectId::in_vhost(ObjectKind::Queue, "shop", name),
            temporary: format!("warren.migrate.{name}"),
            stage,
            temporary_value: quorum.clone(),
            after: quorum.clone(),
            temporary_messages: (stage == Stage::MoveBack).then_some(42),
            returned_by_name: match stage {
                Stage::MoveOut => vec![format!("{name}.retry")],
                Stage::MoveBack => Vec::new(),
            },
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
