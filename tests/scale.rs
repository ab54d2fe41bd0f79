//! The seeded fleet generator of the scale benchmark (`benches/fleet/seeded.rs`): what it
//! generates compiles with no finding at all, and the same seed gives the same bytes.
//!
//! The benchmark (`benches/scale.sh`) times the big fleets; these tests hold small ones to the
//! same rules in CI.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../benches/fleet/seeded.rs"]
mod seeded;
mod support;

use seeded::Shape;
use tenantc::InputFile;

/// A fleet small enough for CI that still has every kind of cell, tenant and pool.
const SMALL: Shape = Shape {
    tenants: 24,
    cells: 4,
    seed: 23,
};

fn rendered(compilation: &tenantc::Compilation) -> String {
    tenantc::diag::render::human(
        &compilation.diagnostics,
        &compilation.sources,
        tenantc::diag::render::Color::Never,
    )
}

fn text_of<'a>(inputs: &'a [InputFile], prefix: &str) -> Vec<&'a str> {
    inputs
        .iter()
        .filter(|input| input.path.starts_with(prefix))
        .map(|input| std::str::from_utf8(&input.contents).unwrap())
        .collect()
}

#[test]
fn a_generated_fleet_compiles_with_no_error_and_no_warning() {
    for shape in [
        SMALL,
        Shape {
            tenants: 1,
            cells: 1,
            seed: 1,
        },
        Shape {
            tenants: 25,
            cells: 3,
            seed: 99,
        },
    ] {
        let inputs = seeded::generate(shape);
        let compilation = tenantc::compile(&inputs);
        assert!(
            compilation.diagnostics.is_empty() && compilation.suppressed.is_empty(),
            "{shape:?}:\n{}",
            rendered(&compilation)
        );
        assert!(compilation.output.is_some(), "{shape:?}");
        // Every signed model was verified: none is left out of the plan.
        let plan = compilation.plan.expect("a plan");
        let locks = inputs
            .iter()
            .filter(|input| input.path.ends_with(".lock"))
            .count();
        let verified: std::collections::BTreeSet<(&str, &str)> = plan
            .cells
            .iter()
            .flat_map(|cell| &cell.tenants)
            .flat_map(|tenant| {
                tenant
                    .weights
                    .iter()
                    .map(|model| (tenant.name.as_str(), model.name.as_str()))
            })
            .collect();
        assert_eq!(verified.len(), locks, "{shape:?}");
    }
}

#[test]
fn a_generated_fleet_uses_every_feature_the_benchmark_claims() {
    let inputs = seeded::generate(SMALL);
    let cells = text_of(&inputs, "cells/").join("");
    let tenants = text_of(&inputs, "tenants/").join("");
    for needle in [
        "sharing \"exclusive\"",
        "sharing \"mig\"",
        "sharing \"time-slice\"",
        "sharing \"mps\"",
        "mig-layout \"balanced\"",
        "topology {",
        "owner \"",
        "shared-base \"shared/",
        "aws account=",
        "gcp project=",
        "gitops \"argocd\"",
        "gitops \"flux\"",
    ] {
        assert!(cells.contains(needle), "no cell has `{needle}`");
    }
    for needle in [
        "trust \"hard\"",
        "trust \"mig\"",
        "trust \"soft\"",
        "exception \"rdma\"",
        "shared-base \"shared/",
        "model \"m\"",
    ] {
        assert!(tenants.contains(needle), "no tenant has `{needle}`");
    }
    let keys = text_of(&inputs, "keys/");
    let p384 = keys.iter().filter(|pem| pem.len() > 200).count();
    assert!(p384 > 0 && p384 < keys.len(), "both P-256 and P-384 keys");
    assert!(
        inputs
            .iter()
            .any(|input| input.path.starts_with("templates/"))
    );
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_another_fleet() {
    let first = seeded::generate(SMALL);
    let again = seeded::generate(SMALL);
    let as_pairs = |inputs: &[InputFile]| -> Vec<(String, Vec<u8>)> {
        inputs
            .iter()
            .map(|input| (input.path.clone(), input.contents.clone()))
            .collect()
    };
    assert_eq!(as_pairs(&first), as_pairs(&again));
    let other = seeded::generate(Shape { seed: 24, ..SMALL });
    assert_ne!(as_pairs(&first), as_pairs(&other));
}

/// Compiles `inputs` on a pool of `threads` threads.
fn compile_on(threads: usize, inputs: &[InputFile]) -> tenantc::Compilation {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| tenantc::compile(inputs))
}

#[test]
fn one_thread_and_four_threads_give_the_same_bytes_and_the_same_findings() {
    let inputs = seeded::generate(SMALL);
    let one = compile_on(1, &inputs);
    let four = compile_on(4, &inputs);
    let (one_tree, four_tree) = (one.output.unwrap(), four.output.unwrap());
    assert!(one_tree.len() > 500, "{} files", one_tree.len());
    let differing: Vec<&String> = one_tree
        .iter()
        .filter(|(path, bytes)| four_tree.get(*path) != Some(bytes))
        .map(|(path, _)| path)
        .collect();
    assert!(differing.is_empty(), "differ on 4 threads: {differing:?}");
    assert_eq!(one_tree.len(), four_tree.len());

    // Fleets with findings of each parallel stage, which come out the same, in the same order:
    // signatures that do not verify (the weights stage runs only on a fleet that validated),
    // and files that do not parse or read.
    let mut unsigned = inputs.clone();
    let mut bundles = 0;
    for input in &mut unsigned {
        if input.path.ends_with(".sig.json") && bundles < 3 {
            bundles += 1;
            let text = String::from_utf8(input.contents.clone()).unwrap();
            // Another signature, still base64: the file no longer verifies.
            input.contents = text.replacen("\"sig\":\"M", "\"sig\":\"N", 1).into_bytes();
        }
    }
    let mut unreadable = inputs.clone();
    unreadable.push(InputFile {
        path: "tenants/broken.kdl".to_string(),
        contents: b"tenant \"broken\" {\n    org \"x\"\n".to_vec(),
    });
    unreadable.push(InputFile {
        path: "tenants/typo.kdl".to_string(),
        contents: b"tenant \"typo\" {\n    orgg \"x\"\n}\n".to_vec(),
    });
    for (what, broken, codes) in [
        ("signatures", unsigned, ["weights-"]),
        ("files", unreadable, ["kdl-"]),
    ] {
        let one = compile_on(1, &broken);
        let four = compile_on(4, &broken);
        let found = rendered(&one);
        assert!(
            one.has_errors() && codes.iter().all(|code| found.contains(code)),
            "{what}:\n{found}"
        );
        assert_eq!(found, rendered(&four), "{what}");
        assert_eq!(one.diagnostics, four.diagnostics, "{what}");
    }
}

/// A sink of a streamed compilation that keeps every part it is handed.
#[derive(Default)]
struct Parts(std::sync::Mutex<Vec<tenantc::emit::OutputTree>>);

impl tenantc::emit::PartSink for Parts {
    fn take(&self, part: tenantc::emit::OutputTree) {
        self.0.lock().unwrap().push(part);
    }
}

/// Compiles `inputs` streamed on a pool of `threads` threads: the compilation and the parts.
fn stream_on(
    threads: usize,
    inputs: &[InputFile],
) -> (tenantc::Compilation, Vec<tenantc::emit::OutputTree>) {
    let parts = Parts::default();
    let loaded = tenantc::load::Loaded {
        inputs: inputs.to_vec(),
        findings: Vec::new(),
    };
    let compilation = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| tenantc::compile_streaming(loaded, &parts));
    (compilation, parts.0.into_inner().unwrap())
}

#[test]
fn a_streamed_compilation_hands_over_exactly_the_tree_of_a_whole_one() {
    let inputs = seeded::generate(SMALL);
    let whole = compile_on(4, &inputs);
    let tree = whole.output.clone().unwrap();
    for threads in [1, 4] {
        let (streamed, parts) = stream_on(threads, &inputs);
        // One part per cell (its folder and its GitOps objects), and most of the tree in them.
        assert_eq!(parts.len(), SMALL.cells, "{threads} threads");
        let mut joined = streamed.output.unwrap();
        let rest = joined.len();
        for part in parts {
            for (path, bytes) in part {
                assert!(joined.insert(path.clone(), bytes).is_none(), "{path} twice");
            }
        }
        assert!(
            rest * 10 < joined.len(),
            "{rest} of {} not streamed",
            joined.len()
        );
        assert!(
            joined == tree,
            "the parts and the rest differ from the whole tree"
        );
        assert_eq!(streamed.diagnostics, whole.diagnostics);
    }

    // A template error comes after every cell is lowered and handed over: the tree is withheld
    // as in a whole compilation, with the same findings, so the caller must discard the parts.
    let mut misplaced = inputs.clone();
    for input in &mut misplaced {
        if input.path.starts_with("templates/") {
            let text = String::from_utf8(input.contents.clone()).unwrap();
            input.contents = text
                .replace("namespace: {{ namespace.name }}", "namespace: kube-system")
                .into_bytes();
        }
    }
    let whole = compile_on(4, &misplaced);
    let (streamed, parts) = stream_on(4, &misplaced);
    assert!(
        whole.has_errors() && whole.output.is_none(),
        "{}",
        rendered(&whole)
    );
    assert!(!parts.is_empty(), "the template error came before any part");
    assert!(streamed.output.is_none());
    assert_eq!(rendered(&streamed), rendered(&whole));
}

// Properties over generated valid fleets (issue 23 item 6) --------------------------------------

/// Small generated fleets of several seeds and shapes, compiled once for all the properties.
fn property_fleets() -> &'static [(Shape, tenantc::Compilation)] {
    static FLEETS: std::sync::OnceLock<Vec<(Shape, tenantc::Compilation)>> =
        std::sync::OnceLock::new();
    FLEETS.get_or_init(|| {
        [(10, 2, 1), (16, 3, 2), (24, 4, 3), (12, 5, 4)]
            .into_iter()
            .map(|(tenants, cells, seed)| {
                let shape = Shape {
                    tenants,
                    cells,
                    seed,
                };
                let compilation = tenantc::compile(&seeded::generate(shape));
                assert!(
                    compilation.output.is_some(),
                    "{shape:?}:\n{}",
                    rendered(&compilation)
                );
                (shape, compilation)
            })
            .collect()
    })
}

/// An emitted YAML document as JSON, read with the compiler's YAML reader (which is written
/// apart from the emitter).
fn yaml_json(text: &str) -> serde_json::Value {
    let (document, diagnostics) = tenantc::parse::yaml::parse(tenantc::source::FileId(0), text);
    assert!(diagnostics.is_empty(), "{diagnostics:?}\n{text}");
    to_json(&document.root.expect("a YAML document").node)
}

/// Every YAML document of an emitted file as JSON (a file may hold several).
fn yaml_documents(text: &str) -> Vec<serde_json::Value> {
    let (nodes, diagnostics) = tenantc::parse::yaml::parse_stream(tenantc::source::FileId(0), text);
    assert!(diagnostics.is_empty(), "{diagnostics:?}\n{text}");
    nodes.iter().map(to_json).collect()
}

fn to_json(node: &tenantc::parse::Node) -> serde_json::Value {
    use tenantc::parse::Value;
    match &node.value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(flag) => serde_json::Value::Bool(*flag),
        Value::Int(number) => serde_json::Value::from(*number as i64),
        Value::Float(number) => serde_json::Value::from(*number),
        Value::Str(text) => serde_json::Value::String(text.clone()),
        Value::Seq(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Value::Map(map) => serde_json::Value::Object(
            map.entries
                .iter()
                .map(|entry| (entry.key.clone(), to_json(&entry.value)))
                .collect(),
        ),
    }
}

fn strings(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) => into.push(text.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|item| strings(item, into)),
        serde_json::Value::Object(map) => map.values().for_each(|item| strings(item, into)),
        _ => {}
    }
}

#[test]
fn every_tenant_namespace_denies_by_default_both_ways() {
    for (shape, compilation) in property_fleets() {
        let shape = *shape;
        let tree = compilation.output.as_ref().unwrap();
        let mut namespaces = 0;
        for path in tree.keys().filter(|path| path.ends_with("/namespace.yaml")) {
            let folder = path.trim_end_matches("namespace.yaml");
            if !folder.contains("/tenants/") {
                continue;
            }
            namespaces += 1;
            let deny = tree
                .get(&format!("{folder}networkpolicy-default-deny.yaml"))
                .unwrap_or_else(|| panic!("{shape:?}: {folder} has no default deny"));
            let policy = yaml_json(std::str::from_utf8(deny).unwrap());
            let spec = &policy["spec"];
            assert_eq!(spec["podSelector"], serde_json::json!({}), "{folder}");
            assert_eq!(
                spec["policyTypes"],
                serde_json::json!(["Ingress", "Egress"]),
                "{folder}"
            );
            assert!(
                spec.get("ingress").is_none() && spec.get("egress").is_none(),
                "{folder}: the default deny allows something"
            );
        }
        assert!(namespaces >= shape.tenants, "{shape:?}: {namespaces}");
    }
}

#[test]
fn no_iam_grant_names_another_tenants_objects() {
    for (shape, compilation) in property_fleets() {
        let shape = *shape;
        let tree = compilation.output.as_ref().unwrap();
        let plan = compilation.plan.as_ref().unwrap();
        let mut documents = 0;
        for (path, bytes) in tree {
            // `<cell>/iam/<tenant>/<file>.json`.
            let parts: Vec<&str> = path.split('/').collect();
            let [cell, "iam", tenant, _file] = parts.as_slice() else {
                continue;
            };
            documents += 1;
            let shared: Vec<String> = plan
                .cells
                .iter()
                .filter(|plan_cell| plan_cell.name == *cell)
                .flat_map(|plan_cell| &plan_cell.tenants)
                .filter(|plan_tenant| plan_tenant.name == *tenant)
                .flat_map(|plan_tenant| &plan_tenant.shared_bases)
                .map(|base| base.prefix.clone())
                .collect();
            let mut texts = Vec::new();
            strings(&serde_json::from_slice(bytes).unwrap(), &mut texts);
            for text in texts {
                // The tenant-scoped prefixes of a bucket: `models/<tenant>/` and
                // `checkpoints/<tenant>/`, in an ARN, a condition or a GCS resource name.
                let segments: Vec<&str> = text.split('/').collect();
                for pair in segments.windows(2) {
                    if let [scope @ ("models" | "checkpoints"), owner] = pair {
                        assert_eq!(
                            owner.trim_end_matches('*'),
                            *tenant,
                            "{shape:?} {path}: grants `{text}` ({scope})"
                        );
                    }
                }
                if let Some(at) = text.find("shared/") {
                    let prefix = &text[at..];
                    assert!(
                        shared.iter().any(|base| prefix.starts_with(base.as_str())
                            || base.starts_with(prefix.trim_end_matches('*'))),
                        "{shape:?} {path}: grants `{text}`, not a shared base of {tenant} ({shared:?})"
                    );
                }
            }
        }
        assert!(documents > 0, "{shape:?}");
    }
}

#[test]
fn every_cluster_queue_covers_every_gpu_and_mig_resource_of_its_flavors() {
    for (shape, compilation) in property_fleets() {
        let shape = *shape;
        let tree = compilation.output.as_ref().unwrap();
        let plan = compilation.plan.as_ref().unwrap();
        let mut queues = 0;
        for cell in &plan.cells {
            // What each flavor's pool offers.
            let offers: std::collections::BTreeMap<&str, Vec<&str>> = cell
                .pools
                .iter()
                .map(|pool| {
                    (
                        pool.flavor.as_str(),
                        pool.offers
                            .iter()
                            .map(|offer| offer.resource.as_str())
                            .collect(),
                    )
                })
                .collect();
            for tenant in &cell.tenants {
                let path = format!("{}/tenants/{}/clusterqueue.yaml", cell.name, tenant.name);
                let queue = yaml_json(std::str::from_utf8(&tree[&path]).unwrap());
                queues += 1;
                for group in queue["spec"]["resourceGroups"].as_array().unwrap() {
                    let covered: Vec<&str> = group["coveredResources"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|name| name.as_str().unwrap())
                        .collect();
                    for flavor in group["flavors"].as_array().unwrap() {
                        let name = flavor["name"].as_str().unwrap();
                        let listed: Vec<&str> = flavor["resources"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|resource| resource["name"].as_str().unwrap())
                            .collect();
                        // Kueue wants every flavor of a group to list the covered resources.
                        assert_eq!(listed, covered, "{shape:?} {path}: flavor {name}");
                        for resource in offers.get(name).into_iter().flatten() {
                            assert!(
                                covered.contains(resource),
                                "{shape:?} {path}: flavor {name} offers {resource}, not covered"
                            );
                        }
                    }
                }
            }
        }
        assert!(queues >= shape.tenants, "{shape:?}");
    }
}

#[test]
fn no_pool_resource_is_reserved_beyond_its_capacity() {
    for (shape, compilation) in property_fleets() {
        let shape = *shape;
        let plan = compilation.plan.as_ref().unwrap();
        let mut checked = 0;
        for cell in &plan.cells {
            for pool in &cell.pools {
                for offer in &pool.offers {
                    let reserved: i64 = cell
                        .tenants
                        .iter()
                        .flat_map(|tenant| &tenant.capacity)
                        .filter(|effective| {
                            effective.pool == pool.name && effective.resource == offer.resource
                        })
                        .map(|effective| effective.nominal)
                        .sum();
                    assert!(
                        reserved <= offer.capacity,
                        "{shape:?} {}/{} {}: {reserved} reserved of {}",
                        cell.name,
                        pool.name,
                        offer.resource,
                        offer.capacity
                    );
                    checked += usize::from(reserved > 0);
                }
            }
        }
        assert!(checked > 0, "{shape:?}: nothing reserved");
    }
}

/// The schemas an emitted object is judged by: per Kubernetes minor, the definitions of the
/// built-in kinds vendored in `schema/k8s/core-v1.<minor>.json`, and per (group, version, kind)
/// the `openAPIV3Schema` of a CRD vendored under `schema/crds/`.
struct Schemas {
    core: std::collections::BTreeMap<u32, serde_json::Map<String, serde_json::Value>>,
    crds: std::collections::BTreeMap<(String, String, String), serde_json::Value>,
}

/// Kinds tenantc writes that are not API objects, so no API server judges them: kustomize's own
/// file, and the Kueue controller Configuration a DRA cell writes as a report to merge.
const NOT_API_OBJECTS: [(&str, &str); 2] = [
    ("kustomize.config.k8s.io/v1beta1", "Kustomization"),
    ("config.kueue.x-k8s.io/v1beta2", "Configuration"),
];

fn schemas() -> &'static Schemas {
    static SCHEMAS: std::sync::OnceLock<Schemas> = std::sync::OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let root = support::repo().join("schema");
        let mut core = std::collections::BTreeMap::new();
        for entry in std::fs::read_dir(root.join("k8s")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(minor) = name
                .strip_prefix("core-v1.")
                .and_then(|rest| rest.strip_suffix(".json"))
            else {
                continue;
            };
            let document: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let definitions = document
                .get("definitions")
                .and_then(|value| value.as_object())
                .unwrap()
                .clone();
            core.insert(minor.parse().unwrap(), definitions);
        }
        let mut crds = std::collections::BTreeMap::new();
        for folder in std::fs::read_dir(root.join("crds")).unwrap() {
            let folder = folder.unwrap().path();
            if !folder.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&folder).unwrap() {
                let file = file.unwrap().path();
                if file.extension().is_none_or(|extension| extension != "yaml") {
                    continue;
                }
                for crd in yaml_documents(&std::fs::read_to_string(&file).unwrap()) {
                    let group = crd
                        .pointer("/spec/group")
                        .and_then(|value| value.as_str())
                        .unwrap()
                        .to_string();
                    let kind = crd
                        .pointer("/spec/names/kind")
                        .and_then(|value| value.as_str())
                        .unwrap()
                        .to_string();
                    for version in crd
                        .pointer("/spec/versions")
                        .and_then(|value| value.as_array())
                        .unwrap()
                    {
                        let name = version
                            .get("name")
                            .and_then(|value| value.as_str())
                            .unwrap()
                            .to_string();
                        let schema = version.pointer("/schema/openAPIV3Schema").unwrap().clone();
                        crds.insert((group.clone(), name, kind.clone()), schema);
                    }
                }
            }
        }
        assert!(core.len() >= 2 && crds.len() >= 10, "{:?}", core.keys());
        Schemas { core, crds }
    })
}

/// Judges every object of `tree` by the schema of its kind, for its cell's Kubernetes minor
/// (`minors`, by cell name) for the built-in kinds; returns the objects judged per kind and every
/// violation, each as `<path>: <kind>: <where>: <what>`.
fn schema_violations(
    tree: &tenantc::emit::OutputTree,
    minors: &std::collections::BTreeMap<String, u32>,
) -> (std::collections::BTreeMap<String, usize>, Vec<String>) {
    let schemas = schemas();
    let mut judged = std::collections::BTreeMap::new();
    let mut found = Vec::new();
    for (path, bytes) in tree {
        if !path.ends_with(".yaml") {
            continue;
        }
        for object in yaml_documents(std::str::from_utf8(bytes).unwrap()) {
            let api_version = object
                .get("apiVersion")
                .and_then(|value| value.as_str())
                .unwrap_or_default();
            let kind = object
                .get("kind")
                .and_then(|value| value.as_str())
                .unwrap_or_default();
            if NOT_API_OBJECTS.contains(&(api_version, kind)) {
                continue;
            }
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            let cell = path.split('/').next().unwrap_or_default();
            let violations = if let Some(schema) =
                schemas
                    .crds
                    .get(&(group.to_string(), version.to_string(), kind.to_string()))
            {
                tenantc::kube::crd_schema::violations(schema, &object)
            } else {
                let Some(minor) = minors.get(cell) else {
                    found.push(format!(
                        "{path}: {api_version} {kind}: no vendored CRD, and not in a cell folder"
                    ));
                    continue;
                };
                let Some(definitions) = schemas.core.get(minor) else {
                    found.push(format!(
                        "{path}: no definitions vendored for Kubernetes 1.{minor} (schema/k8s/vendor.py)"
                    ));
                    continue;
                };
                let Some(schema) =
                    tenantc::kube::crd_schema::kind_definition(definitions, api_version, kind)
                else {
                    found.push(format!(
                        "{path}: {api_version} {kind}: Kubernetes 1.{minor} serves no such kind, and no CRD is vendored"
                    ));
                    continue;
                };
                tenantc::kube::crd_schema::violations_with(schema, definitions, &object)
            };
            *judged.entry(format!("{api_version} {kind}")).or_insert(0) += 1;
            found.extend(
                violations
                    .into_iter()
                    .map(|violation| format!("{path}: {kind}: {violation}")),
            );
        }
    }
    (judged, found)
}

fn minors(plan: &tenantc::plan::Plan) -> std::collections::BTreeMap<String, u32> {
    plan.cells
        .iter()
        .map(|cell| (cell.name.clone(), cell.kubernetes.1))
        .collect()
}

#[test]
fn every_object_passes_the_schema_of_its_kind_for_its_cells_kubernetes_version() {
    let mut kinds = std::collections::BTreeSet::new();
    for (shape, compilation) in property_fleets() {
        let tree = compilation.output.as_ref().unwrap();
        let minors = minors(compilation.plan.as_ref().unwrap());
        let (judged, found) = schema_violations(tree, &minors);
        assert!(found.is_empty(), "{shape:?}:\n{}", found.join("\n"));
        assert!(
            judged.values().sum::<usize>() > 100,
            "{shape:?}: {judged:?}"
        );
        kinds.extend(judged.into_keys());
    }
    // Both sides of the judge are exercised: built-in kinds and CRD kinds, on both minors.
    for kind in [
        "v1 Namespace",
        "v1 ResourceQuota",
        "networking.k8s.io/v1 NetworkPolicy",
        "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy",
        "rbac.authorization.k8s.io/v1 ClusterRole",
        "kueue.x-k8s.io/v1beta2 ClusterQueue",
        "argoproj.io/v1alpha1 ApplicationSet",
        "kustomize.toolkit.fluxcd.io/v1 Kustomization",
    ] {
        assert!(kinds.contains(kind), "no {kind} judged: {kinds:?}");
    }
    let versions: std::collections::BTreeSet<u32> = property_fleets()
        .iter()
        .flat_map(|(_, compilation)| minors(compilation.plan.as_ref().unwrap()).into_values())
        .collect();
    assert!(versions.len() >= 2, "{versions:?}");
}

#[test]
fn the_schema_property_fails_on_a_corrupted_object() {
    let (shape, compilation) = &property_fleets()[0];
    let tree = compilation.output.as_ref().unwrap();
    let minors = minors(compilation.plan.as_ref().unwrap());
    // One corruption per side of the judge, each in the first file it applies to: a misspelt
    // key in a built-in kind, a value of the wrong type in a CRD kind and in a built-in kind
    // reached through a reference, and a kind nothing serves.
    let corruptions: [(&str, &str, &str, &str); 4] = [
        (
            "networkpolicy-default-deny.yaml",
            "  podSelector: {}",
            "  podSelektor: {}",
            "NetworkPolicy: spec: key `podSelektor` is not in the schema",
        ),
        (
            "clusterqueue.yaml",
            "borrowingLimit: \"0\"",
            "borrowingLimit: true",
            "].borrowingLimit: a boolean where the schema wants an integer or a string",
        ),
        (
            "namespace.yaml",
            "kind: Namespace\n",
            "kind: Namespace\nstatus:\n  phase: 3\n",
            "Namespace: status.phase: an integer where the schema wants a string",
        ),
        (
            "limitrange.yaml",
            "kind: LimitRange",
            "kind: LimitRnage",
            "v1 LimitRnage: Kubernetes 1.",
        ),
    ];
    for (file, from, to, expected) in corruptions {
        let mut corrupted = tree.clone();
        let (path, bytes) = corrupted
            .iter_mut()
            .find(|(path, bytes)| {
                path.ends_with(file) && std::str::from_utf8(bytes).unwrap().contains(from)
            })
            .unwrap_or_else(|| panic!("{shape:?}: no {file} holds {from:?}"));
        let text = std::str::from_utf8(bytes).unwrap().replacen(from, to, 1);
        *bytes = text.into_bytes();
        let path = path.clone();
        let (_, found) = schema_violations(&corrupted, &minors);
        assert!(
            found
                .iter()
                .all(|line| line.starts_with(&format!("{path}: ")))
                && found.iter().any(|line| line.contains(expected)),
            "{path}: {from:?} -> {to:?} should give {expected:?}, gave {found:#?}"
        );
    }
}
