//! A TCP proxy in front of a node's AMQP port that passes the client's bytes on
//! unchanged and the broker's frame by frame, through one of four faults:
//!
//! - [`AmqpProxy::swallowing_closes`] never passes on the broker's close-ok, for
//!   connections (`connection.close-ok`) and channels (`channel.close-ok`): the broker
//!   that does not answer a close, which warren must not wait on forever;
//! - [`AmqpProxy::muting_after_deletes`] goes silent on the first connection that has
//!   passed a number of `queue.delete-ok`s: from then on nothing of the broker's
//!   reaches that client, heartbeats included, while the client's requests still reach
//!   the broker. The broker that misses its heartbeats, and the answer to a delete
//!   that was done and never heard of;
//! - [`AmqpProxy::swallowing_declare_oks`] never passes on a `queue.declare-ok`, and
//!   everything else (heartbeats included): the broker that is alive and never answers
//!   one request, as a declare held up by a partition or a metadata store without its
//!   quorum;
//! - [`AmqpProxy::swallowing_confirms`] never passes on a publisher confirm
//!   (`basic.ack` or `basic.nack` from the broker), and everything else: the broker
//!   that takes a publish and never says so.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// AMQP 0-9-1 method frames (frame type 1), as (class, method).
const CONNECTION_CLOSE_OK: (u16, u16) = (10, 51);
const CHANNEL_CLOSE_OK: (u16, u16) = (20, 41);
const QUEUE_DELETE_OK: (u16, u16) = (50, 41);
const QUEUE_DECLARE_OK: (u16, u16) = (50, 11);
/// From the broker, these two are only ever publisher confirms.
const BASIC_ACK: (u16, u16) = (60, 80);
const BASIC_NACK: (u16, u16) = (60, 120);

/// What the proxy does to the broker's frames.
#[derive(Debug, Clone, Copy)]
enum Fault {
    SwallowCloses,
    SwallowDeclareOks,
    SwallowConfirms,
    MuteAfterDeletes(usize),
}

/// The proxy: listening until dropped.
pub struct AmqpProxy {
    port: u16,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
}

/// What the proxy has done so far.
#[derive(Default)]
struct Counts {
    /// Close-oks (or declare-oks, or confirms) kept back.
    swallowed: AtomicUsize,
    /// Connections gone silent (one at most).
    muted: AtomicUsize,
}

impl AmqpProxy {
    /// A proxy to `127.0.0.1:amqp_port` that keeps back every close-ok.
    pub fn swallowing_closes(amqp_port: u16) -> AmqpProxy {
        AmqpProxy::start(amqp_port, Fault::SwallowCloses)
    }

    /// A proxy to `127.0.0.1:amqp_port` that keeps back every `queue.declare-ok`.
    pub fn swallowing_declare_oks(amqp_port: u16) -> AmqpProxy {
        AmqpProxy::start(amqp_port, Fault::SwallowDeclareOks)
    }

    /// A proxy to `127.0.0.1:amqp_port` that keeps back every publisher confirm.
    pub fn swallowing_confirms(amqp_port: u16) -> AmqpProxy {
        AmqpProxy::start(amqp_port, Fault::SwallowConfirms)
    }

    /// A proxy to `127.0.0.1:amqp_port` that passes nothing more from the broker on the
    /// first connection to have passed `deletes` `queue.delete-ok`s.
    pub fn muting_after_deletes(amqp_port: u16, deletes: usize) -> AmqpProxy {
        AmqpProxy::start(amqp_port, Fault::MuteAfterDeletes(deletes))
    }

    fn start(amqp_port: u16, fault: Fault) -> AmqpProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let (stopping, counting) = (stop.clone(), counts.clone());
        thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let counting = counting.clone();
                        thread::spawn(move || relay(client, amqp_port, fault, &counting));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        AmqpProxy { port, stop, counts }
    }

    /// `amqp://127.0.0.1:PORT/`, the proxy, for `--amqp-url` (whose login is `--user`'s).
    pub fn url(&self) -> String {
        format!("amqp://127.0.0.1:{}/", self.port)
    }

    /// How many close-oks (or declare-oks, or confirms) the proxy has kept from its
    /// clients.
    pub fn swallowed(&self) -> usize {
        self.counts.swallowed.load(Ordering::Relaxed)
    }

    /// How many connections the proxy has gone silent on.
    pub fn muted(&self) -> usize {
        self.counts.muted.load(Ordering::Relaxed)
    }
}

impl Drop for AmqpProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Carries one client's connection: its bytes to the broker as they come, the
/// broker's frame by frame, through `fault`.
fn relay(client: TcpStream, amqp_port: u16, fault: Fault, counts: &Counts) {
    let Ok(broker) = TcpStream::connect((Ipv4Addr::LOCALHOST, amqp_port)) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (mut from_client, mut to_broker) =
        (client.try_clone().unwrap(), broker.try_clone().unwrap());
    thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_broker);
        let _ = to_broker.shutdown(Shutdown::Both);
    });
    let (mut from_broker, mut to_client) = (broker, client);
    // A muted connection ends when its client gives up on it: the broker then closes
    // the socket the client's side shut.
    let _ = frames(&mut from_broker, &mut to_client, fault, counts);
    let _ = to_client.shutdown(Shutdown::Both);
}

/// Passes on the broker's frames (type, channel, size, payload, frame end) through
/// `fault`, until either side closes.
fn frames(
    from: &mut TcpStream,
    to: &mut TcpStream,
    fault: Fault,
    counts: &Counts,
) -> std::io::Result<()> {
    let mut deletes = 0;
    let mut muted = false;
    loop {
        let mut header = [0u8; 7];
        from.read_exact(&mut header)?;
        let size = u32::from_be_bytes(header[3..7].try_into().unwrap()) as usize;
        let mut rest = vec![0u8; size + 1];
        from.read_exact(&mut rest)?;
        if muted {
            continue;
        }
        let method = (header[0] == 1 && size >= 4).then(|| {
            (
                u16::from_be_bytes([rest[0], rest[1]]),
                u16::from_be_bytes([rest[2], rest[3]]),
            )
        });
        match fault {
            Fault::SwallowCloses
                if method == Some(CONNECTION_CLOSE_OK) || method == Some(CHANNEL_CLOSE_OK) =>
            {
                counts.swallowed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Fault::SwallowDeclareOks if method == Some(QUEUE_DECLARE_OK) => {
                counts.swallowed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Fault::SwallowConfirms if method == Some(BASIC_ACK) || method == Some(BASIC_NACK) => {
                counts.swallowed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Fault::MuteAfterDeletes(after) if method == Some(QUEUE_DELETE_OK) => {
                if deletes == after
                    && counts
                        .muted
                        .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                {
                    muted = true;
                    continue;
                }
                deletes += 1;
            }
            _ => {}
        }
        to.write_all(&header)?;
        to.write_all(&rest)?;
    }
}
