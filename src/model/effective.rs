//! Which policy the broker applies to a queue: the one rule, used by the compiler (to
//! merge user policies into generated ones), the lint (to know a queue's effective
//! settings) and the tests.
//!
//! The broker picks, among the policies of the queue's vhost whose pattern matches the
//! name, whose `apply-to` covers the queue's type and whose every key that type
//! supports, the one with the highest priority (ties are broken here by name, so the
//! answer is stable; the broker leaves them undefined).

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

/// What [`CompiledPolicies::choose`] finds for one queue.
pub struct Choice<'p, P> {
    /// The policy the broker applies, if any.
    pub winner: Option<&'p P>,
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
        let winner = matching
            .iter()
            .filter(|p| {
                policy_keys::applies_to_queue_type(p.as_ref().definition.keys(), kind, target)
            })
            .max_by(|a, b| outranks(a.as_ref(), b.as_ref()))
            .copied();
        Choice { winner, matching }
    }

    /// The policy the broker applies to an exchange named `name` in `vhost`: the
    /// highest-priority match among those whose `apply-to` covers exchanges.
    pub fn choose_for_exchange(&self, vhost: &str, name: &str) -> Option<&'p P> {
        self.policies
            .iter()
            .filter(|(p, matcher)| {
                let p = p.as_ref();
                p.vhost == vhost
                    && matches!(p.apply_to.as_str(), "exchanges" | "all")
                    && matcher.is_match(name)
            })
            .map(|(p, _)| *p)
            .max_by(|a, b| outranks(a.as_ref(), b.as_ref()))
    }
}

/// Which of two matching policies wins: the higher priority, ties broken by name.
fn outranks(a: &Policy, b: &Policy) -> std::cmp::Ordering {
    a.priority.cmp(&b.priority).then(b.name.cmp(&a.name))
}

/// The policy the broker applies to `queue`, if any.
pub fn effective_policy<'a>(
    policies: &'a [Policy],
    queue: &Queue,
    target: TargetVersion,
) -> Option<&'a Policy> {
    CompiledPolicies::new(policies)
        .choose(&queue.vhost, &queue.name, QueueType::of(queue), target)
        .winner
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
}
