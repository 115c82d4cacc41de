//! The names a queue migration (`apply --migrate`) uses while it runs.
//!
//! RabbitMQ cannot rename a queue or change its type, durability or arguments in
//! place, so a migration moves the queue's messages out to a temporary queue and back
//! into the queue declared anew. Everything it makes for that is named here, under
//! [`RESERVED_PREFIX`] (which no spec may use), so that the broker's own state tells a
//! later apply that a migration was under way: a process that is killed cannot write
//! its record, but the queues it made remain.
//!
//! For a queue `Q` in a vhost, the temporary queue, the fanout exchange the moved
//! messages are published to (it routes to exactly one queue, and keeps each message's
//! routing key, which a shovel's `dest-queue` would replace) and the shovel that moves
//! them are all named `warren.migrate.Q`: three kinds, three namespaces.

use super::RESERVED_PREFIX;
use super::reserved::MIGRATION_INFIX as MIGRATE;

/// The longest queue or exchange name RabbitMQ accepts, in bytes.
const MAX_NAME_BYTES: usize = 255;

/// The temporary queue, fanout exchange and shovel of the migration of queue `queue`;
/// `None` when the name would exceed RabbitMQ's 255 bytes (such a queue cannot be
/// migrated, and the plan says so).
pub fn temporary_name(queue: &str) -> Option<String> {
    let name = format!("{RESERVED_PREFIX}{MIGRATE}{queue}");
    (name.len() <= MAX_NAME_BYTES).then_some(name)
}

/// The queue whose migration `name` belongs to, when `name` is a migration's
/// temporary queue, exchange or shovel.
pub fn migrated_queue(name: &str) -> Option<&str> {
    name.strip_prefix(RESERVED_PREFIX)?
        .strip_prefix(MIGRATE)
        .filter(|queue| !queue.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_round_trip_and_stay_within_the_broker_limit() {
        let name = temporary_name("orders.work").unwrap();
        assert_eq!(name, "warren.migrate.orders.work");
        assert_eq!(migrated_queue(&name), Some("orders.work"));
        assert_eq!(migrated_queue("warren.retry.x"), None);
        assert_eq!(migrated_queue("warren.migrate."), None);
        assert!(temporary_name(&"q".repeat(241)).is_none());
        assert!(temporary_name(&"q".repeat(240)).is_some());
        assert_eq!(temporary_name(&"q".repeat(240 - 15)).unwrap().len(), 240);
    }
}
