//! Why a request never got an HTTP answer, in words a new user can act on.
//!
//! reqwest reports a refused connection, a name that does not resolve, an HTTPS URL
//! against a plain HTTP port and the AMQP port alike as "error sending request" (the
//! first three even as "connect" errors). The cause is in the error's `source()`
//! chain (an `io::Error`, hyper-util's `dns error`, a rustls error), and where the chain
//! only says the answer was not HTTP, one more look at the port tells what speaks
//! there ([`what_answers`]). Errors that no retry can heal are [`Failure::Permanent`],
//! so the user gets them at once rather than after `--timeout`.

use std::error::Error as _;
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{BrokerError, without_credentials};

/// How long the look at a port that did not answer HTTP may take.
const PROBE_WAIT: Duration = Duration::from_secs(2);

/// What to do about a certificate rustls does not accept (an unknown issuer, another
/// host name, a CA certificate used as the server's own).
const UNTRUSTED: &str = "the broker's certificate was not accepted: give the CA that signed it with --ca-cert FILE or WARREN_CA_CERT, and check that the certificate names the host of --url";
/// What to do about another TLS failure.
const OTHER_TLS: &str = "check that the port serves HTTPS, and --ca-cert";
/// What to do when the server does not speak TLS, nor HTTP or AMQP either.
const NOT_TLS: &str = "the server at that port does not speak TLS; check the port and the scheme";

/// What a failed request means for the retry loop.
pub(super) enum Failure {
    /// No answer within the time left.
    TimedOut,
    /// Nothing listens (or a firewall refuses): the node may be starting or down, and
    /// another node of the cluster may answer.
    Refused(String),
    /// Something that may pass (a connection reset, a closed connection): worth
    /// another attempt at the same node.
    Transient(String),
    /// What no retry changes: the name does not resolve, the port speaks another
    /// protocol, the certificate is not trusted.
    Permanent(BrokerError),
}

/// Classifies a transport error of a request to `url`, a path on the node `base` (the
/// URL as the user gave it, which the messages name); a look at the port takes at
/// most `wait`.
pub(super) async fn classify(
    err: &reqwest::Error,
    base: &Url,
    url: &Url,
    wait: Duration,
) -> Failure {
    let wait = wait.min(PROBE_WAIT);
    if err.is_timeout() {
        return Failure::TimedOut;
    }
    let shown = without_credentials(base);
    if let Some(reason) = dns_failure(err) {
        return Failure::Permanent(BrokerError::UnknownHost {
            host: url.host_str().unwrap_or_default().to_string(),
            url: shown,
            reason: reason.into(),
        });
    }
    if let Some(tls) = tls_error(err) {
        return match tls {
            rustls::Error::InvalidCertificate(_) => Failure::Permanent(BrokerError::Tls {
                url: shown,
                reason: tls.to_string().into(),
                hint: UNTRUSTED,
            }),
            // The bytes that came back were not TLS at all.
            rustls::Error::InvalidMessage(_) => {
                not_tls(base, url, shown, tls.to_string(), wait).await
            }
            other => Failure::Permanent(BrokerError::Tls {
                url: shown,
                reason: other.to_string().into(),
                hint: OTHER_TLS,
            }),
        };
    }
    if url.scheme() == "https" && handshake_cut_short(err) {
        return not_tls(
            base,
            url,
            shown,
            "the server closed the connection".into(),
            wait,
        )
        .await;
    }
    if connection_refused(err) {
        return Failure::Refused(refused_text(url));
    }
    if err.is_connect() {
        return Failure::Refused(format!("cannot connect ({})", chain(err)));
    }
    // An answer that is not HTTP (hyper: "invalid HTTP version parsed"), or a
    // connection that closed or reset before the answer: look at what speaks there.
    match what_answers(url, wait).await {
        Speaks::Amqp(header) => Failure::Permanent(amqp_port(base, shown, header)),
        Speaks::Tls if url.scheme() == "http" => Failure::Permanent(BrokerError::WrongScheme {
            failed: "HTTP request to",
            url: shown,
            speaks: "HTTPS (TLS), not plain HTTP".into(),
            suggestion: with_scheme(base, "https"),
        }),
        // Closed without a byte: what some TLS servers do with a plain request. Still
        // worth a retry (a node that is restarting does the same), with the hint.
        Speaks::Nothing if url.scheme() == "http" => Failure::Transient(format!(
            "{}; the server closed the connection without answering (if that port serves HTTPS, use {})",
            chain(err),
            with_scheme(base, "https")
        )),
        _ => Failure::Transient(chain(err)),
    }
}

/// A TLS handshake that failed because the server does not speak TLS: tell what it
/// speaks instead when that is HTTP or AMQP.
async fn not_tls(base: &Url, url: &Url, shown: String, reason: String, wait: Duration) -> Failure {
    match what_answers(url, wait).await {
        Speaks::Amqp(header) => Failure::Permanent(amqp_port(base, shown, header)),
        Speaks::Http => Failure::Permanent(BrokerError::WrongScheme {
            failed: "TLS handshake with",
            url: shown,
            speaks: "plain HTTP, not HTTPS".into(),
            suggestion: with_scheme(base, "http"),
        }),
        _ => Failure::Permanent(BrokerError::Tls {
            url: shown,
            reason: reason.into(),
            hint: NOT_TLS,
        }),
    }
}

fn amqp_port(url: &Url, shown: String, header: String) -> BrokerError {
    let mut suggestion = url.clone();
    let _ = suggestion.set_port(Some(15672));
    let _ = suggestion.set_scheme("http");
    BrokerError::AmqpPort {
        url: shown,
        header: header.into(),
        suggestion: without_credentials(&suggestion),
    }
}

/// The URL with another scheme, as it may be printed.
fn with_scheme(url: &Url, scheme: &str) -> String {
    let text = without_credentials(url);
    match text.split_once("://") {
        Some((_, rest)) => format!("{scheme}://{rest}"),
        None => text,
    }
}

fn refused_text(url: &Url) -> String {
    let host = url.host_str().unwrap_or("the host");
    match url.port_or_known_default() {
        Some(port) => format!(
            "connection refused: nothing listens on port {port} of {host} (is RabbitMQ running there, with the management plugin enabled? `rabbitmq-plugins enable rabbitmq_management`)"
        ),
        None => "connection refused".into(),
    }
}

/// Every error of the chain, outermost first; an `io::Error` also yields the error
/// it wraps, which its own `source()` skips.
fn causes<'a>(err: &'a reqwest::Error) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut found: Vec<&(dyn std::error::Error + 'static)> = Vec::new();
    let mut next = err.source();
    while let Some(cause) = next {
        found.push(cause);
        next = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => cause.source(),
        };
    }
    found
}

/// The resolver's words, when the host name did not resolve. hyper-util wraps every
/// resolver failure in a `ConnectError` that displays as `dns error`.
fn dns_failure(err: &reqwest::Error) -> Option<String> {
    let causes = causes(err);
    let at = causes.iter().position(|c| c.to_string() == "dns error")?;
    Some(
        causes
            .get(at + 1..)
            .and_then(|rest| rest.last())
            .map_or_else(|| "dns error".to_string(), |c| c.to_string()),
    )
}

fn tls_error(err: &reqwest::Error) -> Option<&rustls::Error> {
    causes(err)
        .into_iter()
        .find_map(|cause| cause.downcast_ref::<rustls::Error>())
}

/// tokio-rustls's "tls handshake eof": the server closed the connection in the middle
/// of the handshake (what a server that does not speak TLS may do).
fn handshake_cut_short(err: &reqwest::Error) -> bool {
    causes(err).iter().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
    })
}

fn connection_refused(err: &reqwest::Error) -> bool {
    causes(err).iter().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// The error and its causes on one line (reqwest's text holds the URL, which holds no
/// credentials: they go in a header).
fn chain(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    for cause in causes(err) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

/// What answers at a URL's host and port, from the first bytes it sends back to a
/// plain HTTP request.
enum Speaks {
    /// RabbitMQ's AMQP listener answers anything that is not AMQP with its protocol
    /// header (`AMQP\x00\x00\x09\x01`) and closes.
    Amqp(String),
    /// A TLS record (an alert or a handshake): the port wants HTTPS.
    Tls,
    /// An HTTP answer.
    Http,
    /// The connection closed without a byte.
    Nothing,
    /// Nothing, or something else.
    Unknown,
}

async fn what_answers(url: &Url, wait: Duration) -> Speaks {
    let Some(port) = url.port_or_known_default() else {
        return Speaks::Unknown;
    };
    // An IPv6 address comes in brackets, which a socket address does not take.
    let Some(host) = url
        .host_str()
        .map(|h| h.trim_matches(['[', ']']).to_string())
    else {
        return Speaks::Unknown;
    };
    let look = async {
        let mut stream = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .ok()?;
        stream
            .write_all(b"GET / HTTP/1.0\r\nHost: warren\r\n\r\n")
            .await
            .ok()?;
        let mut first = [0u8; 16];
        let read = stream.read(&mut first).await.ok()?;
        Some(first[..read].to_vec())
    };
    let Ok(Some(bytes)) = tokio::time::timeout(wait, look).await else {
        return Speaks::Unknown;
    };
    if bytes.is_empty() {
        Speaks::Nothing
    } else if bytes.starts_with(b"AMQP") {
        Speaks::Amqp(printable(&bytes[..bytes.len().min(8)]))
    } else if bytes.starts_with(b"HTTP/") {
        Speaks::Http
    } else if matches!(bytes.as_slice(), [0x15 | 0x16, 0x03, ..]) {
        Speaks::Tls
    } else {
        Speaks::Unknown
    }
}

/// Bytes as text, `\xNN` for what is not printable ASCII.
fn printable(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() {
                (b as char).to_string()
            } else {
                format!("\\x{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_amqp_header_prints_as_rabbitmq_documents_it() {
        assert_eq!(
            printable(b"AMQP\x00\x00\x09\x01"),
            "AMQP\\x00\\x00\\x09\\x01"
        );
    }

    #[test]
    fn another_scheme_keeps_host_port_and_path() {
        let url = Url::parse("https://h:15672/api/").unwrap();
        assert_eq!(with_scheme(&url, "http"), "http://h:15672/api/");
    }
}
