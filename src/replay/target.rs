//! Which consumer `--queue` names: the one whose work queue or parking queue it is,
//! found in the compiled consumer contract, so that only a parking queue of the spec
//! can be emptied, and only into its own consumer's work queue.

use crate::compile::contract::{ConsumerContract, Contract};
use crate::model::headers::Replay;
use crate::spec::RetryMode;

/// The consumer whose parked messages a replay moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Vhost.
    pub vhost: String,
    /// Service.
    pub service: String,
    /// Consumer.
    pub consumer: String,
    /// How the consumer retries (what a replay resets, docs/operating.md).
    pub mode: RetryMode,
    /// The parking queue.
    pub parking: String,
    /// What happens to each message; names the work queue.
    pub rule: Replay,
}

/// Why `--queue` names no consumer whose messages can be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// No consumer of the spec has this work or parking queue.
    #[error("{}", not_parking(queue, vhost.as_deref(), choices))]
    NotParking {
        /// The queue given.
        queue: String,
        /// `--vhost`, when given.
        vhost: Option<String>,
        /// The parking queues of the spec, as `vhost/queue`.
        choices: Vec<String>,
    },
    /// The consumer parks nothing: no ladder, or `on_exhausted: drop`.
    #[error(
        "consumer `{service}.{consumer}` has no parking queue ({why}): there is nothing to replay"
    )]
    NoParking {
        /// Service.
        service: String,
        /// Consumer.
        consumer: String,
        /// Why, in words.
        why: String,
    },
    /// The queue name is a consumer's in several vhosts.
    #[error("queue `{queue}` is in vhosts {}: choose one with --vhost", vhosts.join(", "))]
    Ambiguous {
        /// The queue.
        queue: String,
        /// The vhosts, as `vhost`.
        vhosts: Vec<String>,
    },
}

fn not_parking(queue: &str, vhost: Option<&str>, choices: &[String]) -> String {
    let place = vhost.map_or(String::new(), |v| format!(" in vhost `{v}`"));
    let mut text = format!(
        "queue `{queue}`{place} is not a parking queue of the spec, nor the work queue of a consumer that parks messages"
    );
    let names: Vec<String> = choices
        .iter()
        .map(|c| {
            c.rsplit_once('/')
                .map_or(c.as_str(), |(_, q)| q)
                .to_string()
        })
        .collect();
    if let Some(close) = crate::suggest::closest(queue, &names) {
        text.push_str(&format!(" (did you mean `{close}`?)"));
    }
    if choices.is_empty() {
        text.push_str("; the spec parks no messages");
    } else {
        text.push_str(&format!("; its parking queues: {}", choices.join(", ")));
    }
    text
}

/// The consumer whose work queue or parking queue is `queue` (in `vhost` when given).
pub fn find(contract: &Contract, queue: &str, vhost: Option<&str>) -> Result<Target, TargetError> {
    let in_vhost = |c: &&ConsumerContract| vhost.is_none_or(|v| c.vhost == v);
    let parking =
        |c: &ConsumerContract| c.retry.as_ref().and_then(|r| r.on_exhausted.queue.clone());
    let matches: Vec<&ConsumerContract> = contract
        .consumers
        .iter()
        .filter(in_vhost)
        .filter(|c| c.queue == queue || parking(c).as_deref() == Some(queue))
        .collect();
    let consumer = match matches.as_slice() {
        [one] => *one,
        [] => {
            return Err(TargetError::NotParking {
                queue: queue.to_string(),
                vhost: vhost.map(str::to_string),
                choices: contract
                    .consumers
                    .iter()
                    .filter(in_vhost)
                    .filter_map(|c| parking(c).map(|p| format!("{}/{p}", c.vhost)))
                    .collect(),
            });
        }
        several => {
            let mut vhosts: Vec<String> =
                several.iter().map(|c| format!("`{}`", c.vhost)).collect();
            vhosts.dedup();
            return Err(TargetError::Ambiguous {
                queue: queue.to_string(),
                vhosts,
            });
        }
    };
    let no_parking = |why: &str| TargetError::NoParking {
        service: consumer.service.clone(),
        consumer: consumer.consumer.clone(),
        why: why.to_string(),
    };
    let Some(retry) = &consumer.retry else {
        return Err(no_parking("it has no retry ladder"));
    };
    let Some(parking) = retry.on_exhausted.queue.clone() else {
        return Err(no_parking(
            "its ladder drops exhausted messages: `on_exhausted: drop`",
        ));
    };
    Ok(Target {
        vhost: consumer.vhost.clone(),
        service: consumer.service.clone(),
        consumer: consumer.consumer.clone(),
        mode: retry.mode,
        parking,
        rule: Replay {
            work_queue: consumer.queue.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::compile::{Options, compile};
    use crate::spec::load_str;

    fn contract(yaml: &str) -> Contract {
        let file = load_str(Path::new("t.yaml"), yaml.to_string()).unwrap();
        compile(&file, &Options::default())
            .unwrap_or_else(|d| panic!("{d:#?}"))
            .contract
    }

    const SPEC: &str = "version: 1
vhosts:
  a:
    services:
      orders:
        consumers:
          email:
            routing_keys: [order.created]
            retry: { delays: [1s, 2s], mode: reject-chain }
          audit:
            routing_keys: [order.created]
          sms:
            routing_keys: [order.created]
            retry: { delays: [1s], on_exhausted: drop }
  b:
    services:
      orders:
        consumers:
          email:
            routing_keys: [order.created]
            retry: { delays: [1s] }
";

    #[test]
    fn a_parking_queue_or_its_work_queue_names_the_consumer() {
        let contract = contract(SPEC);
        let by_parking = find(&contract, "orders.email.parking", Some("a")).unwrap();
        let by_work = find(&contract, "orders.email", Some("a")).unwrap();
        assert_eq!(by_parking, by_work);
        assert_eq!(by_parking.vhost, "a");
        assert_eq!(by_parking.mode, RetryMode::RejectChain);
        assert_eq!(by_parking.rule.work_queue, "orders.email");
        assert_eq!(by_parking.parking, "orders.email.parking");
    }

    #[test]
    fn a_queue_in_two_vhosts_needs_the_vhost() {
        let contract = contract(SPEC);
        let err = find(&contract, "orders.email.parking", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "queue `orders.email.parking` is in vhosts `a`, `b`: choose one with --vhost"
        );
    }

    #[test]
    fn other_queues_are_refused_with_the_choices() {
        let contract = contract(SPEC);
        let err = find(&contract, "orders.email.retry.1", Some("a")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "queue `orders.email.retry.1` in vhost `a` is not a parking queue of the spec, nor the work queue of a consumer that parks messages (did you mean `orders.email.parking`?); its parking queues: a/orders.email.parking"
        );
        let err = find(&contract, "orders.audit", Some("a")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "consumer `orders.audit` has no parking queue (it has no retry ladder): there is nothing to replay"
        );
        let err = find(&contract, "orders.sms", Some("a")).unwrap_err();
        assert!(err.to_string().contains("`on_exhausted: drop`"), "{err}");
    }
}
