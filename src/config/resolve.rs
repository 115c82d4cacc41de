//! The settings in force: flag, then variable (clap gives both as one, with its
//! origin), then the profile, then the defaults.

use std::time::Duration;

use super::file::{self, Profile, ProfilesFile};
use super::{
    Chosen, DEFAULT_PROFILE, FileUsed, Given, Input, Resolved, Secret, Setting, Source, Stated,
};
use crate::broker::{BrokerError, DEFAULT_TIMEOUT_SECONDS, DEFAULT_URL, Endpoint, url_credentials};

/// The variables of RabbitMQ's container image that give the login when nothing else
/// does (the one place that reads them).
const DEFAULT_USER_VARIABLE: &str = "RABBITMQ_DEFAULT_USER";
const DEFAULT_PASS_VARIABLE: &str = "RABBITMQ_DEFAULT_PASS";
/// The login of a fresh RabbitMQ, when nothing else gives one.
const GUEST: &str = "guest";

/// Every connection setting in force for what was `given`, reading the profiles file
/// and, through `variable`, the environment (the XDG and HOME variables, a profile's
/// `password_env`, RabbitMQ's container variables). An error is bad input (exit 1): a
/// profiles file that does not read or parse, or a profile it does not define.
pub fn resolve(
    given: &Given,
    variable: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, String> {
    let (used, profiles) = find_file(given, variable)?;
    let profile = choose_profile(given, profiles.as_ref(), &used)?;
    let from = |key: fn(&Profile) -> bool| {
        let (name, _) = profile.as_ref()?;
        let file = profiles.as_ref()?;
        key(&file.profiles[name]).then(|| Source::Profile {
            name: name.clone(),
            file: file.path.clone(),
            via: None,
        })
    };
    let chosen: Option<&Profile> = profile
        .as_ref()
        .and_then(|(name, _)| profiles.as_ref().map(|file| &file.profiles[name]));
    let urls = match (&given.urls, chosen.and_then(|p| p.url.clone())) {
        (Some(stated), _) => stated_setting(stated, Input::Url),
        (None, Some(urls)) => Setting {
            value: urls,
            source: from(|p| p.url.is_some()).expect("the profile gave it"),
        },
        (None, None) => Setting {
            value: vec![DEFAULT_URL.to_string()],
            source: Source::Default,
        },
    };
    let (url_user, url_password) = url_credentials(&urls.value);
    let mut problems = Vec::new();
    let user = first_of(
        given.user.as_ref().map(|s| stated_setting(s, Input::User)),
        chosen.and_then(|p| p.user.clone()).map(|value| Setting {
            value,
            source: from(|p| p.user.is_some()).expect("the profile gave it"),
        }),
    )
    .or_else(|| {
        url_user.map(|value| Setting {
            value,
            source: Source::Url,
        })
    })
    .unwrap_or_else(|| container_default(variable, DEFAULT_USER_VARIABLE));
    let password = match given.password.as_ref() {
        Some(stated) => Setting {
            value: Some(Secret(stated.value.clone())),
            source: Source::Given(Input::Password, stated.origin),
        },
        None => match profile.as_ref().zip(profiles.as_ref()) {
            Some(((name, _), file)) if has_password(&file.profiles[name]) => {
                profile_password(name, file, variable, &mut problems)
            }
            _ => url_password
                .map(|value| Setting {
                    value: Some(Secret(value)),
                    source: Source::Url,
                })
                .unwrap_or_else(|| {
                    let default = container_default(variable, DEFAULT_PASS_VARIABLE);
                    Setting {
                        value: Some(Secret(default.value)),
                        source: default.source,
                    }
                }),
        },
    };
    Ok(Resolved {
        file: used,
        profiles: profiles
            .as_ref()
            .map(ProfilesFile::names)
            .unwrap_or_default(),
        urls,
        user,
        password,
        amqp_url: optional(
            given.amqp_url.as_ref(),
            Input::AmqpUrl,
            chosen.and_then(|p| p.amqp_url.clone()),
            from(|p| p.amqp_url.is_some()),
        ),
        ca_cert: optional(
            given.ca_cert.as_ref(),
            Input::CaCert,
            chosen.and_then(|p| p.ca_cert.clone()),
            from(|p| p.ca_cert.is_some()),
        ),
        timeout: first_of(
            given
                .timeout
                .as_ref()
                .map(|s| stated_setting(s, Input::Timeout)),
            chosen.and_then(|p| p.timeout).map(|value| Setting {
                value,
                source: from(|p| p.timeout.is_some()).expect("the profile gave it"),
            }),
        )
        .unwrap_or(Setting {
            value: DEFAULT_TIMEOUT_SECONDS,
            source: Source::Default,
        }),
        profile,
        problems,
    })
}

impl Resolved {
    /// Where and how to reach the broker; an error when a setting's source failed
    /// (`problems`) or a URL does not parse.
    pub fn endpoint(&self) -> Result<Endpoint, BrokerError> {
        if let Some(problem) = self.problems.first() {
            return Err(BrokerError::Setup(problem.as_str().into()));
        }
        // An empty list is the default URL, and errors reaching it say so.
        let urls: &[String] = match self.urls.source {
            Source::Default => &[],
            _ => &self.urls.value,
        };
        let password = self.password.value.clone().map(|s| s.0).unwrap_or_default();
        Endpoint::from_urls(
            urls,
            self.user.value.clone(),
            password,
            self.ca_cert.value.clone(),
            Duration::from_secs(self.timeout.value.max(1)),
        )?
        .with_amqp_url(self.amqp_url.value.as_deref())
    }
}

/// The profiles file to read, and its profiles: `--config`/`WARREN_CONFIG` must name
/// one that exists; the default place may hold none.
fn find_file(
    given: &Given,
    variable: &dyn Fn(&str) -> Option<String>,
) -> Result<(FileUsed, Option<ProfilesFile>), String> {
    if let Some(Stated { value, origin }) = &given.config {
        let read = file::read(value)?;
        return Ok((FileUsed::Given(value.clone(), *origin), Some(read)));
    }
    let Some(path) = file::default_path(variable) else {
        return Ok((FileUsed::Missing(None), None));
    };
    if !path.exists() {
        return Ok((FileUsed::Missing(Some(path)), None));
    }
    let read = file::read(&path)?;
    Ok((FileUsed::Default(path), Some(read)))
}

/// The profile in use: the one named, which must exist, else the file's
/// [`DEFAULT_PROFILE`] if it has one.
fn choose_profile(
    given: &Given,
    file: Option<&ProfilesFile>,
    used: &FileUsed,
) -> Result<Option<(String, Chosen)>, String> {
    let Some(Stated {
        value: name,
        origin,
    }) = &given.profile
    else {
        return Ok(file
            .filter(|file| file.profiles.contains_key(DEFAULT_PROFILE))
            .map(|_| (DEFAULT_PROFILE.to_string(), Chosen::Default)));
    };
    let Some(file) = file else {
        let looked = match used {
            FileUsed::Missing(Some(path)) => format!(" ({} does not exist)", path.display()),
            _ => " (neither XDG_CONFIG_HOME nor HOME is set)".to_string(),
        };
        return Err(format!(
            "no profile `{name}`: there is no config file{looked}; write one (docs/profiles.md), or name it with --config or WARREN_CONFIG"
        ));
    };
    if file.profiles.contains_key(name) {
        return Ok(Some((name.clone(), Chosen::Given(*origin))));
    }
    let names = file.names();
    let hint = crate::suggest::closest(name, &names)
        .map(|close| format!(" (did you mean `{close}`?)"))
        .unwrap_or_default();
    let defined = if names.is_empty() {
        "it defines no profile".to_string()
    } else {
        format!("its profiles: {}", names.join(", "))
    };
    Err(format!(
        "no profile `{name}` in {}{hint}; {defined}",
        file.path.display()
    ))
}

/// The profile's password, from the key that gives it; a variable not set or a file
/// not readable is a problem, named without any value.
fn profile_password(
    name: &str,
    file: &ProfilesFile,
    variable: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<String>,
) -> Setting<Option<Secret>> {
    let profile = &file.profiles[name];
    let source = |via: Option<String>| Source::Profile {
        name: name.to_string(),
        file: file.path.clone(),
        via,
    };
    if let Some(password) = &profile.password {
        return Setting {
            value: Some(Secret(password.clone())),
            source: source(None),
        };
    }
    let (via, read) = if let Some(name_of_variable) = &profile.password_env {
        (
            format!("password_env {name_of_variable}"),
            variable(name_of_variable)
                .filter(|value| !value.is_empty())
                .ok_or_else(|| format!("the variable {name_of_variable} is not set")),
        )
    } else {
        let path = profile.password_file.clone().unwrap_or_default();
        (
            format!("password_file {}", path.display()),
            std::fs::read_to_string(&path)
                .map(|text| text.trim_end_matches(['\n', '\r']).to_string())
                .map_err(|err| format!("cannot read {}: {err}", path.display())),
        )
    };
    let value = match read {
        Ok(value) => Some(Secret(value)),
        Err(why) => {
            problems.push(format!(
                "the password of profile `{name}` ({}): {why}",
                file.path.display()
            ));
            None
        }
    };
    Setting {
        value,
        source: source(Some(via)),
    }
}

fn has_password(profile: &Profile) -> bool {
    profile.password.is_some() || profile.password_env.is_some() || profile.password_file.is_some()
}

fn stated_setting<T: Clone>(stated: &Stated<T>, input: Input) -> Setting<T> {
    Setting {
        value: stated.value.clone(),
        source: Source::Given(input, stated.origin),
    }
}

fn first_of<T>(given: Option<Setting<T>>, profile: Option<Setting<T>>) -> Option<Setting<T>> {
    given.or(profile)
}

/// A setting with no default: given, else the profile's, else unset (`Source::Default`).
fn optional<T: Clone>(
    given: Option<&Stated<T>>,
    input: Input,
    profile: Option<T>,
    from_profile: Option<Source>,
) -> Setting<Option<T>> {
    match (given, profile.zip(from_profile)) {
        (Some(stated), _) => Setting {
            value: Some(stated.value.clone()),
            source: Source::Given(input, stated.origin),
        },
        (None, Some((value, source))) => Setting {
            value: Some(value),
            source,
        },
        (None, None) => Setting {
            value: None,
            source: Source::Default,
        },
    }
}

/// A login part from RabbitMQ's container variable, else guest.
fn container_default(
    variable: &dyn Fn(&str) -> Option<String>,
    name: &'static str,
) -> Setting<String> {
    match variable(name) {
        Some(value) => Setting {
            value,
            source: Source::Variable(name),
        },
        None => Setting {
            value: GUEST.to_string(),
            source: Source::Default,
        },
    }
}
