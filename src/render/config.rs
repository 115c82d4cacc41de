//! `warren config`: the profiles file, the profile in use and every connection setting
//! in force with where it came from. A password is only ever "set" or "not set", and
//! credentials written in a URL are masked.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::config::{Chosen, DEFAULT_PROFILE, FileUsed, Input, Origin, Resolved, Setting, Source};
use crate::model::redact::redact_url;

/// Version of the JSON document.
const FORMAT: &str = "warren-config/1";

/// The report for people: the file and profile, then one line per setting.
pub fn text(out: &mut dyn Write, resolved: &Resolved) -> io::Result<()> {
    writeln!(out, "config file: {}", file_text(&resolved.file))?;
    let profiles = if resolved.profiles.is_empty() {
        "none".to_string()
    } else {
        resolved.profiles.join(", ")
    };
    writeln!(out, "profiles:    {profiles}")?;
    writeln!(out, "profile:     {}", profile_text(resolved))?;
    writeln!(out)?;
    let rows = rows(resolved);
    let width = rows.iter().map(|row| row.key.len()).max().unwrap_or(0);
    for row in rows {
        writeln!(
            out,
            "{:width$}  {}  ({})",
            row.key,
            row.value,
            row.source,
            width = width
        )?;
    }
    Ok(())
}

/// The report as one JSON document (`format`: `warren-config/1`).
pub fn json(out: &mut dyn Write, resolved: &Resolved) -> io::Result<()> {
    let (path, source) = match &resolved.file {
        FileUsed::Given(path, origin) => (Some(path.as_path()), given(Input::Config, *origin)),
        FileUsed::Default(path) => (Some(path.as_path()), "default".to_string()),
        FileUsed::Missing(_) => (None, "none".to_string()),
    };
    let looked_at = match &resolved.file {
        FileUsed::Missing(Some(path)) => json!(path.display().to_string()),
        _ => Value::Null,
    };
    let profile = resolved
        .profile
        .as_ref()
        .map(|(name, chosen)| json!({"name": name, "source": chosen_text(*chosen)}));
    let settings: serde_json::Map<String, Value> = rows(resolved)
        .into_iter()
        .map(|row| {
            let mut entry = json!({"source": row.source, "from": row.from});
            entry[if row.key == Input::Password.key() {
                "set"
            } else {
                "value"
            }] = row.json;
            (row.key.to_string(), entry)
        })
        .collect();
    let document = json!({
        "format": FORMAT,
        "file": {
            "path": path.map(|p| p.display().to_string()),
            "source": source,
            "looked_at": looked_at,
        },
        "profiles": resolved.profiles,
        "profile": profile,
        "settings": settings,
        "problems": resolved.problems,
    });
    super::json_document(out, &document)
}

/// One setting as shown.
struct Row {
    key: &'static str,
    /// The value as text (a password: `set`/`not set`).
    value: String,
    /// The value in JSON (a password: whether it is set).
    json: Value,
    /// Where it came from, as a phrase.
    source: String,
    /// Where it came from, as one word: flag, variable, profile, url, default.
    from: &'static str,
}

fn rows(resolved: &Resolved) -> Vec<Row> {
    let urls: Vec<String> = resolved.urls.value.iter().map(|u| redact_url(u)).collect();
    let amqp_url = resolved.amqp_url.value.as_deref().map(redact_url);
    let ca_cert = resolved
        .ca_cert
        .value
        .as_deref()
        .map(|path| path.display().to_string());
    let timeout = resolved.timeout.value;
    vec![
        row(Input::Url, &resolved.urls, urls.join(", "), json!(urls)),
        row(
            Input::User,
            &resolved.user,
            resolved.user.value.clone(),
            json!(resolved.user.value),
        ),
        row(
            Input::Password,
            &resolved.password,
            if resolved.password.value.is_some() {
                "set"
            } else {
                "not set"
            }
            .into(),
            json!(resolved.password.value.is_some()),
        ),
        row(
            Input::AmqpUrl,
            &resolved.amqp_url,
            amqp_url
                .clone()
                .unwrap_or_else(|| "not set: the AMQP listener the broker reports".into()),
            json!(amqp_url),
        ),
        row(
            Input::CaCert,
            &resolved.ca_cert,
            ca_cert.clone().unwrap_or_else(|| "not set".into()),
            json!(ca_cert),
        ),
        row(
            Input::Timeout,
            &resolved.timeout,
            format!("{timeout} s"),
            json!(timeout),
        ),
    ]
}

fn row<T>(input: Input, setting: &Setting<T>, value: String, json: Value) -> Row {
    let from = match &setting.source {
        Source::Given(_, Origin::Flag) => "flag",
        Source::Given(_, Origin::Variable) | Source::Variable(_) => "variable",
        Source::Profile { .. } => "profile",
        Source::Url => "url",
        Source::Default => "default",
    };
    Row {
        key: input.key(),
        value,
        json,
        source: source_text(&setting.source),
        from,
    }
}

/// Where a setting came from: `--url flag`, `WARREN_URL`, `profile prod in FILE`,
/// `password_env NAME of profile prod in FILE`, `the URL`, `default`.
fn source_text(source: &Source) -> String {
    match source {
        Source::Given(input, origin) => given(*input, *origin),
        Source::Profile { name, file, via } => {
            let profile = format!("profile {name} in {}", file.display());
            match via {
                Some(via) => format!("{via} of {profile}"),
                None => profile,
            }
        }
        Source::Url => "the URL".into(),
        Source::Variable(name) => (*name).into(),
        Source::Default => "default".into(),
    }
}

fn given(input: Input, origin: Origin) -> String {
    match origin {
        Origin::Flag => format!("{} flag", input.flag()),
        Origin::Variable => input.variable().into(),
    }
}

fn file_text(file: &FileUsed) -> String {
    match file {
        FileUsed::Given(path, origin) => {
            format!("{} ({})", path.display(), given(Input::Config, *origin))
        }
        FileUsed::Default(path) => format!("{} (the default place)", path.display()),
        FileUsed::Missing(Some(path)) => format!("none ({} does not exist)", path.display()),
        FileUsed::Missing(None) => "none (neither XDG_CONFIG_HOME nor HOME is set)".into(),
    }
}

fn profile_text(resolved: &Resolved) -> String {
    match &resolved.profile {
        Some((name, chosen)) => format!("{name} ({})", chosen_text(*chosen)),
        None => format!(
            "none (neither {} nor {} names one, and there is no `{DEFAULT_PROFILE}` profile)",
            Input::Profile.flag(),
            Input::Profile.variable()
        ),
    }
}

fn chosen_text(chosen: Chosen) -> String {
    match chosen {
        Chosen::Given(origin) => given(Input::Profile, origin),
        Chosen::Default => format!("the `{DEFAULT_PROFILE}` profile, used when none is named"),
    }
}
