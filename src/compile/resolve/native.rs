//! What `mode: native` asks of a ladder: RabbitMQ 4.3, a quorum work queue, and delays
//! the broker's own delayed retry can express.
//!
//! A quorum queue with `delayed-retry-min` and `-max` redelivers a message that failed
//! n times after min × n, capped at max (measured on 4.3.6: min 500 ms, max 1,500 ms →
//! 0.5 s, 1.0 s, 1.5 s, 1.5 s …). So a native ladder is linear in its first delay and
//! capped at its last: `[1s, 2s, 3s]` or `[10s, 20s, 30s, 30s]`, never `[30s, 5m, 30m]`.

use super::Report;
use crate::model::TargetVersion;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{Duration, QueueType, Retry, ReturnVia};

/// The wait before retry `n` (1-based) of a native ladder whose delays start at `first`
/// and stop growing at `last`: what the broker does, and what warren's trace shows.
pub fn wait(first: Duration, last: Duration, n: usize) -> Duration {
    let grown = first.as_millis().saturating_mul(n as u64);
    Duration::from_millis(grown.min(last.as_millis().max(first.as_millis())))
}

/// Checks a native ladder; reports every problem and says whether it compiles.
pub(super) fn check(
    report: &Report,
    retry: &Retry,
    delays: &[Duration],
    work_queue_type: QueueType,
    target: TargetVersion,
    diagnostics: &mut Vec<Diagnostic>,
) -> bool {
    let before = diagnostics.len();
    if !target.has_native_delayed_retry() {
        diagnostics.push(report.about(
            "mode",
            Diagnostic::error(
                "unsupported-by-target",
                format!(
                    "`mode: native` needs RabbitMQ 4.3: quorum queues delay redeliveries themselves from 4.3 on, and this spec is compiled for {target}"
                ),
            )
            .help("compile for `--target-version 4.3` (the broker must run 4.3), or use `mode: publish`, whose delay queues work on every version"),
        ));
    }
    if work_queue_type != QueueType::Quorum {
        diagnostics.push(report.about(
            "mode",
            Diagnostic::error(
                "invalid-value",
                format!(
                    "`mode: native` needs a quorum work queue: only quorum queues delay redeliveries (RabbitMQ 4.3), and this work queue is {}",
                    work_queue_type.as_str()
                ),
            )
            .help("set `type: quorum` on the consumer (or in its defaults), or use `mode: publish`"),
        ));
    }
    if retry.attempts_per_tier.is_some() {
        diagnostics.push(report.about(
            "attempts_per_tier",
            Diagnostic::error(
                "invalid-value",
                "`mode: native` has no tiers: each retry waits its own delay (set `max_retries` for retries past the last delay, which wait the last delay)",
            )
            .help("remove `attempts_per_tier`"),
        ));
    }
    if let Some(via @ (ReturnVia::InnerExchange | ReturnVia::ReturnExchange)) = retry.return_via {
        let through = match via {
            ReturnVia::InnerExchange => "the inner exchange",
            _ => "a return exchange",
        };
        diagnostics.push(report.about(
            "return_via",
            Diagnostic::error(
                "invalid-value",
                format!("`mode: native` keeps a failed message in its work queue: it never goes back through {through}"),
            )
            .help("remove `return_via`"),
        ));
    }
    if retry.names.as_ref().is_some_and(|names| {
        names.tiers.is_some() || names.attempts.is_some() || names.keys.is_some()
    }) {
        diagnostics.push(
            report.about(
                "names",
                Diagnostic::error(
                    "invalid-value",
                    "`mode: native` has no delay or attempt queues to name or route to",
                )
                .help("keep only `exchange` and `parking` under `names`"),
            ),
        );
    }
    if let Some(problem) = not_linear(delays) {
        diagnostics.push(
            report.placed(
                report
                    .layered
                    .delays_path
                    .clone()
                    .unwrap_or_else(|| report.retry_path.key("delays")),
                problem,
            ),
        );
    }
    diagnostics[before..]
        .iter()
        .all(|d| d.severity != crate::spec::diagnostic::Severity::Error)
}

/// Why the broker cannot wait `delays`, with the nearest ladders it can; `None` when it
/// can.
fn not_linear(delays: &[Duration]) -> Option<Diagnostic> {
    let first = delays[0];
    let last = delays[delays.len() - 1];
    let expressible = |first: Duration, last: Duration| -> Vec<Duration> {
        (1..=delays.len()).map(|n| wait(first, last, n)).collect()
    };
    let wanted = expressible(first, last);
    let wrong = delays
        .iter()
        .zip(&wanted)
        .position(|(given, want)| given != want)?;
    let from_first = expressible(
        first,
        Duration::from_millis(last.as_millis().max(first.as_millis())),
    );
    let step = Duration::from_millis(last.as_millis().div_ceil(delays.len() as u64));
    let to_last = expressible(step, last);
    let show = |ladder: &[Duration]| {
        format!(
            "[{}]",
            ladder
                .iter()
                .map(Duration::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut nearest = vec![format!(
        "`{}` (growing by the first delay)",
        show(&from_first)
    )];
    if to_last != from_first {
        nearest.push(format!("`{}` (growing to the last delay)", show(&to_last)));
    }
    Some(
        Diagnostic::error(
            "invalid-value",
            format!(
                "`mode: native` cannot wait {}: the broker waits the first delay times the failed deliveries so far, capped at the last delay, so retry {} waits {}, not {}",
                show(delays),
                wrong + 1,
                wanted[wrong],
                delays[wrong]
            ),
        )
        .help(format!(
            "nearest ladders the broker can wait: {}; or keep these delays with `mode: publish`",
            nearest.join(" or ")
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delays(text: &[&str]) -> Vec<Duration> {
        text.iter().map(|t| Duration::parse(t).unwrap()).collect()
    }

    #[test]
    fn linear_ladders_capped_at_their_last_delay_are_expressible() {
        assert!(not_linear(&delays(&["1s", "2s", "3s"])).is_none());
        assert!(not_linear(&delays(&["10s", "20s", "30s", "30s"])).is_none());
        assert!(not_linear(&delays(&["30s"])).is_none());
        assert!(not_linear(&delays(&["5s", "10s", "12s"])).is_none());
    }

    #[test]
    fn other_ladders_are_refused_with_the_nearest_expressible_ones() {
        let refused = not_linear(&delays(&["30s", "5m", "30m"])).unwrap();
        assert!(
            refused.message.contains("retry 2 waits 1m, not 5m"),
            "{}",
            refused.message
        );
        let help = refused.help.unwrap();
        assert!(help.contains("`[30s, 1m, 1m30s]`"), "{help}");
        assert!(help.contains("`[10m, 20m, 30m]`"), "{help}");
    }

    #[test]
    fn waits_grow_by_the_first_delay_up_to_the_last() {
        let (first, last) = (
            Duration::parse("500ms").unwrap(),
            Duration::parse("1500ms").unwrap(),
        );
        let waits: Vec<u64> = (1..=5).map(|n| wait(first, last, n).as_millis()).collect();
        assert_eq!(waits, [500, 1000, 1500, 1500, 1500]);
    }
}
