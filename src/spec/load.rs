//! Reads a spec: one YAML file, or a directory of them merged into one spec
//! ([`super::merge`]), typed [`Spec`] with positions for later checks. What the YAML
//! parser's refusals say to a spec's author is `yaml_errors`.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap as HashMap;

use crate::model::TargetVersion;
use crate::model::plan_format::saved_plan_format;
use crate::spec::diagnostic::Diagnostic;

use super::environment::{self, Choice, Overrides};
use super::limits;
use super::recover;
use super::source_map::{Location, SourceFile, SourceMap, SpecPath};
use super::types::Spec;
use super::yaml_errors::parse_error_diagnostic;

/// A loaded spec with the text and positions it came from.
#[derive(Debug, Clone)]
pub struct SpecFile {
    /// The path as given by the user (used in messages): a file, or a directory.
    pub path: PathBuf,
    /// The files the spec was read from, in name order: one for a file argument.
    pub files: Vec<SourceFile>,
    /// The typed spec (for a directory, its files merged).
    pub spec: Spec,
    /// Which file wrote each named entry and top-level setting (index into `files`),
    /// for a spec of several files; empty for one file.
    writers: HashMap<SpecPath, usize>,
    /// For a spec read for one of its environments: which values the environment
    /// wrote, and its vhost renames ([`SpecFile::for_environment`]).
    overrides: Option<Overrides>,
}

/// A place in one file of a spec.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The file.
    pub file: &'a Path,
    /// Line and column in it.
    pub location: Location,
}

impl SpecFile {
    /// The RabbitMQ line to check and compile the spec for, offline: `asked`
    /// (`--target-version` or `WARREN_TARGET_VERSION`), else the spec's own
    /// `rabbitmq` (as its environment has it), else the newest line. A command that
    /// talks to a broker compiles for the broker's line instead (`plan::against`).
    pub fn target(&self, asked: Option<TargetVersion>) -> TargetVersion {
        asked
            .or(self.spec.rabbitmq)
            .unwrap_or(TargetVersion::DEFAULT)
    }

    /// The file that wrote the value at `path`: the one that defined the named entry
    /// (service, ladder, user, policy …) or the top-level or vhost setting the path is
    /// in. Named entries are written in one file only ([`super::merge`]), so this is
    /// the nearest ancestor of `path` that has a writer; the first file otherwise.
    pub fn file_of(&self, path: &SpecPath) -> &SourceFile {
        // One file: nothing to look up (hashing each ancestor of every path of a
        // large spec's findings would cost for nothing).
        if self.writers.is_empty() {
            return &self.files[0];
        }
        let mut current = Some(path.clone());
        while let Some(at) = current {
            if let Some(&index) = self.writers.get(&at) {
                return &self.files[index];
            }
            current = at.parent();
        }
        &self.files[0]
    }

    /// The environment the spec was read for, if it declares environments.
    pub fn environment(&self) -> Option<&str> {
        self.overrides.as_ref().map(|o| o.environment.as_str())
    }

    /// The spec as it is in environment `chosen` (`--env`, `WARREN_ENV`): its
    /// overrides merged and vhosts renamed, named `<name>@<environment>`
    /// ([`environment::resolve`]). A spec without environments read without a choice
    /// is returned as it is. Errors point into the spec's files.
    ///
    /// Every spec's name and environments' names are checked here, whether an
    /// environment is chosen or not ([`environment::check_names`]): a name that would
    /// share another spec's ownership record never reaches a command.
    pub fn for_environment(mut self, chosen: Choice<'_>) -> Result<SpecFile, Vec<Diagnostic>> {
        let name = self.name();
        let named_after = self.spec.name.is_none().then_some(self.path.as_path());
        let resolved = environment::check_names(&self.spec, &name, named_after)
            .and_then(|()| environment::resolve(&self.spec, &name, chosen));
        match resolved {
            Ok(None) => Ok(self),
            Ok(Some((spec, overrides))) => {
                self.spec = spec;
                self.overrides = Some(overrides);
                Ok(self)
            }
            Err(mut found) => {
                for diagnostic in &mut found {
                    self.place_diagnostic(diagnostic);
                    diagnostic
                        .file
                        .get_or_insert_with(|| self.files[0].path.clone());
                }
                Err(found)
            }
        }
    }

    /// The names of the environments the spec declares (as written, before one is
    /// chosen).
    pub fn environment_names(&self) -> Vec<String> {
        self.spec.environments.keys().cloned().collect()
    }

    /// Where the value at `path` is written (or its nearest written ancestor): for a
    /// spec read for an environment, in the environment's overrides when it wrote the
    /// value, under the spec's own vhost names otherwise.
    pub fn locate(&self, path: &SpecPath) -> Option<Place<'_>> {
        if let Some(overrides) = &self.overrides {
            let source = overrides.source_of(path);
            let file = self.file_of(&source);
            return Some(Place {
                file: &file.path,
                location: file.source_map.locate(&source)?,
            });
        }
        let file = self.file_of(path);
        Some(Place {
            file: &file.path,
            location: file.source_map.locate(path)?,
        })
    }

    /// The place of `path` in words, for a message: `line 3, column 5`, and for a spec
    /// of several files `line 3, column 5 of dir/orders.yaml`.
    pub fn place_words(&self, path: &SpecPath) -> Option<String> {
        let place = self.locate(path)?;
        let at = format!(
            "line {}, column {}",
            place.location.line, place.location.column
        );
        Some(if self.files.len() > 1 {
            format!("{at} of {}", place.file.display())
        } else {
            at
        })
    }

    /// Fills in the file and line of a diagnostic that has a spec path and no location.
    pub fn place_diagnostic(&self, diagnostic: &mut Diagnostic) {
        if diagnostic.location.is_none()
            && let Some(path) = &diagnostic.path
            && let Some(place) = self.locate(path)
        {
            diagnostic.location = Some(place.location);
            diagnostic.file = Some(place.file.to_path_buf());
        }
    }

    /// The spec's name: its `name` (for a spec read for an environment,
    /// `<name>@<environment>`), else the file's stem or the directory's name
    /// ([`SpecFile::default_name`]). Its ownership record is named after it.
    pub fn name(&self) -> String {
        self.spec
            .name
            .clone()
            .or_else(|| self.default_name())
            .unwrap_or_else(|| "warren".into())
    }

    /// The name of a spec that writes no `name`: the file's name without its
    /// extension, or the directory's name (`warren plan .` included).
    pub fn default_name(&self) -> Option<String> {
        let path = if self.path.is_dir() {
            self.path.canonicalize().ok()?
        } else {
            self.path.clone()
        };
        let name = if self.path.is_dir() {
            path.file_name()?
        } else {
            path.file_stem()?
        };
        Some(name.to_string_lossy().into_owned())
    }

    /// The directory relative paths in the spec start from (password files): the
    /// spec file's directory, or the directory given.
    pub fn base_dir(&self) -> &Path {
        if self.path.is_dir() {
            return &self.path;
        }
        self.path
            .parent()
            .filter(|directory| !directory.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    }

    /// The texts of the spec's files, to quote lines under diagnostics.
    pub fn texts(self) -> Texts {
        Texts(
            self.files
                .into_iter()
                .map(|file| (file.path, file.source))
                .collect(),
        )
    }
}

/// The text of the files diagnostics point into, to quote their lines.
pub trait Sources {
    /// The text of `file`, if known.
    fn text(&self, file: &Path) -> Option<&str>;
}

impl Sources for SpecFile {
    fn text(&self, file: &Path) -> Option<&str> {
        self.files
            .iter()
            .find(|f| f.path == file)
            .map(|f| f.source.as_str())
    }
}

/// Texts of files by path, owned.
#[derive(Debug, Clone, Default)]
pub struct Texts(pub Vec<(PathBuf, String)>);

impl Texts {
    /// The texts of the files `diagnostics` point into (each file's own, else
    /// `given`), read again for quoting when a spec did not load: bounded like
    /// [`load_file`], with bytes that are not UTF-8 shown as `�`.
    pub fn for_report(given: &Path, diagnostics: &[Diagnostic]) -> Texts {
        let mut texts = Texts::default();
        for diagnostic in diagnostics.iter().filter(|d| d.location.is_some()) {
            let file = diagnostic.file_or(given);
            if file.is_dir() || texts.0.iter().any(|(path, _)| path == file) {
                continue;
            }
            if let Ok((bytes, _)) = read_bounded(file) {
                texts.0.push((
                    file.to_path_buf(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
            }
        }
        texts
    }
}

impl Sources for Texts {
    fn text(&self, file: &Path) -> Option<&str> {
        self.0
            .iter()
            .find(|(path, _)| path == file)
            .map(|(_, text)| text.as_str())
    }
}

/// Reads the spec at `path` ([`load_file`]) for environment `environment` (`--env`;
/// [`SpecFile::for_environment`]): what every command that reads a spec calls.
pub fn load(path: &Path, environment: Choice<'_>) -> Result<SpecFile, Vec<Diagnostic>> {
    load_file(path)?.for_environment(environment)
}

/// A spec that did not load, as the commands that report every mistake of a file in
/// one run (`validate`, `lint`) take it: why, and what of it still reads.
#[derive(Debug)]
pub struct Unread {
    /// Why it did not load.
    pub diagnostics: Vec<Diagnostic>,
    /// The rest of the file, when the parser refused only entries it could set aside.
    pub rest: Option<Box<Rest>>,
}

impl From<Vec<Diagnostic>> for Unread {
    fn from(diagnostics: Vec<Diagnostic>) -> Unread {
        Unread {
            diagnostics,
            rest: None,
        }
    }
}

/// What still reads of a spec file whose entries the parser refused: the file with
/// each refused entry blanked out (lines and columns stay the file's), and the paths
/// of those entries. Compiling it finds the mistakes the parser cannot see (a ladder
/// that does not exist, a delay too long), so that a file with eleven mistakes of both
/// kinds shows all eleven at once.
#[derive(Debug)]
pub struct Rest {
    /// The spec without the refused entries.
    pub file: SpecFile,
    /// Where each refused entry was: what the compiler then finds missing there is
    /// the blanking's doing, not a mistake of the file.
    pub set_aside: Vec<SpecPath>,
}

/// [`load`], and on failure what still reads of the file ([`Rest`]): for a spec file,
/// not a directory, whose only errors are entries the parser refused.
pub fn load_for_checking(path: &Path, environment: Choice<'_>) -> Result<SpecFile, Unread> {
    load(path, environment).map_err(|diagnostics| Unread {
        rest: (!path.is_dir())
            .then(|| rest_of(path, environment))
            .flatten()
            .map(Box::new),
        diagnostics,
    })
}

/// The rest of the spec file at `path` that still reads once every entry the parser
/// refuses is set aside; `None` when the file parses as it is (its errors were
/// elsewhere) or when what is left does not read.
fn rest_of(path: &Path, environment: Choice<'_>) -> Option<Rest> {
    let source = std::fs::read_to_string(path).ok()?;
    if source.len() > limits::MAX_BYTES || saved_plan_format(&source).is_some() {
        return None;
    }
    let read =
        |text: &str| serde_saphyr::from_str_with_options::<Spec>(text, limits::parser_options());
    let first = parse_error_diagnostic(&source, &read(&source).err()?);
    let recovery = recover::recover(&source, first, |text| {
        read(text)
            .err()
            .map(|err| parse_error_diagnostic(text, &err))
    });
    let text = recovery.readable?;
    let spec = read(&text).ok()?;
    let original = SourceMap::build(&source);
    let set_aside = recovery
        .blanked
        .iter()
        .filter_map(|offset| original.path_at(location_of_byte(source.as_bytes(), *offset)))
        .collect();
    let file = SpecFile {
        path: path.to_path_buf(),
        files: vec![SourceFile {
            path: path.to_path_buf(),
            source_map: SourceMap::build(&text),
            source: text,
        }],
        spec,
        writers: HashMap::default(),
        overrides: None,
    };
    Some(Rest {
        file: file.for_environment(environment).ok()?,
        set_aside,
    })
}

/// Reads and parses the spec at `path`: a YAML file, or a directory whose `*.yaml`
/// and `*.yml` files ([`spec_files`]) are merged into one spec ([`super::merge`]).
/// Every diagnostic names the file it is about.
///
/// At most [`limits::MAX_BYTES`] (and one more, to know it is over) are read, so a
/// huge file costs no more memory than the limit; a directory's files share it.
pub fn load_file(path: &Path) -> Result<SpecFile, Vec<Diagnostic>> {
    if path.is_dir() {
        return load_dir(path);
    }
    let (file, spec) = load_one(path, limits::MAX_BYTES).map_err(|found| in_file(found, path))?;
    Ok(SpecFile {
        path: path.to_path_buf(),
        files: vec![file],
        spec,
        writers: HashMap::default(),
        overrides: None,
    })
}

/// The files of a spec directory, in name order: every `*.yaml` and `*.yml` file
/// directly in it (not in subdirectories), hidden files (`.name`) left out.
pub fn spec_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
        // `is_file` follows symbolic links: a linked file is read like the others.
        if yaml && !name.starts_with('.') && entry.path().is_file() {
            files.push(entry.path());
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

fn load_dir(dir: &Path) -> Result<SpecFile, Vec<Diagnostic>> {
    let paths = spec_files(dir).map_err(|err| {
        vec![Diagnostic::error(
            "io",
            format!("cannot read the directory {}: {err}", dir.display()),
        )]
    })?;
    if paths.is_empty() {
        return Err(vec![
            Diagnostic::error(
                "no-spec-files",
                format!(
                    "the directory {} holds no `*.yaml` or `*.yml` file",
                    dir.display()
                ),
            )
            .help("a spec directory holds the spec's YAML files directly (subdirectories and hidden files are not read); or give the spec file itself"),
        ]);
    }
    let mut files = Vec::with_capacity(paths.len());
    let mut specs = Vec::with_capacity(paths.len());
    let mut errors = Vec::new();
    let mut left = limits::MAX_BYTES;
    for path in &paths {
        match load_one(path, left) {
            Ok((file, spec)) => {
                left -= file.source.len();
                files.push(file);
                specs.push(spec);
            }
            Err(found) => errors.extend(in_file(found, path)),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (spec, writers) = super::merge::merge(&files, specs)?;
    Ok(SpecFile {
        path: dir.to_path_buf(),
        files,
        spec,
        writers,
        overrides: None,
    })
}

/// Names `path` as the file of diagnostics that do not name one.
fn in_file(found: Vec<Diagnostic>, path: &Path) -> Vec<Diagnostic> {
    found
        .into_iter()
        .map(|mut diagnostic| {
            diagnostic.file.get_or_insert_with(|| path.to_path_buf());
            diagnostic
        })
        .collect()
}

/// Reads and parses one file of at most `budget` bytes.
fn load_one(path: &Path, budget: usize) -> Result<(SourceFile, Spec), Vec<Diagnostic>> {
    let (bytes, size) = read_bounded(path).map_err(|err| {
        vec![Diagnostic::error(
            "io",
            format!("cannot read {}: {err}", path.display()),
        )]
    })?;
    if size > budget as u64 {
        // For a directory, the size of its files read so far and this one's: the
        // limit is on the spec, whatever the number of files it is written in.
        let read_before = (limits::MAX_BYTES - budget) as u64;
        return Err(vec![too_large(&bytes, read_before + size, budget)]);
    }
    let source = String::from_utf8(bytes).map_err(|err| {
        let offset = err.utf8_error().valid_up_to();
        vec![not_utf8(err.as_bytes(), offset)]
    })?;
    parse(path, source)
}

/// The first [`limits::MAX_BYTES`] + 1 bytes of the file, and the file's size.
fn read_bounded(path: &Path) -> std::io::Result<(Vec<u8>, u64)> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limits::MAX_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    // Not the metadata's length: a pipe or /dev/stdin has none.
    let size = if bytes.len() > limits::MAX_BYTES {
        std::fs::metadata(path)
            .map(|m| m.len())
            .unwrap_or(bytes.len() as u64)
            .max(bytes.len() as u64)
    } else {
        bytes.len() as u64
    };
    Ok((bytes, size))
}

/// A spec over the size limit, pointed at the line where the limit falls (`budget`:
/// what is left of the limit for this file).
fn too_large(bytes: &[u8], size: u64, budget: usize) -> Diagnostic {
    let mut diagnostic = limits::too_large(size);
    diagnostic.location = Some(location_of_byte(bytes, budget));
    diagnostic
}

/// A spec that is not UTF-8, pointed at the first byte that is not.
fn not_utf8(bytes: &[u8], offset: usize) -> Diagnostic {
    let byte = bytes.get(offset).copied().unwrap_or_default();
    let utf16 = bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]);
    let mut diagnostic = Diagnostic::error(
        "not-utf8",
        format!("the spec is not UTF-8 text: byte 0x{byte:02X} at byte offset {offset} is not part of a UTF-8 character"),
    )
    .help(if utf16 {
        "the file starts with a UTF-16 byte-order mark: save it as UTF-8"
    } else {
        "save the file as UTF-8 (YAML specs are UTF-8 text); a name outside ASCII is fine once the file is UTF-8"
    });
    diagnostic.location = Some(location_of_byte(bytes, offset));
    diagnostic
}

/// The 1-based line and column (in characters) of the byte at `offset`.
fn location_of_byte(bytes: &[u8], offset: usize) -> Location {
    let before = &bytes[..offset.min(bytes.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    Location {
        line: before.iter().filter(|&&b| b == b'\n').count() + 1,
        column: String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1,
    }
}

/// Parses `source` as the spec of the file `path`.
pub fn load_str(path: &Path, source: String) -> Result<SpecFile, Vec<Diagnostic>> {
    let (file, spec) = parse(path, source).map_err(|found| in_file(found, path))?;
    Ok(SpecFile {
        path: path.to_path_buf(),
        files: vec![file],
        spec,
        writers: HashMap::default(),
        overrides: None,
    })
}

/// A saved plan (`warren plan -o FILE`) given where a spec is expected: JSON is YAML,
/// and parsed as a spec it would only say that `format` is an unknown key.
fn saved_plan(path: &Path, format: &str) -> Diagnostic {
    let path = path.display();
    Diagnostic::error(
        "saved-plan",
        format!("{path} is a saved plan (`{format}`), not a spec"),
    )
    .help(format!(
        "`warren show {path}` prints it, `warren apply {path}` applies it; give the spec it was made from to plan again"
    ))
}

/// Parses `source` as one file of a spec (a saved plan is refused first,
/// [`saved_plan_format`]); when it does not parse, finds every error it has
/// ([`recover`]).
fn parse(path: &Path, source: String) -> Result<(SourceFile, Spec), Vec<Diagnostic>> {
    if source.len() > limits::MAX_BYTES {
        return Err(vec![too_large(
            source.as_bytes(),
            source.len() as u64,
            limits::MAX_BYTES,
        )]);
    }
    if let Some(format) = saved_plan_format(&source) {
        return Err(vec![saved_plan(path, &format)]);
    }
    let read =
        |text: &str| serde_saphyr::from_str_with_options::<Spec>(text, limits::parser_options());
    match read(&source) {
        Ok(spec) => Ok((
            SourceFile {
                path: path.to_path_buf(),
                source_map: SourceMap::build(&source),
                source,
            },
            spec,
        )),
        Err(err) => {
            let first = parse_error_diagnostic(&source, &err);
            Err(recover::every_error(&source, first, |text| {
                read(text)
                    .err()
                    .map(|err| parse_error_diagnostic(text, &err))
            }))
        }
    }
}
