//! Definitions files RabbitMQ refuses (`tests/definitions/refused/`, each POSTed to
//! real 3.10.8, 4.0.5 and 4.3.6 nodes; `expected.json` holds what each version answered):
//! warren refuses each for the versions that refuse it, in one line that names the
//! place of the broken value and the rule, and reads it for the versions that accept
//! it.

use serde_json::Value;

use crate::support::{self, Run};
use warren::definitions_file::locate::{self, JsonPointer, PointerToken};

const FOLDER: &str = "tests/definitions/refused";

/// A JSON pointer (`/users/0/limits`) as a path.
fn path_of(pointer: &str) -> JsonPointer {
    JsonPointer(
        pointer
            .split('/')
            .skip(1)
            .map(|step| {
                let step = step.replace("~1", "/").replace("~0", "~");
                match step.parse::<usize>() {
                    Ok(index) => PointerToken::Index(index),
                    Err(_) => PointerToken::Key(step),
                }
            })
            .collect(),
    )
}

#[test]
fn every_file_the_broker_refuses_is_refused_at_its_place_for_the_versions_that_refuse_it() {
    let expected: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(format!("{FOLDER}/expected.json")).unwrap())
            .unwrap();
    assert!(expected.len() >= 15, "{} refused files", expected.len());
    let mut problems = Vec::new();
    let mut fired = std::collections::BTreeSet::new();
    for (name, facts) in &expected {
        let file = format!("{FOLDER}/{name}");
        let text = std::fs::read_to_string(&file).unwrap();
        let refused_by: Vec<&str> = facts["refused_by"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        // Refused only while a plugin is off: warren cannot know the broker's plugins
        // and reads such a file. A permission of a user the file does not hold may
        // name one the broker has (`guest`, on every default broker): a file cannot
        // tell, and a plan against the broker checks it.
        let conditional =
            facts.get("condition").is_some() || name == "permission-user-unknown.json";
        for version in ["3.10", "4.0", "4.3"] {
            let Run { code, stderr, .. } = support::run_with_shop_passwords(&[
                "lint",
                "--definitions",
                &file,
                "--target-version",
                version,
                "--format",
                "json",
            ]);
            assert!(!stderr.contains("panicked"), "{file}: {stderr}");
            let read = !stderr.contains("refuses this file")
                && !stderr.contains("is not a RabbitMQ definitions file")
                && !stderr.contains("error:");
            let refuses = refused_by.contains(&version) && !conditional;
            if refuses {
                let place =
                    locate::position(&text, &path_of(facts["json_pointer"].as_str().unwrap()));
                let line = stderr.lines().find(|l| l.starts_with("error:"));
                if let Some(rule) = line
                    .and_then(|l| l.rsplit_once('[').map(|(_, r)| r))
                    .and_then(|r| r.split_once(']').map(|(id, _)| id.to_string()))
                {
                    fired.insert(rule);
                }
                match line {
                    Some(line) if code == Some(1) && line.contains(&format!("{file}:{place}:")) => {}
                    _ => problems.push(format!(
                        "{name} on {version}: expected a refusal at {place} ({}), got exit {code:?}: {stderr}",
                        facts["rule"]
                    )),
                }
            } else if !read {
                problems.push(format!(
                    "{name} on {version}: the broker accepts it, warren refused: {stderr}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Every rule warren mirrors is tried by at least one file the broker refused.
    for rule in warren::definitions_file::rules::RULES {
        assert!(
            fired.contains(rule.id),
            "no refused file breaks rule {} (fired: {fired:?})",
            rule.id
        );
    }
}

#[test]
fn every_rule_is_documented() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/definitions-files.md"
    ))
    .unwrap();
    for rule in warren::definitions_file::rules::RULES {
        assert!(
            doc.contains(&format!("| `{}` |", rule.id)),
            "docs/definitions-files.md lacks rule {}",
            rule.id
        );
    }
}
