//! The changes of a plan as the model says them: grouped by vhost and kind, each with
//! its notes (why it is replaced, unmanaged, an unknown password, what it loses), the
//! data-loss call-out, and an update's differences.

use crate::diff::{Action, Change};
use crate::model::ObjectKind;
use crate::model::redact::redact;
use crate::model::shorten::grouped;
use crate::plan::Plan;

use super::{Span, Tone, counted};

/// The changes of one vhost (or the broker-wide ones), by kind, in the plan's order.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub vhost: Option<&'a str>,
    pub kinds: Vec<(ObjectKind, Vec<ChangeItem<'a>>)>,
}

/// One change and what is said about it.
#[derive(Debug, Clone)]
pub struct ChangeItem<'a> {
    pub change: &'a Change,
    /// A replaced queue `apply --migrate` moves blue/green.
    pub migrated: bool,
    pub notes: Vec<Note<'a>>,
}

/// What is said about a change after its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note<'a> {
    /// Why it is replaced or created again; `label` says which (text only).
    Reason {
        label: &'static str,
        reason: &'a str,
    },
    /// An object no spec manages, deleted by `--prune-unmanaged`.
    Unmanaged,
    /// A user whose password was not known: what was missing.
    PasswordUnknown(&'a str),
    Loss(Loss),
}

/// What a removed queue holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loss {
    /// Its messages (or a stream's log), moved by the migration.
    Migrated(String),
    /// A delay queue's messages, passed on early to the queue they expire into.
    PassedOn { loss: String, into: String },
    /// Its messages (or a stream's log), lost.
    Lost(String),
    /// Nothing, when counted (apply checks again when it deletes).
    EmptyWhenPlanned,
}

const UNMANAGED_NOTE: &str = "unmanaged, pruned";
const EMPTY_NOTE: &str = "empty when planned";
const DATA_LOSS: &str = "data loss";
const MIGRATE_FLAG: &str = "--migrate";
/// What an update of a password says instead of the hashes.
pub const PASSWORD_CHANGED: &str = "password changed";

fn password_unknown(missing: &str) -> String {
    format!("password unknown: {missing} not set here")
}

impl Note<'_> {
    /// The text plan's form, in parentheses where it is an aside.
    pub fn span(&self) -> Span {
        match self {
            Note::Reason { label, reason } => Span::new(Tone::Dim, format!("({label}{reason})")),
            Note::Unmanaged => Span::new(Tone::Dim, format!("({UNMANAGED_NOTE})")),
            Note::PasswordUnknown(missing) => {
                Span::new(Tone::Warning, format!("({})", password_unknown(missing)))
            }
            Note::Loss(Loss::Migrated(loss)) => {
                Span::new(Tone::Moved, format!("{loss}: moved with {MIGRATE_FLAG}")).strong()
            }
            Note::Loss(Loss::PassedOn { loss, into }) => Span::new(
                Tone::Moved,
                format!("{loss}: passed on to `{into}` with {MIGRATE_FLAG}"),
            )
            .strong(),
            Note::Loss(Loss::Lost(loss)) => Span::new(
                Tone::Danger,
                format!("{}: {loss}", DATA_LOSS.to_uppercase()),
            )
            .strong(),
            Note::Loss(Loss::EmptyWhenPlanned) => Span::new(Tone::Dim, format!("({EMPTY_NOTE})")),
        }
    }

    /// The markdown's form, in a table cell; `escape` makes free text safe there and
    /// `quote` quotes a name. The reason is left to the layout (it is redacted there).
    pub fn short(&self, escape: &dyn Fn(&str) -> String, quote: &dyn super::Quote) -> Span {
        match self {
            Note::Reason { reason, .. } => Span::new(Tone::Dim, escape(reason)),
            Note::Unmanaged => Span::new(Tone::Dim, UNMANAGED_NOTE),
            Note::PasswordUnknown(missing) => {
                Span::new(Tone::Warning, password_unknown(&escape(missing)))
            }
            Note::Loss(Loss::Migrated(loss)) => Span::new(
                Tone::Moved,
                format!("{loss}: moved with {}", quote.code(MIGRATE_FLAG)),
            ),
            Note::Loss(Loss::PassedOn { loss, into }) => Span::new(
                Tone::Moved,
                format!(
                    "{loss}: passed on to {} with {}",
                    quote.code(&escape(into)),
                    quote.code(MIGRATE_FLAG)
                ),
            ),
            Note::Loss(Loss::Lost(loss)) => {
                Span::new(Tone::Danger, format!("{DATA_LOSS}: {loss}")).strong()
            }
            Note::Loss(Loss::EmptyWhenPlanned) => Span::new(Tone::Dim, EMPTY_NOTE),
        }
    }
}

/// A change's notes, in the order both plans show them.
fn item<'a>(plan: &'a Plan, change: &'a Change) -> ChangeItem<'a> {
    let migrated = plan.migration_of(change).is_some();
    let queue = change.id.kind == ObjectKind::Queue;
    let mut notes = Vec::new();
    if let Some(reason) = &change.reason {
        let label = match change.action {
            Action::Replace if migrated && queue => "migrate: ",
            Action::Replace => "replace: ",
            _ => "",
        };
        notes.push(Note::Reason { label, reason });
    }
    if change.unmanaged {
        notes.push(Note::Unmanaged);
    }
    if change.id.kind == ObjectKind::User
        && let Some(missing) = plan.unknown_passwords.get(&change.id.name)
    {
        notes.push(Note::PasswordUnknown(missing));
    }
    let passed_on = plan.pass_on_of(change);
    if change.loses_data() && migrated {
        notes.push(Note::Loss(Loss::Migrated(change.loss())));
    } else if let Some(pass_on) = passed_on.filter(|_| change.loses_data()) {
        notes.push(Note::Loss(Loss::PassedOn {
            loss: change.loss(),
            into: pass_on.into.name.clone(),
        }));
    } else if change.loses_data() {
        notes.push(Note::Loss(Loss::Lost(change.loss())));
    } else if change.messages == Some(0) {
        notes.push(Note::Loss(Loss::EmptyWhenPlanned));
    }
    ChangeItem {
        change,
        migrated,
        notes,
    }
}

/// The plan's changes in its order: a new group where the vhost changes, a new kind
/// where the kind does.
pub(super) fn groups(plan: &Plan) -> Vec<Group<'_>> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for change in &plan.changes {
        let vhost = change.id.vhost.as_deref();
        if groups.last().is_none_or(|g| g.vhost != vhost) {
            groups.push(Group {
                vhost,
                kinds: Vec::new(),
            });
        }
        let group = groups.last_mut().expect("pushed above");
        if group
            .kinds
            .last()
            .is_none_or(|(kind, _)| *kind != change.id.kind)
        {
            group.kinds.push((change.id.kind, Vec::new()));
        }
        let (_, items) = group.kinds.last_mut().expect("pushed above");
        items.push(item(plan, change));
    }
    groups
}

/// Queues whose messages the plan loses, then the other queues it deletes and
/// declares again.
pub(super) fn data_loss(plan: &Plan) -> Vec<ChangeItem<'_>> {
    let losing = plan
        .changes
        .iter()
        .filter(|c| c.loses_data() && !plan.moves_messages_of(c));
    let replaced = plan.changes.iter().filter(|c| {
        c.id.kind == ObjectKind::Queue
            && c.action == Action::Replace
            && (!c.loses_data() || plan.moves_messages_of(c))
    });
    losing.chain(replaced).map(|c| item(plan, c)).collect()
}

impl ChangeItem<'_> {
    /// Whether the plan loses what this change removes.
    pub fn loses(&self) -> bool {
        self.notes
            .iter()
            .any(|n| matches!(n, Note::Loss(Loss::Lost(_))))
    }

    /// What the removed queue held, for the data-loss table.
    pub fn held(&self) -> String {
        if self.change.removes_stream() {
            return STREAM_LOG.to_string();
        }
        match self.change.messages {
            Some(count) => grouped(count),
            None => "not counted".to_string(),
        }
    }
}

const STREAM_LOG: &str = "a stream's log";

/// The data-loss call-out's first sentence, after its strong `Data loss:`, for
/// `losing` (the items that lose data).
pub fn loss_sentence(losing: &[&ChangeItem<'_>]) -> (&'static str, String) {
    let messages: u64 = losing.iter().filter_map(|c| c.change.messages).sum();
    let one = losing.len() == 1;
    let what = match (messages, losing.iter().any(|c| c.change.removes_stream())) {
        (0, true) => STREAM_LOG.to_string(),
        (n, true) => format!("{} and {STREAM_LOG}", counted(n, "message", "messages")),
        (n, false) => counted(n, "message", "messages"),
    };
    let migrate = match losing.iter().any(|c| c.change.action == Action::Replace) {
        true => "; `--migrate` moves the messages of a replaced queue instead (docs/migration.md)",
        false => "",
    };
    (
        "Data loss:",
        format!(
            "{} {} {what} (counted when planned). `warren apply` refuses {} unless it is run with `--allow-data-loss`{migrate}.",
            counted(losing.len(), "change", "changes"),
            if one { "loses" } else { "lose" },
            if one { "it" } else { "them" },
        ),
    )
}

/// The call-out's sentence on replaced queues: its strong part and the rest.
pub fn replaced_sentence(replaced: usize) -> (String, &'static str) {
    (
        format!(
            "{} deleted and declared again",
            counted(replaced, "queue is", "queues are")
        ),
        " (a queue's type and arguments cannot change in place): consumers are cut off for a moment, and what the queue holds is lost unless it is moved with `--migrate`.",
    )
}

/// Whether an update changes a user's password (shown as [`PASSWORD_CHANGED`], never
/// as hashes).
pub fn password_changed(change: &Change) -> bool {
    match (&change.before, &change.after) {
        (Some(before), Some(after)) => before.get("password_hash") != after.get("password_hash"),
        _ => false,
    }
}

/// An update as the lines of its redacted JSON that differ: the tone (removed or
/// added) and the line with its sign, without its line break (renderers end each
/// line after its color).
pub fn line_diff(change: &Change) -> Vec<(Tone, String)> {
    let (Some(before), Some(after)) = (&change.before, &change.after) else {
        return Vec::new();
    };
    let before = serde_json::to_string_pretty(&redact(before)).unwrap_or_default();
    let after = serde_json::to_string_pretty(&redact(after)).unwrap_or_default();
    let diff = similar::TextDiff::from_lines(&before, &after);
    diff.iter_all_changes()
        .filter_map(|line| {
            let (sign, tone) = match line.tag() {
                similar::ChangeTag::Delete => ("-", Tone::Danger),
                similar::ChangeTag::Insert => ("+", Tone::Good),
                similar::ChangeTag::Equal => return None,
            };
            let text = line.value().trim_start().trim_end_matches(['\n', '\r']);
            Some((tone, format!("{sign} {text}")))
        })
        .collect()
}
