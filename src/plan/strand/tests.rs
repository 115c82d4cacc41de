use serde_json::json;

use super::*;

/// A consumer `orders.email` with two delay tiers (TTL by policy, dead-lettering
/// straight back to the work queue) and a parking queue, as a ladder compiles.
fn ladder() -> Definitions {
    serde_json::from_value(json!({
        "queues": [
            {"vhost": "shop", "name": "orders.email", "durable": true, "auto_delete": false,
             "arguments": {"x-dead-letter-exchange": "orders.email.retry",
                           "x-dead-letter-routing-key": "1"}},
            {"vhost": "shop", "name": "orders.email.retry.1", "durable": true, "auto_delete": false,
             "arguments": {"x-dead-letter-exchange": "",
                           "x-dead-letter-routing-key": "orders.email"}},
            {"vhost": "shop", "name": "orders.email.retry.2", "durable": true, "auto_delete": false,
             "arguments": {"x-dead-letter-exchange": "",
                           "x-dead-letter-routing-key": "orders.email"}},
            {"vhost": "shop", "name": "orders.email.parking", "durable": true, "auto_delete": false,
             "arguments": {}},
            {"vhost": "shop", "name": "unrelated", "durable": true, "auto_delete": false,
             "arguments": {}}
        ],
        "exchanges": [
            {"vhost": "shop", "name": "orders.email.retry", "type": "direct", "durable": true,
             "auto_delete": false, "internal": false, "arguments": {}}
        ],
        "bindings": [
            {"vhost": "shop", "source": "orders.email.retry", "destination": "orders.email.retry.1",
             "destination_type": "queue", "routing_key": "1", "arguments": {}},
            {"vhost": "shop", "source": "orders.email.retry", "destination": "orders.email.retry.2",
             "destination_type": "queue", "routing_key": "2", "arguments": {}},
            {"vhost": "shop", "source": "orders.email.retry", "destination": "orders.email.parking",
             "destination_type": "queue", "routing_key": "parking", "arguments": {}}
        ]
    }))
    .unwrap()
}

fn queue(name: &str) -> ObjectId {
    queue_id("shop", name)
}

fn delete(live: &Definitions, name: &str) -> Change {
    let before = live
        .queues
        .iter()
        .find(|q| q.name == name)
        .map(|q| json!({"arguments": q.arguments}));
    Change::new(Action::Delete, queue(name), before, None)
}

fn find_in(live: &Definitions, changes: &[Change]) -> (Vec<Strand>, Vec<Feed>) {
    find(live, &["shop".to_string()], changes, TargetVersion::DEFAULT)
}

#[test]
fn deleting_a_work_queue_strands_its_tiers_and_its_parking_queue() {
    let live = ladder();
    let (strands, feeds) = find_in(&live, &[delete(&live, "orders.email")]);
    let found: Vec<(&str, StrandRoute)> = strands
        .iter()
        .map(|s| (s.queue.name.as_str(), s.route))
        .collect();
    assert_eq!(
        found,
        [
            ("orders.email.parking", StrandRoute::ParkedFor),
            ("orders.email.retry.1", StrandRoute::DeadLetters),
            ("orders.email.retry.2", StrandRoute::DeadLetters),
        ]
    );
    assert!(strands.iter().all(|s| s.into == queue("orders.email")));
    assert!(feeds.is_empty());
}

#[test]
fn deleting_a_tier_strands_the_work_queue_that_dead_letters_into_it() {
    let live = ladder();
    let (strands, _) = find_in(&live, &[delete(&live, "orders.email.retry.1")]);
    assert_eq!(strands.len(), 1);
    assert_eq!(strands[0].queue, queue("orders.email"));
    assert_eq!(strands[0].into, queue("orders.email.retry.1"));
    assert_eq!(strands[0].route, StrandRoute::DeadLetters);
}

#[test]
fn deleting_the_whole_ladder_strands_nothing_and_orders_tiers_first_and_parking_last() {
    let live = ladder();
    let changes: Vec<Change> = [
        "orders.email",
        "orders.email.parking",
        "orders.email.retry.1",
        "orders.email.retry.2",
    ]
    .iter()
    .map(|name| delete(&live, name))
    .collect();
    let (strands, feeds) = find_in(&live, &changes);
    assert!(strands.is_empty(), "{strands:?}");
    assert!(feeds.contains(&Feed {
        from: queue("orders.email.retry.1"),
        into: queue("orders.email"),
    }));
    let refs: Vec<&Change> = changes.iter().collect();
    let order: Vec<&str> = delete_order(&refs, &feeds)
        .iter()
        .map(|c| c.id.name.as_str())
        .collect();
    // Each tier dead-letters into the work queue: both go before it. The work queue
    // dead-letters into tier 1 too (its `x-dead-letter-routing-key` is `1`): the
    // cycle is broken by the tier, which moves messages by itself (TTL).
    let at = |name: &str| order.iter().position(|n| *n == name).unwrap();
    assert!(at("orders.email.retry.1") < at("orders.email"), "{order:?}");
    assert!(at("orders.email.retry.2") < at("orders.email"), "{order:?}");
    // The work queue's consumer parks into the parking queue: it goes last, so that
    // a work queue the broker refuses to delete still has somewhere to park.
    assert!(at("orders.email") < at("orders.email.parking"), "{order:?}");
    assert_eq!(order.len(), 4);
}

#[test]
fn a_plan_that_removes_no_queue_strands_nothing() {
    let live = ladder();
    assert_eq!(find_in(&live, &[]), (vec![], vec![]));
}

#[test]
fn a_tier_whose_route_the_plan_moves_to_a_queue_that_stays_strands_nothing() {
    // A consumer changing to native retry: key `1` leads to the parking queue instead.
    let live = ladder();
    let binding = |queue: &str| {
        json!({"source": "orders.email.retry", "destination": queue,
               "destination_type": "queue", "routing_key": "1", "arguments": {}})
    };
    let binding_id = |queue: &str| {
        let mut value = binding(queue);
        value["vhost"] = "shop".into();
        crate::model::objects::normalized_binding_id(&serde_json::from_value(value).unwrap())
    };
    let changes = [
        delete(&live, "orders.email.retry.1"),
        Change::new(
            Action::Delete,
            binding_id("orders.email.retry.1"),
            Some(binding("orders.email.retry.1")),
            None,
        ),
        Change::new(
            Action::Create,
            binding_id("orders.email.parking"),
            None,
            Some(binding("orders.email.parking")),
        ),
    ];
    let (strands, _) = find_in(&live, &changes);
    assert!(strands.is_empty(), "{strands:?}");
}

/// The order as first written: each step looks at every queue left and every feed.
/// Quadratic and more, but plainly the rule; [`delete_order`] must give the same.
fn delete_order_by_the_rule<'a>(queues: &[&'a Change], feeds: &[Feed]) -> Vec<&'a Change> {
    let mut left: Vec<&'a Change> = queues.to_vec();
    let mut order = Vec::new();
    while !left.is_empty() {
        let fed_by_left = |change: &Change| {
            feeds.iter().any(|f| {
                f.into == change.id && f.from != change.id && left.iter().any(|l| l.id == f.from)
            })
        };
        let next = left
            .iter()
            .position(|c| !fed_by_left(c))
            .or_else(|| left.iter().position(|c| moves_by_itself(c)))
            .unwrap_or(0);
        order.push(left.remove(next));
    }
    order
}

#[test]
fn the_delete_order_is_the_rules_on_random_graphs_with_cycles() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for trial in 0..300 {
        let count = rng.random_range(1..40);
        let changes: Vec<Change> = (0..count)
            .map(|n| {
                // Some queues move messages by themselves (a TTL), some do not.
                let arguments = if rng.random_bool(0.3) {
                    json!({"x-message-ttl": 1000})
                } else {
                    json!({})
                };
                let before = Some(json!({ "arguments": arguments }));
                Change::new(Action::Delete, queue(&format!("q{n}")), before, None)
            })
            .collect();
        let refs: Vec<&Change> = changes.iter().collect();
        // Random feeds, duplicates, self-feeds and feeds from queues not deleted among them.
        let feeds: Vec<Feed> = (0..rng.random_range(0..count * 3))
            .map(|_| Feed {
                from: queue(&format!("q{}", rng.random_range(0..count + 3))),
                into: queue(&format!("q{}", rng.random_range(0..count))),
            })
            .collect();
        let names = |order: Vec<&Change>| -> Vec<String> {
            order.iter().map(|c| c.id.name.clone()).collect()
        };
        assert_eq!(
            names(delete_order(&refs, &feeds)),
            names(delete_order_by_the_rule(&refs, &feeds)),
            "trial {trial}: {feeds:?}"
        );
    }
}
