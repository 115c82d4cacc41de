use super::*;
use crate::diff::Change;
use crate::model::ObjectKind;
use serde_json::json;

fn queue(name: &str) -> ObjectId {
    ObjectId::in_vhost(ObjectKind::Queue, "shop", name)
}

fn kinds(sections: &[Section<'_>]) -> Vec<&'static str> {
    sections
        .iter()
        .map(|s| match s {
            Section::Header(_) => "header",
            Section::Refusals(_) => "refusals",
            Section::NoChanges { .. } => "no changes",
            Section::Drift(_) => "drift",
            Section::Hazards(_) => "hazards",
            Section::Adopted(_) => "adopted",
            Section::DataLoss(_) => "data loss",
            Section::Changes(_) => "changes",
            Section::Unmanaged(_) => "unmanaged",
            Section::Migrations(_) => "migrations",
            Section::Summary(_) => "summary",
            Section::CannotBeApplied(_) => "cannot be applied",
            Section::UnknownPasswords(_) => "unknown passwords",
            Section::Stranded(_) => "stranded",
        })
        .collect()
}

#[test]
fn sections_come_in_the_text_plans_order_and_empty_ones_are_left_out() {
    let empty = Plan::of_changes(vec![], vec![]);
    assert_eq!(
        kinds(&sections(&empty)),
        ["header", "no changes", "summary"]
    );
    let mut deleted = Change::new(
        crate::diff::Action::Delete,
        queue("old"),
        Some(json!({"durable": true, "arguments": {}})),
        None,
    );
    deleted.messages = Some(3);
    let mut plan = Plan::of_changes(vec![deleted], vec![]);
    plan.unmanaged.push(queue("handmade"));
    plan.unknown_passwords
        .insert("ops".into(), "environment variable `OPS`".into());
    plan.summarize();
    assert_eq!(
        kinds(&sections(&plan)),
        [
            "header",
            "data loss",
            "changes",
            "unmanaged",
            "summary",
            "unknown passwords"
        ]
    );
}

#[test]
fn a_refused_plan_lists_every_reason_and_ends_with_the_first() {
    let mut plan = Plan::of_changes(vec![], vec![]);
    for name in ["a", "b"] {
        plan.conflicts.push(Conflict {
            id: queue(name),
            owner: "billing".into(),
        });
    }
    plan.captured.push(Captured {
        queue: queue("x.retry.1"),
        policy: "warren.retry.defaults.1".into(),
        owner: None,
    });
    let all = sections(&plan);
    assert_eq!(
        kinds(&all),
        [
            "header",
            "refusals",
            "refusals",
            "no changes",
            "summary",
            "cannot be applied"
        ]
    );
    // A plan whose only difference is refused does not say the broker matches it.
    assert!(matches!(
        all[3],
        Section::NoChanges {
            differs: Differs::Refused,
            ..
        }
    ));
    assert_eq!(
        no_changes(Differs::Refused, Compared::Broker),
        (
            "No other changes.",
            "The broker differs from the spec where it is refused above.".to_string()
        )
    );
    let Section::Refusals(conflicts) = &all[1] else {
        panic!("conflicts first")
    };
    assert_eq!(
        conflicts.heading,
        "Managed by another spec (this plan cannot be applied):"
    );
    assert_eq!(conflicts.items.len(), 2);
    assert_eq!(conflicts.items[1].aside.as_deref(), Some("spec `billing`"));
    let Some(Section::CannotBeApplied(refusal)) = all.last() else {
        panic!("the refusal last")
    };
    assert_eq!(
        refusal.to_string(),
        "queue \"a\" in vhost \"shop\" is managed by spec `billing` (and 1 more)"
    );
}

#[test]
fn each_note_has_one_wording_in_two_forms() {
    struct Plain;
    impl Quote for Plain {
        fn code(&self, name: &str) -> String {
            format!("<{name}>")
        }
    }
    let lost = Note::Loss(Loss::Lost("12 messages".into()));
    assert_eq!(lost.span().text, "DATA LOSS: 12 messages");
    assert_eq!(
        lost.short(&|t| t.to_string(), &Plain).text,
        "data loss: 12 messages"
    );
    assert!(lost.span().strong && lost.span().tone == Tone::Danger);
    let moved = Note::Loss(Loss::Migrated("12 messages".into()));
    assert_eq!(moved.span().text, "12 messages: moved with --migrate");
    assert_eq!(
        moved.short(&|t| t.to_string(), &Plain).text,
        "12 messages: moved with <--migrate>"
    );
    let unknown = Note::PasswordUnknown("`OPS`");
    assert_eq!(
        unknown.span().text,
        "(password unknown: `OPS` not set here)"
    );
    assert_eq!(
        unknown.short(&|t| t.replace('`', "'"), &Plain).text,
        "password unknown: 'OPS' not set here"
    );
    assert_eq!(Note::Unmanaged.span().text, "(unmanaged, pruned)");
    assert_eq!(kind_heading(ObjectKind::VhostLimits), "limits");
    assert_eq!(
        kind_heading(ObjectKind::OperatorPolicy),
        "operator policies"
    );
    assert_eq!(counted(1_975_usize, "policy", "policies"), "1,975 policies");
    assert_eq!(more(2, "vhost", "vhosts"), "2 more vhosts");
}
