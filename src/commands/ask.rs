//! Asking a person on the terminal before warren changes anything: whether to apply,
//! and a replay's terminal, which shows the move before it asks.

use std::io::{BufRead, IsTerminal, Write};

use super::streams::ErrorLog;
use crate::render::replay::{preview, question};
use crate::replay::{Conversation, Prepared};

/// Asks whether to apply, on stdout; anything but "yes" declines.
pub(super) fn confirm(stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> bool {
    ask_to_apply(Some(stdout), stderr)
}

/// Asks whether to apply, on `question`, or on stderr when `None` (stdout holds a JSON
/// document); anything but "yes" declines.
pub(super) fn ask_to_apply(question: Option<&mut dyn Write>, stderr: &mut dyn ErrorLog) -> bool {
    ask_yes(
        "Apply these changes?",
        "review the plan and pass --auto-approve, or apply a saved plan file",
        question,
        stderr,
    )
}

/// Asks `question` on the terminal, written to `out`, or to stderr when `None`;
/// without a terminal, fails with `without_terminal` (what to do instead). Anything but
/// "yes" declines.
pub(super) fn ask_yes(
    question: &str,
    without_terminal: &str,
    out: Option<&mut dyn Write>,
    stderr: &mut dyn ErrorLog,
) -> bool {
    if !std::io::stdin().is_terminal() {
        stderr.error(&format!("no terminal to confirm on: {without_terminal}"));
        return false;
    }
    let text = format!("\n{question} Only `yes` is accepted: ");
    match out {
        Some(out) => {
            let _ = write!(out, "{text}");
            let _ = out.flush();
        }
        None => {
            let _ = write!(stderr, "{text}");
            let _ = stderr.flush();
        }
    }
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer.trim() == "yes"
}

/// The terminal of `warren replay`: the move is shown, and asked about, where a person
/// reads: stdout for text, stderr under `--format json` (stdout holds one document).
pub(super) struct ReplayTerminal<'t> {
    json: bool,
    /// Where the replay's own text goes once the conversation is over.
    pub(super) stdout: &'t mut dyn Write,
    stderr: &'t mut dyn ErrorLog,
}

impl<'t> ReplayTerminal<'t> {
    /// The terminal on the command's streams; `json` under `--format json`.
    pub(super) fn new(json: bool, stdout: &'t mut dyn Write, stderr: &'t mut dyn ErrorLog) -> Self {
        ReplayTerminal {
            json,
            stdout,
            stderr,
        }
    }
}

impl Conversation for ReplayTerminal<'_> {
    fn show(&mut self, prepared: &Prepared, batch: u16) {
        let out: &mut dyn Write = match self.json {
            true => &mut *self.stderr,
            false => &mut *self.stdout,
        };
        let _ = preview(out, prepared, batch);
    }

    fn confirm(&mut self, prepared: &Prepared) -> bool {
        let without_terminal = "check the replay with --dry-run and pass --auto-approve";
        let out = (!self.json).then_some(&mut *self.stdout as &mut dyn Write);
        ask_yes(&question(prepared), without_terminal, out, self.stderr)
    }
}
