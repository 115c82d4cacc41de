//! What a command that talks to a broker runs on: the async runtime, the signals that
//! stop an apply or a replay, and the request count benchmarks read.

use super::exit;
use super::streams::ErrorLog;
use crate::apply::{Interrupt, STOP_AT_ONCE};
use crate::broker::Client;

/// The runtime the broker commands run on.
pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

/// For tests and benchmarks (bench/run), with `WARREN_REQUEST_COUNT=1`: says how many
/// HTTP requests the command made (the one place that reads the variable).
pub(super) fn say_request_count(client: &Client, stderr: &mut dyn ErrorLog) {
    if std::env::var_os("WARREN_REQUEST_COUNT").is_some_and(|v| v == "1") {
        let _ = writeln!(stderr, "requests: {}", client.request_count());
    }
}

/// The signals SIGINT and SIGTERM, counted: on the first an apply or a replay stops at
/// its next safe point, releases its locks and reports what it did; the second only
/// makes it say what that wait protects; the third ([`STOP_AT_ONCE`]) ends the process
/// at once, with exit code 1, once that was said (or after a second). Its locks go with
/// its connection. What is said is the progress's to print ([`crate::render::stopping`]).
pub(super) fn stop_on_signals(runtime: &tokio::runtime::Runtime) -> Interrupt {
    let interrupt = Interrupt::default();
    count_signals(runtime, &interrupt);
    interrupt
}

/// [`stop_on_signals`] into an `interrupt` made beforehand: a replay is handed its stop
/// flag when it starts, and signals are caught only once its move starts (until then,
/// a signal ends the process as it would any other, at its question too).
pub(super) fn count_signals(runtime: &tokio::runtime::Runtime, interrupt: &Interrupt) {
    use tokio::signal::unix::{SignalKind, signal};
    let counted = interrupt.clone();
    runtime.spawn(async move {
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            // Nothing is printed here: the command holds stderr, and a runtime worker
            // must never block on it.
            if counted.raise() >= STOP_AT_ONCE {
                let said = std::time::Instant::now() + std::time::Duration::from_secs(1);
                while !counted.announced(STOP_AT_ONCE) && std::time::Instant::now() < said {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                std::process::exit(i32::from(exit::ERROR));
            }
        }
    });
}
