//! Delay queues a plan deletes whose messages `apply --migrate` passes on, early, to
//! the queue their TTL would take them to.
//!
//! A delay queue (a retry tier) holds messages that wait for their TTL, then
//! dead-letter into a queue that consumes them (a consumer's work queue). When a plan
//! deletes the tier but keeps that queue — a ladder loses a tier, or a consumer
//! changes from a TTL ladder to native retry, where the work queue waits itself — the
//! tier's messages have a home that stays: instead of refusing the deletion, or losing
//! them with `--allow-data-loss`, `--migrate` moves them there with an acknowledged
//! shovel and deletes the tier once the broker finds it empty. Each message is retried
//! sooner than its wait said, and never lost (docs/migration.md).
//!
//! Pure: it reads the plan's changes and the live definitions' dead-letter routes
//! (arguments × policies, [`crate::model::queue_facts`], routed as the broker routes
//! a dead letter, [`crate::model::routing`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::strand::{dead_letter_queues, queue_id, removes_queue};
use crate::diff::{Action, Change};
use crate::model::queue_facts::{operator_policies, queue_facts};
use crate::model::routing::Routes;
use crate::model::{Definitions, ObjectId, ObjectKind, QueueType, TargetVersion};

/// A delay queue the plan deletes, and the queue it passes its messages on to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassOn {
    /// The delay queue the plan deletes.
    pub from: ObjectId,
    /// The queue its messages dead-letter into when their TTL runs out, which the plan
    /// keeps.
    pub into: ObjectId,
}

/// The delay queues `changes` delete that dead-letter, when their messages expire, into
/// exactly one queue the plan keeps, from the live definitions of `vhosts`.
///
/// A queue counts as a delay queue when a message TTL applies to it (argument or
/// policy) and it has a dead-letter exchange: its messages leave by themselves, without
/// a consumer, so moving them now only makes them arrive sooner. A queue that
/// dead-letters only on a rejection (a work queue) is not one: its messages wait for a
/// consumer, and moving them would skip it. A route to several queues (a fanout dead
/// exchange) is left alone: which copy a message should become is not the plan's to say.
///
/// `migrated` are the queues the plan replaces blue/green with `--migrate`: they stay
/// under their name, declared anew before the phase that deletes queues, so a delay
/// queue can pass its messages on to one of them.
pub fn find(
    live: &Definitions,
    vhosts: &[String],
    changes: &[Change],
    migrated: &[&ObjectId],
    target: TargetVersion,
) -> Vec<PassOn> {
    let deleted: BTreeSet<&ObjectId> = changes
        .iter()
        .filter(|c| c.id.kind == ObjectKind::Queue && c.action == Action::Delete)
        .map(|c| &c.id)
        .collect();
    if deleted.is_empty() {
        return Vec::new();
    }
    let removed: BTreeSet<&ObjectId> = changes
        .iter()
        .filter(|c| removes_queue(c) && !migrated.contains(&&c.id))
        .map(|c| &c.id)
        .collect();
    let topology = Routes::new(live, target);
    let operators = operator_policies(live);
    let mut pass_ons = Vec::new();
    for facts in queue_facts(live, &operators, target) {
        let queue = facts.queue;
        let from = queue_id(&queue.vhost, &queue.name);
        if !vhosts.contains(&queue.vhost)
            || !deleted.contains(&from)
            || queue.is_transient()
            || facts.queue_type == QueueType::Stream
            || facts.message_ttl.is_none()
        {
            continue;
        }
        let Some(route) = dead_letter_queues(&topology, &facts) else {
            continue;
        };
        let [into] = route.as_slice() else {
            continue;
        };
        let into = queue_id(&queue.vhost, into);
        if into != from && !removed.contains(&into) {
            pass_ons.push(PassOn { from, into });
        }
    }
    pass_ons.sort_by(|a, b| a.from.cmp(&b.from));
    pass_ons
}

#[cfg(test)]
mod tests;
