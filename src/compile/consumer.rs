//! What the compiler knows of one consumer while it emits the consumer's work queue
//! and retry ladder: shared by the service emitter and the retry emitter.

use serde_json::Value;

use super::{Emitter, PolicyNeed, naming};
use crate::model::Arguments;
use crate::spec::{DeliveryLimit, ExchangeType, QueueType, SpecPath, Unlimited};

/// The parts of a consumer the retry emitter needs.
pub(crate) struct ConsumerContext<'a> {
    pub vhost: &'a str,
    pub service: &'a str,
    pub consumer: &'a str,
    /// The user the consumer's application logs in as (`user:`), if named.
    pub user: Option<&'a str>,
    pub inner_exchange: &'a str,
    pub inner_type: ExchangeType,
    pub routing_keys: &'a [String],
    pub work_queue: String,
    pub work_type: QueueType,
    pub delivery_limit: Option<DeliveryLimit>,
    pub path: SpecPath,
}

/// The delivery limit of a quorum parking queue: unlimited, from the vhost's parking
/// policy, which selects every generated parking queue by its ending; nothing to set
/// before 4.0, where quorum queues have no default limit.
pub(crate) fn parking_delivery_need(out: &Emitter, path: &SpecPath) -> Option<PolicyNeed> {
    if !out.options.target.has_default_delivery_limit() {
        return None;
    }
    let mut definition = Arguments::new();
    definition.insert("delivery-limit".into(), Value::from(-1));
    Some(PolicyNeed {
        group: naming::parking_group(),
        ending: Some(naming::PARKING_ENDING.to_string()),
        definition,
        path: path.clone(),
    })
}

/// Settings for a quorum queue's delivery limit, when a policy must set it.
pub(crate) fn delivery_limit_need(
    out: &Emitter,
    limit: Option<DeliveryLimit>,
    has_retry: bool,
    path: &SpecPath,
) -> Option<PolicyNeed> {
    let effective = match limit {
        Some(limit) => limit,
        // Without a ladder the broker's own default applies.
        None if !has_retry => return None,
        // A ladder makes unlimited the default: a message dead-lettered for exceeding the
        // limit would enter the ladder and be dropped by cycle detection on its way back.
        None => DeliveryLimit::Keyword(Unlimited::Unlimited),
    };
    let (group, value) = match effective {
        DeliveryLimit::Count(n) => (naming::delivery_limit_group(n), Value::from(n)),
        DeliveryLimit::Keyword(_) => {
            if !out.options.target.has_default_delivery_limit() {
                // No default limit before 4.0: nothing to set.
                return None;
            }
            (naming::unlimited_delivery_group(), Value::from(-1))
        }
    };
    let mut definition = Arguments::new();
    definition.insert("delivery-limit".into(), value);
    Some(PolicyNeed {
        group,
        ending: None,
        definition,
        path: path.clone(),
    })
}
