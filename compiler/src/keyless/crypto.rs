//! The cryptography of keyless verification: SHA-2 digests and ECDSA P-256 and P-384 keys.
//!
//! Consumes: SPKI DER public keys, messages or digests, DER ECDSA signatures.
//! Produces: verified or rejected, with a lowercase reason.
//!
//! Invariants: only ECDSA over P-256 and P-384 is accepted (every other key is refused, never
//! skipped); a digest longer than the curve's field is truncated as FIPS 186 says, which is how
//! a P-256 CA signs with SHA-384.

use p256::ecdsa::signature::hazmat::PrehashVerifier;
use p256::pkcs8::DecodePublicKey;
use sha2::Digest;

/// A digest algorithm of the SHA-2 family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HashAlg {
    Sha256,
    Sha384,
}

impl HashAlg {
    pub(super) fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            HashAlg::Sha256 => sha2::Sha256::digest(data).to_vec(),
            HashAlg::Sha384 => sha2::Sha384::digest(data).to_vec(),
        }
    }

    /// The name Rekor bodies use (`sha256`, `sha384`).
    pub(super) fn name(self) -> &'static str {
        match self {
            HashAlg::Sha256 => "sha256",
            HashAlg::Sha384 => "sha384",
        }
    }
}

/// An ECDSA verifying key.
#[derive(Debug, Clone)]
pub(super) enum PublicKey {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
}

impl PublicKey {
    /// Reads a DER `SubjectPublicKeyInfo` of an ECDSA P-256 or P-384 key.
    pub(super) fn from_spki_der(der: &[u8]) -> Result<Self, String> {
        if let Ok(key) = p256::ecdsa::VerifyingKey::from_public_key_der(der) {
            return Ok(PublicKey::P256(key));
        }
        if let Ok(key) = p384::ecdsa::VerifyingKey::from_public_key_der(der) {
            return Ok(PublicKey::P384(key));
        }
        Err("the public key is not an ECDSA P-256 or P-384 key".to_string())
    }

    /// The digest that sigstore pairs with the key's curve.
    pub(super) fn default_hash(&self) -> HashAlg {
        match self {
            PublicKey::P256(_) => HashAlg::Sha256,
            PublicKey::P384(_) => HashAlg::Sha384,
        }
    }

    /// Verifies a DER ECDSA signature over `message` hashed with `hash`.
    pub(super) fn verify(
        &self,
        hash: HashAlg,
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), String> {
        self.verify_prehash(&hash.digest(message), signature)
    }

    /// Verifies a DER ECDSA signature over an already computed digest.
    pub(super) fn verify_prehash(&self, digest: &[u8], signature: &[u8]) -> Result<(), String> {
        let verified = match self {
            PublicKey::P256(key) => {
                let signature = p256::ecdsa::DerSignature::from_bytes(signature)
                    .map_err(|_| "the signature is not a DER ECDSA P-256 signature".to_string())?;
                key.verify_prehash(digest, &signature)
            }
            PublicKey::P384(key) => {
                let signature = p384::ecdsa::DerSignature::from_bytes(signature)
                    .map_err(|_| "the signature is not a DER ECDSA P-384 signature".to_string())?;
                key.verify_prehash(digest, &signature)
            }
        };
        verified.map_err(|_| "the signature does not verify".to_string())
    }
}

/// Lowercase hexadecimal.
pub(super) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}
