//! How a command ends: its [`Exit`] code, or the one [`Fatal`] error that stopped it.
//!
//! Consumes: what a command reports. Produces: the exit code and, for a fatal error, its lines
//! on stderr and, for tools, its document on stdout ([`Envelope`]).
//!
//! Invariants:
//! - The exit code follows from the kind of error: usage, IO, unknown names, unreadable input
//!   and bugs in tenantc exit 2; declarations with errors exit 1.
//! - A fatal error is printed once, by [`Fatal::report`], which `cli::main` calls; commands
//!   return it and print nothing of it themselves.
//! - Under `--format json` a fatal error is also the one-line `fatal` document of `docs/json.md`
//!   on stdout, and under `--format sarif` a SARIF log whose invocation failed, so tools always
//!   get a document.

use std::fmt::Display;
use std::process::ExitCode;

use tenantc::diag::render;

/// The exit codes of tenantc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the command did what it was asked.
    Success,
    /// 1: the declarations have errors, `out/` is stale, or `test-policy` denies the request.
    Errors,
    /// 2: usage, IO or internal errors.
    Failure,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        match exit {
            Exit::Success => ExitCode::SUCCESS,
            Exit::Errors => ExitCode::from(1),
            Exit::Failure => ExitCode::from(2),
        }
    }
}

/// What a fatal error prints on stdout, beside its lines on stderr, for the tools that read the
/// command's `--format` document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// Nothing: people read stderr.
    None,
    /// The `fatal` JSON document, on one line.
    Json,
    /// A SARIF log whose invocation failed.
    Sarif,
}

impl Envelope {
    /// [`Envelope::Json`] when `json`, else [`Envelope::None`].
    pub fn json_if(json: bool) -> Envelope {
        if json { Envelope::Json } else { Envelope::None }
    }
}

/// The error that stopped a command: what went wrong, the next step, and so the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal {
    kind: Kind,
    message: String,
    help: Option<String>,
}

/// The kinds of [`Fatal`], which decide its exit code and its form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Arguments that clap accepts but that contradict each other, printed as clap prints its
    /// own usage errors for the subcommand (exit 2).
    Usage { subcommand: &'static str },
    /// An IO error, an unknown name, unreadable input or a bug in tenantc (exit 2).
    Failure,
    /// The declarations have errors (exit 1).
    Declarations,
}

impl Fatal {
    /// An IO error, an unknown tenant, cell, code or model, or input that cannot be read (exit 2).
    pub fn new(message: impl Into<String>) -> Fatal {
        Fatal {
            kind: Kind::Failure,
            message: message.into(),
            help: None,
        }
    }

    /// A broken invariant of tenantc (exit 2), told as such: `<what>; this is a bug in tenantc,
    /// please report it`.
    pub fn bug(what: impl Display) -> Fatal {
        Fatal::new(format!(
            "{what}; this is a bug in tenantc, please report it"
        ))
    }

    /// Arguments of `subcommand` that contradict each other (exit 2), worded and formatted as
    /// clap formats its own usage errors; it never has a help line or a document on stdout.
    pub fn usage(subcommand: &'static str, message: impl Into<String>) -> Fatal {
        Fatal {
            kind: Kind::Usage { subcommand },
            message: message.into(),
            help: None,
        }
    }

    /// Declarations with errors that stop a command which has no `--format json` (exit 1), since
    /// the `fatal` document of `docs/json.md` means exit 2.
    pub fn declarations(message: impl Into<String>) -> Fatal {
        Fatal {
            kind: Kind::Declarations,
            message: message.into(),
            help: None,
        }
    }

    /// The same error with a help line: the next step.
    pub fn with_help(mut self, help: impl Into<String>) -> Fatal {
        self.help = Some(help.into());
        self
    }

    /// What went wrong, as one line (for a command that reports several errors in one run).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The exit code of the error.
    pub fn exit(&self) -> Exit {
        match self.kind {
            Kind::Usage { .. } | Kind::Failure => Exit::Failure,
            Kind::Declarations => Exit::Errors,
        }
    }

    /// Prints the error (`error: <message>` and `  = help: <help>` on stderr, and the document
    /// `envelope` asks for on stdout) and returns its exit code.
    pub fn report(&self, envelope: Envelope) -> ExitCode {
        if let Kind::Usage { subcommand } = self.kind {
            use clap::CommandFactory as _;
            let mut command = super::Cli::command();
            command.build();
            let error = match command.find_subcommand_mut(subcommand) {
                Some(sub) => sub.error(clap::error::ErrorKind::ArgumentConflict, &self.message),
                None => command.error(clap::error::ErrorKind::ArgumentConflict, &self.message),
            };
            super::output::write_stream(&error.render().to_string(), true);
            return ExitCode::from(self.exit());
        }
        eprintln!("error: {}", self.message);
        if let Some(help) = &self.help {
            eprintln!("  = help: {help}");
        }
        match envelope {
            Envelope::None => {}
            Envelope::Json => println!("{}", fatal_json(&self.message, self.help.as_deref())),
            Envelope::Sarif => print!("{}", render::sarif_fatal(&self.message)),
        }
        ExitCode::from(self.exit())
    }
}

/// The JSON envelope of a fatal error (exit 2) of any command: `{"tenantc": 1, "kind": "fatal",
/// "fatal": <message>, "help": <help or null>}` on one line.
fn fatal_json(message: &str, help: Option<&str>) -> String {
    serde_json::json!({
        "tenantc": render::JSON_ENVELOPE_VERSION,
        "kind": "fatal",
        "fatal": message,
        "help": help,
    })
    .to_string()
}
