//! Which policy the broker applies to a queue: the one rule, used by the compiler (to
//! merge user policies into generated ones), the lint (to know a queue's effective
//! settings) and the tests.
//!
//! The broker picks, among the policies of the queue's vhost whose pattern matches the
//! name, whose `apply-to` covers the queue's type and whose every key that type
//! supports, the one with the highest priority. Between policies of the same highest
//! priority the broker decides nothing on purpose: it sorts the matching policies by
//! priority alone, a stable sort of the order its parameter store lists them in, and
//! takes the first (docs/topology.md, "Ties"). That order is neither the names' nor
//! the order of creation, so no rule here can predict it: [`choose`] answers with a
//! [`Winner::Tie`] of the candidates instead of a guess, and every caller says what a
//! tie means for it.
//!
//! [`choose`]: CompiledPolicies::choose

use super::pattern::PatternMatcher;
use super::policy_keys;
use super::{Policy, Queue, QueueType, TargetVersion};

/// Whether a policy's `apply-to` covers a queue of this type.
pub fn applies_to(apply_to: &str, queue_type: QueueType) -> bool {
    match apply_to {
        "queues" | "all" => true,
        "classic_queues" => queue_type == QueueType::Classic,
        "quorum_queues" => queue_type == QueueType::Quorum,
        "streams" => queue_type == QueueType::Stream,
        _ => false,
    }
}

/// Policies with their patterns compiled once, to be matched against many queues.
pub struct CompiledPolicies<'p, P> {
    policies: Vec<(&'p P, PatternMatcher)>,
}

/// Which policy the broker applies to one queue or exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Winner<'p, P> {
    /// No policy applies.
    None,
    /// This policy applies: its priority is above every other match's.
    One(&'p P),
    /// Two or more policies share the highest priority: the broker applies one of
    /// them, and which one is not knowable from the definitions. In name order.
    Tie(Vec<&'p P>),
}

impl<'p, P: AsRef<Policy>> Winner<'p, P> {
    /// The policy that applies, when one does and is known.
    pub fn one(&self) -> Option<&'p P> {
        match self {
            Winner::One(policy) => Some(policy),
            Winner::None | Winner::Tie(_) => None,
        }
    }

    /// The tied candidates (empty unless [`Winner::Tie`]).
    pub fn tied(&self) -> &[&'p P] {
        match self {
            Winner::Tie(tied) => tied,
            Winner::None | Winner::One(_) => &[],
        }
    }

    /// Whether any policy applies (a tie applies one of its candidates).
    pub fn is_some(&self) -> bool {
        !matches!(self, Winner::None)
    }

    /// The winner among `candidates`: the highest priority, a tie when it is shared.
    fn of(candidates: impl IntoIterator<Item = &'p P>) -> Winner<'p, P> {
        let mut top: Vec<&'p P> = Vec::new();
        for candidate in candidates {
            let priority = candidate.as_ref().priority;
            match top.first().map(|p| p.as_ref().priority) {
                Some(best) if best > priority => {}
                Some(best) if best == priority => top.push(candidate),
                _ => top = vec![candidate],
            }
        }
        match top.len() {
            0 => Winner::None,
            1 => Winner::One(top[0]),
            _ => {
                top.sort_by(|a, b| a.as_ref().name.cmp(&b.as_ref().name));
                Winner::Tie(top)
            }
        }
    }
}

/// What [`CompiledPolicies::choose`] finds for one queue.
pub struct Choice<'p, P> {
    /// The policy the broker applies: none, one, or a tie.
    pub winner: Winner<'p, P>,
    /// Every policy whose pattern and `apply-to` match, applicable or not.
    pub matching: Vec<&'p P>,
}

impl<'p, P: AsRef<Policy>> CompiledPolicies<'p, P> {
    /// Compiles every policy's pattern once.
    pub fn new(policies: impl IntoIterator<Item = &'p P>) -> Self {
        CompiledPolicies {
            policies: policies
                .into_iter()
                .map(|p| (p, PatternMatcher::new(&p.as_ref().pattern)))
                .collect(),
        }
    }

    /// The policy the broker applies to a queue named `name` of type `kind` in `vhost`.
    pub fn choose(
        &self,
        vhost: &str,
        name: &str,
        kind: QueueType,
        target: TargetVersion,
    ) -> Choice<'p, P> {
        let matching: Vec<&'p P> = self
            .policies
            .iter()
            .filter(|(p, matcher)| {
                let p = p.as_ref();
                p.vhost == vhost && applies_to(&p.apply_to, kind) && matcher.is_match(name)
            })
            .map(|(p, _)| *p)
            .collect();
        let winner = Winner::of(matching.iter().copied().filter(|p| {
            policy_keys::applies_to_queue_type(p.as_ref().definition.keys(), kind, target)
        }));
        Choice { winner, matching }
    }

    /// The policy the broker applies to an exchange named `name` in `vhost`: the
    /// highest-priority match among those whose `apply-to` covers exchanges.
    pub fn choose_for_exchange(&self, vhost: &str, name: &str) -> Winner<'p, P> {
        Winner::of(
            self.policies
                .iter()
                .filter(|(p, matcher)| {
                    let p = p.as_ref();
                    p.vhost == vhost
                        && matches!(p.apply_to.as_str(), "exchanges" | "all")
                        && matcher.is_match(name)
                })
                .map(|(p, _)| *p),
        )
    }
}

/// The policy the broker applies to `queue`, if one does and it is known (not a tie).
pub fn effective_policy<'a>(
    policies: &'a [Policy],
    queue: &Queue,
    target: TargetVersion,
) -> Option<&'a Policy> {
    CompiledPolicies::new(policies)
        .choose(&queue.vhost, &queue.name, QueueType::of(queue), target)
        .winner
        .one()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_to_covers_the_right_queue_types() {
        assert!(applies_to("queues", QueueType::Stream));
        assert!(applies_to("quorum_queues", QueueType::Quorum));
        assert!(!applies_to("classic_queues", QueueType::Quorum));
        assert!(!applies_to("exchanges", QueueType::Classic));
    }

    fn policy(name: &str, priority: i64) -> Policy {
        Policy {
            vhost: "v".into(),
            name: name.into(),
            pattern: "^q$".into(),
            apply_to: "queues".into(),
            definition: Default::default(),
            priority,
        }
    }

    #[test]
    fn equal_priorities_are_a_tie_never_a_guess_by_name() {
        let policies = [policy("zz-ops", 100), policy("aa", 100), policy("low", 5)];
        let choice = CompiledPolicies::new(&policies).choose(
            "v",
            "q",
            QueueType::Classic,
            TargetVersion::DEFAULT,
        );
        let tied: Vec<&str> = choice
            .winner
            .tied()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(tied, ["aa", "zz-ops"]);
        assert!(choice.winner.one().is_none());
        assert_eq!(choice.matching.len(), 3);
        let higher = [policy("zz-ops", 100), policy("aa", 101)];
        let choice = CompiledPolicies::new(&higher).choose(
            "v",
            "q",
            QueueType::Classic,
            TargetVersion::DEFAULT,
        );
        assert_eq!(choice.winner.one().map(|p| p.name.as_str()), Some("aa"));
    }
}
