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
use super::sim::{Shape, SimulatedCell, create_nodes, delete_nodes, describe_in, job, take_back};
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
        take_back(cluster, &self.fleet, cell);
        set_up_cell(cluster, &self.fleet, cell);
        let report: Value = serde_json::from_slice(
            self.tree
                .get(&format!("{}/reports/capacity.json", cell.name))
                .expect("the cell's capacity report"),
        )
        .expect("the capacity report");
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
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
                message,
            },
        );
    }
    found
}

/// Waits until `expected` Workloads exist in `namespaces` and which of them are admitted has
/// not changed for [`SETTLED_FOR`] (or [`SETTLE_TIMEOUT`] passed), and returns them.
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
        let complete = found.len() >= expected;
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

/// Deletes the Jobs of `scenario` in `namespaces` with their pods, and waits until they are gone.
fn delete_jobs(cluster: &Cluster, namespaces: &BTreeSet<String>, scenario: &str) {
    for namespace in namespaces {
        let _ = cluster.kubectl(
            &[
                "delete",
                "jobs",
                "-n",
                namespace,
                "-l",
                &format!("tenantc-sim={scenario}"),
                "--cascade=foreground",
                "--wait=true",
                "--timeout=90s",
            ],
            "",
        );
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
                if let Err(why) = create(cluster, &[job(cell, tenant, namespace, &oversized, &name)]) {
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
                    .map(|idx| job(cell, tenant, namespace, &shape, &format!("sim-gang-{pool}-{idx}")))
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
