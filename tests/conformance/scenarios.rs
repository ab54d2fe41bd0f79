//! Scenarios of the simulated cell beyond one tenant alone (issue 21): gangs inside one domain
//! of a topology level, a busy cohort and reclaim, pinning attacks through a tenant's own RBAC,
//! the tenant ceilings, and `tenantc what-if` drains replayed on the nodes.
//!
//! Consumes: the simulated cell of `sim.rs` (the real kube-scheduler, KWOK and Kueue beside the
//! harness's API server), a fleet's output tree applied cell by cell, its capacity reports (the
//! nodes) and `tenantc describe --format json` (the figures compared with).
//! Produces: pass or fail; each scenario prints, per tenant, pool and resource, the expected and
//! the observed figures, and a mismatch names the tenant, flavor and resource.
//!
//! Invariants:
//! - Expected figures come from `tenantc describe` (or `tenantc what-if`) on the same fleet,
//!   never from this file.
//! - Each scenario leaves the cluster as it found it: its Jobs and nodes are deleted, and the
//!   objects a running Kueue took fields of are taken back (`sim::take_back`).

use super::quota::{Fleet, fleet_at, set_up_cell};
use super::sim::{
    Shape, SimulatedCell, create_nodes, delete_jobs, delete_nodes, describe_in, fixture_job,
    isolate, job, take_back,
};
use super::*;

use std::time::Duration;

use tenantc::plan::{CellPlan, TenantPlan};

/// How long Kueue may take to settle its admissions after a wave of Jobs.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the admitted counts must hold before they count as settled.
const SETTLED_FOR: Duration = Duration::from_secs(5);

/// A fleet applied to the simulated cell one cell at a time.
struct Session {
    fleet: Fleet,
    /// The fleet's root, for `tenantc describe`.
    root: PathBuf,
    tree: OutputTree,
    simulated: Option<SimulatedCell>,
}

impl Session {
    /// Starts the simulated cell for the fleet at `root`.
    fn start(cluster: &Cluster, root: &Path) -> Session {
        super::admission::install_node_runtime_classes(cluster);
        let compilation = support::compile_root(root);
        assert!(
            !compilation.has_errors(),
            "the scenario's fleet must compile without errors"
        );
        Session {
            fleet: fleet_at(root),
            root: root.to_path_buf(),
            tree: compilation.output.expect("an output tree"),
            simulated: Some(SimulatedCell::start(cluster)),
        }
    }

    /// Applies `cell` (taking back what Kueue took), makes its nodes, runs `scenario`, and
    /// deletes the nodes and applies the cell again, whatever the scenario found.
    fn in_cell<T>(
        &self,
        cluster: &Cluster,
        cell: &CellPlan,
        scenario: impl FnOnce(&CellNodes) -> T,
    ) -> T {
        self.in_tampered_cell(cluster, cell, None, scenario)
    }

    /// [`Session::in_cell`], with `tamper` run after the cell is applied and before its nodes
    /// are made from the capacity report it may change.
    fn in_tampered_cell<T>(
        &self,
        cluster: &Cluster,
        cell: &CellPlan,
        tamper: Option<Tamper>,
        scenario: impl FnOnce(&CellNodes) -> T,
    ) -> T {
        isolate(cluster, &self.fleet, cell);
        take_back(cluster, &self.fleet, cell);
        set_up_cell(cluster, &self.fleet, cell);
        let mut report: Value = serde_json::from_slice(
            self.tree
                .get(&format!("{}/reports/capacity.json", cell.name))
                .expect("the cell's capacity report"),
        )
        .expect("the capacity report");
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Some(tamper) = tamper {
                tamper(cluster, &self.fleet, cell, &mut report);
            }
            let pools = create_nodes(cluster, &report);
            scenario(&CellNodes::read(cluster, pools, &report))
        }));
        delete_nodes(cluster);
        take_back(cluster, &self.fleet, cell);
        set_up_cell(cluster, &self.fleet, cell);
        match outcome {
            Ok(found) => found,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// `tenantc describe` of one tenant in one cell: its capacity rows.
    fn capacity(&self, tenant: &str, cell: &str) -> Vec<Value> {
        describe_in(&self.root, tenant, cell)["capacity"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Stops the simulated cell and takes back every cell's ClusterQueues, so the checks that
    /// follow apply without forcing.
    fn finish(mut self, cluster: &Cluster) {
        drop(self.simulated.take());
        for cell in &self.fleet.plan.cells {
            take_back(cluster, &self.fleet, cell);
        }
    }
}

/// A change a self-test makes behind tenantc's back: to the applied cell, and to the capacity
/// report its nodes are made from.
type Tamper = fn(&Cluster, &Fleet, &CellPlan, &mut Value);

/// The fake nodes of a cell: names per pool, labels per node, and the devices one node of each
/// pool offers.
struct CellNodes {
    pools: BTreeMap<String, Vec<String>>,
    labels: BTreeMap<String, BTreeMap<String, String>>,
    per_node: BTreeMap<(String, String), i64>,
}

impl CellNodes {
    fn read(cluster: &Cluster, pools: BTreeMap<String, Vec<String>>, report: &Value) -> CellNodes {
        let run = cluster.kubectl(&["get", "nodes", "-l", "type=kwok", "-o", "json"], "");
        let list: Value = serde_json::from_str(&run.stdout).expect("the node list");
        let labels = list["items"]
            .as_array()
            .expect("nodes")
            .iter()
            .map(|node| {
                let name = node["metadata"]["name"]
                    .as_str()
                    .expect("a name")
                    .to_string();
                let labels = node["metadata"]["labels"]
                    .as_object()
                    .map(|labels| {
                        labels
                            .iter()
                            .map(|(key, value)| {
                                (key.clone(), value.as_str().unwrap_or_default().to_string())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                (name, labels)
            })
            .collect();
        let mut per_node = BTreeMap::new();
        for group in report["capacity"]["node_groups"]
            .as_array()
            .expect("node groups")
        {
            let pool = group["pool"].as_str().expect("a pool");
            for (resource, count) in group["allocatable_per_node"].as_object().expect("devices") {
                let count = count.as_i64().expect("a count");
                let entry = per_node
                    .entry((pool.to_string(), resource.clone()))
                    .or_insert(count);
                *entry = (*entry).min(count);
            }
        }
        CellNodes {
            pools,
            labels,
            per_node,
        }
    }
}

/// Creates `jobs` (as JSON documents); a refusal is returned as an error.
fn create(cluster: &Cluster, jobs: &[Value]) -> Result<(), String> {
    let stream: Vec<String> = jobs.iter().map(Value::to_string).collect();
    let run = cluster.kubectl(&["create", "-f", "-"], &stream.join("\n"));
    if run.ok { Ok(()) } else { Err(run.stderr) }
}

/// The state of one Workload.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WorkloadState {
    /// Admitted and not finished (it holds quota).
    admitted: bool,
    /// Evicted (preempted) but still holding its quota until its Job stops: a preemption in
    /// flight, whose preemptor is admitted once it ends.
    evicting: bool,
    /// The message of its `QuotaReserved` condition, or of its newest condition.
    message: String,
}

/// Every Workload of the namespaces given, by namespace and by the name of the Job it is for.
fn workloads(
    cluster: &Cluster,
    namespaces: &BTreeSet<String>,
) -> BTreeMap<(String, String), WorkloadState> {
    let run = cluster.kubectl(&["get", "workloads.kueue.x-k8s.io", "-A", "-o", "json"], "");
    let list: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    let mut found = BTreeMap::new();
    for workload in list["items"].as_array().into_iter().flatten() {
        let namespace = workload["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        if !namespaces.contains(namespace) {
            continue;
        }
        let job = workload["metadata"]["ownerReferences"]
            .as_array()
            .and_then(|owners| owners.first())
            .and_then(|owner| owner["name"].as_str())
            .unwrap_or_default()
            .to_string();
        let conditions = workload["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let holds = |kind: &str| {
            conditions
                .iter()
                .any(|condition| condition["type"] == kind && condition["status"] == "True")
        };
        let message = conditions
            .iter()
            .find(|condition| condition["type"] == "QuotaReserved")
            .or(conditions.last())
            .and_then(|condition| condition["message"].as_str())
            .unwrap_or_default()
            .to_string();
        found.insert(
            (namespace.to_string(), job),
            WorkloadState {
                admitted: holds("Admitted") && !holds("Finished"),
                evicting: holds("Evicted") && holds("QuotaReserved"),
                message,
            },
        );
    }
    found
}

/// Waits until `expected` Workloads exist in `namespaces`, no preemption is in flight, and which
/// of them are admitted has not changed for [`SETTLED_FOR`] (or [`SETTLE_TIMEOUT`] passed), and
/// returns them.
fn settle(
    cluster: &Cluster,
    namespaces: &BTreeSet<String>,
    expected: usize,
) -> BTreeMap<(String, String), WorkloadState> {
    let started = Instant::now();
    let mut last: Option<BTreeMap<(String, String), bool>> = None;
    let mut stable_since = Instant::now();
    loop {
        let found = workloads(cluster, namespaces);
        let admitted: BTreeMap<(String, String), bool> = found
            .iter()
            .map(|(key, state)| (key.clone(), state.admitted))
            .collect();
        if last.as_ref() != Some(&admitted) {
            last = Some(admitted);
            stable_since = Instant::now();
        }
        let complete = found.len() >= expected && !found.values().any(|state| state.evicting);
        if (complete && stable_since.elapsed() > SETTLED_FOR) || started.elapsed() > SETTLE_TIMEOUT
        {
            return found;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The admitted Workloads of a settled wave in `namespace`.
fn admitted_in(found: &BTreeMap<(String, String), WorkloadState>, namespace: &str) -> usize {
    found
        .iter()
        .filter(|((ns, _), state)| ns == namespace && state.admitted)
        .count()
}

/// The running pods of `namespace`: (Job name, node) of each pod bound to a node.
fn bound_pods(cluster: &Cluster, namespace: &str) -> Vec<(String, String)> {
    let run = cluster.kubectl(&["get", "pods", "-n", namespace, "-o", "json"], "");
    let list: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pod| {
            let node = pod["spec"]["nodeName"].as_str()?;
            let job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"].as_str()?;
            Some((job.to_string(), node.to_string()))
        })
        .collect()
}

/// Waits until `pods` pods of `scenario` are bound in all namespaces together (or the settle
/// time is up); returns them per namespace as (Job name, node).
fn wait_bound_labelled(
    cluster: &Cluster,
    scenario: &str,
    pods: usize,
) -> BTreeMap<String, Vec<(String, String)>> {
    let selector = format!("tenantc-sim={scenario}");
    let started = Instant::now();
    loop {
        let run = cluster.kubectl(
            &[
                "get",
                "pods",
                "--all-namespaces",
                "-l",
                &selector,
                "-o",
                "json",
            ],
            "",
        );
        let list: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        let mut bound: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for pod in list["items"].as_array().into_iter().flatten() {
            let (Some(namespace), Some(node), Some(job)) = (
                pod["metadata"]["namespace"].as_str(),
                pod["spec"]["nodeName"].as_str(),
                pod["metadata"]["labels"]["batch.kubernetes.io/job-name"].as_str(),
            ) else {
                continue;
            };
            bound
                .entry(namespace.to_string())
                .or_default()
                .push((job.to_string(), node.to_string()));
        }
        if bound.values().map(Vec::len).sum::<usize>() >= pods || started.elapsed() > SETTLE_TIMEOUT
        {
            return bound;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Waits until `pods` pods of `namespace` are bound (or the settle time is up); returns them.
fn wait_bound(cluster: &Cluster, namespace: &str, pods: usize) -> Vec<(String, String)> {
    let started = Instant::now();
    loop {
        let bound = bound_pods(cluster, namespace);
        if bound.len() >= pods || started.elapsed() > SETTLE_TIMEOUT {
            return bound;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The namespace of `tenant` that holds the most of `resource`.
fn namespace_for<'a>(tenant: &'a TenantPlan, resource: &str) -> Option<&'a str> {
    tenant
        .namespaces
        .iter()
        .filter(|ns| ns.gpu.get(resource).is_some_and(|count| *count > 0))
        .max_by_key(|ns| ns.gpu.get(resource).copied().unwrap_or(0))
        .map(|ns| ns.name.as_str())
}

fn row_i64(row: &Value, key: &str) -> i64 {
    row[key]
        .as_i64()
        .unwrap_or_else(|| panic!("describe's capacity row has no {key}: {row}"))
}

// Topology and gangs ----------------------------------------------------------------------------

/// Gangs with a `within` level: each reservation's gangs are submitted one more than describe's
/// effective capacity holds in whole gangs, each as a Job whose pods ask Kueue for the level
/// (`kueue.x-k8s.io/podset-required-topology`); Kueue must admit exactly `effective / gang` of
/// them and place every admitted gang's pods on nodes of one domain of the level, and a gang one
/// pod larger than a domain must wait. Returns the mismatches and how many gangs were measured.
fn gang_scenario(cluster: &Cluster, session: &Session) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut measured = 0;
    for cell in &session.fleet.plan.cells {
        let mut gangs = Vec::new();
        for tenant in &cell.tenants {
            for row in session.capacity(&tenant.name, &cell.name) {
                if let (Some(level), Some(gang)) = (row["within"].as_str(), row["gang"].as_i64()) {
                    gangs.push((tenant, row.clone(), level.to_string(), gang));
                }
            }
        }
        if gangs.is_empty() {
            continue;
        }
        session.in_cell(cluster, cell, |nodes| {
            for (tenant, row, level, gang) in &gangs {
                let pool = row["pool"].as_str().unwrap_or_default();
                let resource = row["resource"].as_str().unwrap_or_default();
                let domain = row_i64(row, "domain");
                let effective = row_i64(row, "effective");
                let flavor = cell
                    .pools
                    .iter()
                    .find(|candidate| candidate.name == pool)
                    .map(|found| found.flavor.clone())
                    .unwrap_or_default();
                let Some(namespace) = namespace_for(tenant, resource) else {
                    failures.push(format!(
                        "{} in {}: no namespace holds {resource}",
                        tenant.name, cell.name
                    ));
                    continue;
                };
                let per_node = nodes
                    .per_node
                    .get(&(pool.to_string(), resource.to_string()))
                    .copied()
                    .unwrap_or(0);
                let devices = (*gang).min(per_node);
                if devices <= 0 || gang % devices != 0 || domain % devices != 0 {
                    failures.push(format!(
                        "{} in {}: a gang of {gang} {resource} on {pool} cannot be cut into pods of one node's devices ({per_node})",
                        tenant.name, cell.name
                    ));
                    continue;
                }
                let namespaces = BTreeSet::from([namespace.to_string()]);
                let topology = vec![("kueue.x-k8s.io/podset-required-topology", level.clone())];

                // A gang one pod larger than a domain fits no domain: it must wait.
                let oversized = Shape {
                    resource,
                    devices,
                    pods: domain / devices + 1,
                    annotations: topology.clone(),
                    scenario: "gangs",
                };
                let name = format!("sim-gang-{pool}-oversized");
                let template = fixture_job(cell, tenant);
                if let Err(why) = create(cluster, &[job(&template, tenant, namespace, &oversized, &name)]) {
                    failures.push(format!("{} in {}: the oversized gang was refused:\n{why}", tenant.name, cell.name));
                    continue;
                }
                let found = settle(cluster, &namespaces, 1);
                let waiting = admitted_in(&found, namespace) == 0;
                let message = found
                    .values()
                    .next()
                    .map(|state| state.message.clone())
                    .unwrap_or_default();
                println!(
                    "  {} {} pool {pool}: a gang of {} {resource} within {level} (domains of {domain}): expected to wait, observed {} ({message})",
                    cell.name,
                    tenant.name,
                    oversized.pods * devices,
                    if waiting { "waiting" } else { "admitted" }
                );
                if !waiting {
                    failures.push(format!(
                        "{} in {}: Kueue admitted a gang of {} {resource} on flavor {flavor} that no {level} domain of {domain} holds",
                        tenant.name,
                        cell.name,
                        oversized.pods * devices
                    ));
                }
                delete_jobs(cluster, &namespaces, "gangs");

                // One more gang than the effective capacity holds.
                let expected = effective / gang;
                let shape = Shape {
                    resource,
                    devices,
                    pods: gang / devices,
                    annotations: topology,
                    scenario: "gangs",
                };
                let jobs: Vec<Value> = (0..=expected)
                    .map(|idx| job(&template, tenant, namespace, &shape, &format!("sim-gang-{pool}-{idx}")))
                    .collect();
                if let Err(why) = create(cluster, &jobs) {
                    failures.push(format!("{} in {}: the gangs were refused:\n{why}", tenant.name, cell.name));
                    continue;
                }
                let found = settle(cluster, &namespaces, jobs.len());
                let observed = i64::try_from(admitted_in(&found, namespace)).unwrap_or(-1);
                let pods = usize::try_from(observed.max(0) * shape.pods).unwrap_or(0);
                let bound = wait_bound(cluster, namespace, pods);
                // Each admitted gang's domains of the level, from the labels of its pods' nodes.
                let mut domains: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
                let mut outside = Vec::new();
                let pool_nodes = nodes.pools.get(pool).cloned().unwrap_or_default();
                for (job_name, node) in &bound {
                    if !pool_nodes.contains(node) {
                        outside.push(node.clone());
                    }
                    let value = nodes
                        .labels
                        .get(node)
                        .and_then(|labels| labels.get(level.as_str()))
                        .cloned()
                        .unwrap_or_else(|| format!("(no {level} on {node})"));
                    domains.entry(job_name.as_str()).or_default().insert(value);
                }
                let split: Vec<String> = domains
                    .iter()
                    .filter(|(_, values)| values.len() != 1)
                    .map(|(job_name, values)| format!("{job_name} across {values:?}"))
                    .collect();
                println!(
                    "  {} {} pool {pool} {resource}: gangs of {gang} within {level}: expected {expected} admitted (describe's effective {effective} / gang {gang}), observed {observed}; {} pods bound, {} gangs split across domains, {} pods outside the pool",
                    cell.name,
                    tenant.name,
                    bound.len(),
                    split.len(),
                    outside.len()
                );
                measured += 1;
                if observed != expected {
                    failures.push(format!(
                        "{} in {}: Kueue admitted {observed} gangs of {gang} {resource} on flavor {flavor} within {level}, describe's effective capacity holds {expected}",
                        tenant.name, cell.name
                    ));
                }
                if bound.len() != pods {
                    failures.push(format!(
                        "{} in {}: {} of the {pods} pods of the admitted gangs were bound",
                        tenant.name,
                        cell.name,
                        bound.len()
                    ));
                }
                if !split.is_empty() {
                    failures.push(format!(
                        "{} in {}: gangs placed across {level} domains: {split:?}",
                        tenant.name, cell.name
                    ));
                }
                if !outside.is_empty() {
                    failures.push(format!(
                        "{} in {}: gang pods on nodes outside pool {pool}: {outside:?}",
                        tenant.name, cell.name
                    ));
                }
                delete_jobs(cluster, &namespaces, "gangs");
            }
        });
    }
    (failures, measured)
}

/// Gangs within a topology level are placed by Kueue's topology-aware scheduling inside one
/// domain of that level, as many at once as describe's effective capacity holds, and a gang
/// larger than a domain waits.
pub(super) fn simulated_cell_places_each_gang_inside_one_domain(cluster: &Cluster) {
    let session = Session::start(cluster, &support::fleet());
    let (failures, measured) = gang_scenario(cluster, &session);
    session.finish(cluster);
    assert!(measured > 0, "no gang reservation was measured");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// A busy cohort and reclaim, on a generated cell of 40 tenants ---------------------------------

/// The generated cell of the busy-cohort scenario.
const BUSY_CELL: &str = "sim-busy";
/// Its tenants that reserve only MIG slices, besides the lender, the borrower and the owner.
const BUSY_SLICE_TENANTS: usize = 37;

/// A cell of 41 tenants in two orgs, written into `root`: 37 tenants, the lender, the
/// borrower and a tenant of small ceilings over two namespaces share a MIG pool (each reserves two 1g.10gb slices with a burst of two, more than
/// the pool holds when all use their burst); the lender (org alpha) reserves 8 whole GPUs of a
/// 16-GPU pool of which it lends 4, and the borrower (org beta, at a higher priority) reserves
/// 4 there with a burst of 12; a `hard` tenant owns a pool of its own.
fn write_busy_fleet(root: &Path) {
    let slice_tenants: Vec<String> = (0..BUSY_SLICE_TENANTS)
        .map(|idx| format!("sim-{idx:02}"))
        .collect();
    let (alpha, beta) = slice_tenants.split_at(BUSY_SLICE_TENANTS / 2);
    let quoted = |names: &[String]| -> String {
        names
            .iter()
            .map(|name| format!("\"{name}\""))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let cell = format!(
        r#"// Generated by tests/conformance/scenarios.rs: the busy-cohort scenario's cell.
cell "{BUSY_CELL}" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.36"
    driver "580"
    oversubscribe 1.5
    org "alpha" {{
        tenants "sim-lender" "sim-hard" "sim-ceiling" {alpha}
    }}
    org "beta" {{
        tenants "sim-borrower" {beta}
    }}
    priority "batch" value=1000 preempt=#false description="Training and batch jobs"
    priority "serving" value=100000 description="Inference"
    runtime-class "nvidia" handler="nvidia" {{
        trust "mig" "hard"
    }}
    pool "train" {{
        gpu "H100-80GB-SXM"
        nodes 2 gpus-per-node=8
        sharing "exclusive"
        nvlink-domain gpus=8
        label "pool" "train"
        taint "tenantc.io/pool" "train" effect="NoSchedule"
    }}
    pool "infer" {{
        gpu "H100-80GB-SXM"
        nodes 2 gpus-per-node=8
        sharing "mig"
        label "pool" "infer"
        taint "tenantc.io/pool" "infer" effect="NoSchedule"
        mig-layout "small" nodes=2 {{
            profile "1g.10gb" 7
        }}
    }}
    pool "owned" {{
        gpu "H100-80GB-SXM"
        nodes 1 gpus-per-node=8
        sharing "exclusive"
        nvlink-domain gpus=8
        label "pool" "owned"
        taint "tenantc.io/pool" "owned" effect="NoSchedule"
        owner "sim-hard"
    }}
}}
"#,
        alpha = quoted(alpha),
        beta = quoted(beta),
    );
    let mut files = vec![(format!("cells/{BUSY_CELL}.kdl"), cell)];
    let tenant = |name: &str, org: &str, trust: &str, pools: &str, workloads: &str| {
        format!(
            r#"tenant "{name}" {{
    org "{org}"
    team "{name}"
    trust "{trust}"
    groups admin="{name}-admins" member="{name}-members"
    quota cell="{BUSY_CELL}" cpu="64" memory="256Gi" pods=100 {{
{pools}    }}
{workloads}    registry "registry.example.com/{name}"
}}
"#
        )
    };
    let slices =
        "        pool \"infer\" profile=\"1g.10gb\" reserved=2 burst=2 workload=\"infer\"\n";
    let infer = "    workload \"infer\" service-account=\"server\" priority=\"serving\"\n";
    let train = "    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n";
    for (idx, name) in slice_tenants.iter().enumerate() {
        let org = if idx < alpha.len() { "alpha" } else { "beta" };
        files.push((
            format!("tenants/{name}.kdl"),
            tenant(name, org, "mig", slices, infer),
        ));
    }
    files.push((
        "tenants/sim-lender.kdl".to_string(),
        tenant(
            "sim-lender",
            "alpha",
            "mig",
            &format!("        pool \"train\" reserved=8 lend=4 workload=\"train\"\n{slices}"),
            &format!("{train}{infer}"),
        ),
    ));
    files.push((
        "tenants/sim-borrower.kdl".to_string(),
        tenant(
            "sim-borrower",
            "beta",
            "mig",
            &format!("        pool \"train\" reserved=4 burst=12 workload=\"infer\"\n{slices}"),
            infer,
        ),
    ));
    // Small ceilings over two namespaces, which the ceilings scenario fills.
    files.push((
        "tenants/sim-ceiling.kdl".to_string(),
        tenant(
            "sim-ceiling",
            "alpha",
            "mig",
            slices,
            &format!("{train}{infer}"),
        )
        .replace(
            r#"cpu="64" memory="256Gi" pods=100"#,
            r#"cpu="8" memory="32Gi" pods=12"#,
        ),
    ));
    files.push((
        "tenants/sim-hard.kdl".to_string(),
        tenant(
            "sim-hard",
            "alpha",
            "hard",
            "        pool \"owned\" reserved=8 workload=\"train\"\n",
            train,
        ),
    ));
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("the fleet's folders");
        std::fs::write(&path, text).expect("a declaration");
    }
}

/// A Job of a generated tenant the floor admits: the us-east-1a fixture Job of globex-vision
/// with the tenant's labels, registry and runtime class.
fn generated_template(cell: &CellPlan, tenant: &TenantPlan) -> Value {
    let mut job = super::policy_cases::fixture("globex-vision-job", "us-east-1a");
    let labels = &mut job["spec"]["template"]["metadata"]["labels"];
    labels["tenant.platform/cell"] = json!(cell.name);
    labels["tenant.platform/tenant"] = json!(tenant.name);
    labels["tenant.platform/sku"] = json!("H100-80GB-SXM");
    let registry = tenant.registries.first().expect("a registry");
    job["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!(format!("{registry}/worker@sha256:{}", "3f".repeat(32)));
    job["spec"]["template"]["spec"]["runtimeClassName"] = json!("nvidia");
    job
}

/// A Job name's part for a resource (`nvidia.com/mig-1g.10gb` → `mig-1g-10gb`).
fn resource_tag(resource: &str) -> String {
    resource
        .rsplit('/')
        .next()
        .unwrap_or(resource)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// One reservation of the busy wave: who asked for what, and what describe says of it.
struct Ask<'a> {
    tenant: &'a TenantPlan,
    namespace: String,
    pool: String,
    resource: String,
    nominal: i64,
    quota: i64,
    effective: i64,
    lending: Option<i64>,
    prefix: String,
}

/// Every reservation of the cell, with describe's figures and its queue's lending limit.
fn asks<'a>(session: &Session, cell: &'a CellPlan) -> Vec<Ask<'a>> {
    let mut found = Vec::new();
    for tenant in &cell.tenants {
        let described = describe_in(&session.root, &tenant.name, &cell.name);
        for row in described["capacity"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let pool = row["pool"].as_str().unwrap_or_default().to_string();
            let resource = row["resource"].as_str().unwrap_or_default().to_string();
            let Some(namespace) = namespace_for(tenant, &resource) else {
                continue;
            };
            let lending = described["queue"]["flavors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|flavor| flavor["pool"] == pool.as_str())
                .flat_map(|flavor| flavor["resources"].as_array().cloned().unwrap_or_default())
                .find(|entry| entry["resource"] == resource.as_str())
                .and_then(|entry| entry["lending"].as_i64());
            found.push(Ask {
                tenant,
                namespace: namespace.to_string(),
                prefix: format!("sim-busy-{pool}-{}", resource_tag(&resource)),
                nominal: row_i64(&row, "nominal"),
                quota: row_i64(&row, "quota"),
                effective: row_i64(&row, "effective"),
                lending,
                pool,
                resource,
            });
        }
    }
    found
}

/// `count` one-device Jobs of `ask`.
fn jobs_of(cell: &CellPlan, ask: &Ask<'_>, count: i64, scenario: &str) -> Vec<Value> {
    let template = generated_template(cell, ask.tenant);
    let shape = Shape {
        resource: &ask.resource,
        devices: 1,
        pods: 1,
        annotations: Vec::new(),
        scenario,
    };
    (0..count)
        .map(|idx| {
            job(
                &template,
                ask.tenant,
                &ask.namespace,
                &shape,
                &format!("{}-{idx}", ask.prefix),
            )
        })
        .collect()
}

/// Submits `count` one-device Jobs of `ask`.
fn submit(
    cluster: &Cluster,
    cell: &CellPlan,
    ask: &Ask<'_>,
    count: i64,
    scenario: &str,
) -> Result<(), String> {
    create(cluster, &jobs_of(cell, ask, count, scenario))
}

/// The admitted Workloads of `ask`'s Jobs.
fn admitted_of(found: &BTreeMap<(String, String), WorkloadState>, ask: &Ask<'_>) -> i64 {
    let count = found
        .iter()
        .filter(|((namespace, job_name), state)| {
            namespace == &ask.namespace
                && job_name.starts_with(&format!("{}-", ask.prefix))
                && state.admitted
        })
        .count();
    i64::try_from(count).unwrap_or(-1)
}

/// The pool resources' capacity, from the cell's capacity report.
fn capacities(session: &Session, cell: &CellPlan) -> BTreeMap<(String, String), i64> {
    let report: Value = serde_json::from_slice(
        session
            .tree
            .get(&format!("{}/reports/capacity.json", cell.name))
            .expect("the capacity report"),
    )
    .expect("the capacity report");
    report["capacity"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|row| {
            (
                (
                    row["pool"].as_str().unwrap_or_default().to_string(),
                    row["resource"].as_str().unwrap_or_default().to_string(),
                ),
                row["capacity"].as_i64().unwrap_or(0),
            )
        })
        .collect()
}

/// Every tenant asks for one more device than its quota (reserved + burst) at once: each must
/// be admitted at least its nominal quota and at most its quota, and each pool resource must
/// fill up to `min(capacity, sum of the quotas)`; every pod lands on its pool's nodes, and no
/// node of a `hard` tenant's pool runs another tenant's pod.
fn busy_wave(
    cluster: &Cluster,
    cell: &CellPlan,
    asks: &[Ask<'_>],
    capacity: &BTreeMap<(String, String), i64>,
    nodes: &CellNodes,
    failures: &mut Vec<String>,
) {
    let namespaces: BTreeSet<String> = asks.iter().map(|ask| ask.namespace.clone()).collect();
    // All at once, in one request stream.
    let jobs: Vec<Value> = asks
        .iter()
        .flat_map(|ask| jobs_of(cell, ask, ask.quota + 1, "busy"))
        .collect();
    let submitted = jobs.len();
    if let Err(why) = create(cluster, &jobs) {
        failures.push(format!(
            "{}: the busy wave's Jobs were refused:\n{why}",
            cell.name
        ));
    }
    let settling = Instant::now();
    let found = settle(cluster, &namespaces, submitted);
    println!(
        "  {}: {submitted} Jobs of {} reservations settled in {:.1} s",
        cell.name,
        asks.len(),
        settling.elapsed().as_secs_f64()
    );
    let mut totals: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
    for ask in asks {
        let observed = admitted_of(&found, ask);
        let total = totals
            .entry((ask.pool.clone(), ask.resource.clone()))
            .or_default();
        total.0 += observed;
        total.1 += ask.quota;
        if observed < ask.nominal || observed > ask.quota {
            failures.push(format!(
                "{} in {}: with the cohort busy, Kueue admitted {observed} of {} on pool {}, outside describe's nominal {} to quota {}",
                ask.tenant.name, cell.name, ask.resource, ask.pool, ask.nominal, ask.quota
            ));
        }
    }
    for ((pool, resource), (observed, quotas)) in &totals {
        let capacity = capacity
            .get(&(pool.clone(), resource.clone()))
            .copied()
            .unwrap_or(0);
        let expected = capacity.min(*quotas);
        println!(
            "  {} busy cohort, pool {pool} {resource}: expected {expected} admitted (min of capacity {capacity} and the quotas' sum {quotas}), observed {observed}; every tenant within its nominal and quota: {}",
            cell.name,
            !failures
                .iter()
                .any(|failure| failure.contains(&format!("of {resource} on pool {pool},")))
        );
        if *observed != expected {
            failures.push(format!(
                "{}: with the cohort busy, Kueue admitted {observed} of {resource} on pool {pool}, expected {expected}",
                cell.name
            ));
        }
    }
    // Pinning: every bound pod on its own pool's nodes; a hard tenant's nodes its alone.
    let admitted: usize = asks
        .iter()
        .map(|ask| usize::try_from(admitted_of(&found, ask)).unwrap_or(0))
        .sum();
    let bound = wait_bound_labelled(cluster, "busy", admitted);
    if bound.values().map(Vec::len).sum::<usize>() != admitted {
        failures.push(format!(
            "{}: {} of the busy wave's {admitted} admitted pods were bound",
            cell.name,
            bound.values().map(Vec::len).sum::<usize>()
        ));
    }
    let mut node_tenants: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for ask in asks {
        let pool_nodes = nodes.pools.get(&ask.pool).cloned().unwrap_or_default();
        let mine = bound
            .get(ask.namespace.as_str())
            .into_iter()
            .flatten()
            .filter(|(job_name, _)| job_name.starts_with(&format!("{}-", ask.prefix)));
        for (_, node) in mine {
            node_tenants
                .entry(node.clone())
                .or_default()
                .insert(ask.tenant.name.clone());
            if !pool_nodes.contains(node) {
                failures.push(format!(
                    "{} in {}: a pod of pool {} on node {node}, outside the pool",
                    ask.tenant.name, cell.name, ask.pool
                ));
            }
        }
    }
    for tenant in cell
        .tenants
        .iter()
        .filter(|tenant| tenant.trust == tenantc::model::Trust::Hard)
    {
        for (node, tenants) in &node_tenants {
            if tenants.contains(&tenant.name) && tenants.len() > 1 {
                failures.push(format!(
                    "{} in {}: hard tenant shares node {node} with {tenants:?}",
                    tenant.name, cell.name
                ));
            }
        }
    }
    let deleting = Instant::now();
    delete_jobs(cluster, &namespaces, "busy");
    println!(
        "  {}: the busy wave's Jobs deleted in {:.1} s",
        cell.name,
        deleting.elapsed().as_secs_f64()
    );
}

/// Reclaim: where a tenant lends part of its reservation (`lend`, Kueue's lending limit) and
/// borrows nothing, and another tenant of the pool resource may borrow, the borrower alone gets
/// describe's effective capacity (which counts what the lender keeps); then the lender asks for
/// more than its reservation, and Kueue must give it back all of its nominal quota, preempting
/// the borrower's borrowed Jobs even at a higher priority (`reclaimWithinCohort: Any`), and
/// leave the borrower `min(its quota, capacity - the lender's nominal)`.
fn reclaim(
    cluster: &Cluster,
    cell: &CellPlan,
    asks: &[Ask<'_>],
    capacity: &BTreeMap<(String, String), i64>,
    failures: &mut Vec<String>,
) -> usize {
    let mut measured = 0;
    for lender in asks.iter().filter(|ask| {
        ask.lending.is_some_and(|lend| lend < ask.nominal) && ask.quota == ask.nominal
    }) {
        let Some(borrower) = asks.iter().find(|ask| {
            ask.pool == lender.pool
                && ask.resource == lender.resource
                && ask.quota > ask.nominal
                && ask.tenant.name != lender.tenant.name
        }) else {
            continue;
        };
        let others = asks.iter().filter(|ask| {
            ask.pool == lender.pool
                && ask.resource == lender.resource
                && ask.tenant.name != lender.tenant.name
                && ask.tenant.name != borrower.tenant.name
        });
        if others.count() > 0 {
            failures.push(format!(
                "{}: reclaim on pool {} {} needs the lender and the borrower alone there",
                cell.name, lender.pool, lender.resource
            ));
            continue;
        }
        let capacity = capacity
            .get(&(lender.pool.clone(), lender.resource.clone()))
            .copied()
            .unwrap_or(0);
        let namespaces = BTreeSet::from([lender.namespace.clone(), borrower.namespace.clone()]);
        if let Err(why) = submit(cluster, cell, borrower, borrower.quota + 1, "reclaim") {
            failures.push(format!(
                "{}: the borrower's Jobs were refused:\n{why}",
                cell.name
            ));
            continue;
        }
        let submitted = usize::try_from(borrower.quota + 1).unwrap_or(0);
        let found = settle(cluster, &namespaces, submitted);
        let borrowed = admitted_of(&found, borrower);
        println!(
            "  {} reclaim, pool {} {}: {} alone: expected {} admitted (describe's effective, with {} keeping {} of its {} reserved), observed {borrowed}",
            cell.name,
            lender.pool,
            lender.resource,
            borrower.tenant.name,
            borrower.effective,
            lender.tenant.name,
            lender.nominal - lender.lending.unwrap_or(lender.nominal),
            lender.nominal
        );
        if borrowed != borrower.effective {
            failures.push(format!(
                "{} in {}: alone, Kueue admitted {borrowed} of {} on pool {}, describe's effective capacity is {}",
                borrower.tenant.name, cell.name, borrower.resource, borrower.pool, borrower.effective
            ));
        }
        if let Err(why) = submit(cluster, cell, lender, lender.quota + 1, "reclaim") {
            failures.push(format!(
                "{}: the lender's Jobs were refused:\n{why}",
                cell.name
            ));
            continue;
        }
        let found = settle(
            cluster,
            &namespaces,
            submitted + usize::try_from(lender.quota + 1).unwrap_or(0),
        );
        let (lent_back, kept) = (admitted_of(&found, lender), admitted_of(&found, borrower));
        let expected_borrower = borrower.quota.min(capacity - lender.nominal);
        println!(
            "  {} reclaim, pool {} {}: then {} asks for {}: expected {} admitted to it (its nominal) and {expected_borrower} left to {} (min of its quota {} and capacity {capacity} - {}), observed {lent_back} and {kept} ({} of the borrower's Jobs preempted)",
            cell.name,
            lender.pool,
            lender.resource,
            lender.tenant.name,
            lender.quota + 1,
            lender.nominal,
            borrower.tenant.name,
            borrower.quota,
            lender.nominal,
            borrowed - kept
        );
        if lent_back != lender.nominal || kept != expected_borrower {
            failures.push(format!(
                "{} in {}: after reclaim Kueue admitted {lent_back} of {} on flavor of pool {} to the lender (nominal {}) and {kept} to {} (expected {expected_borrower})",
                lender.tenant.name,
                cell.name,
                lender.resource,
                lender.pool,
                lender.nominal,
                borrower.tenant.name
            ));
        }
        delete_jobs(cluster, &namespaces, "reclaim");
        measured += 1;
    }
    measured
}

/// The busy cohort, reclaim and the ceilings on a generated cell of 41 tenants: every tenant
/// asks for more than its quota at once, then a lender reclaims what it lent, then a tenant
/// fills its cpu, memory and pods ceilings from both its namespaces at once.
pub(super) fn simulated_cell_shares_a_busy_cohort_reclaims_and_holds_the_ceilings(
    cluster: &Cluster,
) {
    let root = tempfile::tempdir().expect("a folder for the generated fleet");
    write_busy_fleet(root.path());
    let session = Session::start(cluster, root.path());
    let mut failures = Vec::new();
    let (mut asked, mut reclaimed, mut ceilings) = (0, 0, 0);
    for cell in &session.fleet.plan.cells {
        assert_eq!(
            cell.tenants.len(),
            BUSY_SLICE_TENANTS + 4,
            "the generated cell's tenants"
        );
        let started = Instant::now();
        let asks = asks(&session, cell);
        let capacity = capacities(&session, cell);
        println!(
            "  {}: {} reservations described in {:.1} s",
            cell.name,
            asks.len(),
            started.elapsed().as_secs_f64()
        );
        asked += asks.len();
        session.in_cell(cluster, cell, |nodes| {
            let started = Instant::now();
            busy_wave(cluster, cell, &asks, &capacity, nodes, &mut failures);
            println!("  busy wave in {:.1} s", started.elapsed().as_secs_f64());
            let started = Instant::now();
            reclaimed += reclaim(cluster, cell, &asks, &capacity, &mut failures);
            println!("  reclaim in {:.1} s", started.elapsed().as_secs_f64());
            let started = Instant::now();
            ceilings += ceiling_waves(cluster, &session, cell, &mut failures);
            println!("  ceilings in {:.1} s", started.elapsed().as_secs_f64());
        });
    }
    session.finish(cluster);
    assert!(asked > 40, "the busy wave measured {asked} reservations");
    assert!(reclaimed > 0, "no reclaim was measured");
    assert!(ceilings > 0, "no ceiling was measured");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// Pinning attacks through a tenant's own RBAC -----------------------------------------------------

/// A pool as the nodes of the capacity report show it: the labels all its nodes carry and its
/// taints.
struct PoolNodes {
    labels: BTreeMap<String, String>,
    taints: Vec<Value>,
}

/// Per pool, the labels every node group of it carries and its taints, from the capacity report.
fn pool_nodes(report: &Value) -> BTreeMap<String, PoolNodes> {
    let mut pools: BTreeMap<String, PoolNodes> = BTreeMap::new();
    for group in report["capacity"]["node_groups"]
        .as_array()
        .expect("node groups")
    {
        let pool = group["pool"].as_str().expect("a pool").to_string();
        let labels: BTreeMap<String, String> = group["labels"]
            .as_object()
            .expect("labels")
            .iter()
            .map(|(key, value)| (key.clone(), value.as_str().unwrap_or_default().to_string()))
            .collect();
        let taints: Vec<Value> = group["taints"]
            .as_array()
            .expect("taints")
            .iter()
            .map(|taint| {
                let text = taint.as_str().expect("a taint");
                let (rest, effect) = text.rsplit_once(':').expect("key[=value]:effect");
                match rest.split_once('=') {
                    Some((key, value)) => {
                        json!({"key": key, "operator": "Equal", "value": value, "effect": effect})
                    }
                    None => json!({"key": rest, "operator": "Exists", "effect": effect}),
                }
            })
            .collect();
        match pools.get_mut(&pool) {
            Some(known) => known
                .labels
                .retain(|key, value| labels.get(key) == Some(value)),
            None => {
                pools.insert(pool, PoolNodes { labels, taints });
            }
        }
    }
    pools
}

/// One attempt of a tenant to reach a pool it may not: what it is, and the object a member
/// creates.
struct Attack {
    what: String,
    object: Value,
}

/// The attempts of `tenant` on `target`: a CPU pod outside Kueue that selects the pool's nodes,
/// with and without its taints tolerated, and Jobs of the tenant's own GPU resource that select
/// the pool by node selector, by node affinity, through another tenant's queue, or with no
/// queue at all.
fn attacks(
    cell: &CellPlan,
    tenant: &TenantPlan,
    target: &str,
    nodes: &PoolNodes,
    other_queue: &str,
) -> Vec<Attack> {
    let mut found = Vec::new();
    let selector = json!(nodes.labels);
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": nodes.labels.iter().map(|(key, value)| json!({
            "key": key, "operator": "In", "values": [value],
        })).collect::<Vec<Value>>()}],
    }}});
    // A CPU pod that Kueue does not hold.
    let mut pod = super::policy_cases::fixture(&format!("{}-pod", tenant.name), &cell.name);
    if let Some(labels) = pod["metadata"]["labels"].as_object_mut() {
        labels.remove("kueue.x-k8s.io/queue-name");
        labels.remove("kueue.x-k8s.io/priority-class");
        labels.insert("tenantc-sim".to_string(), json!("pinning"));
    }
    if let Some(spec) = pod["spec"].as_object_mut() {
        spec.remove("volumes");
        spec.remove("tolerations");
        spec.remove("runtimeClassName");
    }
    for container in pod["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
    {
        if let Some(container) = container.as_object_mut() {
            container.remove("volumeMounts");
            container.remove("envFrom");
            container.insert("resources".to_string(), json!({}));
        }
    }
    let mut cpu_selector = pod.clone();
    cpu_selector["metadata"]["name"] = json!(format!("sim-pin-{target}-cpu-selector"));
    cpu_selector["spec"]["nodeSelector"] = selector.clone();
    found.push(Attack {
        what: format!("a CPU pod outside Kueue selecting {target}'s nodes"),
        object: cpu_selector,
    });
    let mut cpu_tolerating = pod;
    cpu_tolerating["metadata"]["name"] = json!(format!("sim-pin-{target}-cpu-tolerating"));
    cpu_tolerating["spec"]["nodeSelector"] = selector.clone();
    cpu_tolerating["spec"]["tolerations"] = json!(nodes.taints);
    found.push(Attack {
        what: format!(
            "a CPU pod outside Kueue selecting {target}'s nodes and tolerating its taints"
        ),
        object: cpu_tolerating,
    });
    // GPU Jobs of the tenant's own reserved resource.
    let Some((resource, _)) = tenant
        .namespaces
        .iter()
        .flat_map(|ns| ns.gpu.iter())
        .find(|(_, count)| **count > 0)
    else {
        return found;
    };
    let Some(gpu_namespace) = namespace_for(tenant, resource) else {
        return found;
    };
    let shape = Shape {
        resource,
        devices: 1,
        pods: 1,
        annotations: Vec::new(),
        scenario: "pinning",
    };
    let base = job(
        &fixture_job(cell, tenant),
        tenant,
        gpu_namespace,
        &shape,
        "placeholder",
    );
    let variant = |name: &str, change: &dyn Fn(&mut Value)| -> Value {
        let mut object = base.clone();
        object["metadata"]["name"] = json!(format!("sim-pin-{target}-{name}"));
        change(&mut object);
        object
    };
    found.push(Attack {
        what: format!("a Job of {resource} selecting {target}'s nodes"),
        object: variant("gpu-selector", &|object| {
            object["spec"]["template"]["spec"]["nodeSelector"] = selector.clone();
        }),
    });
    found.push(Attack {
        what: format!("a Job of {resource} requiring {target}'s nodes by affinity"),
        object: variant("gpu-affinity", &|object| {
            object["spec"]["template"]["spec"]["affinity"] = affinity.clone();
        }),
    });
    found.push(Attack {
        what: format!("a Job of {resource} tolerating {target}'s taints and selecting its nodes"),
        object: variant("gpu-tolerating", &|object| {
            object["spec"]["template"]["spec"]["nodeSelector"] = selector.clone();
            object["spec"]["template"]["spec"]["tolerations"] = json!(nodes.taints);
        }),
    });
    found.push(Attack {
        what: format!("a Job of {resource} on another tenant's queue `{other_queue}`"),
        object: variant("gpu-foreign-queue", &|object| {
            object["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!(other_queue);
            object["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] =
                json!(other_queue);
        }),
    });
    found.push(Attack {
        what: format!("a Job of {resource} outside Kueue selecting {target}'s nodes"),
        object: variant("gpu-no-queue", &|object| {
            if let Some(labels) = object["metadata"]["labels"].as_object_mut() {
                labels.remove("kueue.x-k8s.io/queue-name");
            }
            if let Some(labels) = object["spec"]["template"]["metadata"]["labels"].as_object_mut() {
                labels.remove("kueue.x-k8s.io/queue-name");
            }
            object["spec"]["suspend"] = json!(false);
            object["spec"]["template"]["spec"]["nodeSelector"] = selector.clone();
        }),
    });
    found
}

/// Every pinning attack of every tenant of the fleet's cells on the pools describe says it
/// cannot reach, made through the tenant's own RBAC (a member of its `member` group): each is
/// refused by the API server or never runs on that pool. Returns the failures (naming tenant,
/// pool and attack) and how many attacks were made.
fn pinning_scenario(
    cluster: &Cluster,
    session: &Session,
    only: Option<&str>,
    tamper: Option<Tamper>,
) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut made = 0;
    for cell in &session.fleet.plan.cells {
        if only.is_some_and(|name| name != cell.name) {
            continue;
        }
        let report: Value = serde_json::from_slice(
            session
                .tree
                .get(&format!("{}/reports/capacity.json", cell.name))
                .expect("the capacity report"),
        )
        .expect("the capacity report");
        let pools = pool_nodes(&report);
        session.in_tampered_cell(cluster, cell, tamper, |nodes| {
            let node_pool: BTreeMap<&str, &str> = nodes
                .pools
                .iter()
                .flat_map(|(pool, names)| names.iter().map(move |name| (name.as_str(), pool.as_str())))
                .collect();
            // What each attack became: refused (with why) or created.
            let mut outcomes: Vec<(String, String, String, Option<String>)> = Vec::new();
            let mut reach: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for tenant in &cell.tenants {
                let described = describe_in(&session.root, &tenant.name, &cell.name);
                let reachable: BTreeSet<String> = described["reach"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|row| row["reachable"] == true)
                    .filter_map(|row| row["pool"].as_str().map(str::to_string))
                    .collect();
                let other_queue = cell
                    .tenants
                    .iter()
                    .find(|other| other.name != tenant.name)
                    .map(|other| other.queue.name.clone())
                    .unwrap_or_else(|| "default".to_string());
                let member = super::quota::member_group(tenant);
                for (pool, pool_nodes) in &pools {
                    if reachable.contains(pool) {
                        continue;
                    }
                    for attack in attacks(cell, tenant, pool, pool_nodes, &other_queue) {
                        let mut args: Vec<String> = vec!["create".into(), "-f".into(), "-".into()];
                        args.extend(super::quota::as_member(&member));
                        let args: Vec<&str> = args.iter().map(String::as_str).collect();
                        let run = cluster.kubectl_with(
                            &cluster.user_kubeconfig,
                            &args,
                            &attack.object.to_string(),
                        );
                        // The API server's answer, from the policy's own message on.
                        let refused = (!run.ok).then(|| {
                            let line = run.stderr.lines().next().unwrap_or_default();
                            let reason = line
                                .split_once("denied request: ")
                                .map_or(line, |(_, reason)| reason);
                            reason.chars().take(160).collect::<String>()
                        });
                        outcomes.push((tenant.name.clone(), pool.clone(), attack.what, refused));
                        made += 1;
                    }
                }
                reach.insert(tenant.name.clone(), reachable);
            }
            // Kueue admits and the scheduler binds within seconds; watch for 15 s.
            let started = Instant::now();
            let mut landed: BTreeMap<(String, String), String> = BTreeMap::new();
            while started.elapsed() < Duration::from_secs(15) {
                let run = cluster.kubectl(
                    &["get", "pods", "--all-namespaces", "-l", "tenantc-sim=pinning", "-o", "json"],
                    "",
                );
                let list: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
                for pod in list["items"].as_array().into_iter().flatten() {
                    let (Some(node), Some(tenant), Some(name)) = (
                        pod["spec"]["nodeName"].as_str(),
                        pod["metadata"]["labels"]["tenant.platform/tenant"].as_str(),
                        pod["metadata"]["name"].as_str(),
                    ) else {
                        continue;
                    };
                    landed.insert((tenant.to_string(), name.to_string()), node.to_string());
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            for (tenant, pool, what, refused) in &outcomes {
                let verdict = match refused {
                    Some(why) => format!("refused: {why}"),
                    None => "created, never ran on the pool".to_string(),
                };
                println!("  {} {tenant} -> {pool}: {what}: {verdict}", cell.name);
            }
            for ((tenant, pod), node) in &landed {
                let pool = node_pool.get(node.as_str()).copied().unwrap_or("(no pool)");
                let allowed = reach.get(tenant).is_some_and(|pools| pools.contains(pool));
                println!(
                    "  {} {tenant}: pod {pod} bound to {node} (pool {pool}){}",
                    cell.name,
                    if allowed { "" } else { ", a pool it may not reach" }
                );
                if !allowed {
                    failures.push(format!(
                        "{tenant} in {}: pod {pod} of a pinning attack runs on node {node} of pool {pool}, which describe says it cannot reach",
                        cell.name
                    ));
                }
            }
            let namespaces: BTreeSet<String> = cell
                .tenants
                .iter()
                .flat_map(|tenant| tenant.namespaces.iter().map(|ns| ns.name.clone()))
                .collect();
            delete_jobs(cluster, &namespaces, "pinning");
        });
    }
    (failures, made)
}

/// No tenant reaches a pool describe says it cannot reach, whatever its members submit: node
/// selectors, affinity, tolerations, another tenant's queue, or no queue at all.
pub(super) fn simulated_cell_keeps_each_tenant_off_the_pools_it_may_not_reach(cluster: &Cluster) {
    let session = Session::start(cluster, &support::fleet());
    let (failures, made) = pinning_scenario(cluster, &session, None, None);
    session.finish(cluster);
    assert!(made > 0, "no pinning attack was made");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The pool whose taint the self-test takes away.
const UNTAINTED_POOL: &str = "h100-infer";

/// Takes the taint of [`UNTAINTED_POOL`] off its ResourceFlavor and off its nodes, as if tenantc
/// had emitted the pool without it.
fn untaint_a_pool(cluster: &Cluster, fleet: &Fleet, cell: &CellPlan, report: &mut Value) {
    let pool = cell
        .pools
        .iter()
        .find(|pool| pool.name == UNTAINTED_POOL)
        .expect("the self-test's pool");
    let flavor = fleet
        .cell_objects(&cell.name)
        .into_iter()
        .find(|object| object.kind == "ResourceFlavor" && object.name == pool.flavor)
        .expect("the pool's ResourceFlavor");
    let mut json = yaml_documents_typed(&flavor.text).expect("the flavor")[0].clone();
    if let Some(spec) = json["spec"].as_object_mut() {
        spec.remove("nodeTaints");
        spec.remove("tolerations");
    }
    let run = cluster.kubectl(&["replace", "-f", "-"], &json.to_string());
    assert!(run.ok, "untainting the flavor failed:\n{}", run.stderr);
    for group in report["capacity"]["node_groups"]
        .as_array_mut()
        .expect("node groups")
    {
        if group["pool"] == UNTAINTED_POOL {
            group["taints"] = json!([]);
        }
    }
}

/// The self-test: with one pool's taint gone from its flavor and its nodes, a tenant's CPU pod
/// that selects the pool's nodes runs there, and the scenario must name it.
pub(super) fn simulated_cell_self_test_a_pool_without_its_taint_is_caught(cluster: &Cluster) {
    let session = Session::start(cluster, &support::fleet());
    let (failures, _) =
        pinning_scenario(cluster, &session, Some("us-east-1a"), Some(untaint_a_pool));
    session.finish(cluster);
    println!("  reported: {failures:?}");
    assert!(
        !failures.is_empty()
            && failures
                .iter()
                .all(|failure| failure.contains(&format!("of pool {UNTAINTED_POOL},"))),
        "the untainted pool was not caught, or something else failed: {failures:?}"
    );
}

// Ceilings across a tenant's namespaces ---------------------------------------------------------

/// A quantity of cpu or memory in the units a ceiling wave counts in (millicores, MiB), from
/// describe's Kubernetes quantity.
fn units(quantity: &str, resource: &str) -> i64 {
    let parsed = |digits: &str, factor: i64| digits.parse::<i64>().ok().map(|value| value * factor);
    let value = match resource {
        "cpu" => quantity
            .strip_suffix('m')
            .and_then(|digits| parsed(digits, 1))
            .or_else(|| parsed(quantity, 1000)),
        _ => quantity
            .strip_suffix("Ti")
            .and_then(|digits| parsed(digits, 1024 * 1024))
            .or_else(|| {
                quantity
                    .strip_suffix("Gi")
                    .and_then(|digits| parsed(digits, 1024))
            })
            .or_else(|| {
                quantity
                    .strip_suffix("Mi")
                    .and_then(|digits| parsed(digits, 1))
            }),
    };
    value.unwrap_or_else(|| panic!("a {resource} quantity tenantc writes: {quantity}"))
}

/// For the tenants of the cell whose ceilings are small enough to fill (at most 16 pods), one
/// wave per ceiling (cpu, memory, pods): from each of its namespaces at once, CPU Jobs through
/// its LocalQueue asking for two units more than the namespace's part, each one unit (an eighth
/// of the ceiling, or one pod). Kueue must admit and the cell must run at most the ceiling in
/// all namespaces together, and at most its part in each. Returns how many waves ran.
fn ceiling_waves(
    cluster: &Cluster,
    session: &Session,
    cell: &CellPlan,
    failures: &mut Vec<String>,
) -> usize {
    let mut waves = 0;
    for tenant in &cell.tenants {
        let described = describe_in(&session.root, &tenant.name, &cell.name);
        let Some(pods_ceiling) = described["queue"]["pods"].as_i64() else {
            continue;
        };
        if pods_ceiling > 16 || tenant.namespaces.len() < 2 {
            continue;
        }
        let template = generated_template(cell, tenant);
        for resource in ["cpu", "memory", "pods"] {
            let (ceiling, unit) = match resource {
                "pods" => (pods_ceiling, 1),
                _ => {
                    let ceiling = units(
                        described["queue"][resource].as_str().expect("a ceiling"),
                        resource,
                    );
                    (ceiling, ceiling / 8)
                }
            };
            let mut jobs = Vec::new();
            let mut parts = BTreeMap::new();
            for namespace in described["namespaces"].as_array().expect("namespaces") {
                let name = namespace["name"].as_str().expect("a name").to_string();
                let part = match resource {
                    "pods" => namespace["pods"].as_i64().expect("a pods part"),
                    _ => units(namespace[resource].as_str().expect("a part"), resource),
                };
                let count = part / unit + 2;
                let plan = tenant
                    .namespaces
                    .iter()
                    .find(|candidate| candidate.name == name)
                    .expect("the namespace in the plan");
                let shape = Shape {
                    resource: "cpu",
                    devices: 0,
                    pods: 1,
                    annotations: Vec::new(),
                    scenario: "ceilings",
                };
                for idx in 0..count {
                    let mut object = job(
                        &template,
                        tenant,
                        &name,
                        &shape,
                        &format!("sim-ceiling-{resource}-{idx}"),
                    );
                    // Only this wave's resource is large; the others are a small share.
                    let (cpu, memory) = match resource {
                        "cpu" => (format!("{unit}m"), "64Mi".to_string()),
                        "memory" => ("100m".to_string(), format!("{unit}Mi")),
                        _ => ("100m".to_string(), "64Mi".to_string()),
                    };
                    let container = &mut object["spec"]["template"]["spec"]["containers"][0];
                    container["resources"] = json!({"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}});
                    object["spec"]["template"]["spec"]["serviceAccountName"] =
                        json!(plan.service_account);
                    if let Some(spec) = object["spec"]["template"]["spec"].as_object_mut() {
                        spec.remove("runtimeClassName");
                    }
                    jobs.push(object);
                }
                parts.insert(name, part);
            }
            if let Err(why) = create(cluster, &jobs) {
                failures.push(format!(
                    "{} in {}: the {resource} wave was refused:\n{why}",
                    tenant.name, cell.name
                ));
                continue;
            }
            let namespaces: BTreeSet<String> = parts.keys().cloned().collect();
            let found = settle(cluster, &namespaces, jobs.len());
            let admitted: i64 = namespaces
                .iter()
                .map(|namespace| i64::try_from(admitted_in(&found, namespace)).unwrap_or(0))
                .sum::<i64>()
                * unit;
            // Bound pods, once Kueue's admissions had time to start.
            std::thread::sleep(Duration::from_secs(3));
            let mut running = 0;
            for (namespace, part) in &parts {
                let here = i64::try_from(bound_pods(cluster, namespace).len()).unwrap_or(0) * unit;
                running += here;
                if here > *part {
                    failures.push(format!(
                        "{} in {}: {here} of {resource} run in {namespace}, above its part {part}",
                        tenant.name, cell.name
                    ));
                }
            }
            println!(
                "  {} {} {resource} ceiling {ceiling} (parts {parts:?}): asked {}, Kueue admitted {admitted}, running {running}",
                cell.name,
                tenant.name,
                i64::try_from(jobs.len()).unwrap_or(0) * unit
            );
            if admitted > ceiling || running > ceiling {
                failures.push(format!(
                    "{} in {}: its {resource} ceiling {ceiling} did not hold across its namespaces: Kueue admitted {admitted} on flavor tenant-ceiling, {running} ran",
                    tenant.name, cell.name
                ));
            }
            delete_jobs(cluster, &namespaces, "ceilings");
            waves += 1;
        }
    }
    waves
}

// What-if drains, replayed on the nodes ---------------------------------------------------------

/// The three drains `tenantc what-if` answers and the simulated cell replays: a rack of the
/// training pool, half the MIG pool (its `small` layout's nodes), and a whole cell.
const DRAINS: [(&str, &[&str]); 3] = [
    ("us-east-1a", &["--drain", "us-east-1a/h100-train@rack"]),
    ("us-east-1a", &["--drain", "us-east-1a/h100-infer/small=2"]),
    ("eu-west-4b", &["--lose-cell", "eu-west-4b"]),
];

/// `tenantc what-if <change> --format json` on the fleet at `root`, and its exit code.
fn what_if(root: &Path, change: &[&str]) -> (Value, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .arg("what-if")
        .args(change)
        .args(["--format", "json", "--root"])
        .arg(root)
        .stdin(Stdio::null())
        .output()
        .expect("tenantc what-if runs");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "what-if {change:?} printed no JSON ({error}):\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (document, output.status.code().unwrap_or(-1))
}

/// One reservation a drain asks for in full, with what-if's answer for it.
struct Asked {
    tenant: String,
    namespace: String,
    pool: String,
    resource: String,
    reserved: i64,
    /// What-if's reserved devices no longer backed.
    unbacked: i64,
    /// The names of its Jobs start with this.
    prefix: String,
    /// Devices per Job.
    per_job: i64,
}

/// The names of the nodes a what-if change takes out of the cell, from the nodes the simulated
/// cell made: the first `count` of a layout or a pool, the first `count` domains of a level, or
/// every GPU node of a lost cell.
fn drained_nodes(change: &Value, nodes: &CellNodes) -> Vec<String> {
    let count = change["count"].as_i64().unwrap_or(0);
    let Some(pool) = change["pool"].as_str() else {
        return nodes.pools.values().flatten().cloned().collect();
    };
    let names = nodes.pools.get(pool).cloned().unwrap_or_default();
    if let Some(level) = change["level"].as_str() {
        let short = level.rsplit('/').next().unwrap_or(level);
        let domains: BTreeSet<String> = (0..count)
            .map(|idx| format!("{pool}-{short}-{idx}"))
            .collect();
        return names
            .into_iter()
            .filter(|name| {
                nodes
                    .labels
                    .get(name)
                    .and_then(|labels| labels.get(level))
                    .is_some_and(|value| domains.contains(value))
            })
            .collect();
    }
    let prefix = match change["layout"].as_str() {
        Some(layout) => format!("{pool}-{layout}-"),
        None => format!("{pool}-"),
    };
    names
        .into_iter()
        .filter(|name| name.starts_with(&prefix))
        .take(usize::try_from(count).unwrap_or(0))
        .collect()
}

/// One drain: what-if's answer, then the same nodes taken out of the simulated cell while every
/// tenant of each changed pool resource asks for its whole reservation at once (in gangs where it
/// reserves gangs). The devices that do not run must add up to what-if's shortfall of the
/// resource, a tenant what-if says stays backed must run all of its reservation, and only
/// tenants what-if names may run less.
fn replay_drain(
    cluster: &Cluster,
    session: &Session,
    cell: &CellPlan,
    change: &[&str],
    failures: &mut Vec<String>,
) {
    let (answer, code) = what_if(&session.root, change);
    let changes = answer["changes"].as_array().cloned().unwrap_or_default();
    println!(
        "  what-if {}: exit {code}, {}",
        change.join(" "),
        if answer["backed"] == true {
            "every reservation still backed".to_string()
        } else {
            "reservations no longer backed".to_string()
        }
    );
    session.in_cell(cluster, cell, |nodes| {
        let drained: Vec<String> = changes
            .iter()
            .flat_map(|change| drained_nodes(change, nodes))
            .collect();
        let expected_nodes: i64 = changes
            .iter()
            .map(|change| change["nodes"].as_i64().unwrap_or(0))
            .sum();
        if i64::try_from(drained.len()).unwrap_or(-1) != expected_nodes {
            failures.push(format!(
                "what-if {}: it drains {expected_nodes} nodes, the simulated cell found {}",
                change.join(" "),
                drained.len()
            ));
        }
        let mut args = vec!["delete", "nodes", "--wait=true"];
        args.extend(drained.iter().map(String::as_str));
        let run = cluster.kubectl(&args, "");
        assert!(run.ok, "draining the nodes failed:\n{}", run.stderr);
        // Every reservation of the changed pools, asked for in full at once.
        let mut jobs = Vec::new();
        let mut asked: Vec<Asked> = Vec::new();
        for tenant_answer in answer["tenants"].as_array().into_iter().flatten() {
            let name = tenant_answer["tenant"].as_str().unwrap_or_default();
            let Some(tenant) = cell.tenants.iter().find(|tenant| tenant.name == name) else {
                continue;
            };
            for reservation in tenant_answer["reservations"].as_array().into_iter().flatten() {
                let pool = reservation["pool"].as_str().unwrap_or_default();
                let resource = reservation["resource"].as_str().unwrap_or_default();
                let reserved = reservation["reserved"].as_i64().unwrap_or(0);
                let unbacked = reservation["unbacked"].as_i64().unwrap_or(0);
                let Some(namespace) = namespace_for(tenant, resource) else {
                    continue;
                };
                let gang = tenant_answer["gangs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|gang| gang["pool"] == pool && gang["resource"] == resource);
                let prefix = format!("sim-drain-{pool}-{}", resource_tag(resource));
                let template = fixture_job(cell, tenant);
                let (shape, count, per_job) = match gang {
                    Some(gang) => {
                        let size = gang["gang"].as_i64().unwrap_or(1);
                        let per_node = nodes
                            .per_node
                            .get(&(pool.to_string(), resource.to_string()))
                            .copied()
                            .unwrap_or(1)
                            .min(size);
                        (
                            Shape {
                                resource,
                                devices: per_node,
                                pods: size / per_node,
                                annotations: vec![(
                                    "kueue.x-k8s.io/podset-required-topology",
                                    gang["within"].as_str().unwrap_or_default().to_string(),
                                )],
                                scenario: "drain",
                            },
                            reserved / size,
                            per_node,
                        )
                    }
                    None => (
                        Shape {
                            resource,
                            devices: 1,
                            pods: 1,
                            annotations: Vec::new(),
                            scenario: "drain",
                        },
                        reserved,
                        1,
                    ),
                };
                for idx in 0..count {
                    jobs.push(job(&template, tenant, namespace, &shape, &format!("{prefix}-{idx}")));
                }
                asked.push(Asked {
                    tenant: name.to_string(),
                    namespace: namespace.to_string(),
                    pool: pool.to_string(),
                    resource: resource.to_string(),
                    reserved,
                    unbacked,
                    prefix,
                    per_job,
                });
            }
        }
        if let Err(why) = create(cluster, &jobs) {
            failures.push(format!("what-if {}: the Jobs were refused:\n{why}", change.join(" ")));
            return;
        }
        let namespaces: BTreeSet<String> = cell
            .tenants
            .iter()
            .flat_map(|tenant| tenant.namespaces.iter().map(|ns| ns.name.clone()))
            .collect();
        settle(cluster, &namespaces, jobs.len());
        // Running: pods bound to a node, once the count held still for 5 s.
        let started = Instant::now();
        let mut last = usize::MAX;
        let mut stable_since = Instant::now();
        let bound = loop {
            let bound = wait_bound_labelled(cluster, "drain", 0);
            let count = bound.values().map(Vec::len).sum::<usize>();
            if count != last {
                last = count;
                stable_since = Instant::now();
            }
            if stable_since.elapsed() > SETTLED_FOR || started.elapsed() > SETTLE_TIMEOUT {
                break bound;
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        let mut short_by_resource: BTreeMap<(String, String), i64> = BTreeMap::new();
        for Asked {
            tenant,
            namespace,
            pool,
            resource,
            reserved,
            unbacked,
            prefix,
            per_job,
        } in &asked
        {
            let running = i64::try_from(
                bound
                    .get(namespace)
                    .into_iter()
                    .flatten()
                    .filter(|(job_name, _)| job_name.starts_with(&format!("{prefix}-")))
                    .count(),
            )
            .unwrap_or(0)
                * per_job;
            let short = reserved - running;
            *short_by_resource
                .entry((pool.clone(), resource.clone()))
                .or_default() += short;
            println!(
                "    {} {tenant} {pool} {resource}: what-if says {unbacked} of {reserved} unbacked; observed {running} of {reserved} running",
                cell.name
            );
            if short > 0 && *unbacked == 0 {
                failures.push(format!(
                    "what-if {}: {tenant} runs {running} of its {reserved} {resource} on {pool}, but what-if says its reservation stays backed",
                    change.join(" ")
                ));
            }
            if short > *unbacked {
                failures.push(format!(
                    "what-if {}: {tenant} lost {short} {resource} on {pool}, what-if says at most {unbacked}",
                    change.join(" ")
                ));
            }
        }
        for pool_answer in answer["pools"].as_array().into_iter().flatten() {
            let pool = pool_answer["pool"].as_str().unwrap_or_default();
            for resource_answer in pool_answer["resources"].as_array().into_iter().flatten() {
                let resource = resource_answer["resource"].as_str().unwrap_or_default();
                let shortfall = resource_answer["shortfall"].as_i64().unwrap_or(0);
                let observed = short_by_resource
                    .get(&(pool.to_string(), resource.to_string()))
                    .copied()
                    .unwrap_or(0);
                println!(
                    "    {} {pool} {resource}: what-if's shortfall {shortfall}, observed {observed}",
                    cell.name
                );
                if observed != shortfall {
                    failures.push(format!(
                        "what-if {}: {resource} on {pool} is short {observed} in the simulated cell, what-if says {shortfall}",
                        change.join(" ")
                    ));
                }
            }
        }
        // What a maintenance pipeline gates on: exit 0 exactly when nothing went unrun.
        let lost = short_by_resource.values().any(|short| *short > 0);
        if lost == (code == 0) {
            failures.push(format!(
                "what-if {}: exits {code}, but the simulated cell {} reserved devices",
                change.join(" "),
                if lost { "left unrun" } else { "ran all" }
            ));
        }
        delete_jobs(cluster, &namespaces, "drain");
    });
}

/// `tenantc what-if` agrees with the simulated cell on three drains: the same nodes taken out
/// of the cell leave exactly what-if's shortfall unrun, and only tenants it names lose.
pub(super) fn simulated_cell_loses_what_what_if_says_on_three_drains(cluster: &Cluster) {
    let session = Session::start(cluster, &support::fleet());
    let mut failures = Vec::new();
    for (cell_name, change) in DRAINS {
        let cell = session
            .fleet
            .plan
            .cells
            .iter()
            .find(|cell| cell.name == cell_name)
            .expect("the drain's cell");
        replay_drain(cluster, &session, cell, change, &mut failures);
    }
    session.finish(cluster);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
