//! Users in a spec, where their passwords come from, and what they may do
//! (permissions and topic permissions per vhost). A password is never written in the
//! spec: [`PasswordSource`] refuses a plain string with a message that says so.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::lint_settings::InlineLint;
use crate::model::HashingAlgorithm;

/// A user.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct User {
    /// Lint rules turned off for this object and everything in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<InlineLint>,
    /// The user exists already and is not this spec's: the broker's own `guest`, a
    /// user another tool creates, or one of an LDAP or OAuth 2 backend. warren manages
    /// only the permissions and topic permissions written here, never the user itself
    /// (so no `password`, `password_hash`, `hashing_algorithm`, `tags` or `limits`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
    /// Where the password comes from. Never written in the spec itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<PasswordSource>,
    /// A ready RabbitMQ password hash (base64), instead of `password`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    /// Hash algorithm for `password` or of `password_hash`. Default: `sha256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashing_algorithm: Option<HashingAlgorithm>,
    /// User tags, e.g. `management`, `monitoring`, `administrator`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Permissions per vhost.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub permissions: IndexMap<String, Permission>,
    /// Topic permissions per vhost and exchange.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub topic_permissions: IndexMap<String, IndexMap<String, TopicPermission>>,
    /// Per-user limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<UserLimits>,
}

/// Limits of one user.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserLimits {
    /// Maximum number of connections (a negative number: no limit, as the broker reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<i64>,
    /// Maximum number of channels (a negative number: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_channels: Option<i64>,
}

/// Where a password comes from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PasswordSource {
    /// Read the password from this environment variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// Read the password from this file (trailing newline removed); a relative path is
    /// relative to the spec file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// Permissions of a user in a vhost: three regular expressions over resource names.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Permission {
    /// Declare and delete resources. Default: `""` (nothing).
    #[serde(default)]
    pub configure: String,
    /// Publish to exchanges, bind queues. Default: `""`.
    #[serde(default)]
    pub write: String,
    /// Consume from queues, bind from exchanges. Default: `""`.
    #[serde(default)]
    pub read: String,
}

/// Topic permissions of a user on one topic exchange.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopicPermission {
    /// Routing keys the user may publish with. Default: `""`.
    #[serde(default)]
    pub write: String,
    /// Routing keys the user may bind with. Default: `""`.
    #[serde(default)]
    pub read: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PasswordSourceFields {
    #[serde(default)]
    env: Option<String>,
    #[serde(default)]
    file: Option<String>,
}

impl<'de> Deserialize<'de> for PasswordSource {
    /// Accepts `{ env: VAR }` or `{ file: PATH }`; a plain string is refused with a
    /// message that says why, instead of serde's "expected struct".
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = PasswordSource;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`{ env: VARIABLE }` or `{ file: PATH }`")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<PasswordSource, E> {
                Err(E::custom(
                    "a password is never written in the spec: use `password: { env: VARIABLE }`, `password: { file: PATH }` or `password_hash`",
                ))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<PasswordSource, A::Error> {
                let fields = PasswordSourceFields::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(PasswordSource {
                    env: fields.env,
                    file: fields.file,
                })
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
