//! Users, their password hashes, permissions and topic permissions.

use base64::Engine;
use sha2::{Digest, Sha256, Sha512};

use super::{Emitter, ObjectId, ObjectKind};
use crate::model::{Permission, Tags, TopicPermission, User};
use crate::spec::{HashingAlgorithm, Spec, SpecPath};

/// Emits every user with its permissions.
pub(crate) fn emit_all(spec: &Spec, out: &mut Emitter) {
    for (name, user) in &spec.users {
        let path = SpecPath::root().key("users").key(name);
        if name.is_empty() {
            out.error("invalid-name", "user name is empty", path.clone());
            continue;
        }
        let algorithm = user.hashing_algorithm.unwrap_or(HashingAlgorithm::Sha256);
        let password_hash = match (&user.password, &user.password_hash) {
            (Some(_), Some(_)) => {
                out.error(
                    "invalid-value",
                    "both `password` and `password_hash` are set",
                    path.key("password_hash"),
                )
                .hint("keep one of them");
                continue;
            }
            (None, None) => {
                out.error(
                    "missing-key",
                    format!("user `{name}` has neither `password` nor `password_hash`"),
                    path.clone(),
                )
                .hint("add `password: { env: VARIABLE }`, or `password_hash: \"\"` for a user that logs in without a password (e.g. with certificates)");
                continue;
            }
            (None, Some(hash)) => {
                if !hash.is_empty()
                    && base64::engine::general_purpose::STANDARD
                        .decode(hash)
                        .is_err()
                {
                    out.error(
                        "invalid-value",
                        "`password_hash` is not base64",
                        path.key("password_hash"),
                    )
                    .hint("copy the hash from a definitions export (`rabbitmqctl hash_password` prints one)");
                    continue;
                }
                hash.clone()
            }
            (Some(source), None) => {
                let source_path = path.key("password");
                let secret = match (&source.env, &source.file) {
                    (Some(_), Some(_)) | (None, None) => {
                        out.error(
                            "invalid-value",
                            "`password` needs exactly one of `env` or `file`",
                            source_path,
                        )
                        .hint("write `password: { env: VARIABLE }` or `password: { file: /run/secrets/NAME }`");
                        continue;
                    }
                    (Some(variable), None) => {
                        if !out.options.resolve_secrets {
                            String::new()
                        } else {
                            match std::env::var(variable) {
                                Ok(value) if !value.is_empty() => value,
                                _ => {
                                    out.error(
                                        "missing-secret",
                                        format!("environment variable `{variable}` (the password of user `{name}`) is not set"),
                                        source_path.key("env"),
                                    )
                                    .hint(format!("export {variable}=… before running warren"));
                                    continue;
                                }
                            }
                        }
                    }
                    (None, Some(file)) => {
                        if !out.options.resolve_secrets {
                            String::new()
                        } else {
                            match std::fs::read_to_string(out.options.base_dir.join(file)) {
                                Ok(text) => text.trim_end_matches(['\n', '\r']).to_string(),
                                Err(err) => {
                                    out.error(
                                        "missing-secret",
                                        format!("cannot read the password file `{file}` of user `{name}`: {err}"),
                                        source_path.key("file"),
                                    );
                                    continue;
                                }
                            }
                        }
                    }
                };
                if out.options.resolve_secrets {
                    out.secrets.0.insert(name.clone(), secret.clone());
                    hash_password(name, &secret, algorithm)
                } else {
                    String::new()
                }
            }
        };
        let id = ObjectId {
            kind: ObjectKind::User,
            vhost: None,
            name: name.clone(),
        };
        if !out.claim(id, &path) {
            continue;
        }
        let mut tags = user.tags.clone();
        tags.sort();
        out.definitions.users.push(User {
            name: name.clone(),
            password_hash,
            hashing_algorithm: Some(algorithm_module(algorithm).to_string()),
            tags: Tags::List(tags),
            limits: user
                .limits
                .as_ref()
                .map(|limits| {
                    let mut map = crate::model::Arguments::new();
                    if let Some(max) = limits.max_connections {
                        map.insert("max-connections".into(), serde_json::Value::from(max));
                    }
                    if let Some(max) = limits.max_channels {
                        map.insert("max-channels".into(), serde_json::Value::from(max));
                    }
                    map
                })
                .unwrap_or_default(),
            extra: Default::default(),
        });
        for (vhost, permission) in &user.permissions {
            let permission_path = path.key("permissions").key(vhost);
            check_vhost(spec, out, vhost, &permission_path);
            for (field, regex) in [
                ("configure", &permission.configure),
                ("write", &permission.write),
                ("read", &permission.read),
            ] {
                check_regex(out, regex, &permission_path.key(field));
            }
            let id = ObjectId {
                kind: ObjectKind::Permission,
                vhost: Some(vhost.clone()),
                name: name.clone(),
            };
            if out.claim(id, &permission_path) {
                out.definitions.permissions.push(Permission {
                    user: name.clone(),
                    vhost: vhost.clone(),
                    configure: permission.configure.clone(),
                    write: permission.write.clone(),
                    read: permission.read.clone(),
                });
            }
        }
        for (vhost, exchanges) in &user.topic_permissions {
            let vhost_path = path.key("topic_permissions").key(vhost);
            check_vhost(spec, out, vhost, &vhost_path);
            for (exchange, permission) in exchanges {
                let permission_path = vhost_path.key(exchange);
                check_regex(out, &permission.write, &permission_path.key("write"));
                check_regex(out, &permission.read, &permission_path.key("read"));
                let id = ObjectId {
                    kind: ObjectKind::TopicPermission,
                    vhost: Some(vhost.clone()),
                    name: format!("{name} on {exchange}"),
                };
                if out.claim(id, &permission_path) {
                    out.definitions.topic_permissions.push(TopicPermission {
                        user: name.clone(),
                        vhost: vhost.clone(),
                        exchange: exchange.clone(),
                        write: permission.write.clone(),
                        read: permission.read.clone(),
                    });
                }
            }
        }
    }
}

fn check_vhost(spec: &Spec, out: &mut Emitter, vhost: &str, path: &SpecPath) {
    if !spec.vhosts.contains_key(vhost) {
        let known: Vec<String> = spec.vhosts.keys().cloned().collect();
        let help = match crate::suggest::closest(vhost, &known) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("declare it under `vhosts:` (`{vhost}: {{}}` is enough)"),
        };
        out.error(
            "invalid-reference",
            format!("vhost `{vhost}` is not declared in this spec"),
            path.clone(),
        )
        .hint(help);
    }
}

fn check_regex(out: &mut Emitter, regex: &str, path: &SpecPath) {
    if let Err(err) = fancy_regex::Regex::new(regex) {
        out.error(
            "invalid-regex",
            format!("`{regex}` is not a valid regular expression: {err}"),
            path.clone(),
        );
    }
}

/// The broker's name of a hashing algorithm.
pub fn algorithm_module(algorithm: HashingAlgorithm) -> &'static str {
    match algorithm {
        HashingAlgorithm::Sha256 => "rabbit_password_hashing_sha256",
        HashingAlgorithm::Sha512 => "rabbit_password_hashing_sha512",
    }
}

/// RabbitMQ's salted hash: base64(salt ++ H(salt ++ password)), with a 4-byte salt.
///
/// The salt is derived from the user name and the password, so exporting the same spec
/// twice gives the same file (no churn in a GitOps diff) while two users with the same
/// password still get different hashes.
pub fn hash_password(user: &str, password: &str, algorithm: HashingAlgorithm) -> String {
    let mut seed = Sha256::new();
    seed.update(b"warren password salt\0");
    seed.update(user.as_bytes());
    seed.update([0]);
    seed.update(password.as_bytes());
    let salt: [u8; 4] = seed.finalize()[..4].try_into().expect("4 bytes");
    hash_with_salt(&salt, password, algorithm)
}

/// The hash of `password` with a given salt (also used to check a broker's hash).
pub fn hash_with_salt(salt: &[u8], password: &str, algorithm: HashingAlgorithm) -> String {
    let digest: Vec<u8> = match algorithm {
        HashingAlgorithm::Sha256 => {
            let mut hasher = Sha256::new();
            hasher.update(salt);
            hasher.update(password.as_bytes());
            hasher.finalize().to_vec()
        }
        HashingAlgorithm::Sha512 => {
            let mut hasher = Sha512::new();
            hasher.update(salt);
            hasher.update(password.as_bytes());
            hasher.finalize().to_vec()
        }
    };
    let mut bytes = salt.to_vec();
    bytes.extend(digest);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_stable_salted_and_verifiable() {
        let first = hash_password("orders", "s3cret", HashingAlgorithm::Sha256);
        assert_eq!(
            first,
            hash_password("orders", "s3cret", HashingAlgorithm::Sha256)
        );
        assert_ne!(
            first,
            hash_password("payments", "s3cret", HashingAlgorithm::Sha256)
        );
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&first)
            .unwrap();
        assert_eq!(bytes.len(), 4 + 32);
        assert_eq!(
            hash_with_salt(&bytes[..4], "s3cret", HashingAlgorithm::Sha256),
            first
        );
        let long = hash_password("orders", "s3cret", HashingAlgorithm::Sha512);
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(long)
                .unwrap()
                .len(),
            4 + 64
        );
    }
}
