//! A spec's environments: choosing one (`--env NAME`, `WARREN_ENV`) and reading the
//! spec as it is there (docs/environments.md).
//!
//! Why inline `environments:` rather than overlay files: what differs in production
//! is then written in one block of the file a reviewer already reads, next to the
//! value it replaces, and a change to a base value shows in the same diff as the
//! environments that override it. An environment's `overrides` is a JSON merge patch
//! (RFC 7386) of the spec, so it is written in the spec's own shape and every key of
//! the spec can differ; `vhost_names` renames vhosts (a map key cannot be renamed by
//! a merge).
//!
//! The spec read for an environment is a spec like any other: the compiler, lint and
//! every command see no environments. It is named `<name>@<environment>`, so each
//! environment has its own ownership record and locks, and staging and prod on one
//! broker never touch each other's objects. Diagnostics about a value an environment
//! wrote point at the line of the environment that wrote it ([`Overrides::source_of`]).

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::diagnostic::Diagnostic;
use super::source_map::{Segment, SpecPath};
use super::types::{Environment, FIXED_KEYS, Spec};

/// How the environment to read a spec for was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice<'a> {
    /// Not at all.
    #[default]
    None,
    /// By `--env NAME`: a spec without environments is an error.
    Flag(&'a str),
    /// By `WARREN_ENV`, set for a whole pipeline: a spec without environments
    /// ignores it.
    Variable(&'a str),
}

impl<'a> Choice<'a> {
    /// `--env` when given, else `WARREN_ENV` when set and not empty.
    pub fn of(flag: Option<&'a str>, variable: Option<&'a str>) -> Choice<'a> {
        match (flag, variable) {
            (Some(flag), _) => Choice::Flag(flag),
            (None, Some(variable)) if !variable.is_empty() => Choice::Variable(variable),
            _ => Choice::None,
        }
    }
}

/// What separates a spec's name from its environment's in the name an environment's
/// spec is known by (`shop@prod`): its ownership record, locks and plans.
pub use crate::model::reserved::ENVIRONMENT_SEPARATOR as SEPARATOR;

/// The spec's own name in `name`, the name of its spec read for `environment`
/// (`shop@prod` → `shop`).
pub fn base_name<'a>(name: &'a str, environment: &str) -> &'a str {
    name.strip_suffix(environment)
        .and_then(|rest| rest.strip_suffix(SEPARATOR))
        .unwrap_or(name)
}

/// Where the values of a spec read for one environment came from: which paths the
/// environment's overrides wrote and which vhosts it renamed.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The environment's name.
    pub environment: String,
    /// Paths of the resolved spec (in the spec's own vhost names) whose value the
    /// environment's `overrides` wrote.
    written: Vec<SpecPath>,
    /// Renamed vhosts: the name in this environment → the spec's name.
    renamed: IndexMap<String, String>,
}

impl Overrides {
    /// The path in the written spec that holds the value at `path` of the resolved
    /// spec: under `environments.<env>.overrides` when the environment wrote it, with
    /// the spec's own vhost names otherwise.
    pub fn source_of(&self, path: &SpecPath) -> SpecPath {
        let path = self.unrename(path);
        let written = self
            .written
            .iter()
            .filter(|written| path.starts_with(written))
            .max_by_key(|written| written.depth());
        match written {
            Some(_) => path.segments().into_iter().fold(
                SpecPath::root()
                    .key("environments")
                    .key(self.environment.as_str())
                    .key("overrides"),
                |at, segment| match segment {
                    Segment::Key(key) => at.key(key.as_str()),
                    Segment::Index(index) => at.index(*index),
                },
            ),
            None => path,
        }
    }

    /// `path` with the spec's own vhost names: `vhosts.<name>` and the vhost keys of
    /// users' permissions.
    fn unrename(&self, path: &SpecPath) -> SpecPath {
        if self.renamed.is_empty() {
            return path.clone();
        }
        let segments = path.segments();
        let vhost_at = match segments.as_slice() {
            [Segment::Key(top), ..] if top == "vhosts" => Some(1),
            [Segment::Key(top), _, Segment::Key(map), ..]
                if top == "users" && (map == "permissions" || map == "topic_permissions") =>
            {
                Some(3)
            }
            _ => None,
        };
        let mut out = SpecPath::root();
        for (at, segment) in segments.into_iter().enumerate() {
            out = match segment {
                Segment::Key(key) if Some(at) == vhost_at => {
                    out.key(self.renamed.get(key).map_or(key.as_str(), String::as_str))
                }
                Segment::Key(key) => out.key(key.as_str()),
                Segment::Index(index) => out.index(*index),
            };
        }
        out
    }
}

/// The spec as it is in `chosen` (or the spec itself when it declares no
/// environments and none is chosen), named `<name>@<environment>`; `name` is the
/// spec's name (its `name`, or the file's). Errors for a missing, unknown or
/// superfluous choice, and for overrides that do not make a valid spec, point at the
/// values that are wrong.
pub fn resolve(
    spec: &Spec,
    name: &str,
    choice: Choice<'_>,
) -> Result<Option<(Spec, Overrides)>, Vec<Diagnostic>> {
    let known: Vec<String> = spec.environments.keys().cloned().collect();
    let chosen = match choice {
        Choice::None => None,
        Choice::Flag(given) | Choice::Variable(given) => Some(given),
    };
    let chosen = match (chosen, known.is_empty()) {
        (None, true) => return Ok(None),
        (Some(_), true) if matches!(choice, Choice::Variable(_)) => return Ok(None),
        (Some(given), true) => {
            return Err(vec![
                Diagnostic::error(
                    "no-environments",
                    format!("--env {given} was given, but the spec declares no environments"),
                )
                .help("leave out --env (and unset WARREN_ENV), or declare the environment under `environments:` (docs/environments.md)"),
            ]);
        }
        (None, false) => {
            return Err(vec![
                Diagnostic::error(
                    "environment-required",
                    format!(
                        "the spec declares {}: choose one with --env NAME (or WARREN_ENV)",
                        choices(&known)
                    ),
                )
                .at(SpecPath::root().key("environments"))
                .help("`warren lint --all-envs` checks every environment at once"),
            ]);
        }
        (Some(given), false) => match spec.environments.get(given) {
            Some(_) => given,
            None => {
                let hint = crate::suggest::closest(given, &known)
                    .map(|close| format!(" (did you mean `{close}`?)"))
                    .unwrap_or_default();
                return Err(vec![
                    Diagnostic::error(
                        "unknown-environment",
                        format!(
                            "no environment `{given}` in the spec{hint}; it declares {}",
                            choices(&known)
                        ),
                    )
                    .at(SpecPath::root().key("environments")),
                ]);
            }
        },
    };
    let environment = &spec.environments[chosen];
    let at = SpecPath::root().key("environments").key(chosen);
    let mut base = spec.clone();
    base.environments = IndexMap::new();
    let mut value = serde_json::to_value(&base).expect("a spec serializes");
    let mut written = Vec::new();
    if let Some(overrides) = &environment.overrides {
        check_overrides(overrides, &at.key("overrides"))?;
        merge_patch(&mut value, overrides, &SpecPath::root(), &mut written);
    }
    let overrides = Overrides {
        environment: chosen.to_string(),
        written,
        renamed: IndexMap::new(),
    };
    let mut resolved: Spec = serde_path_to_error::deserialize(&value).map_err(|error| {
        let path = json_path(error.path());
        vec![
            Diagnostic::error(
                "environment-override",
                format!(
                    "in environment `{chosen}`: {}",
                    error.inner().to_string().trim_end_matches('.')
                ),
            )
            .at(overrides.source_of(&path)),
        ]
    })?;
    let renamed = rename_vhosts(&mut resolved, environment, &at)?;
    resolved.name = Some(format!("{name}{SEPARATOR}{chosen}"));
    Ok(Some((
        resolved,
        Overrides {
            renamed,
            ..overrides
        },
    )))
}

/// Refuses names that would make two specs, or two environments of one, share an
/// ownership record ([`crate::model::reserved`]): the spec's name, whether it declares
/// environments or not, and its environments' names. `from_file` is the file (or
/// directory) a spec without `name:` is named after: the error names it.
pub fn check_names(
    spec: &Spec,
    name: &str,
    from_file: Option<&std::path::Path>,
) -> Result<(), Vec<Diagnostic>> {
    use crate::model::reserved::{environment_name_problem, spec_name_problem};
    let mut errors = Vec::new();
    if let Some(problem) = spec_name_problem(name) {
        let diagnostic =
            Diagnostic::error("reserved-name", problem).at(SpecPath::root().key("name"));
        errors.push(match from_file {
            Some(file) => diagnostic.help(format!(
                "the spec has no `name:`, so it is named after `{}`: add a `name:` without `{SEPARATOR}` (or rename the file)",
                file.display()
            )),
            None => diagnostic.help(format!("write a `name:` without `{SEPARATOR}`")),
        });
    }
    for environment in spec.environments.keys() {
        if let Some(problem) = environment_name_problem(environment) {
            errors.push(
                Diagnostic::error("reserved-name", problem)
                    .at(SpecPath::root()
                        .key("environments")
                        .key(environment.as_str()))
                    .help(format!("rename the environment without `{SEPARATOR}`")),
            );
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// `2 environments: `staging`, `prod``.
fn choices(known: &[String]) -> String {
    let listed: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    format!(
        "{}: {}",
        crate::text::count(known.len(), "environment"),
        listed.join(", ")
    )
}

/// Refuses overrides that are not a map, and the keys no environment may change.
fn check_overrides(overrides: &Value, at: &SpecPath) -> Result<(), Vec<Diagnostic>> {
    let Value::Object(map) = overrides else {
        return Err(vec![
            Diagnostic::error(
                "environment-override",
                "an environment's `overrides` is a map written in the spec's own shape",
            )
            .at(at.clone())
            .help("e.g. `overrides: { defaults: { queue_type: classic } }`"),
        ]);
    };
    let errors: Vec<Diagnostic> = FIXED_KEYS
        .iter()
        .filter(|(key, _)| map.contains_key(*key))
        .map(|(key, why)| {
            Diagnostic::error(
                "environment-override",
                format!("an environment cannot override `{key}`: {why}"),
            )
            .at(at.key(*key))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Applies `patch` to `target` as a JSON merge patch (RFC 7386), recording the paths
/// whose value the patch wrote (a new entry, a replaced value; not a map merged into).
fn merge_patch(target: &mut Value, patch: &Value, at: &SpecPath, written: &mut Vec<SpecPath>) {
    let Value::Object(entries) = patch else {
        *target = patch.clone();
        written.push(at.clone());
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
        written.push(at.clone());
    }
    let Value::Object(map) = target else {
        unreachable!("made a map above")
    };
    for (key, value) in entries {
        if value.is_null() {
            map.shift_remove(key);
            continue;
        }
        let entry = map.entry(key.clone()).or_insert(Value::Null);
        merge_patch(entry, value, &at.key(key.as_str()), written);
    }
}

/// A path of `serde_path_to_error` as a spec path.
fn json_path(path: &serde_path_to_error::Path) -> SpecPath {
    use serde_path_to_error::Segment as Step;
    path.iter().fold(SpecPath::root(), |at, step| match step {
        Step::Seq { index } => at.index(*index),
        Step::Map { key } => at.key(key.as_str()),
        Step::Enum { variant } => at.key(variant.as_str()),
        Step::Unknown => at,
    })
}

/// Renames the vhosts `environment.vhost_names` names, with the users' permissions in
/// them; the renames, new name → spec's name.
fn rename_vhosts(
    spec: &mut Spec,
    environment: &Environment,
    at: &SpecPath,
) -> Result<IndexMap<String, String>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut renamed = IndexMap::new();
    for (from, to) in &environment.vhost_names {
        let path = at.key("vhost_names").key(from.as_str());
        if !spec.vhosts.contains_key(from) {
            let known: Vec<String> = spec.vhosts.keys().cloned().collect();
            errors.push(
                Diagnostic::error(
                    "environment-vhost-name",
                    super::not_in_spec("vhost", from, &known),
                )
                .at(path),
            );
        } else if from != to
            && (spec.vhosts.contains_key(to) && !environment.vhost_names.contains_key(to)
                || renamed.contains_key(to))
        {
            errors.push(
                Diagnostic::error(
                    "environment-vhost-name",
                    format!(
                        "vhost `{from}` would be named `{to}`, a name another vhost has in this environment"
                    ),
                )
                .at(path),
            );
        } else if let Some(collision) = crate::model::reserved::collision(
            &crate::model::ObjectId::global(crate::model::ObjectKind::Vhost, to),
        ) {
            errors.push(
                Diagnostic::error("reserved-name", collision.message())
                    .at(path)
                    .help(collision.fix()),
            );
        } else if to.is_empty() {
            errors.push(
                Diagnostic::error("environment-vhost-name", "a vhost name cannot be empty")
                    .at(path),
            );
        } else {
            renamed.insert(to.clone(), from.clone());
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let new_name = |name: &String| -> String {
        environment
            .vhost_names
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.clone())
    };
    spec.vhosts = std::mem::take(&mut spec.vhosts)
        .into_iter()
        .map(|(name, vhost)| (new_name(&name), vhost))
        .collect();
    for user in spec.users.values_mut() {
        user.permissions = std::mem::take(&mut user.permissions)
            .into_iter()
            .map(|(name, permission)| (new_name(&name), permission))
            .collect();
        user.topic_permissions = std::mem::take(&mut user.topic_permissions)
            .into_iter()
            .map(|(name, permissions)| (new_name(&name), permissions))
            .collect();
    }
    Ok(renamed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Spec {
        serde_saphyr::from_str(text).unwrap()
    }

    const TWO: &str = "version: 1\nvhosts:\n  shop:\n    limits: { max_queues: 10 }\n    services:\n      orders:\n        consumers:\n          email:\n            routing_keys: [a]\nusers:\n  app:\n    password: { env: APP }\n    permissions:\n      shop: { read: '.*' }\nenvironments:\n  staging:\n    vhost_names: { shop: shop-staging }\n    overrides:\n      defaults: { queue_type: classic, retry: { delays: [5s] } }\n      vhosts:\n        shop:\n          limits: { max_queues: 3 }\n  prod: {}\n";

    #[test]
    fn no_environments_and_no_choice_is_the_spec_itself() {
        let plain = spec("version: 1\nvhosts: {}\n");
        assert!(resolve(&plain, "shop", Choice::None).unwrap().is_none());
        // WARREN_ENV is set for a whole pipeline: a spec without environments reads
        // as it is; `--env` for it is a mistake.
        assert!(
            resolve(&plain, "shop", Choice::Variable("prod"))
                .unwrap()
                .is_none()
        );
        assert_eq!(
            resolve(&plain, "shop", Choice::Flag("prod")).unwrap_err()[0].code,
            "no-environments"
        );
    }

    #[test]
    fn a_choice_is_needed_and_must_exist() {
        let two = spec(TWO);
        let missing = resolve(&two, "shop", Choice::None).unwrap_err();
        assert_eq!(missing[0].code, "environment-required");
        assert!(
            missing[0].message.contains("`staging`, `prod`"),
            "{}",
            missing[0].message
        );
        let unknown = resolve(&two, "shop", Choice::Variable("prdo")).unwrap_err();
        assert!(
            unknown[0].message.contains("did you mean `prod`"),
            "{}",
            unknown[0].message
        );
    }

    #[test]
    fn overrides_merge_and_vhosts_are_renamed_with_their_permissions() {
        let two = spec(TWO);
        let (staging, overrides) = resolve(&two, "shop", Choice::Flag("staging"))
            .unwrap()
            .unwrap();
        assert_eq!(staging.name.as_deref(), Some("shop@staging"));
        assert!(staging.environments.is_empty());
        let vhost = &staging.vhosts["shop-staging"];
        assert_eq!(vhost.limits.as_ref().unwrap().max_queues, Some(3));
        assert!(vhost.services.contains_key("orders"), "the base is kept");
        assert_eq!(
            staging.users["app"].permissions.keys().collect::<Vec<_>>(),
            ["shop-staging"]
        );
        assert_eq!(
            staging.defaults.queue_type,
            Some(crate::model::QueueType::Classic)
        );
        // A value the environment wrote is found under its overrides, in the spec's
        // own vhost name; another one in the spec.
        let limit = SpecPath::from_keys(["vhosts", "shop-staging", "limits", "max_queues"]);
        assert_eq!(
            overrides.source_of(&limit).to_string(),
            "environments.staging.overrides.vhosts.shop.limits.max_queues"
        );
        let delay = SpecPath::from_keys(["defaults", "retry", "delays"]).index(0);
        assert_eq!(
            overrides.source_of(&delay).to_string(),
            "environments.staging.overrides.defaults.retry.delays[0]"
        );
        let consumer = SpecPath::from_keys(["vhosts", "shop-staging", "services", "orders"]);
        assert_eq!(
            overrides.source_of(&consumer).to_string(),
            "vhosts.shop.services.orders"
        );
        let (prod, _) = resolve(&two, "shop", Choice::Flag("prod"))
            .unwrap()
            .unwrap();
        assert_eq!(prod.name.as_deref(), Some("shop@prod"));
        assert!(prod.vhosts.contains_key("shop"));
    }

    #[test]
    fn null_removes_and_lists_replace() {
        let mut value = serde_json::json!({"a": {"b": 1, "c": [1, 2]}, "d": 1});
        let mut written = Vec::new();
        let patch = serde_json::json!({"a": {"b": null, "c": [3]}, "e": {"f": 1}});
        merge_patch(&mut value, &patch, &SpecPath::root(), &mut written);
        assert_eq!(
            value,
            serde_json::json!({"a": {"c": [3]}, "d": 1, "e": {"f": 1}})
        );
        let written: Vec<String> = written.iter().map(ToString::to_string).collect();
        assert_eq!(written, ["a.c", "e", "e.f"]);
    }

    #[test]
    fn an_override_that_makes_a_bad_spec_names_its_own_path() {
        let text = TWO.replace(
            "retry: { delays: [5s] }",
            "retry: { delays: [5s], mdoe: x }",
        );
        let errors = resolve(&spec(&text), "shop", Choice::Flag("staging")).unwrap_err();
        assert_eq!(
            errors[0].path.as_ref().unwrap().to_string(),
            "environments.staging.overrides.defaults.retry.mdoe",
            "{errors:?}"
        );
        assert!(
            errors[0]
                .message
                .starts_with("in environment `staging`: unknown field `mdoe`")
        );
        let fixed = TWO.replace("prod: {}", "prod: { overrides: { name: other } }");
        let errors = resolve(&spec(&fixed), "shop", Choice::Flag("prod")).unwrap_err();
        assert!(errors[0].message.contains("cannot override `name`"));
    }

    #[test]
    fn a_rename_to_a_taken_or_unknown_vhost_is_an_error() {
        let text = TWO.replace(
            "vhost_names: { shop: shop-staging }",
            "vhost_names: { shpo: x }",
        );
        let errors = resolve(&spec(&text), "shop", Choice::Flag("staging")).unwrap_err();
        assert!(
            errors[0].message.contains("did you mean `shop`"),
            "{}",
            errors[0].message
        );
    }
}
