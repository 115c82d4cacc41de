//! Writing objects: the definitions import for creates, and one request per update or
//! delete. Callers say *what* to write, as object ids and normal-form values
//! ([`crate::model::objects`]); this module owns *how*: every write path of the
//! management API.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::{BrokerError, Client, GuardedQueue, segment};
use crate::model::objects::{SECTIONS, definition_entry};
use crate::model::{ObjectId, ObjectKind, QueueType};

/// Largest body sent in one definitions import (the broker refuses large bodies).
pub const IMPORT_CHUNK_BYTES: usize = 2 * 1024 * 1024;

/// How many definitions imports the creates of one apply are split into, at most
/// (fewer when each would hold under [`IMPORT_CHUNK_MIN_OBJECTS`]). An apply stops on a
/// signal only between two imports, and its progress moves only when one is answered,
/// so an import should take seconds, not the half minute a 2 MB body of 11,000 queues
/// takes. But each import also costs the broker time that grows with the objects the
/// vhost already holds (at 50,000 queues, imports of 1,000 objects made the apply 1.6
/// times as long as imports of 2 MB): twenty keeps that cost within a few imports' worth.
pub const IMPORT_CHUNKS: usize = 20;

/// The fewest objects an import holds when there are more to make: below this, an
/// import's own cost shows (at 11,000 objects, imports of 1,000 cost nothing measurable
/// against imports of 2 MB).
pub const IMPORT_CHUNK_MIN_OBJECTS: usize = 1_000;

/// How many objects each import of `total` creates holds, at most (the body limit may
/// cut a chunk shorter).
pub fn import_chunk_objects(total: usize) -> usize {
    total.div_ceil(IMPORT_CHUNKS).max(IMPORT_CHUNK_MIN_OBJECTS)
}

/// How much longer than `--timeout` warren waits for a definitions import, per object it
/// holds. The broker answers an import only once every object in it is made: 2 MB of
/// queues is about 11,000 of them, which took a loaded 3.10 node on 2 CPUs over 60 s
/// (the default `--timeout`), and a quorum queue costs several times a classic one.
pub const IMPORT_WAIT_PER_OBJECT: Duration = Duration::from_millis(20);

/// How far an import has come: a part of it was sent (the broker answers for a part
/// only once it has made all of it, which takes seconds for thousands of objects),
/// or the broker answered for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportStep {
    /// A part of this many objects was sent, and its answer is awaited.
    Sent(usize),
    /// The broker answered for a part of this many objects.
    Answered(usize),
}

/// When a run of writes ([`Client::import_objects`], [`Client::write_objects`]) may
/// end before its last write: a stop asked for (a signal) is heard before each import
/// chunk, and before each write's first request; a write already started is sent
/// whole, and requests in flight are answered. What was not sent is
/// [`WriteOutcome::NotSent`].
#[derive(Clone, Copy)]
pub struct WriteStop<'s> {
    /// Whether a stop is asked for.
    pub asked: &'s dyn Fn() -> bool,
    /// For an import: the objects (by the caller's index) that must be made before it
    /// may stop (the new versions of replaced objects, and the bindings into them: a
    /// replace is never left deleted and not declared again).
    pub not_before: &'s dyn Fn(usize) -> bool,
}

fn never() -> bool {
    false
}

fn none(_: usize) -> bool {
    false
}

impl WriteStop<'static> {
    /// Runs to the end, whatever is asked.
    pub const NEVER: WriteStop<'static> = WriteStop {
        asked: &never,
        not_before: &none,
    };
}

/// One object to update in place or remove.
#[derive(Debug, Clone, Copy)]
pub struct ObjectWrite<'a> {
    /// The object.
    pub id: &'a ObjectId,
    /// Its live value (normal form), when it exists.
    pub before: Option<&'a Value>,
    /// Its desired value (normal form); `None` removes the object.
    pub after: Option<&'a Value>,
    /// The broker's handle needed to delete it (a binding's `properties_key`).
    pub handle: Option<&'a str>,
    /// For a queue removal: delete it only if the broker finds it empty and unused
    /// at that moment (see `broker::guard`).
    pub if_empty: bool,
}

/// How many times an import the broker refused for a queue or exchange that the same
/// import declares is sent again (see [`missing_in_same_import`]).
const MISSING_IN_SAME_IMPORT_RETRIES: usize = 2;

/// The pause before such an import is sent again.
const MISSING_IN_SAME_IMPORT_PAUSE: Duration = Duration::from_secs(1);

/// Whether the broker refused an import (`400 {resources_missing, [{not_found, …}]}`,
/// RabbitMQ 4.x) only for queues and exchanges that the import itself declares. A
/// loaded 4.3.6 node once refused a new vhost's import so, after 14 s, for the quorum
/// queue a binding of the same import pointed at: the queue was still being started
/// when the binding was added. An import is idempotent (what it made stays as it is),
/// so sending it again makes what is left; a resource the import does not declare is
/// a real refusal, never retried.
fn missing_in_same_import(error: &BrokerError, body: &Value) -> bool {
    let BrokerError::Api {
        status: 400,
        reason,
        ..
    } = error
    else {
        return false;
    };
    let reason = reason.as_str();
    if !reason.contains("resources_missing") {
        return false;
    }
    let declared = |section: &str, vhost: &str, name: &str| {
        body[section].as_array().is_some_and(|entries| {
            entries
                .iter()
                .any(|e| e["vhost"] == vhost && e["name"] == name)
        })
    };
    let mut named = 0;
    for resource in reason.split("{resource,").skip(1) {
        // <<"VHOST">>,queue,<<"NAME">>}
        let mut parts = resource.splitn(3, ',');
        let (Some(vhost), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let quoted = |text: &str| {
            let text = text.trim().strip_prefix("<<\"")?;
            Some(text[..text.find("\">>")?].to_string())
        };
        let (Some(vhost), Some(name)) = (quoted(vhost), quoted(name)) else {
            return false;
        };
        let section = match kind.trim() {
            "queue" => "queues",
            "exchange" => "exchanges",
            _ => return false,
        };
        if !declared(section, &vhost, &name) {
            return false;
        }
        named += 1;
    }
    named > 0
}

/// One definitions import body, by section.
type Chunk<'a> = BTreeMap<&'a str, Vec<Value>>;

/// One HTTP request: method, path and body.
type Request = (&'static str, String, Option<Value>);

/// What became of one object handed to [`Client::import_objects`] or
/// [`Client::write_objects`].
#[derive(Debug, Clone)]
pub enum WriteOutcome {
    /// The broker confirmed it.
    Done,
    /// Not made: the broker answered with a refusal, or the write was never sent
    /// because the locks were lost ([`BrokerError::LocksLost`]).
    Refused(BrokerError),
    /// Sent, but the broker did not confirm it (it stopped answering, or an import
    /// chunk failed part way): it may or may not have been made.
    Unconfirmed(BrokerError),
    /// Not sent, because an earlier request failed.
    NotSent,
}

impl WriteOutcome {
    /// The outcome of one request that failed.
    fn failed(error: BrokerError) -> WriteOutcome {
        match error {
            BrokerError::Unreachable { .. }
            | BrokerError::TimedOut { .. }
            | BrokerError::AmqpUnanswered { .. }
            | BrokerError::LocksLost { sent: true, .. } => WriteOutcome::Unconfirmed(error),
            error => WriteOutcome::Refused(error),
        }
    }
}

impl WriteOutcome {
    /// Whether the broker confirmed it.
    pub fn is_done(&self) -> bool {
        matches!(self, WriteOutcome::Done)
    }
}

/// Splits definitions entries `(section, caller's index, entry)`, sorted by section
/// (dependencies first), into import bodies of at most [`IMPORT_CHUNK_BYTES`] and
/// `max_objects` entries (an entry larger than the limit still gets a body of its
/// own), keeping their order; each body comes with the callers' indexes of its entries.
fn import_chunks(
    entries: Vec<(usize, usize, Value)>,
    max_objects: usize,
) -> Vec<(Chunk<'static>, Vec<usize>)> {
    let mut chunks: Vec<(Chunk, Vec<usize>)> = vec![Default::default()];
    let mut size = 0;
    for (section, index, entry) in entries {
        let entry_size = entry.to_string().len();
        let held = chunks.last().map_or(0, |(_, members)| members.len());
        if (size + entry_size > IMPORT_CHUNK_BYTES || held >= max_objects) && size > 0 {
            chunks.push(Default::default());
            size = 0;
        }
        size += entry_size;
        let (chunk, members) = chunks.last_mut().expect("one chunk at least");
        chunk.entry(SECTIONS[section]).or_default().push(entry);
        members.push(index);
    }
    chunks
}

/// The first chunk before which an import may stop: the one after the last chunk
/// holding an object that must be made first (`not_before`, by the caller's index).
fn first_stoppable(
    chunks: &[(Chunk<'_>, Vec<usize>)],
    not_before: &dyn Fn(usize) -> bool,
) -> usize {
    chunks
        .iter()
        .rposition(|(_, members)| members.iter().any(|i| not_before(*i)))
        .map_or(0, |last| last + 1)
}

impl Client {
    /// Creates objects through the definitions import (`POST /api/definitions`), in
    /// chunks under the broker's body limit and of at most [`import_chunk_objects`]
    /// objects, dependencies first: a chunk never needs an object of a later chunk.
    /// Stops at the first chunk that fails, or before a chunk when `stop` asks for it
    /// (once its `not_before` objects are made). The outcome of each object, in the
    /// order given; `answered` is told how many objects each chunk held once the broker
    /// has answered for it.
    pub async fn import_objects<'a>(
        &self,
        objects: impl IntoIterator<Item = (&'a ObjectId, &'a Value)>,
        stop: WriteStop<'_>,
        step: &mut dyn FnMut(ImportStep),
    ) -> Vec<WriteOutcome> {
        let mut entries: Vec<(usize, usize, Value)> = objects
            .into_iter()
            .map(|(id, value)| definition_entry(id, value))
            .enumerate()
            .map(|(index, (section, entry))| {
                (
                    SECTIONS.iter().position(|s| *s == section).unwrap_or(0),
                    index,
                    entry,
                )
            })
            .collect();
        let mut outcomes = vec![WriteOutcome::NotSent; entries.len()];
        entries.sort_by_key(|(section, _, _)| *section);
        let chunks = import_chunks(entries, import_chunk_objects(outcomes.len()));
        let first_stoppable = first_stoppable(&chunks, stop.not_before);
        for (number, (chunk, members)) in chunks.into_iter().enumerate() {
            if members.is_empty() {
                continue;
            }
            if number >= first_stoppable && (stop.asked)() {
                break;
            }
            step(ImportStep::Sent(members.len()));
            let result = self.post_definitions(chunk).await;
            let failed = result.is_err();
            // The broker imports a chunk object by object: a failed chunk may be
            // partly made.
            let outcome = match result {
                Ok(()) => WriteOutcome::Done,
                // Never sent: the locks were lost before it left.
                Err(error @ BrokerError::LocksLost { sent: false, .. }) => {
                    WriteOutcome::Refused(error)
                }
                Err(error) => WriteOutcome::Unconfirmed(error),
            };
            step(ImportStep::Answered(members.len()));
            for index in members {
                outcomes[index] = outcome.clone();
            }
            if failed {
                break;
            }
        }
        outcomes
    }

    async fn post_definitions(&self, chunk: Chunk<'_>) -> Result<(), BrokerError> {
        let objects: usize = chunk.values().map(Vec::len).sum();
        let body: serde_json::Map<String, Value> = chunk
            .into_iter()
            .map(|(section, entries)| (section.to_string(), Value::Array(entries)))
            .collect();
        let wait = self.endpoint.timeout + IMPORT_WAIT_PER_OBJECT * objects as u32;
        let body = Value::Object(body);
        let mut tries = 0;
        loop {
            match self.post_within("/api/definitions", &body, wait).await {
                Err(error)
                    if tries < MISSING_IN_SAME_IMPORT_RETRIES
                        && missing_in_same_import(&error, &body) =>
                {
                    tries += 1;
                    tokio::time::sleep(MISSING_IN_SAME_IMPORT_PAUSE).await;
                }
                answered => return answered,
            }
        }
    }

    /// Updates and removes objects, a bounded number of requests at a time; queue
    /// removals marked `if_empty` go last, one by one, through the broker's emptiness
    /// check ([`Client::delete_queues_if_empty`]), once everything else (bindings
    /// into them, in particular) is done. A stop `stop` asks for is heard before each
    /// write's first request (see [`WriteStop`]). The outcome of each write, in order;
    /// `answered` is told of each write the broker has answered for (all its requests).
    pub async fn write_objects(
        &self,
        writes: &[ObjectWrite<'_>],
        stop: WriteStop<'_>,
        answered: &mut dyn FnMut(usize),
    ) -> Vec<WriteOutcome> {
        let guarded =
            |w: &ObjectWrite| w.if_empty && w.id.kind == ObjectKind::Queue && w.after.is_none();
        let plain: Vec<usize> = (0..writes.len())
            .filter(|i| !guarded(&writes[*i]))
            .collect();
        let requests: Vec<(usize, Request)> = plain
            .iter()
            .flat_map(|&index| {
                requests_for(&writes[index])
                    .into_iter()
                    .map(move |r| (index, r))
            })
            .collect();
        // Requests left per write: a write is answered with its last request.
        let mut left = vec![0usize; writes.len()];
        for (index, _) in &requests {
            left[*index] += 1;
        }
        // A write that takes no request is answered at once.
        answered(plain.iter().filter(|index| left[**index] == 0).count());
        // Whether each write was started (`Some(true)`) or left out on a stop: decided
        // at its first request, so that a write is sent whole or not at all.
        let started: Vec<Cell<Option<bool>>> = vec![Cell::new(None); writes.len()];
        let results = super::live::futures_join_all_counted(
            requests.into_iter().map(|(index, (method, path, body))| {
                let started = &started[index];
                async move {
                    if started.get().is_none() {
                        started.set(Some(!(stop.asked)()));
                    }
                    if started.get() == Some(false) {
                        return (index, None);
                    }
                    let result = match method {
                        "PUT" => self.put(&path, &body.unwrap_or(Value::Null)).await,
                        _ => self.delete(&path).await,
                    };
                    (index, Some(result))
                }
            }),
            &mut |(index, result)| {
                left[*index] -= 1;
                if left[*index] == 0 && result.is_some() {
                    answered(1);
                }
            },
        )
        .await;
        let mut outcomes = vec![WriteOutcome::Done; writes.len()];
        let mut any_failed = false;
        for (index, result) in results {
            match result {
                None => outcomes[index] = WriteOutcome::NotSent,
                Some(Err(error)) => {
                    any_failed = true;
                    if outcomes[index].is_done() {
                        outcomes[index] = WriteOutcome::failed(error);
                    }
                }
                Some(Ok(())) => {}
            }
        }
        let queues: Vec<(usize, GuardedQueue)> = (0..writes.len())
            .filter(|i| guarded(&writes[*i]))
            .map(|index| {
                let write = &writes[index];
                let queue_type = write
                    .before
                    .and_then(|b| b["arguments"]["x-queue-type"].as_str())
                    .map_or(QueueType::Classic, QueueType::from_name);
                (
                    index,
                    GuardedQueue {
                        vhost: write.id.vhost.as_deref().unwrap_or_default(),
                        name: &write.id.name,
                        queue_type,
                    },
                )
            })
            .collect();
        if any_failed {
            for (index, _) in &queues {
                outcomes[*index] = WriteOutcome::NotSent;
            }
            return outcomes;
        }
        let checked: Vec<GuardedQueue> = queues.iter().map(|(_, q)| *q).collect();
        let deleted = self
            .delete_queues_if_empty(&checked, stop.asked, answered)
            .await;
        for ((index, _), result) in queues.iter().zip(deleted) {
            outcomes[*index] = match result {
                None => WriteOutcome::NotSent,
                Some(Ok(())) => WriteOutcome::Done,
                Some(Err(error)) => WriteOutcome::failed(error),
            };
        }
        outcomes
    }
}

/// The HTTP requests that carry out one write.
#[expect(
    clippy::too_many_lines,
    reason = "one arm per object kind: the request each kind's write becomes reads best as one table"
)]
fn requests_for(change: &ObjectWrite<'_>) -> Vec<Request> {
    let v = segment(change.id.vhost.as_deref().unwrap_or_default());
    let n = segment(&change.id.name);
    let removing = change.after.is_none();
    let after = change.after.cloned().unwrap_or(Value::Null);
    match change.id.kind {
        ObjectKind::Queue => vec![("DELETE", format!("/api/queues/{v}/{n}"), None)],
        ObjectKind::Exchange => vec![("DELETE", format!("/api/exchanges/{v}/{n}"), None)],
        ObjectKind::Binding => {
            let before = change.before.cloned().unwrap_or(Value::Null);
            let destination_kind = if before["destination_type"] == "exchange" {
                "e"
            } else {
                "q"
            };
            let handle = change.handle.unwrap_or("~");
            vec![(
                "DELETE",
                format!(
                    "/api/bindings/{v}/e/{}/{destination_kind}/{}/{}",
                    segment(before["source"].as_str().unwrap_or_default()),
                    segment(before["destination"].as_str().unwrap_or_default()),
                    segment(handle)
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
                change.before.cloned()
            } else {
                change.after.cloned()
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
                    change.before.map(|b| &b["limits"]),
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
            let before = change.before.cloned().unwrap_or(json!({}));
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
fn limit_requests(base: &str, before: Option<&Value>, after: &Value) -> Vec<Request> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::error::RedactedText;

    /// A request sent whose answer never came is "may have been made"; a refusal the
    /// broker answered is "not made".
    #[test]
    fn an_unanswered_request_is_unconfirmed_and_an_answered_refusal_is_not_made() {
        let unanswered = BrokerError::AmqpUnanswered {
            what: "queue.delete \"q\" in vhost \"v\"".into(),
            reason: RedactedText::new("IO error: connection reset by peer"),
        };
        assert!(matches!(
            WriteOutcome::failed(unanswered),
            WriteOutcome::Unconfirmed(_)
        ));
        let refused = BrokerError::Refused {
            vhost: "v".into(),
            queue: "q".into(),
            reason: RedactedText::new("the broker counts 1 ready message in it"),
        };
        assert!(matches!(
            WriteOutcome::failed(refused),
            WriteOutcome::Refused(_)
        ));
    }

    /// A 4.x import refused for a queue or exchange the import itself declares is sent
    /// again; any other refusal is final.
    #[test]
    fn an_import_is_sent_again_only_for_what_it_declares_itself() {
        let body = serde_json::json!({
            "queues": [{"vhost": "orders", "name": "orders.work"}],
            "exchanges": [{"vhost": "orders", "name": "orders"}],
        });
        let refused = |reason: &str| BrokerError::Api {
            method: "POST".into(),
            path: "/api/definitions".into(),
            status: 400,
            reason: RedactedText::new(reason),
        };
        let own = refused(
            "{resources_missing,\n [{not_found,{resource,<<\"orders\">>,queue,<<\"orders.work\">>}}]}",
        );
        assert!(missing_in_same_import(&own, &body));
        let both = refused(
            "{resources_missing, [{not_found,{resource,<<\"orders\">>,exchange,<<\"orders\">>}},{not_found,{resource,<<\"orders\">>,queue,<<\"orders.work\">>}}]}",
        );
        assert!(missing_in_same_import(&both, &body));
        // A queue the import does not declare, another vhost, another refusal: final.
        let other = refused(
            "{resources_missing, [{not_found,{resource,<<\"orders\">>,queue,<<\"audit\">>}}]}",
        );
        assert!(!missing_in_same_import(&other, &body));
        let elsewhere = refused(
            "{resources_missing, [{not_found,{resource,<<\"shop\">>,queue,<<\"orders.work\">>}}]}",
        );
        assert!(!missing_in_same_import(&elsewhere, &body));
        assert!(!missing_in_same_import(&refused("inequivalent_arg"), &body));
    }

    #[test]
    fn import_chunks_hold_at_most_2_mb_in_order() {
        let queues = SECTIONS.iter().position(|s| *s == "queues").unwrap();
        let bindings = SECTIONS.iter().position(|s| *s == "bindings").unwrap();
        // 40 entries of 100 KB: bodies of at most 2 MB, dependencies first, in order.
        let big = "x".repeat(100 * 1024);
        let entries: Vec<(usize, usize, Value)> = (0..40)
            .map(|i| {
                let section = if i < 30 { queues } else { bindings };
                (section, i, json!({"name": big}))
            })
            .collect();
        let chunks = import_chunks(entries, usize::MAX);
        assert!(chunks.len() > 1);
        for (chunk, _) in &chunks {
            let body: serde_json::Map<String, Value> = chunk
                .iter()
                .map(|(section, entries)| (section.to_string(), Value::from(entries.clone())))
                .collect();
            assert!(Value::Object(body).to_string().len() <= IMPORT_CHUNK_BYTES);
        }
        let order: Vec<usize> = chunks.iter().flat_map(|(_, m)| m.clone()).collect();
        assert_eq!(order, (0..40).collect::<Vec<_>>());
        // One body ends the queues and starts the bindings.
        assert!(
            chunks
                .iter()
                .any(|(c, _)| c.contains_key("queues") && c.contains_key("bindings"))
        );
    }

    #[test]
    fn imports_hold_a_twentieth_of_the_creates_and_never_under_a_thousand() {
        assert_eq!(import_chunk_objects(500), 1_000);
        assert_eq!(import_chunk_objects(11_100), 1_000);
        assert_eq!(import_chunk_objects(22_204), 1_111);
        assert_eq!(import_chunk_objects(110_998), 5_550);
        let queues = SECTIONS.iter().position(|s| *s == "queues").unwrap();
        let entries: Vec<(usize, usize, Value)> = (0..2_500)
            .map(|i| (queues, i, json!({"name": format!("q{i}")})))
            .collect();
        let sizes: Vec<usize> = import_chunks(entries, 1_000)
            .iter()
            .map(|(_, members)| members.len())
            .collect();
        assert_eq!(sizes, vec![1_000, 1_000, 500]);
    }

    #[test]
    fn an_import_stops_only_after_the_objects_a_replace_needs() {
        let queues = SECTIONS.iter().position(|s| *s == "queues").unwrap();
        let bindings = SECTIONS.iter().position(|s| *s == "bindings").unwrap();
        // 2,500 queues, then a binding into a replaced queue, given last but sent in
        // the last chunk (bindings after queues).
        let mut entries: Vec<(usize, usize, Value)> = (0..2_500)
            .map(|i| (queues, i, json!({"name": format!("q{i}")})))
            .collect();
        entries.push((bindings, 2_500, json!({"destination": "q7"})));
        let chunks = import_chunks(entries, 1_000);
        assert_eq!(first_stoppable(&chunks, &|_| false), 0, "any chunk");
        // The replaced queue itself is in the first chunk.
        assert_eq!(first_stoppable(&chunks, &|i| i == 7), 1);
        // Its binding is in the last: the import runs to its end.
        assert_eq!(
            first_stoppable(&chunks, &|i| i == 7 || i == 2_500),
            chunks.len()
        );
    }
}
