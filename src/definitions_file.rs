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
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}
