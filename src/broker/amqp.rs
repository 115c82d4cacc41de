//! Where the broker's AMQP listener is, and opening a connection to it
//! (`Client::amqp_connection`): for the emptiness checks at deletion (`guard`) and
//! the apply locks (`lock`), which the management API cannot do.

use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use lapin::{Connection, ConnectionProperties};
use reqwest::Url;

use super::{BrokerError, Client, segment};
use crate::model::redact::redact_url;

/// The AMQP listener could not be found.
pub(super) struct NoAmqp {
    /// The URL tried, or `(none)`.
    pub url: String,
    /// Why.
    pub reason: String,
}

/// Heartbeat of the connection that holds an apply's locks: a frozen holder loses them
/// after about three of these (the broker closes a connection it has heard nothing from
/// for two to three heartbeats: 12.0 s measured at 4 s). The lock's confirmation before
/// each write is timed against it (`fence::PROMPT`).
pub(super) const LOCK_HEARTBEAT_SECS: u16 = 5;

/// Heartbeat of every other AMQP connection an apply writes over (the emptiness checks
/// at deletion, a migration's). Shorter than the lock's, so that the broker closes them
/// first: a freeze long enough to lose the locks (10 s at least) has closed these
/// already (6 s at most), and a write that was queued before the freeze and leaves
/// after it meets a closed connection, which cannot write.
pub(super) const WRITER_HEARTBEAT_SECS: u16 = 2;

/// Heartbeat of a connection that only reads (the counts before an apply's first
/// write): a frozen process has nothing to lose it for, and a loaded broker can go
/// longer than the writers' two seconds without a heartbeat (seen on a 3.10 node beside
/// two CPU-bound processes: the count of 1,500 queues died half way with "no heartbeat
/// received from server for too long", and the apply with it). Thirty seconds still
/// notices a broker that went away within a minute.
pub(super) const READER_HEARTBEAT_SECS: u16 = 30;

/// What an AMQP connection is for, which decides its heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AmqpUse {
    /// It writes (deletes, moves, publishes): [`WRITER_HEARTBEAT_SECS`], so that a
    /// frozen process loses it before its locks.
    Writes,
    /// It only reads: [`READER_HEARTBEAT_SECS`].
    Reads,
}

impl AmqpUse {
    /// The heartbeat asked for, in seconds.
    pub(super) fn heartbeat_secs(self) -> u16 {
        match self {
            AmqpUse::Writes => WRITER_HEARTBEAT_SECS,
            AmqpUse::Reads => READER_HEARTBEAT_SECS,
        }
    }
}

/// How long closing an AMQP connection may wait for the broker's close-ok. A close
/// whose answer never comes would otherwise hold the command forever after its work
/// was done: the broker does not read a blocked connection (a replay publishing under
/// a memory alarm), and an apply's migration once waited 30 minutes on RabbitMQ 4.3
/// right after declaring a quorum queue, the connection already gone from the broker.
/// The socket closes with the process all the same.
pub(super) const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Waits at most `wait` (the command's `--timeout`) for the broker's answer to one
/// AMQP request, so that no request can hold a command forever. The client answers a
/// request whose connection failed with that failure, but not always: an apply frozen
/// while it took its locks, thawed after the broker had closed its connections, waited
/// on one for an hour with no socket left open (RabbitMQ 4.0, a loaded machine). An
/// unanswered request becomes an I/O error, which every caller already reads as a lost
/// connection: a request that may or may not have been done.
pub(super) async fn answered<T>(
    wait: Duration,
    request: impl std::future::Future<Output = lapin::Result<T>>,
) -> lapin::Result<T> {
    match tokio::time::timeout(wait, request).await {
        Ok(answer) => answer,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "the broker did not answer within {} s (--timeout)",
                wait.as_secs()
            ),
        )
        .into()),
    }
}

/// Closes `connection`, waiting at most [`CLOSE_WAIT`] for the broker's answer.
pub(super) async fn close(connection: &lapin::Connection, reason: &str) {
    let closing = connection.close(200, reason.into());
    let _ = tokio::time::timeout(CLOSE_WAIT, closing).await;
}

/// Why a connection closed, as its client said when it happened: kept so that a lost
/// lock can say whether this process heard nothing from the broker for too long (the
/// client closes the connection after four half-heartbeats of silence) or the broker
/// closed it (a frozen or starved process that sent no heartbeat, `warren unlock`, a
/// node stopping).
pub(super) struct CloseReason {
    /// The connection's events since it opened (a few: the client sends one per
    /// error, block or flow change). Read only when asked: the client marks a failed
    /// connection's channels closed only after it has queued the error here, so a
    /// channel seen closed finds its reason already waiting.
    events: Mutex<Pin<Box<dyn Stream<Item = lapin::Event> + Send>>>,
    /// The first error found.
    found: OnceLock<String>,
}

impl CloseReason {
    /// Starts listening to `connection`'s events. Must be called right after
    /// connecting: the client tells an error only to listeners that exist when it
    /// happens.
    pub(super) fn watch(connection: &Connection) -> CloseReason {
        CloseReason {
            events: Mutex::new(Box::pin(connection.events_listener())),
            found: OnceLock::new(),
        }
    }

    /// The first error the connection reported so far, if any.
    pub(super) fn get(&self) -> Option<&str> {
        if self.found.get().is_none() {
            let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
            while let Some(Some(event)) = events.next().now_or_never() {
                if let lapin::Event::Error(error) = event {
                    let _ = self.found.set(error.to_string());
                    break;
                }
            }
        }
        self.found.get().map(String::as_str)
    }
}

/// Closes `channel`, waiting at most [`CLOSE_WAIT`] for the broker's answer: a
/// channel's close-ok can fail to come as a connection's can.
pub(super) async fn close_channel(channel: &lapin::Channel) {
    let closing = channel.close(200, "".into());
    let _ = tokio::time::timeout(CLOSE_WAIT, closing).await;
}

/// How long an AMQP connection attempt may go unanswered before warren asks the
/// kernel, with a bare TCP connect, whether anything listens at its address. The AMQP
/// client answers a refused port at once almost always, but it connects from a thread
/// of its own, and when that thread fails the TCP connect in the instant between the
/// handshake's check for a failure and the handshake's first step, the attempt waits
/// forever (seen under load: an apply waited out its whole `--timeout` of 60 s on a
/// port nothing listened on). A refused TCP connect is the kernel's own answer,
/// immediate on any load, so the check costs one connect and only on attempts that
/// are already slow.
const ASK_THE_KERNEL_AFTER: Duration = Duration::from_secs(2);

/// Why an AMQP connection could not be opened.
pub(super) enum ConnectFailure {
    /// Nothing listens at the address: every address the host has refused a TCP
    /// connection. Never worth trying again.
    NothingListens(String),
    /// The broker or the network failed the attempt (a vhost still starting, a
    /// refused login, a reset): the client's error.
    Failed(lapin::Error),
    /// No answer before the deadline.
    NoAnswer,
}

impl ConnectFailure {
    /// What went wrong, for an error message.
    pub(super) fn reason(&self, timeout: Duration) -> String {
        match self {
            ConnectFailure::NothingListens(reason) => reason.clone(),
            ConnectFailure::Failed(error) => error.to_string(),
            ConnectFailure::NoAnswer => format!("no answer within {} s", timeout.as_secs()),
        }
    }
}

/// Opens an AMQP connection at `url` (with its login), answering by `deadline`. A
/// port nothing listens on is said so as soon as the kernel says it (see
/// [`ASK_THE_KERNEL_AFTER`]), never after the deadline.
pub(super) async fn connect(
    url: &Url,
    properties: lapin::ConnectionProperties,
    deadline: tokio::time::Instant,
) -> Result<lapin::Connection, ConnectFailure> {
    let attempt = tokio::time::timeout_at(
        deadline,
        lapin::Connection::connect(url.as_str(), properties),
    );
    tokio::pin!(attempt);
    let settled = tokio::select! {
        settled = &mut attempt => Some(settled),
        () = tokio::time::sleep(ASK_THE_KERNEL_AFTER) => None,
    };
    let settled = match settled {
        Some(settled) => settled,
        None => match nothing_listens(url, deadline).await {
            Some(reason) => return Err(ConnectFailure::NothingListens(reason)),
            None => attempt.await,
        },
    };
    match settled {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(error)) if tcp_refused(&error) => Err(ConnectFailure::NothingListens(refused(url))),
        Ok(Err(error)) => Err(ConnectFailure::Failed(error)),
        Err(_) => Err(ConnectFailure::NoAnswer),
    }
}

/// Whether `error` is a TCP connection refused: nothing listens at the address.
fn tcp_refused(error: &lapin::Error) -> bool {
    matches!(error.kind(), lapin::ErrorKind::IOError(io) if io.kind() == std::io::ErrorKind::ConnectionRefused)
}

/// `Some(why)` when every address of `url`'s host refuses a TCP connection on its port;
/// `None` when one accepts, or when the kernel's answer is anything else (the AMQP
/// attempt then answers for itself).
async fn nothing_listens(url: &Url, deadline: tokio::time::Instant) -> Option<String> {
    let (host, port) = host_and_port(url)?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<std::net::SocketAddr> = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => vec![std::net::SocketAddr::new(ip, port)],
        Err(_) => {
            let found = tokio::time::timeout_at(deadline, tokio::net::lookup_host((bare, port)));
            found.await.ok()?.ok()?.collect()
        }
    };
    if addresses.is_empty() {
        return None;
    }
    for address in &addresses {
        let connect = tokio::net::TcpStream::connect(address);
        match tokio::time::timeout_at(deadline, connect).await {
            Ok(Err(error)) if error.kind() == std::io::ErrorKind::ConnectionRefused => {}
            _ => return None,
        }
    }
    Some(refused(url))
}

/// The host and port an AMQP URL names (5672, or 5671 for `amqps`, when it names none).
fn host_and_port(url: &Url) -> Option<(&str, u16)> {
    let default_port = if url.scheme() == "amqps" { 5671 } else { 5672 };
    Some((url.host_str()?, url.port().unwrap_or(default_port)))
}

/// What a refused connection means, in the words warren uses for the management API's.
fn refused(url: &Url) -> String {
    match host_and_port(url) {
        Some((host, port)) => {
            format!("connection refused: nothing listens on port {port} of {host}")
        }
        None => "connection refused: nothing listens there".into(),
    }
}

/// The AMQP reply code and text of a protocol error, if it is one.
pub(super) fn reply_of(error: &lapin::Error) -> Option<(u16, String)> {
    match error.kind() {
        lapin::ErrorKind::ProtocolError(amqp) => {
            Some((amqp.get_id(), amqp.get_message().to_string()))
        }
        _ => None,
    }
}

impl Client {
    /// `url` with the `--user` credentials and `vhost`: the address of an AMQP
    /// connection warren opens (never printed; print `url` redacted).
    pub(super) fn amqp_login(&self, url: &Url, vhost: &str) -> Url {
        let mut with_login = url.clone();
        let _ = with_login.set_username(&segment(&self.endpoint.user));
        let _ = with_login.set_password(Some(&segment(&self.endpoint.password)));
        with_login.set_path(&format!("/{}", segment(vhost)));
        with_login
    }

    /// `--amqp-url` when given, else the AMQP listener the management API reports for
    /// the node that answers, on the host of the management URL. A node that has just
    /// started reports its listeners a moment after its API answers: asked again until
    /// `--timeout`.
    pub(super) async fn amqp_url(&self) -> Result<Url, NoAmqp> {
        if let Some(url) = &self.endpoint.amqp_url {
            return Ok(url.clone());
        }
        let deadline = tokio::time::Instant::now() + self.endpoint.timeout;
        let path = "/api/overview?columns=node,listeners";
        loop {
            let overview = self
                .get(path)
                .await
                .map_err(|error| NoAmqp {
                    url: "(none)".into(),
                    reason: error.to_string(),
                })?
                .unwrap_or_default();
            let node = overview["node"].as_str().unwrap_or_default();
            let port = overview["listeners"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|l| l["protocol"] == "amqp")
                .find(|l| node.is_empty() || l["node"] == node)
                .and_then(|l| l["port"].as_u64());
            if let Some(port) = port {
                let base =
                    &self.endpoint.urls[self.current.load(std::sync::atomic::Ordering::Relaxed)];
                let host = base.host_str().unwrap_or("localhost");
                let text = format!("amqp://{host}:{port}/");
                return Url::parse(&text).map_err(|err| NoAmqp {
                    url: text,
                    reason: err.to_string(),
                });
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(NoAmqp {
                    url: "(none)".into(),
                    reason: format!("the broker reports no plain AMQP listener for node `{node}`"),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// An AMQP connection to `vhost`: at `--amqp-url` when given, else at the AMQP
    /// listener the management API reports, on the host of the management URL. `name`
    /// is what the broker's connection list shows for it (`warren replay`, …).
    pub(super) async fn amqp_connection(
        &self,
        vhost: &str,
        name: &str,
        used: AmqpUse,
    ) -> Result<Connection, BrokerError> {
        let url = self
            .amqp_url()
            .await
            .map_err(|NoAmqp { url, reason }| BrokerError::Amqp {
                url,
                reason: reason.into(),
                denied_vhost: None,
            })?;
        let shown = redact_url(url.as_str());
        let mut with_login = self.amqp_login(&url, vhost);
        // A frozen process loses a writing connection before it loses its locks (see
        // `fence`); one that only reads is given the time a loaded broker needs.
        let heartbeat = format!("heartbeat={}", used.heartbeat_secs());
        with_login.set_query(Some(&heartbeat));
        let properties = ConnectionProperties::default().with_connection_name(name.into());
        let deadline = tokio::time::Instant::now() + self.endpoint.timeout;
        match connect(&with_login, properties, deadline).await {
            Ok(connection) => Ok(connection),
            Err(failure) => {
                let reason = failure.reason(self.endpoint.timeout);
                // RabbitMQ: "NOT_ALLOWED - access to vhost 'v' refused for user 'u'".
                let denied = matches!(failure, ConnectFailure::Failed(_))
                    && reason.contains("access to vhost");
                Err(BrokerError::Amqp {
                    url: shown,
                    reason: reason.into(),
                    denied_vhost: denied.then(|| vhost.to_string()),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port of this machine that nothing listens on: bound, then closed.
    fn closed_port() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }

    fn deadline() -> tokio::time::Instant {
        tokio::time::Instant::now() + Duration::from_secs(30)
    }

    #[tokio::test]
    async fn the_kernel_says_when_nothing_listens_and_when_something_does() {
        let closed = Url::parse(&format!("amqp://127.0.0.1:{}/", closed_port())).unwrap();
        let reason = nothing_listens(&closed, deadline()).await;
        assert_eq!(reason, Some(refused(&closed)));
        assert!(
            reason
                .unwrap()
                .starts_with("connection refused: nothing listens on port")
        );

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Url::parse(&format!("amqp://guest:guest@127.0.0.1:{port}/")).unwrap();
        assert_eq!(nothing_listens(&open, deadline()).await, None);
        let bracketed = Url::parse(&format!("amqp://[::1]:{}/", closed_port()));
        if let Ok(url) = bracketed
            && std::net::TcpListener::bind("[::1]:0").is_ok()
        {
            assert!(nothing_listens(&url, deadline()).await.is_some());
        }
    }

    #[tokio::test]
    async fn a_refused_amqp_port_is_a_failure_that_names_it() {
        let port = closed_port();
        let url = Url::parse(&format!("amqp://guest:guest@127.0.0.1:{port}/")).unwrap();
        let failure = connect(&url, lapin::ConnectionProperties::default(), deadline())
            .await
            .expect_err("nothing listens");
        assert!(
            matches!(&failure, ConnectFailure::NothingListens(reason) if reason.contains(&format!("port {port} of 127.0.0.1"))),
            "{}",
            failure.reason(Duration::from_secs(30))
        );
    }

    #[test]
    fn the_default_port_follows_the_scheme() {
        let plain = Url::parse("amqp://host/").unwrap();
        let tls = Url::parse("amqps://host/").unwrap();
        assert_eq!(host_and_port(&plain), Some(("host", 5672)));
        assert_eq!(host_and_port(&tls), Some(("host", 5671)));
    }
}
