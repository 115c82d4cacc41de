//! An apply's progress on stderr: plain lines on a pipe, a progress bar on a terminal,
//! never on stdout (which may be JSON), against a real RabbitMQ 3.10 node.

use std::process::Command;

use serde_json::Value;
use warren::render::progress_line::{PhaseLine, ProgressLine};

use crate::node::{Node, Version};
use crate::spec::Spec;
use crate::support::Capture;

/// A spec of `consumers` consumers in one vhost, each with a retry ladder of two
/// tiers: a few objects per consumer, created in one apply. Classic queues, which a
/// loaded test node creates several times as fast as quorum queues.
fn many_consumers(name: &str, vhost: &str, consumers: usize) -> Spec {
    let mut yaml = format!(
        "version: 1\nname: {name}\nladders:\n  standard:\n    delays: [1m, 10m]\nvhosts:\n  {vhost}:\n    defaults:\n      queue_type: classic\n      retry: {{ ladder: standard }}\n    services:\n      orders:\n        exchange: {{ name: orders, type: topic }}\n        consumers:\n"
    );
    for number in 0..consumers {
        yaml.push_str(&format!(
            "          c{number:04}:\n            routing_keys: [\"orders.{number}.#\"]\n"
        ));
    }
    Spec::new(&yaml)
}

/// The phase lines of stderr labelled `label` that count `noun`, as (done, total), read
/// with warren's own grammar of progress lines: a line printed only when the broker is
/// slow (an import part in flight) or a phase failed is read like any other.
fn counted_lines(stderr: &str, label: &str, noun: &str) -> Vec<(u64, u64)> {
    ProgressLine::phases(stderr, label, noun)
        .map(|line| (line.done, line.total))
        .collect()
}

#[test]
fn a_piped_apply_prints_plain_progress_lines_and_stdout_stays_json() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("progress-lines");
    let spec = many_consumers("progress-lines", &vhost, 300);
    let run = node.apply(spec.arg()).with(&["--format", "json"]).expect(0);
    // Progress is on stderr only: stdout is exactly one JSON document.
    let document: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", run.stdout));
    let total = document["plan"]["summary"]["create"].as_u64().unwrap();
    assert!(total > 600, "{}", document["plan"]["summary"]);
    assert!(!run.stdout.contains("creating:"), "{}", run.stdout);
    // On a pipe: plain lines, the first at the start of the phase, the last at its
    // end, counts that only grow.
    let lines = counted_lines(&run.stderr, "creating", "objects");
    assert!(lines.len() >= 2, "{}", run.stderr);
    assert_eq!(lines.first(), Some(&(0, total)), "{}", run.stderr);
    assert_eq!(lines.last(), Some(&(total, total)), "{}", run.stderr);
    assert!(lines.windows(2).all(|w| w[0].0 <= w[1].0), "{}", run.stderr);
    assert!(!run.stderr.contains('\r'), "no terminal control on a pipe");
    assert!(
        !run.stderr.contains('\x1b'),
        "no terminal control on a pipe"
    );

    // Removing every consumer: the deletes report in their own phases. The bindings
    // into the queues go with each queue (removed just before its check), so they
    // have no phase of their own.
    spec.write(&format!(
        "version: 1\nname: progress-lines\nvhosts:\n  {vhost}: {{}}\n"
    ));
    let run = node.apply(spec.arg()).expect(0);
    assert!(
        counted_lines(&run.stderr, "deleting", "bindings").is_empty(),
        "{}",
        run.stderr
    );
    for noun in ["queues", "objects"] {
        let phase: Vec<(u64, u64)> = counted_lines(&run.stderr, "deleting", noun);
        assert!(phase.len() >= 2, "{noun}: {}", run.stderr);
        let total = phase[0].1;
        assert!(total >= 300, "{noun}: {}", run.stderr);
        assert_eq!(phase.first(), Some(&(0, total)), "{}", run.stderr);
        assert_eq!(phase.last(), Some(&(total, total)), "{}", run.stderr);
    }
}

#[test]
fn an_apply_on_a_terminal_shows_a_bar_and_its_summary_intact() {
    let node = Node::shared(Version::V3_10);
    let vhost = node.unused_vhost("progress-bar");
    let spec = many_consumers("progress-bar", &vhost, 100);
    // `script` runs warren under a pseudo-terminal: stdout and stderr are terminals.
    let command = node.apply(spec.arg()).command();
    let mut line = shell_quote(command.get_program().to_str().unwrap());
    for arg in command.get_args() {
        line.push(' ');
        line.push_str(&shell_quote(arg.to_str().unwrap()));
    }
    let run = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "120")
        .env_remove("WARREN_TARGET_VERSION")
        .run();
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    let screen = run.stdout;
    // The bar: its brackets and counts, drawn in place (carriage returns and line
    // clearing), then replaced by the phase's line, which stays.
    assert!(screen.contains("creating ["), "{screen:?}");
    assert!(screen.contains("\r\x1b[2K"), "{screen:?}");
    let last = screen
        .split(['\n', '\r'])
        .rev()
        .filter_map(|l| PhaseLine::parse(l.trim_start_matches("\x1b[2K")))
        .find(|line| line.label == "creating")
        .unwrap_or_else(|| panic!("no final line of the phase: {screen:?}"));
    assert!(
        last.done == last.total && last.counts("object") && last.awaiting.is_none(),
        "{last}"
    );
    // The summary, on a line of its own and whole, after the bar.
    let summary = screen
        .split("\r\n")
        .find(|l| l.starts_with("Applied: "))
        .unwrap_or_else(|| panic!("no summary line: {screen:?}"));
    assert!(
        summary.ends_with("requests).") && summary.contains("to spec `progress-bar`"),
        "{summary:?}"
    );
    let bar_at = screen.find("creating [").unwrap();
    let summary_at = screen.find("Applied: ").unwrap();
    assert!(bar_at < summary_at, "{screen:?}");
    assert!(
        !screen[summary_at..].contains("creating ["),
        "nothing draws over the summary: {screen:?}"
    );
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
