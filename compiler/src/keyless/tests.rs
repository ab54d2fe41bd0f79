//! Tests of keyless verification against the real fixtures in `tests/fixtures/keyless/`.
//!
//! Consumes: the mock-sigstore bundles and trust root, tampered one field per test.
//! Produces: assertions that the good bundles verify and that each step rejects its tampering.
//!
//! Invariants: every test names the step it expects to fail; a test that needs a field the
//! original log signed (the integrated time) plays a rogue log with its own key in the trust root,
//! so the later steps are reached honestly.

use p256::ecdsa::SigningKey;
use p256::ecdsa::signature::Signer;
use serde_json::Value;

use super::bundle::{b64, unb64};
use super::crypto::hex;
use super::*;

const TRUSTED_ROOT: &[u8] = include_bytes!("../../../tests/fixtures/keyless/trusted_root.json");
const BLOB_BUNDLE: &[u8] = include_bytes!("../../../tests/fixtures/keyless/blob.sigstore.json");
const DSSE_BUNDLE: &[u8] =
    include_bytes!("../../../tests/fixtures/keyless/model.keyless.sigstore.json");
const BAD_SET_BUNDLE: &[u8] = include_bytes!("../../../tests/fixtures/keyless/blob.badset.json");
const BLOB: &[u8] = include_bytes!("../../../tests/fixtures/keyless/weights.lock");
const STATEMENT: &[u8] = include_bytes!("../../../tests/fixtures/keyless/statement.json");

const SAN: &str = "https://ci.test.invalid/tenants/acme/release";
const ISSUER: &str = "https://issuer.test.invalid";
const IN_TOTO: &str = "application/vnd.in-toto+json";

fn identity() -> Identity {
    Identity {
        san: SAN.to_string(),
        issuer: ISSUER.to_string(),
    }
}

fn dsse() -> Artifact<'static> {
    Artifact::Dsse {
        payload_type: IN_TOTO,
        payload: STATEMENT,
    }
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

/// Sets (or adds) the JSON field at `pointer` and returns the document's bytes.
fn with(document: &[u8], pointer: &str, value: Value) -> Vec<u8> {
    let mut document = json(document);
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    match document.pointer_mut(parent).unwrap() {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
        }
        other => *other.pointer_mut(&format!("/{key}")).unwrap() = value,
    }
    bytes(&document)
}

/// Applies `change` to the base64 field at `pointer`.
fn with_bytes(document: &[u8], pointer: &str, change: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut decoded = unb64(json(document).pointer(pointer).unwrap().as_str().unwrap()).unwrap();
    change(&mut decoded);
    with(document, pointer, Value::String(b64(&decoded)))
}

#[allow(clippy::ptr_arg)] // It is passed where `with_bytes` expects a change of the decoded `Vec`.
fn flip_last(data: &mut Vec<u8>) {
    *data.last_mut().unwrap() ^= 0x01;
}

fn blob_error(bundle: &[u8], root: &[u8]) -> Error {
    verify(bundle, root, &identity(), Artifact::Blob(BLOB)).unwrap_err()
}

const ENTRY: &str = "/verificationMaterial/tlogEntries/0";

#[test]
fn verifies_the_message_signature_bundle() {
    let verified = verify(BLOB_BUNDLE, TRUSTED_ROOT, &identity(), Artifact::Blob(BLOB)).unwrap();
    assert_eq!(
        verified,
        Verified {
            integrated_time: 1_795_946_623,
            log_index: 9_370_424,
            san: SAN.to_string(),
            issuer: ISSUER.to_string(),
        }
    );
}

#[test]
fn verifies_the_dsse_bundle() {
    let verified = verify(DSSE_BUNDLE, TRUSTED_ROOT, &identity(), dsse()).unwrap();
    assert_eq!(verified.integrated_time, 1_795_946_624);
    assert_eq!(verified.log_index, 7_328_718);
    assert_eq!(verified.san, SAN);
    assert_eq!(verified.issuer, ISSUER);
}

#[test]
fn accepts_every_bundle_media_type_of_the_same_content() {
    for media_type in [
        "application/vnd.dev.sigstore.bundle+json;version=0.1",
        "application/vnd.dev.sigstore.bundle+json;version=0.3",
        "application/vnd.dev.sigstore.bundle.v0.3+json",
    ] {
        let bundle = with(BLOB_BUNDLE, "/mediaType", Value::from(media_type));
        verify(&bundle, TRUSTED_ROOT, &identity(), Artifact::Blob(BLOB)).unwrap();
    }
}

#[test]
fn rejects_the_bad_set_fixture_at_the_signed_entry_timestamp() {
    let error = blob_error(BAD_SET_BUNDLE, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::SignedEntryTimestamp, "{error}");
    assert_eq!(
        error.to_string(),
        "keyless step 7 (signed entry timestamp) failed: the SET over the body, integrated time \
         1795946683, log id and log index 9370424: the signature does not verify"
    );
}

#[test]
fn rejects_an_unknown_media_type_and_unknown_fields() {
    let bundle = with(BLOB_BUNDLE, "/mediaType", Value::from("application/json"));
    assert_eq!(blob_error(&bundle, TRUSTED_ROOT).step(), Step::Parse);
    let bundle = with(BLOB_BUNDLE, "/verificationMaterial/extra", Value::from(1));
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::Parse);
    assert!(error.reason().contains("unknown field `extra`"), "{error}");
}

#[test]
fn reasons_are_one_printable_line_of_bounded_length() {
    let bundle = with(
        BLOB_BUNDLE,
        "/mediaType",
        Value::from(format!("a\nb\u{202e}c{}", "x".repeat(5000))),
    );
    let error = blob_error(&bundle, TRUSTED_ROOT);
    let text = error.to_string();
    assert!(text.starts_with("keyless step 1 (bundle and trust root) failed: the bundle media type `a\\u{a}b\\u{202e}cxxx"), "{text}");
    assert!(!text.contains('\n'));
    assert!(error.reason().len() <= 1000 + 12);
    assert!(error.reason().ends_with("..."));
}

#[test]
fn rejects_a_public_key_bundle_as_not_keyless() {
    let bundle = with(
        BLOB_BUNDLE,
        "/verificationMaterial/publicKey",
        serde_json::json!({"hint": "x"}),
    );
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::Parse);
    assert!(error.reason().contains("not keyless"), "{error}");
}

#[test]
fn rejects_a_chain_whose_ca_was_removed_from_the_root() {
    let root = with(
        TRUSTED_ROOT,
        "/certificateAuthorities",
        serde_json::json!([]),
    );
    let error = blob_error(BLOB_BUNDLE, &root);
    assert_eq!(error.step(), Step::Chain, "{error}");
}

#[test]
fn rejects_a_chain_to_another_ca() {
    // The CT log's key is no CA; a root whose CA certificate is the leaf itself names the wrong
    // subject and is not a CA.
    let leaf = json(BLOB_BUNDLE)
        .pointer("/verificationMaterial/x509CertificateChain/certificates/0/rawBytes")
        .unwrap()
        .clone();
    let root = with(
        TRUSTED_ROOT,
        "/certificateAuthorities/0/certChain/certificates/0/rawBytes",
        leaf,
    );
    let error = blob_error(BLOB_BUNDLE, &root);
    assert_eq!(error.step(), Step::Chain, "{error}");
}

#[test]
fn rejects_a_ca_not_yet_valid_at_signing_time() {
    let root = with(
        TRUSTED_ROOT,
        "/certificateAuthorities/0/validFor/start",
        Value::from("2026-11-29T10:03:44.000Z"),
    );
    let error = blob_error(BLOB_BUNDLE, &root);
    assert_eq!(error.step(), Step::Chain, "{error}");
    assert!(
        error.reason().contains("not valid at the signing time"),
        "{error}"
    );
}

#[test]
fn rejects_a_leaf_whose_der_was_changed() {
    let bundle = with_bytes(
        BLOB_BUNDLE,
        "/verificationMaterial/x509CertificateChain/certificates/0/rawBytes",
        |der| {
            // A byte inside the validity period: still a certificate, no longer the signed one.
            let idx = der.windows(4).position(|w| w == b"343Z").unwrap();
            der[idx + 2] = b'4';
        },
    );
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::Chain, "{error}");
    assert!(
        error.reason().contains("signature does not verify"),
        "{error}"
    );
}

#[test]
fn rejects_an_sct_that_the_ct_log_key_does_not_verify() {
    let rekor_key = json(TRUSTED_ROOT)
        .pointer("/tlogs/0/publicKey/rawBytes")
        .unwrap()
        .clone();
    let root = with(TRUSTED_ROOT, "/ctlogs/0/publicKey/rawBytes", rekor_key);
    let error = blob_error(BLOB_BUNDLE, &root);
    assert_eq!(error.step(), Step::Sct, "{error}");
    assert!(
        error.reason().contains("signature does not verify"),
        "{error}"
    );
}

#[test]
fn rejects_an_sct_from_a_log_outside_the_root() {
    let root = with(TRUSTED_ROOT, "/ctlogs", serde_json::json!([]));
    let error = blob_error(BLOB_BUNDLE, &root);
    assert_eq!(error.step(), Step::Sct, "{error}");
    assert!(
        error.reason().contains("no CT log with id 8a4f2f1b"),
        "{error}"
    );
}

#[test]
fn rejects_another_subject_alternative_name() {
    let other = Identity {
        san: "https://ci.test.invalid/tenants/globex/release".to_string(),
        issuer: ISSUER.to_string(),
    };
    let error = verify(BLOB_BUNDLE, TRUSTED_ROOT, &other, Artifact::Blob(BLOB)).unwrap_err();
    assert_eq!(error.step(), Step::Identity);
    assert_eq!(
        error.reason(),
        "the certificate's subject alternative name is \
         `https://ci.test.invalid/tenants/acme/release`, not the allowed \
         `https://ci.test.invalid/tenants/globex/release`"
    );
}

#[test]
fn rejects_another_issuer() {
    let other = Identity {
        san: SAN.to_string(),
        issuer: "https://token.actions.githubusercontent.com".to_string(),
    };
    let error = verify(DSSE_BUNDLE, TRUSTED_ROOT, &other, dsse()).unwrap_err();
    assert_eq!(error.step(), Step::Identity);
    assert!(
        error
            .reason()
            .contains("issuer is `https://issuer.test.invalid`"),
        "{error}"
    );
}

#[test]
fn rejects_a_flipped_signature_byte() {
    let bundle = with_bytes(BLOB_BUNDLE, "/messageSignature/signature", flip_last);
    assert_eq!(blob_error(&bundle, TRUSTED_ROOT).step(), Step::Signature);
    let bundle = with_bytes(DSSE_BUNDLE, "/dsseEnvelope/signatures/0/sig", flip_last);
    let error = verify(&bundle, TRUSTED_ROOT, &identity(), dsse()).unwrap_err();
    assert_eq!(error.step(), Step::Signature, "{error}");
}

#[test]
fn rejects_another_artifact() {
    let error = verify(
        BLOB_BUNDLE,
        TRUSTED_ROOT,
        &identity(),
        Artifact::Blob(b"another lock file\n"),
    )
    .unwrap_err();
    assert_eq!(error.step(), Step::Signature);
    assert!(error.reason().contains("message digest"), "{error}");
    let other = Artifact::Dsse {
        payload_type: IN_TOTO,
        payload: b"{}",
    };
    let error = verify(DSSE_BUNDLE, TRUSTED_ROOT, &identity(), other).unwrap_err();
    assert_eq!(error.step(), Step::Signature);
    let other = Artifact::Dsse {
        payload_type: "text/plain",
        payload: STATEMENT,
    };
    let error = verify(DSSE_BUNDLE, TRUSTED_ROOT, &identity(), other).unwrap_err();
    assert_eq!(error.step(), Step::Signature);
    let error = verify(DSSE_BUNDLE, TRUSTED_ROOT, &identity(), Artifact::Blob(BLOB)).unwrap_err();
    assert_eq!(error.step(), Step::Signature);
}

#[test]
fn rejects_a_message_digest_that_is_not_the_artifacts() {
    // The digest in the bundle is never trusted: a changed one fails even before the signature.
    let bundle = with_bytes(
        BLOB_BUNDLE,
        "/messageSignature/messageDigest/digest",
        flip_last,
    );
    assert_eq!(blob_error(&bundle, TRUSTED_ROOT).step(), Step::Signature);
}

/// Changes the decoded Rekor body of the blob bundle.
fn with_body(bundle: &[u8], change: impl FnOnce(&mut Value)) -> Vec<u8> {
    let pointer = format!("{ENTRY}/canonicalizedBody");
    with_bytes(bundle, &pointer, |body| {
        let mut value: Value = serde_json::from_slice(body).unwrap();
        change(&mut value);
        *body = serde_json::to_vec(&value).unwrap();
    })
}

#[test]
fn rejects_a_rekor_body_that_disagrees_with_the_bundle() {
    let bundle = with_body(BLOB_BUNDLE, |body| {
        body["spec"]["data"]["hash"]["value"] = Value::from(hex(&[0u8; 32]));
    });
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::RekorBody, "{error}");
    assert!(error.reason().contains("artifact digest"), "{error}");

    let signature = json(BLOB_BUNDLE)["messageSignature"]["signature"].clone();
    let bundle = with_body(BLOB_BUNDLE, |body| {
        body["spec"]["signature"]["content"] = Value::from(b64(b"other"));
    });
    assert!(
        blob_error(&bundle, TRUSTED_ROOT)
            .reason()
            .contains("not the bundle's signature")
    );
    assert!(signature.is_string());

    let bundle = with_body(BLOB_BUNDLE, |body| {
        body["spec"]["signature"]["publicKey"]["content"] = Value::from(b64(
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        ));
    });
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert!(
        error.reason().contains("not the bundle's leaf certificate"),
        "{error}"
    );

    let bundle = with(
        BLOB_BUNDLE,
        &format!("{ENTRY}/kindVersion/kind"),
        Value::from("dsse"),
    );
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::RekorBody);
    assert!(
        error.reason().contains("but the bundle says `dsse`"),
        "{error}"
    );
}

#[test]
fn rejects_a_dsse_rekor_body_with_another_payload_hash_or_verifier() {
    let pointer = format!("{ENTRY}/canonicalizedBody");
    let change_dsse = |change: &dyn Fn(&mut Value)| {
        let bundle = with_bytes(DSSE_BUNDLE, &pointer, |body| {
            let mut value: Value = serde_json::from_slice(body).unwrap();
            change(&mut value);
            *body = serde_json::to_vec(&value).unwrap();
        });
        verify(&bundle, TRUSTED_ROOT, &identity(), dsse()).unwrap_err()
    };
    let error = change_dsse(&|body| {
        body["spec"]["payloadHash"]["value"] = Value::from(hex(&[1u8; 32]));
    });
    assert_eq!(error.step(), Step::RekorBody);
    assert!(error.reason().contains("payload digest"), "{error}");
    let error = change_dsse(&|body| {
        body["spec"]["signatures"][0]["verifier"] = Value::from(b64(b"not pem"));
    });
    assert_eq!(error.step(), Step::RekorBody);
    assert!(
        error.reason().contains("verifier is not a PEM certificate"),
        "{error}"
    );
}

#[test]
fn rejects_a_bad_signed_entry_timestamp() {
    let bundle = with_bytes(
        BLOB_BUNDLE,
        &format!("{ENTRY}/inclusionPromise/signedEntryTimestamp"),
        flip_last,
    );
    assert_eq!(
        blob_error(&bundle, TRUSTED_ROOT).step(),
        Step::SignedEntryTimestamp
    );
    // Each field the SET covers is bound by it.
    for (field, value) in [("integratedTime", "1795946624"), ("logIndex", "9370425")] {
        let bundle = with(BLOB_BUNDLE, &format!("{ENTRY}/{field}"), Value::from(value));
        let error = blob_error(&bundle, TRUSTED_ROOT);
        assert_eq!(error.step(), Step::SignedEntryTimestamp, "{field}: {error}");
    }
}

#[test]
fn rejects_an_entry_from_a_log_outside_the_root() {
    let bundle = with(
        BLOB_BUNDLE,
        &format!("{ENTRY}/logId/keyId"),
        Value::from(b64(&[7u8; 32])),
    );
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::SignedEntryTimestamp);
    assert!(error.reason().contains("no Rekor log with id"), "{error}");
}

#[test]
fn rejects_a_bad_inclusion_path() {
    let proof = format!("{ENTRY}/inclusionProof");
    let bundle = with(
        BLOB_BUNDLE,
        &format!("{proof}/hashes"),
        serde_json::json!([b64(&[0u8; 32])]),
    );
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::InclusionProof, "{error}");
    let bundle = with_bytes(BLOB_BUNDLE, &format!("{proof}/rootHash"), flip_last);
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::InclusionProof, "{error}");
    let bundle = with(BLOB_BUNDLE, &format!("{proof}/logIndex"), Value::from("1"));
    let error = blob_error(&bundle, TRUSTED_ROOT);
    assert_eq!(error.step(), Step::InclusionProof, "{error}");
}

#[test]
fn rejects_a_forged_checkpoint() {
    let pointer = format!("{ENTRY}/inclusionProof/checkpoint/envelope");
    let envelope = json(BLOB_BUNDLE)
        .pointer(&pointer)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    // Another timestamp line: the note is no longer what the log signed.
    let forged = envelope.replace("Timestamp: 1795946623", "Timestamp: 1795946683");
    assert_ne!(forged, envelope);
    let error = blob_error(
        &with(BLOB_BUNDLE, &pointer, Value::from(forged)),
        TRUSTED_ROOT,
    );
    assert_eq!(error.step(), Step::Checkpoint);
    assert!(
        error.reason().contains("signature does not verify"),
        "{error}"
    );
    // Another tree size than the proof's.
    let forged = envelope.replacen("\n1\n", "\n2\n", 1);
    let error = blob_error(
        &with(BLOB_BUNDLE, &pointer, Value::from(forged)),
        TRUSTED_ROOT,
    );
    assert_eq!(error.step(), Step::Checkpoint);
    assert!(error.reason().contains("tree size is `2`"), "{error}");
    // No signature by the log at all.
    let unsigned = envelope.split("\u{2014}").next().unwrap().to_string();
    let error = blob_error(
        &with(BLOB_BUNDLE, &pointer, Value::from(unsigned)),
        TRUSTED_ROOT,
    );
    assert_eq!(error.step(), Step::Checkpoint);
}

/// A log key the tests hold, swapped into the trust root under the real log's id.
struct RogueLog {
    key: SigningKey,
}

impl RogueLog {
    fn new() -> Self {
        RogueLog {
            key: SigningKey::from_slice(&[0x42; 32]).unwrap(),
        }
    }

    fn spki_der(&self) -> Vec<u8> {
        let mut der = hex_decode("3059301306072a8648ce3d020106082a8648ce3d030107034200");
        der.extend_from_slice(self.key.verifying_key().to_encoded_point(false).as_bytes());
        der
    }

    fn sign(&self, message: &[u8]) -> Vec<u8> {
        let signature: p256::ecdsa::Signature = self.key.sign(message);
        signature.to_der().as_bytes().to_vec()
    }

    fn trusted_root(&self) -> Vec<u8> {
        with(
            TRUSTED_ROOT,
            "/tlogs/0/publicKey/rawBytes",
            Value::from(b64(&self.spki_der())),
        )
    }

    /// Re-signs the entry's SET and checkpoint for a new integrated time.
    fn resign(&self, bundle: &[u8], integrated_time: i64) -> Vec<u8> {
        self.resign_entry(bundle, integrated_time, None)
    }

    /// Re-signs the entry for a new integrated time and, if given, a new body of another kind
    /// and version (as the only leaf of a tree of size 1, like the fixtures' entries).
    fn resign_entry(
        &self,
        bundle: &[u8],
        integrated_time: i64,
        new_body: Option<(&str, &str, Vec<u8>)>,
    ) -> Vec<u8> {
        let mut document = json(bundle);
        let entry = document.pointer_mut(ENTRY).unwrap();
        entry["integratedTime"] = Value::from(integrated_time.to_string());
        if let Some((kind, version, body)) = new_body {
            assert_eq!(entry["inclusionProof"]["treeSize"], "1");
            let root = crypto::HashAlg::Sha256.digest(&[&[0u8][..], &body].concat());
            let old_root = entry["inclusionProof"]["rootHash"]
                .as_str()
                .unwrap()
                .to_string();
            entry["kindVersion"] = serde_json::json!({"kind": kind, "version": version});
            entry["canonicalizedBody"] = Value::from(b64(&body));
            entry["inclusionProof"]["rootHash"] = Value::from(b64(&root));
            let envelope = entry["inclusionProof"]["checkpoint"]["envelope"]
                .as_str()
                .unwrap();
            entry["inclusionProof"]["checkpoint"]["envelope"] =
                Value::from(envelope.replace(&old_root, &b64(&root)));
        }
        let canonical = format!(
            "{{\"body\":\"{}\",\"integratedTime\":{integrated_time},\"logID\":\"{}\",\"logIndex\":{}}}",
            entry["canonicalizedBody"].as_str().unwrap(),
            hex(&unb64(entry["logId"]["keyId"].as_str().unwrap()).unwrap()),
            entry["logIndex"].as_str().unwrap()
        );
        entry["inclusionPromise"]["signedEntryTimestamp"] =
            Value::from(b64(&self.sign(canonical.as_bytes())));
        let envelope = entry["inclusionProof"]["checkpoint"]["envelope"]
            .as_str()
            .unwrap();
        let (note, signature_line) = envelope.split_once("\n\n").unwrap();
        let note = format!("{note}\n");
        let old = unb64(signature_line.trim_end().rsplit(' ').next().unwrap()).unwrap();
        let mut signature = old[..4].to_vec();
        signature.extend_from_slice(&self.sign(note.as_bytes()));
        entry["inclusionProof"]["checkpoint"]["envelope"] = Value::from(format!(
            "{note}\n\u{2014} rekor.test.invalid {}\n",
            b64(&signature)
        ));
        bytes(&document)
    }
}

fn hex_decode(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|idx| u8::from_str_radix(&text[idx..idx + 2], 16).unwrap())
        .collect()
}

#[test]
fn a_rogue_log_with_the_original_time_verifies() {
    // The control for the time tests: re-signing alone keeps the bundle valid.
    let rogue = RogueLog::new();
    let bundle = rogue.resign(BLOB_BUNDLE, 1_795_946_623);
    verify(
        &bundle,
        &rogue.trusted_root(),
        &identity(),
        Artifact::Blob(BLOB),
    )
    .unwrap();
    // And the real bundle does not verify against the rogue key.
    let error = blob_error(BLOB_BUNDLE, &rogue.trusted_root());
    assert_eq!(error.step(), Step::SignedEntryTimestamp);
}

#[test]
fn rejects_an_integrated_time_outside_the_leaf_validity() {
    let rogue = RogueLog::new();
    let leaf = cert::Cert::parse(
        &unb64(
            json(BLOB_BUNDLE)
                .pointer("/verificationMaterial/x509CertificateChain/certificates/0/rawBytes")
                .unwrap()
                .as_str()
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    let (not_before, not_after) = cert::leaf_validity(&leaf);
    assert_eq!(not_after - not_before, 600);
    // Inside the leaf's validity, bounds included.
    for time in [not_before, not_after] {
        let bundle = rogue.resign(BLOB_BUNDLE, time);
        verify(
            &bundle,
            &rogue.trusted_root(),
            &identity(),
            Artifact::Blob(BLOB),
        )
        .unwrap();
    }
    let bundle = rogue.resign(BLOB_BUNDLE, not_after + 1);
    let error = verify(
        &bundle,
        &rogue.trusted_root(),
        &identity(),
        Artifact::Blob(BLOB),
    )
    .unwrap_err();
    assert_eq!(error.step(), Step::Time, "{error}");
    assert!(
        error
            .reason()
            .contains("outside the validity of the leaf certificate"),
        "{error}"
    );
    // Before the leaf's validity, the CA (valid from the same second) fails first.
    let bundle = rogue.resign(BLOB_BUNDLE, not_before - 1);
    let error = verify(
        &bundle,
        &rogue.trusted_root(),
        &identity(),
        Artifact::Blob(BLOB),
    )
    .unwrap_err();
    assert_eq!(error.step(), Step::Chain, "{error}");
}

#[test]
fn merkle_inclusion_proofs_reach_the_root_for_every_leaf_of_small_trees() {
    // Builds RFC 6962 trees of 1 to 17 leaves and checks every leaf's audit path, then that a
    // proof for another index, size or path does not reach the root.
    fn leaf(idx: usize) -> Vec<u8> {
        crypto::HashAlg::Sha256.digest(&[0, u8::try_from(idx).unwrap()])
    }
    fn node(left: &[u8], right: &[u8]) -> Vec<u8> {
        crypto::HashAlg::Sha256.digest(&[&[1u8][..], left, right].concat())
    }
    fn root(leaves: &[Vec<u8>]) -> Vec<u8> {
        if leaves.len() == 1 {
            return leaves[0].clone();
        }
        let split = leaves.len().next_power_of_two() / 2;
        node(&root(&leaves[..split]), &root(&leaves[split..]))
    }
    fn path(idx: usize, leaves: &[Vec<u8>]) -> Vec<Vec<u8>> {
        if leaves.len() == 1 {
            return Vec::new();
        }
        let split = leaves.len().next_power_of_two() / 2;
        if idx < split {
            let mut proof = path(idx, &leaves[..split]);
            proof.push(root(&leaves[split..]));
            proof
        } else {
            let mut proof = path(idx - split, &leaves[split..]);
            proof.push(root(&leaves[..split]));
            proof
        }
    }
    for size in 1..=17usize {
        let leaves: Vec<Vec<u8>> = (0..size).map(leaf).collect();
        let expected = root(&leaves);
        let tree_size = i64::try_from(size).unwrap();
        for idx in 0..size {
            let proof = path(idx, &leaves);
            let index = i64::try_from(idx).unwrap();
            let computed =
                rekor::root_from_inclusion(index, tree_size, &leaves[idx], &proof).unwrap();
            assert_eq!(computed, expected, "size {size} index {idx}");
            if size > 1 {
                let other = (idx + 1) % size;
                let wrong = rekor::root_from_inclusion(
                    i64::try_from(other).unwrap(),
                    tree_size,
                    &leaves[idx],
                    &proof,
                );
                assert_ne!(
                    wrong.ok(),
                    Some(expected.clone()),
                    "size {size} index {idx}"
                );
                let mut longer = proof.clone();
                longer.push(leaf(0));
                let wrong = rekor::root_from_inclusion(index, tree_size, &leaves[idx], &longer);
                assert_ne!(
                    wrong.ok(),
                    Some(expected.clone()),
                    "size {size} index {idx}"
                );
            }
        }
        assert!(rekor::root_from_inclusion(tree_size, tree_size, &leaves[0], &[]).is_err());
    }
}

#[test]
fn reads_rfc3339_times_of_the_trust_root() {
    assert_eq!(
        bundle::parse_rfc3339("2026-11-29T09:03:43.000Z"),
        Some(1_795_946_623 - 3_600)
    );
    assert_eq!(bundle::parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        bundle::parse_rfc3339("2000-02-29T12:00:00Z"),
        Some(951_825_600)
    );
    for bad in [
        "2026-11-29T09:03:43+01:00",
        "2026-13-01T00:00:00Z",
        "2026-11-29 09:03:43Z",
        "",
        "2026-11-29T09:03:43.Z",
    ] {
        assert_eq!(bundle::parse_rfc3339(bad), None, "{bad}");
    }
}

/// A small deterministic generator (xorshift64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(bound).unwrap()).unwrap()
    }
}

#[test]
fn random_byte_flips_in_a_bundle_never_panic_and_never_verify() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let cases: [(&[u8], Artifact<'_>); 2] =
        [(BLOB_BUNDLE, Artifact::Blob(BLOB)), (DSSE_BUNDLE, dsse())];
    let mut checked = 0;
    for (bundle, artifact) in cases {
        let original = json(bundle);
        for _ in 0..600 {
            let mut mutated = bundle.to_vec();
            let idx = rng.below(mutated.len());
            mutated[idx] ^= u8::try_from(1 + rng.below(255)).unwrap();
            // A flip of insignificant whitespace keeps the same document; it must verify.
            let same =
                serde_json::from_slice::<Value>(&mutated).is_ok_and(|value| value == original);
            let result = verify(&mutated, TRUSTED_ROOT, &identity(), artifact);
            assert_eq!(result.is_ok(), same, "flip at byte {idx}: {result:?}");
            if let Err(error) = &result {
                assert!(!error.to_string().contains(['\n', '\r']), "{error}");
            }
            checked += usize::from(!same);
        }
        // Flips inside the decoded leaf certificate reach the DER parser and the chain check.
        let pointer = if bundle == BLOB_BUNDLE {
            "/verificationMaterial/x509CertificateChain/certificates/0/rawBytes"
        } else {
            "/verificationMaterial/certificate/rawBytes"
        };
        for _ in 0..300 {
            let flip_at = rng.below(600);
            let xor = u8::try_from(1 + rng.below(255)).unwrap();
            let mutated = with_bytes(bundle, pointer, |der| {
                let idx = flip_at % der.len();
                der[idx] ^= xor;
            });
            assert!(verify(&mutated, TRUSTED_ROOT, &identity(), artifact).is_err());
            checked += 1;
        }
        // Truncations.
        for _ in 0..100 {
            let cut = rng.below(bundle.len());
            assert!(verify(&bundle[..cut], TRUSTED_ROOT, &identity(), artifact).is_err());
        }
    }
    assert!(checked > 1_500, "{checked}");
}

#[test]
fn random_byte_flips_in_the_trust_root_never_panic() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut rejected = 0;
    for _ in 0..600 {
        let mut mutated = TRUSTED_ROOT.to_vec();
        let idx = rng.below(mutated.len());
        mutated[idx] ^= u8::try_from(1 + rng.below(255)).unwrap();
        let result = verify(BLOB_BUNDLE, &mutated, &identity(), Artifact::Blob(BLOB));
        rejected += usize::from(result.is_err());
    }
    // Flips in fields the check does not read (`baseUrl`, `uri`, the CA's subject) still verify.
    assert!(rejected > 300, "{rejected}");
}

#[test]
fn verifies_p384_signatures_and_refuses_other_key_types() {
    use p384::ecdsa::signature::Signer as _;
    let key = p384::ecdsa::SigningKey::from_slice(&[0x24; 48]).unwrap();
    let mut spki = hex_decode("3076301006072a8648ce3d020106052b81040022036200");
    spki.extend_from_slice(key.verifying_key().to_encoded_point(false).as_bytes());
    let public = crypto::PublicKey::from_spki_der(&spki).unwrap();
    assert_eq!(public.default_hash(), crypto::HashAlg::Sha384);
    let signature: p384::ecdsa::Signature = key.sign(b"weights");
    let der = signature.to_der().as_bytes().to_vec();
    public
        .verify(crypto::HashAlg::Sha384, b"weights", &der)
        .unwrap();
    assert!(
        public
            .verify(crypto::HashAlg::Sha384, b"weight", &der)
            .is_err()
    );
    assert!(
        public
            .verify(crypto::HashAlg::Sha256, b"weights", &der)
            .is_err()
    );
    // A P-256 signature is not a P-384 one.
    let rogue = RogueLog::new();
    assert!(
        public
            .verify(crypto::HashAlg::Sha384, b"weights", &rogue.sign(b"weights"))
            .is_err()
    );
    // An Ed25519 key (RFC 8410 SPKI) is refused, never skipped.
    let ed25519 = hex_decode(
        "302a300506032b6570032100d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    );
    let error = crypto::PublicKey::from_spki_der(&ed25519).unwrap_err();
    assert_eq!(error, "the public key is not an ECDSA P-256 or P-384 key");
}

/// An `intoto` 0.0.2 body for the DSSE fixture, as Rekor stores one: the signature base64-encoded
/// twice, the verifier certificate as base64 PEM.
fn intoto_body(encode_signature_twice: bool) -> Vec<u8> {
    let bundle = json(DSSE_BUNDLE);
    let dsse_body: Value = serde_json::from_slice(
        &unb64(
            bundle
                .pointer(&format!("{ENTRY}/canonicalizedBody"))
                .unwrap()
                .as_str()
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    let sig = bundle["dsseEnvelope"]["signatures"][0]["sig"]
        .as_str()
        .unwrap();
    let sig = if encode_signature_twice {
        b64(sig.as_bytes())
    } else {
        sig.to_string()
    };
    bytes(&serde_json::json!({
        "apiVersion": "0.0.2",
        "kind": "intoto",
        "spec": {"content": {
            "envelope": {
                "payloadType": IN_TOTO,
                "signatures": [{"publicKey": dsse_body["spec"]["signatures"][0]["verifier"], "sig": sig}],
            },
            "hash": {"algorithm": "sha256", "value": hex(&[0u8; 32])},
            "payloadHash": dsse_body["spec"]["payloadHash"],
        }},
    }))
}

#[test]
fn verifies_an_intoto_entry_and_rejects_one_that_disagrees() {
    let rogue = RogueLog::new();
    let root = rogue.trusted_root();
    let time = 1_795_946_624;
    let bundle = rogue.resign_entry(
        DSSE_BUNDLE,
        time,
        Some(("intoto", "0.0.2", intoto_body(true))),
    );
    let verified = verify(&bundle, &root, &identity(), dsse()).unwrap();
    assert_eq!(verified.integrated_time, time);
    // The signature encoded once is not Rekor's form, so it is not the bundle's signature.
    let bundle = rogue.resign_entry(
        DSSE_BUNDLE,
        time,
        Some(("intoto", "0.0.2", intoto_body(false))),
    );
    let error = verify(&bundle, &root, &identity(), dsse()).unwrap_err();
    assert_eq!(error.step(), Step::RekorBody, "{error}");
    // An intoto entry cannot stand for a message signature.
    let bundle = rogue.resign_entry(
        BLOB_BUNDLE,
        1_795_946_623,
        Some(("intoto", "0.0.2", intoto_body(true))),
    );
    let error = blob_error(&bundle, &root);
    assert_eq!(error.step(), Step::RekorBody);
    assert!(error.reason().contains("does not fit"), "{error}");
}

/// Checks that every duplicate of `document` (written under `root`) fails `verify_text` at
/// `step` with the duplicate's reason and `suffix`; returns the paths the duplicates were in.
fn refused_at(
    (document, root): (&[u8], &str),
    verify_text: impl Fn(&[u8]) -> Result<Verified, Error>,
    (step, suffix): (Step, &str),
) -> std::collections::BTreeSet<String> {
    crate::json_strict::duplicates::each_refused(document, root, |case| {
        let error = verify_text(&case.text).unwrap_err();
        assert_eq!(error.step(), step, "{}: {error}", case.path);
        assert_eq!(error.reason(), format!("{}{suffix}", case.reason()));
    })
}

#[test]
fn refuses_a_bundle_with_any_key_written_twice() {
    use crate::json_strict::duplicates::{assert_reached, rewritten};
    let mut paths = std::collections::BTreeSet::new();
    for (bundle, artifact) in [(BLOB_BUNDLE, Artifact::Blob(BLOB)), (DSSE_BUNDLE, dsse())] {
        // The control: the same bundle written by the helper without a duplicate verifies.
        verify(&rewritten(bundle), TRUSTED_ROOT, &identity(), artifact).unwrap();
        // Both values of each duplicate are the original one, so a reader keeping either value
        // would verify the bundle.
        paths.extend(refused_at(
            (bundle, "bundle"),
            |text| verify(text, TRUSTED_ROOT, &identity(), artifact),
            (Step::Parse, ""),
        ));
    }
    assert_reached(
        &paths,
        &[
            "bundle",
            "bundle.verificationMaterial",
            "bundle.verificationMaterial.certificate",
            "bundle.verificationMaterial.x509CertificateChain",
            "bundle.verificationMaterial.x509CertificateChain.certificates[0]",
            "bundle.verificationMaterial.tlogEntries[0]",
            "bundle.verificationMaterial.tlogEntries[0].logId",
            "bundle.verificationMaterial.tlogEntries[0].kindVersion",
            "bundle.verificationMaterial.tlogEntries[0].inclusionPromise",
            "bundle.verificationMaterial.tlogEntries[0].inclusionProof",
            "bundle.verificationMaterial.tlogEntries[0].inclusionProof.checkpoint",
            "bundle.messageSignature",
            "bundle.messageSignature.messageDigest",
            "bundle.dsseEnvelope",
            "bundle.dsseEnvelope.signatures[0]",
        ],
    );
}

#[test]
fn refuses_the_two_bundles_of_issue_26() {
    let text = String::from_utf8(DSSE_BUNDLE.to_vec()).unwrap();
    // Two integrated times, the first outside the leaf's validity; the last is the signed one.
    let time = "\"integratedTime\": \"1795946624\",";
    assert!(text.contains(time));
    let two_times = text.replacen(
        time,
        &format!("\"integratedTime\": \"1795950000\",\n        {time}"),
        1,
    );
    let error = verify(two_times.as_bytes(), TRUSTED_ROOT, &identity(), dsse()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "keyless step 1 (bundle and trust root) failed: the key `integratedTime` appears twice \
         in `bundle.verificationMaterial.tlogEntries[0]`, at line 18 column 9"
    );
    // Two certificates, the first from another bundle.
    let other = json(BLOB_BUNDLE)
        .pointer("/verificationMaterial/x509CertificateChain/certificates/0/rawBytes")
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let raw = "\"certificate\": {\n      \"rawBytes\": ";
    assert!(text.contains(raw));
    let two_certificates =
        text.replacen(raw, &format!("{raw}\"{other}\",\n      \"rawBytes\": "), 1);
    let error = verify(
        two_certificates.as_bytes(),
        TRUSTED_ROOT,
        &identity(),
        dsse(),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "keyless step 1 (bundle and trust root) failed: the key `rawBytes` appears twice in \
         `bundle.verificationMaterial.certificate`, at line 6 column 7"
    );
}

#[test]
fn refuses_a_trust_root_with_any_key_written_twice() {
    use crate::json_strict::duplicates::{assert_reached, rewritten};
    let blob = Artifact::Blob(BLOB);
    verify(BLOB_BUNDLE, &rewritten(TRUSTED_ROOT), &identity(), blob).unwrap();
    let paths = refused_at(
        (TRUSTED_ROOT, "trustedRoot"),
        |text| verify(BLOB_BUNDLE, text, &identity(), blob),
        (Step::Parse, ""),
    );
    assert_reached(
        &paths,
        &[
            "trustedRoot",
            "trustedRoot.certificateAuthorities[0]",
            "trustedRoot.certificateAuthorities[0].certChain",
            "trustedRoot.certificateAuthorities[0].certChain.certificates[0]",
            "trustedRoot.certificateAuthorities[0].validFor",
            "trustedRoot.tlogs[0]",
            "trustedRoot.tlogs[0].publicKey",
            "trustedRoot.tlogs[0].publicKey.validFor",
            "trustedRoot.tlogs[0].logId",
            "trustedRoot.ctlogs[0]",
            "trustedRoot.ctlogs[0].publicKey",
            "trustedRoot.ctlogs[0].logId",
        ],
    );
}

#[test]
fn refuses_a_rekor_body_with_any_key_written_twice() {
    use crate::json_strict::duplicates::{assert_reached, rewritten};
    const BODY: &str = "bundle.verificationMaterial.tlogEntries[0].canonicalizedBody";
    let rogue = RogueLog::new();
    let root = rogue.trusted_root();
    let mut paths = std::collections::BTreeSet::new();
    for (bundle, artifact, time, kind) in [
        (
            BLOB_BUNDLE,
            Artifact::Blob(BLOB),
            1_795_946_623,
            "hashedrekord",
        ),
        (DSSE_BUNDLE, dsse(), 1_795_946_624, "dsse"),
    ] {
        let body = unb64(
            json(bundle)
                .pointer(&format!("{ENTRY}/canonicalizedBody"))
                .unwrap()
                .as_str()
                .unwrap(),
        )
        .unwrap();
        let logged = |body: Vec<u8>| rogue.resign_entry(bundle, time, Some((kind, "0.0.1", body)));
        // The control: the rogue log logs the body re-written without a duplicate, and it verifies.
        verify(&logged(rewritten(&body)), &root, &identity(), artifact).unwrap();
        paths.extend(refused_at(
            (&body, BODY),
            |text| verify(&logged(text.to_vec()), &root, &identity(), artifact),
            (Step::RekorBody, &format!(" of the decoded `{BODY}`")),
        ));
    }
    assert_reached(
        &paths,
        &[
            BODY.to_string(),
            format!("{BODY}.spec"),
            format!("{BODY}.spec.data.hash"),
            format!("{BODY}.spec.signature.publicKey"),
            format!("{BODY}.spec.payloadHash"),
            format!("{BODY}.spec.signatures[0]"),
        ],
    );
}
