//! What an apply checks under its locks before it sends its first write, so that a
//! refusal changes nothing:
//!
//! - **the messages, as the broker counts them now**: every queue the plan deletes or
//!   replaces, and every queue whose messages it strands ([`crate::plan::Strand`]),
//!   counted by the queue itself ([`Client::queues_held`]: ready messages, consumers,
//!   whose unacknowledged messages a deletion would lose, and the statistics'
//!   unacknowledged count for messages taken by `basic.get`). The plan's counts are
//!   statistics that lag by seconds; these are not. Without `--allow-data-loss` (or
//!   `--migrate`, for the queues a migration moves) any message, or a consumer, is a
//!   refusal.
//! - **the user's permissions** in each vhost where the plan deletes or replaces,
//!   against RabbitMQ's rules for the requests apply sends one by one: deleting a
//!   queue or an exchange needs `configure` on it, deleting (or, by a migration,
//!   making) a binding `write` on its destination and `read` on its source, and a
//!   guarded queue removal also unbinds the queue first. The `administrator` tag
//!   alone grants nothing in a vhost. Creates go through the
//!   definitions import, which the tag allows.
//!
//! What this check cannot see, a message published between it and a deletion, the
//! broker's own check at the deletion still catches ([`crate::broker::GuardedQueue`]).

use std::collections::{BTreeMap, BTreeSet};

use super::Options;
use super::error::ApplyError;
use crate::broker::{Client, QueueHeld};
use crate::diff::{Action, Change};
use crate::model::{ObjectId, ObjectKind, Permission};
use crate::plan::Plan;
use crate::plan::strand::removes_queue;

/// Refuses the apply, before anything is sent, when the broker holds messages the plan
/// would lose now, or the user lacks a permission a write of the plan needs.
pub(super) async fn check_before_writing(
    client: &Client,
    plan: &Plan,
    options: &Options,
) -> Result<(), ApplyError> {
    let needs = permission_needs(plan, options.migrate, !options.allow_data_loss);
    if !needs.is_empty() {
        let granted = client.user_permissions(client.user()).await?;
        let missing = missing_permissions(&needs, &granted);
        if !missing.is_empty() {
            return Err(ApplyError::Permissions {
                user: client.user().to_string(),
                missing: missing.join("; "),
            });
        }
    }
    if options.allow_data_loss {
        return Ok(());
    }
    let queues = queues_to_count(plan, options.migrate);
    if queues.is_empty() {
        return Ok(());
    }
    let held = client.queues_held(&queues).await?;
    let holding: Vec<String> = queues
        .iter()
        .zip(&held)
        .filter_map(|((vhost, name), held)| {
            let held = held.filter(QueueHeld::holds_anything)?;
            let id = ObjectId::in_vhost(ObjectKind::Queue, vhost, name);
            Some(format!(
                "{id} {}",
                crate::plan::refusal::held_now(&held, why(plan, &id))
            ))
        })
        .collect();
    if holding.is_empty() {
        Ok(())
    } else {
        Err(ApplyError::HeldNow(holding.join("; ")))
    }
}

/// Why the plan touches a queue it counts: it removes it, or it strands its messages.
fn why<'a>(plan: &'a Plan, queue: &ObjectId) -> Option<&'a crate::plan::Strand> {
    if plan
        .changes
        .iter()
        .any(|c| removes_queue(c) && c.id == *queue)
    {
        None
    } else {
        plan.strands.iter().find(|s| s.queue == *queue)
    }
}

/// The queues to count: removed (but, with `--migrate`, not those a migration moves
/// aside or whose messages are passed on) and stranded (into a queue that is not
/// migrated), each once, in the plan's order.
fn queues_to_count(plan: &Plan, migrate: bool) -> Vec<(String, String)> {
    let migrated = |id: &ObjectId| {
        migrate
            && plan
                .changes
                .iter()
                .any(|c| c.id == *id && plan.migration_of(c).is_some())
    };
    let removed = plan
        .changes
        .iter()
        .filter(|c| removes_queue(c) && !(migrate && plan.moves_messages_of(c)))
        .map(|c| &c.id);
    let stranded = plan
        .strands
        .iter()
        .filter(|s| !migrated(&s.into))
        .map(|s| &s.queue);
    let mut seen = BTreeSet::new();
    removed
        .chain(stranded)
        .filter(|id| seen.insert(*id))
        .map(|id| (id.vhost.clone().unwrap_or_default(), id.name.clone()))
        .collect()
}

/// One of RabbitMQ's three permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Access {
    Configure,
    Write,
    Read,
}

impl Access {
    fn name(self) -> &'static str {
        match self {
            Access::Configure => "configure",
            Access::Write => "write",
            Access::Read => "read",
        }
    }

    fn regex(self, permission: &Permission) -> &str {
        match self {
            Access::Configure => &permission.configure,
            Access::Write => &permission.write,
            Access::Read => &permission.read,
        }
    }
}

/// A permission one write needs: in a vhost, on a queue or an exchange.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Need {
    vhost: String,
    access: Access,
    /// `queue` or `exchange`.
    kind: &'static str,
    name: String,
    /// The change that needs it, as the report names it.
    for_change: String,
}

/// Every permission the writes of `plan` sent one by one need. With `guarded`
/// removals (no `--allow-data-loss`), a queue is removed only after the bindings into
/// it (`src/broker/guard.rs`): that needs `write` on the queue and `read` on each
/// source the plan knows, those of bindings it deletes or creates again unchanged.
fn permission_needs(plan: &Plan, migrate: bool, guarded: bool) -> Vec<Need> {
    let mut needs = BTreeSet::new();
    for change in &plan.changes {
        let Some(vhost) = change.id.vhost.clone() else {
            continue;
        };
        let describe = super::error::describe(change);
        let need = |access, kind, name: &str| Need {
            vhost: vhost.clone(),
            access,
            kind,
            name: name.to_string(),
            for_change: describe.clone(),
        };
        let removing = matches!(change.action, Action::Delete | Action::Replace);
        match change.id.kind {
            ObjectKind::Queue if removing => {
                needs.insert(need(Access::Configure, "queue", &change.id.name));
                if guarded {
                    needs.insert(need(Access::Write, "queue", &change.id.name));
                }
            }
            ObjectKind::Exchange if removing => {
                needs.insert(need(Access::Configure, "exchange", &change.id.name));
            }
            ObjectKind::Binding
                if change.action == Action::Delete
                    || (migrate && binds_migrated_queue(plan, change))
                    || (guarded && change.action == Action::Create && change.reason.is_some()) =>
            {
                let value = change.before.as_ref().or(change.after.as_ref());
                let end = |key: &str| {
                    value
                        .and_then(|v| v[key].as_str())
                        .unwrap_or_default()
                        .to_string()
                };
                let to_exchange = value.is_some_and(|v| v["destination_type"] == "exchange");
                let kind = if to_exchange { "exchange" } else { "queue" };
                needs.insert(need(Access::Write, kind, &end("destination")));
                needs.insert(need(Access::Read, "exchange", &end("source")));
            }
            _ => {}
        }
    }
    needs.into_iter().collect()
}

/// Whether a migration of the plan binds this binding's queue over HTTP.
fn binds_migrated_queue(plan: &Plan, change: &Change) -> bool {
    let destination = change
        .after
        .as_ref()
        .and_then(|v| v["destination"].as_str());
    plan.migrations
        .iter()
        .any(|m| m.queue.vhost == change.id.vhost && Some(m.queue.name.as_str()) == destination)
}

/// The needs `granted` does not cover, one sentence each (by vhost: the first object
/// of each permission, and how many more).
fn missing_permissions(needs: &[Need], granted: &[Permission]) -> Vec<String> {
    let mut missing: BTreeMap<(&str, Access), Vec<&Need>> = BTreeMap::new();
    for need in needs {
        let permission = granted.iter().find(|p| p.vhost == need.vhost);
        let allowed = permission.is_some_and(|p| matches(need.access.regex(p), &need.name));
        if !allowed {
            missing
                .entry((need.vhost.as_str(), need.access))
                .or_default()
                .push(need);
        }
    }
    missing
        .into_iter()
        .map(|((vhost, access), needs)| {
            let has_any = granted.iter().any(|p| p.vhost == vhost);
            crate::plan::refusal::permission_missing(
                vhost,
                access.name(),
                needs
                    .iter()
                    .map(|n| (n.kind, n.name.as_str(), n.for_change.as_str()))
                    .collect(),
                has_any,
            )
        })
        .collect()
}

/// Whether a permission regex grants `name`, as RabbitMQ matches it: unanchored, the
/// empty regex granting nothing, the default exchange named `amq.default`.
fn matches(regex: &str, name: &str) -> bool {
    let name = if name.is_empty() { "amq.default" } else { name };
    if regex.is_empty() {
        return false;
    }
    fancy_regex::Regex::new(regex)
        .ok()
        .and_then(|r| r.is_match(name).ok())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permission(vhost: &str, configure: &str, write: &str, read: &str) -> Permission {
        Permission {
            user: "ci".into(),
            vhost: vhost.into(),
            configure: configure.into(),
            write: write.into(),
            read: read.into(),
        }
    }

    fn need(access: Access, kind: &'static str, name: &str) -> Need {
        Need {
            vhost: "shop".into(),
            access,
            kind,
            name: name.into(),
            for_change: format!("delete {kind} {name}"),
        }
    }

    #[test]
    fn regexes_match_as_rabbitmq_matches_them() {
        assert!(matches(".*", "orders"));
        assert!(matches("orders", "shop.orders.email"), "unanchored");
        assert!(!matches("^orders$", "orders.email"));
        assert!(!matches("", "orders"), "the empty regex grants nothing");
        assert!(matches("^amq\\.default$", ""));
    }

    #[test]
    fn no_permission_in_a_vhost_is_missing_whatever_the_tags() {
        let needs = [
            need(Access::Configure, "queue", "orders"),
            need(Access::Configure, "queue", "orders.parking"),
        ];
        let missing = missing_permissions(&needs, &[]);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(missing[0].contains("vhost \"shop\""), "{}", missing[0]);
        assert!(missing[0].contains("configure"), "{}", missing[0]);
        assert!(missing[0].contains("set_permissions"), "{}", missing[0]);
        let granted = [permission("shop", ".*", ".*", ".*")];
        assert!(missing_permissions(&needs, &granted).is_empty());
        let narrow = [permission("shop", "^orders$", ".*", ".*")];
        let missing = missing_permissions(&needs, &narrow);
        assert_eq!(missing.len(), 1);
        assert!(missing[0].contains("orders.parking"), "{}", missing[0]);
    }

    #[test]
    fn a_guarded_removal_needs_write_on_the_queue_and_read_on_the_sources_it_unbinds() {
        let queue = |name: &str| crate::model::ObjectId::in_vhost(ObjectKind::Queue, "shop", name);
        let value = serde_json::json!({"arguments": {"x-queue-type": "classic"}});
        let replace = Change::new(
            Action::Replace,
            queue("audit"),
            Some(value.clone()),
            Some(value),
        );
        let mut again = Change::new(
            Action::Create,
            crate::model::ObjectId::in_vhost(
                ObjectKind::Binding,
                "shop",
                "events -> queue audit []",
            ),
            None,
            Some(
                serde_json::json!({"source": "events", "destination": "audit",
                "destination_type": "queue", "routing_key": ""}),
            ),
        );
        again.reason = Some("its queue is replaced".into());
        let plan = Plan::of_changes(vec![replace, again], vec![]);
        let named = |needs: Vec<Need>| -> Vec<(Access, String)> {
            needs.into_iter().map(|n| (n.access, n.name)).collect()
        };
        let guarded = named(permission_needs(&plan, false, true));
        assert!(
            guarded.contains(&(Access::Configure, "audit".into())),
            "{guarded:?}"
        );
        assert!(
            guarded.contains(&(Access::Write, "audit".into())),
            "{guarded:?}"
        );
        assert!(
            guarded.contains(&(Access::Read, "events".into())),
            "{guarded:?}"
        );
        let unguarded = named(permission_needs(&plan, false, false));
        assert_eq!(unguarded, [(Access::Configure, "audit".to_string())]);
    }
}
