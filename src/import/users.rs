//! Users with permissions in an imported vhost, with their password hashes; and the
//! permissions of users the definitions do not hold (the broker's `guest`, users of
//! another spec or of an LDAP backend) as `external` users.

use std::collections::BTreeSet;

use super::Notes;
use crate::model::{Definitions, HashingAlgorithm};
use crate::spec::{Permission, Spec, TopicPermission, User, UserLimits};

pub(super) fn place(definitions: &Definitions, spec: &mut Spec, notes: &mut Notes) {
    let vhosts: BTreeSet<&String> = spec.vhosts.keys().collect();
    let mut users: Vec<&crate::model::User> = definitions.users.iter().collect();
    users.sort_by(|a, b| a.name.cmp(&b.name));
    let mut imported_users = BTreeSet::new();
    for user in users {
        let has_permissions = definitions
            .permissions
            .iter()
            .any(|p| p.user == user.name && vhosts.contains(&p.vhost));
        if !has_permissions {
            continue;
        }
        let algorithm = match user
            .hashing_algorithm
            .as_deref()
            .map(HashingAlgorithm::from_module)
        {
            None | Some(Some(HashingAlgorithm::Sha256)) => None,
            Some(Some(algorithm)) => Some(algorithm),
            Some(None) => {
                let other = user.hashing_algorithm.as_deref().unwrap_or_default();
                notes.0.push(format!(
                    "user `{}` uses {other}, which warren cannot write; the user is left out and its permissions are imported as those of an `external` user",
                    user.name
                ));
                continue;
            }
        };
        let imported = User {
            password_hash: Some(user.password_hash.clone()),
            hashing_algorithm: algorithm,
            tags: user.tags.to_list(),
            limits: (!user.limits.is_empty()).then(|| UserLimits {
                max_connections: user.limits.get("max-connections").and_then(|v| v.as_i64()),
                max_channels: user.limits.get("max-channels").and_then(|v| v.as_i64()),
            }),
            ..User::default()
        };
        imported_users.insert(user.name.clone());
        spec.users.insert(user.name.clone(), imported);
    }
    let mut external = BTreeSet::new();
    for permission in definitions
        .permissions
        .iter()
        .filter(|p| vhosts.contains(&p.vhost))
    {
        if !imported_users.contains(&permission.user) {
            external.insert(permission.user.clone());
        }
        let user = spec
            .users
            .entry(permission.user.clone())
            .or_insert_with(|| User {
                external: true,
                ..User::default()
            });
        user.permissions.insert(
            permission.vhost.clone(),
            Permission {
                configure: permission.configure.clone(),
                write: permission.write.clone(),
                read: permission.read.clone(),
            },
        );
    }
    for permission in definitions
        .topic_permissions
        .iter()
        .filter(|p| vhosts.contains(&p.vhost))
    {
        if !imported_users.contains(&permission.user) {
            external.insert(permission.user.clone());
        }
        let user = spec
            .users
            .entry(permission.user.clone())
            .or_insert_with(|| User {
                external: true,
                ..User::default()
            });
        user.topic_permissions
            .entry(permission.vhost.clone())
            .or_default()
            .insert(
                permission.exchange.clone(),
                TopicPermission {
                    write: permission.write.clone(),
                    read: permission.read.clone(),
                },
            );
    }
    if !external.is_empty() {
        let names: Vec<String> = external.iter().map(|n| format!("`{n}`")).collect();
        notes.0.push(format!(
            "permissions of {} are imported under `external: true`: the users are not in the definitions (or not this spec's), so warren manages their permissions only",
            names.join(", ")
        ));
    }
    spec.users.sort_keys();
}
