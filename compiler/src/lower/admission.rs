//! The tenant admission floor: one ValidatingAdmissionPolicy that serves every tenant of a cell
//! through params, one params ConfigMap and one binding per tenant.
//!
//! Consumes: the cell's plan and one tenant's plan. Produces: for `<cell>/cluster/`, the
//! platform namespace [`PARAMS_NAMESPACE`] and the policy [`POLICY_NAME`] (the same bytes in
//! every cell of one scheduler: everything that differs lives in the params); for
//! `<cell>/tenants/<tenant>/`, the tenant's params ConfigMap (in [`PARAMS_NAMESPACE`], which no
//! tenant role can write) and its ValidatingAdmissionPolicyBinding, which selects the tenant's
//! namespaces by `kubernetes.io/metadata.name` and names the ConfigMap in `paramRef`.
//!
//! In a Volcano cell the floor holds pods to Volcano instead of Kueue ([`rules`]: the scheduler
//! name, the tenant's own queue, no `volcano.sh/` keys), and a second policy,
//! [`PODGROUP_POLICY_NAME`], bound per tenant with the same params, judges PodGroups: the
//! tenant's queue and priority only, no `volcano.sh/` keys, and no status written by the tenant
//! (`docs/volcano.md`).
//!
//! Invariants:
//! - Fail closed: `failurePolicy: Fail`, `parameterNotFoundAction: Deny`, `validationActions:
//!   [Deny]`; a missing params key is a runtime error and so a denial, and an empty list (the
//!   weight digests (a tenant without verified weights) admits nothing.
//! - Every list in the params is one comma-separated string (ConfigMap values are strings),
//!   read back by the variables below with the Kubernetes strings extension's `split`; no list
//!   item can contain a comma (names, label keys and values, taints and registries cannot).
//! - Every expression uses only what the in-process evaluator (`crate::policy`) implements and
//!   the policy tests run: the CEL standard macros and functions and the strings extension
//!   (`split`, `join`, `lowerAscii`, `replace`, `lastIndexOf`, `substring`), which Kubernetes
//!   has offered since 1.29.
//! - A tenant's params and binding depend only on that tenant and its cell, so editing a tenant
//!   changes only its own folder.
//! - No rule compares a cluster-wide or cross-namespace name with a tenant's name prefix
//!   (tenant `acme` is a prefix of `acme-research`): namespaces are selected by exact name,
//!   and a claim may not name or select a PersistentVolume or read another namespace at all.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MatchResources, NamedRuleWithOperations, ParamKind, ParamRef,
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    ValidatingAdmissionPolicyBindingSpec, ValidatingAdmissionPolicySpec, Validation, Variable,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::engines;
use super::{body, cluster_meta, managed_labels};
use crate::emit::Body;
use crate::emit::InternalError;
use crate::facts::pod_security::PodSecurityLevel;
use crate::kube::labels::{NAMESPACE_NAME_LABEL, TENANT_LABEL};
/// The schedulers a floor is made for ([`rules`]), for the tools that judge a cell's floor.
pub use crate::model::Scheduler;
use crate::model::{AdmissionEngine, DeviceMode};
use crate::plan::admission::{ParamKey, params};
use crate::plan::{CellPlan, TenantPlan};

/// The platform namespace that holds every tenant's admission params.
pub const PARAMS_NAMESPACE: &str = "tenantc-system";
/// The name of the policy.
pub const POLICY_NAME: &str = "tenantc-tenant-floor";
/// The annotation that names the weight digest a pod loads.
pub use crate::kube::labels::WEIGHT_DIGEST_ANNOTATION;
/// The Kueue label that names a pod's LocalQueue.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// The Kueue label that names a workload's WorkloadPriorityClass.
pub const PRIORITY_LABEL: &str = "kueue.x-k8s.io/priority-class";
/// The name of a tenant's params ConfigMap.
pub fn params_name(tenant: &str) -> String {
    format!("tenant-{tenant}")
}

/// The name of a tenant's binding.
pub fn binding_name(tenant: &str) -> String {
    format!("{POLICY_NAME}-{tenant}")
}

/// The kinds the policy matches, as `(api group, version, resource)`: Pods, where every
/// workload ends up, the built-in controllers whose pod template sits at `spec.template`, and
/// CronJobs (template at `spec.jobTemplate.spec.template`), so that their users see a denial
/// when they apply, not later in events; and PersistentVolumeClaims, which a tenant can create
/// directly to bind a volume.
pub const MATCHED: &[(&str, &str, &str)] = &[
    ("", "v1", "persistentvolumeclaims"),
    ("", "v1", "pods"),
    ("", "v1", "pods/ephemeralcontainers"),
    ("apps", "v1", "daemonsets"),
    ("apps", "v1", "deployments"),
    ("apps", "v1", "replicasets"),
    ("apps", "v1", "statefulsets"),
    ("batch", "v1", "cronjobs"),
    ("batch", "v1", "jobs"),
];

/// The requests a validation judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judges {
    /// A CREATE or UPDATE, by the object it writes.
    Writes,
    /// A DELETE of a workload (whose `object` is null), by its delete options.
    Deletes,
}

/// Whether the policy judges the DELETE of a matched resource: the workload kinds, every
/// resource of `apps` and `batch` in [`MATCHED`], whose pods an orphaning delete would leave
/// running (`orphaning-delete`); not Pods or PersistentVolumeClaims.
pub fn judges_deletes(group: &str) -> bool {
    matches!(group, "apps" | "batch")
}

/// One validation of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// A short name for tests and `tenantc test-policy`.
    pub name: &'static str,
    /// The requests it judges; on every other request the emitted validation holds without
    /// evaluating `expression` (a DELETE has no object to read).
    pub judges: Judges,
    /// The CEL expression; true admits.
    pub expression: &'static str,
    /// The fixed message, used when the message expression fails.
    pub message: &'static str,
    /// The CEL message expression, which names the offending value.
    pub message_expression: &'static str,
}

impl Rule {
    /// The expression the policy carries: `expression`, guarded so that it holds on the
    /// requests the rule does not judge.
    pub fn emitted_expression(&self) -> String {
        match self.judges {
            Judges::Writes => format!("request.operation == 'DELETE' || ({})", self.expression),
            Judges::Deletes => format!("request.operation != 'DELETE' || ({})", self.expression),
        }
    }
}

/// A named CEL variable of the policy.
pub const VARIABLES: &[(&str, &str)] = &[
    ("isPod", "object.kind == 'Pod'"),
    ("isCronJob", "object.kind == 'CronJob'"),
    // A PersistentVolumeClaim has no pod spec: the pod rules see an empty one and hold.
    ("isClaim", "object.kind == 'PersistentVolumeClaim'"),
    (
        "spec",
        "variables.isClaim ? {} : (variables.isPod ? object.spec : (variables.isCronJob ? object.spec.jobTemplate.spec.template.spec : object.spec.template.spec))",
    ),
    (
        "meta",
        "variables.isClaim ? {} : variables.isPod ? object.metadata : (variables.isCronJob ? (has(object.spec.jobTemplate.spec.template.metadata) ? object.spec.jobTemplate.spec.template.metadata : {}) : (has(object.spec.template.metadata) ? object.spec.template.metadata : {}))",
    ),
    (
        "objectLabels",
        "has(object.metadata.labels) ? object.metadata.labels : {}",
    ),
    (
        "labels",
        "has(variables.meta.labels) ? variables.meta.labels : {}",
    ),
    (
        "annotations",
        "has(variables.meta.annotations) ? variables.meta.annotations : {}",
    ),
    // The labels Kueue reads to queue a workload: the object's own, or, for a CronJob, its Job
    // template's, which every Job it creates carries. A Job created without labels gets its pod
    // template's (batch/v1 defaulting, before admission), so empty Job labels stand for those.
    (
        "workloadLabels",
        "variables.isClaim ? {} : variables.isCronJob ? (has(object.spec.jobTemplate.metadata) && has(object.spec.jobTemplate.metadata.labels) && size(object.spec.jobTemplate.metadata.labels) > 0 ? object.spec.jobTemplate.metadata.labels : variables.labels) : (has(object.metadata.labels) && size(object.metadata.labels) > 0 ? object.metadata.labels : (object.kind == 'Job' ? variables.labels : {}))",
    ),
    (
        "containers",
        "(has(variables.spec.containers) ? variables.spec.containers : []) + (has(variables.spec.initContainers) ? variables.spec.initContainers : []) + (has(variables.spec.ephemeralContainers) ? variables.spec.ephemeralContainers : [])",
    ),
    (
        "volumes",
        "has(variables.spec.volumes) ? variables.spec.volumes : []",
    ),
    // Each container's resource names, once each: the API server copies an extended resource's
    // limit into its requests, so a name may be in both.
    (
        "resourceNames",
        "variables.containers.map(c, (has(c.resources) && has(c.resources.limits) ? c.resources.limits.map(r, r) : []) + (has(c.resources) && has(c.resources.requests) ? c.resources.requests.filter(r, !(has(c.resources.limits) && r in c.resources.limits)) : []))",
    ),
    (
        "requestsGpu",
        "variables.containers.exists(c, has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, r.startsWith('nvidia.com/') && string(c.resources.limits[r]) != '0')) || (has(c.resources.requests) && c.resources.requests.exists(r, r.startsWith('nvidia.com/') && string(c.resources.requests[r]) != '0'))))",
    ),
    (
        "gpuPod",
        "variables.requestsGpu || (has(variables.spec.resourceClaims) && size(variables.spec.resourceClaims) > 0)",
    ),
    (
        "runtimeClasses",
        "params.data.runtimeClasses == '' ? [] : params.data.runtimeClasses.split(',')",
    ),
    (
        "gpuRuntimeClasses",
        "params.data.gpuRuntimeClasses == '' ? [] : params.data.gpuRuntimeClasses.split(',')",
    ),
    (
        "registries",
        "params.data.registries == '' ? [] : params.data.registries.split(',')",
    ),
    (
        "queues",
        "params.data.queues == '' ? [] : params.data.queues.split(',')",
    ),
    (
        "priorities",
        "params.data.priorities == '' ? [] : params.data.priorities.split(',')",
    ),
    (
        "badPriorities",
        "(('kueue.x-k8s.io/priority-class' in variables.labels ? [variables.labels['kueue.x-k8s.io/priority-class']] : []) + (!variables.isPod && 'kueue.x-k8s.io/priority-class' in variables.workloadLabels ? [variables.workloadLabels['kueue.x-k8s.io/priority-class']] : [])).filter(p, !((request.namespace + '=' + p) in variables.priorities))",
    ),
    (
        "gpuModels",
        "params.data.gpuModels == '' ? [] : params.data.gpuModels.split(',')",
    ),
    (
        "weightDigests",
        "params.data.weightDigests == '' ? [] : params.data.weightDigests.split(',')",
    ),
    (
        "inferenceNamespaces",
        "params.data.inferenceNamespaces == '' ? [] : params.data.inferenceNamespaces.split(',')",
    ),
    (
        "trainingServiceAccounts",
        "params.data.trainingServiceAccounts == '' ? [] : params.data.trainingServiceAccounts.split(',')",
    ),
    // Forbidden keys compared without case and without the separators `-`, `_` and `.`, so
    // that `user_email`, `User.Email` and `userEmail` match `user-email`.
    (
        "forbiddenLabelKeys",
        "params.data.forbiddenLabelKeys == '' ? [] : params.data.forbiddenLabelKeys.split(',').map(f, f.lowerAscii().replace('-', '').replace('_', '').replace('.', ''))",
    ),
    (
        "forbiddenTaints",
        "params.data.forbiddenTaints == '' ? [] : params.data.forbiddenTaints.split(',').map(f, {'key': f.split('=')[0], 'value': f.split('=')[1].split(':')[0], 'effect': f.split(':')[1]})",
    ),
    // Every repelling pool taint of the cell, the tenant's own pools' included: the taints a
    // pod that requests no GPU may not tolerate, so that CPU pods stay off GPU nodes (where a
    // pod without the pool's runtime class would run beside the tenants the runtime isolates).
    (
        "poolTaints",
        "params.data.poolTaints == '' ? [] : params.data.poolTaints.split(',').map(f, {'key': f.split('=')[0], 'value': f.split('=')[1].split(':')[0], 'effect': f.split(':')[1]})",
    ),
    (
        "poolTolerations",
        "variables.gpuPod ? [] : (has(variables.spec.tolerations) ? variables.spec.tolerations : []).filter(t, variables.poolTaints.exists(f, ((!has(t.key) || t.key == '') ? (has(t.operator) && t.operator == 'Exists') : (t.key == f.key && ((has(t.operator) && t.operator == 'Exists') || (has(t.value) ? t.value : '') == f.value))) && (!has(t.effect) || t.effect == '' || t.effect == f.effect)))",
    ),
    (
        "badTolerations",
        "(has(variables.spec.tolerations) ? variables.spec.tolerations : []).filter(t, variables.forbiddenTaints.exists(f, ((!has(t.key) || t.key == '') ? (has(t.operator) && t.operator == 'Exists') : (t.key == f.key && ((has(t.operator) && t.operator == 'Exists') || (has(t.value) ? t.value : '') == f.value))) && (!has(t.effect) || t.effect == '' || t.effect == f.effect)))",
    ),
    (
        "badImages",
        "variables.containers.filter(c, !has(c.image) || !variables.registries.exists(r, c.image.startsWith(r + '/')) || !c.image.matches('@sha256:[a-f0-9]{64}$')).map(c, has(c.image) ? c.image : '(no image)') + variables.volumes.filter(v, has(v.image) && (!has(v.image.reference) || !variables.registries.exists(r, v.image.reference.startsWith(r + '/')) || !v.image.reference.matches('@sha256:[a-f0-9]{64}$'))).map(v, has(v.image.reference) ? v.image.reference : '(no image reference)')",
    ),
    (
        "loadsWeights",
        "'tenantc.io/weight-digest' in variables.annotations || variables.volumes.exists(v, v.name == 'weights' || v.name.startsWith('weights-'))",
    ),
    (
        "secretNames",
        "variables.volumes.filter(v, has(v.secret) && has(v.secret.secretName)).map(v, v.secret.secretName) + variables.volumes.filter(v, has(v.projected) && has(v.projected.sources)).map(v, v.projected.sources.filter(s, has(s.secret) && has(s.secret.name)).map(s, s.secret.name)).map(names, names.join(',')).filter(n, n != '') + variables.containers.map(c, (has(c.env) ? c.env.filter(e, has(e.valueFrom) && has(e.valueFrom.secretKeyRef) && has(e.valueFrom.secretKeyRef.name)).map(e, e.valueFrom.secretKeyRef.name) : []) + (has(c.envFrom) ? c.envFrom.filter(e, has(e.secretRef) && has(e.secretRef.name)).map(e, e.secretRef.name) : [])).map(names, names.join(',')).filter(n, n != '') + (has(variables.spec.imagePullSecrets) ? variables.spec.imagePullSecrets.filter(s, has(s.name)).map(s, s.name) : []) + variables.volumes.filter(v, has(v.csi) && has(v.csi.nodePublishSecretRef) && has(v.csi.nodePublishSecretRef.name)).map(v, v.csi.nodePublishSecretRef.name)",
    ),
    (
        "claimNames",
        "variables.volumes.filter(v, has(v.persistentVolumeClaim)).map(v, v.persistentVolumeClaim.claimName)",
    ),
    // The claim specs the request creates: the claim templates of generic ephemeral volumes
    // and of a StatefulSet, and a PersistentVolumeClaim created directly. A claim's spec cannot
    // change after creation except for its size and, once, `volumeName`, which
    // `claimBindings` judges on an update.
    (
        "claimTemplates",
        "variables.volumes.filter(v, has(v.ephemeral) && has(v.ephemeral.volumeClaimTemplate) && has(v.ephemeral.volumeClaimTemplate.spec)).map(v, v.ephemeral.volumeClaimTemplate.spec) + (object.kind == 'StatefulSet' && has(object.spec.volumeClaimTemplates) ? object.spec.volumeClaimTemplates.filter(t, has(t.spec)).map(t, t.spec) : []) + (variables.isClaim && request.operation == 'CREATE' ? [object.spec] : [])",
    ),
    // How many claims the request makes through templates, which quota admission judges only
    // when a controller creates them (a claim created directly it judges at once).
    (
        "claimTemplateCount",
        "size(variables.claimTemplates) - (variables.isClaim && request.operation == 'CREATE' ? 1 : 0)",
    ),
    // What the claims copy inside their own namespace: a claim or snapshot by `dataSource` or
    // `dataSourceRef` name, once when the two agree (the API server copies one into the other
    // in a PersistentVolumeClaim).
    (
        "claimTemplateNames",
        "variables.claimTemplates.map(s, (has(s.dataSource) && has(s.dataSource.name) ? [s.dataSource.name] : []) + (has(s.dataSourceRef) && has(s.dataSourceRef.name) && !(has(s.dataSource) && has(s.dataSource.name) && s.dataSource.name == s.dataSourceRef.name) ? [s.dataSourceRef.name] : [])).map(names, names.join(',')).filter(n, n != '')",
    ),
    // What a claim binds or copies outside its namespace: a PersistentVolume by `volumeName`,
    // by `selector`, or by an empty `storageClassName`, which binds any available volume without
    // a class (PersistentVolumes are cluster-wide, and their names and labels are nobody's), or
    // data of another namespace by `dataSourceRef.namespace`. On an update of a
    // PersistentVolumeClaim only a new `volumeName` counts, unless the PersistentVolume
    // controller sets it (the identities of kube-controller-manager with and without
    // `--use-service-account-credentials`), as it does when it binds a claim.
    (
        "claimBindings",
        "variables.claimTemplates.map(s, (has(s.volumeName) && s.volumeName != '' ? ['spec.volumeName ' + s.volumeName] : []) + (has(s.selector) ? ['spec.selector'] : []) + (has(s.storageClassName) && s.storageClassName == '' ? ['spec.storageClassName \"\" (binds any PersistentVolume without a class)'] : []) + (has(s.dataSourceRef) && has(s.dataSourceRef.namespace) && s.dataSourceRef.namespace != '' ? ['spec.dataSourceRef.namespace ' + s.dataSourceRef.namespace] : [])).map(found, found.join(', ')).filter(f, f != '') + (variables.isClaim && request.operation == 'UPDATE' && (has(object.spec.volumeName) ? object.spec.volumeName : '') != (has(oldObject.spec.volumeName) ? oldObject.spec.volumeName : '') && !(request.userInfo.username in ['system:kube-controller-manager', 'system:serviceaccount:kube-system:persistent-volume-binder']) ? ['spec.volumeName ' + (has(object.spec.volumeName) ? object.spec.volumeName : '')] : [])",
    ),
    // The claims a StatefulSet's controller will make for its pods, `<template>-<name>-<ordinal>`,
    // whose names do not start with the tenant's prefix whatever the ordinal: its pods would
    // mount them and be refused by `own-references`, so the StatefulSet is refused at once,
    // naming the template to rename.
    (
        "statefulSetClaims",
        "object.kind == 'StatefulSet' && has(object.spec.volumeClaimTemplates) ? object.spec.volumeClaimTemplates.filter(t, has(t.metadata) && has(t.metadata.name) && !(t.metadata.name + '-' + object.metadata.name + '-').startsWith(params.data.tenant + '-')).map(t, 'the claims ' + t.metadata.name + '-' + object.metadata.name + '-<ordinal> of claim template ' + t.metadata.name + ' (name the template ' + params.data.tenant + '-' + t.metadata.name + ')') : []",
    ),
    (
        "foreignReferences",
        "(variables.secretNames + variables.claimTemplateNames).map(n, n.split(',')).map(names, names.filter(n, !n.startsWith(params.data.tenant + '-')).join(',')).filter(n, n != '') + variables.claimNames.filter(n, !n.startsWith(params.data.tenant + '-')) + variables.statefulSetClaims",
    ),
    (
        "missingLabels",
        "(['tenant.platform/tenant', 'tenant.platform/cell'] + (variables.gpuPod ? ['tenant.platform/sku'] : [])).filter(k, !(k in variables.labels))",
    ),
    // Every label key of the pod (template), the workload and the object itself, once each.
    (
        "labelKeys",
        "variables.labels.map(k, k) + variables.workloadLabels.filter(k, !(k in variables.labels)) + variables.objectLabels.filter(k, !(k in variables.labels) && !(k in variables.workloadLabels))",
    ),
    // A key is forbidden when, normalised like the forbidden keys, it or its name after the
    // prefix (`example.com/User_Email`) is one of them.
    // Whether the request comes from the tenant itself: a member of one of its groups, or a
    // ServiceAccount of one of its namespaces. Kueue, the workload controllers and the platform
    // are none of these.
    (
        "tenantPrincipal",
        "(params.data.groups == '' ? [] : params.data.groups.split('\\n')).exists(g, g in request.userInfo.groups) || (params.data.namespaces == '' ? [] : params.data.namespaces.split(',')).exists(n, request.userInfo.username.startsWith('system:serviceaccount:' + n + ':'))",
    ),
    (
        "oldObjectLabels",
        "request.operation == 'UPDATE' && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}",
    ),
    // Containers whose probes or lifecycle handlers name a host: the kubelet sends those
    // requests from the node's network, where no NetworkPolicy applies.
    (
        "probeHostContainers",
        "variables.containers.filter(c, (has(c.livenessProbe) && ((has(c.livenessProbe.httpGet) && has(c.livenessProbe.httpGet.host) && c.livenessProbe.httpGet.host != '') || (has(c.livenessProbe.tcpSocket) && has(c.livenessProbe.tcpSocket.host) && c.livenessProbe.tcpSocket.host != ''))) || (has(c.readinessProbe) && ((has(c.readinessProbe.httpGet) && has(c.readinessProbe.httpGet.host) && c.readinessProbe.httpGet.host != '') || (has(c.readinessProbe.tcpSocket) && has(c.readinessProbe.tcpSocket.host) && c.readinessProbe.tcpSocket.host != ''))) || (has(c.startupProbe) && ((has(c.startupProbe.httpGet) && has(c.startupProbe.httpGet.host) && c.startupProbe.httpGet.host != '') || (has(c.startupProbe.tcpSocket) && has(c.startupProbe.tcpSocket.host) && c.startupProbe.tcpSocket.host != ''))) || (has(c.lifecycle) && has(c.lifecycle.postStart) && ((has(c.lifecycle.postStart.httpGet) && has(c.lifecycle.postStart.httpGet.host) && c.lifecycle.postStart.httpGet.host != '') || (has(c.lifecycle.postStart.tcpSocket) && has(c.lifecycle.postStart.tcpSocket.host) && c.lifecycle.postStart.tcpSocket.host != ''))) || (has(c.lifecycle) && has(c.lifecycle.preStop) && ((has(c.lifecycle.preStop.httpGet) && has(c.lifecycle.preStop.httpGet.host) && c.lifecycle.preStop.httpGet.host != '') || (has(c.lifecycle.preStop.tcpSocket) && has(c.lifecycle.preStop.tcpSocket.host) && c.lifecycle.preStop.tcpSocket.host != '')))).map(c, c.name)",
    ),
    (
        "oldTemplateAnnotations",
        "request.operation == 'UPDATE' && !variables.isPod && !variables.isClaim && has(oldObject.spec.template) && has(oldObject.spec.template.metadata) && has(oldObject.spec.template.metadata.annotations) ? oldObject.spec.template.metadata.annotations : {}",
    ),
    (
        "oldControllerReferences",
        "request.operation == 'UPDATE' && has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences.filter(r, has(r.controller) && r.controller) : []",
    ),
    // The controller owner references of the object, but one to a CronJob, which Kueue does
    // not manage (`kubectl create job --from=cronjob/…` sets it).
    (
        "controllerReferences",
        "has(object.metadata.ownerReferences) ? object.metadata.ownerReferences.filter(r, has(r.controller) && r.controller && !(r.kind == 'CronJob' && r.apiVersion.startsWith('batch/')) && !variables.oldControllerReferences.exists(o, o.uid == r.uid && o.kind == r.kind && o.name == r.name && o.apiVersion == r.apiVersion)) : []",
    ),
    // What a tenant's update changes of what makes a controller own the object: its owner
    // references (but where it gives the object a new controller, `controller-references`'
    // case), and, unless its controller is a CronJob (which finds its Jobs by reference), any
    // label: the Job, ReplicaSet and StatefulSet controllers and the Deployment controller
    // select what they own by label, and release what their selector no longer matches. (The
    // labels are not named one by one: the API server iterates a map in no fixed order, and
    // the message must be the same on every request.)
    (
        "ownershipChanges",
        "request.operation != 'UPDATE' || !variables.tenantPrincipal || size(variables.oldControllerReferences) == 0 ? [] : ((size(variables.controllerReferences) == 0 && (has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []) != oldObject.metadata.ownerReferences) ? ['metadata.ownerReferences'] : []) + (variables.oldControllerReferences.exists(r, !(r.kind == 'CronJob' && r.apiVersion.startsWith('batch/'))) && variables.objectLabels != variables.oldObjectLabels ? ['the labels'] : [])",
    ),
    // Whether a DELETE leaves the workload's pods (or other dependents) behind: an explicit
    // `propagationPolicy: Orphan`, the deprecated `orphanDependents: true`, or neither on a
    // `batch/v1` Job, whose API deletes orphan its pods by default.
    (
        "orphans",
        "request.operation == 'DELETE' && (has(request.options.propagationPolicy) ? request.options.propagationPolicy == 'Orphan' : (has(request.options.orphanDependents) ? request.options.orphanDependents : (request.resource.group == 'batch' && request.resource.resource == 'jobs')))",
    ),
    // Annotations of the pod (template) that the container runtime or its plugins act on:
    // CDI device requests (`cdi.k8s.io/…`, and a vendor's prefix such as the NVIDIA toolkit's
    // `nvidia.cdi.k8s.io/container.<name>`), Kata's sandbox settings and CRI-O's devices.
    (
        "runtimeAnnotations",
        "variables.annotations.filter(k, k.startsWith('cdi.k8s.io/') || (k.contains('/') && k.substring(0, k.indexOf('/')).endsWith('.cdi.k8s.io')) || k.startsWith('io.katacontainers.') || k.startsWith('io.kubernetes.cri-o.'))",
    ),
    // What a tenant's update takes away from Kueue's hold on a workload: a Kueue scheduling
    // gate of a pod, the label that marks a pod as Kueue's, or a Job's suspension.
    (
        "kueueReleases",
        "request.operation != 'UPDATE' || !variables.tenantPrincipal ? [] : (variables.isPod ? (has(oldObject.spec.schedulingGates) ? oldObject.spec.schedulingGates : []).filter(g, g.name.startsWith('kueue.x-k8s.io/') && !(has(object.spec.schedulingGates) && object.spec.schedulingGates.exists(n, n.name == g.name))).map(g, 'the scheduling gate ' + g.name) : []) + ('kueue.x-k8s.io/managed' in variables.oldObjectLabels && !('kueue.x-k8s.io/managed' in variables.objectLabels) ? ['the label kueue.x-k8s.io/managed'] : []) + (object.kind == 'Job' && has(oldObject.spec.suspend) && oldObject.spec.suspend && !(has(object.spec.suspend) && object.spec.suspend) ? ['spec.suspend'] : []) + (object.kind == 'Job' && !(has(oldObject.spec.suspend) && oldObject.spec.suspend) && (has(object.spec.parallelism) ? object.spec.parallelism : 1) > (has(oldObject.spec.parallelism) ? oldObject.spec.parallelism : 1) ? ['spec.parallelism of a running Job (Kueue admitted the old one)'] : []) + ('kueue.x-k8s.io/pod-suspending-parent' in variables.oldTemplateAnnotations && !('kueue.x-k8s.io/pod-suspending-parent' in variables.annotations) ? ['the pod template annotation kueue.x-k8s.io/pod-suspending-parent'] : []) + (size(variables.oldControllerReferences) > 0 && !variables.isPod && has(object.spec.template) && object.spec.template != oldObject.spec.template ? ['the pod template of a ' + object.kind + ' that ' + variables.oldControllerReferences[0].kind + ' ' + variables.oldControllerReferences[0].name + ' controls'] : [])",
    ),
    // The node labels of each pool where the tenant has host access, as lists of `key=value`:
    // what a pod that uses the host must select (`&` joins one pool's labels, `,` the pools).
    (
        "hostPools",
        "params.data.hostPools == '' ? [] : params.data.hostPools.split(',').map(p, p.split('&'))",
    ),
    (
        "nodeSelector",
        "has(variables.spec.nodeSelector) ? variables.spec.nodeSelector : {}",
    ),
    // What the pod uses of its node that host access grants: RDMA devices, and capabilities
    // other than NET_BIND_SERVICE (which only an excepted namespace admits). Host namespaces
    // are never granted (`host-namespaces`).
    (
        "hostUses",
        "(variables.resourceNames.exists(names, names.exists(r, r.startsWith('rdma/'))) ? ['rdma/* devices'] : []) + (variables.containers.exists(c, has(c.securityContext) && has(c.securityContext.capabilities) && has(c.securityContext.capabilities.add) && c.securityContext.capabilities.add.exists(a, a != 'NET_BIND_SERVICE')) ? ['added capabilities'] : [])",
    ),
    (
        "onHostPool",
        "variables.hostPools.exists(p, p.all(l, l.split('=')[0] in variables.nodeSelector && variables.nodeSelector[l.split('=')[0]] == l.split('=')[1]))",
    ),
    // Resources that no ResourceQuota of the cell counts: a device plugin may advertise any
    // name (`nvidia.com/hostdev`, `intel.com/sriov_netdevice`), a quota caps only the names it
    // lists, and no quota lists a node's hugepages. RDMA devices are `rdma-devices`' to judge.
    (
        "countedResources",
        "params.data.countedResources == '' ? [] : params.data.countedResources.split(',')",
    ),
    // The pod-level resources (`spec.resources`), as one more list of names.
    (
        "podResourceNames",
        "has(variables.spec.resources) ? [(has(variables.spec.resources.limits) ? variables.spec.resources.limits.map(r, r) : []) + (has(variables.spec.resources.requests) ? variables.spec.resources.requests.filter(r, !(has(variables.spec.resources.limits) && r in variables.spec.resources.limits)) : [])] : []",
    ),
    (
        "uncountedResources",
        "(variables.resourceNames + variables.podResourceNames).map(names, names.filter(r, !(r in ['cpu', 'memory', 'ephemeral-storage'] || r.startsWith('rdma/') || r in variables.countedResources)).join(',')).filter(n, n != '')",
    ),
    (
        "badLabelKeys",
        "variables.labelKeys.filter(k, variables.forbiddenLabelKeys.exists(f, f == k.lowerAscii().replace('-', '').replace('_', '').replace('.', '') || f == k.substring(k.lastIndexOf('/') + 1).lowerAscii().replace('-', '').replace('_', '').replace('.', '')))",
    ),
];

/// The validations, in the order the API server evaluates them.
pub const RULES: &[Rule] = &[
    Rule {
        name: "runtime-class",
        judges: Judges::Writes,
        expression: "!variables.gpuPod || (has(variables.spec.runtimeClassName) ? variables.runtimeClasses.exists(r, r == variables.spec.runtimeClassName) : params.data.runtimeClassRequired != 'true')",
        message: "GPU pods must set spec.runtimeClassName to a runtime class their tenant's trust class allows",
        message_expression: "params.data.runtimeClassRequired == 'true' ? 'GPU pods of tenant ' + params.data.tenant + ' must set spec.runtimeClassName to one of [' + params.data.runtimeClasses + ']' + (has(variables.spec.runtimeClassName) ? ', not ' + variables.spec.runtimeClassName : '') : 'GPU pods must leave spec.runtimeClassName unset: this cell declares no runtime class'",
    },
    Rule {
        name: "gpu-runtime-class",
        judges: Judges::Writes,
        expression: "!has(variables.spec.runtimeClassName) || variables.spec.runtimeClassName == '' || (variables.spec.runtimeClassName in variables.gpuRuntimeClasses && variables.gpuPod)",
        message: "pods may name only a runtime class the cell declares, and only when they request a GPU (nvidia.com/* in resources.limits of a container, or a device claim in spec.resourceClaims): the runtime hands the node's GPUs to containers that request none",
        message_expression: "variables.spec.runtimeClassName in variables.gpuRuntimeClasses ? 'runtime class ' + variables.spec.runtimeClassName + ' hands the GPUs of its node to containers, so a pod that names it must request a GPU (nvidia.com/* in resources.limits of a container or init container, or a device claim in spec.resourceClaims); request one, or remove spec.runtimeClassName' : 'runtime class ' + variables.spec.runtimeClassName + ' is not one the cell declares ([' + params.data.gpuRuntimeClasses + ']); other classes on the node (such as nvidia-cdi or nvidia-legacy) may hand its GPUs to any container, so remove spec.runtimeClassName'",
    },
    Rule {
        name: "pool-tolerations",
        judges: Judges::Writes,
        expression: "size(variables.badTolerations) == 0",
        message: "pods may tolerate only the taints of the pools their tenant uses",
        message_expression: "'pods of tenant ' + params.data.tenant + ' may not tolerate the taints of pools it does not use; remove the tolerations of ' + variables.badTolerations.map(t, has(t.key) && t.key != '' ? t.key : '(every taint)').join(', ')",
    },
    Rule {
        name: "cpu-pool-tolerations",
        judges: Judges::Writes,
        expression: "size(variables.poolTolerations) == 0",
        message: "pods that request no GPU may not tolerate the taints of GPU pools: they would run on GPU nodes without the pool's runtime class",
        message_expression: "'pods of tenant ' + params.data.tenant + ' that request no GPU may not tolerate the taints of GPU pools (' + variables.poolTolerations.map(t, has(t.key) && t.key != '' ? t.key : '(every taint)').join(', ') + '): they would run on GPU nodes without the runtime class that isolates the pool; request a GPU, or remove the tolerations'",
    },
    Rule {
        name: "runtime-annotations",
        judges: Judges::Writes,
        expression: "size(variables.runtimeAnnotations) == 0",
        message: "pods may not carry annotations that the container runtime reads to inject devices or configure the sandbox (cdi.k8s.io/, <vendor>.cdi.k8s.io/, io.katacontainers., io.kubernetes.cri-o.)",
        message_expression: "'annotations ' + variables.runtimeAnnotations.join(', ') + ' are not allowed: the container runtime or its plugins read them to inject devices or configure the sandbox, outside every quota; request devices in resources.limits instead'",
    },
    Rule {
        name: "local-queue",
        judges: Judges::Writes,
        expression: "!variables.gpuPod || [variables.labels, variables.workloadLabels].all(l, 'kueue.x-k8s.io/queue-name' in l && l['kueue.x-k8s.io/queue-name'] in variables.queues)",
        message: "GPU pods and workloads (the object itself and its pod template) must carry the label kueue.x-k8s.io/queue-name naming one of their tenant's LocalQueues",
        message_expression: "!('kueue.x-k8s.io/queue-name' in variables.labels && variables.labels['kueue.x-k8s.io/queue-name'] in variables.queues) ? 'GPU pods must carry the label kueue.x-k8s.io/queue-name with one of [' + params.data.queues + ']' + ('kueue.x-k8s.io/queue-name' in variables.labels ? ', not ' + variables.labels['kueue.x-k8s.io/queue-name'] : '') + ', so that Kueue admits them to their pool' : 'GPU ' + object.kind + 's must carry the label kueue.x-k8s.io/queue-name with one of [' + params.data.queues + '] on ' + (variables.isCronJob ? 'spec.jobTemplate.metadata.labels' : 'metadata.labels') + ('kueue.x-k8s.io/queue-name' in variables.workloadLabels ? ' (found ' + variables.workloadLabels['kueue.x-k8s.io/queue-name'] + ')' : '') + ', not only on the pod template: Kueue reads the labels of the workload itself'",
    },
    Rule {
        name: "priority-class",
        judges: Judges::Writes,
        expression: "size(variables.badPriorities) == 0",
        message: "the label kueue.x-k8s.io/priority-class, on the workload and on its pod template, must name the namespace's own WorkloadPriorityClass",
        message_expression: "'the label kueue.x-k8s.io/priority-class may not be ' + variables.badPriorities.join(', ') + ' in namespace ' + request.namespace + '; entitled: [' + params.data.priorities + ']'",
    },
    Rule {
        name: "nvidia-env",
        judges: Judges::Writes,
        expression: "!variables.containers.exists(c, has(c.env) && c.env.exists(e, e.name.startsWith('NVIDIA_')))",
        message: "containers may not set NVIDIA_* environment variables, which the NVIDIA container toolkit reads to hand out GPUs and devices; request GPUs in resources.limits instead",
        message_expression: "'container ' + variables.containers.filter(c, has(c.env) && c.env.exists(e, e.name.startsWith('NVIDIA_'))).map(c, c.name).join(', ') + ' may not set ' + variables.containers.filter(c, has(c.env)).map(c, c.env.filter(e, e.name.startsWith('NVIDIA_')).map(e, e.name).join(', ')).filter(n, n != '').join(', ') + ': the NVIDIA container toolkit reads NVIDIA_* variables to hand out GPUs and devices; request GPUs in resources.limits instead'",
    },
    Rule {
        name: "nvidia-env-from",
        judges: Judges::Writes,
        expression: "!variables.containers.exists(c, has(c.envFrom) && c.envFrom.exists(e, has(e.prefix) && e.prefix != '' && ('NVIDIA_'.startsWith(e.prefix) || e.prefix.startsWith('NVIDIA_'))))",
        message: "envFrom may not use a prefix that can form an NVIDIA_* variable name",
        message_expression: "'envFrom of container ' + variables.containers.filter(c, has(c.envFrom) && c.envFrom.exists(e, has(e.prefix) && e.prefix != '' && ('NVIDIA_'.startsWith(e.prefix) || e.prefix.startsWith('NVIDIA_')))).map(c, c.name).join(', ') + ' may not use a prefix that can form an NVIDIA_* variable name, which the NVIDIA container toolkit reads to hand out GPUs and devices; use a prefix that cannot start NVIDIA_'",
    },
    Rule {
        name: "host-namespaces",
        judges: Judges::Writes,
        expression: "!((has(variables.spec.hostNetwork) && variables.spec.hostNetwork) || (has(variables.spec.hostPID) && variables.spec.hostPID) || (has(variables.spec.hostIPC) && variables.spec.hostIPC))",
        message: "hostNetwork, hostPID and hostIPC are never allowed for tenant pods: on the node's network no NetworkPolicy applies, and RDMA needs none of them",
        message_expression: "'tenant ' + params.data.tenant + ' may not use hostNetwork, hostPID or hostIPC, with or without host access: on the network of the node no NetworkPolicy applies, and multi-node RDMA uses rdma/* devices in the network of the pod; remove them'",
    },
    Rule {
        name: "rdma-devices",
        judges: Judges::Writes,
        expression: "params.data.hostAccess == 'true' || !variables.resourceNames.exists(names, names.exists(r, r.startsWith('rdma/')))",
        message: "RDMA devices are allowed only for hard tenants on an exclusive pool",
        message_expression: "'tenant ' + params.data.tenant + ' may not request RDMA devices (rdma/*): only hard tenants on an exclusive pool may'",
    },
    Rule {
        name: "host-pools",
        judges: Judges::Writes,
        expression: "params.data.hostAccess != 'true' || size(variables.hostUses) == 0 || variables.onHostPool",
        message: "pods that use the host (RDMA devices or added capabilities) must select the nodes of one of their tenant's own pools with spec.nodeSelector",
        message_expression: "'pods of tenant ' + params.data.tenant + ' that use ' + variables.hostUses.join(', ') + ' must select the nodes of one of its own pools with spec.nodeSelector (' + variables.hostPools.map(p, p.join(' and ')).join(', or ') + '): elsewhere the scheduler may place them on nodes other tenants share'",
    },
    Rule {
        name: "counted-resources",
        judges: Judges::Writes,
        expression: "size(variables.uncountedResources) == 0",
        message: "containers may request only cpu, memory, ephemeral-storage and the extended resources the cell's ResourceQuotas count",
        message_expression: "'resources ' + variables.uncountedResources.join(', ') + ' are counted by no ResourceQuota of cell ' + params.data.cell + ', so nothing would cap them; containers may request cpu, memory, ephemeral-storage and [' + params.data.countedResources + ']'",
    },
    Rule {
        name: "kueue-hold",
        judges: Judges::Writes,
        expression: "size(variables.kueueReleases) == 0",
        message: "members and ServiceAccounts of the tenant may not remove Kueue's scheduling gates or kueue.x-k8s.io/managed label from a pod, or unsuspend a Job: only Kueue releases a workload it has admitted",
        message_expression: "'tenant ' + params.data.tenant + ' may not release what Kueue holds: ' + variables.kueueReleases.join(', ') + ' may be changed only by Kueue, when it admits the workload to its queue'",
    },
    Rule {
        name: "controller-references",
        judges: Judges::Writes,
        expression: "!variables.tenantPrincipal || size(variables.controllerReferences) == 0",
        message: "members and ServiceAccounts of the tenant may not give objects a controller owner reference (but to a CronJob): Kueue would take such a pod or Job for part of a workload it has already admitted, and not hold it",
        message_expression: "'tenant ' + params.data.tenant + ' may not give ' + object.kind + 's a controller owner reference (' + variables.controllerReferences.map(r, r.kind + ' ' + r.name).join(', ') + '): Kueue would take it for part of a workload it has already admitted; only controllers set it, so remove metadata.ownerReferences'",
    },
    Rule {
        name: "controller-ownership",
        judges: Judges::Writes,
        expression: "size(variables.ownershipChanges) == 0",
        message: "members and ServiceAccounts of the tenant may not change the owner references or the labels of an object a controller owns: its controller would release it and start another, and Kueue counts a Job's pods only through the Job",
        message_expression: "'tenant ' + params.data.tenant + ' may not change ' + variables.ownershipChanges.join(', ') + ' of ' + object.kind + ' ' + object.metadata.name + ', which ' + variables.oldControllerReferences[0].kind + ' ' + variables.oldControllerReferences[0].name + ' controls: the controller would release it and start another in its place, and Kueue would no longer count it; change the pod template of the ' + variables.oldControllerReferences[0].kind + ' instead'",
    },
    Rule {
        name: "orphaning-delete",
        judges: Judges::Deletes,
        expression: "!variables.tenantPrincipal || !variables.orphans",
        message: "members and ServiceAccounts of the tenant may not delete a workload and leave its pods running (propagationPolicy Orphan, or no propagationPolicy on a batch/v1 Job): Kueue releases a deleted workload's quota at once, so its pods would run uncounted",
        message_expression: "'tenant ' + params.data.tenant + ' may not delete ' + request.resource.resource + '/' + request.name + ' and leave its pods running (' + (has(request.options.propagationPolicy) ? 'propagationPolicy Orphan' : (has(request.options.orphanDependents) ? 'orphanDependents true' : 'a batch/v1 Job deleted without propagationPolicy orphans its pods')) + '): Kueue releases the quota of a deleted workload at once, so the pods would run uncounted; delete it with propagationPolicy Background, as kubectl delete does without --cascade=orphan'",
    },
    Rule {
        name: "gpu-replica-sets",
        judges: Judges::Writes,
        expression: "!variables.tenantPrincipal || object.kind != 'ReplicaSet' || !variables.gpuPod",
        message: "members and ServiceAccounts of the tenant may not write ReplicaSets with GPU pods: Kueue holds the pods of a Deployment, which its controller makes ReplicaSets for, not of a ReplicaSet a member writes",
        message_expression: "'tenant ' + params.data.tenant + ' may not write ReplicaSet ' + object.metadata.name + ' with GPU pods: Kueue holds the pods of a Deployment, which its controller makes ReplicaSets for; create a Deployment instead'",
    },
    Rule {
        name: "grace-period",
        judges: Judges::Writes,
        expression: "!has(variables.spec.terminationGracePeriodSeconds) || variables.spec.terminationGracePeriodSeconds <= int(params.data.maxGracePeriodSeconds)",
        message: "spec.terminationGracePeriodSeconds may not exceed the cell's limit: a pod that Kueue preempts keeps its quota until it has stopped",
        message_expression: "'spec.terminationGracePeriodSeconds ' + string(variables.spec.terminationGracePeriodSeconds) + ' is more than ' + params.data.maxGracePeriodSeconds + ': a pod that Kueue preempts or evicts keeps its GPUs until it has stopped, so lower it'",
    },
    Rule {
        name: "probe-host",
        judges: Judges::Writes,
        expression: "size(variables.probeHostContainers) == 0",
        message: "probes and lifecycle handlers may not name a host: the kubelet would send their requests from the node's network, past every NetworkPolicy",
        message_expression: "'container ' + variables.probeHostContainers.join(', ') + ' may not set host in an httpGet or tcpSocket probe or lifecycle handler: the kubelet sends those requests from the node, past every NetworkPolicy; remove host, so that the pod address is used'",
    },
    Rule {
        name: "images",
        judges: Judges::Writes,
        expression: "size(variables.badImages) == 0",
        message: "images of containers and image volumes must come from the tenant's registries and be pinned by @sha256: digest",
        message_expression: "'image ' + variables.badImages.join(', ') + ' is not allowed: images of containers and image volumes must come from [' + params.data.registries + '] and be pinned by @sha256:<digest>'",
    },
    Rule {
        name: "weight-digest",
        judges: Judges::Writes,
        expression: "!variables.loadsWeights || ('tenantc.io/weight-digest' in variables.annotations && variables.annotations['tenantc.io/weight-digest'] in variables.weightDigests)",
        message: "pods that load weights must carry the annotation tenantc.io/weight-digest with one of the tenant's pinned digests",
        message_expression: "('tenantc.io/weight-digest' in variables.annotations ? 'weight digest ' + variables.annotations['tenantc.io/weight-digest'] + ' is not one of the pinned digests of tenant ' + params.data.tenant : 'pods that load weights must carry the annotation tenantc.io/weight-digest') + ' (pinned: [' + params.data.weightDigests + '])'",
    },
    Rule {
        name: "weight-volumes-read-only",
        judges: Judges::Writes,
        expression: "variables.containers.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m, !(m.name == 'weights' || m.name.startsWith('weights-')) || (has(m.readOnly) && m.readOnly)))",
        message: "weight volumes (named weights or weights-*) must be mounted with readOnly: true",
        message_expression: "'container ' + variables.containers.filter(c, has(c.volumeMounts) && c.volumeMounts.exists(m, (m.name == 'weights' || m.name.startsWith('weights-')) && !(has(m.readOnly) && m.readOnly))).map(c, c.name).join(', ') + ' must mount its weight volumes with readOnly: true'",
    },
    Rule {
        name: "node-name",
        judges: Judges::Writes,
        expression: "!has(variables.spec.nodeName) || variables.spec.nodeName == '' || (request.kind.kind == 'Pod' && request.operation == 'UPDATE')",
        message: "pods may not name their node: spec.nodeName skips the scheduler, and with it every pool taint and Kueue's flavor pinning",
        message_expression: "'spec.nodeName ' + variables.spec.nodeName + ' is not allowed: the scheduler places tenant pods, so that pool taints and Kueue flavors hold; remove spec.nodeName'",
    },
    Rule {
        name: "host-path",
        judges: Judges::Writes,
        expression: "!variables.volumes.exists(v, has(v.hostPath))",
        message: "hostPath volumes are not allowed",
        message_expression: "'volume ' + variables.volumes.filter(v, has(v.hostPath)).map(v, v.name).join(', ') + ' is a hostPath volume, which tenant pods may not use'",
    },
    Rule {
        name: "own-references",
        judges: Judges::Writes,
        expression: "size(variables.foreignReferences) == 0",
        message: "PersistentVolumeClaims, volume snapshots and Secrets that pods and claims reference must be named with the tenant's name and a dash as prefix",
        message_expression: "'references to ' + variables.foreignReferences.join(', ') + ' are not allowed: PersistentVolumeClaims, volume snapshots and Secrets of tenant ' + params.data.tenant + ' must be named ' + params.data.tenant + '-*'",
    },
    Rule {
        name: "claim-binding",
        judges: Judges::Writes,
        expression: "size(variables.claimBindings) == 0",
        message: "PersistentVolumeClaims and claim templates may not set spec.volumeName, spec.selector or spec.dataSourceRef.namespace, which could bind another tenant's volume or data; claim a new volume by storage class and size only",
        message_expression: "'claims of tenant ' + params.data.tenant + ' may not set ' + variables.claimBindings.join('; ') + ': a PersistentVolume named or selected by label, or data of another namespace, may belong to another tenant; remove them and claim a new volume by storage class and size only'",
    },
    Rule {
        name: "claim-quota",
        judges: Judges::Writes,
        expression: "variables.claimTemplateCount == 0 || request.namespace in (params.data.claimNamespaces == '' ? [] : params.data.claimNamespaces.split(','))",
        message: "claim templates (a StatefulSet's volumeClaimTemplates, generic ephemeral volumes) need a namespace whose quota holds PersistentVolumeClaims and storage: elsewhere their claims are refused and the pods never start",
        message_expression: "'namespace ' + request.namespace + ' holds no PersistentVolumeClaims (its tenant-quota allows persistentvolumeclaims or requests.storage of 0), so the claims of this ' + object.kind + ' would be refused and its pods would never start; declare storage and persistent-volume-claims in the tenant quota of cell ' + params.data.cell + (params.data.claimNamespaces == '' ? '' : ', or use one of [' + params.data.claimNamespaces + ']')",
    },
    Rule {
        name: "training-service-account",
        judges: Judges::Writes,
        expression: "variables.isClaim || !(request.namespace in variables.inferenceNamespaces) || !((has(variables.spec.serviceAccountName) ? variables.spec.serviceAccountName : 'default') in variables.trainingServiceAccounts)",
        message: "the training ServiceAccount may not be used in inference namespaces",
        message_expression: "'ServiceAccount ' + variables.spec.serviceAccountName + ' is the training identity of tenant ' + params.data.tenant + ' and may not run in inference namespace ' + request.namespace",
    },
    Rule {
        name: "chargeback-labels",
        judges: Judges::Writes,
        expression: "variables.isClaim || size(variables.missingLabels) == 0 && variables.labels['tenant.platform/tenant'] == params.data.tenant && variables.labels['tenant.platform/cell'] == params.data.cell && (!variables.gpuPod || variables.labels['tenant.platform/sku'] in variables.gpuModels)",
        message: "pods must carry the chargeback labels tenant.platform/tenant, tenant.platform/cell and, with GPUs, tenant.platform/sku (the queue label is required by the local-queue rule)",
        message_expression: "size(variables.missingLabels) > 0 ? 'pods must carry the chargeback labels ' + variables.missingLabels.join(', ') : 'chargeback labels must be tenant.platform/tenant=' + params.data.tenant + ', tenant.platform/cell=' + params.data.cell + (variables.gpuPod ? ' and tenant.platform/sku one of [' + params.data.gpuModels + ']' : '')",
    },
    Rule {
        name: "forbidden-labels",
        judges: Judges::Writes,
        expression: "size(variables.badLabelKeys) == 0",
        message: "pods and workloads may not carry labels that hold user data (prompts, user emails, session ids), whatever their case, separators or prefix",
        message_expression: "'labels ' + variables.badLabelKeys.join(', ') + ' may hold user data and are not allowed; forbidden: [' + params.data.forbiddenLabelKeys + '], compared without case, -, _ and . and with any prefix'",
    },
];

/// The validations of the Kueue floor that hold a workload to Kueue and that a Volcano cell's
/// floor replaces: the queue label, the WorkloadPriorityClass label, Kueue's hold on a workload,
/// and what keeps Kueue counting a controller's pods (controller references and ownership, an
/// orphaning delete, a member's ReplicaSet). Volcano counts every pod itself, through the PodGroup
/// of its pod or its gang.
pub const KUEUE_ONLY: &[&str] = &[
    "local-queue",
    "priority-class",
    "kueue-hold",
    "controller-references",
    "controller-ownership",
    "orphaning-delete",
    "gpu-replica-sets",
];

/// What a Volcano cell's floor holds a pod to in place of [`KUEUE_ONLY`]: the scheduler, the
/// tenant's own queue, and no `volcano.sh/` keys, which Volcano's scheduler and PodGroup
/// controller read to exempt a job from reclaim or budget its evictions.
pub const VOLCANO_RULES: &[Rule] = &[
    Rule {
        name: "volcano-scheduler",
        judges: Judges::Writes,
        expression: "!variables.gpuPod || (has(variables.spec.schedulerName) && variables.spec.schedulerName == 'volcano')",
        message: "GPU pods must set spec.schedulerName to volcano: the default scheduler ignores every Volcano queue",
        message_expression: "'GPU pods of tenant ' + params.data.tenant + ' must set spec.schedulerName to volcano' + (has(variables.spec.schedulerName) ? ', not ' + variables.spec.schedulerName : '') + ': another scheduler places them outside every Volcano queue'",
    },
    Rule {
        name: "volcano-queue",
        judges: Judges::Writes,
        expression: "(!variables.gpuPod || 'scheduling.volcano.sh/queue-name' in variables.annotations) && (!('scheduling.volcano.sh/queue-name' in variables.annotations) || variables.annotations['scheduling.volcano.sh/queue-name'] in variables.queues)",
        message: "GPU pods must carry the annotation scheduling.volcano.sh/queue-name naming their tenant's Volcano queue, and no pod may name another queue",
        message_expression: "'pods of tenant ' + params.data.tenant + ' must carry the annotation scheduling.volcano.sh/queue-name with one of [' + params.data.queues + ']' + ('scheduling.volcano.sh/queue-name' in variables.annotations ? ', not ' + variables.annotations['scheduling.volcano.sh/queue-name'] : '') + ': the PodGroup Volcano makes for the pod takes its queue from it'",
    },
    Rule {
        name: "volcano-annotations",
        judges: Judges::Writes,
        expression: "!(variables.labelKeys + variables.annotations.map(k, k) + (has(object.metadata.annotations) ? object.metadata.annotations.map(k, k) : []) + (variables.isCronJob && has(object.spec.jobTemplate.metadata) && has(object.spec.jobTemplate.metadata.annotations) ? object.spec.jobTemplate.metadata.annotations.map(k, k) : [])).exists(k, k.startsWith('volcano.sh/'))",
        message: "pods and workloads may not carry volcano.sh/ labels or annotations: Volcano reads volcano.sh/preemptable, volcano.sh/jdb-min-available and the others to keep a job from reclaim or budget its evictions, and copies a workload's into its pods' PodGroups",
        message_expression: "'pods and workloads of tenant ' + params.data.tenant + ' may not carry labels or annotations under volcano.sh/ (on the pod template, the ' + object.kind + ' or its Job template): Volcano reads them to keep a job from reclaim (volcano.sh/preemptable) or to budget its evictions, so a tenant could keep what it borrowed; remove them'",
    },
];

/// Where a Volcano cell's floor says "the scheduler" where the Kueue floor says "Kueue": the
/// rules of [`RULES`] whose message names Kueue but whose expression holds for both, with the
/// Volcano messages.
const VOLCANO_MESSAGES: &[(&str, &str, &str)] = &[
    (
        "grace-period",
        "spec.terminationGracePeriodSeconds may not exceed the cell's limit: a pod that Volcano reclaims keeps its quota until it has stopped",
        "'spec.terminationGracePeriodSeconds ' + string(variables.spec.terminationGracePeriodSeconds) + ' is more than ' + params.data.maxGracePeriodSeconds + ': a pod that Volcano preempts or reclaims keeps its GPUs until it has stopped, so lower it'",
    ),
    (
        "node-name",
        "pods may not name their node: spec.nodeName skips the scheduler, and with it every pool taint and Volcano queue",
        "'spec.nodeName ' + variables.spec.nodeName + ' is not allowed: the scheduler places tenant pods, so that pool taints and Volcano queues hold; remove spec.nodeName'",
    ),
    (
        "chargeback-labels",
        "pods must carry the chargeback labels tenant.platform/tenant, tenant.platform/cell and, with GPUs, tenant.platform/sku (the queue annotation is required by the volcano-queue rule)",
        "size(variables.missingLabels) > 0 ? 'pods must carry the chargeback labels ' + variables.missingLabels.join(', ') : 'chargeback labels must be tenant.platform/tenant=' + params.data.tenant + ', tenant.platform/cell=' + params.data.cell + (variables.gpuPod ? ' and tenant.platform/sku one of [' + params.data.gpuModels + ']' : '')",
    ),
];

/// The validations of a cell's floor, in the order the API server evaluates them: [`RULES`] in a
/// Kueue cell; in a Volcano cell, [`RULES`] without [`KUEUE_ONLY`], with [`VOLCANO_RULES`] where
/// `local-queue` stood and the messages that named Kueue naming Volcano.
pub fn rules(scheduler: Scheduler) -> Vec<Rule> {
    match scheduler {
        Scheduler::Kueue => RULES.to_vec(),
        Scheduler::Volcano => {
            let mut rules = Vec::new();
            for rule in RULES {
                if rule.name == "local-queue" {
                    rules.extend_from_slice(VOLCANO_RULES);
                }
                if KUEUE_ONLY.contains(&rule.name) {
                    continue;
                }
                match VOLCANO_MESSAGES
                    .iter()
                    .find(|(name, _, _)| *name == rule.name)
                {
                    Some((_, message, message_expression)) => rules.push(Rule {
                        message,
                        message_expression,
                        ..*rule
                    }),
                    None => rules.push(*rule),
                }
            }
            rules
        }
    }
}

/// The condition under which the policy runs: every CREATE, and an UPDATE only when it changes
/// the spec, labels or annotations, or the owner references unless kube-controller-manager
/// (the garbage collector, which orphans dependents) changes them, so that a controller can
/// still remove its finalizer from an object admitted under older params.
pub const MATCH_CONDITION: (&str, &str) = (
    "changes-what-the-floor-checks",
    "request.operation != 'UPDATE' || object.spec != oldObject.spec || (has(object.metadata.labels) ? object.metadata.labels : {}) != (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}) || (has(object.metadata.annotations) ? object.metadata.annotations : {}) != (has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}) || ((has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []) != (has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences : []) && request.userInfo.username != 'system:kube-controller-manager' && !request.userInfo.username.startsWith('system:serviceaccount:kube-system:'))",
);

/// The variables of a cell's floor, in [`VARIABLES`]' order: every one in a Kueue cell; in a
/// Volcano cell, those its [`rules`] read, directly or through another variable, so that no
/// variable of a Kueue rule (such as `kueueReleases`) is carried where nothing reads it.
pub fn variables(scheduler: Scheduler) -> Vec<(&'static str, &'static str)> {
    let rules = rules(scheduler);
    let mut read: Vec<&str> = rules
        .iter()
        .flat_map(|rule| [rule.expression, rule.message_expression])
        .collect();
    read.push(MATCH_CONDITION.1);
    let mut used: Vec<bool> = vec![false; VARIABLES.len()];
    // A variable may read only those before it, so one pass from the last to the first finds
    // every variable read through another.
    for (idx, (name, expression)) in VARIABLES.iter().enumerate().rev() {
        let reference = format!("variables.{name}");
        let reads = |text: &str| {
            text.match_indices(&reference).any(|(at, _)| {
                !text[at + reference.len()..]
                    .chars()
                    .next()
                    .is_some_and(|next| next.is_ascii_alphanumeric() || next == '_')
            })
        };
        if read.iter().any(|text| reads(text)) {
            if let Some(slot) = used.get_mut(idx) {
                *slot = true;
            }
            read.push(expression);
        }
    }
    VARIABLES
        .iter()
        .zip(used)
        .filter(|(_, used)| match scheduler {
            Scheduler::Kueue => true,
            Scheduler::Volcano => *used,
        })
        .map(|(variable, _)| *variable)
        .collect()
}

/// The policy of a Kueue cell, the same in every one ([`policy_for`] a cell's scheduler).
pub fn policy() -> ValidatingAdmissionPolicy {
    policy_for(Scheduler::Kueue)
}

/// The policy of a cell whose scheduler is `scheduler`, the same in every cell of that scheduler:
/// the validations of [`rules`].
pub fn policy_for(scheduler: Scheduler) -> ValidatingAdmissionPolicy {
    // One rule per API group, version and set of operations: the workloads are judged on
    // DELETE too.
    let mut groups: BTreeMap<(&str, &str, &[&str]), Vec<String>> = BTreeMap::new();
    for (group, version, resource) in MATCHED {
        let operations: &[&str] = if judges_deletes(group) {
            &["CREATE", "UPDATE", "DELETE"]
        } else {
            &["CREATE", "UPDATE"]
        };
        groups
            .entry((group, version, operations))
            .or_default()
            .push((*resource).to_string());
    }
    let resource_rules = groups
        .into_iter()
        .map(
            |((group, version, operations), resources)| NamedRuleWithOperations {
                api_groups: Some(vec![group.to_string()]),
                api_versions: Some(vec![version.to_string()]),
                operations: Some(operations.iter().map(|op| (*op).to_string()).collect()),
                resources: Some(resources),
                scope: Some("Namespaced".to_string()),
                ..NamedRuleWithOperations::default()
            },
        )
        .collect();
    ValidatingAdmissionPolicy {
        metadata: cluster_meta(POLICY_NAME),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".to_string()),
            match_constraints: Some(MatchResources {
                resource_rules: Some(resource_rules),
                ..MatchResources::default()
            }),
            match_conditions: Some(vec![MatchCondition {
                name: MATCH_CONDITION.0.to_string(),
                expression: MATCH_CONDITION.1.to_string(),
            }]),
            param_kind: Some(ParamKind {
                api_version: Some("v1".to_string()),
                kind: Some("ConfigMap".to_string()),
            }),
            variables: Some(
                variables(scheduler)
                    .iter()
                    .map(|(name, expression)| Variable {
                        name: (*name).to_string(),
                        expression: (*expression).to_string(),
                    })
                    .collect(),
            ),
            validations: Some(
                rules(scheduler)
                    .iter()
                    .map(|rule| Validation {
                        expression: rule.emitted_expression(),
                        message: Some(rule.message.to_string()),
                        message_expression: Some(rule.message_expression.to_string()),
                        reason: Some("Forbidden".to_string()),
                    })
                    .collect(),
            ),
            ..ValidatingAdmissionPolicySpec::default()
        }),
        status: None,
    }
}

/// The platform namespace of the params: no pod should ever run there, so Pod Security
/// `restricted`, pinned to the cell's version like the tenant namespaces.
pub fn params_namespace(cell: &CellPlan) -> Namespace {
    let mut labels = managed_labels();
    labels.insert(
        NAMESPACE_NAME_LABEL.to_string(),
        PARAMS_NAMESPACE.to_string(),
    );
    for mode in ["enforce", "audit", "warn"] {
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}"),
            PodSecurityLevel::Restricted.as_str().to_string(),
        );
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}-version"),
            super::kube_version(cell),
        );
    }
    Namespace {
        metadata: ObjectMeta {
            name: Some(PARAMS_NAMESPACE.to_string()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

/// The params ConfigMap of one tenant.
pub fn params_config_map(tenant: &TenantPlan, cell: &CellPlan) -> ConfigMap {
    let mut labels = managed_labels();
    labels.insert(TENANT_LABEL.to_string(), tenant.name.clone());
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(params_name(&tenant.name)),
            namespace: Some(PARAMS_NAMESPACE.to_string()),
            labels: Some(labels),
            annotations: Some(super::gitops::first_wave_annotations()),
            ..ObjectMeta::default()
        },
        data: Some(params(tenant, cell)),
        ..ConfigMap::default()
    }
}

/// The binding of one tenant: its namespaces, its params.
pub fn binding(tenant: &TenantPlan) -> ValidatingAdmissionPolicyBinding {
    let mut labels = managed_labels();
    labels.insert(TENANT_LABEL.to_string(), tenant.name.clone());
    ValidatingAdmissionPolicyBinding {
        metadata: ObjectMeta {
            name: Some(binding_name(&tenant.name)),
            labels: Some(labels),
            annotations: Some(super::gitops::first_wave_annotations()),
            ..ObjectMeta::default()
        },
        spec: Some(ValidatingAdmissionPolicyBindingSpec {
            policy_name: Some(POLICY_NAME.to_string()),
            validation_actions: Some(vec!["Deny".to_string()]),
            param_ref: Some(ParamRef {
                name: Some(params_name(&tenant.name)),
                namespace: Some(PARAMS_NAMESPACE.to_string()),
                parameter_not_found_action: Some("Deny".to_string()),
                selector: None,
            }),
            match_resources: Some(MatchResources {
                namespace_selector: Some(super::tenant_namespaces(tenant)),
                ..MatchResources::default()
            }),
        }),
    }
}

/// The name of a Volcano cell's PodGroup policy.
pub const PODGROUP_POLICY_NAME: &str = "tenantc-tenant-podgroups";

/// The name of a tenant's binding of the PodGroup policy.
pub fn podgroup_binding_name(tenant: &str) -> String {
    format!("{PODGROUP_POLICY_NAME}-{tenant}")
}

/// The named CEL variables of the PodGroup policy.
pub const PODGROUP_VARIABLES: &[(&str, &str)] = &[
    (
        "queues",
        "params.data.queues == '' ? [] : params.data.queues.split(',')",
    ),
    (
        "priorities",
        "params.data.priorities == '' ? [] : params.data.priorities.split(',')",
    ),
    // Whether the request comes from the tenant itself, as the pod floor decides it: Volcano's
    // scheduler and controllers are none of its groups or ServiceAccounts.
    (
        "tenantPrincipal",
        "(params.data.groups == '' ? [] : params.data.groups.split('\\n')).exists(g, g in request.userInfo.groups) || (params.data.namespaces == '' ? [] : params.data.namespaces.split(',')).exists(n, request.userInfo.username.startsWith('system:serviceaccount:' + n + ':'))",
    ),
    (
        "volcanoKeys",
        "((has(object.metadata.labels) ? object.metadata.labels.map(k, k) : []) + (has(object.metadata.annotations) ? object.metadata.annotations.map(k, k) : [])).filter(k, k.startsWith('volcano.sh/'))",
    ),
    // What a status written by the tenant holds beyond a pending phase: the PodGroup CRD has no
    // status subresource, so its writers can set the status the scheduler acts on.
    (
        "statusWritten",
        "request.operation == 'CREATE' ? (has(object.status) && ((has(object.status.phase) && object.status.phase != 'Pending') || has(object.status.conditions) || has(object.status.running) || has(object.status.succeeded) || has(object.status.failed))) : (has(object.status) != has(oldObject.status) || (has(object.status) && object.status != oldObject.status))",
    ),
];

/// The validations of the PodGroup policy: a PodGroup that a tenant (or a controller for it)
/// writes names the tenant's queue and the namespace's priority, carries no `volcano.sh/` keys,
/// and the tenant never writes its status.
pub const PODGROUP_RULES: &[Rule] = &[
    Rule {
        name: "podgroup-queue",
        judges: Judges::Writes,
        expression: "has(object.spec.queue) && object.spec.queue in variables.queues",
        message: "PodGroups must name their tenant's Volcano queue in spec.queue",
        message_expression: "'PodGroups of tenant ' + params.data.tenant + ' must name one of [' + params.data.queues + '] in spec.queue' + (has(object.spec.queue) && object.spec.queue != '' ? ', not ' + object.spec.queue : '') + ': the scheduler takes their resources from that queue'",
    },
    Rule {
        name: "podgroup-priority",
        judges: Judges::Writes,
        expression: "!has(object.spec.priorityClassName) || object.spec.priorityClassName == '' || (request.namespace + '=' + object.spec.priorityClassName) in variables.priorities",
        message: "a PodGroup's spec.priorityClassName must be its namespace's own priority class",
        message_expression: "'spec.priorityClassName ' + object.spec.priorityClassName + ' is not the priority class of namespace ' + request.namespace + '; entitled: [' + params.data.priorities + ']'",
    },
    Rule {
        name: "podgroup-annotations",
        judges: Judges::Writes,
        expression: "size(variables.volcanoKeys) == 0",
        message: "PodGroups may not carry volcano.sh/ labels or annotations, which Volcano reads to keep a job from reclaim or budget its evictions",
        message_expression: "'PodGroup ' + object.metadata.name + ' of tenant ' + params.data.tenant + ' may not carry labels or annotations under volcano.sh/: Volcano reads them to keep a job from reclaim (volcano.sh/preemptable) or to budget its evictions; remove them'",
    },
    Rule {
        name: "podgroup-status",
        judges: Judges::Writes,
        expression: "!variables.tenantPrincipal || !variables.statusWritten",
        message: "members and ServiceAccounts of the tenant may not write a PodGroup's status: the scheduler admits a PodGroup to its queue by its phase",
        message_expression: "'tenant ' + params.data.tenant + ' may not write the status of PodGroup ' + object.metadata.name + ': Volcano admits a PodGroup to its queue (phase Inqueue) only when the queue has room, and only the scheduler may say so; leave status out, or Pending'",
    },
];

/// The condition under which the PodGroup policy runs: every CREATE, and an UPDATE that changes
/// the spec, the labels, the annotations or the status (the CRD has no status subresource).
pub const PODGROUP_MATCH_CONDITION: (&str, &str) = (
    "changes-what-the-floor-checks",
    "request.operation != 'UPDATE' || object.spec != oldObject.spec || (has(object.metadata.labels) ? object.metadata.labels : {}) != (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}) || (has(object.metadata.annotations) ? object.metadata.annotations : {}) != (has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}) || has(object.status) != has(oldObject.status) || (has(object.status) && object.status != oldObject.status)",
);

/// A Volcano cell's PodGroup policy, the same in every Volcano cell: the tenant's params, the
/// validations of [`PODGROUP_RULES`], on CREATE and UPDATE of `scheduling.volcano.sh/v1beta1`
/// PodGroups.
pub fn podgroup_policy() -> ValidatingAdmissionPolicy {
    side_policy(SidePolicy {
        name: PODGROUP_POLICY_NAME,
        api_group: "scheduling.volcano.sh",
        api_version: "v1beta1",
        resources: &["podgroups"],
        condition: PODGROUP_MATCH_CONDITION,
        variables: PODGROUP_VARIABLES,
        rules: PODGROUP_RULES,
    })
}

/// A policy of the floor beside the pod floor, for one API group's kinds: what differs between
/// the PodGroup policy and the device claims policy.
struct SidePolicy {
    name: &'static str,
    api_group: &'static str,
    api_version: &'static str,
    resources: &'static [&'static str],
    condition: (&'static str, &'static str),
    variables: &'static [(&'static str, &'static str)],
    rules: &'static [Rule],
}

/// The policy of `side`: fail closed, the tenant's params, on CREATE and UPDATE of its
/// namespaced resources under its match condition.
fn side_policy(side: SidePolicy) -> ValidatingAdmissionPolicy {
    ValidatingAdmissionPolicy {
        metadata: cluster_meta(side.name),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".to_string()),
            match_constraints: Some(MatchResources {
                resource_rules: Some(vec![NamedRuleWithOperations {
                    api_groups: Some(vec![side.api_group.to_string()]),
                    api_versions: Some(vec![side.api_version.to_string()]),
                    operations: Some(vec!["CREATE".to_string(), "UPDATE".to_string()]),
                    resources: Some(
                        side.resources
                            .iter()
                            .map(|resource| (*resource).to_string())
                            .collect(),
                    ),
                    scope: Some("Namespaced".to_string()),
                    ..NamedRuleWithOperations::default()
                }]),
                ..MatchResources::default()
            }),
            match_conditions: Some(vec![MatchCondition {
                name: side.condition.0.to_string(),
                expression: side.condition.1.to_string(),
            }]),
            param_kind: Some(ParamKind {
                api_version: Some("v1".to_string()),
                kind: Some("ConfigMap".to_string()),
            }),
            variables: Some(
                side.variables
                    .iter()
                    .map(|(name, expression)| Variable {
                        name: (*name).to_string(),
                        expression: (*expression).to_string(),
                    })
                    .collect(),
            ),
            validations: Some(
                side.rules
                    .iter()
                    .map(|rule| Validation {
                        expression: rule.emitted_expression(),
                        message: Some(rule.message.to_string()),
                        message_expression: Some(rule.message_expression.to_string()),
                        reason: Some("Forbidden".to_string()),
                    })
                    .collect(),
            ),
            ..ValidatingAdmissionPolicySpec::default()
        }),
        status: None,
    }
}

/// A tenant's binding of the PodGroup policy: its namespaces, its params (the floor's).
pub fn podgroup_binding(tenant: &TenantPlan) -> ValidatingAdmissionPolicyBinding {
    let mut object = binding(tenant);
    object.metadata.name = Some(podgroup_binding_name(&tenant.name));
    if let Some(spec) = &mut object.spec {
        spec.policy_name = Some(PODGROUP_POLICY_NAME.to_string());
    }
    object
}

/// The name of a DRA cell's device claims policy.
pub const DEVICE_CLAIMS_POLICY_NAME: &str = "tenantc-tenant-device-claims";

/// The name of a tenant's binding of the device claims policy.
pub fn device_claims_binding_name(tenant: &str) -> String {
    format!("{DEVICE_CLAIMS_POLICY_NAME}-{tenant}")
}

/// The named CEL variables of the device claims policy.
pub const DEVICE_CLAIMS_VARIABLES: &[(&str, &str)] = &[
    (
        "deviceClasses",
        "params.data.deviceClasses == '' ? [] : params.data.deviceClasses.split(',')",
    ),
    // The claim a ResourceClaim is, or a ResourceClaimTemplate stamps out for each pod.
    (
        "claimSpec",
        "object.kind == 'ResourceClaimTemplate' ? (has(object.spec.spec) ? object.spec.spec : {}) : (has(object.spec) ? object.spec : {})",
    ),
    (
        "deviceRequests",
        "has(variables.claimSpec.devices) && has(variables.claimSpec.devices.requests) ? variables.claimSpec.devices.requests : []",
    ),
    // Every class a request names that the namespace may not claim devices of: the class of an
    // exact request, and the classes of a request's alternatives (`firstAvailable`), which the
    // scheduler tries in order, joined by commas.
    (
        "foreignClasses",
        "variables.deviceRequests.filter(r, has(r.exactly) && !((request.namespace + '=' + (has(r.exactly.deviceClassName) ? r.exactly.deviceClassName : '')) in variables.deviceClasses)).map(r, has(r.exactly.deviceClassName) ? r.exactly.deviceClassName : '(no class)') + variables.deviceRequests.filter(r, has(r.firstAvailable) && r.firstAvailable.exists(s, !((request.namespace + '=' + (has(s.deviceClassName) ? s.deviceClassName : '')) in variables.deviceClasses))).map(r, r.firstAvailable.filter(s, !((request.namespace + '=' + (has(s.deviceClassName) ? s.deviceClassName : '')) in variables.deviceClasses)).map(s, has(s.deviceClassName) ? s.deviceClassName : '(no class)').join(','))",
    ),
    // A claim made from a template for a pod may have only a `generateName` when it is judged.
    (
        "claimName",
        "has(object.metadata.name) && object.metadata.name != '' ? object.metadata.name : (has(object.metadata.generateName) ? object.metadata.generateName : '')",
    ),
    (
        "ownClasses",
        "variables.deviceClasses.filter(p, p.startsWith(request.namespace + '=')).map(p, p.substring(size(request.namespace) + 1))",
    ),
];

/// The validations of the device claims policy: every request of a ResourceClaim or of the
/// claim a ResourceClaimTemplate stamps out names only device classes its namespace may claim
/// devices of, and none asks for admin access (which hands over devices already allocated to
/// others, for monitoring).
pub const DEVICE_CLAIMS_RULES: &[Rule] = &[
    Rule {
        name: "device-claim-classes",
        judges: Judges::Writes,
        expression: "size(variables.foreignClasses) == 0",
        message: "ResourceClaims and ResourceClaimTemplates may name only the device classes their namespace reserves devices of",
        message_expression: "object.kind + ' ' + variables.claimName + ' names device class ' + variables.foreignClasses.join(', ') + ', which namespace ' + request.namespace + ' of tenant ' + params.data.tenant + ' reserves no devices of; it may claim [' + variables.ownClasses.join(', ') + ']'",
    },
    Rule {
        name: "device-claim-admin-access",
        judges: Judges::Writes,
        expression: "!variables.deviceRequests.exists(r, has(r.exactly) && has(r.exactly.adminAccess) && r.exactly.adminAccess)",
        message: "ResourceClaims of tenants may not ask for admin access to devices",
        message_expression: "object.kind + ' ' + variables.claimName + ' of tenant ' + params.data.tenant + ' asks for adminAccess, which grants devices already allocated to other claims, of other tenants too; remove it'",
    },
];

/// The condition under which the device claims policy runs: every CREATE, and an UPDATE that
/// changes the spec (immutable in both kinds today, so a controller's finalizer update on a
/// claim made before the tenant's classes changed is never refused).
pub const DEVICE_CLAIMS_MATCH_CONDITION: (&str, &str) = (
    "changes-what-the-floor-checks",
    "request.operation != 'UPDATE' || object.spec != oldObject.spec",
);

/// A DRA cell's device claims policy, the same in every DRA cell: the tenant's params, the
/// validations of [`DEVICE_CLAIMS_RULES`], on CREATE and UPDATE of `resource.k8s.io/v1`
/// ResourceClaims and ResourceClaimTemplates.
pub fn device_claims_policy() -> ValidatingAdmissionPolicy {
    side_policy(SidePolicy {
        name: DEVICE_CLAIMS_POLICY_NAME,
        api_group: "resource.k8s.io",
        api_version: "v1",
        resources: &["resourceclaims", "resourceclaimtemplates"],
        condition: DEVICE_CLAIMS_MATCH_CONDITION,
        variables: DEVICE_CLAIMS_VARIABLES,
        rules: DEVICE_CLAIMS_RULES,
    })
}

/// A tenant's binding of the device claims policy: its namespaces, its params (the floor's).
pub fn device_claims_binding(tenant: &TenantPlan) -> ValidatingAdmissionPolicyBinding {
    let mut object = binding(tenant);
    object.metadata.name = Some(device_claims_binding_name(&tenant.name));
    if let Some(spec) = &mut object.spec {
        spec.policy_name = Some(DEVICE_CLAIMS_POLICY_NAME.to_string());
    }
    object
}

/// The floor's policies in a cell of `scheduler` whose GPUs reach pods by `devices`:
/// [`policy_for`] the scheduler, in a Volcano cell the PodGroup policy, and in a DRA cell the
/// device claims policy; what every engine's floor is made from (`engines.rs`).
pub fn floor_policies(scheduler: Scheduler, devices: DeviceMode) -> Vec<ValidatingAdmissionPolicy> {
    let mut policies = vec![policy_for(scheduler)];
    match scheduler {
        Scheduler::Kueue => {}
        Scheduler::Volcano => policies.push(podgroup_policy()),
    }
    match devices {
        DeviceMode::DevicePlugin => {}
        DeviceMode::Dra => policies.push(device_claims_policy()),
    }
    policies
}

/// [`floor_policies`], built once per run for each scheduler and device mode: every cell of one
/// pair has the same policies, and building them searches every rule's CEL for the variables it
/// reads, which per tenant was about a quarter of `tenantc check` at 2,000 tenants
/// (docs/performance.md).
fn shared_floor_policies(
    scheduler: Scheduler,
    devices: DeviceMode,
) -> &'static [ValidatingAdmissionPolicy] {
    static KUEUE: OnceLock<Vec<ValidatingAdmissionPolicy>> = OnceLock::new();
    static KUEUE_DRA: OnceLock<Vec<ValidatingAdmissionPolicy>> = OnceLock::new();
    static VOLCANO: OnceLock<Vec<ValidatingAdmissionPolicy>> = OnceLock::new();
    static VOLCANO_DRA: OnceLock<Vec<ValidatingAdmissionPolicy>> = OnceLock::new();
    let slot = match (scheduler, devices) {
        (Scheduler::Kueue, DeviceMode::DevicePlugin) => &KUEUE,
        (Scheduler::Kueue, DeviceMode::Dra) => &KUEUE_DRA,
        (Scheduler::Volcano, DeviceMode::DevicePlugin) => &VOLCANO,
        (Scheduler::Volcano, DeviceMode::Dra) => &VOLCANO_DRA,
    };
    slot.get_or_init(|| floor_policies(scheduler, devices))
}

/// A tenant's bindings of [`floor_policies`], in their order.
pub fn tenant_bindings(
    tenant: &TenantPlan,
    scheduler: Scheduler,
    devices: DeviceMode,
) -> Vec<ValidatingAdmissionPolicyBinding> {
    let mut bindings = vec![binding(tenant)];
    match scheduler {
        Scheduler::Kueue => {}
        Scheduler::Volcano => bindings.push(podgroup_binding(tenant)),
    }
    match devices {
        DeviceMode::DevicePlugin => {}
        DeviceMode::Dra => bindings.push(device_claims_binding(tenant)),
    }
    bindings
}

/// The policy a binding binds, among `policies`.
fn bound_policy<'a>(
    policies: &'a [ValidatingAdmissionPolicy],
    binding: &ValidatingAdmissionPolicyBinding,
) -> Result<&'a ValidatingAdmissionPolicy, InternalError> {
    let wanted = binding
        .spec
        .as_ref()
        .and_then(|spec| spec.policy_name.as_deref());
    policies
        .iter()
        .find(|policy| policy.metadata.name.as_deref() == wanted)
        .ok_or_else(|| InternalError(format!("no floor policy {wanted:?}")))
}

/// The file a floor policy's object is written to: `<prefix>-<policy name without tenantc->`.
fn file_of(prefix: &str, name: Option<&str>) -> String {
    let name = name.unwrap_or_default();
    format!(
        "{prefix}-{}.yaml",
        name.strip_prefix("tenantc-").unwrap_or(name)
    )
}

/// The cell-wide objects, for `<cell>/cluster/`: the params namespace and, by the cell's
/// admission engine, the floor's policies (ValidatingAdmissionPolicy), nothing more (Kyverno:
/// every policy is a tenant's) or the floor's ConstraintTemplates (Gatekeeper).
pub(super) fn cell_objects(cell: &CellPlan) -> Result<Vec<(String, Body)>, InternalError> {
    let mut objects = vec![(
        format!("namespace-{PARAMS_NAMESPACE}.yaml"),
        body(&params_namespace(cell))?,
    )];
    let policies = shared_floor_policies(cell.backends.scheduler, cell.backends.devices);
    match cell.backends.admission {
        AdmissionEngine::Vap => {
            for policy in policies {
                objects.push((
                    file_of("validatingadmissionpolicy", policy.metadata.name.as_deref()),
                    body(policy)?,
                ));
            }
        }
        AdmissionEngine::Kyverno => {}
        AdmissionEngine::Gatekeeper => {
            let keys: Vec<&str> = ParamKey::ALL.iter().map(|key| key.as_str()).collect();
            for policy in policies {
                let template = engines::gatekeeper_template(policy, keys.iter().copied())?;
                objects.push((
                    file_of("constrainttemplate", policy.metadata.name.as_deref()),
                    body(&template)?,
                ));
            }
        }
    }
    Ok(objects)
}

/// One tenant's part of the floor, for its folder: by the cell's admission engine, its params
/// and bindings (ValidatingAdmissionPolicy), its ValidatingPolicies (Kyverno) or its Constraints
/// (Gatekeeper), each with the tenant's params.
pub(super) fn tenant_objects(
    tenant: &TenantPlan,
    cell: &CellPlan,
) -> Result<Vec<(String, Body)>, InternalError> {
    let (scheduler, devices) = (cell.backends.scheduler, cell.backends.devices);
    let policies = shared_floor_policies(scheduler, devices);
    let bindings = tenant_bindings(tenant, scheduler, devices);
    let mut objects = Vec::new();
    match cell.backends.admission {
        AdmissionEngine::Vap => {
            objects.push((
                "admission-params.yaml".to_string(),
                body(&params_config_map(tenant, cell))?,
            ));
            for binding in &bindings {
                let file = match bound_policy(policies, binding)?.metadata.name.as_deref() {
                    Some(POLICY_NAME) => "admission-binding.yaml".to_string(),
                    other => file_of(
                        "admission",
                        other.and_then(|name| name.strip_prefix("tenantc-tenant-")),
                    )
                    .replace(".yaml", "-binding.yaml"),
                };
                objects.push((file, body(binding)?));
            }
        }
        AdmissionEngine::Kyverno => {
            let data = params(tenant, cell);
            for binding in &bindings {
                let policy = bound_policy(policies, binding)?;
                objects.push((
                    file_of("admission-kyverno", policy.metadata.name.as_deref()),
                    body(&engines::kyverno_policy(policy, binding, Some(&data))?)?,
                ));
            }
        }
        AdmissionEngine::Gatekeeper => {
            let data = params(tenant, cell);
            let keys: Vec<&str> = ParamKey::ALL.iter().map(|key| key.as_str()).collect();
            for binding in &bindings {
                let policy = bound_policy(policies, binding)?;
                let template = engines::gatekeeper_template(policy, keys.iter().copied())?;
                objects.push((
                    file_of("admission-constraint", policy.metadata.name.as_deref()),
                    body(&engines::gatekeeper_constraint(
                        policy,
                        &template,
                        binding,
                        Some(&data),
                    )?)?,
                ));
            }
        }
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use std::collections::BTreeSet;

    use super::*;
    use crate::plan::admission::ParamKey;

    #[test]
    fn the_forbidden_labels_rule_compares_keys_as_the_shared_fact_does() {
        // The floor and the check of declared chargeback labels (`validate/labels.rs`) read one
        // rule, `facts/labels.rs`: this holds the CEL to its Rust form, key by key.
        use crate::facts::labels::cel_normalized;
        let variable = |name: &str| {
            VARIABLES
                .iter()
                .find(|(variable, _)| *variable == name)
                .map(|(_, expression)| *expression)
                .unwrap()
        };
        assert_eq!(
            variable("forbiddenLabelKeys"),
            format!(
                "params.data.forbiddenLabelKeys == '' ? [] : params.data.forbiddenLabelKeys.split(',').map(f, {})",
                cel_normalized("f")
            )
        );
        assert_eq!(
            variable("badLabelKeys"),
            format!(
                "variables.labelKeys.filter(k, variables.forbiddenLabelKeys.exists(f, f == {} || f == {}))",
                cel_normalized("k"),
                cel_normalized("k.substring(k.lastIndexOf('/') + 1)")
            )
        );
    }

    /// Every name the emitted policy reads as `params.data.<name>`.
    /// Every name the policies of a Kueue cell with DRA read: the pod floor and the device
    /// claims policy.
    fn read_keys() -> BTreeSet<String> {
        let mut read = read_keys_of(&policy());
        read.extend(read_keys_of(&device_claims_policy()));
        read
    }

    /// Every name `policy` reads as `params.data.<name>`.
    fn read_keys_of(policy: &ValidatingAdmissionPolicy) -> BTreeSet<String> {
        let spec = policy.spec.clone().unwrap();
        let mut expressions: Vec<String> = spec
            .match_conditions
            .unwrap()
            .into_iter()
            .map(|condition| condition.expression)
            .collect();
        expressions.extend(
            spec.variables
                .unwrap()
                .into_iter()
                .map(|variable| variable.expression),
        );
        for validation in spec.validations.unwrap() {
            expressions.push(validation.expression);
            expressions.extend(validation.message_expression);
        }
        let mut names = BTreeSet::new();
        for expression in &expressions {
            for (at, _) in expression.match_indices("params.") {
                let rest = &expression[at + "params.".len()..];
                let rest = rest
                    .strip_prefix("data.")
                    .unwrap_or_else(|| panic!("params read other than by data: {rest}"));
                let name: String = rest
                    .chars()
                    .take_while(|ch| ch.is_ascii_alphanumeric())
                    .collect();
                names.insert(name);
            }
        }
        names
    }

    #[test]
    fn the_policy_reads_exactly_the_keys_the_params_write() {
        let read = read_keys();
        let unknown: Vec<&String> = read
            .iter()
            .filter(|name| ParamKey::parse(name).is_none())
            .collect();
        assert!(
            unknown.is_empty(),
            "the policy reads params.data keys no ParamKey writes: {unknown:?}"
        );
        let unread: Vec<&str> = ParamKey::ALL
            .iter()
            .map(|key| key.as_str())
            .filter(|name| !read.contains(*name))
            .collect();
        assert!(
            unread.is_empty(),
            "params written that the policy never reads: {unread:?}"
        );
    }

    #[test]
    fn a_volcano_cells_two_policies_read_exactly_the_keys_the_params_write() {
        let mut read = read_keys_of(&policy_for(Scheduler::Volcano));
        read.extend(read_keys_of(&podgroup_policy()));
        read.extend(read_keys_of(&device_claims_policy()));
        let unknown: Vec<&String> = read
            .iter()
            .filter(|name| ParamKey::parse(name).is_none())
            .collect();
        assert!(unknown.is_empty(), "{unknown:?}");
        let unread: Vec<&str> = ParamKey::ALL
            .iter()
            .map(|key| key.as_str())
            .filter(|name| !read.contains(*name))
            .collect();
        assert!(unread.is_empty(), "{unread:?}");
    }

    #[test]
    fn a_volcano_floor_holds_every_variable_its_rules_read_and_no_other() {
        let kept: Vec<&str> = variables(Scheduler::Volcano)
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let texts: Vec<String> = rules(Scheduler::Volcano)
            .iter()
            .flat_map(|rule| {
                [
                    rule.expression.to_string(),
                    rule.message_expression.to_string(),
                ]
            })
            .chain(
                variables(Scheduler::Volcano)
                    .iter()
                    .map(|(_, e)| e.to_string()),
            )
            .chain([MATCH_CONDITION.1.to_string()])
            .collect();
        for (name, _) in VARIABLES {
            let read = texts.iter().any(|text| {
                text.match_indices(&format!("variables.{name}"))
                    .any(|(at, _)| {
                        !text[at + "variables.".len() + name.len()..]
                            .chars()
                            .next()
                            .is_some_and(|next| next.is_ascii_alphanumeric())
                    })
            });
            assert_eq!(kept.contains(name), read, "{name}");
        }
        assert_eq!(variables(Scheduler::Kueue), VARIABLES.to_vec());
    }

    #[test]
    fn the_params_config_map_holds_every_key_once() {
        let inputs: Vec<crate::InputFile> = crate::testing::support::example_files()
            .into_iter()
            .map(|(path, text)| crate::InputFile {
                path,
                contents: text.into_bytes(),
            })
            .collect();
        let compilation = crate::compile(&inputs);
        let plan = compilation.plan.as_ref().unwrap();
        let cell = &plan.cells[0];
        let data = params_config_map(&cell.tenants[0], cell).data.unwrap();
        let written: Vec<&str> = data.keys().map(String::as_str).collect();
        let mut expected: Vec<&str> = ParamKey::ALL.iter().map(|key| key.as_str()).collect();
        expected.sort_unstable();
        assert_eq!(written, expected);
    }
}
