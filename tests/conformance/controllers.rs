//! Conformance of the tenant floor with the real workload controllers running: a member of a
//! tenant cannot take a pod away from its Job or ReplicaSet, or delete a workload and leave its
//! pods running, and the attack the floor refuses is real (issue 18, hole 1).
//!
//! Consumes: the harness's binaries (`TENANTC_CONFORMANCE_BIN`), the fixture fleet's cell
//! `us-east-1a` (applied with `quota::set_up_cell`) and the admitted fixtures of
//! `tests/policy/admitted/`. Produces: pass or fail, and one line per attack with what the API
//! server answered.
//!
//! Invariants:
//! - The controllers run in a kube-controller-manager of their own (Job, ReplicaSet,
//!   Deployment, StatefulSet, CronJob and the garbage collector), started for this check and
//!   stopped when it ends, so no other check sees them; they act under their own
//!   ServiceAccounts (`--use-service-account-credentials`), as in a real cluster.
//! - Every attack is made on a pod the controller itself created, by the tenant's member
//!   (impersonated), by server-side dry-run, and must be refused with exactly the message the
//!   offline evaluator gives for the same request.
//! - The self-test makes the same change as the platform (which the floor does not judge), for
//!   real, and shows the controller release the pod and start another in its place: the pod
//!   Kueue would no longer count.

use super::admission::{
    create_service_account, dry_run_delete, dry_run_patch, member_of, offline_delete,
    offline_update,
};
use super::policy_cases::{fixture, merge_patch, namespace_of};
use super::quota::{fixture_fleet, set_up_cell};
use super::*;

use std::process::Child;
use std::time::Duration;

use tenantc::plan::CellPlan;

/// How long a controller may take to create or release a pod.
const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(90);

/// The controllers of the check, as `--controllers` names them.
const CONTROLLERS: &str = "job-controller,replicaset-controller,deployment-controller,statefulset-controller,cronjob-controller,garbage-collector-controller";

/// A kube-controller-manager that runs the workload controllers until it is dropped.
pub(super) struct WorkloadControllers {
    child: Child,
}

impl WorkloadControllers {
    /// Starts the workload controllers against the cluster, with the admin's kubeconfig and
    /// the controllers' own ServiceAccounts.
    pub(super) fn start(cluster: &Cluster) -> Self {
        let binary = cluster.bin_dir.join("kube-controller-manager");
        assert!(
            binary.is_file(),
            "no kube-controller-manager at {} (TENANTC_CONFORMANCE_BIN)",
            binary.display()
        );
        let log_dir = cluster.run_dir.join("logs");
        std::fs::create_dir_all(&log_dir).expect("the harness's log folder");
        let log = std::fs::File::create(log_dir.join("workload-controllers.log"))
            .expect("a log file for the workload controllers");
        let kubeconfig = format!("--kubeconfig={}", cluster.kubeconfig.display());
        let child = Command::new(&binary)
            .arg(&kubeconfig)
            .arg(format!(
                "--authentication-kubeconfig={}",
                cluster.kubeconfig.display()
            ))
            .arg(format!(
                "--authorization-kubeconfig={}",
                cluster.kubeconfig.display()
            ))
            .arg(format!("--controllers={CONTROLLERS}"))
            .args([
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                "--use-service-account-credentials=true",
                "--concurrent-gc-syncs=5",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", binary.display()));
        WorkloadControllers { child }
    }
}

impl Drop for WorkloadControllers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `probe` until it returns `Some` or the controller timeout is up.
pub(super) fn wait_until<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            started.elapsed() < CONTROLLER_TIMEOUT,
            "timed out after {} s waiting for {what}",
            CONTROLLER_TIMEOUT.as_secs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The pods of a namespace that carry `label=value`, as the API server holds them.
pub(super) fn pods_labelled(
    cluster: &Cluster,
    namespace: &str,
    label: &str,
    value: &str,
) -> Vec<Value> {
    let selector = format!("{label}={value}");
    let run = cluster.kubectl(
        &[
            "get", "pods", "-n", namespace, "-l", &selector, "-o", "json",
        ],
        "",
    );
    assert!(run.ok, "listing pods failed:\n{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).expect("a pod list");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// Whether a pod names a controller.
fn controlled(pod: &Value) -> bool {
    pod["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["controller"] == json!(true)))
}

/// One attack by a member of the tenant: the live `before` patched into `after` by server-side
/// dry-run; a problem unless the API server refuses it with the offline evaluator's message.
fn refused_update(
    cluster: &Cluster,
    cell: &CellPlan,
    what: &str,
    before: &Value,
    after: &Value,
) -> Option<String> {
    let namespace = namespace_of(before);
    let answer = dry_run_patch(
        cluster,
        &cluster.user_kubeconfig,
        before,
        after,
        &member_of(cell, &namespace),
    );
    let Some(expected) = offline_update(cell, before, after) else {
        return Some(format!("{what}: the offline evaluator admits it"));
    };
    if !answer.ok && answer.stderr.contains(&expected) {
        println!("  {what}: refused ({})", tenantc_rule_of(&expected));
        None
    } else {
        Some(format!(
            "{what}: tenantc denies it with\n    {expected}\n  but the API server answered the member with\n    {}{}",
            answer.stderr.trim(),
            answer.stdout.trim()
        ))
    }
}

/// A short form of a floor message for the log: its first clause.
fn tenantc_rule_of(message: &str) -> &str {
    message.split(':').next().unwrap_or(message)
}

/// A member's DELETE of `object` with `options` by dry-run: a problem unless the answer is
/// `refused` (with the offline message) or admitted.
fn judged_delete(
    cluster: &Cluster,
    cell: &CellPlan,
    what: &str,
    object: &Value,
    options: &Value,
    refused: bool,
) -> Option<String> {
    let namespace = namespace_of(object);
    let member = member_of(cell, &namespace);
    let answer = dry_run_delete(cluster, &cluster.user_kubeconfig, object, options, &member);
    let offline = offline_delete(cell, object, options);
    match (refused, offline, answer.ok) {
        (true, Some(expected), false) if answer.stderr.contains(&expected) => {
            println!("  {what}: refused");
            None
        }
        (false, None, true) => {
            println!("  {what}: admitted");
            None
        }
        (_, offline, _) => Some(format!(
            "{what}: expected {}; tenantc says {offline:?}, the API server answered\n    {}{}",
            if refused { "a refusal" } else { "admission" },
            answer.stderr.trim(),
            answer.stdout.trim()
        )),
    }
}

/// Patches `before` into `after` for real, as the platform (whom the floor does not judge).
fn platform_patch(cluster: &Cluster, before: &Value, after: &Value) {
    let kind = before["kind"].as_str().unwrap().to_lowercase();
    let name = before["metadata"]["name"].as_str().unwrap();
    let namespace = namespace_of(before);
    let patch = merge_patch(before, after).to_string();
    let run = cluster.kubectl(
        &[
            "patch",
            &kind,
            name,
            "-n",
            &namespace,
            "--type=merge",
            "-p",
            &patch,
        ],
        "",
    );
    assert!(
        run.ok,
        "the platform's patch of {kind} {name} failed:\n{}",
        run.stderr
    );
}

/// An object as the API server holds it.
fn live(cluster: &Cluster, kind: &str, namespace: &str, name: &str) -> Value {
    let run = cluster.kubectl(&["get", kind, name, "-n", namespace, "-o", "json"], "");
    assert!(
        run.ok,
        "getting {kind} {namespace}/{name} failed:\n{}",
        run.stderr
    );
    serde_json::from_str(&run.stdout).expect("an object as JSON")
}

/// Creates `object` as the admin (the platform, whom the floor does not judge).
fn create(cluster: &Cluster, object: &Value) {
    let run = cluster.kubectl(&["create", "-f", "-"], &object.to_string());
    assert!(
        run.ok,
        "creating {} {} failed:\n{}",
        object["kind"], object["metadata"]["name"], run.stderr
    );
}

/// The attacks on a Job's pod, and the self-test that the Job controller really releases it.
fn job_attacks(cluster: &Cluster, cell: &CellPlan, problems: &mut Vec<String>) {
    let mut job = fixture("globex-vision-job", "us-east-1a");
    let name = "globex-vision-detach";
    job["metadata"]["name"] = json!(name);
    // Kueue unsuspends a Job it admits; no Kueue runs here, so the platform does.
    job["spec"]["suspend"] = json!(false);
    let namespace = namespace_of(&job);
    create_service_account(cluster, &namespace, "vision-server");
    create(cluster, &job);
    let pod = wait_until("the Job controller's pod", || {
        pods_labelled(cluster, &namespace, "batch.kubernetes.io/job-name", name)
            .into_iter()
            .find(controlled)
    });
    let live_job = live(cluster, "job", &namespace, name);
    let mut unlabelled = pod.clone();
    for label in ["batch.kubernetes.io/controller-uid", "controller-uid"] {
        unlabelled["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove(label);
    }
    problems.extend(refused_update(
        cluster,
        cell,
        "a member removes the selector labels from the Job controller's pod",
        &pod,
        &unlabelled,
    ));
    let mut unowned = pod.clone();
    unowned["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    problems.extend(refused_update(
        cluster,
        cell,
        "a member drops the Job's owner reference from its pod",
        &pod,
        &unowned,
    ));
    for (what, options, refused) in [
        (
            "a member deletes the running Job with propagationPolicy Orphan",
            json!({"propagationPolicy": "Orphan"}),
            true,
        ),
        (
            "a member deletes the running Job without options (batch/v1 orphans)",
            json!({}),
            true,
        ),
        (
            "a member deletes the running Job with its pods (propagationPolicy Background)",
            json!({"propagationPolicy": "Background"}),
            false,
        ),
    ] {
        problems.extend(judged_delete(
            cluster, cell, what, &live_job, &options, refused,
        ));
    }
    // The self-test: the platform removes the labels for real. The Job controller releases the
    // pod and starts a replacement, so the namespace runs two GPU pods for a Job of one.
    let pod_name = pod["metadata"]["name"].as_str().unwrap().to_string();
    platform_patch(cluster, &pod, &unlabelled);
    let (released, pods) = wait_until(
        "the Job controller to release the pod and replace it",
        || {
            let pods = pods_labelled(cluster, &namespace, "batch.kubernetes.io/job-name", name);
            let released = pods
                .iter()
                .find(|p| p["metadata"]["name"] == json!(pod_name) && !controlled(p))?
                .clone();
            (pods.iter().filter(|p| controlled(p)).count() == 1).then_some((released, pods.len()))
        },
    );
    println!(
        "  self-test: without the floor the Job controller released {} and started another ({pods} pods for a Job of parallelism 1)",
        released["metadata"]["name"].as_str().unwrap_or_default()
    );
    delete_with_pods(cluster, "job", &namespace, name);
    remove_pods(cluster, &namespace, "batch.kubernetes.io/job-name", name);
}

/// The attacks on a Deployment's pod, and the self-test that its ReplicaSet releases it.
fn deployment_attacks(cluster: &Cluster, cell: &CellPlan, problems: &mut Vec<String>) {
    let pod = fixture("acme-serving-pod", "us-east-1a");
    let name = "acme-serving-detach";
    let namespace = namespace_of(&pod);
    let mut template = json!({
        "metadata": {"labels": pod["metadata"]["labels"].clone()},
        "spec": pod["spec"].clone(),
    });
    template["metadata"]["labels"]["app"] = json!(name);
    if let Some(annotations) = pod["metadata"].get("annotations") {
        template["metadata"]["annotations"] = annotations.clone();
    }
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": pod["metadata"]["labels"].clone(),
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": template,
        },
    });
    if let Some(account) = pod["spec"]["serviceAccountName"].as_str() {
        create_service_account(cluster, &namespace, account);
    }
    create(cluster, &deployment);
    let owned = wait_until("the ReplicaSet controller's pod", || {
        pods_labelled(cluster, &namespace, "app", name)
            .into_iter()
            .find(controlled)
    });
    let mut rehashed = owned.clone();
    rehashed["metadata"]["labels"]["pod-template-hash"] = json!("released");
    problems.extend(refused_update(
        cluster,
        cell,
        "a member changes the pod-template-hash of the ReplicaSet controller's pod",
        &owned,
        &rehashed,
    ));
    let mut relabelled = owned.clone();
    relabelled["metadata"]["labels"]["app"] = json!("elsewhere");
    problems.extend(refused_update(
        cluster,
        cell,
        "a member changes the selected label of the ReplicaSet controller's pod",
        &owned,
        &relabelled,
    ));
    let mut unowned = owned.clone();
    unowned["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    problems.extend(refused_update(
        cluster,
        cell,
        "a member drops the ReplicaSet's owner reference from its pod",
        &owned,
        &unowned,
    ));
    let live = live(cluster, "deployment", &namespace, name);
    problems.extend(judged_delete(
        cluster,
        cell,
        "a member deletes the Deployment with propagationPolicy Orphan",
        &live,
        &json!({"propagationPolicy": "Orphan"}),
        true,
    ));
    problems.extend(judged_delete(
        cluster,
        cell,
        "a member deletes the Deployment without options (apps/v1 takes its pods)",
        &live,
        &json!({}),
        false,
    ));
    // The self-test: the platform relabels the pod for real; the ReplicaSet releases it and
    // starts another.
    let pod_name = owned["metadata"]["name"].as_str().unwrap().to_string();
    platform_patch(cluster, &owned, &relabelled);
    wait_until(
        "the ReplicaSet controller to release the pod and replace it",
        || {
            let pods = pods_labelled(cluster, &namespace, "app", name);
            let released = pods_labelled(cluster, &namespace, "app", "elsewhere");
            (released.iter().any(|p| !controlled(p))
                && pods.iter().filter(|p| controlled(p)).count() == 1)
                .then_some(())
        },
    );
    println!(
        "  self-test: without the floor the ReplicaSet controller released {pod_name} and started another"
    );
    delete_with_pods(cluster, "deployment", &namespace, name);
    remove_pods(cluster, &namespace, "app", name);
    remove_pods(cluster, &namespace, "app", "elsewhere");
}

/// Deletes a workload with its pods, as the platform.
pub(super) fn delete_with_pods(cluster: &Cluster, kind: &str, namespace: &str, name: &str) {
    let run = cluster.kubectl(
        &[
            "delete",
            kind,
            name,
            "-n",
            namespace,
            "--cascade=background",
            "--wait=false",
        ],
        "",
    );
    assert!(
        run.ok,
        "deleting {kind} {namespace}/{name} failed:\n{}",
        run.stderr
    );
}

/// Deletes the pods labelled `label=value` at once and waits until they are gone, finalizers
/// and all (no kubelet confirms their end here).
pub(super) fn remove_pods(cluster: &Cluster, namespace: &str, label: &str, value: &str) {
    let selector = format!("{label}={value}");
    for pod in pods_labelled(cluster, namespace, label, value) {
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let _ = cluster.kubectl(
            &[
                "patch",
                "pod",
                &name,
                "-n",
                namespace,
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ],
            "",
        );
    }
    let run = cluster.kubectl(
        &[
            "delete",
            "pods",
            "-n",
            namespace,
            "-l",
            &selector,
            "--grace-period=0",
            "--force",
            "--wait=false",
        ],
        "",
    );
    assert!(run.ok, "deleting pods {selector} failed:\n{}", run.stderr);
    wait_until("the pods to be gone", || {
        pods_labelled(cluster, namespace, label, value)
            .is_empty()
            .then_some(())
    });
}

pub(super) fn controllers_keep_their_pods_under_kueue(cluster: &Cluster) {
    install_crds(cluster);
    let fleet = fixture_fleet();
    let cell = fleet
        .plan
        .cells
        .iter()
        .find(|cell| cell.name == "us-east-1a")
        .expect("cell us-east-1a");
    set_up_cell(cluster, &fleet, cell);
    let controllers = WorkloadControllers::start(cluster);
    let mut problems = Vec::new();
    job_attacks(cluster, cell, &mut problems);
    deployment_attacks(cluster, cell, &mut problems);
    drop(controllers);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
