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

/// A kind's words, in one place so that a kind is called one thing wherever it is
/// named. [`ObjectKind::as_str`] is the name plans, records and an id's display spell
/// (`operator_policy`); [`ObjectKind::noun`] and [`ObjectKind::plural`] are what
/// sentences say (`operator policy`, `operator policies`).
impl ObjectKind {
    /// The kind as serialized: snake_case, as in a plan's or a record's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Vhost => "vhost",
            ObjectKind::VhostLimits => "vhost_limits",
            ObjectKind::Exchange => "exchange",
            ObjectKind::Queue => "queue",
            ObjectKind::Binding => "binding",
            ObjectKind::Policy => "policy",
            ObjectKind::OperatorPolicy => "operator_policy",
            ObjectKind::User => "user",
            ObjectKind::Permission => "permission",
            ObjectKind::TopicPermission => "topic_permission",
            ObjectKind::GlobalParameter => "global_parameter",
            ObjectKind::Parameter => "parameter",
        }
    }

    /// One object of the kind, in words: `queue`, `operator policy`.
    pub fn noun(self) -> &'static str {
        self.nouns().0
    }

    /// Several objects of the kind, in words: `queues`, `operator policies`.
    pub fn plural(self) -> &'static str {
        self.nouns().1
    }

    fn nouns(self) -> (&'static str, &'static str) {
        match self {
            ObjectKind::Vhost => ("vhost", "vhosts"),
            ObjectKind::VhostLimits => ("vhost limits", "vhost limits"),
            ObjectKind::Exchange => ("exchange", "exchanges"),
            ObjectKind::Queue => ("queue", "queues"),
            ObjectKind::Binding => ("binding", "bindings"),
            ObjectKind::Policy => ("policy", "policies"),
            ObjectKind::OperatorPolicy => ("operator policy", "operator policies"),
            ObjectKind::User => ("user", "users"),
            ObjectKind::Permission => ("permission", "permissions"),
            ObjectKind::TopicPermission => ("topic permission", "topic permissions"),
            ObjectKind::GlobalParameter => ("global parameter", "global parameters"),
            ObjectKind::Parameter => ("parameter", "parameters"),
        }
    }
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

/// An id is made through one of these rather than a struct literal: the constructor
/// says where the object lives (in a vhost, or broker-wide), and each takes names as
/// they come (`&str`, `&String`, an owned `String`) without a conversion at every call.
impl ObjectId {
    /// An object of vhost `vhost`: a queue, an exchange, a binding, a policy, a
    /// permission, a runtime parameter, a vhost's limits.
    pub fn in_vhost(kind: ObjectKind, vhost: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectId {
            kind,
            vhost: Some(vhost.into()),
            name: name.into(),
        }
    }

    /// An object outside any vhost: a vhost itself, a user, a global parameter.
    pub fn global(kind: ObjectKind, name: impl Into<String>) -> Self {
        ObjectId {
            kind,
            vhost: None,
            name: name.into(),
        }
    }

    /// An object whose vhost, or lack of one, is data rather than known where the id is
    /// made: an id rebuilt from a record's entries or from another id's parts. Where the
    /// call site knows, [`ObjectId::in_vhost`] and [`ObjectId::global`] say which.
    pub fn new(
        kind: ObjectKind,
        vhost: Option<impl Into<String>>,
        name: impl Into<String>,
    ) -> Self {
        ObjectId {
            kind,
            vhost: vhost.map(Into::into),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.as_str();
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
    ObjectId::in_vhost(
        ObjectKind::Binding,
        &binding.vhost,
        format!(
            "{} -> {} {} [{}]{arguments}",
            binding.source, binding.destination_type, binding.destination, binding.routing_key
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [ObjectKind; 12] = [
        ObjectKind::Vhost,
        ObjectKind::VhostLimits,
        ObjectKind::Exchange,
        ObjectKind::Queue,
        ObjectKind::Binding,
        ObjectKind::Policy,
        ObjectKind::OperatorPolicy,
        ObjectKind::User,
        ObjectKind::Permission,
        ObjectKind::TopicPermission,
        ObjectKind::GlobalParameter,
        ObjectKind::Parameter,
    ];

    #[test]
    fn a_kind_is_spelled_as_serde_writes_it() {
        for kind in KINDS {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                kind.as_str(),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn an_id_reads_as_its_kind_name_and_vhost() {
        let policy = ObjectId::in_vhost(ObjectKind::OperatorPolicy, "shop", "limits");
        assert_eq!(
            policy.to_string(),
            r#"operator_policy "limits" in vhost "shop""#
        );
        let user = ObjectId::global(ObjectKind::User, "ops");
        assert_eq!(user.to_string(), r#"user "ops""#);
        assert_eq!(ObjectId::new(ObjectKind::User, None::<&str>, "ops"), user);
    }
}
