//! The migrations of a plan: what `apply --migrate` does for each replaced queue, step
//! by step (the order is apply/migrate.rs's, docs/migration.md explains it), and where
//! a migration a stopped apply left under way stands.

use crate::diff::Action;
use crate::model::shorten::grouped;
use crate::plan::{Migration, Plan, Stage};

use super::{Quote, counted};

/// The migrations' words: their heading, how they move a queue and the command that
/// runs them.
#[derive(Debug, Clone, Copy)]
pub struct MigrationsWording {
    pub heading: &'static str,
    /// How a migration moves a queue, before the command: `blue/green with`.
    pub method: &'static str,
    pub command: &'static str,
}

pub const MIGRATIONS: MigrationsWording = MigrationsWording {
    heading: "Migrations",
    method: "blue/green with",
    command: "warren apply --migrate",
};
const PLUGIN: &str = "which needs the rabbitmq_shovel plugin";
const MIGRATION_DOC: &str = "docs/migration.md";
const UNDER_WAY: &str = "under way";

/// One migration and the message count of its queue when planned.
#[derive(Debug, Clone)]
pub struct MigrationItem<'a> {
    pub migration: &'a Migration,
    /// The messages of the queue to move (a migration not started).
    pub messages: Option<u64>,
}

pub(super) fn migration_items(plan: &Plan) -> Vec<MigrationItem<'_>> {
    plan.migrations
        .iter()
        .map(|migration| MigrationItem {
            migration,
            messages: plan
                .changes
                .iter()
                .find(|c| c.action == Action::Replace && migration.carries_out(c))
                .and_then(|c| c.messages),
        })
        .collect()
}

/// The text plan's aside after the heading.
pub fn migrations_aside() -> String {
    format!(
        "({} `{}`, {PLUGIN}; {MIGRATION_DOC})",
        MIGRATIONS.method, MIGRATIONS.command
    )
}

impl MigrationItem<'_> {
    fn names(&self) -> (&str, &str, &str) {
        let migration = self.migration;
        (
            &migration.queue.name,
            &migration.temporary,
            migration.queue.vhost.as_deref().unwrap_or_default(),
        )
    }

    /// `queue `audit` in vhost `shop``.
    pub fn queue(&self) -> String {
        let (queue, _, vhost) = self.names();
        format!("queue `{queue}` in vhost `{vhost}`")
    }

    /// Whether the migration is under way, and the word for it.
    pub fn under_way(&self) -> Option<&'static str> {
        (self.migration.stage == Stage::MoveBack).then_some(UNDER_WAY)
    }

    /// What the queue or the temporary queue holds, as the text plan says it.
    pub fn held(&self) -> String {
        let (_, temporary, _) = self.names();
        match self.migration.stage {
            Stage::MoveOut => match self.messages {
                Some(count) => format!(
                    "{} {} when planned",
                    grouped(count),
                    if count == 1 { "message" } else { "messages" }
                ),
                None => "message count unknown".to_string(),
            },
            Stage::MoveBack => match self.migration.temporary_messages {
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
            },
        }
    }

    /// The steps `apply --migrate` takes, numbered by the layout; for a migration
    /// under way, one line beginning `next:`.
    pub fn steps(&self) -> Vec<String> {
        let (queue, temporary, _) = self.names();
        let new_type = self.migration.after["arguments"]["x-queue-type"]
            .as_str()
            .unwrap_or("classic");
        match self.migration.stage {
            Stage::MoveOut => vec![
                format!(
                    "declare `{temporary}` ({new_type}, with the settings its policies give `{queue}`) and bind it wherever `{queue}` is bound"
                ),
                format!("unbind `{queue}`: new messages go to `{temporary}`"),
                format!(
                    "move the messages of `{queue}` to `{temporary}` (shovel, acknowledged once `{temporary}` has each)"
                ),
                format!(
                    "delete `{queue}` once its consumers hold no unacknowledged message and the broker finds it empty, and at once declare it as the spec says ({new_type}); what is sent to `{queue}` by name through the default exchange in that instant is dropped{}",
                    self.returned_by_name()
                ),
                format!(
                    "bind `{queue}` wherever `{temporary}` is bound, then unbind `{temporary}`"
                ),
                format!("move the messages back into `{queue}`, delete `{temporary}`"),
            ],
            Stage::MoveBack => vec![format!(
                "next: declare `{queue}` as the spec says if needed, bind it, unbind `{temporary}`, move the messages back, delete `{temporary}`"
            )],
        }
    }

    /// The queues that dead-letter to the queue by name, as the end of the step that
    /// deletes it: they are the ones that can meet that instant.
    fn returned_by_name(&self) -> String {
        const LISTED: usize = 3;
        let feeders = &self.migration.returned_by_name;
        if feeders.is_empty() {
            return String::new();
        }
        let mut names: Vec<String> = feeders
            .iter()
            .take(LISTED)
            .map(|name| format!("`{name}`"))
            .collect();
        if feeders.len() > LISTED {
            names.push(format!("{} more", grouped((feeders.len() - LISTED) as u64)));
        }
        format!(
            ", and {} {} to it that way (a retry ladder's `return_via: return_exchange` returns through an exchange, which the migration moves first)",
            names.join(", "),
            if feeders.len() == 1 {
                "dead-letters"
            } else {
                "dead-letter"
            }
        )
    }

    /// Where the migration stands, in the markdown's table.
    pub fn stands(&self, quote: &dyn Quote) -> String {
        let temporary = quote.code(&self.migration.temporary);
        match self.migration.stage {
            Stage::MoveOut => format!("moved to {temporary} and back ({MIGRATION_DOC})"),
            Stage::MoveBack => format!(
                "{UNDER_WAY}: {} wait in {temporary}",
                match self.migration.temporary_messages {
                    Some(n) => counted(n, "message", "messages"),
                    None => "messages".to_string(),
                }
            ),
        }
    }
}
