//! Immutable fields against replacement marks (issue 11, issue 10): the API server decides
//! which objects cannot be updated in place, and tenantc must mark exactly those for
//! replacement.
//!
//! Consumes: the control plane of the runner in `tests/conformance.rs`, the fixture fleet, and
//! a table of probes: one in-place change per candidate field of each kind tenantc emits with
//! such fields (immutable ones and mutable neighbours as controls).
//! Produces: the probes the API server refused, printed, and an assertion that the objects it
//! refused are exactly the probed objects that carry `argocd.argoproj.io/sync-options:
//! Force=true,Replace=true` and `kustomize.toolkit.fluxcd.io/force: enabled`.
//!
//! Invariants: every probe is a server-side dry-run of an update of an object that exists, so
//! nothing changes in the cluster; every marked object is probed; a refusal must name an
//! immutable field; [`NEVER_CHANGING`] lists the immutable fields tenantc leaves unmarked, with
//! the reason, and each of them must still be refused, so the list cannot go stale.

use super::*;

/// The replacement annotations tenantc puts on an object with immutable fields.
const ARGOCD_SYNC_OPTIONS: &str = "argocd.argoproj.io/sync-options";
const FLUX_FORCE: &str = "kustomize.toolkit.fluxcd.io/force";

/// Immutable fields that tenantc does not mark, because their value is derived from the
/// object's own identity and can never change while the object exists: a LocalQueue's
/// `clusterQueue` is its tenant's ClusterQueue, named after the tenant, as is its namespace.
/// Recreating a LocalQueue would drop its pending workloads.
const NEVER_CHANGING: &[(&str, &str)] = &[("LocalQueue", "/spec/clusterQueue")];

/// One in-place change: the kind it applies to, the field, and the change.
struct Probe {
    kind: &'static str,
    field: &'static str,
    /// Whether the probe applies to this object (for example only topology flavors).
    applies: fn(&Value) -> bool,
    change: fn(&mut Value),
}

fn always(_: &Value) -> bool {
    true
}

fn has_topology(object: &Value) -> bool {
    object.pointer("/spec/topologyName").is_some()
}

fn no_topology(object: &Value) -> bool {
    !has_topology(object)
}

/// Sets the field at a JSON pointer (`~1` is a `/` in a key), creating missing mappings on
/// the way.
fn set(object: &mut Value, pointer: &str, value: Value) {
    let mut node = object;
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|key| key.replace("~1", "/").replace("~0", "~"))
        .collect();
    let (last, parents) = keys.split_last().unwrap();
    for key in parents {
        if node.get(key.as_str()).is_none() {
            node[key.as_str()] = json!({});
        }
        node = &mut node[key.as_str()];
    }
    node[last.as_str()] = value;
}

/// The probes: every field of the kinds tenantc emits that Kubernetes or a CRD declares
/// immutable, and mutable fields of the same kinds as controls.
const PROBES: &[Probe] = &[
    Probe {
        kind: "PriorityClass",
        field: "value",
        applies: always,
        change: |object| object["value"] = json!(object["value"].as_i64().unwrap() + 1),
    },
    Probe {
        kind: "PriorityClass",
        field: "preemptionPolicy",
        applies: always,
        change: |object| object["preemptionPolicy"] = json!("PreemptLowerPriority"),
    },
    Probe {
        kind: "RuntimeClass",
        field: "handler",
        applies: always,
        change: |object| object["handler"] = json!("conformance-other-handler"),
    },
    Probe {
        kind: "ResourceFlavor",
        field: "spec.nodeLabels (topology flavor)",
        applies: has_topology,
        change: |object| {
            set(
                object,
                "/spec/nodeLabels/conformance.example.com~1probe",
                json!("x"),
            )
        },
    },
    Probe {
        kind: "ResourceFlavor",
        field: "spec.topologyName",
        applies: has_topology,
        change: |object| {
            set(
                object,
                "/spec/topologyName",
                json!("conformance-other-topology"),
            )
        },
    },
    Probe {
        kind: "Topology",
        field: "spec.levels",
        applies: always,
        change: |object| {
            let levels = object["spec"]["levels"].as_array_mut().unwrap();
            levels.insert(0, json!({"nodeLabel": "conformance.example.com/zone"}));
        },
    },
    Probe {
        kind: "LocalQueue",
        field: "spec.clusterQueue",
        applies: always,
        change: |object| {
            set(
                object,
                "/spec/clusterQueue",
                json!("conformance-other-queue"),
            )
        },
    },
    // Controls: mutable fields of the same kinds, which must update in place.
    Probe {
        kind: "PriorityClass",
        field: "description (control)",
        applies: always,
        change: |object| object["description"] = json!("conformance probe"),
    },
    Probe {
        kind: "RuntimeClass",
        field: "scheduling.nodeSelector (control)",
        applies: always,
        change: |object| {
            set(
                object,
                "/scheduling/nodeSelector/conformance.example.com~1probe",
                json!("x"),
            )
        },
    },
    Probe {
        kind: "ResourceFlavor",
        field: "spec.nodeLabels (control: no topology)",
        applies: no_topology,
        change: |object| {
            set(
                object,
                "/spec/nodeLabels/conformance.example.com~1probe",
                json!("x"),
            )
        },
    },
    Probe {
        kind: "ClusterQueue",
        field: "spec.cohortName (control)",
        applies: always,
        change: |object| {
            set(
                object,
                "/spec/cohortName",
                json!("conformance-other-cohort"),
            )
        },
    },
];

fn marked(object: &Object) -> bool {
    let annotations = &object.json["metadata"]["annotations"];
    annotations[ARGOCD_SYNC_OPTIONS] == "Force=true,Replace=true"
        && annotations[FLUX_FORCE] == "enabled"
}

/// The fixture fleet's objects are applied; then every probe is sent as a server-side dry-run
/// update, and the refused objects must be exactly the marked ones (plus [`NEVER_CHANGING`]).
pub fn immutable_fields_are_exactly_the_ones_marked_for_replacement(cluster: &Cluster) {
    install_crds(cluster);
    let tree = fleet_tree();
    apply_all_accepted(cluster, "the fixture fleet", &tree);
    let objects = objects_of(&tree);
    let mut probed_ids = BTreeSet::new();
    let mut refused_ids = BTreeSet::new();
    let mut exempt_refused = BTreeSet::new();
    let mut exempt_probed = BTreeSet::new();
    let mut lines = Vec::new();
    for probe in PROBES {
        for object in objects.iter().filter(|object| object.kind == probe.kind) {
            // The typed JSON of the object, with numbers as numbers (the tree reads scalars as
            // strings), without the server-set fields.
            let mut json = yaml_documents_typed(&object.text)
                .unwrap_or_else(|error| panic!("{}: {error}", object.path))
                .remove(0);
            if !(probe.applies)(&json) {
                continue;
            }
            (probe.change)(&mut json);
            let text = serde_json::to_string(&json).unwrap();
            let changed = object_from(&object.path, &object.json, &text);
            let refusals = apply_batch(cluster, &[&changed], true);
            let exempt = NEVER_CHANGING.iter().any(|(kind, _)| *kind == probe.kind);
            probed_ids.insert(object.id());
            if exempt {
                exempt_probed.insert(object.id());
            }
            if let Some(message) = refusals.get(&object.id()) {
                assert!(
                    message.contains("immutable") || message.contains("may not be changed"),
                    "{} {}: a refusal that is not about an immutable field: {message}",
                    object.id(),
                    probe.field
                );
                lines.push(format!("  refused  {} {}", object.id(), probe.field));
                if exempt {
                    exempt_refused.insert(object.id());
                } else {
                    refused_ids.insert(object.id());
                }
            } else {
                lines.push(format!("  in place {} {}", object.id(), probe.field));
            }
        }
    }
    lines.sort();
    lines.dedup();
    println!("{}", lines.join("\n"));
    let marked_ids: BTreeSet<String> = objects
        .iter()
        .filter(|object| marked(object))
        .map(Object::id)
        .collect();
    let unprobed: Vec<&String> = marked_ids.difference(&probed_ids).collect();
    assert!(
        unprobed.is_empty(),
        "objects marked for replacement that no probe changes: {unprobed:?}"
    );
    assert_eq!(
        refused_ids, marked_ids,
        "the objects the API server refuses to update in place differ from those tenantc marks for replacement"
    );
    assert_eq!(
        exempt_refused, exempt_probed,
        "an immutable field of NEVER_CHANGING was updated in place: the list is stale"
    );
    assert!(
        !exempt_probed.is_empty(),
        "the fixture fleet has no LocalQueue to probe"
    );
    let kinds: BTreeSet<&str> = objects
        .iter()
        .filter(|object| marked(object))
        .map(|object| object.kind.as_str())
        .collect();
    println!(
        "  {} objects refused in place, all marked for replacement; marked kinds: {}",
        refused_ids.len(),
        kinds.into_iter().collect::<Vec<_>>().join(", ")
    );
}
