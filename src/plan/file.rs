//! A plan file (`warren plan -o FILE`, `warren apply FILE`, `warren show FILE`):
//! writing it, telling it from a spec when reading it, and the environment it may be
//! applied in.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{PLAN_FORMAT, Plan};
use crate::model::plan_format::{READ_TOO, is_plan_format};
use crate::model::redact::holds_hidden_secrets;
use crate::spec::environment::Choice;

/// Writes `plan` to `path` as its JSON document, whole or not at all; the digest of
/// what was written.
pub fn write(path: &Path, plan: &Plan) -> std::io::Result<PlanDigest> {
    let text = serde_json::to_string_pretty(plan).expect("plans serialize") + "\n";
    crate::definitions_file::write_atomically(path, &text)?;
    Ok(PlanDigest::of(text.as_bytes()))
}

/// The SHA-256 digest of a saved plan file's bytes: `plan -o` prints it (in the text
/// and Markdown a pull request shows), and `apply FILE --expect-digest` refuses a file
/// whose digest is another, so that what is applied is byte for byte the plan that was
/// reviewed. It protects against a plan edited or swapped between review and apply,
/// consistently or not; it does not say who made the plan (it is not a signature).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDigest {
    /// 64 lowercase hexadecimal digits.
    hex: String,
}

impl PlanDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> PlanDigest {
        use sha2::{Digest, Sha256};
        let hex = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        PlanDigest { hex }
    }
}

impl fmt::Display for PlanDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

impl std::str::FromStr for PlanDigest {
    type Err = String;

    /// `sha256:` and 64 hexadecimal digits, as `plan -o` prints it (the prefix may be
    /// left out; case does not matter). A shortened digest is refused: it would let a
    /// different file pass.
    fn from_str(text: &str) -> Result<PlanDigest, String> {
        let hex = text.strip_prefix("sha256:").unwrap_or(text);
        if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(PlanDigest {
                hex: hex.to_ascii_lowercase(),
            })
        } else {
            Err(format!(
                "`{}` is not a plan digest: give it as `warren plan -o` prints it, `sha256:` and 64 hexadecimal digits",
                crate::text::visible(text)
            ))
        }
    }
}

/// Reads a plan file, or `None` when the file is not a plan (then it is a spec; a
/// directory is a spec in several files). A file that looks like a plan (`.json`, or
/// text that starts with `{`) but does not read as one is a damaged plan, never a spec.
pub fn read(path: &Path) -> Result<Option<Plan>, String> {
    read_expecting(path, None).map_err(|not_read| match not_read {
        NotRead::Unreadable(why) | NotRead::NotReviewed(why) => why,
    })
}

/// Why [`read_expecting`] read no plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRead {
    /// The file could not be read as a plan or a spec (or is a spec where only a plan
    /// will do).
    Unreadable(String),
    /// The file is not the plan whose digest was given: a refusal, nothing is changed.
    NotReviewed(String),
}

/// [`read`], refusing a plan file whose digest is not `expected` (`apply
/// --expect-digest`): the digest is of the very bytes that are then read as the plan,
/// so the file cannot be changed in between. `expected` with a spec is an error.
pub fn read_expecting(path: &Path, expected: Option<&PlanDigest>) -> Result<Option<Plan>, NotRead> {
    if path.is_dir() {
        return match expected {
            Some(_) => Err(NotRead::Unreadable(not_a_plan_for_digest(path))),
            None => Ok(None),
        };
    }
    let bytes = std::fs::read(path)
        .map_err(|err| NotRead::Unreadable(format!("cannot read {}: {err}", path.display())))?;
    let read = String::from_utf8(bytes.clone())
        .map_err(|err| format!("cannot read {}: {err}", path.display()))
        .and_then(|text| parse(path, &text))
        .map_err(NotRead::Unreadable);
    let Some(expected) = expected else {
        return read;
    };
    if let Ok(None) = read {
        return Err(NotRead::Unreadable(not_a_plan_for_digest(path)));
    }
    let found = PlanDigest::of(&bytes);
    if &found != expected {
        return Err(NotRead::NotReviewed(format!(
            "refusing to apply {}: its digest is {found}, not the {expected} given with --expect-digest, so it is not the plan that was reviewed; nothing was changed (make and review a new plan with `warren plan SPEC -o FILE`)",
            path.display()
        )));
    }
    read
}

fn not_a_plan_for_digest(path: &Path) -> String {
    format!(
        "--expect-digest is for a saved plan, and {} is a spec: save its plan with `warren plan SPEC -o FILE`, review it, and apply FILE",
        path.display()
    )
}

/// A plan file's text as a plan (see [`read`]).
fn parse(path: &Path, text: &str) -> Result<Option<Plan>, String> {
    let looks_like_json = text.trim_start().starts_with('{')
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    // A damaged plan is told at its line and column, and what the file holds there is
    // quoted with every character a reader cannot see escaped.
    let damaged = |line: usize, column: usize, why: String| {
        format!(
            "{}:{line}:{column}: a damaged plan file ({}); make a new plan with `warren plan SPEC -o FILE`",
            path.display(),
            crate::text::visible(&why)
        )
    };
    let value = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => value,
        Err(err) if looks_like_json => {
            return Err(damaged(err.line(), err.column(), without_position(&err)));
        }
        Err(_) => return Ok(None),
    };
    match value["format"].as_str() {
        Some(PLAN_FORMAT | READ_TOO) => {}
        Some(other) if is_plan_format(other) => {
            return Err(format!(
                "{} is a `{other}` plan, which this warren cannot read (it reads `{PLAN_FORMAT}` and `{READ_TOO}`); make the plan again with `warren plan SPEC -o FILE`",
                path.display()
            ));
        }
        _ => {
            return Err(format!(
                "{} is JSON but not a warren plan (expected \"format\": \"{PLAN_FORMAT}\")",
                path.display()
            ));
        }
    }
    let mut reading = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut reading)
        .map(Some)
        .map_err(|err| {
            let at = err.path().to_string();
            let inner = err.inner();
            damaged(
                inner.line(),
                inner.column(),
                format!("at `{at}`: {}", without_position(inner)),
            )
        })
}

/// What a JSON error says, without serde's own "at line L column C" (the message says
/// where as `FILE:LINE:COLUMN`).
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Reads the plan file `path` where only a plan will do (`warren show`): as [`read`],
/// and a spec (or a directory) is an error that says how to make its plan.
pub fn read_saved(path: &Path) -> Result<Plan, String> {
    read(path)?.ok_or_else(|| {
        let what = if path.is_dir() { "a directory" } else { "not JSON" };
        format!(
            "{path} is not a saved plan ({what}: a spec?); `warren plan {path} -o FILE` saves a spec's plan, which `warren show FILE` prints",
            path = path.display()
        )
    })
}

/// Whether the plan read from `file` can be applied: a plan printed by `--format json`
/// hides its secrets, and applying it would set users' passwords and shovels' URIs to
/// the mask. Told by [`Plan::redacted`], or, in a plan printed before plans said so,
/// by the masks themselves in what it would write.
pub fn check_appliable(plan: &Plan, file: &Path) -> Result<(), String> {
    let masked = || {
        plan.desired.iter().any(|d| holds_hidden_secrets(&d.value))
            || plan
                .changes
                .iter()
                .filter_map(|c| c.after.as_ref())
                .any(holds_hidden_secrets)
    };
    if !plan.redacted && !masked() {
        return Ok(());
    }
    Err(format!(
        "{file} is a plan as `--format json` prints it, with its password hashes and URI passwords hidden: applying it would set them to the mask, so nothing was changed; save a plan to apply with `warren plan SPEC -o FILE` (`warren show {file}` prints this one)",
        file = file.display()
    ))
}

/// A saved plan applied in an environment it was not made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongEnvironment {
    /// The plan file.
    pub file: PathBuf,
    /// The environment the plan was made for; `None` for a spec without environments.
    pub made_for: Option<String>,
    /// The environment `--env` or `WARREN_ENV` chose.
    pub chosen: String,
}

impl fmt::Display for WrongEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let made_for = match &self.made_for {
            Some(environment) => format!("environment `{environment}`"),
            None => "a spec without environments".to_string(),
        };
        write!(
            f,
            "{} was made for {made_for}, not for environment `{}` (--env or WARREN_ENV); nothing was changed",
            self.file.display(),
            self.chosen
        )
    }
}

/// Whether the plan saved in `file` may be applied in the environment `chosen`: a
/// saved plan is for the environment it was made for, and an `--env` that names
/// another one is a mistake worth stopping for (a staging plan applied to prod).
/// `WARREN_ENV` set for other specs does not stop a plan of a spec without
/// environments.
pub fn check_environment(
    plan: &Plan,
    file: &Path,
    chosen: Choice<'_>,
) -> Result<(), WrongEnvironment> {
    let made_for = plan.environment.as_deref();
    let wrong = match chosen {
        Choice::Flag(chosen) => (made_for != Some(chosen)).then_some(chosen),
        Choice::Variable(chosen) => made_for
            .is_some_and(|made_for| made_for != chosen)
            .then_some(chosen),
        _ => None,
    };
    match wrong {
        None => Ok(()),
        Some(chosen) => Err(WrongEnvironment {
            file: file.to_path_buf(),
            made_for: plan.environment.clone(),
            chosen: chosen.to_string(),
        }),
    }
}
