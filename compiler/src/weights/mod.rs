//! Signed model weights: every declared model version is pinned by a lock entry and verified
//! offline against the tenant's own signers before anything is emitted.
//!
//! Consumes: the validated [`Fleet`] and the repository's signing material, the files under
//! `keys/` and `weights/` that `load` read (public keys, trust roots, lock files, signature
//! bundles; never the weights themselves).
//! Produces: per tenant, its [`VerifiedModel`]s, and a diagnostic at the model's declaration
//! for every model that could not be verified.
//!
//! Invariants:
//! - Fail closed: a model appears in the result only when its lock entry matches the
//!   declaration, its signature file is the one locked, a signature verifies under one of the
//!   tenant's own keys, the signed file list equals the locked one and the signed digest is the
//!   root recomputed from it.
//! - A tenant's keys and trust roots live under `keys/<tenant>/`; its lock is
//!   `weights/<tenant>.lock` and its signature files are under `weights/`; nothing of another
//!   tenant is ever tried.
//! - Every JSON document of the material (lock files, bundles, the statements inside them, trust
//!   roots) is read with [`crate::json_strict`], so none with a key written twice verifies.
//! - Pure: no IO (the CLI's `weights` commands hash folders with [`digest::hash_dir`]).

pub mod digest;
pub mod lock;
pub mod sig;

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::diag::{Code, Diagnostic};
use crate::json_strict;
use crate::model::{Fleet, KeylessSigner, ModelWeights, Signer, Spanned, Tenant};
use digest::{FileDigest, hex, root_digest};
use lock::{LockFile, LockedModel};
use sig::{BundleKind, PublicKey};

use crate::layout::{KEYS, WEIGHTS};
// What is signing material is part of the folder layout (`layout.rs`); the CLI still names it
// here.
pub use crate::layout::is_material;

/// The lock file of a tenant.
pub fn lock_path(tenant: &str) -> String {
    format!("{WEIGHTS}/{tenant}.lock")
}

/// Where a model's model-signing bundle is committed by convention,
/// `weights/<tenant>/<model>-<version>.sig.json`: what `tenantc weights lock --all` reads.
pub fn bundle_path(tenant: &str, model: &str, version: &str) -> String {
    format!("{WEIGHTS}/{tenant}/{model}-{version}.sig.json")
}

/// A model version whose weights were verified, as the plan carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifiedModel {
    /// The model name.
    pub name: String,
    /// The version.
    pub version: String,
    /// The object-storage prefix of the weights.
    pub prefix: String,
    /// `sha256:<root>`, the model-signing root digest.
    pub digest: String,
    /// How it was signed: `model-signing` or `cosign-blob`.
    pub signature: String,
}

/// The repository's signing material: file path to contents.
pub type Material = BTreeMap<String, Vec<u8>>;

/// Verifies every model of every tenant; returns the verified models per tenant name.
///
/// Tenants are verified in parallel on the current rayon pool (each reads only its own lock,
/// keys and signatures) and their results joined in the fleet's order, so the findings are the
/// same on any number of threads.
pub fn verify(
    fleet: &Fleet,
    material: &Material,
) -> (BTreeMap<String, Vec<VerifiedModel>>, Vec<Diagnostic>) {
    use rayon::prelude::*;
    // Each distinct (key, signature, statement) is verified once in this run; the results die
    // with it.
    let done = sig::Verifications::default();
    let per_tenant: Vec<(Vec<VerifiedModel>, Vec<Diagnostic>)> = fleet
        .tenants
        .par_iter()
        .map(|tenant| verify_tenant(tenant, material, &done))
        .collect();
    let mut verified = BTreeMap::new();
    let mut diagnostics = Vec::new();
    for (tenant, (models, findings)) in fleet.tenants.iter().zip(per_tenant) {
        diagnostics.extend(findings);
        verified.insert(tenant.name.value.clone(), models);
    }
    (verified, diagnostics)
}

/// Verifies every model of one tenant: its verified models, sorted, and its findings.
fn verify_tenant(
    tenant: &Tenant,
    material: &Material,
    done: &sig::Verifications,
) -> (Vec<VerifiedModel>, Vec<Diagnostic>) {
    let mut models = Vec::new();
    let mut diagnostics = Vec::new();
    let lock = read_lock(tenant, material);
    for model in &tenant.models {
        match verify_model(tenant, model, &lock, material, done) {
            Ok(model) => models.push(model),
            Err(diagnostic) => diagnostics.push(*diagnostic),
        }
    }
    models.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    (models, diagnostics)
}

/// A tenant's lock file: `None` when it does not exist, the reason when it cannot be read.
fn read_lock(tenant: &Tenant, material: &Material) -> Option<Result<LockFile, String>> {
    material
        .get(&lock_path(&tenant.name.value))
        .map(|bytes| lock::read(bytes))
}

type Failure = Box<Diagnostic>;

fn at_model(code: Code, model: &ModelWeights, message: String) -> Failure {
    Box::new(Diagnostic::error(code, model.name.span, message))
}

fn verify_model(
    tenant: &Tenant,
    model: &ModelWeights,
    lock: &Option<Result<LockFile, String>>,
    material: &Material,
    done: &sig::Verifications,
) -> Result<VerifiedModel, Failure> {
    let tenant_name = tenant.name.as_str();
    let what = format!("model `{} {}`", model.name.value, model.version.value);
    let Some(signer) = &model.signer else {
        return Err(Box::new(
            Diagnostic::error(
                Code::WeightsSignerMissing,
                model.name.span,
                format!("{what} declares no signer"),
            )
            .with_label("unsigned weights cannot be verified")
            .with_help(format!(
                "add `key \"keys/{tenant_name}/<key>.pub.pem\"` (or `keyless san=… issuer=… trust-root=…`) inside the model's block"
            )),
        ));
    };
    let (keys, trust_root) = match signer {
        Signer::Keys(paths) => (read_keys(tenant_name, paths, material)?, &[][..]),
        Signer::Keyless(keyless) => (
            Vec::new(),
            read_material(tenant_name, &keyless.trust_root, "trust root", material)?,
        ),
    };
    let lock_file = lock_path(tenant_name);
    let lock = match lock {
        None => {
            return Err(Box::new(
                Diagnostic::error(
                    Code::WeightsLockMissing,
                    model.name.span,
                    format!("{what} has no lock entry: `{lock_file}` does not exist"),
                )
                .with_label("not pinned to a digest")
                .with_help(format!(
                    "run `tenantc weights lock {tenant_name} {} <weights-folder-or-bundle>` and commit `{lock_file}`",
                    model.name.value
                )),
            ));
        }
        Some(Err(reason)) => {
            return Err(Box::new(
                Diagnostic::error(
                    Code::WeightsLockInvalid,
                    model.name.span,
                    format!("`{lock_file}` cannot be read: {reason}"),
                )
                .with_label(format!("{what} is locked there"))
                .with_help(format!(
                    "regenerate the entries with `tenantc weights lock {tenant_name} <model> <weights-folder-or-bundle>`"
                )),
            ));
        }
        Some(Ok(lock)) => lock,
    };
    let Some(entry) = lock
        .models
        .iter()
        .find(|entry| entry.name == model.name.value && entry.version == model.version.value)
    else {
        let versions: Vec<&str> = lock
            .models
            .iter()
            .filter(|entry| entry.name == model.name.value)
            .map(|entry| entry.version.as_str())
            .collect();
        let note = if versions.is_empty() {
            format!("`{lock_file}` locks no version of `{}`", model.name.value)
        } else {
            format!(
                "`{lock_file}` locks version {} of `{}`",
                crate::diag::list_names(versions.iter().copied()),
                model.name.value
            )
        };
        return Err(Box::new(
            Diagnostic::error(
                Code::WeightsLockMissing,
                model.name.span,
                format!("{what} has no entry in `{lock_file}`"),
            )
            .with_label("not pinned to a digest")
            .with_note(note)
            .with_help(format!(
                "run `tenantc weights lock {tenant_name} {} <weights-folder-or-bundle>` and commit `{lock_file}`",
                model.name.value
            )),
        ));
    };
    check_entry(tenant_name, model, entry, &lock_file)?;
    let manifest = entry.manifest().map_err(|reason| {
        at_model(
            Code::WeightsLockInvalid,
            model,
            format!("`{lock_file}`: {reason}"),
        )
    })?;
    let root = root_digest(&manifest);
    if entry.root() != Some(root) {
        return Err(Box::new(
            Diagnostic::error(
                Code::WeightsManifestMismatch,
                model.name.span,
                format!(
                    "the locked digest of {what} is not the root of its locked files (`sha256:{}`)",
                    hex(&root)
                ),
            )
            .with_label("locked digest and file list disagree")
            .with_help(
                "lock the model again with `tenantc weights lock`; never edit digests by hand",
            ),
        ));
    }
    let signature = material.get(&entry.signature.path).ok_or_else(|| {
        Box::new(
            Diagnostic::error(
                Code::WeightsLockStale,
                model.name.span,
                format!(
                    "the signature file `{}` that `{lock_file}` names for {what} does not exist",
                    entry.signature.path
                ),
            )
            .with_label("signature not found")
            .with_help(format!(
                "commit the signature under `{WEIGHTS}/`, or lock the model again with `tenantc weights lock`"
            )),
        )
    })?;
    let signature_sha = hex(&Sha256::digest(signature));
    if signature_sha != entry.signature.sha256 {
        return Err(Box::new(
            Diagnostic::error(
                Code::WeightsLockStale,
                model.name.span,
                format!(
                    "the signature file `{}` of {what} changed since it was locked",
                    entry.signature.path
                ),
            )
            .with_label("lock is stale")
            .with_note(format!(
                "locked sha256 {}, file sha256 {signature_sha}",
                entry.signature.sha256
            ))
            .with_help("lock the model again with `tenantc weights lock` to pin the new signature"),
        ));
    }
    let failure_with_help = |reason: String, help: &str| {
        Box::new(
            Diagnostic::error(
                Code::WeightsSignatureInvalid,
                model.name.span,
                format!("{what} is not verified: {reason}"),
            )
            .with_label(format!("signature `{}`", entry.signature.path))
            .with_help(help),
        )
    };
    let signature_failure = |reason: String| {
        failure_with_help(
            reason,
            "sign the weights with one of the keys the model declares, or declare the key that signed them (under `keys/<tenant>/`)",
        )
    };
    let refused = |refusal: sig::Refusal| match refusal {
        sig::Refusal::Duplicate(duplicate) => failure_with_help(
            duplicate.to_string(),
            "write every key once: restore the file the signing tool wrote, or sign the weights again, and lock the new signature with `tenantc weights lock`",
        ),
        sig::Refusal::Invalid(reason) => signature_failure(reason),
    };
    match entry.signature.format.as_str() {
        "cosign-blob" => {
            let Signer::Keys(_) = signer else {
                return Err(signature_failure(
                    "a detached cosign signature needs a key signer".to_string(),
                ));
            };
            let blob = digest_line(&model.prefix.value, &root);
            sig::verify_blob_once(blob.as_bytes(), signature, &keys, done)
                .map_err(signature_failure)?;
        }
        _ => {
            let dsse = sig::read_bundle(signature).map_err(refused)?;
            let payload = match (signer, dsse.kind) {
                (Signer::Keys(_), BundleKind::Key) => {
                    sig::verify_key_bundle_once(&dsse, &keys, done).map_err(signature_failure)?
                }
                (Signer::Keys(_), BundleKind::Keyless) => {
                    return Err(signature_failure(
                        "the bundle is signed with a keyless certificate, but the model declares keys".to_string(),
                    ));
                }
                (Signer::Keyless(_), BundleKind::Key) => {
                    return Err(signature_failure(
                        "the bundle is signed with a key, but the model declares a keyless identity".to_string(),
                    ));
                }
                (Signer::Keyless(keyless), BundleKind::Keyless) => {
                    verify_keyless(model, keyless, &dsse, signature, trust_root)?;
                    dsse.payload.as_slice()
                }
            };
            let signed = sig::read_statement(payload).map_err(refused)?;
            compare_manifests(model, &what, &signed, &manifest)?;
        }
    }
    Ok(VerifiedModel {
        name: model.name.value.clone(),
        version: model.version.value.clone(),
        prefix: model.prefix.value.clone(),
        digest: format!("sha256:{}", hex(&root)),
        signature: entry.signature.format.clone(),
    })
}

/// The exact bytes a cosign-style detached signature signs for a model: its object path inside
/// the bucket (the prefix without `scheme://bucket/`), a space, `sha256:<root>` and a newline.
pub fn digest_line(prefix: &str, root: &[u8; 32]) -> String {
    let object_path = prefix
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map_or(prefix, |(_, path)| path);
    format!("{object_path} sha256:{}\n", hex(root))
}

/// Checks that the lock entry was made for this declaration.
fn check_entry(
    tenant: &str,
    model: &ModelWeights,
    entry: &LockedModel,
    lock_file: &str,
) -> Result<(), Failure> {
    if entry.prefix != model.prefix.value {
        return Err(Box::new(
            Diagnostic::error(
                Code::WeightsLockStale,
                model.prefix.span,
                format!(
                    "`{lock_file}` locks `{} {}` at `{}`, not at this prefix",
                    model.name.value, model.version.value, entry.prefix
                ),
            )
            .with_label("prefix changed since the lock")
            .with_help(format!(
                "lock the weights at the new prefix: `tenantc weights lock {tenant} {} <weights-folder-or-bundle>`",
                model.name.value
            )),
        ));
    }
    Ok(())
}

/// Reads the tenant's public keys.
fn read_keys(
    tenant: &str,
    paths: &[Spanned<String>],
    material: &Material,
) -> Result<Vec<PublicKey>, Failure> {
    let mut keys = Vec::new();
    for path in paths {
        let bytes = read_material(tenant, path, "key", material)?;
        let key = std::str::from_utf8(bytes)
            .map_err(|_| "it is not PEM text".to_string())
            .and_then(PublicKey::from_pem)
            .map_err(|reason| {
                Box::new(
                    Diagnostic::error(
                        Code::WeightsSignerUnreadable,
                        path.span,
                        format!("key `{}` cannot be used: {reason}", path.value),
                    )
                    .with_label("not a usable public key")
                    .with_help("export the public key as PEM (SPKI), for example with `openssl ec -pubout`"),
                )
            })?;
        keys.push(key);
    }
    Ok(keys)
}

/// The contents of a signer file, which must be under `keys/<tenant>/`.
fn read_material<'a>(
    tenant: &str,
    path: &Spanned<String>,
    what: &str,
    material: &'a Material,
) -> Result<&'a [u8], Failure> {
    let folder = format!("{KEYS}/{tenant}/");
    let unreadable = |message: String, label: &str| {
        Box::new(
            Diagnostic::error(Code::WeightsSignerUnreadable, path.span, message)
                .with_label(label.to_string())
                .with_help(format!(
                    "commit the {what} under `{folder}` and name it by its path from the repository root"
                )),
        )
    };
    let inside = path
        .value
        .strip_prefix(&folder)
        .is_some_and(|rest| !rest.is_empty() && lock::manifest_path_ok(rest));
    if !inside {
        return Err(unreadable(
            format!("{what} `{}` is not under `{folder}`", path.value),
            "only the tenant's own signers are trusted",
        ));
    }
    material.get(&path.value).map(Vec::as_slice).ok_or_else(|| {
        unreadable(
            format!("{what} `{}` does not exist", path.value),
            "file not found",
        )
    })
}

/// The first difference between the signed files and `other` (the locked files, or a folder's),
/// in words: a file signed but not `where_other` (`locked`, `in the folder`), a file there but
/// not signed, or a file with another sha256.
fn manifest_difference(
    signed: &[FileDigest],
    other: &[FileDigest],
    where_other: &str,
) -> Option<String> {
    let signed_by_path: BTreeMap<&str, &[u8; 32]> = signed
        .iter()
        .map(|file| (file.path.as_str(), &file.sha256))
        .collect();
    let other_by_path: BTreeMap<&str, &[u8; 32]> = other
        .iter()
        .map(|file| (file.path.as_str(), &file.sha256))
        .collect();
    if let Some(path) = signed_by_path
        .keys()
        .find(|path| !other_by_path.contains_key(*path))
    {
        return Some(format!("`{path}` is signed but not {where_other}"));
    }
    if let Some(path) = other_by_path
        .keys()
        .find(|path| !signed_by_path.contains_key(*path))
    {
        return Some(format!("`{path}` is {where_other} but not signed"));
    }
    other_by_path
        .iter()
        .find(|(path, digest)| signed_by_path.get(*path) != Some(*digest))
        .map(|(path, _)| format!("`{path}` has a different sha256"))
}

/// Compares the signed manifest with the locked one, and the signed root with both.
fn compare_manifests(
    model: &ModelWeights,
    what: &str,
    signed: &sig::SignedModel,
    locked: &[FileDigest],
) -> Result<(), Failure> {
    let mismatch = |reason: String| {
        Box::new(
            Diagnostic::error(
                Code::WeightsManifestMismatch,
                model.name.span,
                format!("the signed files of {what} differ from the lock: {reason}"),
            )
            .with_label("signature does not cover the locked weights")
            .with_help(
                "lock the model from the signed bundle (`tenantc weights lock <tenant> <model> <bundle>`), or sign the weights that were locked",
            ),
        )
    };
    if let Some(reason) = manifest_difference(&signed.files, locked, "locked") {
        return Err(mismatch(reason));
    }
    if signed.files.len() != locked.len() {
        return Err(mismatch("a file is listed twice".to_string()));
    }
    let signed_root = root_digest(&signed.files);
    if signed.root != signed_root {
        return Err(mismatch(format!(
            "the signed subject `sha256:{}` is not the root of the signed files",
            hex(&signed.root)
        )));
    }
    Ok(())
}

/// Keyless verification of a model-signing bundle (`crate::keyless`): the certificate chains
/// to the tenant's pinned trust root, names exactly the declared identity, signed the DSSE
/// payload, and the Rekor entry (SET, inclusion proof, checkpoint) agrees; any failure is a
/// diagnostic at the model that names the step.
fn verify_keyless(
    model: &ModelWeights,
    keyless: &KeylessSigner,
    dsse: &sig::Dsse,
    bundle: &[u8],
    trust_root: &[u8],
) -> Result<(), Failure> {
    let identity = crate::keyless::Identity {
        san: keyless.san.value.clone(),
        issuer: keyless.issuer.value.clone(),
    };
    let artifact = crate::keyless::Artifact::Dsse {
        payload_type: &dsse.payload_type,
        payload: &dsse.payload,
    };
    crate::keyless::verify(bundle, trust_root, &identity, artifact)
        .map(|_| ())
        .map_err(|error| {
            Box::new(
                Diagnostic::error(
                    Code::WeightsSignatureInvalid,
                    model.name.span,
                    format!(
                        "the keyless signature of `{} {}` is not verified: {error}",
                        model.name.value, model.version.value
                    ),
                )
                .with_secondary(keyless.span, "keyless identity declared here")
                .with_label("not verified")
                .with_help(
                    "sign the weights in the CI identity the model declares, with a certificate of the pinned trust root, and lock the new bundle with `tenantc weights lock`",
                ),
            )
        })
}

/// Why `tenantc weights lock` could not make an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// The request names something that is not there: a model the tenant does not declare, a
    /// signature that is not a file under `weights/`, a detached signature without its folder.
    Usage(String),
    /// The entry would not verify as the build verifies it, or the present lock cannot be read.
    NotVerified(String),
}

impl LockError {
    /// The reason, as one line without a final period.
    pub fn message(&self) -> &str {
        match self {
            LockError::Usage(message) | LockError::NotVerified(message) => message,
        }
    }
}

impl From<String> for LockError {
    fn from(reason: String) -> Self {
        LockError::NotVerified(reason)
    }
}

/// Builds the lock entry of `model_name` for `tenant` from a signature file and, when the
/// weights folder was hashed, its manifest; the entry is verified exactly as the build
/// verifies it (against `material` plus the new lock) before it is returned.
///
/// A model-signing bundle alone gives the manifest from its signed statement; a detached
/// cosign signature lists no files, so it needs the hashed folder.
pub fn prepare_lock(
    tenant: &Tenant,
    model_name: &str,
    hashed: Option<Vec<FileDigest>>,
    signature_path: &str,
    material: &Material,
) -> Result<(LockedModel, Vec<u8>), LockError> {
    let mut checked = material.clone();
    let entry = lock_into(tenant, model_name, hashed, signature_path, &mut checked)?;
    let bytes = checked
        .remove(&lock_path(tenant.name.as_str()))
        .unwrap_or_default();
    Ok((entry, bytes))
}

/// [`prepare_lock`] for one model of a batch: on success the tenant's lock file in `material`
/// holds the new entry (so the next model of the same tenant is added to it); on failure
/// `material` is as it was. Nothing is copied per call, so locking every model of a large
/// project reads it once.
pub fn lock_into(
    tenant: &Tenant,
    model_name: &str,
    hashed: Option<Vec<FileDigest>>,
    signature_path: &str,
    material: &mut Material,
) -> Result<LockedModel, LockError> {
    let tenant_name = tenant.name.as_str();
    let model = tenant
        .models
        .iter()
        .find(|model| model.name.value == model_name)
        .ok_or_else(|| {
            let declared: Vec<&str> = tenant.models.iter().map(|m| m.name.as_str()).collect();
            LockError::Usage(if declared.is_empty() {
                format!("tenant `{tenant_name}` declares no model")
            } else {
                format!(
                    "tenant `{tenant_name}` declares no model `{model_name}`; it declares {}",
                    crate::diag::list_names(declared.iter().copied())
                )
            })
        })?;
    let signature = material.get(signature_path).ok_or_else(|| {
        LockError::Usage(format!(
            "`{signature_path}` is not a file under `{WEIGHTS}/` of the project root"
        ))
    })?;
    // A JSON document with a key written twice is read as a bundle, so that the reason the
    // build would give (the duplicated key) is the one reported.
    let is_bundle = match json_strict::from_slice::<serde_json::Value>(
        signature,
        json_strict::Root::file("bundle"),
    ) {
        Ok(value) => value.get("mediaType").is_some(),
        Err(json_strict::Error::Duplicate(_)) => true,
        Err(json_strict::Error::Json(_)) => false,
    };
    // The words of the build's finding for the same reason.
    let not_verified = |reason: String| {
        format!(
            "model `{} {}` is not verified: {reason} ({})",
            model.name.value,
            model.version.value,
            Code::WeightsSignatureInvalid.as_str()
        )
    };
    let (format, manifest) = if is_bundle {
        let dsse =
            sig::read_bundle(signature).map_err(|refusal| not_verified(refusal.to_string()))?;
        let signed = sig::read_statement(&dsse.payload)
            .map_err(|refusal| not_verified(refusal.to_string()))?;
        match hashed {
            // A folder that is not the one the bundle signs is named, not the lock it would make.
            Some(hashed) => {
                if let Some(reason) = manifest_difference(&signed.files, &hashed, "in the folder") {
                    return Err(LockError::NotVerified(format!(
                        "the weights folder does not hold the files the bundle signs: {reason}; pass the folder the bundle was made from, or the bundle alone, which lists its files"
                    )));
                }
                ("model-signing", hashed)
            }
            None => ("model-signing", signed.files),
        }
    } else {
        let manifest = hashed.ok_or_else(|| {
            LockError::Usage(
                "a detached signature lists no files: pass the weights folder and `--signature`"
                    .to_string(),
            )
        })?;
        ("cosign-blob", manifest)
    };
    let mut manifest = manifest;
    digest::sort_manifest(&mut manifest);
    let root = root_digest(&manifest);
    let entry = LockedModel {
        name: model.name.value.clone(),
        version: model.version.value.clone(),
        prefix: model.prefix.value.clone(),
        digest: format!("sha256:{}", hex(&root)),
        hashing: lock::Hashing::files_sha256(),
        files: lock::locked_files(&manifest),
        signature: lock::LockedSignature {
            format: format.to_string(),
            path: signature_path.to_string(),
            sha256: hex(&Sha256::digest(signature)),
        },
    };
    let lock_file = lock_path(tenant_name);
    let mut lock = match material.get(&lock_file) {
        Some(bytes) => lock::read(bytes).map_err(|reason| {
            format!(
                "`{lock_file}` cannot be read: {reason}; fix or remove it first ({})",
                Code::WeightsLockInvalid.as_str()
            )
        })?,
        None => LockFile {
            version: lock::LOCK_VERSION,
            models: Vec::new(),
        },
    };
    lock::upsert(&mut lock, entry.clone());
    let bytes = lock::write(&lock);
    let previous = material.insert(lock_file.clone(), bytes);
    let only_this = Tenant {
        models: vec![model.clone()],
        ..tenant.clone()
    };
    let fleet = Fleet {
        tenants: vec![only_this],
        cells: Vec::new(),
    };
    let (_, diagnostics) = verify(&fleet, material);
    if let Some(diagnostic) = diagnostics.first() {
        match previous {
            Some(previous) => material.insert(lock_file, previous),
            None => material.remove(&lock_file),
        };
        // A detached signature signs the folder's root digest: one that does not verify may
        // sign another folder as well as come from another key.
        let folder = if format == "cosign-blob" && diagnostic.code == Code::WeightsSignatureInvalid
        {
            format!(
                "; it must sign the root digest of the folder passed, sha256:{}: check that this is the folder that was signed",
                hex(&root)
            )
        } else {
            String::new()
        };
        return Err(LockError::NotVerified(format!(
            "{} ({}){folder}",
            diagnostic.message,
            diagnostic.code.as_str()
        )));
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;
    use crate::{InputFile, compile};

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/signing");

    fn fixture(path: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}/{path}")).unwrap()
    }

    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    pool "train" {
        gpu "H100-80GB-SXM"
        nodes 1 gpus-per-node=8
        sharing "exclusive"
    }
}
"#;

    fn tenant(name: &str, model: &str) -> String {
        format!(
            r#"tenant "{name}" {{
    org "{name}-corp"
    team "ml"
    trust "hard"
    groups admin="{name}-admins"
    quota cell="c1" cpu="8" memory="32Gi" pods=10 {{
        pool "train" reserved=1
    }}
    workload "train" service-account="trainer" priority="batch"
{model}}}
"#
        )
    }

    /// A fleet of one tenant `alpha` whose model is locked from `signature` (at `sig_path`)
    /// with `manifest`, signed in `format`, declared with prefix `prefix`.
    fn fleet_files(
        prefix: &str,
        sig_path: &str,
        signature: &[u8],
        format: &str,
        manifest: &[FileDigest],
    ) -> Vec<InputFile> {
        // The tenant owns `models/<tenant>/` of the prefix (the storage IAM rule).
        let owner = prefix
            .split("/models/")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("alpha")
            .to_string();
        let model = format!(
            "    model \"tiny\" version=\"v3\" prefix=\"{prefix}\" {{\n        key \"keys/{owner}/release.pub.pem\"\n    }}\n"
        );
        let entry = LockedModel {
            name: "tiny".to_string(),
            version: "v3".to_string(),
            prefix: prefix.to_string(),
            digest: format!("sha256:{}", hex(&root_digest(manifest))),
            hashing: lock::Hashing::files_sha256(),
            files: lock::locked_files(manifest),
            signature: lock::LockedSignature {
                format: format.to_string(),
                path: sig_path.to_string(),
                sha256: hex(&Sha256::digest(signature)),
            },
        };
        let lock = lock::write(&LockFile {
            version: lock::LOCK_VERSION,
            models: vec![entry],
        });
        let mut files = vec![
            ("cells/c1.kdl".to_string(), CELL.as_bytes().to_vec()),
            (
                format!("tenants/{owner}.kdl"),
                tenant(&owner, &model).into_bytes(),
            ),
            (
                format!("keys/{owner}/release.pub.pem"),
                fixture("model-signing/signing-key.pub.pem"),
            ),
            (format!("weights/{owner}.lock"), lock),
            (sig_path.to_string(), signature.to_vec()),
        ];
        files.sort();
        files
            .into_iter()
            .map(|(path, contents)| InputFile { path, contents })
            .collect()
    }

    fn signed_manifest() -> Vec<FileDigest> {
        sig::read_statement(&fixture("model-signing/statement.json"))
            .unwrap()
            .files
    }

    fn codes(inputs: &[InputFile]) -> Vec<&'static str> {
        compile(inputs)
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.code.as_str())
            .collect()
    }

    #[test]
    fn a_model_signing_bundle_verifies_and_its_digest_reaches_the_plan() {
        let inputs = fleet_files(
            "s3://acme-models/models/alpha/tiny/v3/",
            "weights/alpha/tiny.sig.json",
            &fixture("model-signing/model.sig.json"),
            "model-signing",
            &signed_manifest(),
        );
        let compilation = compile(&inputs);
        assert!(
            compilation.diagnostics.is_empty(),
            "{:?}",
            compilation.diagnostics
        );
        assert!(compilation.output.is_some());
        let plan = compilation.plan.unwrap();
        let tenant = &plan.cells[0].tenants[0];
        assert_eq!(
            tenant.weights,
            [VerifiedModel {
                name: "tiny".to_string(),
                version: "v3".to_string(),
                prefix: "s3://acme-models/models/alpha/tiny/v3/".to_string(),
                digest: "sha256:8c9a7e39735253e1c194c92fa3ac00ef2c415375e443775f05a71e5fa4b377e9"
                    .to_string(),
                signature: "model-signing".to_string(),
            }]
        );
    }

    #[test]
    fn a_cosign_blob_signature_verifies_over_the_digest_line_of_the_declared_prefix() {
        let blob = fixture("cosign-blob/weights.lock");
        assert_eq!(
            digest_line(
                "s3://acme-models/models/acme/llama-tiny/v3/",
                &sig::read_statement(&fixture("model-signing/statement.json"))
                    .unwrap()
                    .root
            )
            .as_bytes(),
            blob.as_slice()
        );
        let signature = fixture("cosign-blob/weights.lock.sig");
        let ok = fleet_files(
            "s3://acme-models/models/acme/llama-tiny/v3/",
            "weights/alpha/tiny.sig",
            &signature,
            "cosign-blob",
            &signed_manifest(),
        );
        assert_eq!(codes(&ok), Vec::<&str>::new());
        // The same signature for weights at another path, or for other weights, fails.
        let moved = fleet_files(
            "s3://acme-models/models/acme/llama-tiny/v4/",
            "weights/alpha/tiny.sig",
            &signature,
            "cosign-blob",
            &signed_manifest(),
        );
        assert_eq!(codes(&moved), ["weights-signature-invalid"]);
        let mut other = signed_manifest();
        other.pop();
        let changed = fleet_files(
            "s3://acme-models/models/acme/llama-tiny/v3/",
            "weights/alpha/tiny.sig",
            &signature,
            "cosign-blob",
            &other,
        );
        assert_eq!(codes(&changed), ["weights-signature-invalid"]);
    }

    #[test]
    fn nothing_is_emitted_when_a_model_does_not_verify() {
        let inputs = fleet_files(
            "s3://acme-models/models/alpha/tiny/v3/",
            "weights/alpha/tiny.sig.json",
            &fixture("model-signing/model.badsig.json"),
            "model-signing",
            &signed_manifest(),
        );
        let compilation = compile(&inputs);
        assert_eq!(
            compilation
                .diagnostics
                .iter()
                .map(|d| d.message.as_str())
                .collect::<Vec<_>>(),
            [
                "model `tiny v3` is not verified: the DSSE signature does not verify with the tenant's P-256 key"
            ]
        );
        assert!(compilation.output.is_none());
    }

    /// Every change to the locked manifest (a renamed, added, removed or reordered file, or a
    /// changed digest byte) is refused, whatever the lock's own digest says.
    #[test]
    fn every_mutation_of_the_locked_files_is_refused() {
        let signature = fixture("model-signing/model.sig.json");
        let signed = signed_manifest();
        let mut rng = Rng(0x5eed_0009);
        for round in 0..200 {
            let mut manifest = signed.clone();
            let idx = rng.below(manifest.len());
            let what = match rng.below(4) {
                0 => {
                    let file = &mut manifest[idx];
                    file.path = format!("{}.renamed", file.path);
                    "renamed"
                }
                1 => {
                    manifest.push(FileDigest {
                        path: format!("extra-{round}.bin"),
                        sha256: [round as u8; 32],
                    });
                    "extra"
                }
                2 => {
                    manifest.remove(idx);
                    "removed"
                }
                _ => {
                    let byte = rng.below(32);
                    manifest[idx].sha256[byte] ^= 1 << rng.below(8);
                    "changed"
                }
            };
            digest::sort_manifest(&mut manifest);
            let inputs = fleet_files(
                "s3://acme-models/models/alpha/tiny/v3/",
                "weights/alpha/tiny.sig.json",
                &signature,
                "model-signing",
                &manifest,
            );
            assert_eq!(
                codes(&inputs),
                ["weights-manifest-mismatch"],
                "round {round}: {what} file was accepted"
            );
        }
    }

    #[test]
    fn another_tenants_key_in_the_repository_is_never_tried() {
        // Tenant `alpha` declares its own key, which did not sign; the key that did sign is
        // committed, but under another tenant's folder.
        let mut inputs = fleet_files(
            "s3://acme-models/models/alpha/tiny/v3/",
            "weights/alpha/tiny.sig.json",
            &fixture("model-signing/model.sig.json"),
            "model-signing",
            &signed_manifest(),
        );
        let (_, other) = sig::tests::other_p256(11);
        let sig::PublicKey::P256(other) = other else {
            unreachable!()
        };
        use p256::pkcs8::{EncodePublicKey as _, LineEnding};
        let pem = other.to_public_key_pem(LineEnding::LF).unwrap();
        for input in &mut inputs {
            if input.path == "keys/alpha/release.pub.pem" {
                input.contents = pem.clone().into_bytes();
            }
        }
        inputs.push(InputFile {
            path: "keys/beta/release.pub.pem".to_string(),
            contents: fixture("model-signing/signing-key.pub.pem"),
        });
        assert_eq!(codes(&inputs), ["weights-signature-invalid"]);
    }

    /// Tenant `alpha` of a fleet and the fleet's signing material, as `tenantc weights lock`
    /// reads them.
    fn tenant_and_material(inputs: &[InputFile]) -> (Tenant, Material) {
        let tenant = crate::read_tenant(inputs, "alpha").unwrap();
        let material = inputs
            .iter()
            .filter(|input| is_material(&input.path))
            .map(|input| (input.path.clone(), input.contents.clone()))
            .collect();
        (tenant, material)
    }

    #[test]
    fn prepare_lock_writes_a_verified_entry_from_a_bundle_alone() {
        let inputs = fleet_files(
            "s3://acme-models/models/alpha/tiny/v3/",
            "weights/alpha/tiny.sig.json",
            &fixture("model-signing/model.sig.json"),
            "model-signing",
            &signed_manifest(),
        );
        let (tenant, mut material) = tenant_and_material(&inputs);
        let expected = material.remove("weights/alpha.lock").unwrap();
        let (entry, bytes) = prepare_lock(
            &tenant,
            "tiny",
            None,
            "weights/alpha/tiny.sig.json",
            &material,
        )
        .unwrap();
        assert_eq!(entry.files.len(), 5);
        assert_eq!(bytes, expected);
        material.insert(
            "weights/alpha/bad.sig.json".to_string(),
            fixture("model-signing/model.badsig.json"),
        );
        let error = prepare_lock(
            &tenant,
            "tiny",
            None,
            "weights/alpha/bad.sig.json",
            &material,
        )
        .unwrap_err();
        assert!(
            error.message().contains("weights-signature-invalid"),
            "{error:?}"
        );
        let error = prepare_lock(
            &tenant,
            "huge",
            None,
            "weights/alpha/tiny.sig.json",
            &material,
        )
        .unwrap_err();
        assert_eq!(
            error,
            LockError::Usage("tenant `alpha` declares no model `huge`; it declares `tiny`".into())
        );
    }

    /// Every diagnostic of a compile, as code and message.
    fn findings(inputs: &[InputFile]) -> Vec<(&'static str, String)> {
        compile(inputs)
            .diagnostics
            .iter()
            .map(|diagnostic| (diagnostic.code.as_str(), diagnostic.message.clone()))
            .collect()
    }

    const PREFIX: &str = "s3://acme-models/models/alpha/tiny/v3/";

    /// `inputs` with the file at `path` holding `contents`.
    fn replaced(mut inputs: Vec<InputFile>, path: &str, contents: &[u8]) -> Vec<InputFile> {
        let file = inputs.iter_mut().find(|input| input.path == path).unwrap();
        file.contents = contents.to_vec();
        inputs
    }

    /// Checks that the fleet made of `document` re-written (`fleet`) verifies, that the fleet of
    /// every duplicate of it, written under `root`, has the one finding `code` with `message`
    /// after `prefix`, and that duplicates were written in each object of `levels`.
    fn refuses_every_duplicate<S: AsRef<str>>(
        (document, root, levels): (&[u8], &str, &[S]),
        fleet: impl Fn(&[u8]) -> Vec<InputFile>,
        (code, prefix, suffix): (&str, &str, &str),
    ) {
        use crate::json_strict::duplicates::{assert_reached, each_refused, rewritten};
        assert_eq!(findings(&fleet(&rewritten(document))), []);
        let paths = each_refused(document, root, |case| {
            assert_eq!(
                findings(&fleet(&case.text)),
                [(code, format!("{prefix}{}{suffix}", case.reason()))]
            );
        });
        assert_reached(&paths, levels);
    }

    #[test]
    fn a_key_bundle_with_any_key_written_twice_does_not_verify() {
        let levels = [
            "bundle",
            "bundle.verificationMaterial",
            "bundle.verificationMaterial.publicKey",
            "bundle.dsseEnvelope",
            "bundle.dsseEnvelope.signatures[0]",
        ];
        refuses_every_duplicate(
            (&fixture("model-signing/model.sig.json"), "bundle", &levels),
            |bundle| {
                let path = "weights/alpha/tiny.sig.json";
                fleet_files(PREFIX, path, bundle, "model-signing", &signed_manifest())
            },
            (
                "weights-signature-invalid",
                "model `tiny v3` is not verified: ",
                "",
            ),
        );
    }

    /// The model-signing bundle with `payload` signed by `key` in place of its own.
    fn signed_bundle(payload: &[u8], key: &p256::ecdsa::SigningKey) -> Vec<u8> {
        use base64::Engine as _;
        use p256::ecdsa::signature::Signer as _;
        let base64 = base64::engine::general_purpose::STANDARD;
        let mut bundle: serde_json::Value =
            serde_json::from_slice(&fixture("model-signing/model.sig.json")).unwrap();
        let signature: p256::ecdsa::Signature = key.sign(&sig::pae(sig::PAYLOAD_TYPE, payload));
        bundle["dsseEnvelope"]["payload"] = base64.encode(payload).into();
        bundle["dsseEnvelope"]["signatures"][0]["sig"] =
            base64.encode(signature.to_der().as_bytes()).into();
        serde_json::to_vec(&bundle).unwrap()
    }

    #[test]
    fn a_signed_statement_with_any_key_written_twice_does_not_verify() {
        use p256::pkcs8::{EncodePublicKey as _, LineEnding};
        const PAYLOAD: &str = "bundle.dsseEnvelope.payload";
        let (signing, public) = sig::tests::other_p256(21);
        let sig::PublicKey::P256(public) = public else {
            unreachable!()
        };
        let pem = public.to_public_key_pem(LineEnding::LF).unwrap();
        let fleet = |payload: &[u8]| {
            let inputs = fleet_files(
                PREFIX,
                "weights/alpha/tiny.sig.json",
                &signed_bundle(payload, &signing),
                "model-signing",
                &signed_manifest(),
            );
            replaced(inputs, "keys/alpha/release.pub.pem", pem.as_bytes())
        };
        let levels = [
            PAYLOAD.to_string(),
            format!("{PAYLOAD}.subject[0]"),
            format!("{PAYLOAD}.subject[0].digest"),
            format!("{PAYLOAD}.predicate"),
            format!("{PAYLOAD}.predicate.serialization"),
            format!("{PAYLOAD}.predicate.resources[4]"),
        ];
        refuses_every_duplicate(
            (&fixture("model-signing/statement.json"), PAYLOAD, &levels),
            fleet,
            (
                "weights-signature-invalid",
                "model `tiny v3` is not verified: ",
                &format!(" of the decoded `{PAYLOAD}`"),
            ),
        );
    }

    #[test]
    fn a_lock_file_with_any_key_written_twice_is_invalid() {
        let inputs = fleet_files(
            PREFIX,
            "weights/alpha/tiny.sig.json",
            &fixture("model-signing/model.sig.json"),
            "model-signing",
            &signed_manifest(),
        );
        let lock = inputs
            .iter()
            .find(|input| input.path == "weights/alpha.lock")
            .unwrap()
            .contents
            .clone();
        let levels = [
            "lock",
            "lock.models[0]",
            "lock.models[0].hashing",
            "lock.models[0].files[4]",
            "lock.models[0].signature",
        ];
        refuses_every_duplicate(
            (&lock, "lock", &levels),
            |lock| replaced(inputs.clone(), "weights/alpha.lock", lock),
            (
                "weights-lock-invalid",
                "`weights/alpha.lock` cannot be read: ",
                "",
            ),
        );
    }

    /// `fleet_files` with a keyless signer of the mock identity, pinned to the mock trust root,
    /// and `bundle` locked as its signature.
    fn keyless_fleet(bundle: &[u8]) -> Vec<InputFile> {
        let mut inputs = fleet_files(
            PREFIX,
            "weights/alpha/tiny.keyless.json",
            bundle,
            "model-signing",
            &signed_manifest(),
        );
        inputs.retain(|input| input.path != "keys/alpha/release.pub.pem");
        let tenant = inputs
            .iter()
            .find(|input| input.path == "tenants/alpha.kdl")
            .unwrap();
        let text = String::from_utf8(tenant.contents.clone()).unwrap();
        let keyless = text.replace(
            "key \"keys/alpha/release.pub.pem\"",
            "keyless san=\"https://ci.test.invalid/tenants/acme/release\" issuer=\"https://issuer.test.invalid\" trust-root=\"keys/alpha/trusted_root.json\"",
        );
        assert_ne!(keyless, text);
        let mut inputs = replaced(inputs, "tenants/alpha.kdl", keyless.as_bytes());
        inputs.push(InputFile {
            path: "keys/alpha/trusted_root.json".to_string(),
            contents: fixture("keyless-mock/trusted_root.json"),
        });
        inputs.sort_by(|a, b| a.path.cmp(&b.path));
        inputs
    }

    /// The keyless DSSE fixture with its `integratedTime` written twice, the first outside the
    /// leaf certificate's validity, and with its certificate's `rawBytes` written twice, the
    /// first another bundle's leaf: the two bundles of issue 26, which a reader keeping the last
    /// value verifies.
    fn issue_26_bundles() -> [Vec<u8>; 2] {
        let text = String::from_utf8(fixture("keyless-mock/model.keyless.sigstore.json")).unwrap();
        let time = "\"integratedTime\": \"1795946624\",";
        let raw = "\"certificate\": {\n      \"rawBytes\": ";
        let other: serde_json::Value =
            serde_json::from_slice(&fixture("keyless-mock/blob.sigstore.json")).unwrap();
        let other = other
            .pointer("/verificationMaterial/x509CertificateChain/certificates/0/rawBytes")
            .unwrap()
            .as_str()
            .unwrap();
        assert!(text.contains(time) && text.contains(raw));
        [
            text.replacen(
                time,
                &format!("\"integratedTime\": \"1795950000\",\n        {time}"),
                1,
            ),
            text.replacen(raw, &format!("{raw}\"{other}\",\n      \"rawBytes\": "), 1),
        ]
        .map(String::into_bytes)
    }

    #[test]
    fn the_keyless_bundles_of_issue_26_are_refused_by_the_build_and_by_weights_lock() {
        let good = fixture("keyless-mock/model.keyless.sigstore.json");
        assert_eq!(findings(&keyless_fleet(&good)), []);
        let expected = [
            "the key `integratedTime` appears twice in `bundle.verificationMaterial.tlogEntries[0]`, at line 18 column 9",
            "the key `rawBytes` appears twice in `bundle.verificationMaterial.certificate`, at line 6 column 7",
        ];
        for (bundle, reason) in issue_26_bundles().iter().zip(expected) {
            let inputs = keyless_fleet(bundle);
            assert_eq!(
                findings(&inputs),
                [(
                    "weights-signature-invalid",
                    format!("model `tiny v3` is not verified: {reason}")
                )]
            );
            let (tenant, mut material) = tenant_and_material(&inputs);
            material.remove("weights/alpha.lock");
            assert_eq!(
                prepare_lock(
                    &tenant,
                    "tiny",
                    None,
                    "weights/alpha/tiny.keyless.json",
                    &material
                )
                .unwrap_err(),
                LockError::NotVerified(format!(
                    "model `tiny v3` is not verified: {reason} (weights-signature-invalid)"
                ))
            );
        }
    }
}
