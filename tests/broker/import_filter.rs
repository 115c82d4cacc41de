//! A proxy in front of a node's management port that takes one queue, and the bindings
//! into it, out of every definitions import (`POST /api/definitions`) before the broker
//! reads it; every other request and every answer pass unchanged.
//!
//! The broker answers such an import with 204, as it does when it drops the queue
//! itself: its import looks at what a declaration throws, not at what it returns, and a
//! quorum queue whose Raft members did not start in time (a loaded node) is declared as
//! an error value and deleted again, its bindings finding no queue. Here that happens on
//! every run instead of under load only.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::Value;

/// The proxy: listening until dropped.
pub struct ImportFilter {
    port: u16,
    stop: Arc<AtomicBool>,
    /// How many imports the queue was taken out of.
    taken: Arc<AtomicUsize>,
}

impl ImportFilter {
    /// A proxy to `127.0.0.1:upstream`, on a free port of its own, taking `queue` out of
    /// every definitions import.
    pub fn start(upstream: u16, queue: &str) -> ImportFilter {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the filter");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(AtomicUsize::new(0));
        let (stopping, counted, queue) = (stop.clone(), taken.clone(), queue.to_string());
        thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let (counted, queue) = (counted.clone(), queue.clone());
                        thread::spawn(move || relay(client, upstream, &queue, &counted));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        ImportFilter { port, stop, taken }
    }

    /// `http://127.0.0.1:PORT`, the proxy, for `--url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// How many imports the queue was taken out of.
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::SeqCst)
    }
}

impl Drop for ImportFilter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Passes one client connection's requests on, one at a time, filtering imports; the
/// answers are copied back as they come.
fn relay(client: TcpStream, upstream: u16, queue: &str, taken: &AtomicUsize) {
    let Ok(mut server) = TcpStream::connect((Ipv4Addr::LOCALHOST, upstream)) else {
        return;
    };
    let (mut answers, mut back) = (server.try_clone().unwrap(), client.try_clone().unwrap());
    thread::spawn(move || {
        let _ = std::io::copy(&mut answers, &mut back);
        let _ = back.shutdown(Shutdown::Both);
    });
    let mut requests = BufReader::new(client);
    while let Some((head, body)) = read_request(&mut requests) {
        let (head, body) = if head.starts_with("POST /api/definitions ") {
            let body = without_queue(&body, queue, taken);
            (with_length(&head, body.len()), body)
        } else {
            (head, body)
        };
        if server.write_all(head.as_bytes()).is_err() || server.write_all(&body).is_err() {
            break;
        }
    }
    let _ = server.shutdown(Shutdown::Both);
}

/// One request: its head (request line and headers, up to the blank line) and its
/// body (`Content-Length` bytes); `None` at the end of the connection.
fn read_request(requests: &mut BufReader<TcpStream>) -> Option<(String, Vec<u8>)> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if requests.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    requests.read_exact(&mut body).ok()?;
    Some((head, body))
}

/// The import without `queue` and the bindings into it.
fn without_queue(body: &[u8], queue: &str, taken: &AtomicUsize) -> Vec<u8> {
    let Ok(mut document) = serde_json::from_slice::<Value>(body) else {
        return body.to_vec();
    };
    let mut removed = false;
    if let Some(queues) = document["queues"].as_array_mut() {
        let before = queues.len();
        queues.retain(|q| q["name"] != queue);
        removed |= queues.len() < before;
    }
    if let Some(bindings) = document["bindings"].as_array_mut() {
        bindings.retain(|b| !(b["destination"] == queue && b["destination_type"] == "queue"));
    }
    if removed {
        taken.fetch_add(1, Ordering::SeqCst);
    }
    serde_json::to_vec(&document).unwrap()
}

/// `head` with its `Content-Length` set to `length`.
fn with_length(head: &str, length: usize) -> String {
    head.split_inclusive("\r\n")
        .map(|line| match line.split_once(':') {
            Some((name, _)) if name.eq_ignore_ascii_case("content-length") => {
                format!("{name}: {length}\r\n")
            }
            _ => line.to_string(),
        })
        .collect()
}
