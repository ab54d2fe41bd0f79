//! The `tenantc` binary: runs one command of the command line in [`cli`].
//!
//! Consumes: the command line and the project root on disk. Produces: diagnostics on stderr
//! (or JSON on stdout), the written `out/` tree, and an exit code: 0 success, 1 the
//! declarations have errors or `out/` is stale, 2 usage, IO or internal errors.
//!
//! Invariant: all printing of the program happens in `cli/`; the library never prints.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
