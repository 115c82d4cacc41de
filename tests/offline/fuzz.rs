//! A fuzzer that runs on stable Rust, inside `cargo test`: mutated specs and mutated
//! definitions files go through the same library calls as `validate`, `lint`,
//! `import --from` and `lint --definitions`, and three properties are checked.
//!
//! - Nothing panics.
//! - Every error is a diagnostic with a location (loading a spec), a diagnostic with a
//!   location or a spec path (compiling it), or one line starting `LINE:COLUMN:`
//!   (reading a definitions file); rendered diagnostics never hold a line longer than
//!   [`MAX_RENDERED_LINE`] characters.
//! - A definitions file that `import` accepts gives a spec that `validate` accepts
//!   (for the broker version that wrote the file).
//!
//! The driver is deterministic: mutations come from a seeded `StdRng` (`rand` is
//! already a dependency), seeded from `examples/`, `tests/bad_specs/`,
//! `tests/definitions/` and the committed inputs in `tests/fuzz/` (which are run first,
//! unmutated: each once found a bug). It runs for `WARREN_FUZZ_SECONDS` per target
//! (2 by default, what CI spends) with `WARREN_FUZZ_SEED` (fixed by default);
//! `scripts/fuzz SECONDS` runs it longer in release mode and prints the figures.
//! Failing inputs are written to `$CARGO_TARGET_TMPDIR/fuzz-failures/`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use warren::compile::{self, Options};
use warren::model::version::{CheckedVersion, TargetVersion};
use warren::spec::diagnostic::Diagnostic;

/// The longest line a rendered diagnostic may hold (the excerpt is 120 characters,
/// a message at most 600).
const MAX_RENDERED_LINE: usize = 1_000;

/// Values that have broken parsers and checks before.
const INTERESTING_TEXT: &[&str] = &[
    "*a",
    "&a ",
    "[",
    "]",
    "{",
    "}",
    "---\n",
    "\t",
    "~",
    "-1",
    "0",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999999999",
    "1.5",
    ".nan",
    ".inf",
    "\"",
    "'",
    ": ",
    "\n  ",
    "\n- ",
    "? ",
    "!!binary ",
    "!include ",
    "<<: ",
    "\u{feff}",
    "\0",
    "\u{1b}[31m",
    "amq.",
    "warren.",
    "retry",
    "delays: [1s]",
    "x-message-ttl",
    "#",
    "%",
    "@",
    "\r",
];

/// How long, and from which seed, to run.
fn budget() -> (Duration, u64) {
    let seconds = std::env::var("WARREN_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(2.0);
    let seed = std::env::var("WARREN_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5741_5252_454e);
    (Duration::from_secs_f64(seconds), seed)
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file with extension `ext` under `dir` (recursively), sorted.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// What a run found.
#[derive(Default)]
struct Tally {
    executions: u64,
    failures: Vec<(String, Vec<u8>)>,
}

impl Tally {
    /// Runs `check` on `input`, recording a panic or a broken property.
    fn run(&mut self, input: &[u8], check: fn(&[u8]) -> Result<(), String>) {
        self.executions += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| check(input)));
        let problem = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(problem)) => problem,
            Err(panic) => format!(
                "panic: {}",
                panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("?")
            ),
        };
        // One example of each kind of failure is enough to report.
        let kind: String = problem.chars().take(80).collect();
        if !self.failures.iter().any(|(p, _)| p.starts_with(&kind)) {
            self.failures.push((problem, input.to_vec()));
        }
    }

    /// Prints the figures, saves the failing inputs and fails the test if any.
    fn finish(self, target: &str) {
        eprintln!(
            "fuzz {target}: {} executions, {} distinct failures",
            self.executions,
            self.failures.len()
        );
        if self.failures.is_empty() {
            return;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
        let _ = std::fs::create_dir_all(&dir);
        let mut report = String::new();
        for (index, (problem, input)) in self.failures.iter().enumerate() {
            let file = dir.join(format!("{target}-{index}"));
            let _ = std::fs::write(&file, input);
            report.push_str(&format!("{}: {problem}\n", file.display()));
        }
        panic!("fuzz {target} found failures:\n{report}");
    }
}

/// Checks a rendered diagnostic list: it renders, and no line is unbounded.
fn check_rendering(source: &str, diagnostics: &[Diagnostic]) -> Result<(), String> {
    let mut out = Vec::new();
    let texts = warren::spec::Texts(vec![("fuzz.yaml".into(), source.to_string())]);
    warren::render::diagnostics::render_with(
        &mut out,
        Path::new("fuzz.yaml"),
        &texts,
        diagnostics,
        "",
    )
    .map_err(|e| e.to_string())?;
    let text = String::from_utf8(out).map_err(|_| "rendered diagnostics are not UTF-8")?;
    match text.lines().find(|l| l.chars().count() > MAX_RENDERED_LINE) {
        Some(line) => Err(format!(
            "a rendered line of {} characters",
            line.chars().count()
        )),
        None => Ok(()),
    }
}

/// Loads, compiles and lints a spec as `validate` and `lint` do.
fn check_spec(input: &[u8]) -> Result<(), String> {
    let source = String::from_utf8_lossy(input).into_owned();
    let file = match warren::spec::load_str(Path::new("fuzz.yaml"), source.clone()) {
        Ok(file) => file,
        Err(found) => {
            if let Some(d) = found.iter().find(|d| d.location.is_none()) {
                return Err(format!("load: diagnostic without location: {}", d.message));
            }
            return check_rendering(&source, &found);
        }
    };
    let target = TargetVersion::DEFAULT;
    let options = Options {
        target,
        secrets: None,
    };
    match compile::compile(&file, &options) {
        Err(found) => {
            let found = compile::resolve_locations(&file, found);
            if let Some(d) = found
                .iter()
                .find(|d| d.location.is_none() && d.path.is_none())
            {
                return Err(format!(
                    "compile: diagnostic without location: {}",
                    d.message
                ));
            }
            check_rendering(&source, &found)
        }
        Ok(compiled) => {
            let context = warren::lint::Context::for_spec(&file.spec, &compiled, target);
            let found = warren::lint::run(&context);
            let found = compile::resolve_locations(&file, found);
            check_rendering(&source, &found)
        }
    }
}

/// Reads a definitions file, lints it, imports it and validates the spec, as
/// `lint --definitions`, `import --from` and `validate` do.
fn check_definitions(input: &[u8]) -> Result<(), String> {
    let definitions = match warren::definitions_file::parse(input, Some("fuzz"), None) {
        Ok(read) => read.definitions,
        Err(message) => {
            let located = message
                .split(':')
                .take(2)
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
            if message.contains('\n') || !located {
                return Err(format!("read: not a located one-line error: {message:?}"));
            }
            return Ok(());
        }
    };
    let target = CheckedVersion::for_file(None, definitions.exported_by()).target;
    let _ = warren::lint::lint_definitions(&definitions, target);
    let options = warren::import::Options {
        name: "fuzz".into(),
        source: "fuzz.json".into(),
        ..Default::default()
    };
    // `import` refuses what does not validate, with a one-line reason.
    let yaml = match warren::import::from_definitions(definitions, &options) {
        Ok(imported) => imported.yaml,
        Err(problem) => {
            if problem.contains('\n') || problem.is_empty() {
                return Err(format!("import: refusal is not one line: {problem:?}"));
            }
            return Ok(());
        }
    };
    // What `import` accepts, `validate` accepts: checked again the way `validate` runs.
    let file = warren::spec::load_str(Path::new("imported.yaml"), yaml).map_err(|found| {
        format!(
            "import gave a spec that does not load: {}",
            found[0].message
        )
    })?;
    compile::compile(
        &file,
        &Options {
            target,
            secrets: None,
        },
    )
    .map_err(|found| {
        format!(
            "import gave a spec that validate refuses ({target}): {}",
            found[0].message
        )
    })?;
    Ok(())
}

/// One text-level mutation.
fn mutate_bytes(rng: &mut StdRng, input: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let len = input.len();
    match rng.random_range(0..8) {
        0 if len > 0 => {
            let i = rng.random_range(0..len);
            input[i] = rng.random();
        }
        1 => {
            let text = INTERESTING_TEXT[rng.random_range(0..INTERESTING_TEXT.len())];
            let i = rng.random_range(0..=len);
            input.splice(i..i, text.bytes());
        }
        2 if len > 0 => {
            let i = rng.random_range(0..len);
            let j = (i + rng.random_range(1..64)).min(len);
            input.drain(i..j);
        }
        3 if len > 0 => {
            let i = rng.random_range(0..len);
            let j = (i + rng.random_range(1..256)).min(len);
            let chunk = input[i..j].to_vec();
            let at = rng.random_range(0..=input.len());
            input.splice(at..at, chunk);
        }
        4 => {
            // A line from another seed.
            let other = &seeds[rng.random_range(0..seeds.len())];
            let lines: Vec<&[u8]> = other.split(|&b| b == b'\n').collect();
            let line = lines[rng.random_range(0..lines.len())];
            let mut line = line.to_vec();
            line.push(b'\n');
            let starts: Vec<usize> = std::iter::once(0)
                .chain(
                    input
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| **b == b'\n')
                        .map(|(i, _)| i + 1),
                )
                .collect();
            let at = starts[rng.random_range(0..starts.len())];
            input.splice(at..at, line);
        }
        5 => {
            // A line removed.
            let starts: Vec<usize> = std::iter::once(0)
                .chain(
                    input
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| **b == b'\n')
                        .map(|(i, _)| i + 1),
                )
                .filter(|&i| i < input.len())
                .collect();
            if let Some(&at) = starts.get(rng.random_range(0..starts.len().max(1))) {
                let end = input[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(input.len(), |p| at + p + 1);
                input.drain(at..end);
            }
        }
        6 => {
            // A number replaced by an interesting one.
            let numbers = [
                "0",
                "-1",
                "4294967296",
                "18446744073709551616",
                "1e400",
                "1.5",
                "255",
                "256",
            ];
            if let Some(i) = (0..len)
                .map(|_| rng.random_range(0..len.max(1)))
                .find(|&i| input.get(i).is_some_and(u8::is_ascii_digit))
            {
                let mut end = i;
                while end < input.len() && input[end].is_ascii_digit() {
                    end += 1;
                }
                let number = numbers[rng.random_range(0..numbers.len())];
                input.splice(i..end, number.bytes());
            }
        }
        _ => {
            let text = INTERESTING_TEXT[rng.random_range(0..INTERESTING_TEXT.len())];
            let times = rng.random_range(1..200);
            let i = rng.random_range(0..=len);
            input.splice(i..i, text.repeat(times).bytes());
        }
    }
}

/// Values that definitions files are known to carry, or that break importers.
fn interesting_value(rng: &mut StdRng, names: &[String]) -> Value {
    match rng.random_range(0..22) {
        0 => Value::from(0),
        1 => Value::from(-1),
        2 => Value::from(4_294_967_296_u64),
        3 => Value::from(u64::MAX),
        4 => Value::from(i64::MIN),
        5 => Value::from(1.5),
        6 => Value::from(""),
        7 => Value::from("a\nb"),
        8 => Value::from("\u{1b}[31m"),
        9 => Value::from("x".repeat(300)),
        10 => Value::Null,
        11 => Value::from(true),
        12 => Value::Array(vec![]),
        13 => Value::Object(Default::default()),
        14 => Value::from("amq.fuzz"),
        15 => Value::from("warren.fuzz"),
        16 => Value::from("("),
        17 => Value::from("/"),
        18 => Value::from("classic"),
        19 => Value::from(".*"),
        _ => names
            .get(rng.random_range(0..names.len().max(1)))
            .map(|n| Value::from(n.clone()))
            .unwrap_or(Value::Null),
    }
}

/// Every string in the document (names to reuse, so that mutations collide).
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// A node of `value` chosen by walking down at random.
fn random_node<'a>(rng: &mut StdRng, value: &'a mut Value) -> &'a mut Value {
    let len = match &*value {
        Value::Array(items) => items.len(),
        Value::Object(map) => map.len(),
        _ => 0,
    };
    if len == 0 || !rng.random_bool(0.8) {
        return value;
    }
    let i = rng.random_range(0..len);
    match value {
        Value::Array(items) => random_node(rng, &mut items[i]),
        Value::Object(map) => random_node(rng, map.values_mut().nth(i).expect("index in range")),
        other => other,
    }
}

/// One structural mutation of a JSON document.
fn mutate_json(rng: &mut StdRng, document: &mut Value) {
    let mut names = Vec::new();
    strings(document, &mut names);
    let node = random_node(rng, document);
    match node {
        Value::Object(map) if !map.is_empty() && rng.random_bool(0.3) => {
            let i = rng.random_range(0..map.len());
            let key = map.keys().nth(i).cloned().expect("index in range");
            map.shift_remove(&key);
        }
        Value::Array(items) if !items.is_empty() && rng.random_bool(0.4) => {
            let i = rng.random_range(0..items.len());
            let mut copy = items[i].clone();
            if rng.random_bool(0.5) {
                mutate_json(rng, &mut copy);
            }
            items.push(copy);
        }
        other => *other = interesting_value(rng, &names),
    }
}

/// Seeds from files, with the committed inputs first.
fn seeds(dirs: &[&str], ext: &str) -> Vec<Vec<u8>> {
    dirs.iter()
        .flat_map(|dir| files(&root().join(dir), ext))
        .filter_map(|path| std::fs::read(path).ok())
        .collect()
}

#[test]
fn fuzz_spec_loader_compiler_and_lint() {
    let (time, seed) = budget();
    let seeds = seeds(&["tests/fuzz/specs", "examples", "tests/bad_specs"], "yaml");
    assert!(seeds.len() > 100, "seeds are missing");
    let mut tally = Tally::default();
    for seed_input in &seeds {
        tally.run(seed_input, check_spec);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let start = Instant::now();
    while start.elapsed() < time {
        let mut input = seeds[rng.random_range(0..seeds.len())].clone();
        for _ in 0..rng.random_range(1..5) {
            mutate_bytes(&mut rng, &mut input, &seeds);
        }
        tally.run(&input, check_spec);
    }
    tally.finish("specs");
}

#[test]
fn fuzz_definitions_reader_import_and_validate() {
    let (time, seed) = budget();
    let seeds = seeds(&["tests/fuzz/definitions", "tests/definitions"], "json");
    assert!(seeds.len() > 10, "seeds are missing");
    let documents: Vec<Value> = seeds
        .iter()
        .filter_map(|s| serde_json::from_slice(s).ok())
        .collect();
    let mut tally = Tally::default();
    for seed_input in &seeds {
        tally.run(seed_input, check_definitions);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let start = Instant::now();
    while start.elapsed() < time {
        let mut document = documents[rng.random_range(0..documents.len())].clone();
        for _ in 0..rng.random_range(1..4) {
            mutate_json(&mut rng, &mut document);
        }
        let mut input = serde_json::to_vec_pretty(&document).expect("JSON");
        if rng.random_bool(0.1) {
            mutate_bytes(&mut rng, &mut input, &seeds);
        }
        tally.run(&input, check_definitions);
    }
    tally.finish("definitions");
}
