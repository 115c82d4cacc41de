//! The queue types RabbitMQ has.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Queue types.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum QueueType {
    /// Replicated, durable, the right type for anything important.
    Quorum,
    /// Single-node queue.
    Classic,
    /// Append-only log; cannot dead-letter, so it cannot have a retry ladder.
    Stream,
}

impl QueueType {
    /// The value of the `x-queue-type` argument.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::Quorum => "quorum",
            QueueType::Classic => "classic",
            QueueType::Stream => "stream",
        }
    }
}

impl QueueType {
    /// The type of a queue as the broker sees it (`x-queue-type`, else the `type` a
    /// recent export carries, else `classic`).
    pub fn of(queue: &super::Queue) -> QueueType {
        let declared = queue
            .arguments
            .get("x-queue-type")
            .or_else(|| queue.extra.get("type"))
            .and_then(|v| v.as_str());
        declared.map_or(QueueType::Classic, QueueType::from_name)
    }

    /// The type an `x-queue-type` value names (`classic` for any other value).
    pub fn from_name(name: &str) -> QueueType {
        match name {
            "quorum" => QueueType::Quorum,
            "stream" => QueueType::Stream,
            _ => QueueType::Classic,
        }
    }
}
