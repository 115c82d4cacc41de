//! `warren status`: what each consumer of a spec looks like on the live broker. Its
//! work queues (messages, consumers, rates), each tier's waiting messages, the
//! parking queue and the age of its oldest message, and what is wrong: a work queue
//! nobody consumes, a queue not applied yet, a queue under another policy than the one
//! warren generated for it, a parking queue that fills.
//!
//! [`against_broker`] reads the broker in a number of requests that does not grow
//! with the consumers (the version, then per vhost one statistics listing, its
//! policies and its operator policies); [`report()`] is the pure part, the compiled spec × what was read. Nothing
//! here names an object: the queues come from the consumer contract, the expected
//! policy from [`CompiledPolicies::choose`](crate::model::effective::CompiledPolicies::choose)
//! over the compiled policies.
//!
//! Which policy applies to a queue is read from the broker's policies (its
//! definitions), not from the `policy` of a queue's statistics: those are emitted every
//! few seconds and are missing in a queue's first seconds, so right after an apply they
//! would report a policy warren just put in place as not applied.
//!
//! This file reads the broker and checks the filters; the report's fields are in
//! `report.rs`, the report made consumer by consumer in `consumers.rs`, each queue's
//! figures and problems in `queues.rs`, and what `--inspect` reads in `inspect.rs`.

use std::collections::BTreeSet;
use std::time::SystemTime;

use crate::broker::{BrokerError, Client};
use crate::compile::contract::ConsumerContract;
use crate::compile::{self, Options};
use crate::model::TargetVersion;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{SpecFile, not_in_spec};

mod consumers;
mod inspect;
mod queues;
mod report;
#[cfg(test)]
mod tests;

pub use consumers::{Live, report};
pub use inspect::{BrokerPolicies, Waiting, inspection};
pub use report::{
    ConsumerStatus, FORMAT, Parking, Problem, ProblemKind, Report, Tier, TierInspection, WorkQueue,
};

/// Which consumers to report: `--vhost` and `--service`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    /// Only this vhost.
    pub vhost: Option<&'a str>,
    /// Only this service.
    pub service: Option<&'a str>,
}

impl Filter<'_> {
    /// Checks that the spec has the vhost and the service asked for: an error that
    /// lists the choices otherwise.
    pub fn check(&self, file: &SpecFile) -> Result<(), String> {
        let vhosts = &file.spec.vhosts;
        if let Some(vhost) = self.vhost
            && !vhosts.contains_key(vhost)
        {
            let known: Vec<String> = vhosts.keys().cloned().collect();
            return Err(not_in_spec("vhost", vhost, &known));
        }
        if let Some(service) = self.service {
            let known: BTreeSet<String> = vhosts
                .iter()
                .filter(|(name, _)| self.vhost.is_none_or(|v| v == name.as_str()))
                .flat_map(|(_, vhost)| vhost.services.keys().cloned())
                .collect();
            if !known.contains(service) {
                let known: Vec<String> = known.into_iter().collect();
                return Err(not_in_spec("service", service, &known));
            }
        }
        Ok(())
    }

    /// Whether a consumer is chosen.
    fn keeps(&self, consumer: &ConsumerContract) -> bool {
        self.vhost.is_none_or(|v| v == consumer.vhost)
            && self.service.is_none_or(|s| s == consumer.service)
    }
}

/// Why `warren status` could not report.
#[derive(Debug)]
pub enum StatusError {
    /// The spec does not compile.
    Invalid(Vec<Diagnostic>),
    /// `--vhost` or `--service` names what the spec does not have.
    Filter(String),
    /// The broker could not be read.
    Broker(BrokerError),
}

/// Reads the broker and reports on the spec's consumers that `filter` keeps: the
/// broker's version (which the spec is compiled for, unless `target` says), then the
/// statistics of the queues of each vhost of those consumers, one request per vhost.
/// With `inspect`, up to that many messages at the head of each delay queue are read
/// over AMQP and given back ([`inspection`] says which queues).
pub async fn against_broker(
    client: &Client,
    file: &SpecFile,
    target: Option<TargetVersion>,
    filter: Filter<'_>,
    inspect: Option<usize>,
) -> Result<Report, StatusError> {
    filter.check(file).map_err(StatusError::Filter)?;
    let version = client.version().await.map_err(StatusError::Broker)?;
    let broker = TargetVersion::of_broker(&version);
    let target = target.unwrap_or(broker);
    // Only queue names and policies matter here: no secret is read.
    let options = Options {
        target,
        secrets: None,
    };
    let compiled = compile::compile(file, &options).map_err(StatusError::Invalid)?;
    let consumers: Vec<&ConsumerContract> = compiled
        .contract
        .consumers
        .iter()
        .filter(|consumer| filter.keeps(consumer))
        .collect();
    let mut vhosts: Vec<String> = Vec::new();
    for consumer in &consumers {
        if !vhosts.contains(&consumer.vhost) {
            vhosts.push(consumer.vhost.clone());
        }
    }
    let (statistics, policies, operator_policies) = tokio::try_join!(
        client.queue_statistics(&vhosts),
        client.policies(&vhosts),
        client.operator_policies(&vhosts)
    )
    .map_err(StatusError::Broker)?;
    let mut read = Vec::new();
    if let Some(per_queue) = inspect {
        let on_the_broker = BrokerPolicies::new(&policies, &operator_policies, broker);
        for (vhost, queues) in inspection(&consumers, &compiled.definitions, &on_the_broker) {
            let queues: Vec<&str> = queues.iter().map(String::as_str).collect();
            read.extend(
                client
                    .waiting_deaths(&vhost, &queues, per_queue)
                    .await
                    .map_err(StatusError::Broker)?,
            );
        }
    }
    let live = Live {
        statistics: &statistics,
        policies: &policies,
        operator_policies: &operator_policies,
        waiting: inspect.map(|_| Waiting {
            read: &read,
            broker,
        }),
    };
    Ok(report(
        &consumers,
        &compiled.definitions,
        &live,
        target,
        SystemTime::now(),
    ))
}
