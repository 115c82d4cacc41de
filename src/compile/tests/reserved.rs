//! Names the compiler refuses, naming both sides: a declared queue that a tier's or
//! the parking policy's ending would take, two tiers whose endings overlap, names
//! warren reserves, and the broker's own identity; and names that only look like
//! warren's, which compile.

use super::{compile_yaml, consumers, errors, ok, queue};
use crate::model::version::TargetVersion;
use crate::spec::diagnostic::Diagnostic;

#[test]
fn the_brokers_identity_cannot_be_declared() {
    let found = compile_yaml(
        "version: 1\nglobal_parameters:\n  internal_cluster_id: rabbitmq-cluster-id-copied\n  team: platform\n",
        TargetVersion::DEFAULT,
    )
    .unwrap_err();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].message.contains("the broker's own identity"),
        "{found:#?}"
    );
}

#[test]
fn a_declared_queue_with_a_tier_ending_is_refused_naming_both() {
    let found = errors(
        "version: 1\ndefaults:\n  retry: { delays: [1s] }\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers: { c: {} }\n    queues:\n      audit.retry.1: {}\n",
    );
    let error = found
        .iter()
        .find(|d| d.code == "name-convention")
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert!(
        error.message.contains("`audit.retry.1`"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("`warren.retry.defaults.1`"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("defaults.retry.delays[0]"),
        "{}",
        error.message
    );
    assert_eq!(error.location.map(|l| l.line), Some(11));
    // A work queue too, and a name the user gave a tier of another ladder.
    let work = errors(
        "version: 1\ndefaults:\n  retry: { delays: [1s, 2s] }\nladders:\n  slow: { delays: [1m] }\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { queue: jobs.retry.2 }\n          d: { retry: { ladder: slow, names: { tiers: [x.retry.1] } } }\n",
    );
    let refused: Vec<&str> = work
        .iter()
        .filter(|d| d.code == "name-convention")
        .map(|d| d.message.as_str())
        .collect();
    assert!(
        refused.iter().any(|m| m.contains("`jobs.retry.2`")),
        "{work:#?}"
    );
    assert!(
        refused.iter().any(|m| m.contains("`x.retry.1`")),
        "{work:#?}"
    );
}

#[test]
fn two_tiers_whose_endings_overlap_are_refused() {
    // A service and a ladder of the same name, with dots written as underscores.
    let found = errors(
        "version: 1\nladders:\n  a.b: { delays: [1m] }\nvhosts:\n  v:\n    services:\n      a_b:\n        exchange: { type: fanout }\n        defaults: { retry: { delays: [1s] } }\n        consumers:\n          c: {}\n          d: { retry: { ladder: a.b } }\n",
    );
    assert!(
        found.iter().any(|d| d.code == "name-convention"
            && d.message.contains("`warren.retry.ladder.a.b.1`")
            && d.message.contains("`warren.retry.service.a_b.1`")),
        "{found:#?}"
    );
}

#[test]
fn a_declared_quorum_queue_ending_in_parking_is_refused_a_classic_one_is_not() {
    let spec = |queue_type: &str| {
        format!(
            "version: 1\ndefaults:\n  retry: {{ delays: [1s] }}\nvhosts:\n  v:\n    services:\n      s:\n        exchange: {{ type: fanout }}\n        consumers: {{ c: {{}} }}\n    queues:\n      audit.parking: {{ type: {queue_type} }}\n"
        )
    };
    let found = errors(&spec("quorum"));
    let error = found
        .iter()
        .find(|d| d.code == "name-convention")
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert!(
        error.message.contains("`audit.parking`"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("`warren.parking`"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("`delivery-limit: -1`"),
        "{}",
        error.message
    );
    assert_eq!(error.location.map(|l| (l.line, l.column)), Some((11, 7)));
    // The parking policy applies to quorum queues only: a classic queue is not taken.
    ok(&spec("classic"));
}

#[test]
fn names_that_only_look_like_warrens_compile() {
    let defs = ok(
        "version: 1\nvhosts:\n  warrens.team:\n    queues:\n      warren-orders: {}\n      warrens.x: {}\n      Warren.x: {}\n    services:\n      warren:\n        exchange: { name: warren }\n        consumers:\n          email:\n            queue: my.warren.email\n            routing_keys: [a]\n",
    );
    queue(&defs, "warren-orders");
    queue(&defs, "warrens.x");
    queue(&defs, "my.warren.email");
}

#[test]
fn a_reserved_work_queue_is_one_error_not_one_per_derived_name() {
    let found = errors(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          c:\n            queue: warren.migrate.s.d\n            routing_keys: [a]\n            retry: { delays: [1s, 2s] }\n",
    );
    let reserved: Vec<&Diagnostic> = found.iter().filter(|d| d.code == "reserved-name").collect();
    assert_eq!(reserved.len(), 1, "{found:#?}");
    assert_eq!(
        found.len(),
        1,
        "nothing refers to a missing queue: {found:#?}"
    );
    assert!(
        reserved[0].message.contains("migration"),
        "{}",
        reserved[0].message
    );
}

#[test]
fn generated_policies_are_not_refused_but_a_user_policy_with_their_name_is() {
    ok(&consumers(2, "[1s, 2s]"));
    let found = errors(
        "version: 1\nvhosts:\n  v:\n    policies:\n      warren.parking: { pattern: x, definition: { message-ttl: 1 } }\n",
    );
    assert_eq!(found[0].code, "reserved-name", "{found:#?}");
}
