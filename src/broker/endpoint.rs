//! Where and how to reach the broker: URLs of its nodes and the credentials, which a
//! URL may carry (`http://user:password@host:15672`) but never keeps.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;

use super::BrokerError;
use crate::model::redact::redact_url;

/// The management API URL used when neither `--url`, `WARREN_URL` nor a profile gives one: a
/// broker on this machine with RabbitMQ's default management port.
pub const DEFAULT_URL: &str = "http://localhost:15672";

/// What every "say where the broker is" message ends with: the flags and variables
/// warren reads, and an example. One text, so the messages cannot drift apart.
pub const WHERE_TO_CONFIGURE: &str = "give the management API's URL with --url or WARREN_URL, and the login with --user/--password or WARREN_USER/WARREN_PASSWORD (else RABBITMQ_DEFAULT_USER/RABBITMQ_DEFAULT_PASS, else guest/guest), e.g. --url http://rabbit.example.com:15672 --user ops; or name a broker profile of the config file with --profile (docs/profiles.md; `warren config` shows what is in force)";

/// Seconds to wait for one request when neither `--timeout`, `WARREN_TIMEOUT` nor a
/// profile says.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 60;

/// Where and how to reach the broker.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Management API base URLs, tried in order (several nodes of one cluster).
    pub urls: Vec<Url>,
    /// User name.
    pub user: String,
    /// Password (never printed).
    pub password: String,
    /// Extra CA certificate (PEM) to trust for HTTPS.
    pub ca_cert: Option<PathBuf>,
    /// AMQP URL (host and port) for the emptiness checks made when deleting queues;
    /// `None`: the AMQP listener the broker reports, on the management URL's host.
    pub amqp_url: Option<Url>,
    /// Timeout of one request.
    pub timeout: Duration,
    /// Whether `urls` is [`DEFAULT_URL`] because no URL was given: an error reaching
    /// it then says so, since the user may not know warren tried anything at all.
    pub url_defaulted: bool,
}

impl Endpoint {
    /// An endpoint from the URLs as given (blank ones are skipped; none at all means
    /// [`DEFAULT_URL`]) and the login in force. Credentials written in a URL are taken
    /// out of it: [`url_credentials`] gives them to whoever decides the login.
    pub fn from_urls(
        urls: &[String],
        user: String,
        password: String,
        ca_cert: Option<PathBuf>,
        timeout: Duration,
    ) -> Result<Endpoint, BrokerError> {
        let url_defaulted = urls.is_empty();
        let default = [DEFAULT_URL.to_string()];
        let urls = if url_defaulted { &default[..] } else { urls };
        let mut parsed = Vec::new();
        for text in urls {
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let mut url = parse_management_url(text)?;
            let _ = url.set_username("");
            let _ = url.set_password(None);
            parsed.push(url);
        }
        Ok(Endpoint {
            urls: parsed,
            user,
            password,
            amqp_url: None,
            ca_cert,
            timeout,
            url_defaulted,
        })
    }
}

/// The user and password written in the URLs (`http://user:password@host:15672`), of
/// the last one that has a user; URLs that do not parse are skipped
/// ([`Endpoint::from_urls`] refuses them).
pub fn url_credentials(urls: &[String]) -> (Option<String>, Option<String>) {
    let mut credentials = (None, None);
    for url in urls.iter().filter_map(|text| Url::parse(text.trim()).ok()) {
        if !url.username().is_empty() {
            credentials = (
                Some(percent_decode(url.username())),
                url.password().map(percent_decode),
            );
        }
    }
    credentials
}

/// One `--url`, or an error that says what to write instead. The usual slips are a
/// URL without its scheme (`127.0.0.1:15672` does not parse at all, `localhost:15672`
/// parses as scheme `localhost`) and the AMQP URL an application uses.
fn parse_management_url(text: &str) -> Result<Url, BrokerError> {
    let invalid = |what: String| {
        BrokerError::Setup(format!("invalid --url `{}`: {what}", redact_url(text)).into())
    };
    // `127.0.0.1:15672` does not parse; `localhost:15672` reads as scheme `localhost`
    // and path `15672`. Both mean what they say with `http://` in front.
    let with_http = format!("http://{text}");
    let without_scheme = !text.contains("://")
        && Url::parse(&with_http).is_ok_and(|url| url.host_str().is_some())
        && text
            .split_once(':')
            .is_none_or(|(_, rest)| looks_like_a_port(rest));
    let url = match Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => return Ok(url),
        _ if without_scheme => {
            return Err(invalid(format!(
                "it has no scheme (did you mean {}?)",
                redact_url(&with_http)
            )));
        }
        Ok(url) => url,
        Err(err) => return Err(invalid(err.to_string())),
    };
    if matches!(url.scheme(), "amqp" | "amqps") {
        let host = url.host_str().unwrap_or("localhost");
        let scheme = if url.scheme() == "amqps" {
            "https"
        } else {
            "http"
        };
        return Err(invalid(format!(
            "that is an AMQP URL, which applications use; --url is the management API, usually {scheme}://{host}:15672 (warren's own AMQP URL, when the one the broker reports is wrong, goes in --amqp-url)"
        )));
    }
    Err(invalid("use http:// or https://".into()))
}

/// Whether what follows `host:` is a port (`15672`, `15672/api`).
fn looks_like_a_port(rest: &str) -> bool {
    let port = rest.split('/').next().unwrap_or_default();
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

impl Endpoint {
    /// Sets the AMQP URL for the emptiness checks (host and port; any credentials in
    /// it are dropped: the management credentials are used).
    pub fn with_amqp_url(mut self, text: Option<&str>) -> Result<Endpoint, BrokerError> {
        let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
            return Ok(self);
        };
        let mut url = Url::parse(text).map_err(|err| {
            BrokerError::Setup(format!("invalid --amqp-url `{}`: {err}", redact_url(text)).into())
        })?;
        if url.scheme() != "amqp" {
            return Err(BrokerError::Setup(
                format!(
                    "invalid --amqp-url `{}`: use amqp://host:port",
                    redact_url(text)
                )
                .into(),
            ));
        }
        let _ = url.set_username("");
        let _ = url.set_password(None);
        self.amqp_url = Some(url);
        Ok(self)
    }
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The URLs as given, with guest/guest and no CA.
    fn from_urls(urls: &[String]) -> Result<Endpoint, BrokerError> {
        Endpoint::from_urls(
            urls,
            "guest".into(),
            "guest".into(),
            None,
            Duration::from_secs(5),
        )
    }

    #[test]
    fn credentials_come_out_of_the_url_and_never_stay_in_it() {
        let urls = vec![
            "http://ops:s%40cret@node1:15672".to_string(),
            "http://node2:15672".to_string(),
        ];
        assert_eq!(
            url_credentials(&urls),
            (Some("ops".into()), Some("s@cret".into()))
        );
        let endpoint = from_urls(&urls).unwrap();
        assert_eq!(endpoint.urls[0].as_str(), "http://node1:15672/");
        assert_eq!(endpoint.urls.len(), 2);
    }

    #[test]
    fn a_bad_url_is_refused_without_its_password() {
        let refused = from_urls(&["ftp://ops:s3cret@h:1/".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("use http://") && !refused.contains("s3cret"),
            "{refused}"
        );
    }

    #[test]
    fn no_url_at_all_is_the_default_and_says_so() {
        let endpoint = from_urls(&[]).unwrap();
        assert!(endpoint.url_defaulted);
        assert_eq!(endpoint.urls[0].as_str(), "http://localhost:15672/");
    }

    #[test]
    fn a_host_and_port_without_a_scheme_is_refused_with_the_url_meant() {
        for (given, meant) in [
            ("127.0.0.1:15672", "http://127.0.0.1:15672"),
            ("localhost:15672/api", "http://localhost:15672/api"),
            ("rabbit.internal", "http://rabbit.internal"),
        ] {
            let refused = parse_management_url(given).unwrap_err().to_string();
            assert!(
                refused.contains(&format!("did you mean {meant}?")),
                "{refused}"
            );
        }
        let refused = parse_management_url("mailto:ops@example.com")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("use http://"), "{refused}");
    }
}
