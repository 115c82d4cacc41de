//! A TCP proxy in front of a node's management port that holds back the first request
//! whose bytes contain a given text (`PUT /api/global-parameters/warren.shop`), so that
//! a test can do something at exactly that moment (kill the node, publish a message)
//! before the broker sees the request. Everything before it goes through unchanged;
//! the held request reaches the broker only when the test releases it ([`HttpTap::release`]),
//! and never once the test cuts its connection ([`HttpTap::cut`]).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The proxy: listening until dropped.
pub struct HttpTap {
    port: u16,
    state: Arc<State>,
}

struct State {
    stop: AtomicBool,
    /// Set once a request holding the text arrived (it is held).
    tripped: AtomicBool,
    /// Set when the test lets the held request go on to the broker.
    released: AtomicBool,
    /// The held request's two connections (client and broker), to cut when the test
    /// says so.
    held: Mutex<Vec<TcpStream>>,
}

impl HttpTap {
    /// A proxy to `127.0.0.1:upstream`, on a free port of its own, holding back the
    /// first request that contains `text`.
    pub fn start(upstream: u16, text: &str) -> HttpTap {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the tap");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State {
            stop: AtomicBool::new(false),
            tripped: AtomicBool::new(false),
            released: AtomicBool::new(false),
            held: Mutex::new(Vec::new()),
        });
        let (shared, text) = (state.clone(), text.as_bytes().to_vec());
        thread::spawn(move || {
            while !shared.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let (shared, text) = (shared.clone(), text.clone());
                        thread::spawn(move || relay(client, upstream, &text, &shared));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        HttpTap { port, state }
    }

    /// `http://127.0.0.1:PORT`, the tap, for `--url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits until the request is held (`false` if `limit` passed first).
    pub fn wait_tripped(&self, limit: Duration) -> bool {
        let started = Instant::now();
        while !self.state.tripped.load(Ordering::Relaxed) {
            if started.elapsed() > limit {
                return false;
            }
            thread::sleep(Duration::from_millis(2));
        }
        true
    }

    /// Lets the held request go on to the broker, unchanged, and its connection carry
    /// on as if it had never been held.
    pub fn release(&self) {
        self.state.released.store(true, Ordering::SeqCst);
    }

    /// Cuts the connection of the held request (the client sees it reset).
    pub fn cut(&self) {
        for stream in self.state.held.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for HttpTap {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        self.cut();
    }
}

/// Carries one client's connection: the broker's bytes back as they come, the
/// client's on to the broker, except that the first read holding `text` (of any
/// connection) waits until the test releases it or cuts its connection.
fn relay(client: TcpStream, upstream: u16, text: &[u8], state: &State) {
    let Ok(broker) = TcpStream::connect((Ipv4Addr::LOCALHOST, upstream)) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (mut from_broker, mut to_client) =
        (broker.try_clone().unwrap(), client.try_clone().unwrap());
    thread::spawn(move || {
        let _ = std::io::copy(&mut from_broker, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Write);
    });
    let (mut from_client, mut to_broker) = (client, broker);
    // The tail of the previous read, so that a text split between two reads is found.
    let mut seen: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let read = match from_client.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        seen.extend_from_slice(&buffer[..read]);
        let holds = seen.windows(text.len()).any(|window| window == text);
        if holds && !state.tripped.swap(true, Ordering::SeqCst) {
            // Held: neither end hears anything until the test acts (both stay open,
            // so the client does not see a closed connection and try again at once).
            {
                let mut held = state.held.lock().unwrap();
                held.push(from_client.try_clone().unwrap());
                held.push(to_broker.try_clone().unwrap());
            }
            while !state.released.load(Ordering::SeqCst) {
                if state.stop.load(Ordering::Relaxed) || state.held.lock().unwrap().is_empty() {
                    // Cut (or the tap is gone): the request never reaches the broker.
                    return;
                }
                thread::sleep(Duration::from_millis(2));
            }
        }
        if to_broker.write_all(&buffer[..read]).is_err() {
            break;
        }
        let keep = seen.len().saturating_sub(text.len());
        seen.drain(..keep);
    }
    let _ = to_broker.shutdown(Shutdown::Write);
}
