//! The objects of the Volcano floor's tests, shared by `tests/volcano_policy.rs` (the in-process
//! evaluator) and `tests/conformance/volcano.rs` (the real API server): the variant of the frozen
//! fixture fleet whose one edit is `scheduler "volcano"` in cell `eu-west-4b`, the admitted
//! objects of that cell (the Kueue cell's admitted pod fixtures made Volcano's by one stated
//! change, and the PodGroups of `tests/policy/volcano/eu-west-4b/`), and the denied cases made
//! from them, each trying one bypass as an attacker would and naming the one validation that
//! must deny it.
//!
//! Invariant: every denied case differs from an admitted object by one mutation, so the one
//! validation it names is the only reason it is denied.

#![allow(dead_code)] // Each including test binary uses a different part.

use std::fs;
use std::path::Path;

use serde_json::{Value as Json, json};

use crate::policy_cases::{admitted_fixtures, pod_annotations, pod_spec, pod_template};

/// The cell the variant runs on Volcano.
pub const CELL: &str = "eu-west-4b";

/// Writes the variant into `root`: the frozen fleet with its one edit, `scheduler "volcano"` in
/// cell `eu-west-4b`.
pub fn write_variant(root: &Path) {
    crate::support::copy_fleet(root);
    let path = root.join("cells/eu-west-4b.kdl");
    let text = fs::read_to_string(&path).unwrap();
    let edited = text.replacen(
        "    kubernetes \"1.34\"\n",
        "    kubernetes \"1.34\"\n    scheduler \"volcano\"\n",
        1,
    );
    assert_ne!(edited, text, "the edit applies");
    fs::write(&path, edited).unwrap();
}

/// A pod fixture of the Kueue cell made a Volcano pod: no `kueue.x-k8s.io/` labels, on the pod
/// template or the workload, `schedulerName: volcano` and the tenant's queue annotation.
pub fn volcano_pod(mut object: Json) -> Json {
    let tenant = object["metadata"]["namespace"]
        .as_str()
        .unwrap()
        .rsplit_once('-')
        .unwrap()
        .0
        .to_string();
    let strip = |labels: &mut Json| {
        if let Some(map) = labels.as_object_mut() {
            map.retain(|key, _| !key.starts_with("kueue.x-k8s.io/"));
        }
    };
    strip(&mut object["metadata"]["labels"]);
    strip(&mut pod_template(&mut object)["metadata"]["labels"]);
    pod_spec(&mut object)["schedulerName"] = json!("volcano");
    pod_annotations(&mut object)["scheduling.volcano.sh/queue-name"] =
        json!(format!("tenant-{tenant}"));
    object
}

/// Every admitted object of the Volcano cell: `(name, object)`.
pub fn admitted() -> Vec<(String, Json)> {
    let mut objects: Vec<(String, Json)> = admitted_fixtures()
        .into_iter()
        .filter(|(cell, _, object)| cell == CELL && object["kind"] != "PersistentVolumeClaim")
        .map(|(_, path, object)| {
            (
                path.file_name().unwrap().to_string_lossy().to_string(),
                volcano_pod(object),
            )
        })
        .collect();
    objects.extend(crate::policy_cases::objects_in(
        &crate::support::repo()
            .join("tests/policy/volcano")
            .join(CELL),
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

/// A denied case: the fixture it mutates, the mutation (an attacker's), the request's
/// principal and operation, and the one validation that must deny it.
pub struct Case {
    pub name: &'static str,
    pub fixture: &'static str,
    pub mutate: fn(&mut Json),
    /// An UPDATE from the fixture as it is, when set; else a CREATE.
    pub update: bool,
    pub rule: &'static str,
}

pub fn cases() -> Vec<Case> {
    let case = |name, fixture, mutate, rule| Case {
        name,
        fixture,
        mutate,
        update: false,
        rule,
    };
    vec![
        case(
            "a GPU pod naming another tenant's queue",
            "globex-vision-pod",
            |o| {
                pod_annotations(o)["scheduling.volcano.sh/queue-name"] =
                    json!("tenant-acme-research")
            },
            "volcano-queue",
        ),
        case(
            "a GPU pod naming Volcano's default queue",
            "globex-vision-pod",
            |o| pod_annotations(o)["scheduling.volcano.sh/queue-name"] = json!("default"),
            "volcano-queue",
        ),
        case(
            "a GPU pod naming its org's parent queue",
            "globex-vision-pod",
            |o| pod_annotations(o)["scheduling.volcano.sh/queue-name"] = json!("org-globex"),
            "volcano-queue",
        ),
        case(
            "a GPU job naming no queue",
            "initech-notebooks-job",
            |o| {
                pod_annotations(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("scheduling.volcano.sh/queue-name");
            },
            "volcano-queue",
        ),
        // As the API server stores it: it defaults a missing `schedulerName` before admission.
        case(
            "a GPU pod on the default scheduler",
            "acme-research-pod",
            |o| pod_spec(o)["schedulerName"] = json!("default-scheduler"),
            "volcano-scheduler",
        ),
        case(
            "a GPU pod that names no scheduler",
            "acme-research-pod",
            |o| {
                pod_spec(o).as_object_mut().unwrap().remove("schedulerName");
            },
            "volcano-scheduler",
        ),
        case(
            "a GPU job on another scheduler",
            "globex-vision-job",
            |o| pod_spec(o)["schedulerName"] = json!("default-scheduler"),
            "volcano-scheduler",
        ),
        case(
            "a GPU pod tolerating the taint of another tenant's pool",
            "globex-vision-pod",
            |o| {
                pod_spec(o)["tolerations"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"key": "tenantc.io/pool", "operator": "Equal", "value": "a100-research", "effect": "NoSchedule"}));
            },
            "pool-tolerations",
        ),
        case(
            "a GPU pod tolerating every taint",
            "initech-notebooks-pod",
            |o| {
                pod_spec(o)["tolerations"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"operator": "Exists"}));
            },
            "pool-tolerations",
        ),
        case(
            "a GPU pod that keeps its burst from reclaim",
            "globex-vision-pod",
            |o| pod_annotations(o)["volcano.sh/preemptable"] = json!("false"),
            "volcano-annotations",
        ),
        case(
            "a GPU pod labelled non-preemptable",
            "acme-research-pod",
            |o| o["metadata"]["labels"]["volcano.sh/preemptable"] = json!("false"),
            "volcano-annotations",
        ),
        case(
            "a job whose own annotation its pods' PodGroups inherit",
            "acme-research-job",
            |o| {
                o["metadata"]["annotations"] = json!({"volcano.sh/jdb-min-available": "100%"});
            },
            "volcano-annotations",
        ),
        case(
            "a PodGroup in another tenant's queue",
            "globex-vision-podgroup",
            |o| o["spec"]["queue"] = json!("tenant-acme-research"),
            "podgroup-queue",
        ),
        case(
            "a PodGroup in Volcano's default queue",
            "acme-research-podgroup",
            |o| o["spec"]["queue"] = json!("default"),
            "podgroup-queue",
        ),
        case(
            "a PodGroup naming no queue",
            "acme-research-podgroup",
            |o| {
                o["spec"].as_object_mut().unwrap().remove("queue");
            },
            "podgroup-queue",
        ),
        case(
            "a PodGroup in its org's parent queue",
            "globex-vision-podgroup",
            |o| o["spec"]["queue"] = json!("org-globex"),
            "podgroup-queue",
        ),
        case(
            "a PodGroup with another namespace's priority",
            "globex-vision-podgroup",
            |o| o["spec"]["priorityClassName"] = json!("serving"),
            "podgroup-priority",
        ),
        case(
            "a PodGroup with a system priority",
            "acme-research-podgroup",
            |o| o["spec"]["priorityClassName"] = json!("system-node-critical"),
            "podgroup-priority",
        ),
        case(
            "a PodGroup exempt from reclaim",
            "acme-research-podgroup",
            |o| o["metadata"]["annotations"] = json!({"volcano.sh/preemptable": "false"}),
            "podgroup-annotations",
        ),
        case(
            "a PodGroup created already admitted to its queue",
            "acme-research-podgroup",
            |o| o["status"] = json!({"phase": "Inqueue"}),
            "podgroup-status",
        ),
        case(
            "a PodGroup created already running",
            "initech-notebooks-podgroup",
            |o| o["status"] = json!({"phase": "Pending", "running": 4}),
            "podgroup-status",
        ),
        Case {
            name: "a member moving its PodGroup to Inqueue",
            fixture: "initech-notebooks-podgroup",
            mutate: |o| o["status"] = json!({"phase": "Inqueue"}),
            update: true,
            rule: "podgroup-status",
        },
        Case {
            name: "a member moving its PodGroup to another tenant's queue",
            fixture: "initech-notebooks-podgroup",
            mutate: |o| o["spec"]["queue"] = json!("tenant-globex-vision"),
            update: true,
            rule: "podgroup-queue",
        },
    ]
}

/// The objects of a case: the object before the change (for an UPDATE) and the one written.
pub fn objects(case: &Case) -> (Option<Json>, Json) {
    let before = fixture(case.fixture);
    let mut after = before.clone();
    (case.mutate)(&mut after);
    (case.update.then_some(before), after)
}
