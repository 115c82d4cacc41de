//! A `warren` run in the background, for tests that act on it while it runs (SIGINT,
//! SIGSTOP, SIGKILL, a broker killed under it).
//!
//! Its stdout and stderr are read as they are written, on threads of their own. A
//! child whose pipes are only read once it exits blocks as soon as it has written a
//! pipe's worth (64 KiB on Linux): a plan of a few thousand changes is more than that,
//! and the child would then wait on its own output while the test waits for it to
//! act.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use crate::support::Run;

/// How long any background `warren` of the tests may take before it counts as stuck:
/// far longer than the slowest of them on a loaded machine (minutes), so that only a
/// run that would wait forever reaches it, and fails its test with what it printed
/// instead of holding up the whole suite (a thawed apply once waited an hour).
pub const STUCK: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// A running `warren` whose output is being collected.
///
/// Dropped before [`Background::finish`] (a failed assertion), it kills the child, so
/// that no apply outlives its test.
pub struct Background {
    child: Child,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    /// What the child has written to stderr so far.
    stderr_so_far: Arc<Mutex<Vec<u8>>>,
}

impl Drop for Background {
    fn drop(&mut self) {
        if self.stdout.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Background {
    /// Starts `command` with both outputs piped and drained.
    #[track_caller]
    pub fn spawn(mut command: Command) -> Background {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("warren starts");
        let stdout = drain(child.stdout.take().expect("stdout is piped"), None);
        let stderr_so_far = Arc::new(Mutex::new(Vec::new()));
        let stderr = drain(
            child.stderr.take().expect("stderr is piped"),
            Some(Arc::clone(&stderr_so_far)),
        );
        Background {
            child,
            stdout: Some(stdout),
            stderr: Some(stderr),
            stderr_so_far,
        }
    }

    /// What the child has written to stderr so far, while it runs.
    pub fn stderr_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stderr_so_far.lock().unwrap()).into_owned()
    }

    /// Sends `signal` (e.g. `libc::SIGINT`) to the child.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) with a pid this process started and has not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
    }

    /// Whether the child has exited, without waiting.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("try_wait on warren")
    }

    /// SIGKILL; harmless when the child has already exited.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
    }

    /// Waits at most `limit` for the child to exit; past it, kills the child and
    /// panics with what it had printed, so that a run that waits forever fails its
    /// test with the step it was waiting in instead of holding up the suite.
    #[track_caller]
    pub fn finish_within(mut self, limit: std::time::Duration) -> Run {
        let deadline = std::time::Instant::now() + limit;
        while self.exited().is_none() {
            if std::time::Instant::now() >= deadline {
                self.kill();
                let run = self.collect();
                panic!(
                    "warren did not exit within {} s; it printed:\n{}\n{}",
                    limit.as_secs(),
                    run.stdout,
                    run.stderr
                );
            }
            thread::sleep(std::time::Duration::from_millis(50));
        }
        self.collect()
    }

    /// Waits for the child to exit, at most [`STUCK`], and returns what it printed.
    #[track_caller]
    pub fn finish(self) -> Run {
        self.finish_within(STUCK)
    }

    /// Waits for the child to exit, however long, and returns what it printed.
    fn collect(mut self) -> Run {
        let status = self.child.wait().expect("wait for warren");
        let stdout = self.stdout.take().expect("not finished yet");
        let stderr = self.stderr.take().expect("not finished yet");
        let stdout = stdout.join().expect("the stdout reader");
        let stderr = stderr.join().expect("the stderr reader");
        Run {
            code: status.code(),
            stdout: String::from_utf8(stdout).expect("warren writes UTF-8 to stdout"),
            stderr: String::from_utf8(stderr).expect("warren writes UTF-8 to stderr"),
        }
    }
}

/// Reads `pipe` to its end, copying what arrives to `so_far` as it comes.
fn drain(
    mut pipe: impl Read + Send + 'static,
    so_far: Option<Arc<Mutex<Vec<u8>>>>,
) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            let read = match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            bytes.extend_from_slice(&buffer[..read]);
            if let Some(so_far) = &so_far {
                so_far.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        }
        bytes
    })
}
