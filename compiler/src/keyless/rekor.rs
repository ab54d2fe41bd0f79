//! Steps 6, 7 and 8: the Rekor side of keyless verification.
//!
//! Consumes: the bundle's Rekor entry, what step 5 verified (digest and signature), the leaf
//! certificate's DER and the trust root's Rekor log key.
//! Produces: agreement or a lowercase reason.
//!
//! Invariants: the entry body is read with `crate::json_strict`, so a body with a key written
//! twice is refused; it must name the bundle's kind and version and agree with the
//! signature, the certificate and the digest computed from the artifact (never the bundle's own
//! digest); the SET is checked over canonical JSON rebuilt here; the inclusion proof is the
//! RFC 6962 (RFC 9162 section 2.1.3.2) algorithm, and the checkpoint must carry a signature of
//! the same log over a note that names the proof's root hash and tree size.

use serde_json::Value;

use super::Signed;
use super::bundle::{Content, LogKey, TlogEntry, b64, unb64};
use super::crypto::{HashAlg, hex};
use crate::json_strict;

/// Where the entry body sits in the bundle: the bundle holds exactly one entry.
const BODY: &str = "bundle.verificationMaterial.tlogEntries[0].canonicalizedBody";

/// Step 6: the entry body agrees with the signature, the certificate and the artifact digest.
pub(super) fn check_body(
    entry: &TlogEntry,
    content: &Content,
    signed: &Signed,
    leaf_der: &[u8],
) -> Result<(), String> {
    let body: Value = json_strict::from_slice(&entry.body, json_strict::Root::decoded(BODY))
        .map_err(|error| error.reason(|error| format!("the entry body is not JSON ({error})")))?;
    let text = |path: &[&str]| -> Result<&str, String> {
        let mut value = &body;
        for key in path {
            value = value
                .get(key)
                .ok_or_else(|| format!("the entry body has no `{}`", path.join(".")))?;
        }
        value
            .as_str()
            .ok_or_else(|| format!("the entry body's `{}` is not a string", path.join(".")))
    };
    let kind = text(&["kind"])?;
    let version = text(&["apiVersion"])?;
    if kind != entry.kind || version != entry.version {
        return Err(format!(
            "the entry body is a `{kind}` {version}, but the bundle says `{}` {}",
            entry.kind, entry.version
        ));
    }
    let certificate_matches = |pem_b64: &str, what: &str| -> Result<(), String> {
        let pem = unb64(pem_b64).map_err(|reason| format!("the entry's {what} is {reason}"))?;
        let der = pem_certificate(&pem)
            .ok_or_else(|| format!("the entry's {what} is not a PEM certificate"))?;
        if der != leaf_der {
            return Err(format!(
                "the entry's {what} is not the bundle's leaf certificate"
            ));
        }
        Ok(())
    };
    let signature_matches = |signature_b64: &str, what: &str| -> Result<(), String> {
        let signature =
            unb64(signature_b64).map_err(|reason| format!("the entry's {what} is {reason}"))?;
        if signature != signed.signature {
            return Err(format!("the entry's {what} is not the bundle's signature"));
        }
        Ok(())
    };
    let digest_matches = |algorithm: &str, value: &str, what: &str| -> Result<(), String> {
        if algorithm != signed.digest_alg.name() {
            return Err(format!(
                "the entry's {what} algorithm is `{algorithm}`, not `{}`",
                signed.digest_alg.name()
            ));
        }
        if value != hex(&signed.digest) {
            return Err(format!(
                "the entry's {what} is {value}, but the artifact's is {}",
                hex(&signed.digest)
            ));
        }
        Ok(())
    };
    match (kind, version, content) {
        ("hashedrekord", "0.0.1", Content::Message { .. }) => {
            digest_matches(
                text(&["spec", "data", "hash", "algorithm"])?,
                text(&["spec", "data", "hash", "value"])?,
                "artifact digest",
            )?;
            signature_matches(text(&["spec", "signature", "content"])?, "signature")?;
            certificate_matches(
                text(&["spec", "signature", "publicKey", "content"])?,
                "certificate",
            )
        }
        ("dsse", "0.0.1", Content::Dsse { .. }) => {
            digest_matches(
                text(&["spec", "payloadHash", "algorithm"])?,
                text(&["spec", "payloadHash", "value"])?,
                "payload digest",
            )?;
            let signatures = body
                .get("spec")
                .and_then(|spec| spec.get("signatures"))
                .and_then(Value::as_array)
                .ok_or_else(|| "the entry body has no `spec.signatures` list".to_string())?;
            let [only] = signatures.as_slice() else {
                return Err(format!(
                    "the entry body has {} signatures, not exactly one",
                    signatures.len()
                ));
            };
            let field = |key: &str| -> Result<&str, String> {
                only.get(key).and_then(Value::as_str).ok_or_else(|| {
                    format!("the entry body's `spec.signatures[0].{key}` is not a string")
                })
            };
            signature_matches(field("signature")?, "signature")?;
            certificate_matches(field("verifier")?, "verifier")
        }
        ("intoto", "0.0.2", Content::Dsse { payload_type, .. }) => {
            digest_matches(
                text(&["spec", "content", "payloadHash", "algorithm"])?,
                text(&["spec", "content", "payloadHash", "value"])?,
                "payload digest",
            )?;
            let envelope = body
                .get("spec")
                .and_then(|spec| spec.get("content"))
                .and_then(|content| content.get("envelope"))
                .ok_or_else(|| "the entry body has no `spec.content.envelope`".to_string())?;
            if let Some(entry_type) = envelope.get("payloadType")
                && entry_type.as_str() != Some(payload_type.as_str())
            {
                return Err(format!(
                    "the entry's payload type is not the envelope's `{payload_type}`"
                ));
            }
            let signatures = envelope
                .get("signatures")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    "the entry body has no `spec.content.envelope.signatures` list".to_string()
                })?;
            let [only] = signatures.as_slice() else {
                return Err(format!(
                    "the entry body has {} signatures, not exactly one",
                    signatures.len()
                ));
            };
            let field = |key: &str| -> Result<&str, String> {
                only.get(key).and_then(Value::as_str).ok_or_else(|| {
                    format!(
                        "the entry body's `spec.content.envelope.signatures[0].{key}` is not a string"
                    )
                })
            };
            // Rekor's intoto 0.0.2 stores the signature base64-encoded twice.
            let once = unb64(field("sig")?)
                .map_err(|reason| format!("the entry's signature is {reason}"))?;
            let once = String::from_utf8(once)
                .map_err(|_| "the entry's signature is not base64 twice".to_string())?;
            signature_matches(&once, "signature")?;
            certificate_matches(field("publicKey")?, "public key")
        }
        ("hashedrekord", "0.0.1", Content::Dsse { .. })
        | ("dsse", "0.0.1", Content::Message { .. })
        | ("intoto", "0.0.2", Content::Message { .. }) => Err(format!(
            "the entry is a `{kind}` entry, which does not fit the bundle's content"
        )),
        _ => Err(format!(
            "the Rekor entry kind `{kind}` {version} is not supported (only hashedrekord 0.0.1, dsse 0.0.1 and intoto 0.0.2)"
        )),
    }
}

/// The DER of the single certificate in a PEM text.
fn pem_certificate(pem: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(pem).ok()?;
    let inner = text
        .trim()
        .strip_prefix("-----BEGIN CERTIFICATE-----")?
        .strip_suffix("-----END CERTIFICATE-----")?;
    let joined: String = inner.split_whitespace().collect();
    unb64(&joined).ok()
}

/// Step 7: the SET is the log's ECDSA signature over the canonical JSON of the entry.
pub(super) fn verify_set(entry: &TlogEntry, log: &LogKey) -> Result<(), String> {
    if !log.valid.contains(entry.integrated_time) {
        return Err(format!(
            "the Rekor log key is not valid at the integrated time {}",
            entry.integrated_time
        ));
    }
    // Keys in lexical order, no spaces, integers as integers: RFC 8785 for these four fields.
    let canonical = format!(
        "{{\"body\":\"{}\",\"integratedTime\":{},\"logID\":\"{}\",\"logIndex\":{}}}",
        b64(&entry.body),
        entry.integrated_time,
        hex(&entry.log_id),
        entry.log_index
    );
    log.key
        .verify(
            log.key.default_hash(),
            canonical.as_bytes(),
            &entry.signed_entry_timestamp,
        )
        .map_err(|reason| {
            format!(
                "the SET over the body, integrated time {}, log id and log index {}: {reason}",
                entry.integrated_time, entry.log_index
            )
        })
}

fn node_hash(left: &[u8], right: &[u8]) -> Vec<u8> {
    let mut data = Vec::with_capacity(1 + left.len() + right.len());
    data.push(1u8);
    data.extend_from_slice(left);
    data.extend_from_slice(right);
    HashAlg::Sha256.digest(&data)
}

/// Step 8a: the RFC 6962 inclusion proof from the entry's leaf hash reaches the root hash.
pub(super) fn verify_inclusion(entry: &TlogEntry) -> Result<(), String> {
    let proof = &entry.proof;
    let mut leaf = vec![0u8];
    leaf.extend_from_slice(&entry.body);
    let leaf_hash = HashAlg::Sha256.digest(&leaf);
    let computed =
        root_from_inclusion(proof.log_index, proof.tree_size, &leaf_hash, &proof.hashes)?;
    if computed != proof.root_hash {
        return Err(format!(
            "the proof reaches the root {}, not the bundle's root hash {}",
            hex(&computed),
            hex(&proof.root_hash)
        ));
    }
    Ok(())
}

/// RFC 9162 section 2.1.3.2: the root an inclusion proof leads to.
pub(super) fn root_from_inclusion(
    index: i64,
    size: i64,
    leaf_hash: &[u8],
    hashes: &[Vec<u8>],
) -> Result<Vec<u8>, String> {
    if index >= size {
        return Err(format!(
            "the leaf index {index} is not inside the tree of size {size}"
        ));
    }
    if let Some(hash) = hashes.iter().find(|hash| hash.len() != 32) {
        return Err(format!("a proof hash has {} bytes, not 32", hash.len()));
    }
    let mut node = index;
    let mut last = size - 1;
    let mut root = leaf_hash.to_vec();
    for hash in hashes {
        if last == 0 {
            return Err("the proof has more hashes than the tree is deep".to_string());
        }
        if node % 2 == 1 || node == last {
            root = node_hash(hash, &root);
            if node % 2 == 0 {
                while node % 2 == 0 && node != 0 {
                    node /= 2;
                    last /= 2;
                }
            }
        } else {
            root = node_hash(&root, hash);
        }
        node /= 2;
        last /= 2;
    }
    if last != 0 {
        return Err("the proof has fewer hashes than the tree is deep".to_string());
    }
    Ok(root)
}

/// Step 8b: the checkpoint is a signed note by the log's key naming the proof's root and size.
pub(super) fn verify_checkpoint(entry: &TlogEntry, log: &LogKey) -> Result<(), String> {
    let envelope = entry.proof.checkpoint.as_str();
    let split = envelope
        .find("\n\n")
        .ok_or_else(|| "the checkpoint has no blank line before its signatures".to_string())?;
    let (note, signatures) = envelope.split_at(split + 1);
    let signatures = signatures.strip_prefix('\n').unwrap_or(signatures);
    let mut lines = note.lines();
    let origin = lines.next().unwrap_or("");
    let size = lines.next().unwrap_or("");
    let root = lines.next().unwrap_or("");
    if origin.is_empty() {
        return Err("the checkpoint names no log".to_string());
    }
    if size != entry.proof.tree_size.to_string() {
        return Err(format!(
            "the checkpoint's tree size is `{size}`, not the proof's {}",
            entry.proof.tree_size
        ));
    }
    if unb64(root).ok().as_deref() != Some(entry.proof.root_hash.as_slice()) {
        return Err(format!(
            "the checkpoint's root hash `{root}` is not the proof's {}",
            b64(&entry.proof.root_hash)
        ));
    }
    if !signatures.ends_with('\n') {
        return Err("the checkpoint's signatures do not end with a newline".to_string());
    }
    let key_hint = entry.log_id.get(..4).unwrap_or(&[]);
    let mut verified = false;
    for line in signatures.lines() {
        let mut parts = line.split(' ');
        let (Some("\u{2014}"), Some(name), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!(
                "the checkpoint signature line `{line}` is malformed"
            ));
        };
        let bytes = unb64(signature)
            .map_err(|reason| format!("the checkpoint signature of `{name}` is {reason}"))?;
        let Some((hint, signature)) = bytes.split_at_checked(4) else {
            return Err(format!("the checkpoint signature of `{name}` is too short"));
        };
        if hint != key_hint {
            continue;
        }
        log.key
            .verify(log.key.default_hash(), note.as_bytes(), signature)
            .map_err(|reason| format!("the checkpoint signature of `{name}`: {reason}"))?;
        verified = true;
    }
    if !verified {
        return Err("the checkpoint has no signature by the Rekor log key".to_string());
    }
    Ok(())
}
