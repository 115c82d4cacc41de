//! Why a plan cannot be applied, as data: `apply` refuses with it, `plan` exits with
//! it, and every rendering of a plan says it. Its [`Display`](std::fmt::Display) is
//! the one sentence that names the first reason (and how many more of its kind there
//! are): apply's error, the recheck of a saved plan and the markdown caution all print
//! that sentence, so they cannot drift apart.

use std::fmt;

use super::{Captured, Conflict, Overlap, Strand, StrandRoute, Tie};
use crate::broker::QueueHeld;

/// The first reason a plan cannot be applied, in the order apply checks them, with the
/// number of further reasons of the same kind.
#[derive(Debug, Clone)]
pub enum Refusal {
    /// A desired object another spec manages.
    Conflict { first: Conflict, others: usize },
    /// A live queue the spec does not declare that a generated policy would apply to.
    Captured { first: Captured, others: usize },
    /// A generated policy that selects what another spec's generated policy selects.
    Overlap { first: Overlap, others: usize },
    /// Policies of the same highest priority that all match a managed queue or
    /// exchange.
    Tie { first: Tie, others: usize },
}

impl Refusal {
    /// The refusal of a plan with these conflicts, captured queues and overlaps, if any.
    pub fn of(
        conflicts: &[Conflict],
        captured: &[Captured],
        overlaps: &[Overlap],
        ties: &[Tie],
    ) -> Option<Refusal> {
        if let Some(first) = conflicts.first() {
            return Some(Refusal::Conflict {
                first: first.clone(),
                others: conflicts.len() - 1,
            });
        }
        if let Some(first) = captured.first() {
            return Some(Refusal::Captured {
                first: first.clone(),
                others: captured.len() - 1,
            });
        }
        if let Some(first) = overlaps.first() {
            return Some(Refusal::Overlap {
                first: first.clone(),
                others: overlaps.len() - 1,
            });
        }
        ties.first().map(|first| Refusal::Tie {
            first: first.clone(),
            others: ties.len() - 1,
        })
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let others = match self {
            Refusal::Conflict { first, others } => {
                write!(f, "{} is managed by spec `{}`", first.id, first.owner)?;
                others
            }
            Refusal::Captured { first, others } => {
                let owner = match &first.owner {
                    Some(owner) => format!("spec `{owner}` manages it"),
                    None => NO_SPEC_MANAGES_IT.to_string(),
                };
                write!(
                    f,
                    "generated policy `{}` would apply to {}, which the spec does not declare ({owner}): rename or delete that queue",
                    first.policy, first.queue
                )?;
                others
            }
            Refusal::Overlap { first, others } => {
                write!(
                    f,
                    "generated policy `{}` and policy `{}` of spec `{}` both select {}: rename a ladder or service in one spec",
                    first.policy.name, first.other, first.owner, first.common
                )?;
                others
            }
            Refusal::Tie { first, others } => {
                write!(f, "{}", tie_sentence(first))?;
                others
            }
        };
        match others {
            0 => Ok(()),
            n => write!(f, " (and {n} more)"),
        }
    }
}

/// How a plan, and apply's refusal, say a queue's messages are stranded: `queue "a"
/// in vhost "v" dead-letters into queue "b" in vhost "v", which the plan removes`.
pub fn stranding(strand: &Strand) -> String {
    match strand.route {
        StrandRoute::DeadLetters => format!(
            "{} dead-letters into {}, which the plan deletes: its messages would expire or be rejected to nowhere",
            strand.queue, strand.into
        ),
        StrandRoute::ParkedFor => format!(
            "{} is the parking queue of {}, which the plan deletes: its messages would have no way back",
            strand.queue, strand.into
        ),
    }
}

/// What a queue holds at the check before an apply's first write, after its name:
/// `holds 5 ready messages`, `has 1 consumer (its unacknowledged messages would be
/// lost)`, and why it matters when the plan does not delete it itself.
pub fn held_now(held: &QueueHeld, strand: Option<&Strand>) -> String {
    let mut parts = Vec::new();
    if held.ready > 0 {
        parts.push(format!(
            "holds {}",
            crate::text::count(u64::from(held.ready), "ready message")
        ));
    }
    if held.unacknowledged > 0 {
        parts.push(format!(
            "holds {}",
            crate::text::count(held.unacknowledged, "unacknowledged message")
        ));
    }
    if held.delayed > 0 {
        parts.push(format!(
            "holds {} back for a delayed retry",
            crate::text::count(held.delayed, "message")
        ));
    }
    if held.consumers > 0 {
        parts.push(format!(
            "has {} (in use: what it has not acknowledged would be lost)",
            crate::text::count(u64::from(held.consumers), "consumer")
        ));
    }
    let mut text = parts.join(" and ");
    if let Some(strand) = strand {
        let why = match strand.route {
            StrandRoute::DeadLetters => "it dead-letters into",
            StrandRoute::ParkedFor => "it is the parking queue of",
        };
        text.push_str(&format!(
            " and {why} {}, which the plan deletes",
            strand.into
        ));
    }
    text
}

/// A permission the user lacks in a vhost, for the objects that need it (kind, name,
/// the change), and the fix.
pub fn permission_missing(
    vhost: &str,
    access: &str,
    objects: Vec<(&str, &str, &str)>,
    has_any: bool,
) -> String {
    let (kind, name, change) = objects[0];
    let more = match objects.len() - 1 {
        0 => String::new(),
        n => format!(" (and {} more)", crate::text::count(n as u64, "object")),
    };
    let has = if has_any {
        "its permissions there do not match it"
    } else {
        "it has no permissions there (the `administrator` tag grants none)"
    };
    format!(
        "in vhost {vhost:?}, `{access}` on {kind} {name:?}, needed to {change}{more}: {has}; grant it, e.g. `rabbitmqctl set_permissions -p {vhost} USER '.*' '.*' '.*'` (docs/ci.md)"
    )
}

/// The policies of a tie with their owners: `` `a` (spec `shop`) and `zz-ops` (no spec
/// manages it) ``.
pub fn tied_policies(tie: &Tie) -> String {
    let each: Vec<String> = tie
        .policies
        .iter()
        .map(|p| match &p.owner {
            Some(owner) => format!("`{}` (spec `{owner}`)", p.name),
            None => format!("`{}` ({NO_SPEC_MANAGES_IT})", p.name),
        })
        .collect();
    each.join(" and ")
}

/// What is done about a tie.
pub const TIE_FIX: &str = "give one of them a priority that decides (for warren's generated policies, the spec's `policy_priority`), or narrow a pattern so they no longer both match";

/// The sentence of one tie: which policies, on what, and the fix.
pub fn tie_sentence(tie: &Tie) -> String {
    let kind = if tie.operator {
        "operator policies"
    } else {
        "policies"
    };
    format!(
        "{kind} {} have the same priority {} and both match {}: the broker applies one of them, and which one is not knowable; {TIE_FIX}",
        tied_policies(tie),
        tie.priority,
        tie.id
    )
}

/// What a captured queue without an owner is said to be, here and in the plan's list.
pub const NO_SPEC_MANAGES_IT: &str = "no spec manages it";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ObjectId, ObjectKind};

    fn queue(name: &str) -> ObjectId {
        ObjectId::in_vhost(ObjectKind::Queue, "shop", name)
    }

    #[test]
    fn conflicts_come_first_and_the_others_are_counted() {
        let conflicts = vec![
            Conflict {
                id: queue("a"),
                owner: "billing".into(),
            },
            Conflict {
                id: queue("b"),
                owner: "billing".into(),
            },
        ];
        let captured = vec![Captured {
            queue: queue("x.retry.1"),
            policy: "warren.retry.defaults.1".into(),
            owner: None,
        }];
        let refusal = Refusal::of(&conflicts, &captured, &[], &[]).unwrap();
        assert_eq!(
            refusal.to_string(),
            "queue \"a\" in vhost \"shop\" is managed by spec `billing` (and 1 more)"
        );
        let refusal = Refusal::of(&[], &captured, &[], &[]).unwrap();
        assert_eq!(
            refusal.to_string(),
            "generated policy `warren.retry.defaults.1` would apply to queue \"x.retry.1\" in vhost \"shop\", which the spec does not declare (no spec manages it): rename or delete that queue"
        );
        assert!(Refusal::of(&[], &[], &[], &[]).is_none());
    }
}
