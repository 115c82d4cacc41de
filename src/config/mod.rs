//! Named broker profiles, and where each connection setting comes from.
//!
//! Someone who manages several clusters names each once, in a TOML file
//! (`$XDG_CONFIG_HOME/warren/config.toml`, docs/profiles.md), and picks one with
//! `--profile`. Each setting is then the first of: its flag, its `WARREN_*` variable,
//! the profile, and the defaults warren had before profiles (credentials in the URL,
//! `RABBITMQ_DEFAULT_USER`/`RABBITMQ_DEFAULT_PASS`, guest/guest,
//! `http://localhost:15672`). [`resolve`] is the one place that decides it, and says for
//! each value where it came from, which `warren config` shows. Reading the file is no
//! network code: the result becomes a [`broker::Endpoint`](crate::broker::Endpoint).

mod file;
mod resolve;

use std::path::PathBuf;

pub use file::{Profile, ProfilesFile, default_path};
pub use resolve::resolve;

/// The name of the profile used when none is chosen, if the file defines it (as
/// rabbitmqadmin v2's default node and the AWS CLI's `[default]`).
pub const DEFAULT_PROFILE: &str = "default";

/// The URLs of `--url` or `WARREN_URL`, from the pieces between its commas: a comma
/// separates two URLs, except inside a URL's user information, where it is legal (a
/// password `a,b` in `http://ops:a,b@host`). A piece joins the URL before it while that
/// URL names a scheme and has no `@` yet, and an `@` comes before the next piece that
/// names a scheme; a scheme-less URL after a URL with a scheme (`http://h1,h2`) stays a
/// URL of its own unless an `@` follows it.
pub fn url_list(pieces: Vec<String>) -> Vec<String> {
    use crate::model::redact::is_one_url;
    let in_userinfo = |url: &str| {
        is_one_url(url)
            && url
                .split_once("://")
                .is_some_and(|(_, rest)| !rest.contains('@'))
    };
    let mut urls: Vec<String> = Vec::with_capacity(pieces.len());
    for (at, piece) in pieces.iter().enumerate() {
        let continues = urls.last().is_some_and(|url| in_userinfo(url))
            && !is_one_url(piece)
            && pieces[at..]
                .iter()
                .take_while(|later| !is_one_url(later))
                .any(|later| later.contains('@'));
        match urls.last_mut() {
            Some(url) if continues => {
                url.push(',');
                url.push_str(piece);
            }
            _ => urls.push(piece.clone()),
        }
    }
    urls
}

/// How a value reached warren through clap, which reads a flag and its variable as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// On the command line.
    Flag,
    /// From the input's `WARREN_*` variable.
    Variable,
}

/// A value given on the command line or in the environment, and which of the two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stated<T> {
    /// The value.
    pub value: T,
    /// Where it was given.
    pub origin: Origin,
}

/// The inputs warren reads about the broker: each has a flag and a variable, and the
/// settings a profile key too (the [`Input::key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Management API URLs.
    Url,
    /// User name.
    User,
    /// Password.
    Password,
    /// AMQP URL.
    AmqpUrl,
    /// Extra CA certificate.
    CaCert,
    /// Seconds per request.
    Timeout,
    /// The profile to use.
    Profile,
    /// The profiles file.
    Config,
}

impl Input {
    /// The flag, with its dashes.
    pub const fn flag(self) -> &'static str {
        match self {
            Input::Url => "--url",
            Input::User => "--user",
            Input::Password => "--password",
            Input::AmqpUrl => "--amqp-url",
            Input::CaCert => "--ca-cert",
            Input::Timeout => "--timeout",
            Input::Profile => "--profile",
            Input::Config => "--config",
        }
    }

    /// The environment variable clap reads when the flag is not given.
    pub const fn variable(self) -> &'static str {
        match self {
            Input::Url => "WARREN_URL",
            Input::User => "WARREN_USER",
            Input::Password => "WARREN_PASSWORD",
            Input::AmqpUrl => "WARREN_AMQP_URL",
            Input::CaCert => "WARREN_CA_CERT",
            Input::Timeout => "WARREN_TIMEOUT",
            Input::Profile => "WARREN_PROFILE",
            Input::Config => "WARREN_CONFIG",
        }
    }

    /// The setting's name: its key in a profile and in `warren config --format json`.
    pub const fn key(self) -> &'static str {
        match self {
            Input::Url => "url",
            Input::User => "user",
            Input::Password => "password",
            Input::AmqpUrl => "amqp_url",
            Input::CaCert => "ca_cert",
            Input::Timeout => "timeout",
            Input::Profile => "profile",
            Input::Config => "config",
        }
    }
}

/// What the command line and the `WARREN_*` variables said about the broker.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// `--url` / `WARREN_URL` (comma-separated lists already split).
    pub urls: Option<Stated<Vec<String>>>,
    /// `--user` / `WARREN_USER`.
    pub user: Option<Stated<String>>,
    /// `--password` / `WARREN_PASSWORD`.
    pub password: Option<Stated<String>>,
    /// `--amqp-url` / `WARREN_AMQP_URL`.
    pub amqp_url: Option<Stated<String>>,
    /// `--ca-cert` / `WARREN_CA_CERT`.
    pub ca_cert: Option<Stated<PathBuf>>,
    /// `--timeout` / `WARREN_TIMEOUT`.
    pub timeout: Option<Stated<u64>>,
    /// `--profile` / `WARREN_PROFILE`.
    pub profile: Option<Stated<String>>,
    /// `--config` / `WARREN_CONFIG`.
    pub config: Option<Stated<PathBuf>>,
}

/// Where a setting in force came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Its flag or its `WARREN_*` variable.
    Given(Input, Origin),
    /// The selected profile; `via` is how it gave a password (`password_env NAME`).
    Profile {
        /// The profile's name.
        name: String,
        /// The file that defines it.
        file: PathBuf,
        /// For the password: the key that gave it and what it names.
        via: Option<String>,
    },
    /// The credentials written in the URL in force.
    Url,
    /// A variable of RabbitMQ's container image (`RABBITMQ_DEFAULT_USER`, …).
    Variable(&'static str),
    /// warren's own default.
    Default,
}

/// A setting in force and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

/// A password: its value never leaves through `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Which profiles file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileUsed {
    /// `--config` or `WARREN_CONFIG` named it.
    Given(PathBuf, Origin),
    /// The default place, where it exists.
    Default(PathBuf),
    /// None: the default place holds no file (`None`: neither `XDG_CONFIG_HOME` nor
    /// `HOME` is set).
    Missing(Option<PathBuf>),
}

/// Why a profile is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen {
    /// `--profile` or `WARREN_PROFILE`.
    Given(Origin),
    /// It is the file's [`DEFAULT_PROFILE`] and no other was chosen.
    Default,
}

/// Every connection setting in force, where each came from, and the file's profiles.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The profiles file read, if any.
    pub file: FileUsed,
    /// The profiles it defines, in order.
    pub profiles: Vec<String>,
    /// The profile in use and why.
    pub profile: Option<(String, Chosen)>,
    /// Management API URLs.
    pub urls: Setting<Vec<String>>,
    /// User name.
    pub user: Setting<String>,
    /// Password (`None` when its source gave none: see `problems`).
    pub password: Setting<Option<Secret>>,
    /// AMQP URL for the emptiness checks (`None`: the one the broker reports).
    pub amqp_url: Setting<Option<String>>,
    /// Extra CA certificate.
    pub ca_cert: Setting<Option<PathBuf>>,
    /// Seconds per request.
    pub timeout: Setting<u64>,
    /// What stops warren from connecting (a password variable not set, a password file
    /// not readable): no command reaches the broker while there is one.
    pub problems: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::url_list;

    fn list(text: &str) -> Vec<String> {
        url_list(text.split(',').map(str::to_string).collect())
    }

    #[test]
    fn commas_separate_urls_but_not_inside_a_password() {
        assert_eq!(
            list("http://a:15672,http://b:15672"),
            ["http://a:15672", "http://b:15672"]
        );
        assert_eq!(list("a:15672,b:15672"), ["a:15672", "b:15672"]);
        assert_eq!(list("http://h1,h2"), ["http://h1", "h2"]);
        assert_eq!(list("http://ops:a,b@h"), ["http://ops:a,b@h"]);
        assert_eq!(
            list("http://ops:,a,,b,@h,http://x:y@z"),
            ["http://ops:,a,,b,@h", "http://x:y@z"]
        );
        assert_eq!(list("http://ops:a@h,b@i"), ["http://ops:a@h", "b@i"]);
    }
}
