//! The definitions file: the JSON a broker loads at boot (`load_definitions`) or
//! imports, written by `warren export` and read by `diff --against`, `lint
//! --definitions` and `import --from`.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

pub mod locate;
pub mod rules;
pub mod scoped;

use locate::line_column;

use crate::model::Definitions;
use crate::model::plan_format::is_plan_format;
use crate::model::shorten::{self, grouped};
use crate::model::version::{CheckedVersion, TargetVersion};

/// Largest definitions file read, in bytes (256 MiB: a broker's export of 100,000
/// queues is about 40 MB).
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Deepest nesting of arrays and objects (serde_json's own guard against a stack
/// overflow; a definitions file needs about 6 levels).
pub const MAX_DEPTH: usize = 128;

/// Reads a definitions file (a broker's export, or warren's own).
///
/// Every error is one line that names the file and, when the problem is at a place in
/// it, the line and column: `FILE:LINE:COLUMN: what is wrong`. `vhost` is the vhost a
/// vhost-scoped file belongs to (see [`scoped`]); a whole broker's file ignores it.
pub fn read(
    path: &Path,
    vhost: Option<&str>,
    target: Option<TargetVersion>,
) -> Result<Read, String> {
    read_limited(path, vhost, target, MAX_BYTES)
}

/// [`read`] with a size limit of `max_bytes`.
pub fn read_limited(
    path: &Path,
    vhost: Option<&str>,
    target: Option<TargetVersion>,
    max_bytes: u64,
) -> Result<Read, String> {
    use std::io::Read;
    let name = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(max_bytes + 1).read_to_end(&mut bytes))
        .map_err(|err| format!("cannot read {name}: {err}"))?;
    if bytes.len() as u64 > max_bytes {
        let size = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
        return Err(format!(
            "{name}: the file is {} bytes; warren reads definitions files of at most {} bytes",
            grouped(size.max(bytes.len() as u64)),
            grouped(max_bytes)
        ));
    }
    parse(&bytes, vhost, target).map_err(|problem| format!("{name}:{problem}"))
}

/// Parses a definitions document; errors start with `LINE:COLUMN: ` when they have a
/// place.
///
/// In order: the text (UTF-8, numbers warren keeps exactly, JSON syntax), the
/// document's shape (an object; whole broker or one vhost, see [`scoped`]), the
/// version it is checked for (`target` if given, else the one that wrote it: see
/// [`CheckedVersion`]), the rules that version's own import enforces ([`rules`]), then the
/// types warren reads.
pub fn parse(
    bytes: &[u8],
    vhost: Option<&str>,
    target: Option<TargetVersion>,
) -> Result<Read, String> {
    let text = std::str::from_utf8(bytes).map_err(|err| {
        let offset = err.valid_up_to();
        let (line, column) = line_column(bytes, offset);
        format!(
            "{line}:{column}: not UTF-8: byte 0x{:02X} at byte offset {offset} is not part of a UTF-8 character (RabbitMQ writes definitions as UTF-8 JSON)",
            bytes[offset]
        )
    })?;
    if let Some((offset, digits)) = out_of_range_integer(text) {
        let (line, column) = line_column(bytes, offset);
        return Err(format!(
            "{line}:{column}: the number {} is beyond what warren keeps exactly (whole numbers from -2^63 to 2^64-1); no RabbitMQ setting takes such a value",
            shorten::value(digits)
        ));
    }
    let mut document: Value = serde_json::from_str(text).map_err(|err| {
        let what = match err.classify() {
            serde_json::error::Category::Eof => "the file ends in the middle of the JSON".into(),
            _ => {
                let message = err.to_string();
                let message = message
                    .rfind(" at line ")
                    .map_or(message.as_str(), |at| &message[..at]);
                if message == "recursion limit exceeded" {
                    format!(
                        "arrays and objects are nested more than {MAX_DEPTH} levels deep, warren's limit (a definitions file needs about 6)"
                    )
                } else {
                    format!("this is not JSON: {}", shorten::message(message))
                }
            }
        };
        format!("{}:{}: {what}", err.line(), err.column())
    })?;
    let at = |path: &locate::JsonPointer| locate::position(text, path);
    if !document.is_object() {
        return Err(format!(
            "1:1: this is not a RabbitMQ definitions file: the document is {}, not an object of sections (`queues`, `exchanges`, …)",
            kind_of(&document)
        ));
    }
    if let Some(format) = document["format"].as_str().filter(|f| is_plan_format(f)) {
        return Err(format!(
            "1:1: this is a saved warren plan (`{format}`), not a RabbitMQ definitions file; `warren show FILE` prints it, and `warren export SPEC` writes the definitions of the spec it was made from"
        ));
    }
    let scoped = scoped::settle(&mut document, vhost)
        .map_err(|(path, what)| format!("{}: {what}", at(&path)))?;
    let scoped_to = scoped.then(|| vhost.unwrap_or_default().to_string());
    let mut definitions: Definitions =
        serde_path_to_error::deserialize(&document).map_err(|err| {
            let path = from_serde_path(err.path());
            let message = err.into_inner().to_string();
            format!(
                "{}: this is not a RabbitMQ definitions file: {} (at {path})",
                at(&path),
                shorten::message(&message)
            )
        })?;
    let written_by = ["rabbitmq_version", "rabbit_version"]
        .iter()
        .find_map(|key| document.get(key).and_then(Value::as_str));
    let target = CheckedVersion::for_file(target, written_by);
    let broken = rules::check(&document, target.target);
    if let Some(first) = broken.first() {
        let more = match broken.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Err(format!(
            "{}: RabbitMQ {} refuses this file: {} [{}]{more}",
            at(&first.path),
            target.target,
            visible(&first.message),
            first.rule
        ));
    }
    let mut notes = Vec::new();
    let dangling = leave_out_bindings_to_nothing(&mut definitions);
    if dangling > 0 {
        notes.push(format!(
            "{dangling} binding{} to or from an exchange or queue the file does not hold {} left out: RabbitMQ {} accepts such a binding and creates nothing",
            if dangling == 1 { "" } else { "s" },
            if dangling == 1 { "is" } else { "are" },
            target.target
        ));
    }
    Ok(Read {
        definitions,
        scoped_to,
        target,
        notes,
    })
}

/// Removes the bindings whose source or destination the document does not hold (3.x
/// brokers accept them and create nothing; 4.0 refuses them, see
/// [`rules`]'s `binding-ends-exist`). Returns how many were removed.
fn leave_out_bindings_to_nothing(definitions: &mut Definitions) -> usize {
    use std::collections::HashSet;
    let exchanges: HashSet<(&str, &str)> = definitions
        .exchanges
        .iter()
        .map(|e| (e.vhost.as_str(), e.name.as_str()))
        .collect();
    let queues: HashSet<(&str, &str)> = definitions
        .queues
        .iter()
        .map(|q| (q.vhost.as_str(), q.name.as_str()))
        .collect();
    let exchange_exists = |vhost: &str, name: &str| {
        name.is_empty()
            || crate::model::PREDEFINED_EXCHANGES.contains(&name)
            || exchanges.contains(&(vhost, name))
    };
    let keep: Vec<bool> = definitions
        .bindings
        .iter()
        .map(|b| {
            exchange_exists(&b.vhost, &b.source)
                && match b.destination_type.as_str() {
                    "exchange" => exchange_exists(&b.vhost, &b.destination),
                    _ => queues.contains(&(b.vhost.as_str(), b.destination.as_str())),
                }
        })
        .collect();
    let before = definitions.bindings.len();
    let mut keep = keep.into_iter();
    definitions.bindings.retain(|_| keep.next().unwrap_or(true));
    before - definitions.bindings.len()
}

/// A definitions file as read.
#[derive(Debug, Clone)]
pub struct Read {
    /// Its objects, every one naming its vhost.
    pub definitions: Definitions,
    /// The vhost of a vhost-scoped file (the one given to [`read`]); `None` for a
    /// whole broker's file.
    pub scoped_to: Option<String>,
    /// The version the file was checked for, and why.
    pub target: CheckedVersion,
    /// What the reader left out, for the user to know.
    pub notes: Vec<String>,
}

/// `text` with control characters (a line break in a name) written as escapes, so an
/// error stays one line.
fn visible(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// What kind of JSON value this is, in words.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// serde's path of a deserialization error as a [`locate::JsonPointer`].
fn from_serde_path(path: &serde_path_to_error::Path) -> locate::JsonPointer {
    use serde_path_to_error::Segment;
    locate::JsonPointer(
        path.iter()
            .filter_map(|segment| match segment {
                Segment::Seq { index } => Some(locate::PointerToken::Index(*index)),
                Segment::Map { key } => Some(locate::PointerToken::Key(key.clone())),
                Segment::Enum { variant } => Some(locate::PointerToken::Key(variant.clone())),
                Segment::Unknown => None,
            })
            .collect(),
    )
}

/// The first whole number in the JSON `text` that does not fit in an `i64` or a `u64`:
/// serde_json would read it as a float and quietly change its value. Returns its byte
/// offset and its digits.
fn out_of_range_integer(text: &str) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                let literal = &text[start..i];
                let whole = !literal.contains(['.', 'e', 'E']);
                if whole
                    && literal.parse::<i64>().is_err()
                    && literal.parse::<u64>().is_err()
                    && literal.len() > 1
                {
                    return Some((start, literal));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The definitions as a JSON document for the target version.
pub fn document(definitions: &Definitions, target: TargetVersion) -> Value {
    let mut definitions = definitions.clone();
    definitions.sort();
    let mut value = serde_json::to_value(&definitions).expect("definitions serialize");
    if let Value::Object(map) = &mut value {
        // The import reads these as informational; they record what the file was made for.
        map.insert("rabbit_version".into(), Value::from(format!("{target}.0")));
        map.insert(
            "rabbitmq_version".into(),
            Value::from(format!("{target}.0")),
        );
    }
    value
}

/// Pretty JSON with a trailing newline.
pub fn to_json(definitions: &Definitions, target: TargetVersion) -> String {
    let mut text = serde_json::to_string_pretty(&document(definitions, target)).expect("JSON");
    text.push('\n');
    text
}

/// Writes `text` to `path` through a temporary file in the same directory, so a reader
/// (or a broker booting) never sees half a file.
///
/// What warren writes may hold password hashes and credentials (exports, saved plans,
/// imported specs), so the file is readable by its owner only (0600): the temporary
/// file is created so, and the rename gives `path` that mode even when it existed
/// with a wider one. A broker that boots from an export must run as the file's owner,
/// or be given the file on purpose (`chmod`, `chown`).
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let directory = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "definitions.json".into());
    let temporary = directory.join(format!(".{file_name}.warren-tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = owner_only(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Creates (or truncates) a file only its owner may read or write.
fn owner_only(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        // A temporary file left by an earlier run keeps its mode on open: set it.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_beyond_64_bits_are_refused_with_their_place() {
        let err = parse(b"{\n  \"queues\": [1, 18446744073709551616]}", None, None).unwrap_err();
        assert!(
            err.starts_with("2:17: the number 18446744073709551616"),
            "{err}"
        );
        let err = parse(b"{\"x\": -9223372036854775809}", None, None).unwrap_err();
        assert!(
            err.starts_with("1:7: the number -9223372036854775809"),
            "{err}"
        );
    }

    #[test]
    fn numbers_within_64_bits_and_digits_in_strings_are_read() {
        assert_eq!(
            out_of_range_integer(r#"{"a": 18446744073709551615, "b": -9223372036854775808}"#),
            None
        );
        assert_eq!(
            out_of_range_integer(r#"{"a": "99999999999999999999999", "b\"": 1e999}"#),
            None
        );
    }

    #[test]
    fn invalid_utf8_is_reported_at_its_byte() {
        let err = parse(b"{\n \"users\": [\xff]}", None, None).unwrap_err();
        assert!(
            err.starts_with("2:12: not UTF-8: byte 0xFF at byte offset 13"),
            "{err}"
        );
    }

    #[test]
    fn deep_nesting_is_a_limit_in_words() {
        let text = format!("{{\"x\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
        let err = parse(text.as_bytes(), None, None).unwrap_err();
        assert!(err.contains("nested more than 128 levels deep"), "{err}");
    }

    #[test]
    fn files_over_the_size_limit_are_refused_in_words() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, format!("{{\"queues\": [{}]}}", "{},".repeat(1_000))).unwrap();
        let err = read_limited(&path, None, None, 1_000).unwrap_err();
        assert!(
            err.ends_with(
                "the file is 3,014 bytes; warren reads definitions files of at most 1,000 bytes"
            ),
            "{err}"
        );
    }

    #[test]
    fn type_errors_name_the_place() {
        let err = parse(br#"{"queues": [{"name": 5, "vhost": "/"}]}"#, None, None).unwrap_err();
        assert!(err.starts_with("1:"), "{err}");
        assert!(
            err.contains("this is not a RabbitMQ definitions file: invalid type"),
            "{err}"
        );
        let err = parse(b"{\"queues\": [", None, None).unwrap_err();
        assert!(
            err.ends_with("the file ends in the middle of the JSON"),
            "{err}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn files_are_written_for_their_owner_only_new_or_rewritten() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("definitions.json");
        write_atomically(&path, "{}").unwrap();
        assert_eq!(mode(&path), 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_atomically(&path, "{\"a\": 1}").unwrap();
        assert_eq!(mode(&path), 0o600, "a rewrite does not keep a wider mode");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 1}");
        assert_eq!(std::fs::read_dir(directory.path()).unwrap().count(), 1);
    }
}
