//! Updates and removals: each object written in place (`PUT`) or removed (`DELETE`)
//! with requests of its own, the path of each per object kind, a bounded number in
//! flight; and the queues that must be empty when they go, handed last to the
//! emptiness check at deletion (`broker::guard`).

use std::cell::Cell;
use std::collections::HashMap;

use serde_json::{Value, json};

use super::{ObjectWrite, WriteOutcome, WriteStop};
use crate::broker::{Client, Deletion, GuardedQueue, segment};
use crate::model::{ObjectId, ObjectKind, QueueType};

/// One HTTP request: method, path and body.
type Request = (&'static str, String, Option<Value>);

impl Client {
    /// Updates and removes objects, a bounded number of requests at a time; queue
    /// removals marked `if_empty` go last, through the broker's emptiness check
    /// ([`Client::delete_queues_if_empty`]: each after the queues that feed it), once
    /// everything else (bindings into them, in particular) is done. A stop `stop` asks for is heard before each
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
        let results = crate::broker::live::futures_join_all_counted(
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
        // Each queue after the queues of this call that feed it (by their place here).
        let place: HashMap<&ObjectId, usize> = queues
            .iter()
            .enumerate()
            .map(|(place, (index, _))| (writes[*index].id, place))
            .collect();
        // Only those before it: a queue and the tier it feeds feed each other, and the
        // order (`plan::strand::delete_order`) says which goes first.
        let after: Vec<Vec<usize>> = queues
            .iter()
            .enumerate()
            .map(|(own, (index, _))| {
                let feeders = writes[*index].fed_by.iter();
                let places = feeders.filter_map(|feeder| place.get(feeder).copied());
                places.filter(|place| *place < own).collect()
            })
            .collect();
        let checked: Vec<Deletion> = queues
            .iter()
            .zip(&after)
            .map(|((_, queue), after)| Deletion {
                queue: *queue,
                after,
            })
            .collect();
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
