//! What a plan says, section by section: the one model the text plan
//! (render/plan.rs) and the markdown plan (render/markdown.rs) lay out. Every phrase a
//! plan prints is written here once (a kind's nouns are the model's:
//! `ObjectKind::noun`, `ObjectKind::plural`); the layouts choose colors or markdown,
//! indents, tables and how much of a long list they show, never the words. Where the two
//! outputs word a fact differently (a terminal line is terse, a pull-request comment
//! explains), both forms sit side by side here.
//!
//! [`sections`] gives the sections in the order the text plan prints them; the
//! markdown plan puts what a reviewer must act on (refusal, passwords, data loss)
//! before the changes. The JSON plan is not a layout of this model: it is the
//! serialized [`Plan`], the saved-plan format (docs/plan-format.md).
//!
//! Text carries meaning, not colors: a [`Span`] is danger, warning, good news, a move,
//! dim or plain, strong or not, and the text layout maps those to terminal colors.
//! Names are quoted through [`Quote`], because a terminal shows them in backticks and
//! markdown needs a code span that survives any content.

mod changes;
mod migrations;

use crate::diff::Action;
use crate::model::{ObjectId, ObjectKind};
use crate::plan::{
    Captured, Conflict, Drift, NO_SPEC_MANAGES_IT, Overlap, Plan, Refusal, RoleHazard, Strand,
    Summary, TIE_FIX, Tie, tied_policies,
};

pub use changes::{
    ChangeItem, Group, Loss, Note, PASSWORD_CHANGED, line_diff, loss_sentence, password_changed,
    replaced_sentence,
};
use migrations::migration_items;
pub use migrations::{MIGRATIONS, MigrationItem, MigrationsWording, migrations_aside};

/// What a span of text means; the text layout gives each a color.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// No emphasis.
    Plain,
    /// Created, adopted, nothing to do.
    Good,
    /// Updated in place, or a fact to check (an unknown password).
    Warning,
    /// Deleted, lost or refused.
    Danger,
    /// Replaced, or moved by a migration.
    Moved,
    /// An aside.
    Dim,
}

/// A run of text with one meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub tone: Tone,
    /// Stands out (bold on a terminal, `**…**` in markdown).
    pub strong: bool,
}

impl Span {
    pub fn new(tone: Tone, text: impl Into<String>) -> Span {
        Span {
            text: text.into(),
            tone,
            strong: false,
        }
    }

    pub fn strong(mut self) -> Span {
        self.strong = true;
        self
    }
}

/// How a layout quotes a name: in backticks on a terminal, as a code span that
/// survives any content in markdown.
pub trait Quote {
    fn code(&self, name: &str) -> String;
}

/// How a plan shows one action: the text plan's sign and tone, and the verb the
/// markdown tables and the counts use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionWords {
    /// The sign before a change in the text plan (`+`, `~`, `-/+`, `~>`, `-`).
    pub sign: &'static str,
    /// The color the sign and the name are painted in.
    pub tone: Tone,
    /// The verb (`create`, `update`, `replace`, `migrate`, `delete`).
    pub verb: &'static str,
}

/// The words of each action; a replaced queue whose messages are migrated is shown as a
/// migration.
pub fn action(action: Action, migrated: bool) -> ActionWords {
    let (sign, tone, verb) = match action {
        Action::Replace if migrated => ("~>", Tone::Moved, "migrate"),
        Action::Create => ("+", Tone::Good, "create"),
        Action::Update => ("~", Tone::Warning, "update"),
        Action::Replace => ("-/+", Tone::Moved, "replace"),
        Action::Delete => ("-", Tone::Danger, "delete"),
    };
    ActionWords { sign, tone, verb }
}

/// The heading of a kind's changes in the text plan: the plural, shorter for the two
/// kinds a vhost has one of.
pub fn kind_heading(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Vhost => "vhost",
        ObjectKind::VhostLimits => "limits",
        kind => kind.plural(),
    }
}

/// The heading of a vhost's changes, or of the broker-wide ones.
pub fn scope_heading(vhost: Option<&str>, quote: &dyn Quote) -> String {
    match vhost {
        Some(vhost) => format!("vhost {}", quote.code(vhost)),
        None => BROKER_WIDE.to_string(),
    }
}

/// Changes to objects outside any vhost (users, global parameters).
pub const BROKER_WIDE: &str = "broker-wide";
/// Why a plan without changes does not mean the broker matches the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Differs {
    /// Nothing: the broker matches the spec.
    No,
    /// A refusal section comes before (a conflict, a tie …).
    Refused,
    /// Policies that are not the spec's change what it sets or break what its queues
    /// are for (the drift and hazard sections).
    Overridden,
}

/// What a plan compared the spec with: a broker, or a definitions file
/// (`diff --against FILE`), in the sentences that say whether they match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compared {
    /// A live broker.
    Broker,
    /// A definitions file.
    File,
}

impl Compared {
    /// What `plan` was made against.
    pub fn of(plan: &Plan) -> Compared {
        match plan.broker_version {
            Some(_) => Compared::Broker,
            None => Compared::File,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Compared::Broker => "The broker",
            Compared::File => "The definitions file",
        }
    }
}

/// The answer of a plan without changes, and what it means: the broker (or the file)
/// matches the spec only when nothing is refused either (a conflict, for one, is no
/// change warren may make, and the broker still differs from the spec there) and no
/// other policy overrides what the spec sets.
pub fn no_changes(differs: Differs, compared: Compared) -> (&'static str, String) {
    let noun = compared.noun();
    match differs {
        Differs::Refused => (
            "No other changes.",
            format!("{noun} differs from the spec where it is refused above."),
        ),
        Differs::Overridden => (
            "No changes warren can make.",
            format!(
                "{noun} differs from the spec where other policies override it or break its queues above."
            ),
        ),
        Differs::No => ("No changes.", format!("{noun} matches the spec.")),
    }
}

/// The drift section's words (docs/plan-format.md, "Effective-policy drift").
#[derive(Debug, Clone, Copy)]
pub struct DriftWording {
    pub heading: &'static str,
    /// What resolves it.
    pub fix: &'static str,
}

pub const DRIFT: DriftWording = DriftWording {
    heading: "Policies that are not the spec's override what it sets",
    fix: "raise the spec's `policy_priority` (or its policy's priority) above theirs, narrow the other policy's pattern, or accept the override in the spec by setting the same value",
};

/// One queue or exchange whose settings another policy overrides, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftItem {
    /// The object.
    pub what: String,
    /// Which policy wins, over which of the spec's.
    pub by: String,
    /// Each setting: `message-ttl 5000 → 3600000`.
    pub settings: Vec<String>,
}

fn drift_item(drift: &Drift, quote: &dyn Quote) -> DriftItem {
    let owner = match &drift.policy.owner {
        Some(owner) => format!("spec {}", quote.code(owner)),
        None => NO_SPEC_MANAGES_IT.to_string(),
    };
    let kind = if drift.operator {
        "operator policy"
    } else {
        "policy"
    };
    let over = match &drift.shadows {
        Some(mine) => format!(", over the spec's {}", quote.code(mine)),
        None => String::new(),
    };
    let value = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "none".to_string(),
        serde_json::Value::String(s) => quote.code(s),
        other => other.to_string(),
    };
    DriftItem {
        what: drift.id.to_string(),
        by: format!(
            "{kind} {} ({owner}) wins{over}",
            quote.code(&drift.policy.name)
        ),
        settings: drift
            .settings
            .iter()
            .map(|s| {
                format!(
                    "{}: the spec sets {}, the broker applies {}",
                    s.key,
                    value(&s.spec),
                    value(&s.applied)
                )
            })
            .collect(),
    }
}

/// The hazard section's heading.
pub const HAZARDS: &str = "Policies that are not the spec's break what its queues are for";

/// One managed queue's hazard, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HazardItem {
    /// The queue, as its role says it: `parking queue `x` in vhost `v``.
    pub what: String,
    /// The policy and its setting: `operator policy `ops` (no spec manages it) sets
    /// `message-ttl` to 20000`.
    pub by: String,
    /// What it does to the messages.
    pub effect: String,
    /// What resolves it.
    pub fix: String,
}

fn hazard_item(hazard: &RoleHazard, quote: &dyn Quote) -> HazardItem {
    let owner = match &hazard.owner {
        Some(owner) => format!("spec {}", quote.code(owner)),
        None => NO_SPEC_MANAGES_IT.to_string(),
    };
    let h = &hazard.hazard;
    let kind = if h.operator {
        "operator policy"
    } else {
        "policy"
    };
    let vhost = hazard.id.vhost.as_deref().unwrap_or_default();
    HazardItem {
        what: format!(
            "{} in vhost {}",
            hazard.role.describe(&hazard.id.name),
            quote.code(vhost)
        ),
        by: format!(
            "{kind} {} ({owner}) sets {} to {}",
            quote.code(&h.policy),
            quote.code(&h.key),
            h.value
        ),
        effect: h.effect.clone(),
        fix: h.fix.clone(),
    }
}

/// The hazards of a plan in words, quoted as the layout quotes names.
pub fn hazard_items(plan: &Plan, quote: &dyn Quote) -> Vec<HazardItem> {
    plan.hazards.iter().map(|h| hazard_item(h, quote)).collect()
}

/// The drift of a plan in words, quoted as the layout quotes names.
pub fn drift_items(plan: &Plan, quote: &dyn Quote) -> Vec<DriftItem> {
    plan.drift.iter().map(|d| drift_item(d, quote)).collect()
}
/// What the refusal sections and the last line say.
pub const CANNOT_BE_APPLIED: &str = "this plan cannot be applied";
/// The last line of a refused text plan and the markdown's caution begin so.
pub fn cannot_be_applied() -> String {
    let mut chars = CANNOT_BE_APPLIED.chars();
    let first: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    format!("{first}{}:", chars.as_str())
}

/// What apply does with adopted objects.
const ADOPTION: &str = "apply records them as this spec's, without changing them";
/// The adopted objects' words.
#[derive(Debug, Clone, Copy)]
pub struct AdoptedWording {
    /// The text plan counts them with it: `3 existing objects adopted:`.
    pub counted: &'static str,
    /// The markdown plan's heading.
    pub heading: &'static str,
    /// The markdown plan's explanation, before what apply does with them.
    pub about: &'static str,
}

pub const ADOPTED: AdoptedWording = AdoptedWording {
    counted: "existing object",
    heading: "Adopted",
    about: "existing objects that match the spec and that no spec manages",
};

/// The words of the objects in scope that no spec manages.
#[derive(Debug, Clone, Copy)]
pub struct UnmanagedWording {
    pub heading: &'static str,
    /// What a plan does with them.
    pub fate: &'static str,
    /// The flag that deletes them instead.
    pub prune: &'static str,
}

pub const UNMANAGED: UnmanagedWording = UnmanagedWording {
    heading: "Not managed by any spec",
    fate: "left alone",
    prune: "`--prune-unmanaged` deletes them",
};

/// The words of the users whose password a plan could not read.
#[derive(Debug, Clone, Copy)]
pub struct UnknownPasswordsWording {
    pub heading: &'static str,
    /// The sentence after the users: what that means for the plan.
    pub then: &'static str,
}

pub const UNKNOWN_PASSWORDS: UnknownPasswordsWording = UnknownPasswordsWording {
    heading: "Passwords not known here:",
    then: "They are not compared; `warren apply SPEC` reads them where they are set, and this plan, saved, is not applied.",
};

/// The text plan's explanation of adopted objects.
pub fn adopted_aside() -> String {
    format!("they match the spec and no spec manages them; {ADOPTION}")
}

/// The markdown plan's explanation of adopted objects.
pub fn adopted_about() -> String {
    format!("{}: {ADOPTION}", ADOPTED.about)
}

/// A plan's first line: whose plan it is, against what.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    /// The spec's name without its environment.
    pub spec: &'a str,
    pub environment: Option<&'a str>,
    /// `RabbitMQ 4.0.5, target 4.0`, or a definitions file.
    pub against: String,
    pub vhosts: &'a [String],
}

impl Header<'_> {
    /// `for spec `shop` in environment `prod``.
    pub fn title(&self, quote: &dyn Quote) -> String {
        match self.environment {
            Some(environment) => format!(
                "for spec {} in environment {}",
                quote.code(self.spec),
                quote.code(environment)
            ),
            None => format!("for spec {}", quote.code(self.spec)),
        }
    }
}

/// One reason among a refusal's: an object and, aside, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub what: String,
    pub aside: Option<String>,
}

/// Every reason of one kind a plan cannot be applied, with what to do about them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusals {
    pub heading: String,
    pub items: Vec<Refused>,
    pub advice: Option<&'static str>,
}

/// One section of a plan.
#[derive(Debug, Clone)]
pub enum Section<'a> {
    Header(Header<'a>),
    /// Conflicts, captured queues, overlapping policies: each kind its own section.
    Refusals(Refusals),
    /// No changes; why the broker still differs from the spec, if it does.
    NoChanges {
        differs: Differs,
        compared: Compared,
    },
    /// Managed objects another's policy overrides (the plan's drift).
    Drift(&'a [Drift]),
    /// Managed queues another's policy breaks (the plan's hazards).
    Hazards(&'a [RoleHazard]),
    Adopted(&'a [ObjectId]),
    /// Changes that lose messages, and replaced queues (the markdown calls them out;
    /// the text plan marks each change).
    DataLoss(Vec<ChangeItem<'a>>),
    /// The changes, by vhost and kind in the plan's order (no group at all in a plan
    /// that only adopts objects or finishes a migration).
    Changes(Vec<Group<'a>>),
    Unmanaged(&'a [ObjectId]),
    Migrations(Vec<MigrationItem<'a>>),
    Summary(&'a Summary),
    /// The plan cannot be applied: the first reason.
    CannotBeApplied(Refusal),
    /// Users whose password was not known, with what was missing.
    UnknownPasswords(Vec<(&'a str, &'a str)>),
    /// Queues the plan keeps whose messages it strands, as counted when planned.
    Stranded(Vec<&'a Strand>),
}

/// The stranded queues' call-out: its strong part, and one sentence per queue.
pub fn stranded_lines(strands: &[&Strand]) -> (&'static str, Vec<String>) {
    let lines = strands
        .iter()
        .map(|s| {
            format!(
                "{} holds {} (counted when planned): {}. `warren apply` refuses this unless it is run with `--allow-data-loss`.",
                s.queue,
                crate::text::count(s.messages.unwrap_or(0), "message"),
                crate::plan::refusal::stranding(s)
            )
        })
        .collect();
    ("Stranded messages:", lines)
}

/// The sections of `plan`, in the text plan's order; a section with nothing to say is
/// left out.
pub fn sections(plan: &Plan) -> Vec<Section<'_>> {
    let mut sections = vec![Section::Header(header(plan))];
    let refusals = refusals(plan);
    let refused = !refusals.is_empty();
    sections.extend(refusals.into_iter().map(Section::Refusals));
    if !plan.drift.is_empty() {
        sections.push(Section::Drift(&plan.drift));
    }
    if !plan.hazards.is_empty() {
        sections.push(Section::Hazards(&plan.hazards));
    }
    if !plan.has_changes() {
        let differs = if refused {
            Differs::Refused
        } else if plan.differs_from_spec() {
            Differs::Overridden
        } else {
            Differs::No
        };
        sections.push(Section::NoChanges {
            differs,
            compared: Compared::of(plan),
        });
    }
    if !plan.adopted.is_empty() {
        sections.push(Section::Adopted(&plan.adopted));
    }
    let losing = changes::data_loss(plan);
    if !losing.is_empty() {
        sections.push(Section::DataLoss(losing));
    }
    let stranded: Vec<&Strand> = plan.strands.iter().filter(|s| s.loses_data()).collect();
    if !stranded.is_empty() {
        sections.push(Section::Stranded(stranded));
    }
    if plan.has_changes() {
        sections.push(Section::Changes(changes::groups(plan)));
    }
    if !plan.unmanaged.is_empty() {
        sections.push(Section::Unmanaged(&plan.unmanaged));
    }
    if !plan.migrations.is_empty() {
        sections.push(Section::Migrations(migration_items(plan)));
    }
    sections.push(Section::Summary(&plan.summary));
    if let Some(refusal) = plan.refusal() {
        sections.push(Section::CannotBeApplied(refusal));
    }
    if !plan.unknown_passwords.is_empty() {
        let users = plan
            .unknown_passwords
            .iter()
            .map(|(user, missing)| (user.as_str(), missing.as_str()))
            .collect();
        sections.push(Section::UnknownPasswords(users));
    }
    sections
}

fn header(plan: &Plan) -> Header<'_> {
    let against = match &plan.broker_version {
        Some(version) => format!("RabbitMQ {version}, target {}", plan.target_version),
        None => format!("a definitions file, target {}", plan.target_version),
    };
    let spec = match &plan.environment {
        Some(environment) => crate::spec::environment::base_name(&plan.spec, environment),
        None => &plan.spec,
    };
    Header {
        spec,
        environment: plan.environment.as_deref(),
        against,
        vhosts: &plan.vhosts,
    }
}

/// The reasons a plan cannot be applied, every one listed, by kind.
fn refusals(plan: &Plan) -> Vec<Refusals> {
    let heading = |what: &str| format!("{what} ({CANNOT_BE_APPLIED}):");
    let mut all = Vec::new();
    if !plan.conflicts.is_empty() {
        all.push(Refusals {
            heading: heading("Managed by another spec"),
            items: plan.conflicts.iter().map(conflict).collect(),
            advice: None,
        });
    }
    if !plan.captured.is_empty() {
        all.push(Refusals {
            heading: heading("Queues the spec does not declare, which its generated policies would apply to"),
            items: plan.captured.iter().map(captured).collect(),
            advice: Some("rename or delete these queues: warren keeps the endings `.retry.<n>`, `.retry-<ladder>.<n>` and `.retry.own.<n>` for its delay queues"),
        });
    }
    if !plan.overlaps.is_empty() {
        all.push(Refusals {
            heading: heading("Generated policies that overlap another spec's in the same vhost"),
            items: plan.overlaps.iter().map(overlap).collect(),
            advice: Some(
                "rename a ladder or service in one of the specs, or manage the vhost from one spec",
            ),
        });
    }
    if !plan.ties.is_empty() {
        all.push(Refusals {
            heading: heading("Policies of the same priority that all match a managed object (the broker applies one of them, and which one is not knowable)"),
            items: plan.ties.iter().map(tie).collect(),
            advice: Some(TIE_FIX),
        });
    }
    all
}

fn tie(tie: &Tie) -> Refused {
    let kind = if tie.operator {
        "operator policies"
    } else {
        "policies"
    };
    Refused {
        what: tie.id.to_string(),
        aside: Some(format!(
            "{kind} {}, priority {}",
            tied_policies(tie),
            tie.priority
        )),
    }
}

fn conflict(conflict: &Conflict) -> Refused {
    Refused {
        what: conflict.id.to_string(),
        aside: Some(format!("spec `{}`", conflict.owner)),
    }
}

fn captured(captured: &Captured) -> Refused {
    let owner = match &captured.owner {
        Some(owner) => format!("managed by spec `{owner}`"),
        None => NO_SPEC_MANAGES_IT.to_string(),
    };
    Refused {
        what: captured.queue.to_string(),
        aside: Some(format!(
            "its name ends like the delay queues of `{}`, which would give it their TTL; {owner}",
            captured.policy
        )),
    }
}

fn overlap(overlap: &Overlap) -> Refused {
    Refused {
        what: format!(
            "{} and policy `{}` of spec `{}` both select {}",
            overlap.policy, overlap.other, overlap.owner, overlap.common
        ),
        aside: None,
    }
}

/// The summary's words after its counts: migrations, adopted objects, bindings
/// re-created with a replaced object, changes that lose data.
pub const TO_MIGRATE: &str = "to migrate";
pub const ADOPTED_COUNT: &str = "adopted";
pub const RECREATED: &str = "re-created with";
pub const WITH_DATA_LOSS: &str = "with data loss";

/// The four counts every summary has, with their verbs.
pub fn summary_counts(summary: &Summary) -> [(usize, &'static str); 4] {
    [
        (summary.create, "to create"),
        (summary.update, "to update"),
        (summary.replace, "to replace"),
        (summary.delete, "to delete"),
    ]
}

/// `n` and its noun, with the thousands grouped: `1,975 policies`, `1 policy`.
pub fn counted(n: impl crate::text::Count, singular: &str, plural: &str) -> String {
    let n = n.as_u64();
    let words = crate::text::count_irregular(n, singular, plural);
    match words.split_once(' ') {
        Some((_, noun)) => format!("{} {noun}", crate::model::shorten::grouped(n)),
        None => words,
    }
}

/// `1,975 more policies`.
pub fn more(n: usize, singular: &str, plural: &str) -> String {
    let words = counted(n, singular, plural);
    match words.split_once(' ') {
        Some((number, noun)) => format!("{number} more {noun}"),
        None => words,
    }
}

#[cfg(test)]
mod tests;
