//! Where the broker's AMQP listener is: for the emptiness checks at deletion
//! (`guard`) and the apply locks (`lock`), which the management API cannot do.

use std::time::Duration;

use reqwest::Url;

use super::{Client, segment};

/// The AMQP listener could not be found.
pub(super) struct NoAmqp {
    /// The URL tried, or `(none)`.
    pub url: String,
    /// Why.
    pub reason: String,
}

/// How long closing an AMQP connection may wait for the broker's close-ok. A close
/// whose answer never comes would otherwise hold the command forever after its work
/// was done: the broker does not read a blocked connection (a replay publishing under
/// a memory alarm), and an apply's migration once waited 30 minutes on RabbitMQ 4.3
/// right after declaring a quorum queue, the connection already gone from the broker.
/// The socket closes with the process all the same.
pub(super) const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Closes `connection`, waiting at most [`CLOSE_WAIT`] for the broker's answer.
pub(super) async fn close(connection: &lapin::Connection, reason: &str) {
    let closing = connection.close(200, reason.into());
    let _ = tokio::time::timeout(CLOSE_WAIT, closing).await;
}

/// Closes `channel`, waiting at most [`CLOSE_WAIT`] for the broker's answer: a
/// channel's close-ok can fail to come as a connection's can.
pub(super) async fn close_channel(channel: &lapin::Channel) {
    let closing = channel.close(200, "".into());
    let _ = tokio::time::timeout(CLOSE_WAIT, closing).await;
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
}
