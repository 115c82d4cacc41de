//! Asking a person on the terminal before warren changes anything.

use std::io::{BufRead, IsTerminal, Write};

use super::streams::ErrorLog;

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
