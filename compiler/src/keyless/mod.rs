//! Keyless sigstore bundle verification, offline and fail closed.
//!
//! Consumes: a sigstore bundle (JSON, media types v0.1, v0.2 and v0.3) holding a Fulcio leaf
//! certificate, a message signature or a DSSE envelope and one Rekor entry; a trusted root
//! (`application/vnd.dev.sigstore.trustedroot+json;version=0.1`); the identity a tenant allows;
//! and the artifact the caller expects to be signed.
//! Produces: [`Verified`] (the log's integrated time and index, and the certificate's identity),
//! or an [`Error`] that names the first step that failed and why.
//!
//! The steps run in this order, and each has its own [`Step`]: parse, certificate chain, SCT,
//! identity, signature, Rekor body, signed entry timestamp, inclusion proof, checkpoint, time
//! (`docs/weights-keyless.md` lists what each checks and what is not checked).
//!
//! Invariants: pure (no IO, no clock, no network; every time check uses the log's integrated
//! time); nothing verifies unless every step passed; no input panics; only the trust root's keys
//! are trusted, never a key or certificate chain the bundle brings beyond its leaf.

mod bundle;
mod cert;
mod crypto;
mod rekor;
#[cfg(test)]
mod tests;

use std::fmt;

use bundle::Content;
use crypto::HashAlg;

/// The signer a tenant allows: the certificate's subject alternative name (a URI or an email
/// address) and the OIDC issuer Fulcio recorded in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The subject alternative name, compared exactly.
    pub san: String,
    /// The OIDC issuer (Fulcio extension `1.3.6.1.4.1.57264.1.8`, or the older `.1.1`), compared
    /// exactly.
    pub issuer: String,
}

/// What the caller expects the bundle to sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Artifact<'a> {
    /// The exact bytes of a blob, signed by a message signature.
    Blob(&'a [u8]),
    /// A DSSE payload and its type, signed as a DSSE envelope.
    Dsse {
        /// Such as `application/vnd.in-toto+json`.
        payload_type: &'a str,
        /// The exact payload bytes.
        payload: &'a [u8],
    },
}

/// What a successful verification proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// When the log integrated the entry (Unix seconds), authenticated by the SET.
    pub integrated_time: i64,
    /// The entry's index in the log, authenticated by the SET.
    pub log_index: i64,
    /// The certificate's subject alternative name (equal to the allowed identity's).
    pub san: String,
    /// The certificate's OIDC issuer (equal to the allowed identity's).
    pub issuer: String,
}

/// The steps of the check, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// 1: the bundle and the trusted root are well-formed.
    Parse,
    /// 2: the leaf certificate chains to a certificate authority of the trust root.
    Chain,
    /// 3: an SCT embedded in the leaf verifies against a CT log key of the trust root.
    Sct,
    /// 4: the certificate's SAN and issuer equal the allowed identity.
    Identity,
    /// 5: the signature verifies over the artifact with the leaf key.
    Signature,
    /// 6: the Rekor entry body agrees with the signature, certificate and artifact digest.
    RekorBody,
    /// 7: the signed entry timestamp verifies with the Rekor log key.
    SignedEntryTimestamp,
    /// 8a: the Merkle inclusion proof reaches the root hash.
    InclusionProof,
    /// 8b: the checkpoint is signed by the log key and names the root hash and tree size.
    Checkpoint,
    /// 9: the integrated time lies inside the leaf certificate's validity.
    Time,
}

impl Step {
    /// The step's number in `docs/weights-keyless.md` (8 for both parts of the log proof).
    pub fn number(self) -> u8 {
        match self {
            Step::Parse => 1,
            Step::Chain => 2,
            Step::Sct => 3,
            Step::Identity => 4,
            Step::Signature => 5,
            Step::RekorBody => 6,
            Step::SignedEntryTimestamp => 7,
            Step::InclusionProof | Step::Checkpoint => 8,
            Step::Time => 9,
        }
    }

    /// A short name of the step, lowercase.
    pub fn name(self) -> &'static str {
        match self {
            Step::Parse => "bundle and trust root",
            Step::Chain => "certificate chain",
            Step::Sct => "certificate transparency",
            Step::Identity => "identity",
            Step::Signature => "signature",
            Step::RekorBody => "rekor entry body",
            Step::SignedEntryTimestamp => "signed entry timestamp",
            Step::InclusionProof => "inclusion proof",
            Step::Checkpoint => "checkpoint",
            Step::Time => "signing time",
        }
    }
}

/// The length in bytes after which a reason is cut and marked with `...`.
const MAX_REASON_CHARS: usize = 1000;

/// Why a bundle was rejected: the step that failed and a precise reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    step: Step,
    reason: String,
}

impl Error {
    /// Reasons quote bundle contents (media types, names, checkpoint lines), so every control,
    /// bidirectional-formatting and separator character is escaped and the length is bounded:
    /// the `Display` of an error is always one printable line.
    fn new(step: Step, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        let mut printable = String::with_capacity(reason.len().min(MAX_REASON_CHARS));
        for ch in reason.chars() {
            if printable.len() >= MAX_REASON_CHARS {
                printable.push_str("...");
                break;
            }
            if crate::names::char_kind_forbidden(ch).is_some() {
                printable.push_str(&format!("\\u{{{:x}}}", u32::from(ch)));
            } else {
                printable.push(ch);
            }
        }
        Error {
            step,
            reason: printable,
        }
    }

    /// The step that failed.
    pub fn step(&self) -> Step {
        self.step
    }

    /// The reason, lowercase and without a final period.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "keyless step {} ({}) failed: {}",
            self.step.number(),
            self.step.name(),
            self.reason
        )
    }
}

impl std::error::Error for Error {}

/// Verifies a keyless sigstore bundle against a pinned trust root, offline.
///
/// Every step runs in the order of [`Step`]; the first that fails is returned.
pub fn verify(
    bundle_json: &[u8],
    trusted_root_json: &[u8],
    identity: &Identity,
    artifact: Artifact<'_>,
) -> Result<Verified, Error> {
    // Step 1: parse.
    let parse = |reason: String| Error::new(Step::Parse, reason);
    let bundle = bundle::parse_bundle(bundle_json).map_err(parse)?;
    let root = bundle::parse_trusted_root(trusted_root_json).map_err(parse)?;
    let leaf = cert::Cert::parse(&bundle.leaf_der)
        .map_err(|reason| parse(format!("leaf certificate: {reason}")))?;
    let entry = &bundle.entry;
    let signing_time = entry.integrated_time;

    // Step 2: the chain to a Fulcio CA of the trust root, valid at signing time.
    let issuer = cert::verify_chain(&leaf, &root.authorities, signing_time)
        .map_err(|reason| Error::new(Step::Chain, reason))?;

    // Step 3: an embedded SCT from a CT log of the trust root.
    cert::verify_sct(&leaf, &issuer, &root.ct_logs)
        .map_err(|reason| Error::new(Step::Sct, reason))?;

    // Step 4: the identity.
    let (san, cert_issuer) =
        cert::identity(&leaf).map_err(|reason| Error::new(Step::Identity, reason))?;
    if san != identity.san {
        return Err(Error::new(
            Step::Identity,
            format!(
                "the certificate's subject alternative name is `{san}`, not the allowed `{}`",
                identity.san
            ),
        ));
    }
    if cert_issuer != identity.issuer {
        return Err(Error::new(
            Step::Identity,
            format!(
                "the certificate's issuer is `{cert_issuer}`, not the allowed `{}`",
                identity.issuer
            ),
        ));
    }

    // Step 5: the signature over the artifact.
    let leaf_key = leaf
        .public_key()
        .map_err(|reason| Error::new(Step::Signature, format!("leaf key: {reason}")))?;
    let signed = verify_signature(&bundle.content, &leaf_key, artifact)
        .map_err(|reason| Error::new(Step::Signature, reason))?;

    // Step 6: the Rekor body agrees with what was verified.
    rekor::check_body(entry, &bundle.content, &signed, &bundle.leaf_der)
        .map_err(|reason| Error::new(Step::RekorBody, reason))?;

    // Step 7: the SET, by a Rekor log of the trust root.
    let log = root
        .tlogs
        .iter()
        .find(|log| log.log_id == entry.log_id)
        .ok_or_else(|| {
            Error::new(
                Step::SignedEntryTimestamp,
                format!(
                    "the trust root has no Rekor log with id {}",
                    bundle::b64(&entry.log_id)
                ),
            )
        })?;
    rekor::verify_set(entry, log)
        .map_err(|reason| Error::new(Step::SignedEntryTimestamp, reason))?;

    // Step 8: the inclusion proof and the checkpoint.
    rekor::verify_inclusion(entry).map_err(|reason| Error::new(Step::InclusionProof, reason))?;
    rekor::verify_checkpoint(entry, log).map_err(|reason| Error::new(Step::Checkpoint, reason))?;

    // Step 9: the integrated time inside the leaf's validity.
    cert::check_validity(&leaf, signing_time, "leaf certificate")
        .map_err(|reason| Error::new(Step::Time, reason))?;

    Ok(Verified {
        integrated_time: entry.integrated_time,
        log_index: entry.log_index,
        san,
        issuer: cert_issuer,
    })
}

/// What step 5 verified, for step 6 to compare the Rekor body with.
struct Signed {
    /// The artifact digest (message signature) or the payload digest (DSSE), as computed here.
    digest: Vec<u8>,
    /// The algorithm of `digest`.
    digest_alg: HashAlg,
    /// The signature bytes (DER ECDSA).
    signature: Vec<u8>,
}

fn verify_signature(
    content: &Content,
    leaf_key: &crypto::PublicKey,
    artifact: Artifact<'_>,
) -> Result<Signed, String> {
    match (content, artifact) {
        (
            Content::Message {
                digest_alg,
                digest,
                signature,
            },
            Artifact::Blob(blob),
        ) => {
            let computed = digest_alg.digest(blob);
            if &computed != digest {
                return Err(format!(
                    "the bundle's message digest is {}, but the artifact's {} is {}",
                    crypto::hex(digest),
                    digest_alg.name(),
                    crypto::hex(&computed)
                ));
            }
            leaf_key
                .verify_prehash(&computed, signature)
                .map_err(|reason| format!("the message signature over the artifact: {reason}"))?;
            Ok(Signed {
                digest: computed,
                digest_alg: *digest_alg,
                signature: signature.clone(),
            })
        }
        (
            Content::Dsse {
                payload_type,
                payload,
                signature,
            },
            Artifact::Dsse {
                payload_type: expected_type,
                payload: expected_payload,
            },
        ) => {
            if payload_type != expected_type {
                return Err(format!(
                    "the envelope's payload type is `{payload_type}`, not the expected `{expected_type}`"
                ));
            }
            if payload.as_slice() != expected_payload {
                return Err(format!(
                    "the envelope's payload (sha256 {}) is not the expected artifact (sha256 {})",
                    crypto::hex(&HashAlg::Sha256.digest(payload)),
                    crypto::hex(&HashAlg::Sha256.digest(expected_payload))
                ));
            }
            let pae = dsse_pae(payload_type, payload);
            leaf_key
                .verify(leaf_key.default_hash(), &pae, signature)
                .map_err(|reason| format!("the DSSE signature over the payload: {reason}"))?;
            Ok(Signed {
                digest: HashAlg::Sha256.digest(payload),
                digest_alg: HashAlg::Sha256,
                signature: signature.clone(),
            })
        }
        (Content::Message { .. }, Artifact::Dsse { .. }) => Err(
            "the bundle holds a message signature, but a DSSE envelope was expected".to_string(),
        ),
        (Content::Dsse { .. }, Artifact::Blob(_)) => Err(
            "the bundle holds a DSSE envelope, but a message signature over a blob was expected"
                .to_string(),
        ),
    }
}

/// The DSSE v1 pre-authentication encoding: `DSSEv1 SP len(type) SP type SP len(body) SP body`.
fn dsse_pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut pae = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    pae.extend_from_slice(payload);
    pae
}
