//! The grammar of an apply's plain progress lines, written and read in one place: the
//! renderer ([`super::progress`]) prints a phase's state through [`PhaseLine`]'s
//! `Display`, and whatever reads a CI log back (warren's own tests, a user's log
//! scraper) parses it with [`ProgressLine::parse`], so that a line printed only in a
//! rare state (a slow broker, a failed phase) cannot fall outside what a reader knows.
//!
//! Every line of the progress stream is one of these (docs/plan-format.md has the
//! grammar with examples):
//!
//! ```text
//! phase line  = label ": " count " of " count " " noun ", " elapsed [missed] [awaiting]
//! missed      = "; " part { ", " part }     part = count (" refused" | " not confirmed" | " not sent")
//! awaiting    = "; the broker is making the next " count " " noun
//!               " (sent " elapsed " ago, answered when all are made)"
//! elapsed     = seconds " s" | minutes " min " two-digit-seconds " s"
//! count       = digits with a comma between each group of three ("27,004")
//! migration   = "migrating queue " quoted-name " in vhost " quoted-name ": " step
//! signal      = "Signal received: " … | "Still stopping " … | "Stopping at once" …
//! ```

use std::fmt;
use std::time::Duration;

use crate::model::shorten::grouped;

/// The text after a phase line's counts while an import is in flight: the count does
/// not move until the broker has made all of it.
const AWAITING_PREFIX: &str = "the broker is making the next ";
const AWAITING_SUFFIX: &str = " ago, answered when all are made)";

/// `12 s`, `3 min 05 s`: whole seconds, as every progress line prints a time.
pub fn elapsed(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds < 60 {
        format!("{seconds} s")
    } else {
        format!("{} min {:02} s", seconds / 60, seconds % 60)
    }
}

/// Reads back what [`elapsed`] writes.
fn parse_elapsed(text: &str) -> Option<Duration> {
    let seconds = text.strip_suffix(" s")?;
    let seconds = match seconds.split_once(" min ") {
        Some((minutes, seconds)) if seconds.len() == 2 => {
            minutes.parse::<u64>().ok()? * 60 + seconds.parse::<u64>().ok()?
        }
        Some(_) => return None,
        None => seconds.parse::<u64>().ok()?,
    };
    Some(Duration::from_secs(seconds))
}

/// Reads back a count [`grouped`] writes (`27,004`).
fn parse_count(text: &str) -> Option<u64> {
    let mut groups = text.split(',');
    let first = groups.next()?;
    if first.is_empty() || first.len() > 3 || !first.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut digits = first.to_string();
    for group in groups {
        if group.len() != 3 || !group.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.push_str(group);
    }
    digits.parse().ok()
}

/// Changes of a phase that were not made, by outcome: printed on the phase's last line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Missed {
    /// The broker refused them.
    pub refused: u64,
    /// Sent, and not answered for: they may or may not have been made.
    pub unconfirmed: u64,
    /// Never sent.
    pub not_sent: u64,
}

/// An import part in flight while its phase's count stands still.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Awaiting {
    /// How many objects the part holds.
    pub sent: u64,
    /// What it counts, as printed (`objects`).
    pub noun: String,
    /// How long ago it was sent.
    pub since: Duration,
}

/// One phase's state: `creating: 2,000 of 8,000 objects, 12 s`, and what was not made
/// (`; 1 refused`) or what the broker is making (`; the broker is making the next …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseLine {
    /// What the phase does (`creating`, `deleting superseded`).
    pub label: String,
    /// How many of its changes were made.
    pub done: u64,
    /// How many it has.
    pub total: u64,
    /// What it counts, as printed (`objects`, `queue`).
    pub noun: String,
    /// Since the phase started, in whole seconds.
    pub elapsed: Duration,
    /// What was not made (on a phase's last line only).
    pub missed: Missed,
    /// An import part in flight, while the count waits for it.
    pub awaiting: Option<Awaiting>,
}

impl fmt::Display for PhaseLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} of {} {}, {}",
            self.label,
            grouped(self.done),
            grouped(self.total),
            self.noun,
            elapsed(self.elapsed)
        )?;
        let missed = [
            (self.missed.refused, "refused"),
            (self.missed.unconfirmed, "not confirmed"),
            (self.missed.not_sent, "not sent"),
        ];
        let mut first = true;
        for (n, what) in missed.into_iter().filter(|(n, _)| *n > 0) {
            let separator = if first { "; " } else { ", " };
            write!(f, "{separator}{} {what}", grouped(n))?;
            first = false;
        }
        if let Some(awaiting) = &self.awaiting {
            write!(
                f,
                "; {AWAITING_PREFIX}{} {} (sent {}{AWAITING_SUFFIX}",
                grouped(awaiting.sent),
                awaiting.noun,
                elapsed(awaiting.since)
            )?;
        }
        Ok(())
    }
}

impl PhaseLine {
    /// Reads a phase line back; `None` when `line` is not one.
    pub fn parse(line: &str) -> Option<PhaseLine> {
        let (label, rest) = line.split_once(": ")?;
        if label.is_empty() || !label.bytes().all(|b| b.is_ascii_lowercase() || b == b' ') {
            return None;
        }
        let (done, rest) = rest.split_once(" of ")?;
        let (total, rest) = rest.split_once(' ')?;
        let (noun, rest) = rest.split_once(", ")?;
        let mut parts = rest.split("; ");
        let elapsed = parse_elapsed(parts.next()?)?;
        let mut missed = Missed::default();
        let mut awaiting = None;
        for part in parts {
            if let Some(inflight) = part.strip_prefix(AWAITING_PREFIX) {
                awaiting = Some(parse_awaiting(inflight)?);
                continue;
            }
            for item in part.split(", ") {
                let (n, what) = item.split_once(' ')?;
                let n = parse_count(n)?;
                match what {
                    "refused" => missed.refused = n,
                    "not confirmed" => missed.unconfirmed = n,
                    "not sent" => missed.not_sent = n,
                    _ => return None,
                }
            }
        }
        Some(PhaseLine {
            label: label.to_string(),
            done: parse_count(done)?,
            total: parse_count(total)?,
            noun: noun.to_string(),
            elapsed,
            missed,
            awaiting,
        })
    }

    /// Whether this line counts `noun` (singular or plural: `object`, `objects`).
    pub fn counts(&self, noun: &str) -> bool {
        self.noun == noun || self.noun.strip_suffix('s') == Some(noun)
    }
}

/// `1,350 objects (sent 8 s ago, answered when all are made)`.
fn parse_awaiting(text: &str) -> Option<Awaiting> {
    let (sent, rest) = text.split_once(' ')?;
    let (noun, rest) = rest.split_once(" (sent ")?;
    let since = rest.strip_suffix(AWAITING_SUFFIX)?;
    Some(Awaiting {
        sent: parse_count(sent)?,
        noun: noun.to_string(),
        since: parse_elapsed(since)?,
    })
}

/// A line of an apply's progress stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgressLine {
    /// A phase's state.
    Phase(PhaseLine),
    /// A step of a queue's migration: `migrating queue "q" in vhost "v": …`.
    Migration(String),
    /// What the apply does on a signal: `Signal received: stopping …`.
    Signal(String),
}

impl ProgressLine {
    /// Reads one line of stderr; `None` when it is not a progress line (a warning, the
    /// plan, the summary).
    pub fn parse(line: &str) -> Option<ProgressLine> {
        if line.starts_with("migrating queue ") {
            return Some(ProgressLine::Migration(line.to_string()));
        }
        if ["Signal received: ", "Still stopping ", "Stopping at once"]
            .iter()
            .any(|prefix| line.starts_with(prefix))
        {
            return Some(ProgressLine::Signal(line.to_string()));
        }
        PhaseLine::parse(line).map(ProgressLine::Phase)
    }

    /// The phase lines among `text`'s lines whose label is `label` and which count
    /// `noun`, in order.
    pub fn phases<'a>(
        text: &'a str,
        label: &'a str,
        noun: &'a str,
    ) -> impl Iterator<Item = PhaseLine> + 'a {
        text.lines()
            .filter_map(move |line| match ProgressLine::parse(line)? {
                ProgressLine::Phase(phase) if phase.label == label && phase.counts(noun) => {
                    Some(phase)
                }
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(done: u64, total: u64) -> PhaseLine {
        PhaseLine {
            label: "creating".into(),
            done,
            total,
            noun: "objects".into(),
            elapsed: Duration::from_secs(12),
            missed: Missed::default(),
            awaiting: None,
        }
    }

    #[test]
    fn elapsed_times_read_in_seconds_then_minutes() {
        assert_eq!(elapsed(Duration::from_millis(12_400)), "12 s");
        assert_eq!(elapsed(Duration::from_secs(185)), "3 min 05 s");
        assert_eq!(parse_elapsed("3 min 05 s"), Some(Duration::from_secs(185)));
        assert_eq!(parse_elapsed("3 min 5 s"), None);
    }

    #[test]
    fn every_shape_of_a_phase_line_reads_back_as_written() {
        let plain = line(2_000, 8_000);
        let mut failed = line(1, 5_000);
        failed.label = "deleting superseded".into();
        failed.missed = Missed {
            refused: 1,
            unconfirmed: 2,
            not_sent: 4_996,
        };
        let mut refused_only = line(3, 4);
        refused_only.missed.refused = 1;
        let mut slow = line(0, 2_704);
        slow.elapsed = Duration::from_secs(65);
        slow.awaiting = Some(Awaiting {
            sent: 1_000,
            noun: "objects".into(),
            since: Duration::from_secs(5),
        });
        let mut one = line(1, 1);
        one.label = "migrating".into();
        one.noun = "queue".into();
        for phase in [plain, failed, refused_only, slow, one] {
            let text = phase.to_string();
            assert_eq!(PhaseLine::parse(&text), Some(phase), "{text}");
        }
    }

    #[test]
    fn the_slow_broker_line_is_a_phase_line() {
        let text = "creating: 0 of 2,704 objects, 5 s; the broker is making the next 1,000 objects (sent 5 s ago, answered when all are made)";
        let parsed = PhaseLine::parse(text).unwrap();
        assert_eq!((parsed.done, parsed.total), (0, 2_704));
        assert_eq!(parsed.awaiting.as_ref().map(|a| a.sent), Some(1_000));
        assert_eq!(parsed.to_string(), text);
    }

    #[test]
    fn lines_that_are_not_progress_are_not_read_as_phases() {
        for text in [
            "warning: something: 3 of 4 things, 5 s",
            "Applied 5 changes.",
            "creating: 1 of 2 objects, 5 s; 1 lost",
            "creating: 1,00 of 2 objects, 5 s",
            "",
        ] {
            assert_eq!(ProgressLine::parse(text), None, "{text}");
        }
        assert!(matches!(
            ProgressLine::parse(
                "migrating queue \"q\" in vhost \"v\": moving the messages of \"q\""
            ),
            Some(ProgressLine::Migration(_))
        ));
    }
}
