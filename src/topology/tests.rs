use std::path::Path;

use super::*;
use crate::spec::load_str;

fn topology_of(yaml: &str) -> Topology {
    let file = load_str(Path::new("test.yaml"), yaml.to_string()).unwrap();
    of_spec(&file, TargetVersion::DEFAULT)
        .unwrap_or_else(|d| panic!("{d:#?}"))
        .0
}

fn node<'t>(topology: &'t Topology, name: &str) -> (usize, &'t Node) {
    topology
        .nodes
        .iter()
        .enumerate()
        .find(|(_, n)| n.name == name)
        .unwrap_or_else(|| panic!("no node {name}: {topology:#?}"))
}

fn edge<'t>(topology: &'t Topology, from: &str, to: &str) -> &'t EdgeKind {
    let (from, _) = node(topology, from);
    let (to, _) = node(topology, to);
    &topology
        .edges
        .iter()
        .find(|e| e.from == from && e.to == to)
        .unwrap_or_else(|| panic!("no edge {from} -> {to}"))
        .kind
}

const LADDER: &str = "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          c:\n            routing_keys: [a.b]\n            retry: { delays: [90s, 5m] }\n";

#[test]
fn a_ladder_has_its_roles_tiers_in_order_and_delays_as_written() {
    let topology = topology_of(LADDER);
    let names: Vec<&str> = topology.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "s",
            "s.c",
            "s.c.retry",
            "s.c.retry.own.1",
            "s.c.retry.own.2",
            "s.c.parking"
        ]
    );
    let (_, tier) = node(&topology, "s.c.retry.own.1");
    assert_eq!(
        tier.role,
        Role::Delay {
            tier: 1,
            written: "90s".into(),
            millis: 90_000
        }
    );
    assert_eq!(tier.consumer.as_deref(), Some("c"));
    assert_eq!(node(&topology, "s").1.role, Role::ServiceExchange);
    assert_eq!(node(&topology, "s.c.parking").1.role, Role::Parking);
    // Rejected from the work queue into tier 1; each tier returns to the work queue
    // through the default exchange after its delay.
    assert_eq!(
        edge(&topology, "s.c", "s.c.retry"),
        &EdgeKind::DeadLetter {
            delay: None,
            routing_key: Some("1".into())
        }
    );
    assert_eq!(
        edge(&topology, "s.c.retry.own.1", "s.c"),
        &EdgeKind::DeadLetter {
            delay: Some("90s".into()),
            routing_key: None
        }
    );
    assert_eq!(
        edge(&topology, "s.c.retry", "s.c.parking"),
        &EdgeKind::Binding {
            routing_key: "parking".into(),
            arguments: vec![]
        }
    );
}

#[test]
fn dead_letter_edges_follow_the_effective_settings() {
    // The dead-letter exchange comes from the queue's argument, the TTL and the
    // routing key from a policy: the picture shows what the broker will do.
    let topology = topology_of(
        "version: 1\nvhosts:\n  v:\n    exchanges:\n      dlx: { type: direct }\n    queues:\n      held:\n        type: classic\n        arguments: { x-dead-letter-exchange: dlx }\n      again:\n        type: classic\n    bindings:\n      - { source: dlx, destination: again, routing_key: back }\n    policies:\n      wait:\n        pattern: '^held$'\n        apply_to: queues\n        definition: { message-ttl: 1500, dead-letter-routing-key: back }\n",
    );
    assert_eq!(
        edge(&topology, "held", "dlx"),
        &EdgeKind::DeadLetter {
            delay: Some("1s500ms".into()),
            routing_key: Some("back".into())
        }
    );
    assert_eq!(node(&topology, "held").1.role, Role::Plain);
    assert_eq!(node(&topology, "held").1.service, None);
}

#[test]
fn filters_name_the_choices_when_they_match_nothing() {
    let topology = topology_of(LADDER);
    let err = topology.filter(Some("w"), None).unwrap_err();
    assert!(err.contains("no vhost `w`") && err.contains("`v`"), "{err}");
    let err = topology.filter(None, Some("t")).unwrap_err();
    assert!(
        err.contains("no service `t`") && err.contains("`s`"),
        "{err}"
    );
    let only = topology.filter(Some("v"), Some("s")).unwrap();
    assert_eq!(only.nodes.len(), topology.nodes.len());
    assert_eq!(only.edges.len(), topology.edges.len());
}

/// An alternate exchange set by a policy is drawn as one set by the argument: the
/// picture reads it where routing does (`model::routing`).
#[test]
fn an_alternate_exchange_from_a_policy_is_drawn() {
    let topology = topology_of(
        "version: 1\nvhosts:\n  v:\n    exchanges:\n      events: { type: topic }\n      unrouted: { type: fanout }\n    policies:\n      ae:\n        pattern: '^events$'\n        apply_to: exchanges\n        definition:\n          alternate-exchange: unrouted\n",
    );
    assert_eq!(edge(&topology, "events", "unrouted"), &EdgeKind::Alternate);
}

/// A saved plan leaves out most unchanged objects ([`as_saved`]), but never one its
/// picture is drawn from: `show` of the file draws what `plan` drew, at any cap, and
/// the file still applies to the broker it was made against.
#[test]
fn a_saved_plan_draws_the_picture_the_plan_drew() {
    use crate::model::objects::objects;
    use crate::model::{Definitions, GlobalParameter};
    use crate::plan::{Plan, against_definitions, recheck, spec_name};

    let mut folded_any = false;
    for example in [
        "shop.yaml",
        "ladder.yaml",
        "multi-consumer.yaml",
        "single-loop.yaml",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(example);
        let file = crate::spec::load(&path, Default::default()).unwrap();
        let target = TargetVersion::DEFAULT;
        let compiled = compile::compile(
            &file,
            &Options {
                target,
                secrets: None,
            },
        )
        .unwrap_or_else(|d| panic!("{example}: {d:#?}"));
        let spec = spec_name(&file);
        let with_record = |mut live: Definitions, extra: Option<ObjectIdOf>| {
            let mut owned: Vec<serde_json::Value> = objects(&compiled.definitions)
                .keys()
                .chain(extra.as_ref())
                .map(|id| serde_json::json!([id.kind, id.vhost, id.name]))
                .collect();
            owned.sort_by_key(|v| v.to_string());
            live.global_parameters.push(GlobalParameter {
                name: format!("warren.{spec}"),
                value: serde_json::json!({"format": 1, "spec": spec, "serial": 4, "objects": owned}),
            });
            live
        };
        type ObjectIdOf = crate::model::ObjectId;
        let base = compiled.definitions.clone();
        let mut scenarios: Vec<(&str, Definitions)> = Vec::new();
        let mut policy = base.clone();
        if let Some(first) = policy.policies.first_mut() {
            first
                .definition
                .insert("max-length".into(), serde_json::json!(7));
            scenarios.push(("a policy updated", with_record(policy, None)));
        }
        let mut binding = base.clone();
        binding.bindings.remove(0);
        scenarios.push(("a binding created", with_record(binding, None)));
        let mut queue = base.clone();
        queue.queues[0].durable = !queue.queues[0].durable;
        scenarios.push(("a queue replaced", with_record(queue, None)));
        let mut exchange = base.clone();
        exchange.exchanges.pop();
        scenarios.push(("an exchange created", with_record(exchange, None)));
        let mut gone = base.clone();
        let mut old = gone.queues[0].clone();
        old.name = "zz.old".into();
        let old_id = crate::model::ObjectId::in_vhost(
            crate::model::ObjectKind::Queue,
            &old.vhost,
            &old.name,
        );
        gone.queues.push(old);
        scenarios.push(("a queue deleted", with_record(gone, Some(old_id))));

        for (scenario, live) in scenarios {
            let plan = against_definitions(&file, &live, target, false)
                .unwrap()
                .plan;
            assert!(plan.has_changes(), "{example}, {scenario}");
            // Saved for pictures of at most 4 nodes (a pull request's are 40), so the
            // examples leave some of their objects out.
            let text = serde_json::to_string(&as_saved(&plan, 4)).unwrap();
            let read: Plan = serde_json::from_str(&text).unwrap();
            folded_any |= !read.unchanged.is_empty();
            for cap in [1, 2, 4] {
                assert_eq!(
                    changes(&read, cap),
                    changes(&plan, cap),
                    "{example}, {scenario}, cap {cap}"
                );
            }
            let fresh = recheck(&read, &live, None)
                .unwrap_or_else(|stale| panic!("{example}, {scenario}: {stale}"));
            assert_eq!(
                serde_json::to_value(&fresh.changes).unwrap(),
                serde_json::to_value(&plan.changes).unwrap(),
                "{example}, {scenario}"
            );
        }
    }
    assert!(
        folded_any,
        "no example had an unchanged object to leave out"
    );
}
