//! The map stays true: every file path and code identifier that docs/architecture.md
//! and docs/development.md name still exists, and a function named beside its file
//! (`` `apply/gates.rs` (`check_gates`) ``) is in that file.
//!
//! It reads the docs and the source as text. A name is looked up in the code with the
//! whole-line comments left out, so a rename that leaves the old name only in a doc
//! comment still fails here. Kept apart from `layers.rs`, which checks the source's
//! imports: this file checks the prose that describes them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The docs that name files and identifiers as a map of the code.
const MAPS: &[&str] = &["docs/architecture.md", "docs/development.md"];

/// The folders whose text is the code a map may name.
const CODE_ROOTS: &[&str] = &["src", "tests", "scripts", "bench", "examples", ".ci"];

/// A path's first folder that makes it a path even without an extension
/// (`scripts/ci/warren-ci`).
const PATH_ROOTS: &[&str] = &[
    "src/",
    "tests/",
    "scripts/",
    "bench/",
    "examples/",
    "docs/",
    ".ci/",
];

/// Extensions of the files a map names.
const EXTENSIONS: &[&str] = &[
    ".rs", ".md", ".toml", ".json", ".yaml", ".yml", ".sh", ".py", ".snap",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every file and folder of the repository, as paths relative to its root.
fn repository_paths(dir: &Path, root: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name == "target" || name == ".git" || name == "node_modules" {
            continue;
        }
        let relative = path.strip_prefix(root).unwrap().display().to_string();
        found.push(relative);
        if path.is_dir() {
            repository_paths(&path, root, found);
        }
    }
}

/// One file of code: its path and its text without whole-line comments.
struct CodeFile {
    path: String,
    code: String,
}

fn code_files(paths: &[String]) -> Vec<CodeFile> {
    let root = root();
    paths
        .iter()
        .filter(|path| {
            CODE_ROOTS
                .iter()
                .any(|code| path.starts_with(&format!("{code}/")))
        })
        .filter(|path| !path.contains("/snapshots/"))
        // This file's examples name what they pretend is missing.
        .filter(|path| !path.ends_with("offline/docs_truth.rs"))
        .filter_map(|path| {
            let text = std::fs::read_to_string(root.join(path)).ok()?;
            let comment = if path.ends_with(".rs") { "//" } else { "#" };
            let code = text
                .lines()
                .filter(|line| !line.trim_start().starts_with(comment))
                .collect::<Vec<_>>()
                .join("\n");
            Some(CodeFile {
                path: path.clone(),
                code,
            })
        })
        .collect()
}

/// The identifiers (runs of letters, digits and `_`) of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
}

/// A doc's text outside fenced code blocks, its paragraphs on one line each so that a
/// parenthesis opened on one line and closed on the next is read whole.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if line.trim().is_empty() || line.starts_with('|') || line.starts_with('#') {
            out.push('\n');
        } else {
            out.push(' ');
        }
        out.push_str(line);
    }
    out
}

/// A piece of prose: a code span, or one of the characters that shape a group.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Span(&'a str),
    Open,
    Close,
    /// Words between two of the others: a path followed by words and then a
    /// parenthesis does not own what the parenthesis names.
    Words,
    /// Text that ends a group's reach (a table cell's border, a line's end).
    Break,
}

fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(['`', '(', ')', '|', '\n']) {
        if !rest[..at].trim().is_empty() {
            pieces.push(Piece::Words);
        }
        let mark = rest.as_bytes()[at];
        rest = &rest[at + 1..];
        match mark {
            b'`' => {
                let Some(end) = rest.find('`') else { break };
                pieces.push(Piece::Span(&rest[..end]));
                rest = &rest[end + 1..];
            }
            b'(' => pieces.push(Piece::Open),
            b')' => pieces.push(Piece::Close),
            _ => pieces.push(Piece::Break),
        }
    }
    pieces
}

/// `span` names a file or folder: `model/id.rs`, `render/sections/`, `scripts/ci/warren-ci`.
fn is_path(span: &str) -> bool {
    let shaped = span
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
    let last = span.rsplit('/').next().unwrap_or(span);
    shaped
        && (span.contains('/') || span.ends_with(".rs"))
        && (span.ends_with('/')
            || EXTENSIONS.iter().any(|extension| last.ends_with(extension))
            || PATH_ROOTS.iter().any(|root| span.starts_with(root)))
}

/// `span` is a Rust path (`ObjectKind::as_str`, `check_gates()`, `Winner::Tie`).
fn rust_path(span: &str) -> Option<Vec<&str>> {
    let span = span.strip_suffix("()").unwrap_or(span);
    let segments: Vec<&str> = span.split("::").collect();
    let identifier = |segment: &&str| {
        segment
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    segments.iter().all(identifier).then_some(segments)
}

/// A Rust path unlike an English word, so that its absence from the code means a
/// rename: qualified (`a::b`), with an underscore, or in CamelCase.
fn is_code_name(segments: &[&str]) -> bool {
    let first = segments[0];
    let camel = first.starts_with(|c: char| c.is_ascii_uppercase())
        && first.chars().any(|c| c.is_ascii_lowercase());
    segments.len() > 1 || first.contains('_') || camel
}

/// The code files a path in a map stands for: the file itself, the files of a folder,
/// and for a path written relative to a module (`markdown/changes.rs` under
/// `render/`), every file whose path ends with it.
fn files_of<'a>(path: &str, code: &'a [CodeFile]) -> Vec<&'a CodeFile> {
    let path = path.trim_end_matches('/');
    code.iter()
        .filter(|file| {
            file.path == path
                || file.path.ends_with(&format!("/{path}"))
                || file.path.starts_with(&format!("{path}/"))
                || file.path.contains(&format!("/{path}/"))
        })
        .collect()
}

/// The code files of every module of that name: `status` stands for `src/status/…`
/// (or `src/status.rs`) and `tests/broker/status.rs`.
fn module_files<'a>(module: &str, code: &'a [CodeFile]) -> Vec<&'a CodeFile> {
    let file = format!("{module}.rs");
    code.iter()
        .filter(|code| {
            code.path
                .split('/')
                .any(|part| part == module || part == file)
        })
        .collect()
}

fn holds_word(file: &CodeFile, name: &str) -> bool {
    words(&file.code).any(|word| word == name)
}

/// What a map says that the code does not hold, one line each.
fn untrue(doc: &str, text: &str, paths: &[String], code: &[CodeFile]) -> Vec<String> {
    let every_word: BTreeSet<&str> = code.iter().flat_map(|file| words(&file.code)).collect();
    // Modules by the name of their file or folder (`apply`, `replay`, `status`), in
    // the crate or in a test binary: a test's id starts with its file's.
    let modules: BTreeSet<&str> = paths
        .iter()
        .filter(|path| path.starts_with("src/") || path.starts_with("tests/"))
        .filter_map(|path| path.rsplit('/').next())
        .map(|name| name.trim_end_matches(".rs"))
        // Inline modules too (`per_version!`'s `on_3_10` in a test's id).
        .chain(code.iter().flat_map(|file| {
            file.code
                .split("mod ")
                .skip(1)
                .filter_map(|rest| words(rest).next())
        }))
        .collect();
    let exists = |span: &str| {
        let span = span.trim_end_matches('/');
        paths.iter().any(|path| {
            path == span || path.ends_with(&format!("/{span}")) || *path == format!("src/{span}")
        })
    };
    let mut wrong = Vec::new();
    // The file the identifiers of the innermost open group belong to, if any.
    let mut owners: Vec<Option<&str>> = Vec::new();
    let mut last_path: Option<&str> = None;
    for piece in pieces(text) {
        match piece {
            Piece::Open => owners.push(last_path.take()),
            Piece::Close => {
                owners.pop();
                last_path = None;
            }
            Piece::Words => last_path = None,
            Piece::Break => {
                owners.clear();
                last_path = None;
            }
            Piece::Span(span) if is_path(span) => {
                if !exists(span) {
                    wrong.push(format!("{doc}: `{span}` is not a file or folder here"));
                }
                if let Some(owner) = owners.last_mut() {
                    *owner = Some(span);
                }
                last_path = Some(span);
            }
            Piece::Span(span) => {
                last_path = None;
                let Some(segments) = rust_path(span) else {
                    continue;
                };
                if is_code_name(&segments) {
                    for segment in &segments {
                        if !every_word.contains(segment) && !modules.contains(segment) {
                            wrong.push(format!("{doc}: `{span}`: no `{segment}` in the code"));
                        }
                    }
                }
                // A qualified name that starts at a module is that module's, wherever
                // it is written; otherwise the file of the group it is in owns it.
                let (owner, files) = if segments.len() > 1 && modules.contains(segments[0]) {
                    (segments[0], module_files(segments[0], code))
                } else {
                    let Some(owner) = owners.last().copied().flatten() else {
                        continue;
                    };
                    (owner, files_of(owner, code))
                };
                // Every part of the name that is not a module's is in the owner
                // (`Routes::dead_letter` beside `model/dead_letter.rs`: both words).
                let missing = segments
                    .iter()
                    .enumerate()
                    .filter(|(at, segment)| {
                        *at + 1 == segments.len() || !modules.contains(**segment)
                    })
                    .any(|(_, name)| !files.iter().any(|file| holds_word(file, name)));
                if !files.is_empty() && missing {
                    wrong.push(format!("{doc}: `{span}` is not in `{owner}`"));
                }
            }
        }
    }
    wrong
}

#[test]
fn every_file_and_identifier_the_maps_name_exists_where_they_say() {
    let root = root();
    let mut paths = Vec::new();
    repository_paths(&root, &root, &mut paths);
    let code = code_files(&paths);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for doc in MAPS {
        let text = prose(&std::fs::read_to_string(root.join(doc)).unwrap());
        checked += pieces(&text)
            .iter()
            .filter(|piece| matches!(piece, Piece::Span(_)))
            .count();
        wrong.extend(untrue(doc, &text, &paths, &code));
    }
    let mut said = BTreeSet::new();
    wrong.retain(|line| said.insert(line.clone()));
    assert!(checked > 500, "only {checked} code spans were read");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The test's own reading: a renamed function fails it, in the list and beside its file.
#[test]
fn a_renamed_identifier_or_a_moved_file_is_found() {
    let paths = vec![
        "src".to_string(),
        "src/apply".to_string(),
        "src/apply/gates.rs".to_string(),
        "src/apply/mod.rs".to_string(),
    ];
    let code = vec![
        CodeFile {
            path: "src/apply/gates.rs".into(),
            code: "pub fn check_gates_renamed() {}".into(),
        },
        CodeFile {
            path: "src/apply/mod.rs".into(),
            code: "pub fn apply() { gates::check_gates(); }".into(),
        },
    ];
    let text = prose(
        "| what | `apply/gates.rs` (`check_gates`) | `apply/gone.rs`, `apply::check_gates` |\n\
         Fine: `apply/mod.rs` (`apply`), and prose (`colors`).",
    );
    assert_eq!(
        untrue("map.md", &text, &paths, &code),
        [
            "map.md: `check_gates` is not in `apply/gates.rs`",
            "map.md: `apply/gone.rs` is not a file or folder here",
        ]
    );
    let code = vec![CodeFile {
        path: "src/apply/gates.rs".into(),
        code: "pub fn check_gates_renamed() {}".into(),
    }];
    assert_eq!(
        untrue("map.md", &prose("`apply::check_gates`"), &paths, &code),
        [
            "map.md: `apply::check_gates`: no `check_gates` in the code",
            "map.md: `apply::check_gates` is not in `apply`",
        ]
    );
}
