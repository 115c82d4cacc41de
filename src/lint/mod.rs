//! The linter: rules that catch topologies which silently lose, duplicate or hot-loop
//! messages, run over compiled definitions (from a spec, or a broker's export).
//!
//! Each rule lives in its own file under `rules/` with its id, default level, an
//! explanation and a bad and a good example; [`RULES`] is the registry. Findings point
//! at the spec path (and so the line and column) of the object they concern.

pub mod facts;
mod inputs;
mod rules;

pub use inputs::{
    Environments, Read, Validation, lint_definitions, lint_spec, lint_spec_in_every_environment,
    validate_spec,
};

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::compile::{Compiled, Contract};
use crate::model::finding::Finding;
use crate::model::version::TargetVersion;
use crate::model::{Definitions, Policy};
use crate::spec::diagnostic::{Diagnostic, Severity};
use crate::spec::{Spec, SpecPath};

pub use crate::model::rule::Level;
pub use rules::RULES;

/// A lint rule: the registry shape every rule registry of warren's shares
/// ([`crate::model::rule::Rule`]), with lint's own part.
pub type Rule = crate::model::rule::Rule<Check>;

/// What a lint rule has that other registries' rules do not: the examples `warren
/// rules ID` shows, and the check.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// A spec the rule reports.
    pub bad: &'static str,
    /// The same spec, fixed.
    pub good: &'static str,
    /// The check: its findings ([`Finding::on`], [`Finding::in_spec`]) get the
    /// rule's id and level from [`run`].
    pub run: fn(&Context) -> Vec<Finding>,
}

/// The level a rule reports at unless the spec says otherwise: every lint rule has
/// one (a test keeps it so).
pub fn default_level(rule: &Rule) -> Level {
    rule.level.unwrap_or(Level::Warn)
}

/// Everything rules look at.
pub struct Context<'a> {
    /// The definitions (compiled from the spec, or read from a file).
    pub definitions: &'a Definitions,
    /// The spec, when linting one.
    pub spec: Option<&'a Spec>,
    /// The consumer contract, when linting a spec.
    pub contract: Option<&'a Contract>,
    /// Where each object came from in the spec.
    pub origins: Option<&'a crate::compile::Origins>,
    /// The permissions the compiler generated from the topology, before the written
    /// ones were added (none for a definitions file).
    pub generated_permissions: &'a [crate::compile::permissions::GeneratedPermission],
    /// The target version.
    pub target: TargetVersion,
    /// Operator policies in policy shape.
    pub operator_policies: Vec<Arc<Policy>>,
    /// The dead-letter graph, built once and shared by the rules.
    graph: std::cell::OnceCell<rules::graph::Graph<'a>>,
}

impl<'a> Context<'a> {
    /// A context over a compiled spec.
    pub fn for_spec(spec: &'a Spec, compiled: &'a Compiled, target: TargetVersion) -> Context<'a> {
        Context {
            definitions: &compiled.definitions,
            spec: Some(spec),
            contract: Some(&compiled.contract),
            origins: Some(&compiled.origins),
            generated_permissions: &compiled.generated_permissions,
            target,
            operator_policies: facts::operator_policies(&compiled.definitions),
            graph: std::cell::OnceCell::new(),
        }
    }

    /// A context over a definitions file.
    pub fn for_definitions(definitions: &'a Definitions, target: TargetVersion) -> Context<'a> {
        Context {
            definitions,
            spec: None,
            contract: None,
            origins: None,
            generated_permissions: &[],
            target,
            operator_policies: facts::operator_policies(definitions),
            graph: std::cell::OnceCell::new(),
        }
    }

    /// The effective settings of every queue.
    pub fn queue_facts(&self) -> Vec<facts::QueueFacts<'a>> {
        facts::queue_facts(self.definitions, &self.operator_policies, self.target)
    }

    /// The dead-letter graph of the definitions (built on first use).
    pub(crate) fn graph(&self) -> &rules::graph::Graph<'a> {
        self.graph.get_or_init(|| rules::graph::Graph::new(self))
    }
}

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Levels after the spec's `lint:` settings; unknown ids are reported.
fn levels(spec: Option<&Spec>, diagnostics: &mut Vec<Diagnostic>) -> BTreeMap<&'static str, Level> {
    let mut levels: BTreeMap<&'static str, Level> =
        RULES.iter().map(|r| (r.id, default_level(r))).collect();
    let Some(settings) = spec.and_then(|s| s.lint.as_ref()) else {
        return levels;
    };
    for (key, ids, level) in [
        ("allow", &settings.allow, Level::Allow),
        ("warn", &settings.warn, Level::Warn),
        ("deny", &settings.deny, Level::Deny),
    ] {
        for (index, id) in ids.iter().enumerate() {
            match rule(id) {
                Some(rule) => {
                    levels.insert(rule.id, level);
                }
                None => diagnostics.push(unknown_rule(
                    id,
                    SpecPath::root().key("lint").key(key).index(index),
                )),
            }
        }
    }
    levels
}

fn unknown_rule(id: &str, path: SpecPath) -> Diagnostic {
    let ids: Vec<String> = RULES.iter().map(|r| r.id.to_string()).collect();
    let help = match crate::suggest::closest(id, &ids) {
        Some(best) => format!("did you mean `{best}`? (`warren rules` lists them)"),
        None => "`warren rules` lists the rule ids".to_string(),
    };
    Diagnostic::error("unknown-rule", format!("unknown lint rule `{id}`"))
        .at(path)
        .help(help)
}

/// Inline `lint: { allow: [...] }` blocks, by the path of the object that holds them.
fn inline_allows(spec: &Spec, diagnostics: &mut Vec<Diagnostic>) -> Vec<(SpecPath, String)> {
    let mut found = Vec::new();
    let mut add = |path: SpecPath,
                   lint: &Option<crate::spec::InlineLint>,
                   diagnostics: &mut Vec<Diagnostic>| {
        if let Some(lint) = lint {
            for (index, id) in lint.allow.iter().enumerate() {
                if rule(id).is_none() {
                    diagnostics.push(unknown_rule(id, path.key("lint").key("allow").index(index)));
                }
                found.push((path.clone(), id.clone()));
            }
        }
    };
    for (name, user) in &spec.users {
        add(
            SpecPath::root().key("users").key(name),
            &user.lint,
            diagnostics,
        );
    }
    for (vhost_name, vhost) in &spec.vhosts {
        let vhost_path = SpecPath::root().key("vhosts").key(vhost_name);
        add(vhost_path.clone(), &vhost.lint, diagnostics);
        for (name, service) in &vhost.services {
            let service_path = vhost_path.key("services").key(name);
            add(service_path.clone(), &service.lint, diagnostics);
            for (consumer_name, consumer) in &service.consumers {
                add(
                    service_path.key("consumers").key(consumer_name),
                    &consumer.lint,
                    diagnostics,
                );
            }
        }
        for (name, exchange) in &vhost.exchanges {
            add(
                vhost_path.key("exchanges").key(name),
                &exchange.lint,
                diagnostics,
            );
        }
        for (name, queue) in &vhost.queues {
            add(vhost_path.key("queues").key(name), &queue.lint, diagnostics);
        }
        for (name, policy) in &vhost.policies {
            add(
                vhost_path.key("policies").key(name),
                &policy.lint,
                diagnostics,
            );
        }
        for (name, policy) in &vhost.operator_policies {
            add(
                vhost_path.key("operator_policies").key(name),
                &policy.lint,
                diagnostics,
            );
        }
    }
    found
}

fn is_within(path: &SpecPath, ancestor: &SpecPath) -> bool {
    path.starts_with(ancestor)
}

/// Runs every rule; returns its findings, each with the rule's id as its code and the
/// severity of its level, sorted by position once the caller resolves locations.
pub fn run(context: &Context) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let levels = levels(context.spec, &mut diagnostics);
    let allows = context
        .spec
        .map(|spec| inline_allows(spec, &mut diagnostics))
        .unwrap_or_default();
    for rule in RULES {
        let level = levels[rule.id];
        if level == Level::Allow {
            continue;
        }
        let allowed_at = |path: &SpecPath| {
            allows
                .iter()
                .any(|(at, id)| id == rule.id && is_within(path, at))
        };
        for mut finding in (rule.check.run)(context) {
            let path = finding.path.clone().or_else(|| {
                let object = finding.object.as_ref()?;
                context.origins?.get(object).cloned()
            });
            if path.as_ref().is_some_and(allowed_at) {
                continue;
            }
            if !finding.affects.is_empty() {
                finding
                    .affects
                    .retain(|affected| !affected.at.as_ref().is_some_and(allowed_at));
                if finding.affects.is_empty() {
                    continue;
                }
            }
            if let (Some(object), None) = (&finding.object, &path) {
                finding.message = format!("{} ({object})", finding.message);
            }
            finding.code = rule.id;
            finding.severity = if level == Level::Deny {
                Severity::Error
            } else {
                Severity::Warning
            };
            finding.path = path;
            diagnostics.push(finding);
        }
    }
    diagnostics
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lint's rules fill in what the registry shape leaves optional: `warren rules`
    /// and SARIF show each rule's level and explanation.
    #[test]
    fn every_rule_has_a_level_and_an_explanation() {
        for rule in RULES {
            assert!(rule.level.is_some(), "{} has no level", rule.id);
            assert!(rule.explanation.is_some(), "{} has no explanation", rule.id);
        }
    }
}
