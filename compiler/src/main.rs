//! The `tenantc` command line: argument parsing, exit codes, rendering and writing.
//!
//! Consumes: the command line and the project root on disk. Produces: diagnostics on stderr
//! (or JSON on stdout), the written `out/` tree, and an exit code: 0 success, 1 the
//! declarations have errors or `out/` is stale, 2 usage, IO or internal errors.
//!
//! Invariant: all printing of the program happens here; the library never prints.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::IsTerminal;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tenantc::diag::render::{self, Color};
use tenantc::emit::fs::{self as out_fs, Change};
use tenantc::weights::digest;
use tenantc::{Compilation, compile_loaded, load};

const EXIT_ERRORS: u8 = 1;
const EXIT_FAILURE: u8 = 2;

/// Set when writing to stdout failed for another reason than a closed pipe; `main` then exits
/// with 2, since the output is incomplete.
static STDOUT_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes to stdout or stderr. A reader that stops early (`tenantc check --format json | head -1`)
/// closes the pipe: that is not an error, and the rest of the text is dropped. std's `print!`
/// family panics on it instead, so this file shadows them with the macros below and every
/// output path goes through here.
fn write_stream(text: &str, to_stderr: bool) {
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
        STDOUT_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

// These shadow std's macros of the same names in this file (a local `macro_rules!` comes before
// the prelude), so a closed stdout or stderr never panics, whoever adds a line that prints.
macro_rules! print {
    ($($arg:tt)*) => { write_stream(&format!($($arg)*), false) };
}
macro_rules! println {
    () => { write_stream("\n", false) };
    ($($arg:tt)*) => { write_stream(&format!("{}\n", format_args!($($arg)*)), false) };
}
macro_rules! eprint {
    ($($arg:tt)*) => { write_stream(&format!($($arg)*), true) };
}
macro_rules! eprintln {
    () => { write_stream("\n", true) };
    ($($arg:tt)*) => { write_stream(&format!("{}\n", format_args!($($arg)*)), true) };
}

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
}

#[derive(Debug, Args)]
struct TestPolicyArgs {
    /// The cell whose admission judges the object.
    cell: String,
    /// The object, a YAML file holding one Kubernetes object: the new object of a CREATE or
    /// UPDATE, the object deleted by a DELETE.
    object: PathBuf,
    /// The object before the change: judge an UPDATE from it to OBJECT (`oldObject` and
    /// `object`), as when a running pod is edited. Implies --operation UPDATE.
    #[arg(long, value_name = "FILE")]
    old: Option<PathBuf>,
    /// The operation: CREATE (the default), UPDATE (needs --old) or DELETE (OBJECT is the
    /// object deleted: the policies see it as `oldObject`, with `object` null, and the
    /// `DeleteOptions` that `kubectl delete` sends).
    #[arg(long, value_enum, ignore_case = true, value_name = "OPERATION")]
    operation: Option<TestPolicyOperation>,
    /// With --operation DELETE, what happens to the object's dependents, as `kubectl delete
    /// --cascade` says it (`propagationPolicy` Background, Foreground or Orphan).
    #[arg(long, value_enum, value_name = "CASCADE")]
    cascade: Option<TestPolicyCascade>,
    /// The user who makes the request (`request.userInfo.username`), such as `alice` or
    /// `system:serviceaccount:acme-research-train:trainer`. A ServiceAccount without --group
    /// is in its namespace's ServiceAccount groups, as the API server puts it.
    #[arg(long, value_name = "NAME")]
    user: Option<String>,
    /// A group of the user (`request.userInfo.groups`); repeat for several, as in
    /// `--group acme-research-admins --group oncall`. Every user but system:anonymous is also
    /// in system:authenticated. Without --user and --group, the request is a member's of the
    /// tenant that owns the namespace (its member group).
    #[arg(long = "group", value_name = "NAME")]
    groups: Vec<String>,
    /// The namespace of the object, when it has no metadata.namespace.
    #[arg(long, value_name = "NAMESPACE")]
    namespace: Option<String>,
    /// Project root holding tenants/ and cells/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
}

/// The admission operation `test-policy` judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TestPolicyOperation {
    /// A new object.
    #[value(name = "CREATE")]
    Create,
    /// A change from --old to OBJECT.
    #[value(name = "UPDATE")]
    Update,
    /// OBJECT is deleted.
    #[value(name = "DELETE")]
    Delete,
}

/// `kubectl delete --cascade`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TestPolicyCascade {
    /// The dependents are deleted after the object (kubectl's default).
    Background,
    /// The dependents are deleted before the object.
    Foreground,
    /// The dependents are left behind, without an owner.
    Orphan,
}

impl TestPolicyOperation {
    fn name(self) -> &'static str {
        match self {
            TestPolicyOperation::Create => "CREATE",
            TestPolicyOperation::Update => "UPDATE",
            TestPolicyOperation::Delete => "DELETE",
        }
    }
}

#[derive(Debug, Subcommand)]
enum WeightsCommand {
    /// Print the model-signing root digest of a weights folder.
    #[command(
        long_about = "Hash every file of a weights folder in parallel and print its OpenSSF model-signing v1.0 root digest (method `files`, sha256): the sha256 over the concatenated file digests, paths ordered component by component. Empty files count; `.git`, `.gitignore`, `.gitattributes` and `.github` at the top are ignored; a symbolic link is an error. The digest equals the subject digest `model_signing sign` writes for the same folder. Progress goes to stderr when it is a terminal and the folder holds more than 256 MiB.",
        after_help = "Examples:
  tenantc weights hash ./llama-tiny
  tenantc weights hash ./llama-tiny --files     every file's sha256 too

Exit codes: 0 printed, 2 the folder cannot be hashed (a symbolic link, an unreadable file)."
    )]
    Hash {
        /// The weights folder.
        dir: PathBuf,
        /// Also print each file's sha256 and path, in manifest order.
        #[arg(long)]
        files: bool,
        /// Hashing threads (default: the available cores).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
    },
    /// Write a model's entry in weights/<tenant>.lock from its weights or its signed bundle.
    #[command(
        long_about = "Write or replace the lock entry of a declared model (its declared version and prefix) in weights/<tenant>.lock, then verify the entry exactly as `tenantc build` will: the signature must verify with one of the model's declared keys and cover the locked files. Nothing is written if it does not.

SOURCE is either a local copy of the weights folder (hashed here; pass the signature with --signature) or a model-signing bundle (a sigstore bundle whose signed statement lists every file and digest; no weights needed). A cosign-style detached signature (base64 DER ECDSA, `cosign sign-blob --key`) signs the line `<object path> sha256:<root>` and lists no files, so it needs the folder. Signature files must be committed under weights/.",
        after_help = "Examples:
  tenantc weights lock acme-research llama-tiny weights/acme-research/llama-tiny-v3.sig.json
  tenantc weights lock acme-research llama-tiny ./llama-tiny --signature weights/acme-research/llama-tiny-v3.sig.json
  tenantc weights lock acme-research llama-tiny ./llama-tiny --signature weights/acme-research/llama-tiny-v3.sig

Exit codes: 0 written, 1 the entry does not verify or the tenant's declaration has errors, 2 an undeclared tenant or model, a signature that is not a file under weights/, usage or IO errors."
    )]
    Lock {
        /// The tenant, as named in its declaration.
        tenant: String,
        /// The model, as the tenant declares it.
        model: String,
        /// A weights folder, or a model-signing bundle under weights/.
        source: PathBuf,
        /// The signature file under weights/, when SOURCE is a weights folder.
        #[arg(long, value_name = "FILE")]
        signature: Option<PathBuf>,
        /// Project root holding tenants/, keys/ and weights/.
        #[arg(long, value_name = "DIR", default_value = ".")]
        root: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DescribeFormat {
    /// Text for people (on stdout; diagnostics on stderr).
    Human,
    /// One JSON document with the tenant's plan per cell (on stdout).
    Json,
}

#[derive(Debug, Args)]
struct DescribeArgs {
    /// The tenant, as named in its declaration.
    tenant: String,
    /// Describe the tenant in this cell only.
    #[arg(long, value_name = "CELL")]
    cell: Option<String>,
    /// Project root holding tenants/ and cells/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// How to print the description.
    #[arg(long, value_enum, default_value_t = DescribeFormat::Human)]
    format: DescribeFormat,
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    /// Source snippets with carets, for people (on stderr).
    Human,
    /// One JSON document, for tools (on stdout).
    Json,
    /// One SARIF 2.1.0 log, for code scanning (on stdout).
    Sarif,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorArg {
    /// Colour when stderr is a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

#[derive(Debug, Args)]
struct CommonArgs {
    /// Project root holding tenants/ and cells/ (read with their subfolders), keys/ and weights/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Output folder [default: <root>/out].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// How to print diagnostics.
    #[arg(long, value_enum, default_value_t = FormatArg::Human)]
    format: FormatArg,
    /// When to colour human output.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
    /// Make warnings errors: `warnings` for every warning, or a code such as
    /// `mig-table-inferred`; repeatable. Warnings an `allow` silenced stay silenced.
    #[arg(long, value_name = "warnings|CODE")]
    deny: Vec<String>,
}

impl CommonArgs {
    fn out_dir(&self) -> PathBuf {
        self.out.clone().unwrap_or_else(|| self.root.join("out"))
    }

    fn color(&self) -> Color {
        color(self.color)
    }
}

/// Whether to colour what goes to stderr.
fn color(choice: ColorArg) -> Color {
    match choice {
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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version go to stdout, usage errors to stderr, as clap prints them, but
            // through `write_stream`, which a closed pipe does not crash.
            write_stream(&error.render().to_string(), error.use_stderr());
            return ExitCode::from(if error.use_stderr() { EXIT_FAILURE } else { 0 });
        }
    };
    let code = match cli.command {
        Command::Build(args) => run(&args, Mode::Build),
        Command::Check(args) => run(&args, Mode::Check),
        Command::Explain { code, format } => explain(code.as_deref(), format),
        Command::Catalog { gpu, format } => catalog(gpu.as_deref(), format),
        Command::Describe(args) => describe(&args),
        Command::TestPolicy(args) => test_policy(&args),
        Command::Weights(command) => weights(command),
        Command::Diff(args) => diff(&args),
    };
    if STDOUT_FAILED.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("error: cannot write to stdout");
        return ExitCode::from(EXIT_FAILURE);
    }
    code
}

/// `tenantc test-policy`: the cell's admission on one request, offline.
fn test_policy(args: &TestPolicyArgs) -> ExitCode {
    use tenantc::policy::judge::{CellAdmission, Judge, NOT_JUDGED};
    use tenantc::policy::pod_security::PodSecurityVerdict;
    let fatal = |message: &str, help: Option<String>| {
        eprintln!("error: {message}");
        if let Some(help) = help {
            eprintln!("  = help: {help}");
        }
        ExitCode::from(EXIT_FAILURE)
    };
    // An inconsistent request is a usage error, found before anything is compiled.
    let operation = match (args.operation, &args.old) {
        (None, None) => TestPolicyOperation::Create,
        (None, Some(_)) => TestPolicyOperation::Update,
        (Some(TestPolicyOperation::Create), Some(_)) => {
            return test_policy_usage(
                "--old gives the object before an UPDATE, so it cannot be used with --operation CREATE",
            );
        }
        (Some(TestPolicyOperation::Update), None) => {
            return test_policy_usage(
                "--operation UPDATE needs --old <FILE>, the object before the update",
            );
        }
        (Some(TestPolicyOperation::Delete), Some(_)) => {
            return test_policy_usage(
                "--operation DELETE judges OBJECT as the object deleted, so it cannot be used with --old",
            );
        }
        (Some(operation), _) => operation,
    };
    if args.cascade.is_some() && operation != TestPolicyOperation::Delete {
        return test_policy_usage(
            "--cascade says what a DELETE does to dependents, so it needs --operation DELETE",
        );
    }
    if args.user.as_deref() == Some("") || args.groups.iter().any(String::is_empty) {
        return test_policy_usage("--user and --group need a non-empty name");
    }
    let loaded = match load::load(&args.root) {
        Ok(loaded) => loaded,
        Err(error) => return fatal(&format!("cannot read declarations: {error}"), None),
    };
    let compilation = compile_loaded(&loaded);
    if compilation.has_errors() || compilation.internal_error.is_some() {
        eprint!(
            "{}",
            render::human(&compilation.diagnostics, &compilation.sources, Color::Never)
        );
        return fatal(
            "the declarations have errors, so there are no policies to test",
            Some("run `tenantc check` and fix them first".to_string()),
        );
    }
    let (Some(plan), Some(output)) = (&compilation.plan, &compilation.output) else {
        return fatal(
            "the declarations were not resolved; this is a bug in tenantc",
            None,
        );
    };
    let Some(cell) = plan.cells.iter().find(|cell| cell.name == args.cell) else {
        let names: Vec<String> = plan
            .cells
            .iter()
            .map(|cell| format!("`{}`", cell.name))
            .collect();
        return fatal(
            &format!("cell `{}` is not declared", escape(&args.cell)),
            Some(format!("declared cells are {}", names.join(", "))),
        );
    };
    let read_object = |path: &Path| -> Result<serde_json::Value, ExitCode> {
        let shown = escape(&path.display().to_string());
        let text = std::fs::read_to_string(path)
            .map_err(|error| fatal(&format!("cannot read `{shown}`: {error}"), None))?;
        tenantc::policy::object_from_yaml(&text).map_err(|error| {
            fatal(
                &format!("`{shown}` is not one YAML object: {}", escape(&error)),
                Some("give one Kubernetes object, without anchors, aliases or tags".to_string()),
            )
        })
    };
    let object = match read_object(&args.object) {
        Ok(object) => object,
        Err(code) => return code,
    };
    let old = match args.old.as_deref().map(read_object).transpose() {
        Ok(old) => old,
        Err(code) => return code,
    };
    let text_at = |object: &serde_json::Value, pointer: &str| {
        object
            .pointer(pointer)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let namespace = args
        .namespace
        .clone()
        .or_else(|| text_at(&object, "/metadata/namespace"));
    let Some(namespace) = namespace else {
        return fatal(
            "the object has no metadata.namespace",
            Some("add metadata.namespace, or pass --namespace".to_string()),
        );
    };
    if let Some(old) = &old {
        let identity = |object: &serde_json::Value| {
            (
                text_at(object, "/kind"),
                text_at(object, "/metadata/name"),
                text_at(object, "/metadata/namespace").unwrap_or_else(|| namespace.clone()),
            )
        };
        if identity(old) != identity(&object) {
            return fatal(
                "the --old object is not the same object: an UPDATE keeps the kind, name and namespace",
                Some("give the object as it is before the change with --old, and as it is after as OBJECT".to_string()),
            );
        }
    }
    let what = format!(
        "{} `{}` in namespace `{}`",
        escape(text_at(&object, "/kind").as_deref().unwrap_or("object")),
        escape(text_at(&object, "/metadata/name").as_deref().unwrap_or("")),
        escape(&namespace),
    );
    let judged = tenantc::policy::resource_of(&object).is_some_and(|(group, version, resource)| {
        tenantc::lower::admission::MATCHED
            .iter()
            .any(|(g, v, r)| *g == group && *v == version && *r == resource)
    });
    if !judged {
        return fatal(
            &format!(
                "the tenant floor does not judge {what} (cell `{}`): its resource rules do not name the kind",
                cell.name
            ),
            Some(format!(
                "it judges {}; the pods of other workloads are judged when they are created, so test their pod template as a Pod",
                judged_kinds()
            )),
        );
    }
    let admission = match CellAdmission::read(cell, output) {
        Ok(admission) => admission,
        Err(error) => {
            return fatal(
                &format!(
                    "the output of cell `{}` does not read back ({}); this is a bug in tenantc",
                    cell.name,
                    escape(&error)
                ),
                None,
            );
        }
    };
    if admission.tenant_of(&namespace).is_none() {
        let namespaces: Vec<String> = cell
            .tenants
            .iter()
            .flat_map(|tenant| tenant.namespaces.iter().map(|ns| format!("`{}`", ns.name)))
            .collect();
        return fatal(
            &format!(
                "no tenant of cell `{}` owns namespace `{}`",
                cell.name,
                escape(&namespace)
            ),
            Some(format!(
                "the tenant floor binds the tenant namespaces {}",
                namespaces.join(", ")
            )),
        );
    }
    let mut request = tenantc::policy::Request::create(&namespace, object.clone());
    request.operation = operation.name().to_string();
    match operation {
        TestPolicyOperation::Create => {}
        TestPolicyOperation::Update => request.old_object = old,
        TestPolicyOperation::Delete => {
            let propagation = match args.cascade.unwrap_or(TestPolicyCascade::Background) {
                TestPolicyCascade::Background => "Background",
                TestPolicyCascade::Foreground => "Foreground",
                TestPolicyCascade::Orphan => "Orphan",
            };
            request = tenantc::policy::Request::delete(
                &namespace,
                object.clone(),
                tenantc::policy::judge::kubectl_delete_options(propagation),
            );
        }
    }
    request.username = args.user.clone().unwrap_or_default();
    request.groups = args.groups.clone();
    let verdict = match admission.judge(&request) {
        Ok(verdict) => verdict,
        Err(error) => {
            return fatal(
                &format!("cannot judge {what}: {}", escape(&error)),
                Some(
                    "tenantc judges only what the API server would admit or refuse; fix the object"
                        .to_string(),
                ),
            );
        }
    };
    let refusals = verdict.refusals();
    let mut text = format!(
        "{}: {} of {what} (tenant `{}`, cell `{}`)\n",
        if refusals.is_empty() {
            "admitted"
        } else {
            "denied"
        },
        operation.name(),
        verdict.tenant,
        cell.name
    );
    let groups: Vec<String> = verdict
        .principal
        .groups
        .iter()
        .map(|group| format!("`{}`", escape(group)))
        .collect();
    let user = if verdict.principal.username.is_empty() {
        "no user name".to_string()
    } else {
        format!("user `{}`", escape(&verdict.principal.username))
    };
    if verdict.principal.default_member {
        text.push_str(&format!(
            "  principal: a member of tenant `{}`: {user}, groups {} (the default; --user and --group name another)\n",
            verdict.tenant,
            groups.join(", ")
        ));
    } else {
        text.push_str(&format!(
            "  principal: {user}, groups {}\n",
            groups.join(", ")
        ));
    }
    let kind = escape(text_at(&object, "/kind").as_deref().unwrap_or("object"));
    let pod_security = match &verdict.pod_security {
        PodSecurityVerdict::NotJudged(why) => format!("not judged: {why}"),
        PodSecurityVerdict::Pod {
            enforce,
            denial: None,
            ..
        } => format!("enforce `{enforce}` admits it"),
        PodSecurityVerdict::Pod { enforce, .. } => format!("enforce `{enforce}` denies it"),
        PodSecurityVerdict::Template { warn, .. } => format!(
            "the pod template of a {kind} is not enforced, only warned about at warn `{warn}`, as the API server does"
        ),
    };
    text.push_str(&format!("  Pod Security: {pod_security}\n"));
    for policy in &verdict.policies {
        let word = match policy.outcome {
            tenantc::policy::Outcome::Denied(_) => "denies it",
            _ => "every validation holds",
        };
        text.push_str(&format!(
            "  {}: {word} (binding `{}`)\n",
            policy.policy, policy.binding
        ));
    }
    // The floor is named even where it does not apply (an UPDATE that changes nothing it
    // checks, a DELETE), so that no one reads its silence as a verdict; the others are counted.
    let floor_binding = tenantc::lower::admission::binding_name(&verdict.tenant);
    let mut others = 0;
    for (policy, binding, why) in &verdict.not_applied {
        if policy == tenantc::lower::admission::POLICY_NAME && *binding == floor_binding {
            text.push_str(&format!(
                "  {policy}: does not apply (binding `{binding}`): {}\n",
                escape(why)
            ));
        } else {
            others += 1;
        }
    }
    if others > 0 {
        text.push_str(&format!(
            "  {others} other admission policy {} of the cell do not apply to this request\n",
            if others == 1 { "binding" } else { "bindings" }
        ));
    }
    for refusal in &refusals {
        let label = match &refusal.judge {
            Judge::PodSecurity => "Pod Security".to_string(),
            Judge::Policy {
                policy, validation, ..
            } => match validation {
                Some(idx) if policy == tenantc::lower::admission::POLICY_NAME => {
                    tenantc::lower::admission::RULES.get(*idx).map_or_else(
                        || format!("{policy} validation {idx}"),
                        |rule| rule.name.to_string(),
                    )
                }
                Some(idx) => format!("{policy} validation {idx}"),
                None => policy.clone(),
            },
        };
        text.push_str(&format!("  {label}: {}\n", escape(&refusal.message)));
    }
    let answers = verdict.answers();
    if refusals.len() > 1 {
        if let [answer] = answers.as_slice() {
            text.push_str(&format!(
                "  the API server answers with the first: {}\n",
                escape(answer)
            ));
        } else {
            text.push_str(&format!(
                "  the API server answers with the first refusal of one of the {} denying policies, in no fixed order\n",
                answers.len()
            ));
        }
    }
    for warning in verdict.warnings() {
        text.push_str(&format!("  warning: {}\n", escape(&warning)));
    }
    text.push_str(&format!("  not judged: {NOT_JUDGED}\n"));
    let code = print_out(&text);
    if refusals.is_empty() {
        code
    } else {
        ExitCode::from(EXIT_ERRORS)
    }
}

/// A `test-policy` usage error, worded and formatted as clap formats its own, exit 2.
fn test_policy_usage(message: &str) -> ExitCode {
    use clap::CommandFactory;
    let mut command = Cli::command();
    command.build();
    let error = match command.find_subcommand_mut("test-policy") {
        Some(sub) => sub.error(clap::error::ErrorKind::ArgumentConflict, message),
        None => command.error(clap::error::ErrorKind::ArgumentConflict, message),
    };
    write_stream(&error.render().to_string(), true);
    ExitCode::from(EXIT_FAILURE)
}

/// The resources the tenant floor matches, for messages: `pods, deployments, …`.
fn judged_kinds() -> String {
    let names: Vec<String> = tenantc::lower::admission::MATCHED
        .iter()
        .filter(|(_, _, resource)| !resource.contains('/'))
        .map(|(group, _, resource)| {
            if group.is_empty() {
                format!("`{resource}`")
            } else {
                format!("`{resource}.{group}`")
            }
        })
        .collect();
    names.join(", ")
}

/// A user-given string made safe to print: every control, bidirectional-formatting and line
/// separator character escaped.
fn escape(text: &str) -> String {
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

/// `tenantc describe`: compiles like `check`, then prints one tenant's plan per cell.
fn describe(args: &DescribeArgs) -> ExitCode {
    let json = args.format == DescribeFormat::Json;
    let fatal = |message: &str, help: Option<String>| fatal_with_help(json, message, help);
    let loaded = match load::load(&args.root) {
        Ok(loaded) => loaded,
        Err(error) => return fatal(&format!("cannot read declarations: {error}"), None),
    };
    let compilation = compile_loaded(&loaded);
    let show_diagnostics = || {
        if json {
            print!(
                "{}",
                render::json_report(
                    "describe",
                    &compilation.diagnostics,
                    &compilation.suppressed,
                    &compilation.sources,
                    &[]
                )
            );
        } else {
            let text = render::human(
                &compilation.diagnostics,
                &compilation.sources,
                color(args.color),
            );
            eprint!("{text}");
            if !compilation.diagnostics.is_empty() || !compilation.suppressed.is_empty() {
                eprintln!(
                    "{}; `tenantc explain <code>` tells more about a code",
                    render::summary_with_silenced(
                        &compilation.diagnostics,
                        compilation.suppressed.len()
                    )
                );
            }
        }
    };
    if let Some(error) = &compilation.internal_error {
        show_diagnostics();
        return fatal(
            &format!("{error}; this is a bug in tenantc, please report it"),
            None,
        );
    }
    if compilation.has_errors() {
        show_diagnostics();
        return ExitCode::from(EXIT_ERRORS);
    }
    let Some(plan) = &compilation.plan else {
        return fatal(
            "the declarations have no error but were not resolved; this is a bug in tenantc, please report it",
            None,
        );
    };
    let declared: Vec<&str> = compilation
        .fleet
        .tenants
        .iter()
        .map(|tenant| tenant.name.value.as_str())
        .collect();
    let view = match tenantc::describe::lookup(plan, &declared, &args.tenant, args.cell.as_deref())
    {
        Ok(view) => view,
        Err(error) => return fatal(&error.message(), Some(error.help())),
    };
    if !json {
        // Warnings still reach the user, on stderr.
        show_diagnostics();
        return print_out(&tenantc::describe::human(&view));
    }
    let mut document = match tenantc::describe::json(&view) {
        Ok(document) => document,
        Err(error) => {
            return fatal(
                &format!(
                    "the plan cannot be written as JSON: {error}; this is a bug in tenantc, please report it"
                ),
                None,
            );
        }
    };
    // The warnings of the compilation, as `check --format json` lists them.
    let report: serde_json::Value = serde_json::from_str(&render::json_report(
        "describe",
        &compilation.diagnostics,
        &compilation.suppressed,
        &compilation.sources,
        &[],
    ))
    .unwrap_or_default();
    if let serde_json::Value::Object(fields) = &mut document {
        for key in [
            "tenantc",
            "kind",
            "diagnostics",
            "warnings",
            "silenced",
            "suppressed",
        ] {
            let value = report.get(key).cloned().unwrap_or_default();
            fields.insert(key.to_string(), value);
        }
    }
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    print_out(&text)
}

/// Writes to stdout and succeeds; a reader that stops early (`| head`) is not an error, and
/// `main` turns any other write error into exit 2.
fn print_out(text: &str) -> ExitCode {
    write_stream(text, false);
    ExitCode::SUCCESS
}

/// The diagnostics reference, compiled in so `explain` works offline and matches this build.
const DIAGNOSTICS_DOC: &str = include_str!("../../docs/diagnostics.md");

/// The section of `code` in the diagnostics reference, from its heading to the next one.
fn doc_section(code: &str) -> Option<&'static str> {
    let heading = format!("## `{code}`\n");
    let start = DIAGNOSTICS_DOC.find(&heading)?;
    let section = DIAGNOSTICS_DOC.get(start..)?;
    let body = section.get(heading.len()..)?;
    let end = body
        .find("\n## ")
        .map_or(section.len(), |idx| idx + heading.len() + 1);
    section.get(..end)
}

/// The severities a code is reported with, as the registry lists them (and `docs/diagnostics.md`
/// names them, a test of `diag::code` says): `error`, `warning`, or both for a code reported as
/// either (such as `file-not-regular`).
fn severities(code: tenantc::diag::Code) -> Vec<&'static str> {
    code.severities()
        .iter()
        .map(|severity| severity.as_str())
        .collect()
}

fn explain(code: Option<&str>, format: DescribeFormat) -> ExitCode {
    use tenantc::diag::Code;
    let json = format == DescribeFormat::Json;
    let entry = |code: &Code| {
        serde_json::json!({
            "code": code.as_str(),
            "stage": code.stage(),
            "severities": severities(*code),
            "description": code.description(),
        })
    };
    let Some(wanted) = code else {
        if json {
            let codes: Vec<serde_json::Value> = Code::ALL.iter().map(entry).collect();
            let document = serde_json::json!({
                "tenantc": render::JSON_ENVELOPE_VERSION,
                "kind": "explain",
                "codes": codes,
            });
            let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
            text.push('\n');
            return print_out(&text);
        }
        let mut text = format!(
            "{:<36} {:<10} {:<13} {}\n",
            "CODE", "STAGE", "SEVERITY", "DESCRIPTION"
        );
        for code in Code::ALL {
            text.push_str(&format!(
                "{:<36} {:<10} {:<13} {}\n",
                code.as_str(),
                code.stage(),
                severities(*code).join("|"),
                code.description()
            ));
        }
        return print_out(&text);
    };
    let found = Code::ALL.iter().find(|code| code.as_str() == wanted);
    let (Some(code), Some(section)) = (found, doc_section(wanted)) else {
        let names = Code::ALL.iter().map(|code| code.as_str());
        let close = tenantc::diag::did_you_mean(wanted, names);
        let hint = close
            .map(|close| format!("; did you mean `{close}`?"))
            .unwrap_or_default();
        let message = format!("`{}` is not a diagnostic code{hint}", escape(wanted));
        let help = "`tenantc explain` lists every code";
        eprintln!("error: {message}");
        eprintln!("  = help: {help}");
        if json {
            println!("{}", fatal_json(&message, Some(help)));
        }
        return ExitCode::from(EXIT_FAILURE);
    };
    if json {
        let mut document = entry(code);
        if let serde_json::Value::Object(fields) = &mut document {
            fields.insert("tenantc".into(), render::JSON_ENVELOPE_VERSION.into());
            fields.insert("kind".into(), "explain".into());
            fields.insert("section".into(), section.into());
        }
        let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
        text.push('\n');
        return print_out(&text);
    }
    print_out(section)
}

/// `tenantc catalog [GPU]`: the compiled-in hardware catalog, or one GPU model of it.
fn catalog(gpu: Option<&str>, format: DescribeFormat) -> ExitCode {
    let catalog = tenantc::catalog::Catalog::builtin();
    let json = format == DescribeFormat::Json;
    let skus: Vec<&tenantc::catalog::GpuSku> = match gpu {
        None => catalog.skus().collect(),
        Some(key) => {
            let found = matching_skus(catalog, key);
            if found.is_empty() {
                let hint = catalog
                    .suggest_sku(key)
                    .map(|close| format!("; did you mean `{close}`?"))
                    .unwrap_or_default();
                let message = format!(
                    "`{}` is not a GPU model key of the catalog{hint}",
                    escape(key)
                );
                let help = "`tenantc catalog` lists every key; a model the catalog lacks is declared in the cell with `gpu-model`";
                eprintln!("error: {message}");
                eprintln!("  = help: {help}");
                if json {
                    println!("{}", fatal_json(&message, Some(help)));
                }
                return ExitCode::from(EXIT_FAILURE);
            }
            found
        }
    };
    // One model is shown in full; no key, or one that starts several keys, lists them.
    let listing = gpu.is_none() || skus.len() > 1;
    let family = |key: &str| key.split('-').next().unwrap_or(key).to_string();
    let sharing = |sku: &tenantc::catalog::GpuSku| -> Vec<&'static str> {
        sku.sharing.iter().map(|mode| mode.as_str()).collect()
    };
    let table = |sku: &tenantc::catalog::GpuSku| {
        sku.mig_table.as_deref().and_then(|key| catalog.table(key))
    };
    if json {
        let gpus: Vec<serde_json::Value> = skus
            .iter()
            .map(|sku| {
                let profiles: Vec<serde_json::Value> = table(sku)
                    .map(|table| {
                        table
                            .profiles
                            .iter()
                            .map(|profile| {
                                serde_json::json!({
                                    "name": profile.name,
                                    "compute_slices": profile.compute_slices,
                                    "memory_slices": profile.memory_slices,
                                    "memory_gb": profile.memory_gb,
                                    "max": profile.max_count,
                                    "min_driver": profile.min_driver,
                                    "inferred": profile.inferred,
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                serde_json::json!({
                    "key": sku.key,
                    "family": family(&sku.key),
                    "product_name": sku.product_name,
                    "generic": sku.generic,
                    "pci_ids": sku.pci_ids,
                    "sharing": sharing(sku),
                    "mig_table": sku.mig_table,
                    "mig_confidence": table(sku).map(|table| table.confidence.clone()),
                    "mig_profiles": profiles,
                })
            })
            .collect();
        let document = serde_json::json!({
            "tenantc": render::JSON_ENVELOPE_VERSION,
            "kind": "catalog",
            "catalog_version": catalog.catalog_version,
            "gpus": gpus,
        });
        let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
        text.push('\n');
        return print_out(&text);
    }
    let mut text = String::new();
    if listing {
        text.push_str(&format!(
            "{:<30} {:<8} {:<44} {:<28} {}\n",
            "GPU MODEL", "FAMILY", "SHARING", "MIG TABLE", "MIG PROFILES"
        ));
        for sku in &skus {
            let profiles: Vec<&str> = table(sku)
                .map(|table| {
                    table
                        .profiles
                        .iter()
                        .map(|profile| profile.name.as_str())
                        .collect()
                })
                .unwrap_or_default();
            text.push_str(&format!(
                "{:<30} {:<8} {:<44} {:<28} {}\n",
                sku.key,
                family(&sku.key),
                sharing(sku).join(", "),
                sku.mig_table.as_deref().unwrap_or("-"),
                if profiles.is_empty() {
                    "-".to_string()
                } else {
                    profiles.join(", ")
                }
            ));
        }
        match gpu {
            None => text.push_str("\n`tenantc catalog <GPU>` shows one model's PCI ids and MIG profiles; docs/catalog.md explains the sources.\n"),
            Some(key) => text.push_str(&format!(
                "\n`{}` starts the keys of {} models; `tenantc catalog <GPU>` shows one in full.\n",
                escape(key),
                skus.len()
            )),
        }
        return print_out(&text);
    }
    for sku in &skus {
        text.push_str(&format!("{}\n", sku.key));
        text.push_str(&format!("  family:    {}\n", family(&sku.key)));
        text.push_str(&format!(
            "  product:   {}\n",
            sku.product_name.as_deref().unwrap_or("-")
        ));
        if sku.generic {
            text.push_str("  generic:   yes, a key for a table shared by several products; prefer a product key\n");
        }
        text.push_str(&format!("  pci ids:   {}\n", sku.pci_ids.join(", ")));
        text.push_str(&format!("  sharing:   {}\n", sharing(sku).join(", ")));
        match table(sku) {
            None => text.push_str("  mig:       not supported\n"),
            Some(table) => {
                text.push_str(&format!(
                    "  mig table: {} ({} compute slices, {} memory slices; confidence: {})\n",
                    table.key, table.compute_slices, table.memory_slices, table.confidence
                ));
                text.push_str(&format!(
                    "    {:<16} {:>7} {:>6} {:>9} {:>4} {:>10} {}\n",
                    "PROFILE", "COMPUTE", "MEMORY", "MEMORY GB", "MAX", "MIN DRIVER", "INFERRED"
                ));
                for profile in &table.profiles {
                    text.push_str(&format!(
                        "    {:<16} {:>7} {:>6} {:>9} {:>4} {:>10} {}\n",
                        profile.name,
                        profile.compute_slices,
                        profile.memory_slices,
                        profile.memory_gb,
                        profile.max_count,
                        profile
                            .min_driver
                            .map_or("-".to_string(), |driver| format!("R{driver}")),
                        if profile.inferred { "yes" } else { "no" }
                    ));
                }
            }
        }
    }
    print_out(&text)
}

/// The catalog models `wanted` names, compared without case: the model whose key it is, else
/// every model whose key it starts at a `-` (`H20` names `H20-96GB`, not the H200 models),
/// else every model whose key it starts at all.
fn matching_skus<'a>(
    catalog: &'a tenantc::catalog::Catalog,
    wanted: &str,
) -> Vec<&'a tenantc::catalog::GpuSku> {
    let wanted = wanted.to_ascii_lowercase();
    let keyed = |sku: &&tenantc::catalog::GpuSku| sku.key.to_ascii_lowercase();
    let exact: Vec<_> = catalog.skus().filter(|sku| keyed(sku) == wanted).collect();
    if !exact.is_empty() {
        return exact;
    }
    let at_part: Vec<_> = catalog
        .skus()
        .filter(|sku| {
            keyed(sku)
                .strip_prefix(&wanted)
                .is_some_and(|rest| rest.starts_with('-'))
        })
        .collect();
    if !at_part.is_empty() || wanted.is_empty() {
        return at_part;
    }
    catalog
        .skus()
        .filter(|sku| keyed(sku).starts_with(&wanted))
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Build,
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

/// Reports a failure (exit 2) with an optional help line on stderr, and for `--format json` also
/// as the fatal envelope on stdout.
fn fatal_with_help(json: bool, message: &str, help: Option<String>) -> ExitCode {
    eprintln!("error: {message}");
    if let Some(help) = &help {
        eprintln!("  = help: {help}");
    }
    if json {
        println!("{}", fatal_json(message, help.as_deref()));
    }
    ExitCode::from(EXIT_FAILURE)
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

/// Reports a usage, IO or internal failure (exit 2): on stderr, and for `--format json` also as
/// `{"fatal": …}` on stdout (for `--format sarif`, a SARIF log whose invocation failed) so tools
/// always get a document.
fn fail(args: &CommonArgs, message: &str) -> ExitCode {
    eprintln!("error: {message}");
    match args.format {
        FormatArg::Human => {}
        FormatArg::Json => println!("{}", fatal_json(message, None)),
        FormatArg::Sarif => print!("{}", render::sarif_fatal(message)),
    }
    ExitCode::from(EXIT_FAILURE)
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

fn run(args: &CommonArgs, mode: Mode) -> ExitCode {
    let deny = match deny_rule(&args.deny) {
        Ok(deny) => deny,
        Err(message) => return fail(args, &message),
    };
    let loaded = match load::load(&args.root) {
        Ok(loaded) => loaded,
        Err(error) => return fail(args, &format!("cannot read declarations: {error}")),
    };
    let out_dir = args.out_dir();
    if let Some(problem) = overlaps_declarations(&args.root, &out_dir) {
        return fail(args, &problem);
    }
    // A build first takes the lock of out/ and finishes or undoes an interrupted write, before
    // anything else touches it.
    let mut writer = match mode {
        Mode::Build => match out_fs::Writer::open(&out_dir, test_faults(), note_waiting) {
            Ok(writer) => {
                notice_recovery(args, &out_dir, &writer);
                Some(writer)
            }
            Err(error) => {
                return fail(
                    args,
                    &format!("cannot write {}: {error}", out_dir.display()),
                );
            }
        },
        Mode::Check => None,
    };
    let mut compilation = compile_loaded(&loaded);
    // A denied warning fails the run like an error: nothing is written or compared.
    if deny.apply(&mut compilation.diagnostics) > 0 {
        compilation.output = None;
    }
    if let Some(error) = &compilation.internal_error {
        report(args, mode, &compilation, &[]);
        return fail(
            args,
            &format!("{error}; this is a bug in tenantc, please report it"),
        );
    }
    let Some(tree) = &compilation.output else {
        report(args, mode, &compilation, &[]);
        return ExitCode::from(EXIT_ERRORS);
    };
    match writer.as_mut() {
        Some(writer) => match writer.write(tree) {
            Ok(changes) => {
                report(args, mode, &compilation, &[]);
                if args.format == FormatArg::Human {
                    eprintln!("{}", written(&out_dir, tree.len(), &changes));
                }
                ExitCode::SUCCESS
            }
            Err(error) => {
                // Warnings of the compilation still reach the user.
                if args.format == FormatArg::Human {
                    report(args, mode, &compilation, &[]);
                }
                fail(
                    args,
                    &format!("cannot write {}: {error}", out_dir.display()),
                )
            }
        },
        None => {
            let current = match out_fs::read_tree_waiting(&out_dir, note_waiting) {
                Ok(current) => current,
                Err(error) => {
                    return fail(args, &format!("cannot read {}: {error}", out_dir.display()));
                }
            };
            let changes = out_fs::compare(tree, &current);
            report(args, mode, &compilation, &changes);
            if changes.is_empty() {
                if args.format == FormatArg::Human {
                    eprintln!(
                        "{} is up to date ({})",
                        out_dir.display(),
                        files(tree.len())
                    );
                }
                ExitCode::SUCCESS
            } else {
                if args.format == FormatArg::Human {
                    print_stale(&out_dir, &changes, tree, &current);
                }
                ExitCode::from(EXIT_ERRORS)
            }
        }
    }
}

/// What a build wrote: the files it wrote and removed, never the files it left as they were.
fn written(out_dir: &Path, total: usize, changes: &[Change]) -> String {
    let removed = changes
        .iter()
        .filter(|change| matches!(change, Change::Extra(_)))
        .count();
    let wrote = changes.len().saturating_sub(removed);
    if changes.is_empty() {
        return format!(
            "{} is up to date ({}); nothing written",
            out_dir.display(),
            files(total)
        );
    }
    let mut parts = Vec::new();
    if total > wrote {
        parts.push(format!("{} unchanged", total.saturating_sub(wrote)));
    }
    if removed > 0 {
        parts.push(format!("{removed} removed"));
    }
    let detail = if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    };
    format!("wrote {} to {}{detail}", files(wrote), out_dir.display())
}

/// `1 file`, `2 files`.
fn files(count: usize) -> String {
    format!("{count} file{}", if count == 1 { "" } else { "s" })
}

/// Test-only fault injection: `TENANTC_TEST_CRASH_AFTER=N` aborts the process after N
/// filesystem operations of writing out/, and `TENANTC_TEST_FAIL_AFTER=N` makes the next one fail.
/// `tests/crash.rs` uses them to stop a real build at every step; never set them otherwise.
fn test_faults() -> out_fs::Faults {
    // Only builds with debug assertions (the ones `cargo test` runs) read the hooks: a release
    // binary in CI cannot be made to crash or fail on purpose by its environment.
    let number = |name: &str| {
        if !cfg!(debug_assertions) {
            return None;
        }
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
    };
    out_fs::Faults {
        crash_after: number("TENANTC_TEST_CRASH_AFTER"),
        fail_after: number("TENANTC_TEST_FAIL_AFTER"),
    }
}

/// Says on stderr that this run waits for another build's lock.
fn note_waiting(message: &str) {
    eprintln!("note: {message}");
}

/// Says what opening out/ repaired, and which leftovers of older versions lie beside it.
fn notice_recovery(args: &CommonArgs, out_dir: &Path, writer: &out_fs::Writer) {
    if args.format != FormatArg::Human {
        return;
    }
    match writer.recovery() {
        out_fs::Recovery::Clean => {}
        out_fs::Recovery::RolledForward => eprintln!(
            "note: finished the interrupted write of an earlier build in {}",
            out_dir.display()
        ),
        out_fs::Recovery::RolledBack => eprintln!(
            "note: removed the temporary files of an interrupted build from {}",
            out_dir.display()
        ),
    }
    for leftover in writer.leftovers() {
        eprintln!(
            "warning: {} was left by an interrupted build of an older tenantc; nothing uses it, remove it with `rm -rf`",
            leftover.display()
        );
    }
}

/// Resolves `path` as the system will once it exists: every existing prefix is canonicalised
/// (following symbolic links), and the missing rest is appended with `.` and `..` applied.
fn resolve(path: &Path) -> PathBuf {
    let mut resolved = if path.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir()
            .and_then(|dir| dir.canonicalize())
            .unwrap_or_default()
    };
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::RootDir | Component::Prefix(_) => resolved.push(part),
            Component::Normal(name) => {
                resolved.push(name);
                // A missing part (or a dangling link, which nothing can be created through) is
                // taken as written.
                if let Ok(canonical) = resolved.canonicalize() {
                    resolved = canonical;
                }
            }
        }
    }
    resolved
}

/// Why `out` must not be written, if it resolves into `tenants/` or `cells/` under the root (the
/// next build would read the output as declarations) or holds one of them (the build would
/// delete the declarations). Paths are compared after following symbolic links.
fn overlaps_declarations(root: &Path, out: &Path) -> Option<String> {
    let resolved_out = resolve(out);
    load::FOLDERS.iter().find_map(|folder| {
        let declarations = resolve(&root.join(folder));
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

fn change_word(change: &Change) -> &'static str {
    match change {
        Change::Missing(_) => "missing",
        Change::Changed(_) => "changed",
        Change::Extra(_) => "extra",
    }
}

/// Diff lines shown per changed file, and in all, before the rest is only counted.
const STALE_DIFF_LINES_PER_FILE: usize = 40;
const STALE_DIFF_LINES: usize = 200;

fn print_stale(
    out_dir: &Path,
    changes: &[Change],
    built: &tenantc::emit::OutputTree,
    current: &tenantc::emit::OutputTree,
) {
    eprintln!(
        "error[out-stale]: {} differs from what `tenantc build` writes ({})",
        out_dir.display(),
        files(changes.len())
    );
    for change in changes {
        eprintln!("  {:<8} {}", change_word(change), change.path());
    }
    // What changed inside each changed file, bounded, so a reviewer sees whether the committed
    // output was edited by hand or simply not rebuilt.
    let mut budget = STALE_DIFF_LINES;
    for change in changes {
        let Change::Changed(path) = change else {
            continue;
        };
        if budget == 0 {
            eprintln!("  … more changed files; run `tenantc build` and `git diff` to see all");
            break;
        }
        let text = |tree: &tenantc::emit::OutputTree| {
            tree.get(path)
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                .unwrap_or_default()
        };
        let diff = tenantc::emit::diff::unified(
            &text(current),
            &text(built),
            STALE_DIFF_LINES_PER_FILE.min(budget),
        );
        eprintln!("  --- {}/{path} (in out/)", out_dir.display());
        eprintln!("  +++ {}/{path} (as built)", out_dir.display());
        for line in diff.lines() {
            // The committed out/ is as untrusted as the declarations: escaped, a file cannot fake
            // lines of a CI log or drive the reviewer's terminal.
            eprintln!("  {}", tenantc::diag::printable(line.to_string()));
        }
        budget = budget.saturating_sub(diff.lines().count());
    }
    eprintln!("  = help: run `tenantc build` and commit the result; never edit out/ by hand");
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

fn report(args: &CommonArgs, mode: Mode, compilation: &Compilation, changes: &[Change]) {
    match args.format {
        FormatArg::Human => {
            let text = render::human(&compilation.diagnostics, &compilation.sources, args.color());
            eprint!("{text}");
            if !compilation.diagnostics.is_empty() || !compilation.suppressed.is_empty() {
                eprintln!(
                    "{}; `tenantc explain <code>` tells more about a code",
                    render::summary_with_silenced(
                        &compilation.diagnostics,
                        compilation.suppressed.len()
                    )
                );
            }
        }
        FormatArg::Json | FormatArg::Sarif => {
            let stale: Vec<(String, String)> = changes
                .iter()
                .map(|change| (change.path().to_string(), change_word(change).to_string()))
                .collect();
            let text = if args.format == FormatArg::Json {
                render::json_report(
                    mode.as_str(),
                    &compilation.diagnostics,
                    &compilation.suppressed,
                    &compilation.sources,
                    &stale,
                )
            } else {
                render::sarif_report(
                    &compilation.diagnostics,
                    &compilation.suppressed,
                    &compilation.sources,
                    &stale,
                    &sarif_base(&args.root),
                )
            };
            print!("{text}");
        }
    }
}

/// Runs a `tenantc weights` command.
fn weights(command: WeightsCommand) -> ExitCode {
    let fatal = |message: &str| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_FAILURE)
    };
    match command {
        WeightsCommand::Hash {
            dir,
            files,
            threads,
        } => match hash_weights(&dir, threads) {
            Ok(manifest) => {
                let mut text = String::new();
                if files {
                    for file in &manifest {
                        text.push_str(&format!(
                            "{}  {}\n",
                            digest::hex(&file.sha256),
                            load::escape_str(&file.path)
                        ));
                    }
                }
                text.push_str(&format!(
                    "sha256:{}\n",
                    digest::hex(&digest::root_digest(&manifest))
                ));
                print_out(&text)
            }
            Err(error) => fatal(&hash_failure(&dir, &error)),
        },
        WeightsCommand::Lock {
            tenant,
            model,
            source,
            signature,
            root,
        } => {
            let loaded = match load::load(&root) {
                Ok(loaded) => loaded,
                Err(error) => return fatal(&format!("cannot read {}: {error}", root.display())),
            };
            let Some(declared) = tenantc::read_tenant(&loaded.inputs, &tenant) else {
                if has_tenant_file(&loaded, &tenant) {
                    return tenant_file_errors(&loaded, &tenant, &model);
                }
                return fatal(&format!(
                    "tenant `{}` is not declared under {}",
                    load::escape_str(&tenant),
                    root.join("tenants").display()
                ));
            };
            let material: tenantc::weights::Material = loaded
                .inputs
                .iter()
                .filter(|input| tenantc::weights::is_material(&input.path))
                .map(|input| (input.path.clone(), input.contents.clone()))
                .collect();
            let (hashed, signature_file) = if source.is_dir() {
                let Some(signature) = signature else {
                    return fatal(
                        "a weights folder needs `--signature <file under weights/>`: the bundle or detached signature that signs it",
                    );
                };
                match hash_weights(&source, None) {
                    Ok(manifest) => (Some(manifest), signature),
                    Err(error) => return fatal(&hash_failure(&source, &error)),
                }
            } else {
                if signature.is_some() {
                    return fatal(
                        "`--signature` goes with a weights folder; a bundle signs itself",
                    );
                }
                (None, source)
            };
            if !signature_file.exists() {
                return fatal(&format!(
                    "{} does not exist; paths are read from the current folder, not from --root",
                    load::escape_str(&signature_file.display().to_string())
                ));
            }
            let Some(relative) = relative_to_root(&root, &signature_file) else {
                return fatal(&format!(
                    "{} is not inside the project root {}; commit it under weights/",
                    signature_file.display(),
                    root.display()
                ));
            };
            if !declared.complete && !declared.models.iter().any(|m| m.name.value == model) {
                // The model may be declared with a mistake that left it out: show the tenant
                // file's diagnostics rather than say it declares no such model.
                return tenant_file_errors(&loaded, &tenant, &model);
            }
            match tenantc::weights::prepare_lock(&declared, &model, hashed, &relative, &material) {
                Ok((entry, bytes)) => {
                    let lock_file = root.join(tenantc::weights::lock_path(&tenant));
                    if let Err(error) = write_atomically(&lock_file, &bytes) {
                        return fatal(&format!("cannot write {}: {error}", lock_file.display()));
                    }
                    print_out(&format!(
                        "locked {} {} {} ({} files, {}) in {}\n",
                        entry.name,
                        entry.version,
                        entry.digest,
                        entry.files.len(),
                        entry.signature.format,
                        tenantc::weights::lock_path(&tenant)
                    ))
                }
                Err(error) => {
                    eprintln!("error: {}", load::escape_str(error.message()));
                    match error {
                        tenantc::weights::LockError::Usage(_) => ExitCode::from(EXIT_FAILURE),
                        tenantc::weights::LockError::NotVerified(_) => ExitCode::from(EXIT_ERRORS),
                    }
                }
            }
        }
    }
}

/// Whether `path` is a declaration file of `tenant`, `tenants/<tenant>.<ext>`.
fn is_file_of(path: &str, tenant: &str) -> bool {
    path.strip_prefix("tenants/")
        .and_then(|name| name.rsplit_once('.'))
        .is_some_and(|(stem, _)| stem == tenant)
        && tenantc::classify(path).is_some_and(|(_, format)| format.is_some())
}

/// Whether the root holds a declaration file of `tenant`, readable or not.
fn has_tenant_file(loaded: &load::Loaded, tenant: &str) -> bool {
    loaded
        .inputs
        .iter()
        .any(|input| is_file_of(&input.path, tenant))
}

/// `weights lock` of a model that the tenant's declaration may hold with a mistake: prints the
/// diagnostics of the tenant's files and exits 1, as `check` would for them.
fn tenant_file_errors(loaded: &load::Loaded, tenant: &str, model: &str) -> ExitCode {
    let compilation = compile_loaded(loaded);
    let is_tenant_file = |path: &str| is_file_of(path, tenant);
    let diagnostics: Vec<tenantc::diag::Diagnostic> = compilation
        .diagnostics
        .iter()
        .filter(|diagnostic| {
            diagnostic.is_error()
                && diagnostic
                    .primary_span()
                    .is_some_and(|span| is_tenant_file(compilation.sources.path(span.file)))
        })
        .cloned()
        .collect();
    eprint!(
        "{}",
        render::human(&diagnostics, &compilation.sources, color(ColorArg::Auto))
    );
    eprintln!(
        "error: the declaration of tenant `{}` has errors and holds no readable model `{}`; fix {} first",
        load::escape_str(tenant),
        load::escape_str(model),
        if diagnostics.is_empty() {
            "what `tenantc check` reports"
        } else {
            "the errors above"
        }
    );
    ExitCode::from(EXIT_ERRORS)
}

/// Why a weights folder could not be hashed, naming the folder once: an error about the folder
/// itself is told as such, one about a file inside it names the file.
fn hash_failure(dir: &Path, error: &digest::HashError) -> String {
    let shown = load::escape_str(&dir.display().to_string());
    let about_dir = |path: &str| Path::new(path) == dir;
    let reason = match error {
        digest::HashError::Io(path, io_error) if path == dir => match io_error.kind() {
            std::io::ErrorKind::NotFound => "no such folder".to_string(),
            std::io::ErrorKind::NotADirectory => {
                "not a folder; pass the folder that holds the weights".to_string()
            }
            _ => io_error.to_string(),
        },
        digest::HashError::Symlink(path) if about_dir(path) => {
            "it is a symbolic link; pass the folder it points to".to_string()
        }
        other => load::escape_str(&other.to_string()),
    };
    format!("cannot hash {shown}: {reason}")
}

/// Hashes a weights folder, with progress on a terminal for folders over 256 MiB.
fn hash_weights(
    dir: &Path,
    threads: Option<usize>,
) -> Result<Vec<digest::FileDigest>, digest::HashError> {
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
    let show = std::io::stderr().is_terminal();
    let last_shown = std::sync::atomic::AtomicU64::new(0);
    let progress = |done: u64, total: u64| {
        const LONG: u64 = 256 * 1024 * 1024;
        const STEP: u64 = 64 * 1024 * 1024;
        if !show || total < LONG {
            return;
        }
        let shown = last_shown.load(std::sync::atomic::Ordering::Relaxed);
        if done >= shown + STEP || done == total {
            last_shown.store(done, std::sync::atomic::Ordering::Relaxed);
            eprint!(
                "\rhashing {} of {} MiB",
                done / (1024 * 1024),
                total / (1024 * 1024)
            );
            if done == total {
                eprintln!();
            }
        }
    };
    digest::hash_dir(dir, threads, &progress)
}

/// `path` relative to the project root, `/`-separated, if it lies inside it.
fn relative_to_root(root: &Path, path: &Path) -> Option<String> {
    let root = std::fs::canonicalize(root).ok()?;
    let path = std::fs::canonicalize(path).ok()?;
    let relative = path.strip_prefix(&root).ok()?;
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    Some(parts?.join("/"))
}

/// Writes a file through a temporary file and a rename, so a reader never sees half of it.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("lock.tmp");
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DiffFormat {
    /// Markdown, for a pull-request comment.
    Markdown,
    /// One JSON document.
    Json,
    /// A unified diff of the output trees (bounded).
    Files,
}

#[derive(Debug, Args)]
struct DiffArgs {
    /// The git revision to compare the work tree with, such as `origin/main`.
    #[arg(long, value_name = "REV")]
    base: String,
    /// Project root holding tenants/ and cells/, inside a git work tree.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// How to print the diff.
    #[arg(long, value_enum, default_value_t = DiffFormat::Markdown)]
    format: DiffFormat,
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
}

/// `tenantc diff`: compiles the base revision and the work tree and prints what changed.
fn diff(args: &DiffArgs) -> ExitCode {
    use tenantc::review::{self, diff as review_diff};
    let json = args.format == DiffFormat::Json;
    let fatal = |message: &str, help: Option<String>| fatal_with_help(json, message, help);
    let (commit, base_loaded) = match tenantc::git::load_revision(&args.root, &args.base) {
        Ok(found) => found,
        Err(error) => return fatal(&error.message(), Some(error.help())),
    };
    let head_loaded = match load::load(&args.root) {
        Ok(loaded) => loaded,
        Err(error) => return fatal(&format!("cannot read declarations: {error}"), None),
    };
    let short: String = commit.chars().take(12).collect();
    let base_name = format!("{} ({short})", args.base);
    let mut sides = Vec::new();
    for (side, loaded) in [
        (format!("base {base_name}"), &base_loaded),
        ("the work tree".to_string(), &head_loaded),
    ] {
        let compilation = compile_loaded(loaded);
        if let Some(error) = &compilation.internal_error {
            return fatal(
                &format!("{side}: {error}; this is a bug in tenantc, please report it"),
                None,
            );
        }
        if compilation.has_errors() {
            eprintln!("error: {side} does not compile; its diagnostics follow");
            if json {
                print!(
                    "{}",
                    render::json_report(
                        "diff",
                        &compilation.diagnostics,
                        &compilation.suppressed,
                        &compilation.sources,
                        &[]
                    )
                );
            }
            eprint!(
                "{}",
                render::human(
                    &compilation.diagnostics,
                    &compilation.sources,
                    color(args.color)
                )
            );
            eprintln!("{} in {side}", render::summary(&compilation.diagnostics));
            return ExitCode::from(EXIT_ERRORS);
        }
        sides.push(compilation);
    }
    let (Some(base), Some(head)) = (sides.first(), sides.get(1)) else {
        return fatal(
            "a side was not compiled; this is a bug in tenantc, please report it",
            None,
        );
    };
    let text = match args.format {
        DiffFormat::Files => {
            let empty = tenantc::emit::OutputTree::new();
            review_diff::files(
                base.output.as_ref().unwrap_or(&empty),
                head.output.as_ref().unwrap_or(&empty),
            )
        }
        DiffFormat::Markdown | DiffFormat::Json => {
            let (Some(base_plan), Some(head_plan)) = (&base.plan, &head.plan) else {
                return fatal(
                    "the declarations have no error but were not resolved; this is a bug in tenantc, please report it",
                    None,
                );
            };
            let changes = review_diff::diff(
                &review::review(base_plan),
                &review::review(head_plan),
                &base_name,
                "work tree",
            );
            if json {
                match review_diff::json(&changes) {
                    Ok(text) => text,
                    Err(error) => {
                        return fatal(
                            &format!(
                                "the diff cannot be written as JSON: {error}; this is a bug in tenantc, please report it"
                            ),
                            None,
                        );
                    }
                }
            } else {
                review_diff::markdown(&changes)
            }
        }
    };
    print_out(&text)
}
