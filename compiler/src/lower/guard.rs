//! The admission policies of a cell that guard what tenantc manages and re-enforce Pod Security
//! in excepted namespaces.
//!
//! Consumes: a cell's plan. Produces: six objects for `<cell>/cluster/`, the same in every cell
//! whatever its tenants declare (so a tenant edit never changes `cluster/`):
//! - `tenantc-guard-managed-objects`, a ValidatingAdmissionPolicy and its binding that deny every
//!   CREATE, UPDATE and DELETE of an object labelled `app.kubernetes.io/managed-by: tenantc`
//!   (before or after the change, so stripping the label is a change to a managed object) by
//!   anyone but the cell's GitOps controller and its break-glass group. It matches every main
//!   resource of every group (`*`), never a subresource, so controllers keep writing `status`.
//!   Two changes pass for anyone RBAC lets make them: a DELETE inside a namespace that is being
//!   deleted (the namespace controller empties it), and an UPDATE that changes nothing but
//!   `metadata.finalizers` (Kueue's `kueue.x-k8s.io/resource-in-use` on ClusterQueues and
//!   ResourceFlavors).
//! - `tenantc-guard-adoption`, a policy and its binding that refuse an UPDATE giving an existing
//!   Namespace the managed-by label, the GitOps controller's included (only the break-glass
//!   group may): tenantc creates its namespaces and never adopts one whose name a tenant file
//!   happens to produce.
//! - `tenantc-pod-security-exceptions`, a policy and a binding limited to tenantc's namespaces
//!   whose `pod-security.kubernetes.io/enforce` label is not `restricted`: the namespaces of a
//!   reviewed exception, where Pod Security Admission enforces a weaker level because no level
//!   admits `restricted` plus a capability. It re-enforces every rule of the `restricted` Pod
//!   Security Standard (as of Kubernetes 1.30), except that containers may also add the
//!   capabilities the namespace's `tenant.platform/pod-security-capabilities` annotation lists.
//!
//! - `tenantc-rolebinding-subjects`, a policy that limits the subjects of RoleBindings in a
//!   tenant's namespaces to the tenant's own groups and ServiceAccounts of the tenant's
//!   namespaces in the cell (no users, no other tenant's groups, no `system:authenticated`),
//!   for everyone but the GitOps controller and the break-glass group: the API server's
//!   escalation check limits what a tenant admin's RoleBinding grants, never to whom. One
//!   policy and binding per tenant ([`tenant_objects`], in the tenant's folder, guarded as
//!   managed objects), with the tenant's subjects as CEL literals: params would be read from an
//!   informer cache, and a RoleBinding created just after its params was refused as having
//!   none.
//!
//! Invariants:
//! - Every policy has `failurePolicy: Fail` and says in its message what to change.
//! - Nothing in `cluster/` depends on a tenant: the exceptions are read from the namespace, which
//!   the guard protects, and the bindings select namespaces by labels only tenantc's namespaces
//!   carry; the RoleBinding subjects policies live in the tenant folders.

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MatchResources, NamedRuleWithOperations, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding, ValidatingAdmissionPolicyBindingSpec,
    ValidatingAdmissionPolicySpec, Validation, Variable,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use super::engines;
use super::{cel, cluster_meta, managed_labels};
use crate::emit::Body;
use crate::emit::InternalError;
use crate::facts::naming::{EXCEPTIONS_NAME, GUARD_NAME};
use crate::facts::pod_security::PodSecurityLevel;
use crate::kube::labels::{
    MANAGED_BY, POD_SECURITY_CAPABILITIES_ANNOTATION, POD_SECURITY_EXCEPTIONS_ANNOTATION,
    TENANT_LABEL,
};
use crate::plan::{CellPlan, GitOpsPlan, TenantPlan};

/// The name of the policy and binding that keep tenantc from adopting an existing Namespace.
pub const ADOPTION_NAME: &str = "tenantc-guard-adoption";

/// The prefix of the name of each tenant's RoleBinding subjects policy and binding.
pub const SUBJECTS_NAME: &str = "tenantc-rolebinding-subjects";
/// The namespace annotation listing the capabilities an exception grants, comma-separated.
pub fn capabilities_annotation() -> String {
    POD_SECURITY_CAPABILITIES_ANNOTATION.to_string()
}
/// The namespace annotation recording each exception's reason and approver.
pub fn exceptions_annotation() -> String {
    POD_SECURITY_EXCEPTIONS_ANNOTATION.to_string()
}

/// The cell's policies and bindings, as `(file in cluster/, object)`.
pub(super) fn cell_objects(cell: &CellPlan) -> Result<Vec<(String, Body)>, InternalError> {
    let mut objects = Vec::new();
    for (name, policy, namespaces) in [
        (GUARD_NAME, guard_policy(&cell.gitops), None),
        (ADOPTION_NAME, adoption_policy(&cell.gitops), None),
        (
            EXCEPTIONS_NAME,
            exceptions_policy(),
            Some(excepted_namespaces()),
        ),
    ] {
        let bindings = [binding(name, namespaces)];
        for (stem, body) in engines::objects_for(cell.backends.admission, &policy, &bindings)? {
            objects.push((format!("{stem}-{name}.yaml"), body));
        }
    }
    Ok(objects)
}

/// One tenant's RoleBinding subjects policy and binding, for its folder (in a cell whose floor
/// runs in Kyverno or Gatekeeper, translated like the floor, `engines.rs`).
pub(super) fn tenant_objects(
    tenant: &TenantPlan,
    cell: &CellPlan,
) -> Result<Vec<(String, Body)>, InternalError> {
    let policy = subjects_policy(tenant, &cell.gitops);
    let bindings = [subjects_binding(tenant)];
    engines::objects_for(cell.backends.admission, &policy, &bindings)?
        .into_iter()
        .map(|(stem, body)| {
            // The ValidatingAdmissionPolicy floor keeps its file names.
            const RENAMED: [(&str, &str); 2] = [
                ("validatingadmissionpolicy", "policy"),
                ("validatingadmissionpolicybinding", "binding"),
            ];
            let short = RENAMED
                .iter()
                .find(|(long, _)| *long == stem)
                .map_or(stem, |(_, short)| short);
            Ok((format!("admission-subjects-{short}.yaml"), body))
        })
        .collect()
}

/// The name of a tenant's RoleBinding subjects policy and binding.
pub fn subjects_name(tenant: &str) -> String {
    format!("{SUBJECTS_NAME}-{tenant}")
}

/// The name and labels of a tenant's RoleBinding subjects policy and of its binding.
fn subjects_meta(tenant: &TenantPlan) -> ObjectMeta {
    let mut labels = managed_labels();
    labels.insert(TENANT_LABEL.to_string(), tenant.name.clone());
    ObjectMeta {
        name: Some(subjects_name(&tenant.name)),
        labels: Some(labels),
        annotations: Some(super::gitops::first_wave_annotations()),
        ..ObjectMeta::default()
    }
}

/// A tenant's binding of its RoleBinding subjects policy: its namespaces, no params.
pub fn subjects_binding(tenant: &TenantPlan) -> ValidatingAdmissionPolicyBinding {
    ValidatingAdmissionPolicyBinding {
        metadata: subjects_meta(tenant),
        spec: Some(ValidatingAdmissionPolicyBindingSpec {
            policy_name: Some(subjects_name(&tenant.name)),
            validation_actions: Some(vec!["Deny".to_string()]),
            param_ref: None,
            match_resources: Some(MatchResources {
                namespace_selector: Some(super::tenant_namespaces(tenant)),
                ..MatchResources::default()
            }),
        }),
    }
}

/// Whether a RoleBinding subject `s` is the tenant's own: a CEL expression over the variables
/// `groups` and `namespaces`.
const SUBJECT_ALLOWED: &str = "(s.kind == 'Group' && s.name in variables.groups) ||      (s.kind == 'ServiceAccount' && has(s.namespace) && s.namespace in variables.namespaces)";

/// The policy that limits RoleBinding subjects in a tenant's namespaces to its own groups and
/// ServiceAccounts of its namespaces, written into the policy as CEL literals (no params, so
/// no admission request waits on a params cache).
fn subjects_policy(tenant: &TenantPlan, gitops: &GitOpsPlan) -> ValidatingAdmissionPolicy {
    let user = cel::string(&gitops.user);
    let group = cel::string(&gitops.break_glass);
    let variable = |name: &str, expression: String| Variable {
        name: name.to_string(),
        expression,
    };
    ValidatingAdmissionPolicy {
        metadata: subjects_meta(tenant),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".to_string()),
            match_constraints: Some(MatchResources {
                resource_rules: Some(vec![rule(
                    &["rbac.authorization.k8s.io"],
                    &["CREATE", "UPDATE"],
                    &["rolebindings"],
                )]),
                ..MatchResources::default()
            }),
            match_conditions: Some(vec![MatchCondition {
                name: "not-the-gitops-controller".to_string(),
                expression: format!(
                    "request.userInfo.username != {user} && !({group} in request.userInfo.groups)"
                ),
            }]),
            variables: Some(vec![
                variable("groups", cel::list(tenant.groups.values())),
                variable(
                    "namespaces",
                    cel::list(tenant.namespaces.iter().map(|namespace| &namespace.name)),
                ),
                variable(
                    "refused",
                    format!(
                        "has(object.subjects) ? object.subjects.filter(s, !({SUBJECT_ALLOWED})).map(s, s.kind + ' ' + (has(s.namespace) && s.namespace != '' ? s.namespace + '/' : '') + s.name) : []"
                    ),
                ),
            ]),
            validations: Some(vec![validation(
                "size(variables.refused) == 0",
                "RoleBindings in a tenant namespace may name only the tenant's own groups and ServiceAccounts of its own namespaces; remove the other subjects",
                Some(
                    "'RoleBinding ' + (has(object.metadata.name) ? object.metadata.name : object.metadata.generateName) + ' may not name ' + variables.refused.join(', ') + ': RoleBindings in a tenant namespace may name only the groups [' + variables.groups.join(', ') + '] and ServiceAccounts of the namespaces [' + variables.namespaces.join(', ') + ']; remove the other subjects'",
                ),
            )]),
            ..ValidatingAdmissionPolicySpec::default()
        }),
        status: None,
    }
}

fn rule(groups: &[&str], operations: &[&str], resources: &[&str]) -> NamedRuleWithOperations {
    let strings = |items: &[&str]| Some(items.iter().map(|item| item.to_string()).collect());
    NamedRuleWithOperations {
        api_groups: strings(groups),
        api_versions: strings(&["*"]),
        operations: strings(operations),
        resources: strings(resources),
        scope: Some("*".to_string()),
        ..NamedRuleWithOperations::default()
    }
}

fn validation(expression: &str, message: &str, message_expression: Option<&str>) -> Validation {
    Validation {
        expression: expression.to_string(),
        message: Some(message.to_string()),
        message_expression: message_expression.map(str::to_string),
        reason: Some("Forbidden".to_string()),
    }
}

/// Whether `object` (or `oldObject`) carries the managed-by label: a CEL expression.
fn carries_managed_label(which: &str) -> String {
    let (key, value) = MANAGED_BY;
    format!(
        "({which} != null && has({which}.metadata) && has({which}.metadata.labels) && \
         {key} in {which}.metadata.labels && {which}.metadata.labels[{key}] == {value})",
        key = cel::string(key),
        value = cel::string(value),
    )
}

/// Metadata fields an UPDATE that changes only finalizers may still change.
const FINALIZER_UPDATE_FIELDS: &str =
    "['finalizers', 'managedFields', 'resourceVersion', 'generation']";

fn guard_policy(gitops: &GitOpsPlan) -> ValidatingAdmissionPolicy {
    let user = cel::string(&gitops.user);
    let group = cel::string(&gitops.break_glass);
    let managed = format!(
        "{} || {}",
        carries_managed_label("object"),
        carries_managed_label("oldObject")
    );
    let not_gitops =
        format!("request.userInfo.username != {user} && !({group} in request.userInfo.groups)");
    let terminating = "request.operation == 'DELETE' && namespaceObject != null && \
                       has(namespaceObject.metadata.deletionTimestamp)";
    let finalizers_only = format!(
        "request.operation == 'UPDATE' && \
         object.all(k, k == 'metadata' || k == 'status' || (k in oldObject && object[k] == oldObject[k])) && \
         oldObject.all(k, k == 'metadata' || k == 'status' || k in object) && \
         object.metadata.all(k, k in {FINALIZER_UPDATE_FIELDS} || (k in oldObject.metadata && object.metadata[k] == oldObject.metadata[k])) && \
         oldObject.metadata.all(k, k in {FINALIZER_UPDATE_FIELDS} || k in object.metadata)"
    );
    let message = format!(
        "this object is managed by tenantc: only the GitOps controller {} (or the break-glass group {}) may change it; change the declaration in Git instead",
        gitops.user, gitops.break_glass
    );
    let message_expression = format!(
        "request.resource.resource + ' ' + \
         (has(request.namespace) && request.resource.resource != 'namespaces' ? request.namespace + '/' : '') + request.name + \
         ' is managed by tenantc: ' + request.userInfo.username + ' may not ' + request.operation + \
         ' it; only the GitOps controller ' + {user} + ' (or the break-glass group ' + {group} + \
         ') may; change the declaration in Git instead'"
    );
    ValidatingAdmissionPolicy {
        metadata: cluster_meta(GUARD_NAME),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".to_string()),
            match_constraints: Some(MatchResources {
                // `*` is every main resource of every group; subresources (`status`, `scale`,
                // `finalize`) stay with the controllers that write them.
                resource_rules: Some(vec![rule(&["*"], &["CREATE", "UPDATE", "DELETE"], &["*"])]),
                ..MatchResources::default()
            }),
            match_conditions: Some(vec![
                MatchCondition {
                    name: "managed-by-tenantc".to_string(),
                    expression: managed,
                },
                MatchCondition {
                    name: "not-the-gitops-controller".to_string(),
                    expression: not_gitops,
                },
            ]),
            validations: Some(vec![validation(
                &format!("({terminating}) || ({finalizers_only})"),
                &message,
                Some(&message_expression),
            )]),
            ..ValidatingAdmissionPolicySpec::default()
        }),
        status: None,
    }
}

/// The policy that refuses an UPDATE giving an existing Namespace tenantc's managed-by label,
/// even from the GitOps controller (only the break-glass group may): a tenant's namespace names
/// come from a tenant file, and a Namespace that already exists in the cluster (`kserve-infer`
/// for a tenant named `kserve`) would otherwise be adopted, with its Secrets opened to the
/// tenant's groups and pruned when the tenant goes.
fn adoption_policy(gitops: &GitOpsPlan) -> ValidatingAdmissionPolicy {
    let group = cel::string(&gitops.break_glass);
    ValidatingAdmissionPolicy {
        metadata: cluster_meta(ADOPTION_NAME),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".to_string()),
            match_constraints: Some(MatchResources {
                resource_rules: Some(vec![rule(&[""], &["UPDATE"], &["namespaces"])]),
                ..MatchResources::default()
            }),
            match_conditions: Some(vec![MatchCondition {
                name: "adopts-the-namespace".to_string(),
                expression: format!(
                    "{} && !{}",
                    carries_managed_label("object"),
                    carries_managed_label("oldObject")
                ),
            }]),
            validations: Some(vec![validation(
                &format!("{group} in request.userInfo.groups"),
                "tenantc creates its namespaces and never adopts one that exists: rename the tenant, or remove the namespace, or have the break-glass group label it",
                Some(&format!(
                    "'namespace ' + request.name + ' exists and is not managed by tenantc, which creates its namespaces and never adopts one (its Secrets would open to a tenant, and it would be pruned with the tenant): rename the tenant whose namespace this is, or remove the namespace, or have the break-glass group ' + {group} + ' label it'"
                )),
            )]),
            ..ValidatingAdmissionPolicySpec::default()
        }),
        status: None,
    }
}

/// tenantc's namespaces whose `enforce` level is relaxed by an exception.
fn excepted_namespaces() -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![
            LabelSelectorRequirement {
                key: MANAGED_BY.0.to_string(),
                operator: "In".to_string(),
                values: Some(vec![MANAGED_BY.1.to_string()]),
            },
            LabelSelectorRequirement {
                key: "pod-security.kubernetes.io/enforce".to_string(),
                operator: "NotIn".to_string(),
                values: Some(vec![PodSecurityLevel::Restricted.as_str().to_string()]),
            },
        ]),
        match_labels: None,
    }
}

fn binding(policy: &str, namespaces: Option<LabelSelector>) -> ValidatingAdmissionPolicyBinding {
    ValidatingAdmissionPolicyBinding {
        metadata: cluster_meta(policy),
        spec: Some(ValidatingAdmissionPolicyBindingSpec {
            policy_name: Some(policy.to_string()),
            validation_actions: Some(vec!["Deny".to_string()]),
            match_resources: namespaces.map(|selector| MatchResources {
                namespace_selector: Some(selector),
                ..MatchResources::default()
            }),
            param_ref: None,
        }),
    }
}

/// The `restricted` rules, as `(expression, message)`, over the variables of
/// [`exceptions_policy`]: `containers` (every container, init and ephemeral one),
/// `contexts` (their security contexts, `{}` where unset), `pod` (the pod's security context,
/// `{}` where unset) and `allowed` (the capabilities containers may add).
const RESTRICTED_RULES: &[(&str, &str)] = &[
    (
        "!(has(object.spec.hostNetwork) && object.spec.hostNetwork) && \
         !(has(object.spec.hostPID) && object.spec.hostPID) && \
         !(has(object.spec.hostIPC) && object.spec.hostIPC)",
        "pods may not share the node's network, PID or IPC namespace: remove hostNetwork, hostPID and hostIPC",
    ),
    (
        "variables.contexts.all(sc, !has(sc.privileged) || !sc.privileged)",
        "containers may not run privileged: remove securityContext.privileged",
    ),
    (
        "variables.contexts.all(sc, has(sc.allowPrivilegeEscalation) && sc.allowPrivilegeEscalation == false)",
        "every container must set securityContext.allowPrivilegeEscalation to false",
    ),
    (
        "variables.contexts.all(sc, has(sc.capabilities) && has(sc.capabilities.drop) && 'ALL' in sc.capabilities.drop)",
        "every container must drop ALL capabilities (securityContext.capabilities.drop: [ALL])",
    ),
    (
        "variables.contexts.all(sc, !has(sc.capabilities) || !has(sc.capabilities.add) || \
         sc.capabilities.add.all(cap, cap in variables.allowed))",
        "containers may add only the capabilities of this namespace's reviewed exception, and NET_BIND_SERVICE",
    ),
    (
        "variables.contexts.all(sc, has(sc.runAsNonRoot) ? sc.runAsNonRoot == true : \
         (has(variables.pod.runAsNonRoot) && variables.pod.runAsNonRoot == true))",
        "pods must run as non-root: set securityContext.runAsNonRoot to true",
    ),
    (
        "!(has(variables.pod.runAsUser) && variables.pod.runAsUser == 0) && \
         variables.contexts.all(sc, !(has(sc.runAsUser) && sc.runAsUser == 0))",
        "pods may not run as user 0: remove runAsUser 0",
    ),
    (
        "(!has(variables.pod.seccompProfile) || variables.pod.seccompProfile.type in ['RuntimeDefault', 'Localhost']) && \
         variables.contexts.all(sc, has(sc.seccompProfile) ? sc.seccompProfile.type in ['RuntimeDefault', 'Localhost'] : \
         has(variables.pod.seccompProfile))",
        "pods must set a seccomp profile of type RuntimeDefault or Localhost",
    ),
    (
        "!has(object.spec.volumes) || object.spec.volumes.all(v, v.all(k, k in ['name', 'configMap', 'csi', \
         'downwardAPI', 'emptyDir', 'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret']))",
        "volumes may be only configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected or secret (no hostPath)",
    ),
    (
        "variables.containers.all(c, !has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))",
        "containers may not use host ports: remove ports[].hostPort",
    ),
    (
        "!(has(variables.pod.windowsOptions) && has(variables.pod.windowsOptions.hostProcess) && variables.pod.windowsOptions.hostProcess) && \
         variables.contexts.all(sc, !(has(sc.windowsOptions) && has(sc.windowsOptions.hostProcess) && sc.windowsOptions.hostProcess))",
        "pods may not run as Windows host processes",
    ),
    (
        "variables.contexts.all(sc, !has(sc.procMount) || sc.procMount == 'Default')",
        "containers may not unmask /proc: remove securityContext.procMount",
    ),
    (
        "(variables.contexts + [variables.pod]).all(sc, !has(sc.seLinuxOptions) || \
         ((!has(sc.seLinuxOptions.type) || sc.seLinuxOptions.type in ['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']) && \
         !has(sc.seLinuxOptions.user) && !has(sc.seLinuxOptions.role)))",
        "SELinux options may set only a container type (container_t, container_init_t, container_kvm_t, container_engine_t)",
    ),
    (
        "(variables.contexts + [variables.pod]).all(sc, !has(sc.appArmorProfile) || \
         sc.appArmorProfile.type in ['RuntimeDefault', 'Localhost']) && \
         (!has(object.metadata.annotations) || object.metadata.annotations.all(k, \
         !k.startsWith('container.apparmor.security.beta.kubernetes.io/') || \
         object.metadata.annotations[k] == 'runtime/default' || object.metadata.annotations[k].startsWith('localhost/')))",
        "AppArmor may not be unconfined: use RuntimeDefault or a Localhost profile",
    ),
    (
        "!has(variables.pod.sysctls) || variables.pod.sysctls.all(s, s.name in ['kernel.shm_rmid_forced', \
         'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies', \
         'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', \
         'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes'])",
        "pods may set only the safe sysctls of the baseline Pod Security level",
    ),
];

fn exceptions_policy() -> ValidatingAdmissionPolicy {
    let annotation = cel::string(&capabilities_annotation());
    let variables = [
        (
            "containers",
            "object.spec.containers + \
             (has(object.spec.initContainers) ? object.spec.initContainers : []) + \
             (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])"
                .to_string(),
        ),
        (
            "contexts",
            "variables.containers.map(c, has(c.securityContext) ? c.securityContext : {})"
                .to_string(),
        ),
        (
            "pod",
            "has(object.spec.securityContext) ? object.spec.securityContext : {}".to_string(),
        ),
        (
            "allowed",
            format!(
                "['NET_BIND_SERVICE'] + (namespaceObject != null && has(namespaceObject.metadata.annotations) && \
                 {annotation} in namespaceObject.metadata.annotations ? \
                 namespaceObject.metadata.annotations[{annotation}].split(',') : [])"
            ),
        ),
    ];
    let added_capabilities = "'containers may add only ' + variables.allowed.join(', ') + \
         ' in this namespace (its reviewed exception and NET_BIND_SERVICE); remove ' + \
         variables.contexts.filter(sc, has(sc.capabilities) && has(sc.capabilities.add)).map(sc, \
         sc.capabilities.add.filter(cap, !(cap in variables.allowed))).filter(l, size(l) > 0).map(l, l.join(', ')).join(', ') + \
         ' from securityContext.capabilities.add'";
    let validations = RESTRICTED_RULES
        .iter()
        .map(|(expression, message)| {
            let message_expression = message
                .starts_with("containers may add only")
                .then_some(added_capabilities);
            validation(expression, message, message_expression)
        })
        .collect();
    ValidatingAdmissionPolicy {
        metadata: cluster_meta(EXCEPTIONS_NAME),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".to_string()),
            match_constraints: Some(MatchResources {
                resource_rules: Some(vec![rule(
                    &[""],
                    &["CREATE", "UPDATE"],
                    &["pods", "pods/ephemeralcontainers"],
                )]),
                ..MatchResources::default()
            }),
            variables: Some(
                variables
                    .into_iter()
                    .map(|(name, expression)| Variable {
                        name: name.to_string(),
                        expression,
                    })
                    .collect(),
            ),
            validations: Some(validations),
            ..ValidatingAdmissionPolicySpec::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::facts::defaults::{
        BREAK_GLASS as DEFAULT_BREAK_GLASS, GITOPS_USER as DEFAULT_GITOPS_USER,
    };

    #[test]
    fn cel_strings_escape_quotes_and_backslashes() {
        assert_eq!(cel::string("a'b\\c"), "'a\\'b\\\\c'");
    }

    #[test]
    fn the_cells_gitops_identities_reach_the_guard_escaped_and_defaults_apply() {
        use crate::validate::test_support::{CELL, compile_files, tenant};
        let guard_of = |cell: &str| -> String {
            let tenant = tenant("a", "hard", "pool \"train\" reserved=1");
            let compilation = compile_files(&[("cells/c1.kdl", cell), ("tenants/a.kdl", &tenant)]);
            assert!(!compilation.has_errors(), "{:?}", compilation.diagnostics);
            let tree = compilation.output.unwrap();
            String::from_utf8(
                tree[&format!("c1/cluster/validatingadmissionpolicy-{GUARD_NAME}.yaml")].clone(),
            )
            .unwrap()
        };
        let defaults = guard_of(CELL);
        assert!(defaults.contains(&format!(
            "request.userInfo.username != '{DEFAULT_GITOPS_USER}'"
        )));
        assert!(defaults.contains(&format!(
            "!('{DEFAULT_BREAK_GLASS}' in request.userInfo.groups)"
        )));
        let declared = guard_of(&CELL.replace(
            "    driver \"570\"\n",
            "    driver \"570\"\n    gitops user=\"o'brien\" break-glass=\"ops\\\\team\"\n",
        ));
        // A quote or a backslash in a name cannot end the CEL string early.
        assert!(
            declared.contains("request.userInfo.username != 'o\\\\'brien'"),
            "{declared}"
        );
        assert!(
            declared.contains("!('ops\\\\\\\\team' in request.userInfo.groups)"),
            "{declared}"
        );
        assert!(!declared.contains(DEFAULT_GITOPS_USER));
    }

    /// The subjects policy of the example fleet's `acme-research` in `us-east-1a`, without its
    /// match condition on the requesting user (the offline evaluator has no user), with the
    /// tenant's binding.
    fn subjects_outcome(subjects: serde_json::Value) -> crate::policy::Outcome {
        use crate::validate::test_support::{compile_files, example_files};
        let files = example_files();
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let plan = compile_files(&borrowed).plan.expect("a plan");
        let cell = plan
            .cells
            .iter()
            .find(|cell| cell.name == "us-east-1a")
            .expect("the cell");
        let tenant = cell
            .tenants
            .iter()
            .find(|tenant| tenant.name == "acme-research")
            .expect("the tenant");
        let mut policy = subjects_policy(tenant, &cell.gitops);
        if let Some(spec) = policy.spec.as_mut() {
            spec.match_conditions = None;
        }
        // The policy takes no params; the offline evaluator wants some object.
        let params = k8s_openapi::api::core::v1::ConfigMap::default();
        let binding = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "extra", "namespace": "acme-research-train"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tenantc:tenant-member"},
            "subjects": subjects,
        });
        crate::policy::evaluate(
            &policy,
            &subjects_binding(tenant),
            Some(&params),
            &crate::policy::Request::create("acme-research-train", binding),
        )
    }

    #[test]
    fn rolebindings_may_name_only_the_tenants_groups_and_service_accounts() {
        use serde_json::json;
        let group = |name: &str| json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name});
        let account = |namespace: &str, name: &str| json!({"kind": "ServiceAccount", "namespace": namespace, "name": name});
        for admitted in [
            json!([group("acme-research"), group("acme-research-admins")]),
            json!([account("acme-research-train", "trainer")]),
            json!([]),
        ] {
            assert_eq!(
                subjects_outcome(admitted.clone()),
                crate::policy::Outcome::Admitted,
                "{admitted}"
            );
        }
        for (denied, named) in [
            (
                json!([group("system:authenticated")]),
                "Group system:authenticated",
            ),
            (
                json!([group("acme-research"), group("globex-vision-admins")]),
                "Group globex-vision-admins",
            ),
            (json!([group("Acme-Research")]), "Group Acme-Research"),
            (
                json!([account("globex-vision-train", "vision-trainer")]),
                "ServiceAccount globex-vision-train/vision-trainer",
            ),
            (
                json!([account("kube-system", "default")]),
                "ServiceAccount kube-system/default",
            ),
            (
                json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]),
                "User alice",
            ),
            (
                json!([{"kind": "ServiceAccount", "name": "trainer"}]),
                "ServiceAccount trainer",
            ),
        ] {
            match subjects_outcome(denied.clone()) {
                crate::policy::Outcome::Denied(denials) => {
                    let message = &denials.first().expect("a denial").message;
                    assert!(
                        message.contains(&format!("may not name {named}")),
                        "{message}"
                    );
                    assert!(message.contains("acme-research-admins"), "{message}");
                }
                other => panic!("{denied} was not denied: {other:?}"),
            }
        }
    }

    #[test]
    fn the_subjects_policy_lets_the_gitops_controller_through_and_fails_closed() {
        use crate::validate::test_support::{compile_files, example_files};
        let files = example_files();
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let plan = compile_files(&borrowed).plan.expect("a plan");
        let tenant = plan
            .cells
            .iter()
            .flat_map(|cell| &cell.tenants)
            .next()
            .expect("a tenant");
        let policy = subjects_policy(
            tenant,
            &GitOpsPlan {
                user: "system:serviceaccount:argocd:argocd-application-controller".to_string(),
                break_glass: "system:masters".to_string(),
                sync: None,
            },
        );
        let spec = policy.spec.expect("a spec");
        assert_eq!(spec.failure_policy.as_deref(), Some("Fail"));
        let conditions = spec.match_conditions.expect("match conditions");
        assert!(conditions.iter().any(|condition| {
            condition
                .expression
                .contains("'system:serviceaccount:argocd:argocd-application-controller'")
                && condition
                    .expression
                    .contains("'system:masters' in request.userInfo.groups")
        }));
        for expression in spec
            .variables
            .iter()
            .flatten()
            .map(|variable| &variable.expression)
            .chain(
                spec.validations
                    .iter()
                    .flatten()
                    .map(|validation| &validation.expression),
            )
        {
            crate::policy::compiles(expression).expect("compiles");
        }
    }
}
