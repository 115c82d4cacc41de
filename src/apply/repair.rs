//! `warren state`: reading a spec's ownership record as it is, and repairing a
//! damaged one.
//!
//! A damaged record stops its own spec's plans, and every plan when even its claims do
//! not read (records fail closed). Repair must never widen what the record claims
//! behind anybody's back: it keeps the object
//! entries that still read, drops those another spec's record claims, and adds only
//! objects the spec itself declares that exist on the broker and no spec claims. It
//! runs under the spec's lock, the broker-wide lock and the locks of every vhost it may
//! claim in, and shows what it will write.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::broker::holder_name;
use crate::broker::{BrokerError, BrokerLock, Client, LockName};
use crate::model::objects::Objects;
use crate::model::record::{self, DamagedRecord, RECORD_FORMAT, Record};
use crate::model::{GlobalParameter, ObjectId, ObjectKind, RESERVED_PREFIX};

/// A record as the broker holds it.
#[derive(Debug, Clone)]
pub enum RecordState {
    /// The spec has no record: it manages nothing yet.
    Missing,
    /// A record that reads.
    Readable(Record),
    /// A record that does not read: its value as stored, and what is wrong.
    Damaged {
        /// The parameter's value.
        value: Value,
        /// Why it does not read.
        error: DamagedRecord,
    },
}

/// Reads a spec's record without failing on damage.
pub async fn show(client: &Client, spec: &str) -> Result<RecordState, BrokerError> {
    Ok(state_among(&client.global_parameters().await?, spec))
}

/// `spec`'s record among `parameters`, as [`show`] tells it.
fn state_among(parameters: &[GlobalParameter], spec: &str) -> RecordState {
    match record::stored(parameters, spec) {
        None => RecordState::Missing,
        Some(Ok(record)) => RecordState::Readable(record),
        Some(Err(unreadable)) => RecordState::Damaged {
            value: unreadable.value,
            error: unreadable.damage,
        },
    }
}

/// A repair, prepared under the locks it holds; nothing is written until
/// [`Repair::write`].
pub struct Repair {
    lock: BrokerLock,
    /// What is wrong with the record now.
    pub damage: DamagedRecord,
    /// The record that will be written.
    pub record: Record,
    /// Object entries kept from the damaged record.
    pub kept: usize,
    /// Entries that did not read, as stored.
    pub unreadable: Vec<Value>,
    /// Entries dropped because another spec's record claims them.
    pub claimed_by_others: Vec<(ObjectId, String)>,
    /// Objects the spec declares that exist and no spec claims: added.
    pub adopted: Vec<ObjectId>,
}

/// Why no repair was prepared.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// The record reads: nothing to repair.
    #[error("the ownership record of spec `{0}` reads; nothing to repair")]
    NotDamaged(String),
    /// There is no record.
    #[error(
        "spec `{0}` has no ownership record; nothing to repair (`warren apply` records what the spec declares)"
    )]
    Missing(String),
    /// The broker could not be read or written, or another record is damaged too.
    #[error(transparent)]
    Broker(#[from] BrokerError),
}

/// What the spec declares, for adoption: its objects, compiled, and what exists of
/// them on the broker.
pub struct Declared<'a> {
    /// The spec's objects.
    pub desired: &'a Objects,
    /// The broker's objects in the spec's vhosts.
    pub live: &'a Objects,
}

/// Takes the spec's and the broker-wide locks and prepares the repair of `spec`'s
/// record.
pub async fn prepare(
    client: &Client,
    spec: &str,
    declared: Option<Declared<'_>>,
    lock_wait: Duration,
) -> Result<Repair, RepairError> {
    // The locks of every vhost the repaired record may claim in: those of the
    // entries stored now (read again under the locks) and those the spec declares.
    let stored_vhosts = |value: &Value| -> BTreeSet<String> {
        value["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| entry[1].as_str().map(str::to_string))
            .collect()
    };
    let before = match show(client, spec).await? {
        RecordState::Damaged { value, .. } => value,
        RecordState::Readable(record) => serde_json::to_value(record).unwrap_or_default(),
        RecordState::Missing => Value::Null,
    };
    let mut vhosts = stored_vhosts(&before);
    if let Some(declared) = &declared {
        vhosts.extend(declared.desired.keys().filter_map(|id| id.vhost.clone()));
    }
    let mut names = vec![LockName::Spec(spec.to_string()), LockName::BrokerWide];
    names.extend(vhosts.iter().cloned().map(LockName::Vhost));
    let lock = client.lock(&names, &holder_name(), lock_wait).await?;
    let prepared = prepare_locked(client, spec, declared, &vhosts).await;
    match prepared {
        Ok(parts) => Ok(Repair {
            lock,
            damage: parts.damage,
            record: parts.record,
            kept: parts.kept,
            unreadable: parts.unreadable,
            claimed_by_others: parts.claimed_by_others,
            adopted: parts.adopted,
        }),
        Err(error) => {
            lock.release().await;
            Err(error)
        }
    }
}

async fn prepare_locked(
    client: &Client,
    spec: &str,
    declared: Option<Declared<'_>>,
    locked_vhosts: &BTreeSet<String>,
) -> Result<Parts, RepairError> {
    let parameters = client.global_parameters().await?;
    let (value, damage) = match state_among(&parameters, spec) {
        RecordState::Missing => return Err(RepairError::Missing(spec.into())),
        RecordState::Readable(_) => return Err(RepairError::NotDamaged(spec.into())),
        RecordState::Damaged { value, error } => (value, error),
    };
    let mut owners: BTreeMap<ObjectId, String> = BTreeMap::new();
    for parameter in &parameters {
        if !Record::is_head_name(&parameter.name) || parameter.name == damage.parameter {
            continue;
        }
        let other = match record::stored(&parameters, other_spec(&parameter.name)) {
            Some(Ok(other)) => other,
            Some(Err(unreadable)) => return Err(BrokerError::from(unreadable.damage).into()),
            None => continue,
        };
        for id in other.object_ids() {
            owners.insert(id, other.spec.clone());
        }
    }
    let mut kept = BTreeSet::new();
    let mut unreadable = Vec::new();
    let mut claimed_by_others = Vec::new();
    for entry in value["objects"].as_array().cloned().unwrap_or_default() {
        match serde_json::from_value::<(ObjectKind, Option<String>, String)>(entry.clone()) {
            Ok((kind, vhost, name)) => {
                let id = ObjectId::new(kind, vhost, name);
                match owners.get(&id) {
                    Some(owner) => claimed_by_others.push((id, owner.clone())),
                    None => {
                        kept.insert(id);
                    }
                }
            }
            Err(_) => unreadable.push(entry),
        }
    }
    let kept_count = kept.len();
    let mut adopted = Vec::new();
    if let Some(declared) = declared {
        for id in declared.desired.keys() {
            if declared.live.contains_key(id) && !owners.contains_key(id) && kept.insert(id.clone())
            {
                adopted.push(id.clone());
            }
        }
    }
    let mut record = Record {
        format: RECORD_FORMAT,
        spec: spec.to_string(),
        serial: value["serial"].as_u64().unwrap_or(0),
        ..Record::default()
    };
    if let Some(outside) = kept.iter().find(|id| {
        id.vhost
            .as_ref()
            .is_some_and(|v| !locked_vhosts.contains(v))
    }) {
        return Err(RepairError::Broker(BrokerError::LockInterrupted {
            reason: format!(
                "the record changed while its locks were taken: it now names {outside}"
            )
            .into(),
        }));
    }
    record.set_objects(&kept);
    Ok(Parts {
        damage,
        record,
        kept: kept_count,
        unreadable,
        claimed_by_others,
        adopted,
    })
}

/// The spec whose record's head is the global parameter `parameter`.
fn other_spec(parameter: &str) -> &str {
    parameter.strip_prefix(RESERVED_PREFIX).unwrap_or(parameter)
}

/// A repair without its locks, as prepared under them.
struct Parts {
    damage: DamagedRecord,
    record: Record,
    kept: usize,
    unreadable: Vec<Value>,
    claimed_by_others: Vec<(ObjectId, String)>,
    adopted: Vec<ObjectId>,
}

impl Repair {
    /// Writes the repaired record (its serial one higher, so saved plans made against
    /// the damaged one are stale) and gives the locks back.
    pub async fn write(mut self, client: &Client) -> Result<Record, BrokerError> {
        self.record.serial += 1;
        self.record.applied_at = crate::model::record::now();
        let written = if client.still_holds(&self.lock).await {
            // Read again under the locks: the parts already there are not written again,
            // and those the repaired record no longer names are deleted.
            match client.global_parameters().await {
                Ok(present) => client.write_record(&self.record, &present).await,
                Err(error) => Err(error),
            }
        } else {
            Err(BrokerError::LockUnavailable {
                url: "AMQP".into(),
                vhost: crate::model::LOCK_VHOST.into(),
                reason: "the lock connection closed before the record was written".into(),
            })
        };
        let record = self.record.clone();
        self.lock.release().await;
        written.map(|()| record)
    }

    /// Gives the locks back without writing.
    pub async fn cancel(self) {
        self.lock.release().await;
    }
}

/// Why a spec file could not be used for a repair.
#[derive(Debug)]
pub enum PrepareError {
    /// The spec does not compile.
    Invalid(Vec<crate::spec::diagnostic::Diagnostic>),
    /// The repair could not be prepared.
    Repair(RepairError),
}

/// Prepares the repair of a spec's record from its spec file: what the spec declares
/// and finds on the broker is adopted back.
pub async fn prepare_for_spec(
    client: &Client,
    file: &crate::spec::SpecFile,
    lock_wait: Duration,
) -> Result<Repair, PrepareError> {
    use crate::compile::{self, Options};
    use crate::model::TargetVersion;
    use crate::model::objects::objects;
    let broker = |error: BrokerError| PrepareError::Repair(error.into());
    let version = client.version().await.map_err(broker)?;
    let target = TargetVersion::of_broker(&version);
    let compiled = compile::compile(file, &Options::reading_secrets(file, target))
        .map_err(PrepareError::Invalid)?;
    let desired = objects(&compiled.definitions);
    let vhosts: Vec<String> = file.spec.vhosts.keys().cloned().collect();
    let live = client.read_live(&vhosts).await.map_err(broker)?;
    let live = crate::plan::live_objects(&live.definitions, &vhosts);
    let declared = Declared {
        desired: &desired,
        live: &live,
    };
    let name = crate::plan::spec_name(file);
    prepare(client, &name, Some(declared), lock_wait)
        .await
        .map_err(PrepareError::Repair)
}
