//! The plan says what the broker will really apply: policies tied at the highest
//! priority are refused, never guessed; a policy of another's that shadows a retry
//! tier is drift the plan shows; a `policy_priority` without room above it is refused.

use std::time::Duration;

use serde_json::{Value, json};

use crate::node::{Node, Version, pct};
use crate::spec::Spec;

per_version!(
    also_on_4_0:
        the_broker_breaks_ties_in_no_fixed_order,
        a_tie_on_a_tier_makes_a_saved_plan_stale_and_a_plan_refused,
        a_saved_plan_without_changes_is_stale_once_a_tie_appears,
        a_shadowed_tier_is_drift_in_the_plan,
        a_policy_priority_without_room_above_is_refused,
        names_the_api_cannot_address_are_refused_and_import_goes_on,
);

/// A one-consumer spec whose tier 1 delays 5 s: queue `orders.email.retry.1` under
/// the generated `warren.retry.defaults.1`.
fn ladder(name: &str, vhost: &str, priority: Option<i64>) -> String {
    let priority = priority
        .map(|p| format!("policy_priority: {p}\n"))
        .unwrap_or_default();
    format!(
        "version: 1\nname: {name}\n{priority}defaults:\n  queue_type: classic\n  retry:\n    delays: [5s]\nvhosts:\n  {vhost}:\n    services:\n      orders:\n        consumers:\n          email:\n            routing_keys: [order.placed]\n"
    )
}

/// The operator's hand policy on every tier 1 queue, with its priority.
fn hand_policy(node: &Node, vhost: &str, name: &str, priority: i64) {
    node.put(
        &format!("/api/policies/{}/{name}", pct(vhost)),
        &json!({"pattern": "\\.retry\\.1$", "definition": {"message-ttl": 3_600_000}, "priority": priority, "apply-to": "queues"}),
    );
}

/// The policy the broker applies to `queue`, read from the node itself
/// (`rabbitmqctl list_queues`: no statistics delay).
fn applied_policy(node: &Node, vhost: &str, queue: &str) -> String {
    let listing = node.ctl(&[
        "list_queues",
        "-p",
        vhost,
        "name",
        "policy",
        "--no-table-headers",
        "--quiet",
    ]);
    listing
        .lines()
        .find_map(|line| {
            let mut parts = line.split('\t');
            (parts.next() == Some(queue)).then(|| parts.next().unwrap_or("").trim().to_string())
        })
        .unwrap_or_default()
}

/// How many runs the tie is tried on (each in a vhost of its own).
const TIE_RUNS: usize = 16;

/// Two policies of the same priority on one queue, `aa-ops` created first and
/// `zz-ops` second, in a fresh vhost each run: which one the broker applies.
///
/// RabbitMQ sorts the matching policies by priority alone (a stable sort of its
/// parameter store's listing, `rabbit_policy:match_all`) and takes the first, so a tie
/// goes to whichever the store lists first: not the name, not the order of creation.
/// Measured on this machine, 16 runs per version: 3.10.8 applied `aa-ops` 8 times and
/// `zz-ops` 8 times; 4.0 the same, 8 and 8. The store's order follows a hash of the
/// vhost and policy names, so which one wins changes with the vhost's name. The test
/// asserts that each wins at least once in 16 runs (a fixed rule would fail it), which
/// is why warren refuses to predict a winner.
fn the_broker_breaks_ties_in_no_fixed_order(version: Version) {
    let node = Node::shared(version);
    let mut wins = std::collections::BTreeMap::<String, usize>::new();
    for run in 0..TIE_RUNS {
        let vhost = node.unique_vhost(&format!("tie-{run}"));
        for name in ["aa-ops", "zz-ops"] {
            node.put(
                &format!("/api/policies/{}/{name}", pct(&vhost)),
                &json!({"pattern": "^q$", "definition": {"max-length": 10}, "priority": 7, "apply-to": "queues"}),
            );
        }
        node.put(
            &format!("/api/queues/{}/q", pct(&vhost)),
            &json!({"durable": true}),
        );
        let mut winner = String::new();
        // Each look is a `rabbitmqctl` run, seconds on a loaded machine.
        let found = node.wait_until(Duration::from_secs(60), || {
            winner = applied_policy(node, &vhost, "q");
            !winner.is_empty()
        });
        assert!(found, "{version:?}: no policy applies to `q` in run {run}");
        *wins.entry(winner).or_default() += 1;
        node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
    }
    eprintln!("{version:?}: the tie was won {wins:?} in {TIE_RUNS} runs");
    assert_eq!(wins.values().sum::<usize>(), TIE_RUNS);
    assert!(
        wins.len() == 2 && wins.contains_key("aa-ops") && wins.contains_key("zz-ops"),
        "{version:?}: both tied policies should win in {TIE_RUNS} runs: {wins:?}"
    );
}

/// Reproduction 1 as a user meets it: the ladder applied, then planned to a file (no
/// changes), then the operator's tie. `apply p.json` used to answer "Nothing to
/// apply" without reading the broker; it is refused as stale, and changes nothing.
fn a_saved_plan_without_changes_is_stale_once_a_tie_appears(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unique_vhost("tie-saved");
    let spec = Spec::new(&ladder(&format!("tie-{vhost}"), &vhost, None));
    node.apply(spec.arg()).expect(0);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("p.json");
    node.cli(&["plan", spec.arg(), "-o", saved.to_str().unwrap()])
        .expect(0);
    // Unchanged broker: still nothing to apply.
    let nothing = node.cli(&["apply", saved.to_str().unwrap()]).expect(0);
    assert!(
        nothing.stdout.contains("Nothing to apply"),
        "{}",
        nothing.stdout
    );
    hand_policy(node, &vhost, "zz-ops", 100);
    let before = node.get(&format!("/api/definitions/{}", pct(&vhost)));
    let stale = node.cli(&["apply", saved.to_str().unwrap()]).expect(4);
    assert!(
        stale.stderr.contains("have the same priority 100")
            && stale.stderr.contains("`zz-ops` (no spec manages it)"),
        "{version:?}: {}",
        stale.stderr
    );
    assert_eq!(
        node.get(&format!("/api/definitions/{}", pct(&vhost))),
        before,
        "{version:?}: a refused saved plan changes nothing"
    );
    node.delete(&format!("/api/vhosts/{}", pct(&vhost)));
}

/// Reproduction 1: a ladder is applied, planned to a file, then an operator adds a
/// policy of the generated policy's priority on the tier. Applying the saved plan is
/// refused as stale (the tier's outcome would depend on the broker's tie-break), and
/// a fresh plan cannot be applied; the same policy at a lower priority is no tie.
/// Tried in several vhosts, since the broker's choice differs between them
/// (see [`the_broker_breaks_ties_in_no_fixed_order`]).
fn a_tie_on_a_tier_makes_a_saved_plan_stale_and_a_plan_refused(version: Version) {
    let node = Node::shared(version);
    for run in 0..4 {
        // The vhost is made by hand so that the operator's policy can come between
        // the plan and its apply; the saved plan creates the ladder and adopts it.
        let vhost = node.unique_vhost(&format!("tie-tier-{run}"));
        let spec = Spec::new(&ladder(&format!("tie-{vhost}"), &vhost, None));
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("p.json");
        node.cli(&["plan", spec.arg(), "-o", saved.to_str().unwrap()])
            .expect(0);
        hand_policy(node, &vhost, "zz-ops", 100);

        let stale = node.cli(&["apply", saved.to_str().unwrap()]).expect(4);
        assert!(
            stale.stderr.contains("have the same priority 100")
                && stale.stderr.contains("`warren.retry.defaults.1`")
                && stale.stderr.contains("`zz-ops` (no spec manages it)"),
            "{version:?}: {}",
            stale.stderr
        );
        let plan = node.plan(spec.arg()).expect(4);
        assert!(
            plan.stdout
                .contains("Policies of the same priority that all match a managed object")
                && plan.stdout.contains("queue \"orders.email.retry.1\""),
            "{version:?}: {}",
            plan.stdout
        );
        assert!(
            !plan.stdout.contains("The broker matches the spec"),
            "{}",
            plan.stdout
        );
        let json: Value =
            serde_json::from_str(&node.plan_json(spec.arg()).expect(4).stdout).expect("plan JSON");
        assert_eq!(json["ties"][0]["priority"], 100, "{json}");
        assert_eq!(
            json["ties"][0]["policies"][0]["owner"],
            format!("tie-{vhost}")
        );
        let refused = node.apply(spec.arg()).expect(4);
        // Said as a tie, not as another kind of refusal.
        assert!(
            refused
                .stderr
                .contains("policies of the same highest priority match objects the spec manages")
                && !refused
                    .stderr
                    .contains("would apply to queues that are not the spec's"),
            "{}",
            refused.stderr
        );
        assert!(
            node.get_opt(&format!("/api/queues/{}/orders.email.retry.1", pct(&vhost)))
                .is_none(),
            "nothing was created"
        );

        // Below the generated priority it decides nothing: no tie, nothing to refuse.
        hand_policy(node, &vhost, "zz-ops", 99);
        node.apply(spec.arg()).expect(0);
    }
}

/// Reproduction 2: a hand policy of a higher priority on a tier queue. The text plan
/// lists the drift (the policy that wins, the TTL it changes) instead of "No changes",
/// the markdown plan warns, and `--detailed-exitcode` counts it.
fn a_shadowed_tier_is_drift_in_the_plan(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("drift");
    let spec = Spec::new(&ladder(&format!("drift-{vhost}"), &vhost, None));
    node.apply(spec.arg()).expect(0);
    hand_policy(node, &vhost, "ops-high", 101);

    let plan = node.plan(spec.arg()).expect(0);
    assert!(
        plan.stdout
            .contains("Policies that are not the spec's override what it sets")
            && plan.stdout.contains(
                "message-ttl: the spec sets 5000, the broker applies 3600000"
            )
            && plan.stdout.contains("policy `ops-high` (no spec manages it) wins, over the spec's `warren.retry.defaults.1`"),
        "{version:?}: {}",
        plan.stdout
    );
    assert!(
        !plan.stdout.contains("The broker matches the spec"),
        "{}",
        plan.stdout
    );
    node.plan(spec.arg())
        .with(&["--detailed-exitcode"])
        .expect(2);
    let markdown = node
        .plan(spec.arg())
        .with(&["--format", "markdown"])
        .expect(0);
    assert!(
        markdown.stdout.contains("> [!WARNING]") && markdown.stdout.contains("ops-high"),
        "{}",
        markdown.stdout
    );
    // The broker does apply the hand policy: the tier's delay is someone else's.
    let mut applied = String::new();
    node.wait_until(Duration::from_secs(60), || {
        applied = applied_policy(node, &vhost, "orders.email.retry.1");
        applied == "ops-high"
    });
    assert_eq!(applied, "ops-high");
    // Narrowing the other policy resolves it.
    node.delete(&format!("/api/policies/{}/ops-high", pct(&vhost)));
    node.plan(spec.arg())
        .with(&["--detailed-exitcode"])
        .expect(0);
}

/// Reproduction 3: `policy_priority` at the top of the range would put the tier's two
/// generated policies at one priority; it is refused at its line, nothing changed.
fn a_policy_priority_without_room_above_is_refused(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("no-room");
    let spec = Spec::new(&ladder(&format!("no-room-{vhost}"), &vhost, Some(i64::MAX)));
    let refused = node.apply(spec.arg()).expect(1);
    assert!(
        refused.stderr.contains("leaves no room above it") && refused.stderr.contains(":3:"),
        "{version:?}: {}",
        refused.stderr
    );
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", pct(&vhost)))
            .is_none(),
        "nothing was changed"
    );
    let spec = Spec::new(&ladder(
        &format!("no-room-{vhost}"),
        &vhost,
        Some(i64::MAX - 1),
    ));
    node.apply(spec.arg()).expect(0);
}

/// Reproduction 4: a queue or vhost named `..` is refused at its line before anything
/// is sent; a vhost `..` made by hand does not stop `import` (a note says it was left
/// out); a queue name that begins with U+200B shows escaped in the plan.
fn names_the_api_cannot_address_are_refused_and_import_goes_on(version: Version) {
    let node = Node::shared(version);
    let vhost = node.unused_vhost("dots");
    let spec = Spec::new(&format!(
        "version: 1\nname: dots-{vhost}\nvhosts:\n  {vhost}:\n    queues:\n      \"..\": {{}}\n"
    ));
    let refused = node.plan(spec.arg()).expect(1);
    assert!(
        refused.stderr.contains("cannot be used") && refused.stderr.contains(":6:7"),
        "{version:?}: {}",
        refused.stderr
    );
    node.apply(spec.arg()).expect(1);
    assert!(
        node.get_opt(&format!("/api/vhosts/{}", pct(&vhost)))
            .is_none()
    );

    let good = node.unique_vhost("dots-import");
    node.put(
        &format!("/api/queues/{}/kept", pct(&good)),
        &json!({"durable": true}),
    );
    node.ctl(&["add_vhost", ".."]);
    let imported = node
        .cli(&["import", "--vhost", "..", "--vhost", &good, "-o", "-"])
        .expect(0);
    node.ctl(&["delete_vhost", ".."]);
    assert!(
        imported
            .stderr
            .contains("vhost `..` and everything in it left out")
            && imported.stdout.contains("kept"),
        "{version:?}: {}\n{}",
        imported.stderr,
        imported.stdout
    );

    let hidden = node.unused_vhost("hidden");
    let spec = Spec::new(&format!(
        "version: 1\nname: hidden-{hidden}\nvhosts:\n  {hidden}:\n    queues:\n      \"\\u200Bz\": {{}}\n      z: {{}}\n"
    ));
    let plan = node.plan(spec.arg()).expect(0);
    assert!(
        plan.stdout.contains("\\u{200b}z") && !plan.stdout.contains('\u{200B}'),
        "{version:?}: {}",
        plan.stdout
    );
}
