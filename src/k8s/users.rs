//! Users and what they may do, as `User`, `Permission` and `TopicPermission`
//! resources. A user's credentials are never rendered: its resource names a Secret
//! (listed in [`Manifests::secrets`](super::Manifests::secrets)) that holds them, and
//! what the operator's `User` cannot say (a tag it does not know, a hashing algorithm
//! other than its own) is a refusal.

use serde_json::{Map, Value, json};

use crate::model::{HashingAlgorithm, Permission, TopicPermission, User};
use crate::spec::Spec;

use super::names::metadata_name;
use super::{Builder, SecretNeeded, int32};

impl Builder<'_> {
    pub(super) fn user(&mut self, user: &User, spec: &Spec) {
        let object = format!("user {:?}", user.name);
        if self.refuse_extra(&object, &user.extra) {
            return;
        }
        const TAGS: &[&str] = &["management", "policymaker", "monitoring", "administrator"];
        let tags = user.tags.to_list();
        for tag in tags.iter().filter(|t| !TAGS.contains(&t.as_str())) {
            self.refuse(
                object.clone(),
                format!(
                    "the operator's User takes the tags {} only, not {tag:?}",
                    TAGS.join(", ")
                ),
            );
        }
        // The operator hashes a Secret's `password` with SHA-512 and stores a Secret's
        // `passwordHash` as a SHA-512 hash: any other algorithm the spec chose would
        // be replaced (for a password) or would make the hash unusable (for a hash).
        let written = spec.users.get(&user.name);
        let algorithm = written.and_then(|u| u.hashing_algorithm);
        let hash = written.and_then(|u| u.password_hash.as_ref());
        let password_key = match hash {
            Some(hash) if hash.is_empty() => (
                "passwordHash",
                "\"\" (the user logs in without a password)".to_string(),
            ),
            Some(_) => {
                if algorithm != Some(HashingAlgorithm::Sha512) {
                    self.refuse(
                        object.clone(),
                        "its password_hash is not SHA-512, and the operator stores every hash as SHA-512 (give it `password`, or a `hashing_algorithm: sha512` hash)",
                    );
                }
                (
                    "passwordHash",
                    "the SHA-512 password hash of the spec (base64)".to_string(),
                )
            }
            None => {
                if let Some(algorithm) = algorithm.filter(|a| *a != HashingAlgorithm::Sha512) {
                    self.refuse(
                        object.clone(),
                        format!("it asks for {} hashing, and the operator hashes every password with SHA-512", algorithm.module()),
                    );
                }
                ("password", "the user's password".to_string())
            }
        };
        let mut fields = Map::new();
        for (key, field) in [
            ("max-connections", "connections"),
            ("max-channels", "channels"),
        ] {
            if let Some(value) = user.limits.get(key) {
                match int32(value) {
                    Some(n) => {
                        fields.insert(field.into(), Value::from(n));
                    }
                    None => self.refuse(
                        object.clone(),
                        format!("limit `{key}` {value} does not fit the operator's 32-bit field"),
                    ),
                }
            }
        }
        for key in user
            .limits
            .keys()
            .filter(|k| !["max-connections", "max-channels"].contains(&k.as_str()))
        {
            self.refuse(
                object.clone(),
                format!("the operator's User limits have no `{key}`"),
            );
        }
        let name = metadata_name("user", &[&user.name], &json!([user.name]));
        let secret = format!("{name}-credentials");
        let mut spec = Map::new();
        if !tags.is_empty() {
            spec.insert("tags".into(), Value::from(tags));
        }
        spec.insert("importCredentialsSecret".into(), json!({ "name": secret }));
        if !fields.is_empty() {
            spec.insert("limits".into(), Value::Object(fields));
        }
        self.manifests.secrets.push(SecretNeeded {
            name: secret,
            keys: vec![
                ("username".into(), format!("{:?}", user.name)),
                (password_key.0.into(), password_key.1),
            ],
            object,
        });
        self.push("User", name, spec);
    }

    pub(super) fn permission(&mut self, permission: &Permission) {
        let mut spec = Map::new();
        spec.insert("vhost".into(), Value::from(permission.vhost.clone()));
        spec.insert("user".into(), Value::from(permission.user.clone()));
        spec.insert(
            "permissions".into(),
            json!({
                "configure": permission.configure,
                "write": permission.write,
                "read": permission.read,
            }),
        );
        let identity = json!([permission.vhost, permission.user]);
        let name = metadata_name(
            "permission",
            &[&permission.user, &permission.vhost],
            &identity,
        );
        self.push("Permission", name, spec);
    }

    pub(super) fn topic_permission(&mut self, permission: &TopicPermission) {
        let mut spec = Map::new();
        spec.insert("vhost".into(), Value::from(permission.vhost.clone()));
        spec.insert("user".into(), Value::from(permission.user.clone()));
        spec.insert(
            "permissions".into(),
            json!({
                "exchange": permission.exchange,
                "write": permission.write,
                "read": permission.read,
            }),
        );
        let identity = json!([permission.vhost, permission.user, permission.exchange]);
        let name = metadata_name(
            "topicpermission",
            &[&permission.user, &permission.vhost, &permission.exchange],
            &identity,
        );
        self.push("TopicPermission", name, spec);
    }
}
