//! `warren status` output: a table per vhost for people, one JSON document, and the
//! Prometheus text exposition format for node_exporter's textfile collector.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::spec::Duration;
use crate::status::{ConsumerStatus, ProblemKind, Report};
use crate::text::count;

/// A figure the broker did not give.
const UNKNOWN: &str = "?";
/// A queue the spec has and the broker does not.
const MISSING: &str = "!";
/// Nothing to show: no ladder, no parking queue.
const NONE: &str = "-";

/// The JSON document (`format`: `warren-status/1`).
pub fn json(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    super::json_document(out, report)
}

/// One table per vhost, then the problems of its consumers.
pub fn text(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    if report.consumers.is_empty() {
        return writeln!(out, "no consumers to report");
    }
    let mut vhosts: Vec<&str> = Vec::new();
    for consumer in &report.consumers {
        if !vhosts.contains(&consumer.vhost.as_str()) {
            vhosts.push(&consumer.vhost);
        }
    }
    let mut unknown_shown = false;
    let mut missing_shown = false;
    for (index, vhost) in vhosts.iter().enumerate() {
        if index > 0 {
            writeln!(out)?;
        }
        let consumers: Vec<&ConsumerStatus> = report
            .consumers
            .iter()
            .filter(|c| c.vhost == *vhost)
            .collect();
        let problems: usize = consumers.iter().map(|c| c.problems.len()).sum();
        writeln!(
            out,
            "vhost `{vhost}`: {}, {}",
            count(consumers.len(), "consumer"),
            count(problems, "problem")
        )?;
        let mut rows = vec![
            [
                "SERVICE",
                "CONSUMER",
                "READY",
                "UNACKED",
                "CONSUMERS",
                "TIERS",
                "PARKING",
            ]
            .map(String::from),
        ];
        rows.extend(consumers.iter().map(|c| row(c)));
        for cell in rows.iter().skip(1).flat_map(|row| &row[2..]) {
            unknown_shown |= cell.contains(UNKNOWN);
            missing_shown |= cell.contains(MISSING);
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|column| {
                rows.iter()
                    .map(|row| row[column].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in &rows {
            let mut line = String::new();
            for (column, cell) in row.iter().enumerate() {
                let pad = widths[column] - cell.chars().count();
                // Names to the left, figures to the right, the lists as they read.
                match column {
                    2..=4 => write!(line, "  {}{cell}", " ".repeat(pad)),
                    _ => write!(line, "  {cell}{}", " ".repeat(pad)),
                }
                .expect("a String takes text");
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        if problems > 0 {
            writeln!(out, "  problems:")?;
            for consumer in &consumers {
                for problem in &consumer.problems {
                    writeln!(
                        out,
                        "    {}/{}: {}",
                        consumer.service, consumer.consumer, problem.message
                    )?;
                }
            }
        }
    }
    // A `?` right after an apply is the broker's statistics lag, not a fault: say so.
    if unknown_shown || missing_shown {
        writeln!(out)?;
    }
    if unknown_shown {
        writeln!(
            out,
            "{UNKNOWN}: the broker has not counted the queue yet (it emits queue statistics every few seconds, 5 s by default, so a queue declared moments ago has none): run `warren status` again"
        )?;
    }
    if missing_shown {
        writeln!(
            out,
            "{MISSING}: the queue is not on the broker (the spec has it; `warren plan` shows it to create)"
        )?;
    }
    Ok(())
}

/// A figure, or [`UNKNOWN`] (or [`MISSING`] when the queue does not exist).
fn figure(exists: bool, value: Option<u64>) -> String {
    match (exists, value) {
        (false, _) => MISSING.to_string(),
        (true, Some(n)) => n.to_string(),
        (true, None) => UNKNOWN.to_string(),
    }
}

/// The sum of the figures of the queues a consumer reads, unknown if one is.
fn total(
    consumer: &ConsumerStatus,
    of: impl Fn(&crate::status::WorkQueue) -> Option<u64>,
) -> String {
    if !consumer.work.exists {
        return MISSING.to_string();
    }
    let queues = std::iter::once(&consumer.work).chain(&consumer.attempts);
    match queues.map(of).sum::<Option<u64>>() {
        Some(sum) => sum.to_string(),
        None => UNKNOWN.to_string(),
    }
}

fn row(c: &ConsumerStatus) -> [String; 7] {
    let tiers = if let (true, Some(waiting)) = (c.tiers.is_empty(), c.work.waiting) {
        format!("{waiting} waiting in the work queue")
    } else if c.tiers.is_empty() {
        NONE.to_string()
    } else {
        c.tiers
            .iter()
            .map(|tier| {
                let messages = figure(tier.exists, tier.messages);
                match &tier.inspected {
                    Some(inspected) if inspected.past_the_ladder > 0 => {
                        format!("{messages} ({} past the ladder)", inspected.past_the_ladder)
                    }
                    _ => messages,
                }
            })
            .collect::<Vec<_>>()
            .join(" · ")
    };
    let parking = match &c.parking {
        None => NONE.to_string(),
        Some(parking) => {
            let messages = figure(parking.exists, parking.messages);
            match parking.oldest_age_seconds {
                Some(age) => format!(
                    "{messages} (oldest {})",
                    Duration::from_millis(age.saturating_mul(1000))
                ),
                None => messages,
            }
        }
    };
    [
        c.service.clone(),
        c.consumer.clone(),
        total(c, |q| q.ready),
        total(c, |q| q.unacked),
        figure(c.work.exists, c.work.consumers),
        tiers,
        parking,
    ]
}

/// The labels every sample of a consumer's queue has.
struct Labels<'a> {
    consumer: &'a ConsumerStatus,
}

impl Labels<'_> {
    /// `{vhost="…",service="…",consumer="…"` and the `extra` pairs, closed.
    fn with(&self, extra: &[(&str, &str)]) -> String {
        let mut text = format!(
            "{{vhost=\"{}\",service=\"{}\",consumer=\"{}\"",
            escape_label(&self.consumer.vhost),
            escape_label(&self.consumer.service),
            escape_label(&self.consumer.consumer)
        );
        for (name, value) in extra {
            write!(text, ",{name}=\"{}\"", escape_label(value)).expect("a String takes text");
        }
        text.push('}');
        text
    }
}

/// A label value as the text format wants it: backslash, double quote and line feed
/// escaped.
fn escape_label(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// One metric family: its `HELP` and `TYPE` lines, then its samples.
struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(String, String)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            samples: Vec::new(),
        }
    }

    /// A sample, when the broker gave the figure: an unknown one is left out.
    fn add(&mut self, labels: String, value: Option<u64>) {
        if let Some(value) = value {
            self.samples.push((labels, value.to_string()));
        }
    }

    fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        // HELP text is fixed here and has neither backslashes nor line feeds to escape.
        writeln!(out, "# HELP {} {}", self.name, self.help)?;
        writeln!(out, "# TYPE {} gauge", self.name)?;
        for (labels, value) in &self.samples {
            writeln!(out, "{}{labels} {value}", self.name)?;
        }
        Ok(())
    }
}

/// The Prometheus text exposition format (version 0.0.4): gauges prefixed `warren_`,
/// labelled by vhost, service, consumer, and for a queue's figures by queue and role
/// (`work`, `attempt`, `tier` with its `tier` number, `parking`). A figure the broker
/// did not give has no sample; `warren_problems` has one per consumer and kind, 0
/// included, so that an alert can read it as it is.
pub fn prometheus(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    let mut messages = Family::new(
        "warren_queue_messages",
        "Messages in a queue of a consumer, ready and unacknowledged, as the broker last counted them.",
    );
    let mut ready = Family::new(
        "warren_queue_messages_ready",
        "Messages ready for delivery in a queue a consumer reads.",
    );
    let mut unacked = Family::new(
        "warren_queue_messages_unacked",
        "Messages delivered and not yet acknowledged in a queue a consumer reads.",
    );
    let mut waiting = Family::new(
        "warren_queue_messages_waiting",
        "Messages a queue a consumer reads holds back for a delayed retry (RabbitMQ 4.3, retry mode native).",
    );
    let mut consumers = Family::new(
        "warren_queue_consumers",
        "Consumers attached to a queue a consumer reads.",
    );
    let mut oldest = Family::new(
        "warren_parking_oldest_message_age_seconds",
        "Age of the oldest parked message, from its timestamp property (classic queues only).",
    );
    let mut past_the_ladder = Family::new(
        "warren_tier_messages_past_the_ladder",
        "Messages read at the head of a delay queue (status --inspect) that were rejected more often than their consumer's ladder allows.",
    );
    let mut problems = Family::new(
        "warren_problems",
        "Problems warren status finds with a consumer's queues, by kind.",
    );
    for consumer in &report.consumers {
        let labels = Labels { consumer };
        let read = std::iter::once(("work", &consumer.work))
            .chain(consumer.attempts.iter().map(|queue| ("attempt", queue)));
        for (role, queue) in read {
            let queue_labels = labels.with(&[("queue", &queue.queue), ("role", role)]);
            messages.add(queue_labels.clone(), queue.messages);
            ready.add(queue_labels.clone(), queue.ready);
            unacked.add(queue_labels.clone(), queue.unacked);
            waiting.add(queue_labels.clone(), queue.waiting);
            consumers.add(queue_labels, queue.consumers);
        }
        for tier in &consumer.tiers {
            let number = tier.tier.to_string();
            let tier_labels =
                labels.with(&[("queue", &tier.queue), ("role", "tier"), ("tier", &number)]);
            messages.add(tier_labels.clone(), tier.messages);
            past_the_ladder.add(
                tier_labels,
                tier.inspected.as_ref().map(|i| i.past_the_ladder as u64),
            );
        }
        if let Some(parking) = &consumer.parking {
            let queue_labels = labels.with(&[("queue", &parking.queue), ("role", "parking")]);
            messages.add(queue_labels, parking.messages);
            oldest.add(
                labels.with(&[("queue", &parking.queue)]),
                parking.oldest_age_seconds,
            );
        }
        for kind in ProblemKind::ALL {
            let n = consumer.problems.iter().filter(|p| p.kind == kind).count();
            problems.add(labels.with(&[("kind", kind.as_str())]), Some(n as u64));
        }
    }
    for family in [
        messages,
        ready,
        unacked,
        waiting,
        consumers,
        oldest,
        past_the_ladder,
        problems,
    ] {
        family.write(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{FORMAT, Parking, Problem, Tier, TierInspection, WorkQueue};

    /// A report with what each renderer must show: a healthy consumer with a ladder, one
    /// whose queues are partly missing and whose figures are partly unknown, one in
    /// reject-chain mode, a plain one, and a second vhost whose name and work queue's
    /// name need escaping in Prometheus labels.
    fn report() -> Report {
        let consumer = |vhost: &str, service: &str, name: &str| ConsumerStatus {
            vhost: vhost.into(),
            service: service.into(),
            consumer: name.into(),
            work: WorkQueue {
                queue: format!("{service}.{name}"),
                exists: true,
                messages: Some(3),
                ready: Some(2),
                unacked: Some(1),
                waiting: None,
                consumers: Some(1),
                publish_rate: Some(1.5),
                deliver_rate: Some(1.4),
            },
            attempts: Vec::new(),
            tiers: Vec::new(),
            parking: None,
            problems: Vec::new(),
        };
        let tier = |n: usize, queue: &str, messages: Option<u64>, exists: bool| Tier {
            tier: n,
            delay: format!("{n}0s"),
            queue: queue.into(),
            exists,
            messages,
            inspected: None,
            not_inspected: None,
        };
        let mut email = consumer("shop", "orders", "email");
        email.tiers = vec![
            tier(1, "orders.email.retry.1", Some(0), true),
            tier(2, "orders.email.retry.2", Some(3), true),
            tier(3, "orders.email.retry.3", Some(12), true),
        ];
        // Read with --inspect: two messages of tier 1 went round it past the ladder.
        email.tiers[1].inspected = Some(TierInspection {
            read: 3,
            past_the_ladder: 2,
            most_rejections: 7,
        });
        email.parking = Some(Parking {
            queue: "orders.email.parking".into(),
            exists: true,
            messages: Some(2),
            publish_rate: Some(0.2),
            oldest_age_seconds: Some(3725),
        });
        email.problems = vec![
            Problem {
                kind: ProblemKind::RetryContract,
                queue: "orders.email.retry.2".into(),
                message: "consumer `email` of service `orders` does not follow its retry contract: 2 of 3 messages read in tier 2 queue `orders.email.retry.2` have been rejected more often than its ladder allows (max_retries 3; up to 7 rejections, by the broker's `x-death` count); in `publish` mode a plain reject enters the first tier and counts nothing, so such a message never parks: the consumer must publish each retry itself with the next tier's key (`warren compile --contract`), or the spec can give it `mode: reject-chain`".into(),
            },
            Problem {
                kind: ProblemKind::ParkingGrowing,
                queue: "orders.email.parking".into(),
                message: "parking queue `orders.email.parking` is growing: 0.2 messages parked per second".into(),
            },
            Problem {
                kind: ProblemKind::ParkingNotEmpty,
                queue: "orders.email.parking".into(),
                message: "parking queue `orders.email.parking` holds 2 messages that ran out of retries".into(),
            },
        ];
        let mut invoicing = consumer("shop", "orders", "invoicing");
        invoicing.work.consumers = Some(0);
        invoicing.work.messages = None;
        invoicing.work.ready = None;
        invoicing.work.publish_rate = None;
        invoicing.work.deliver_rate = None;
        invoicing.tiers = vec![
            tier(1, "orders.invoicing.retry.1", None, true),
            tier(2, "orders.invoicing.retry.2", None, false),
        ];
        invoicing.parking = Some(Parking {
            queue: "orders.invoicing.parking".into(),
            exists: true,
            messages: Some(0),
            publish_rate: None,
            oldest_age_seconds: None,
        });
        invoicing.problems = vec![
            Problem {
                kind: ProblemKind::NoConsumers,
                queue: "orders.invoicing".into(),
                message: "work queue `orders.invoicing` has no consumers".into(),
            },
            Problem {
                kind: ProblemKind::Policy,
                queue: "orders.invoicing.retry.1".into(),
                message: "tier 1 queue `orders.invoicing.retry.1` is under policy `ops-high`, not `warren.retry.defaults.1` that the spec gives it: `ops-high` shadows it (a higher priority, or a policy the spec does not have)".into(),
            },
            Problem {
                kind: ProblemKind::MissingQueue,
                queue: "orders.invoicing.retry.2".into(),
                message: "tier 2 queue `orders.invoicing.retry.2` does not exist on the broker: the spec is not applied (run `warren plan`)".into(),
            },
        ];
        let mut push = consumer("shop", "notifier", "push");
        push.attempts = vec![WorkQueue {
            queue: "notifier.push.attempt.2".into(),
            exists: true,
            messages: Some(4),
            ready: Some(4),
            unacked: Some(0),
            waiting: None,
            consumers: Some(1),
            publish_rate: None,
            deliver_rate: None,
        }];
        push.tiers = vec![tier(1, "notifier.push.retry.1", Some(1), true)];
        let plain = consumer("shop", "audit", "log");
        let mut odd = consumer("odd \"vhost\"", "svc", "c");
        odd.work.queue = "a\"b\\c".into();
        let consumers = vec![email, invoicing, push, plain, odd];
        Report {
            format: FORMAT,
            problems: consumers.iter().map(|c| c.problems.len()).sum(),
            consumers,
        }
    }

    fn rendered(render: fn(&mut dyn Write, &Report) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        render(&mut out, &report()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_is_a_table_per_vhost_with_its_problems() {
        insta::assert_snapshot!(rendered(text));
    }

    #[test]
    fn json_has_every_figure_and_null_for_unknown_ones() {
        insta::assert_snapshot!(rendered(json));
    }

    #[test]
    fn prometheus_has_gauges_escaped_labels_and_no_invented_zeros() {
        let exposition = rendered(prometheus);
        assert!(
            exposition.contains(r#"vhost="odd \"vhost\"""#),
            "{exposition}"
        );
        assert!(exposition.contains(r#"queue="a\"b\\c""#), "{exposition}");
        // Unknown figures have no sample.
        assert!(
            !exposition.contains(
                r#"warren_queue_messages{vhost="shop",service="orders",consumer="invoicing",queue="orders.invoicing",role="work"}"#
            ),
            "{exposition}"
        );
        insta::assert_snapshot!(exposition);
    }

    #[test]
    fn no_consumers_says_so() {
        let empty = Report {
            format: FORMAT,
            problems: 0,
            consumers: Vec::new(),
        };
        let mut out = Vec::new();
        text(&mut out, &empty).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "no consumers to report\n");
    }
}
