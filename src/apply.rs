//! Plan × broker → changes made, in dependency order.
//!
//! Creates go in bulk through the definitions import (`POST /api/definitions`),
//! chunked under the broker's request body limit; updates and deletes are one request
//! each, a bounded number at a time. The first real error stops the apply with a report
//! of what was done and what was not; running plan and apply again converges.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::broker::{BrokerError, Client, segment};
use crate::compile::{ObjectId, ObjectKind};
use crate::diff::{Action, Change};
use crate::plan::{Plan, fingerprint, live_objects};
use crate::state::{self, LOCK_LIFETIME_SECS, Lock, Record};

/// Largest body sent in one definitions import (the broker refuses large bodies).
pub const IMPORT_CHUNK_BYTES: usize = 2 * 1024 * 1024;

/// Why an apply did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Changes would lose messages and `--allow-data-loss` was not given.
    #[error("refusing to lose messages: {0} (re-run with --allow-data-loss to accept)")]
    DataLoss(String),
    /// The plan wants objects another spec manages.
    #[error("refusing to take over objects managed by another spec: {0}")]
    Conflict(String),
    /// Another apply holds the lock.
    #[error(
        "spec `{spec}` is locked by {holder} since {since} (another apply is running; the lock expires at {expires})"
    )]
    Locked {
        /// Spec.
        spec: String,
        /// Lock holder.
        holder: String,
        /// Unix seconds.
        since: u64,
        /// Unix seconds.
        expires: u64,
    },
    /// The broker changed since the plan was made.
    #[error("the broker changed since this plan was made ({0}); run `warren plan` again")]
    Stale(String),
    /// The broker refused a request, after `done` changes.
    #[error("{error}")]
    Broker {
        /// What failed.
        error: BrokerError,
        /// The report up to the failure.
        report: Box<ApplyReport>,
    },
}

impl From<BrokerError> for ApplyError {
    fn from(error: BrokerError) -> Self {
        ApplyError::Broker {
            error,
            report: Box::default(),
        }
    }
}

/// What an apply did.
#[derive(Debug, Clone, Default)]
pub struct ApplyReport {
    /// Changes made, as `action kind name`.
    pub done: Vec<String>,
    /// Changes not made because of an earlier error.
    pub not_done: Vec<String>,
}

/// How to apply.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Accept deleting or replacing queues that hold messages.
    pub allow_data_loss: bool,
}

fn describe(change: &Change) -> String {
    let action = match change.action {
        Action::Create => "create",
        Action::Update => "update",
        Action::Replace => "replace",
        Action::Delete => "delete",
    };
    format!("{action} {}", change.id)
}

/// Refuses plans that lose data without permission or take over others' objects.
pub fn check_gates(plan: &Plan, options: &Options) -> Result<(), ApplyError> {
    if !plan.conflicts.is_empty() {
        let list: Vec<String> = plan
            .conflicts
            .iter()
            .map(|c| format!("{} (spec `{}`)", c.id, c.owner))
            .collect();
        return Err(ApplyError::Conflict(list.join("; ")));
    }
    let losing: Vec<String> = plan
        .changes
        .iter()
        .filter(|c| c.loses_data())
        .map(|c| format!("{} holds {} messages", c.id, c.messages.unwrap_or(0)))
        .collect();
    if !losing.is_empty() && !options.allow_data_loss {
        return Err(ApplyError::DataLoss(losing.join("; ")));
    }
    Ok(())
}

async fn read_record(client: &Client, spec: &str) -> Result<Option<Record>, BrokerError> {
    let path = format!(
        "/api/global-parameters/{}",
        segment(&Record::parameter_name(spec))
    );
    Ok(client
        .get(&path)
        .await?
        .and_then(|value| serde_json::from_value(value["value"].clone()).ok()))
}

async fn write_record(client: &Client, record: &Record) -> Result<(), BrokerError> {
    let name = Record::parameter_name(&record.spec);
    client
        .put(
            &format!("/api/global-parameters/{}", segment(&name)),
            &json!({ "name": name, "value": record }),
        )
        .await
}

/// Applies a plan. `progress` is told about every step.
pub async fn apply(
    client: &Client,
    plan: &Plan,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<ApplyReport, ApplyError> {
    check_gates(plan, options)?;
    let holder = state::holder_name();
    let mut record = read_record(client, &plan.spec).await?.unwrap_or(Record {
        format: 1,
        spec: plan.spec.clone(),
        ..Record::default()
    });
    if let Some(lock) = record.held_by_other(&holder) {
        return Err(ApplyError::Locked {
            spec: plan.spec.clone(),
            holder: lock.holder.clone(),
            since: lock.acquired_at,
            expires: lock.expires_at,
        });
    }
    if record.serial != plan.serial {
        return Err(ApplyError::Stale(format!(
            "spec `{}` was applied since: serial {} is now {}",
            plan.spec, plan.serial, record.serial
        )));
    }
    let now = state::now();
    record.lock = Some(Lock {
        holder: holder.clone(),
        acquired_at: now,
        expires_at: now + LOCK_LIFETIME_SECS,
    });
    write_record(client, &record).await?;
    // The management API has no compare-and-set: read back to see who won.
    let confirmed = read_record(client, &plan.spec).await?;
    if let Some(lock) = confirmed.as_ref().and_then(|r| r.held_by_other(&holder)) {
        return Err(ApplyError::Locked {
            spec: plan.spec.clone(),
            holder: lock.holder.clone(),
            since: lock.acquired_at,
            expires: lock.expires_at,
        });
    }
    let outcome = apply_locked(client, plan, progress).await;
    // Whatever happened, record what is now managed and release the lock.
    let mut managed = record.object_ids();
    match &outcome {
        Ok(_) => managed = plan.managed.iter().cloned().collect(),
        Err(ApplyError::Broker { .. }) => managed.extend(plan.managed.iter().cloned()),
        Err(_) => {}
    }
    let changed_anything = !matches!(outcome, Err(ApplyError::Stale(_)));
    if changed_anything {
        record.serial += 1;
        record.applied_at = state::now();
    }
    record.set_objects(&managed);
    record.lock = None;
    write_record(client, &record).await?;
    outcome
}

async fn apply_locked(
    client: &Client,
    plan: &Plan,
    progress: &mut dyn FnMut(&str),
) -> Result<ApplyReport, ApplyError> {
    let mut live = client.read_live(&plan.vhosts).await?;
    live.definitions.global_parameters = client.global_parameters().await?;
    let now = fingerprint(
        &live_objects(&live.definitions, &plan.vhosts),
        &plan.relevant_ids(),
        plan.serial,
    );
    if now != plan.live_fingerprint {
        return Err(ApplyError::Stale(
            "objects in its vhosts were changed".into(),
        ));
    }
    let mut report = ApplyReport::default();
    let phases = phases(plan);
    let total: usize = phases.iter().map(|p| p.changes.len()).sum();
    let mut remaining: Vec<String> = phases
        .iter()
        .flat_map(|p| p.changes.iter().map(|c| describe(c)))
        .collect();
    for phase in &phases {
        if phase.changes.is_empty() {
            continue;
        }
        let result = match phase.kind {
            PhaseKind::Import => import(client, &phase.changes).await,
            PhaseKind::OneByOne => one_by_one(client, &phase.changes).await,
        };
        match result {
            Ok(()) => {
                for change in &phase.changes {
                    let text = describe(change);
                    remaining.retain(|r| r != &text);
                    report.done.push(text);
                }
                progress(&format!("{}/{total} {}", report.done.len(), phase.name));
            }
            Err(error) => {
                report.not_done = remaining;
                return Err(ApplyError::Broker {
                    error,
                    report: Box::new(report),
                });
            }
        }
    }
    Ok(report)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PhaseKind {
    Import,
    OneByOne,
}

struct Phase<'a> {
    name: &'static str,
    kind: PhaseKind,
    changes: Vec<&'a Change>,
}

/// Replaced objects are deleted first, then everything new is imported in one go
/// (the import orders kinds itself), then updates, then deletes from the leaves up.
fn phases(plan: &Plan) -> Vec<Phase<'_>> {
    let of = |action: Action, kinds: &[ObjectKind]| -> Vec<&Change> {
        plan.changes
            .iter()
            .filter(|c| c.action == action && kinds.contains(&c.id.kind))
            .collect()
    };
    use ObjectKind::*;
    // A replace first removes the old object (queues before exchanges), then the
    // import below creates the new one.
    let mut removals_of_replaced: Vec<&Change> = of(Action::Replace, &[Queue, Exchange]);
    removals_of_replaced.sort_by_key(|c| c.id.kind != Queue);
    let creates: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| matches!(c.action, Action::Create | Action::Replace))
        .collect();
    let delete_order = [
        GlobalParameter,
        Parameter,
        Policy,
        OperatorPolicy,
        Binding,
        Queue,
        Exchange,
        TopicPermission,
        Permission,
        VhostLimits,
        User,
        Vhost,
    ];
    let mut deletes: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| c.action == Action::Delete)
        .collect();
    deletes.sort_by_key(|c| delete_order.iter().position(|k| *k == c.id.kind));
    vec![
        Phase {
            name: "replaced objects removed",
            kind: PhaseKind::OneByOne,
            changes: removals_of_replaced,
        },
        Phase {
            name: "objects created",
            kind: PhaseKind::Import,
            changes: creates,
        },
        Phase {
            name: "objects updated",
            kind: PhaseKind::OneByOne,
            changes: of(
                Action::Update,
                &[
                    Vhost,
                    User,
                    Permission,
                    TopicPermission,
                    VhostLimits,
                    Policy,
                    OperatorPolicy,
                    GlobalParameter,
                    Parameter,
                ],
            ),
        },
        Phase {
            name: "objects deleted",
            kind: PhaseKind::OneByOne,
            changes: deletes,
        },
    ]
}

/// The definitions-format entry of an object, and the section it goes in.
pub fn definition_entry(id: &ObjectId, value: &Value) -> (&'static str, Value) {
    let vhost = id.vhost.clone().unwrap_or_default();
    if id.kind == ObjectKind::GlobalParameter {
        return (
            "global_parameters",
            json!({"name": id.name, "value": value}),
        );
    }
    if id.kind == ObjectKind::Parameter {
        let (component, name) = id.name.split_once('/').unwrap_or(("", &id.name));
        return (
            "parameters",
            json!({"vhost": vhost, "component": component, "name": name, "value": value}),
        );
    }
    let mut entry = value.clone();
    let object = entry.as_object_mut().expect("objects are JSON objects");
    match id.kind {
        ObjectKind::Vhost => {
            // Some versions read the import's metadata map, others the top-level fields.
            let metadata = Value::Object(object.clone());
            object.insert("name".into(), json!(id.name));
            object.insert("metadata".into(), metadata);
            ("vhosts", entry)
        }
        ObjectKind::User => {
            object.insert("name".into(), json!(id.name));
            ("users", entry)
        }
        ObjectKind::Permission => {
            object.insert("vhost".into(), json!(vhost));
            ("permissions", entry)
        }
        ObjectKind::TopicPermission => {
            object.insert("vhost".into(), json!(vhost));
            ("topic_permissions", entry)
        }
        ObjectKind::VhostLimits => (
            "parameters",
            json!({"vhost": vhost, "component": "vhost-limits", "name": "limits", "value": value}),
        ),
        ObjectKind::OperatorPolicy => (
            "parameters",
            json!({"vhost": vhost, "component": "operator_policy", "name": id.name, "value": value}),
        ),
        ObjectKind::Policy => {
            object.insert("vhost".into(), json!(vhost));
            object.insert("name".into(), json!(id.name));
            ("policies", entry)
        }
        ObjectKind::Queue => {
            object.insert("vhost".into(), json!(vhost));
            object.insert("name".into(), json!(id.name));
            ("queues", entry)
        }
        ObjectKind::Exchange => {
            object.insert("vhost".into(), json!(vhost));
            object.insert("name".into(), json!(id.name));
            ("exchanges", entry)
        }
        ObjectKind::Binding => {
            object.insert("vhost".into(), json!(vhost));
            ("bindings", entry)
        }
        ObjectKind::GlobalParameter | ObjectKind::Parameter => unreachable!("handled above"),
    }
}

/// Creates objects through the definitions import, in chunks under the body limit.
async fn import(client: &Client, changes: &[&Change]) -> Result<(), BrokerError> {
    const SECTIONS: [&str; 10] = [
        "global_parameters",
        "users",
        "vhosts",
        "permissions",
        "topic_permissions",
        "parameters",
        "policies",
        "exchanges",
        "queues",
        "bindings",
    ];
    let mut entries: Vec<(usize, Value)> = changes
        .iter()
        .filter_map(|c| c.after.as_ref().map(|after| definition_entry(&c.id, after)))
        .map(|(section, entry)| {
            (
                SECTIONS.iter().position(|s| *s == section).unwrap_or(0),
                entry,
            )
        })
        .collect();
    // Dependencies first: a chunk never needs an object of a later chunk.
    entries.sort_by_key(|(section, _)| *section);
    let mut chunk: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let mut size = 0;
    for (section, entry) in entries {
        let entry_size = entry.to_string().len();
        if size + entry_size > IMPORT_CHUNK_BYTES && size > 0 {
            post_chunk(client, std::mem::take(&mut chunk)).await?;
            size = 0;
        }
        size += entry_size;
        chunk.entry(SECTIONS[section]).or_default().push(entry);
    }
    if size > 0 {
        post_chunk(client, chunk).await?;
    }
    Ok(())
}

async fn post_chunk(client: &Client, chunk: BTreeMap<&str, Vec<Value>>) -> Result<(), BrokerError> {
    let body: serde_json::Map<String, Value> = chunk
        .into_iter()
        .map(|(section, entries)| (section.to_string(), Value::Array(entries)))
        .collect();
    client.post("/api/definitions", &Value::Object(body)).await
}

/// Updates and deletes, a bounded number at a time, stopping at the first error.
async fn one_by_one(client: &Client, changes: &[&Change]) -> Result<(), BrokerError> {
    let requests = changes
        .iter()
        .flat_map(|c| requests_for(c))
        .collect::<Vec<_>>();
    let results =
        crate::broker::live_join_all(requests.into_iter().map(|(method, path, body)| async move {
            match method {
                "PUT" => client.put(&path, &body.unwrap_or(Value::Null)).await,
                _ => client.delete(&path).await,
            }
        }))
        .await;
    results.into_iter().collect()
}

/// The HTTP requests that carry out one update or delete (or a replace's removal).
fn requests_for(change: &Change) -> Vec<(&'static str, String, Option<Value>)> {
    let v = segment(change.id.vhost.as_deref().unwrap_or_default());
    let n = segment(&change.id.name);
    let removing = matches!(change.action, Action::Delete | Action::Replace);
    let after = change.after.clone().unwrap_or(Value::Null);
    match change.id.kind {
        ObjectKind::Queue => vec![("DELETE", format!("/api/queues/{v}/{n}"), None)],
        ObjectKind::Exchange => vec![("DELETE", format!("/api/exchanges/{v}/{n}"), None)],
        ObjectKind::Binding => {
            let before = change.before.clone().unwrap_or(Value::Null);
            let destination_kind = if before["destination_type"] == "exchange" {
                "e"
            } else {
                "q"
            };
            let handle = change.handle.clone().unwrap_or_else(|| "~".into());
            vec![(
                "DELETE",
                format!(
                    "/api/bindings/{v}/e/{}/{destination_kind}/{}/{}",
                    segment(before["source"].as_str().unwrap_or_default()),
                    segment(before["destination"].as_str().unwrap_or_default()),
                    segment(&handle)
                ),
                None,
            )]
        }
        ObjectKind::Policy if removing => vec![("DELETE", format!("/api/policies/{v}/{n}"), None)],
        ObjectKind::Policy => vec![("PUT", format!("/api/policies/{v}/{n}"), Some(after))],
        ObjectKind::OperatorPolicy if removing => {
            vec![("DELETE", format!("/api/operator-policies/{v}/{n}"), None)]
        }
        ObjectKind::OperatorPolicy => vec![(
            "PUT",
            format!("/api/operator-policies/{v}/{n}"),
            Some(after),
        )],
        ObjectKind::Permission => {
            let user = segment(&change.id.name);
            if removing {
                vec![("DELETE", format!("/api/permissions/{v}/{user}"), None)]
            } else {
                vec![("PUT", format!("/api/permissions/{v}/{user}"), Some(after))]
            }
        }
        ObjectKind::TopicPermission => {
            let value = if removing {
                change.before.clone()
            } else {
                change.after.clone()
            }
            .unwrap_or(Value::Null);
            let user = segment(value["user"].as_str().unwrap_or_default());
            if removing {
                vec![("DELETE", format!("/api/topic-permissions/{v}/{user}"), None)]
            } else {
                vec![(
                    "PUT",
                    format!("/api/topic-permissions/{v}/{user}"),
                    Some(after),
                )]
            }
        }
        ObjectKind::User => {
            if removing {
                vec![("DELETE", format!("/api/users/{n}"), None)]
            } else {
                let body = json!({
                    "password_hash": after["password_hash"],
                    "hashing_algorithm": after["hashing_algorithm"],
                    "tags": tags_text(&after["tags"]),
                });
                let mut requests = vec![("PUT", format!("/api/users/{n}"), Some(body))];
                requests.extend(limit_requests(
                    &format!("/api/user-limits/{n}"),
                    change.before.as_ref().map(|b| &b["limits"]),
                    &after["limits"],
                ));
                requests
            }
        }
        ObjectKind::Vhost => {
            if removing {
                vec![("DELETE", format!("/api/vhosts/{n}"), None)]
            } else {
                let mut body = after;
                body["tags"] = json!(tags_text(&body["tags"]));
                vec![("PUT", format!("/api/vhosts/{n}"), Some(body))]
            }
        }
        ObjectKind::Parameter => {
            let (component, name) = change
                .id
                .name
                .split_once('/')
                .unwrap_or(("", &change.id.name));
            let path = format!(
                "/api/parameters/{}/{v}/{}",
                segment(component),
                segment(name)
            );
            if removing {
                vec![("DELETE", path, None)]
            } else {
                vec![("PUT", path, Some(json!({"value": after})))]
            }
        }
        ObjectKind::GlobalParameter => {
            if removing {
                vec![("DELETE", format!("/api/global-parameters/{n}"), None)]
            } else {
                vec![(
                    "PUT",
                    format!("/api/global-parameters/{n}"),
                    Some(json!({"name": change.id.name, "value": after})),
                )]
            }
        }
        ObjectKind::VhostLimits => {
            let before = change.before.clone().unwrap_or(json!({}));
            let mut requests = Vec::new();
            if let Some(map) = before.as_object() {
                for key in map.keys() {
                    if removing || after.get(key).is_none() {
                        requests.push((
                            "DELETE",
                            format!("/api/vhost-limits/{v}/{}", segment(key)),
                            None,
                        ));
                    }
                }
            }
            if !removing && let Some(map) = after.as_object() {
                for (key, value) in map {
                    requests.push((
                        "PUT",
                        format!("/api/vhost-limits/{v}/{}", segment(key)),
                        Some(json!({ "value": value })),
                    ));
                }
            }
            requests
        }
    }
}

/// PUTs for the limits in `after`, DELETEs for those only in `before`.
fn limit_requests(
    base: &str,
    before: Option<&Value>,
    after: &Value,
) -> Vec<(&'static str, String, Option<Value>)> {
    let mut requests = Vec::new();
    if let Some(Value::Object(map)) = before {
        for key in map.keys() {
            if after.get(key).is_none() {
                requests.push(("DELETE", format!("{base}/{}", segment(key)), None));
            }
        }
    }
    if let Value::Object(map) = after {
        for (key, value) in map {
            if before.and_then(|b| b.get(key)) != Some(value) {
                requests.push((
                    "PUT",
                    format!("{base}/{}", segment(key)),
                    Some(json!({ "value": value })),
                ));
            }
        }
    }
    requests
}

fn tags_text(tags: &Value) -> String {
    tags.as_array()
        .map(|list| {
            list.iter()
                .filter_map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}
