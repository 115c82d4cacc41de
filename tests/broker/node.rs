//! Throwaway RabbitMQ nodes for integration tests.
//!
//! Three broker versions are supported, all installed by
//! `scripts/install-brokers`:
//!
//! * [`Version::V3_10`]: the host's Debian bookworm `rabbitmq-server` (3.10.x);
//! * [`Version::V4_0`]: Debian trixie's `rabbitmq-server` (4.0.x) inside a
//!   debootstrapped root (`$WARREN_RABBITMQ_4_0_ROOT`, default
//!   `$WARREN_CACHE/trixie-rootfs`, the cache being `/var/cache/warren`);
//! * [`Version::V4_3`]: Debian sid's `rabbitmq-server` (4.3.x) the same way
//!   (`$WARREN_RABBITMQ_4_3_ROOT`, default `$WARREN_CACHE/sid-rootfs`).
//!
//! A rooted broker is started through `chroot` in a mount namespace of its own
//! (see [`chroot_command`]): the root's `/proc` and `/dev` are mounted there only,
//! and vanish with the node, so nothing stays mounted on the host under the root.
//!
//! Each node gets free ports, a unique node name and its own data directory,
//! so several test binaries can run at once. Nodes never outlive the test
//! process: the broker is started with `PR_SET_PDEATHSIG = SIGKILL` from a
//! spawner thread that lives as long as the process (the signal fires when the
//! *thread* that forked the child exits, and test threads are short-lived), and
//! the start scripts `exec` all the way down to `beam.smp`, so the signal
//! lands on the VM itself. A broker that is not installed is a test failure,
//! never a skip.

use std::fmt;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support;

/// How long a node may take to answer on its management and AMQP ports: a chrooted
/// 4.x node boots in 10 to 20 s on an idle 2-core machine, and two or three times that
/// while other tests and processes take the CPU; the bound is for a node that never
/// comes up, not for a slow one.
const START_TIMEOUT: Duration = Duration::from_secs(180);
/// Attempts when a port picked as free was taken before the node bound it.
const START_ATTEMPTS: usize = 3;
const SERVER_SCRIPT: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const UNSHARE: &str = "/usr/bin/unshare";
const CHROOT: &str = "/usr/sbin/chroot";
const DEFAULT_CACHE: &str = "/var/cache/warren";
const DIR_PREFIX: &str = "warren-node-";
const INSTALL_HINT: &str = "run `sudo scripts/install-brokers` to install the test brokers";

/// An error with every cause it wraps: reqwest's own text says only "error sending
/// request", and what failed (a refused connection, a reset, a timeout) is below it.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A RabbitMQ version the tests run against, ordered oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    V3_10,
    V4_0,
    V4_3,
}

/// How many [`Version`]s there are.
const VERSIONS: usize = 3;

impl Version {
    /// Every version, oldest first.
    pub fn all() -> [Version; VERSIONS] {
        [Version::V3_10, Version::V4_0, Version::V4_3]
    }

    /// The broker's release line: `"3.10"`, `"4.0"` or `"4.3"`.
    pub fn line(self) -> &'static str {
        match self {
            Version::V3_10 => "3.10",
            Version::V4_0 => "4.0",
            Version::V4_3 => "4.3",
        }
    }

    /// The version as warren spells a broker target (`--target-version`): the
    /// broker's own line.
    pub fn target(self) -> &'static str {
        match self {
            Version::V3_10 => "3.10",
            Version::V4_0 => "4.0",
            Version::V4_3 => "4.3",
        }
    }

    fn index(self) -> usize {
        match self {
            Version::V3_10 => 0,
            Version::V4_0 => 1,
            Version::V4_3 => 2,
        }
    }

    /// The root the broker runs in: `None` for the host. The same names and
    /// defaults as `scripts/install-brokers --roots`.
    pub fn root(self) -> Option<PathBuf> {
        let (variable, default) = match self {
            Version::V3_10 => return None,
            Version::V4_0 => ("WARREN_RABBITMQ_4_0_ROOT", "trixie-rootfs"),
            Version::V4_3 => ("WARREN_RABBITMQ_4_3_ROOT", "sid-rootfs"),
        };
        Some(std::env::var_os(variable).map_or_else(
            || {
                std::env::var_os("WARREN_CACHE")
                    .map_or_else(|| PathBuf::from(DEFAULT_CACHE), PathBuf::from)
                    .join(default)
            },
            PathBuf::from,
        ))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RabbitMQ {}", self.line())
    }
}

/// How to boot a node.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Boot with `load_definitions` pointing at (a copy of) this file. A node
    /// booted this way does not create the `guest` user: set `user` and
    /// `password` to an administrator the definitions declare (see
    /// [`rabbit_password_hash`]).
    pub definitions: Option<PathBuf>,
    /// The user the [`Node`] helpers log in as (`guest` by default).
    pub user: String,
    pub password: String,
    /// Extra `rabbitmq.conf` lines (`key = value`).
    pub extra_config: Vec<String>,
    /// The Erlang cookie, for nodes that join one cluster (the same on every node).
    pub cookie: Option<String>,
    /// Plugins enabled besides `rabbitmq_management` (by default the shovel and
    /// federation plugins, whose runtime parameters and policy keys definitions use).
    pub plugins: Vec<String>,
}

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            definitions: None,
            user: "guest".into(),
            password: "guest".into(),
            extra_config: Vec::new(),
            cookie: None,
            plugins: vec!["rabbitmq_shovel".into(), "rabbitmq_federation".into()],
        }
    }
}

impl NodeOptions {
    /// Boot from `definitions`, logging in as `user`/`password`.
    pub fn with_definitions(definitions: impl Into<PathBuf>, user: &str, password: &str) -> Self {
        NodeOptions {
            definitions: Some(definitions.into()),
            user: user.into(),
            password: password.into(),
            ..NodeOptions::default()
        }
    }
}

/// What starts a node's server: the same directory and ports every time.
#[derive(Debug, Clone)]
struct Launch {
    root: Option<PathBuf>,
    guest_dir: PathBuf,
    node_name: String,
    amqp_port: u16,
    dist_port: u16,
}

impl Launch {
    fn spawn(&self, dir: &Path, version: Version) -> Result<Child, String> {
        let console = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("console.out"))
            .map_err(|e| e.to_string())?;
        let mut cmd = match &self.root {
            Some(root) => chroot_command(root, SERVER_SCRIPT),
            None => Command::new(SERVER_SCRIPT),
        };
        let g = |sub: &str| self.guest_dir.join(sub).display().to_string();
        cmd.env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .env("HOME", g("home"))
            .env("RABBITMQ_NODENAME", &self.node_name)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", self.amqp_port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("RABBITMQ_MNESIA_BASE", g("mnesia"))
            .env("RABBITMQ_LOG_BASE", g("log"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", g("enabled_plugins"))
            .env("RABBITMQ_CONFIG_FILE", g("rabbitmq.conf"))
            // Make rabbitmq-server `exec` erl instead of running it in the
            // background behind a signal-forwarding shell, so that the
            // parent-death signal reaches the VM; keep stdin closed.
            .env("RABBITMQ_ALLOW_INPUT", "true")
            .env("RABBITMQ_SERVER_START_ARGS", "-noinput")
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(console.try_clone().map_err(|e| e.to_string())?)
            .stderr(console)
            .process_group(0);
        spawn_tied_to_process(cmd)
            .map_err(|e| format!("cannot run {SERVER_SCRIPT} for {version}: {e}"))
    }
}

/// An HTTP answer from the management API.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON (`Value::Null` when empty).
    #[track_caller]
    pub fn json(&self) -> Value {
        if self.body.trim().is_empty() {
            return Value::Null;
        }
        match serde_json::from_str(&self.body) {
            Ok(v) => v,
            Err(e) => panic!("response is not JSON ({e}): {}", self.body),
        }
    }
}

/// A running RabbitMQ node with the management plugin enabled.
pub struct Node {
    pub version: Version,
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub mgmt_url: String,
    pub amqp_port: u16,
    pub node_name: String,
    pub user: String,
    pub password: String,
    /// The node's directory (config, data, logs) as seen from the host.
    pub dir: PathBuf,
    /// How long the node took to answer on both ports.
    pub startup: Duration,
    /// How to run the node's server again on the same directory and ports.
    launch: Launch,
    child: Mutex<Option<Child>>,
    http: reqwest::blocking::Client,
}

impl Node {
    /// Starts a node; panics with the node's log tail if it is not up within
    /// [`START_TIMEOUT`], and with an installation hint if the broker is missing.
    #[track_caller]
    pub fn start(version: Version, opts: NodeOptions) -> Node {
        match Node::try_start(version, &opts) {
            Ok(node) => node,
            Err(e) => panic!("{e}"),
        }
    }

    /// One node per version per test binary, started on first use and killed
    /// when the process exits. Tests sharing it isolate themselves by vhost
    /// (see [`Node::unique_vhost`]).
    #[track_caller]
    pub fn shared(version: Version) -> &'static Node {
        static SHARED: [OnceLock<Result<Node, String>>; VERSIONS] =
            [const { OnceLock::new() }; VERSIONS];
        let result = SHARED[version.index()].get_or_init(|| {
            register_exit_cleanup(&SHARED);
            Node::try_start(version, &NodeOptions::default())
        });
        match result {
            Ok(node) => node,
            Err(e) => panic!("the shared {version} node did not start: {e}"),
        }
    }

    fn try_start(version: Version, opts: &NodeOptions) -> Result<Node, String> {
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            match Node::start_once(version, opts) {
                Ok(node) => return Ok(node),
                // Another process took a port between our probe and the
                // node's bind: try again with fresh ports.
                Err(e)
                    if e.contains("eaddrinuse")
                        || e.contains("dist_port_already_used")
                        || e.contains("could not bind to distribution port") =>
                {
                    last_error = e
                }
                Err(e) => return Err(e),
            }
        }
        Err(last_error)
    }

    fn start_once(version: Version, opts: &NodeOptions) -> Result<Node, String> {
        let root = version.root();
        preflight(version, root.as_deref())?;

        // The node's directory: under the root's /tmp for a chrooted broker,
        // so the same files are reachable at `guest_dir` from inside.
        let base = match &root {
            Some(root) => root.join("tmp"),
            None => std::env::temp_dir(),
        };
        sweep_stale_dirs(&base);
        let seq = NODE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{pid}-{seq}-"))
            .tempdir_in(&base)
            .map_err(|e| format!("cannot create a node directory in {}: {e}", base.display()))?
            .keep();
        let guest_dir = match &root {
            Some(_) => Path::new("/tmp").join(dir.file_name().unwrap()),
            None => dir.clone(),
        };

        let result = (|| {
            let [amqp_port, mgmt_port, dist_port] = free_ports();
            let node_name = format!("warren-test-{pid}-{seq}@localhost");
            for sub in ["mnesia", "log", "home"] {
                fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
            }
            if let Some(cookie) = &opts.cookie {
                let path = dir.join("home").join(".erlang.cookie");
                fs::write(&path, cookie).map_err(|e| e.to_string())?;
                fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o400))
                    .map_err(|e| e.to_string())?;
            }
            let plugins: Vec<&str> = std::iter::once("rabbitmq_management")
                .chain(opts.plugins.iter().map(String::as_str))
                .collect();
            fs::write(
                dir.join("enabled_plugins"),
                format!("[{}].\n", plugins.join(",")),
            )
            .map_err(|e| e.to_string())?;
            let mut conf = format!(
                "listeners.tcp.default = 127.0.0.1:{amqp_port}\n\
                 management.tcp.ip = 127.0.0.1\n\
                 management.tcp.port = {mgmt_port}\n\
                 loopback_users = none\n\
                 log.console = false\n\
                 log.file.level = info\n"
            );
            if let Some(defs) = &opts.definitions {
                fs::copy(defs, dir.join("definitions.json"))
                    .map_err(|e| format!("cannot copy definitions {}: {e}", defs.display()))?;
                conf.push_str(&format!(
                    "load_definitions = {}\n",
                    guest_dir.join("definitions.json").display()
                ));
            }
            for line in &opts.extra_config {
                conf.push_str(line);
                conf.push('\n');
            }
            fs::write(dir.join("rabbitmq.conf"), conf).map_err(|e| e.to_string())?;

            let launch = Launch {
                root: root.clone(),
                guest_dir: guest_dir.clone(),
                node_name: node_name.clone(),
                amqp_port,
                dist_port,
            };
            let started = Instant::now();
            let child = launch.spawn(&dir, version)?;

            let mut node = Node {
                version,
                mgmt_url: format!("http://127.0.0.1:{mgmt_port}"),
                amqp_port,
                node_name,
                user: opts.user.clone(),
                password: opts.password.clone(),
                dir: dir.clone(),
                startup: Duration::ZERO,
                launch,
                child: Mutex::new(Some(child)),
                // The tests' own requests: a loaded 3.10 node deleting a vhost of
                // hundreds of queues was seen taking over 30 s to answer. No idle
                // connection is kept: the broker closes an idle one when it likes, and
                // a request sent on it as it closes fails without reaching the broker
                // (seen beside two CPU burners, 2026-12-06); a connection per request
                // costs a local TCP handshake.
                http: reqwest::blocking::Client::builder()
                    .timeout(Duration::from_secs(120))
                    .pool_max_idle_per_host(0)
                    .build()
                    .expect("HTTP client"),
            };
            node.startup = node.wait_ready(started)?;
            Ok(node)
        })();
        if result.is_err() {
            let _ = fs::remove_dir_all(&dir);
        }
        result
    }

    /// Waits until the management API answers `/api/overview` for our user
    /// and the AMQP port accepts connections (the management listener can be
    /// up before the AMQP listener, which may still fail).
    fn wait_ready(&self, started: Instant) -> Result<Duration, String> {
        let mut last = String::from("no answer yet");
        while started.elapsed() < START_TIMEOUT {
            if let Some(status) = self.exit_status() {
                return Err(self.failure(&format!("exited during startup with {status}")));
            }
            match self.try_request(reqwest::Method::GET, "/api/overview", None) {
                Ok(r) if r.is_success() => {
                    let amqp = SocketAddr::from((Ipv4Addr::LOCALHOST, self.amqp_port));
                    if TcpStream::connect_timeout(&amqp, Duration::from_millis(500)).is_ok() {
                        return Ok(started.elapsed());
                    }
                    last = "management is up, AMQP port not yet".into();
                }
                Ok(r) => {
                    last = format!(
                        "HTTP {} from /api/overview as {}: {}",
                        r.status, self.user, r.body
                    )
                }
                Err(e) => last = e,
            }
            thread::sleep(Duration::from_millis(200));
        }
        Err(self.failure(&format!(
            "did not come up within {} s (last: {last})",
            START_TIMEOUT.as_secs()
        )))
    }

    fn exit_status(&self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.lock().unwrap();
        child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    fn failure(&self, what: &str) -> String {
        self.kill();
        format!(
            "{} node {} {what}\n--- console ---\n{}\n--- log ---\n{}",
            self.version,
            self.node_name,
            tail(&self.dir.join("console.out"), 4000),
            tail(
                &self.dir.join("log").join(format!("{}.log", self.node_name)),
                6000
            ),
        )
    }

    /// Starts the node again on its directory and ports (after [`Node::kill`]): its
    /// data (queues, messages, definitions) is what the killed node left on disk.
    #[track_caller]
    pub fn restart(&self) {
        self.kill();
        let started = Instant::now();
        let child = self
            .launch
            .spawn(&self.dir, self.version)
            .unwrap_or_else(|e| panic!("{e}"));
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        if let Err(e) = self.wait_ready(started) {
            panic!(
                "{} node {} did not restart: {e}",
                self.version, self.node_name
            );
        }
    }

    /// Runs `rabbitmqctl -n NODE ARGS` as the node's own user (its cookie).
    #[track_caller]
    pub fn ctl(&self, args: &[&str]) -> String {
        let ctl = "/usr/lib/rabbitmq/bin/rabbitmqctl";
        let home = self.launch.guest_dir.join("home");
        let mut command = match &self.launch.root {
            Some(root) => chroot_command(root, ctl),
            None => Command::new(ctl),
        };
        let output = command
            .env("HOME", &home)
            .args(["-n", &self.node_name])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("rabbitmqctl: {e}"));
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "rabbitmqctl {args:?} on {}: {text}",
            self.node_name
        );
        text
    }

    /// Makes this node a member of `first`'s cluster (`stop_app`, `reset`,
    /// `join_cluster`, `start_app`); both must share a cookie.
    #[track_caller]
    pub fn join(&self, first: &Node) {
        self.ctl(&["stop_app"]);
        self.ctl(&["reset"]);
        self.ctl(&["join_cluster", &first.node_name]);
        self.ctl(&["start_app"]);
        self.ctl(&["await_startup"]);
    }

    /// The process id of the node's server (the Erlang VM), while it runs.
    pub fn pid(&self) -> Option<u32> {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        child.as_ref().map(Child::id)
    }

    /// Kills the node's process group (kill -9) and reaps it.
    pub fn kill(&self) {
        if let Some(mut child) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // SAFETY: plain kill(2) on the process group we created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
    }

    /// `amqp://USER:PASSWORD@127.0.0.1:PORT/` (URL-encoded vhost appended by the caller).
    pub fn amqp_url(&self) -> String {
        format!(
            "amqp://{}:{}@127.0.0.1:{}/",
            pct(&self.user),
            pct(&self.password),
            self.amqp_port
        )
    }

    /// `/api/...` (or `api/...`) as an absolute URL.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.mgmt_url, path.trim_start_matches('/'))
    }

    /// Sends a request as the node's user and returns the answer whatever
    /// its status; panics only if the node does not answer at all.
    #[track_caller]
    pub fn request(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Response {
        match self.try_request(method.clone(), path, body) {
            Ok(r) => r,
            Err(e) => panic!("{method} {path} on {}: {e}", self.version),
        }
    }

    /// Like [`Node::request`], as another user.
    #[track_caller]
    pub fn request_as(
        &self,
        user: &str,
        password: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Response {
        match self.send(user, password, method.clone(), path, body) {
            Ok(r) => r,
            Err(e) => panic!("{method} {path} on {} as {user}: {e}", self.version),
        }
    }

    fn try_request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Response, String> {
        self.send(&self.user, &self.password, method, path, body)
    }

    /// Sends one request. A request whose connection could not be made never reached
    /// the broker, so it is sent again for up to 30 s (a loaded machine can be slow
    /// to accept): a write is still done at most once, and the test sees what it did.
    fn send(
        &self,
        user: &str,
        password: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Response, String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut req = self
                .http
                .request(method.clone(), self.url(path))
                .basic_auth(user, Some(password));
            if let Some(body) = body {
                req = req.json(body);
            }
            match req.send() {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let body = resp.text().map_err(|e| chain(&e))?;
                    return Ok(Response { status, body });
                }
                Err(e) if e.is_connect() && Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(chain(&e)),
            }
        }
    }

    #[track_caller]
    fn expect_success(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Value {
        let r = if method == reqwest::Method::GET {
            self.read(path)
        } else {
            self.request(method.clone(), path, body)
        };
        if !r.is_success() {
            panic!(
                "{method} {path} on {} failed: HTTP {}: {}",
                self.version, r.status, r.body
            );
        }
        r.json()
    }

    /// GET `path`, asked again for up to 10 s while the broker answers 5xx or does
    /// not answer: a queue the broker is still starting (a new quorum queue's Ra
    /// members) answers 500 for a moment, a node loaded by the whole suite may drop a
    /// connection, and warren's own client retries those too. Writes are never
    /// retried: a test must see what its write did.
    #[track_caller]
    fn read(&self, path: &str) -> Response {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.try_request(reqwest::Method::GET, path, None) {
                Ok(r) if r.status < 500 || Instant::now() >= deadline => return r,
                Err(e) if Instant::now() >= deadline => {
                    panic!("GET {path} on {}: {e}", self.version)
                }
                _ => thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// GET `/api/...`; panics with status and body unless 2xx.
    #[track_caller]
    pub fn get(&self, path: &str) -> Value {
        self.expect_success(reqwest::Method::GET, path, None)
    }

    /// GET `/api/...`; `None` on 404, panics on other errors.
    #[track_caller]
    pub fn get_opt(&self, path: &str) -> Option<Value> {
        let r = self.read(path);
        match r.status {
            404 => None,
            _ if r.is_success() => Some(r.json()),
            s => panic!(
                "GET {path} on {} failed: HTTP {s}: {}",
                self.version, r.body
            ),
        }
    }

    /// PUT a JSON body; panics with status and body unless 2xx.
    #[track_caller]
    pub fn put(&self, path: &str, body: &Value) -> Value {
        self.expect_success(reqwest::Method::PUT, path, Some(body))
    }

    /// POST a JSON body; panics with status and body unless 2xx.
    #[track_caller]
    pub fn post(&self, path: &str, body: &Value) -> Value {
        self.expect_success(reqwest::Method::POST, path, Some(body))
    }

    /// DELETE; panics with status and body unless 2xx.
    #[track_caller]
    pub fn delete(&self, path: &str) {
        self.expect_success(reqwest::Method::DELETE, path, None);
    }

    /// Spec `spec`'s ownership record as warren reads it, or `None` when it has none:
    /// its head (`warren.<spec>`) with the entries of every part it names joined in, in
    /// order, as `objects` (the parts' names stay in `parts`).
    pub fn record(&self, spec: &str) -> Option<Value> {
        let head = self.get_opt(&record_path(spec))?;
        let mut record = head["value"].clone();
        let parts: Vec<String> = record["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|part| part.as_str().map(str::to_string))
            .collect();
        if !parts.is_empty() || record.get("objects").is_none() {
            let mut objects = Vec::new();
            for part in &parts {
                let stored = self.get(&format!("/api/global-parameters/{}", pct(part)));
                // The part's entries are one string: the JSON text of their list.
                let text = stored["value"]["objects"].as_str().unwrap_or("[]");
                let entries: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
                objects.extend(entries);
            }
            record["objects"] = Value::Array(objects);
        }
        Some(record)
    }

    /// The names of the global parameters that hold parts of spec `spec`'s record,
    /// whether its head names them or not.
    pub fn record_parts(&self, spec: &str) -> Vec<String> {
        let prefix = format!("warren.{spec}@@");
        self.get("/api/global-parameters")
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .filter(|name| name.starts_with(&prefix))
            .map(str::to_string)
            .collect()
    }

    /// Deletes spec `spec`'s ownership record: its head and its parts.
    pub fn delete_record(&self, spec: &str) {
        self.delete(&record_path(spec));
        for part in self.record_parts(spec) {
            self.delete(&format!("/api/global-parameters/{}", pct(&part)));
        }
    }

    /// The names of the queues `vhost` holds now.
    #[track_caller]
    pub fn queue_names(&self, vhost: &str) -> std::collections::BTreeSet<String> {
        self.get(&format!("/api/queues/{}?columns=name", pct(vhost)))
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|q| q["name"].as_str().map(str::to_string))
            .collect()
    }

    /// Deletes `vhost` to keep the node light, however long the broker takes: a vhost
    /// of hundreds of queues on a loaded node can outlast the client's wait. The broker
    /// may go on deleting after the client gave up, or stop half way (a 900-queue vhost
    /// on a loaded 3.10 node was still there 5 minutes after its DELETE failed), so a
    /// failed DELETE is followed by a minute of polling and then sent again (deleting
    /// a vhost is idempotent), for up to 10 minutes, a bound for a node that never
    /// deletes it.
    #[track_caller]
    pub fn remove_vhost(&self, vhost: &str) {
        let path = format!("/api/vhosts/{}", pct(vhost));
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            match self.try_request(reqwest::Method::DELETE, &path, None) {
                Ok(r) if r.is_success() || r.status == 404 => return,
                Ok(r) if r.status < 500 => panic!(
                    "DELETE {path} on {} failed: HTTP {}: {}",
                    self.version, r.status, r.body
                ),
                _ => {}
            }
            let gone = self.wait_until(Duration::from_secs(60), || {
                matches!(self.try_request(reqwest::Method::GET, &path, None), Ok(r) if r.status == 404)
            });
            if gone {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}: vhost {vhost} was never deleted",
                self.version
            );
        }
    }

    /// Creates a fresh vhost named `PREFIX-N-...` and gives the node's user
    /// full permissions on it. Returns the vhost name (not URL-encoded).
    #[track_caller]
    pub fn unique_vhost(&self, prefix: &str) -> String {
        static VHOSTS: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "{prefix}-{}-{}",
            std::process::id(),
            VHOSTS.fetch_add(1, Ordering::Relaxed)
        );
        self.put(
            &format!("/api/vhosts/{}", pct(&name)),
            &serde_json::json!({}),
        );
        self.put(
            &format!("/api/permissions/{}/{}", pct(&name), pct(&self.user)),
            &serde_json::json!({"configure": ".*", "write": ".*", "read": ".*"}),
        );
        name
    }

    /// A vhost name not used yet on this node, for warren to create: the vhost is
    /// created to take the name, then deleted again.
    #[track_caller]
    pub fn unused_vhost(&self, prefix: &str) -> String {
        let name = self.unique_vhost(prefix);
        self.delete(&format!("/api/vhosts/{}", pct(&name)));
        name
    }

    /// `warren ARGS` against this node: [`support::warren`] with the node's
    /// management URL and credentials (`--url`, `--user`, `--password`) appended, and
    /// `WARREN_TIMEOUT` at [`REQUEST_TIMEOUT_SECONDS`] unless the test gives `--timeout`.
    pub fn warren(&self, args: &[&str]) -> Command {
        self.warren_at(&self.mgmt_url, args)
    }

    /// The port of the management API (the end of [`Node::mgmt_url`]), for a proxy in
    /// front of it.
    pub fn management_port(&self) -> u16 {
        self.mgmt_url
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("a management URL ends with its port")
    }

    /// [`Node::warren`] with `url` for the management URL: the node's port through a
    /// proxy (`HttpTap`), with the node's credentials.
    pub fn warren_at(&self, url: &str, args: &[&str]) -> Command {
        let mut command = support::warren(args);
        command.env("WARREN_TIMEOUT", REQUEST_TIMEOUT_SECONDS.to_string());
        command.args([
            "--url",
            url,
            "--user",
            &self.user,
            "--password",
            &self.password,
        ]);
        command
    }

    /// The broker's full version string, e.g. `"3.10.8"`.
    #[track_caller]
    pub fn rabbitmq_version(&self) -> String {
        self.get("/api/overview")["rabbitmq_version"]
            .as_str()
            .expect("rabbitmq_version in /api/overview")
            .to_string()
    }

    /// Polls `f` every 100 ms until it returns true; false on timeout.
    pub fn wait_until(&self, timeout: Duration, f: impl FnMut() -> bool) -> bool {
        wait_until(timeout, f)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// How long warren waits for one request of a test's apply or plan, unless the test
/// gives `--timeout`: a bound for an answer that never comes, not for a slow one. The
/// shared nodes serve three tests at once, and a node busy with another test's
/// thousands of deletes left a 3.10 record write unanswered for over the default 60 s
/// (four test threads, a loaded machine): the apply then reported, rightly, that its
/// record was not written, and the test, about something else, failed.
pub const REQUEST_TIMEOUT_SECONDS: u64 = 300;

/// Polls `f` every 100 ms until it returns true; false if `timeout` passes first.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// A password hash RabbitMQ accepts in definitions (`password_hash`, with
/// `hashing_algorithm` `rabbit_password_hashing_sha256`, the default):
/// base64(salt ++ sha256(salt ++ password)) with a random 4-byte salt.
pub fn rabbit_password_hash(password: &str) -> String {
    let salt: [u8; 4] = rand::random();
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(password.as_bytes());
    let mut salted = salt.to_vec();
    salted.extend_from_slice(&hasher.finalize());
    base64::engine::general_purpose::STANDARD.encode(salted)
}

/// Percent-encodes a path segment for the management API (vhost `/` is `%2F`).
pub fn pct(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

static NODE_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Checks that the broker is installed and, for a chrooted one, that the
/// tools [`chroot_command`] runs it with are there.
fn preflight(version: Version, root: Option<&Path>) -> Result<(), String> {
    let script = match root {
        Some(root) => root.join(SERVER_SCRIPT.trim_start_matches('/')),
        None => PathBuf::from(SERVER_SCRIPT),
    };
    if !script.exists() {
        return Err(format!(
            "{version} is not installed: {} is missing; {INSTALL_HINT}",
            script.display()
        ));
    }
    if root.is_some() {
        for tool in [UNSHARE, CHROOT] {
            if !Path::new(tool).exists() {
                return Err(format!("{version} needs {tool}, which is missing"));
            }
        }
    }
    Ok(())
}

/// `program` (a path inside `root`) run chrooted in `root`, in a private mount
/// namespace of its own in which the root's `/proc` and `/dev` are mounted first.
/// Arguments added to the command go to `program`.
///
/// The mounts exist only in that namespace: the host never sees them, and they
/// vanish when the last process in it exits, so a node killed at any point (or a
/// test process that dies) leaves nothing mounted under the root, and deleting the
/// root can never walk into the host's `/dev`. `unshare` and `sh` `exec` into
/// `chroot`, which `exec`s the program: the command's process is the program's, so
/// its parent-death signal and process group still reach it. Needs root.
pub fn chroot_command(root: &Path, program: &str) -> Command {
    const MOUNT_THEN_CHROOT: &str = r#"root=$1; shift
mount -t proc proc "$root/proc" && mount --bind /dev "$root/dev" && exec /usr/sbin/chroot "$root" "$@""#;
    let mut command = Command::new(UNSHARE);
    command
        .args(["--mount", "--propagation", "private", "--"])
        .args(["/bin/sh", "-c", MOUNT_THEN_CHROOT, "sh"])
        .arg(root)
        .arg(program);
    command
}

/// The mount points under `root` in this process's mount table
/// (`/proc/self/mountinfo`), which a chrooted node must never add to.
pub fn host_mounts_under(root: &Path) -> Vec<String> {
    let root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let root = root.to_string_lossy().into_owned();
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").expect("read /proc/self/mountinfo");
    mountinfo
        .lines()
        // Field 5 is the mount point, with spaces and the like octal-escaped.
        .filter_map(|line| line.split(' ').nth(4))
        .filter(|point| *point == root || point.starts_with(&format!("{root}/")))
        .map(str::to_string)
        .collect()
}

/// Three distinct free loopback ports (AMQP, management, distribution),
/// probed by binding port 0 while holding all three at once.
fn free_ports() -> [u16; 3] {
    // Ports handed out before: the kernel may offer a port again as soon as its probe
    // is closed, before the node it was meant for has bound it, and two nodes of this
    // process would then race for it.
    static GIVEN: OnceLock<Mutex<std::collections::HashSet<u16>>> = OnceLock::new();
    let given = GIVEN.get_or_init(Default::default);
    let mut given = given.lock().unwrap_or_else(|e| e.into_inner());
    let mut listeners: Vec<TcpListener> = Vec::new();
    let mut ports = Vec::new();
    while ports.len() < 3 {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a free port");
        let port = listener.local_addr().unwrap().port();
        // Held open until all three are chosen, so none is offered twice here.
        listeners.push(listener);
        if given.insert(port) {
            ports.push(port);
        }
    }
    [ports[0], ports[1], ports[2]]
}

/// Spawns `cmd` so that the child gets SIGKILL when this process dies.
///
/// `PR_SET_PDEATHSIG` fires when the thread that forked the child exits, so
/// the fork happens on a dedicated thread that is never joined and lives as
/// long as the process.
fn spawn_tied_to_process(mut cmd: Command) -> std::io::Result<Child> {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        thread::Builder::new()
            .name("broker-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("spawn the broker-spawner thread");
        Mutex::new(tx)
    });
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (tx, rx) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, tx))
        .expect("broker-spawner thread is gone");
    rx.recv().expect("broker-spawner thread is gone")
}

/// Kills the shared nodes and removes their directories when the test
/// process exits normally (their statics are never dropped).
fn register_exit_cleanup(shared: &'static [OnceLock<Result<Node, String>>; VERSIONS]) {
    static REGISTERED: OnceLock<()> = OnceLock::new();
    static SHARED: OnceLock<&'static [OnceLock<Result<Node, String>>; VERSIONS]> = OnceLock::new();
    let _ = SHARED.set(shared);
    REGISTERED.get_or_init(|| {
        extern "C" fn cleanup() {
            if let Some(shared) = SHARED.get() {
                for node in shared.iter().filter_map(|n| n.get()).flatten() {
                    node.kill();
                    let _ = fs::remove_dir_all(&node.dir);
                }
            }
        }
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(cleanup) };
    });
}

/// Removes node directories left by test processes that no longer exist
/// (killed before they could clean up).
fn sweep_stale_dirs(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest
            .split('-')
            .next()
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The last `max` bytes of a file, or a note that it is missing.
fn tail(path: &Path, max: u64) -> String {
    let Ok(mut f) = fs::File::open(path) else {
        return format!("({} is missing)", path.display());
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The management API path of spec `spec`'s record's head.
fn record_path(spec: &str) -> String {
    format!("/api/global-parameters/{}", pct(&format!("warren.{spec}")))
}
