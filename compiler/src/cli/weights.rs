//! `tenantc weights hash` and `tenantc weights lock`: the root digest of a weights folder, and a
//! model's entry in its tenant's lock file.
//!
//! Consumes: [`WeightsCommand`], a weights folder (hashed by `weights::digest`) or a signed
//! bundle, and the tenant's declaration, keys and lock under the root. Produces: the digest on
//! stdout, or `weights/<tenant>.lock` written atomically with the entry, verified first exactly
//! as `tenantc build` verifies it.
//!
//! Invariant: nothing is written unless the entry verifies with one of the model's declared keys;
//! a tenant declaration with errors prints its diagnostics and exits 1.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use tenantc::diag::render;
use tenantc::load;
use tenantc::weights::digest;

use super::ColorArg;
use super::disk;
use super::error::{Exit, Fatal};
use super::output::print_out;

/// The subcommands of `tenantc weights`.
#[derive(Debug, Subcommand)]
pub enum WeightsCommand {
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

SOURCE is either a local copy of the weights folder (hashed here; pass the signature with --signature) or a model-signing bundle (a sigstore bundle whose signed statement lists every file and digest; no weights needed). A cosign-style detached signature (base64 DER ECDSA, `cosign sign-blob --key`) signs the line `<object path> sha256:<root>` and lists no files, so it needs the folder. Signature files must be committed under weights/.

Many models at once, reading the project once: --all locks every declared model of every tenant from its bundle at weights/<tenant>/<model>-<version>.sig.json; --list FILE (`-` for stdin) locks the models its lines name, one `TENANT MODEL SOURCE [SIGNATURE]` per line (blank lines and lines starting with # are skipped). Either writes no lock file unless every entry verifies, and prints every failure.",
        after_help = "Examples:
  tenantc weights lock acme-research llama-tiny weights/acme-research/llama-tiny-v3.sig.json
  tenantc weights lock acme-research llama-tiny ./llama-tiny --signature weights/acme-research/llama-tiny-v3.sig.json
  tenantc weights lock acme-research llama-tiny ./llama-tiny --signature weights/acme-research/llama-tiny-v3.sig
  tenantc weights lock --all
  tenantc weights lock --list models.txt

Exit codes: 0 written, 1 an entry does not verify or a tenant's declaration has errors, 2 an undeclared tenant or model, a signature that is not a file under weights/, usage or IO errors (nothing is written unless every entry verifies)."
    )]
    Lock {
        /// The tenant, as named in its declaration.
        #[arg(required_unless_present_any = ["all", "list"], conflicts_with_all = ["all", "list"])]
        tenant: Option<String>,
        /// The model, as the tenant declares it.
        #[arg(required_unless_present_any = ["all", "list"])]
        model: Option<String>,
        /// A weights folder, or a model-signing bundle under weights/.
        #[arg(required_unless_present_any = ["all", "list"])]
        source: Option<PathBuf>,
        /// The signature file under weights/, when SOURCE is a weights folder.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["all", "list"])]
        signature: Option<PathBuf>,
        /// Lock every declared model of every tenant from its bundle at
        /// weights/<tenant>/<model>-<version>.sig.json, reading the project once.
        #[arg(long, conflicts_with = "list")]
        all: bool,
        /// Lock the models listed in FILE (`-` for stdin), one `TENANT MODEL SOURCE [SIGNATURE]`
        /// per line, reading the project once.
        #[arg(long, value_name = "FILE")]
        list: Option<PathBuf>,
        /// Project root holding tenants/, keys/ and weights/.
        #[arg(long, value_name = "DIR", default_value = ".")]
        root: PathBuf,
    },
}

/// Runs a `tenantc weights` command.
pub fn run(command: WeightsCommand) -> Result<Exit, Fatal> {
    match command {
        WeightsCommand::Hash {
            dir,
            files,
            threads,
        } => hash(&dir, files, threads),
        WeightsCommand::Lock {
            tenant: Some(tenant),
            model: Some(model),
            source: Some(source),
            signature,
            all: false,
            list: None,
            root,
        } => lock(&tenant, &model, &source, signature, &root),
        WeightsCommand::Lock {
            all, list, root, ..
        } => super::weights_batch::lock_many(all, list.as_deref(), &root),
    }
}

/// `tenantc weights hash`: the root digest of a folder, after each file's digest with `--files`.
fn hash(dir: &Path, files: bool, threads: Option<usize>) -> Result<Exit, Fatal> {
    let manifest =
        hash_weights(dir, threads).map_err(|error| Fatal::new(hash_failure(dir, &error)))?;
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
    Ok(print_out(&text))
}

/// `tenantc weights lock`: writes a model's lock entry once it verifies.
fn lock(
    tenant: &str,
    model: &str,
    source: &Path,
    signature: Option<PathBuf>,
    root: &Path,
) -> Result<Exit, Fatal> {
    let loaded = load::load(root)
        .map_err(|error| Fatal::new(format!("cannot read {}: {error}", root.display())))?;
    let Some(declared) = tenantc::read_tenant(&loaded.inputs, tenant) else {
        if has_tenant_file(&loaded, tenant) {
            return Err(tenant_file_errors(&loaded, tenant, model));
        }
        return Err(Fatal::new(format!(
            "tenant `{}` is not declared under {}",
            load::escape_str(tenant),
            root.join("tenants").display()
        )));
    };
    let material: tenantc::weights::Material = loaded
        .inputs
        .iter()
        .filter(|input| tenantc::weights::is_material(&input.path))
        .map(|input| (input.path.clone(), input.contents.clone()))
        .collect();
    let (hashed, relative) = signed_source(root, source, signature)?;
    if !declared.complete && !declared.models.iter().any(|m| m.name.value == model) {
        // The model may be declared with a mistake that left it out: show the tenant
        // file's diagnostics rather than say it declares no such model.
        return Err(tenant_file_errors(&loaded, tenant, model));
    }
    let (entry, bytes) = tenantc::weights::prepare_lock(
        &declared, model, hashed, &relative, &material,
    )
    .map_err(|error| {
        let message = load::escape_str(error.message());
        match error {
            tenantc::weights::LockError::Usage(_) => Fatal::new(message),
            tenantc::weights::LockError::NotVerified(_) => Fatal::declarations(message),
        }
    })?;
    let lock_file = root.join(tenantc::weights::lock_path(tenant));
    disk::write_atomically(&lock_file, &bytes)
        .map_err(|error| Fatal::new(format!("cannot write {}: {error}", lock_file.display())))?;
    Ok(print_out(&format!(
        "locked {} {} {} ({} files, {}) in {}\n",
        entry.name,
        entry.version,
        entry.digest,
        entry.files.len(),
        entry.signature.format,
        tenantc::weights::lock_path(tenant)
    )))
}

/// What a lock entry is made from: the hashed folder (when SOURCE is a folder) and the
/// signature's path under the root; the same for one model and for a batch.
pub(super) fn signed_source(
    root: &Path,
    source: &Path,
    signature: Option<PathBuf>,
) -> Result<(Option<Vec<digest::FileDigest>>, String), Fatal> {
    let (hashed, signature_file) = if disk::is_dir(source) {
        let Some(signature) = signature else {
            return Err(Fatal::new(
                "a weights folder needs `--signature <file under weights/>`: the bundle or detached signature that signs it",
            ));
        };
        let manifest =
            hash_weights(source, None).map_err(|error| Fatal::new(hash_failure(source, &error)))?;
        (Some(manifest), signature)
    } else {
        if signature.is_some() {
            return Err(Fatal::new(
                "`--signature` goes with a weights folder; a bundle signs itself",
            ));
        }
        (None, source.to_path_buf())
    };
    if !disk::exists(&signature_file) {
        return Err(Fatal::new(format!(
            "{} does not exist; paths are read from the current folder, not from --root",
            load::escape_str(&signature_file.display().to_string())
        )));
    }
    let Some(relative) = disk::relative_to_root(root, &signature_file) else {
        return Err(Fatal::new(format!(
            "{} is not inside the project root {}; commit it under weights/",
            signature_file.display(),
            root.display()
        )));
    };
    Ok((hashed, relative))
}

/// Whether `path` is a declaration file of `tenant`, `tenants/<tenant>.<ext>`.
fn is_file_of(path: &str, tenant: &str) -> bool {
    path.strip_prefix("tenants/")
        .and_then(|name| name.rsplit_once('.'))
        .is_some_and(|(stem, _)| stem == tenant)
        && tenantc::classify(path).is_some_and(|(_, format)| format.is_some())
}

/// Whether the root holds a declaration file of `tenant`, readable or not.
pub(super) fn has_tenant_file(loaded: &load::Loaded, tenant: &str) -> bool {
    loaded
        .inputs
        .iter()
        .any(|input| is_file_of(&input.path, tenant))
}

/// `weights lock` of a model that the tenant's declaration may hold with a mistake: prints the
/// diagnostics of the tenant's files, and is the error that exits 1, as `check` would for them.
pub(super) fn tenant_file_errors(loaded: &load::Loaded, tenant: &str, model: &str) -> Fatal {
    let compilation = tenantc::compile_loaded(loaded);
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
        render::human(&diagnostics, &compilation.sources, ColorArg::Auto.choice())
    );
    Fatal::declarations(format!(
        "the declaration of tenant `{}` has errors and holds no readable model `{}`; fix {} first",
        load::escape_str(tenant),
        load::escape_str(model),
        if diagnostics.is_empty() {
            "what `tenantc check` reports"
        } else {
            "the errors above"
        }
    ))
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
