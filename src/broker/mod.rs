//! The only network code: a client for RabbitMQ's management HTTP API. Every API path
//! warren uses is written in this folder: reads in `live`, queue statistics in
//! `stats`, writes in `write`, the ownership record in `record`; what a failed
//! request says in `error`.
//!
//! Requests go to the first node that answers; a node that refuses connections or
//! answers 5xx is retried with backoff and then skipped for the next URL, so a plan or
//! apply survives one node of a cluster being down. Every request is counted, so
//! commands can report how many they made.

mod amqp;
mod connect;
mod deprecated;
mod endpoint;
mod error;
mod fence;
mod guard;
mod inspect;
mod live;
mod lock;
mod migrate;
mod record;
mod replay;
mod stats;
mod write;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

pub use endpoint::{
    DEFAULT_TIMEOUT_SECONDS, DEFAULT_URL, Endpoint, WHERE_TO_CONFIGURE, url_credentials,
};
pub use error::{BrokerError, RedactedText, Tag, removed_binding};
use error::{missing_tag, reason_of};
pub use guard::{DELETES_IN_FLIGHT, Deletion, GuardedQueue, QueueHeld};
pub use inspect::WaitingDeaths;
pub use live::{BindingEnds, LiveState, Named};
pub use lock::{BrokerLock, LockName, holder_name};
pub use migrate::{Drained, QueueBinding, QueueCounts};
pub use replay::{CopyRefusal, QueueNow, ReplayError, ReplayFailure, ReplayMove, rewrite};
pub use stats::{MessageRates, QueueStatistics, Rate};
pub use write::{
    IMPORT_CHUNK_BYTES, ImportStep, ObjectWrite, WriteOutcome, WriteStop, import_chunk_objects,
};

/// Characters left as they are in a path segment (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Encodes one path segment: a vhost `/` becomes `%2F`.
pub fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// A management API client.
pub struct Client {
    http: reqwest::Client,
    endpoint: Endpoint,
    current: AtomicUsize,
    requests: AtomicU64,
    /// Set while this client holds apply locks: every write asks it first
    /// ([`fence::Fence`]), so that no write leaves after the locks are lost.
    fence: std::sync::Mutex<Option<Arc<fence::Fence>>>,
}

const ATTEMPTS_PER_NODE: u32 = 3;

impl Client {
    /// Builds a client; fails on an unreadable or invalid CA file.
    pub fn new(endpoint: Endpoint) -> Result<Client, BrokerError> {
        if endpoint.urls.is_empty() {
            return Err(BrokerError::Setup(
                format!(
                    "no broker URL: --url, WARREN_URL or the profile's `url` is given but empty; {WHERE_TO_CONFIGURE}"
                )
                .into(),
            ));
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5).min(endpoint.timeout))
            .pool_max_idle_per_host(16);
        if let Some(path) = &endpoint.ca_cert {
            let pem = std::fs::read(path).map_err(|err| {
                BrokerError::Setup(
                    format!("cannot read CA certificate {}: {err}", path.display()).into(),
                )
            })?;
            let certificate = reqwest::Certificate::from_pem(&pem).map_err(|err| {
                BrokerError::Setup(
                    format!("{} is not a PEM certificate: {err}", path.display()).into(),
                )
            })?;
            builder = builder.add_root_certificate(certificate);
        }
        let http = builder
            .build()
            .map_err(|err| BrokerError::Setup(format!("cannot set up HTTP: {err}").into()))?;
        Ok(Client {
            http,
            endpoint,
            current: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            fence: std::sync::Mutex::new(None),
        })
    }

    /// Makes every later write of this client wait for the broker's confirmation of
    /// `fence` (locks just taken), or no longer (`None`).
    fn fence_writes(&self, fence: Option<Arc<fence::Fence>>) {
        *self
            .fence
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = fence;
    }

    /// `Ok` when this client holds no locks, or when the broker confirms that it
    /// still does: asked right before each write ([`fence::Fence::confirm`]).
    /// `sent` says whether the write was already sent once (a retry).
    pub(super) async fn fenced(&self, sent: bool) -> Result<(), BrokerError> {
        let fence = self
            .fence
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match fence {
            Some(fence) => fence.confirm(sent).await,
            None => Ok(()),
        }
    }

    /// Number of HTTP requests made so far.
    pub fn request_count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The user this client logs in as.
    pub fn user(&self) -> &str {
        &self.endpoint.user
    }

    fn urls_for_messages(&self) -> String {
        self.endpoint
            .urls
            .iter()
            .map(without_credentials)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Sends a request (`path` starts with `/api/`), trying each node in turn, within
    /// `--timeout`.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(StatusCode, Value), BrokerError> {
        self.request_within(method, path, body, self.endpoint.timeout)
            .await
    }

    /// [`Client::request`] with its own whole wait, for a request whose answer takes
    /// the broker longer the more it holds (a definitions import).
    async fn request_within(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        wait: Duration,
    ) -> Result<(StatusCode, Value), BrokerError> {
        let (url, answer) = self.send_within(method.clone(), path, body, wait).await?;
        self.interpret(method, &url, path, &answer)
    }

    /// Sends a request to the first node that answers, within `wait`, and returns its
    /// answer as it came, whatever the status (5xx aside, which is retried).
    #[expect(
        clippy::too_many_lines,
        reason = "the request loop: retries, failover between URLs and the classification of every failure are one state machine"
    )]
    async fn send_within(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        wait: Duration,
    ) -> Result<(Url, Answer), BrokerError> {
        let nodes = self.endpoint.urls.len();
        let start = self.current.load(Ordering::Relaxed);
        // `--timeout` is the whole wait for this request, retries and failover included:
        // each node gets an equal share of what is left when its turn comes, so one
        // node that accepts connections and never answers cannot use up the rest.
        let deadline = tokio::time::Instant::now() + wait;
        // What went wrong at each node that did not answer, to say it for all of them
        // (a permanent error names its URL itself).
        let mut failures: Vec<String> = Vec::new();
        let mut permanent: Vec<BrokerError> = Vec::new();
        let mut timed_out_at: Vec<String> = Vec::new();
        let mut sent_once = false;
        for offset in 0..nodes {
            let index = (start + offset) % nodes;
            let base = &self.endpoint.urls[index];
            let url = join(base, path);
            let share = deadline.saturating_duration_since(tokio::time::Instant::now())
                / (nodes - offset) as u32;
            let node_deadline = tokio::time::Instant::now() + share;
            let mut last_error = String::new();
            let mut names_its_url = false;
            for attempt in 0..ATTEMPTS_PER_NODE {
                if attempt > 0 {
                    let pause = Duration::from_millis(200 * 2u64.pow(attempt - 1));
                    if tokio::time::Instant::now() + pause >= node_deadline {
                        break;
                    }
                    tokio::time::sleep(pause).await;
                }
                let remaining =
                    node_deadline.saturating_duration_since(tokio::time::Instant::now());
                if remaining.is_zero() {
                    break;
                }
                self.requests.fetch_add(1, Ordering::Relaxed);
                let mut request = self
                    .http
                    .request(method.clone(), url.clone())
                    .timeout(remaining)
                    .basic_auth(&self.endpoint.user, Some(&self.endpoint.password));
                if let Some(body) = body {
                    request = request.json(body);
                }
                if method != Method::GET {
                    // No write leaves after the locks are lost (see `fence`): confirmed
                    // once the request is built, right before it is sent.
                    self.fenced(sent_once).await?;
                    sent_once = true;
                }
                match request.send().await {
                    Err(err) => match connect::classify(&err, base, &url, remaining).await {
                        connect::Failure::TimedOut => {
                            last_error = "timed out".into();
                            timed_out_at.push(without_credentials(&url));
                            break; // this node does not answer in time: next node
                        }
                        connect::Failure::Refused(text) => {
                            last_error = text;
                            break; // this node is down: next node
                        }
                        connect::Failure::Transient(text) => last_error = text,
                        connect::Failure::Permanent(error) => {
                            // No retry changes this: the answer at once, next node.
                            last_error = error.to_string();
                            permanent.push(error);
                            names_its_url = true;
                            break;
                        }
                    },
                    Ok(response) => {
                        let status = response.status();
                        let header = |name| {
                            response
                                .headers()
                                .get(name)
                                .and_then(|value| value.to_str().ok())
                                .map(str::to_string)
                        };
                        let content_type = header(reqwest::header::CONTENT_TYPE);
                        let server = header(reqwest::header::SERVER);
                        let text = match tokio::time::timeout(remaining, response.text()).await {
                            Ok(text) => text.unwrap_or_default(),
                            Err(_) => {
                                last_error = "timed out".into();
                                timed_out_at.push(without_credentials(&url));
                                break;
                            }
                        };
                        if status.is_server_error() {
                            last_error = format!("{status} {}", reason_of(&text));
                            continue;
                        }
                        self.current.store(index, Ordering::Relaxed);
                        let answer = Answer {
                            status,
                            content_type,
                            server,
                            text,
                        };
                        return Ok((url, answer));
                    }
                }
            }
            failures.push(if names_its_url || nodes == 1 {
                last_error
            } else {
                format!("{}: {last_error}", without_credentials(base))
            });
        }
        if !timed_out_at.is_empty() {
            return Err(BrokerError::TimedOut {
                method: method.to_string(),
                urls: timed_out_at.join(", "),
                seconds: wait.as_secs_f64(),
            });
        }
        if let ([error], 1) = (permanent.as_slice(), nodes) {
            return Err(error.clone());
        }
        let reason = failures.join("; ");
        let note = if self.endpoint.url_defaulted {
            format!(
                ". {DEFAULT_URL} is the default, used because neither --url, WARREN_URL nor a profile gave one: {WHERE_TO_CONFIGURE}"
            )
        } else {
            String::new()
        };
        Err(BrokerError::Unreachable {
            urls: self.urls_for_messages(),
            reason: reason.into(),
            note,
        })
    }

    fn interpret(
        &self,
        method: Method,
        url: &Url,
        path: &str,
        answer: &Answer,
    ) -> Result<(StatusCode, Value), BrokerError> {
        let status = answer.status;
        let text = &answer.text;
        if status.is_success() || status == StatusCode::NOT_FOUND {
            let value = if text.trim().is_empty() {
                Value::Null
            } else {
                match serde_json::from_str(text) {
                    Ok(value) => value,
                    // A 404's body only explains the 404.
                    Err(_) if status == StatusCode::NOT_FOUND => Value::Null,
                    Err(_) => return Err(answer.not_management_api(&method, url)),
                }
            };
            return Ok((status, value));
        }
        let reason = reason_of(text);
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(BrokerError::Forbidden {
                user: self.endpoint.user.clone(),
                request: format!("{method} {path}"),
                tag: missing_tag(status, path, reason.as_str()),
                reason,
            });
        }
        Err(BrokerError::Api {
            method: method.to_string(),
            path: path.to_string(),
            status: status.as_u16(),
            reason,
        })
    }

    /// GET returning JSON; `None` on 404.
    pub async fn get(&self, path: &str) -> Result<Option<Value>, BrokerError> {
        let (status, value) = self.request(Method::GET, path, None).await?;
        Ok((status != StatusCode::NOT_FOUND).then_some(value))
    }

    /// PUT with a JSON body; 404 is an error.
    pub async fn put(&self, path: &str, body: &Value) -> Result<(), BrokerError> {
        self.expect_found(Method::PUT, path, Some(body)).await
    }

    /// POST with a JSON body; 404 is an error.
    pub async fn post(&self, path: &str, body: &Value) -> Result<(), BrokerError> {
        self.expect_found(Method::POST, path, Some(body)).await
    }

    /// POST with its own whole wait (see [`Client::request_within`]).
    pub(crate) async fn post_within(
        &self,
        path: &str,
        body: &Value,
        wait: Duration,
    ) -> Result<(), BrokerError> {
        self.expect_found_within(Method::POST, path, Some(body), wait)
            .await
    }

    /// DELETE; an object that is already gone is fine.
    pub async fn delete(&self, path: &str) -> Result<(), BrokerError> {
        self.request(Method::DELETE, path, None).await.map(|_| ())
    }

    async fn expect_found(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(), BrokerError> {
        self.expect_found_within(method, path, body, self.endpoint.timeout)
            .await
    }

    async fn expect_found_within(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        wait: Duration,
    ) -> Result<(), BrokerError> {
        let (status, value) = self
            .request_within(method.clone(), path, body, wait)
            .await?;
        if status == StatusCode::NOT_FOUND {
            return Err(BrokerError::Api {
                method: method.to_string(),
                path: path.to_string(),
                status: 404,
                reason: reason_of(&value.to_string()),
            });
        }
        Ok(())
    }

    /// Checks the credentials and returns the broker's version. The first request
    /// a command makes: its answer also tells whether the URL is RabbitMQ's management
    /// API at all, and a refused login whether the password or the user's tags are
    /// wrong.
    pub async fn version(&self) -> Result<String, BrokerError> {
        let path = "/api/whoami";
        let (url, answer) = self
            .send_within(Method::GET, path, None, self.endpoint.timeout)
            .await?;
        let json = serde_json::from_str::<Value>(&answer.text).ok();
        match answer.status {
            StatusCode::OK if json.as_ref().is_some_and(|v| v["name"].is_string()) => {}
            // RabbitMQ's refusals are JSON with a reason: a wrong password or an unknown
            // user reads "Not_Authorized" on 4.0; a right password without a tag that
            // opens the management API reads "Not management user" on 3.10 and 4.0.
            // Anything else (an HTML 401 of a proxy) did not come from RabbitMQ.
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
                if json.as_ref().is_some_and(|v| v["reason"].is_string()) =>
            {
                let reason = reason_of(&answer.text);
                if reason.as_str().starts_with("Not management user") {
                    return Err(BrokerError::NotManagementUser {
                        user: self.endpoint.user.clone(),
                        reason,
                    });
                }
                return Err(BrokerError::BadCredentials {
                    user: self.endpoint.user.clone(),
                });
            }
            _ => return Err(answer.not_management_api(&Method::GET, &url)),
        }
        // Without statistics the overview costs the broker ~2 ms instead of a pass over
        // every queue's stats (~22 ms at 5,000 queues on 3.10); it still has the version.
        let overview = self
            .get(OVERVIEW_WITHOUT_STATISTICS)
            .await?
            .unwrap_or(Value::Null);
        overview["rabbitmq_version"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| BrokerError::Decode {
                path: OVERVIEW_WITHOUT_STATISTICS.into(),
                reason: "no rabbitmq_version".into(),
            })
    }
}

/// An HTTP answer as it came.
struct Answer {
    status: StatusCode,
    content_type: Option<String>,
    server: Option<String>,
    text: String,
}

impl Answer {
    /// The error for an answer that did not come from the management API: what
    /// answered, never the body (a login page may echo what was sent).
    fn not_management_api(&self, method: &Method, url: &Url) -> BrokerError {
        let content_type = self.content_type.as_deref().unwrap_or("no content type");
        BrokerError::NotManagementApi {
            method: method.to_string(),
            url: without_credentials(url),
            status: self.status.as_u16(),
            what: match &self.server {
                Some(server) => format!("{content_type} (Server: {server})"),
                None => content_type.to_string(),
            }
            .into(),
        }
    }
}

/// The broker overview, without the statistics that cost a pass over every queue.
const OVERVIEW_WITHOUT_STATISTICS: &str =
    "/api/overview?disable_stats=true&enable_queue_totals=false";

/// A URL as it may be printed (an endpoint's URLs hold no credentials, see
/// [`Endpoint::from_urls`]; this holds even for one built by hand).
fn without_credentials(url: &Url) -> String {
    crate::model::redact::redact_url(url.as_str())
}

fn join(base: &Url, path: &str) -> Url {
    let mut text = base.as_str().trim_end_matches('/').to_string();
    if text.ends_with("/api") && path.starts_with("/api/") {
        text.truncate(text.len() - 4);
    }
    text.push_str(path);
    Url::parse(&text).unwrap_or_else(|_| base.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_encode_slashes_and_spaces() {
        assert_eq!(segment("/"), "%2F");
        assert_eq!(segment("a b/c.d"), "a%20b%2Fc.d");
    }

    #[test]
    fn joins_with_or_without_api_suffix() {
        let base = Url::parse("http://h:15672/api/").unwrap();
        assert_eq!(
            join(&base, "/api/overview").as_str(),
            "http://h:15672/api/overview"
        );
        let base = Url::parse("http://h:15672").unwrap();
        assert_eq!(
            join(&base, "/api/overview").as_str(),
            "http://h:15672/api/overview"
        );
    }
}
