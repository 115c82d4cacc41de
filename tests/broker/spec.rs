//! Spec files for scenarios: written to a temporary directory, rewritten between
//! applies.

use std::path::{Path, PathBuf};

/// A spec file in a temporary directory of its own (removed on drop).
pub struct Spec {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Spec {
    pub fn new(yaml: &str) -> Spec {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spec.yaml");
        std::fs::write(&path, yaml).unwrap();
        Spec { _dir: dir, path }
    }

    /// An example of `examples/` with its text substituted (`from` → `to`, each must
    /// occur).
    #[track_caller]
    pub fn example(file: &str, substitutions: &[(&str, &str)]) -> Spec {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(file);
        let mut text = std::fs::read_to_string(path).unwrap();
        for (from, to) in substitutions {
            assert!(text.contains(from), "{file} has no `{from}`");
            text = text.replace(from, to);
        }
        Spec::new(&text)
    }

    /// Replaces the spec's text.
    pub fn write(&self, yaml: &str) {
        std::fs::write(&self.path, yaml).unwrap();
    }

    /// The path as a command-line argument.
    pub fn arg(&self) -> &str {
        self.path.to_str().unwrap()
    }
}
