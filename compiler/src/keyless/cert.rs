//! Steps 2, 3, 4 and 9: the X.509 side of keyless verification.
//!
//! Consumes: the leaf certificate's DER, the trust root's certificate authorities and CT log
//! keys, and the signing time (the log's integrated time).
//! Produces: the certificate that issued the leaf, a verified embedded SCT, the identity (SAN
//! and OIDC issuer), or a lowercase reason.
//!
//! Invariants: a certificate is accepted only in canonical DER (so re-encoding it gives the
//! signed bytes back); an unknown critical extension, a duplicate extension or an unsupported
//! signature algorithm is refused; the chain is built only from the trust root, never from
//! certificates the bundle carries.

use x509_cert::Certificate;
use x509_cert::der::asn1::{ObjectIdentifier, OctetString};
use x509_cert::der::{Decode, Encode};
use x509_cert::ext::Extension;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAltName};

use super::bundle::{Authority, LogKey};
use super::crypto::{HashAlg, PublicKey, hex};

const BASIC_CONSTRAINTS: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.19");
const KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.15");
const EXT_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.37");
const SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");
const AUTHORITY_KEY_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.35");
const CODE_SIGNING: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.3");
/// RFC 6962 embedded SCT list.
const SCT_LIST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.11129.2.4.2");
/// Fulcio's OIDC issuer, the older raw-string form.
const FULCIO_ISSUER_V1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.1");
/// Fulcio's OIDC issuer, a DER UTF8String.
const FULCIO_ISSUER_V2: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.8");
const ECDSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");

/// Extensions this module understands when they are critical.
const KNOWN_CRITICAL: [ObjectIdentifier; 5] = [
    BASIC_CONSTRAINTS,
    KEY_USAGE,
    EXT_KEY_USAGE,
    SUBJECT_ALT_NAME,
    AUTHORITY_KEY_ID,
];

/// A parsed certificate with its DER.
#[derive(Debug, Clone)]
pub(super) struct Cert {
    pub inner: Certificate,
}

impl Cert {
    /// Parses a certificate, refusing non-canonical DER and duplicate extensions.
    pub(super) fn parse(der: &[u8]) -> Result<Cert, String> {
        let inner = Certificate::from_der(der)
            .map_err(|error| format!("not an X.509 certificate ({error})"))?;
        let again = inner
            .to_der()
            .map_err(|error| format!("cannot re-encode the certificate ({error})"))?;
        if again != der {
            return Err("the certificate is not in canonical DER".to_string());
        }
        let extensions = extensions(&inner);
        for (idx, extension) in extensions.iter().enumerate() {
            if extensions
                .iter()
                .skip(idx + 1)
                .any(|other| other.extn_id == extension.extn_id)
            {
                return Err(format!(
                    "the certificate has the extension {} twice",
                    extension.extn_id
                ));
            }
        }
        Ok(Cert { inner })
    }

    fn extension(&self, oid: ObjectIdentifier) -> Option<&Extension> {
        extensions(&self.inner)
            .iter()
            .find(|extension| extension.extn_id == oid)
    }

    fn subject(&self) -> String {
        self.inner.tbs_certificate.subject.to_string()
    }

    /// The certificate's public key.
    pub(super) fn public_key(&self) -> Result<PublicKey, String> {
        let spki = self
            .inner
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .map_err(|error| format!("cannot encode the public key ({error})"))?;
        PublicKey::from_spki_der(&spki)
    }

    fn spki_der(&self) -> Result<Vec<u8>, String> {
        self.inner
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .map_err(|error| format!("cannot encode the public key ({error})"))
    }

    fn basic_constraints(&self) -> Result<Option<BasicConstraints>, String> {
        self.extension(BASIC_CONSTRAINTS)
            .map(|extension| {
                BasicConstraints::from_der(extension.extn_value.as_bytes())
                    .map_err(|error| format!("unreadable basic constraints ({error})"))
            })
            .transpose()
    }

    fn key_usage(&self) -> Result<Option<KeyUsage>, String> {
        self.extension(KEY_USAGE)
            .map(|extension| {
                KeyUsage::from_der(extension.extn_value.as_bytes())
                    .map_err(|error| format!("unreadable key usage ({error})"))
            })
            .transpose()
    }

    /// Refuses a critical extension this module does not check.
    fn known_critical_only(&self, known: &[ObjectIdentifier]) -> Result<(), String> {
        match extensions(&self.inner)
            .iter()
            .find(|extension| extension.critical && !known.contains(&extension.extn_id))
        {
            Some(extension) => Err(format!(
                "`{}` has an unknown critical extension {}",
                self.subject(),
                extension.extn_id
            )),
            None => Ok(()),
        }
    }

    /// Verifies that `issuer` signed this certificate and is named as its issuer.
    fn verify_signed_by(&self, issuer: &Cert) -> Result<(), String> {
        let tbs = &self.inner.tbs_certificate;
        if tbs.issuer != issuer.inner.tbs_certificate.subject {
            return Err(format!(
                "`{}` is issued by `{}`, not by `{}`",
                self.subject(),
                tbs.issuer,
                issuer.subject()
            ));
        }
        if self.inner.signature_algorithm != tbs.signature {
            return Err(format!(
                "`{}` names two different signature algorithms",
                self.subject()
            ));
        }
        let hash = match self.inner.signature_algorithm.oid {
            ECDSA_SHA256 => HashAlg::Sha256,
            ECDSA_SHA384 => HashAlg::Sha384,
            other => {
                return Err(format!(
                    "`{}` is signed with the unsupported algorithm {other}",
                    self.subject()
                ));
            }
        };
        let signed = tbs
            .to_der()
            .map_err(|error| format!("cannot encode the signed part ({error})"))?;
        let signature =
            self.inner.signature.as_bytes().ok_or_else(|| {
                format!("the signature of `{}` is not whole bytes", self.subject())
            })?;
        issuer
            .public_key()
            .map_err(|reason| format!("the key of `{}`: {reason}", issuer.subject()))?
            .verify(hash, &signed, signature)
            .map_err(|reason| {
                format!(
                    "the signature of `{}` by `{}`: {reason}",
                    self.subject(),
                    issuer.subject()
                )
            })
    }
}

fn extensions(certificate: &Certificate) -> &[Extension] {
    certificate
        .tbs_certificate
        .extensions
        .as_deref()
        .unwrap_or(&[])
}

/// Step 9 (and the CA part of step 2): `time` lies inside the certificate's validity, bounds
/// included.
pub(super) fn check_validity(cert: &Cert, time: i64, what: &str) -> Result<(), String> {
    let validity = &cert.inner.tbs_certificate.validity;
    let not_before = seconds(validity.not_before.to_unix_duration());
    let not_after = seconds(validity.not_after.to_unix_duration());
    if time < not_before || time > not_after {
        return Err(format!(
            "the signing time {time} is outside the validity of the {what} `{}` ({not_before} to {not_after}, Unix seconds)",
            cert.subject()
        ));
    }
    Ok(())
}

fn seconds(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// Step 2: the leaf chains to a certificate authority of the trust root that is valid at
/// `time`; returns the certificate that issued the leaf.
pub(super) fn verify_chain(
    leaf: &Cert,
    authorities: &[Authority],
    time: i64,
) -> Result<Cert, String> {
    check_leaf(leaf)?;
    let mut reasons = Vec::new();
    for (idx, authority) in authorities.iter().enumerate() {
        if !authority.valid.contains(time) {
            reasons.push(format!(
                "certificate authority {idx} of the trust root is not valid at the signing time {time}"
            ));
            continue;
        }
        match verify_chain_to(leaf, authority, time) {
            Ok(issuer) => return Ok(issuer),
            Err(reason) => reasons.push(format!("certificate authority {idx}: {reason}")),
        }
    }
    if reasons.is_empty() {
        return Err("the trust root has no certificate authority".to_string());
    }
    Err(format!(
        "the leaf does not chain to the trust root: {}",
        reasons.join("; ")
    ))
}

fn check_leaf(leaf: &Cert) -> Result<(), String> {
    leaf.known_critical_only(&KNOWN_CRITICAL)?;
    if leaf
        .basic_constraints()?
        .is_some_and(|constraints| constraints.ca)
    {
        return Err("the leaf certificate is a CA certificate".to_string());
    }
    match leaf.key_usage()? {
        Some(usage) if usage.digital_signature() => {}
        _ => return Err("the leaf certificate's key usage does not allow signing".to_string()),
    }
    let code_signing = leaf
        .extension(EXT_KEY_USAGE)
        .map(|extension| {
            ExtendedKeyUsage::from_der(extension.extn_value.as_bytes())
                .map_err(|error| format!("unreadable extended key usage ({error})"))
        })
        .transpose()?
        .is_some_and(|usage| usage.0.contains(&CODE_SIGNING));
    if !code_signing {
        return Err("the leaf certificate's extended key usage lacks code signing".to_string());
    }
    Ok(())
}

fn verify_chain_to(leaf: &Cert, authority: &Authority, time: i64) -> Result<Cert, String> {
    let chain = authority
        .chain
        .iter()
        .enumerate()
        .map(|(idx, der)| Cert::parse(der).map_err(|reason| format!("certificate {idx}: {reason}")))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(issuer) = chain.first() else {
        return Err("its chain is empty".to_string());
    };
    let mut child = leaf;
    for (depth, parent) in chain.iter().enumerate() {
        parent.known_critical_only(&KNOWN_CRITICAL)?;
        let Some(constraints) = parent.basic_constraints()? else {
            return Err(format!("`{}` has no basic constraints", parent.subject()));
        };
        if !constraints.ca {
            return Err(format!("`{}` is not a CA certificate", parent.subject()));
        }
        if constraints
            .path_len_constraint
            .is_some_and(|len| usize::from(len) < depth)
        {
            return Err(format!(
                "`{}` allows fewer intermediate CAs below it than the chain has",
                parent.subject()
            ));
        }
        if parent
            .key_usage()?
            .is_some_and(|usage| !usage.key_cert_sign())
        {
            return Err(format!(
                "`{}` has a key usage without certificate signing",
                parent.subject()
            ));
        }
        check_validity(parent, time, "CA certificate")?;
        child.verify_signed_by(parent)?;
        child = parent;
    }
    // The last certificate is the trust anchor; a self-issued anchor must also verify itself.
    if child.inner.tbs_certificate.issuer == child.inner.tbs_certificate.subject {
        child.verify_signed_by(child)?;
    }
    Ok(issuer.clone())
}

/// Step 3: an SCT embedded in the leaf verifies against a CT log key of the trust root (RFC 6962
/// section 3.2: the precertificate TBS without the SCT list, with the issuer's key hash).
pub(super) fn verify_sct(leaf: &Cert, issuer: &Cert, ct_logs: &[LogKey]) -> Result<(), String> {
    let extension = leaf
        .extension(SCT_LIST)
        .ok_or_else(|| "the leaf certificate has no embedded SCT".to_string())?;
    let list = OctetString::from_der(extension.extn_value.as_bytes())
        .map_err(|error| format!("the SCT list is not an OCTET STRING ({error})"))?;
    let scts = parse_sct_list(list.as_bytes())?;
    let mut tbs = leaf.inner.tbs_certificate.clone();
    tbs.extensions = tbs.extensions.map(|extensions| {
        extensions
            .into_iter()
            .filter(|extension| extension.extn_id != SCT_LIST)
            .collect()
    });
    let tbs = tbs
        .to_der()
        .map_err(|error| format!("cannot encode the precertificate ({error})"))?;
    let tbs_len = u32::try_from(tbs.len())
        .ok()
        .filter(|len| *len < 1 << 24)
        .ok_or_else(|| "the precertificate is too large for an SCT".to_string())?;
    let issuer_key_hash = HashAlg::Sha256.digest(&issuer.spki_der()?);
    let mut reasons = Vec::new();
    for sct in &scts {
        let Some(log) = ct_logs.iter().find(|log| log.log_id == sct.log_id) else {
            reasons.push(format!(
                "no CT log with id {} in the trust root",
                hex(&sct.log_id)
            ));
            continue;
        };
        let timestamp_seconds = i64::try_from(sct.timestamp / 1000).unwrap_or(i64::MAX);
        if !log.valid.contains(timestamp_seconds) {
            reasons.push(format!(
                "the CT log {} is not valid at the SCT's time {timestamp_seconds}",
                hex(&sct.log_id)
            ));
            continue;
        }
        let hash = match (sct.hash_alg, sct.signature_alg) {
            (4, 3) => HashAlg::Sha256,
            (5, 3) => HashAlg::Sha384,
            (hash, signature) => {
                reasons.push(format!(
                    "the SCT's algorithm (hash {hash}, signature {signature}) is not ECDSA with SHA-256 or SHA-384"
                ));
                continue;
            }
        };
        let mut signed = vec![0u8, 0u8];
        signed.extend_from_slice(&sct.timestamp.to_be_bytes());
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&issuer_key_hash);
        signed.extend_from_slice(tbs_len.to_be_bytes().get(1..).unwrap_or(&[]));
        signed.extend_from_slice(&tbs);
        let extensions_len = u16::try_from(sct.extensions.len()).unwrap_or(u16::MAX);
        signed.extend_from_slice(&extensions_len.to_be_bytes());
        signed.extend_from_slice(&sct.extensions);
        match log.key.verify(hash, &signed, &sct.signature) {
            Ok(()) => return Ok(()),
            Err(reason) => {
                reasons.push(format!("the SCT of CT log {}: {reason}", hex(&sct.log_id)))
            }
        }
    }
    if reasons.is_empty() {
        return Err("the SCT list is empty".to_string());
    }
    Err(reasons.join("; "))
}

/// One RFC 6962 `SignedCertificateTimestamp`.
struct Sct {
    log_id: Vec<u8>,
    timestamp: u64,
    extensions: Vec<u8>,
    hash_alg: u8,
    signature_alg: u8,
    signature: Vec<u8>,
}

/// A reader of TLS-encoded bytes.
struct Tls<'a> {
    rest: &'a [u8],
}

impl<'a> Tls<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        if self.rest.len() < len {
            return Err("the SCT list is truncated".to_string());
        }
        let (head, tail) = self.rest.split_at(len);
        self.rest = tail;
        Ok(head)
    }

    fn number(&mut self, len: usize) -> Result<u64, String> {
        Ok(self
            .take(len)?
            .iter()
            .fold(0u64, |acc, byte| (acc << 8) | u64::from(*byte)))
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    fn vector(&mut self, len_bytes: usize) -> Result<&'a [u8], String> {
        let len = usize::try_from(self.number(len_bytes)?)
            .map_err(|_| "the SCT list is truncated".to_string())?;
        self.take(len)
    }
}

fn parse_sct_list(bytes: &[u8]) -> Result<Vec<Sct>, String> {
    let mut outer = Tls { rest: bytes };
    let mut list = Tls {
        rest: outer.vector(2)?,
    };
    if !outer.rest.is_empty() {
        return Err("the SCT list has trailing bytes".to_string());
    }
    let mut scts = Vec::new();
    while !list.rest.is_empty() {
        let mut sct = Tls {
            rest: list.vector(2)?,
        };
        let version = sct.byte()?;
        if version != 0 {
            return Err(format!("the SCT version {version} is not supported"));
        }
        let parsed = Sct {
            log_id: sct.take(32)?.to_vec(),
            timestamp: sct.number(8)?,
            extensions: sct.vector(2)?.to_vec(),
            hash_alg: sct.byte()?,
            signature_alg: sct.byte()?,
            signature: sct.vector(2)?.to_vec(),
        };
        if !sct.rest.is_empty() {
            return Err("an SCT has trailing bytes".to_string());
        }
        scts.push(parsed);
    }
    Ok(scts)
}

/// Step 4: the leaf's subject alternative name (its only URI or email entry) and OIDC issuer.
pub(super) fn identity(leaf: &Cert) -> Result<(String, String), String> {
    let extension = leaf
        .extension(SUBJECT_ALT_NAME)
        .ok_or_else(|| "the leaf certificate has no subject alternative name".to_string())?;
    let names = SubjectAltName::from_der(extension.extn_value.as_bytes())
        .map_err(|error| format!("unreadable subject alternative name ({error})"))?;
    let identities: Vec<String> = names
        .0
        .iter()
        .filter_map(|name| match name {
            GeneralName::UniformResourceIdentifier(uri) => Some(uri.to_string()),
            GeneralName::Rfc822Name(email) => Some(email.to_string()),
            _ => None,
        })
        .collect();
    let san = match identities.as_slice() {
        [san] => san.clone(),
        _ => {
            return Err(format!(
                "the leaf certificate has {} URI or email names, not exactly one",
                identities.len()
            ));
        }
    };
    let v2 = leaf
        .extension(FULCIO_ISSUER_V2)
        .map(|extension| {
            String::from_der(extension.extn_value.as_bytes())
                .map_err(|error| format!("unreadable Fulcio issuer extension ({error})"))
        })
        .transpose()?;
    let v1 = leaf
        .extension(FULCIO_ISSUER_V1)
        .map(|extension| {
            String::from_utf8(extension.extn_value.as_bytes().to_vec())
                .map_err(|_| "the Fulcio issuer extension (v1) is not UTF-8".to_string())
        })
        .transpose()?;
    let issuer = match (v2, v1) {
        (Some(v2), Some(v1)) if v2 != v1 => {
            return Err(format!(
                "the certificate names two issuers, `{v2}` and `{v1}`"
            ));
        }
        (Some(issuer), _) | (None, Some(issuer)) => issuer,
        (None, None) => return Err("the leaf certificate names no OIDC issuer".to_string()),
    };
    Ok((san, issuer))
}

#[cfg(test)]
pub(super) fn leaf_validity(leaf: &Cert) -> (i64, i64) {
    let validity = &leaf.inner.tbs_certificate.validity;
    (
        seconds(validity.not_before.to_unix_duration()),
        seconds(validity.not_after.to_unix_duration()),
    )
}
