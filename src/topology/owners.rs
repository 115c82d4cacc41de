//! Which service and consumer each exchange and queue belongs to, and what it does:
//! read from the compiler's origins (the spec path that produced each object) and its
//! consumer contract (each consumer's work queue, retry exchange, delay queues by
//! tier and parking queue), never from the objects' names.

use super::{Owner, Owners, Role};
use crate::compile::Compiled;
use crate::model::{ObjectId, ObjectKind};
use crate::spec::source_map::Segment;
use crate::spec::{Duration, RetryMode, Sources, SpecFile, SpecPath};

/// The owners of every exchange and queue a spec compiled to.
pub(super) fn of_compiled(file: &SpecFile, compiled: &Compiled) -> Owners {
    let mut owners = Owners::default();
    let definitions = &compiled.definitions;
    let exchanges = definitions
        .exchanges
        .iter()
        .map(|e| (false, &e.vhost, &e.name, ObjectKind::Exchange));
    let queues = definitions
        .queues
        .iter()
        .map(|q| (true, &q.vhost, &q.name, ObjectKind::Queue));
    for (is_queue, vhost, name, kind) in exchanges.chain(queues) {
        let id = ObjectId::in_vhost(kind, vhost, name);
        let Some(path) = compiled.origins.get(&id) else {
            continue;
        };
        let owner = of_path(path);
        owners.insert((is_queue, vhost.clone(), name.clone()), owner);
    }
    for consumer in &compiled.contract.consumers {
        let mut set = |is_queue: bool, name: &str, role: Role| {
            let owner = owners
                .entry((is_queue, consumer.vhost.clone(), name.to_string()))
                .or_default();
            owner.service = Some(consumer.service.clone());
            owner.consumer = Some(consumer.consumer.clone());
            owner.role = Some(role);
        };
        set(true, &consumer.queue, Role::WorkQueue);
        for (index, queue) in consumer.consume_from.iter().enumerate().skip(1) {
            set(true, queue, Role::Attempt { attempt: index + 1 });
        }
        let Some(retry) = &consumer.retry else {
            continue;
        };
        set(false, &retry.exchange, Role::RetryExchange);
        if retry.mode == RetryMode::Native {
            let waits: Vec<&str> = retry
                .schedule
                .iter()
                .map(|step| step.delay.as_str())
                .collect();
            set(
                true,
                &consumer.queue,
                Role::WaitingWorkQueue {
                    waits: waits.join(", "),
                },
            );
        }
        for step in retry
            .schedule
            .iter()
            .filter(|_| retry.mode != RetryMode::Native)
        {
            let written = written_at(file, &step.delay_path)
                .filter(|text| Duration::parse(text).is_ok_and(|d| d.as_millis() == step.delay_ms))
                .unwrap_or_else(|| step.delay.clone());
            set(
                true,
                &step.queue,
                Role::Delay {
                    tier: step.tier,
                    written,
                    millis: step.delay_ms,
                },
            );
        }
        if let Some(parking) = &retry.on_exhausted.queue {
            set(true, parking, Role::Parking);
        }
    }
    owners
}

/// The service, consumer and (for a service's exchange) role that a spec path names:
/// `vhosts.<v>.services.<s>.exchange`, `vhosts.<v>.services.<s>.consumers.<c>…`.
fn of_path(path: &SpecPath) -> Owner {
    let segments = path.segments();
    let key = |at: usize| match segments.get(at) {
        Some(Segment::Key(key)) => Some(key.as_str()),
        _ => None,
    };
    let mut owner = Owner::default();
    if key(0) != Some("vhosts") || key(2) != Some("services") {
        return owner;
    }
    owner.service = key(3).map(str::to_string);
    match key(4) {
        Some("exchange") => owner.role = Some(Role::ServiceExchange),
        Some("consumers") => owner.consumer = key(5).map(str::to_string),
        _ => {}
    }
    owner
}

/// The scalar written at `path` in the spec's text (`30s`, `"5m"`), if the path is in
/// the file (a delay inherited from a default is written where the default is).
fn written_at(file: &SpecFile, path: &SpecPath) -> Option<String> {
    // Where the value is written: in the file that wrote it, in the environment's
    // overrides when the environment wrote it.
    let place = file.locate(path)?;
    let location = place.location;
    let line = file
        .text(place.file)?
        .lines()
        .nth(location.line.checked_sub(1)?)?;
    let rest: String = line.chars().skip(location.column.checked_sub(1)?).collect();
    let text = match rest.chars().next()? {
        quote @ ('"' | '\'') => rest[1..].split(quote).next()?.to_string(),
        _ => rest.split([',', ']', '}', '#']).next()?.trim().to_string(),
    };
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_its_service_and_consumer() {
        let owner = of_path(&SpecPath::from_keys([
            "vhosts",
            "shop",
            "services",
            "orders",
            "consumers",
            "email",
            "queue",
        ]));
        assert_eq!(owner.service.as_deref(), Some("orders"));
        assert_eq!(owner.consumer.as_deref(), Some("email"));
        let exchange = of_path(&SpecPath::from_keys([
            "vhosts", "shop", "services", "orders", "exchange",
        ]));
        assert_eq!(exchange.role, Some(Role::ServiceExchange));
        assert_eq!(exchange.consumer, None);
        let plain = of_path(&SpecPath::from_keys(["vhosts", "shop", "queues", "audit"]));
        assert_eq!((plain.service, plain.role), (None, None));
    }
}
