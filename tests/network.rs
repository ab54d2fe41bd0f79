//! The network floor, checked on what is emitted, as an attacker would read it.
//!
//! Consumes: the output trees of the fixture fleet (`tests/fixtures/fleet/`) and of seeded
//! generated fleets (cells with random DNS, NodeLocal DNS, metrics and endpoint declarations;
//! tenants with random names, workloads and cells). Produces: assertions only.
//!
//! The oracle evaluates every emitted NetworkPolicy the way Kubernetes does: policies only add
//! allowances, the peers of a rule are ORed, the selectors inside one peer are ANDed, an absent
//! `from` or `to` allows every source or destination, and a peer without a `namespaceSelector`
//! means the policy's own namespace. Namespace selectors are evaluated against every namespace
//! of the cell: the emitted tenant Namespaces with their labels, the platform namespaces the
//! cell declares, and one forged namespace per tenant namespace that copies all its labels but
//! the one the API server sets to the name (`kubernetes.io/metadata.name`), as someone who can
//! label namespaces could make. Properties:
//! - every tenant namespace has a default deny for both ingress and egress;
//! - no rule allows ingress from, or egress to, a namespace that is neither the tenant's own nor
//!   a platform namespace, forged ones included, and no rule allows everything;
//! - a peer that selects a platform namespace also selects pods by label, except a metrics
//!   namespace declared without a selector, and no `ipBlock` is shorter than `/8`;
//! - the oracle itself catches a policy that selects namespaces by a forgeable label, a default
//!   deny without `Egress`, and a rule without peers.
//! - the identity egress rule allows exactly the node-local credential addresses and ports of
//!   the cell's workload identity (EKS Pod Identity, GKE), one address and port per rule, and
//!   nothing for IRSA or a cell without `storage`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

mod support;

use support::{Rng, build};

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value as Json, json};
use tenantc::InputFile;
use tenantc::emit::OutputTree;
use tenantc::parse::{Node, Value};

const NAME_LABEL: &str = "kubernetes.io/metadata.name";

fn to_json(node: &Node) -> Json {
    match &node.value {
        Value::Str(text) => Json::String(text.clone()),
        Value::Int(value) => json!(value),
        Value::Bool(value) => json!(value),
        Value::Seq(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Map(map) => Json::Object(
            map.entries
                .iter()
                .map(|entry| (entry.key.clone(), to_json(&entry.value)))
                .collect(),
        ),
        other => panic!("unexpected YAML value {other:?}"),
    }
}

fn parse(text: &str) -> Json {
    let (document, diagnostics) = tenantc::parse::yaml::parse(tenantc::source::FileId(0), text);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    to_json(&document.root.expect("one document").node)
}

/// One namespace of a cell as a selector sees it.
#[derive(Debug, Clone)]
struct Namespace {
    name: String,
    labels: BTreeMap<String, String>,
    /// The tenant that owns it, `None` for platform and forged namespaces.
    owner: Option<String>,
    /// Whether it is a platform namespace the cell declares (DNS or metrics).
    platform: bool,
}

/// A NetworkPolicy with the tenant folder it came from.
#[derive(Debug, Clone)]
struct Policy {
    path: String,
    tenant: String,
    body: Json,
}

fn labels_of(object: &Json) -> BTreeMap<String, String> {
    object["metadata"]["labels"]
        .as_object()
        .map(|labels| {
            labels
                .iter()
                .map(|(key, value)| (key.clone(), value.as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a LabelSelector matches the labels: matchLabels and every matchExpression ANDed.
fn selects(selector: &Json, labels: &BTreeMap<String, String>) -> bool {
    if let Some(wanted) = selector.get("matchLabels").and_then(Json::as_object) {
        for (key, value) in wanted {
            if labels.get(key).map(String::as_str) != value.as_str() {
                return false;
            }
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Json::as_array) {
        for expression in expressions {
            let key = expression["key"].as_str().unwrap();
            let values: Vec<&str> = expression["values"]
                .as_array()
                .map(|values| values.iter().map(|v| v.as_str().unwrap()).collect())
                .unwrap_or_default();
            let value = labels.get(key).map(String::as_str);
            let holds = match expression["operator"].as_str().unwrap() {
                "In" => value.is_some_and(|value| values.contains(&value)),
                "NotIn" => value.is_none_or(|value| !values.contains(&value)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                other => panic!("unknown operator {other}"),
            };
            if !holds {
                return false;
            }
        }
    }
    true
}

fn selector_is_empty(selector: &Json) -> bool {
    let none = |key: &str| {
        selector.get(key).is_none_or(|value| {
            value.as_object().is_some_and(|m| m.is_empty())
                || value.as_array().is_some_and(|a| a.is_empty())
        })
    };
    none("matchLabels") && none("matchExpressions")
}

/// The emitted namespaces and policies of one cell, and the platform namespaces it declares.
struct CellView {
    namespaces: Vec<Namespace>,
    policies: Vec<Policy>,
    /// Platform namespaces whose peers may omit a pod selector (metrics without a selector).
    bare_platform: BTreeSet<String>,
}

fn cell_view(tree: &OutputTree, cell: &str, platform: &[(String, bool)]) -> CellView {
    let mut namespaces = Vec::new();
    let mut policies = Vec::new();
    for (path, bytes) in tree {
        let Some(rest) = path.strip_prefix(&format!("{cell}/tenants/")) else {
            continue;
        };
        if !path.ends_with(".yaml") || path.ends_with("kustomization.yaml") {
            continue;
        }
        let tenant = rest.split('/').next().unwrap().to_string();
        let object = parse(std::str::from_utf8(bytes).unwrap());
        match object["kind"].as_str().unwrap() {
            "Namespace" => {
                let name = object["metadata"]["name"].as_str().unwrap().to_string();
                let mut labels = labels_of(&object);
                // The API server sets this label whatever the object says.
                labels.insert(NAME_LABEL.to_string(), name.clone());
                // A namespace someone labelled like this one: every label but its name.
                let mut forged = labels.clone();
                let forged_name = format!("forged-{name}");
                forged.insert(NAME_LABEL.to_string(), forged_name.clone());
                namespaces.push(Namespace {
                    name: forged_name,
                    labels: forged,
                    owner: None,
                    platform: false,
                });
                namespaces.push(Namespace {
                    name,
                    labels,
                    owner: Some(tenant),
                    platform: false,
                });
            }
            "NetworkPolicy" => policies.push(Policy {
                path: path.clone(),
                tenant,
                body: object,
            }),
            _ => {}
        }
    }
    let mut bare_platform = BTreeSet::new();
    for (name, bare) in platform {
        if *bare {
            bare_platform.insert(name.clone());
        }
        namespaces.push(Namespace {
            name: name.clone(),
            labels: BTreeMap::from([(NAME_LABEL.to_string(), name.clone())]),
            owner: None,
            platform: true,
        });
    }
    CellView {
        namespaces,
        policies,
        bare_platform,
    }
}

/// Every hole the oracle finds in a cell, as readable lines; empty when the floor holds.
fn holes(view: &CellView) -> Vec<String> {
    let mut found = Vec::new();
    let tenant_namespaces: Vec<&Namespace> = view
        .namespaces
        .iter()
        .filter(|ns| ns.owner.is_some())
        .collect();
    for namespace in &tenant_namespaces {
        let denies_both = view.policies.iter().any(|policy| {
            let spec = &policy.body["spec"];
            policy.body["metadata"]["namespace"] == json!(namespace.name)
                && selector_is_empty(&spec["podSelector"])
                && spec["policyTypes"] == json!(["Ingress", "Egress"])
                && spec.get("ingress").is_none()
                && spec.get("egress").is_none()
        });
        if !denies_both {
            found.push(format!(
                "{} has no default deny for both directions",
                namespace.name
            ));
        }
    }
    for policy in &view.policies {
        let spec = &policy.body["spec"];
        let own_namespace = policy.body["metadata"]["namespace"].as_str().unwrap();
        if spec.get("policyTypes").is_none() {
            found.push(format!("{}: no policyTypes", policy.path));
        }
        for (direction, peers_key) in [("ingress", "from"), ("egress", "to")] {
            let rules = spec
                .get(direction)
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            for rule in rules {
                let peers = rule
                    .get(peers_key)
                    .and_then(Json::as_array)
                    .cloned()
                    .unwrap_or_default();
                if peers.is_empty() {
                    found.push(format!(
                        "{}: a {direction} rule allows everything",
                        policy.path
                    ));
                }
                for peer in peers {
                    if let Some(block) = peer.get("ipBlock") {
                        let cidr = block["cidr"].as_str().unwrap();
                        let prefix: u8 = cidr.split('/').nth(1).unwrap().parse().unwrap();
                        if prefix < 8 {
                            found.push(format!("{}: {direction} to {cidr}", policy.path));
                        }
                        continue;
                    }
                    let Some(namespace_selector) = peer.get("namespaceSelector") else {
                        // The policy's own namespace.
                        continue;
                    };
                    for namespace in view
                        .namespaces
                        .iter()
                        .filter(|ns| selects(namespace_selector, &ns.labels))
                    {
                        let mine = namespace.owner.as_deref() == Some(policy.tenant.as_str());
                        if !mine && !namespace.platform {
                            found.push(format!(
                                "{}: {direction} {peers_key} `{}` (policy in `{own_namespace}`)",
                                policy.path, namespace.name
                            ));
                        }
                        let bare_allowed = view.bare_platform.contains(&namespace.name);
                        if namespace.platform
                            && !bare_allowed
                            && peer.get("podSelector").is_none_or(selector_is_empty)
                        {
                            found.push(format!(
                                "{}: every pod of platform namespace `{}`",
                                policy.path, namespace.name
                            ));
                        }
                    }
                }
            }
        }
    }
    found
}

#[test]
fn the_fixture_fleet_keeps_every_tenant_namespace_to_itself() {
    let tree = build(&support::inputs(&support::fleet()));
    let platform = vec![
        ("kube-system".to_string(), false),
        ("monitoring".to_string(), false),
    ];
    let mut checked = 0;
    for cell in ["eu-west-4b", "us-east-1a"] {
        let view = cell_view(&tree, cell, &platform);
        assert!(view.policies.len() >= 10, "{cell}: {}", view.policies.len());
        assert_eq!(holes(&view), Vec::<String>::new(), "{cell}");
        checked += view
            .namespaces
            .iter()
            .filter(|ns| ns.owner.is_some())
            .count();
    }
    assert!(checked >= 6, "{checked}");
}

#[test]
fn the_oracle_finds_forged_namespaces_missing_egress_and_rules_without_peers() {
    let tree = build(&support::inputs(&support::fleet()));
    let platform = vec![
        ("kube-system".to_string(), false),
        ("monitoring".to_string(), false),
    ];
    let view = cell_view(&tree, "us-east-1a", &platform);
    // Select the tenant's namespaces by its `tenant.platform/tenant` label instead of their
    // names: the forged namespaces carry that label too.
    let mut forgeable = CellView {
        namespaces: view.namespaces.clone(),
        policies: view.policies.clone(),
        bare_platform: view.bare_platform.clone(),
    };
    for policy in &mut forgeable.policies {
        if policy
            .path
            .ends_with("networkpolicy-allow-same-tenant.yaml")
        {
            let selector = json!({"matchLabels": {"tenant.platform/tenant": policy.tenant}});
            policy.body["spec"]["ingress"][0]["from"][0]["namespaceSelector"] = selector;
        }
    }
    assert!(
        holes(&forgeable)
            .iter()
            .any(|hole| hole.contains("`forged-"))
    );
    // A default deny that lists only Ingress leaves egress open.
    let mut ingress_only = CellView {
        namespaces: view.namespaces.clone(),
        policies: view.policies.clone(),
        bare_platform: view.bare_platform.clone(),
    };
    for policy in &mut ingress_only.policies {
        if policy.path.ends_with("networkpolicy-default-deny.yaml") {
            policy.body["spec"]["policyTypes"] = json!(["Ingress"]);
        }
    }
    assert!(
        holes(&ingress_only)
            .iter()
            .any(|hole| hole.contains("no default deny"))
    );
    // The DNS namespace and label as two peers: every pod of kube-system, and every pod with
    // the label anywhere.
    let mut split_peer = CellView {
        namespaces: view.namespaces.clone(),
        policies: view.policies.clone(),
        bare_platform: view.bare_platform.clone(),
    };
    for policy in &mut split_peer.policies {
        if policy.path.ends_with("networkpolicy-allow-dns.yaml") {
            let peer = policy.body["spec"]["egress"][0]["to"][0].clone();
            policy.body["spec"]["egress"][0]["to"] = json!([
                {"namespaceSelector": peer["namespaceSelector"]},
                {"podSelector": peer["podSelector"]},
            ]);
        }
    }
    assert!(
        holes(&split_peer)
            .iter()
            .any(|hole| hole.contains("every pod of platform namespace `kube-system`"))
    );
    // A rule without peers allows everything.
    let mut open = view;
    for policy in &mut open.policies {
        if policy.path.ends_with("networkpolicy-allow-endpoints.yaml") {
            policy.body["spec"]["egress"][0]
                .as_object_mut()
                .unwrap()
                .remove("to");
        }
    }
    assert!(
        holes(&open)
            .iter()
            .any(|hole| hole.contains("allows everything"))
    );
}

/// Per cell, its platform namespaces and whether a peer may select one without a pod label.
type PlatformNamespaces = BTreeMap<String, Vec<(String, bool)>>;

/// A generated fleet: cells with random network declarations, tenants in some of them.
fn generate(seed: u64) -> (Vec<InputFile>, PlatformNamespaces) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut inputs = Vec::new();
    let mut platform = BTreeMap::new();
    let cells: Vec<String> = (0..1 + rng.below(2)).map(|idx| format!("c{idx}")).collect();
    for cell in &cells {
        let minor = 30 + rng.below(7);
        let dns_namespace = ["kube-system", "dns", "coredns"][rng.below(3) as usize];
        let mut text = format!(
            "cell \"{cell}\" {{\n  cloud \"aws\" region=\"r\"\n  kubernetes \"1.{minor}\"\n  driver \"570\"\n  dns namespace=\"{dns_namespace}\" selector=\"k8s-app=kube-dns\""
        );
        if rng.chance(50) {
            text.push_str(" node-local=\"169.254.20.10\"");
        }
        text.push('\n');
        let mut namespaces = vec![(dns_namespace.to_string(), false)];
        if rng.chance(70) {
            let metrics = ["monitoring", "observability"][rng.below(2) as usize];
            if rng.chance(50) {
                text.push_str(&format!(
                    "  metrics namespace=\"{metrics}\" selector=\"app=prometheus\"\n"
                ));
                namespaces.push((metrics.to_string(), false));
            } else {
                text.push_str(&format!("  metrics namespace=\"{metrics}\"\n"));
                namespaces.push((metrics.to_string(), true));
            }
        }
        for idx in 0..rng.below(4) {
            let prefix = 8 + rng.below(25);
            text.push_str(&format!(
                "  endpoint \"e{idx}\" cidr=\"{}\"\n",
                if prefix == 8 {
                    "10.0.0.0/8".to_string()
                } else {
                    format!("52.{}.0.0/16", idx)
                }
            ));
        }
        text.push_str("  pool \"p\" { gpu \"H100-80GB-SXM\"; nodes 4 gpus-per-node=8; sharing \"exclusive\"; }\n}\n");
        inputs.push(InputFile {
            path: format!("cells/{cell}.kdl"),
            contents: text.into_bytes(),
        });
        platform.insert(cell.clone(), namespaces);
    }
    // Names that share prefixes, so a selector by prefix or by a partial name would leak.
    let names = ["a", "a-b", "ab", "b", "team", "team-x", "x-team", "a-train"];
    let count = 2 + rng.below(5) as usize;
    // The members of each org in each cell, which the cells list.
    let mut members: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for name in names.iter().take(count) {
        let org = format!("o{}", rng.below(2));
        let mut text = format!(
            "tenant \"{name}\" {{\n  org \"{org}\"\n  team \"t\"\n  trust \"soft\"\n  groups admin=\"{name}-admins\"\n"
        );
        let mut any = false;
        for cell in &cells {
            if rng.chance(70) || (!any && cell == cells.last().unwrap()) {
                text.push_str(&format!(
                    "  quota cell=\"{cell}\" cpu=\"8\" memory=\"32Gi\" pods=20\n"
                ));
                members
                    .entry((cell.clone(), org.clone()))
                    .or_default()
                    .push(format!("\"{name}\""));
                any = true;
            }
        }
        let workloads: &[&str] = match rng.below(3) {
            0 => &["train"],
            1 => &["infer"],
            _ => &["train", "infer"],
        };
        for workload in workloads {
            text.push_str(&format!(
                "  workload \"{workload}\" service-account=\"sa\"\n"
            ));
        }
        text.push_str("}\n");
        inputs.push(InputFile {
            path: format!("tenants/{name}.kdl"),
            contents: text.into_bytes(),
        });
    }
    for ((cell, org), names) in &members {
        let path = format!("cells/{cell}.kdl");
        let input = inputs.iter_mut().find(|input| input.path == path).unwrap();
        let text = String::from_utf8(input.contents.clone()).unwrap();
        let body = text.strip_suffix("}\n").unwrap();
        input.contents = format!(
            "{body}  org \"{org}\" {{ tenants {}; }}\n}}\n",
            names.join(" ")
        )
        .into_bytes();
    }
    (inputs, platform)
}

#[test]
fn generated_fleets_keep_every_tenant_namespace_to_itself() {
    let mut namespaces = 0;
    for seed in 0..60 {
        let (inputs, platform) = generate(seed);
        let tree = build(&inputs);
        for (cell, platform) in &platform {
            let view = cell_view(&tree, cell, platform);
            assert_eq!(
                holes(&view),
                Vec::<String>::new(),
                "seed {seed}, cell {cell}"
            );
            namespaces += view
                .namespaces
                .iter()
                .filter(|ns| ns.owner.is_some())
                .count();
        }
    }
    assert!(namespaces > 200, "{namespaces}");
}

/// The identity egress rules of every tenant namespace of `cell`, as sorted
/// `(cidr, protocol, port)`, and how many namespaces the cell has.
/// The `(cidr, protocol, port)` rules of one identity egress policy, sorted.
type IdentityRules = Vec<(String, String, i64)>;

fn identity_rules(tree: &OutputTree, cell: &str) -> (BTreeSet<IdentityRules>, usize) {
    let mut rules = BTreeSet::new();
    let mut namespaces = 0;
    for (path, bytes) in tree {
        if !path.starts_with(&format!("{cell}/tenants/")) {
            continue;
        }
        if path.ends_with("/networkpolicy-default-deny.yaml") {
            namespaces += 1;
        }
        if !path.ends_with("/networkpolicy-allow-identity.yaml") {
            continue;
        }
        let policy = parse(std::str::from_utf8(bytes).unwrap());
        assert_eq!(policy["spec"]["policyTypes"], json!(["Egress"]), "{path}");
        assert!(policy["spec"].get("ingress").is_none(), "{path}");
        let mut found = Vec::new();
        for rule in policy["spec"]["egress"].as_array().unwrap() {
            let peers = rule["to"].as_array().unwrap();
            let ports = rule["ports"].as_array().unwrap();
            assert_eq!(
                (peers.len(), ports.len()),
                (1, 1),
                "{path}: one address and port per rule"
            );
            assert!(
                peers[0].get("namespaceSelector").is_none()
                    && peers[0].get("podSelector").is_none()
            );
            found.push((
                peers[0]["ipBlock"]["cidr"].as_str().unwrap().to_string(),
                ports[0]["protocol"].as_str().unwrap().to_string(),
                ports[0]["port"].as_i64().unwrap(),
            ));
        }
        found.sort();
        rules.insert(found);
    }
    (rules, namespaces)
}

/// A cell with the given `storage` body (none when empty) and one tenant.
fn identity_fleet(storage: &str) -> Vec<InputFile> {
    let storage = if storage.is_empty() {
        String::new()
    } else {
        format!("    storage {{\n        bucket \"fleet-c1-models\"\n        {storage}\n    }}\n")
    };
    let cell = format!(
        "cell \"c1\" {{\n    cloud \"{}\" region=\"r1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n{storage}    priority \"batch\" value=1000\n    pool \"train\" {{ gpu \"H100-80GB-SXM\"; nodes 1 gpus-per-node=8; sharing \"exclusive\"; }}\n}}\n",
        if storage.contains("gcp ") {
            "gcp"
        } else {
            "aws"
        }
    );
    let tenant = "tenant \"alpha\" {\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"alpha-admins\"\n    quota cell=\"c1\" cpu=\"2\" memory=\"2Gi\" pods=2 { pool \"train\" reserved=8 workload=\"train\"; }\n    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n    workload \"infer\" service-account=\"server\" priority=\"batch\" share=1\n}\n";
    vec![
        InputFile {
            path: "cells/c1.kdl".to_string(),
            contents: cell.into_bytes(),
        },
        InputFile {
            path: "tenants/alpha.kdl".to_string(),
            contents: tenant.as_bytes().to_vec(),
        },
    ]
}

#[test]
fn identity_egress_allows_exactly_what_the_cells_identity_needs() {
    let rules = |pairs: &[(&str, i64)]| {
        BTreeSet::from([pairs
            .iter()
            .map(|(cidr, port)| (cidr.to_string(), "TCP".to_string(), *port))
            .collect::<Vec<_>>()])
    };
    // The fixture fleet: GKE Workload Identity in eu-west-4b, IRSA in us-east-1a.
    let tree = build(&support::inputs(&support::fleet()));
    let (gcp, namespaces) = identity_rules(&tree, "eu-west-4b");
    assert_eq!(
        gcp,
        rules(&[("169.254.169.252/32", 988), ("169.254.169.254/32", 80)])
    );
    let files = tree
        .keys()
        .filter(|path| path.starts_with("eu-west-4b/") && path.ends_with("allow-identity.yaml"))
        .count();
    assert_eq!(
        files, namespaces,
        "every namespace of the GCP cell gets the rule"
    );
    let (irsa, _) = identity_rules(&tree, "us-east-1a");
    assert!(
        irsa.is_empty(),
        "IRSA reaches STS through a declared endpoint: {irsa:?}"
    );
    // EKS Pod Identity: the agent's IPv4 and IPv6 addresses on port 80, in every namespace.
    let tree = build(&identity_fleet(
        "aws account=\"123456789012\" identity=\"pod-identity\"",
    ));
    let (pod_identity, namespaces) = identity_rules(&tree, "c1");
    assert_eq!(
        pod_identity,
        rules(&[("169.254.170.23/32", 80), ("fd00:ec2::23/128", 80)])
    );
    assert_eq!(
        tree.keys()
            .filter(|path| path.ends_with("allow-identity.yaml"))
            .count(),
        namespaces
    );
    assert_eq!(namespaces, 2);
    // No storage identity, no rule.
    let tree = build(&identity_fleet(""));
    assert!(
        tree.keys()
            .all(|path| !path.ends_with("allow-identity.yaml"))
    );
}
