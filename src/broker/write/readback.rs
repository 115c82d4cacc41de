//! What an import answered for and did not make.
//!
//! The definitions import declares each queue and binding of its body and answers for
//! the whole body, but it looks only at what a declaration *threw*, not at what it
//! *returned*. A quorum queue whose Raft members did not start in time (a loaded node)
//! is deleted again by the broker and its declaration returns an error value; the
//! import still answers 204, and a binding into that queue, which then finds no
//! queue, is dropped the same way. Seen on 3.10 beside two CPU-bound processes: an
//! apply was told its 2,103 objects were made, and a quorum parking queue of them did
//! not exist.
//!
//! So after an import the queues it was answered for are read back, one listing of
//! names per vhost, and a queue the broker does not hold is declared again with a
//! request of its own, whose answer is exact, and then the import's bindings into it.
//! Each of those objects gets the outcome of its own request. The cost is one listing
//! per vhost an import created queues in, beside the creation of those queues.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::WriteOutcome;
use crate::broker::live::list;
use crate::broker::{BrokerError, Client, segment};
use crate::model::{ObjectId, ObjectKind};

/// A queue's name, as the listing gives it.
#[derive(serde::Deserialize)]
struct QueueName {
    name: String,
}

/// A vhost and a queue name.
type QueueKey = (String, String);

fn key(id: &ObjectId) -> QueueKey {
    (id.vhost.clone().unwrap_or_default(), id.name.clone())
}

/// The queue a binding leads to, when it leads to a queue.
fn destination_queue(id: &ObjectId, value: &Value) -> Option<QueueKey> {
    (id.kind == ObjectKind::Binding && value["destination_type"] == "queue").then(|| {
        (
            id.vhost.clone().unwrap_or_default(),
            value["destination"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    })
}

/// The queues of `objects` whose import was answered (`Done`) and that the broker does
/// not hold; those whose vhost could not be listed are set to unconfirmed instead.
async fn dropped_queues(
    client: &Client,
    objects: &[(&ObjectId, &Value)],
    outcomes: &mut [WriteOutcome],
) -> BTreeSet<QueueKey> {
    let answered: Vec<usize> = (0..objects.len())
        .filter(|&i| objects[i].0.kind == ObjectKind::Queue && outcomes[i].is_done())
        .collect();
    let vhosts: BTreeSet<String> = answered.iter().map(|&i| key(objects[i].0).0).collect();
    let mut dropped = BTreeSet::new();
    for vhost in vhosts {
        let path = format!(
            "/api/queues/{}?columns=name&disable_stats=true",
            segment(&vhost)
        );
        let in_vhost = answered
            .iter()
            .copied()
            .filter(|&i| objects[i].0.vhost.as_deref().unwrap_or_default() == vhost);
        match list::<QueueName>(client, path).await {
            Ok(listed) => {
                let held: BTreeSet<String> = listed.into_iter().map(|q| q.name).collect();
                dropped.extend(
                    in_vhost
                        .filter(|&i| !held.contains(&objects[i].0.name))
                        .map(|i| key(objects[i].0)),
                );
            }
            Err(error) => {
                for i in in_vhost.collect::<Vec<_>>() {
                    outcomes[i] = WriteOutcome::Unconfirmed(error.clone());
                }
            }
        }
    }
    dropped
}

/// Declares a queue with its own request.
async fn declare_queue(client: &Client, id: &ObjectId, value: &Value) -> Result<(), BrokerError> {
    let path = format!(
        "/api/queues/{}/{}",
        segment(id.vhost.as_deref().unwrap_or_default()),
        segment(&id.name)
    );
    let body = json!({
        "durable": value["durable"],
        "auto_delete": value["auto_delete"],
        "arguments": value.get("arguments").cloned().unwrap_or_else(|| json!({})),
    });
    client.put(&path, &body).await
}

/// Binds an exchange to a queue with its own request.
async fn bind_queue(client: &Client, id: &ObjectId, value: &Value) -> Result<(), BrokerError> {
    let path = format!(
        "/api/bindings/{}/e/{}/q/{}",
        segment(id.vhost.as_deref().unwrap_or_default()),
        segment(value["source"].as_str().unwrap_or_default()),
        segment(value["destination"].as_str().unwrap_or_default())
    );
    let body = json!({
        "routing_key": value["routing_key"],
        "arguments": value.get("arguments").cloned().unwrap_or_else(|| json!({})),
    });
    client.post(&path, &body).await
}

impl Client {
    /// Checks the queues of an import against the broker and makes again, one request
    /// each, those it answered for and did not make, with the import's bindings into
    /// them (see the module). `outcomes` are the import's, in the order of `objects`;
    /// each object made again gets its own request's outcome.
    pub(super) async fn make_what_the_import_dropped(
        &self,
        objects: &[(&ObjectId, &Value)],
        outcomes: &mut [WriteOutcome],
    ) {
        let dropped = dropped_queues(self, objects, outcomes).await;
        if dropped.is_empty() {
            return;
        }
        let mut not_made = BTreeSet::new();
        for (i, (id, value)) in objects.iter().enumerate() {
            let dropped_here =
                id.kind == ObjectKind::Queue && outcomes[i].is_done() && dropped.contains(&key(id));
            if dropped_here && let Err(error) = declare_queue(self, id, value).await {
                not_made.insert(key(id));
                outcomes[i] = WriteOutcome::failed(error);
            }
        }
        for (i, (id, value)) in objects.iter().enumerate() {
            let Some(queue) = destination_queue(id, value) else {
                continue;
            };
            if !outcomes[i].is_done() || !dropped.contains(&queue) {
                continue;
            }
            outcomes[i] = if not_made.contains(&queue) {
                WriteOutcome::NotSent
            } else {
                match bind_queue(self, id, value).await {
                    Ok(()) => WriteOutcome::Done,
                    Err(error) => WriteOutcome::failed(error),
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_leads_to_its_queue_and_an_exchange_binding_to_none() {
        let id = ObjectId::in_vhost(ObjectKind::Binding, "v", "b");
        let into_queue = json!({"source": "x", "destination": "q", "destination_type": "queue"});
        assert_eq!(
            destination_queue(&id, &into_queue),
            Some(("v".to_string(), "q".to_string()))
        );
        let into_exchange =
            json!({"source": "x", "destination": "y", "destination_type": "exchange"});
        assert_eq!(destination_queue(&id, &into_exchange), None);
        let queue = ObjectId::in_vhost(ObjectKind::Queue, "v", "q");
        assert_eq!(destination_queue(&queue, &into_queue), None);
    }
}
