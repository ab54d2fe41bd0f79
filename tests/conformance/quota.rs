//! Quota and priority entitlements, judged by the API server's quota admission (issue 7 items 4
//! and 5, checked the way issue 11 checks everything else).
//!
//! Consumes: the control plane of the runner in `tests/conformance.rs` (its kube-controller-manager
//! runs the `resourcequota-controller`, without which no quota limits anything: admission
//! enforces only the limits a quota's status lists), the fixture fleet compiled in-process (the output tree, and from
//! its plan each tenant's namespaces, workload priorities, ServiceAccounts, member group and
//! declared ceiling per cell), and the tenant ClusterQueues of the tree where it has them.
//! Produces: the quota checks of the runner's `CHECKS` and their self-test; each prints what it
//! probed, and the sums check prints every tenant's namespace quotas beside its ceilings.
//!
//! Invariants:
//! - Every probe pod is created by an impersonated member of its tenant (`kubectl --as ...
//!   --as-group <member group>`), with the workload's ServiceAccount and a Pod Security
//!   `restricted` spec, so a refusal can only come from a quota; a refusal counts only when its
//!   message names the expected quota (`exceeded quota: <name>,`).
//! - Probes are server-side dry-runs (quota admission judges them exactly as real creates but
//!   charges no usage, which `quota_admission_judges_server_side_dry_run_like_real_creates`
//!   proves); that check's one real pod is deleted again, also when it fails.
//! - What a check expects comes from the declarations (the plan) and the emitted objects, never
//!   from what the cluster holds: the cluster is only the judge, so tampering with it in the
//!   self-test is detected, and a guard re-applies the emitted object afterwards, also on failure.
//! - Quantities are summed exactly (in nano units, the finest precision the API keeps) and
//!   compared as values and as the API server's canonical strings.
//! - Each cell is applied alone before it is judged: the fixture cells share namespace names, and
//!   one API server stands in for each cell in turn.

use super::*;

use std::time::Duration;

use tenantc::model::TenantRole;
use tenantc::plan::{CellPlan, NamespacePlan, Plan, TenantPlan};

/// The ResourceQuota of a namespace's part of its tenant's ceiling and its GPU entitlements.
const CEILING_QUOTA: &str = "tenant-quota";
/// The ResourceQuota that denies the priority classes a namespace is not entitled to.
const PRIORITY_QUOTA: &str = "tenant-priorities";
/// Priority classes every API server creates; no tenant namespace is entitled to them.
const SYSTEM_PRIORITY_CLASSES: &[&str] = &["system-cluster-critical", "system-node-critical"];
/// A priority class that exists on the cluster but that no cell declares, as a platform
/// component or an operator could create after tenantc's last build.
const UNDECLARED_PRIORITY_CLASS: &str = "conformance-undeclared";
/// A namespace of the harness's own, for the API server's canonical quantities.
const SCRATCH_NAMESPACE: &str = "tenantc-conformance-scratch";
/// The digest of every probe pod's image, under its tenant's first registry; no node runs it,
/// admission is all that happens.
const PROBE_DIGEST: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";
/// How long the resourcequota-controller may take to compute a quota's status.
const QUOTA_STATUS_TIMEOUT: Duration = Duration::from_secs(60);

/// Entitlement rules that today's output breaks, each with why; the priorities check fails when
/// the observed gaps differ from this list in any way, also when one is closed, so the list
/// shrinks with the fix.
const EXPECTED_ENTITLEMENT_GAPS: &[(&str, &str)] = &[];

// The fixture fleet -------------------------------------------------------------------------

/// The fixture fleet: its emitted objects, and its plan for what the declarations entitle.
pub(super) struct Fleet {
    objects: Vec<Object>,
    pub(super) plan: Plan,
}

pub(super) fn fixture_fleet() -> Fleet {
    fleet_at(&support::fleet())
}

/// The fleet whose declarations are at `root`.
pub(super) fn fleet_at(root: &Path) -> Fleet {
    let compilation = support::compile_root(root);
    assert!(
        !compilation.has_errors(),
        "the fleet at {} must compile without errors",
        root.display()
    );
    let tree = compilation.output.expect("an output tree");
    Fleet {
        objects: objects_of(&tree),
        plan: compilation.plan.expect("a plan"),
    }
}

impl Fleet {
    /// The objects of one cell: everything under `<cell>/` in the tree.
    pub(super) fn cell_objects(&self, cell: &str) -> Vec<Object> {
        let prefix = format!("{cell}/");
        self.objects
            .iter()
            .filter(|object| object.path.starts_with(&prefix))
            .cloned()
            .collect()
    }
}

/// The emitted object of `kind` named `name` in `namespace`.
fn emitted<'a>(
    objects: &'a [Object],
    kind: &str,
    namespace: &str,
    name: &str,
) -> Option<&'a Object> {
    objects.iter().find(|object| {
        object.kind == kind && object.name == name && object.namespace.as_deref() == Some(namespace)
    })
}

/// The group whose members a check impersonates: the tenant's `member` group.
pub(super) fn member_group(tenant: &TenantPlan) -> String {
    tenant
        .groups
        .get(&TenantRole::Member)
        .cloned()
        .unwrap_or_else(|| panic!("tenant {} has no member group", tenant.name))
}

/// Applies one cell of the fixture fleet and waits until quota admission can judge pods in its
/// namespaces: every ResourceQuota of the cell has its status (hard and used) computed.
pub(super) fn set_up_cell(cluster: &Cluster, fleet: &Fleet, cell: &CellPlan) -> Vec<Object> {
    let objects = fleet.cell_objects(&cell.name);
    assert!(!objects.is_empty(), "cell {} emits nothing", cell.name);
    let started = Instant::now();
    let applied = apply_tree(cluster, &objects, false);
    assert!(
        applied.refusals.is_empty(),
        "the API server refused objects of cell {}:\n{}",
        cell.name,
        format_refusals(&applied.refusals)
    );
    let quotas: Vec<(String, String)> = objects
        .iter()
        .filter(|object| object.kind == "ResourceQuota")
        .map(|object| {
            (
                object.namespace.clone().unwrap_or_default(),
                object.name.clone(),
            )
        })
        .collect();
    let waited = wait_for_quota_status(cluster, &quotas).unwrap_or_else(|why| panic!("{why}"));
    println!(
        "  cell {}: {} objects applied in {:.1} s; the status of its {} ResourceQuotas was computed {:.1} s later",
        cell.name,
        objects.len(),
        started.elapsed().as_secs_f64() - waited,
        quotas.len(),
        waited
    );
    objects
}

// Quotas as the API server holds them ---------------------------------------------------------

/// Every ResourceQuota the API server holds, by (namespace, name).
fn held_quotas(cluster: &Cluster) -> BTreeMap<(String, String), Value> {
    let run = cluster.kubectl(&["get", "resourcequotas", "-A", "-o", "json"], "");
    assert!(run.ok, "kubectl get resourcequotas failed:\n{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).expect("a ResourceQuota list");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|quota| {
            let field = |name: &str| {
                quota["metadata"][name]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            };
            ((field("namespace"), field("name")), quota.clone())
        })
        .collect()
}

/// Whether quota admission can judge against this quota: its status holds exactly its spec's
/// limits (admission enforces `status.hard`, not `spec.hard`) and a usage for each of them.
fn status_is_current(quota: &Value) -> bool {
    let spec = &quota["spec"]["hard"];
    let hard = &quota["status"]["hard"];
    let used = &quota["status"]["used"];
    spec.is_object()
        && spec == hard
        && hard
            .as_object()
            .is_some_and(|limits| limits.keys().all(|key| used.get(key).is_some()))
}

/// Waits until every quota named has a current status; returns the seconds it took, or why not.
fn wait_for_quota_status(cluster: &Cluster, quotas: &[(String, String)]) -> Result<f64, String> {
    let started = Instant::now();
    loop {
        let held = held_quotas(cluster);
        let waiting: Vec<String> = quotas
            .iter()
            .filter(|id| !held.get(*id).is_some_and(status_is_current))
            .map(|(namespace, name)| format!("{namespace}/{name}"))
            .collect();
        if waiting.is_empty() {
            return Ok(started.elapsed().as_secs_f64());
        }
        if started.elapsed() > QUOTA_STATUS_TIMEOUT {
            return Err(format!(
                "after {} s these ResourceQuotas still have no current status (hard and used): {}; \
                 until the resourcequota-controller computes it, quota admission judges pods by \
                 the old status (none at all for a new quota, which then limits nothing): does \
                 tests/conformance/harness.sh start kube-controller-manager with it?",
                QUOTA_STATUS_TIMEOUT.as_secs(),
                waiting.join(", ")
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A quantity of a quota's map, or `None` when the map does not list `key`.
fn quantity_at(map: &Value, key: &str) -> Option<String> {
    match map.get(key)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

// Probes ------------------------------------------------------------------------------------

/// What the API server must answer to a probe.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expect {
    Admitted,
    /// Refused by the quota named, with a message that contains `mentions`.
    Refused {
        quota: &'static str,
        mentions: String,
    },
}

/// A pod a tenant member tries to create.
#[derive(Clone, Debug)]
struct Probe {
    /// The member group to impersonate.
    group: String,
    namespace: String,
    service_account: String,
    /// What the probe tries, in words.
    what: String,
    priority: Option<String>,
    /// An extended resource and how many devices of it the pod requests (and limits).
    gpu: Option<(String, i64)>,
    expect: Expect,
    /// The tenant's admission params, so that the pod passes the admission floor
    /// (`lower/admission.rs`) and only quota admission decides.
    floor: BTreeMap<String, String>,
}

/// What the API server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    Admitted,
    /// Refused, with the reason the API server gave.
    Refused(String),
}

impl Probe {
    /// A probe in `namespace` of `tenant`, by a member, with nothing requested yet.
    fn new(
        cell: &CellPlan,
        tenant: &TenantPlan,
        namespace: &NamespacePlan,
        what: String,
        expect: Expect,
    ) -> Probe {
        Probe {
            floor: tenantc::plan::admission::params(tenant, cell),
            group: member_group(tenant),
            namespace: namespace.name.clone(),
            service_account: namespace.service_account.clone(),
            what,
            priority: None,
            gpu: None,
            expect,
        }
    }

    /// The first item of a list param of the admission floor.
    fn first(&self, key: &str) -> String {
        let list = self.floor.get(key).map_or("", String::as_str);
        list.split(',').next().unwrap_or_default().to_string()
    }

    /// The pod, named `name`: Pod Security `restricted` in every field it checks, and every
    /// validation of the tenant admission floor.
    fn pod(&self, name: &str) -> Value {
        let mut container = json!({
            "name": "probe",
            "image": format!("{}/probe@{PROBE_DIGEST}", self.first("registries")),
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]},
                "runAsNonRoot": true,
            },
        });
        if let Some((resource, count)) = &self.gpu {
            let mut amounts = serde_json::Map::new();
            amounts.insert(resource.clone(), json!(count.to_string()));
            container["resources"] = json!({"requests": amounts, "limits": amounts});
        }
        let mut spec = json!({
            "serviceAccountName": self.service_account,
            "automountServiceAccountToken": false,
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": 65532,
                "runAsGroup": 65532,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
        });
        if let Some(priority) = &self.priority {
            spec["priorityClassName"] = json!(priority);
        }
        let mut labels = json!({
            "app.kubernetes.io/managed-by": "tenantc-conformance",
            "tenant.platform/tenant": self.first("tenant"),
            "tenant.platform/cell": self.first("cell"),
        });
        if self.gpu.is_some() {
            spec["runtimeClassName"] = json!(self.first("runtimeClasses"));
            labels["kueue.x-k8s.io/queue-name"] = json!(self.first("queues"));
            labels["tenant.platform/sku"] = json!(self.first("gpuModels"));
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": labels,
            },
            "spec": spec,
        })
    }
}

/// The name of the `idx`th probe pod of a submission.
fn probe_name(idx: usize) -> String {
    format!("quota-probe-{idx:03}")
}

/// kubectl's impersonation flags for a member of `group`.
pub(super) fn as_member(group: &str) -> Vec<String> {
    vec![
        "--as".to_string(),
        format!("conformance:member-of:{group}"),
        "--as-group".to_string(),
        group.to_string(),
        "--as-group".to_string(),
        "system:authenticated".to_string(),
    ]
}

/// Creates every probe's pod as a member of its tenant, by the impersonating user: one kubectl
/// run per member group (run at once), as server-side dry-runs unless `dry_run` is false.
/// Returns the answers in the order of `probes`.
fn submit(cluster: &Cluster, probes: &[Probe], dry_run: bool) -> Vec<Answer> {
    let mut by_group: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (idx, probe) in probes.iter().enumerate() {
        by_group.entry(&probe.group).or_default().push(idx);
    }
    let runs: Vec<(Vec<usize>, Run)> = std::thread::scope(|scope| {
        let handles: Vec<_> = by_group
            .iter()
            .map(|(group, indexes)| {
                let items: Vec<Value> = indexes
                    .iter()
                    .map(|idx| probes[*idx].pod(&probe_name(*idx)))
                    .collect();
                let list = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
                let mut args: Vec<String> = vec!["create".into(), "-o".into(), "name".into()];
                if dry_run {
                    args.push("--dry-run=server".into());
                }
                args.extend(as_member(group));
                args.extend(["-f".to_string(), "-".to_string()]);
                scope.spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let run = cluster.kubectl_with(&cluster.user_kubeconfig, &args, &list);
                    (indexes.clone(), run)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a probe thread"))
            .collect()
    });
    let mut answers: Vec<Option<Answer>> = vec![None; probes.len()];
    for (indexes, run) in runs {
        assert!(
            !run.stderr.contains("PodSecurity"),
            "a probe pod does not pass Pod Security `restricted`, so the quota is not the only \
             possible reason of a refusal:\n{}",
            run.stderr
        );
        for idx in indexes {
            let name = probe_name(idx);
            let admitted = run
                .stdout
                .lines()
                .any(|line| line.trim() == format!("pod/{name}"));
            let refusal = run
                .stderr
                .lines()
                .find(|line| line.contains(&format!("pods \"{name}\"")))
                .map(|line| {
                    line.split_once(" is forbidden: ")
                        .map_or(line, |(_, reason)| reason)
                        .trim()
                        .to_string()
                });
            answers[idx] = match (admitted, refusal) {
                (true, None) => Some(Answer::Admitted),
                (false, Some(reason)) => Some(Answer::Refused(reason)),
                _ => panic!(
                    "no single answer for probe {name} ({} in {}):\nstdout:\n{}\nstderr:\n{}",
                    probes[idx].what, probes[idx].namespace, run.stdout, run.stderr
                ),
            };
        }
    }
    answers
        .into_iter()
        .map(|answer| answer.expect("an answer"))
        .collect()
}

/// The probes the API server answered otherwise than expected, in words.
fn verdicts(probes: &[Probe], answers: &[Answer]) -> Vec<String> {
    probes
        .iter()
        .zip(answers)
        .filter_map(|(probe, answer)| {
            let at = format!("{} in {}", probe.what, probe.namespace);
            match (&probe.expect, answer) {
                (Expect::Admitted, Answer::Admitted) => None,
                (Expect::Admitted, Answer::Refused(reason)) => {
                    Some(format!("{at}: refused, but it is entitled: {reason}"))
                }
                (Expect::Refused { quota, .. }, Answer::Admitted) => {
                    Some(format!("{at}: admitted; ResourceQuota `{quota}` must refuse it"))
                }
                (Expect::Refused { quota, mentions }, Answer::Refused(reason)) => {
                    let by_quota = reason.contains(&format!("exceeded quota: {quota},"));
                    (!by_quota || !reason.contains(mentions.as_str())).then(|| {
                        format!(
                            "{at}: refused, but not by ResourceQuota `{quota}` with `{mentions}`: {reason}"
                        )
                    })
                }
            }
        })
        .collect()
}

/// Submits the probes as dry-runs and returns the wrong answers; prints a summary line.
fn judge(cluster: &Cluster, what: &str, probes: &[Probe]) -> Vec<String> {
    let answers = submit(cluster, probes, true);
    let failures = verdicts(probes, &answers);
    let refused = answers
        .iter()
        .filter(|answer| matches!(answer, Answer::Refused(_)))
        .count();
    println!(
        "    {what}: {} probes, {} admitted, {refused} refused, {} wrong",
        probes.len(),
        probes.len() - refused,
        failures.len()
    );
    failures
}

// Priorities --------------------------------------------------------------------------------

/// The priority classes of a cell: those it emits and the system ones.
fn cell_priority_classes(objects: &[Object]) -> BTreeSet<String> {
    objects
        .iter()
        .filter(|object| object.kind == "PriorityClass")
        .map(|object| object.name.clone())
        .chain(
            SYSTEM_PRIORITY_CLASSES
                .iter()
                .map(|class| class.to_string()),
        )
        .collect()
}

/// Per namespace of the cell: its own class is admitted, every other class of the cell and each
/// system class is refused by `tenant-priorities`, and a pod without a class is admitted.
fn priority_probes(cell: &CellPlan, objects: &[Object], only: Option<&str>) -> Vec<Probe> {
    let classes = cell_priority_classes(objects);
    let mut probes = Vec::new();
    for tenant in &cell.tenants {
        for namespace in &tenant.namespaces {
            if only.is_some_and(|only| only != namespace.name) {
                continue;
            }
            if let Some(own) = &namespace.priority {
                assert!(
                    classes.contains(own),
                    "{}: its workload's priority `{own}` is not a class of cell {}",
                    namespace.name,
                    cell.name
                );
            }
            for class in &classes {
                let own = namespace.priority.as_ref() == Some(class);
                let mut probe = if own {
                    Probe::new(
                        cell,
                        tenant,
                        namespace,
                        format!("its own priority `{class}`"),
                        Expect::Admitted,
                    )
                } else {
                    Probe::new(
                        cell,
                        tenant,
                        namespace,
                        format!("priority `{class}`"),
                        Expect::Refused {
                            quota: PRIORITY_QUOTA,
                            mentions: "requested: pods=1".to_string(),
                        },
                    )
                };
                probe.priority = Some(class.clone());
                probes.push(probe);
            }
            probes.push(Probe::new(
                cell,
                tenant,
                namespace,
                "no priority class".to_string(),
                Expect::Admitted,
            ));
        }
    }
    probes
}

/// Creates the undeclared priority class (idempotently) and probes it in every tenant namespace
/// of the cell; returns the namespaces that admit it.
fn namespaces_admitting_an_undeclared_class(cluster: &Cluster, cell: &CellPlan) -> Vec<String> {
    let class = format!(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {UNDECLARED_PRIORITY_CLASS}\n\
         value: 1\npreemptionPolicy: Never\ndescription: \"A class no cell declares (tenantc conformance tests)\"\n"
    );
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "conformance-scratch",
            "-f",
            "-",
        ],
        &class,
    );
    assert!(
        run.ok,
        "creating PriorityClass {UNDECLARED_PRIORITY_CLASS} failed:\n{}",
        run.stderr
    );
    let mut probes = Vec::new();
    for tenant in &cell.tenants {
        for namespace in &tenant.namespaces {
            let mut probe = Probe::new(
                cell,
                tenant,
                namespace,
                format!("undeclared priority `{UNDECLARED_PRIORITY_CLASS}`"),
                Expect::Refused {
                    quota: PRIORITY_QUOTA,
                    mentions: "requested: pods=1".to_string(),
                },
            );
            probe.priority = Some(UNDECLARED_PRIORITY_CLASS.to_string());
            probes.push(probe);
        }
    }
    let answers = submit(cluster, &probes, true);
    probes
        .iter()
        .zip(&answers)
        .filter(|(_, answer)| **answer == Answer::Admitted)
        .map(|(probe, _)| probe.namespace.clone())
        .collect()
}

pub(super) fn tenant_namespaces_may_use_only_their_own_priority_class(cluster: &Cluster) {
    install_crds(cluster);
    let fleet = fixture_fleet();
    let mut failures = Vec::new();
    let mut gaps: BTreeSet<String> = BTreeSet::new();
    for cell in &fleet.plan.cells {
        let objects = set_up_cell(cluster, &fleet, cell);
        let probes = priority_probes(cell, &objects, None);
        failures.extend(judge(cluster, &format!("cell {}", cell.name), &probes));
        let open = namespaces_admitting_an_undeclared_class(cluster, cell);
        if !open.is_empty() {
            println!(
                "    cell {}: priority `{UNDECLARED_PRIORITY_CLASS}`, which no cell declares, is admitted in {}",
                cell.name,
                open.join(", ")
            );
            gaps.insert("undeclared-priority-class".to_string());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for (gap, why) in EXPECTED_ENTITLEMENT_GAPS {
        println!("  known gap: {gap}: {why}");
    }
    let expected: BTreeSet<String> = EXPECTED_ENTITLEMENT_GAPS
        .iter()
        .map(|(gap, _)| gap.to_string())
        .collect();
    assert_eq!(
        gaps, expected,
        "the entitlement gaps changed (observed, then EXPECTED_ENTITLEMENT_GAPS): remove a closed \
         gap from the list, or fix a new one"
    );
}

// GPU requests ------------------------------------------------------------------------------

/// Per namespace and GPU resource of the cell: a pod requesting one device more than the
/// namespace's emitted `requests.<resource>` leaves is refused by `tenant-quota`, and a pod
/// requesting all that it leaves (when that is at least one) is admitted. A resource of the
/// cell that the emitted quota does not limit is a failure of its own.
fn gpu_probes(
    cell: &CellPlan,
    objects: &[Object],
    held: &BTreeMap<(String, String), Value>,
    only: Option<&str>,
) -> (Vec<Probe>, Vec<String>) {
    let mut probes = Vec::new();
    let mut failures = Vec::new();
    for tenant in &cell.tenants {
        for namespace in &tenant.namespaces {
            if only.is_some_and(|only| only != namespace.name) {
                continue;
            }
            let Some(quota) = emitted(objects, "ResourceQuota", &namespace.name, CEILING_QUOTA)
            else {
                failures.push(format!(
                    "{}: no ResourceQuota `{CEILING_QUOTA}` is emitted",
                    namespace.name
                ));
                continue;
            };
            let held_quota = held.get(&(namespace.name.clone(), CEILING_QUOTA.to_string()));
            for resource in &cell.gpu_resources {
                let key = format!("requests.{resource}");
                let Some(limit) = quantity_at(&quota.json["spec"]["hard"], &key) else {
                    failures.push(format!(
                        "{}: `{CEILING_QUOTA}` does not limit `{key}`, so its pods may request any number of {resource}",
                        namespace.name
                    ));
                    continue;
                };
                let limit = whole_number(&limit)
                    .unwrap_or_else(|why| panic!("{}: `{key}: {limit}`: {why}", namespace.name));
                let used = held_quota
                    .and_then(|quota| quantity_at(&quota["status"]["used"], &key))
                    .map_or(0, |used| whole_number(&used).unwrap_or(0));
                let held_limit = held_quota
                    .and_then(|quota| quantity_at(&quota["spec"]["hard"], &key))
                    .unwrap_or_else(|| limit.to_string());
                let room = limit - used;
                let mut over = Probe::new(
                    cell,
                    tenant,
                    namespace,
                    format!("{} {resource} (limit {limit}, used {used})", room + 1),
                    Expect::Refused {
                        quota: CEILING_QUOTA,
                        mentions: format!("limited: {key}={held_limit}"),
                    },
                );
                over.gpu = Some((resource.clone(), room + 1));
                probes.push(over);
                if room > 0 {
                    let mut within = Probe::new(
                        cell,
                        tenant,
                        namespace,
                        format!("{room} {resource} (limit {limit}, used {used})"),
                        Expect::Admitted,
                    );
                    within.gpu = Some((resource.clone(), room));
                    probes.push(within);
                }
            }
        }
    }
    (probes, failures)
}

pub(super) fn gpu_requests_beyond_the_namespace_quota_are_refused(cluster: &Cluster) {
    install_crds(cluster);
    let fleet = fixture_fleet();
    let mut failures = Vec::new();
    for cell in &fleet.plan.cells {
        let objects = set_up_cell(cluster, &fleet, cell);
        let held = held_quotas(cluster);
        let (probes, unlimited) = gpu_probes(cell, &objects, &held, None);
        failures.extend(unlimited);
        failures.extend(judge(
            cluster,
            &format!("cell {} ({})", cell.name, cell.gpu_resources.join(", ")),
            &probes,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// Dry-run against real creates ------------------------------------------------------------

/// Deletes an object a check created for real when dropped (a probe pod, whose usage would
/// otherwise stay charged; a self-test ClusterQueue), also when the check fails.
struct Created<'a> {
    cluster: &'a Cluster,
    /// The resource, as kubectl names it (`pod`, `clusterqueues.kueue.x-k8s.io`).
    resource: &'static str,
    /// Empty for a cluster-scoped object.
    namespace: String,
    name: String,
}

impl Created<'_> {
    fn delete(&self) -> Run {
        let mut args = vec![
            "delete",
            self.resource,
            &self.name,
            "--ignore-not-found",
            "--wait=true",
        ];
        if !self.namespace.is_empty() {
            args.extend(["-n", &self.namespace]);
        }
        self.cluster.kubectl(&args, "")
    }
}

impl Drop for Created<'_> {
    fn drop(&mut self) {
        let run = self.delete();
        if !run.ok {
            eprintln!(
                "  could not delete {} {}/{}: {}",
                self.resource, self.namespace, self.name, run.stderr
            );
        }
    }
}

/// A namespace of the fixture fleet with a GPU limit of at least one device and an own
/// priority class (every namespace has classes it is denied: the system ones).
fn namespace_with_gpu_and_priority(
    fleet: &Fleet,
) -> (&CellPlan, &TenantPlan, &NamespacePlan, String) {
    for cell in &fleet.plan.cells {
        let objects = fleet.cell_objects(&cell.name);
        for tenant in &cell.tenants {
            for namespace in tenant.namespaces.iter().filter(|ns| ns.priority.is_some()) {
                let Some(quota) =
                    emitted(&objects, "ResourceQuota", &namespace.name, CEILING_QUOTA)
                else {
                    continue;
                };
                let resource = cell.gpu_resources.iter().find(|resource| {
                    quantity_at(&quota.json["spec"]["hard"], &format!("requests.{resource}"))
                        .and_then(|limit| whole_number(&limit).ok())
                        .is_some_and(|limit| limit > 0)
                });
                if let Some(resource) = resource {
                    return (cell, tenant, namespace, resource.clone());
                }
            }
        }
    }
    panic!("no namespace of the fixture fleet has a GPU limit and a priority class");
}

/// The usage of `key` in the quota `name` of `namespace`, as the API server holds it.
fn used_of(cluster: &Cluster, namespace: &str, name: &str, key: &str) -> Option<String> {
    held_quotas(cluster)
        .get(&(namespace.to_string(), name.to_string()))
        .and_then(|quota| quantity_at(&quota["status"]["used"], key))
}

pub(super) fn quota_admission_judges_server_side_dry_run_like_real_creates(cluster: &Cluster) {
    install_crds(cluster);
    let fleet = fixture_fleet();
    let (cell, tenant, namespace, resource) = namespace_with_gpu_and_priority(&fleet);
    let objects = set_up_cell(cluster, &fleet, cell);
    let key = format!("requests.{resource}");
    let held = held_quotas(cluster);

    // A refused pod: a denied class. Dry-run and real create get the same refusal.
    let denied = cell_priority_classes(&objects)
        .into_iter()
        .find(|class| namespace.priority.as_ref() != Some(class))
        .expect("a denied class");
    let mut refused = Probe::new(
        cell,
        tenant,
        namespace,
        format!("priority `{denied}`"),
        Expect::Refused {
            quota: PRIORITY_QUOTA,
            mentions: "requested: pods=1".to_string(),
        },
    );
    refused.priority = Some(denied);
    let pod = Created {
        cluster,
        resource: "pod",
        namespace: namespace.name.clone(),
        name: probe_name(0),
    };
    assert!(pod.delete().ok, "could not clear an earlier probe pod");
    let probes = [refused];
    let dry = submit(cluster, &probes, true);
    let real = submit(cluster, &probes, false);
    println!(
        "  {} in {}: dry-run {:?}; real create {:?}",
        probes[0].what, namespace.name, dry[0], real[0]
    );
    let mut failures = verdicts(&probes, &dry);
    failures.extend(verdicts(&probes, &real));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        dry, real,
        "dry-run and real create were answered differently"
    );

    // An admitted pod that takes all the namespace's room of one GPU resource: admitted either
    // way, charged to the quota's usage only when real.
    let (probes, _) = gpu_probes(cell, &objects, &held, Some(&namespace.name));
    let within = probes
        .into_iter()
        .find(|probe| {
            probe.expect == Expect::Admitted
                && probe.gpu.as_ref().is_some_and(|(r, _)| *r == resource)
        })
        .expect("a probe within the GPU limit");
    let count = within.gpu.as_ref().map_or(0, |(_, count)| *count);
    let before = used_of(cluster, &namespace.name, CEILING_QUOTA, &key).unwrap_or_default();
    let probes = [within];
    let dry = submit(cluster, &probes, true);
    let after_dry = used_of(cluster, &namespace.name, CEILING_QUOTA, &key).unwrap_or_default();
    let real = submit(cluster, &probes, false);
    let after_real = used_of(cluster, &namespace.name, CEILING_QUOTA, &key).unwrap_or_default();
    println!(
        "  {} in {}: dry-run {:?}, `{key}` used {before} -> {after_dry}; real create {:?}, used -> {after_real}",
        probes[0].what, namespace.name, dry[0], real[0]
    );
    assert_eq!(
        dry[0],
        Answer::Admitted,
        "the dry-run within the limit was refused"
    );
    assert_eq!(
        real[0],
        Answer::Admitted,
        "the real create within the limit was refused"
    );
    assert_eq!(
        after_dry, before,
        "a dry-run was charged to the quota's usage"
    );
    assert_eq!(
        whole_number(&after_real).ok(),
        whole_number(&before).ok().map(|used| used + count),
        "the real create was not charged to the quota's usage"
    );
    // With the room used up, one more device is refused also as a dry-run, naming the usage.
    let mut one_more = Probe::new(
        cell,
        tenant,
        namespace,
        format!("1 {resource} more"),
        Expect::Refused {
            quota: CEILING_QUOTA,
            mentions: format!("used: {key}={after_real}"),
        },
    );
    one_more.gpu = Some((resource.clone(), 1));
    let probes = [one_more];
    let answers = submit(cluster, &probes, true);
    println!("  then {} as a dry-run: {:?}", probes[0].what, answers[0]);
    let failures = verdicts(&probes, &answers);
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Deleting the pod gives the usage back: the resourcequota-controller recounts the namespace.
    let started = Instant::now();
    let run = pod.delete();
    assert!(run.ok, "deleting the probe pod failed:\n{}", run.stderr);
    loop {
        let used = used_of(cluster, &namespace.name, CEILING_QUOTA, &key).unwrap_or_default();
        if used == before {
            break;
        }
        assert!(
            started.elapsed() < QUOTA_STATUS_TIMEOUT,
            "the usage of `{key}` is still {used} after the pod was deleted: is the resourcequota-controller running?"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "  the pod deleted, the resourcequota-controller gave the usage back ({before}) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

// Ceilings ----------------------------------------------------------------------------------

/// The three quantities of a tenant ceiling, in the order they are compared.
const CEILING_RESOURCES: [&str; 3] = ["cpu", "memory", "pods"];

/// The key of a ceiling resource in a ResourceQuota: `requests.cpu` (or `cpu`), and `pods`.
fn quota_value(hard: &Value, resource: &str) -> Option<String> {
    match resource {
        "pods" => quantity_at(hard, "pods"),
        _ => quantity_at(hard, &format!("requests.{resource}"))
            .or_else(|| quantity_at(hard, resource)),
    }
}

/// The nominal quotas of a ClusterQueue's ceiling resources, by resource, summed over its
/// flavors: the `tenant-ceiling` flavor alone, or, where a topology pool makes the queue count
/// them per pool, the ceiling flavor plus each pool flavor's part (none of them borrowed or
/// lent, which `queue_ceiling_is_never_shared` checks). A sum over several flavors is written
/// in nano units.
fn ceiling_nominals(queue: &Value) -> BTreeMap<String, String> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for group in queue["spec"]["resourceGroups"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for flavor in group["flavors"].as_array().into_iter().flatten() {
            for resource in flavor["resources"].as_array().into_iter().flatten() {
                if let (Some(name), Some(nominal)) = (
                    resource["name"].as_str(),
                    quantity_at(resource, "nominalQuota"),
                ) && CEILING_RESOURCES.contains(&name)
                {
                    found.entry(name.to_string()).or_default().push(nominal);
                }
            }
        }
    }
    found
        .into_iter()
        .map(|(name, values)| {
            if let [only] = values.as_slice() {
                return (name, only.clone());
            }
            let nano: i128 = values
                .iter()
                .map(|value| {
                    parse_quantity(value)
                        .unwrap_or_else(|why| panic!("{name} `{value}`: {why}"))
                        .0
                })
                .sum();
            (name, format!("{nano}n"))
        })
        .collect()
}

/// The ceiling resources of a ClusterQueue that some flavor borrows or lends: a ceiling is
/// the tenant's own on every flavor. A queue outside any cohort shares nothing.
fn queue_ceiling_is_never_shared(queue: &Value) -> Vec<String> {
    let mut shared = Vec::new();
    if queue["spec"]["cohortName"].as_str().is_none() {
        return shared;
    }
    for group in queue["spec"]["resourceGroups"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for flavor in group["flavors"].as_array().into_iter().flatten() {
            for resource in flavor["resources"].as_array().into_iter().flatten() {
                let Some(name) = resource["name"].as_str() else {
                    continue;
                };
                if !CEILING_RESOURCES.contains(&name) {
                    continue;
                }
                for limit in ["borrowingLimit", "lendingLimit"] {
                    let zero = quantity_at(resource, limit)
                        .and_then(|value| parse_quantity(&value).ok())
                        .is_some_and(|(nano, _)| nano == 0);
                    if !zero {
                        shared.push(format!(
                            "flavor {} {name} {limit} is not 0",
                            flavor["name"].as_str().unwrap_or("?")
                        ));
                    }
                }
            }
        }
    }
    shared
}

/// One comparison of a tenant's namespace quotas with one of its ceilings.
struct Comparison {
    /// Tenant and cell, for messages.
    at: String,
    /// The ceiling compared with, in words (`the declared ceiling`, `ClusterQueue x`).
    against: String,
    /// Per ceiling resource: the namespace values as held, the exact sum in nano units, and the
    /// ceiling value; `None` where either side lacks it (a failure named in `missing`).
    values: Vec<(Vec<String>, i128, String)>,
    missing: Vec<String>,
}

/// The sums of the tenants' namespace quotas, read back from the API server, against each
/// tenant's declared ceiling and, where the tree has it, its ClusterQueue's `tenant-ceiling`
/// flavor; returns the differences and prints the sums.
fn ceiling_differences(cluster: &Cluster, cell: &CellPlan, objects: &[Object]) -> Vec<String> {
    let held = held_quotas(cluster);
    let mut failures = Vec::new();
    let mut comparisons = Vec::new();
    let queues: Vec<&Object> = objects
        .iter()
        .filter(|object| object.kind == "ClusterQueue")
        .collect();
    if queues.is_empty() {
        println!(
            "    NOTE: cell {} emits no ClusterQueue yet: the namespace quotas are compared with the declared ceilings only",
            cell.name
        );
    }
    for tenant in &cell.tenants {
        let at = format!("tenant {} in cell {}", tenant.name, cell.name);
        // The tenant's namespaces as emitted agree with the plan's.
        let emitted_namespaces: BTreeSet<String> = objects
            .iter()
            .filter(|object| {
                object.kind == "Namespace"
                    && object.json["metadata"]["labels"]["tenant.platform/tenant"]
                        == tenant.name.as_str()
            })
            .map(|object| object.name.clone())
            .collect();
        let planned: BTreeSet<String> =
            tenant.namespaces.iter().map(|ns| ns.name.clone()).collect();
        if emitted_namespaces != planned {
            failures.push(format!(
                "{at}: the emitted namespaces {emitted_namespaces:?} differ from the declared workloads' {planned:?}"
            ));
        }
        let mut parts: Vec<[Option<String>; 3]> = Vec::new();
        for namespace in &planned {
            let Some(quota) = held.get(&(namespace.clone(), CEILING_QUOTA.to_string())) else {
                failures.push(format!(
                    "{at}: the API server holds no `{CEILING_QUOTA}` in {namespace}"
                ));
                continue;
            };
            parts.push(
                CEILING_RESOURCES.map(|resource| quota_value(&quota["spec"]["hard"], resource)),
            );
        }
        let mut ceilings: Vec<(String, [Option<String>; 3])> = vec![(
            "the declared ceiling".to_string(),
            [
                Some(tenant.queue.cpu.clone()),
                Some(tenant.queue.memory.clone()),
                Some(tenant.queue.pods.to_string()),
            ],
        )];
        let queue = queues.iter().find(|queue| {
            queue.json["metadata"]["labels"]["tenant.platform/tenant"] == tenant.name.as_str()
                || queue.name == tenant.queue.name
        });
        if let Some(queue) = queue {
            let run = cluster.kubectl(
                &[
                    "get",
                    "clusterqueues.kueue.x-k8s.io",
                    &queue.name,
                    "-o",
                    "json",
                ],
                "",
            );
            assert!(
                run.ok,
                "reading ClusterQueue {} back failed:\n{}",
                queue.name, run.stderr
            );
            let held_queue: Value = serde_json::from_str(&run.stdout).expect("a ClusterQueue");
            let nominals = ceiling_nominals(&held_queue);
            for shared in queue_ceiling_is_never_shared(&held_queue) {
                failures.push(format!("{at}: ClusterQueue {}: {shared}", queue.name));
            }
            ceilings.push((
                format!("ClusterQueue {} (all flavors)", queue.name),
                CEILING_RESOURCES.map(|resource| nominals.get(resource).cloned()),
            ));
        }
        for (against, ceiling) in ceilings {
            let mut comparison = Comparison {
                at: at.clone(),
                against,
                values: Vec::new(),
                missing: Vec::new(),
            };
            for (idx, resource) in CEILING_RESOURCES.iter().enumerate() {
                let values: Option<Vec<String>> =
                    parts.iter().map(|part| part[idx].clone()).collect();
                match (values, &ceiling[idx]) {
                    (Some(values), Some(target)) => {
                        let mut sum: i128 = 0;
                        for value in &values {
                            let (nano, _) = parse_quantity(value)
                                .unwrap_or_else(|why| panic!("{at}: {resource} `{value}`: {why}"));
                            sum = sum.checked_add(nano).expect("a sum in range");
                        }
                        comparison.values.push((values, sum, target.clone()));
                    }
                    (None, _) => comparison
                        .missing
                        .push(format!("a namespace quota does not limit {resource}")),
                    (_, None) => comparison
                        .missing
                        .push(format!("{} does not state {resource}", comparison.against)),
                }
            }
            comparisons.push(comparison);
        }
    }

    // The API server's canonical form of each exact sum, written in the notation of its
    // ceiling, and of each ceiling.
    let mut triples: Vec<[String; 3]> = Vec::new();
    for comparison in comparisons.iter().filter(|c| c.missing.is_empty()) {
        let mut sums: Vec<String> = Vec::new();
        let mut targets: Vec<String> = Vec::new();
        for (resource, (_, sum, target)) in CEILING_RESOURCES.iter().zip(&comparison.values) {
            let (_, notation) = parse_quantity(target).unwrap_or_else(|why| {
                panic!(
                    "{}: {} {resource} `{target}`: {why}",
                    comparison.at, comparison.against
                )
            });
            sums.push(write_quantity(*sum, notation));
            targets.push(target.clone());
        }
        triples.push([sums[0].clone(), sums[1].clone(), sums[2].clone()]);
        triples.push([targets[0].clone(), targets[1].clone(), targets[2].clone()]);
    }
    let canonical = canonical_triples(cluster, &triples);
    let mut canonical = canonical.chunks(2);
    for comparison in &comparisons {
        if !comparison.missing.is_empty() {
            failures.push(format!(
                "{}: {}",
                comparison.at,
                comparison.missing.join("; ")
            ));
            continue;
        }
        let [sums, targets] = canonical.next().expect("two triples per comparison") else {
            panic!("two triples per comparison");
        };
        let mut shown = Vec::new();
        for (idx, (resource, (values, sum, target))) in
            CEILING_RESOURCES.iter().zip(&comparison.values).enumerate()
        {
            let (exact_target, _) = parse_quantity(target).expect("a parsed ceiling");
            let equal = *sum == exact_target && sums[idx] == targets[idx];
            shown.push(format!(
                "{resource} {} = {}{}",
                values.join(" + "),
                sums[idx],
                if equal {
                    String::new()
                } else {
                    format!(" (not {})", targets[idx])
                }
            ));
            if !equal {
                failures.push(format!(
                    "{}: the namespace quotas' {resource} ({}) add up to {}, {} is {} (API server canonical forms)",
                    comparison.at,
                    values.join(" + "),
                    sums[idx],
                    comparison.against,
                    targets[idx]
                ));
            }
        }
        println!(
            "    {}: {} (against {})",
            comparison.at,
            shown.join(", "),
            comparison.against
        );
    }
    failures
}

/// The API server's canonical form of each `(cpu, memory, pods)` triple: it parses them as the
/// limits of a ResourceQuota in a server-side dry-run, and answers with what it would store.
fn canonical_triples(cluster: &Cluster, triples: &[[String; 3]]) -> Vec<[String; 3]> {
    if triples.is_empty() {
        return Vec::new();
    }
    let namespace =
        format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {SCRATCH_NAMESPACE}\n");
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "conformance-scratch",
            "-f",
            "-",
        ],
        &namespace,
    );
    assert!(
        run.ok,
        "creating namespace {SCRATCH_NAMESPACE} failed:\n{}",
        run.stderr
    );
    let items: Vec<Value> = triples
        .iter()
        .enumerate()
        .map(|(idx, [cpu, memory, pods])| {
            json!({
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": format!("canonical-{idx:03}"), "namespace": SCRATCH_NAMESPACE},
                "spec": {"hard": {"requests.cpu": cpu, "requests.memory": memory, "pods": pods}},
            })
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let run = cluster.kubectl(
        &["create", "--dry-run=server", "-o", "json", "-f", "-"],
        &list.to_string(),
    );
    assert!(
        run.ok,
        "the API server refused quantities:\n{}\n{list}",
        run.stderr
    );
    let quotas: Vec<Value> = serde_json::Deserializer::from_str(&run.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("ResourceQuota output: {error}"));
    assert_eq!(quotas.len(), triples.len(), "one ResourceQuota per triple");
    quotas
        .iter()
        .map(|quota| {
            let hard = &quota["spec"]["hard"];
            ["requests.cpu", "requests.memory", "pods"]
                .map(|key| quantity_at(hard, key).unwrap_or_else(|| panic!("no {key} in {quota}")))
        })
        .collect()
}

pub(super) fn namespace_quotas_add_up_to_the_tenant_ceiling(cluster: &Cluster) {
    install_crds(cluster);
    let fleet = fixture_fleet();
    let mut failures = Vec::new();
    for cell in &fleet.plan.cells {
        let objects = set_up_cell(cluster, &fleet, cell);
        failures.extend(ceiling_differences(cluster, cell, &objects));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// Self-test ---------------------------------------------------------------------------------

/// Re-applies an emitted object when dropped and waits for its quota status, so tampering is
/// undone also when a check of the self-test fails.
struct Restore<'a> {
    cluster: &'a Cluster,
    object: Object,
}

impl Restore<'_> {
    fn restore(&self) -> Result<f64, String> {
        let refusals = apply_batch(self.cluster, &[&self.object], false);
        if !refusals.is_empty() {
            return Err(format_refusals(&refusals));
        }
        let id = (
            self.object.namespace.clone().unwrap_or_default(),
            self.object.name.clone(),
        );
        wait_for_quota_status(self.cluster, &[id])
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        if let Err(why) = self.restore() {
            eprintln!("  could not restore {}: {why}", self.object.id());
        }
    }
}

/// Applies `json` as a changed version of `object` (same field manager), and waits until quota
/// admission enforces it.
fn tamper(cluster: &Cluster, object: &Object, json: &Value) {
    let mut changed = object.clone();
    changed.text = json.to_string();
    let refusals = apply_batch(cluster, &[&changed], false);
    assert!(
        refusals.is_empty(),
        "tampering was refused:\n{}",
        format_refusals(&refusals)
    );
    let id = (
        object.namespace.clone().unwrap_or_default(),
        object.name.clone(),
    );
    wait_for_quota_status(cluster, &[id]).unwrap_or_else(|why| panic!("{why}"));
}

/// Prints what a check of the self-test reported.
fn print_detected(failures: &[String]) {
    if failures.is_empty() {
        println!("    the check passes");
    } else {
        println!("    the check fails:\n      {}", failures.join("\n      "));
    }
}

/// Makes a `tenant-priorities` object deny `class` too: added to its `In` list, or removed from
/// its `NotIn` list (the form that also denies classes created after the build).
fn deny_class(quota: &mut Value, class: &str) {
    let mut changed = false;
    let expressions = quota["spec"]["scopeSelector"]["matchExpressions"].as_array_mut();
    for expression in expressions.into_iter().flatten() {
        let operator = expression["operator"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let Some(values) = expression["values"].as_array_mut() else {
            continue;
        };
        match operator.as_str() {
            "In" => values.push(json!(class)),
            "NotIn" => {
                values.retain(|value| value != class);
                // `NotIn` needs a value: one that names no class denies them all.
                if values.is_empty() {
                    values.push(json!("conformance-no-such-class"));
                }
            }
            _ => continue,
        }
        changed = true;
    }
    assert!(
        changed,
        "tenant-priorities has no `In` or `NotIn` PriorityClass expression to change: update the self-test"
    );
}

/// Runs `judge` until it reports a difference (quota admission sees a deleted quota through an
/// informer, a moment later), at most 30 s; returns the differences.
fn until_detected(mut judge: impl FnMut() -> Vec<String>) -> Vec<String> {
    let started = Instant::now();
    loop {
        let failures = judge();
        if !failures.is_empty() || started.elapsed() > Duration::from_secs(30) {
            return failures;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

pub(super) fn quota_self_test_tampered_quotas_fail_the_checks(cluster: &Cluster) {
    install_crds(cluster);
    let fleet = fixture_fleet();
    let (cell, tenant, namespace, resource) = namespace_with_gpu_and_priority(&fleet);
    let objects = set_up_cell(cluster, &fleet, cell);
    let own = namespace.priority.clone().expect("an own class");
    let priorities = emitted(&objects, "ResourceQuota", &namespace.name, PRIORITY_QUOTA)
        .expect("an emitted tenant-priorities")
        .clone();
    let ceiling = emitted(&objects, "ResourceQuota", &namespace.name, CEILING_QUOTA)
        .expect("an emitted tenant-quota")
        .clone();
    let priority_judge = || {
        judge(
            cluster,
            &format!("priorities in {}", namespace.name),
            &priority_probes(cell, &objects, Some(&namespace.name)),
        )
    };
    let gpu_judge = || {
        let (probes, _) = gpu_probes(cell, &objects, &held_quotas(cluster), Some(&namespace.name));
        judge(
            cluster,
            &format!("GPU requests in {}", namespace.name),
            &probes,
        )
    };
    assert!(
        priority_judge().is_empty() && gpu_judge().is_empty(),
        "the untampered namespace must pass"
    );
    assert!(
        ceiling_differences(cluster, cell, &objects).is_empty(),
        "the untampered sums must pass"
    );

    // 1. The admin deletes tenant-priorities: the denied classes are admitted, and the check says so.
    {
        let _restore = Restore {
            cluster,
            object: priorities.clone(),
        };
        let run = cluster.kubectl(
            &[
                "delete",
                "resourcequota",
                PRIORITY_QUOTA,
                "-n",
                &namespace.name,
            ],
            "",
        );
        assert!(run.ok, "deleting {PRIORITY_QUOTA} failed:\n{}", run.stderr);
        println!(
            "  self-test: the admin deletes tenant-priorities in {}",
            namespace.name
        );
        let failures = until_detected(priority_judge);
        print_detected(&failures);
        assert!(
            !failures.is_empty()
                && failures.iter().all(|failure| failure
                    .contains("admitted; ResourceQuota `tenant-priorities` must refuse it")),
            "the priorities check did not detect the deleted quota: {failures:?}"
        );
    }
    assert!(
        priority_judge().is_empty(),
        "the restored tenant-priorities must pass again"
    );

    // 2. tenant-priorities also lists the namespace's own class: its pods are refused, and the
    // check says so.
    {
        let _restore = Restore {
            cluster,
            object: priorities.clone(),
        };
        let mut json = priorities.json.clone();
        deny_class(&mut json, &own);
        println!(
            "  self-test: tenant-priorities in {} also denies the namespace's own class `{own}`",
            namespace.name
        );
        tamper(cluster, &priorities, &json);
        let failures = until_detected(priority_judge);
        print_detected(&failures);
        assert!(
            failures.len() == 1
                && failures[0].contains(&format!("its own priority `{own}`"))
                && failures[0].contains("refused, but it is entitled"),
            "the priorities check did not detect the denied own class: {failures:?}"
        );
    }

    // 3. tenant-quota allows one device more than emitted: the request over the emitted limit is
    // admitted, and the check says so.
    {
        let _restore = Restore {
            cluster,
            object: ceiling.clone(),
        };
        let key = format!("requests.{resource}");
        let mut json = ceiling.json.clone();
        let limit = whole_number(json["spec"]["hard"][&key].as_str().expect("a GPU limit"))
            .expect("a whole limit");
        json["spec"]["hard"][&key] = json!((limit + 1).to_string());
        println!(
            "  self-test: tenant-quota in {} allows {} {resource}, one more than emitted",
            namespace.name,
            limit + 1
        );
        tamper(cluster, &ceiling, &json);
        let failures = until_detected(gpu_judge);
        print_detected(&failures);
        assert!(
            failures.len() == 1
                && failures[0].contains(&format!("{} {resource}", limit + 1))
                && failures[0].contains("admitted; ResourceQuota `tenant-quota` must refuse it"),
            "the GPU check did not detect the raised limit: {failures:?}"
        );
    }

    // 4. tenant-quota has one cpu more than emitted: the tenant's namespace quotas no longer add
    // up to its ceiling, and the check says so.
    {
        let _restore = Restore {
            cluster,
            object: ceiling.clone(),
        };
        let mut json = ceiling.json.clone();
        let cpu = json["spec"]["hard"]["requests.cpu"]
            .as_str()
            .expect("a cpu limit")
            .to_string();
        let (nano, notation) = parse_quantity(&cpu).expect("a cpu quantity");
        json["spec"]["hard"]["requests.cpu"] = json!(write_quantity(nano + NANO, notation));
        println!(
            "  self-test: tenant-quota in {} allows one cpu more than emitted",
            namespace.name
        );
        tamper(cluster, &ceiling, &json);
        let failures = ceiling_differences(cluster, cell, &objects);
        print_detected(&failures);
        assert!(
            !failures.is_empty()
                && failures.iter().all(|failure| failure.contains(&format!(
                    "tenant {} in cell {}: the namespace quotas' cpu",
                    tenant.name, cell.name
                ))),
            "the sums check did not detect the changed cpu: {failures:?}"
        );
    }
    // 5. A ClusterQueue of the tenant (as the lead's Kueue output will emit): its `tenant-ceiling`
    // nominal quotas are compared too, as the API server canonicalizes them, so the same memory
    // spelt in Ki passes, and 1Mi more is detected.
    let (memory, _) = parse_quantity(&tenant.queue.memory).expect("a declared memory ceiling");
    for (spelling, memory, detected) in [
        ("the declared ceiling, memory spelt in Ki", memory, false),
        (
            "1Mi more memory than declared",
            memory + (1 << 20) * NANO,
            true,
        ),
    ] {
        let (queue, _created) = self_test_cluster_queue(cluster, cell, tenant, memory);
        println!(
            "  self-test: ClusterQueue {} of {} with {spelling}",
            queue.name, tenant.name
        );
        let mut with_queue: Vec<Object> = objects
            .iter()
            .filter(|object| object.kind != "ClusterQueue")
            .cloned()
            .collect();
        with_queue.push(queue.clone());
        let failures = ceiling_differences(cluster, cell, &with_queue);
        print_detected(&failures);
        if detected {
            assert!(
                failures.len() == 1
                    && failures[0].contains(&format!("ClusterQueue {}", queue.name))
                    && failures[0].contains("memory"),
                "the sums check did not detect the ClusterQueue's memory: {failures:?}"
            );
        } else {
            assert!(
                failures.is_empty(),
                "the same ceiling spelt otherwise must pass: {failures:?}"
            );
        }
    }

    // 6. A ceiling flavor that borrows or lends cpu, memory or pods inside a cohort is caught,
    // one that keeps them is not.
    let queue_with = |limit: &str| {
        json!({"spec": {"cohortName": "org-x", "resourceGroups": [{"flavors": [{
            "name": "pool-x",
            "resources": [
                {"name": "cpu", "nominalQuota": "1", "borrowingLimit": limit, "lendingLimit": "0"},
                {"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "8"}
            ]
        }]}]}})
    };
    println!("  self-test: a pool flavor that borrows cpu");
    let shared = queue_ceiling_is_never_shared(&queue_with("1"));
    print_detected(&shared);
    assert_eq!(shared, ["flavor pool-x cpu borrowingLimit is not 0"]);
    assert!(queue_ceiling_is_never_shared(&queue_with("0")).is_empty());

    // Everything passes again once restored.
    assert!(
        gpu_judge().is_empty(),
        "the restored tenant-quota must pass again"
    );
    assert!(
        ceiling_differences(cluster, cell, &objects).is_empty(),
        "the restored sums must pass again"
    );
}

/// Creates (for real) a ClusterQueue of `tenant` in the shape of Kueue's v1beta2 API, with its
/// declared cpu and pods ceiling and `memory` (nano units, spelt in Ki) on the `tenant-ceiling`
/// flavor; it selects no namespace. Returns it as an object of the cell's tree, and its guard.
fn self_test_cluster_queue<'a>(
    cluster: &'a Cluster,
    cell: &CellPlan,
    tenant: &TenantPlan,
    memory: i128,
) -> (Object, Created<'a>) {
    let name = format!("conformance-self-test-{}", tenant.name);
    let json = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {
            "name": name,
            "labels": {"tenant.platform/tenant": tenant.name},
        },
        "spec": {
            "namespaceSelector": {"matchLabels": {"tenantc-conformance/selects": "nothing"}},
            "resourceGroups": [{
                "coveredResources": ["cpu", "memory", "pods"],
                "flavors": [{
                    "name": tenantc::plan::CEILING_FLAVOR,
                    "resources": [
                        {"name": "cpu", "nominalQuota": tenant.queue.cpu},
                        {"name": "memory", "nominalQuota": write_quantity(memory, Notation::Binary)},
                        {"name": "pods", "nominalQuota": tenant.queue.pods.to_string()},
                    ],
                }],
            }],
        },
    });
    let text = json.to_string();
    let object = object_from(
        &format!("{}/tenants/{}/clusterqueue.yaml", cell.name, tenant.name),
        &json,
        &text,
    );
    let created = Created {
        cluster,
        resource: "clusterqueues.kueue.x-k8s.io",
        namespace: String::new(),
        name,
    };
    let refusals = apply_batch(cluster, &[&object], false);
    assert!(
        refusals.is_empty(),
        "the self-test ClusterQueue was refused:\n{}",
        format_refusals(&refusals)
    );
    (object, created)
}

// Quantities --------------------------------------------------------------------------------

/// Nano units per unit: the finest precision the API keeps.
const NANO: i128 = 1_000_000_000;

/// How a quantity is written, which decides the canonical form the API server gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notation {
    /// `Ki` to `Ei`.
    Binary,
    /// `n` to `E`, or no suffix.
    Decimal,
    /// `e` or `E` with an exponent.
    Exponent,
}

/// A quantity's exact value in nano units and its notation, following the API's grammar
/// (`<sign><digits>[.<digits>]<suffix>`); an error for anything else or finer than `1n`.
fn parse_quantity(text: &str) -> Result<(i128, Notation), String> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err("not a number".to_string());
    }
    let mantissa: i128 = format!("{whole}{fraction}")
        .parse()
        .map_err(|_| "too many digits".to_string())?;
    let mut scale = 9 - i32::try_from(fraction.len()).map_err(|_| "too many digits")?;
    let mut binary = 0u32;
    let notation = match suffix {
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            binary = 10
                * (1 + ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                    .iter()
                    .position(|s| *s == suffix)
                    .unwrap_or(0) as u32);
            Notation::Binary
        }
        "n" | "u" | "m" | "" | "k" | "M" | "G" | "T" | "P" | "E" => {
            scale += match suffix {
                "n" => -9,
                "u" => -6,
                "m" => -3,
                "" => 0,
                "k" => 3,
                "M" => 6,
                "G" => 9,
                "T" => 12,
                "P" => 15,
                _ => 18,
            };
            Notation::Decimal
        }
        exponent if exponent.starts_with(['e', 'E']) => {
            scale += exponent[1..]
                .parse::<i32>()
                .map_err(|_| "not an exponent".to_string())?;
            Notation::Exponent
        }
        _ => return Err(format!("unknown suffix `{suffix}`")),
    };
    let too_large = || "out of range".to_string();
    let mut value = mantissa
        .checked_mul(1i128 << binary)
        .ok_or_else(too_large)?;
    if scale >= 0 {
        value = value
            .checked_mul(
                10i128
                    .checked_pow(scale.unsigned_abs())
                    .ok_or_else(too_large)?,
            )
            .ok_or_else(too_large)?;
    } else {
        let divisor = 10i128
            .checked_pow(scale.unsigned_abs())
            .ok_or_else(too_large)?;
        if value % divisor != 0 {
            return Err("finer than 1n".to_string());
        }
        value /= divisor;
    }
    Ok((if negative { -value } else { value }, notation))
}

/// `units` scaled by `10^-fraction_digits`, as a plain decimal number without trailing zeros.
fn plain_decimal(units: i128, fraction_digits: u32) -> String {
    let sign = if units < 0 { "-" } else { "" };
    let base = 10u128.pow(fraction_digits);
    let (whole, fraction) = (units.unsigned_abs() / base, units.unsigned_abs() % base);
    if fraction == 0 {
        format!("{sign}{whole}")
    } else {
        let digits = format!("{fraction:0width$}", width = fraction_digits as usize);
        format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// A value in nano units, written exactly in `notation`, for the API server to canonicalize:
/// a binary quantity as a decimal number of `Ki` (a 1024th always has a finite decimal form).
fn write_quantity(nano: i128, notation: Notation) -> String {
    match notation {
        Notation::Decimal => plain_decimal(nano, 9),
        Notation::Exponent => format!("{}e0", plain_decimal(nano, 9)),
        // value / 1024 = nano * 10^-9 * 5^10 / 10^10 = (nano * 9765625) * 10^-19.
        Notation::Binary => format!(
            "{}Ki",
            plain_decimal(
                nano.checked_mul(9_765_625).expect("a quantity in range"),
                19
            )
        ),
    }
}

/// A quantity that must be a whole number (device counts, pods).
fn whole_number(text: &str) -> Result<i64, String> {
    let (nano, _) = parse_quantity(text)?;
    if nano % NANO != 0 {
        return Err("not a whole number".to_string());
    }
    i64::try_from(nano / NANO).map_err(|_| "out of range".to_string())
}

/// The exact arithmetic the sums rely on, without a cluster.
pub(super) fn quota_quantities_parse_and_print_exactly(_: &Cluster) {
    let cases: &[(&str, i128, Notation)] = &[
        ("0", 0, Notation::Decimal),
        ("500m", 500_000_000, Notation::Decimal),
        ("2048", 2048 * NANO, Notation::Decimal),
        ("2k", 2000 * NANO, Notation::Decimal),
        ("1.5", 1_500_000_000, Notation::Decimal),
        ("16Ti", 16 * (1i128 << 40) * NANO, Notation::Binary),
        ("512Gi", 512 * (1i128 << 30) * NANO, Notation::Binary),
        ("1.5Ki", 1536 * NANO, Notation::Binary),
        ("1e3", 1000 * NANO, Notation::Exponent),
        ("1E", 1_000_000_000_000_000_000 * NANO, Notation::Decimal),
        ("12n", 12, Notation::Decimal),
        ("-3", -3 * NANO, Notation::Decimal),
    ];
    for (text, nano, notation) in cases {
        assert_eq!(parse_quantity(text), Ok((*nano, *notation)), "{text}");
        // Written back in its notation, a value parses to itself.
        let written = write_quantity(*nano, *notation);
        assert_eq!(
            parse_quantity(&written).map(|(value, _)| value),
            Ok(*nano),
            "{text} as {written}"
        );
    }
    for bad in ["", ".", "1..2", "Ki", "1x", "1.0000000001", "1e", "5 Gi"] {
        assert!(parse_quantity(bad).is_err(), "`{bad}` must not parse");
    }
    assert_eq!(write_quantity(1536 * NANO, Notation::Binary), "1.5Ki");
    assert_eq!(write_quantity(NANO, Notation::Binary), "0.0009765625Ki");
    assert_eq!(
        write_quantity(2 * (1i128 << 40) * NANO, Notation::Binary),
        "2147483648Ki"
    );
    assert_eq!(write_quantity(1_500_000_000, Notation::Exponent), "1.5e0");
    // A seeded walk over sums of binary and decimal parts: every sum written in a notation
    // parses back to the same exact value.
    let mut seed: u64 = 0x5eed;
    for _ in 0..2000 {
        let mut sum = 0i128;
        for _ in 0..4 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let amount = i128::from(seed >> 40);
            let text = match seed % 4 {
                0 => format!("{amount}Mi"),
                1 => format!("{amount}m"),
                2 => format!("{amount}"),
                _ => format!("{}.{}Gi", amount % 1000, amount % 10),
            };
            sum += parse_quantity(&text)
                .unwrap_or_else(|why| panic!("{text}: {why}"))
                .0;
        }
        for notation in [Notation::Binary, Notation::Decimal, Notation::Exponent] {
            let written = write_quantity(sum, notation);
            assert_eq!(parse_quantity(&written), Ok((sum, notation)), "{written}");
        }
    }
}
