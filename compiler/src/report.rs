//! Reports read from the plan: the capacity and quota reports of a cell.
//!
//! Consumes: a cell plan. Produces: the bodies (without headers) of `reports/capacity.json` and
//! `reports/capacity.md` (per pool resource its capacity and what each tenant reserves, the
//! stranded capacity of each MIG layout, the node labels of each node group), and of
//! `reports/quota.json` and `reports/quota.md`: per tenant and reserved pool resource, its Kueue entitlement and the three
//! terms of its effective capacity with the binding one marked; per tenant, its cpu, memory and
//! pods ceiling and how it is split over its namespaces; per pool resource, what no tenant
//! reserved and how far reserved plus burst oversubscribe it; the guard's GitOps identities and
//! every Pod Security exception with its reason and approver; and the cohort tree.
//!
//! The showback reports (`showback.rs`: per cell and fleet-wide, Markdown, CSV and JSON) and the
//! fleet's showback page (`html.rs`) are submodules.
//!
//! Invariants: reads only the plan, in its sorted order; prints no float, since ratios are
//! fixed-point hundredths formatted here, so the bytes are the same on every platform.

pub mod html;
pub mod showback;

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::facts::backends::Scheduler;
use crate::facts::naming::{DEVICE_PLUGIN_CONFIGMAP, MIG_PARTED_CONFIGMAP};
use crate::facts::pod_security::PodSecurityLevel;
use crate::plan::{
    CellPlan, Effective, Entitlement, ExceptionPlan, NamespacePlan, ROOT_COHORT, TenantPlan, Term,
};

/// The quota report of a cell as `(json, markdown)`.
pub fn quota(cell: &CellPlan) -> (Value, String) {
    (quota_json(cell), quota_markdown(cell))
}

/// The JSON key of a term, as `Term` serializes (`quota`, `cell_admit`, `topology_fit`).
pub fn term_key(term: Term) -> &'static str {
    match term {
        Term::Quota => "quota",
        Term::CellAdmit => "cell_admit",
        Term::TopologyFit => "topology_fit",
    }
}

/// The value of one term of an effective capacity row.
pub fn term_value(row: &Effective, term: Term) -> i64 {
    match term {
        Term::Quota => row.quota,
        Term::CellAdmit => row.cell_admit,
        Term::TopologyFit => row.topology_fit,
    }
}

/// The three terms in the order they are shown: quota, cell, topology.
pub const TERMS: [Term; 3] = [Term::Quota, Term::CellAdmit, Term::TopologyFit];

/// A tenant's entitlement on a pool resource, if its ClusterQueue has the pool's flavor.
pub fn entitlement<'a>(
    tenant: &'a TenantPlan,
    pool: &str,
    resource: &str,
) -> Option<&'a Entitlement> {
    tenant
        .queue
        .flavors
        .iter()
        .filter(|flavor| flavor.pool == pool)
        .flat_map(|flavor| &flavor.resources)
        .find(|entitlement| entitlement.resource == resource)
}

/// One pool resource summed over the tenants of a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolUse {
    /// The pool.
    pub pool: String,
    /// Its ResourceFlavor.
    pub flavor: String,
    /// The resource.
    pub resource: String,
    /// Devices of it in the pool.
    pub capacity: i64,
    /// The tenants' nominal quota, summed.
    pub reserved: i64,
    /// The tenants' borrowing limits, summed.
    pub burst: i64,
    /// What no tenant reserved: the root cohort's nominal quota.
    pub unreserved: i64,
    /// The tenants with the flavor and a borrowing limit for the resource, sorted.
    pub borrowers: Vec<String>,
}

impl PoolUse {
    /// Reserved plus burst.
    pub fn ceiling(&self) -> i64 {
        self.reserved.saturating_add(self.burst)
    }

    /// Reserved plus burst over capacity, in hundredths rounded up; `None` for an empty pool.
    pub fn ratio(&self) -> Option<i64> {
        hundredths_up(self.ceiling(), self.capacity)
    }

    /// Whether reserved plus burst exceed what the cell's oversubscription ratio allows.
    pub fn above(&self, oversubscribe: f64) -> bool {
        // Exact against the declared ratio; the rounded ratio is only for printing.
        self.ceiling() as f64 > self.capacity as f64 * oversubscribe
    }
}

/// Every resource of every pool of the cell, in pool order, summed over its tenants.
pub fn pool_uses(cell: &CellPlan) -> Vec<PoolUse> {
    let mut uses = Vec::new();
    for pool in &cell.pools {
        for offer in &pool.offers {
            let mut reserved: i64 = 0;
            let mut burst: i64 = 0;
            let mut borrowers = Vec::new();
            for tenant in &cell.tenants {
                if let Some(entitlement) = entitlement(tenant, &pool.name, &offer.resource) {
                    reserved = reserved.saturating_add(entitlement.nominal);
                    burst = burst.saturating_add(entitlement.borrowing);
                    if entitlement.borrowing > 0 {
                        borrowers.push(tenant.name.clone());
                    }
                }
            }
            uses.push(PoolUse {
                pool: pool.name.clone(),
                flavor: pool.flavor.clone(),
                resource: offer.resource.clone(),
                capacity: offer.capacity,
                reserved,
                burst,
                unreserved: cell
                    .unreserved
                    .get(&pool.flavor)
                    .and_then(|per_resource| per_resource.get(&offer.resource))
                    .copied()
                    .unwrap_or(0),
                borrowers,
            });
        }
    }
    uses
}

/// `numerator / denominator` in hundredths, rounded up; `None` when the denominator is not
/// positive. Integer arithmetic only.
pub fn hundredths_up(numerator: i64, denominator: i64) -> Option<i64> {
    if denominator <= 0 {
        return None;
    }
    let scaled = i128::from(numerator) * 100;
    let denominator = i128::from(denominator);
    let quotient = scaled.div_euclid(denominator) + i128::from(scaled.rem_euclid(denominator) > 0);
    Some(i64::try_from(quotient).unwrap_or(i64::MAX))
}

/// A declared ratio in hundredths, rounded half away from zero.
pub fn hundredths(value: f64) -> i64 {
    // IEEE multiplication and rounding give the same result everywhere; the cast saturates.
    (value * 100.0).round() as i64
}

/// Hundredths as a decimal with two places: `150` is `1.50`.
pub fn format_hundredths(hundredths: i64) -> String {
    let sign = if hundredths < 0 { "-" } else { "" };
    let magnitude = hundredths.unsigned_abs();
    format!("{sign}{}.{:02}", magnitude / 100, magnitude % 100)
}

/// `-` for a missing number.
fn or_dash(value: Option<i64>) -> String {
    value.map_or_else(|| "-".to_string(), |value| value.to_string())
}

fn quota_json(cell: &CellPlan) -> Value {
    let tenants: Vec<Value> = cell
        .tenants
        .iter()
        .map(|tenant| {
            let mut row = json!({
                "tenant": tenant.name,
                "org": tenant.org,
                "team": tenant.team,
                "trust": tenant.trust,
                "cluster_queue": tenant.queue.name,
                "cohort": tenant.queue.cohort,
                "weight": tenant.queue.weight,
                "ceiling": {
                    "cpu": tenant.queue.cpu,
                    "memory": tenant.queue.memory,
                    "pods": tenant.queue.pods,
                },
                "namespaces": tenant.namespaces.iter().map(|namespace| json!({
                    "namespace": namespace.name,
                    "workload": namespace.workload,
                    "cpu": namespace.cpu,
                    "memory": namespace.memory,
                    "pods": namespace.pods,
                })).collect::<Vec<_>>(),
                "capacity": tenant.capacity.iter().map(|row| capacity_json(tenant, row)).collect::<Vec<_>>(),
                "fleet": tenant.fleet.iter().map(|share| json!({
                    "gpu": share.gpu,
                    "total": share.total,
                    "part": share.part,
                    "reserved": share.reserved,
                    "parts": share.parts.iter().map(|(cell, part)| json!({"cell": cell, "gpus": part})).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            });
            // A Volcano cell's tenant also has its Volcano queue.
            if let (Some(queue), Value::Object(fields)) = (&tenant.volcano, &mut row) {
                fields.insert("volcano_queue".to_string(), json!(queue));
            }
            row
        })
        .collect();
    let pools: Vec<Value> = pool_uses(cell)
        .iter()
        .map(|used| {
            json!({
                "pool": used.pool,
                "flavor": used.flavor,
                "resource": used.resource,
                "capacity": used.capacity,
                "reserved": used.reserved,
                "burst": used.burst,
                "unreserved": used.unreserved,
                "reserved_plus_burst": used.ceiling(),
                "ratio": used.ratio().map(format_hundredths),
                "above_oversubscribe": used.above(cell.oversubscribe),
                "borrowers": used.borrowers,
            })
        })
        .collect();
    let orgs: Vec<Value> = cell
        .orgs
        .iter()
        .map(|org| {
            json!({
                "org": org.org,
                "cohort": org.cohort,
                "weight": org.weight,
                "cluster_queues": org.tenants.iter().map(|name| json!({
                    "name": name,
                    "weight": cell.tenants.iter().find(|tenant| &tenant.name == name).and_then(|tenant| tenant.queue.weight),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut report = json!({
        "cell": cell.name,
        "oversubscribe": format_hundredths(hundredths(cell.oversubscribe)),
        "tenants": tenants,
        "pools": pools,
        "cohorts": { "root": ROOT_COHORT, "orgs": orgs },
        "guard": { "gitops_user": cell.gitops.user, "break_glass_group": cell.gitops.break_glass },
        "pod_security_exceptions": exception_rows(cell).into_iter().map(|(tenant, namespace, exception)| json!({
            "tenant": tenant.name,
            "namespace": namespace.name,
            "enforce": namespace.enforce_level(),
            "audit": PodSecurityLevel::Restricted,
            "warn": PodSecurityLevel::Restricted,
            "exception": exception.name,
            "capabilities": exception.capabilities,
            "reason": exception.reason,
            "approved_by": exception.approved_by,
        })).collect::<Vec<_>>(),
    });
    // A Volcano cell's org queues, beside the cohorts its tenants' entitlements are made from.
    match (cell.backends.scheduler, &mut report) {
        (Scheduler::Volcano, Value::Object(fields)) => {
            fields.insert("scheduler".to_string(), json!(cell.backends.scheduler));
            fields.insert("volcano_org_queues".to_string(), json!(cell.volcano_orgs));
        }
        (Scheduler::Kueue | Scheduler::Volcano, _) => {}
    }
    report
}

/// Every Pod Security exception of the cell's tenants, in plan order.
fn exception_rows(cell: &CellPlan) -> Vec<(&TenantPlan, &NamespacePlan, &ExceptionPlan)> {
    cell.tenants
        .iter()
        .flat_map(|tenant| {
            tenant.namespaces.iter().flat_map(move |namespace| {
                namespace
                    .exceptions
                    .iter()
                    .map(move |exception| (tenant, namespace, exception))
            })
        })
        .collect()
}

/// Declared text for a Markdown table cell: every character Markdown could read as syntax is
/// escaped with a backslash.
fn markdown_text(text: &str) -> String {
    let mut escaped = String::new();
    for ch in text.chars() {
        if "\\`*_{}[]<>()#+-.!|~&".contains(ch) {
            escaped.push('\\');
        }
        escaped.push(ch);
    }
    escaped
}

/// The guard and the Pod Security exceptions of a cell, as Markdown.
fn pod_security_markdown(out: &mut String, cell: &CellPlan) {
    out.push_str("\n## Guard and Pod Security\n\n");
    let _ = writeln!(
        out,
        "Objects tenantc manages may be changed only by the GitOps controller `{}` or the break-glass group `{}` (policy `{}`).",
        cell.gitops.user,
        cell.gitops.break_glass,
        crate::facts::naming::GUARD_NAME
    );
    out.push_str(
        "Every tenant namespace is Pod Security `restricted` (enforce, audit, warn), except where a reviewed exception relaxes `enforce`; there policy `",
    );
    out.push_str(crate::facts::naming::EXCEPTIONS_NAME);
    out.push_str(
        "` enforces every other `restricted` rule, and audit and warn stay `restricted`.\n",
    );
    let rows = exception_rows(cell);
    if rows.is_empty() {
        out.push_str("\nNo namespace of this cell has an exception.\n");
        return;
    }
    out.push_str(
        "\n| tenant | namespace | enforce | exception | capabilities | approved by | reason |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|\n");
    for (tenant, namespace, exception) in rows {
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} | {} | {} | {} |",
            tenant.name,
            namespace.name,
            namespace.enforce_level(),
            exception.name,
            exception.capabilities.join(", "),
            markdown_text(&exception.approved_by),
            markdown_text(&exception.reason)
        );
    }
}

/// One effective capacity row as JSON: the terms under `terms`, keyed as `binding` names them.
pub fn capacity_json(tenant: &TenantPlan, row: &Effective) -> Value {
    let terms: serde_json::Map<String, Value> = TERMS
        .iter()
        .map(|term| {
            (
                term_key(*term).to_string(),
                Value::from(term_value(row, *term)),
            )
        })
        .collect();
    json!({
        "pool": row.pool,
        "resource": row.resource,
        "nominal": row.nominal,
        "burst": row.borrowing,
        "lending": entitlement(tenant, &row.pool, &row.resource).and_then(|e| e.lending),
        "terms": terms,
        "gang": row.gang,
        "domain": row.domain,
        "effective": row.effective,
        "binding": term_key(row.binding),
    })
}

/// The topology term as shown: the number, and the gang and domain sizes when a gang is declared.
fn topology_text(row: &Effective, number: String) -> String {
    match (row.gang, row.domain) {
        (Some(gang), Some(domain)) => format!("{number} (gangs of {gang} in {domain})"),
        _ => number,
    }
}

fn quota_markdown(cell: &CellPlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Quota of cell `{}`
",
        cell.name
    );
    let admits = match cell.backends.scheduler {
        Scheduler::Kueue => "the most its ClusterQueue admits",
        Scheduler::Volcano => "the most its Volcano queue admits (its `capability`)",
    };
    let _ = write!(
        out,
        "What each tenant may use of each pool resource it reserves, and what it can really get: \
`effective = min(quota, cell, topology)`.\n\n\
- **quota**: nominal quota plus borrowing limit (`reserved + burst`), {admits}.\n"
    );
    out.push_str(
        "\
- **cell**: the pool's capacity minus what the other tenants keep (their nominal quota above \
their lending limit), what the cell can admit for the tenant while the others are idle.\n\
- **topology**: for a reservation with a `gang`, the devices whole gangs can use, each gang \
inside one domain; the capacity otherwise.\n\n\
The binding term is in bold and named in the last column.\n\
A lending limit of `-` means the tenant may lend all of its nominal quota.\n\n",
    );
    out.push_str("## Effective capacity\n\n");
    if cell.tenants.is_empty() {
        out.push_str("No tenant has a quota in this cell.\n");
    } else {
        out.push_str("| tenant | pool | resource | nominal | burst | lending limit | quota | cell | topology | effective | binds |\n");
        out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for tenant in &cell.tenants {
            for row in &tenant.capacity {
                let shown = |term: Term| {
                    let number = term_value(row, term).to_string();
                    if term == row.binding {
                        format!("**{number}**")
                    } else {
                        number
                    }
                };
                let lending = entitlement(tenant, &row.pool, &row.resource).and_then(|e| e.lending);
                let _ = writeln!(
                    out,
                    "| {} | {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                    tenant.name,
                    row.pool,
                    row.resource,
                    row.nominal,
                    row.borrowing,
                    or_dash(lending),
                    shown(Term::Quota),
                    shown(Term::CellAdmit),
                    topology_text(row, shown(Term::TopologyFit)),
                    row.effective,
                    row.binding.as_str(),
                );
            }
        }
        let without: Vec<&str> = cell
            .tenants
            .iter()
            .filter(|tenant| tenant.capacity.is_empty())
            .map(|tenant| tenant.name.as_str())
            .collect();
        if !without.is_empty() {
            let _ = writeln!(
                out,
                "\nTenants without a GPU reservation: {}.",
                crate::diag::list_names(without)
            );
        }
    }

    out.push_str("\n## Tenant ceilings\n\n");
    out.push_str(match cell.backends.scheduler {
        Scheduler::Kueue => {
            "A tenant's cpu, memory and pods ceiling is enforced once, across its namespaces, by its \
ClusterQueue (flavor `tenant-ceiling`).\n\
Each namespace's ResourceQuota holds its part, for pods that bypass Kueue; the parts add up to \
the ceiling.\n\n"
        }
        Scheduler::Volcano => {
            "A tenant's cpu and memory ceiling is enforced once, across its namespaces, by its \
Volcano queue (`deserved` and `capability`); Volcano does not count pods.\n\
Each namespace's ResourceQuota holds its part of all three; the parts add up to the ceiling.\n\n"
        }
    });
    if !cell.tenants.is_empty() {
        out.push_str(
            "| tenant | cpu | memory | pods | namespace | workload | cpu | memory | pods |\n",
        );
        out.push_str("|---|---:|---:|---:|---|---|---:|---:|---:|\n");
        for tenant in &cell.tenants {
            let queue = &tenant.queue;
            for (idx, namespace) in tenant.namespaces.iter().enumerate() {
                // The tenant and its ceiling on its first namespace's row only.
                let mut row: Vec<String> = if idx == 0 {
                    vec![
                        tenant.name.clone(),
                        queue.cpu.clone(),
                        queue.memory.clone(),
                        queue.pods.to_string(),
                    ]
                } else {
                    vec![String::new(); 4]
                };
                row.extend([
                    format!("`{}`", namespace.name),
                    namespace.workload.to_string(),
                    namespace.cpu.clone(),
                    namespace.memory.clone(),
                    namespace.pods.to_string(),
                ]);
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
        }
    }

    out.push_str("\n## Pools\n\n");
    let unreserved = match cell.backends.scheduler {
        Scheduler::Kueue => {
            "The unreserved devices are the nominal quota of the root cohort; the tenants listed have a burst \
for the resource and may borrow them, and what other tenants leave idle, up to their burst."
        }
        Scheduler::Volcano => {
            "The unreserved devices are in no queue's `deserved`; the tenants listed have a burst for the \
resource and may use them, and what other tenants leave idle, up to their `capability`, until a \
queue below what it deserves reclaims them."
        }
    };
    let _ = writeln!(
        out,
        "Per pool resource: what the tenants reserved, the burst they may borrow on top, and what no \
tenant reserved.\n\
{unreserved}\n\
The cell allows reserved plus burst up to {} times the capacity; ratios are rounded up to \
hundredths.\n",
        format_hundredths(hundredths(cell.oversubscribe))
    );
    out.push_str("| pool | flavor | resource | capacity | reserved | burst | unreserved | reserved + burst | ratio | may borrow it |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for used in pool_uses(cell) {
        let ratio = match used.ratio() {
            None => "-".to_string(),
            Some(ratio) if used.above(cell.oversubscribe) => format!(
                "{} (above {})",
                format_hundredths(ratio),
                format_hundredths(hundredths(cell.oversubscribe))
            ),
            Some(ratio) => format_hundredths(ratio),
        };
        let borrowers = if used.borrowers.is_empty() {
            "-".to_string()
        } else {
            used.borrowers.join(", ")
        };
        let _ = writeln!(
            out,
            "| {} | `{}` | `{}` | {} | {} | {} | {} | {} | {ratio} | {borrowers} |",
            used.pool,
            used.flavor,
            used.resource,
            used.capacity,
            used.reserved,
            used.burst,
            used.unreserved,
            used.ceiling(),
        );
    }

    let fleet: Vec<(&str, &crate::plan::FleetShare)> = cell
        .tenants
        .iter()
        .flat_map(|tenant| {
            tenant
                .fleet
                .iter()
                .map(move |share| (tenant.name.as_str(), share))
        })
        .collect();
    if !fleet.is_empty() {
        out.push_str("\n## Fleet contracts\n\n");
        out.push_str(
            "Fleet-level reservations of whole GPUs and this cell's part of each; the build fails \
unless the tenant's reservations in the cell match its part.\n\n",
        );
        out.push_str("| tenant | GPU | fleet total | split | this cell | reserved here |\n");
        out.push_str("|---|---|---:|---|---:|---:|\n");
        for (tenant, share) in fleet {
            let split: Vec<String> = share
                .parts
                .iter()
                .map(|(cell, part)| format!("{cell} {part}"))
                .collect();
            let _ = writeln!(
                out,
                "| {tenant} | `{}` | {} | {} | {} | {} |",
                share.gpu,
                share.total,
                split.join(", "),
                share.part,
                share.reserved
            );
        }
    }

    pod_security_markdown(&mut out, cell);

    match cell.backends.scheduler {
        Scheduler::Kueue => cohorts_markdown(&mut out, cell),
        Scheduler::Volcano => volcano_markdown(&mut out, cell),
    }
    out
}

/// The Volcano queue tree of a cell: each org's parent Queue and its tenants' queues.
fn volcano_markdown(out: &mut String, cell: &CellPlan) {
    out.push_str("\n## Queues\n\n");
    out.push_str(
        "Each tenant's Volcano queue names its org's queue as `parent` (Volcano v1.10.0 stores it; \
its scheduler plugins do not read it yet); `deserved` is what it reserved, `capability` reserved \
plus burst, `guarantee` what it keeps from lending.\n\n",
    );
    for org in &cell.volcano_orgs {
        let _ = writeln!(
            out,
            "- `{}` (org `{}`, weight {})",
            org.name, org.org, org.weight
        );
        for name in &org.tenants {
            let Some(queue) = cell
                .tenants
                .iter()
                .filter_map(|tenant| tenant.volcano.as_ref())
                .find(|queue| &queue.name == name)
            else {
                continue;
            };
            let held: Vec<String> = queue
                .resources
                .iter()
                .filter(|held| held.capability > 0)
                .map(|held| {
                    format!(
                        "`{}` {} deserved, {} capability, {} guaranteed",
                        held.resource, held.deserved, held.capability, held.guarantee
                    )
                })
                .collect();
            let held = if held.is_empty() {
                "no GPUs".to_string()
            } else {
                held.join("; ")
            };
            let _ = writeln!(
                out,
                "  - queue `{}` (weight {}): {held}",
                queue.name, queue.weight
            );
        }
    }
}

/// The Kueue cohort tree of a cell.
fn cohorts_markdown(out: &mut String, cell: &CellPlan) {
    out.push_str("\n## Cohorts\n\n");
    out.push_str(
        "Each tenant's ClusterQueue sits in its org's cohort, so it borrows first inside its org; \
the root cohort holds what no tenant reserved.\n\n",
    );
    let _ = writeln!(out, "- `{ROOT_COHORT}`");
    for org in &cell.orgs {
        let weight = org
            .weight
            .map(|weight| format!(", fair-sharing weight {weight}"))
            .unwrap_or_default();
        let _ = writeln!(out, "  - `{}` (org `{}`{weight})", org.cohort, org.org);
        for name in &org.tenants {
            let weight = cell
                .tenants
                .iter()
                .find(|tenant| &tenant.name == name)
                .and_then(|tenant| tenant.queue.weight)
                .map(|weight| format!(" (fair-sharing weight {weight})"))
                .unwrap_or_default();
            let _ = writeln!(out, "    - ClusterQueue `{name}`{weight}");
        }
    }
}

/// Small generated fleets for the property tests of the reports and of `describe`.
/// The capacity report of a cell as `(json, markdown)`: per pool resource its capacity and what
/// each tenant reserves (burst is not counted), the stranded capacity of each MIG layout with a
/// witness placement, and the node labels each node group needs.
pub fn capacity(cell: &CellPlan) -> (Value, String) {
    let capacity = &cell.gpu.capacity;
    let rows = &capacity.rows;
    let groups = &capacity.node_groups;
    let stranded: Vec<Value> = capacity
        .stranded
        .iter()
        .map(|layout| {
            let per_gpu = &layout.per_gpu;
            let gpus = layout.gpus;
            json!({
                "pool": layout.pool,
                "layout": layout.layout,
                "gpus": gpus,
                "unused_compute_slices_per_gpu": per_gpu.unused_compute_slices,
                "unused_memory_slices_per_gpu": per_gpu.unused_memory_slices,
                "unused_placement_units_per_gpu": per_gpu.unused_placement_units,
                "unused_compute_slices": i64::from(per_gpu.unused_compute_slices).saturating_mul(gpus),
                "unused_memory_slices": i64::from(per_gpu.unused_memory_slices).saturating_mul(gpus),
                "placement": layout.placement,
            })
        })
        .collect();
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|row| {
            let reserved: i64 = row.reserved.values().sum();
            json!({
                "pool": row.pool,
                "resource": row.resource,
                "capacity": row.capacity,
                "reserved": row.reserved,
                "reserved_total": reserved,
                "free": row.capacity - reserved,
            })
        })
        .collect();
    // The taints of each group's pool, as the nodes must carry them (`key=value:Effect`).
    let taints_of = |pool: &str| -> Vec<String> {
        cell.pools
            .iter()
            .find(|candidate| candidate.name == pool)
            .map(|found| found.taints.iter().map(|taint| taint.display()).collect())
            .unwrap_or_default()
    };
    // The topology levels of each group's pool: each node carries every level's label, with one
    // value per domain of that many nodes (`kubernetes.io/hostname`, one node, last).
    let levels_of = |pool: &str| -> Vec<(String, i64)> {
        cell.pools
            .iter()
            .find(|candidate| candidate.name == pool)
            .and_then(|found| found.topology.as_ref())
            .map(|topology| {
                topology
                    .levels
                    .iter()
                    .map(|level| (level.label.clone(), level.nodes))
                    .collect()
            })
            .unwrap_or_default()
    };
    let json_groups: Vec<Value> = groups
        .iter()
        .map(|group| {
            let levels: Vec<Value> = levels_of(&group.pool)
                .into_iter()
                .map(|(label, nodes)| json!({"label": label, "nodes_per_domain": nodes}))
                .collect();
            json!({
                "pool": group.pool,
                "layout": group.layout,
                "nodes": group.nodes,
                "labels": group.labels,
                "taints": taints_of(&group.pool),
                "allocatable_per_node": group.allocatable,
                "topology_levels": levels,
            })
        })
        .collect();
    let report = json!({
        "cell": cell.name,
        "resources": json_rows,
        "stranded": stranded,
        "node_groups": json_groups,
    });

    let mut md = format!("# Capacity of cell `{}`\n\n", cell.name);
    md.push_str("Reserved is the sum of the tenants' `reserved` (Kueue nominal quota); burst is not counted.\n\n");
    md.push_str("| pool | resource | capacity | reserved | free | reserved by |\n");
    md.push_str("|---|---|---:|---:|---:|---|\n");
    for row in rows {
        let reserved: i64 = row.reserved.values().sum();
        let by: Vec<String> = row
            .reserved
            .iter()
            .map(|(tenant, count)| format!("{tenant} {count}"))
            .collect();
        md.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            row.pool,
            row.resource,
            row.capacity,
            reserved,
            row.capacity - reserved,
            if by.is_empty() {
                "-".to_string()
            } else {
                by.join(", ")
            }
        ));
    }
    md.push_str("\n## Stranded MIG capacity\n\n");
    if stranded.is_empty() {
        md.push_str("No pool uses MIG.\n");
    } else {
        md.push_str("Every GPU of a node group gets the layout, so no GPU of a MIG pool is outside a layout.\n");
        md.push_str("The placement is one valid assignment of start positions (`profile@start`); mig-parted finds its own.\n\n");
        md.push_str("| pool | layout | GPUs | placement per GPU | unused compute slices per GPU | unused memory slices per GPU | unused compute slices | unused memory slices |\n");
        md.push_str("|---|---|---:|---|---:|---:|---:|---:|\n");
        for row in &stranded {
            let placed: Vec<&str> = row["placement"]
                .as_array()
                .map(|items| items.iter().filter_map(|item| item.as_str()).collect())
                .unwrap_or_default();
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                row["pool"].as_str().unwrap_or(""),
                row["layout"].as_str().unwrap_or(""),
                row["gpus"],
                placed.join(" "),
                row["unused_compute_slices_per_gpu"],
                row["unused_memory_slices_per_gpu"],
                row["unused_compute_slices"],
                row["unused_memory_slices"],
            ));
        }
    }
    md.push_str("\n## Node labels\n\n");
    md.push_str(&format!(
        "Point the GPU Operator at the generated configs: ClusterPolicy `migManager.config.name: {MIG_PARTED_CONFIGMAP}` and `devicePlugin.config.name: {DEVICE_PLUGIN_CONFIGMAP}` in namespace `{}`.\n\n",
        cell.gpu.operator_namespace
    ));
    md.push_str("A pool with a topology needs each level's label on every node, one value per domain of the nodes given (its Kueue Topology's levels).\n\n");
    md.push_str("| pool | layout | nodes | labels | taints | GPU devices per node | topology levels |\n|---|---|---:|---|---|---|---|\n");
    for group in groups {
        let labels: Vec<String> = group
            .labels
            .iter()
            .map(|(key, value)| format!("`{key}={value}`"))
            .collect();
        let taints: Vec<String> = taints_of(&group.pool)
            .iter()
            .map(|taint| format!("`{taint}`"))
            .collect();
        let devices: Vec<String> = group
            .allocatable
            .iter()
            .map(|(resource, count)| format!("`{resource}` {count}"))
            .collect();
        let levels: Vec<String> = levels_of(&group.pool)
            .iter()
            .map(|(label, nodes)| {
                format!(
                    "`{label}` per {nodes} node{}",
                    if *nodes == 1 { "" } else { "s" }
                )
            })
            .collect();
        let dash_or = |items: Vec<String>| {
            if items.is_empty() {
                "-".to_string()
            } else {
                items.join("<br>")
            }
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            group.pool,
            group.layout.as_deref().unwrap_or("-"),
            group.nodes,
            labels.join("<br>"),
            dash_or(taints),
            dash_or(devices),
            dash_or(levels),
        ));
    }
    (report, md)
}

#[cfg(test)]
pub(crate) mod fixtures {
    use crate::InputFile;
    use crate::testing::Rng;

    /// Up to three effective-capacity rows of small terms, so ties between them are frequent,
    /// each binding on the first term that equals the minimum (as `plan::capacity` does).
    pub(crate) fn random_rows(rng: &mut Rng) -> Vec<crate::plan::Effective> {
        use crate::plan::{Effective, Term};
        (0..rng.below(4))
            .map(|idx| {
                let quota = rng.below(5) as i64;
                let cell_admit = rng.below(5) as i64;
                let topology_fit = rng.below(5) as i64;
                let effective = quota.min(cell_admit).min(topology_fit);
                let binding = if quota == effective {
                    Term::Quota
                } else if cell_admit == effective {
                    Term::CellAdmit
                } else {
                    Term::TopologyFit
                };
                let gang = (rng.below(2) == 0).then_some(2);
                Effective {
                    pool: format!("p{idx}"),
                    resource: "nvidia.com/gpu".to_string(),
                    nominal: quota / 2,
                    borrowing: quota - quota / 2,
                    quota,
                    cell_admit,
                    topology_fit,
                    gang,
                    domain: gang.map(|_| 8),
                    within: None,
                    effective,
                    binding,
                }
            })
            .collect()
    }

    /// A cell `c1` of one or two exclusive pools and one to three tenants reserving in them,
    /// with bursts that often exceed the pool, so the quota and the cell terms both bind.
    pub(crate) fn generated_fleet(rng: &mut Rng) -> Vec<InputFile> {
        let pools: Vec<(String, usize)> = (0..1 + rng.below(2))
            .map(|idx| (format!("p{idx}"), 8 * (1 + rng.below(4))))
            .collect();
        let mut cell = String::from(
            "cell \"c1\" {\n    cloud \"aws\" region=\"us-east-1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    priority \"batch\" value=1000\n",
        );
        for (idx, (name, capacity)) in pools.iter().enumerate() {
            // Every other pool has a price, so the showback figures have priced and unpriced
            // rows (no random draw: the rest of the fleet stays as the seed made it).
            let price = if idx % 2 == 0 {
                format!("        price per-gpu-hour=1.{}5\n", idx % 10)
            } else {
                String::new()
            };
            cell.push_str(&format!(
                "    pool \"{name}\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes {} gpus-per-node=8\n        sharing \"exclusive\"\n{price}    }}\n",
                capacity / 8
            ));
        }
        cell.push_str("}\n");
        let mut files = vec![InputFile {
            path: "cells/c1.kdl".to_string(),
            contents: cell.into_bytes(),
        }];
        let mut left: Vec<usize> = pools.iter().map(|(_, capacity)| *capacity).collect();
        let mut members: std::collections::BTreeMap<&str, Vec<String>> =
            std::collections::BTreeMap::new();
        for tenant in 0..1 + rng.below(3) {
            let mut reservations = String::new();
            for ((pool, capacity), free) in pools.iter().zip(left.iter_mut()) {
                if rng.below(3) == 0 {
                    continue;
                }
                let reserved = rng.below(*free + 1);
                *free -= reserved;
                let burst = rng.below(2 * capacity + 1);
                let workload = rng.pick(&["train", "infer"]);
                reservations.push_str(&format!(
                    "        pool \"{pool}\" reserved={reserved} burst={burst} workload=\"{workload}\"\n"
                ));
            }
            let org = rng.pick(&["acme", "globex"]);
            members
                .entry(org)
                .or_default()
                .push(format!("\"t{tenant}\""));
            files.push(InputFile {
                path: format!("tenants/t{tenant}.kdl"),
                contents: format!(
                    "tenant \"t{tenant}\" {{\n    org \"{org}\"\n    team \"x\"\n    trust \"hard\"\n    groups admin=\"a{tenant}\" member=\"m{tenant}\"\n    quota cell=\"c1\" cpu=\"{}\" memory=\"64Gi\" pods={} {{\n{reservations}    }}\n    workload \"train\" service-account=\"sa\" priority=\"batch\"\n    workload \"infer\" service-account=\"sb\" priority=\"batch\"\n}}\n",
                    1 + rng.below(64),
                    1 + rng.below(100),
                )
                .into_bytes(),
            });
        }
        // The cell lists each org's members, as a cell must where an org is shared.
        let orgs: String = members
            .iter()
            .map(|(org, tenants)| {
                format!("    org \"{org}\" {{ tenants {}; }}\n", tenants.join(" "))
            })
            .collect();
        if let Some(cell) = files.first_mut() {
            let text = String::from_utf8_lossy(&cell.contents).replacen(
                "    priority",
                &format!("{orgs}    priority"),
                1,
            );
            cell.contents = text.into_bytes();
        }
        files
    }

    /// The plan of a fleet that must compile without errors.
    pub(crate) fn plan_of(files: &[InputFile]) -> crate::plan::Plan {
        let compilation = crate::compile(files);
        assert!(
            !compilation.has_errors(),
            "{}",
            crate::diag::render::human(
                &compilation.diagnostics,
                &compilation.sources,
                crate::diag::render::Color::Never
            )
        );
        compilation.plan.unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{generated_fleet, plan_of, random_rows};
    use super::*;
    use crate::plan::{Effective, Term};
    use crate::testing::Rng;

    /// The cells of a Markdown table row, without the outer pipes.
    fn cells(row: &str) -> Vec<&str> {
        row.trim()
            .trim_start_matches('|')
            .trim_end_matches('|')
            .split('|')
            .map(str::trim)
            .collect()
    }

    /// The rows of the effective capacity table of a quota report.
    fn effective_rows(markdown: &str) -> Vec<Vec<&str>> {
        let Some(start) = markdown.find("## Effective capacity") else {
            return Vec::new();
        };
        markdown[start..]
            .lines()
            .skip_while(|line| !line.starts_with("| tenant"))
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .map(cells)
            .collect()
    }

    /// Asserts that the report marks, for every row, the term that is the minimum.
    fn assert_marks_the_minimum(cell: &CellPlan, context: &str) {
        let (json, markdown) = quota(cell);
        let rows: Vec<&Effective> = cell.tenants.iter().flat_map(|t| &t.capacity).collect();
        let shown = effective_rows(&markdown);
        assert_eq!(shown.len(), rows.len(), "{context}\n{markdown}");
        for (row, shown) in rows.iter().zip(&shown) {
            let terms = [row.quota, row.cell_admit, row.topology_fit];
            let minimum = *terms.iter().min().unwrap();
            assert_eq!(row.effective, minimum, "{context}");
            // Columns: tenant, pool, resource, nominal, burst, lending, quota, cell, topology,
            // effective, binds.
            let bold: Vec<usize> = (6..9).filter(|idx| shown[*idx].starts_with("**")).collect();
            assert_eq!(bold.len(), 1, "{context}: {shown:?}");
            let marked = shown[bold[0]];
            assert_eq!(
                marked.trim_start_matches("**").split("**").next().unwrap(),
                minimum.to_string(),
                "{context}: {shown:?}"
            );
            assert_eq!(shown[9], minimum.to_string(), "{context}: {shown:?}");
            assert_eq!(shown[10], row.binding.as_str(), "{context}: {shown:?}");
        }
        let json_rows: Vec<&serde_json::Value> = json["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|tenant| tenant["capacity"].as_array().unwrap())
            .collect();
        assert_eq!(json_rows.len(), rows.len(), "{context}");
        for row in json_rows {
            let binding = row["binding"].as_str().unwrap();
            let terms = row["terms"].as_object().unwrap();
            let minimum = terms.values().map(|v| v.as_i64().unwrap()).min().unwrap();
            assert_eq!(terms[binding].as_i64(), Some(minimum), "{context}: {row}");
            assert_eq!(row["effective"].as_i64(), Some(minimum), "{context}: {row}");
        }
    }

    #[test]
    fn the_binding_term_shown_is_the_minimum_over_generated_fleets() {
        let mut bindings = std::collections::BTreeSet::new();
        for seed in 1..=60 {
            let mut rng = Rng(seed);
            let plan = plan_of(&generated_fleet(&mut rng));
            for cell in &plan.cells {
                bindings.extend(
                    cell.tenants
                        .iter()
                        .flat_map(|t| &t.capacity)
                        .map(|row| row.binding.as_str()),
                );
                assert_marks_the_minimum(cell, &format!("seed {seed}"));
            }
        }
        // Both terms the generated fleets can make bind were seen.
        assert!(
            bindings.contains("quota") && bindings.contains("cell"),
            "{bindings:?}"
        );
    }

    #[test]
    fn the_binding_term_shown_is_the_minimum_of_hand_made_rows() {
        let mut rng = Rng(11);
        let mut plan = plan_of(&generated_fleet(&mut Rng(3)));
        let Some(cell) = plan.cells.first_mut() else {
            panic!("no cell");
        };
        for round in 0..300 {
            for tenant in &mut cell.tenants {
                tenant.capacity = random_rows(&mut rng);
            }
            assert_marks_the_minimum(cell, &format!("round {round}"));
        }
    }

    #[test]
    fn the_node_groups_offer_exactly_the_capacity_of_their_pools() {
        // The simulated cell (tests/conformance/) makes its fake nodes from the node groups'
        // labels, taints and devices per node; their sum must be the capacity every check uses.
        let example = crate::testing::support::compile_example()
            .plan
            .expect("a plan");
        let mut plans = vec![example];
        plans.extend((1..=20).map(|seed| plan_of(&generated_fleet(&mut Rng(seed)))));
        for plan in &plans {
            for cell in &plan.cells {
                let mut offered: std::collections::BTreeMap<(String, String), i64> =
                    std::collections::BTreeMap::new();
                for group in &cell.gpu.capacity.node_groups {
                    assert!(!group.allocatable.is_empty(), "{}: {group:?}", cell.name);
                    for (resource, count) in &group.allocatable {
                        *offered
                            .entry((group.pool.clone(), resource.clone()))
                            .or_default() += group.nodes * count;
                    }
                }
                let offers: std::collections::BTreeMap<(String, String), i64> = cell
                    .pools
                    .iter()
                    .flat_map(|pool| {
                        pool.offers.iter().map(|offer| {
                            ((pool.name.clone(), offer.resource.clone()), offer.capacity)
                        })
                    })
                    .collect();
                assert_eq!(offered, offers, "cell {}", cell.name);
                let (json, markdown) = capacity(cell);
                for group in json["node_groups"].as_array().unwrap() {
                    let pool = cell
                        .pools
                        .iter()
                        .find(|pool| group["pool"] == pool.name.as_str())
                        .unwrap();
                    assert_eq!(
                        group["taints"].as_array().unwrap().len(),
                        pool.taints.len(),
                        "{group}"
                    );
                }
                assert!(markdown.contains("| GPU devices per node |"), "{markdown}");
            }
        }
    }

    #[test]
    fn a_topology_pools_node_groups_name_each_level_and_its_domain_size() {
        // The simulated cell labels its fake nodes with one value per domain from these; the
        // example's training pool is 2 blocks of 16 nodes, in racks of 4.
        let example = crate::testing::support::compile_example()
            .plan
            .expect("a plan");
        let cell = example
            .cells
            .iter()
            .find(|cell| cell.name == "us-east-1a")
            .expect("us-east-1a");
        let (json, markdown) = capacity(cell);
        let groups = json["node_groups"].as_array().unwrap();
        let train = groups
            .iter()
            .find(|group| group["pool"] == "h100-train")
            .unwrap();
        assert_eq!(
            train["topology_levels"],
            json!([
                {"label": "cloud.example.com/block", "nodes_per_domain": 16},
                {"label": "cloud.example.com/rack", "nodes_per_domain": 4},
                {"label": "kubernetes.io/hostname", "nodes_per_domain": 1},
            ])
        );
        let infer = groups
            .iter()
            .find(|group| group["pool"] == "h100-infer")
            .unwrap();
        assert_eq!(infer["topology_levels"], json!([]));
        assert!(
            markdown.contains("| `cloud.example.com/block` per 16 nodes<br>`cloud.example.com/rack` per 4 nodes<br>`kubernetes.io/hostname` per 1 node |"),
            "{markdown}"
        );
    }

    #[test]
    fn ratios_are_rounded_up_to_hundredths_without_floats() {
        assert_eq!(
            hundredths_up(96, 256).map(format_hundredths).as_deref(),
            Some("0.38")
        );
        assert_eq!(
            hundredths_up(1, 3).map(format_hundredths).as_deref(),
            Some("0.34")
        );
        assert_eq!(
            hundredths_up(2, 1).map(format_hundredths).as_deref(),
            Some("2.00")
        );
        assert_eq!(
            hundredths_up(1001, 1000).map(format_hundredths).as_deref(),
            Some("1.01")
        );
        assert_eq!(hundredths_up(5, 0), None);
        assert_eq!(format_hundredths(hundredths(1.5)), "1.50");
        assert_eq!(format_hundredths(hundredths(1.0)), "1.00");
        assert_eq!(format_hundredths(hundredths(0.125)), "0.13");
        assert_eq!(format_hundredths(-250), "-2.50");
        assert_eq!(format_hundredths(-5), "-0.05");
    }

    #[test]
    fn binding_keys_match_the_serialized_terms() {
        for term in [Term::Quota, Term::CellAdmit, Term::TopologyFit] {
            assert_eq!(
                serde_json::to_value(term).unwrap(),
                serde_json::Value::from(term_key(term))
            );
        }
    }

    /// A fleet with two orgs, one tenant with two workloads, a pool nobody fully reserved.
    fn small_fleet() -> crate::plan::Plan {
        let cell = "cell \"c1\" {\n    cloud \"aws\" region=\"us-east-1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    priority \"batch\" value=1000\n    priority \"serving\" value=5000\n    pool \"big\" {\n        gpu \"H100-80GB-SXM\"\n        nodes 2 gpus-per-node=8\n        sharing \"exclusive\"\n    }\n}\n";
        let first = "tenant \"alpha\" {\n    org \"acme\"\n    team \"x\"\n    trust \"hard\"\n    groups admin=\"a\" member=\"m\"\n    quota cell=\"c1\" cpu=\"10\" memory=\"3Gi\" pods=7 {\n        pool \"big\" reserved=6 burst=20 workload=\"train\"\n    }\n    workload \"train\" service-account=\"sa\" priority=\"batch\"\n    workload \"infer\" service-account=\"sb\" priority=\"serving\"\n}\n";
        let second = "tenant \"beta\" {\n    org \"globex\"\n    team \"y\"\n    trust \"hard\"\n    groups admin=\"b\" member=\"n\"\n    quota cell=\"c1\" cpu=\"4\" memory=\"1Gi\" pods=3 {\n    }\n    workload \"train\" service-account=\"sa\" priority=\"batch\"\n}\n";
        plan_of(&[
            crate::InputFile {
                path: "cells/c1.kdl".into(),
                contents: cell.into(),
            },
            crate::InputFile {
                path: "tenants/alpha.kdl".into(),
                contents: first.into(),
            },
            crate::InputFile {
                path: "tenants/beta.kdl".into(),
                contents: second.into(),
            },
        ])
    }

    #[test]
    fn the_report_shows_ceilings_splits_unreserved_capacity_and_the_cohort_tree() {
        let plan = small_fleet();
        let cell = plan.cells.first().unwrap();
        let (json, markdown) = quota(cell);
        // alpha's 10 cpu, 3Gi and 7 pods over its two namespaces; the parts add up.
        assert!(
            markdown.contains("| alpha | 10 | 3Gi | 7 | `alpha-train` | train | 5 | 1536Mi | 4 |\n|  |  |  |  | `alpha-infer` | infer | 5 | 1536Mi | 3 |"),
            "{markdown}"
        );
        let namespaces = json["tenants"][0]["namespaces"].as_array().unwrap();
        let pods: i64 = namespaces
            .iter()
            .map(|ns| ns["pods"].as_i64().unwrap())
            .sum();
        assert_eq!(pods, 7);
        // 16 GPUs, 6 reserved: 10 unreserved, which alpha may borrow; (6 + 20) / 16 = 1.625.
        assert!(
            markdown.contains("| big | `pool-big` | `nvidia.com/gpu` | 16 | 6 | 20 | 10 | 26 | 1.63 (above 1.00) | alpha |"),
            "{markdown}"
        );
        assert_eq!(json["pools"][0]["unreserved"], 10);
        assert_eq!(json["pools"][0]["ratio"], "1.63");
        assert_eq!(json["oversubscribe"], "1.00");
        // The cell term binds alpha: 16 devices, quota 26.
        assert_eq!(json["tenants"][0]["capacity"][0]["binding"], "cell_admit");
        // beta reserves nothing and is listed as such.
        assert!(
            markdown.contains("without a GPU reservation: `beta`"),
            "{markdown}"
        );
        assert!(
            markdown.contains("- `root`\n  - `org-acme` (org `acme`)\n    - ClusterQueue `alpha`\n  - `org-globex` (org `globex`)\n    - ClusterQueue `beta`\n"),
            "{markdown}"
        );
        assert_eq!(
            json["cohorts"]["orgs"][1]["cluster_queues"][0]["name"],
            "beta"
        );
    }

    #[test]
    fn the_report_is_deterministic() {
        let plan = small_fleet();
        let cell = plan.cells.first().unwrap();
        assert_eq!(quota(cell), quota(&small_fleet().cells[0]));
    }
}
