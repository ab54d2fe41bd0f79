//! The objects of the policy tests, shared by `tests/policy.rs` (the in-process evaluator) and
//! `tests/conformance/admission.rs` (the real API server): the admitted fixtures under
//! `tests/policy/admitted/<cell>/`, and denied cases made from them, each naming the one
//! validation of the tenant admission floor that must deny it.
//!
//! Consumes: the fixture files, which name the tenants, namespaces and digests of the frozen
//! fixture fleet (`tests/fixtures/fleet/`), never of the example fleet. Produces: objects as JSON.
//! Invariant: every denied case differs from an admitted fixture by one mutation, so the one
//! validation it names is the only reason it is denied.

#![allow(dead_code)] // Each including test binary uses a different part.

use std::fs;
use std::path::PathBuf;

use serde_json::{Value as Json, json};
use tenantc::policy;

/// Every admitted fixture: `(cell, path, object)`.
pub fn admitted_fixtures() -> Vec<(String, PathBuf, Json)> {
    let mut fixtures = Vec::new();
    let root = crate::support::repo().join("tests/policy/admitted");
    let mut cells: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cells.sort();
    for cell_dir in cells {
        let cell = cell_dir.file_name().unwrap().to_string_lossy().to_string();
        let mut files: Vec<_> = fs::read_dir(&cell_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            let object = policy::object_from_yaml(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            fixtures.push((cell.clone(), file, object));
        }
    }
    fixtures
}

/// Every object of the YAML files in `dir`, by file name, in name order.
pub fn objects_in(dir: &std::path::Path) -> Vec<(String, Json)> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let text = fs::read_to_string(&file).unwrap();
            let object = policy::object_from_yaml(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            (
                file.file_name().unwrap().to_string_lossy().to_string(),
                object,
            )
        })
        .collect()
}

/// The namespace of an object.
pub fn namespace_of(object: &Json) -> String {
    object["metadata"]["namespace"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The pod spec of a Pod or of a workload's template.
pub fn pod_spec(object: &mut Json) -> &mut Json {
    &mut pod_template(object)["spec"]
}

/// The Pod itself, or a workload's pod template (a CronJob's at
/// `spec.jobTemplate.spec.template`).
pub fn pod_template(object: &mut Json) -> &mut Json {
    if object["kind"] == "Pod" {
        object
    } else if object["kind"] == "CronJob" {
        &mut object["spec"]["jobTemplate"]["spec"]["template"]
    } else {
        &mut object["spec"]["template"]
    }
}

/// The labels Kueue reads to queue a workload: those of the object itself, or, for a
/// CronJob, those of its Job template (which become the labels of every Job it creates);
/// created when absent.
pub fn workload_labels(object: &mut Json) -> &mut Json {
    let meta = if object["kind"] == "CronJob" {
        &mut object["spec"]["jobTemplate"]["metadata"]
    } else {
        &mut object["metadata"]
    };
    if meta.get("labels").is_none() {
        meta["labels"] = json!({});
    }
    &mut meta["labels"]
}

/// The labels of a Pod or of a workload's pod template.
pub fn pod_labels(object: &mut Json) -> &mut Json {
    &mut pod_template(object)["metadata"]["labels"]
}

/// The annotations of a Pod or of a workload's pod template, created when absent.
pub fn pod_annotations(object: &mut Json) -> &mut Json {
    let meta = &mut pod_template(object)["metadata"];
    if meta.get("annotations").is_none() {
        meta["annotations"] = json!({});
    }
    &mut meta["annotations"]
}

/// The names of the validations (of `rules`, the judging policy's) that denied, in order.
pub fn denied_rules(
    outcome: &policy::Outcome,
    rules: &[tenantc::lower::admission::Rule],
) -> Vec<&'static str> {
    match outcome {
        policy::Outcome::Denied(denials) => denials
            .iter()
            .map(|denial| {
                denial
                    .validation
                    .and_then(|idx| rules.get(idx))
                    .map_or("(no validation)", |rule| rule.name)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The weight digest that `tests/policy.rs` pins in every tenant's params, as signed weights
/// (issue 9) will; the emitted params pin none yet, so there every pod that loads weights is
/// denied by `weight-digest` first.
pub const PINNED_WEIGHTS: &str =
    "sha256:5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed";

/// An image digest.
pub const DIGEST: &str = "sha256:3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f";

/// A denied case: a name, the cell, the fixture it mutates, the mutation, and the validation
/// that must deny it.
pub struct Case {
    pub name: &'static str,
    pub cell: &'static str,
    pub fixture: &'static str,
    pub mutate: fn(&mut Json),
    pub rule: &'static str,
}

/// Every denied case.
pub fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "a GPU pod without a runtime class",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "runtime-class",
            mutate: |o| {
                pod_spec(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("runtimeClassName");
            },
        },
        Case {
            name: "a soft tenant's runtime class on a hard tenant (a weaker trust class's runtime)",
            cell: "eu-west-4b",
            fixture: "acme-research-job",
            rule: "runtime-class",
            mutate: |o| pod_spec(o)["runtimeClassName"] = json!("kata-nvidia"),
        },
        Case {
            name: "a mig tenant naming the soft tenants' Kata runtime",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            rule: "runtime-class",
            mutate: |o| pod_spec(o)["runtimeClassName"] = json!("kata-nvidia"),
        },
        Case {
            name: "a toleration of another pool's taint",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "pool-tolerations",
            mutate: |o| {
                pod_spec(o)["tolerations"].as_array_mut().unwrap().push(json!({"key": "train-exclusive", "operator": "Equal", "value": "true", "effect": "NoSchedule"}))
            },
        },
        Case {
            name: "an Exists toleration of another pool's taint key",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "pool-tolerations",
            mutate: |o| {
                pod_spec(o)["tolerations"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"key": "train-exclusive", "operator": "Exists"}))
            },
        },
        Case {
            name: "a toleration of every taint",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "pool-tolerations",
            mutate: |o| {
                pod_spec(o)["tolerations"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"operator": "Exists"}))
            },
        },
        Case {
            name: "a GPU pod without a queue",
            cell: "us-east-1a",
            fixture: "globex-vision-pod",
            rule: "local-queue",
            mutate: |o| {
                pod_labels(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("kueue.x-k8s.io/queue-name");
            },
        },
        Case {
            name: "another tenant's queue name",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            rule: "local-queue",
            mutate: |o| pod_labels(o)["kueue.x-k8s.io/queue-name"] = json!("globex-vision"),
        },
        Case {
            name: "another namespace's priority class",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "priority-class",
            mutate: |o| pod_labels(o)["kueue.x-k8s.io/priority-class"] = json!("batch"),
        },
        Case {
            name: "NVIDIA_VISIBLE_DEVICES in env",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "nvidia-env",
            mutate: |o| {
                pod_spec(o)["containers"][0]["env"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}))
            },
        },
        Case {
            name: "NVIDIA_DRIVER_CAPABILITIES in an init container",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "nvidia-env",
            mutate: |o| {
                let c = pod_spec(o)["containers"][0].clone();
                let mut init = c;
                init["name"] = json!("init");
                init["env"] = json!([{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"}]);
                init.as_object_mut().unwrap().remove("resources");
                pod_spec(o)["initContainers"] = json!([init]);
            },
        },
        Case {
            name: "an envFrom prefix that forms NVIDIA_VISIBLE_DEVICES",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "nvidia-env-from",
            mutate: |o| {
                pod_spec(o)["containers"][0]["envFrom"]
                    .as_array_mut()
                    .unwrap()
                    .push(
                        json!({"prefix": "NVIDIA_", "configMapRef": {"name": "acme-serving-env"}}),
                    )
            },
        },
        Case {
            name: "hostNetwork on a mig tenant",
            cell: "us-east-1a",
            fixture: "globex-vision-job",
            rule: "host-namespaces",
            mutate: |o| pod_spec(o)["hostNetwork"] = json!(true),
        },
        Case {
            name: "hostNetwork on a hard tenant with host access, in its excepted namespace",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "host-namespaces",
            mutate: |o| pod_spec(o)["hostNetwork"] = json!(true),
        },
        Case {
            name: "a StatefulSet whose claim template makes claims without the tenant's prefix",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            rule: "own-references",
            mutate: |o| {
                o["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] = json!("index");
                pod_spec(o)["containers"][0]["volumeMounts"][0]["name"] = json!("index");
            },
        },
        Case {
            name: "a generic ephemeral volume in a namespace whose quota holds no claims",
            cell: "us-east-1a",
            fixture: "globex-vision-job",
            rule: "claim-quota",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "globex-vision-cache", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}))
            },
        },
        Case {
            name: "hostIPC on a soft tenant",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "host-namespaces",
            mutate: |o| pod_spec(o)["hostIPC"] = json!(true),
        },
        Case {
            name: "RDMA devices on a mig tenant",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            rule: "rdma-devices",
            mutate: |o| {
                pod_spec(o)["containers"][0]["resources"]["limits"]["rdma/hca_shared_devices_a"] =
                    json!(1)
            },
        },
        Case {
            name: "RDMA devices on a hard tenant's pod that does not select its own pool",
            cell: "us-east-1a",
            fixture: "acme-research-rdma-pod",
            rule: "host-pools",
            mutate: |o| {
                pod_spec(o).as_object_mut().unwrap().remove("nodeSelector");
            },
        },
        Case {
            name: "an exception's capability on a pod that selects only part of its pool's labels",
            cell: "us-east-1a",
            fixture: "acme-research-rdma-pod",
            rule: "host-pools",
            mutate: |o| {
                pod_spec(o)["nodeSelector"]
                    .as_object_mut()
                    .unwrap()
                    .remove("nvidia.com/device-plugin.config");
            },
        },
        Case {
            name: "an exception's capability on a pod that selects another tenant's pool",
            cell: "us-east-1a",
            fixture: "acme-research-rdma-pod",
            rule: "host-pools",
            mutate: |o| {
                pod_spec(o)["nodeSelector"] = json!({
                    "nvidia.com/device-plugin.config": "h100-infer",
                    "pool": "infer-mig",
                });
                let container = &mut pod_spec(o)["containers"][0];
                container["resources"]["limits"]
                    .as_object_mut()
                    .unwrap()
                    .remove("rdma/hca_shared_devices_a");
            },
        },
        Case {
            name: "a device resource no quota counts",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "counted-resources",
            mutate: |o| {
                pod_spec(o)["containers"][0]["resources"]["limits"]["intel.com/sriov_netdevice"] =
                    json!(1)
            },
        },
        Case {
            name: "a node's hugepages, which no quota counts",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "counted-resources",
            mutate: |o| {
                let resources = &mut pod_spec(o)["containers"][0]["resources"];
                resources["limits"]["hugepages-1Gi"] = json!("16Gi");
                resources["limits"]["memory"] = json!("17Gi");
                resources["requests"]["memory"] = json!("17Gi");
            },
        },
        Case {
            name: "an NVIDIA device resource no quota counts",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "counted-resources",
            mutate: |o| {
                pod_spec(o)["containers"][0]["resources"]["limits"]["nvidia.com/hostdev"] = json!(1)
            },
        },
        Case {
            name: "a MIG resource the cell's quotas do not list, in an init container's requests",
            cell: "eu-west-4b",
            fixture: "acme-research-job",
            rule: "counted-resources",
            mutate: |o| {
                let main = pod_spec(o)["containers"][0].clone();
                let mut init = main;
                init["name"] = json!("warmup");
                init["resources"] = json!({"requests": {"nvidia.com/mig-1g.10gb": 1}, "limits": {"nvidia.com/mig-1g.10gb": 1}});
                pod_spec(o)["initContainers"] = json!([init]);
            },
        },
        Case {
            name: "a member creates a pod that claims its admitted Job as controller, so that Kueue would not hold it",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "controller-references",
            mutate: |o| {
                o["metadata"]["ownerReferences"] = json!([{
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "acme-serving-admitted",
                    "uid": "6f1c2a57-5c1e-4d8e-9a51-3f0b6a2d7c10",
                    "controller": true,
                }]);
            },
        },
        Case {
            name: "a member creates a Job that claims its admitted JobSet as controller",
            cell: "eu-west-4b",
            fixture: "globex-vision-job",
            rule: "controller-references",
            mutate: |o| {
                o["metadata"]["ownerReferences"] = json!([{
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "globex-vision-admitted",
                    "uid": "0d8e5f3a-2b7c-4e11-8f60-9c4d1a7b2e35",
                    "controller": true,
                    "blockOwnerDeletion": true,
                }]);
            },
        },
        Case {
            name: "a grace period that outlasts Kueue's preemption by a year",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "grace-period",
            mutate: |o| pod_spec(o)["terminationGracePeriodSeconds"] = json!(31_536_000),
        },
        Case {
            name: "a Job template whose grace period exceeds the limit by a second",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "grace-period",
            mutate: |o| pod_spec(o)["terminationGracePeriodSeconds"] = json!(601),
        },
        Case {
            name: "a readiness probe that makes the kubelet scan another tenant's pod",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "probe-host",
            mutate: |o| {
                pod_spec(o)["containers"][0]["readinessProbe"] =
                    json!({"httpGet": {"host": "10.0.12.34", "path": "/", "port": 8080}})
            },
        },
        Case {
            name: "a preStop handler that makes the kubelet call the instance metadata server",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            rule: "probe-host",
            mutate: |o| pod_spec(o)["containers"][0]["lifecycle"] = json!({"preStop": {"httpGet": {"host": "169.254.169.254", "path": "/latest/meta-data/", "port": 80}}}),
        },
        Case {
            name: "a liveness probe on a TCP port of the node",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "probe-host",
            mutate: |o| {
                pod_spec(o)["containers"][0]["livenessProbe"] =
                    json!({"tcpSocket": {"host": "10.0.0.1", "port": 10250}})
            },
        },
        Case {
            name: "a ReplicaSet of GPU pods written by a member, which Kueue would not hold",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            rule: "gpu-replica-sets",
            mutate: |o| {
                o["kind"] = json!("ReplicaSet");
                let spec = o["spec"].as_object_mut().unwrap();
                spec.remove("serviceName");
                spec.remove("volumeClaimTemplates");
                // Without its claim templates, the mount of the StatefulSet's claim goes too.
                for container in pod_spec(o)["containers"].as_array_mut().unwrap() {
                    if let Some(mounts) = container["volumeMounts"].as_array_mut() {
                        mounts.retain(|mount| mount["name"] != "globex-vision-index");
                    }
                }
            },
        },
        Case {
            name: "another tenant's registry",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["containers"][0]["image"] =
                    json!(format!("registry.globex.example/vision/worker@{DIGEST}"))
            },
        },
        Case {
            name: "a registry that only starts like the tenant's",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["containers"][0]["image"] = json!(format!(
                    "registry.acme.internal/research-evil/worker@{DIGEST}"
                ))
            },
        },
        Case {
            name: "an image pinned by tag only",
            cell: "eu-west-4b",
            fixture: "globex-vision-job",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["containers"][0]["image"] =
                    json!("registry.globex.example/vision/worker:latest")
            },
        },
        Case {
            name: "weights without the digest annotation",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "weight-digest",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "weights", "persistentVolumeClaim": {"claimName": "acme-serving-weights", "readOnly": true}}))
            },
        },
        Case {
            name: "another tenant's weight digest",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "weight-digest",
            mutate: |o| {
                pod_annotations(o)["tenantc.io/weight-digest"] =
                    json!("sha256:0badbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbad")
            },
        },
        Case {
            name: "a writable weight volume",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "weight-volumes-read-only",
            mutate: |o| {
                pod_annotations(o)["tenantc.io/weight-digest"] = json!(PINNED_WEIGHTS);
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({
                    "name": "weights-llama",
                    "persistentVolumeClaim": {"claimName": "acme-research-weights", "readOnly": true},
                }));
                pod_spec(o)["containers"][0]["volumeMounts"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "weights-llama", "mountPath": "/weights"}))
            },
        },
        Case {
            name: "a pod that names another tenant's node",
            cell: "us-east-1a",
            fixture: "globex-vision-pod",
            rule: "node-name",
            mutate: |o| pod_spec(o)["nodeName"] = json!("h100-train-node-07"),
        },
        Case {
            name: "a Job whose template names a node",
            cell: "eu-west-4b",
            fixture: "acme-research-job",
            rule: "node-name",
            mutate: |o| pod_spec(o)["nodeName"] = json!("a100-train-node-01"),
        },
        Case {
            name: "a hostPath volume",
            cell: "eu-west-4b",
            fixture: "acme-research-job",
            rule: "host-path",
            mutate: |o| {
                pod_spec(o)["volumes"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "host", "hostPath": {"path": "/var/lib"}}))
            },
        },
        Case {
            name: "another tenant's PVC",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"][0]["persistentVolumeClaim"]["claimName"] =
                    json!("globex-vision-scratch")
            },
        },
        Case {
            name: "a Secret without the tenant prefix in env",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["containers"][0]["env"].as_array_mut().unwrap().push(json!({"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "platform-token", "key": "t"}}}))
            },
        },
        Case {
            name: "another tenant's Secret as a volume",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(
                    json!({"name": "creds", "secret": {"secretName": "acme-serving-credentials"}}),
                )
            },
        },
        Case {
            name: "a foreign pull secret",
            cell: "us-east-1a",
            fixture: "globex-vision-job",
            rule: "own-references",
            mutate: |o| pod_spec(o)["imagePullSecrets"] = json!([{"name": "acme-research-pull"}]),
        },
        Case {
            name: "a foreign Secret in a projected volume",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "p", "projected": {"sources": [{"secret": {"name": "globex-vision-ok"}}, {"secret": {"name": "acme-research-keys"}}]}}))
            },
        },
        Case {
            name: "the training ServiceAccount in an inference namespace",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "training-service-account",
            mutate: |o| pod_spec(o)["serviceAccountName"] = json!("finetuner"),
        },
        Case {
            name: "a missing tenant label",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "chargeback-labels",
            mutate: |o| {
                pod_labels(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("tenant.platform/tenant");
            },
        },
        Case {
            name: "another tenant's chargeback label",
            cell: "eu-west-4b",
            fixture: "globex-vision-job",
            rule: "chargeback-labels",
            mutate: |o| pod_labels(o)["tenant.platform/tenant"] = json!("acme-research"),
        },
        Case {
            name: "a GPU SKU the tenant does not use",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "chargeback-labels",
            mutate: |o| pod_labels(o)["tenant.platform/sku"] = json!("A100-80GB-SXM"),
        },
        Case {
            name: "a prompt label",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "forbidden-labels",
            mutate: |o| pod_labels(o)["example.com/Prompt"] = json!("hello"),
        },
        Case {
            name: "a user email label",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "forbidden-labels",
            mutate: |o| pod_labels(o)["user-email"] = json!("someone.example.com"),
        },
        // Hole 2: every runtime class of a cell hands GPUs to containers, so a pod that names
        // one must request a GPU, or an image's own NVIDIA_VISIBLE_DEVICES=all would expose
        // every GPU of the node outside every quota.
        Case {
            name: "a CPU pod naming the GPU runtime class",
            cell: "us-east-1a",
            fixture: "acme-research-cpu-pod",
            rule: "gpu-runtime-class",
            mutate: |o| pod_spec(o)["runtimeClassName"] = json!("nvidia"),
        },
        Case {
            name: "a Job that drops its GPU but keeps the Kata GPU runtime",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "gpu-runtime-class",
            mutate: |o| {
                pod_spec(o)["containers"][0]["resources"] = json!({"requests": {"cpu": "1"}});
                // Without a GPU it may not tolerate its pool either (`cpu-pool-tolerations`).
                pod_spec(o).as_object_mut().unwrap().remove("tolerations");
            },
        },
        // The sixth review: a soft tenant's CPU pod on the Kata pool ran on runc, beside the
        // tenants the Kata runtime isolates.
        Case {
            name: "a soft tenant's CPU pod that tolerates its Kata pool's taint without its runtime class",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "cpu-pool-tolerations",
            mutate: |o| {
                pod_spec(o)["containers"][0]["resources"] = json!({"requests": {"cpu": "1"}});
                pod_spec(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("runtimeClassName");
                pod_labels(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("tenant.platform/sku");
            },
        },
        Case {
            name: "a CPU pod of a hard tenant that tolerates its own exclusive pool",
            cell: "us-east-1a",
            fixture: "acme-research-cpu-pod",
            rule: "cpu-pool-tolerations",
            mutate: |o| {
                pod_spec(o)["tolerations"] =
                    json!([{"key": "train-exclusive", "operator": "Exists"}]);
            },
        },
        Case {
            name: "a CDI annotation that asks the runtime for every GPU",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "runtime-annotations",
            mutate: |o| {
                pod_annotations(o)["cdi.k8s.io/gpus"] = json!("nvidia.com/gpu=all");
            },
        },
        // The seventh review: the NVIDIA toolkit's NRI plugin reads its own CDI prefix.
        Case {
            name: "the NVIDIA toolkit's CDI annotation for every GPU of the node, on a Job template",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            rule: "runtime-annotations",
            mutate: |o| {
                pod_annotations(o)["nvidia.cdi.k8s.io/container.main"] =
                    json!("management.nvidia.com/gpu=all");
            },
        },
        Case {
            name: "a Kata sandbox setting that passes kernel parameters",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "runtime-annotations",
            mutate: |o| {
                pod_annotations(o)["io.katacontainers.config.hypervisor.kernel_params"] =
                    json!("iommu=off");
            },
        },
        // A zero GPU request is no GPU: it may not name a GPU runtime class.
        Case {
            name: "a pod that requests zero GPUs but names the GPU runtime class",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "gpu-runtime-class",
            mutate: |o| {
                pod_spec(o)["containers"][0]["resources"] =
                    json!({"limits": {"nvidia.com/mig-1g.10gb": "0"}});
                pod_spec(o).as_object_mut().unwrap().remove("tolerations");
            },
        },
        Case {
            name: "hugepages requested for the whole pod (pod-level resources)",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            rule: "counted-resources",
            mutate: |o| {
                pod_spec(o)["resources"] =
                    json!({"limits": {"hugepages-2Mi": "1Gi", "memory": "4Gi"}});
            },
        },
        // The attack review after the fix: a class the cell does not declare (the GPU
        // Operator's CDI mode installs `nvidia-cdi` and `nvidia-legacy` beside `nvidia`) got
        // past a rule that judged only the declared classes.
        Case {
            name: "a CPU pod naming a runtime class the cell does not declare",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            rule: "gpu-runtime-class",
            mutate: |o| {
                pod_spec(o)["runtimeClassName"] = json!("nvidia-legacy");
                pod_spec(o)["containers"][0]["resources"] = json!({"requests": {"cpu": "1"}});
                pod_spec(o).as_object_mut().unwrap().remove("tolerations");
            },
        },
        Case {
            name: "a CPU CronJob naming the GPU runtime class",
            cell: "us-east-1a",
            fixture: "acme-research-cronjob",
            rule: "gpu-runtime-class",
            mutate: |o| {
                pod_spec(o)["containers"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("resources");
                pod_spec(o).as_object_mut().unwrap().remove("tolerations");
            },
        },
        // Hole 3: Kueue reads the queue and priority labels of the workload object itself.
        Case {
            name: "a GPU Job with the queue label only on its template",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "local-queue",
            // With another label on the Job, the API server does not copy the template's
            // labels to it, and Kueue ignores the Job.
            mutate: |o| *workload_labels(o) = json!({"app": "demo"}),
        },
        Case {
            name: "a GPU Job whose own queue label names another tenant's queue",
            cell: "eu-west-4b",
            fixture: "globex-vision-job",
            rule: "local-queue",
            mutate: |o| workload_labels(o)["kueue.x-k8s.io/queue-name"] = json!("acme-research"),
        },
        Case {
            name: "a GPU CronJob whose Job template has labels but no queue label",
            cell: "us-east-1a",
            fixture: "acme-research-cronjob",
            rule: "local-queue",
            mutate: |o| *workload_labels(o) = json!({"app": "nightly"}),
        },
        Case {
            name: "a GPU StatefulSet with the queue label only on its template",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            rule: "local-queue",
            mutate: |o| {
                workload_labels(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("kueue.x-k8s.io/queue-name");
            },
        },
        Case {
            name: "another namespace's priority class on the Job itself",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            rule: "priority-class",
            mutate: |o| workload_labels(o)["kueue.x-k8s.io/priority-class"] = json!("batch"),
        },
        Case {
            name: "another namespace's priority class on a CronJob's Job template",
            cell: "us-east-1a",
            fixture: "acme-research-cronjob",
            rule: "priority-class",
            mutate: |o| workload_labels(o)["kueue.x-k8s.io/priority-class"] = json!("serving"),
        },
        // Hole 6: image volumes obey the image rules.
        Case {
            name: "an image volume from another tenant's registry",
            cell: "us-east-1a",
            fixture: "acme-research-cpu-pod",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["volumes"][0]["image"]["reference"] =
                    json!(format!("registry.globex.example/vision/vocab@{DIGEST}"))
            },
        },
        Case {
            name: "an image volume pinned by tag only",
            cell: "eu-west-4b",
            fixture: "globex-vision-job",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(
                    json!({"name": "vocab", "image": {"reference": "registry.globex.example/vision/vocab:latest"}}),
                )
            },
        },
        Case {
            name: "a CronJob with another tenant's image",
            cell: "us-east-1a",
            fixture: "acme-research-cronjob",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["containers"][0]["image"] =
                    json!(format!("registry.acme.internal/serving/worker@{DIGEST}"))
            },
        },
        // Hole 7: forbidden label keys match whatever their case, separators and prefix.
        Case {
            name: "a user_email label",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "forbidden-labels",
            mutate: |o| pod_labels(o)["user_email"] = json!("someone.example.com"),
        },
        Case {
            name: "a User.Email label",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "forbidden-labels",
            mutate: |o| pod_labels(o)["User.Email"] = json!("someone.example.com"),
        },
        Case {
            name: "a prefixed user-email label on the Job itself",
            cell: "eu-west-4b",
            fixture: "acme-research-job",
            rule: "forbidden-labels",
            mutate: |o| workload_labels(o)["example.com/user-email"] = json!("someone.example.com"),
        },
        Case {
            name: "a camel-case sessionId label",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "forbidden-labels",
            mutate: |o| pod_labels(o)["sessionId"] = json!("abc123"),
        },
        // Hole 8: references the floor did not see.
        Case {
            name: "a generic ephemeral volume that binds another tenant's PersistentVolume",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            rule: "claim-binding",
            mutate: |o| {
                pod_spec(o)["volumes"][0]["ephemeral"]["volumeClaimTemplate"]["spec"]["volumeName"] =
                    json!("acme-research-checkpoints")
            },
        },
        Case {
            name: "a generic ephemeral volume cloned from another tenant's claim",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "copy", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSource": {"kind": "PersistentVolumeClaim", "name": "platform-weights"}}}}}))
            },
        },
        Case {
            name: "a generic ephemeral volume restored from a foreign snapshot by dataSourceRef",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "copy", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "acme-serving-snap"}}}}}))
            },
        },
        Case {
            name: "a CSI volume whose node publish secret is another tenant's",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "bucket", "csi": {"driver": "s3.csi.example.com", "nodePublishSecretRef": {"name": "globex-vision-s3"}}}))
            },
        },
        Case {
            name: "a StatefulSet claim template that binds another tenant's PersistentVolume",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            rule: "claim-binding",
            mutate: |o| {
                o["spec"]["volumeClaimTemplates"][0]["spec"]["volumeName"] =
                    json!("acme-research-checkpoints")
            },
        },
        Case {
            name: "a StatefulSet claim template cloned from a claim without the tenant prefix",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            rule: "own-references",
            mutate: |o| {
                o["spec"]["volumeClaimTemplates"][0]["spec"]["dataSource"] =
                    json!({"kind": "PersistentVolumeClaim", "name": "shared-datasets"})
            },
        },
        Case {
            name: "NVIDIA_IMEX_CHANNELS in env",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "nvidia-env",
            mutate: |o| {
                pod_spec(o)["containers"][0]["env"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "NVIDIA_IMEX_CHANNELS", "value": "all"}))
            },
        },
        Case {
            name: "NVIDIA_MIG_CONFIG_DEVICES in env",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            rule: "nvidia-env",
            mutate: |o| {
                pod_spec(o)["containers"][0]["env"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"}))
            },
        },
        Case {
            name: "NVIDIA_MIG_MONITOR_DEVICES in a CronJob",
            cell: "us-east-1a",
            fixture: "acme-research-cronjob",
            rule: "nvidia-env",
            mutate: |o| {
                pod_spec(o)["containers"][0]["env"] =
                    json!([{"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"}])
            },
        },
        Case {
            name: "an envFrom prefix that forms NVIDIA_MIG_ variables",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "nvidia-env-from",
            mutate: |o| {
                pod_spec(o)["containers"][0]["envFrom"]
                    .as_array_mut()
                    .unwrap()
                    .push(
                        json!({"prefix": "NVIDIA_MIG_", "configMapRef": {"name": "acme-serving-env"}}),
                    )
            },
        },
        // Issue 8: PersistentVolumeClaims created directly, and claim templates, may not bind
        // a volume by name or label, or copy from another namespace. A PVC's own
        // `dataSourceRef.namespace` is tested in `tests/policy.rs` only: without the alpha
        // CrossNamespaceVolumeDataSource gate (the conformance control plane's default) the API
        // server drops the field before admission, so there is nothing to judge.
        Case {
            name: "a PVC that binds another tenant's released PersistentVolume by name",
            cell: "us-east-1a",
            fixture: "acme-research-pvc",
            rule: "claim-binding",
            mutate: |o| o["spec"]["volumeName"] = json!("pvc-4f1c2a9e-globex-vision-datasets"),
        },
        Case {
            name: "a PVC that selects another tenant's PersistentVolumes by label",
            cell: "us-east-1a",
            fixture: "acme-research-pvc",
            rule: "claim-binding",
            mutate: |o| {
                o["spec"]["selector"] =
                    json!({"matchLabels": {"tenant.platform/tenant": "globex-vision"}})
            },
        },
        Case {
            name: "a PVC that binds a PersistentVolume named with the tenant's own prefix",
            cell: "us-east-1a",
            fixture: "acme-research-pvc",
            rule: "claim-binding",
            mutate: |o| o["spec"]["volumeName"] = json!("acme-research-checkpoints-0"),
        },
        Case {
            name: "a PVC cloned from a claim without the tenant prefix",
            cell: "us-east-1a",
            fixture: "acme-research-pvc",
            rule: "own-references",
            mutate: |o| {
                o["spec"]["dataSource"] =
                    json!({"kind": "PersistentVolumeClaim", "name": "platform-datasets"})
            },
        },
        Case {
            name: "a StatefulSet claim template that selects PersistentVolumes by label",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            rule: "claim-binding",
            mutate: |o| {
                o["spec"]["volumeClaimTemplates"][0]["spec"]["selector"] =
                    json!({"matchLabels": {"tenant.platform/tenant": "acme-research"}})
            },
        },
        Case {
            name: "a generic ephemeral volume that selects PersistentVolumes by label",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "claim-binding",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "pick", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "selector": {"matchLabels": {"tenant.platform/tenant": "acme-serving"}}}}}}))
            },
        },
        Case {
            name: "a generic ephemeral volume with an empty storage class, which binds any classless PersistentVolume",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "claim-binding",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "pick", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "resources": {"requests": {"storage": "1Gi"}}}}}}))
            },
        },
        Case {
            name: "a PVC with an empty storage class",
            cell: "us-east-1a",
            fixture: "acme-research-pvc",
            rule: "claim-binding",
            mutate: |o| o["spec"]["storageClassName"] = json!(""),
        },
        Case {
            name: "a generic ephemeral volume restored from another namespace by dataSourceRef",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "claim-binding",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "copy", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "acme-research-snap", "namespace": "acme-serving-infer"}}}}}))
            },
        },
    ]
}

/// The admitted fixture `name` of `cell`.
pub fn fixture(name: &str, cell: &str) -> Json {
    let path = crate::support::repo().join(format!("tests/policy/admitted/{cell}/{name}.yaml"));
    policy::object_from_yaml(&fs::read_to_string(&path).unwrap()).unwrap()
}

/// The identity Kueue's controller runs as in a default installation: what releases a
/// workload once Kueue admits it.
pub const KUEUE: &str = "system:serviceaccount:kueue-system:kueue-controller-manager";

/// A denied update: a member of the tenant changes an object that Kueue holds (`before`,
/// made from the fixture and admitted) into `after` (made from the fixture too), and the
/// validation `rule` must deny it. Kueue itself may make the same change.
pub struct UpdateCase {
    pub name: &'static str,
    pub cell: &'static str,
    pub fixture: &'static str,
    pub before: fn(&mut Json),
    pub after: fn(&mut Json),
    pub rule: &'static str,
}

/// A pod as Kueue's pod webhook leaves it when it holds the pod: gated and labelled managed.
pub fn held_by_kueue(object: &mut Json) {
    pod_spec(object)["schedulingGates"] = json!([{"name": "kueue.x-k8s.io/admission"}]);
    pod_labels(object)["kueue.x-k8s.io/managed"] = json!("true");
}

/// Every denied update.
pub fn update_cases() -> Vec<UpdateCase> {
    vec![
        UpdateCase {
            name: "a member removes Kueue's admission gate from its GPU pod",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            before: held_by_kueue,
            after: |o| {
                held_by_kueue(o);
                pod_spec(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("schedulingGates");
            },
            rule: "kueue-hold",
        },
        UpdateCase {
            name: "a member removes the kueue.x-k8s.io/managed label, so that Kueue skips the pod",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            before: held_by_kueue,
            after: |o| {
                held_by_kueue(o);
                pod_labels(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("kueue.x-k8s.io/managed");
            },
            rule: "kueue-hold",
        },
        UpdateCase {
            name: "a member raises the parallelism of a running Job beyond what Kueue admitted",
            cell: "us-east-1a",
            fixture: "globex-vision-job",
            before: |o| o["spec"]["suspend"] = json!(false),
            after: |o| {
                o["spec"]["suspend"] = json!(false);
                o["spec"]["parallelism"] = json!(8);
            },
            rule: "kueue-hold",
        },
        UpdateCase {
            name: "a member removes pod-suspending-parent from a StatefulSet's pod template",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            before: |o| {
                pod_annotations(o)["kueue.x-k8s.io/pod-suspending-parent"] = json!("statefulset")
            },
            after: |o| {
                pod_annotations(o).as_object_mut().unwrap().clear();
            },
            rule: "kueue-hold",
        },
        UpdateCase {
            name: "a member makes its StatefulSet part of another workload by a controller reference",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            before: |_| {},
            after: |o| {
                o["metadata"]["ownerReferences"] = json!([{
                    "apiVersion": "leaderworkerset.x-k8s.io/v1",
                    "kind": "LeaderWorkerSet",
                    "name": "globex-vision-admitted",
                    "uid": "8a4f0e21-7d3b-4c59-b1e6-2f9d8c7a6b54",
                    "controller": true,
                }]);
            },
            rule: "controller-references",
        },
        UpdateCase {
            name: "a member unsuspends a Job that Kueue has not admitted",
            cell: "us-east-1a",
            fixture: "globex-vision-job",
            before: |_| {},
            after: |o| o["spec"]["suspend"] = json!(false),
            rule: "kueue-hold",
        },
    ]
}

/// A Job's uid, as the Job controller writes it into its pods' labels and owner reference.
pub const JOB_UID: &str = "5b0c7e19-3d2a-4f86-a1c4-9e7d2b6f0a38";

/// A pod as the Job controller creates it for Job `<name>-job`: controlled by the Job and
/// labelled with the selector the controller generated (`batch.kubernetes.io/controller-uid`)
/// and the legacy and name labels it adds beside it.
pub fn owned_by_job(object: &mut Json) {
    let name = format!("{}-job", object["metadata"]["name"].as_str().unwrap());
    let labels = pod_labels(object);
    labels["batch.kubernetes.io/controller-uid"] = json!(JOB_UID);
    labels["batch.kubernetes.io/job-name"] = json!(name);
    labels["controller-uid"] = json!(JOB_UID);
    labels["job-name"] = json!(name);
    object["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": name,
        "uid": JOB_UID,
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
}

/// A pod as the ReplicaSet controller creates it for a Deployment's ReplicaSet: controlled by
/// the ReplicaSet and labelled with its `pod-template-hash`.
pub fn owned_by_replica_set(object: &mut Json) {
    let name = format!("{}-7c9f6d5b8", object["metadata"]["name"].as_str().unwrap());
    pod_labels(object)["pod-template-hash"] = json!("7c9f6d5b8");
    object["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": name,
        "uid": "0e6b2d47-91c8-4a35-b7f0-3c5a8e1d9f62",
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
}

/// Every denied update that takes an object away from its controller: a member changes the
/// labels its controller selects it by or its owner references (hole 1 of issue 18). Each
/// `before` is admitted and controlled; the controller and the platform may make the change.
pub fn ownership_cases() -> Vec<UpdateCase> {
    vec![
        UpdateCase {
            name: "a member removes the Job controller's selector label from a Job's running pod",
            cell: "us-east-1a",
            fixture: "globex-vision-pod",
            before: owned_by_job,
            after: |o| {
                owned_by_job(o);
                let labels = pod_labels(o).as_object_mut().unwrap();
                labels.remove("batch.kubernetes.io/controller-uid");
                labels.remove("controller-uid");
            },
            rule: "controller-ownership",
        },
        UpdateCase {
            name: "a member changes the controller-uid label of a Job's pod to another uid",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            before: owned_by_job,
            after: |o| {
                owned_by_job(o);
                pod_labels(o)["batch.kubernetes.io/controller-uid"] =
                    json!("00000000-0000-4000-8000-000000000000");
            },
            rule: "controller-ownership",
        },
        UpdateCase {
            name: "a member drops the Job's owner reference from its pod",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            before: owned_by_job,
            after: |o| {
                owned_by_job(o);
                o["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("ownerReferences");
            },
            rule: "controller-ownership",
        },
        UpdateCase {
            name: "a member turns the Job's controller reference on its pod into a plain one",
            cell: "eu-west-4b",
            fixture: "acme-research-pod",
            before: owned_by_job,
            after: |o| {
                owned_by_job(o);
                o["metadata"]["ownerReferences"][0]["controller"] = json!(false);
            },
            rule: "controller-ownership",
        },
        UpdateCase {
            name: "a member changes the pod-template-hash of a Deployment's pod, so that its ReplicaSet releases it",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            before: owned_by_replica_set,
            after: |o| {
                owned_by_replica_set(o);
                pod_labels(o)["pod-template-hash"] = json!("released");
            },
            rule: "controller-ownership",
        },
        UpdateCase {
            name: "a member adds a label to a ReplicaSet's pod, which a selector with DoesNotExist would release",
            cell: "us-east-1a",
            fixture: "globex-vision-pod",
            before: owned_by_replica_set,
            after: |o| {
                owned_by_replica_set(o);
                pod_labels(o)["example.com/detached"] = json!("true");
            },
            rule: "controller-ownership",
        },
    ]
}

/// A denied DELETE: a member of the tenant deletes an admitted workload with `options` (its
/// `DeleteOptions`) that would leave its pods running, and `rule` must deny it.
pub struct DeleteCase {
    pub name: &'static str,
    pub cell: &'static str,
    pub fixture: &'static str,
    pub options: fn() -> Json,
    pub rule: &'static str,
}

/// Every denied DELETE (issue 18, hole 1: an orphaning delete).
pub fn delete_cases() -> Vec<DeleteCase> {
    vec![
        DeleteCase {
            name: "a member deletes its running Job with propagationPolicy Orphan",
            cell: "us-east-1a",
            fixture: "globex-vision-job",
            options: || json!({"propagationPolicy": "Orphan"}),
            rule: "orphaning-delete",
        },
        DeleteCase {
            name: "a member deletes its Job through the API without options, which orphans its pods",
            cell: "eu-west-4b",
            fixture: "acme-research-job",
            options: || json!({}),
            rule: "orphaning-delete",
        },
        DeleteCase {
            name: "a member deletes its Job with the deprecated orphanDependents",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            options: || json!({"orphanDependents": true}),
            rule: "orphaning-delete",
        },
        DeleteCase {
            name: "a member deletes its StatefulSet with propagationPolicy Orphan",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            options: || json!({"propagationPolicy": "Orphan"}),
            rule: "orphaning-delete",
        },
        DeleteCase {
            name: "a member deletes its CronJob with propagationPolicy Orphan",
            cell: "us-east-1a",
            fixture: "acme-research-cronjob",
            options: || json!({"propagationPolicy": "Orphan"}),
            rule: "orphaning-delete",
        },
    ]
}

/// A JSON merge patch (RFC 7386) that turns `old` into `new`: objects are compared key by
/// key, anything else is replaced whole, and a removed key becomes `null`.
pub fn merge_patch(old: &Json, new: &Json) -> Json {
    match (old, new) {
        (Json::Object(old), Json::Object(new)) => {
            let mut patch = serde_json::Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(before) if before == value => {}
                    Some(before) => {
                        patch.insert(key.clone(), merge_patch(before, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys() {
                if !new.contains_key(key) {
                    patch.insert(key.clone(), Json::Null);
                }
            }
            Json::Object(patch)
        }
        _ => new.clone(),
    }
}
