//! A TCP proxy in front of a node's AMQP port that never passes on the broker's
//! close-ok, for connections (`connection.close-ok`) and channels
//! (`channel.close-ok`): the broker that does not answer a close, which warren must
//! not wait on forever. Everything else goes through unchanged.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// AMQP 0-9-1 method frames (frame type 1) the proxy drops, as (class, method).
const SWALLOWED: [(u16, u16); 2] = [(10, 51), (20, 41)];

/// The proxy: listening until dropped.
pub struct CloseSwallowingProxy {
    port: u16,
    stop: Arc<AtomicBool>,
    swallowed: Arc<AtomicUsize>,
}

impl CloseSwallowingProxy {
    /// A proxy to `127.0.0.1:amqp_port`, on a free port of its own.
    pub fn start(amqp_port: u16) -> CloseSwallowingProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let swallowed = Arc::new(AtomicUsize::new(0));
        let (stopping, counting) = (stop.clone(), swallowed.clone());
        thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let counting = counting.clone();
                        thread::spawn(move || relay(client, amqp_port, counting));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        CloseSwallowingProxy {
            port,
            stop,
            swallowed,
        }
    }

    /// `amqp://127.0.0.1:PORT/`, the proxy, for `--amqp-url` (whose login is `--user`'s).
    pub fn url(&self) -> String {
        format!("amqp://127.0.0.1:{}/", self.port)
    }

    /// How many close-oks the proxy has kept from its clients.
    pub fn swallowed(&self) -> usize {
        self.swallowed.load(Ordering::Relaxed)
    }
}

impl Drop for CloseSwallowingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Carries one client's connection: its bytes to the broker as they come, the
/// broker's frame by frame, without the close-oks.
fn relay(client: TcpStream, amqp_port: u16, swallowed: Arc<AtomicUsize>) {
    let Ok(broker) = TcpStream::connect((Ipv4Addr::LOCALHOST, amqp_port)) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (mut from_client, mut to_broker) =
        (client.try_clone().unwrap(), broker.try_clone().unwrap());
    thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_broker);
        let _ = to_broker.shutdown(Shutdown::Write);
    });
    let (mut from_broker, mut to_client) = (broker, client);
    let _ = frames(&mut from_broker, &mut to_client, &swallowed);
    let _ = to_client.shutdown(Shutdown::Both);
}

/// Passes on the broker's frames (type, channel, size, payload, frame end), keeping
/// back the method frames in [`SWALLOWED`].
fn frames(
    from: &mut TcpStream,
    to: &mut TcpStream,
    swallowed: &AtomicUsize,
) -> std::io::Result<()> {
    loop {
        let mut header = [0u8; 7];
        from.read_exact(&mut header)?;
        let size = u32::from_be_bytes(header[3..7].try_into().unwrap()) as usize;
        let mut rest = vec![0u8; size + 1];
        from.read_exact(&mut rest)?;
        if header[0] == 1 && size >= 4 {
            let class = u16::from_be_bytes([rest[0], rest[1]]);
            let method = u16::from_be_bytes([rest[2], rest[3]]);
            if SWALLOWED.contains(&(class, method)) {
                swallowed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        }
        to.write_all(&header)?;
        to.write_all(&rest)?;
    }
}
