//! Where and how to reach the broker: URLs of its nodes and the credentials, which a
//! URL may carry (`http://user:password@host:15672`) but never keeps.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;

use super::BrokerError;
use crate::model::redact::redact_url;

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
}

impl Endpoint {
    /// An endpoint from the URLs as given (blank ones are skipped). Credentials in a URL
    /// are taken out of it; `user` and `password`, when given, win over them, and
    /// `default_credentials` gives what neither says.
    pub fn from_urls(
        urls: &[String],
        user: Option<String>,
        password: Option<String>,
        default_credentials: impl FnOnce() -> (String, String),
        ca_cert: Option<PathBuf>,
        timeout: Duration,
    ) -> Result<Endpoint, BrokerError> {
        let mut parsed = Vec::new();
        let mut url_user = None;
        let mut url_password = None;
        for text in urls {
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let mut url = Url::parse(text).map_err(|err| {
                BrokerError::Setup(format!("invalid --url `{}`: {err}", redact_url(text)).into())
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(BrokerError::Setup(
                    format!(
                        "invalid --url `{}`: use http:// or https://",
                        redact_url(text)
                    )
                    .into(),
                ));
            }
            if !url.username().is_empty() {
                url_user = Some(percent_decode(url.username()));
                url_password = url.password().map(percent_decode);
                let _ = url.set_username("");
                let _ = url.set_password(None);
            }
            parsed.push(url);
        }
        let user = user.or(url_user);
        let password = password.or(url_password);
        let (user, password) = match (user, password) {
            (Some(user), Some(password)) => (user, password),
            (user, password) => {
                let (default_user, default_password) = default_credentials();
                (
                    user.unwrap_or(default_user),
                    password.unwrap_or(default_password),
                )
            }
        };
        Ok(Endpoint {
            urls: parsed,
            user,
            password,
            amqp_url: None,
            ca_cert,
            timeout,
        })
    }
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

    #[test]
    fn credentials_come_out_of_the_url_and_never_stay_in_it() {
        let urls = vec![
            "http://ops:s%40cret@node1:15672".to_string(),
            "http://node2:15672".to_string(),
        ];
        let endpoint = Endpoint::from_urls(
            &urls,
            None,
            None,
            || ("guest".into(), "guest".into()),
            None,
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(endpoint.user, "ops");
        assert_eq!(endpoint.password, "s@cret");
        assert_eq!(endpoint.urls[0].as_str(), "http://node1:15672/");
        assert_eq!(endpoint.urls.len(), 2);
    }

    #[test]
    fn a_bad_url_is_refused_without_its_password() {
        let refused = Endpoint::from_urls(
            &["ftp://ops:s3cret@h:1/".to_string()],
            None,
            None,
            || ("guest".into(), "guest".into()),
            None,
            Duration::from_secs(5),
        )
        .unwrap_err()
        .to_string();
        assert!(
            refused.contains("use http://") && !refused.contains("s3cret"),
            "{refused}"
        );
    }
}
