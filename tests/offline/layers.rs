//! The layering of `src/` (docs/architecture.md) as tests: no module uses one above
//! it, no two files of one module import each other, only `broker/` holds management
//! API paths and uses the network crates, and only `render/` and `commands/` print.
//!
//! It reads the source as text: a `crate::<module>` path names a top-level module, and
//! `super::<file>` or `crate::<module>::<file>` names a sibling file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules from the bottom up; a module may use only those of lower rank.
const LAYERS: &[(&str, u32)] = &[
    ("model", 0),
    ("suggest", 0),
    ("text", 0),
    ("spec", 1),
    ("broker", 1),
    ("definitions_file", 1),
    ("schema", 2),
    ("compile", 2),
    ("config", 2),
    ("diff", 3),
    ("lint", 3),
    ("trace", 3),
    ("replay", 3),
    ("status", 3),
    ("import", 3),
    ("k8s", 3),
    ("upgrade", 3),
    ("plan", 4),
    ("apply", 5),
    ("topology", 5),
    ("render", 6),
    ("cli", 7),
    ("commands", 8),
];

fn rank(module: &str) -> Option<u32> {
    LAYERS
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, rank)| *rank)
}

fn rust_files(directory: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The identifiers that follow `prefix` in `text`.
fn names_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut names = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        let rest = &text[at + prefix.len()..];
        match rest.strip_prefix('{') {
            // `use super::{a, b::c, d::{e, f}}` names `a`, `b` and `d`.
            Some(group) => names.extend(group_heads(group)),
            None => names.push(leading_name(rest)),
        }
    }
    names.retain(|name| !name.is_empty());
    names
}

/// The identifier at the start of `text`.
fn leading_name(text: &str) -> &str {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The first name of each item of a `{…}` group (`text` starts after the `{`).
fn group_heads(text: &str) -> Vec<&str> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item_start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                heads.push(leading_name(&text[item_start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(leading_name(&text[item_start..i]));
                item_start = i + 1;
            }
            _ => {}
        }
    }
    heads
}

#[test]
fn grouped_imports_name_each_module() {
    let code = "use super::{alpha, beta::Thing, gamma::{x, y}};\nuse crate::model::{self, id};";
    assert_eq!(names_after(code, "super::"), ["alpha", "beta", "gamma"]);
    assert_eq!(names_after(code, "crate::"), ["model"]);
    assert_eq!(names_after(code, "crate::model::"), ["self", "id"]);
}

/// Source text without line comments (doc links name modules above on purpose).
fn code_of(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| match line.trim_start().starts_with("//") {
            true => "",
            false => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

struct Source {
    /// Top-level module (`compile` for `src/compile/retry.rs`).
    module: String,
    /// File stem within the module's folder (`retry`), `None` for the module's root file.
    file: Option<String>,
    code: String,
}

fn sources() -> Vec<(PathBuf, Source)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let relative = path.strip_prefix(&src).unwrap().to_path_buf();
            let parts: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            let module = parts[0].clone();
            if module == "lib" || module == "main" {
                return None;
            }
            let file = match parts.as_slice() {
                [_] => None,
                [_, file] if file == "mod" => None,
                [_, file, ..] => Some(file.clone()),
                _ => None,
            };
            let code = code_of(&path);
            Some((relative, Source { module, file, code }))
        })
        .collect()
}

#[test]
fn no_module_uses_one_above_it() {
    let mut upward = Vec::new();
    for (path, source) in sources() {
        let own = rank(&source.module).unwrap_or_else(|| {
            panic!(
                "{}: add module `{}` to LAYERS",
                path.display(),
                source.module
            )
        });
        let used: BTreeSet<&str> = names_after(&source.code, "crate::").into_iter().collect();
        for module in used {
            if module == source.module {
                continue;
            }
            match rank(module) {
                Some(theirs) if theirs < own => {}
                _ => upward.push(format!("{} uses crate::{module}", path.display())),
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that point up or sideways:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_two_files_of_a_module_import_each_other() {
    let sources = sources();
    let siblings: BTreeSet<(String, String)> = sources
        .iter()
        .filter_map(|(_, s)| Some((s.module.clone(), s.file.clone()?)))
        .collect();
    // Edges between the non-root files of one module.
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (_, source) in &sources {
        let Some(file) = &source.file else { continue };
        let mut named: Vec<&str> = names_after(&source.code, "super::");
        named.extend(names_after(
            &source.code,
            &format!("crate::{}::", source.module),
        ));
        for other in named {
            if other != file && siblings.contains(&(source.module.clone(), other.to_string())) {
                edges
                    .entry((source.module.clone(), file.clone()))
                    .or_default()
                    .insert(other.to_string());
            }
        }
    }
    let mut cycles = Vec::new();
    for ((module, file), targets) in &edges {
        for target in targets {
            let back = edges
                .get(&(module.clone(), target.clone()))
                .is_some_and(|t| t.contains(file));
            if back && file < target {
                cycles.push(format!("{module}/{file}.rs <-> {module}/{target}.rs"));
            }
        }
    }
    // Longer cycles: a file reaching itself through its siblings.
    for (module, file) in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = edges[&(module.clone(), file.clone())]
            .iter()
            .cloned()
            .collect();
        while let Some(next) = stack.pop() {
            if &next == file {
                cycles.push(format!("{module}/{file}.rs reaches itself"));
                break;
            }
            if seen.insert(next.clone())
                && let Some(more) = edges.get(&(module.clone(), next))
            {
                stack.extend(more.iter().cloned());
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn only_the_broker_module_holds_management_api_paths() {
    let outside: Vec<String> = sources()
        .into_iter()
        .filter(|(_, s)| s.module != "broker" && s.code.contains("\"/api/"))
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "API paths outside src/broker/: {outside:?}"
    );
}

#[test]
fn the_checker_sees_what_it_checks() {
    let sources = sources();
    let broker_paths = sources
        .iter()
        .filter(|(_, s)| s.module == "broker" && s.code.contains("\"/api/"))
        .count();
    assert!(broker_paths >= 3, "the broker's API paths are found");
    let compile_files = sources
        .iter()
        .filter(|(_, s)| s.module == "compile")
        .count();
    assert!(
        compile_files >= 10,
        "compile's files are found: {compile_files}"
    );
    assert_eq!(
        names_after("use crate::model::{A}; crate::spec::x", "crate::"),
        vec!["model", "spec"]
    );
}

/// Every `.rs` file under `src/` (the crate root and the binary's too), as its path
/// relative to `src/` and its code without line comments.
fn all_sources() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let code = code_of(&path);
            (path.strip_prefix(&src).unwrap().to_path_buf(), code)
        })
        .collect()
}

/// Where `token` occurs in `code` as a token of its own (not the tail of a longer
/// name: `print!` is not found in `eprint!`), as 1-based line numbers.
fn lines_with(code: &str, token: &str) -> Vec<usize> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut lines = Vec::new();
    for (number, line) in code.lines().enumerate() {
        let found = line.match_indices(token).any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let after = line[at + token.len()..].chars().next();
            let joined_before = before.is_some_and(is_name);
            let joined_after = token.ends_with(is_name) && after.is_some_and(is_name);
            !(joined_before || joined_after)
        });
        if found {
            lines.push(number + 1);
        }
    }
    lines
}

/// `file:line: token` for each use of one of `tokens` in a file outside the folders
/// `allowed` (top-level modules of `src/`), except the files of `exceptions`.
fn uses_outside(tokens: &[&str], allowed: &[&str], exceptions: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, code) in all_sources() {
        let module = path.iter().next().unwrap().to_string_lossy();
        let module = module.trim_end_matches(".rs");
        let shown = format!("src/{}", path.display());
        if allowed.contains(&module) || exceptions.contains(&shown.as_str()) {
            continue;
        }
        for token in tokens {
            for line in lines_with(&code, token) {
                found.push(format!("{shown}:{line}: {token}"));
            }
        }
    }
    found
}

/// What writes to the terminal: the macros, and the standard streams taken directly.
const PRINTING: &[&str] = &[
    "println!",
    "print!",
    "eprintln!",
    "eprint!",
    "dbg!",
    "stdout()",
    "stderr()",
];

/// The crates and modules that talk to the network: HTTP (the management API), AMQP,
/// TLS and sockets.
const NETWORK: &[&str] = &["reqwest", "lapin", "rustls", "tokio::net", "std::net"];

#[test]
fn only_render_and_commands_print() {
    // Files that print today while their printing is being moved out (none).
    let being_moved: &[&str] = &[];
    let printing = uses_outside(PRINTING, &["render", "commands"], being_moved);
    assert!(
        printing.is_empty(),
        "printing outside src/render/ and src/commands/ (return the text or an event, \
         and let render/ format it):\n{}",
        printing.join("\n")
    );
}

#[test]
fn only_the_broker_module_uses_the_network() {
    // Files that use the network today while that is being moved (none).
    let being_moved: &[&str] = &[];
    let network = uses_outside(NETWORK, &["broker"], being_moved);
    assert!(
        network.is_empty(),
        "network crates outside src/broker/ (ask broker::Client instead):\n{}",
        network.join("\n")
    );
}

#[test]
fn the_printing_and_network_checks_see_what_they_check() {
    let code =
        "fn f() {\n    eprint!(\"x\");\n    let out = std::io::stdout();\n    fn sprint() {}\n}";
    assert_eq!(lines_with(code, "print!"), Vec::<usize>::new());
    assert_eq!(lines_with(code, "eprint!"), [2]);
    assert_eq!(lines_with(code, "stdout()"), [3]);
    assert_eq!(
        lines_with("use lapin::Channel;\nlet lapinou = 1;", "lapin"),
        [1]
    );
    // The allowed folders do print and talk to the network: the checks would see it.
    let everywhere = |tokens: &[&str]| uses_outside(tokens, &[], &[]);
    let printing = everywhere(PRINTING);
    assert!(printing.iter().any(|f| f.starts_with("src/render/")));
    assert!(printing.iter().any(|f| f.starts_with("src/commands/")));
    let network = everywhere(NETWORK);
    assert!(
        network
            .iter()
            .filter(|f| f.starts_with("src/broker/"))
            .count()
            >= 3,
        "{network:?}"
    );
}
