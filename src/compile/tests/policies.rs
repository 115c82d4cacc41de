//! The policies the compiler writes: one per tier and not per queue, merged with the
//! user's policies or refused when they conflict, each queue under exactly its own
//! tier's policy by the broker's rule, names the user wrote listed beside a tier's
//! ending, and quorum parking queues' delivery limit.

use serde_json::json;

use super::{compile_yaml, consumers, errors, ok};
use crate::model::Definitions;
use crate::model::version::TargetVersion;

#[test]
fn policies_grow_with_ladders_not_with_queues() {
    let small = ok(&consumers(1, "[30s, 5m, 30m]"));
    let large = ok(&consumers(200, "[30s, 5m, 30m]"));
    assert_eq!(small.policies.len(), large.policies.len());
    assert_eq!(
        large.policies.len(),
        5,
        "3 tiers, the delivery limit of quorum work queues and of quorum parking queues"
    );
    assert_eq!(large.queues.len(), 200 * 5);
}

#[test]
fn changing_a_delay_changes_one_policy_and_no_queue() {
    let before = ok(&consumers(3, "[30s, 5m]"));
    let after = ok(&consumers(3, "[45s, 5m]"));
    assert_eq!(before.queues, after.queues);
    assert_eq!(before.exchanges, after.exchanges);
    assert_eq!(before.bindings, after.bindings);
    let changed: Vec<_> = before
        .policies
        .iter()
        .zip(&after.policies)
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].1.definition["message-ttl"], json!(45_000));
}

#[test]
fn user_policies_that_overlap_generated_queues_are_merged() {
    let defs = ok(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [1s] } }\n    policies:\n      cap: { pattern: '^s\\.', priority: 5, definition: { max-length: 10 } }\n",
    );
    let tier = defs
        .policies
        .iter()
        .find(|p| p.name == "warren.retry.consumer.s.c.1+cap")
        .expect("merged policy");
    assert_eq!(tier.definition["message-ttl"], json!(1000));
    assert_eq!(tier.definition["max-length"], json!(10));
    assert!(tier.priority > 5);
}

#[test]
fn conflicting_or_outranking_user_policies_are_errors() {
    let conflict = errors(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [1s] } }\n    policies:\n      ttl: { pattern: 'retry', priority: 5, definition: { message-ttl: 5 } }\n",
    );
    assert!(
        conflict
            .iter()
            .any(|d| d.code == "policy-overlap" && d.message.contains("message-ttl"))
    );
    let outrank = errors(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          c: { retry: { delays: [1s] } }\n    policies:\n      all: { pattern: '.*', priority: 500, definition: { max-length: 5 } }\n",
    );
    assert!(
        outrank
            .iter()
            .any(|d| d.code == "policy-overlap" && d.message.contains("priority 500"))
    );
}

#[test]
fn target_3_10_gets_no_delivery_limit_and_no_typed_apply_to() {
    let defs = compile_yaml(&consumers(1, "[1s]"), TargetVersion::V3_10).unwrap();
    assert!(defs.policies.iter().all(|p| p.apply_to == "queues"));
    assert!(
        defs.policies
            .iter()
            .all(|p| !p.definition.contains_key("delivery-limit"))
    );
    let typed = "version: 1\nvhosts:\n  v:\n    policies:\n      p: { pattern: x, apply_to: quorum_queues, definition: { max-length: 1 } }\n";
    assert!(compile_yaml(typed, TargetVersion::V3_10).is_err());
    assert!(compile_yaml(typed, TargetVersion::V3_12).is_ok());
}

#[test]
fn ladders_from_different_places_never_share_a_policy_by_accident() {
    // A service called `vhost` and a vhost-level ladder keep their own delays.
    let defs = ok(
        "version: 1\nvhosts:\n  v:\n    defaults: { retry: { delays: [30s] } }\n    services:\n      vhost:\n        exchange: { type: fanout }\n        defaults: { retry: { delays: [5m] } }\n        consumers: { a: {} }\n      other:\n        exchange: { type: fanout }\n        consumers: { b: {} }\n",
    );
    let ttl = |queue: &str| {
        defs.policies
            .iter()
            .find(|p| {
                fancy_regex::Regex::new(&p.pattern)
                    .unwrap()
                    .is_match(queue)
                    .unwrap()
            })
            .map(|p| p.definition["message-ttl"].clone())
    };
    assert_eq!(ttl("vhost.a.retry-vhost.1"), Some(json!(300_000)));
    assert_eq!(ttl("other.b.retry.1"), Some(json!(30_000)));
    // Names that run together with dots and differ are refused, not mixed up.
    let clash = errors(
        "version: 1\nvhosts:\n  v:\n    services:\n      a.b:\n        exchange: { type: fanout }\n        consumers: { c: { queue: q1, retry: { delays: [1s] } } }\n      a:\n        exchange: { type: fanout }\n        consumers: { b.c: { queue: q2, retry: { delays: [2s] } } }\n",
    );
    assert!(
        clash
            .iter()
            .any(|d| d.message.contains("would share the generated policy"))
    );
}

/// The generated retry policies of a compiled spec, by name.
fn retry_policies(defs: &Definitions) -> Vec<&crate::model::Policy> {
    defs.policies
        .iter()
        .filter(|p| p.name.starts_with("warren.retry."))
        .collect()
}

#[test]
fn a_tier_pattern_is_the_same_for_10_and_10000_consumers() {
    let patterns = |n: usize| -> Vec<(String, String)> {
        retry_policies(&ok(&consumers(n, "[30s, 5m, 30m]")))
            .into_iter()
            .map(|p| (p.name.clone(), p.pattern.clone()))
            .collect()
    };
    let small = patterns(10);
    assert_eq!(small, patterns(10_000));
    assert_eq!(
        small,
        (1..=3)
            .map(|n| (
                format!("warren.retry.defaults.{n}"),
                format!(r"^.*\.retry\.{n}$")
            ))
            .collect::<Vec<_>>()
    );
    // The same for a named ladder and a service's defaults.
    let ladder = |n: usize| {
        let yaml = consumers(n, "[1s]")
            .replace(
                "defaults:\n  retry:\n    delays: [1s]\n",
                "ladders:\n  slow.ones: { delays: [1m] }\n",
            )
            .replace("c0: {}", "c0: { retry: { ladder: slow.ones } }");
        retry_policies(&ok(&yaml))
            .into_iter()
            .map(|p| p.pattern.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ladder(2), vec![r"^.*\.retry-slow_ones\.1$".to_string()]);
}

/// Every retry mode, every place delays come from, names the user wrote and a user
/// policy merged into a tier: each queue of the output gets exactly its own tier's
/// settings from the broker's point of view (the real regex and the set lookup agree).
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one test over every example and queue type"
)]
fn every_generated_queue_is_matched_by_exactly_its_own_tier_policy() {
    use crate::model::effective::CompiledPolicies;
    use crate::model::pattern::PatternMatcher;
    let defs = ok(r"
version: 1
defaults:
  retry: { delays: [1s, 2s] }
ladders:
  slow: { delays: [1m, 2m], on_exhausted: park }
  chain: { delays: [3s, 4s], mode: reject-chain, attempts_per_tier: 2 }
  once: { delays: [10s], mode: reject }
vhosts:
  v:
    services:
      s:
        exchange: { type: fanout }
        consumers:
          plain: {}
          laddered: { retry: { ladder: slow } }
          chained: { retry: { ladder: chain } }
          rejecting: { retry: { ladder: once } }
          own: { retry: { delays: [5s, 6s, 7s] } }
          named: { queue: q, retry: { ladder: slow, names: { tiers: [dead_letter_queue, later] } } }
      t:
        exchange: { type: fanout }
        defaults: { retry: { delays: [8s] } }
        consumers:
          a: {}
          capped: {}
    policies:
      cap: { pattern: '^t\.capped', priority: 5, definition: { max-length: 10 } }
  w:
    defaults: { retry: { delays: [9s] } }
    services:
      u:
        exchange: { type: fanout }
        consumers: { b: {} }
");
    let expected: &[(&str, &str, u64)] = &[
        ("s.plain.retry.1", "warren.retry.defaults.1", 1_000),
        ("s.plain.retry.2", "warren.retry.defaults.2", 2_000),
        (
            "s.rejecting.retry-once.1",
            "warren.retry.ladder.once.1",
            10_000,
        ),
        (
            "s.laddered.retry-slow.1",
            "warren.retry.ladder.slow.1",
            60_000,
        ),
        (
            "s.laddered.retry-slow.2",
            "warren.retry.ladder.slow.2",
            120_000,
        ),
        (
            "s.chained.attempt.2.retry-chain.1",
            "warren.retry.ladder.chain.1",
            3_000,
        ),
        (
            "s.chained.attempt.3.retry-chain.1",
            "warren.retry.ladder.chain.1",
            3_000,
        ),
        (
            "s.chained.attempt.4.retry-chain.2",
            "warren.retry.ladder.chain.2",
            4_000,
        ),
        (
            "s.chained.attempt.5.retry-chain.2",
            "warren.retry.ladder.chain.2",
            4_000,
        ),
        ("s.own.retry.own.3", "warren.retry.consumer.s.own.3", 7_000),
        ("dead_letter_queue", "warren.retry.ladder.slow.1", 60_000),
        ("later", "warren.retry.ladder.slow.2", 120_000),
        ("t.a.retry-t.1", "warren.retry.service.t.1", 8_000),
        ("t.capped.retry-t.1", "warren.retry.service.t.1+cap", 8_000),
        ("u.b.retry.1", "warren.retry.vhost.1", 9_000),
    ];
    let policies = CompiledPolicies::new(&defs.policies);
    for (queue, policy, ttl) in expected {
        let vhost = if queue.starts_with("u.") { "w" } else { "v" };
        let found = defs
            .queues
            .iter()
            .find(|q| q.name == *queue && q.vhost == vhost)
            .unwrap_or_else(|| panic!("no queue {queue}"));
        let choice = policies.choose(
            vhost,
            queue,
            crate::model::QueueType::of(found),
            TargetVersion::V4_1,
        );
        let winner = choice
            .winner
            .one()
            .unwrap_or_else(|| panic!("no policy applies to {queue}"));
        assert_eq!(winner.name, *policy, "{queue}");
        assert_eq!(winner.definition["message-ttl"], json!(ttl), "{queue}");
        assert_eq!(found.arguments.get("x-message-ttl"), None);
    }
    // Every queue of the output: at most one generated policy of each priority matches
    // it, the one that applies is the one its tier needs, and no delay queue is matched
    // by another ladder's or tier's policy.
    for queue in &defs.queues {
        let matching: Vec<&crate::model::Policy> = defs
            .policies
            .iter()
            .filter(|p| p.vhost == queue.vhost && p.name.starts_with("warren.retry."))
            .filter(|p| {
                let regex = fancy_regex::Regex::new(&p.pattern).unwrap();
                let by_regex = regex.is_match(&queue.name).unwrap();
                assert_eq!(
                    PatternMatcher::new(&p.pattern).is_match(&queue.name),
                    by_regex,
                    "{} on {}",
                    p.pattern,
                    queue.name
                );
                by_regex
            })
            .collect();
        let tier = |name: &str| name.split('+').next().unwrap().to_string();
        if let Some(first) = matching.first() {
            assert!(
                matching.iter().all(|p| tier(&p.name) == tier(&first.name)),
                "{} matched by {matching:?}",
                queue.name
            );
            let priorities: std::collections::BTreeSet<i64> =
                matching.iter().map(|p| p.priority).collect();
            assert_eq!(priorities.len(), matching.len(), "{}", queue.name);
        }
        let is_tier = expected.iter().any(|(name, _, _)| *name == queue.name);
        let is_delay = queue.arguments.get("x-dead-letter-exchange") == Some(&json!("")) || is_tier;
        assert_eq!(
            matching.is_empty(),
            !is_delay,
            "{}: {matching:?}",
            queue.name
        );
    }
}

#[test]
fn names_the_user_wrote_are_listed_beside_the_ending() {
    let defs = ok(
        "version: 1\nladders:\n  slow: { delays: [1m] }\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          a: { retry: { ladder: slow } }\n          b: { retry: { ladder: slow, names: { tiers: ['odd (name)'] } } }\n",
    );
    let tier = retry_policies(&defs);
    assert_eq!(tier.len(), 1);
    assert_eq!(tier[0].pattern, r"^(?:.*\.retry-slow\.1|odd \(name\))$");
    let only_named = ok(
        "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          a: { retry: { delays: [1m], names: { tiers: [dead_letter_queue] } } }\n",
    );
    assert_eq!(
        retry_policies(&only_named)[0].pattern,
        "^dead_letter_queue$"
    );
}

#[test]
fn a_tier_whose_queues_all_have_names_the_user_wrote_selects_no_ending() {
    let defs = ok(
        "version: 1\nladders:\n  slow: { delays: [1m] }\nvhosts:\n  v:\n    services:\n      s:\n        exchange: { type: fanout }\n        consumers:\n          a: { retry: { ladder: slow, names: { tiers: [dead_letter_queue] } } }\n",
    );
    assert_eq!(retry_policies(&defs)[0].pattern, "^dead_letter_queue$");
}

/// The policy that lifts the delivery limit of quorum parking queues (4.0 and later).
fn parking_policy(defs: &Definitions) -> Option<&crate::model::Policy> {
    defs.policies.iter().find(|p| p.name == "warren.parking")
}

#[test]
fn quorum_parking_queues_are_selected_by_their_ending_from_4_0_on() {
    let pattern = |n: usize| {
        let defs = ok(&consumers(n, "[30s]"));
        let policy = parking_policy(&defs).expect("a parking policy").clone();
        (policy.pattern, policy.apply_to, policy.definition)
    };
    let (pattern_10, apply_to, definition) = pattern(10);
    assert_eq!(pattern_10, r"^.*\.parking$");
    assert_eq!(apply_to, "quorum_queues");
    assert_eq!(definition["delivery-limit"], json!(-1));
    assert_eq!(pattern(2_000).0, pattern_10);
    // The work queues' own delivery-limit policy lists the work queues alone.
    let defs = ok(&consumers(3, "[30s]"));
    let work = defs
        .policies
        .iter()
        .find(|p| p.name == "warren.delivery-limit.unlimited")
        .expect("work queues' delivery limit");
    assert_eq!(work.pattern, r"^s\.c(?:0|1|2)$");
    // Each queue gets exactly the policy meant for it, by the broker's rule.
    let policies = crate::model::effective::CompiledPolicies::new(&defs.policies);
    for queue in &defs.queues {
        let expected = if queue.name.ends_with(".parking") {
            "warren.parking"
        } else if queue.name.ends_with(".retry.1") {
            "warren.retry.defaults.1"
        } else {
            "warren.delivery-limit.unlimited"
        };
        let choice = policies.choose(
            &queue.vhost,
            &queue.name,
            crate::model::QueueType::of(queue),
            TargetVersion::V4_1,
        );
        assert_eq!(
            choice.winner.one().map(|p| p.name.as_str()),
            Some(expected),
            "{}",
            queue.name
        );
        assert_eq!(choice.matching.len(), 1, "{}", queue.name);
    }
    // No default delivery limit before 4.0, and classic parking queues need none.
    let old = compile_yaml(&consumers(3, "[30s]"), TargetVersion::V3_10).unwrap();
    assert!(parking_policy(&old).is_none());
    let classic =
        ok(&consumers(3, "[30s]").replace("defaults:\n", "defaults:\n  queue_type: classic\n"));
    assert!(
        parking_policy(&classic).is_none(),
        "{:#?}",
        classic.policies
    );
    // A parking queue the user named is listed beside the ending.
    let named = ok(&consumers(2, "[30s]").replace(
        "c1: {}",
        "c1: { retry: { delays: [30s], names: { parking: held_back } } }",
    ));
    assert_eq!(
        parking_policy(&named).unwrap().pattern,
        r"^(?:.*\.parking|held_back)$"
    );
}
