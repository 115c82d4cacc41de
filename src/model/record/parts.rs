//! How a record is stored: a head, the commit point, and the parts it names.
//!
//! A record lists every object its spec manages: about 630 KB per 1,000 consumers. One
//! global parameter holding all of it had a ceiling (the management API refuses a body
//! over its limit: about 8 MB on 3.10, 10,000,000 bytes on 4.3) and was rewritten whole
//! by every apply. So the list is cut into parts, each its own global parameter:
//!
//! - **Where a part ends is decided by the content**: after an entry whose hash leaves
//!   one chosen remainder out of [`AVERAGE_ENTRIES`] (or at [`MOST_ENTRIES`]). Adding or removing an
//!   object changes the part it falls in, and the parts around it keep their content.
//! - **A part holds its entries as one string**, the JSON text of the list: the broker
//!   writes and reads one string several times faster than the same entries as JSON
//!   lists (a `PUT` of 1,000 consumers' entries on 3.10: 52 ms as lists, 9 ms as
//!   strings; bench/RESULTS.md).
//! - **A part is named after its content** (`warren.<spec>@@<digest>`): a part whose
//!   entries did not change keeps its name and is not written again, and a part that
//!   was changed by hand no longer matches its name, which a read notices.
//! - **The head is written last** and names the parts in order, with the serial and
//!   the time of the apply. Parts are written under new names before it, and the parts
//!   it no longer names are deleted after it: an apply stopped anywhere in between
//!   leaves the head it found, naming parts that are all still there. Parts no head
//!   names are left over from such an apply, and the next write of that record
//!   deletes them.
//!
//! Format 1 records (one parameter listing every object) still read; every write is
//! format 2.

use std::collections::HashMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::super::{GlobalParameter, ObjectKind};
use super::Record;

/// One object of a record, as stored: `[kind, vhost, name]`.
pub type Entry = (ObjectKind, Option<String>, String);

/// What separates a record's name from a part's digest in the part's name. No record's
/// name holds it: a spec's name and an environment's hold no `@`
/// (`reserved::ENVIRONMENT_SEPARATOR`), so a record's name holds one at most.
pub const PART_INFIX: &str = "@@";

/// How many entries a part holds on average (about 60 KB of typical names): a change
/// of a few objects rewrites a few parts of this size, and 1,000 consumers' record is
/// about a dozen parts.
const AVERAGE_ENTRIES: u64 = 1024;

/// The most entries one part holds: 4,096 entries of the longest names RabbitMQ allows
/// (255 bytes for a vhost and for a name) are about 2.2 MB, well below the smallest
/// body limit of a supported line (about 8 MB on 3.10).
const MOST_ENTRIES: usize = 4096;

/// Whether `name` is a record's part (rather than a record's head).
pub fn is_part_name(name: &str) -> bool {
    name.contains(PART_INFIX)
}

/// The record (head) a part belongs to: its name up to [`PART_INFIX`].
pub fn head_of_part(name: &str) -> Option<&str> {
    name.split_once(PART_INFIX).map(|(head, _)| head)
}

/// The first 8 bytes of the SHA-256 of `bytes`, in hex.
fn short_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Whether a part ends after `entry`: decided by the entry alone, so that the same
/// entries end a part wherever they sit.
fn ends_a_part(entry: &Entry) -> bool {
    let hash = Sha256::digest(serde_json::to_vec(entry).unwrap_or_default());
    let first = u64::from_be_bytes(hash[..8].try_into().unwrap_or_default());
    first % AVERAGE_ENTRIES == AVERAGE_ENTRIES - 1
}

/// `entries` cut into parts, in order (see the module's doc).
pub fn split(entries: &[Entry]) -> Vec<&[Entry]> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (index, entry) in entries.iter().enumerate() {
        if ends_a_part(entry) || index + 1 - start == MOST_ENTRIES {
            parts.push(&entries[start..=index]);
            start = index + 1;
        }
    }
    if start < entries.len() {
        parts.push(&entries[start..]);
    }
    parts
}

/// A record as it is stored: its head's value and its parts, each with its name.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The head: format, spec, serial, time of the apply, and the parts' names.
    pub head: Value,
    /// The parts, in order: (parameter name, value).
    pub parts: Vec<(String, Value)>,
}

/// How `record` is stored. Its entries are stored by vhost and name, so that the
/// objects of one consumer (whose names share its queue's) sit in one part, and a change
/// to it rewrites that part alone.
pub fn store(record: &Record) -> Stored {
    let head_name = Record::parameter_name(&record.spec);
    let mut entries = record.objects.clone();
    entries.sort_by(|a, b| (&a.1, &a.2, a.0).cmp(&(&b.1, &b.2, b.0)));
    let parts: Vec<(String, Value)> = split(&entries)
        .into_iter()
        .map(|entries| {
            let text = serde_json::to_string(entries).unwrap_or_default();
            (
                format!("{head_name}{PART_INFIX}{}", short_digest(text.as_bytes())),
                json!({ "spec": record.spec, "objects": text }),
            )
        })
        .collect();
    let head = json!({
        "format": super::RECORD_FORMAT,
        "spec": record.spec,
        "serial": record.serial,
        "applied_at": record.applied_at,
        "parts": parts.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(),
    });
    Stored { head, parts }
}

/// A record whose parts do not all read: what is wrong, and its value with the entries
/// of the parts that do read.
#[derive(Debug, Clone, PartialEq)]
pub struct Torn {
    /// What is wrong, for [`super::DamagedRecord::reason`].
    pub reason: String,
    /// The head's value with `objects` in place of `parts`: the entries of every part
    /// found, as stored.
    pub value: Value,
}

/// The parts among `parameters`, by name.
pub fn parts_of(parameters: &[GlobalParameter]) -> HashMap<&str, &Value> {
    parameters
        .iter()
        .filter(|p| Record::is_record_name(&p.name) && is_part_name(&p.name))
        .map(|p| (p.name.as_str(), &p.value))
        .collect()
}

/// The record held by head `name` as one value, the shape format 1 stores: `objects`
/// lists every entry, in order. A format 1 record is its own value. A part that is
/// missing, does not read, or does not match its name makes the record [`Torn`].
pub fn join(name: &str, head: &Value, parts: &HashMap<&str, &Value>) -> Result<Value, Torn> {
    let Some(listed) = head.get("parts") else {
        return Ok(head.clone());
    };
    let mut joined = head.clone();
    if let Value::Object(map) = &mut joined {
        map.remove("parts");
    }
    let names: Option<Vec<&str>> = listed
        .as_array()
        .and_then(|names| names.iter().map(Value::as_str).collect());
    let Some(names) = names else {
        joined["objects"] = json!([]);
        return Err(Torn {
            reason: format!("its list of parts is not a list of names: {listed}"),
            value: joined,
        });
    };
    let mut objects: Vec<Value> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    for part in names {
        let Some(value) = parts.get(part) else {
            problems.push(format!("its part `{part}` is missing"));
            continue;
        };
        let stored = value
            .get("objects")
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok());
        objects.extend(stored.into_iter().flatten());
        if let Some(problem) = part_problem(name, part, value) {
            problems.push(problem);
        }
    }
    joined["objects"] = Value::Array(objects);
    if problems.is_empty() {
        Ok(joined)
    } else {
        Err(Torn {
            reason: problems.join("; "),
            value: joined,
        })
    }
}

/// What is wrong with part `part` of head `head` holding `value`, if anything.
fn part_problem(head: &str, part: &str, value: &Value) -> Option<String> {
    if head_of_part(part) != Some(head) {
        return Some(format!("its part `{part}` belongs to another record"));
    }
    let Some(text) = value.get("objects").and_then(Value::as_str) else {
        return Some(format!("its part `{part}` lists no objects"));
    };
    let named = part.rsplit_once(PART_INFIX).map(|(_, digest)| digest);
    if named != Some(short_digest(text.as_bytes()).as_str()) {
        return Some(format!(
            "its part `{part}` does not hold what its name says (changed since it was written)"
        ));
    }
    match serde_json::from_str::<Vec<Entry>>(text) {
        Ok(_) => None,
        Err(error) => Some(format!("its part `{part}` does not read ({error})")),
    }
}

/// The names of the parts of the record `head_name` among `parameters` that `stored`
/// does not name: left by an earlier write, to be deleted once `stored`'s head is.
pub fn left_over<'a>(
    parameters: &'a [GlobalParameter],
    head_name: &str,
    stored: &Stored,
) -> Vec<&'a str> {
    parameters
        .iter()
        .map(|p| p.name.as_str())
        .filter(|name| head_of_part(name) == Some(head_name))
        .filter(|name| !stored.parts.iter().any(|(part, _)| part == name))
        .collect()
}

/// The parts that heads among `parameters` name and `parameters` lacks.
pub fn missing_parts(parameters: &[GlobalParameter]) -> Vec<String> {
    let parts = parts_of(parameters);
    parameters
        .iter()
        .filter(|p| Record::is_head_name(&p.name))
        .filter_map(|p| p.value.get("parts").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .filter(|part| !parts.contains_key(part))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(count: usize) -> Vec<Entry> {
        (0..count)
            .map(|n| (ObjectKind::Queue, Some("v".to_string()), format!("q{n:06}")))
            .collect()
    }

    fn record(objects: Vec<Entry>) -> Record {
        Record {
            format: super::super::RECORD_FORMAT,
            spec: "shop".into(),
            serial: 4,
            objects,
            applied_at: 9,
            damage: None,
        }
    }

    fn parameters(stored: &Stored) -> Vec<GlobalParameter> {
        let mut parameters = vec![GlobalParameter {
            name: "warren.shop".into(),
            value: stored.head.clone(),
        }];
        for (name, value) in &stored.parts {
            parameters.push(GlobalParameter {
                name: name.clone(),
                value: value.clone(),
            });
        }
        parameters
    }

    #[test]
    fn parts_end_where_their_content_says_and_never_grow_past_the_most() {
        let all = entries(20_000);
        let parts = split(&all);
        assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), 20_000);
        assert!(parts.iter().all(|p| p.len() <= MOST_ENTRIES));
        // About one part per AVERAGE_ENTRIES entries.
        assert!((8..=40).contains(&parts.len()), "{} parts", parts.len());
        assert_eq!(split(&[]).len(), 0);
    }

    /// The point of the parts: a small change rewrites a few of them, not the record.
    #[test]
    fn a_change_of_a_few_objects_changes_a_few_parts() {
        let before = store(&record(entries(20_000)));
        let mut changed = entries(20_000);
        changed.remove(5_000);
        changed.insert(
            12_000,
            (ObjectKind::Exchange, Some("v".into()), "q012000x".into()),
        );
        let after = store(&record(changed));
        let new: Vec<_> = after
            .parts
            .iter()
            .filter(|(name, _)| !before.parts.iter().any(|(old, _)| old == name))
            .collect();
        assert!(
            (1..=4).contains(&new.len()),
            "{} of {} parts changed",
            new.len(),
            after.parts.len()
        );
    }

    #[test]
    fn a_stored_record_joins_back_into_what_was_stored() {
        let stored = store(&record(entries(5_000)));
        assert!(stored.parts.len() > 1);
        let parameters = parameters(&stored);
        let joined = join("warren.shop", &stored.head, &parts_of(&parameters)).unwrap();
        let read = Record::from_parameter("warren.shop", &joined).unwrap();
        assert_eq!(read, record(entries(5_000)));
        // A format 1 record is read as it is.
        let old =
            json!({"format": 1, "spec": "shop", "serial": 2, "objects": [["queue", "v", "q"]]});
        assert_eq!(join("warren.shop", &old, &HashMap::new()).unwrap(), old);
        assert!(missing_parts(&parameters).is_empty());
    }

    #[test]
    fn a_missing_or_edited_part_tears_the_record_and_says_which() {
        let stored = store(&record(entries(5_000)));
        let mut parameters = parameters(&stored);
        let gone = parameters.remove(1).name;
        let torn = join("warren.shop", &stored.head, &parts_of(&parameters)).unwrap_err();
        assert!(
            torn.reason.contains(&format!("`{gone}` is missing")),
            "{}",
            torn.reason
        );
        assert_eq!(missing_parts(&parameters), [gone]);
        // The entries of the parts that read are kept, for a repair.
        let first: Vec<Value> =
            serde_json::from_str(stored.parts[0].1["objects"].as_str().unwrap()).unwrap();
        assert_eq!(
            torn.value["objects"].as_array().unwrap().len(),
            5_000 - first.len()
        );
        let mut parameters = self::parameters(&stored);
        let edited = parameters[2].value["objects"]
            .as_str()
            .unwrap()
            .replacen("q0", "x0", 1);
        parameters[2].value["objects"] = json!(edited);
        let torn = join("warren.shop", &stored.head, &parts_of(&parameters)).unwrap_err();
        assert!(
            torn.reason.contains("does not hold what its name says"),
            "{}",
            torn.reason
        );
    }

    #[test]
    fn parts_no_head_names_are_left_over_and_no_part_is_a_record() {
        let before = store(&record(entries(5_000)));
        let after = store(&record(entries(4_000)));
        let parameters = parameters(&before);
        let left = left_over(&parameters, "warren.shop", &after);
        assert!(!left.is_empty());
        assert!(
            left.iter()
                .all(|name| !after.parts.iter().any(|(p, _)| p == name))
        );
        assert!(left_over(&parameters, "warren.shop2", &after).is_empty());
        assert!(is_part_name(&before.parts[0].0));
        assert!(!Record::is_head_name(&before.parts[0].0));
        assert!(Record::is_head_name("warren.shop@prod"));
    }
}
