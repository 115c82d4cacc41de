//! A written permission that grants a user more than the topology needs, where warren
//! generates the user's permission.

use crate::compile::permissions::GeneratedPermission;
use crate::lint::{Check, Context, Level, Rule};
use crate::model::finding::Finding;
use crate::spec::SpecPath;
use crate::text::count;

pub const RULE: Rule = Rule {
    id: "permission-broader-than-needed",
    summary: "a written permission grants a user whose permission warren generates more than the topology needs",
    level: Some(Level::Warn),
    explanation: Some(
        "A user named by a consumer's `user` or a service's `publishers` gets exactly the queues and exchanges it uses from warren; a regex written under `users.NAME.permissions.VHOST` is added to that. When the written regex matches names the generated one does not grant (another service's queues, the tiers, any name at all with `.*`), the application can read, publish or declare far beyond its part of the topology. Remove the written field, or narrow it to what the application declares itself (e.g. `configure: '^amq\\.gen-'` for server-named reply queues).",
    ),
    check: Check {
        bad: "version: 1\nvhosts:\n  v:\n    services:\n      orders:\n        consumers:\n          ship: { user: orders_app, routing_keys: [paid], retry: { delays: [1m] } }\nusers:\n  orders_app:\n    password: { env: ORDERS_PASSWORD }\n    permissions:\n      v: { read: '^orders\\.' }\n",
        good: "version: 1\nvhosts:\n  v:\n    services:\n      orders:\n        consumers:\n          ship: { user: orders_app, routing_keys: [paid], retry: { delays: [1m] } }\nusers:\n  orders_app:\n    password: { env: ORDERS_PASSWORD }\n    permissions:\n      v: { configure: '^amq\\.gen-' }\n",
        run: check,
    },
};

/// A name no topology has: a written regex that matches it matches names at large.
const MADE_UP_NAME: &str = "warren-lint.made-up/name";

/// How many names a finding lists before it counts the rest.
const LISTED: usize = 3;

fn check(context: &Context) -> Vec<Finding> {
    let Some(spec) = context.spec else {
        return Vec::new();
    };
    let mut findings = Vec::new();
    for generated in context.generated_permissions {
        let Some(written) = spec
            .users
            .get(&generated.user)
            .and_then(|user| user.permissions.get(&generated.vhost))
        else {
            continue;
        };
        let mut names: Vec<&str> = context
            .definitions
            .queues
            .iter()
            .filter(|q| q.vhost == generated.vhost)
            .map(|q| q.name.as_str())
            .chain(
                context
                    .definitions
                    .exchanges
                    .iter()
                    .filter(|e| e.vhost == generated.vhost)
                    .map(|e| e.name.as_str()),
            )
            .collect();
        names.sort_unstable();
        names.dedup();
        for (field, regex, needed) in [
            ("configure", &written.configure, &generated.configure),
            ("write", &written.write, &generated.write),
            ("read", &written.read, &generated.read),
        ] {
            if let Some(finding) = beyond(generated, field, regex, needed, &names) {
                findings.push(finding);
            }
        }
    }
    findings
}

/// The finding about one written field, when it grants more than `needed`.
fn beyond(
    generated: &GeneratedPermission,
    field: &str,
    written: &str,
    needed: &str,
    names: &[&str],
) -> Option<Finding> {
    if written.is_empty() {
        return None;
    }
    // A regex that does not compile is reported by the compiler, not here.
    let written_regex = fancy_regex::Regex::new(written).ok()?;
    let needed_regex = fancy_regex::Regex::new(needed).ok()?;
    let matches = |regex: &fancy_regex::Regex, name: &str| regex.is_match(name).unwrap_or(false);
    let extra: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| matches(&written_regex, name) && !matches(&needed_regex, name))
        .collect();
    let any_name = matches(&written_regex, MADE_UP_NAME);
    if extra.is_empty() && !any_name {
        return None;
    }
    let (user, vhost) = (&generated.user, &generated.vhost);
    let grants = if any_name {
        "any name at all".to_string()
    } else {
        let listed: Vec<String> = extra
            .iter()
            .take(LISTED)
            .map(|n| format!("`{n}`"))
            .collect();
        let rest = if extra.len() > LISTED {
            format!(" and {}", count(extra.len() - LISTED, "other name"))
        } else {
            String::new()
        };
        format!(
            "{}{rest}, which the topology does not need",
            listed.join(", ")
        )
    };
    let path = SpecPath::root()
        .key("users")
        .key(user)
        .key("permissions")
        .key(vhost)
        .key(field);
    Some(
        Finding::in_spec(
            path,
            format!(
                "the written `{field}` of user `{user}` in vhost `{vhost}` (`{written}`) grants {grants}"
            ),
        )
        .fix(format!(
            "remove `{field}`: warren generates `{needed}` from the topology; or narrow it to what the application declares itself (e.g. `^amq\\.gen-`)"
        )),
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::compile::{Options, compile};
    use crate::lint::{Context, run};
    use crate::model::version::TargetVersion;
    use crate::spec::load_str;

    /// The messages of this rule's findings on a spec whose `orders_app` consumes
    /// `orders.ship` (a ladder of two tiers) and publishes to `payments`, with `written`
    /// as its permission in vhost `v`, and an `ops` user with everything.
    fn findings(written: &str) -> Vec<String> {
        let yaml = format!(
            "version: 1\nvhosts:\n  v:\n    services:\n      orders:\n        consumers:\n          ship: {{ user: orders_app, routing_keys: [paid], retry: {{ delays: [1m, 2m] }} }}\n      payments:\n        publishers: [orders_app]\n        consumers:\n          charge: {{ routing_keys: [ordered] }}\nusers:\n  orders_app:\n    password_hash: ''\n    permissions:\n      v: {written}\n  ops:\n    password_hash: ''\n    permissions:\n      v: {{ configure: '.*', write: '.*', read: '.*' }}\n"
        );
        let file = load_str(Path::new("t.yaml"), yaml).unwrap();
        let compiled = compile(&file, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
        let context = Context::for_spec(&file.spec, &compiled, TargetVersion::DEFAULT);
        run(&context)
            .into_iter()
            .filter(|d| d.code == super::RULE.id)
            .map(|d| d.message)
            .collect()
    }

    #[test]
    fn a_written_field_beyond_the_generated_one_is_reported_once_per_field() {
        assert_eq!(
            findings("{ configure: '.*', write: '^(orders|payments)$', read: '^orders\\.' }"),
            [
                "the written `configure` of user `orders_app` in vhost `v` (`.*`) grants any name at all",
                "the written `write` of user `orders_app` in vhost `v` (`^(orders|payments)$`) grants `orders`, which the topology does not need",
                "the written `read` of user `orders_app` in vhost `v` (`^orders\\.`) grants `orders.ship.parking`, `orders.ship.retry`, `orders.ship.retry.own.1` and 1 other name, which the topology does not need",
            ]
        );
    }

    #[test]
    fn what_the_topology_grants_anyway_and_names_no_one_has_are_not_reported() {
        // `ops` keeps `.*` everywhere: warren generates nothing for it.
        assert!(
            findings("{ configure: '^amq\\.gen-', write: '^payments$', read: '^orders\\.ship$' }")
                .is_empty()
        );
    }
}
