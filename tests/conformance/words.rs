//! What tenantc says a tenant may run is what the API server admits (issue 25): for every tenant
//! of the fixture fleet and every capability its plan grants or denies (`describe --format
//! json`'s `grants`), a workload that uses it is created as the tenant's member, with the real
//! workload controllers running; what is granted is admitted and its pods are created, what is
//! denied is refused.
//!
//! Consumes: the fixture fleet (applied cell by cell with `quota::set_up_cell`), its plan, and
//! the admitted Job fixture of each tenant and cell under `tests/policy/admitted/` as the base
//! every probe changes in one place. Produces: pass or fail, and one line per tenant and cell
//! with the counts.
//!
//! Invariants:
//! - The capabilities are the plan's (`tenantc::describe::grants`, exactly what `describe
//!   --format json` prints), never a list of this test, so a new grant is probed the day it
//!   appears; a capability the test cannot turn into a workload fails the check.
//! - A granted capability is used by a Job created for real as a member; the Job controller
//!   must then create its pod, which every admission stage judges again (a StatefulSet's claims
//!   and a Deployment's and CronJob's pods too). A denied one is used by a Pod created by
//!   server-side dry-run as a member, which must be refused, while the same Pod with the
//!   tenant's own counterpart of that capability is admitted, so a refusal is never for an
//!   unrelated reason.
//! - The self-test removes one validation of the deployed floor (`pool-tolerations`) and shows
//!   that a denied capability is then admitted and reported; the policy is restored even if the
//!   self-test fails.

use super::admission::{
    Restore, apply_policy, create_service_account, install_node_runtime_classes, member_of,
};
use super::controllers::{
    WorkloadControllers, delete_with_pods, pods_labelled, remove_pods, wait_until,
};
use super::policy_cases::{fixture, namespace_of};
use super::quota::{fixture_fleet, set_up_cell};
use super::*;

use tenantc::describe::{Capability, Grant, grants};
use tenantc::lower::admission;
use tenantc::plan::{CellPlan, NamespacePlan, PoolPlan, TenantPlan};

/// A digest for probe images.
const DIGEST: &str = "sha256:3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f";

/// How a probe came out.
#[derive(Debug)]
enum Answer {
    /// Admitted, and (for a workload) its controller created a pod.
    Ran,
    /// Refused, with the API server's message.
    Refused(String),
    /// Admitted, but no pod appeared (a controller's pod was refused later).
    NoPod(String),
}

/// The base of every probe of a tenant in a cell: the pod template of its admitted Job fixture.
#[derive(Clone)]
struct Base {
    /// The Job, unsuspended (no Kueue runs here).
    job: Value,
}

impl Base {
    fn of(cell: &CellPlan, tenant: &TenantPlan) -> Base {
        let mut job = fixture(&format!("{}-job", tenant.name), &cell.name);
        job["spec"]["suspend"] = json!(false);
        Base { job }
    }

    fn template(&mut self) -> &mut Value {
        &mut self.job["spec"]["template"]
    }

    fn spec(&mut self) -> &mut Value {
        &mut self.job["spec"]["template"]["spec"]
    }

    fn namespace(&self) -> String {
        namespace_of(&self.job)
    }

    /// The GPU resource the base requests.
    fn gpu_resource(&self) -> Option<String> {
        self.job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
            .as_object()?
            .keys()
            .find(|key| key.starts_with("nvidia.com/"))
            .cloned()
    }

    /// The same workload in another namespace of the tenant, with that namespace's
    /// ServiceAccount and priority.
    fn moved_to(mut self, namespace: &NamespacePlan) -> Base {
        self.job["metadata"]["namespace"] = json!(namespace.name);
        self.spec()["serviceAccountName"] = json!(namespace.service_account);
        let labels = &mut self.template()["metadata"]["labels"];
        match &namespace.priority {
            Some(priority) => labels["kueue.x-k8s.io/priority-class"] = json!(priority),
            None => {
                labels
                    .as_object_mut()
                    .unwrap()
                    .remove("kueue.x-k8s.io/priority-class");
            }
        }
        self
    }

    /// The workload without GPUs: no GPU resource, runtime class or pool toleration.
    fn without_gpus(mut self) -> Base {
        let spec = self.spec().as_object_mut().unwrap();
        spec.remove("runtimeClassName");
        spec.remove("tolerations");
        for container in self.spec()["containers"].as_array_mut().unwrap() {
            for side in ["limits", "requests"] {
                if let Some(resources) = container["resources"][side].as_object_mut() {
                    resources.retain(|name, _| !name.starts_with("nvidia.com/"));
                }
            }
        }
        self
    }

    /// The Job as a Pod of the same template.
    fn pod(&self, name: &str) -> Value {
        let template = &self.job["spec"]["template"];
        let mut spec = template["spec"].clone();
        spec.as_object_mut().unwrap().remove("restartPolicy");
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace(),
                "labels": template["metadata"]["labels"].clone(),
                "annotations": template["metadata"]["annotations"].clone(),
            },
            "spec": spec,
        })
    }

    /// The Job under `name`.
    fn named(&self, name: &str) -> Value {
        let mut job = self.job.clone();
        job["metadata"]["name"] = json!(name);
        job
    }
}

/// Drops null `annotations` (a template without any) so the object stays valid.
fn tidy(mut object: Value) -> Value {
    if object["metadata"]["annotations"].is_null()
        && let Some(meta) = object["metadata"].as_object_mut()
    {
        meta.remove("annotations");
    }
    object
}

/// A toleration of each repelling taint of `pool`.
fn tolerations_of(pool: &PoolPlan) -> Vec<Value> {
    pool.taints
        .iter()
        .filter(|taint| taint.repels())
        .map(|taint| {
            let mut toleration = json!({"key": taint.key, "effect": taint.effect});
            match &taint.value {
                Some(value) => {
                    toleration["operator"] = json!("Equal");
                    toleration["value"] = json!(value);
                }
                None => toleration["operator"] = json!("Exists"),
            }
            toleration
        })
        .collect()
}

/// The tenant's own pools (those of its Kueue flavors).
fn own_pools<'a>(cell: &'a CellPlan, tenant: &TenantPlan) -> Vec<&'a PoolPlan> {
    cell.pools
        .iter()
        .filter(|pool| {
            tenant
                .queue
                .flavors
                .iter()
                .any(|flavor| flavor.pool == pool.name)
        })
        .collect()
}

/// The namespace of the tenant with the most quota of `resource`, if any has some.
fn namespace_with<'a>(tenant: &'a TenantPlan, resource: &str) -> Option<&'a NamespacePlan> {
    tenant
        .namespaces
        .iter()
        .filter(|namespace| namespace.gpu.get(resource).is_some_and(|count| *count > 0))
        .max_by_key(|namespace| namespace.gpu.get(resource).copied().unwrap_or(0))
}

/// A runtime class the tenant may name whose node selector agrees with `labels` (none needed
/// where the cell declares none).
fn runtime_class_for(
    cell: &CellPlan,
    tenant: &TenantPlan,
    labels: &BTreeMap<String, String>,
) -> Option<String> {
    cell.runtime_classes
        .iter()
        .filter(|class| class.trust.contains(&tenant.trust))
        .find(|class| {
            class
                .node_selector
                .iter()
                .all(|(key, value)| labels.get(key).is_none_or(|wanted| wanted == value))
        })
        .map(|class| class.name.clone())
}

/// Sets the pool a GPU workload runs on: one device of its first offer the namespace has quota
/// for, the pool's tolerations, its SKU label and a runtime class that can run there.
fn on_pool(mut base: Base, cell: &CellPlan, tenant: &TenantPlan, pool: &PoolPlan) -> Option<Base> {
    let (offer, namespace) = pool
        .offers
        .iter()
        .find_map(|offer| namespace_with(tenant, &offer.resource).map(|ns| (offer, ns)))?;
    base = base.moved_to(namespace);
    let runtime_class = runtime_class_for(cell, tenant, &pool.node_labels);
    let spec = base.spec();
    match runtime_class {
        Some(class) => spec["runtimeClassName"] = json!(class),
        None => {
            spec.as_object_mut().unwrap().remove("runtimeClassName");
        }
    }
    spec["tolerations"] = json!(tolerations_of(pool));
    for container in spec["containers"].as_array_mut().unwrap() {
        container["resources"] = json!({"limits": {offer.resource.clone(): 1}});
    }
    base.template()["metadata"]["labels"]["tenant.platform/sku"] = json!(pool.gpu);
    Some(base)
}

/// One probe: the workload that uses a capability, the one that uses the tenant's own
/// counterpart (for a denied capability), and whether it runs as a Job.
struct Probe {
    uses: Base,
    control: Option<Base>,
}

/// The probe of one grant, or why none could be made.
fn probe(cell: &CellPlan, tenant: &TenantPlan, grant: &Grant) -> Result<Probe, String> {
    let base = Base::of(cell, tenant);
    let in_namespace = |base: Base| -> Result<Base, String> {
        let name = grant.namespace.as_deref().unwrap_or_default();
        let namespace = tenant
            .namespaces
            .iter()
            .find(|ns| ns.name == name)
            .ok_or_else(|| format!("no namespace {name}"))?;
        Ok(base.without_gpus().moved_to(namespace))
    };
    let base_resource = base.gpu_resource();
    let host_pool = || {
        own_pools(cell, tenant)
            .into_iter()
            .find(|pool| {
                base_resource.as_ref().is_some_and(|resource| {
                    pool.offers.iter().any(|offer| &offer.resource == resource)
                })
            })
            .or_else(|| own_pools(cell, tenant).into_iter().next())
    };
    Ok(match grant.capability {
        Capability::Pool => {
            let pool = cell
                .pools
                .iter()
                .find(|pool| pool.name == grant.value)
                .ok_or_else(|| format!("no pool {}", grant.value))?;
            if grant.granted {
                let uses = on_pool(base, cell, tenant, pool).ok_or_else(|| {
                    format!("no namespace has quota for what pool {} offers", pool.name)
                })?;
                Probe {
                    uses,
                    control: None,
                }
            } else if tolerations_of(pool).is_empty() {
                // Pinned by zero quota: ask for what it offers.
                let mut uses = base.clone();
                let resource = &pool.offers.first().ok_or("a pool without offers")?.resource;
                for container in uses.spec()["containers"].as_array_mut().unwrap() {
                    container["resources"] = json!({"limits": {resource.clone(): 1}});
                }
                Probe {
                    uses,
                    control: Some(base),
                }
            } else {
                // Pinned by taint: tolerate it.
                let mut uses = base.clone();
                let spec = uses.spec();
                let mut tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
                tolerations.extend(tolerations_of(pool));
                spec["tolerations"] = json!(tolerations);
                Probe {
                    uses,
                    control: Some(base),
                }
            }
        }
        Capability::RuntimeClass => {
            let mut uses = base.clone();
            uses.spec()["runtimeClassName"] = json!(grant.value);
            Probe {
                control: (!grant.granted).then_some(base),
                uses,
            }
        }
        Capability::HostNetwork => {
            let mut uses = base.clone();
            uses.spec()["hostNetwork"] = json!(true);
            Probe {
                uses,
                control: Some(base),
            }
        }
        Capability::RdmaDevices => {
            let mut uses = base.clone();
            if let Some(pool) = host_pool() {
                uses.spec()["nodeSelector"] = json!(pool.node_labels);
                if let Some(class) = runtime_class_for(cell, tenant, &pool.node_labels) {
                    uses.spec()["runtimeClassName"] = json!(class);
                }
            }
            uses.spec()["containers"][0]["resources"]["limits"]["rdma/hca_shared_devices_a"] =
                json!(1);
            Probe {
                control: (!grant.granted).then_some(base),
                uses,
            }
        }
        Capability::LinuxCapability => {
            let mut uses = in_namespace(base)?;
            if let Some(pool) = host_pool() {
                uses.spec()["nodeSelector"] = json!(pool.node_labels);
            }
            uses.spec()["containers"][0]["securityContext"]["capabilities"] =
                json!({"drop": ["ALL"], "add": [grant.value]});
            if !grant.granted {
                return Err("a denied Linux capability is not in the plan".to_string());
            }
            Probe {
                uses,
                control: None,
            }
        }
        Capability::Registry => {
            let mut uses = base.clone();
            for container in uses.spec()["containers"].as_array_mut().unwrap() {
                container["image"] = json!(format!("{}/probe@{DIGEST}", grant.value));
            }
            Probe {
                control: (!grant.granted).then_some(base),
                uses,
            }
        }
        Capability::WeightDigest => {
            let mut uses = base.clone();
            uses.template()["metadata"]["annotations"] =
                json!({admission::WEIGHT_DIGEST_ANNOTATION: grant.value});
            let mut control = base;
            control.template()["metadata"]["annotations"] = json!({
                admission::WEIGHT_DIGEST_ANNOTATION:
                    tenant.weights.first().map(|model| model.digest.clone()).unwrap_or_default()
            });
            Probe {
                control: (!grant.granted && !tenant.weights.is_empty()).then_some(control),
                uses,
            }
        }
        Capability::Queue => {
            let name = grant.namespace.as_deref().unwrap_or_default();
            let namespace = tenant
                .namespaces
                .iter()
                .find(|ns| ns.name == name)
                .ok_or_else(|| format!("no namespace {name}"))?;
            let mut uses = match base
                .gpu_resource()
                .filter(|r| namespace.gpu.get(r).is_some_and(|n| *n > 0))
            {
                Some(_) => base.moved_to(namespace),
                None => base.without_gpus().moved_to(namespace),
            };
            uses.template()["metadata"]["labels"][admission::QUEUE_LABEL] = json!(grant.value);
            uses.job["metadata"]["labels"][admission::QUEUE_LABEL] = json!(grant.value);
            Probe {
                uses,
                control: None,
            }
        }
        Capability::Priority => {
            let mut uses = in_namespace(base)?;
            let control = uses.clone();
            uses.template()["metadata"]["labels"][admission::PRIORITY_LABEL] = json!(grant.value);
            Probe {
                control: (!grant.granted).then_some(control),
                uses,
            }
        }
    })
}

/// Creates `object` as a member of the tenant owning its namespace (by server-side dry-run when
/// `dry_run`), after creating the ServiceAccount its pods name, as a tenant admin could.
fn create_as_member(cluster: &Cluster, cell: &CellPlan, object: &Value, dry_run: bool) -> Run {
    let namespace = namespace_of(object);
    let spec = if object["kind"] == "Pod" {
        &object["spec"]
    } else {
        &object["spec"]["template"]["spec"]
    };
    if let Some(account) = spec["serviceAccountName"].as_str() {
        create_service_account(cluster, &namespace, account);
    }
    let mut args: Vec<String> = ["create", "-o", "name", "-f", "-"]
        .iter()
        .map(|arg| (*arg).to_string())
        .collect();
    if dry_run {
        args.push("--dry-run=server".to_string());
    }
    args.extend(member_of(cell, &namespace));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cluster.kubectl_with(
        &cluster.user_kubeconfig,
        &args,
        &tidy(object.clone()).to_string(),
    )
}

/// Waits until a pod labelled `label=value` exists; `Some` with the namespace's events about
/// `name` when none appears in time.
fn pod_appears(
    cluster: &Cluster,
    namespace: &str,
    label: &str,
    value: &str,
    name: &str,
) -> Option<String> {
    let started = Instant::now();
    while pods_labelled(cluster, namespace, label, value).is_empty() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let events = cluster.kubectl(
                &[
                    "get",
                    "events",
                    "-n",
                    namespace,
                    "--field-selector",
                    &format!("involvedObject.name={name}"),
                    "-o",
                    "custom-columns=MESSAGE:.message",
                    "--no-headers",
                ],
                "",
            );
            return Some(events.stdout.trim().to_string());
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    None
}

/// Creates the Job as a member for real and waits for its controller's pod; deletes both.
fn run_job(cluster: &Cluster, cell: &CellPlan, job: &Value) -> Answer {
    let namespace = namespace_of(job);
    let name = job["metadata"]["name"].as_str().unwrap().to_string();
    let run = create_as_member(cluster, cell, job, false);
    if !run.ok {
        return Answer::Refused(run.stderr.trim().to_string());
    }
    let answer = match pod_appears(
        cluster,
        &namespace,
        "batch.kubernetes.io/job-name",
        &name,
        &name,
    ) {
        None => Answer::Ran,
        Some(events) => Answer::NoPod(events),
    };
    delete_with_pods(cluster, "job", &namespace, &name);
    remove_pods(cluster, &namespace, "batch.kubernetes.io/job-name", &name);
    answer
}

/// Creates the Pod as a member by server-side dry-run.
fn try_pod(cluster: &Cluster, cell: &CellPlan, pod: &Value) -> Answer {
    let run = create_as_member(cluster, cell, pod, true);
    if run.ok {
        Answer::Ran
    } else {
        Answer::Refused(run.stderr.trim().to_string())
    }
}

/// The problems of one grant: a granted capability that does not run, a denied one that is not
/// refused, or a denied one whose control is refused too.
fn judge_grant(
    cluster: &Cluster,
    cell: &CellPlan,
    tenant: &TenantPlan,
    grant: &Grant,
    serial: usize,
) -> Vec<String> {
    let what = format!(
        "{} in {}: {:?} {}{} ({})",
        tenant.name,
        cell.name,
        grant.capability,
        grant.value,
        grant
            .namespace
            .as_deref()
            .map(|ns| format!(" in {ns}"))
            .unwrap_or_default(),
        if grant.granted { "granted" } else { "denied" }
    );
    let probe = match probe(cell, tenant, grant) {
        Ok(probe) => probe,
        Err(why) => return vec![format!("{what}: the check cannot probe it: {why}")],
    };
    let name = format!("probe-{serial}");
    if grant.granted {
        return match run_job(cluster, cell, &probe.uses.named(&name)) {
            Answer::Ran => Vec::new(),
            Answer::Refused(message) => {
                vec![format!("{what}: the Job was refused:\n    {message}")]
            }
            Answer::NoPod(events) => vec![format!(
                "{what}: the Job was admitted, but its controller's pod was not:\n    {events}"
            )],
        };
    }
    let mut problems = Vec::new();
    match try_pod(cluster, cell, &probe.uses.pod(&name)) {
        Answer::Refused(_) => {}
        other => problems.push(format!(
            "{what}: a pod that uses it was admitted ({other:?})"
        )),
    }
    if let Some(control) = &probe.control {
        match try_pod(cluster, cell, &control.pod(&name)) {
            Answer::Ran => {}
            other => problems.push(format!(
                "{what}: the same pod with the tenant's own counterpart is not admitted, so the refusal proves nothing: {other:?}"
            )),
        }
    }
    problems
}

/// Workloads whose pods a controller makes from the tenant's base: a Deployment, a CronJob's
/// Job (`kubectl create job --from=cronjob`, as a member) and, where the namespace may claim
/// storage, a StatefulSet with a claim template named as the floor requires.
fn controller_made(cluster: &Cluster, cell: &CellPlan, tenant: &TenantPlan) -> Vec<String> {
    let mut problems = Vec::new();
    let base = Base::of(cell, tenant);
    let namespace = base.namespace();
    let member = member_of(cell, &namespace);
    let template = base.job["spec"]["template"].clone();
    let mut labelled = template.clone();
    labelled["metadata"]["labels"]["app"] = json!("probe-deploy");
    labelled["spec"]
        .as_object_mut()
        .unwrap()
        .remove("restartPolicy");
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "probe-deploy", "namespace": namespace, "labels": base.job["metadata"]["labels"].clone()},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "probe-deploy"}}, "template": labelled},
    });
    let cronjob = json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "probe-cron", "namespace": namespace},
        "spec": {
            "schedule": "0 0 1 1 *",
            "suspend": true,
            "jobTemplate": {"metadata": {"labels": base.job["metadata"]["labels"].clone()}, "spec": {"template": template.clone()}},
        },
    });
    let storage_allowed = tenant
        .namespaces
        .iter()
        .find(|ns| ns.name == namespace)
        .is_some_and(|ns| {
            ["requests.storage", "persistentvolumeclaims"]
                .iter()
                .all(|key| {
                    ns.other_quota
                        .get(*key)
                        .is_some_and(|value| value != "0" && !value.is_empty())
                })
        });
    let claim = format!("{}-probe-data", tenant.name);
    let mut with_claim = template.clone();
    with_claim["metadata"]["labels"]["app"] = json!("probe-set");
    with_claim["spec"]
        .as_object_mut()
        .unwrap()
        .remove("restartPolicy");
    with_claim["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": claim, "mountPath": "/data"}]);
    let statefulset = json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "probe-set", "namespace": namespace, "labels": base.job["metadata"]["labels"].clone()},
        "spec": {
            "serviceName": "probe-set",
            "replicas": 1,
            "selector": {"matchLabels": {"app": "probe-set"}},
            "template": with_claim,
            "volumeClaimTemplates": [{"metadata": {"name": claim}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    });
    if let Some(account) = template["spec"]["serviceAccountName"].as_str() {
        create_service_account(cluster, &namespace, account);
    }
    let mut workloads = vec![("deployment", "probe-deploy".to_string(), deployment, "app")];
    if storage_allowed {
        workloads.push(("statefulset", "probe-set".to_string(), statefulset, "app"));
    }
    // The admitted StatefulSet fixture itself, claim templates and all (issue 25).
    let fixture_path = support::repo().join(format!(
        "tests/policy/admitted/{}/{}-statefulset.yaml",
        cell.name, tenant.name
    ));
    if fixture_path.is_file() {
        let fixture = fixture(&format!("{}-statefulset", tenant.name), &cell.name);
        let app = fixture["spec"]["selector"]["matchLabels"]["app"]
            .as_str()
            .expect("the fixture selects by app")
            .to_string();
        if let Some(account) = fixture["spec"]["template"]["spec"]["serviceAccountName"].as_str() {
            create_service_account(cluster, &namespace_of(&fixture), account);
        }
        workloads.push(("statefulset", app, fixture, "app"));
    }
    let kinds: Vec<&str> = workloads.iter().map(|(kind, ..)| *kind).collect();
    println!(
        "  {} in {}: pods made by its {} and a Job from its CronJob",
        tenant.name,
        cell.name,
        kinds.join(", ")
    );
    for (kind, name, object, label) in workloads {
        let name = name.as_str();
        let namespace = namespace_of(&object);
        let object_name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let run = create_as_member(cluster, cell, &object, false);
        if !run.ok {
            problems.push(format!(
                "{} in {}: its {kind} was refused:\n    {}",
                tenant.name,
                cell.name,
                run.stderr.trim()
            ));
            continue;
        }
        if let Some(events) = pod_appears(cluster, &namespace, label, name, &object_name) {
            problems.push(format!(
                "{} in {}: its {kind} was admitted, but no pod was created:\n    {events}",
                tenant.name, cell.name
            ));
        }
        delete_with_pods(cluster, kind, &namespace, &object_name);
        remove_pods(cluster, &namespace, label, name);
        if kind == "statefulset" {
            let _ = cluster.kubectl(
                &["delete", "pvc", "-n", &namespace, "--all", "--wait=false"],
                "",
            );
        }
    }
    // A CronJob's Job, made the way a member reruns one.
    let run = cluster.kubectl(&["create", "-f", "-"], &tidy(cronjob).to_string());
    assert!(run.ok, "creating the probe CronJob failed:\n{}", run.stderr);
    let mut args: Vec<String> = [
        "create",
        "job",
        "probe-from-cron",
        "--from=cronjob/probe-cron",
        "-n",
        &namespace,
    ]
    .iter()
    .map(|a| (*a).to_string())
    .collect();
    args.extend(member.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = cluster.kubectl_with(&cluster.user_kubeconfig, &args, "");
    if run.ok {
        // `create job --from` copies the template, suspension included: the platform resumes it,
        // as Kueue would after admission.
        let _ = cluster.kubectl(
            &[
                "patch",
                "job",
                "probe-from-cron",
                "-n",
                &namespace,
                "--type=merge",
                "-p",
                r#"{"spec":{"suspend":false}}"#,
            ],
            "",
        );
        if let Some(events) = pod_appears(
            cluster,
            &namespace,
            "batch.kubernetes.io/job-name",
            "probe-from-cron",
            "probe-from-cron",
        ) {
            problems.push(format!(
                "{} in {}: the Job made from its CronJob has no pod:\n    {events}",
                tenant.name, cell.name
            ));
        }
        delete_with_pods(cluster, "job", &namespace, "probe-from-cron");
        remove_pods(
            cluster,
            &namespace,
            "batch.kubernetes.io/job-name",
            "probe-from-cron",
        );
    } else {
        problems.push(format!(
            "{} in {}: a member's Job from its CronJob was refused:\n    {}",
            tenant.name,
            cell.name,
            run.stderr.trim()
        ));
    }
    let _ = cluster.kubectl(
        &[
            "delete",
            "cronjob",
            "probe-cron",
            "-n",
            &namespace,
            "--wait=false",
        ],
        "",
    );
    problems
}

/// Every problem of the words-and-enforcement comparison in one cell; `only` limits it to the
/// grants of that capability (all when `None`).
fn cell_problems(cluster: &Cluster, cell: &CellPlan, only: Option<Capability>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut serial = 0;
    for tenant in &cell.tenants {
        let mut counts = (0, 0);
        let before = problems.len();
        for grant in grants(cell, tenant)
            .iter()
            .filter(|grant| only.is_none_or(|capability| capability == grant.capability))
        {
            serial += 1;
            if grant.granted {
                counts.0 += 1;
            } else {
                counts.1 += 1;
            }
            problems.extend(judge_grant(cluster, cell, tenant, grant, serial));
        }
        if only.is_none() {
            problems.extend(controller_made(cluster, cell, tenant));
        }
        println!(
            "  {} in {}: {} granted and {} denied capabilities probed, {} problems",
            tenant.name,
            cell.name,
            counts.0,
            counts.1,
            problems.len() - before
        );
    }
    problems
}

pub(super) fn words_and_enforcement_agree(cluster: &Cluster) {
    install_crds(cluster);
    install_node_runtime_classes(cluster);
    let fleet = fixture_fleet();
    let controllers = WorkloadControllers::start(cluster);
    let mut problems = Vec::new();
    for cell in &fleet.plan.cells {
        set_up_cell(cluster, &fleet, cell);
        problems.extend(cell_problems(cluster, cell, None));
    }
    drop(controllers);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

pub(super) fn words_self_test_a_floor_without_pool_tolerations_is_caught(cluster: &Cluster) {
    install_crds(cluster);
    install_node_runtime_classes(cluster);
    let fleet = fixture_fleet();
    let cell = fleet
        .plan
        .cells
        .iter()
        .find(|cell| cell.name == "us-east-1a")
        .expect("cell us-east-1a");
    set_up_cell(cluster, &fleet, cell);
    let controllers = WorkloadControllers::start(cluster);
    let before = cell_problems(cluster, cell, Some(Capability::Pool));
    assert!(before.is_empty(), "before the self-test: {before:?}");
    let mut weakened = admission::policy();
    let spec = weakened.spec.as_mut().expect("a spec");
    let idx = admission::RULES
        .iter()
        .position(|rule| rule.name == "pool-tolerations")
        .expect("the pool-tolerations rule");
    spec.validations.as_mut().expect("validations").remove(idx);
    {
        let _restore = Restore(cluster);
        apply_policy(cluster, &weakened);
        let started = Instant::now();
        let caught = loop {
            let problems = cell_problems(cluster, cell, Some(Capability::Pool));
            if !problems.is_empty() || started.elapsed() > std::time::Duration::from_secs(30) {
                break problems;
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        };
        assert!(
            caught
                .iter()
                .any(|problem| problem.contains("a pod that uses it was admitted")),
            "a floor without pool-tolerations was not caught: {caught:?}"
        );
        println!(
            "  self-test, the floor without pool-tolerations: {} denied pools reported admitted",
            caught.len()
        );
    }
    wait_until(
        "the restored policy to refuse the denied pools again",
        || {
            cell_problems(cluster, cell, Some(Capability::Pool))
                .is_empty()
                .then_some(())
        },
    );
    drop(controllers);
}
