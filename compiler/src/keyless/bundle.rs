//! Step 1: reads a sigstore bundle and a trusted root from their protobuf JSON form.
//!
//! Consumes: the bytes of a bundle (`application/vnd.dev.sigstore.bundle+json;version=0.1` or
//! `0.2`, `application/vnd.dev.sigstore.bundle.v0.3+json`) and of a trusted root
//! (`application/vnd.dev.sigstore.trustedroot+json;version=0.1`).
//! Produces: typed values with decoded bytes and integers, or a reason naming the JSON path.
//!
//! Invariants: fail closed: a bundle object with a key this reader does not know is refused, as
//! are a bundle without exactly one leaf certificate source, without exactly one Rekor entry,
//! or without an inclusion proof and checkpoint; a bundle or trust root with a key written twice
//! in any object is refused (both are read with `crate::json_strict`); nothing here is trusted
//! yet, later steps check it.

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value};

use crate::json_strict;

/// Standard base64 as protobuf JSON writes bytes; padding may be left out, trailing bits may not
/// be set, so each byte string has exactly one text.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Standard base64 with padding, for messages and the SET's canonical JSON.
pub(super) fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes standard base64 (padding optional).
pub(super) fn unb64(text: &str) -> Result<Vec<u8>, String> {
    BASE64
        .decode(text)
        .map_err(|error| format!("not base64 ({error})"))
}

const BUNDLE_MEDIA_TYPES: [&str; 4] = [
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle.v0.3+json",
];

const TRUSTED_ROOT_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.trustedroot+json;version=0.1";

/// What the bundle signs.
#[derive(Debug, Clone)]
pub(super) enum Content {
    /// A signature over the artifact's digest.
    Message {
        digest_alg: super::crypto::HashAlg,
        digest: Vec<u8>,
        signature: Vec<u8>,
    },
    /// A DSSE envelope with one signature.
    Dsse {
        payload_type: String,
        payload: Vec<u8>,
        signature: Vec<u8>,
    },
}

/// A Rekor inclusion proof with its checkpoint.
#[derive(Debug, Clone)]
pub(super) struct InclusionProof {
    pub log_index: i64,
    pub root_hash: Vec<u8>,
    pub tree_size: i64,
    pub hashes: Vec<Vec<u8>>,
    pub checkpoint: String,
}

/// One Rekor transparency log entry.
#[derive(Debug, Clone)]
pub(super) struct TlogEntry {
    pub log_index: i64,
    pub log_id: Vec<u8>,
    pub kind: String,
    pub version: String,
    pub integrated_time: i64,
    pub signed_entry_timestamp: Vec<u8>,
    pub body: Vec<u8>,
    pub proof: InclusionProof,
}

/// A parsed bundle.
#[derive(Debug, Clone)]
pub(super) struct Bundle {
    /// The DER of the leaf certificate (the first of a v0.1 or v0.2 chain).
    pub leaf_der: Vec<u8>,
    pub content: Content,
    pub entry: TlogEntry,
}

/// A validity window in Unix seconds; an absent bound is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Window {
    pub start: Option<i64>,
    pub end: Option<i64>,
}

impl Window {
    pub(super) fn contains(self, time: i64) -> bool {
        self.start.is_none_or(|start| start <= time) && self.end.is_none_or(|end| time <= end)
    }
}

/// A certificate authority of the trust root: its chain, issuing certificate first.
#[derive(Debug, Clone)]
pub(super) struct Authority {
    pub chain: Vec<Vec<u8>>,
    pub valid: Window,
}

/// A transparency log key of the trust root (Rekor or CT).
#[derive(Debug, Clone)]
pub(super) struct LogKey {
    pub log_id: Vec<u8>,
    pub key: super::crypto::PublicKey,
    pub valid: Window,
}

/// A parsed trusted root.
#[derive(Debug, Clone)]
pub(super) struct TrustedRoot {
    pub authorities: Vec<Authority>,
    pub ct_logs: Vec<LogKey>,
    pub tlogs: Vec<LogKey>,
}

/// A JSON object with the path it was found at, for reasons.
struct Obj<'v> {
    map: &'v Map<String, Value>,
    path: String,
}

impl<'v> Obj<'v> {
    fn new(value: &'v Value, path: String) -> Result<Self, String> {
        match value {
            Value::Object(map) => Ok(Obj { map, path }),
            _ => Err(format!("`{path}` is not an object")),
        }
    }

    /// Refuses keys outside `known` (fail closed on what this reader does not check).
    fn only(self, known: &[&str]) -> Result<Self, String> {
        if let Some(key) = self.map.keys().find(|key| !known.contains(&key.as_str())) {
            return Err(format!("`{}` has an unknown field `{key}`", self.path));
        }
        Ok(self)
    }

    fn path_of(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    fn opt(&self, key: &str) -> Option<&'v Value> {
        self.map.get(key)
    }

    fn get(&self, key: &str) -> Result<&'v Value, String> {
        self.map
            .get(key)
            .ok_or_else(|| format!("`{}` is missing", self.path_of(key)))
    }

    fn obj(&self, key: &str) -> Result<Obj<'v>, String> {
        Obj::new(self.get(key)?, self.path_of(key))
    }

    fn str(&self, key: &str) -> Result<&'v str, String> {
        self.get(key)?
            .as_str()
            .ok_or_else(|| format!("`{}` is not a string", self.path_of(key)))
    }

    fn bytes(&self, key: &str) -> Result<Vec<u8>, String> {
        let text = self.str(key)?;
        unb64(text).map_err(|reason| format!("`{}` is {reason}", self.path_of(key)))
    }

    /// A protobuf int64: a decimal string (or a JSON integer), not negative.
    fn int(&self, key: &str) -> Result<i64, String> {
        let value = self.get(key)?;
        let parsed = match value {
            Value::String(text)
                if !text.is_empty()
                    && text.len() <= 19
                    && text.bytes().all(|byte| byte.is_ascii_digit()) =>
            {
                text.parse::<i64>().ok()
            }
            Value::Number(number) => number.as_i64(),
            _ => None,
        };
        parsed
            .filter(|number| *number >= 0)
            .ok_or_else(|| format!("`{}` is not a non-negative integer", self.path_of(key)))
    }

    fn array(&self, key: &str) -> Result<&'v Vec<Value>, String> {
        self.get(key)?
            .as_array()
            .ok_or_else(|| format!("`{}` is not an array", self.path_of(key)))
    }
}

/// Parses a bundle.
pub(super) fn parse_bundle(json: &[u8]) -> Result<Bundle, String> {
    let value: Value = json_strict::from_slice(json, json_strict::Root::file("bundle"))
        .map_err(|error| error.reason(|error| format!("the bundle is not JSON ({error})")))?;
    let top = Obj::new(&value, "bundle".to_string())?.only(&[
        "mediaType",
        "verificationMaterial",
        "messageSignature",
        "dsseEnvelope",
    ])?;
    let media_type = top.str("mediaType")?;
    if !BUNDLE_MEDIA_TYPES.contains(&media_type) {
        return Err(format!(
            "the bundle media type `{media_type}` is not supported"
        ));
    }
    let material = top.obj("verificationMaterial")?.only(&[
        "x509CertificateChain",
        "certificate",
        "publicKey",
        "tlogEntries",
        "timestampVerificationData",
    ])?;
    let leaf_der = leaf_certificate(&material)?;
    if let Some(tsa) = material.opt("timestampVerificationData") {
        Obj::new(tsa, material.path_of("timestampVerificationData"))?
            .only(&["rfc3161Timestamps"])?;
    }
    let entries = material.array("tlogEntries")?;
    let entry = match entries.as_slice() {
        [entry] => tlog_entry(entry, material.path_of("tlogEntries[0]"))?,
        _ => {
            return Err(format!(
                "the bundle has {} Rekor entries, not exactly one",
                entries.len()
            ));
        }
    };
    let content = match (top.opt("messageSignature"), top.opt("dsseEnvelope")) {
        (Some(message), None) => message_signature(message)?,
        (None, Some(envelope)) => dsse_envelope(envelope)?,
        _ => {
            return Err(
                "the bundle has not exactly one of `messageSignature` and `dsseEnvelope`"
                    .to_string(),
            );
        }
    };
    Ok(Bundle {
        leaf_der,
        content,
        entry,
    })
}

fn leaf_certificate(material: &Obj<'_>) -> Result<Vec<u8>, String> {
    let chain = material.opt("x509CertificateChain");
    let single = material.opt("certificate");
    if material.opt("publicKey").is_some() {
        return Err("the bundle is signed with a public key, not keyless".to_string());
    }
    match (chain, single) {
        (Some(chain), None) => {
            let chain = Obj::new(chain, material.path_of("x509CertificateChain"))?
                .only(&["certificates"])?;
            let certificates = chain.array("certificates")?;
            let first = certificates
                .first()
                .ok_or_else(|| format!("`{}` is empty", chain.path_of("certificates")))?;
            Obj::new(first, chain.path_of("certificates[0]"))?
                .only(&["rawBytes"])?
                .bytes("rawBytes")
        }
        (None, Some(single)) => Obj::new(single, material.path_of("certificate"))?
            .only(&["rawBytes"])?
            .bytes("rawBytes"),
        _ => Err(
            "the bundle has not exactly one of `x509CertificateChain` and `certificate`"
                .to_string(),
        ),
    }
}

fn tlog_entry(value: &Value, path: String) -> Result<TlogEntry, String> {
    let entry = Obj::new(value, path)?.only(&[
        "logIndex",
        "logId",
        "kindVersion",
        "integratedTime",
        "inclusionPromise",
        "inclusionProof",
        "canonicalizedBody",
    ])?;
    let log_id = entry.obj("logId")?.only(&["keyId"])?.bytes("keyId")?;
    let kind_version = entry.obj("kindVersion")?.only(&["kind", "version"])?;
    let promise = entry
        .obj("inclusionPromise")?
        .only(&["signedEntryTimestamp"])?;
    let proof = entry.obj("inclusionProof")?.only(&[
        "logIndex",
        "rootHash",
        "treeSize",
        "hashes",
        "checkpoint",
    ])?;
    let hashes = proof
        .array("hashes")?
        .iter()
        .enumerate()
        .map(|(idx, hash)| {
            hash.as_str()
                .ok_or_else(|| format!("`{}[{idx}]` is not a string", proof.path_of("hashes")))
                .and_then(|text| {
                    unb64(text).map_err(|reason| {
                        format!("`{}[{idx}]` is {reason}", proof.path_of("hashes"))
                    })
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let checkpoint = proof
        .obj("checkpoint")?
        .only(&["envelope"])?
        .str("envelope")?
        .to_string();
    Ok(TlogEntry {
        log_index: entry.int("logIndex")?,
        log_id,
        kind: kind_version.str("kind")?.to_string(),
        version: kind_version.str("version")?.to_string(),
        integrated_time: entry.int("integratedTime")?,
        signed_entry_timestamp: promise.bytes("signedEntryTimestamp")?,
        body: entry.bytes("canonicalizedBody")?,
        proof: InclusionProof {
            log_index: proof.int("logIndex")?,
            root_hash: proof.bytes("rootHash")?,
            tree_size: proof.int("treeSize")?,
            hashes,
            checkpoint,
        },
    })
}

fn message_signature(value: &Value) -> Result<Content, String> {
    let message = Obj::new(value, "bundle.messageSignature".to_string())?
        .only(&["messageDigest", "signature"])?;
    let digest = message
        .obj("messageDigest")?
        .only(&["algorithm", "digest"])?;
    let digest_alg = match digest.str("algorithm")? {
        "SHA2_256" => super::crypto::HashAlg::Sha256,
        "SHA2_384" => super::crypto::HashAlg::Sha384,
        other => {
            return Err(format!(
                "the message digest algorithm `{other}` is not supported"
            ));
        }
    };
    Ok(Content::Message {
        digest_alg,
        digest: digest.bytes("digest")?,
        signature: message.bytes("signature")?,
    })
}

fn dsse_envelope(value: &Value) -> Result<Content, String> {
    let envelope = Obj::new(value, "bundle.dsseEnvelope".to_string())?.only(&[
        "payload",
        "payloadType",
        "signatures",
    ])?;
    let signatures = envelope.array("signatures")?;
    let signature = match signatures.as_slice() {
        [signature] => Obj::new(signature, envelope.path_of("signatures[0]"))?
            .only(&["sig", "keyid"])?
            .bytes("sig")?,
        _ => {
            return Err(format!(
                "the DSSE envelope has {} signatures, not exactly one",
                signatures.len()
            ));
        }
    };
    Ok(Content::Dsse {
        payload_type: envelope.str("payloadType")?.to_string(),
        payload: envelope.bytes("payload")?,
        signature,
    })
}

/// Parses a trusted root: its Fulcio CAs, CT logs and Rekor logs.
pub(super) fn parse_trusted_root(json: &[u8]) -> Result<TrustedRoot, String> {
    let value: Value = json_strict::from_slice(json, json_strict::Root::file("trustedRoot"))
        .map_err(|error| error.reason(|error| format!("the trusted root is not JSON ({error})")))?;
    let top = Obj::new(&value, "trustedRoot".to_string())?;
    let media_type = top.str("mediaType")?;
    if media_type != TRUSTED_ROOT_MEDIA_TYPE {
        return Err(format!(
            "the trusted root media type `{media_type}` is not supported"
        ));
    }
    let mut authorities = Vec::new();
    for (idx, authority) in top.array("certificateAuthorities")?.iter().enumerate() {
        let authority = Obj::new(
            authority,
            format!("trustedRoot.certificateAuthorities[{idx}]"),
        )?;
        let chain = authority.obj("certChain")?;
        let certificates = chain
            .array("certificates")?
            .iter()
            .enumerate()
            .map(|(cert_idx, cert)| {
                Obj::new(
                    cert,
                    format!("{}[{cert_idx}]", chain.path_of("certificates")),
                )?
                .bytes("rawBytes")
            })
            .collect::<Result<Vec<_>, _>>()?;
        authorities.push(Authority {
            chain: certificates,
            valid: window(&authority)?,
        });
    }
    Ok(TrustedRoot {
        authorities,
        ct_logs: log_keys(&top, "ctlogs")?,
        tlogs: log_keys(&top, "tlogs")?,
    })
}

fn log_keys(top: &Obj<'_>, key: &str) -> Result<Vec<LogKey>, String> {
    let mut logs = Vec::new();
    for (idx, log) in top.array(key)?.iter().enumerate() {
        let log = Obj::new(log, format!("{}[{idx}]", top.path_of(key)))?;
        if let Some(hash) = log.opt("hashAlgorithm")
            && hash.as_str() != Some("SHA2_256")
        {
            return Err(format!(
                "`{}` is not `SHA2_256`",
                log.path_of("hashAlgorithm")
            ));
        }
        let public_key = log.obj("publicKey")?;
        let key = super::crypto::PublicKey::from_spki_der(&public_key.bytes("rawBytes")?)
            .map_err(|reason| format!("`{}`: {reason}", public_key.path_of("rawBytes")))?;
        logs.push(LogKey {
            log_id: log.obj("logId")?.bytes("keyId")?,
            key,
            valid: window(&public_key)?,
        });
    }
    Ok(logs)
}

fn window(holder: &Obj<'_>) -> Result<Window, String> {
    let Some(valid_for) = holder.opt("validFor") else {
        return Ok(Window {
            start: None,
            end: None,
        });
    };
    let valid_for = Obj::new(valid_for, holder.path_of("validFor"))?;
    let bound = |key: &str| -> Result<Option<i64>, String> {
        match valid_for.opt(key) {
            None => Ok(None),
            Some(_) => {
                let text = valid_for.str(key)?;
                parse_rfc3339(text)
                    .map(Some)
                    .ok_or_else(|| format!("`{}` is not an RFC 3339 time", valid_for.path_of(key)))
            }
        }
    };
    Ok(Window {
        start: bound("start")?,
        end: bound("end")?,
    })
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (UTC only, as protobuf JSON writes timestamps) into
/// Unix seconds; a fraction is dropped, so a start is rounded down and an end too (fail closed
/// by less than a second).
pub(super) fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let time = time.split_once('.').map_or(time, |(whole, fraction)| {
        if !fraction.is_empty() && fraction.bytes().all(|byte| byte.is_ascii_digit()) {
            whole
        } else {
            ""
        }
    });
    let numbers = |part: &str, sep: char, lens: [usize; 3]| -> Option<[i64; 3]> {
        let mut out = [0i64; 3];
        let mut pieces = part.split(sep);
        for (slot, len) in out.iter_mut().zip(lens) {
            let piece = pieces.next()?;
            if piece.len() != len || !piece.bytes().all(|byte| byte.is_ascii_digit()) {
                return None;
            }
            *slot = piece.parse().ok()?;
        }
        pieces.next().is_none().then_some(out)
    };
    let [year, month, day] = numbers(date, '-', [4, 2, 2])?;
    let [hour, minute, second] = numbers(time, ':', [2, 2, 2])?;
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}
