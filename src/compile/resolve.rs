//! Settings inheritance: top-level defaults → vhost → service → consumer.

pub mod native;
mod shape;

use crate::model::TargetVersion;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{
    Defaults, DelaysIn, DeliveryLimit, Duration, ExchangeType, OnExhausted, QueueType, Retry,
    RetryExchangeType, RetryMode, RetryNames, ReturnVia, Spec, SpecPath,
};

/// Defaults after layering, with where the retry ladder's delays were set.
#[derive(Debug, Clone, Default)]
pub struct Layered {
    /// Queue type.
    pub queue_type: Option<QueueType>,
    /// Inner exchange type.
    pub exchange_type: Option<ExchangeType>,
    /// Retry settings merged field by field.
    pub retry: Option<Retry>,
    /// Which scope set the delays (names the policy group of the tiers).
    pub delays_origin: Option<String>,
    /// Where in the spec the delays were set.
    pub delays_path: Option<SpecPath>,
    /// Delivery limit.
    pub delivery_limit: Option<DeliveryLimit>,
    /// A `ladder:` reference did not resolve (already reported): no further checks.
    pub unresolved_ladder: bool,
    /// Where each retry setting other than `delays` was last set, by key
    /// (`max_retries`, `attempts_per_tier`, `mode`, `return_via`, `queue_type`): a
    /// mistake in an inherited value is reported there, once.
    pub retry_paths: Vec<(&'static str, SpecPath)>,
}

impl Layered {
    /// Where the retry setting `key` was written, if some scope wrote it.
    fn retry_path_of(&self, key: &str) -> Option<&SpecPath> {
        self.retry_paths
            .iter()
            .rev()
            .find(|(at, _)| *at == key)
            .map(|(_, path)| path)
    }
}

impl Layered {
    /// Lays `defaults` (found at `path`, a scope called `origin`) over these settings.
    pub fn with_defaults(
        &self,
        spec: &Spec,
        defaults: &Defaults,
        origin: &str,
        path: &SpecPath,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Layered {
        let mut next = self.clone();
        next.queue_type = defaults.queue_type.or(self.queue_type);
        next.exchange_type = defaults.exchange_type.or(self.exchange_type);
        next.delivery_limit = defaults.delivery_limit.or(self.delivery_limit);
        if let Some(retry) = &defaults.retry {
            next.lay_retry(spec, retry, origin, &path.key("retry"), diagnostics);
        }
        next
    }

    /// Lays a `retry` block over the inherited one.
    pub fn lay_retry(
        &mut self,
        spec: &Spec,
        retry: &Retry,
        origin: &str,
        path: &SpecPath,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        if let Some(ladder) = &retry.ladder {
            match spec.ladders.get(ladder) {
                Some(named) => {
                    if named.ladder.is_some() {
                        diagnostics.push(
                            Diagnostic::error(
                                "invalid-reference",
                                format!("ladder `{ladder}` refers to another ladder"),
                            )
                            .at(SpecPath::root().key("ladders").key(ladder).key("ladder"))
                            .help("named ladders cannot build on each other: write the delays out"),
                        );
                    }
                    let ladder_path = SpecPath::root().key("ladders").key(ladder);
                    self.overlay(named, &super::naming::ladder_origin(ladder), &ladder_path);
                }
                None => {
                    self.unresolved_ladder = true;
                    let known: Vec<String> = spec.ladders.keys().cloned().collect();
                    let help = match crate::suggest::closest(ladder, &known) {
                        Some(best) => format!("did you mean `{best}`?"),
                        None if known.is_empty() => {
                            "define it under the top-level `ladders:` key".to_string()
                        }
                        None => format!("defined ladders: {}", known.join(", ")),
                    };
                    diagnostics.push(
                        Diagnostic::error(
                            "invalid-reference",
                            format!("unknown retry ladder `{ladder}`"),
                        )
                        .at(path.key("ladder"))
                        .help(help),
                    );
                }
            }
        }
        self.overlay(retry, origin, path);
    }

    fn overlay(&mut self, retry: &Retry, origin: &str, path: &SpecPath) {
        let base = self.retry.take().unwrap_or_default();
        if retry.delays.is_some() {
            self.delays_origin = Some(origin.to_string());
            self.delays_path = Some(path.key("delays"));
        }
        for (key, set) in [
            ("max_retries", retry.max_retries.is_some()),
            ("attempts_per_tier", retry.attempts_per_tier.is_some()),
            ("mode", retry.mode.is_some()),
            ("return_via", retry.return_via.is_some()),
            ("queue_type", retry.queue_type.is_some()),
            ("delays_in", retry.delays_in.is_some()),
            ("exchange_type", retry.exchange_type.is_some()),
        ] {
            if set {
                self.retry_paths.push((key, path.key(key)));
            }
        }
        self.retry = Some(Retry {
            // Writing delays at a level turns retries on there, even under an inherited
            // `enabled: false`.
            enabled: retry
                .enabled
                .or(retry.delays.as_ref().map(|_| true))
                .or(base.enabled),
            ladder: None,
            delays: retry.delays.clone().or(base.delays),
            attempts_per_tier: retry.attempts_per_tier.or(base.attempts_per_tier),
            max_retries: retry.max_retries.or(base.max_retries),
            on_exhausted: retry.on_exhausted.or(base.on_exhausted),
            mode: retry.mode.or(base.mode),
            return_via: retry.return_via.or(base.return_via),
            queue_type: retry.queue_type.or(base.queue_type),
            delays_in: retry.delays_in.or(base.delays_in),
            exchange_type: retry.exchange_type.or(base.exchange_type),
            names: merge_names(retry.names.as_ref(), base.names),
        });
    }
}

fn merge_names(top: Option<&RetryNames>, base: Option<RetryNames>) -> Option<RetryNames> {
    match (top, base) {
        (None, base) => base,
        (Some(top), None) => Some(top.clone()),
        (Some(top), Some(base)) => Some(RetryNames {
            exchange: top.exchange.clone().or(base.exchange),
            tiers: top.tiers.clone().or(base.tiers),
            parking: top.parking.clone().or(base.parking),
            attempts: top.attempts.clone().or(base.attempts),
            keys: top.keys.clone().or(base.keys),
            parking_key: top.parking_key.clone().or(base.parking_key),
            return_exchange: top.return_exchange.clone().or(base.return_exchange),
        }),
    }
}

/// A consumer's retry ladder with every default applied.
#[derive(Debug, Clone)]
pub struct Ladder {
    /// Tier delays.
    pub delays: Vec<Duration>,
    /// For retry number r (index r-1): the tier (0-based) it waits in.
    pub schedule: Vec<usize>,
    /// What happens after the last retry.
    pub on_exhausted: OnExhausted,
    /// How consumers move along the ladder.
    pub mode: RetryMode,
    /// Where expired messages go.
    pub return_via: ReturnVia,
    /// Type of the tiers and the parking queue.
    pub queue_type: QueueType,
    /// Where the tiers' delays live.
    pub delays_in: DelaysIn,
    /// Type of the retry exchange.
    pub exchange_type: RetryExchangeType,
    /// Name overrides.
    pub names: RetryNames,
    /// Policy group of the tiers (the scope that set the delays).
    pub origin: String,
    /// Where the delays were written.
    pub delays_path: SpecPath,
}

/// Where a ladder's mistakes are reported: at the setting where it is written, naming
/// the consumer when the setting is inherited (from `defaults` or a named ladder).
struct Report<'a> {
    layered: &'a Layered,
    retry_path: &'a SpecPath,
    consumer: Option<&'a str>,
}

impl Report<'_> {
    /// `diagnostic` about the retry setting `key`, placed where `key` is written.
    fn about(&self, key: &str, diagnostic: Diagnostic) -> Diagnostic {
        let own = self.retry_path.key(key);
        let at = self.layered.retry_path_of(key).cloned().unwrap_or(own);
        self.placed(at, diagnostic)
    }

    /// `diagnostic` placed at `at`, naming the consumer when `at` is not its own.
    fn placed(&self, at: SpecPath, diagnostic: Diagnostic) -> Diagnostic {
        let inherited = !at.starts_with(self.retry_path);
        let diagnostic = diagnostic.at(at);
        match self.consumer {
            Some(consumer) if inherited => diagnostic.affecting(consumer),
            _ => diagnostic,
        }
    }
}

/// Turns layered retry settings into a ladder, or `None` when the consumer has no
/// retries. `retry_path` is where the consumer's `retry` block is (or would be);
/// `consumer` names it (`service.consumer`) in reports about inherited settings.
#[expect(
    clippy::too_many_lines,
    reason = "each retry setting is inherited in the same few lines, one after another, so that where each value came from stays visible"
)]
pub fn ladder(
    layered: &Layered,
    work_queue_type: QueueType,
    target: TargetVersion,
    retry_path: &SpecPath,
    consumer: Option<&str>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Ladder> {
    let retry = layered.retry.as_ref()?;
    if retry.enabled == Some(false) || layered.unresolved_ladder {
        return None;
    }
    let report = Report {
        layered,
        retry_path,
        consumer,
    };
    let retry_path = retry_path.clone();
    let Some(delays) = retry.delays.clone() else {
        diagnostics.push(
            Diagnostic::error("missing-key", "retry ladder has no `delays`")
                .at(retry_path)
                .help("add e.g. `delays: [30s, 5m, 30m]`, or `enabled: false` to turn retries off"),
        );
        return None;
    };
    let delays_path = layered.delays_path.clone().unwrap_or(retry_path.clone());
    if delays.is_empty() {
        diagnostics.push(
            report.placed(
                delays_path,
                Diagnostic::error("invalid-value", "retry ladder has an empty `delays` list")
                    .help("give at least one delay, e.g. `[30s]`, or set `enabled: false`"),
            ),
        );
        return None;
    }
    for (index, delay) in delays.iter().enumerate() {
        if delay.as_millis() > crate::spec::duration::MAX_TTL_MS {
            diagnostics.push(report.placed(
                delays_path.index(index),
                Diagnostic::error(
                    "invalid-value",
                    format!("delay {delay} is longer than RabbitMQ's TTL limit of 10 years"),
                ),
            ));
        }
    }
    let mode = retry.mode.unwrap_or(RetryMode::Publish);
    if mode == RetryMode::Reject && delays.len() > 1 {
        diagnostics.push(report.placed(
            delays_path.clone(),
            Diagnostic::error(
                "invalid-value",
                format!(
                    "`mode: reject` has one tier, but this ladder has {} delays",
                    delays.len()
                ),
            )
            .help("a rejected message always goes to the same tier: use `mode: publish` or `mode: reject-chain` for a ladder"),
        ));
    }
    if mode == RetryMode::Native {
        let fine = native::check(
            &report,
            retry,
            &delays,
            work_queue_type,
            target,
            diagnostics,
        );
        if !fine {
            return None;
        }
    }
    let per_tier = retry.attempts_per_tier.unwrap_or(1);
    if per_tier == 0 {
        diagnostics.push(
            report.about(
                "attempts_per_tier",
                Diagnostic::error("invalid-value", "`attempts_per_tier` must be at least 1")
                    .help("remove it (the default is 1)"),
            ),
        );
        return None;
    }
    let max_retries = retry
        .max_retries
        .unwrap_or(per_tier.saturating_mul(delays.len() as u32));
    if max_retries == 0 {
        diagnostics.push(
            report.about(
                "max_retries",
                Diagnostic::error("invalid-value", "`max_retries: 0` leaves nothing to retry")
                    .help("remove the retry block or set `enabled: false`"),
            ),
        );
        return None;
    }
    let reachable_tiers = (max_retries as usize).div_ceil(per_tier as usize);
    if !matches!(mode, RetryMode::RejectChain | RetryMode::Native) && reachable_tiers < delays.len()
    {
        diagnostics.push(
            report.about(
                "max_retries",
                Diagnostic::warning(
                    "unreachable-tier",
                    format!(
                        "`max_retries: {max_retries}` never reaches {} of the {}",
                        match delays.len() - reachable_tiers {
                            1 => "the last tier".to_string(),
                            unused => format!("the last {unused} tiers"),
                        },
                        crate::text::count(delays.len(), "tier")
                    ),
                )
                .help("remove the unused delays, or raise `max_retries`"),
            ),
        );
    }
    let schedule: Vec<usize> = (0..max_retries)
        .map(|r| ((r / per_tier) as usize).min(delays.len() - 1))
        .collect();
    let return_via = retry.return_via.unwrap_or(ReturnVia::WorkQueue);
    if mode == RetryMode::RejectChain && return_via != ReturnVia::WorkQueue {
        diagnostics.push(report.about(
            "return_via",
            Diagnostic::error(
                "invalid-value",
                "`mode: reject-chain` returns each retry to its own attempt queue, not through the inner exchange or a return exchange",
            )
            .help("remove `return_via`"),
        ));
    }
    let queue_type = retry.queue_type.unwrap_or(match work_queue_type {
        QueueType::Stream => QueueType::Quorum,
        other => other,
    });
    if queue_type == QueueType::Stream {
        diagnostics.push(report.about(
            "queue_type",
            Diagnostic::error(
                "invalid-value",
                "retry tiers cannot be streams: streams cannot dead-letter, so a message would never leave its tier",
            )
            .help("use `quorum` or `classic`"),
        ));
    }
    let on_exhausted = retry.on_exhausted.unwrap_or(OnExhausted::Park);
    let exchange_type = retry.exchange_type.unwrap_or(RetryExchangeType::Direct);
    let shape = shape::Shape {
        mode,
        return_via,
        on_exhausted,
        exchange_type,
        delays_in: retry.delays_in,
        names: retry.names.as_ref(),
        delay_queues: match mode {
            RetryMode::RejectChain => schedule.len(),
            RetryMode::Native => 0,
            _ => delays.len(),
        },
    };
    if !shape::check(&report, &shape, diagnostics) {
        return None;
    }
    Some(Ladder {
        delays,
        schedule,
        on_exhausted,
        mode,
        return_via,
        queue_type,
        delays_in: retry.delays_in.unwrap_or(DelaysIn::Policies),
        exchange_type,
        names: retry.names.clone().unwrap_or_default(),
        origin: layered
            .delays_origin
            .clone()
            .unwrap_or_else(|| super::naming::DEFAULTS_ORIGIN.to_string()),
        delays_path,
    })
}
