//! The profiles file: where it is, what it may hold, and who may read it.
//!
//! A TOML file of one table per broker profile. It is read whole before any setting is
//! resolved, so a typo in a profile that is not used still stops the command: a file
//! that half works is worse than one that does not.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use crate::broker::url_credentials;
use crate::model::redact::{hide_values, is_secret_key};

/// The file's name under the configuration directory (`$XDG_CONFIG_HOME/warren/…`).
const FILE_UNDER_CONFIG_DIR: &str = "warren/config.toml";

/// One broker profile, as the file writes it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Management API URLs (one string or a list), tried in order.
    #[serde(default, deserialize_with = "one_or_many")]
    pub url: Option<Vec<String>>,
    /// User name.
    pub user: Option<String>,
    /// The password itself: refused in a file that others may read.
    pub password: Option<String>,
    /// The variable that holds the password.
    pub password_env: Option<String>,
    /// The file that holds the password (relative: to the profiles file's directory).
    pub password_file: Option<PathBuf>,
    /// A CA to trust for HTTPS (relative: to the profiles file's directory).
    pub ca_cert: Option<PathBuf>,
    /// AMQP URL for the emptiness checks.
    pub amqp_url: Option<String>,
    /// Seconds to wait for one request.
    pub timeout: Option<u64>,
}

/// A profiles file, read and checked.
#[derive(Debug, Clone)]
pub struct ProfilesFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its profiles by name, relative paths already resolved against its directory.
    pub profiles: BTreeMap<String, Profile>,
}

impl ProfilesFile {
    /// The names of its profiles, in order.
    pub fn names(&self) -> Vec<String> {
        self.profiles.keys().cloned().collect()
    }
}

/// The default place of the file: `$XDG_CONFIG_HOME/warren/config.toml`, else
/// `$HOME/.config/warren/config.toml`; `None` without either variable. (The XDG base
/// directory specification ignores a relative `XDG_CONFIG_HOME`, and so does warren.)
pub fn default_path(variable: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |name: &str| variable(name).filter(|value| !value.is_empty());
    if let Some(dir) = set("XDG_CONFIG_HOME").map(PathBuf::from)
        && dir.is_absolute()
    {
        return Some(dir.join(FILE_UNDER_CONFIG_DIR));
    }
    set("HOME").map(|home| Path::new(&home).join(".config").join(FILE_UNDER_CONFIG_DIR))
}

/// Reads and checks the file at `path`: its TOML and keys, then who may read it.
pub fn read(path: &Path) -> Result<ProfilesFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read the config file {}: {err}", path.display()))?;
    let profiles = parse(path, &text)?;
    check_mode(path, &profiles)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let profiles = profiles
        .into_iter()
        .map(|(name, profile)| (name, relative_to(dir, profile)))
        .collect();
    Ok(ProfilesFile {
        path: path.to_path_buf(),
        profiles,
    })
}

/// The profiles `text` holds, or one error that says where (`FILE:LINE:COLUMN`) and
/// what, with every password the text holds hidden.
fn parse(path: &Path, text: &str) -> Result<BTreeMap<String, Profile>, String> {
    let profiles: BTreeMap<String, toml::Spanned<Profile>> =
        toml::from_str(text).map_err(|err| {
            let at = err
                .span()
                .map(|span| position(text, span.start))
                .map(|(line, column)| format!(":{line}:{column}"))
                .unwrap_or_default();
            let message = err.message().trim_end();
            format!(
                "{}{at}: {}",
                path.display(),
                hide_values(message, &secret_values(text))
            )
        })?;
    let mut checked = BTreeMap::new();
    for (name, spanned) in profiles {
        let (line, column) = position(text, spanned.span().start);
        let profile = spanned.into_inner();
        check_profile(&profile).map_err(|problem| {
            format!(
                "{}:{line}:{column}: profile `{name}`: {problem}",
                path.display()
            )
        })?;
        checked.insert(name, profile);
    }
    Ok(checked)
}

/// What the types cannot say: one password source at most, at least one URL.
fn check_profile(profile: &Profile) -> Result<(), String> {
    let sources: Vec<&str> = [
        ("password", profile.password.is_some()),
        ("password_env", profile.password_env.is_some()),
        ("password_file", profile.password_file.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect();
    if sources.len() > 1 {
        return Err(format!(
            "{} are given; keep one password source",
            sources.join(" and ")
        ));
    }
    if let Some(urls) = &profile.url
        && urls.iter().all(|url| url.trim().is_empty())
    {
        return Err("`url` holds no URL; give one, or leave the key out".into());
    }
    Ok(())
}

/// Refuses a file that holds a clear-text password when anyone but its owner may read
/// it, as ssh refuses such a private key: the password would be as good as public.
#[cfg(unix)]
fn check_mode(path: &Path, profiles: &BTreeMap<String, Profile>) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let Some(holder) = profiles
        .iter()
        .find(|(_, profile)| holds_a_password(profile))
        .map(|(name, _)| name)
    else {
        return Ok(());
    };
    let mode = std::fs::metadata(path)
        .map_err(|err| format!("cannot read the config file {}: {err}", path.display()))?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 == 0 {
        return Ok(());
    }
    Err(format!(
        "the config file {} holds a password (profile `{holder}`: `password`, or a URL with one) and others may read it (mode {mode:04o}): run `chmod 600 {}`, or give the password with `password_env` or `password_file` instead",
        path.display(),
        path.display()
    ))
}

/// Whether a profile writes a password out: its `password` key, or a URL with one.
fn holds_a_password(profile: &Profile) -> bool {
    profile.password.is_some()
        || profile
            .url
            .as_deref()
            .is_some_and(|urls| url_credentials(urls).1.is_some())
}

#[cfg(not(unix))]
fn check_mode(_path: &Path, _profiles: &BTreeMap<String, Profile>) -> Result<(), String> {
    Ok(())
}

/// The profile with its relative files made relative to `dir`, the file's directory:
/// the file means the same wherever warren runs.
fn relative_to(dir: &Path, mut profile: Profile) -> Profile {
    for file in [&mut profile.password_file, &mut profile.ca_cert]
        .into_iter()
        .flatten()
    {
        if file.is_relative() {
            *file = dir.join(&*file);
        }
    }
    profile
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// The values written after a password-like key (`password = "x"`, misspelt ones
/// too), found line by line so that even a file that does not parse gives them up to
/// be hidden. `password_env` and `password_file` name a variable and a file: no secret.
fn secret_values(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(key, _)| {
            let key = key.trim().trim_matches(['"', '\'']);
            is_secret_key(key) && !matches!(key, "password_env" | "password_file")
        })
        .map(|(_, value)| {
            let value = value.trim();
            let value = value.split_once(" #").map_or(value, |(value, _)| value);
            value.trim().trim_matches(['"', '\'']).to_string()
        })
        .filter(|value| !value.is_empty())
        .collect()
}

/// `url = "…"` or `url = ["…", "…"]`.
fn one_or_many<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<String>>, D::Error> {
    struct OneOrMany;
    impl<'de> Visitor<'de> for OneOrMany {
        type Value = Vec<String>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a URL or a list of URLs")
        }

        fn visit_str<E: de::Error>(self, value: &str) -> Result<Vec<String>, E> {
            Ok(vec![value.to_string()])
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut urls = Vec::new();
            while let Some(url) = seq.next_element()? {
                urls.push(url);
            }
            Ok(urls)
        }
    }
    deserializer.deserialize_any(OneOrMany).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<BTreeMap<String, Profile>, String> {
        parse(Path::new("/etc/warren.toml"), text)
    }

    #[test]
    fn a_url_is_one_string_or_a_list() {
        let profiles =
            parsed("[a]\nurl = \"http://a:15672\"\n[b]\nurl = [\"http://b1\", \"http://b2\"]\n")
                .unwrap();
        assert_eq!(profiles["a"].url.as_deref().unwrap(), ["http://a:15672"]);
        assert_eq!(profiles["b"].url.as_ref().unwrap().len(), 2);
    }

    #[test]
    fn an_unknown_key_is_refused_with_its_line_and_column() {
        let refused = parsed("[prod]\nuser = \"ops\"\n  usr = \"x\"\n").unwrap_err();
        assert!(refused.starts_with("/etc/warren.toml:3:3: "), "{refused}");
        assert!(refused.contains("unknown field `usr`"), "{refused}");
    }

    #[test]
    fn a_wrong_type_hides_the_password_it_quotes() {
        let refused = parsed("[prod]\npassword = 123456789\n").unwrap_err();
        assert!(refused.contains(":2:"), "{refused}");
        assert!(!refused.contains("123456789"), "{refused}");
        let refused = parsed("password = \"Hunter2Secret\"\n").unwrap_err();
        assert!(!refused.contains("Hunter2Secret"), "{refused}");
    }

    #[test]
    fn two_password_sources_are_refused() {
        let refused =
            parsed("[prod]\npassword_env = \"P\"\npassword_file = \"p.txt\"\n").unwrap_err();
        assert!(
            refused.contains("profile `prod`: password_env and password_file are given"),
            "{refused}"
        );
    }

    #[test]
    fn relative_files_are_relative_to_the_file() {
        let profile = Profile {
            password_file: Some("secrets/p".into()),
            ca_cert: Some("/abs/ca.pem".into()),
            ..Profile::default()
        };
        let profile = relative_to(Path::new("/etc/warren"), profile);
        assert_eq!(
            profile.password_file.unwrap(),
            Path::new("/etc/warren/secrets/p")
        );
        assert_eq!(profile.ca_cert.unwrap(), Path::new("/abs/ca.pem"));
    }

    #[test]
    fn the_default_place_follows_xdg_then_home() {
        let lookup = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let both = lookup(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(
            default_path(&both).unwrap(),
            Path::new("/x/warren/config.toml")
        );
        let relative = lookup(&[("XDG_CONFIG_HOME", "x"), ("HOME", "/h")]);
        assert_eq!(
            default_path(&relative).unwrap(),
            Path::new("/h/.config/warren/config.toml")
        );
        assert_eq!(default_path(&lookup(&[])), None);
    }
}
