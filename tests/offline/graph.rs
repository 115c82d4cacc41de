//! `warren graph`: the Mermaid and DOT of every example are pinned, Graphviz reads
//! every DOT output, the pictures in docs/graphs are those of the examples as they
//! are, and the filters refuse what the spec does not have.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::snapshot_settings;
use crate::support::{self, Capture, EXAMPLES};

fn graph(example: &str, format: &str) -> String {
    support::warren(&["graph", &support::example(example), "--format", format])
        .run()
        .expect(0)
        .stdout
}

#[test]
fn mermaid_and_dot_of_every_example_are_pinned() {
    for example in EXAMPLES {
        let mut settings = snapshot_settings("snapshots");
        settings.set_snapshot_suffix(example.to_string());
        settings.bind(|| {
            insta::assert_snapshot!("graph__mermaid", graph(example, "mermaid"));
            insta::assert_snapshot!("graph__dot", graph(example, "dot"));
        });
    }
}

/// `dot` from Graphviz, or `None` outside CI when it is not installed (CI installs it
/// with scripts/install-brokers, and there a missing `dot` fails the test).
fn graphviz() -> Option<&'static str> {
    let found = Command::new("dot")
        .arg("-V")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some("dot");
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "Graphviz `dot` is missing: scripts/install-brokers installs it (apt-get install graphviz)"
    );
    eprintln!("NOT TESTED: Graphviz `dot` is not installed (apt-get install graphviz)");
    None
}

/// `dot -Tsvg` of `text`: the SVG, or Graphviz's complaint.
pub fn svg_of(dot: &str, text: &str) -> Result<String, String> {
    let mut child = Command::new(dot)
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dot runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    if !output.status.success() || !stderr.trim().is_empty() {
        return Err(stderr);
    }
    Ok(String::from_utf8(output.stdout).expect("SVG is UTF-8"))
}

#[test]
fn graphviz_reads_every_dot_output() {
    let Some(dot) = graphviz() else { return };
    for example in EXAMPLES {
        let text = graph(example, "dot");
        let svg = svg_of(dot, &text).unwrap_or_else(|e| panic!("{example}: {e}\n{text}"));
        assert!(svg.contains("<svg"), "{example}");
    }
    // Names that need escaping, through the whole path: spec, graph, Graphviz.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("odd.yaml");
    std::fs::write(
        &spec,
        "version: 1\nvhosts:\n  \"v \\\"1\\\" ü\":\n    services:\n      \"s\\\\x\":\n        exchange: { name: \"ex \\\"q\\\" {x}\" }\n        consumers:\n          \"c d\":\n            queue: \"q.ü <b> |\"\n            routing_keys: [\"a.#\"]\n            retry: { delays: [1s] }\n",
    )
    .unwrap();
    for format in ["dot", "mermaid"] {
        let run = support::warren(&["graph", spec.to_str().unwrap(), "--format", format])
            .run()
            .expect(0);
        if format == "dot" {
            let svg = svg_of(dot, &run.stdout).unwrap_or_else(|e| panic!("{e}\n{}", run.stdout));
            assert!(svg.contains("q.ü &lt;b&gt; |"), "{svg}");
            assert!(svg.contains("ex &quot;q&quot; {x}"), "{svg}");
        } else {
            assert!(
                run.stdout.contains("q.ü #lt;b#gt; #124;")
                    && run.stdout.contains("ex #quot;q#quot; {x}"),
                "{}",
                run.stdout
            );
        }
    }
}

#[test]
fn the_pictures_in_docs_are_those_of_the_examples() {
    let Some(dot) = graphviz() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for example in EXAMPLES {
        let path = root.join(format!("docs/graphs/{example}.svg"));
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}: run scripts/graphs", path.display()));
        let current = svg_of(dot, &graph(example, "dot")).unwrap();
        assert!(
            committed == current,
            "{} is out of date: run scripts/graphs",
            path.display()
        );
    }
}

#[test]
fn filters_keep_one_vhost_or_service_and_name_the_choices() {
    let orders = support::warren(&["graph", "examples/shop.yaml", "--service", "orders"])
        .run()
        .expect(0)
        .stdout;
    assert!(orders.contains("service orders"), "{orders}");
    assert!(!orders.contains("service email"), "{orders}");
    // Where its messages come from: the shared exchange that binds to it.
    assert!(orders.contains("events<br/>"), "{orders}");
    let run = support::warren(&["graph", "examples/shop.yaml", "--service", "order"])
        .run()
        .expect(1);
    assert!(
        run.stderr.contains("no service `order`")
            && run.stderr.contains("did you mean `orders`")
            && run.stderr.contains("`email`, `orders`, `payments`"),
        "{}",
        run.stderr
    );
    let run = support::warren(&["graph", "examples/shop.yaml", "--vhost", "nope"])
        .run()
        .expect(1);
    assert!(
        run.stderr.contains("no vhost `nope`") && run.stderr.contains("`shop`"),
        "{}",
        run.stderr
    );
}
