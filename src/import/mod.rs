//! Live state (or a definitions file) → a spec that reproduces it.
//!
//! Retry topologies in warren's shape are recognised and written as services and
//! consumers with ladders (`ladders`), so the ladders are rebuilt where they were
//! defined (top level, vhost, service, consumer or a named ladder) and the regenerated
//! policies keep their names. Everything else becomes plain exchanges, queues,
//! bindings and policies (`plain`). Users keep their password hashes (`users`).
//! Compiling the result and planning it against the same broker gives no changes.

mod ladders;
mod plain;
mod users;

use indexmap::IndexMap;
use serde_json::Value;

use crate::model::Definitions;
use crate::model::version::TargetVersion;
use crate::spec::{Defaults, Spec, Vhost};

/// What the importer could not carry over, for the user to check.
#[derive(Debug, Clone, Default)]
pub struct Notes(pub Vec<String>);

fn text(value: Option<&Value>) -> Option<&str> {
    value.and_then(|v| v.as_str())
}

/// Leaves out the user warren logged in as (with its permissions): it is the
/// operator's, not part of the topology.
pub fn leave_out_login_user(definitions: &mut Definitions, user: &str, notes: &mut Notes) {
    if definitions.users.iter().any(|u| u.name == user) {
        notes.0.push(format!(
            "user `{user}` (the one warren logged in as) is left out"
        ));
        definitions.users.retain(|u| u.name != user);
        definitions.permissions.retain(|p| p.user != user);
        definitions.topic_permissions.retain(|p| p.user != user);
    }
}

/// Builds a spec named `name` from definitions; `only` restricts it to some vhosts
/// (users are imported when they have permissions in an imported vhost).
pub fn import(definitions: &Definitions, name: &str, only: &[String], notes: &mut Notes) -> Spec {
    let mut spec = Spec {
        version: 1,
        lint: None,
        name: Some(name.to_string()),
        defaults: Defaults::default(),
        policy_priority: None,
        ladders: IndexMap::new(),
        vhosts: IndexMap::new(),
        users: IndexMap::new(),
        global_parameters: IndexMap::new(),
    };
    let mut vhost_names: Vec<&String> = definitions
        .vhosts
        .iter()
        .map(|v| &v.name)
        .filter(|name| only.is_empty() || only.contains(name))
        .collect();
    vhost_names.sort();
    for vhost_name in vhost_names {
        let vhost = import_vhost(definitions, vhost_name, &mut spec, notes);
        spec.vhosts.insert(vhost_name.clone(), vhost);
    }
    users::place(definitions, &mut spec, notes);
    let consumers = spec
        .vhosts
        .values()
        .flat_map(|v| v.services.values())
        .map(|s| s.consumers.len())
        .sum::<usize>();
    if consumers > 0 {
        notes.0.push(
            "retry `mode` and `max_retries` live in the consumers' code, not in the broker: check them in the imported consumers (the default is `mode: publish`, one retry per tier)"
                .to_string(),
        );
    }
    spec
}

/// The version an imported spec is checked for: the line of the broker that wrote
/// the definitions (the oldest supported line for an older 3.x broker), else the
/// default.
pub fn target_for(definitions: &Definitions) -> TargetVersion {
    definitions
        .exported_by()
        .and_then(|version| {
            TargetVersion::for_broker(version)
                .or_else(|| version.starts_with("3.").then_some(TargetVersion::ALL[0]))
        })
        .unwrap_or(TargetVersion::DEFAULT)
}

/// Checks that the imported spec (as YAML) loads and compiles for `target`: `import`
/// never writes a spec that `validate` refuses. A definitions file with a binding to a
/// queue it does not declare, two identical bindings, an empty vhost name or a value
/// of the wrong type for a policy key cannot become a valid spec as it is: the first
/// problem is returned, in the compiler's words, for `import` to report.
pub fn check(yaml: &str, target: TargetVersion) -> Result<(), String> {
    let file = crate::spec::load_str(std::path::Path::new("imported.yaml"), yaml.to_string())
        .map_err(|found| summary(&found))?;
    let options = crate::compile::Options {
        target,
        secrets: None,
    };
    crate::compile::compile(&file, &options)
        .map(drop)
        .map_err(|found| summary(&found))
}

fn summary(found: &[crate::spec::diagnostic::Diagnostic]) -> String {
    let first = found.first().map_or("", |d| d.message.as_str());
    match found.len() {
        0 | 1 => first.to_string(),
        n => format!("{first} (and {} more)", n - 1),
    }
}

/// The spec as YAML with a header comment.
pub fn to_yaml(spec: &Spec, source: &str) -> String {
    let body = serde_saphyr::to_string(spec).unwrap_or_default();
    format!(
        "# Imported by `warren import` from {source}.\n# `warren plan` of this spec against the same broker shows no changes.\n{body}"
    )
}

fn import_vhost(
    definitions: &Definitions,
    vhost_name: &str,
    spec: &mut Spec,
    notes: &mut Notes,
) -> Vhost {
    let live = definitions
        .vhosts
        .iter()
        .find(|v| v.name == vhost_name)
        .expect("listed");
    let metadata = live.metadata.clone().unwrap_or_default();
    let mut vhost = Vhost {
        description: live
            .description
            .clone()
            .or_else(|| text(metadata.get("description")).map(str::to_string))
            .filter(|d| !d.is_empty()),
        tags: live.tags.as_ref().map(|t| t.to_list()).unwrap_or_default(),
        ..Vhost::default()
    };
    let claimed = ladders::place(definitions, vhost_name, spec, &mut vhost, notes);
    plain::place(definitions, vhost_name, &claimed, &mut vhost, notes);
    vhost
}
