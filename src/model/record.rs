//! The ownership record warren keeps in the broker itself: its format. Reading and
//! writing it is `broker::record`; taking its lock is `apply::lock`.
//!
//! Each spec has one global runtime parameter, `warren.<spec name>`, holding the list
//! of objects it manages, a serial that grows with every apply, and a lock. Removing an
//! object from the spec deletes it because it is in the list; objects somebody made by
//! hand are not in any list and are left alone. Several specs can share a broker: an
//! object listed by another spec's record is refused with that spec's name.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{GlobalParameter, ObjectId, ObjectKind, RESERVED_PREFIX};

/// One spec's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Format version of the record.
    pub format: u32,
    /// Spec name.
    pub spec: String,
    /// Incremented by every apply.
    pub serial: u64,
    /// Objects the spec manages: `[kind, vhost, name]`.
    pub objects: Vec<(ObjectKind, Option<String>, String)>,
    /// Held while an apply runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<Lock>,
    /// When the last apply finished (Unix seconds).
    #[serde(default)]
    pub applied_at: u64,
}

/// A lock on a spec's part of the broker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    /// Who holds it: host, process and a random token.
    pub holder: String,
    /// Unix seconds.
    pub acquired_at: u64,
    /// Unix seconds after which the lock no longer counts.
    pub expires_at: u64,
}

impl Lock {
    /// The lock for people: who holds it, where, since when, and until when.
    pub fn describe(&self, now: u64) -> String {
        let mut parts = self.holder.splitn(3, ':');
        let (host, process) = (parts.next().unwrap_or("?"), parts.next().unwrap_or("?"));
        let until = if self.expires_at > now {
            format!(
                "expires in {} unless renewed",
                in_words(self.expires_at - now)
            )
        } else {
            format!("expired {} ago", in_words(now - self.expires_at))
        };
        format!(
            "{} (process {process} on host {host}), taken {} ago, {until}",
            self.holder,
            in_words(now.saturating_sub(self.acquired_at))
        )
    }
}

/// A duration in words: `45 seconds`, `3 minutes`, `2 hours`, `5 days`.
pub fn in_words(seconds: u64) -> String {
    let (amount, unit) = match seconds {
        0..=119 => (seconds, "second"),
        120..=7_199 => (seconds / 60, "minute"),
        7_200..=172_799 => (seconds / 3_600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    format!("{amount} {unit}{}", if amount == 1 { "" } else { "s" })
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Record {
    /// The global parameter name of a spec's record.
    pub fn parameter_name(spec: &str) -> String {
        format!("{RESERVED_PREFIX}{spec}")
    }

    /// Whether a global parameter of this name is an ownership record (they are not
    /// objects of any spec).
    pub fn is_record_name(name: &str) -> bool {
        name.starts_with(RESERVED_PREFIX)
    }

    /// The managed objects as ids.
    pub fn object_ids(&self) -> BTreeSet<ObjectId> {
        self.objects
            .iter()
            .map(|(kind, vhost, name)| ObjectId {
                kind: *kind,
                vhost: vhost.clone(),
                name: name.clone(),
            })
            .collect()
    }

    /// Sets the managed objects.
    pub fn set_objects<'a>(&mut self, ids: impl IntoIterator<Item = &'a ObjectId>) {
        self.objects = ids
            .into_iter()
            .map(|id| (id.kind, id.vhost.clone(), id.name.clone()))
            .collect();
    }

    /// The lock, if somebody other than `holder` holds it now.
    pub fn held_by_other(&self, holder: &str) -> Option<&Lock> {
        self.lock
            .as_ref()
            .filter(|lock| lock.holder != holder && lock.expires_at > now())
    }
}

/// Every record found among the global parameters, by spec name.
pub fn records(parameters: &[GlobalParameter]) -> BTreeMap<String, Record> {
    parameters
        .iter()
        .filter(|p| Record::is_record_name(&p.name))
        .filter_map(|p| {
            let record: Record = serde_json::from_value(p.value.clone()).ok()?;
            Some((record.spec.clone(), record))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_global_parameters() {
        let mut record = Record {
            format: 1,
            spec: "shop".into(),
            serial: 3,
            ..Record::default()
        };
        let id = ObjectId {
            kind: ObjectKind::Queue,
            vhost: Some("v".into()),
            name: "q".into(),
        };
        record.set_objects([&id]);
        let parameter = GlobalParameter {
            name: Record::parameter_name("shop"),
            value: serde_json::to_value(&record).unwrap(),
        };
        let other = GlobalParameter {
            name: "cluster_name".into(),
            value: serde_json::json!("rabbit@x"),
        };
        let found = records(&[parameter, other]);
        assert_eq!(found["shop"], record);
        assert!(found["shop"].object_ids().contains(&id));
    }

    #[test]
    fn a_lock_says_who_holds_it_where_and_for_how_long_in_words() {
        let lock = Lock {
            holder: "ci-7:4242:0badf00d".into(),
            acquired_at: 1_000,
            expires_at: 1_060,
        };
        assert_eq!(
            lock.describe(1_030),
            "ci-7:4242:0badf00d (process 4242 on host ci-7), taken 30 seconds ago, expires in 30 seconds unless renewed"
        );
        assert!(
            lock.describe(1_000 + 3 * 3_600)
                .contains("taken 3 hours ago, expired 2 hours ago")
        );
        assert_eq!(in_words(1), "1 second");
        assert_eq!(in_words(600), "10 minutes");
    }

    #[test]
    fn expired_or_own_locks_do_not_block() {
        let mut record = Record {
            lock: Some(Lock {
                holder: "a".into(),
                acquired_at: 0,
                expires_at: now() + 60,
            }),
            ..Record::default()
        };
        assert!(record.held_by_other("b").is_some());
        assert!(record.held_by_other("a").is_none());
        record.lock.as_mut().unwrap().expires_at = now() - 1;
        assert!(record.held_by_other("b").is_none());
    }
}
