//! Offline signature checks for model weights: model-signing key bundles and cosign blobs.
//!
//! Consumes: a tenant's PEM public keys and the bytes of a signature file from the repository.
//! Produces: the verified in-toto statement of a model-signing bundle (sigstore bundle v0.3,
//! DSSE, in-toto Statement v1, predicate `https://model_signing/signature/v1.0`), or the fact
//! that a cosign-style detached signature (base64 DER ECDSA) holds over given bytes.
//!
//! Invariants:
//! - Verification only, ECDSA on P-256 (SHA-256) and P-384 (SHA-384); no other algorithm is
//!   accepted, so a bundle cannot pick a weaker one.
//! - Only the keys the caller passes are tried; the bundle's `publicKey.hint` and DSSE `keyid`
//!   are never read.
//! - The DSSE signature is checked over the PAE encoding of the payload type and payload, and
//!   the statement is parsed only from the payload bytes that were verified.
//! - The bundle and the statement are read with `crate::json_strict`: a key written twice in any
//!   object of either is refused, so no part of them means two things.
//! - Errors are lowercase reasons without a final period, for a diagnostic's message.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use p256::pkcs8::DecodePublicKey as _;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::digest::{FileDigest, parse_hex, sort_manifest};
use crate::json_strict;

/// The predicate type of a model-signing v1.0 statement.
pub const PREDICATE_TYPE: &str = "https://model_signing/signature/v1.0";
/// The statement type of in-toto v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The media type of a sigstore bundle v0.3.
pub const BUNDLE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// Where the signed statement sits in a bundle, for the paths of findings.
const STATEMENT_PATH: &str = "bundle.dsseEnvelope.payload";

/// An ECDSA public key of a tenant.
#[derive(Debug, Clone)]
pub enum PublicKey {
    /// NIST P-256, verified with SHA-256.
    P256(p256::ecdsa::VerifyingKey),
    /// NIST P-384, verified with SHA-384.
    P384(p384::ecdsa::VerifyingKey),
}

impl PublicKey {
    /// Reads a PEM `PUBLIC KEY` (SPKI) block holding a P-256 or P-384 key.
    pub fn from_pem(text: &str) -> Result<Self, String> {
        if !text.contains("-----BEGIN PUBLIC KEY-----") {
            return Err("it holds no PEM `PUBLIC KEY` block".to_string());
        }
        if let Ok(key) = p256::ecdsa::VerifyingKey::from_public_key_pem(text.trim()) {
            return Ok(PublicKey::P256(key));
        }
        if let Ok(key) = p384::ecdsa::VerifyingKey::from_public_key_pem(text.trim()) {
            return Ok(PublicKey::P384(key));
        }
        Err("it is not an ECDSA P-256 or P-384 public key".to_string())
    }

    /// Whether `signature` (DER) is this key's ECDSA signature over `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier as _;
        match self {
            PublicKey::P256(key) => p256::ecdsa::DerSignature::from_bytes(signature)
                .is_ok_and(|signature| key.verify(message, &signature).is_ok()),
            PublicKey::P384(key) => p384::ecdsa::DerSignature::from_bytes(signature)
                .is_ok_and(|signature| key.verify(message, &signature).is_ok()),
        }
    }

    /// The key's curve and uncompressed SEC1 point: what identifies it in [`Verifications`].
    fn identity(&self) -> (u8, Vec<u8>) {
        match self {
            PublicKey::P256(key) => (1, key.to_encoded_point(false).as_bytes().to_vec()),
            PublicKey::P384(key) => (2, key.to_encoded_point(false).as_bytes().to_vec()),
        }
    }

    /// The curve, for messages.
    pub fn curve(&self) -> &'static str {
        match self {
            PublicKey::P256(_) => "P-256",
            PublicKey::P384(_) => "P-384",
        }
    }
}

/// The ECDSA verifications of one run, so each distinct (key, signature, message) is verified
/// once however many models present it (tenants that share signed weights).
///
/// It lives in memory for one call of `weights::verify` and is never written anywhere: a result
/// kept in the repository or in `out/` could be forged by a pull request.
#[derive(Debug, Default)]
pub struct Verifications {
    /// Per SHA-256 of (curve, key, signature, message), the one verification's result.
    results: std::sync::Mutex<BTreeMap<[u8; 32], Arc<OnceLock<bool>>>>,
    /// How many ECDSA verifications were computed (the rest were found here).
    computed: AtomicUsize,
}

impl Verifications {
    /// Whether `signature` is `key`'s signature over `message`, verified at most once per
    /// distinct triple; two threads asking for the same triple at once wait for one answer.
    pub fn verifies(&self, key: &PublicKey, message: &[u8], signature: &[u8]) -> bool {
        let (curve, point) = key.identity();
        let mut hasher = Sha256::new();
        for part in [&[curve][..], &point, signature, message] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        let id: [u8; 32] = hasher.finalize().into();
        let cell = {
            // A poisoned lock only means another thread panicked; the map is still sound.
            let mut results = self
                .results
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(results.entry(id).or_default())
        };
        *cell.get_or_init(|| {
            self.computed.fetch_add(1, Ordering::Relaxed);
            key.verifies(message, signature)
        })
    }

    /// How many ECDSA verifications were computed so far.
    pub fn computed(&self) -> usize {
        self.computed.load(Ordering::Relaxed)
    }
}

/// The DSSE v1 pre-authentication encoding of a payload type and payload.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload_type.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: Option<String>,
    verification_material: Option<serde_json::Value>,
    dsse_envelope: Option<Envelope>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Deserialize)]
struct EnvelopeSignature {
    sig: String,
}

/// What a sigstore bundle is signed with, from its verification material.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleKind {
    /// A public key named only by an unauthenticated hint.
    Key,
    /// A certificate or chain: a keyless (Fulcio) signature.
    Keyless,
}

/// The DSSE envelope of a bundle, as signed bytes.
#[derive(Debug, Clone)]
pub struct Dsse {
    /// How the bundle says it was signed.
    pub kind: BundleKind,
    /// The payload type.
    pub payload_type: String,
    /// The payload, decoded.
    pub payload: Vec<u8>,
    /// The DER signatures, decoded.
    pub signatures: Vec<Vec<u8>>,
}

/// Why a bundle or a signed statement was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A key is written twice in one object, so the document could mean two things.
    Duplicate(json_strict::Duplicate),
    /// Any other reason, in words.
    Invalid(String),
}

impl Refusal {
    /// The refusal of a strict reading; `not_json` words what serde_json refused.
    fn of(error: json_strict::Error, not_json: impl FnOnce(serde_json::Error) -> String) -> Self {
        match error {
            json_strict::Error::Duplicate(duplicate) => Refusal::Duplicate(duplicate),
            json_strict::Error::Json(error) => Refusal::Invalid(not_json(error)),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Duplicate(duplicate) => duplicate.fmt(formatter),
            Refusal::Invalid(reason) => formatter.write_str(reason),
        }
    }
}

/// Reads the DSSE envelope of a sigstore bundle v0.3 without checking any signature.
pub fn read_bundle(bytes: &[u8]) -> Result<Dsse, Refusal> {
    let bundle: Bundle = json_strict::from_slice(bytes, json_strict::Root::file("bundle"))
        .map_err(|error| {
            Refusal::of(error, |error| {
                format!("the bundle is not a sigstore bundle: {error}")
            })
        })?;
    envelope(bundle).map_err(Refusal::Invalid)
}

/// The DSSE envelope of a read bundle.
fn envelope(bundle: Bundle) -> Result<Dsse, String> {
    match bundle.media_type.as_deref() {
        Some(BUNDLE_V03) => {}
        Some(other) => {
            return Err(format!(
                "the bundle's media type is `{other}`, not `{BUNDLE_V03}`"
            ));
        }
        None => return Err("the bundle has no `mediaType`".to_string()),
    }
    let material = bundle
        .verification_material
        .ok_or("the bundle has no `verificationMaterial`")?;
    let kind = if material.get("publicKey").is_some() {
        BundleKind::Key
    } else if material.get("certificate").is_some()
        || material.get("x509CertificateChain").is_some()
    {
        BundleKind::Keyless
    } else {
        return Err("the bundle names neither a public key nor a certificate".to_string());
    };
    let envelope = bundle.dsse_envelope.ok_or(
        "the bundle holds no DSSE envelope (a message signature is not a model signature)",
    )?;
    let payload = STANDARD
        .decode(envelope.payload.as_bytes())
        .map_err(|_| "the DSSE payload is not base64".to_string())?;
    let mut signatures = Vec::new();
    for signature in &envelope.signatures {
        signatures.push(
            STANDARD
                .decode(signature.sig.as_bytes())
                .map_err(|_| "a DSSE signature is not base64".to_string())?,
        );
    }
    if signatures.is_empty() {
        return Err("the DSSE envelope has no signature".to_string());
    }
    Ok(Dsse {
        kind,
        payload_type: envelope.payload_type,
        payload,
        signatures,
    })
}

/// Checks a key bundle's DSSE signature against the tenant's keys; returns the verified payload.
///
/// Succeeds when any signature of the envelope verifies under any of `keys`.
pub fn verify_key_bundle<'a>(dsse: &'a Dsse, keys: &[PublicKey]) -> Result<&'a [u8], String> {
    verify_key_bundle_once(dsse, keys, &Verifications::default())
}

/// [`verify_key_bundle`], with each ECDSA verification looked up in, or added to, the run's
/// `done`.
pub fn verify_key_bundle_once<'a>(
    dsse: &'a Dsse,
    keys: &[PublicKey],
    done: &Verifications,
) -> Result<&'a [u8], String> {
    if dsse.payload_type != PAYLOAD_TYPE {
        return Err(format!(
            "the DSSE payload type is `{}`, not `{PAYLOAD_TYPE}`",
            dsse.payload_type
        ));
    }
    let message = pae(&dsse.payload_type, &dsse.payload);
    let verified = dsse.signatures.iter().any(|signature| {
        keys.iter()
            .any(|key| done.verifies(key, &message, signature.as_slice()))
    });
    if verified {
        Ok(&dsse.payload)
    } else {
        Err(format!(
            "the DSSE signature does not verify with the tenant's {}",
            key_count(keys)
        ))
    }
}

/// Checks a cosign-style detached signature (base64 of a DER ECDSA signature, as
/// `cosign sign-blob --key` writes it) over the exact bytes `blob`.
pub fn verify_blob(blob: &[u8], signature_file: &[u8], keys: &[PublicKey]) -> Result<(), String> {
    verify_blob_once(blob, signature_file, keys, &Verifications::default())
}

/// [`verify_blob`], with each ECDSA verification looked up in, or added to, the run's `done`.
pub fn verify_blob_once(
    blob: &[u8],
    signature_file: &[u8],
    keys: &[PublicKey],
    done: &Verifications,
) -> Result<(), String> {
    let text = std::str::from_utf8(signature_file)
        .map_err(|_| "the signature file is not base64 text".to_string())?;
    let signature = STANDARD
        .decode(text.trim().as_bytes())
        .map_err(|_| "the signature file is not base64".to_string())?;
    if keys
        .iter()
        .any(|key| done.verifies(key, blob, signature.as_slice()))
    {
        Ok(())
    } else {
        Err(format!(
            "the detached signature does not verify with the tenant's {}",
            key_count(keys)
        ))
    }
}

fn key_count(keys: &[PublicKey]) -> String {
    match keys {
        [key] => format!("{} key", key.curve()),
        _ => format!("{} keys", keys.len()),
    }
}

#[derive(Deserialize)]
struct Statement {
    #[serde(rename = "_type")]
    statement_type: String,
    subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    predicate_type: String,
    predicate: Predicate,
}

#[derive(Deserialize)]
struct Subject {
    digest: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Predicate {
    serialization: Serialization,
    resources: Vec<Resource>,
}

#[derive(Deserialize)]
struct Serialization {
    hash_type: String,
    method: String,
}

#[derive(Deserialize)]
struct Resource {
    algorithm: String,
    digest: String,
    name: String,
}

/// What a verified model-signing statement signs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedModel {
    /// The subject's root digest.
    pub root: [u8; 32],
    /// Every file and its digest, in manifest order.
    pub files: Vec<FileDigest>,
}

/// Reads a model-signing v1.0 statement (method `files`, sha256) from verified payload bytes.
pub fn read_statement(payload: &[u8]) -> Result<SignedModel, Refusal> {
    let statement: Statement =
        json_strict::from_slice(payload, json_strict::Root::decoded(STATEMENT_PATH)).map_err(
            |error| {
                Refusal::of(error, |error| {
                    format!("the signed statement is not a model-signing statement: {error}")
                })
            },
        )?;
    signed_model(statement).map_err(Refusal::Invalid)
}

/// What a read statement signs.
fn signed_model(statement: Statement) -> Result<SignedModel, String> {
    if statement.statement_type != STATEMENT_TYPE {
        return Err(format!(
            "the signed statement's type is `{}`, not `{STATEMENT_TYPE}`",
            statement.statement_type
        ));
    }
    if statement.predicate_type != PREDICATE_TYPE {
        return Err(format!(
            "the signed predicate is `{}`, not `{PREDICATE_TYPE}`",
            statement.predicate_type
        ));
    }
    let serialization = &statement.predicate.serialization;
    if serialization.method != "files" || serialization.hash_type != "sha256" {
        return Err(format!(
            "the model was signed with method `{}` and hash `{}`; only `files` with `sha256` is supported",
            serialization.method, serialization.hash_type
        ));
    }
    let [subject] = statement.subject.as_slice() else {
        return Err("the signed statement does not have exactly one subject".to_string());
    };
    let root = subject
        .digest
        .get("sha256")
        .and_then(|hex| parse_hex(hex))
        .ok_or("the signed subject has no sha256 digest")?;
    let mut files = Vec::new();
    for resource in statement.predicate.resources {
        let sha256 = parse_hex(&resource.digest)
            .filter(|_| resource.algorithm == "sha256")
            .ok_or_else(|| format!("the signed digest of `{}` is not a sha256", resource.name))?;
        files.push(FileDigest {
            path: resource.name,
            sha256,
        });
    }
    sort_manifest(&mut files);
    Ok(SignedModel { root, files })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/signing");

    fn fixture(path: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}/{path}")).unwrap()
    }

    fn key() -> PublicKey {
        PublicKey::from_pem(
            &String::from_utf8(fixture("model-signing/signing-key.pub.pem")).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn pae_matches_the_dsse_specification_example() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }

    #[test]
    fn the_model_signing_fixture_bundle_verifies_and_signs_the_statement() {
        let dsse = read_bundle(&fixture("model-signing/model.sig.json")).unwrap();
        assert_eq!(dsse.kind, BundleKind::Key);
        let payload = verify_key_bundle(&dsse, &[key()]).unwrap();
        assert_eq!(payload, fixture("model-signing/statement.json").as_slice());
        let signed = read_statement(payload).unwrap();
        assert_eq!(signed.files.len(), 5);
        assert_eq!(
            super::super::digest::root_digest(&signed.files),
            signed.root
        );
    }

    #[test]
    fn each_distinct_key_signature_and_statement_is_verified_once_per_run() {
        let done = Verifications::default();
        let dsse = read_bundle(&fixture("model-signing/model.sig.json")).unwrap();
        // Two models presenting the same signed statement: one ECDSA verification.
        assert!(verify_key_bundle_once(&dsse, &[key()], &done).is_ok());
        assert!(verify_key_bundle_once(&dsse, &[key()], &done).is_ok());
        assert_eq!(done.computed(), 1);
        // Another signature, or the same signature under another key, is verified anew, and a
        // failure is remembered as a failure.
        let bad = read_bundle(&fixture("model-signing/model.badsig.json")).unwrap();
        assert!(verify_key_bundle_once(&bad, &[key()], &done).is_err());
        assert!(verify_key_bundle_once(&bad, &[key()], &done).is_err());
        assert_eq!(done.computed(), 2);
        let (_, other) = other_p256(7);
        assert!(verify_key_bundle_once(&dsse, std::slice::from_ref(&other), &done).is_err());
        assert_eq!(done.computed(), 3);
        // The same signature over another message is not taken from the run's results.
        let mut changed = read_bundle(&fixture("model-signing/model.sig.json")).unwrap();
        changed.payload.push(b' ');
        assert!(verify_key_bundle_once(&changed, &[key()], &done).is_err());
        assert_eq!(done.computed(), 4);
    }

    #[test]
    fn a_flipped_signature_byte_is_rejected() {
        let dsse = read_bundle(&fixture("model-signing/model.badsig.json")).unwrap();
        let error = verify_key_bundle(&dsse, &[key()]).unwrap_err();
        assert_eq!(
            error,
            "the DSSE signature does not verify with the tenant's P-256 key"
        );
    }

    #[test]
    fn a_signature_over_the_payload_without_pae_is_rejected() {
        // A signer that signs the raw payload instead of its PAE encoding must not pass.
        let mut dsse = read_bundle(&fixture("model-signing/model.sig.json")).unwrap();
        dsse.payload_type = "application/json".to_string();
        assert!(verify_key_bundle(&dsse, &[key()]).is_err());
    }

    /// A P-256 key pair made from a fixed secret, as another tenant's key.
    pub(crate) fn other_p256(secret: u8) -> (p256::ecdsa::SigningKey, PublicKey) {
        let signing = p256::ecdsa::SigningKey::from_slice(&[secret; 32]).unwrap();
        let public = PublicKey::P256(*signing.verifying_key());
        (signing, public)
    }

    #[test]
    fn a_key_of_another_tenant_does_not_verify() {
        let (_, other) = other_p256(7);
        let dsse = read_bundle(&fixture("model-signing/model.sig.json")).unwrap();
        assert!(verify_key_bundle(&dsse, std::slice::from_ref(&other)).is_err());
        // Any one of the tenant's keys may verify.
        assert!(verify_key_bundle(&dsse, &[other, key()]).is_ok());
    }

    #[test]
    fn p384_signatures_verify_with_sha384_and_only_with_their_key() {
        use p384::ecdsa::signature::Signer as _;
        use p384::pkcs8::{EncodePublicKey as _, LineEnding};
        let signing = p384::ecdsa::SigningKey::from_slice(&[9u8; 48]).unwrap();
        let pem = signing
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        let public = PublicKey::from_pem(&pem).unwrap();
        assert_eq!(public.curve(), "P-384");
        let payload = fixture("model-signing/statement.json");
        let signature: p384::ecdsa::Signature = signing.sign(&pae(PAYLOAD_TYPE, &payload));
        let dsse = Dsse {
            kind: BundleKind::Key,
            payload_type: PAYLOAD_TYPE.to_string(),
            payload,
            signatures: vec![signature.to_der().as_bytes().to_vec()],
        };
        assert!(verify_key_bundle(&dsse, &[public]).is_ok());
        assert!(verify_key_bundle(&dsse, &[key()]).is_err());
    }

    #[test]
    fn the_cosign_blob_fixture_verifies_over_the_exact_bytes_only() {
        let key = PublicKey::from_pem(
            &String::from_utf8(fixture("cosign-blob/signing-key.pub.pem")).unwrap(),
        )
        .unwrap();
        let blob = fixture("cosign-blob/weights.lock");
        let signature = fixture("cosign-blob/weights.lock.sig");
        verify_blob(&blob, &signature, std::slice::from_ref(&key)).unwrap();
        let mut changed = blob.clone();
        changed.push(b'\n');
        assert!(verify_blob(&changed, &signature, std::slice::from_ref(&key)).is_err());
        let mut flipped = blob;
        if let Some(byte) = flipped.first_mut() {
            *byte ^= 1;
        }
        assert!(verify_blob(&flipped, &signature, &[key]).is_err());
    }

    #[test]
    fn keys_other_than_ecdsa_p256_and_p384_are_refused() {
        // An Ed25519 SPKI public key.
        let ed25519 = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n";
        assert_eq!(
            PublicKey::from_pem(ed25519).unwrap_err(),
            "it is not an ECDSA P-256 or P-384 public key"
        );
        assert!(PublicKey::from_pem("not a key").is_err());
    }

    #[test]
    fn a_keyless_bundle_is_told_apart_from_a_key_bundle() {
        let dsse = read_bundle(&fixture("keyless-mock/model.keyless.sigstore.json")).unwrap();
        assert_eq!(dsse.kind, BundleKind::Keyless);
        assert_eq!(dsse.payload, fixture("model-signing/statement.json"));
    }
}
