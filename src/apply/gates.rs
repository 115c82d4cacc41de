//! The gates a plan passes before any lock is taken: what an apply refuses whatever
//! the broker holds (passwords not known, others' objects, captured queues, a
//! migration under way without `--migrate`, messages lost without
//! `--allow-data-loss`). They read the plan only, so they run again, unchanged, on a
//! plan made under the locks.

use super::Options;
use super::error::ApplyError;
use crate::plan::{Plan, Stage};

/// Refuses plans that lose data without permission or take over others' objects.
pub fn check_gates(plan: &Plan, options: &Options) -> Result<(), ApplyError> {
    if !plan.unknown_passwords.is_empty() {
        let list: Vec<String> = plan
            .unknown_passwords
            .iter()
            .map(|(user, missing)| format!("user `{user}` ({missing})"))
            .collect();
        return Err(ApplyError::UnknownPasswords(list.join(", ")));
    }
    if !plan.conflicts.is_empty() {
        let list: Vec<String> = plan
            .conflicts
            .iter()
            .map(|c| format!("{} (spec `{}`)", c.id, c.owner))
            .collect();
        return Err(ApplyError::Conflict(list.join("; ")));
    }
    if let Some(refusal) = plan.refusal() {
        return Err(ApplyError::Captures(refusal.to_string()));
    }
    if !options.migrate
        && let Some(under_way) = plan.migrations.iter().find(|m| m.stage == Stage::MoveBack)
    {
        return Err(ApplyError::MigrationUnderWay(under_way.queue.to_string()));
    }
    let losing: Vec<String> = plan
        .changes
        .iter()
        .filter(|c| c.loses_data() && !(options.migrate && plan.moves_messages_of(c)))
        .map(|c| {
            let hint = match (plan.moves_messages_of(c), c.messages) {
                (false, _) => "",
                (true, Some(1)) => " (--migrate moves it)",
                (true, _) => " (--migrate moves them)",
            };
            format!("{} holds {}{hint}", c.id, c.loss())
        })
        .chain(
            plan.strands
                .iter()
                .filter(|s| s.loses_data())
                .filter(|s| {
                    !(options.migrate
                        && plan
                            .changes
                            .iter()
                            .any(|c| c.id == s.into && plan.migration_of(c).is_some()))
                })
                .map(|s| {
                    format!(
                        "{} holds {}: {}",
                        s.queue,
                        crate::text::count(s.messages.unwrap_or(0), "message"),
                        crate::plan::refusal::stranding(s)
                    )
                }),
        )
        .collect();
    if !losing.is_empty() && !options.allow_data_loss {
        return Err(ApplyError::DataLoss(losing.join("; ")));
    }
    Ok(())
}
