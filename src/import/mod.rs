//! Live state (or a definitions file) → a spec that reproduces it.
//!
//! Retry topologies in warren's shape are recognised and written as services and
//! consumers with ladders (`ladders`), so the ladders are rebuilt where they were
//! defined (top level, vhost, service, consumer or a named ladder) and the regenerated
//! policies keep their names. Everything else becomes plain exchanges, queues,
//! bindings and policies (`plain`). Users keep their password hashes (`users`).
//! Compiling the result and planning it against the same broker gives no changes.

mod addressable;
mod ladders;
mod owners;
mod plain;
mod reserved;
mod users;

use indexmap::IndexMap;
use serde_json::Value;

use crate::model::Definitions;
use crate::model::version::{Because, CheckedVersion, TargetVersion};
use crate::spec::{Defaults, Environment, Spec, Vhost};

/// What the importer could not carry over, for the user to check.
#[derive(Debug, Clone, Default)]
pub struct Notes(pub Vec<String>);

fn text(value: Option<&Value>) -> Option<&str> {
    value.and_then(|v| v.as_str())
}

/// Leaves out the user warren logged in as (with its permissions): it is the
/// operator's, not part of the topology.
fn leave_out_login_user(definitions: &mut Definitions, user: &str, notes: &mut Notes) {
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
///
/// A record's name for one environment of a spec (`billing@staging`) gives a spec
/// `billing` declaring environment `staging` as the broker has it: planned and applied
/// with `--env staging`, it keeps that record, and a spec's name never holds the
/// separator.
pub fn import(definitions: &Definitions, name: &str, only: &[String], notes: &mut Notes) -> Spec {
    let (name, environment) = match name.split_once(crate::model::reserved::ENVIRONMENT_SEPARATOR) {
        Some((spec, environment)) => (spec, Some(environment)),
        None => (name, None),
    };
    let mut environments = IndexMap::new();
    if let Some(environment) = environment {
        notes.0.push(format!(
            "the spec is `{name}` in environment `{environment}`: plan and apply it with `--env {environment}`"
        ));
        environments.insert(environment.to_string(), Environment::default());
    }
    let mut spec = Spec {
        version: 1,
        lint: None,
        name: Some(name.to_string()),
        rabbitmq: None,
        defaults: Defaults::default(),
        policy_priority: None,
        ladders: IndexMap::new(),
        vhosts: IndexMap::new(),
        users: IndexMap::new(),
        global_parameters: IndexMap::new(),
        environments,
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
    // A `native` ladder's mode and retries are in the broker (its work queue's policy);
    // the other modes' are in the consumers' code.
    let consumers = spec
        .vhosts
        .values()
        .flat_map(|v| v.services.values())
        .flat_map(|s| s.consumers.values())
        .filter(|c| {
            c.retry
                .as_ref()
                .is_none_or(|r| r.mode != Some(crate::spec::RetryMode::Native))
        })
        .count();
    if consumers > 0 {
        notes.0.push(
            "retry `mode` and `max_retries` live in the consumers' code, not in the broker: check them in the imported consumers (the default is `mode: publish`, one retry per tier)"
                .to_string(),
        );
    }
    spec
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

/// The environment variables a spec imported from `definitions` reads credentials
/// from (URIs of federation upstreams and shovels), with the values they must hold:
/// what a user sets before `plan` or `apply`, and what tests set to check a round
/// trip.
pub fn credential_variables(definitions: &Definitions) -> Vec<(String, String)> {
    definitions
        .parameters
        .iter()
        .flat_map(|parameter| plain::credentials_from_env(parameter).1)
        .collect()
}

/// The spec as YAML with a header comment.
pub fn to_yaml(spec: &Spec, source: &str, target: TargetVersion) -> String {
    let body = serde_saphyr::to_string(spec).unwrap_or_default();
    let name = spec.name.as_deref().unwrap_or_default();
    format!(
        "# Imported by `warren import` from {source}, for RabbitMQ {target}.\n# `warren plan` of this spec against the same broker changes nothing there; the\n# first `warren apply` records the objects no spec manages yet as spec `{name}`'s.\n{body}"
    )
}

/// What [`from_definitions`] needs besides the definitions.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The spec's name.
    pub name: String,
    /// Only these vhosts (all when empty).
    pub vhosts: Vec<String>,
    /// `--target-version`, if given.
    pub target: Option<TargetVersion>,
    /// The user warren logged in as, left out with its permissions (a live broker).
    pub login_user: Option<String>,
    /// Where the definitions came from, for the spec's header.
    pub source: String,
}

/// An imported spec.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The spec.
    pub spec: Spec,
    /// The spec as YAML, with its header.
    pub yaml: String,
    /// The version it was checked for, and why.
    pub target: CheckedVersion,
    /// What the user should know about what was left out or changed.
    pub notes: Notes,
}

/// Definitions (a file or a broker's) → a spec that compiles and plans no changes
/// against them: transient queues, warren's own objects and objects other specs manage
/// are left out (with a note each), the rest is imported and the result is compiled for the file's
/// version before anything is written.
pub fn from_definitions(
    mut definitions: Definitions,
    options: &Options,
) -> Result<Imported, String> {
    let mut notes = Notes::default();
    if let Some(user) = &options.login_user {
        leave_out_login_user(&mut definitions, user, &mut notes);
    }
    addressable::leave_out_unaddressable(&mut definitions, &mut notes);
    let transient = definitions.leave_out_transient();
    if transient > 0 {
        notes.0.push(format!(
            "{transient} transient queue{} left out (exclusive queues and server-named `amq.gen-…` queues belong to the connection of a running application, not to the topology)",
            if transient == 1 { " is" } else { "s are" }
        ));
    }
    reserved::leave_out_warrens(&mut definitions, &mut notes);
    owners::leave_out_others(&mut definitions, &options.name, &mut notes)?;
    let target = CheckedVersion::for_file(options.target, definitions.exported_by());
    let mut spec = import(&definitions, &options.name, &options.vhosts, &mut notes);
    // The line the definitions were written by (or the one asked for) is the spec's:
    // validate and lint then check it for that broker without `--target-version`.
    if target.because != Because::Unknown {
        spec.rabbitmq = Some(target.target);
    }
    note_lifted_delivery_limits(&spec, target.target, &mut notes);
    let yaml = to_yaml(&spec, &options.source, target.target);
    check(&yaml, target.target).map_err(|problem| {
        format!(
            "{} cannot be imported as a spec warren accepts (for RabbitMQ {}): {problem}; nothing was written",
            options.source, target.target
        )
    })?;
    Ok(Imported {
        spec,
        yaml,
        target,
        notes,
    })
}

/// From 4.0 on a quorum queue has a delivery limit of 20 unless something sets one:
/// warren's ladders lift it for their work queues (a message redelivered that often
/// would enter the ladder uncounted), so the first plan of an imported quorum ladder
/// creates that policy. Said per consumer, so that the change is expected.
fn note_lifted_delivery_limits(spec: &Spec, target: TargetVersion, notes: &mut Notes) {
    if !target.has_default_delivery_limit() {
        return;
    }
    for (vhost_name, vhost) in &spec.vhosts {
        for (service_name, service) in &vhost.services {
            for (consumer_name, consumer) in &service.consumers {
                let quorum = consumer.kind == Some(crate::model::QueueType::Quorum);
                let native = consumer
                    .retry
                    .as_ref()
                    .is_some_and(|r| r.mode == Some(crate::spec::RetryMode::Native));
                if quorum
                    && !native
                    && consumer.retry.is_some()
                    && consumer.delivery_limit.is_none()
                {
                    notes.0.push(format!(
                        "vhost `{vhost_name}`: consumer `{service_name}.{consumer_name}` has a quorum work queue with RabbitMQ {target}'s default delivery limit of 20: the first plan creates the policy with which warren's ladders lift it (`delivery_limit` on the consumer sets another)"
                    ));
                }
            }
        }
    }
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
