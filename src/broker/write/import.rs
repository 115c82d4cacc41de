//! The creates of an apply, through the definitions import (`POST /api/definitions`):
//! how many objects one import holds and how it is cut into bodies the broker accepts,
//! dependencies first; how long its answer may take; and the one refusal that sends an
//! import again (for a queue or exchange the import itself declares). It is its own
//! concern because an import is one request for thousands of objects, answered only
//! once all are made, where every other write is one request per object.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::{WriteOutcome, WriteStop};
use crate::broker::{BrokerError, Client};
use crate::model::ObjectId;
use crate::model::objects::{SECTIONS, definition_entry};

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
/// import's own cost shows. The same 11,104 objects (1,000 consumers) on RabbitMQ 3.10,
/// 3 interleaved rounds: imports of 1,000 took 1.12 times as long as one import of
/// all, imports of 3,000 1.01 times (bench/RESULTS.md); sending the next import while
/// the broker made the current one gained nothing. 3,000 objects take the broker about
/// 3 s on a quiet 2-core machine, so a signal is still answered within seconds.
pub const IMPORT_CHUNK_MIN_OBJECTS: usize = 3_000;

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
    /// has answered for it. An answered import is checked against the broker, and what
    /// it did not make is made again with requests of its own (`readback.rs`).
    pub async fn import_objects<'a>(
        &self,
        objects: impl IntoIterator<Item = (&'a ObjectId, &'a Value)>,
        stop: WriteStop<'_>,
        step: &mut dyn FnMut(ImportStep),
    ) -> Vec<WriteOutcome> {
        let objects: Vec<(&ObjectId, &Value)> = objects.into_iter().collect();
        let mut entries: Vec<(usize, usize, Value)> = objects
            .iter()
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
        self.make_what_the_import_dropped(&objects, &mut outcomes)
            .await;
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
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::broker::error::RedactedText;

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
    fn imports_hold_a_twentieth_of_the_creates_and_never_under_three_thousand() {
        assert_eq!(import_chunk_objects(500), 3_000);
        assert_eq!(import_chunk_objects(11_100), 3_000);
        assert_eq!(import_chunk_objects(66_620), 3_331);
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
