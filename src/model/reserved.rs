//! warren's reserved namespace: the names warren keeps on the broker for itself, and
//! the one answer to whether a name a spec (or a definitions file) writes is one of
//! them, and why.
//!
//! warren keeps its own state in the broker it manages, under names no spec may take:
//!
//! - ownership records, global parameters `warren.<spec>` ([`super::record`]);
//! - the vhost [`LOCK_VHOST`], where an apply holds its locks as exclusive queues;
//! - a migration's temporary queue, exchange and shovel `warren.migrate.<queue>`
//!   ([`super::migration`]), which tell a later apply that a migration is under way;
//! - the policies the compiler generates (`warren.retry.…`, `warren.delivery-limit.…`,
//!   `warren.parking`), named by `compile::naming`.
//!
//! The rule is one prefix for every kind of name: a vhost, queue, exchange, policy,
//! operator policy, user, runtime parameter or global parameter whose name starts
//! with [`RESERVED_PREFIX`] is warren's, whether or not warren uses that exact name
//! today. A narrower rule (only the names in use) would let a spec take a name that a
//! later warren starts to use, and the broker would then hold a user's object where
//! warren expects its own: a migration "under way" that moves a consumer's messages,
//! a lock vhost with a limit that refuses every lock. Names that only look alike
//! (`warren-orders`, `warrens.x`, `Warren.x`: broker names are case-sensitive) are
//! not reserved.
//!
//! A spec's name and its environments' names make the name of the spec's record
//! (`warren.<name>` or `warren.<name>@<environment>`), so they may not hold
//! [`ENVIRONMENT_SEPARATOR`] nor be empty: otherwise two specs (`billing` in `prod`,
//! and a spec named `billing@prod`) would share one record and take each other's
//! objects.

use super::{ObjectId, ObjectKind};

/// The name prefix warren keeps for itself (see the module's documentation).
pub const RESERVED_PREFIX: &str = "warren.";

/// The vhost where applies hold their locks: exclusive queues, which the broker gives
/// to one connection at a time and frees when that connection dies. It is warren's own
/// (under [`RESERVED_PREFIX`]), holds no messages, and is never an object of a spec,
/// an export or an import.
pub const LOCK_VHOST: &str = "warren.locks";

/// What separates a spec's name from its environment's in the name an environment's
/// spec is known by (`shop@prod`): its ownership record, locks and plans.
pub const ENVIRONMENT_SEPARATOR: char = '@';

/// What a migration's names put between [`RESERVED_PREFIX`] and the queue's name
/// (`warren.migrate.<queue>`); [`super::migration`] builds and parses them.
pub(super) const MIGRATION_INFIX: &str = "migrate.";

/// Whether a name is in warren's reserved namespace.
pub fn is_reserved(name: &str) -> bool {
    name.starts_with(RESERVED_PREFIX)
}

/// Whether a vhost is warren's own (its locks), never compared, imported or exported.
pub fn is_own_vhost(name: &str) -> bool {
    name == LOCK_VHOST
}

/// A name a user wrote that is warren's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// What the name names, in words (`queue`, `vhost`, `runtime parameter` …).
    pub what: &'static str,
    /// The name as written.
    pub name: String,
    /// What warren keeps the name for.
    pub reserved_for: String,
}

impl Collision {
    /// The error's sentence.
    pub fn message(&self) -> String {
        format!(
            "{} name `{}` is reserved: {}",
            self.what, self.name, self.reserved_for
        )
    }

    /// The fix.
    pub fn fix(&self) -> String {
        if self.what == PERMISSIONS_VHOST {
            return format!(
                "remove these permissions: no user of a spec needs access to warren's own vhosts (`{RESERVED_PREFIX}…`)"
            );
        }
        format!(
            "rename the {}: names starting with `{RESERVED_PREFIX}` are warren's own (`warren-…` or `warrens.…` are fine)",
            self.what
        )
    }
}

/// What a permission's reserved name is: the vhost it grants access to.
const PERMISSIONS_VHOST: &str = "permissions' vhost";

/// Whether the name a spec gives `id` collides with warren's namespace, and why.
///
/// An object inside a vhost is judged by its own name; its vhost is judged where the
/// vhost itself is declared, except for permissions, which name a vhost that need not
/// be the spec's (permissions in [`LOCK_VHOST`] would let a user hold or break
/// warren's locks). Bindings and vhost limits have no name of their own.
pub fn collision(id: &ObjectId) -> Option<Collision> {
    let (what, name) = match id.kind {
        kind @ (ObjectKind::Vhost
        | ObjectKind::Queue
        | ObjectKind::Exchange
        | ObjectKind::Policy
        | ObjectKind::OperatorPolicy
        | ObjectKind::User
        | ObjectKind::GlobalParameter) => (kind.noun(), id.name.as_str()),
        ObjectKind::Parameter => (
            "runtime parameter",
            id.name.split_once('/').map_or(id.name.as_str(), |(_, n)| n),
        ),
        ObjectKind::Permission | ObjectKind::TopicPermission => {
            (PERMISSIONS_VHOST, id.vhost.as_deref().unwrap_or_default())
        }
        ObjectKind::Binding | ObjectKind::VhostLimits => return None,
    };
    is_reserved(name).then(|| Collision {
        what,
        name: name.to_string(),
        reserved_for: reserved_for(id.kind, name),
    })
}

/// What warren keeps a reserved name of `kind` for, in words.
fn reserved_for(kind: ObjectKind, name: &str) -> String {
    let migration = name
        .strip_prefix(RESERVED_PREFIX)
        .and_then(|rest| rest.strip_prefix(MIGRATION_INFIX));
    match (kind, migration) {
        (ObjectKind::Queue | ObjectKind::Exchange | ObjectKind::Parameter, Some(queue)) => {
            format!(
                "`{RESERVED_PREFIX}{MIGRATION_INFIX}<queue>` names the temporary queue, exchange and shovel of a migration (`apply --migrate`); while the broker has one, every apply takes a migration of queue `{queue}` to be under way"
            )
        }
        (ObjectKind::Vhost | ObjectKind::Permission | ObjectKind::TopicPermission, _)
            if is_own_vhost(name) =>
        {
            "it is the vhost where warren holds its apply locks, never part of a spec".to_string()
        }
        (ObjectKind::Policy | ObjectKind::OperatorPolicy, _) => format!(
            "`{RESERVED_PREFIX}` names the policies warren generates (retry tiers, delivery limits, parking queues)"
        ),
        (ObjectKind::GlobalParameter, _) => format!(
            "`{RESERVED_PREFIX}` names warren's ownership records (`{RESERVED_PREFIX}<spec>`)"
        ),
        _ => format!(
            "`{RESERVED_PREFIX}` names the objects warren keeps for itself (its lock vhost `{LOCK_VHOST}`, migrations' `{RESERVED_PREFIX}{MIGRATION_INFIX}<queue>`, its ownership records and policies)"
        ),
    }
}

/// Why `name` cannot be a spec's name (its `name:`, or its file's or directory's
/// name), if it cannot: it would not map to exactly one ownership record.
pub fn spec_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a spec's name cannot be empty".to_string());
    }
    name.contains(ENVIRONMENT_SEPARATOR).then(|| {
        format!(
            "the spec's name `{name}` holds `{ENVIRONMENT_SEPARATOR}`, which separates a spec's name from its environment's in its ownership record (`{RESERVED_PREFIX}<name>{ENVIRONMENT_SEPARATOR}<environment>`): this spec would share the record of spec `{}` in environment `{}`",
            name.split_once(ENVIRONMENT_SEPARATOR).map_or("", |(spec, _)| spec),
            name.split_once(ENVIRONMENT_SEPARATOR).map_or("", |(_, env)| env),
        )
    })
}

/// Why `name` cannot be an environment's name, if it cannot.
pub fn environment_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("an environment's name cannot be empty".to_string());
    }
    name.contains(ENVIRONMENT_SEPARATOR).then(|| {
        format!(
            "the environment's name `{name}` holds `{ENVIRONMENT_SEPARATOR}`, which separates a spec's name from its environment's in its ownership record (`{RESERVED_PREFIX}<name>{ENVIRONMENT_SEPARATOR}<environment>`)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_is_reserved_for_every_kind_of_name() {
        for kind in [
            ObjectKind::Queue,
            ObjectKind::Exchange,
            ObjectKind::Policy,
            ObjectKind::OperatorPolicy,
            ObjectKind::User,
            ObjectKind::GlobalParameter,
        ] {
            assert!(
                collision(&ObjectId::in_vhost(kind, "v", "warren.x")).is_some(),
                "{kind:?}"
            );
            assert!(
                collision(&ObjectId::in_vhost(kind, "v", "x")).is_none(),
                "{kind:?}"
            );
        }
        assert!(collision(&ObjectId::global(ObjectKind::Vhost, "warren.team")).is_some());
        assert!(
            collision(&ObjectId::in_vhost(
                ObjectKind::Parameter,
                "v",
                "shovel/warren.migrate.q"
            ))
            .is_some()
        );
        assert!(
            collision(&ObjectId::in_vhost(
                ObjectKind::Parameter,
                "v",
                "warren.shovel/q"
            ))
            .is_none()
        );
    }

    #[test]
    fn look_alikes_are_not_reserved() {
        for name in [
            "warren-orders",
            "warrens.x",
            "Warren.x",
            "warren",
            "my.warren.x",
            "",
        ] {
            assert!(!is_reserved(name), "{name}");
            assert!(collision(&ObjectId::in_vhost(ObjectKind::Queue, "v", name)).is_none());
        }
    }

    #[test]
    fn the_reason_names_what_warren_keeps_the_name_for() {
        let migration = collision(&ObjectId::in_vhost(
            ObjectKind::Queue,
            "v",
            "warren.migrate.orders.email",
        ))
        .expect("reserved");
        assert!(
            migration.reserved_for.contains("migration"),
            "{migration:?}"
        );
        assert!(migration.reserved_for.contains("`orders.email`"));
        assert_eq!(
            migration.message().split(':').next(),
            Some("queue name `warren.migrate.orders.email` is reserved")
        );
        let locks = collision(&ObjectId::global(ObjectKind::Vhost, LOCK_VHOST)).expect("reserved");
        assert!(locks.reserved_for.contains("locks"), "{locks:?}");
        let policy = collision(&ObjectId::in_vhost(
            ObjectKind::Policy,
            "v",
            "warren.retry.x",
        ))
        .expect("reserved");
        assert!(policy.reserved_for.contains("policies warren generates"));
        let record = collision(&ObjectId::global(
            ObjectKind::GlobalParameter,
            "warren.shop",
        ))
        .expect("reserved");
        assert!(record.reserved_for.contains("ownership records"));
    }

    #[test]
    fn permissions_are_judged_by_their_vhost() {
        let in_locks = collision(&ObjectId::in_vhost(
            ObjectKind::Permission,
            LOCK_VHOST,
            "deploy",
        ));
        assert!(in_locks.expect("reserved").reserved_for.contains("locks"));
        assert!(
            collision(&ObjectId::in_vhost(
                ObjectKind::TopicPermission,
                "shop",
                "warren.x"
            ))
            .is_none()
        );
        // Objects in a vhost are judged by their name; the vhost, where it is declared.
        assert!(collision(&ObjectId::in_vhost(ObjectKind::Queue, LOCK_VHOST, "q")).is_none());
        assert!(
            collision(&ObjectId::in_vhost(
                ObjectKind::Binding,
                "v",
                "warren.x -> queue q []"
            ))
            .is_none()
        );
    }

    #[test]
    fn a_record_name_maps_to_one_spec_and_environment() {
        assert!(spec_name_problem("billing").is_none());
        assert!(spec_name_problem("billing.v2").is_none());
        let problem = spec_name_problem("billing@prod").expect("refused");
        assert!(
            problem.contains("spec `billing` in environment `prod`"),
            "{problem}"
        );
        assert!(spec_name_problem("").is_some());
        assert!(environment_name_problem("prod").is_none());
        assert!(environment_name_problem("prod@eu").is_some());
        assert!(environment_name_problem("").is_some());
    }
}
