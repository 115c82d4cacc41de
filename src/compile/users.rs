//! Users, their password hashes, permissions and topic permissions.

use base64::Engine;

use super::Emitter;
use crate::model::password::hash_password;
use crate::model::{ObjectId, ObjectKind, Permission, Tags, TopicPermission, User};
use crate::spec::{HashingAlgorithm, Spec, SpecPath};

/// Emits every user with its permissions.
pub(crate) fn emit_all(spec: &Spec, out: &mut Emitter) {
    for (name, user) in &spec.users {
        let path = SpecPath::root().key("users").key(name);
        if name.is_empty() {
            out.error("invalid-name", "user name is empty", path.clone());
            continue;
        }
        if user.external {
            check_external(user, out, &path);
        } else {
            emit_user(name, user, out, &path);
        }
        emit_permissions(spec, name, user, out, &path);
    }
}

/// An external user's entry may hold only permissions: everything else belongs to the
/// user object, which is not the spec's.
fn check_external(user: &crate::spec::User, out: &mut Emitter, path: &SpecPath) {
    let set = [
        ("password", user.password.is_some()),
        ("password_hash", user.password_hash.is_some()),
        ("hashing_algorithm", user.hashing_algorithm.is_some()),
        ("tags", !user.tags.is_empty()),
        ("limits", user.limits.is_some()),
    ];
    for (key, _) in set.into_iter().filter(|(_, set)| *set) {
        out.error(
            "invalid-value",
            format!("`{key}` belongs to the user itself, and an `external: true` user is not this spec's"),
            path.key(key),
        )
        .hint("remove it, or remove `external: true` to manage the user (then with `password` or `password_hash`)");
    }
}

/// Emits the user object itself.
fn emit_user(name: &String, user: &crate::spec::User, out: &mut Emitter, path: &SpecPath) {
    let path = path.clone();
    let algorithm = user.hashing_algorithm.unwrap_or(HashingAlgorithm::Sha256);
    let password_hash = match (&user.password, &user.password_hash) {
        (Some(_), Some(_)) => {
            out.error(
                "invalid-value",
                "both `password` and `password_hash` are set",
                path.key("password_hash"),
            )
            .hint("keep one of them");
            return;
        }
        (None, None) => {
            out.error(
                    "missing-key",
                    format!("user `{name}` has neither `password` nor `password_hash`"),
                    path.clone(),
                )
                .hint("add `password: { env: VARIABLE }`, or `password_hash: \"\"` for a user that logs in without a password (e.g. with certificates)");
            return;
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
                return;
            }
            hash.clone()
        }
        (Some(source), None) => {
            if source.env.is_some() == source.file.is_some() {
                out.error(
                        "invalid-value",
                        "`password` needs exactly one of `env` or `file`",
                        path.key("password"),
                    )
                    .hint("write `password: { env: VARIABLE }` or `password: { file: /run/secrets/NAME }`");
                return;
            }
            match &out.options.secrets {
                // Compiling without secrets (`validate`, `lint`).
                None => String::new(),
                Some(secrets) => {
                    if let Some(missing) = secrets.passwords.unknown.get(name) {
                        // Planning without it: compared as unknown, never applied.
                        out.passwords.unknown.insert(name.clone(), missing.clone());
                        String::new()
                    } else {
                        // A password that could not be read is among the secrets'
                        // problems.
                        let Some(secret) = secrets.passwords.clear.get(name).cloned() else {
                            return;
                        };
                        let hash = hash_password(name, &secret, algorithm);
                        out.passwords.clear.insert(name.clone(), secret);
                        hash
                    }
                }
            }
        }
    };
    let id = ObjectId::global(ObjectKind::User, name);
    if !out.claim(id, &path) {
        return;
    }
    let mut tags = user.tags.clone();
    tags.sort();
    out.definitions.users.push(User {
        name: name.clone(),
        password_hash,
        hashing_algorithm: Some(algorithm.module().to_string()),
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
}

/// Emits the user's permissions and topic permissions.
fn emit_permissions(
    spec: &Spec,
    name: &String,
    user: &crate::spec::User,
    out: &mut Emitter,
    path: &SpecPath,
) {
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
        let id = ObjectId::in_vhost(ObjectKind::Permission, vhost, name);
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
            let id = ObjectId::in_vhost(
                ObjectKind::TopicPermission,
                vhost,
                format!("{name} on {exchange}"),
            );
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

fn check_vhost(spec: &Spec, out: &mut Emitter, vhost: &str, path: &SpecPath) {
    // A reserved vhost is refused where the permission is claimed: declaring it is
    // no fix.
    if !spec.vhosts.contains_key(vhost) && !crate::model::reserved::is_reserved(vhost) {
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
