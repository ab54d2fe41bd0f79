//! Every byte the program prints: stdout and stderr written so that a closed pipe ends nothing,
//! and user-given text made safe to print.
//!
//! Consumes: text from the commands. Produces: writes to stdout and stderr, and whether a write
//! to stdout failed ([`stdout_failed`]), which makes the run exit 2, since its output is
//! incomplete.
//!
//! Invariant: the macros below shadow std's `print!`, `println!`, `eprint!` and `eprintln!` in
//! every module of `cli/` (it is declared first, with `#[macro_use]`), so every line goes
//! through [`write_stream`]; a direct call of std's macros is a clippy error
//! (`print_stdout` and `print_stderr` are not allowed in the binary either).

use std::sync::atomic::{AtomicBool, Ordering};

use super::error::Exit;

/// Set when writing to stdout failed for another reason than a closed pipe; `main` then exits
/// with 2, since the output is incomplete.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes to stdout or stderr. A reader that stops early (`tenantc check --format json | head -1`)
/// closes the pipe: that is not an error, and the rest of the text is dropped. std's `print!`
/// family panics on it instead, so `cli/` shadows them with the macros below and every output
/// path goes through here.
pub fn write_stream(text: &str, to_stderr: bool) {
    use std::io::Write as _;
    let result = if to_stderr {
        let mut stderr = std::io::stderr().lock();
        stderr
            .write_all(text.as_bytes())
            .and_then(|()| stderr.flush())
    } else {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
    };
    if let Err(error) = result
        && error.kind() != std::io::ErrorKind::BrokenPipe
        && !to_stderr
    {
        STDOUT_FAILED.store(true, Ordering::Relaxed);
    }
}

/// Whether a write to stdout failed for another reason than a closed pipe.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

// These shadow std's macros of the same names in every module of `cli/` declared after this one
// (a `macro_rules!` in textual scope comes before the prelude), so a closed stdout or stderr never
// panics, whoever adds a line that prints.
macro_rules! print {
    ($($arg:tt)*) => { $crate::cli::output::write_stream(&format!($($arg)*), false) };
}
macro_rules! println {
    () => { $crate::cli::output::write_stream("\n", false) };
    ($($arg:tt)*) => {
        $crate::cli::output::write_stream(&format!("{}\n", format_args!($($arg)*)), false)
    };
}
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::cli::output::write_stream(&format!($($arg)*), true) };
}
macro_rules! eprintln {
    () => { $crate::cli::output::write_stream("\n", true) };
    ($($arg:tt)*) => {
        $crate::cli::output::write_stream(&format!("{}\n", format_args!($($arg)*)), true)
    };
}

/// Writes to stdout and succeeds; a reader that stops early (`| head`) is not an error, and
/// `main` turns any other write error into exit 2.
pub fn print_out(text: &str) -> Exit {
    write_stream(text, false);
    Exit::Success
}

/// A user-given string made safe to print: every control, bidirectional-formatting and line
/// separator character escaped.
pub fn escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            let unsafe_char = c.is_control()
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}');
            if unsafe_char {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Prints one JSON document on stdout, pretty-printed with a final newline, and succeeds.
pub fn print_json(document: &serde_json::Value) -> Exit {
    let mut text = serde_json::to_string_pretty(document).unwrap_or_default();
    text.push('\n');
    print_out(&text)
}
