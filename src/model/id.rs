//! Object identity: what makes two objects the same object, on a broker, in a spec's
//! output and in an ownership record.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Binding;

/// The kinds of objects warren manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    /// A vhost.
    Vhost,
    /// A vhost's limits.
    VhostLimits,
    /// An exchange.
    Exchange,
    /// A queue.
    Queue,
    /// A binding.
    Binding,
    /// A user policy.
    Policy,
    /// An operator policy.
    OperatorPolicy,
    /// A user.
    User,
    /// A user's permissions in a vhost.
    Permission,
    /// A user's topic permissions on an exchange.
    TopicPermission,
    /// A global runtime parameter.
    GlobalParameter,
    /// A vhost runtime parameter (shovel, federation upstream, …), named `component/name`.
    Parameter,
}

/// Identifies one object on a broker or in a definitions document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectId {
    /// Kind.
    pub kind: ObjectKind,
    /// Vhost, for vhost-scoped kinds.
    pub vhost: Option<String>,
    /// Name (for bindings: `source -> destination [key]`).
    pub name: String,
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = serde_json::to_value(self.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        match &self.vhost {
            Some(vhost) => write!(f, "{kind} {:?} in vhost {vhost:?}", self.name),
            None => write!(f, "{kind} {:?}", self.name),
        }
    }
}

/// The identity of a binding: every field, arguments included.
pub fn binding_id(binding: &Binding) -> ObjectId {
    let arguments = if binding.arguments.is_empty() {
        String::new()
    } else {
        format!(
            " {}",
            Value::Object(binding.arguments.clone().into_iter().collect())
        )
    };
    ObjectId {
        kind: ObjectKind::Binding,
        vhost: Some(binding.vhost.clone()),
        name: format!(
            "{} -> {} {} [{}]{arguments}",
            binding.source, binding.destination_type, binding.destination, binding.routing_key
        ),
    }
}
