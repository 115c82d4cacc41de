//! The docs stand alone in a clone: every relative link in the repository's Markdown
//! leads to a file inside the repository, and no text cites a file outside it.

use std::path::{Path, PathBuf};

/// Every Markdown file of the repository, outside build output and dependencies.
fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                markdown_files(&path, found);
            }
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The targets of `[text](target)` links in `text`, anchors and titles removed.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or_default();
        targets.push(target.split('#').next().unwrap_or_default().to_string());
        rest = &rest[end..];
    }
    targets
}

#[test]
fn every_relative_link_in_the_docs_leads_to_a_file_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .unwrap();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.len() > 20, "{files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        if text.contains("../shared/") {
            broken.push(format!(
                "{shown}: cites `../shared/`, outside the repository"
            ));
        }
        for target in link_targets(&text) {
            let external = target.is_empty()
                || target.contains("://")
                || target.starts_with("mailto:")
                || target.starts_with('<');
            if external {
                continue;
            }
            let resolved = file.parent().unwrap().join(&target);
            match resolved.canonicalize() {
                Ok(path) if path.starts_with(&root) => {}
                Ok(_) => broken.push(format!("{shown}: `{target}` is outside the repository")),
                Err(_) => broken.push(format!("{shown}: `{target}` does not exist")),
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
