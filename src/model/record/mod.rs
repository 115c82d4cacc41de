//! The ownership record warren keeps in the broker itself: its format. Reading and
//! writing it is `broker::record`; the lock an apply holds while it changes records is
//! `broker::lock`.
//!
//! Each spec has one global runtime parameter, `warren.<spec name>`, holding the list
//! of objects it manages and a serial that grows with every apply; the list itself is
//! stored in parts, parameters of their own that the record names ([`parts`]). Removing an object
//! from the spec deletes it because it is in the list; objects somebody made by hand
//! are not in any list and are left alone. Several specs can share a broker: an object
//! listed by another spec's record is refused with that spec's name.
//!
//! Records fail closed: a record that does not read as one is an error naming it and
//! how to repair it, never "no owner" (which would let another spec take its objects,
//! or `--prune-unmanaged` delete them).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{GlobalParameter, ObjectId, ObjectKind, RESERVED_PREFIX};

pub mod parts;

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
    /// When the last apply finished (Unix seconds).
    #[serde(default)]
    pub applied_at: u64,
    /// Set on a damaged record whose claims were salvaged by [`records`]; never stored.
    #[serde(skip)]
    pub damage: Option<DamagedRecord>,
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

    /// Whether a global parameter of this name is an ownership record or one of its
    /// parts (they are not objects of any spec).
    pub fn is_record_name(name: &str) -> bool {
        name.starts_with(RESERVED_PREFIX)
    }

    /// Whether a global parameter of this name is a record's head: the record itself,
    /// not one of its parts.
    pub fn is_head_name(name: &str) -> bool {
        Record::is_record_name(name) && !parts::is_part_name(name)
    }

    /// The managed objects as ids.
    pub fn object_ids(&self) -> BTreeSet<ObjectId> {
        self.objects
            .iter()
            .map(|(kind, vhost, name)| ObjectId::new(*kind, vhost.as_deref(), name))
            .collect()
    }

    /// Sets the managed objects.
    pub fn set_objects<'a>(&mut self, ids: impl IntoIterator<Item = &'a ObjectId>) {
        self.objects = ids
            .into_iter()
            .map(|id| (id.kind, id.vhost.clone(), id.name.clone()))
            .collect();
    }
}

/// The record format this warren writes, and the newest it reads: 2 stores the list of
/// objects in parts ([`parts`]); 1 held it in the record itself.
pub const RECORD_FORMAT: u32 = 2;

/// A record warren cannot read: it may list objects, so it is never taken as "no owner".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the ownership record `{parameter}` cannot be read ({reason}); nothing was changed. See it with `warren state show {spec}` and repair it with `warren state repair {spec}`"
)]
pub struct DamagedRecord {
    /// The global parameter holding it.
    pub parameter: String,
    /// The spec it belongs to (the parameter's name without the prefix).
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Record {
    /// Reads the record held by the global parameter `parameter`, failing closed;
    /// `value` is the record with its parts joined in ([`parts::join`]).
    pub fn from_parameter(
        parameter: &str,
        value: &serde_json::Value,
    ) -> Result<Record, DamagedRecord> {
        let spec = parameter
            .strip_prefix(RESERVED_PREFIX)
            .unwrap_or(parameter)
            .to_string();
        let damaged = |reason: String| DamagedRecord {
            parameter: parameter.to_string(),
            spec: spec.clone(),
            reason,
        };
        if value.get("parts").is_some() {
            // A head read without its parts would claim nothing: never "no owner".
            return Err(damaged("its parts were not read".into()));
        }
        let record: Record =
            serde_json::from_value(value.clone()).map_err(|err| damaged(err.to_string()))?;
        if record.format > RECORD_FORMAT {
            return Err(damaged(format!(
                "format {} was written by a newer warren; this one reads format {RECORD_FORMAT}",
                record.format
            )));
        }
        if record.spec != spec {
            return Err(damaged(format!(
                "it names spec `{}`, but its parameter belongs to spec `{spec}`",
                record.spec
            )));
        }
        Ok(record)
    }
}

/// `spec`'s record among the global parameters, if it has one; read as
/// [`Record::from_parameter`] does, failing closed.
pub fn of_spec(
    parameters: &[GlobalParameter],
    spec: &str,
) -> Result<Option<Record>, DamagedRecord> {
    stored(parameters, spec)
        .map(|read| read.map_err(|unreadable| unreadable.damage))
        .transpose()
}

/// A record that does not read: its value as stored, and what is wrong with it.
#[derive(Debug, Clone)]
pub struct Unreadable {
    /// The head's value with the entries of every part that reads as `objects`.
    pub value: serde_json::Value,
    /// What is wrong.
    pub damage: DamagedRecord,
}

/// `spec`'s record among the global parameters, if it has one: read, or damaged.
pub fn stored(
    parameters: &[GlobalParameter],
    spec: &str,
) -> Option<Result<Record, Box<Unreadable>>> {
    let name = Record::parameter_name(spec);
    let head = parameters.iter().find(|p| p.name == name)?;
    Some(read_head(head, &parts::parts_of(parameters)))
}

/// The record whose head is `head`, its parts taken from `parts`.
fn read_head(
    head: &GlobalParameter,
    parts: &std::collections::HashMap<&str, &serde_json::Value>,
) -> Result<Record, Box<Unreadable>> {
    match parts::join(&head.name, &head.value, parts) {
        Ok(value) => Record::from_parameter(&head.name, &value)
            .map_err(|damage| Box::new(Unreadable { value, damage })),
        Err(torn) => Err(Box::new(Unreadable {
            damage: torn_damage(&head.name, torn.reason),
            value: torn.value,
        })),
    }
}

/// The damage of record `parameter`, whose parts do not all read for `reason`.
fn torn_damage(parameter: &str, reason: String) -> DamagedRecord {
    DamagedRecord {
        parameter: parameter.to_string(),
        spec: parameter
            .strip_prefix(RESERVED_PREFIX)
            .unwrap_or(parameter)
            .to_string(),
        reason,
    }
}

/// The claims of a damaged record, when its list of objects still reads in full:
/// other specs keep honouring them while its own spec is repaired.
fn salvaged_claims(damage: &DamagedRecord, value: &serde_json::Value) -> Option<Record> {
    let objects = value.get("objects")?.as_array()?;
    let objects = objects
        .iter()
        .map(|entry| serde_json::from_value(entry.clone()).ok())
        .collect::<Option<Vec<(ObjectKind, Option<String>, String)>>>()?;
    Some(Record {
        format: RECORD_FORMAT,
        spec: damage.spec.clone(),
        objects,
        damage: Some(damage.clone()),
        ..Record::default()
    })
}

/// Every record found among the global parameters, by spec name.
///
/// A damaged record whose object list still reads counts with those claims and its
/// damage noted ([`Record::damage`]): only its own spec stops, until it is repaired.
/// One whose claims cannot be read at all is an error for every spec: any object may
/// be one of its claims.
///
/// A record with a part missing or changed cannot list its claims in full: an error for
/// every spec.
pub fn records(parameters: &[GlobalParameter]) -> Result<BTreeMap<String, Record>, DamagedRecord> {
    let parts = parts::parts_of(parameters);
    parameters
        .iter()
        .filter(|p| Record::is_head_name(&p.name))
        .map(|p| {
            let record = match parts::join(&p.name, &p.value, &parts) {
                Err(torn) => return Err(torn_damage(&p.name, torn.reason)),
                Ok(value) => match Record::from_parameter(&p.name, &value) {
                    Ok(record) => record,
                    Err(damage) => salvaged_claims(&damage, &value).ok_or(damage)?,
                },
            };
            Ok((record.spec.clone(), record))
        })
        .collect()
}

/// Whether `spec`'s own record is damaged: its plans stop until it is repaired.
pub fn check_own(records: &BTreeMap<String, Record>, spec: &str) -> Result<(), DamagedRecord> {
    match records.get(spec).and_then(|r| r.damage.clone()) {
        Some(damage) => Err(damage),
        None => Ok(()),
    }
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
        let id = ObjectId::in_vhost(ObjectKind::Queue, "v", "q");
        record.set_objects([&id]);
        let parameter = GlobalParameter {
            name: Record::parameter_name("shop"),
            value: serde_json::to_value(&record).unwrap(),
        };
        let other = GlobalParameter {
            name: "cluster_name".into(),
            value: serde_json::json!("rabbit@x"),
        };
        let found = records(&[parameter, other]).unwrap();
        assert_eq!(found["shop"], record);
        assert!(found["shop"].object_ids().contains(&id));
    }

    #[test]
    fn a_record_that_does_not_read_is_an_error_never_no_owner() {
        let parameter = |value: serde_json::Value| GlobalParameter {
            name: Record::parameter_name("teamC"),
            value,
        };
        let good = serde_json::json!({"format": 1, "spec": "teamC", "serial": 2,
            "objects": [["queue", "v", "q"]], "applied_at": 5});
        assert_eq!(
            records(&[parameter(good.clone())]).unwrap()["teamC"].serial,
            2
        );
        // Claims that still read are honoured; only teamC itself stops.
        let mut dated = good.clone();
        dated["applied_at"] = serde_json::json!("yesterday");
        let found = records(&[parameter(dated)]).unwrap();
        assert_eq!(found["teamC"].objects.len(), 1);
        assert!(check_own(&found, "teamD").is_ok());
        let error = check_own(&found, "teamC").unwrap_err().to_string();
        assert!(error.contains("invalid type"), "{error}");
        for value in [
            serde_json::json!([["teapot", "v", "q"]]),
            serde_json::json!("all of them"),
        ] {
            let mut bad = good.clone();
            bad["objects"] = value;
            let error = records(&[parameter(bad)]).unwrap_err();
            assert_eq!(error.spec, "teamC");
            assert!(error.to_string().contains("warren state repair teamC"));
        }
        for (field, value, says) in [
            ("format", serde_json::json!(9), "newer warren"),
            ("spec", serde_json::json!("teamD"), "names spec `teamD`"),
        ] {
            let mut bad = good.clone();
            bad[field] = value;
            let error = Record::from_parameter("warren.teamC", &bad).unwrap_err();
            assert!(error.to_string().contains(says), "{error}");
        }
    }
}
