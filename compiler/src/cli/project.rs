//! What `build` and `check` share: their arguments, the project root and output folder, the
//! `--deny` rule, and their report of a compilation in the `--format` asked for.
//!
//! Consumes: [`CommonArgs`]. Produces: the loaded declarations and the compilation
//! ([`Project`]), and the report on stderr (people) or stdout (JSON, SARIF).
//!
//! Invariant: an `--out` that resolves, through symbolic links, into `tenants/` or `cells/`, or
//! that holds one of them, is refused before the output folder is opened.

use std::path::{Component, Path, PathBuf};

use clap::{Args, ValueEnum};
use tenantc::diag::render::{self, Color};
use tenantc::emit::OutputTree;
use tenantc::emit::PartSink;
use tenantc::emit::fs::Change;
use tenantc::{Compilation, compile_loaded, compile_loaded_owned, compile_streaming, load};

use super::error::{Envelope, Fatal};
use super::output::escape;
use super::{ColorArg, disk, report};

/// The `--format` of `build` and `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Source snippets with carets, for people (on stderr).
    Human,
    /// One JSON document, for tools (on stdout).
    Json,
    /// One SARIF 2.1.0 log, for code scanning (on stdout).
    Sarif,
}

/// The arguments of `build` and `check`.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Project root holding tenants/ and cells/ (read with their subfolders), keys/ and weights/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// Output folder [default: <root>/out].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// How to print diagnostics.
    #[arg(long, value_enum, default_value_t = FormatArg::Human)]
    pub format: FormatArg,
    /// When to colour human output.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Make warnings errors: `warnings` for every warning, or a code such as
    /// `mig-table-inferred`; repeatable. Warnings an `allow` silenced stay silenced.
    #[arg(long, value_name = "warnings|CODE")]
    pub deny: Vec<String>,
    /// Threads to compile on [default: TENANTC_THREADS, else every core]. Files are parsed,
    /// signatures verified and cells lowered in parallel; the output is the same bytes on any
    /// number of threads.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

/// The environment variable that sets the thread count when `--jobs` is not given.
pub const THREADS_VAR: &str = "TENANTC_THREADS";

impl CommonArgs {
    /// Sizes the thread pool the compilation runs on: `--jobs`, else `TENANTC_THREADS` (a
    /// positive integer), else every core. A malformed `TENANTC_THREADS` is a usage error.
    pub fn use_threads(&self) -> Result<(), Fatal> {
        let threads = match self.jobs {
            Some(jobs) => usize::from(jobs),
            None => match std::env::var(THREADS_VAR) {
                Ok(value) => match value.trim().parse::<u16>() {
                    Ok(threads) if threads > 0 => usize::from(threads),
                    _ => {
                        return Err(Fatal::new(format!(
                            "{THREADS_VAR}=`{}` is not a thread count from 1 to 65535",
                            escape(&value)
                        )));
                    }
                },
                Err(_) => 0,
            },
        };
        // 0 lets rayon use every core; a pool built before (in-process callers) stays.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global();
        Ok(())
    }

    /// The output folder: `--out`, else `<root>/out`.
    pub fn out_dir(&self) -> PathBuf {
        self.out.clone().unwrap_or_else(|| self.root.join("out"))
    }

    /// Whether to colour the diagnostics.
    pub fn color(&self) -> Color {
        self.color.choice()
    }

    /// Whether people read the report (on stderr), rather than tools (on stdout).
    pub fn human(&self) -> bool {
        self.format == FormatArg::Human
    }

    /// What a fatal error prints on stdout under this `--format`.
    pub fn envelope(&self) -> Envelope {
        match self.format {
            FormatArg::Human => Envelope::None,
            FormatArg::Json => Envelope::Json,
            FormatArg::Sarif => Envelope::Sarif,
        }
    }
}

/// Which of the two commands runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `tenantc build`.
    Build,
    /// `tenantc check`.
    Check,
}

impl Mode {
    /// The `kind` of the JSON envelope of the command's report.
    fn as_str(self) -> &'static str {
        match self {
            Mode::Build => "build",
            Mode::Check => "check",
        }
    }
}

/// The declarations of the project root, read, with the `--deny` rule and the output folder,
/// checked before anything is compiled or written.
pub struct Project {
    deny: tenantc::diag::allow::Deny,
    loaded: load::Loaded,
    /// The output folder, `--out` or `<root>/out`.
    pub out_dir: PathBuf,
}

impl Project {
    /// Reads `--deny`, the declarations under the root and the output folder, in that order;
    /// each refusal is a fatal error.
    pub fn open(args: &CommonArgs) -> Result<Project, Fatal> {
        let deny = deny_rule(&args.deny).map_err(Fatal::new)?;
        args.use_threads()?;
        let loaded = load_declarations(&args.root)?;
        let out_dir = args.out_dir();
        if let Some(problem) = overlaps_declarations(&args.root, &out_dir) {
            return Err(Fatal::new(problem));
        }
        Ok(Project {
            deny,
            loaded,
            out_dir,
        })
    }

    /// Compiles the declarations; a warning that `--deny` makes an error withholds the output,
    /// like an error: nothing is written or compared. The loaded files are handed over, so their
    /// bytes are not held beside the output.
    pub fn compile(&mut self) -> Compilation {
        let compilation = compile_loaded_owned(std::mem::take(&mut self.loaded));
        self.deny(compilation)
    }

    /// Compiles the declarations as [`Project::compile`] does, handing each cell's files to
    /// `parts` as they are rendered: the compilation's output is then the rest of the tree, and
    /// `None` (as for [`Project::compile`]) says the parts must be discarded.
    pub fn compile_into(&mut self, parts: &dyn PartSink) -> Compilation {
        let compilation = compile_streaming(std::mem::take(&mut self.loaded), parts);
        self.deny(compilation)
    }

    fn deny(&self, mut compilation: Compilation) -> Compilation {
        if self.deny.apply(&mut compilation.diagnostics) > 0 {
            compilation.output = None;
        }
        compilation
    }
}

/// The tree to write or compare, or `None` (after reporting the diagnostics) when the
/// declarations have errors; an internal error of the compilation is reported, then fatal.
pub fn output_of<'a>(
    args: &CommonArgs,
    mode: Mode,
    compilation: &'a Compilation,
) -> Result<Option<&'a OutputTree>, Fatal> {
    if let Some(error) = &compilation.internal_error {
        print_report(args, mode, compilation, &[]);
        return Err(Fatal::bug(error));
    }
    if compilation.output.is_none() {
        print_report(args, mode, compilation, &[]);
    }
    Ok(compilation.output.as_ref())
}

/// Reads the declarations under `root` (every command that compiles does this first).
pub fn load_declarations(root: &Path) -> Result<load::Loaded, Fatal> {
    load::load(root).map_err(|error| Fatal::new(format!("cannot read declarations: {error}")))
}

/// How a command that reads the plan (`describe`, `what-if`) shows the compilation's
/// diagnostics: inside its `--format json` document, or on stderr for people.
#[derive(Debug, Clone, Copy)]
pub struct PlanReader {
    /// The command's JSON `kind`.
    pub kind: &'static str,
    /// Whether it prints JSON.
    pub json: bool,
    /// How to colour diagnostics for people.
    pub color: Color,
}

impl PlanReader {
    /// Loads and compiles the declarations under `root`. `None`, after the diagnostics are
    /// printed, when a declaration has an error (the command exits 1); a compilation that
    /// reaches the caller has a plan.
    pub fn compile(self, root: &Path) -> Result<Option<Compilation>, Fatal> {
        let loaded = load_declarations(root)?;
        let compilation = compile_loaded(&loaded);
        if let Some(error) = &compilation.internal_error {
            self.show(&compilation);
            return Err(Fatal::bug(error));
        }
        if compilation.has_errors() {
            self.show(&compilation);
            return Ok(None);
        }
        if compilation.plan.is_none() {
            return Err(unresolved());
        }
        Ok(Some(compilation))
    }

    /// Prints the diagnostics: the JSON report on stdout, or for people on stderr.
    pub fn show(self, compilation: &Compilation) {
        if self.json {
            print!("{}", report::json(self.kind, compilation, &[]));
        } else {
            report::human(compilation, self.color);
        }
    }
}

/// The bug of a compilation without errors and without a plan.
pub fn unresolved() -> Fatal {
    Fatal::bug("the declarations have no error but were not resolved")
}

/// Reads the `--deny` values: `warnings` or known codes.
fn deny_rule(values: &[String]) -> Result<tenantc::diag::allow::Deny, String> {
    use tenantc::diag::Code;
    let mut deny = tenantc::diag::allow::Deny::default();
    for value in values {
        if value == "warnings" {
            deny.all = true;
            continue;
        }
        let Some(code) = Code::ALL.iter().find(|code| code.as_str() == value) else {
            let names =
                std::iter::once("warnings").chain(Code::ALL.iter().map(|code| code.as_str()));
            let hint = tenantc::diag::did_you_mean(value, names)
                .map(|close| format!("; did you mean `{close}`?"))
                .unwrap_or_default();
            return Err(format!(
                "`--deny {}` names neither `warnings` nor a diagnostic code{hint}",
                escape(value)
            ));
        };
        deny.codes.push(*code);
    }
    Ok(deny)
}

/// Why `out` must not be written, if it resolves into `tenants/` or `cells/` under the root (the
/// next build would read the output as declarations) or holds one of them (the build would
/// delete the declarations). Paths are compared after following symbolic links.
fn overlaps_declarations(root: &Path, out: &Path) -> Option<String> {
    let resolved_out = disk::resolve(out);
    load::FOLDERS.iter().find_map(|folder| {
        let declarations = disk::resolve(&root.join(folder));
        if resolved_out.starts_with(&declarations) {
            Some(format!(
                "--out {} is inside {folder}/; the next build would read the output as declarations",
                out.display()
            ))
        } else if declarations.starts_with(&resolved_out) {
            Some(format!(
                "--out {} holds {folder}/; a build would replace the declarations with its output",
                out.display()
            ))
        } else {
            None
        }
    })
}

/// How `check` names a change of `out/`: `missing`, `changed` or `extra`.
pub fn change_word(change: &Change) -> &'static str {
    match change {
        Change::Missing(_) => "missing",
        Change::Changed(_) => "changed",
        Change::Extra(_) => "extra",
    }
}

/// `1 file`, `2 files`.
pub fn files(count: usize) -> String {
    format!("{count} file{}", if count == 1 { "" } else { "s" })
}

/// Says on stderr that this run waits for another build's lock.
pub fn note_waiting(message: &str) {
    eprintln!("note: {message}");
}

/// The prefix of SARIF paths: `--root` as given, with a final `/`, when it is a relative
/// path below the working folder (the repository root in CI); empty otherwise, so the log never
/// holds an absolute path.
fn sarif_base(root: &Path) -> String {
    let parts: Vec<String> = root
        .components()
        .filter(|part| *part != Component::CurDir)
        .map(|part| match part {
            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Option<Vec<String>>>()
        .unwrap_or_default();
    parts.iter().map(|part| format!("{part}/")).collect()
}

/// Prints the report of a compilation in the `--format` asked for: the diagnostics on stderr for
/// people, or one JSON document or SARIF log on stdout (with `check`'s stale files).
pub fn print_report(args: &CommonArgs, mode: Mode, compilation: &Compilation, changes: &[Change]) {
    let stale: Vec<(String, String)> = changes
        .iter()
        .map(|change| (change.path().to_string(), change_word(change).to_string()))
        .collect();
    match args.format {
        FormatArg::Human => report::human(compilation, args.color()),
        FormatArg::Json => print!("{}", report::json(mode.as_str(), compilation, &stale)),
        FormatArg::Sarif => print!(
            "{}",
            render::sarif_report(
                &compilation.diagnostics,
                &compilation.suppressed,
                &compilation.sources,
                &stale,
                &sarif_base(&args.root),
            )
        ),
    }
}
