//! Semantics of the compiler, pinned on small specs: the helpers that compile one here,
//! and the tests by what they pin (a ladder's objects, the policies, the permissions,
//! the names the compiler refuses).

use std::path::Path;

use super::{Options, compile};
use crate::model::version::TargetVersion;
use crate::model::{Definitions, Queue};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::load_str;

mod ladders;
mod permissions;
mod policies;
mod reserved;

fn compile_yaml(yaml: &str, target: TargetVersion) -> Result<Definitions, Vec<Diagnostic>> {
    let file = load_str(Path::new("test.yaml"), yaml.to_string())?;
    compile(
        &file,
        &Options {
            target,
            secrets: None,
        },
    )
    .map(|c| c.definitions)
}

fn ok(yaml: &str) -> Definitions {
    compile_yaml(yaml, TargetVersion::V4_1).unwrap_or_else(|d| panic!("{d:#?}"))
}

fn errors(yaml: &str) -> Vec<Diagnostic> {
    compile_yaml(yaml, TargetVersion::V4_1).expect_err("should not compile")
}

fn queue<'a>(defs: &'a Definitions, name: &str) -> &'a Queue {
    defs.queues
        .iter()
        .find(|q| q.name == name)
        .unwrap_or_else(|| panic!("no queue {name}"))
}

fn consumers(n: usize, delays: &str) -> String {
    let mut yaml = format!(
        "version: 1\ndefaults:\n  retry:\n    delays: {delays}\nvhosts:\n  v:\n    services:\n      s:\n        exchange: {{ type: fanout }}\n        consumers:\n"
    );
    for i in 0..n {
        yaml.push_str(&format!("          c{i}: {{}}\n"));
    }
    yaml
}
