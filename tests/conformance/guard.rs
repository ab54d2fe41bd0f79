//! The guard on managed objects and the Pod Security exception path, judged by the API server
//! (issue 8 items 3 and 6, checked the way issue 11 checks everything else).
//!
//! Consumes: the control plane of the runner in `tests/conformance.rs` and the fixture fleet
//! compiled in-process: the objects of cell `us-east-1a` (whose `cluster/` holds the guard and
//! Pod Security policies) and its plan (the GitOps identity, each tenant's groups, namespaces,
//! ServiceAccounts and exceptions).
//! Produces: the guard checks of the runner's `CHECKS`; each prints every request it made and
//! the API server's answer.
//!
//! Invariants:
//! - Every request is made by an impersonated identity through the user who may only
//!   impersonate: the GitOps controller and a platform operator are both given `cluster-admin`
//!   by a ClusterRoleBinding of the harness's own, so a refusal of the operator can only come
//!   from the guard, and a refusal counts only when it names the guard policy; a tenant admin
//!   is refused only on RoleBindings, which its role lets it write.
//! - Changes are server-side dry-runs (admission policies judge them as real requests), so the
//!   checks leave the cluster as they found it, apart from the harness's own ClusterRoleBinding
//!   and ConfigMap, which are applied idempotently.
//! - Pods are judged in an excepted namespace and a namespace without exception, with the same
//!   `restricted` pod varied in one field each, so each answer is due to that field.

use super::*;

use tenantc::model::TenantRole;
use tenantc::plan::{CellPlan, Plan};

/// The cell whose objects the checks apply: the fixture tenant with an exception runs there.
const CELL: &str = "us-east-1a";
/// A cluster user who is not the GitOps controller, with `cluster-admin`.
const OPERATOR: &str = "conformance:platform-operator";
/// The harness's ClusterRoleBinding that gives the GitOps controller and the operator
/// `cluster-admin`.
const ADMIN_BINDING: &str = "tenantc-conformance-guard-admins";
/// An object tenantc does not manage, in a tenant namespace.
const UNMANAGED: &str = "conformance-unmanaged";
/// The image of every probe pod; no node runs it, admission is all that happens.
const PROBE_DIGEST: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn fixture() -> (Vec<Object>, CellPlan) {
    let compilation = support::compile_root(&support::fleet());
    assert!(!compilation.has_errors(), "the fixture fleet must compile");
    let tree = compilation.output.expect("an output tree");
    let plan: Plan = compilation.plan.expect("a plan");
    let cell = plan
        .cells
        .into_iter()
        .find(|cell| cell.name == CELL)
        .expect("the fixture cell");
    let prefix = format!("{CELL}/");
    let objects = objects_of(&tree)
        .into_iter()
        .filter(|object| object.path.starts_with(&prefix))
        .collect();
    (objects, cell)
}

/// Applies the cell and the harness's binding of the two cluster users.
fn set_up(cluster: &Cluster) -> (Vec<Object>, CellPlan) {
    install_crds(cluster);
    let (objects, cell) = fixture();
    let applied = apply_tree(cluster, &objects, false);
    assert!(
        applied.refusals.is_empty(),
        "the API server refused objects of cell {CELL}:\n{}",
        format_refusals(&applied.refusals)
    );
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ADMIN_BINDING},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": cell.gitops.user},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OPERATOR},
        ],
    });
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "conformance-guard",
            "-f",
            "-",
        ],
        &binding.to_string(),
    );
    assert!(run.ok, "binding the cluster users failed:\n{}", run.stderr);
    (objects, cell)
}

/// Runs kubectl through the impersonating user as `who` (a user name, then groups).
fn as_identity(cluster: &Cluster, who: &[&str], args: &[&str], stdin: &str) -> Run {
    let mut full: Vec<&str> = Vec::new();
    if let Some((user, groups)) = who.split_first() {
        full.extend(["--as", user]);
        for group in groups {
            full.extend(["--as-group", group]);
        }
        full.extend(["--as-group", "system:authenticated"]);
    }
    full.extend(args);
    cluster.kubectl_with(&cluster.user_kubeconfig, &full, stdin)
}

/// What a request should get.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    Admitted,
    /// Refused, with a message that contains this text.
    RefusedWith(&'static str),
}

/// Runs one request and returns a line for the report, or the wrong answer.
fn judge(run: &Run, what: &str, expect: Expect) -> Result<String, String> {
    let answer = if run.ok {
        "admitted".to_string()
    } else {
        format!("refused: {}", run.stderr.trim())
    };
    let right = match expect {
        Expect::Admitted => run.ok,
        Expect::RefusedWith(text) => !run.ok && run.stderr.contains(text),
    };
    let line = format!("{what}: {answer}");
    if right {
        Ok(line)
    } else {
        Err(format!("{line} (expected {expect:?})"))
    }
}

fn report(results: Vec<Result<String, String>>) {
    let mut wrong = Vec::new();
    for result in results {
        match result {
            Ok(line) => println!("  {line}"),
            Err(line) => {
                println!("  WRONG {line}");
                wrong.push(line);
            }
        }
    }
    assert!(wrong.is_empty(), "wrong answers:\n{}", wrong.join("\n"));
}

pub(super) fn only_the_gitops_controller_changes_managed_objects(cluster: &Cluster) {
    let (objects, cell) = set_up(cluster);
    let guard_refusal =
        Expect::RefusedWith("ValidatingAdmissionPolicy 'tenantc-guard-managed-objects'");
    let tenant = cell
        .tenants
        .iter()
        .find(|tenant| tenant.groups.contains_key(&TenantRole::Admin))
        .expect("a tenant with an admin group");
    let namespace = &tenant.namespaces[0].name;
    let admin_group = &tenant.groups[&TenantRole::Admin];
    let tenant_admin_user = format!("conformance:admin-of:{admin_group}");
    let tenant_admin: Vec<&str> = vec![&tenant_admin_user, admin_group];
    let gitops: Vec<&str> = vec![&cell.gitops.user];
    let operator: Vec<&str> = vec![OPERATOR];
    let binding = objects
        .iter()
        .find(|object| {
            object.kind == "RoleBinding" && object.namespace.as_deref() == Some(namespace)
        })
        .expect("a managed RoleBinding");
    let binding_name = binding.name.as_str();
    let cluster_role = objects
        .iter()
        .find(|object| object.kind == "ClusterRole")
        .expect("a managed ClusterRole");
    let queue = objects
        .iter()
        .find(|object| object.kind == "ClusterQueue")
        .expect("a managed ClusterQueue");

    // An unmanaged object beside the managed ones, created by the harness's admin.
    let unmanaged = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": UNMANAGED, "namespace": namespace},
        "data": {"owner": "platform"},
    });
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "conformance-guard",
            "-f",
            "-",
        ],
        &unmanaged.to_string(),
    );
    assert!(
        run.ok,
        "creating the unmanaged ConfigMap failed:\n{}",
        run.stderr
    );

    let dry = "--dry-run=server";
    let label = |kind: &str, name: &str, change: &str| -> Vec<String> {
        let mut args = vec![
            "label".to_string(),
            kind.to_string(),
            name.to_string(),
            change.to_string(),
        ];
        if kind != "clusterrole" && kind != "namespace" && kind != "clusterqueue" {
            args.extend(["-n".to_string(), namespace.clone()]);
        }
        args.extend(["--overwrite".to_string(), dry.to_string()]);
        args
    };
    let strs = |args: &[String]| -> Vec<String> { args.to_vec() };
    let run_as = |who: &[&str], args: Vec<String>| -> Run {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        as_identity(cluster, who, &args, "")
    };
    let strip = format!("{}-", tenantc::kube::labels::MANAGED_BY.0);
    let mut results = Vec::new();
    let mut case = |who: &[&str], whom: &str, args: Vec<String>, what: String, expect: Expect| {
        let run = run_as(who, strs(&args));
        results.push(judge(&run, &format!("{whom} {what}"), expect));
    };

    // The GitOps controller changes managed objects.
    case(
        &gitops,
        "the GitOps controller",
        label("rolebinding", binding_name, "conformance/probe=1"),
        format!("labels RoleBinding {namespace}/{binding_name}"),
        Expect::Admitted,
    );
    case(
        &gitops,
        "the GitOps controller",
        label("namespace", namespace, "conformance/probe=1"),
        format!("labels Namespace {namespace}"),
        Expect::Admitted,
    );
    case(
        &gitops,
        "the GitOps controller",
        vec![
            "delete".into(),
            "rolebinding".into(),
            binding_name.into(),
            "-n".into(),
            namespace.clone(),
            dry.into(),
        ],
        format!("deletes RoleBinding {namespace}/{binding_name}"),
        Expect::Admitted,
    );

    // A Namespace that exists without tenantc's label is never adopted, even by the GitOps
    // controller: a tenant named after it would otherwise open its Secrets to its groups.
    let existing = "conformance-preexisting";
    let created = cluster.kubectl(&["create", "namespace", existing], "");
    assert!(
        created.ok || created.stderr.contains("AlreadyExists"),
        "{}",
        created.stderr
    );
    let adopt = format!(
        "{}={}",
        tenantc::kube::labels::MANAGED_BY.0,
        tenantc::kube::labels::MANAGED_BY.1
    );
    case(
        &gitops,
        "the GitOps controller",
        label("namespace", existing, &adopt),
        format!("adopts the existing Namespace {existing}"),
        Expect::RefusedWith("ValidatingAdmissionPolicy 'tenantc-guard-adoption'"),
    );
    let break_glass: Vec<&str> = vec!["conformance:break-glass", &cell.gitops.break_glass];
    case(
        &break_glass,
        "the break-glass group",
        label("namespace", existing, &adopt),
        format!("adopts the existing Namespace {existing}"),
        Expect::Admitted,
    );

    // A tenant admin, whose role lets it write RoleBindings, is refused by the guard.
    case(
        &tenant_admin,
        "a tenant admin",
        label("rolebinding", binding_name, "conformance/probe=1"),
        format!("labels RoleBinding {namespace}/{binding_name}"),
        guard_refusal,
    );
    case(
        &tenant_admin,
        "a tenant admin",
        label("rolebinding", binding_name, &strip),
        format!("strips the managed-by label of RoleBinding {namespace}/{binding_name}"),
        guard_refusal,
    );
    case(
        &tenant_admin,
        "a tenant admin",
        vec![
            "delete".into(),
            "rolebinding".into(),
            binding_name.into(),
            "-n".into(),
            namespace.clone(),
            dry.into(),
        ],
        format!("deletes RoleBinding {namespace}/{binding_name}"),
        guard_refusal,
    );
    // A tenant admin cannot create an object that claims to be tenantc's either.
    let forged = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "conformance-forged", "namespace": namespace, "labels": {tenantc::kube::labels::MANAGED_BY.0: "tenantc"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": binding.json["roleRef"]["name"]},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": admin_group}],
    });
    let forged_run = as_identity(
        cluster,
        &tenant_admin,
        &["create", dry, "-f", "-"],
        &forged.to_string(),
    );
    let forged_answer = judge(
        &forged_run,
        "a tenant admin creates a RoleBinding labelled managed-by tenantc",
        guard_refusal,
    );

    // A cluster user with cluster-admin who is not the GitOps controller is refused too.
    case(
        &operator,
        "a platform operator",
        label("resourcequota", "tenant-quota", "conformance/probe=1"),
        format!("labels ResourceQuota {namespace}/tenant-quota"),
        guard_refusal,
    );
    case(
        &operator,
        "a platform operator",
        label("resourcequota", "tenant-quota", &strip),
        format!("strips the managed-by label of ResourceQuota {namespace}/tenant-quota"),
        guard_refusal,
    );
    case(
        &operator,
        "a platform operator",
        vec![
            "delete".into(),
            "resourcequota".into(),
            "tenant-quota".into(),
            "-n".into(),
            namespace.clone(),
            dry.into(),
        ],
        format!("deletes ResourceQuota {namespace}/tenant-quota"),
        guard_refusal,
    );
    case(
        &operator,
        "a platform operator",
        label(
            "namespace",
            namespace,
            "pod-security.kubernetes.io/audit=privileged",
        ),
        format!("relaxes the Pod Security audit level of Namespace {namespace}"),
        guard_refusal,
    );
    case(
        &operator,
        "a platform operator",
        vec![
            "delete".into(),
            "namespace".into(),
            namespace.clone(),
            dry.into(),
        ],
        format!("deletes Namespace {namespace}"),
        guard_refusal,
    );
    case(
        &operator,
        "a platform operator",
        label("clusterrole", &cluster_role.name, "conformance/probe=1"),
        format!("labels ClusterRole {}", cluster_role.name),
        guard_refusal,
    );
    case(
        &operator,
        "a platform operator",
        vec![
            "delete".into(),
            "clusterqueue".into(),
            queue.name.clone(),
            dry.into(),
        ],
        format!("deletes ClusterQueue {}", queue.name),
        guard_refusal,
    );
    // Kueue's finalizer on a ClusterQueue is a change of finalizers only, which passes.
    case(
        &operator,
        "a platform operator (as Kueue would)",
        vec![
            "patch".into(),
            "clusterqueue".into(),
            queue.name.clone(),
            "--type=merge".into(),
            "-p".into(),
            r#"{"metadata":{"finalizers":["kueue.x-k8s.io/resource-in-use"]}}"#.into(),
            dry.into(),
        ],
        format!("adds Kueue's finalizer to ClusterQueue {}", queue.name),
        Expect::Admitted,
    );
    // The status subresource stays with the controllers.
    case(
        &operator,
        "a platform operator (as the resourcequota controller would)",
        vec![
            "patch".into(),
            "resourcequota".into(),
            "tenant-quota".into(),
            "-n".into(),
            namespace.clone(),
            "--subresource=status".into(),
            "--type=merge".into(),
            "-p".into(),
            r#"{"status":{"hard":{"pods":"1"}}}"#.into(),
            dry.into(),
        ],
        format!("updates the status of ResourceQuota {namespace}/tenant-quota"),
        Expect::Admitted,
    );
    // An unmanaged object is untouched by the guard.
    case(
        &operator,
        "a platform operator",
        label("configmap", UNMANAGED, "conformance/probe=1"),
        format!("labels unmanaged ConfigMap {namespace}/{UNMANAGED}"),
        Expect::Admitted,
    );
    case(
        &operator,
        "a platform operator",
        vec![
            "delete".into(),
            "configmap".into(),
            UNMANAGED.into(),
            "-n".into(),
            namespace.clone(),
            dry.into(),
        ],
        format!("deletes unmanaged ConfigMap {namespace}/{UNMANAGED}"),
        Expect::Admitted,
    );
    results.push(forged_answer);
    report(results);
}

/// The first item of a list param of the tenant's admission floor.
fn first_param(floor: &BTreeMap<String, String>, key: &str) -> String {
    let list = floor.get(key).map_or("", String::as_str);
    list.split(',').next().unwrap_or_default().to_string()
}

/// A Pod Security `restricted` pod that also passes every validation of the tenant admission
/// floor (an image of the tenant's registry pinned by digest, the chargeback labels), so that
/// only Pod Security and the exception policy judge it; changed by `change`.
fn pod(
    floor: &BTreeMap<String, String>,
    namespace: &str,
    service_account: &str,
    name: &str,
    change: impl Fn(&mut Value),
) -> Value {
    let image = format!("{}/probe@{PROBE_DIGEST}", first_param(floor, "registries"));
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {
            "tenant.platform/tenant": first_param(floor, "tenant"),
            "tenant.platform/cell": first_param(floor, "cell"),
        }},
        "spec": {
            "serviceAccountName": service_account,
            "automountServiceAccountToken": false,
            "securityContext": {
                "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [{
                "name": "probe", "image": image,
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": true},
            }],
        },
    });
    change(&mut pod);
    pod
}

fn add_capability(capability: &'static str) -> impl Fn(&mut Value) {
    move |pod: &mut Value| {
        pod["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] =
            json!([capability]);
    }
}

pub(super) fn excepted_namespaces_admit_only_the_declared_capabilities(cluster: &Cluster) {
    let (_, cell) = set_up(cluster);
    let exception_policy =
        Expect::RefusedWith("ValidatingAdmissionPolicy 'tenantc-pod-security-exceptions'");
    let pod_security = Expect::RefusedWith("violates PodSecurity");
    let excepted = cell
        .tenants
        .iter()
        .flat_map(|tenant| {
            tenant
                .namespaces
                .iter()
                .map(move |namespace| (tenant, namespace))
        })
        .find(|(_, namespace)| !namespace.exceptions.is_empty())
        .expect("a fixture namespace with a Pod Security exception");
    let plain = cell
        .tenants
        .iter()
        .flat_map(|tenant| {
            tenant
                .namespaces
                .iter()
                .map(move |namespace| (tenant, namespace))
        })
        .find(|(_, namespace)| namespace.exceptions.is_empty())
        .expect("a fixture namespace without exception");
    // The tenant floor lets a pod use the exception only on the nodes of its tenant's own pools
    // (`host-pools`): the node labels of its first pool, as the params list them.
    let host_pool: serde_json::Map<String, Value> =
        tenantc::plan::admission::params(excepted.0, &cell)["hostPools"]
            .split(',')
            .next()
            .unwrap_or("")
            .split('&')
            .filter_map(|label| label.split_once('='))
            .map(|(key, value)| (key.to_string(), json!(value)))
            .collect();
    assert!(!host_pool.is_empty(), "the excepted tenant has a host pool");
    let mut results = Vec::new();
    for ((tenant, namespace), pods) in [
        (
            excepted,
            vec![
                (
                    "a restricted pod",
                    Box::new(|_: &mut Value| {}) as Box<dyn Fn(&mut Value)>,
                    Expect::Admitted,
                ),
                (
                    "a pod adding IPC_LOCK on its own pool",
                    Box::new(add_capability("IPC_LOCK")),
                    Expect::Admitted,
                ),
                (
                    "a pod adding IPC_LOCK that may land anywhere",
                    Box::new(|pod: &mut Value| {
                        add_capability("IPC_LOCK")(pod);
                        pod["spec"].as_object_mut().unwrap().remove("nodeSelector");
                    }),
                    Expect::RefusedWith("must select the nodes of one of its own pools"),
                ),
                (
                    "a pod adding SYS_ADMIN",
                    Box::new(add_capability("SYS_ADMIN")),
                    exception_policy,
                ),
                // The harness's API server runs without `--allow-privileged`, so its validation
                // refuses a privileged pod before admission; the policy's rule is not reached.
                (
                    "a privileged pod",
                    Box::new(|pod: &mut Value| {
                        pod["spec"]["containers"][0]["securityContext"]["privileged"] = json!(true);
                    }),
                    Expect::RefusedWith("privileged: Forbidden"),
                ),
                // The tenant admission floor refuses host namespaces for every tenant too
                // (issue 25), and the API server reports whichever policy it evaluates first:
                // both name hostNetwork.
                (
                    "a pod on the host network",
                    Box::new(|pod: &mut Value| pod["spec"]["hostNetwork"] = json!(true)),
                    Expect::RefusedWith("hostNetwork"),
                ),
                (
                    "a pod that keeps every capability",
                    Box::new(|pod: &mut Value| {
                        pod["spec"]["containers"][0]["securityContext"]["capabilities"] =
                            json!({"add": ["IPC_LOCK"]});
                    }),
                    exception_policy,
                ),
                // The tenant admission floor refuses hostPath for every tenant too, and the API
                // server reports whichever policy it evaluates first: either names hostPath.
                (
                    "a pod with a hostPath volume",
                    Box::new(|pod: &mut Value| {
                        pod["spec"]["volumes"] =
                            json!([{"name": "host", "hostPath": {"path": "/"}}]);
                    }),
                    Expect::RefusedWith("hostPath"),
                ),
            ],
        ),
        (
            plain,
            vec![
                (
                    "a restricted pod",
                    Box::new(|_: &mut Value| {}) as Box<dyn Fn(&mut Value)>,
                    Expect::Admitted,
                ),
                (
                    "a pod adding IPC_LOCK",
                    Box::new(add_capability("IPC_LOCK")),
                    pod_security,
                ),
            ],
        ),
    ] {
        let group = tenant
            .groups
            .get(&TenantRole::Member)
            .or_else(|| tenant.groups.get(&TenantRole::Admin))
            .expect("a tenant group");
        let user = format!("conformance:member-of:{group}");
        // In the excepted namespace every probe selects its tenant's own pool, so that the
        // exception policy, not the floor's `host-pools`, is what judges the capabilities.
        let selector = (namespace.name == excepted.1.name).then(|| host_pool.clone());
        for (idx, (what, change, expect)) in pods.into_iter().enumerate() {
            let body = pod(
                &tenantc::plan::admission::params(tenant, &cell),
                &namespace.name,
                &namespace.service_account,
                &format!("guard-probe-{idx}"),
                |pod: &mut Value| {
                    if let Some(selector) = &selector {
                        pod["spec"]["nodeSelector"] = Value::Object(selector.clone());
                    }
                    change(pod);
                },
            );
            let run = as_identity(
                cluster,
                &[&user, group],
                &["create", "--dry-run=server", "-o", "name", "-f", "-"],
                &body.to_string(),
            );
            results.push(judge(
                &run,
                &format!("{what} in {}", namespace.name),
                expect,
            ));
        }
    }
    report(results);
}

/// The ServiceAccount of Argo CD's ApplicationSet controller (Argo CD's install manifests), which
/// creates the Applications of an ApplicationSet and steps a RollingSync by updating them.
pub(super) const APPLICATIONSET_CONTROLLER: &str = "argocd-applicationset-controller";
/// The ServiceAccount of Argo CD's API server, which a UI or CLI sync writes through.
pub(super) const ARGOCD_SERVER: &str = "argocd-server";
/// The harness's ClusterRoleBinding that gives the two Argo CD ServiceAccounts `cluster-admin`.
const ARGOCD_BINDING: &str = "tenantc-conformance-argocd-admins";

/// The cell's ApplicationSet from `argocd/`, as JSON.
fn application_set() -> Value {
    let compilation = support::compile_root(&support::fleet());
    let tree = compilation.output.expect("an output tree");
    let path = format!("argocd/applicationset-{CELL}.yaml");
    let bytes = tree
        .get(&path)
        .unwrap_or_else(|| panic!("the fixture fleet emits {path}"));
    let text = String::from_utf8(bytes.clone()).unwrap();
    let mut documents =
        yaml_documents_typed(&text).unwrap_or_else(|error| panic!("{path}: {error}"));
    assert_eq!(documents.len(), 1, "{path}: one object");
    documents.remove(0)
}

/// The Applications Argo CD's list generator makes of `set`: the template with each
/// `{{.key}}` replaced by the element's value, expanded here from the JSON (not by tenantc's
/// own expansion), in the ApplicationSet's namespace.
pub(super) fn generated_applications(set: &Value) -> Vec<Value> {
    let template = set["spec"]["template"].to_string();
    let namespace = set["metadata"]["namespace"].as_str().expect("a namespace");
    let elements = set["spec"]["generators"][0]["list"]["elements"]
        .as_array()
        .expect("a list generator");
    elements
        .iter()
        .map(|element| {
            let mut text = template.clone();
            for (key, value) in element.as_object().expect("an element is a map") {
                let value = value.as_str().expect("element values are strings");
                text = text.replace(&format!("{{{{.{key}}}}}"), value);
            }
            assert!(!text.contains("{{"), "an unexpanded key in {text}");
            let mut application: Value = serde_json::from_str(&text).unwrap();
            application["apiVersion"] = json!("argoproj.io/v1alpha1");
            application["kind"] = json!("Application");
            application["metadata"]["namespace"] = json!(namespace);
            application
        })
        .collect()
}

/// Argo CD in the cell itself (destination `https://kubernetes.default.svc`): after the first
/// RollingSync step has installed the guard, Argo CD's other controllers must still create and
/// step the Applications of the cell's ApplicationSet, or the sync stalls after `cluster/`;
/// the ApplicationSet, which tenantc manages, stays guarded.
pub(super) fn argo_cd_drives_the_generated_applications_past_the_guard(cluster: &Cluster) {
    let (_, cell) = set_up(cluster);
    let set = application_set();
    let namespace = set["metadata"]["namespace"]
        .as_str()
        .expect("a namespace")
        .to_string();
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ARGOCD_BINDING},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [
            {"kind": "ServiceAccount", "name": APPLICATIONSET_CONTROLLER, "namespace": namespace},
            {"kind": "ServiceAccount", "name": ARGOCD_SERVER, "namespace": namespace},
        ],
    });
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "conformance-guard",
            "-f",
            "-",
        ],
        &binding.to_string(),
    );
    assert!(
        run.ok,
        "binding the Argo CD identities failed:\n{}",
        run.stderr
    );
    let service_account = |name: &str| -> (String, String) {
        (
            format!("system:serviceaccount:{namespace}:{name}"),
            format!("system:serviceaccounts:{namespace}"),
        )
    };
    let (set_controller_user, set_controller_group) = service_account(APPLICATIONSET_CONTROLLER);
    let set_controller: Vec<&str> = vec![
        &set_controller_user,
        "system:serviceaccounts",
        &set_controller_group,
    ];
    let (server_user, server_group) = service_account(ARGOCD_SERVER);
    let server: Vec<&str> = vec![&server_user, "system:serviceaccounts", &server_group];
    let gitops: Vec<&str> = vec![&cell.gitops.user];
    let operator: Vec<&str> = vec![OPERATOR];
    let dry = "--dry-run=server";
    let mut results = Vec::new();

    // The GitOps controller syncs `argocd/`, so it applies the ApplicationSet.
    let applied = as_identity(
        cluster,
        &gitops,
        &[
            "apply",
            "--server-side",
            "--field-manager",
            FIELD_MANAGER,
            "-f",
            "-",
        ],
        &set.to_string(),
    );
    results.push(judge(
        &applied,
        "the GitOps controller applies the ApplicationSet",
        Expect::Admitted,
    ));
    let set_name = set["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    results.push(judge(
        &as_identity(
            cluster,
            &operator,
            &[
                "label",
                "applicationset",
                &set_name,
                "-n",
                &namespace,
                "conformance/probe=1",
                dry,
            ],
            "",
        ),
        &format!("a platform operator labels ApplicationSet {namespace}/{set_name}"),
        Expect::RefusedWith("ValidatingAdmissionPolicy 'tenantc-guard-managed-objects'"),
    ));

    let applications = generated_applications(&set);
    assert!(
        !applications.is_empty(),
        "the ApplicationSet generates nothing"
    );
    let mut created = Vec::new();
    for application in &applications {
        let name = application["metadata"]["name"]
            .as_str()
            .expect("a name")
            .to_string();
        let run = as_identity(
            cluster,
            &set_controller,
            &["create", "-f", "-"],
            &application.to_string(),
        );
        if run.ok {
            created.push(name.clone());
        }
        results.push(judge(
            &run,
            &format!("the ApplicationSet controller creates Application {namespace}/{name}"),
            Expect::Admitted,
        ));
    }
    for name in &created {
        let patch = |who: &[&str], body: &str| {
            as_identity(
                cluster,
                who,
                &[
                    "patch",
                    "application",
                    name,
                    "-n",
                    &namespace,
                    "--type=merge",
                    "-p",
                    body,
                    dry,
                ],
                "",
            )
        };
        // A RollingSync step turns automated sync off until the step's turn, then on.
        results.push(judge(
            &patch(
                &set_controller,
                r#"{"spec":{"syncPolicy":{"automated":null}}}"#,
            ),
            &format!("the ApplicationSet controller holds back Application {namespace}/{name}"),
            Expect::Admitted,
        ));
        // A sync from the UI or the CLI is an `operation` written by the API server's identity.
        results.push(judge(
            &patch(
                &server,
                r#"{"operation":{"initiatedBy":{"username":"platform"},"sync":{"revision":"main"}}}"#,
            ),
            &format!("Argo CD's API server starts a sync of Application {namespace}/{name}"),
            Expect::Admitted,
        ));
        // Applications have no status subresource: the application controller writes the
        // status on the object.
        results.push(judge(
            &patch(&gitops, r#"{"status":{"sync":{"status":"Synced"}}}"#),
            &format!(
                "the application controller records the status of Application {namespace}/{name}"
            ),
            Expect::Admitted,
        ));
    }
    for name in &created {
        let run = cluster.kubectl(
            &[
                "delete",
                "application",
                name,
                "-n",
                &namespace,
                "--wait=false",
            ],
            "",
        );
        assert!(
            run.ok,
            "deleting Application {name} failed:\n{}",
            run.stderr
        );
    }
    report(results);
}
