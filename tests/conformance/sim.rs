//! The simulated cell (issue 21): the real kube-scheduler, KWOK's fake nodes and the real Kueue
//! controller manager against the harness's API server, so the two programs a platform team
//! runs judge what tenantc emits.
//!
//! Consumes: the binaries, Kueue CRDs and webhook manifests and KWOK stages that
//! `harness.sh build-sim` caches in `$TENANTC_CONFORMANCE_BIN/sim/`, the fixture fleet (applied
//! cell by cell with `quota::set_up_cell`), its capacity reports (the nodes) and
//! `tenantc describe --format json` (the figures the scenarios compare with).
//! Produces: pass or fail, and per scenario one line per tenant, pool and resource with the
//! expected and the observed figures.
//!
//! Invariants:
//! - Every component runs for one check only and is stopped when [`SimulatedCell`] is dropped,
//!   even when the check fails: the Kueue webhook configurations (which fail closed) are deleted
//!   first, then Kueue, KWOK, the scheduler and the controllers, newest first.
//! - Nodes are made from the capacity report, never from this file: labels, taints and GPU
//!   devices per node group, as `reports/capacity.json` lists them.
//! - Expected figures are read from `tenantc describe --format json`, never written here.

use super::admission::install_node_runtime_classes;
use super::processes::{Components, free_port, http_ok, make_serving_certificate, tls_ok};
use super::quota::{Fleet, fixture_fleet, set_up_cell};
use super::*;

use std::time::Duration;

use tenantc::plan::{CellPlan, TenantPlan};

/// How long a component may take to become ready, and Kueue to settle its admissions.
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// Label selecting the fake nodes KWOK manages.
const FAKE_NODE_ANNOTATION: &str = "kwok.x-k8s.io/node";

/// The controllers the simulated cell needs beside the harness's: node lifecycle (removes the
/// not-ready taint of new nodes), Jobs (makes the pods Kueue lets run) and the garbage
/// collector (deletes a Job's pods with it).
const CELL_CONTROLLERS: &str =
    "node-lifecycle-controller,job-controller,garbage-collector-controller";

/// The integrations every cell's Kueue must enable, as `docs/admission.md` lists them under
/// "Kueue prerequisites" (a test holds the two to each other), with the end of the path of each
/// one's webhooks in Kueue's manifests.
const KUEUE_INTEGRATIONS: [(&str, &str); 4] = [
    ("batch/job", "-batch-v1-job"),
    ("pod", "--v1-pod"),
    ("deployment", "-apps-v1-deployment"),
    ("statefulset", "-apps-v1-statefulset"),
];

/// The nodes of a simulated cell outside its GPU pools, and their names' prefix.
const CPU_NODES: usize = 2;
const CPU_NODE_PREFIX: &str = "cpu-";

/// The names of the webhook configurations this module applies.
const MUTATING_WEBHOOKS: &str = "tenantc-sim-kueue-mutating";
const VALIDATING_WEBHOOKS: &str = "tenantc-sim-kueue-validating";

/// The running components of a simulated cell.
pub(super) struct SimulatedCell {
    kubectl: String,
    kubeconfig: PathBuf,
    /// Dropped after the webhooks are deleted (see `Drop`).
    components: Components,
}

impl SimulatedCell {
    /// Starts the controllers, the scheduler, KWOK and Kueue, and applies Kueue's CRDs and
    /// webhooks; panics (after stopping what started) with the component's log tail if one
    /// does not become ready.
    pub(super) fn start(cluster: &Cluster) -> SimulatedCell {
        let sim = cluster.bin_dir.join("sim");
        for binary in ["kube-scheduler", "kwok", "kueue"] {
            assert!(
                sim.join(binary).is_file(),
                "no {binary} in {}: run `bash tests/conformance/harness.sh build-sim` first",
                sim.display()
            );
        }
        let work = cluster.run_dir.join("sim");
        std::fs::create_dir_all(&work).expect("the simulated cell's folder");
        let mut cell = SimulatedCell {
            kubectl: cluster.kubectl.clone(),
            kubeconfig: cluster.kubeconfig.clone(),
            components: Components::new(cluster),
        };
        let kubeconfig = cluster.kubeconfig.display().to_string();

        // Controllers of the cell, in a kube-controller-manager of their own.
        let mut command = Command::new(cluster.bin_dir.join("kube-controller-manager"));
        command.args([
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            format!("--controllers={CELL_CONTROLLERS}"),
            "--leader-elect=false".to_string(),
            "--bind-address=127.0.0.1".to_string(),
            "--secure-port=0".to_string(),
            "--use-service-account-credentials=true".to_string(),
            "--node-monitor-period=1s".to_string(),
        ]);
        cell.components.spawn("sim-controllers", command);

        // The scheduler.
        let scheduler_port = free_port();
        let mut command = Command::new(sim.join("kube-scheduler"));
        command.args([
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            "--leader-elect=false".to_string(),
            "--bind-address=127.0.0.1".to_string(),
            format!("--secure-port={scheduler_port}"),
            format!("--cert-dir={}", work.join("scheduler-certs").display()),
        ]);
        cell.components.spawn("kube-scheduler", command);
        cell.components
            .wait_ready("kube-scheduler /readyz", READY_TIMEOUT, || {
                http_ok(&format!("https://127.0.0.1:{scheduler_port}/readyz"), None)
            });

        // KWOK, with the stages of its module and only the nodes annotated as fake.
        let kwok_port = free_port();
        let mut config = String::from(
            "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n  manageAllNodes: false\n",
        );
        config.push_str(&format!(
            "  manageNodesWithAnnotationSelector: {FAKE_NODE_ANNOTATION}=fake\n  cidr: 10.0.0.0/16\n  nodeIP: 10.1.0.1\n  nodeLeaseDurationSeconds: 40\n  nodeLeaseParallelism: 4\n  podPlayStageParallelism: 4\n  nodePlayStageParallelism: 4\n"
        ));
        let stages = sim.join("kwok-stages");
        let mut names: Vec<PathBuf> = std::fs::read_dir(&stages)
            .unwrap_or_else(|error| panic!("{}: {error}", stages.display()))
            .map(|entry| entry.expect("a stage file").path())
            .collect();
        names.sort();
        for stage in names {
            config.push_str("---\n");
            config.push_str(&std::fs::read_to_string(&stage).expect("a KWOK stage"));
            if !config.ends_with('\n') {
                config.push('\n');
            }
        }
        let kwok_config = work.join("kwok.yaml");
        std::fs::write(&kwok_config, config).expect("the KWOK configuration");
        let mut command = Command::new(sim.join("kwok"));
        command.args([
            format!("--config={}", kwok_config.display()),
            format!("--kubeconfig={kubeconfig}"),
            format!("--server-address=127.0.0.1:{kwok_port}"),
        ]);
        cell.components.spawn("kwok", command);
        cell.components
            .wait_ready("KWOK /healthz", READY_TIMEOUT, || {
                http_ok(&format!("http://127.0.0.1:{kwok_port}/healthz"), None)
            });

        // Kueue's CRDs, all of them (tenantc vendors only the kinds it emits).
        let crds = sim.join("kueue-manifests/crds");
        let run = cluster.kubectl(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=tenantc",
                "-f",
                &crds.display().to_string(),
            ],
            "",
        );
        assert!(run.ok, "applying Kueue's CRDs failed:\n{}", run.stderr);
        let established = (0..30).any(|_| {
            let run = cluster.kubectl(
                &[
                    "wait",
                    "--for",
                    "condition=Established",
                    "--timeout=30s",
                    "-f",
                    &crds.display().to_string(),
                ],
                "",
            );
            if !run.ok {
                std::thread::sleep(Duration::from_secs(1));
            }
            run.ok
        });
        assert!(established, "Kueue's CRDs did not become Established");
        let _ = cluster.kubectl(&["create", "namespace", "kueue-system"], "");

        // Kueue, with a serving certificate for 127.0.0.1 and its webhooks on a URL.
        let certs = work.join("kueue-certs");
        std::fs::create_dir_all(&certs).expect("the Kueue certificate folder");
        make_serving_certificate(&certs, "kueue-webhook", "IP:127.0.0.1,DNS:localhost");
        let (webhook_port, health_port, metrics_port) = (free_port(), free_port(), free_port());
        let kueue_config = work.join("kueue.yaml");
        std::fs::write(
            &kueue_config,
            format!(
                "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: kueue-system\n\
health:\n  healthProbeBindAddress: 127.0.0.1:{health_port}\n\
metrics:\n  bindAddress: 127.0.0.1:{metrics_port}\n\
webhook:\n  host: 127.0.0.1\n  port: {webhook_port}\n  certDir: {}\n\
leaderElection:\n  leaderElect: false\n\
internalCertManagement:\n  enable: false\n\
integrations:\n  frameworks:\n{}",
                certs.display(),
                KUEUE_INTEGRATIONS
                    .iter()
                    .map(|(framework, _)| format!("  - {framework}\n"))
                    .collect::<String>(),
            ),
        )
        .expect("the Kueue configuration");
        // Kueue reads its metrics certificate from a fixed path under /etc; a private mount
        // namespace gives it one without touching the host.
        let script = format!(
            "mount -t tmpfs tmpfs /etc && mkdir -p /etc/kueue/metrics/certs && cp {certs}/tls.crt {certs}/tls.key /etc/kueue/metrics/certs/ && exec {kueue} --config={config} --zap-log-level=2 --feature-gates=VisibilityOnDemand=false",
            certs = certs.display(),
            kueue = sim.join("kueue").display(),
            config = kueue_config.display(),
        );
        let mut command = Command::new("unshare");
        command
            .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
            .env("KUBECONFIG", &cluster.kubeconfig);
        cell.components.spawn("kueue", command);
        cell.components
            .wait_ready("Kueue /readyz", READY_TIMEOUT, || {
                http_ok(&format!("http://127.0.0.1:{health_port}/readyz"), None)
            });
        let ca = certs.join("ca.crt");
        cell.components
            .wait_ready("Kueue's webhook server", READY_TIMEOUT, || {
                tls_ok(&format!("https://127.0.0.1:{webhook_port}/"), &ca)
            });
        let webhooks = webhook_configurations(
            &std::fs::read_to_string(sim.join("kueue-manifests/webhooks.yaml"))
                .expect("Kueue's webhooks"),
            webhook_port,
            &std::fs::read(&ca).expect("the CA"),
        );
        let run = cluster.kubectl(
            &[
                "apply",
                "--server-side",
                "--field-manager=tenantc-sim",
                "-f",
                "-",
            ],
            &webhooks,
        );
        assert!(
            run.ok,
            "applying Kueue's webhook configurations failed:\n{}",
            run.stderr
        );
        cell
    }
}

impl Drop for SimulatedCell {
    fn drop(&mut self) {
        // Kueue's webhooks fail closed: remove them before Kueue stops.
        let _ = Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args([
                "delete",
                &format!("mutatingwebhookconfiguration/{MUTATING_WEBHOOKS}"),
                &format!("validatingwebhookconfiguration/{VALIDATING_WEBHOOKS}"),
                "--ignore-not-found",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // The components stop when `self.components` is dropped, right after this.
    }
}

/// Kueue's webhook configurations for a Kueue outside the cluster: only the webhooks of its own
/// kinds and of the integrations it runs with ([`KUEUE_INTEGRATIONS`]), each called on
/// `https://127.0.0.1:<port><path>` with `ca`, the integrations' webhooks kept out of
/// `kube-system` and `kueue-system` (as Kueue's kustomization does).
fn webhook_configurations(manifests: &str, port: u16, ca: &[u8]) -> String {
    use base64::Engine as _;
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    let mut out = Vec::new();
    for mut document in yaml_documents_typed(manifests).expect("Kueue's webhook manifests") {
        let kind = document["kind"].as_str().unwrap_or_default().to_string();
        let name = match kind.as_str() {
            "MutatingWebhookConfiguration" => MUTATING_WEBHOOKS,
            "ValidatingWebhookConfiguration" => VALIDATING_WEBHOOKS,
            _ => continue,
        };
        document["metadata"] = json!({"name": name});
        let webhooks: Vec<Value> = document["webhooks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|mut webhook| {
                let path = webhook["clientConfig"]["service"]["path"]
                    .as_str()?
                    .to_string();
                let integration = KUEUE_INTEGRATIONS
                    .iter()
                    .any(|(_, end)| path.ends_with(end));
                if !(path.contains("kueue-x-k8s-io") || integration) {
                    return None;
                }
                webhook["clientConfig"] = json!({
                    "url": format!("https://127.0.0.1:{port}{path}"),
                    "caBundle": bundle,
                });
                if integration {
                    webhook["namespaceSelector"] = json!({"matchExpressions": [{
                        "key": "kubernetes.io/metadata.name",
                        "operator": "NotIn",
                        "values": ["kube-system", "kueue-system"],
                    }]});
                }
                Some(webhook)
            })
            .collect();
        assert!(!webhooks.is_empty(), "{kind}: no Kueue webhooks kept");
        document["webhooks"] = Value::Array(webhooks);
        out.push(document.to_string());
    }
    assert_eq!(
        out.len(),
        2,
        "Kueue's manifests have one configuration of each kind"
    );
    out.join("\n")
}

/// Creates one fake node per node of the cell's capacity report: its labels, taints and GPU
/// devices per node, with cpu, memory and pods to spare, and in a pool with a topology each
/// level's label with one value per domain of the report's size; and two CPU nodes outside the
/// pools, without taints. Waits until every node is Ready and
/// without the not-ready taint. Returns the node names per pool.
pub(super) fn create_nodes(cluster: &Cluster, report: &Value) -> BTreeMap<String, Vec<String>> {
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut documents = Vec::new();
    for group in report["capacity"]["node_groups"]
        .as_array()
        .expect("node_groups in the capacity report")
    {
        let pool = group["pool"].as_str().expect("a pool").to_string();
        let layout = group["layout"].as_str();
        let taints: Vec<Value> = group["taints"]
            .as_array()
            .expect("taints in the capacity report")
            .iter()
            .map(|taint| {
                let text = taint.as_str().expect("a taint");
                let (rest, effect) = text.rsplit_once(':').expect("key[=value]:effect");
                match rest.split_once('=') {
                    Some((key, value)) => json!({"key": key, "value": value, "effect": effect}),
                    None => json!({"key": rest, "effect": effect}),
                }
            })
            .collect();
        let mut allocatable = json!({"cpu": "256", "memory": "2Ti", "pods": "250"});
        for (resource, count) in group["allocatable_per_node"]
            .as_object()
            .expect("allocatable_per_node in the capacity report")
        {
            allocatable[resource] = json!(count.to_string());
        }
        let nodes = group["nodes"].as_i64().expect("a node count");
        let levels: Vec<(String, i64)> = group["topology_levels"]
            .as_array()
            .expect("topology_levels in the capacity report")
            .iter()
            .map(|level| {
                (
                    level["label"].as_str().expect("a level label").to_string(),
                    level["nodes_per_domain"]
                        .as_i64()
                        .expect("nodes per domain"),
                )
            })
            .collect();
        for idx in 0..nodes {
            let name = node_name(&pool, layout, idx);
            let mut labels = group["labels"].clone();
            // The pool's nodes in order, each level's domains made of consecutive nodes; the
            // index counts across the pool's groups, so a domain never mixes two pools.
            let position = i64::try_from(names.get(&pool).map_or(0, Vec::len)).unwrap_or(0);
            for (label, per_domain) in &levels {
                if label != "kubernetes.io/hostname" {
                    let short = label.rsplit('/').next().unwrap_or(label);
                    labels[label] = json!(format!("{pool}-{short}-{}", position / per_domain));
                }
            }
            labels["kubernetes.io/hostname"] = json!(name);
            labels["type"] = json!("kwok");
            documents.push(
                json!({
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": labels,
                        "annotations": {FAKE_NODE_ANNOTATION: "fake"},
                    },
                    "spec": {"taints": taints},
                    "status": {"capacity": allocatable, "allocatable": allocatable},
                })
                .to_string(),
            );
            names.entry(pool.clone()).or_default().push(name);
        }
    }
    // Every cell also has nodes outside its GPU pools (system and CPU nodes), untainted and
    // unlabelled, where pods that ask for no GPU run: the tenant ceilings' CPU Jobs, and any pod
    // a pinning attack keeps off a pool.
    for idx in 0..CPU_NODES {
        let name = format!("{CPU_NODE_PREFIX}{idx}");
        let allocatable = json!({"cpu": "256", "memory": "2Ti", "pods": "250"});
        documents.push(
            json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, "type": "kwok"},
                    "annotations": {FAKE_NODE_ANNOTATION: "fake"},
                },
                "spec": {},
                "status": {"capacity": allocatable, "allocatable": allocatable},
            })
            .to_string(),
        );
    }
    // Nodes a failed run left behind would clash with these.
    delete_nodes(cluster);
    let run = cluster.kubectl(&["create", "-f", "-"], &documents.join("\n"));
    assert!(run.ok, "creating the fake nodes failed:\n{}", run.stderr);
    let total: usize = names.values().map(Vec::len).sum::<usize>() + CPU_NODES;
    super::controllers::wait_until("every fake node Ready and schedulable", || {
        let run = cluster.kubectl(&["get", "nodes", "-l", "type=kwok", "-o", "json"], "");
        let list: Value = serde_json::from_str(&run.stdout).ok()?;
        let ready = list["items"]
            .as_array()?
            .iter()
            .filter(|node| {
                let conditions = node["status"]["conditions"].as_array();
                let is_ready = conditions.is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                });
                let not_ready_taint = node["spec"]["taints"].as_array().is_some_and(|taints| {
                    taints
                        .iter()
                        .any(|taint| taint["key"] == "node.kubernetes.io/not-ready")
                });
                is_ready && !not_ready_taint
            })
            .count();
        (ready == total).then_some(())
    });
    names
}

/// The name of the `idx`th fake node of a pool's node group (of `layout`, in a MIG pool).
fn node_name(pool: &str, layout: Option<&str>, idx: i64) -> String {
    match layout {
        Some(layout) => format!("{pool}-{layout}-{idx}"),
        None => format!("{pool}-{idx}"),
    }
}

/// The names `create_nodes` gives the nodes of `pool` whose node group offers `resource`.
fn offering_nodes(report: &Value, pool: &str, resource: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for group in report["capacity"]["node_groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|group| group["pool"] == pool)
    {
        if group["allocatable_per_node"][resource]
            .as_i64()
            .unwrap_or(0)
            <= 0
        {
            continue;
        }
        let nodes = group["nodes"].as_i64().unwrap_or(0);
        for idx in 0..nodes {
            names.insert(node_name(pool, group["layout"].as_str(), idx));
        }
    }
    names
}

/// Deletes the fake nodes.
pub(super) fn delete_nodes(cluster: &Cluster) {
    let _ = cluster.kubectl(
        &[
            "delete",
            "nodes",
            "-l",
            "type=kwok",
            "--wait=true",
            "--timeout=60s",
        ],
        "",
    );
}

/// `tenantc describe <tenant> --cell <cell> --format json` on the fixture fleet: the cell's
/// object of the document.
fn describe(tenant: &str, cell: &str) -> Value {
    describe_in(&support::fleet(), tenant, cell)
}

/// `tenantc describe <tenant> --cell <cell> --format json` on the fleet at `root`: the cell's
/// object of the document.
pub(super) fn describe_in(root: &Path, tenant: &str, cell: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .args([
            "describe", tenant, "--cell", cell, "--format", "json", "--root",
        ])
        .arg(root)
        .stdin(Stdio::null())
        .output()
        .expect("tenantc describe runs");
    assert!(
        output.status.success(),
        "tenantc describe {tenant} --cell {cell} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: Value = serde_json::from_slice(&output.stdout).expect("describe's JSON");
    document["cells"][0].clone()
}

/// What the pods of one scenario Job ask for.
pub(super) struct Shape<'a> {
    /// The device resource.
    pub(super) resource: &'a str,
    /// Devices per pod.
    pub(super) devices: i64,
    /// Pods, all running at once (the Job's parallelism and completions).
    pub(super) pods: i64,
    /// Annotations of the pod template (a topology request).
    pub(super) annotations: Vec<(&'static str, String)>,
    /// The value of the Job's `tenantc-sim` label, which the scenario deletes its Jobs by.
    pub(super) scenario: &'a str,
}

/// One GPU Job of `tenant` in `namespace` asking for one `resource` device, queued on the
/// namespace's LocalQueue.
fn gpu_job(
    cell: &CellPlan,
    tenant: &TenantPlan,
    namespace: &str,
    resource: &str,
    name: &str,
) -> Value {
    let shape = Shape {
        resource,
        devices: 1,
        pods: 1,
        annotations: Vec::new(),
        scenario: "entitlement",
    };
    job(&fixture_job(cell, tenant), tenant, namespace, &shape, name)
}

/// The tenant's admitted Job fixture of the policy tests in `cell`.
pub(super) fn fixture_job(cell: &CellPlan, tenant: &TenantPlan) -> Value {
    super::policy_cases::fixture(&format!("{}-job", tenant.name), &cell.name)
}

/// A Job of `tenant` in `namespace` of the given shape, queued on the namespace's LocalQueue,
/// from `template`, a Job of the tenant the floor admits (without its volumes and secrets,
/// which a fake node cannot provide).
pub(super) fn job(
    template: &Value,
    tenant: &TenantPlan,
    namespace: &str,
    shape: &Shape<'_>,
    name: &str,
) -> Value {
    let mut job = template.clone();
    job["metadata"]["name"] = json!(name);
    job["metadata"]["namespace"] = json!(namespace);
    job["metadata"]["labels"]["tenantc-sim"] = json!(shape.scenario);
    job["spec"]["template"]["metadata"]["labels"]["tenantc-sim"] = json!(shape.scenario);
    job["spec"]["suspend"] = json!(true);
    job["spec"]["parallelism"] = json!(shape.pods);
    job["spec"]["completions"] = json!(shape.pods);
    let namespace_plan = tenant
        .namespaces
        .iter()
        .find(|candidate| candidate.name == namespace)
        .expect("the tenant's namespace");
    let spec = &mut job["spec"]["template"]["spec"];
    spec["serviceAccountName"] = json!(namespace_plan.service_account);
    if let Some(spec) = spec.as_object_mut() {
        spec.remove("volumes");
        spec.remove("tolerations");
    }
    for container in job["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
    {
        if let Some(container) = container.as_object_mut() {
            container.remove("volumeMounts");
            container.remove("envFrom");
        }
        container["resources"] = json!({"limits": {shape.resource: shape.devices}});
    }
    // KWOK completes a pod after a few seconds unless told otherwise; a completed Job releases
    // its quota and Kueue admits the next one, so the pods must keep running.
    let metadata = &mut job["spec"]["template"]["metadata"];
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = json!({});
    }
    metadata["annotations"]["pod-complete.stage.kwok.x-k8s.io/delay"] = json!("1h");
    metadata["annotations"]["pod-complete.stage.kwok.x-k8s.io/jitter-delay"] = json!("1h");
    for (key, value) in &shape.annotations {
        metadata["annotations"][*key] = json!(value);
    }
    // Kueue reads the priority from the Job's own labels; the floor holds both to the
    // namespace's class.
    for pointer in ["/metadata/labels", "/spec/template/metadata/labels"] {
        let Some(labels) = job.pointer_mut(pointer) else {
            continue;
        };
        match &namespace_plan.priority {
            Some(priority) => labels["kueue.x-k8s.io/priority-class"] = json!(priority),
            None => {
                if let Some(labels) = labels.as_object_mut() {
                    labels.remove("kueue.x-k8s.io/priority-class");
                }
            }
        }
    }
    job
}

/// The Workloads of the Jobs labelled `tenantc-sim` in `namespace`: `(admitted, pending)`.
pub(super) fn workload_counts(cluster: &Cluster, namespace: &str) -> Option<(usize, usize)> {
    let run = cluster.kubectl(
        &[
            "get",
            "workloads.kueue.x-k8s.io",
            "-n",
            namespace,
            "-o",
            "json",
        ],
        "",
    );
    let list: Value = serde_json::from_str(&run.stdout).ok()?;
    let mut admitted = 0;
    let mut pending = 0;
    for workload in list["items"].as_array()? {
        let holds = |kind: &str| {
            workload["status"]["conditions"]
                .as_array()
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c["type"] == kind && c["status"] == "True")
                })
        };
        // A finished workload no longer holds quota.
        let admitted_now = holds("Admitted") && !holds("Finished");
        if admitted_now {
            admitted += 1;
        } else {
            pending += 1;
        }
    }
    Some((admitted, pending))
}

/// The nodes the running pods of `namespace` are bound to.
pub(super) fn pod_nodes(cluster: &Cluster, namespace: &str) -> Vec<String> {
    let run = cluster.kubectl(&["get", "pods", "-n", namespace, "-o", "json"], "");
    let list: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    list["items"]
        .as_array()
        .map(|pods| {
            pods.iter()
                .filter_map(|pod| pod["spec"]["nodeName"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Applies the cell's objects with `--force-conflicts` as tenantc's field manager, taking back
/// the fields a running Kueue took over: the Kueue controller updates the ClusterQueues it
/// reconciles (their `spec.resourceGroups` among the fields it then owns), and a plain
/// server-side apply of values that differ from the stored ones is then a conflict. A GitOps
/// controller's server-side apply forces the same way.
pub(super) fn take_back(cluster: &Cluster, fleet: &Fleet, cell: &CellPlan) {
    let stream: String = fleet
        .cell_objects(&cell.name)
        .iter()
        .filter(|object| object.kind == "ClusterQueue")
        .map(|object| format!("---\n{}", object.text))
        .collect();
    if stream.is_empty() {
        return;
    }
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=tenantc",
            "-f",
            "-",
        ],
        &stream,
    );
    assert!(
        run.ok,
        "taking back the ClusterQueues of {} failed:\n{}",
        cell.name, run.stderr
    );
}

/// Deletes every ClusterQueue and Cohort that is not `cell`'s. One API server stands in for
/// every cell of every fleet the checks apply, and cohorts are cluster-scoped: another cell's
/// ClusterQueues in a cohort of the same name (every cell has `root`), on flavors of the same
/// name (pools named alike), would lend this cell quota its hardware does not have. Kueue must
/// be running, since it holds their finalizers.
pub(super) fn isolate(cluster: &Cluster, fleet: &Fleet, cell: &CellPlan) {
    let own: BTreeSet<(String, String)> = fleet
        .cell_objects(&cell.name)
        .iter()
        .filter(|object| object.kind == "ClusterQueue" || object.kind == "Cohort")
        .map(|object| (object.kind.clone(), object.name.clone()))
        .collect();
    for (kind, resource) in [
        ("ClusterQueue", "clusterqueues.kueue.x-k8s.io"),
        ("Cohort", "cohorts.kueue.x-k8s.io"),
    ] {
        let run = cluster.kubectl(&["get", resource, "-o", "name"], "");
        let foreign: Vec<String> = run
            .stdout
            .lines()
            .filter_map(|line| line.split_once('/').map(|(_, name)| name.to_string()))
            .filter(|name| !own.contains(&(kind.to_string(), name.clone())))
            .map(|name| format!("{resource}/{name}"))
            .collect();
        if foreign.is_empty() {
            continue;
        }
        let mut args = vec!["delete", "--wait=true", "--timeout=120s"];
        args.extend(foreign.iter().map(String::as_str));
        let run = cluster.kubectl(&args, "");
        assert!(
            run.ok,
            "deleting the {kind}s of other cells failed:\n{}",
            run.stderr
        );
    }
}

/// Deletes the Jobs and pods of `scenario` (the `tenantc-sim` label of both) at once, without
/// waiting for the garbage collector, and waits until they and every Workload of `namespaces`
/// are gone, so the next wave starts with all devices free and no Workload of the same name.
pub(super) fn delete_jobs(cluster: &Cluster, namespaces: &BTreeSet<String>, scenario: &str) {
    let selector = format!("tenantc-sim={scenario}");
    let _ = cluster.kubectl(
        &[
            "delete",
            "jobs",
            "--all-namespaces",
            "-l",
            &selector,
            "--cascade=background",
            "--wait=false",
        ],
        "",
    );
    let _ = cluster.kubectl(
        &[
            "delete",
            "pods",
            "--all-namespaces",
            "-l",
            &selector,
            "--grace-period=0",
            "--force",
            "--wait=false",
        ],
        "",
    );
    super::controllers::wait_until(
        &format!("the {scenario} Jobs, pods and Workloads gone"),
        || {
            let left = cluster.kubectl(
                &[
                    "get",
                    "jobs,pods",
                    "--all-namespaces",
                    "-l",
                    &selector,
                    "-o",
                    "name",
                ],
                "",
            );
            if !left.ok || !left.stdout.trim().is_empty() {
                return None;
            }
            let workloads = cluster.kubectl(
                &[
                    "get",
                    "workloads.kueue.x-k8s.io",
                    "--all-namespaces",
                    "-o",
                    "json",
                ],
                "",
            );
            let list: Value = serde_json::from_str(&workloads.stdout).ok()?;
            let any = list["items"].as_array()?.iter().any(|workload| {
                workload["metadata"]["namespace"]
                    .as_str()
                    .is_some_and(|namespace| namespaces.contains(namespace))
            });
            (!any).then_some(())
        },
    );
}

/// A change the self-test makes to an emitted object after the cell is applied.
type Tamper = fn(&Cluster, &Fleet, &CellPlan);

/// Runs the entitlement scenario on every cell of the fixture fleet (or only `only`), with
/// `tamper` applied after each cell is set up; returns the mismatches and how many pairs were
/// measured.
fn entitlement_scenario(
    cluster: &Cluster,
    only: Option<&str>,
    tamper: Option<Tamper>,
) -> (Vec<String>, usize) {
    install_node_runtime_classes(cluster);
    let fleet = fixture_fleet();
    let tree = support::compile_root(&support::fleet())
        .output
        .expect("the fixture fleet's output tree");
    let simulated = SimulatedCell::start(cluster);
    let mut failures = Vec::new();
    let mut measured = 0;
    for cell in &fleet.plan.cells {
        if only.is_some_and(|name| name != cell.name) {
            continue;
        }
        isolate(cluster, &fleet, cell);
        take_back(cluster, &fleet, cell);
        set_up_cell(cluster, &fleet, cell);
        if let Some(tamper) = tamper {
            tamper(cluster, &fleet, cell);
        }
        let report: Value = serde_json::from_slice(
            tree.get(&format!("{}/reports/capacity.json", cell.name))
                .expect("the cell's capacity report"),
        )
        .expect("the capacity report");
        let nodes = create_nodes(cluster, &report);
        for tenant in &cell.tenants {
            let described = describe(&tenant.name, &cell.name);
            for row in described["capacity"]
                .as_array()
                .cloned()
                .unwrap_or_default()
            {
                let pool_name = row["pool"].as_str().unwrap_or_default();
                let resource = row["resource"].as_str().unwrap_or_default();
                let Some(pool) = cell.pools.iter().find(|pool| pool.name == pool_name) else {
                    continue;
                };
                if pool.topology.is_some() {
                    continue;
                }
                let expected = row["effective"].as_i64().expect("an effective capacity");
                let Some(namespace) = tenant
                    .namespaces
                    .iter()
                    .filter(|ns| ns.gpu.get(resource).is_some_and(|count| *count > 0))
                    .max_by_key(|ns| ns.gpu.get(resource).copied().unwrap_or(0))
                else {
                    continue;
                };
                let submitted = usize::try_from(expected).unwrap_or(0) + 2;
                let mut jobs = Vec::new();
                for idx in 0..submitted {
                    jobs.push(
                        gpu_job(
                            cell,
                            tenant,
                            &namespace.name,
                            resource,
                            &format!("sim-{}-{idx}", pool.name),
                        )
                        .to_string(),
                    );
                }
                let run = cluster.kubectl(&["create", "-f", "-"], &jobs.join("\n"));
                if !run.ok {
                    failures.push(format!(
                        "{} in {}: the Jobs on {pool_name} {resource} were refused:\n{}",
                        tenant.name, cell.name, run.stderr
                    ));
                    continue;
                }
                // Settled: every Workload exists and the admitted count held for 5 s.
                let mut last = (usize::MAX, 0);
                let mut stable_since = Instant::now();
                let started = Instant::now();
                let observed = loop {
                    let counts =
                        workload_counts(cluster, &namespace.name).unwrap_or((usize::MAX, 0));
                    if counts != last {
                        last = counts;
                        stable_since = Instant::now();
                    }
                    if counts.0 != usize::MAX
                        && counts.0 + counts.1 == submitted
                        && stable_since.elapsed() > Duration::from_secs(5)
                    {
                        break counts.0;
                    }
                    if started.elapsed() > READY_TIMEOUT {
                        break counts.0;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                };
                let landed = pod_nodes(cluster, &namespace.name);
                let pool_nodes = nodes.get(pool_name).cloned().unwrap_or_default();
                let outside: Vec<&String> = landed
                    .iter()
                    .filter(|node| !pool_nodes.contains(node))
                    .collect();
                // A MIG profile lands only on nodes whose layout offers it.
                let offering = offering_nodes(&report, pool_name, resource);
                let not_offering: Vec<&String> = landed
                    .iter()
                    .filter(|node| pool_nodes.contains(node) && !offering.contains(*node))
                    .collect();
                println!(
                    "  {} {} pool {pool_name} {resource}: expected {expected} admitted (describe's effective capacity), observed {observed}; {} pods bound, {} outside the pool, {} on nodes whose layout does not offer it",
                    cell.name,
                    tenant.name,
                    landed.len(),
                    outside.len(),
                    not_offering.len()
                );
                if !not_offering.is_empty() {
                    failures.push(format!(
                        "{} in {}: pods of {resource} on nodes of pool {pool_name} whose layout does not offer it: {not_offering:?}",
                        tenant.name, cell.name
                    ));
                }
                measured += 1;
                if i64::try_from(observed).unwrap_or(-1) != expected {
                    let quota = cluster.kubectl(
                        &[
                            "get",
                            "resourcequota",
                            "tenant-quota",
                            "-n",
                            &namespace.name,
                            "-o",
                            "jsonpath={.status}",
                        ],
                        "",
                    );
                    let queue = cluster.kubectl(
                        &[
                            "get",
                            "clusterqueue",
                            &tenant.queue.name,
                            "-o",
                            "jsonpath={.status.flavorsUsage}",
                        ],
                        "",
                    );
                    let pods = cluster.kubectl(
                        &[
                            "get",
                            "pods",
                            "-n",
                            &namespace.name,
                            "-o",
                            "jsonpath={.items[0].spec.containers[*].resources}",
                        ],
                        "",
                    );
                    println!(
                        "    quota status: {}\n    ClusterQueue usage: {}\n    a pod's resources: {}",
                        quota.stdout, queue.stdout, pods.stdout
                    );
                    failures.push(format!(
                        "{} in {}: Kueue admitted {observed} one-device Jobs of {resource} on flavor {}, describe says {expected}",
                        tenant.name, cell.name, pool.flavor
                    ));
                }
                if !outside.is_empty() {
                    failures.push(format!(
                        "{} in {}: pods on nodes outside pool {pool_name}: {outside:?}",
                        tenant.name, cell.name
                    ));
                }
                delete_jobs(
                    cluster,
                    &BTreeSet::from([namespace.name.clone()]),
                    "entitlement",
                );
            }
        }
        delete_nodes(cluster);
        // The next run (or the next cell, or check) starts from what tenantc emitted.
        take_back(cluster, &fleet, cell);
        set_up_cell(cluster, &fleet, cell);
    }
    drop(simulated);
    // Kueue may have updated the ClusterQueues again before it stopped: the checks that follow
    // apply the cells without forcing.
    for cell in &fleet.plan.cells {
        take_back(cluster, &fleet, cell);
    }
    (failures, measured)
}

/// Entitlement with the rest of the cell idle: each tenant alone submits one-device Jobs of
/// each pool resource it reserves (on pools without a topology) until Kueue stops admitting;
/// Kueue must admit exactly the effective capacity `describe` reports, and every pod must land
/// on a node of that pool.
pub(super) fn simulated_cell_admits_each_tenant_its_effective_capacity(cluster: &Cluster) {
    let (failures, measured) = entitlement_scenario(cluster, None, None);
    assert!(measured > 0, "no reservation was measured");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Doubles acme-serving's borrowing limit of `nvidia.com/mig-1g.10gb` on the MIG pool's flavor
/// in the applied ClusterQueue (as an operator could by hand), leaving describe's figures as
/// tenantc computed them.
fn double_a_borrowing_limit(cluster: &Cluster, fleet: &Fleet, cell: &CellPlan) {
    let queue = fleet
        .cell_objects(&cell.name)
        .into_iter()
        .find(|object| object.kind == "ClusterQueue" && object.name == "acme-serving")
        .expect("acme-serving's ClusterQueue");
    let mut json = yaml_documents_typed(&queue.text).expect("the ClusterQueue")[0].clone();
    let mut doubled = false;
    for group in json["spec"]["resourceGroups"]
        .as_array_mut()
        .expect("resourceGroups")
    {
        for flavor in group["flavors"].as_array_mut().expect("flavors") {
            for resource in flavor["resources"].as_array_mut().expect("resources") {
                if resource["name"] == "nvidia.com/mig-1g.10gb" {
                    let limit: i64 = resource["borrowingLimit"]
                        .as_str()
                        .map(|text| text.parse().expect("a whole borrowing limit"))
                        .or_else(|| resource["borrowingLimit"].as_i64())
                        .expect("a borrowing limit");
                    assert!(limit > 0, "the self-test needs a burst to double");
                    resource["borrowingLimit"] = json!((limit * 2).to_string());
                    doubled = true;
                }
            }
        }
    }
    assert!(doubled, "acme-serving has no mig-1g.10gb burst to double");
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=tenantc",
            "-f",
            "-",
        ],
        &json.to_string(),
    );
    assert!(
        run.ok,
        "doubling the borrowing limit failed:\n{}",
        run.stderr
    );
}

/// The self-test: with one borrowing limit doubled behind tenantc's back, the scenario must
/// report that tenant, flavor and resource.
pub(super) fn simulated_cell_self_test_a_doubled_borrowing_limit_is_caught(cluster: &Cluster) {
    let (failures, _) =
        entitlement_scenario(cluster, Some("us-east-1a"), Some(double_a_borrowing_limit));
    println!("  reported: {failures:?}");
    assert!(
        failures
            .iter()
            .any(|failure| failure.starts_with("acme-serving in us-east-1a:")
                && failure.contains("nvidia.com/mig-1g.10gb")
                && failure.contains("describe says 20")),
        "the doubled borrowing limit was not caught: {failures:?}"
    );
    assert_eq!(
        failures.len(),
        1,
        "only the tampered entitlement may differ: {failures:?}"
    );
}

/// The integrations the simulated cell's Kueue runs with are exactly the ones `docs/admission.md`
/// tells every cell to enable, so the scenarios judge the Kueue a platform is told to run.
pub(super) fn simulated_cell_runs_kueue_with_the_documented_integrations(_: &Cluster) {
    let docs = std::fs::read_to_string(support::repo().join("docs/admission.md"))
        .expect("docs/admission.md");
    let section = docs
        .split("## Kueue prerequisites")
        .nth(1)
        .expect("a Kueue prerequisites section");
    let sentence = section
        .lines()
        .find(|line| line.contains("integrations"))
        .expect("the sentence that lists the integrations");
    let before = sentence
        .split(" integrations")
        .next()
        .expect("the integrations before the word");
    let documented: BTreeSet<&str> = before.split('`').skip(1).step_by(2).collect();
    let enabled: BTreeSet<&str> = KUEUE_INTEGRATIONS
        .iter()
        .map(|(framework, _)| *framework)
        .collect();
    assert_eq!(
        enabled, documented,
        "the simulated cell's Kueue integrations differ from docs/admission.md's prerequisites"
    );
}
