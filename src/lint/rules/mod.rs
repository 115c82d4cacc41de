//! The rule registry: one rule per file.

mod alternate_exchange_missing;
mod argument_unsupported_by_queue_type;
mod classic_queue_in_retry_loop;
mod cycle_on_3_13;
mod dead_letter_cycle_dropped;
mod dead_letter_exchange_missing;
mod dead_letter_hot_loop;
mod dead_letter_unroutable;
mod delay_queue_expires;
mod delayed_message_exchange;
mod delayed_retry_default_limit;
mod delivery_limit_ignores_nack;
mod delivery_limit_into_own_loop;
pub(crate) mod graph;
mod guest_user;
mod ladder;
mod name_differs_only_by_case;
mod operator_policy_conflict;
mod permission_broader_than_needed;
mod permission_crosses_services;
mod policy_priority_tie;
mod policy_shadows_dead_lettering;
mod policy_shadows_native_retry;
mod policy_skipped_for_queue_type;
mod policy_ttl_shortens_queue;
mod queue_captured_by_retry_tier;
mod quorum_without_delivery_limit;
mod retry_returns_to_several_queues;
mod setting_without_effect;
mod work_queue_overflow_into_own_loop;

use super::Rule;

/// Every rule, in the order `warren rules` lists them.
pub static RULES: &[Rule] = &[
    dead_letter_exchange_missing::RULE,
    dead_letter_unroutable::RULE,
    alternate_exchange_missing::RULE,
    dead_letter_hot_loop::RULE,
    dead_letter_cycle_dropped::RULE,
    delivery_limit_into_own_loop::RULE,
    work_queue_overflow_into_own_loop::RULE,
    cycle_on_3_13::RULE,
    delay_queue_expires::RULE,
    retry_returns_to_several_queues::RULE,
    ladder::NOT_INCREASING,
    ladder::ZERO_DELAY,
    ladder::TOO_LONG,
    queue_captured_by_retry_tier::RULE,
    policy_priority_tie::RULE,
    policy_skipped_for_queue_type::RULE,
    policy_ttl_shortens_queue::RULE,
    policy_shadows_dead_lettering::RULE,
    policy_shadows_native_retry::RULE,
    operator_policy_conflict::RULE,
    argument_unsupported_by_queue_type::RULE,
    classic_queue_in_retry_loop::RULE,
    quorum_without_delivery_limit::RULE,
    delayed_message_exchange::RULE,
    delayed_retry_default_limit::RULE,
    delivery_limit_ignores_nack::RULE,
    setting_without_effect::RULE,
    name_differs_only_by_case::RULE,
    guest_user::RULE,
    permission_crosses_services::RULE,
    permission_broader_than_needed::RULE,
];
