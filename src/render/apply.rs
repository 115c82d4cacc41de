//! What `warren apply`, `warren plan -o` and `warren unlock` say in text: the
//! summary of an apply, what a stopped one did and did not do, and the lines about
//! saved plans and broken locks. The apply's JSON document is `render::plan`'s
//! (`apply_document`).

use std::io::{self, Write};
use std::path::Path;

use crate::apply::{ApplyReport, Unlocked};
use crate::plan::Plan;
use crate::plan::file::PlanDigest;
use crate::text::{count, visible};

/// How many changes of each list a stopped apply names before it says how many more.
const LISTED: usize = 20;

/// `Applied: 3 changes to spec `orders`, 1 adopted (12 requests).`
pub fn applied(
    out: &mut dyn Write,
    plan: &Plan,
    report: &ApplyReport,
    requests: u64,
) -> io::Result<()> {
    let adopted = if plan.adopted.is_empty() {
        String::new()
    } else {
        format!(", {} adopted", count(plan.adopted.len(), "existing object"))
    };
    writeln!(
        out,
        "Applied: {} to spec `{}`{adopted} ({}).",
        count(report.done.len(), "change"),
        plan.spec,
        count(requests, "request")
    )
}

/// What an apply that stopped part way did and did not do (said after its error), and
/// how to finish it.
pub fn unfinished(out: &mut dyn Write, report: &ApplyReport) -> io::Result<()> {
    let unconfirmed = if report.unconfirmed.is_empty() {
        String::new()
    } else {
        format!(
            "{} sent but not confirmed (the broker may have made {}), ",
            was_were(report.unconfirmed.len(), "change"),
            if report.unconfirmed.len() == 1 {
                "it"
            } else {
                "them"
            }
        )
    };
    writeln!(
        out,
        "{} made, {unconfirmed}{} not; run `warren plan` and `warren apply` again to finish",
        was_were(report.done.len(), "change"),
        was_were(report.not_done.len(), "change")
    )?;
    for item in report.unconfirmed.iter().take(LISTED) {
        writeln!(out, "  not confirmed: {item}")?;
    }
    for item in report.not_done.iter().take(LISTED) {
        writeln!(out, "  not done: {item}")?;
    }
    if report.not_done.len() > LISTED {
        writeln!(out, "  … and {} more", report.not_done.len() - LISTED)?;
    }
    Ok(())
}

/// A saved plan without changes.
pub fn nothing_to_apply(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "Nothing to apply.")
}

/// `warren plan -o FILE`: where the plan went, and how to apply it.
pub fn saved(out: &mut dyn Write, path: &Path, digest: &PlanDigest) -> io::Result<()> {
    writeln!(
        out,
        "saved the plan to {path} (apply it with `warren apply {path} --expect-digest {digest}`)",
        path = visible(&path.display().to_string()),
    )
}

/// The saved plan's digest after a text plan.
pub fn saved_digest_text(out: &mut dyn Write, path: &Path, digest: &PlanDigest) -> io::Result<()> {
    writeln!(
        out,
        "\nSaved plan: {} ({digest})",
        visible(&path.display().to_string())
    )
}

/// The saved plan's digest after a Markdown plan (a pull request's comment): the
/// reviewer approves this digest, and the apply is pinned to it.
pub fn saved_digest_markdown(
    out: &mut dyn Write,
    path: &Path,
    digest: &PlanDigest,
) -> io::Result<()> {
    writeln!(
        out,
        "\nSaved plan `{}`, digest `{digest}`: `warren apply FILE --expect-digest {digest}` applies this plan and no other.",
        visible(&path.display().to_string()).replace('`', "'")
    )
}

/// What `warren unlock` did about spec `name`'s lock.
pub fn unlocked(out: &mut dyn Write, name: &str, unlocked: &Unlocked) -> io::Result<()> {
    match unlocked {
        Unlocked::NotLocked => writeln!(out, "Spec `{name}` is not locked; nothing to do."),
        Unlocked::Removed(holder) => writeln!(
            out,
            "Unlocked spec `{name}`: closed the lock connection of {holder}; every lock it held is free."
        ),
    }
}

/// `1 change was`, `3 changes were`.
fn was_were(n: usize, noun: &str) -> String {
    format!("{} {}", count(n, noun), if n == 1 { "was" } else { "were" })
}
