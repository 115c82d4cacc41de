//! What can go wrong talking to the broker ([`BrokerError`]), and the one way text the
//! broker or the network said gets into such an error ([`RedactedText`]). Kept apart
//! from the client so that every message a failed request can print is read in one
//! place, with the hints (the tag a refused request takes, the AMQP permission) that
//! go with them.

use crate::model::record::DamagedRecord;
use crate::model::redact::redact_text;
use reqwest::StatusCode;
use serde_json::Value;

/// Text in a [`BrokerError`] that did not come from warren alone: the broker's reasons
/// (which echo what warren sent, URIs with their passwords included), transport and
/// AMQP errors, answers that were not understood. Building one is the only way to put
/// such text in an error, and it hides every credential ([`redact_text`]) and folds the
/// text onto one line, so no command can print a secret the broker echoed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactedText(String);

impl RedactedText {
    /// The text as it may be printed.
    pub fn new(text: &str) -> RedactedText {
        let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        RedactedText(redact_text(&one_line))
    }

    /// The text, already redacted.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for RedactedText {
    fn from(text: String) -> RedactedText {
        RedactedText::new(&text)
    }
}

impl From<&str> for RedactedText {
    fn from(text: &str) -> RedactedText {
        RedactedText::new(text)
    }
}

impl std::fmt::Display for RedactedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How [`BrokerError::BindingsNotRestored`] names a binding into `queue`.
pub fn removed_binding(source: &str, queue: &str, routing_key: &str) -> String {
    format!("{source} -> {queue} [{routing_key}]")
}

/// What can go wrong talking to the broker. Messages fit on one line and never
/// contain a password: whatever the broker or the network said is a [`RedactedText`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum BrokerError {
    /// No node answered.
    #[error("cannot reach RabbitMQ at {urls}: {reason}{note}")]
    Unreachable {
        /// The URLs tried (without credentials).
        urls: String,
        /// What went wrong at each.
        reason: RedactedText,
        /// Empty, or where the URL came from when the user gave none.
        note: String,
    },
    /// The host name of a URL does not resolve: no retry will change that.
    #[error(
        "cannot resolve host name `{host}` of {url}: {reason} (DNS: check the host name in --url or WARREN_URL)"
    )]
    UnknownHost {
        /// The host name.
        host: String,
        /// The URL (without credentials).
        url: String,
        /// What the resolver said.
        reason: RedactedText,
    },
    /// The port speaks another protocol than the URL's scheme says.
    #[error("{failed} {url} failed: the server there speaks {speaks} (did you mean {suggestion}?)")]
    WrongScheme {
        /// What failed: `TLS handshake with`, `HTTP request to`.
        failed: &'static str,
        /// The URL (without credentials).
        url: String,
        /// What the server speaks, in words.
        speaks: String,
        /// The URL with the other scheme.
        suggestion: String,
    },
    /// The URL is RabbitMQ's AMQP port, not its management API.
    #[error(
        "{url} is RabbitMQ's AMQP port, not its management API: the server answered with the AMQP protocol header `{header}`. The management API usually listens on port 15672 (did you mean {suggestion}?); if nothing listens there, `rabbitmq-plugins enable rabbitmq_management`"
    )]
    AmqpPort {
        /// The URL (without credentials).
        url: String,
        /// The bytes the server sent, printable.
        header: RedactedText,
        /// The URL with the management port.
        suggestion: String,
    },
    /// The TLS handshake failed for another reason than the port speaking plain HTTP.
    #[error("TLS handshake with {url} failed: {reason} ({hint})")]
    Tls {
        /// The URL (without credentials).
        url: String,
        /// rustls's words.
        reason: RedactedText,
        /// What to do.
        hint: &'static str,
    },
    /// The broker found a queue not empty (or in use) at the moment of deletion.
    #[error(
        "refusing to delete queue {queue:?} in vhost {vhost:?}: {reason}; it was not deleted (re-run with --allow-data-loss to accept losing its messages)"
    )]
    Refused {
        /// Vhost.
        vhost: String,
        /// Queue.
        queue: String,
        /// What the broker found.
        reason: RedactedText,
    },
    /// An AMQP request was sent and its connection failed before the broker answered
    /// (the node died, or closed the connection): the broker may or may not have
    /// done it, so it is reported as not confirmed, never as refused.
    #[error(
        "{what}: sent, and the AMQP connection failed before the broker answered ({reason}); it may or may not have been done"
    )]
    AmqpUnanswered {
        /// The request (`queue.delete "q" in vhost "v"`).
        what: String,
        /// The client's error.
        reason: RedactedText,
    },
    /// The broker refused a queue's deletion (as [`BrokerError::Refused`]) after
    /// warren had removed the bindings into it for the check, and some of them could
    /// not be declared again: until they are, nothing is routed to the queue through
    /// them.
    #[error(
        "{refusal}; the {} into it, removed before the check, could not all be declared again ({reason}): {}. Declare them again at once: `warren apply` does, or `rabbitmqadmin declare binding`", crate::text::count(*removed, "binding"), bindings.join(", ")
    )]
    BindingsNotRestored {
        /// The refusal.
        refusal: Box<BrokerError>,
        /// How many bindings were removed for the check.
        removed: usize,
        /// Those not declared again ([`removed_binding`]).
        bindings: Vec<String>,
        /// Why the first of them failed.
        reason: RedactedText,
    },
    /// A write was not sent because the broker no longer confirms this process's
    /// locks (its lock connection closed: frozen for longer than three heartbeats, or
    /// cut off by `warren unlock`); another apply may hold them now. When `sent`, an
    /// earlier attempt of the same write was sent and not answered.
    #[error(
        "{}: this process's locks were lost ({reason}); another apply may hold them now", if *sent { "not sent again" } else { "not sent" }
    )]
    LocksLost {
        /// Whether an earlier attempt of the write was sent (its outcome unknown).
        sent: bool,
        /// What the confirmation found.
        reason: RedactedText,
    },
    /// A quorum queue was empty when checked, but messages arrived before its deletion.
    #[error(
        "queue {queue:?} in vhost {vhost:?} was empty when checked, but {} arrived before it was deleted and {} deleted with it", crate::text::count(*messages, "message"), if *messages == 1 { "was" } else { "were" }
    )]
    LostInWindow {
        /// Vhost.
        vhost: String,
        /// Queue.
        queue: String,
        /// Messages the broker deleted with the queue.
        messages: u32,
    },
    /// The messages waiting in a queue could not be read (`warren status --inspect`).
    #[error(
        "cannot read the messages waiting in queue {queue:?} in vhost {vhost:?}: {reason} (--amqp-url or WARREN_AMQP_URL says where the AMQP listener is; without --inspect, status reads nothing over AMQP)"
    )]
    Inspect {
        /// Vhost.
        vhost: String,
        /// Queue.
        queue: String,
        /// What went wrong.
        reason: RedactedText,
    },
    /// The AMQP connection for the checks at deletion could not be made.
    #[error(
        "cannot check over AMQP at {url} that queues are empty before deleting them: {reason} ({}, or --allow-data-loss to delete without the check)", amqp_hint(denied_vhost.as_deref())
    )]
    Amqp {
        /// The AMQP URL (without credentials).
        url: String,
        /// What went wrong.
        reason: RedactedText,
        /// The vhost, when the broker refused the user access to it: the fix is a
        /// permission, not another URL.
        denied_vhost: Option<String>,
    },
    /// No node answered within `--timeout`, the whole wait for one request.
    #[error(
        "{method} {urls} timed out: no answer within {seconds} s (--timeout, the whole wait for one request including retries)"
    )]
    TimedOut {
        /// HTTP method.
        method: String,
        /// The URLs that did not answer in time (without credentials).
        urls: String,
        /// The timeout.
        seconds: f64,
    },
    /// Wrong user name or password.
    #[error(
        "RabbitMQ refused the credentials of user `{user}` (check --user/--password or WARREN_USER/WARREN_PASSWORD)"
    )]
    BadCredentials {
        /// The user.
        user: String,
    },
    /// The password is right, but the user has no tag that opens the management API
    /// (RabbitMQ answers 401 "Not management user", as it does to a wrong password).
    #[error(
        "RabbitMQ accepted the password of user `{user}` but answered \"{reason}\": the user has no tag that opens the management API. {NEEDED_TAG} (rabbitmqctl set_user_tags {user} administrator)"
    )]
    NotManagementUser {
        /// The user.
        user: String,
        /// The broker's reason.
        reason: RedactedText,
    },
    /// The user may not do this.
    #[error("user `{user}` is not allowed to {request} ({reason}){}", tag_hint(user, *tag))]
    Forbidden {
        /// The user.
        user: String,
        /// HTTP method and API path.
        request: String,
        /// The broker's reason.
        reason: RedactedText,
        /// The tag the request takes, when the reason says (see [`missing_tag`]).
        tag: Option<Tag>,
    },
    /// The broker rejected a request.
    #[error("{method} {path} failed: {status} {reason}")]
    Api {
        /// HTTP method.
        method: String,
        /// API path.
        path: String,
        /// HTTP status.
        status: u16,
        /// The broker's reason.
        reason: RedactedText,
    },
    /// The client could not be set up (bad CA file, …).
    #[error("{0}")]
    Setup(RedactedText),
    /// Something other than the management API answered (a proxy's login page, a web
    /// server at the wrong port): a success that is not JSON, or a first answer without
    /// the shape of RabbitMQ's. Reading it as "no objects" would make a plan create or
    /// delete everything.
    #[error(
        "{method} {url} answered {status} with {what}, which is not RabbitMQ's management API: check that --url is the management API (usually port 15672), with no proxy or login page in front of it"
    )]
    NotManagementApi {
        /// HTTP method.
        method: String,
        /// The URL (without credentials).
        url: String,
        /// HTTP status.
        status: u16,
        /// The answer's content type, and its `Server` header when it has one
        /// (`text/html (Server: nginx)`).
        what: RedactedText,
    },
    /// A spec's ownership record does not read as one.
    #[error(transparent)]
    DamagedRecord(#[from] DamagedRecord),
    /// Another apply holds a lock this one needs.
    #[error(
        "{what} is locked by another apply: {holder}. Wait for it (--lock-timeout 5m waits up to 5 minutes), or if that apply is stuck, `warren unlock SPEC --holder {holder_id}` closes its connection"
    )]
    Locked {
        /// What is locked, in words (`spec \`shop\``, `vhost \`orders\``).
        what: String,
        /// Who holds it, described for people.
        holder: String,
        /// The holder as `warren unlock --holder` takes it.
        holder_id: String,
    },
    /// The lock connection failed while the locks were being taken (the process was
    /// frozen longer than the heartbeat, the broker went away).
    #[error("the lock connection failed while the locks were being taken ({reason}); try again")]
    LockInterrupted {
        /// What went wrong.
        reason: RedactedText,
    },
    /// The apply lock could not be taken: it needs the broker's AMQP port.
    #[error(
        "cannot take the apply lock at {url}: {reason}. warren holds its locks as exclusive queues in vhost `{vhost}` over AMQP, so the broker frees them the moment an apply dies; give --amqp-url when the AMQP port is not the one the broker reports, and grant the user configure permission on `{vhost}`"
    )]
    LockUnavailable {
        /// The AMQP URL (without credentials).
        url: String,
        /// The lock vhost.
        vhost: String,
        /// What went wrong.
        reason: RedactedText,
    },
    /// An answer that is not the JSON expected.
    #[error("unexpected answer to GET {path}: {reason}")]
    Decode {
        /// API path.
        path: String,
        /// What was wrong.
        reason: RedactedText,
    },
}

impl BrokerError {
    /// Whether the broker could not be reached at all (no node answered, or not in
    /// time): the failure of a broker that is down, not of a request.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            BrokerError::Unreachable { .. } | BrokerError::TimedOut { .. }
        )
    }

    /// Whether this failure, or the refusal under it, is a write that was not sent
    /// because the locks were lost ([`BrokerError::LocksLost`]).
    pub fn is_locks_lost(&self) -> bool {
        match self {
            BrokerError::LocksLost { .. } => true,
            BrokerError::BindingsNotRestored { refusal, .. } => refusal.is_locks_lost(),
            _ => false,
        }
    }
}

/// What `plan`, `apply` and `import` need, said wherever a refusal names a tag: they
/// read users, permissions and topic permissions, which RabbitMQ shows only to
/// administrators (README, "The broker login warren needs"; docs/plan-format.md,
/// "Connecting to a broker").
const NEEDED_TAG: &str = "warren's plan, apply and import need the `administrator` tag";

/// A user tag of RabbitMQ's management API that a refused request takes (a byte, so
/// that [`BrokerError`] stays small).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// Any tag that opens the management API.
    Management,
    /// `monitoring`, or `administrator`.
    Monitoring,
    /// `policymaker`, or `administrator`.
    Policymaker,
    /// `administrator` alone.
    Administrator,
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tag::Management => "`management` tag (or `monitoring`, `policymaker`, `administrator`)",
            Tag::Monitoring => "`monitoring` tag (or `administrator`)",
            Tag::Policymaker => "`policymaker` tag (or `administrator`)",
            Tag::Administrator => "`administrator` tag",
        })
    }
}

/// The tag a refused request takes, from RabbitMQ's reason (3.10 and 4.0 say the
/// same): "Not administrator user", "Not management user", "Not monitor user", and
/// "User not authorised to access object" for the parameters only policymakers and
/// administrators see (other paths answer that to a user without permissions on a
/// vhost, so only these are read as a missing tag).
pub(super) fn missing_tag(status: StatusCode, path: &str, reason: &str) -> Option<Tag> {
    if status != StatusCode::UNAUTHORIZED {
        return None;
    }
    match reason {
        "Not administrator user" => Some(Tag::Administrator),
        "Not management user" => Some(Tag::Management),
        "Not monitor user" => Some(Tag::Monitoring),
        "User not authorised to access object"
            if path.starts_with("/api/global-parameters")
                || path.starts_with("/api/parameters") =>
        {
            Some(Tag::Policymaker)
        }
        _ => None,
    }
}

/// What to do when the AMQP connection for the emptiness checks fails.
fn amqp_hint(denied_vhost: Option<&str>) -> String {
    match denied_vhost {
        Some(vhost) => format!(
            "the user needs permissions on vhost `{vhost}`: rabbitmqctl set_permissions -p {vhost} USER '.*' '.*' '.*'"
        ),
        None => "give --amqp-url".into(),
    }
}

/// The end of a [`BrokerError::Forbidden`] message that names the missing tag.
fn tag_hint(user: &str, tag: Option<Tag>) -> String {
    match tag {
        Some(tag) => format!(
            ": this request takes the {tag}. {NEEDED_TAG} (rabbitmqctl set_user_tags {user} administrator)"
        ),
        None => String::new(),
    }
}

/// The broker's reason in an error answer (its JSON `reason`, else the first 200
/// characters of the answer), with credentials hidden.
pub(super) fn reason_of(text: &str) -> RedactedText {
    let reason = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v["reason"].as_str().map(str::to_string))
        .unwrap_or_else(|| text.chars().take(200).collect());
    RedactedText::new(&reason)
}
