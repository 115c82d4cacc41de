use serde_json::json;

use super::*;

/// A consumer `orders.email` with two delay tiers dead-lettering straight back to the
/// work queue (the first with its TTL from a policy, the second from an argument), a
/// parking queue, and a queue `fan.1` with a TTL that dead-letters to a fanout
/// exchange bound to two queues.
fn live() -> Definitions {
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
                           "x-dead-letter-routing-key": "orders.email",
                           "x-message-ttl": 60000}},
            {"vhost": "shop", "name": "orders.email.parking", "durable": true, "auto_delete": false,
             "arguments": {}},
            {"vhost": "shop", "name": "fan.1", "durable": true, "auto_delete": false,
             "arguments": {"x-dead-letter-exchange": "fan", "x-message-ttl": 1000}},
            {"vhost": "shop", "name": "a", "durable": true, "auto_delete": false, "arguments": {}},
            {"vhost": "shop", "name": "b", "durable": true, "auto_delete": false, "arguments": {}}
        ],
        "exchanges": [
            {"vhost": "shop", "name": "orders.email.retry", "type": "direct", "durable": true,
             "auto_delete": false, "internal": false, "arguments": {}},
            {"vhost": "shop", "name": "fan", "type": "fanout", "durable": true,
             "auto_delete": false, "internal": false, "arguments": {}}
        ],
        "bindings": [
            {"vhost": "shop", "source": "orders.email.retry", "destination": "orders.email.retry.1",
             "destination_type": "queue", "routing_key": "1", "arguments": {}},
            {"vhost": "shop", "source": "orders.email.retry", "destination": "orders.email.retry.2",
             "destination_type": "queue", "routing_key": "2", "arguments": {}},
            {"vhost": "shop", "source": "orders.email.retry", "destination": "orders.email.parking",
             "destination_type": "queue", "routing_key": "parking", "arguments": {}},
            {"vhost": "shop", "source": "fan", "destination": "a",
             "destination_type": "queue", "routing_key": "", "arguments": {}},
            {"vhost": "shop", "source": "fan", "destination": "b",
             "destination_type": "queue", "routing_key": "", "arguments": {}}
        ],
        "policies": [
            {"vhost": "shop", "name": "tier-1", "pattern": "^orders\\.email\\.retry\\.1$",
             "apply-to": "queues", "priority": 0, "definition": {"message-ttl": 30000}}
        ]
    }))
    .unwrap()
}

fn queue(name: &str) -> ObjectId {
    queue_id("shop", name)
}

fn change(action: Action, name: &str) -> Change {
    let value = Some(json!({"arguments": {}}));
    match action {
        Action::Delete => Change::new(action, queue(name), value, None),
        _ => Change::new(action, queue(name), value.clone(), value),
    }
}

fn found(changes: &[Change]) -> Vec<(String, String)> {
    found_with(changes, &[])
}

fn found_with(changes: &[Change], migrated: &[&ObjectId]) -> Vec<(String, String)> {
    find(
        &live(),
        &["shop".to_string()],
        changes,
        migrated,
        TargetVersion::DEFAULT,
    )
    .into_iter()
    .map(|p| (p.from.name, p.into.name))
    .collect()
}

#[test]
fn tiers_deleted_beside_their_work_queue_pass_their_messages_on_to_it() {
    let changes = [
        change(Action::Delete, "orders.email.retry.1"),
        change(Action::Delete, "orders.email.retry.2"),
    ];
    assert_eq!(
        found(&changes),
        [
            ("orders.email.retry.1".into(), "orders.email".into()),
            ("orders.email.retry.2".into(), "orders.email".into()),
        ]
    );
}

#[test]
fn nothing_is_passed_on_to_a_queue_the_plan_removes_too() {
    for work_queue in [Action::Delete, Action::Replace] {
        let changes = [
            change(Action::Delete, "orders.email.retry.1"),
            change(work_queue, "orders.email"),
        ];
        assert_eq!(found(&changes), [], "{work_queue:?}");
    }
}

#[test]
fn queues_without_a_ttl_or_with_several_destinations_pass_nothing_on() {
    // The work queue dead-letters only when a consumer rejects: its messages wait for one.
    assert_eq!(found(&[change(Action::Delete, "orders.email")]), []);
    // Its dead letters would be copied to two queues.
    assert_eq!(found(&[change(Action::Delete, "fan.1")]), []);
    // A replaced tier is migrated (or refused), not passed on.
    assert_eq!(
        found(&[change(Action::Replace, "orders.email.retry.1")]),
        []
    );
}

#[test]
fn a_work_queue_migrated_blue_green_receives_what_its_tiers_pass_on() {
    // A classic TTL ladder becoming native retry: the work queue becomes a quorum queue.
    let changes = [
        change(Action::Delete, "orders.email.retry.1"),
        change(Action::Replace, "orders.email"),
    ];
    let work = queue("orders.email");
    assert_eq!(
        found_with(&changes, &[&work]),
        [("orders.email.retry.1".into(), "orders.email".into())]
    );
}
