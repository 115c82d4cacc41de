//! The definitions file: the JSON a broker loads at boot (`load_definitions`) or
//! imports, written by `warren export` and read by `diff --against`, `lint
//! --definitions` and `import --from`.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::model::Definitions;
use crate::model::version::TargetVersion;

/// Reads a definitions file (a broker's export, or warren's own).
pub fn read(path: &Path) -> Result<Definitions, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    serde_json::from_str(&text).map_err(|err| {
        format!(
            "{} is not a RabbitMQ definitions file: {err}",
            path.display()
        )
    })
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

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_are_written_for_their_owner_only_new_or_rewritten() {
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
