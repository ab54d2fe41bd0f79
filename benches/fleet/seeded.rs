//! A seeded, realistic fleet for the scale benchmark and the scale tests: N tenants over M
//! cells using every sharing mode (exclusive, MIG, time-slice, MPS), MIG layouts, a topology,
//! owned pools, storage with IAM and shared bases, GitOps (Argo CD on even cells, Flux on odd
//! ones), platform templates, and signed models (ECDSA P-256 and P-384 keys and model-signing
//! bundles derived from the seed).
//!
//! Consumes: a [`Shape`] (tenants, cells, seed). Produces: every file of the project as
//! in-memory [`InputFile`]s (`cells/`, `tenants/`, `keys/`, `weights/`, `templates/`), which
//! compile with no error and no warning (`tests/scale.rs` holds it to that).
//!
//! Invariants: the same shape gives the same bytes on every machine (a xorshift generator, no
//! map order, RFC 6979 deterministic signatures); every reservation fits its pool, because the
//! pools are sized from the reservations after the tenants are drawn.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // Used from benches and tests.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};
use tenantc::InputFile;
use tenantc::weights::digest::{FileDigest, hex, root_digest, sort_manifest};
use tenantc::weights::lock::{self, Hashing, LockFile, LockedModel, LockedSignature};
use tenantc::weights::sig::pae;

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Number of tenants.
    pub tenants: usize,
    /// Number of cells (at least 1).
    pub cells: usize,
    /// The seed of every random choice and of every signing key.
    pub seed: u64,
}

/// A seeded xorshift64 generator.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Never zero, and different seeds differ from the first draw.
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The two kinds of cell: H100s in AWS synced by Argo CD, A100s and L4s in GCP synced by Flux.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CellKind {
    Aws,
    Gcp,
}

/// How a tenant uses a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The owner of the cell's owned pool: trust `hard`, whole GPUs on its own nodes.
    Owner,
    /// Trust `mig`: whole GPUs for training, MIG slices (AWS) for inference.
    Mig,
    /// Trust `soft`: time-sliced L4s and MPS.
    Soft,
}

impl Role {
    fn trust(self) -> &'static str {
        match self {
            Role::Owner => "hard",
            Role::Mig => "mig",
            Role::Soft => "soft",
        }
    }
}

/// One drawn tenant.
struct Tenant {
    idx: usize,
    role: Role,
    /// Its home cell, where its model and shared base are.
    home: usize,
    /// The cells it has a quota in, home first.
    cells: Vec<usize>,
    /// Per cell: whole GPUs reserved in the shared training pool (0 for none).
    train: u32,
    /// MIG 1g.10gb and 3g.40gb slices (AWS cells).
    mig_small: u32,
    mig_large: u32,
    /// Time-slice replicas (L4) and MPS replicas.
    slices: u32,
    mps: u32,
    /// Whether it has a signed model, and whether its key is P-384.
    model: Option<bool>,
    /// Whether it reads its home cell's shared base (AWS home cells only).
    shared_base: bool,
    /// Whether it has a viewer group.
    viewer: bool,
}

impl Tenant {
    fn name(&self) -> String {
        tenant_name(self.idx)
    }
}

fn tenant_name(idx: usize) -> String {
    format!("t{idx:05}")
}

fn cell_name(idx: usize) -> String {
    format!("c{idx:02}")
}

fn cell_kind(idx: usize) -> CellKind {
    if idx.is_multiple_of(2) {
        CellKind::Aws
    } else {
        CellKind::Gcp
    }
}

/// The org of a tenant: ten consecutive `mig` or `hard` tenants share one; the `soft` tenants
/// of a cell share one (time-sliced GPUs are shared within one org only).
fn org_of(tenant: &Tenant) -> String {
    match tenant.role {
        Role::Soft => format!("soft-{}", cell_name(tenant.home)),
        Role::Owner | Role::Mig => format!("org-{}", tenant.idx / 10),
    }
}

/// Every file of the fleet of `shape`, sorted by path.
pub fn generate(shape: Shape) -> Vec<InputFile> {
    let cells = shape.cells.max(1);
    let mut rng = Rng::new(shape.seed);
    let tenants: Vec<Tenant> = (0..shape.tenants)
        .map(|idx| draw_tenant(idx, cells, &mut rng))
        .collect();
    let mut files = Vec::new();
    for cell in 0..cells {
        files.push(InputFile {
            path: format!("cells/{}.kdl", cell_name(cell)),
            contents: cell_file(cell, &tenants).into_bytes(),
        });
    }
    for tenant in &tenants {
        files.push(InputFile {
            path: format!("tenants/{}.kdl", tenant.name()),
            contents: tenant_file(tenant).into_bytes(),
        });
        if let Some(p384) = tenant.model {
            files.extend(model_files(shape.seed, tenant, p384));
        }
    }
    files.push(InputFile {
        path: "templates/tenant/chargeback.yaml.j2".to_string(),
        contents: TEMPLATE.as_bytes().to_vec(),
    });
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// A per-namespace ConfigMap, so the template stage runs for every tenant.
const TEMPLATE: &str = r#"{%- for namespace in tenant.namespaces %}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tenant-chargeback
  namespace: {{ namespace.name }}
  labels: {{ tenant.labels | tojson }}
data:
  tenant: {{ tenant.name | tojson }}
  cell: {{ cell.name | tojson }}
  workload: {{ namespace.workload | tojson }}
{%- endfor %}
"#;

fn draw_tenant(idx: usize, cells: usize, rng: &mut Rng) -> Tenant {
    let home = idx % cells;
    // The first tenant of each cell owns its owned pool, and has a quota there only.
    let role = if idx < cells {
        Role::Owner
    } else if rng.chance(25) {
        Role::Soft
    } else {
        Role::Mig
    };
    let mut tenant_cells = vec![home];
    // Soft tenants share time-sliced GPUs, which only one org's tenants may share: they stay in
    // their home cell, in the cell's soft org.
    if role == Role::Mig && cells > 1 && idx != cells && rng.chance(25) {
        tenant_cells.push((home + 1 + rng.below(cells as u64 - 1) as usize) % cells);
    }
    let (train, mig_small, mig_large, slices, mps) = match role {
        Role::Owner => (0, 0, 0, 0, 0),
        Role::Mig => (
            8 * (1 + rng.below(2) as u32),
            1 + rng.below(8) as u32,
            rng.below(2) as u32,
            0,
            0,
        ),
        Role::Soft => (0, 0, 0, 1 + rng.below(8) as u32, 1 + rng.below(4) as u32),
    };
    let model = rng.chance(75).then(|| rng.chance(20));
    // A third of the single-cell tenants of AWS cells read the cell's shared base; the first
    // tenant after the owners always does, so every fleet of two or more cells has one.
    let shared_base = role != Role::Owner
        && tenant_cells.len() == 1
        && cell_kind(home) == CellKind::Aws
        && (rng.chance(30) || idx == cells);
    let viewer = rng.chance(33);
    Tenant {
        idx,
        role,
        home,
        cells: tenant_cells,
        train,
        mig_small,
        mig_large,
        slices,
        mps,
        model,
        shared_base,
        viewer,
    }
}

/// Rounds `count` up to a multiple of `unit`, at least one unit.
fn round_up(count: u32, unit: u32) -> u32 {
    count.div_ceil(unit).max(1) * unit
}

fn cell_file(cell: usize, tenants: &[Tenant]) -> String {
    let here: Vec<&Tenant> = tenants
        .iter()
        .filter(|tenant| tenant.cells.contains(&cell))
        .collect();
    let name = cell_name(cell);
    let kind = cell_kind(cell);
    let owner = here.iter().find(|tenant| tenant.role == Role::Owner);
    let mut text = String::new();
    let _ = writeln!(text, "// Generated cell {cell}.");
    let _ = writeln!(text, "cell \"{name}\" {{");
    match kind {
        CellKind::Aws => {
            let _ = writeln!(text, "    cloud \"aws\" region=\"us-east-1\"");
            let _ = writeln!(text, "    kubernetes \"1.33\"");
            let _ = writeln!(text, "    driver \"570\"");
            let _ = writeln!(
                text,
                "    dns namespace=\"kube-system\" selector=\"k8s-app=kube-dns\" node-local=\"169.254.20.10\""
            );
        }
        CellKind::Gcp => {
            let _ = writeln!(text, "    cloud \"gcp\" region=\"europe-west4\"");
            let _ = writeln!(text, "    kubernetes \"1.34\"");
            let _ = writeln!(text, "    driver \"580\"");
            let _ = writeln!(
                text,
                "    dns namespace=\"kube-system\" selector=\"k8s-app=kube-dns\""
            );
        }
    }
    let _ = writeln!(
        text,
        "    metrics namespace=\"monitoring\" selector=\"app.kubernetes.io/name=prometheus\""
    );
    let _ = writeln!(text, "    endpoint \"object-store\" cidr=\"52.216.0.0/15\"");
    let _ = writeln!(text, "    storage {{");
    let _ = writeln!(text, "        bucket \"fleet-{name}-models\"");
    match kind {
        CellKind::Aws => {
            let readers: Vec<String> = here
                .iter()
                .filter(|tenant| tenant.shared_base)
                .map(|tenant| format!("\"{}\"", tenant.name()))
                .collect();
            if !readers.is_empty() {
                let _ = writeln!(
                    text,
                    "        shared-base \"shared/base-{name}/\" {{\n            tenants {}\n        }}",
                    readers.join(" ")
                );
            }
            let _ = writeln!(
                text,
                "        aws account=\"123456789012\" identity=\"irsa\" oidc-provider=\"oidc.eks.us-east-1.amazonaws.com/id/{:032X}\"",
                cell
            );
        }
        CellKind::Gcp => {
            let _ = writeln!(text, "        gcp project=\"fleet-prod-{name}\"");
        }
    }
    let _ = writeln!(text, "    }}");
    match kind {
        CellKind::Aws => {
            let _ = writeln!(
                text,
                "    gitops \"argocd\" repo=\"https://git.example.com/platform/fleet.git\" revision=\"main\" destination=\"https://kubernetes.default.svc\" user=\"system:serviceaccount:argocd:argocd-application-controller\" break-glass=\"system:masters\""
            );
        }
        CellKind::Gcp => {
            let _ = writeln!(text, "    gitops \"flux\" source=\"fleet\"");
        }
    }
    let _ = writeln!(text, "    oversubscribe 1.5");
    // Orgs in order, each with its members here.
    let mut orgs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for tenant in &here {
        orgs.entry(org_of(tenant))
            .or_default()
            .push(format!("\"{}\"", tenant.name()));
    }
    for (org, members) in &orgs {
        let weight = if org.ends_with('3') { " weight=2" } else { "" };
        let _ = writeln!(
            text,
            "    org \"{org}\"{weight} {{\n        tenants {}\n    }}",
            members.join(" ")
        );
    }
    let _ = writeln!(
        text,
        "    priority \"batch\" value=1000 preempt=#false description=\"Training and batch jobs\""
    );
    let _ = writeln!(
        text,
        "    priority \"interactive\" value=5000 description=\"Notebooks\""
    );
    let _ = writeln!(
        text,
        "    priority \"serving\" value=100000 description=\"Inference\""
    );
    // Pools, sized from what the tenants here reserve, with headroom for bursts.
    let sum = |field: fn(&Tenant) -> u32| -> u32 { here.iter().map(|tenant| field(tenant)).sum() };
    let train_gpus = sum(|tenant| tenant.train + tenant.train / 2);
    let (train_gpu, train_pool) = match kind {
        CellKind::Aws => ("H100-80GB-SXM", "h100-train"),
        CellKind::Gcp => ("A100-80GB-SXM", "a100-train"),
    };
    let _ = writeln!(
        text,
        "    runtime-class \"nvidia\" handler=\"nvidia\" {{\n        trust \"mig\" \"hard\"\n    }}"
    );
    let _ = writeln!(
        text,
        "    runtime-class \"kata-nvidia\" handler=\"kata-qemu-nvidia-gpu\" {{\n        trust \"soft\"\n        pools \"l4-shared\" \"l4-mps\"\n    }}"
    );
    match kind {
        CellKind::Aws => {
            // Blocks of 16 nodes, racks of 4: the node count is a whole number of blocks.
            let nodes = round_up(train_gpus.div_ceil(8), 16);
            let _ = writeln!(
                text,
                r#"    pool "{train_pool}" {{
        gpu "{train_gpu}"
        nodes {nodes} gpus-per-node=8
        sharing "exclusive"
        nvlink-domain gpus=8
        topology {{
            level "cloud.example.com/block" nodes=16
            level "cloud.example.com/rack" nodes=4
        }}
        taint "tenantc.io/pool" "{train_pool}" effect="NoSchedule"
        price per-gpu-hour=2.10
    }}"#
            );
            // MIG: a balanced node gives 8 3g.40gb, 8 2g.20gb and 16 1g.10gb; a small one 56
            // 1g.10gb.
            let large = sum(|tenant| tenant.mig_large);
            let small = sum(|tenant| tenant.mig_small);
            let balanced = large.div_ceil(8).max(1) * 2;
            let small_nodes = small.div_ceil(56).max(1) * 2;
            let _ = writeln!(
                text,
                r#"    pool "h100-infer" {{
        gpu "H100-80GB-SXM"
        nodes {} gpus-per-node=8
        sharing "mig"
        taint "tenantc.io/pool" "h100-infer" effect="NoSchedule"
        price per-gpu-hour=2.10
        mig-layout "balanced" nodes={balanced} {{
            profile "3g.40gb" 1
            profile "2g.20gb" 1
            profile "1g.10gb" 2
        }}
        mig-layout "small" nodes={small_nodes} {{
            profile "1g.10gb" 7
        }}
    }}"#,
                balanced + small_nodes
            );
        }
        CellKind::Gcp => {
            let nodes = train_gpus.div_ceil(8).max(1);
            let _ = writeln!(
                text,
                r#"    pool "{train_pool}" {{
        gpu "{train_gpu}"
        nodes {nodes} gpus-per-node=8
        sharing "exclusive"
        nvlink-domain gpus=8
        taint "tenantc.io/pool" "{train_pool}" effect="NoSchedule"
        price per-gpu-hour=1.40
    }}"#
            );
        }
    }
    if owner.is_some() {
        let _ = writeln!(
            text,
            r#"    pool "owned" {{
        gpu "{train_gpu}"
        nodes 2 gpus-per-node=8
        sharing "exclusive"
        nvlink-domain gpus=8
        taint "tenantc.io/pool" "owned" effect="NoSchedule"
        price per-gpu-hour=2.00
        owner "{}"
    }}"#,
            owner.map(|tenant| tenant.name()).unwrap_or_default()
        );
    }
    let slices = sum(|tenant| tenant.slices * 2);
    let _ = writeln!(
        text,
        r#"    pool "l4-shared" {{
        gpu "L4"
        nodes {} gpus-per-node=1
        sharing "time-slice"
        replicas 4
        label "runtime" "kata"
        taint "tenantc.io/pool" "l4-shared" effect="NoSchedule"
        price per-gpu-hour=0.70
    }}"#,
        slices.div_ceil(4).max(1)
    );
    let mps = sum(|tenant| tenant.mps * 2);
    let _ = writeln!(
        text,
        r#"    pool "l4-mps" {{
        gpu "L4"
        nodes {} gpus-per-node=1
        sharing "mps"
        replicas 4
        label "runtime" "kata"
        taint "tenantc.io/pool" "l4-mps" effect="NoSchedule"
        price per-gpu-hour=0.70
    }}"#,
        mps.div_ceil(4).max(1)
    );
    text.push_str("}\n");
    text
}

fn tenant_file(tenant: &Tenant) -> String {
    let name = tenant.name();
    let mut text = String::new();
    let _ = writeln!(text, "// Generated tenant {}.", tenant.idx);
    let _ = writeln!(text, "tenant \"{name}\" {{");
    let _ = writeln!(text, "    org \"{}\"", org_of(tenant));
    let _ = writeln!(text, "    team \"team-{}\"", tenant.idx);
    let _ = writeln!(text, "    trust \"{}\"", tenant.role.trust());
    let viewer = if tenant.viewer {
        format!(" viewer=\"{name}-viewers\"")
    } else {
        String::new()
    };
    let _ = writeln!(
        text,
        "    groups admin=\"{name}-admins\" member=\"{name}-members\"{viewer}"
    );
    if tenant.role == Role::Soft {
        let _ = writeln!(text, "    container-defaults cpu=\"250m\" memory=\"1Gi\"");
    }
    for &cell in &tenant.cells {
        let cell_name = cell_name(cell);
        let _ = writeln!(
            text,
            "    quota cell=\"{cell_name}\" cpu=\"64\" memory=\"256Gi\" pods=200 {{"
        );
        match tenant.role {
            Role::Owner => {
                let _ = writeln!(text, "        pool \"owned\" reserved=16");
            }
            Role::Mig => {
                let train_pool = match cell_kind(cell) {
                    CellKind::Aws => "h100-train",
                    CellKind::Gcp => "a100-train",
                };
                let burst = tenant.train / 2;
                // Pools with a topology make the ClusterQueue count cpu, memory and pods per
                // pool, so AWS reservations carry their part of the ceilings.
                let (train_part, infer_part) = match cell_kind(cell) {
                    CellKind::Aws => (
                        r#" cpu="32" memory="128Gi" pods=100"#,
                        r#" cpu="16" memory="64Gi" pods=50"#,
                    ),
                    CellKind::Gcp => ("", ""),
                };
                let _ = writeln!(
                    text,
                    "        pool \"{train_pool}\" reserved={} burst={burst} workload=\"train\"{train_part}",
                    tenant.train
                );
                if cell_kind(cell) == CellKind::Aws {
                    let _ = writeln!(
                        text,
                        "        pool \"h100-infer\" profile=\"1g.10gb\" reserved={} workload=\"infer\"{infer_part}",
                        tenant.mig_small
                    );
                    if tenant.mig_large > 0 {
                        let _ = writeln!(
                            text,
                            "        pool \"h100-infer\" profile=\"3g.40gb\" reserved={} workload=\"infer\"",
                            tenant.mig_large
                        );
                    }
                }
            }
            Role::Soft => {
                let _ = writeln!(
                    text,
                    "        pool \"l4-shared\" reserved={} burst={} workload=\"infer\"",
                    tenant.slices,
                    tenant.slices / 2
                );
                let _ = writeln!(
                    text,
                    "        pool \"l4-mps\" reserved={} workload=\"infer\"",
                    tenant.mps
                );
            }
        }
        let _ = writeln!(text, "    }}");
    }
    match tenant.role {
        Role::Owner => {
            let _ = writeln!(
                text,
                "    workload \"train\" service-account=\"trainer\" priority=\"batch\" {{\n        exception \"rdma\" capabilities=\"IPC_LOCK\" reason=\"GPUDirect RDMA registers pinned memory\" approved-by=\"platform-security\"\n    }}"
            );
        }
        Role::Mig => {
            let _ = writeln!(
                text,
                "    workload \"train\" service-account=\"trainer\" priority=\"batch\""
            );
            let _ = writeln!(
                text,
                "    workload \"infer\" service-account=\"server\" priority=\"serving\""
            );
        }
        Role::Soft => {
            let _ = writeln!(
                text,
                "    workload \"infer\" service-account=\"notebook\" priority=\"interactive\""
            );
        }
    }
    let _ = writeln!(text, "    registry \"registry.example.com/{name}\"");
    if tenant.shared_base {
        let _ = writeln!(
            text,
            "    shared-base \"shared/base-{}/2026-10-01/\"",
            cell_name(tenant.home)
        );
    }
    if tenant.model.is_some() {
        let _ = writeln!(
            text,
            "    model \"m\" version=\"v1\" prefix=\"{}\" {{\n        key \"keys/{name}/release.pub.pem\"\n    }}",
            model_prefix(tenant)
        );
    }
    text.push_str("}\n");
    text
}

fn model_prefix(tenant: &Tenant) -> String {
    format!(
        "s3://fleet-{}-models/models/{}/m/v1/",
        cell_name(tenant.home),
        tenant.name()
    )
}

/// The payload type and predicate of a model-signing bundle.
const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The key, bundle and lock of tenant's model: the key from the seed and the tenant's index,
/// the model's files from the same, signed with RFC 6979 (deterministic) ECDSA.
fn model_files(seed: u64, tenant: &Tenant, p384: bool) -> Vec<InputFile> {
    use p256::pkcs8::{EncodePublicKey as _, LineEnding};
    let name = tenant.name();
    let secret = |length: usize| -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut counter = 0u32;
        while bytes.len() < length {
            let mut hasher = Sha256::new();
            hasher.update(b"tenantc-scale-key");
            hasher.update(seed.to_le_bytes());
            hasher.update((tenant.idx as u64).to_le_bytes());
            hasher.update(counter.to_le_bytes());
            bytes.extend_from_slice(&hasher.finalize());
            counter += 1;
        }
        bytes.truncate(length);
        // A scalar below the group order on both curves.
        if let Some(first) = bytes.first_mut() {
            *first &= 0x7f;
        }
        bytes
    };
    let mut files: Vec<FileDigest> = ["config.json", "model.safetensors", "tokenizer.json"]
        .iter()
        .map(|path| {
            let mut hasher = Sha256::new();
            hasher.update(seed.to_le_bytes());
            hasher.update(name.as_bytes());
            hasher.update(path.as_bytes());
            FileDigest {
                path: (*path).to_string(),
                sha256: hasher.finalize().into(),
            }
        })
        .collect();
    sort_manifest(&mut files);
    let root = root_digest(&files);
    let statement = serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "m", "digest": {"sha256": hex(&root)}}],
        "predicateType": "https://model_signing/signature/v1.0",
        "predicate": {
            "serialization": {
                "hash_type": "sha256",
                "method": "files",
                "ignore_paths": [".git", ".gitignore", ".gitattributes", ".github"],
                "allow_symlinks": false
            },
            "resources": files.iter().map(|file| serde_json::json!({
                "algorithm": "sha256",
                "digest": hex(&file.sha256),
                "name": file.path,
            })).collect::<Vec<_>>()
        }
    });
    let payload = serde_json::to_vec(&statement).unwrap();
    let message = pae(PAYLOAD_TYPE, &payload);
    let (pem, signature) = if p384 {
        use p384::ecdsa::signature::Signer as _;
        let key = p384::ecdsa::SigningKey::from_slice(&secret(48)).unwrap();
        let signature: p384::ecdsa::Signature = key.sign(&message);
        (
            key.verifying_key()
                .to_public_key_pem(LineEnding::LF)
                .unwrap(),
            signature.to_der().as_bytes().to_vec(),
        )
    } else {
        use p256::ecdsa::signature::Signer as _;
        let key = p256::ecdsa::SigningKey::from_slice(&secret(32)).unwrap();
        let signature: p256::ecdsa::Signature = key.sign(&message);
        (
            key.verifying_key()
                .to_public_key_pem(LineEnding::LF)
                .unwrap(),
            signature.to_der().as_bytes().to_vec(),
        )
    };
    let bundle = serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {"publicKey": {"hint": ""}, "tlogEntries": []},
        "dsseEnvelope": {
            "payload": STANDARD.encode(&payload),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": STANDARD.encode(&signature), "keyid": ""}]
        }
    });
    let mut bundle = serde_json::to_vec(&bundle).unwrap();
    bundle.push(b'\n');
    let bundle_path = format!("weights/{name}/m-v1.sig.json");
    let lock_file = LockFile {
        version: lock::LOCK_VERSION,
        models: vec![LockedModel {
            name: "m".to_string(),
            version: "v1".to_string(),
            prefix: model_prefix(tenant),
            digest: format!("sha256:{}", hex(&root)),
            hashing: Hashing::files_sha256(),
            files: lock::locked_files(&files),
            signature: LockedSignature {
                format: "model-signing".to_string(),
                path: bundle_path.clone(),
                sha256: hex(&Sha256::digest(&bundle)),
            },
        }],
    };
    vec![
        InputFile {
            path: format!("keys/{name}/release.pub.pem"),
            contents: pem.into_bytes(),
        },
        InputFile {
            path: bundle_path,
            contents: bundle,
        },
        InputFile {
            path: format!("weights/{name}.lock"),
            contents: lock::write(&lock_file),
        },
    ]
}

/// Writes the files of `shape` under `root` (which must not hold another fleet).
pub fn write(shape: Shape, root: &std::path::Path) -> std::io::Result<usize> {
    let files = generate(shape);
    let mut bytes = 0;
    for file in &files {
        let path = root.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &file.contents)?;
        bytes += file.contents.len();
    }
    Ok(bytes)
}
