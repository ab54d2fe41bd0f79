//! The exact splits: a tenant's ceilings over its namespaces and over the pools its ClusterQueue
//! counts them on, a fleet reservation over its cells, and the whole GPUs a quota reserves of a
//! model.
//!
//! Consumes: a validated tenant's quota and workloads in a cell, or a fleet reservation.
//! Produces: the parts, in the order `plan` and `lower` emit them.
//!
//! Invariant: every split is exact (the parts add up to the whole in the smallest unit, with no
//! rounding loss), so `validate/kueue/` checks what `plan` resolves, and a fleet that passes
//! the checks lowers to namespace quotas that add up to its ceilings.

use std::collections::BTreeSet;

use crate::model::{
    Cell, FleetCellShare, FleetReservation, Pool, PoolQuota, Quota, Sharing, Workload, WorkloadKind,
};
use crate::quantity::Quantity;

/// A resource a tenant's ceilings bound in a cell, besides GPUs: what its ClusterQueue's
/// ceiling flavor covers and each namespace's ResourceQuota splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CeilingResource {
    /// CPU requests, in cores.
    Cpu,
    /// Memory requests, in bytes.
    Memory,
    /// Pods.
    Pods,
}

impl CeilingResource {
    /// Every ceiling resource, in the order a ClusterQueue covers them.
    pub const ALL: [CeilingResource; 3] = [
        CeilingResource::Cpu,
        CeilingResource::Memory,
        CeilingResource::Pods,
    ];

    /// The Kubernetes resource name, which is also the field of a quota and a reservation.
    pub fn as_str(self) -> &'static str {
        match self {
            CeilingResource::Cpu => "cpu",
            CeilingResource::Memory => "memory",
            CeilingResource::Pods => "pods",
        }
    }
}

/// One workload namespace's part of a tenant's ceilings in a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CeilingPart {
    /// The workload whose namespace gets the part.
    pub workload: WorkloadKind,
    /// CPU requests.
    pub cpu: Quantity,
    /// Memory requests.
    pub memory: Quantity,
    /// Pods.
    pub pods: i64,
}

/// Splits `total` by `shares` in whole `unit`s: each part is the floor of its proportional
/// share of the whole units, and what the floors leave (the rest of the units, and anything
/// below one unit) goes to the first part, so the parts always add up to `total` exactly.
///
/// Shares below 1 count as 1; an empty list of shares gives no parts, and a `unit` below 1
/// counts as 1.
pub fn split_by_shares(total: i128, unit: i128, shares: &[i64]) -> Vec<i128> {
    let unit = unit.max(1);
    let shares: Vec<i128> = shares
        .iter()
        .map(|share| i128::from(*share).max(1))
        .collect();
    let share_sum: i128 = shares.iter().sum();
    if shares.is_empty() {
        return Vec::new();
    }
    let units = total / unit;
    let mut parts: Vec<i128> = shares
        .iter()
        .map(|share| units.saturating_mul(*share) / share_sum * unit)
        .collect();
    let assigned: i128 = parts.iter().sum();
    if let Some(first) = parts.first_mut() {
        *first += total - assigned;
    }
    parts
}

/// A tenant's cpu, memory and pods ceilings in a cell, split over its workload namespaces, in
/// the order of [`WorkloadKind`] (the order `lower` emits namespaces in).
///
/// With explicit `split` entries, each workload that has one gets it as declared (a fleet that
/// passed validation has exactly one per workload, adding up to the ceilings). Otherwise the
/// ceilings are split by each workload's `share` (1 when absent) with [`split_by_shares`]:
/// cpu in millicores, memory in whole bytes and pods in pods, the remainder to the first
/// workload, so the parts add up to the ceilings exactly.
pub fn split_ceilings(quota: &Quota, workloads: &[Workload]) -> Vec<CeilingPart> {
    let mut kinds: Vec<&Workload> = workloads.iter().collect();
    kinds.sort_by_key(|workload| workload.kind.value);
    kinds.dedup_by_key(|workload| workload.kind.value);
    if !quota.splits.is_empty() {
        return kinds
            .iter()
            .filter_map(|workload| {
                let split = quota
                    .splits
                    .iter()
                    .find(|split| split.workload.value == workload.kind.value)?;
                Some(CeilingPart {
                    workload: workload.kind.value,
                    cpu: split.cpu.value,
                    memory: split.memory.value,
                    pods: split.pods.value,
                })
            })
            .collect();
    }
    let shares: Vec<i64> = kinds
        .iter()
        .map(|workload| workload.share.as_ref().map_or(1, |share| share.value))
        .collect();
    let cpu = split_by_shares(quota.cpu.value.milli(), 1, &shares);
    let memory = split_by_shares(quota.memory.value.milli(), 1000, &shares);
    let pods = split_by_shares(i128::from(quota.pods.value), 1, &shares);
    kinds
        .iter()
        .zip(cpu)
        .zip(memory)
        .zip(pods)
        .map(|(((workload, cpu), memory), pods)| CeilingPart {
            workload: workload.kind.value,
            // A part is at most its ceiling, so it is in range; the fallback is never taken.
            cpu: Quantity::from_milli(cpu, quota.cpu.value.format()).unwrap_or(quota.cpu.value),
            memory: Quantity::from_milli(memory, quota.memory.value.format())
                .unwrap_or(quota.memory.value),
            pods: i64::try_from(pods).unwrap_or(quota.pods.value),
        })
        .collect()
}

/// One pool's part of a tenant's cpu, memory and pods ceilings in a cell, as its ClusterQueue
/// gives it to the pool's flavor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolCeiling {
    /// The pool.
    pub pool: String,
    /// CPU requests of pods on the pool.
    pub cpu: Quantity,
    /// Memory requests of pods on the pool.
    pub memory: Quantity,
    /// Pods on the pool.
    pub pods: i64,
}

/// Whether a tenant's ClusterQueue in `cell` counts cpu, memory and pods per pool flavor:
/// when a pool it reserves in has a topology (Kueue gives a topology-aware pod set one flavor
/// for all its resources, so those flavors must hold cpu, memory and pods too), or when any
/// reservation of the quota declares a part of the ceiling.
pub fn counts_ceiling_per_pool(quota: &Quota, cell: &Cell) -> bool {
    quota.pools.iter().any(|reservation| {
        reservation.cpu.is_some()
            || reservation.memory.is_some()
            || reservation.pods.is_some()
            || pool_of(cell, reservation).is_some_and(|pool| pool.topology.is_some())
    })
}

/// The per-pool parts of a tenant's ceilings in `cell`, in the order the quota first names
/// each pool; `None` when its ClusterQueue keeps the ceiling on the ceiling flavor alone (see
/// [`counts_ceiling_per_pool`]). A pool's part is the sum of its reservations' parts, an
/// undeclared part counting 0 (a fleet that passed validation declares every part).
pub fn pool_ceilings(quota: &Quota, cell: &Cell) -> Option<Vec<PoolCeiling>> {
    if !counts_ceiling_per_pool(quota, cell) {
        return None;
    }
    let mut parts: Vec<PoolCeiling> = Vec::new();
    for reservation in &quota.pools {
        if pool_of(cell, reservation).is_none() {
            continue;
        }
        let index = match parts
            .iter()
            .position(|part| part.pool == reservation.pool.value)
        {
            Some(index) => index,
            None => {
                parts.push(PoolCeiling {
                    pool: reservation.pool.value.clone(),
                    cpu: Quantity::from_milli(0, quota.cpu.value.format())
                        .unwrap_or(quota.cpu.value),
                    memory: Quantity::from_milli(0, quota.memory.value.format())
                        .unwrap_or(quota.memory.value),
                    pods: 0,
                });
                parts.len() - 1
            }
        };
        let Some(part) = parts.get_mut(index) else {
            continue;
        };
        if let Some(cpu) = &reservation.cpu {
            part.cpu = sum_quantity(part.cpu, cpu.value);
        }
        if let Some(memory) = &reservation.memory {
            part.memory = sum_quantity(part.memory, memory.value);
        }
        if let Some(pods) = &reservation.pods {
            part.pods = part.pods.saturating_add(pods.value);
        }
    }
    Some(parts)
}

/// `a + b`, written as `b` is when `a` is zero (so a single declared part keeps its spelling).
fn sum_quantity(a: Quantity, b: Quantity) -> Quantity {
    if a.milli() == 0 {
        b
    } else {
        a.saturating_add(b)
    }
}

/// One cell's part of a fleet reservation, as [`fleet_split`] takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetPart {
    /// A fixed number of GPUs.
    Fixed(i64),
    /// A weight in the GPUs the fixed parts leave.
    Weight(i64),
}

/// Why a fleet reservation does not split into its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetSplitError {
    /// The fixed parts add up to more than the total.
    FixedAboveTotal {
        /// The sum of the fixed parts.
        fixed: i64,
    },
    /// The fixed parts leave GPUs, and no cell has a weight to take them.
    RestWithoutWeight {
        /// The GPUs left.
        rest: i64,
    },
    /// A cell entry has both a fixed part and a weight, or neither (its index).
    PartAmbiguous(usize),
}

/// Splits `total` GPUs over cells: fixed parts as given, and the rest by weight, each weighted
/// cell getting the floor of its proportional share and the remainder going one GPU each to
/// the first weighted cells in declaration order. The parts add up to `total` exactly.
pub fn fleet_split(total: i64, parts: &[FleetPart]) -> Result<Vec<i64>, FleetSplitError> {
    let fixed = parts
        .iter()
        .map(|part| match part {
            FleetPart::Fixed(gpus) => *gpus,
            FleetPart::Weight(_) => 0,
        })
        .fold(0_i64, i64::saturating_add);
    if fixed > total {
        return Err(FleetSplitError::FixedAboveTotal { fixed });
    }
    let rest = total - fixed;
    let weights: i128 = parts
        .iter()
        .map(|part| match part {
            FleetPart::Weight(weight) => i128::from((*weight).max(1)),
            FleetPart::Fixed(_) => 0,
        })
        .sum();
    if weights == 0 {
        return if rest == 0 {
            Ok(parts
                .iter()
                .map(|part| match part {
                    FleetPart::Fixed(gpus) => *gpus,
                    FleetPart::Weight(_) => 0,
                })
                .collect())
        } else {
            Err(FleetSplitError::RestWithoutWeight { rest })
        };
    }
    let mut split: Vec<i64> = parts
        .iter()
        .map(|part| match part {
            FleetPart::Fixed(gpus) => *gpus,
            FleetPart::Weight(weight) => {
                let share = i128::from(rest) * i128::from((*weight).max(1)) / weights;
                i64::try_from(share).unwrap_or(0)
            }
        })
        .collect();
    let mut remainder = total
        - split
            .iter()
            .fold(0_i64, |sum, part| sum.saturating_add(*part));
    for (part, gpus) in parts.iter().zip(split.iter_mut()) {
        if remainder <= 0 {
            break;
        }
        if matches!(part, FleetPart::Weight(_)) {
            *gpus += 1;
            remainder -= 1;
        }
    }
    Ok(split)
}

/// The GPUs each cell entry of a fleet reservation gets, in declaration order.
pub fn fleet_cell_parts(reservation: &FleetReservation) -> Result<Vec<i64>, FleetSplitError> {
    let parts = reservation
        .cells
        .iter()
        .enumerate()
        .map(|(idx, share)| fleet_part(share).ok_or(FleetSplitError::PartAmbiguous(idx)))
        .collect::<Result<Vec<_>, _>>()?;
    fleet_split(reservation.gpus.value, &parts)
}

fn fleet_part(share: &FleetCellShare) -> Option<FleetPart> {
    match (&share.gpus, &share.weight) {
        (Some(gpus), None) => Some(FleetPart::Fixed(gpus.value)),
        (None, Some(weight)) => Some(FleetPart::Weight(weight.value)),
        _ => None,
    }
}

/// The whole GPUs of `gpu` a tenant reserves in a cell: the sum of `reserved` over its
/// reservations in the cell's `exclusive` pools of that model (a repeated reservation counts
/// once, as in the capacity check).
pub fn reserved_gpus_of_model(quota: &Quota, cell: &Cell, gpu: &str) -> i64 {
    counted_reservations(quota)
        .into_iter()
        .filter(|reservation| {
            pool_of(cell, reservation).is_some_and(|pool| {
                pool.sharing.value == Sharing::Exclusive && pool.gpu.value == gpu
            })
        })
        .map(|reservation| reservation.reserved.value)
        .fold(0, i64::saturating_add)
}

/// The reservations of a quota that count: the first of each (pool, profile, workload).
pub fn counted_reservations(quota: &Quota) -> Vec<&PoolQuota> {
    let mut seen = BTreeSet::new();
    quota
        .pools
        .iter()
        .filter(|reservation| {
            seen.insert((
                reservation.pool.value.as_str(),
                reservation.profile.as_ref().map(|p| p.value.as_str()),
                reservation.workload.as_ref().map(|w| w.value),
            ))
        })
        .collect()
}

/// The pool of the cell a reservation names, if the cell declares it.
pub fn pool_of<'a>(cell: &'a Cell, reservation: &PoolQuota) -> Option<&'a Pool> {
    cell.pools
        .iter()
        .find(|pool| pool.name.value == reservation.pool.value)
}
