//! The standard streams a command writes to: standard output, where a reader that
//! leaves early is a normal end; standard error, which remembers the errors said on it
//! for a JSON error document; and whether either gets colors.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::ColorWhen;
use crate::spec::diagnostic::Diagnostic;

/// Standard error, remembering the errors said on it: a command asked for JSON repeats
/// them in the one JSON document it prints on stdout when it fails.
pub(crate) struct Stderr<W> {
    inner: W,
    said: Said,
}

/// The errors a command said.
#[derive(Debug, Default)]
pub(crate) struct Said {
    /// `error:` lines, without the prefix.
    pub messages: Vec<String>,
    /// Error diagnostics about a file, with the file.
    pub diagnostics: Vec<(PathBuf, Diagnostic)>,
}

impl<W: Write> Stderr<W> {
    pub(super) fn new(inner: W) -> Self {
        Stderr {
            inner,
            said: Said::default(),
        }
    }
}

/// What the commands write their logs and errors to.
pub(crate) trait ErrorLog: Write {
    /// Remembers an error line (already written).
    fn said(&mut self, message: &str);
    /// Remembers error diagnostics about `file` (already written).
    fn said_diagnostics(&mut self, file: &Path, diagnostics: &[Diagnostic]);
    /// Everything remembered.
    fn errors(&self) -> &Said;

    /// Says an error line (`error: …`) and remembers it. A command's own error is said
    /// by the handler ([`super::output::finish`]); this is for an error said on the
    /// way, before the one the command ends with (no terminal to ask on).
    fn error(&mut self, message: &str) {
        let _ = writeln!(self, "error: {message}");
        self.said(message);
    }
}

impl<W: Write> ErrorLog for Stderr<W> {
    fn said(&mut self, message: &str) {
        self.said.messages.push(message.to_string());
    }

    fn said_diagnostics(&mut self, file: &Path, diagnostics: &[Diagnostic]) {
        self.said.diagnostics.extend(
            diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| (file.to_path_buf(), d.clone())),
        );
    }

    fn errors(&self) -> &Said {
        &self.said
    }
}

impl<W: Write> Write for Stderr<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Standard output whose reader may stop reading early (`warren compile … | head`):
/// a closed pipe is a normal end of the output, as in other command-line tools, not an
/// error. Writes after the reader left are dropped, so the command finishes what it
/// does (an apply is never cut short by its reader) and exits with its own code.
pub(crate) struct ClosedPipeIsEnd<W> {
    inner: W,
    closed: bool,
    /// Whether anything was written (a command's own document, or part of one).
    wrote: bool,
}

impl<W: Write> ClosedPipeIsEnd<W> {
    pub(super) fn new(inner: W) -> Self {
        ClosedPipeIsEnd {
            inner,
            closed: false,
            wrote: false,
        }
    }

    /// Whether the command wrote anything (then it printed a document of its own).
    pub(super) fn wrote(&self) -> bool {
        self.wrote
    }

    fn absorb(&mut self, result: std::io::Result<usize>, len: usize) -> std::io::Result<usize> {
        match result {
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(len)
            }
            other => other,
        }
    }
}

impl<W: Write> Write for ClosedPipeIsEnd<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.wrote |= !buf.is_empty();
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write(buf);
        self.absorb(result, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

/// Whether text written to `stream` gets colors: `--color always|never`, else as
/// `anstream` decides for the stream (a terminal, `NO_COLOR`, `CLICOLOR_FORCE`,
/// `CLICOLOR`, `TERM=dumb`), the conventions other command-line tools follow.
pub(super) fn colors<S: anstream::stream::RawStream>(when: ColorWhen, stream: &S) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => anstream::AutoStream::choice(stream) != anstream::ColorChoice::Never,
    }
}
