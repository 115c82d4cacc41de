//! `warren trace` output: numbered steps for people, or one JSON document.

use std::io::{self, Write};

use crate::text::count;
use crate::trace::{CopyEnd, Event, MessageCopy, RouteStep, Trace};

/// Writes the trace as JSON (one document).
pub fn json(out: &mut dyn Write, trace: &Trace) -> io::Result<()> {
    super::json_document(out, trace)
}

/// Writes the trace as readable steps.
pub fn text(out: &mut dyn Write, trace: &Trace) -> io::Result<()> {
    let exchange = if trace.exchange.is_empty() {
        "the default exchange".to_string()
    } else {
        format!("exchange `{}`", trace.exchange)
    };
    write!(
        out,
        "publish to {exchange} in vhost `{}` with routing key `{}`",
        trace.vhost, trace.routing_key
    )?;
    if !trace.headers.is_empty() {
        let headers: Vec<String> = trace
            .headers
            .iter()
            .map(|(k, v)| format!("{k}={}", plain(v)))
            .collect();
        write!(out, " and headers {}", headers.join(", "))?;
    }
    writeln!(
        out,
        "; each consumer fails {} (RabbitMQ {})",
        count(trace.failures, "time"),
        trace.target_version
    )?;
    for step in &trace.route {
        writeln!(out, "  {}", step_line(step))?;
    }
    match trace.queues.len() {
        0 => writeln!(
            out,
            "no queue gets the message: the broker drops it (or returns it to a publisher that sets `mandatory`)"
        )?,
        n => writeln!(
            out,
            "{} {} a copy: {}",
            count(n, "queue"),
            if n == 1 { "gets" } else { "get" },
            names(&trace.queues)
        )?,
    }
    for copy in &trace.copies {
        writeln!(out)?;
        copy_text(out, copy)?;
    }
    if !trace.notes.is_empty() {
        writeln!(out)?;
        for note in &trace.notes {
            writeln!(out, "note: {note}")?;
        }
    }
    Ok(())
}

fn copy_text(out: &mut dyn Write, copy: &MessageCopy) -> io::Result<()> {
    let first = copy.events.iter().find_map(|e| match e {
        Event::Delivered { queue, .. } | Event::Waits { queue, .. } => Some(queue.as_str()),
        _ => None,
    });
    write!(out, "copy {}", copy.number)?;
    if let Some(from) = copy.split_from {
        write!(out, " (split from copy {from})")?;
    }
    match (first, &copy.outcome) {
        (Some(queue), _) => writeln!(out, ", from queue `{queue}`:")?,
        (None, CopyEnd::Stays { queue } | CopyEnd::Parked { queue }) => {
            writeln!(out, ", in queue `{queue}`:")?
        }
        (None, _) => writeln!(out, ":")?,
    }
    for (index, event) in copy.events.iter().enumerate() {
        writeln!(out, "  {}. {}", index + 1, event_line(event))?;
    }
    writeln!(out, "  end: {}", outcome_line(&copy.outcome))
}

fn event_line(event: &Event) -> String {
    match event {
        Event::Delivered {
            queue,
            consumer,
            attempt,
            routing_key,
            x_death,
            retries_header,
        } => {
            let mut line = format!(
                "`{queue}` delivers it to {consumer} (delivery {attempt}, routing key `{routing_key}`"
            );
            if let Some(n) = retries_header {
                line.push_str(&format!(", warren-retries {n}"));
            }
            if !x_death.is_empty() {
                let deaths: Vec<String> = x_death
                    .iter()
                    .map(|d| format!("{} {} ×{}", d.queue, d.reason.as_str(), d.count))
                    .collect();
                line.push_str(&format!(", x-death: {}", deaths.join(", ")));
            }
            line.push(')');
            line
        }
        Event::Processed { consumer } => format!("{consumer} processes it and acks"),
        Event::Rejected { retries } => format!(
            "the consumer fails and rejects it without requeue ({} so far)",
            count(*retries, "retry")
        ),
        Event::Retried {
            retry,
            tier,
            delay,
            exchange,
            routing_key,
            route: _,
            queues,
        } => format!(
            "the consumer fails: retry {retry} (tier {tier}, {delay}): publishes to `{exchange}` with key `{routing_key}` → {}, then acks",
            reached(queues)
        ),
        Event::ParkPublished {
            exchange,
            routing_key,
            queues,
            ..
        } => format!(
            "the consumer fails with no retries left: publishes to `{exchange}` with key `{routing_key}` → {}, then acks",
            reached(queues)
        ),
        Event::Requeued {
            retry,
            delay,
            queue,
        } => format!(
            "the consumer fails and rejects it with requeue: retry {retry} waits {delay} in `{queue}` (the queue's own delayed retry)"
        ),
        Event::Acked { because } => format!("the consumer fails and acks it: {because}"),
        Event::Waits {
            queue, delay, tier, ..
        } => match tier {
            Some(tier) => format!("waits {delay} in `{queue}` (tier {tier}), then expires"),
            None => format!("waits {delay} in `{queue}` (its message TTL), then expires"),
        },
        Event::DeadLettered {
            queue,
            reason,
            exchange,
            routing_key,
            queues,
            dropped_by_cycle,
            ..
        } => {
            let Some(exchange) = exchange else {
                return format!(
                    "`{queue}` dead-letters it ({}) with no dead-letter exchange",
                    reason.as_str()
                );
            };
            let exchange = if exchange.is_empty() {
                "the default exchange".to_string()
            } else {
                format!("`{exchange}`")
            };
            let mut line = format!(
                "`{queue}` dead-letters it ({}) to {exchange} with key `{routing_key}` → {}",
                reason.as_str(),
                reached(queues)
            );
            if !dropped_by_cycle.is_empty() {
                line.push_str(&format!(
                    "; the copy for {} is dropped (a dead-letter cycle without a rejection)",
                    names(dropped_by_cycle)
                ));
            }
            line
        }
    }
}

fn outcome_line(outcome: &CopyEnd) -> String {
    match outcome {
        CopyEnd::Processed { queue, consumer } => {
            format!("processed by {consumer} from `{queue}`")
        }
        CopyEnd::Parked { queue } => format!("parked in `{queue}`"),
        CopyEnd::Stays { queue } => {
            format!("stays in `{queue}` (no consumer of the spec reads it)")
        }
        CopyEnd::Dropped { because } => format!("dropped: {because}"),
        CopyEnd::Unfinished => "not followed further (the trace stopped)".to_string(),
    }
}

fn step_line(step: &RouteStep) -> String {
    match step {
        RouteStep::Binding {
            source,
            destination,
            destination_type,
            key,
        } => format!("`{source}` → {destination_type} `{destination}` (binding key `{key}`)"),
        RouteStep::Alternate { from, to } => {
            format!("`{from}` matches nothing → alternate exchange `{to}`")
        }
        RouteStep::Default { queue } => format!("the default exchange → queue `{queue}`"),
    }
}

fn reached(queues: &[String]) -> String {
    match queues {
        [] => "no queue".to_string(),
        [one] => format!("`{one}`"),
        many => names(many),
    }
}

fn names(queues: &[String]) -> String {
    queues
        .iter()
        .map(|q| format!("`{q}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plain(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
