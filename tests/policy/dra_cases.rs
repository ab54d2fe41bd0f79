//! The objects of the DRA floor's tests, shared by `tests/dra_policy.rs` (the in-process
//! evaluator) and `tests/conformance/dra.rs` (the real API server): the variant of the frozen
//! fixture fleet whose one edit is `devices "dra"` (on Kubernetes 1.34) in cell `us-east-1a`, the
//! admitted objects of that cell (its admitted fixtures, each GPU pod or workload made a DRA one
//! by one stated change, and the ResourceClaims and ResourceClaimTemplates of
//! `tests/policy/dra/us-east-1a/`), and the denied cases made from them, each trying one bypass
//! as an attacker would and naming the one validation that must deny it.
//!
//! Invariant: every denied case differs from an admitted object by one mutation, so the one
//! validation it names is the only reason it is denied.

#![allow(dead_code)] // Each including test binary uses a different part.

use std::fs;
use std::path::Path;

use serde_json::{Value as Json, json};

use crate::policy_cases::{admitted_fixtures, pod_spec};

/// The cell the variant runs with DRA.
pub const CELL: &str = "us-east-1a";

/// The DeviceClass of the cell's whole H100s, which only acme-research reserves (its own pool).
pub const WHOLE_H100: &str = "gpu-h100-80gb-sxm";

/// Writes the variant into `root`: the frozen fleet with its one edit, `devices "dra"` in cell
/// `us-east-1a`, which moves to Kubernetes 1.34 (the first with `resource.k8s.io/v1`).
pub fn write_variant(root: &Path) {
    crate::support::copy_fleet(root);
    let path = root.join("cells/us-east-1a.kdl");
    let text = fs::read_to_string(&path).unwrap();
    let edited = text.replacen(
        "    kubernetes \"1.33\"\n",
        "    kubernetes \"1.34\"\n    devices \"dra\"\n",
        1,
    );
    assert_ne!(edited, text, "the edit applies");
    fs::write(&path, edited).unwrap();
}

/// The DeviceClass of the cell that stands for a device plugin resource (every GPU of the cell
/// is an H100).
fn class_of(resource: &str) -> String {
    match resource.strip_prefix("nvidia.com/mig-") {
        Some(profile) => format!("mig-{profile}-h100-80gb-sxm"),
        None => {
            assert_eq!(resource, "nvidia.com/gpu", "a GPU resource of the cell");
            WHOLE_H100.to_string()
        }
    }
}

/// An admitted fixture of the device plugin cell made a DRA one: each container's `nvidia.com/`
/// resources become a claim from the namespace's template of their class (the one tenantc
/// emits, named after the class), named in `spec.resourceClaims` and the container's
/// `resources.claims`. Objects without GPU resources are unchanged.
pub fn dra_pod(mut object: Json) -> Json {
    if object["kind"] == "PersistentVolumeClaim" {
        return object;
    }
    let spec = pod_spec(&mut object);
    let mut claims: Vec<Json> = Vec::new();
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Json::as_array_mut) else {
            continue;
        };
        for container in containers {
            let mut classes: Vec<String> = Vec::new();
            for part in ["limits", "requests"] {
                // `get_mut`, not indexing, which would write a null `resources` into every
                // container that has none.
                if let Some(map) = container
                    .get_mut("resources")
                    .and_then(|resources| resources.get_mut(part))
                    .and_then(Json::as_object_mut)
                {
                    let gpu: Vec<String> = map
                        .keys()
                        .filter(|key| key.starts_with("nvidia.com/"))
                        .cloned()
                        .collect();
                    for key in gpu {
                        map.remove(&key);
                        let class = class_of(&key);
                        if !classes.contains(&class) {
                            classes.push(class);
                        }
                    }
                }
            }
            for class in classes {
                let name = format!("claim-{}", claims.len());
                container["resources"]["claims"] = json!([{"name": name}]);
                claims.push(json!({"name": name, "resourceClaimTemplateName": class}));
            }
        }
    }
    if !claims.is_empty() {
        spec["resourceClaims"] = Json::Array(claims);
    }
    object
}

/// Every admitted object of the DRA cell: `(name, object)`.
pub fn admitted() -> Vec<(String, Json)> {
    let mut objects: Vec<(String, Json)> = admitted_fixtures()
        .into_iter()
        .filter(|(cell, _, _)| cell == CELL)
        .map(|(_, path, object)| {
            (
                path.file_name().unwrap().to_string_lossy().to_string(),
                dra_pod(object),
            )
        })
        .collect();
    objects.extend(crate::policy_cases::objects_in(
        &crate::support::repo().join("tests/policy/dra").join(CELL),
    ));
    objects
}

pub fn fixture(name: &str) -> Json {
    admitted()
        .into_iter()
        .find(|(file, _)| file == &format!("{name}.yaml"))
        .unwrap_or_else(|| panic!("no fixture {name}"))
        .1
}

/// The device requests of a claim or of the claim a template stamps out.
pub fn requests(object: &mut Json) -> &mut Json {
    if object["kind"] == "ResourceClaimTemplate" {
        &mut object["spec"]["spec"]["devices"]["requests"]
    } else {
        &mut object["spec"]["devices"]["requests"]
    }
}

/// A denied case: the fixture it mutates, the mutation (an attacker's), and the one validation
/// that must deny it; `earlier` when the API server refuses the request before admission
/// policies run (its own validation), so only the refusal, not the message, can be compared.
pub struct Case {
    pub name: &'static str,
    pub fixture: &'static str,
    pub mutate: fn(&mut Json),
    pub rule: &'static str,
    pub earlier: bool,
}

pub fn cases() -> Vec<Case> {
    let case = |name, fixture, mutate, rule| Case {
        name,
        fixture,
        mutate,
        rule,
        earlier: false,
    };
    vec![
        case(
            "a claim template for another tenant's whole GPUs",
            "acme-serving-template",
            |o| requests(o)[0]["exactly"]["deviceClassName"] = json!(WHOLE_H100),
            "device-claim-classes",
        ),
        case(
            "a claim for another tenant's whole GPUs",
            "globex-vision-claim",
            |o| requests(o)[0]["exactly"]["deviceClassName"] = json!(WHOLE_H100),
            "device-claim-classes",
        ),
        case(
            "a claim for a profile only the tenant's other namespace reserves",
            "acme-serving-claim",
            |o| {
                requests(o)[0]["firstAvailable"][0]["deviceClassName"] =
                    json!("mig-2g.20gb-h100-80gb-sxm")
            },
            "device-claim-classes",
        ),
        case(
            "a claim whose fallback is another tenant's whole GPUs",
            "acme-serving-claim",
            |o| requests(o)[0]["firstAvailable"][1]["deviceClassName"] = json!(WHOLE_H100),
            "device-claim-classes",
        ),
        case(
            "a claim template for the driver's own class, which selects every GPU",
            "acme-research-template",
            |o| requests(o)[0]["exactly"]["deviceClassName"] = json!("gpu.nvidia.com"),
            "device-claim-classes",
        ),
        case(
            "a claim for the driver's own class of every MIG device",
            "globex-vision-claim",
            |o| requests(o)[0]["exactly"]["deviceClassName"] = json!("mig.nvidia.com"),
            "device-claim-classes",
        ),
        case(
            "a claim template for a class the cell does not have",
            "acme-research-template",
            |o| requests(o)[0]["exactly"]["deviceClassName"] = json!("gpu-a100-80gb-sxm"),
            "device-claim-classes",
        ),
        case(
            "a second request for another tenant's devices beside an own one",
            "acme-serving-template",
            |o| {
                requests(o).as_array_mut().unwrap().push(json!({
                    "name": "more",
                    "exactly": {"deviceClassName": WHOLE_H100}
                }))
            },
            "device-claim-classes",
        ),
        case(
            "a claim in a namespace that reserves no devices",
            "globex-vision-claim",
            |o| o["metadata"]["namespace"] = json!("globex-vision-train"),
            "device-claim-classes",
        ),
        Case {
            name: "a claim asking for admin access to devices other claims hold",
            fixture: "globex-vision-claim",
            mutate: |o| requests(o)[0]["exactly"]["adminAccess"] = json!(true),
            rule: "device-claim-admin-access",
            // The API server refuses admin access in a namespace without the
            // `resource.kubernetes.io/admin-access` label in its own validation first.
            earlier: true,
        },
        case(
            "a DRA pod tolerating the taint of another tenant's pool",
            "acme-serving-pod.yaml",
            |o| {
                pod_spec(o)["tolerations"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"key": "train-exclusive", "operator": "Equal", "value": "true", "effect": "NoSchedule"}))
            },
            "pool-tolerations",
        ),
        case(
            "a DRA pod without a runtime class",
            "globex-vision-pod.yaml",
            |o| {
                pod_spec(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("runtimeClassName");
            },
            "runtime-class",
        ),
    ]
}

/// The object of a case: the fixture with the attacker's change.
pub fn object(case: &Case) -> Json {
    let name = case.fixture.trim_end_matches(".yaml");
    let mut object = fixture(name);
    (case.mutate)(&mut object);
    object
}
