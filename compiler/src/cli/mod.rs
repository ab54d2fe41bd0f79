//! The command line: the grammar of every subcommand, and the one place that runs them.
//!
//! Consumes: the command line. Produces: the exit code of the command that ran ([`Exit`]): 0
//! success, 1 the declarations have errors, `out/` is stale or a request is denied, 2 usage, IO
//! or internal errors.
//! Each subcommand is a module with its arguments and its `run`, which returns an [`Exit`] or the
//! one [`Fatal`] error that stopped it; [`main`] prints that error once, in the form the command's
//! `--format` asks for ([`Envelope`]).
//!
//! Invariants:
//! - All printing of the program happens in this module tree, through [`output`] (std's `print!`
//!   family is shadowed by its macros, so a closed pipe never crashes a command); the library
//!   never prints.
//! - Every failure that ends a command is a [`Fatal`] and is printed only by [`main`]; its exit
//!   code follows from its kind, never from the command.

// The macros of `output` shadow std's `print!` family in every module declared after it.
#[macro_use]
mod output;

mod build;
mod catalog;
mod check;
mod describe;
mod diff;
mod disk;
mod error;
mod explain;
mod project;
mod report;
mod test_policy;
mod weights;
mod weights_batch;
mod what_if;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tenantc::diag::render::Color;

use describe::DescribeArgs;
use diff::DiffArgs;
use error::{Envelope, Exit, Fatal};
use project::CommonArgs;
use test_policy::TestPolicyArgs;
use weights::WeightsCommand;
use what_if::WhatIfArgs;

/// Compile tenant and cell declarations into per-cell Kubernetes manifests.
#[derive(Debug, Parser)]
#[command(
    name = "tenantc",
    version,
    about,
    long_about = "Compile tenant and cell declarations into per-cell Kubernetes manifests under \
out/, checking every rule before anything is written.\n\n\
What the commands read, under the project root (--root, default .): every .kdl, .yaml and .yml \
file in tenants/ and cells/ and in their subfolders, at any depth (other files there are skipped \
with the warning file-ignored; names starting with . are skipped silently); keys/ and weights/ \
for the signed model weights; and, for check, the committed out/. No declaration is read from \
outside the root.",
    after_help = "Examples:\n  tenantc build                  compile ./tenants and ./cells into ./out\n  \
tenantc check                  fail if out/ is stale or any rule fails (for CI)\n  \
tenantc build --format json    diagnostics as JSON on stdout\n  \
tenantc describe <tenant>      a tenant's namespaces, queue, capacity and pools per cell\n  \
tenantc what-if --drain <spec> what tenants lose if nodes are drained (or a cell is lost)\n  \
tenantc catalog [GPU]          the GPU model keys, sharing modes and MIG profiles of the catalog\n  \
tenantc check --deny warnings  fail on warnings too (an `allow` with a reason silences one)\n\n\
Exit codes: 0 success, 1 errors in the declarations or a stale out/, 2 usage, IO or internal errors."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile the declarations and write out/.
    #[command(
        long_about = "Compile tenants/ and cells/ under --root (with their subfolders) and make \
--out hold exactly the result. Nothing is written if any declaration has an error. Only files whose bytes change are \
written, under a lock that serialises builds; a build that is killed is finished or undone by \
the next one. Only a folder tenantc made (or an empty one) is ever written to.",
        after_help = "Examples:\n  tenantc build\n  tenantc build --root fleet --out fleet/out\n  \
tenantc build --format json --color never"
    )]
    Build(CommonArgs),
    /// Check that every rule holds and out/ is up to date, without writing.
    #[command(
        long_about = "Compile tenants/ and cells/ under --root (with their subfolders) in memory \
and compare with --out. Fails (exit 1) if any declaration \
has an error, or if out/ differs from what `tenantc build` would write; the differing files are \
listed as changed, missing or extra. Run it in CI on the committed tree of every pull request.",
        after_help = "Examples:\n  tenantc check\n  tenantc check --format json > report.json\n  \
tenantc check --format sarif > tenantc.sarif   for GitHub code scanning (see docs/ci.md)"
    )]
    Check(CommonArgs),
    /// Explain a diagnostic code: what it finds, why it matters, an example and the fix.
    #[command(
        long_about = "Print the reference section of a diagnostic code (the same text as \
docs/diagnostics.md), or the list of every code when no code is given.",
        after_help = "Examples:\n  tenantc explain quota-over-capacity\n  tenantc explain"
    )]
    Explain {
        /// The code, such as `mig-layout-unplaceable`.
        code: Option<String>,
        /// How to print: the reference text, or JSON (code, stage, severity, description and
        /// the Markdown section).
        #[arg(long, value_enum, default_value_t = DescribeFormat::Human)]
        format: DescribeFormat,
    },
    /// List the hardware catalog: GPU model keys, families, sharing modes and MIG profiles.
    #[command(
        long_about = "Print the compiled-in hardware catalog (catalog/gpus.json, see docs/catalog.md): \
every GPU model key a pool's `gpu` may name, with its product family (the key's first part), \
product name, the sharing modes it supports and its MIG table. With a GPU model key, print that \
model in full: PCI ids and every MIG profile with its slices, memory, maximum count, minimum \
driver branch and whether the facts are inferred. Keys are compared without case, and the start \
of a key (`A100`, `H100-80GB`) lists the models it names. A misspelt key gets a suggestion of \
the same family.",
        after_help = "Examples:\n  tenantc catalog\n  tenantc catalog H100-80GB-SXM\n  \
tenantc catalog a100          the four A100 models\n  tenantc catalog --format json\n\n\
Exit codes: 0 listed, 2 an unknown GPU model key or usage errors."
    )]
    Catalog {
        /// A GPU model key, such as `H100-80GB-SXM`.
        gpu: Option<String>,
        /// How to print the catalog.
        #[arg(long, value_enum, default_value_t = DescribeFormat::Human)]
        format: DescribeFormat,
    },
    /// Describe a tenant per cell: namespaces, ClusterQueue, effective capacity and pools.
    #[command(
        long_about = "Compile the declarations in memory and print what one tenant gets in each \
cell it has a quota in: its org, team and trust class; its namespaces with their ResourceQuota \
parts and the priority their pods may use; its Kueue ClusterQueue (cohort, flavors, nominal, \
borrowing and lending limits per resource); its effective capacity per reserved pool resource, \
min(quota, cell, topology), with the term that binds; and the pools it can and cannot reach, \
with the reason. If any declaration has an error, the diagnostics are printed as `check` prints \
them and nothing is described. `explain` is the reference of diagnostic codes; `describe` is the \
tenant's view.",
        after_help = "Examples:\n  tenantc describe acme-research\n  \
tenantc describe acme-serving --cell us-east-1a\n  \
tenantc describe globex-vision --format json\n  \
tenantc describe acme-research --root fleet\n\n\
Exit codes: 0 described, 1 errors in the declarations, 2 unknown tenant or cell, usage, IO or \
internal errors."
    )]
    Describe(DescribeArgs),
    /// Check a Kubernetes object against the cell's admission policies, offline.
    #[command(
        name = "test-policy",
        long_about = "Compile the declarations in memory and judge one request as the cell's API \
server admits it: Pod Security admission at the namespace's enforce and warn levels and versions \
(a Pod is denied, a workload's pod template only warned, as the API server does), then every \
ValidatingAdmissionPolicy tenantc emits for the cell (the tenant floor tenantc-tenant-floor, \
through the binding and params of the tenant that owns the object's namespace, the Pod Security \
exception policy, the guard of managed objects). The object is a Pod, Job, CronJob, Deployment, \
StatefulSet, ReplicaSet, DaemonSet or PersistentVolumeClaim in YAML; its namespace is \
metadata.namespace or --namespace. The request is a CREATE of the object, an UPDATE from --old, \
or a DELETE of it, made by a member of the tenant unless --user and --group name another \
principal. Prints who makes the request, `admitted` (with the API server's warnings) or `denied` \
with every refusal and the message the API server would return, and what is not judged: RBAC, \
quota (ResourceQuota, Kueue), LimitRange, the API server's validation of the object, other \
admission plugins and webhooks. A kind the floor does not judge is an error, not an admission. \
See docs/admission.md.",
        after_help = "Examples:\n  tenantc test-policy us-east-1a pod.yaml\n  \
tenantc test-policy eu-west-4b job.yaml --namespace initech-notebooks-infer\n  \
tenantc test-policy us-east-1a pod.yaml --old running-pod.yaml             an UPDATE\n  \
tenantc test-policy us-east-1a pod.yaml --operation DELETE\n  \
tenantc test-policy us-east-1a job.yaml --operation DELETE --cascade orphan\n  \
tenantc test-policy us-east-1a pod.yaml --user alice --group acme-research-admins\n  \
tenantc test-policy us-east-1a pod.yaml --user system:serviceaccount:acme-research-train:trainer\n\n\
Exit codes: 0 admitted, 1 denied, 2 a kind the floor does not judge, an object that cannot be \
judged, declaration errors, an unknown cell, a namespace no tenant owns, an unreadable object, \
usage (such as --old with --operation DELETE) or internal errors."
    )]
    TestPolicy(TestPolicyArgs),
    /// Hash model weights and pin them, with their signature, in a tenant's lock file.
    #[command(
        subcommand,
        long_about = "Model weights are pinned per tenant in weights/<tenant>.lock: per model version its prefix, its OpenSSF model-signing root digest (method `files`, sha256), every file with its sha256, and the signature file with its sha256. `build` and `check` verify every declared model against its lock entry and the tenant's own keys, offline, and fail if any cannot be verified. See docs/weights.md."
    )]
    Weights(WeightsCommand),
    /// Summarise what a change does to each tenant and cell, against a git revision.
    #[command(
        long_about = "Compile the work tree (head) and the declarations of a git revision (base, \
read with git without touching the work tree or the index) and print, per tenant and cell, what \
changed: entitlements (reserved and burst per pool resource, ceilings, quotas), access (groups, \
registries, weight digests, reachable pools, network egress and ingress, runtime classes, storage \
prefixes) and policy (trust class, Pod Security, priority and runtime classes). Changes that \
widen what a tenant gets are marked security-relevant; changes of immutable fields \
(PriorityClass value and preemptionPolicy, RuntimeClass handler, a topology ResourceFlavor's node \
labels, tolerations and topology, a Topology's levels) are marked replaced on sync. \
Both sides are compiled by this tenantc, so a change of tenantc itself does not show. See docs/diff.md.",
        after_help = "Examples:\n  tenantc diff --base origin/main                  Markdown for a pull-request comment\n  \
tenantc diff --base main --format json\n  \
tenantc diff --base HEAD~1 --format files        a unified diff of out/\n\n\
Exit codes: 0 printed, 1 the work tree or the base does not compile, 2 not a git repository, \
an unknown revision, usage, IO or internal errors."
    )]
    Diff(DiffArgs),
    /// Say what tenants lose if nodes are drained, a cell is lost or a MIG layout removed.
    #[command(
        name = "what-if",
        long_about = "Compile the declarations in memory and answer, from the plan and without \
editing a declaration, what tenants lose if the platform drains nodes of a pool (a count of \
nodes, the nodes of one MIG layout, or whole domains of a topology level such as a rack), loses \
a whole cell, or removes a MIG layout. Per changed pool it prints the nodes and the devices of \
each resource before and after; per tenant with a reservation there, the reserved devices (per \
MIG profile) no longer backed by hardware, the burst no longer backed, the effective capacity \
before and after, the gangs that fit at once before and after (for a count of nodes, the worst \
case over where they sit), and for a fleet contract what it loses and which tenants re-homing \
that part in the contract's cells would overcommit. Changes combine; each pool and layout is \
changed once. See docs/what-if.md.",
        after_help = "Examples:\n  tenantc what-if --drain us-east-1a/h100-train@rack                 one rack\n  \
tenantc what-if --drain us-east-1a/h100-train=8                    8 nodes, wherever they are\n  \
tenantc what-if --drain us-east-1a/h100-infer/small=2              the nodes of one MIG layout\n  \
tenantc what-if --remove-layout us-east-1a/h100-infer/balanced\n  \
tenantc what-if --lose-cell eu-west-4b --format json\n\n\
Exit codes: 0 every reservation is still backed, 1 a reservation is no longer backed (its \
devices or its reserved gangs) or the declarations have errors, 2 a change that names a cell, \
pool, layout or level nobody declared, drains more than there is, or is malformed, usage, IO or \
internal errors."
    )]
    WhatIf(WhatIfArgs),
}

impl Command {
    /// What a fatal error of this command prints on stdout beside its message on stderr.
    fn envelope(&self) -> Envelope {
        match self {
            Command::Build(args) | Command::Check(args) => args.envelope(),
            Command::Explain { format, .. } | Command::Catalog { format, .. } => {
                Envelope::json_if(*format == DescribeFormat::Json)
            }
            Command::Describe(args) => Envelope::json_if(args.format == DescribeFormat::Json),
            Command::Diff(args) => Envelope::json_if(args.format == diff::DiffFormat::Json),
            Command::WhatIf(args) => Envelope::json_if(args.format == DescribeFormat::Json),
            Command::TestPolicy(_) | Command::Weights(_) => Envelope::None,
        }
    }

    /// Runs the command.
    fn run(self) -> Result<Exit, Fatal> {
        match self {
            Command::Build(args) => build::run(&args),
            Command::Check(args) => check::run(&args),
            Command::Explain { code, format } => explain::run(code.as_deref(), format),
            Command::Catalog { gpu, format } => catalog::run(gpu.as_deref(), format),
            Command::Describe(args) => describe::run(&args),
            Command::TestPolicy(args) => test_policy::run(&args),
            Command::Weights(command) => weights::run(command),
            Command::Diff(args) => diff::run(&args),
            Command::WhatIf(args) => what_if::run(&args),
        }
    }
}

/// The `--format` of `explain`, `catalog` and `describe`: text or one JSON document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DescribeFormat {
    /// Text for people (on stdout; diagnostics on stderr).
    Human,
    /// One JSON document with the tenant's plan per cell (on stdout).
    Json,
}

/// The `--color` of the commands that print diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorArg {
    /// Colour when stderr is a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorArg {
    /// Whether to colour what goes to stderr.
    fn choice(self) -> Color {
        match self {
            ColorArg::Always => Color::Always,
            ColorArg::Never => Color::Never,
            ColorArg::Auto => {
                if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
                    Color::Always
                } else {
                    Color::Never
                }
            }
        }
    }
}

/// Parses the command line, runs the command, and prints the error that stopped it, if any.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version go to stdout, usage errors to stderr, as clap prints them, but
            // through `write_stream`, which a closed pipe does not crash.
            output::write_stream(&error.render().to_string(), error.use_stderr());
            return ExitCode::from(if error.use_stderr() {
                Exit::Failure
            } else {
                Exit::Success
            });
        }
    };
    let envelope = cli.command.envelope();
    let code = match cli.command.run() {
        Ok(exit) => ExitCode::from(exit),
        Err(fatal) => fatal.report(envelope),
    };
    if output::stdout_failed() {
        eprintln!("error: cannot write to stdout");
        return ExitCode::from(Exit::Failure);
    }
    code
}
