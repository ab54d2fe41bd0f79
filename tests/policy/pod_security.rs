//! The Pod Security cases of the policy fixtures: objects made from the admitted fixtures under
//! `tests/policy/admitted/<cell>/` that Pod Security admission denies or warns about, for the
//! conformance check of `tenantc test-policy` (`tests/conformance/test_policy.rs`), which
//! judges them offline and on a real API server.
//!
//! Consumes: the fixtures, through `cases.rs` (included beside this file as `policy_cases`).
//! Produces: objects as JSON, each with the verdict written by hand from the Pod Security
//! Standards: who refuses it, and the violations Pod Security names.
//! Invariant: each case differs from an admitted fixture by the mutation its name says, so the
//! expected verdict follows from that mutation alone.

use serde_json::{Value as Json, json};

use super::policy_cases::{fixture, pod_spec};

/// What the API server does with a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Pod Security admission refuses it (before any admission policy runs) with these
    /// violations after `violates PodSecurity "<level:version>": `.
    DeniedByPodSecurity(&'static str),
    /// It is admitted with Pod Security's warning naming these violations.
    Warned(&'static str),
    /// The admission policy refuses it; Pod Security admits it without a warning.
    DeniedByPolicy(&'static str),
    /// The admission policy refuses it, and Pod Security's warning names these violations.
    DeniedByPolicyWithWarning(&'static str, &'static str),
}

/// A Pod Security case: a fixture of a cell, a mutation and the expected verdict.
pub struct PodSecurityCase {
    pub name: &'static str,
    pub cell: &'static str,
    pub fixture: &'static str,
    pub mutate: fn(&mut Json),
    pub expect: Expect,
}

impl PodSecurityCase {
    /// The case's object.
    pub fn object(&self) -> Json {
        let mut object = fixture(self.fixture, self.cell);
        (self.mutate)(&mut object);
        object
    }
}

/// An update case: `before` and `after` made from a fixture, and the verdict on the update.
pub struct PodSecurityUpdate {
    pub name: &'static str,
    pub cell: &'static str,
    pub fixture: &'static str,
    pub before: fn(&mut Json),
    pub after: fn(&mut Json),
    pub expect: Option<Expect>,
}

fn main_container(object: &mut Json) -> &mut Json {
    &mut pod_spec(object)["containers"][0]
}

fn remove(object: &mut Json, key: &str) {
    object.as_object_mut().unwrap().remove(key);
}

/// Removes every securityContext of the pod (template) and its first container.
fn strip_security(object: &mut Json) {
    remove(pod_spec(object), "securityContext");
    remove(main_container(object), "securityContext");
}

/// The four `restricted` violations of a pod whose only container is `main` and that sets no
/// securityContext.
const BARE: &str = "allowPrivilegeEscalation != false (container \"main\" must set securityContext.allowPrivilegeEscalation=false), \
                    unrestricted capabilities (container \"main\" must set securityContext.capabilities.drop=[\"ALL\"]), \
                    runAsNonRoot != true (pod or container \"main\" must set securityContext.runAsNonRoot=true), \
                    seccompProfile (pod or container \"main\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

/// Every Pod Security case.
pub fn pod_security_cases() -> Vec<PodSecurityCase> {
    vec![
        PodSecurityCase {
            name: "a pod without any securityContext in a restricted namespace",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            mutate: strip_security,
            expect: Expect::DeniedByPodSecurity(BARE),
        },
        PodSecurityCase {
            name: "a pod on the host network, whose container port the API server makes a host port",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            mutate: |o| {
                pod_spec(o)["hostNetwork"] = json!(true);
                main_container(o)["ports"] = json!([{"containerPort": 8080}]);
            },
            expect: Expect::DeniedByPodSecurity(
                "host namespaces (hostNetwork=true), hostPort (container \"main\" uses hostPort 8080)",
            ),
        },
        PodSecurityCase {
            name: "a pod that runs as root",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            mutate: |o| pod_spec(o)["securityContext"]["runAsUser"] = json!(0),
            expect: Expect::DeniedByPodSecurity("runAsUser=0 (pod must not set runAsUser=0)"),
        },
        PodSecurityCase {
            name: "a pod that adds SYS_ADMIN in a restricted namespace",
            cell: "us-east-1a",
            fixture: "globex-vision-pod",
            mutate: |o| {
                main_container(o)["securityContext"]["capabilities"]["add"] = json!(["SYS_ADMIN"])
            },
            expect: Expect::DeniedByPodSecurity(
                "unrestricted capabilities (container \"main\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add)",
            ),
        },
        PodSecurityCase {
            name: "a pod with an unconfined seccomp profile",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            mutate: |o| {
                pod_spec(o)["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"})
            },
            expect: Expect::DeniedByPodSecurity(
                "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")",
            ),
        },
        PodSecurityCase {
            name: "a probe host in a cell on Kubernetes 1.34, where baseline forbids it",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            mutate: |o| {
                main_container(o)["readinessProbe"] =
                    json!({"httpGet": {"host": "10.0.0.1", "port": 8080}});
            },
            expect: Expect::DeniedByPodSecurity(
                "probe or lifecycle host (container \"main\" uses probe or lifecycle host \"10.0.0.1\")",
            ),
        },
        PodSecurityCase {
            name: "the same probe host in a cell on Kubernetes 1.33, where only the floor forbids it",
            cell: "us-east-1a",
            fixture: "globex-vision-pod",
            mutate: |o| {
                main_container(o)["readinessProbe"] =
                    json!({"httpGet": {"host": "10.0.0.1", "port": 8080}});
            },
            expect: Expect::DeniedByPolicy("probe-host"),
        },
        PodSecurityCase {
            name: "a Job whose pod template sets no securityContext",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            mutate: strip_security,
            expect: Expect::Warned(BARE),
        },
        PodSecurityCase {
            name: "a StatefulSet whose pod template sets no seccomp profile",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            mutate: |o| remove(&mut pod_spec(o)["securityContext"], "seccompProfile"),
            expect: Expect::Warned(
                "seccompProfile (pod or container \"main\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")",
            ),
        },
        PodSecurityCase {
            name: "a Job template on the host PID namespace, which Pod Security only warns about and the floor refuses",
            cell: "us-east-1a",
            fixture: "globex-vision-job",
            mutate: |o| pod_spec(o)["hostPID"] = json!(true),
            expect: Expect::DeniedByPolicyWithWarning(
                "host-namespaces",
                "host namespaces (hostPID=true)",
            ),
        },
        PodSecurityCase {
            name: "a pod adding SYS_ADMIN in a namespace whose exception grants only IPC_LOCK",
            cell: "us-east-1a",
            fixture: "acme-research-rdma-pod",
            mutate: |o| {
                main_container(o)["securityContext"]["capabilities"]["add"] =
                    json!(["IPC_LOCK", "SYS_ADMIN"]);
            },
            expect: Expect::DeniedByPolicyWithWarning(
                "tenantc-pod-security-exceptions",
                "unrestricted capabilities (container \"main\" must not include \"IPC_LOCK\", \"SYS_ADMIN\" in securityContext.capabilities.add)",
            ),
        },
        PodSecurityCase {
            name: "a hostPath volume in an excepted namespace, which two policies refuse",
            cell: "us-east-1a",
            fixture: "acme-research-rdma-pod",
            mutate: |o| {
                pod_spec(o)["volumes"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "host", "hostPath": {"path": "/var/run"}}));
            },
            expect: Expect::DeniedByPolicyWithWarning(
                "host-path",
                "unrestricted capabilities (container \"main\" must not include \"IPC_LOCK\" in securityContext.capabilities.add), \
                 restricted volume types (volume \"host\" uses restricted volume type \"hostPath\")",
            ),
        },
    ]
}

/// Every Pod Security update case.
pub fn pod_security_updates() -> Vec<PodSecurityUpdate> {
    vec![
        PodSecurityUpdate {
            name: "a member moves its pod to another pinned image of its registry",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            before: |_| {},
            after: |o| {
                main_container(o)["image"] = json!(
                    "registry.acme.internal/serving/worker@sha256:4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f"
                );
            },
            expect: None,
        },
        PodSecurityUpdate {
            name: "a member removes the seccomp profile from a StatefulSet's pod template",
            cell: "eu-west-4b",
            fixture: "globex-vision-statefulset",
            before: |_| {},
            after: |o| remove(&mut pod_spec(o)["securityContext"], "seccompProfile"),
            expect: Some(Expect::Warned(
                "seccompProfile (pod or container \"main\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")",
            )),
        },
    ]
}
