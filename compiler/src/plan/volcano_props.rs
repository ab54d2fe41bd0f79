//! Generated cells compiled with each scheduler: the capacity, pinning and trust checks run
//! unchanged whatever the backend, and a Volcano cell that compiles admits each tenant exactly
//! the effective capacity the plan (and `describe`) reports.
//!
//! Each round generates one cell (exclusive H100 and A100 pools, which offer the same
//! `nvidia.com/gpu`, a MIG pool and a time-sliced L4 pool, each with a taint of its own, a taint
//! another pool shares, or none) and up to four tenants of every trust class with random
//! reservations, bursts and lending limits, and compiles it twice: as declared (Kueue) and with
//! `scheduler "volcano"`. It then checks:
//! - every finding of the Kueue compile is a finding of the Volcano compile, at the same place,
//!   and the Volcano compile adds only the Volcano codes (or, when one of those stops validation,
//!   the Kueue compile's validation findings are all there);
//! - where both compile, the plans' effective capacity rows, reach and host access are equal;
//!   every Volcano queue lists every GPU resource of the cell with
//!   `guarantee <= deserved <= capability`, and the guarantees fit the pools;
//! - the capacity Volcano v1.10.0's capacity plugin lets a tenant hold of a pool resource,
//!   `min(capability, pool capacity, cell total − other queues' guarantees)` (its
//!   `realCapability`, on the one pool its pods can reach for that resource), equals the plan's
//!   `min(quota, cell_admit)`;
//! - no tenant's pods can reach (by the taints the floor lets them tolerate) a pool that offers a
//!   resource its queue holds unless it reserves that resource there.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::Code;
use crate::plan::{CellPlan, Plan};
use crate::testing::Rng;
use crate::testing::support::compile_files;

/// The line after which the Volcano twin of a cell declares its scheduler.
pub(super) const KUBERNETES_LINE: &str = "    kubernetes \"1.34\"\n";
/// The line the Volcano twin adds.
const SCHEDULER_LINE: &str = "    scheduler \"volcano\"\n";

/// The codes only a Volcano cell reports.
const VOLCANO_CODES: [Code; 4] = [
    Code::SchedulerFeatureUnsupported,
    Code::VolcanoResourceInSeveralPools,
    Code::VolcanoGuaranteeOnSharedResource,
    Code::PoolReachableWithoutReservation,
];

/// One generated pool: its declaration and what a reservation in it names.
pub(super) struct GenPool {
    name: String,
    text: String,
    /// `None` for whole devices, else the MIG profile.
    profile: Option<&'static str>,
    /// Devices a reservation may take at most, summed over tenants.
    capacity: usize,
    /// Whether only one org may reserve in it (time-slicing).
    shared: bool,
    /// Whether it is a MIG pool (no `hard` tenant) or a shared pool (`soft` only).
    sharing: &'static str,
}

fn taint(rng: &mut Rng, name: &str) -> String {
    match rng.below(10) {
        0..=5 => format!("        taint \"tenantc.io/pool\" \"{name}\" effect=\"NoSchedule\"\n"),
        6..=7 => "        taint \"shared\" \"x\" effect=\"NoSchedule\"\n".to_string(),
        _ => String::new(),
    }
}

fn gen_pool(rng: &mut Rng, idx: usize) -> GenPool {
    let name = format!("p{idx}");
    let taint = taint(rng, &name);
    let nodes = 1 + rng.below(3);
    match rng.below(4) {
        0 | 1 => {
            let gpu = rng.pick(&["H100-80GB-SXM", "A100-80GB-SXM"]);
            GenPool {
                text: format!(
                    "    pool \"{name}\" {{\n        gpu \"{gpu}\"\n        nodes {nodes} gpus-per-node=8\n        sharing \"exclusive\"\n        nvlink-domain gpus=8\n{taint}    }}\n"
                ),
                name,
                profile: None,
                capacity: nodes * 8,
                shared: false,
                sharing: "exclusive",
            }
        }
        2 => GenPool {
            text: format!(
                "    pool \"{name}\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes {nodes} gpus-per-node=8\n        sharing \"mig\"\n{taint}        mig-layout \"small\" {{\n            profile \"1g.10gb\" 7\n        }}\n    }}\n"
            ),
            name,
            profile: Some("1g.10gb"),
            capacity: nodes * 8 * 7,
            shared: false,
            sharing: "mig",
        },
        _ => GenPool {
            text: format!(
                "    pool \"{name}\" {{\n        gpu \"L4\"\n        nodes {nodes} gpus-per-node=1\n        sharing \"time-slice\"\n        replicas 4\n{taint}    }}\n"
            ),
            name,
            profile: None,
            capacity: nodes * 4,
            shared: true,
            sharing: "time-slice",
        },
    }
}

/// One generated fleet: a cell `c1` and its tenants, as `(path, text)`.
pub(super) fn gen_fleet(rng: &mut Rng) -> Vec<(String, String)> {
    let pools: Vec<GenPool> = (0..1 + rng.below(4))
        .map(|idx| gen_pool(rng, idx))
        .collect();
    let mut cell = String::from(
        "cell \"c1\" {\n    cloud \"aws\" region=\"us-east-1\"\n    kubernetes \"1.34\"\n    driver \"580\"\n    priority \"batch\" value=1000\n",
    );
    for pool in &pools {
        cell.push_str(&pool.text);
    }
    cell.push_str("}\n");
    let mut files = vec![("cells/c1.kdl".to_string(), cell)];
    let mut left: Vec<usize> = pools.iter().map(|pool| pool.capacity).collect();
    let mut shared_org: BTreeMap<usize, &str> = BTreeMap::new();
    for tenant in 0..1 + rng.below(4) {
        let trust = rng.pick(&["soft", "mig", "hard"]);
        let org = rng.pick(&["o1", "o2"]);
        let mut reservations = String::new();
        for (idx, pool) in pools.iter().enumerate() {
            if rng.below(2) == 0 {
                continue;
            }
            // Mostly what trust and org allow, sometimes not, so the trust checks fire too.
            let allowed = trust == "soft"
                || pool.sharing == "exclusive"
                || (trust == "mig" && pool.sharing == "mig");
            if !allowed && rng.below(4) != 0 {
                continue;
            }
            if pool.shared {
                let owner = shared_org.entry(idx).or_insert(org);
                if *owner != org && rng.below(4) != 0 {
                    continue;
                }
            }
            let free = left.get(idx).copied().unwrap_or(0);
            let reserved = rng.below(free / 2 + 1);
            if let Some(slot) = left.get_mut(idx) {
                *slot -= reserved;
            }
            let burst = rng.below(pool.capacity / 2 + 1);
            let lend = match rng.below(3) {
                0 => format!(" lend={}", rng.below(reserved + 1)),
                _ => String::new(),
            };
            let profile = pool
                .profile
                .map(|profile| format!(" profile=\"{profile}\""))
                .unwrap_or_default();
            reservations.push_str(&format!(
                "        pool \"{}\"{profile} reserved={reserved} burst={burst}{lend}\n",
                pool.name
            ));
        }
        let name = format!("t{tenant}");
        files.push((
            format!("tenants/{name}.kdl"),
            format!(
                "tenant \"{name}\" {{\n    org \"{org}\"\n    team \"t\"\n    trust \"{trust}\"\n    groups admin=\"{name}-admins\" member=\"{name}\"\n    quota cell=\"c1\" cpu=\"64\" memory=\"256Gi\" pods=100 {{\n{reservations}    }}\n    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n    registry \"registry.example.com/{name}\"\n}}\n"
            ),
        ));
    }
    files
}

/// The findings of a compile as `(code, file, start)`, sorted.
pub(super) fn findings(compilation: &crate::Compilation) -> BTreeSet<(Code, String, u32)> {
    compilation
        .diagnostics
        .iter()
        .map(|diagnostic| {
            let (file, start) = diagnostic.labels.iter().find(|label| label.primary).map_or(
                (String::new(), 0),
                |label| {
                    (
                        compilation.sources.path(label.span.file).to_string(),
                        label.span.start,
                    )
                },
            );
            (diagnostic.code, file, start)
        })
        .collect()
}

pub(super) fn compile(files: &[(String, String)]) -> crate::Compilation {
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    compile_files(&borrowed)
}

/// The same fleet with `scheduler "volcano"` in its cell.
fn as_volcano(files: &[(String, String)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(path, text)| {
            let text = if path.starts_with("cells/") {
                text.replacen(
                    KUBERNETES_LINE,
                    &format!("{KUBERNETES_LINE}{SCHEDULER_LINE}"),
                    1,
                )
            } else {
                text.clone()
            };
            (path.clone(), text)
        })
        .collect()
}

/// What Volcano v1.10.0's capacity plugin lets `tenant` hold of `resource` on `pool`: its
/// `realCapability` (`capability` capped by the cell's total minus every other queue's
/// guarantee) and what the pool holds, since the checks leave its pods one pool for the resource.
fn volcano_bound(cell: &CellPlan, tenant: &str, pool: &str, resource: &str) -> i64 {
    let Some(queue) = cell
        .tenants
        .iter()
        .find(|plan| plan.name == tenant)
        .and_then(|plan| plan.volcano.as_ref())
    else {
        return -1;
    };
    let held = |queue: &crate::plan::volcano::VolcanoQueuePlan| {
        queue
            .resources
            .iter()
            .find(|held| held.resource == resource)
            .cloned()
    };
    let capability = held(queue).map_or(0, |held| held.capability);
    let offered = |name: Option<&str>| -> i64 {
        cell.pools
            .iter()
            .filter(|candidate| name.is_none_or(|name| candidate.name == name))
            .flat_map(|candidate| &candidate.offers)
            .filter(|offer| offer.resource == resource)
            .map(|offer| offer.capacity)
            .sum()
    };
    let others_guarantee: i64 = cell
        .tenants
        .iter()
        .filter(|plan| plan.name != tenant)
        .filter_map(|plan| plan.volcano.as_ref())
        .filter_map(held)
        .map(|held| held.guarantee)
        .sum();
    // `realCapability`: the total, less every guarantee but the queue's own.
    let real_capability = capability.min(offered(None) - others_guarantee);
    real_capability.min(offered(Some(pool))).max(0)
}

fn check_round(seed: u64, rng: &mut Rng, stats: &mut BTreeMap<&'static str, usize>) {
    let kueue_files = gen_fleet(rng);
    let volcano_files = as_volcano(&kueue_files);
    let kueue = compile(&kueue_files);
    let volcano = compile(&volcano_files);
    let context = || {
        format!(
            "seed {seed}:\n{}",
            kueue_files
                .iter()
                .map(|(path, text)| format!("--- {path}\n{text}"))
                .collect::<String>()
        )
    };
    assert!(
        volcano.internal_error.is_none() && kueue.internal_error.is_none(),
        "an internal error: {:?} {:?}\n{}",
        kueue.internal_error,
        volcano.internal_error,
        context()
    );
    let kueue_found = findings(&kueue);
    // Where the Volcano cell file has its extra line, positions after it move back by its length.
    let inserted_at = kueue_files
        .first()
        .and_then(|(_, text)| text.find(KUBERNETES_LINE))
        .map_or(0, |at| at + KUBERNETES_LINE.len());
    let volcano_found: BTreeSet<_> = findings(&volcano)
        .into_iter()
        .map(|(code, file, start)| {
            let moved =
                file.starts_with("cells/") && start as usize >= inserted_at + SCHEDULER_LINE.len();
            let start = if moved {
                start - SCHEDULER_LINE.len() as u32
            } else {
                start
            };
            (code, file, start)
        })
        .collect();
    let volcano_only: BTreeSet<_> = volcano_found
        .iter()
        .filter(|(code, _, _)| VOLCANO_CODES.contains(code))
        .cloned()
        .collect();
    let volcano_rest: BTreeSet<_> = volcano_found.difference(&volcano_only).cloned().collect();
    let stopped_validation = volcano_only
        .iter()
        .any(|(code, _, _)| code.stage() == "validate");
    if stopped_validation {
        // The Volcano findings stopped validation; every validation finding of Kueue is there.
        let kueue_validation: BTreeSet<_> = kueue_found
            .iter()
            .filter(|(code, _, _)| code.stage() != "resolve")
            .cloned()
            .collect();
        assert!(
            volcano_rest == kueue_validation,
            "validation differs: only Kueue {:?}, only Volcano {:?}\n{}",
            kueue_validation
                .difference(&volcano_rest)
                .collect::<Vec<_>>(),
            volcano_rest
                .difference(&kueue_validation)
                .collect::<Vec<_>>(),
            context()
        );
        *stats
            .entry("stopped by a Volcano validation code")
            .or_default() += 1;
        return;
    }
    assert!(
        volcano_rest == kueue_found,
        "the checks differ between the schedulers: only Kueue {:?}, only Volcano {:?}\n{}",
        kueue_found.difference(&volcano_rest).collect::<Vec<_>>(),
        volcano_rest.difference(&kueue_found).collect::<Vec<_>>(),
        context()
    );
    if !volcano_only.is_empty() {
        *stats
            .entry("refused by the Volcano reach check")
            .or_default() += 1;
    }
    let (Some(kueue_plan), Some(volcano_plan)) = (&kueue.plan, &volcano.plan) else {
        *stats.entry("no plan").or_default() += 1;
        return;
    };
    if volcano.has_errors() {
        return;
    }
    *stats.entry("compiled with both").or_default() += 1;
    compare_plans(kueue_plan, volcano_plan, &context);
}

fn compare_plans(kueue: &Plan, volcano: &Plan, context: &dyn Fn() -> String) {
    for (kueue_cell, volcano_cell) in kueue.cells.iter().zip(&volcano.cells) {
        assert!(volcano_cell.volcano_orgs.len() == volcano_cell.orgs.len());
        let queues: Vec<&crate::plan::volcano::VolcanoQueuePlan> = volcano_cell
            .tenants
            .iter()
            .filter_map(|tenant| tenant.volcano.as_ref())
            .collect();
        assert_eq!(queues.len(), volcano_cell.tenants.len(), "{}", context());
        assert!(
            crate::plan::volcano::guarantee_overflow(&volcano_cell.pools, &queues).is_empty(),
            "{}",
            context()
        );
        for (kueue_tenant, volcano_tenant) in kueue_cell.tenants.iter().zip(&volcano_cell.tenants) {
            assert_eq!(
                kueue_tenant.capacity,
                volcano_tenant.capacity,
                "{}",
                context()
            );
            let flags = |tenant: &crate::plan::TenantPlan| -> Vec<(String, bool)> {
                tenant
                    .reach
                    .iter()
                    .map(|reach| (reach.pool.clone(), reach.reachable))
                    .collect()
            };
            assert_eq!(flags(kueue_tenant), flags(volcano_tenant), "{}", context());
            assert_eq!(
                kueue_tenant.cell_host_access.granted,
                volcano_tenant.cell_host_access.granted
            );
            let Some(queue) = &volcano_tenant.volcano else {
                continue;
            };
            // Every GPU resource of the cell, in order, each within its bounds.
            let listed: Vec<&str> = queue
                .resources
                .iter()
                .map(|held| held.resource.as_str())
                .collect();
            let cell_resources: Vec<&str> = volcano_cell
                .gpu_resources
                .iter()
                .map(String::as_str)
                .collect();
            assert_eq!(listed, cell_resources, "{}", context());
            for held in &queue.resources {
                assert!(
                    0 <= held.guarantee
                        && held.guarantee <= held.deserved
                        && held.deserved <= held.capability,
                    "{held:?}\n{}",
                    context()
                );
            }
            for row in &volcano_tenant.capacity {
                assert_eq!(
                    volcano_bound(volcano_cell, &volcano_tenant.name, &row.pool, &row.resource),
                    row.quota.min(row.cell_admit),
                    "what Volcano admits of {} on {} for {}\n{}",
                    row.resource,
                    row.pool,
                    volcano_tenant.name,
                    context()
                );
            }
            // The pools its pods reach by taint hold no resource of its queue it does not
            // reserve there.
            let own: Vec<&crate::plan::PoolPlan> = volcano_cell
                .pools
                .iter()
                .filter(|pool| {
                    volcano_tenant
                        .queue
                        .flavors
                        .iter()
                        .any(|flavor| flavor.pool == pool.name)
                })
                .collect();
            for pool in &volcano_cell.pools {
                if pool.untolerated_taint(&own).is_some() {
                    continue;
                }
                for offer in &pool.offers {
                    let holds = queue
                        .resources
                        .iter()
                        .any(|held| held.resource == offer.resource && held.capability > 0);
                    let reserved_here = volcano_tenant
                        .queue
                        .flavors
                        .iter()
                        .filter(|flavor| flavor.pool == pool.name)
                        .flat_map(|flavor| &flavor.resources)
                        .any(|entitlement| {
                            entitlement.resource == offer.resource
                                && entitlement.nominal + entitlement.borrowing > 0
                        });
                    assert!(
                        !holds || reserved_here,
                        "{} reaches {} for {}\n{}",
                        volcano_tenant.name,
                        pool.name,
                        offer.resource,
                        context()
                    );
                }
            }
        }
    }
}

#[test]
fn the_checks_and_the_effective_capacity_are_the_same_with_either_scheduler() {
    let mut stats: BTreeMap<&'static str, usize> = BTreeMap::new();
    for seed in 0..300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed);
        check_round(seed, &mut rng, &mut stats);
    }
    // The generator reaches every outcome, so no branch of the property is vacuous.
    for outcome in [
        "compiled with both",
        "stopped by a Volcano validation code",
        "refused by the Volcano reach check",
    ] {
        assert!(
            stats.get(outcome).copied().unwrap_or(0) > 0,
            "no round {outcome}: {stats:?}"
        );
    }
}
