//! Showback, resolved: what each pool of a cell costs a month, and who committed to what.
//!
//! Consumes: a validated [`Cell`], its resolved pools and tenants (their ClusterQueue
//! entitlements), what no tenant reserved, the stranded capacity of its MIG layouts (the
//! placement `gpu.rs` proved) and the cell's catalog.
//! Produces: a [`ShowbackPlan`]: per pool its price, GPUs and the slices one GPU is cut into
//! (compute slices on a MIG pool, replicas on a time-sliced or MPS pool, 1 otherwise); per pool
//! resource the slices its devices take, its capacity, what the tenants reserve and may burst to
//! and what no tenant reserved; per tenant and pool resource its reservation and burst ceiling;
//! per MIG layout its stranded compute slices; each with its monthly cost in cents.
//!
//! Invariants:
//! - A month is [`HOURS_PER_MONTH`] (730) hours; a price is read to a millionth of its currency
//!   unit ([`price_micros`]), which is exact for every price written with at most six decimals.
//! - Integer arithmetic only: each figure is `devices × slices of a device × price × 730`,
//!   divided by the slices of a GPU once and rounded to the cent, half up; a sum is the sum of
//!   the rounded figures it lists, so the reports' columns add up exactly.
//! - A pool without a price has no cost (`None`), never a guessed one.

use std::collections::BTreeMap;

use crate::catalog::{Catalog, resource_name_for_profile};
use crate::hardware::{self, GPU_RESOURCE};
use crate::model::{Cell, Pool, Sharing};

use super::gpu::StrandedLayout;
use super::{PoolPlan, TenantPlan};

/// Hours in the month of every showback figure: 365 × 24 / 12.
pub const HOURS_PER_MONTH: i64 = 730;

/// Millionths of a currency unit in one unit.
const MICROS_PER_UNIT: i128 = 1_000_000;
/// Millionths of a currency unit in one cent.
const MICROS_PER_CENT: i128 = 10_000;

/// The showback figures of one cell.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShowbackPlan {
    /// Every pool, in pool order.
    pub pools: Vec<PoolCost>,
    /// Per tenant (sorted by name), pool (in pool order) and resource the pool offers (sorted):
    /// its reservation and burst ceiling; a tenant's flavor with nothing reserved and nothing to
    /// burst on a resource has no row for it.
    pub tenants: Vec<TenantCost>,
    /// Per layout of a MIG pool, in pool and layout order: the compute slices no instance uses.
    pub stranded: Vec<StrandedCost>,
}

/// One pool's price and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolCost {
    /// The pool.
    pub pool: String,
    /// Its GPU model.
    pub gpu: String,
    /// Its sharing mode.
    pub sharing: Sharing,
    /// Its GPUs.
    pub gpus: i64,
    /// The slices one GPU is counted in: compute slices on a MIG pool, replicas on a
    /// time-sliced or MPS pool, 1 on an exclusive pool.
    pub slices_per_gpu: i64,
    /// The declared price of one GPU-hour, in millionths of a currency unit.
    pub price_micros: Option<i64>,
    /// What the whole pool costs a month, in cents.
    pub monthly: Option<i64>,
    /// Per resource the pool offers, sorted by resource.
    pub resources: Vec<ResourceCost>,
}

/// One resource of a pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceCost {
    /// The resource.
    pub resource: String,
    /// Its devices in the pool.
    pub capacity: i64,
    /// The slices all its devices take together (a device of a mixed MIG pool takes its
    /// profile's compute slices; a replica one; a whole GPU one).
    pub slices: i64,
    /// The tenants' reservations (nominal quota), summed.
    pub reserved: i64,
    /// The tenants' burst ceilings (borrowing limits), summed.
    pub burst: i64,
    /// What no tenant reserved.
    pub unreserved: i64,
    /// The monthly cost of `reserved`, in cents (the sum of the tenants' rounded figures).
    pub reserved_monthly: Option<i64>,
    /// The monthly cost of `burst` if fully used, in cents (the sum of the tenants' figures).
    pub burst_monthly: Option<i64>,
    /// The monthly cost of `unreserved`, in cents: the platform's.
    pub unreserved_monthly: Option<i64>,
}

impl ResourceCost {
    /// The slices `devices` of the resource take, as an exact fraction `(numerator,
    /// denominator)` of slices; the denominator is 1 unless the devices differ in size.
    pub fn slices_of(&self, devices: i64) -> (i64, i64) {
        if self.capacity <= 0 {
            return (0, 1);
        }
        (devices.saturating_mul(self.slices), self.capacity)
    }
}

/// One tenant's reservation on one pool resource.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TenantCost {
    /// The tenant.
    pub tenant: String,
    /// Its org.
    pub org: String,
    /// The pool.
    pub pool: String,
    /// The resource.
    pub resource: String,
    /// Its reservation (nominal quota).
    pub reserved: i64,
    /// Its burst ceiling (borrowing limit).
    pub burst: i64,
    /// The monthly cost of its reservation, in cents: what it committed to.
    pub reserved_monthly: Option<i64>,
    /// The monthly cost of its burst ceiling if fully used, in cents.
    pub burst_monthly: Option<i64>,
}

/// What one tenant's reservations in one cell cost a month: its rows of the cell's showback,
/// with their sums, so `describe`, the reviewer view and the reports read the same figures.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TenantMonthly {
    /// Its rows, in the showback's order (pool order, then resource).
    pub rows: Vec<TenantCost>,
    /// The committed monthly cost in cents: the priced rows' `reserved_monthly`, summed.
    pub committed_cents: i64,
    /// The monthly cost of its burst ceilings if fully used, in cents, over the priced rows.
    pub burst_cents: i64,
    /// The pools of its rows that declare no price (not in the sums), sorted, once each.
    pub unpriced_pools: Vec<String>,
}

/// The rows of `tenant` in a cell's showback, with their sums.
pub fn tenant_monthly(plan: &ShowbackPlan, tenant: &str) -> TenantMonthly {
    let rows: Vec<TenantCost> = plan
        .tenants
        .iter()
        .filter(|row| row.tenant == tenant)
        .cloned()
        .collect();
    let mut unpriced_pools: Vec<String> = rows
        .iter()
        .filter(|row| row.reserved_monthly.is_none())
        .map(|row| row.pool.clone())
        .collect();
    unpriced_pools.sort();
    unpriced_pools.dedup();
    TenantMonthly {
        committed_cents: rows
            .iter()
            .filter_map(|row| row.reserved_monthly)
            .fold(0, i64::saturating_add),
        burst_cents: rows
            .iter()
            .filter_map(|row| row.burst_monthly)
            .fold(0, i64::saturating_add),
        rows,
        unpriced_pools,
    }
}

/// The stranded compute slices of one MIG layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrandedCost {
    /// The pool.
    pub pool: String,
    /// The layout.
    pub layout: String,
    /// The GPUs with the layout.
    pub gpus: i64,
    /// Compute slices no instance uses, over all its GPUs.
    pub compute_slices: i64,
    /// Memory slices no instance owns, over all its GPUs (shown, not priced: a memory slice
    /// without compute runs nothing).
    pub memory_slices: i64,
    /// The monthly cost of the stranded compute slices, in cents.
    pub monthly: Option<i64>,
}

/// A declared price per GPU-hour in millionths of its unit, rounded to the nearest; exact for
/// every decimal with at most six places in the declared range (0 to 10000).
pub fn price_micros(price: f64) -> i64 {
    // The declared range bounds the product far below 2^53, so the rounding is exact; the cast
    // saturates on anything else.
    (price * 1_000_000.0).round() as i64
}

/// The monthly cost in cents of `slices` (an exact fraction of slices, `numerator /
/// denominator`) on a pool whose GPUs are cut into `slices_per_gpu`, at `price_micros` per
/// GPU-hour: rounded to the cent, half up.
pub fn monthly_cents(slices: (i64, i64), slices_per_gpu: i64, price_micros: i64) -> Option<i64> {
    let (numerator, denominator) = slices;
    let divisor = i128::from(denominator) * i128::from(slices_per_gpu) * MICROS_PER_CENT;
    if divisor <= 0 || numerator < 0 || price_micros < 0 {
        return None;
    }
    let dividend = i128::from(numerator) * i128::from(price_micros) * i128::from(HOURS_PER_MONTH);
    let cents = (dividend * 2 + divisor) / (divisor * 2);
    i64::try_from(cents).ok()
}

/// Cents as a decimal with two places: `9811200` is `98112.00`.
pub fn format_cents(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let magnitude = cents.unsigned_abs();
    format!("{sign}{}.{:02}", magnitude / 100, magnitude % 100)
}

/// A price in millionths as a decimal with at least two places and at most six: `2100000` is
/// `2.10`, `1234500` is `1.2345`.
pub fn format_price(micros: i64) -> String {
    let magnitude = i128::from(micros).unsigned_abs();
    let units = magnitude / MICROS_PER_UNIT.unsigned_abs();
    let mut fraction = format!("{:06}", magnitude % MICROS_PER_UNIT.unsigned_abs());
    while fraction.len() > 2 && fraction.ends_with('0') {
        fraction.pop();
    }
    let sign = if micros < 0 { "-" } else { "" };
    format!("{sign}{units}.{fraction}")
}

/// The slices one GPU of `pool` is counted in, and the slices each resource's devices take
/// together, from the catalog's MIG table (compute slices) or the pool's replicas.
fn slices(pool: &Pool, catalog: &Catalog) -> (i64, BTreeMap<String, i64>) {
    let gpus_per_node = pool.gpus_per_node.value;
    let mut per_resource: BTreeMap<String, i64> = BTreeMap::new();
    match pool.sharing.value {
        Sharing::Exclusive | Sharing::TimeSlice | Sharing::Mps => {
            let per_gpu = if pool.sharing.value.is_shared() {
                pool.replicas.as_ref().map_or(1, |replicas| replicas.value)
            } else {
                1
            };
            for offer in hardware::offers(pool, catalog) {
                per_resource.insert(offer.resource, offer.capacity);
            }
            (per_gpu, per_resource)
        }
        Sharing::Mig | Sharing::MigSingle => {
            let Some(table) = catalog.table_for_sku(&pool.gpu.value) else {
                return (1, per_resource);
            };
            for (idx, layout) in pool.mig_layouts.iter().enumerate() {
                let gpus = hardware::layout_nodes(pool, idx).saturating_mul(gpus_per_node);
                for (profile, count) in &layout.profiles {
                    let Some(found) = table.profile(&profile.value) else {
                        continue;
                    };
                    let resource = match pool.sharing.value {
                        Sharing::Mig => match resource_name_for_profile(&found.name) {
                            Some(resource) => resource,
                            None => continue,
                        },
                        // The single strategy advertises its one profile as whole GPUs; the
                        // other modes have no MIG layout to strand.
                        Sharing::MigSingle
                        | Sharing::Exclusive
                        | Sharing::TimeSlice
                        | Sharing::Mps => GPU_RESOURCE.to_string(),
                    };
                    let taken = gpus
                        .saturating_mul(count.value)
                        .saturating_mul(i64::from(found.compute_slices));
                    let entry = per_resource.entry(resource).or_insert(0);
                    *entry = entry.saturating_add(taken);
                }
            }
            (i64::from(table.compute_slices).max(1), per_resource)
        }
    }
}

/// The showback figures of `cell`.
pub(super) fn showback(
    cell: &Cell,
    pools: &[PoolPlan],
    tenants: &[TenantPlan],
    unreserved: &BTreeMap<String, BTreeMap<String, i64>>,
    stranded: &[StrandedLayout],
    catalog: &Catalog,
) -> ShowbackPlan {
    let mut plan = ShowbackPlan::default();
    let mut tenant_rows: Vec<TenantCost> = Vec::new();
    for (pool, declared) in pools.iter().zip(&cell.pools) {
        let (slices_per_gpu, slices_of) = slices(declared, catalog);
        let price = declared
            .price_per_gpu_hour
            .as_ref()
            .map(|price| price_micros(price.value));
        let gpus = pool.nodes.saturating_mul(pool.gpus_per_node);
        let cost = |slices: (i64, i64)| {
            price.and_then(|price| monthly_cents(slices, slices_per_gpu, price))
        };
        let mut resources = Vec::new();
        for offer in &pool.offers {
            let mut resource = ResourceCost {
                resource: offer.resource.clone(),
                capacity: offer.capacity,
                slices: slices_of.get(&offer.resource).copied().unwrap_or(0),
                reserved: 0,
                burst: 0,
                unreserved: unreserved
                    .get(&pool.flavor)
                    .and_then(|per_resource| per_resource.get(&offer.resource))
                    .copied()
                    .unwrap_or(0),
                reserved_monthly: price.map(|_| 0),
                burst_monthly: price.map(|_| 0),
                unreserved_monthly: None,
            };
            resource.unreserved_monthly = cost(resource.slices_of(resource.unreserved));
            for tenant in tenants {
                let Some(entitlement) = tenant
                    .queue
                    .flavors
                    .iter()
                    .filter(|flavor| flavor.pool == pool.name)
                    .flat_map(|flavor| &flavor.resources)
                    .find(|entitlement| entitlement.resource == offer.resource)
                else {
                    continue;
                };
                if entitlement.nominal == 0 && entitlement.borrowing == 0 {
                    continue;
                }
                let row = TenantCost {
                    tenant: tenant.name.clone(),
                    org: tenant.org.clone(),
                    pool: pool.name.clone(),
                    resource: offer.resource.clone(),
                    reserved: entitlement.nominal,
                    burst: entitlement.borrowing,
                    reserved_monthly: cost(resource.slices_of(entitlement.nominal)),
                    burst_monthly: cost(resource.slices_of(entitlement.borrowing)),
                };
                resource.reserved = resource.reserved.saturating_add(row.reserved);
                resource.burst = resource.burst.saturating_add(row.burst);
                resource.reserved_monthly = add(resource.reserved_monthly, row.reserved_monthly);
                resource.burst_monthly = add(resource.burst_monthly, row.burst_monthly);
                tenant_rows.push(row);
            }
            resources.push(resource);
        }
        for layout in stranded.iter().filter(|layout| layout.pool == pool.name) {
            let compute_slices = layout
                .gpus
                .saturating_mul(i64::from(layout.per_gpu.unused_compute_slices));
            plan.stranded.push(StrandedCost {
                pool: pool.name.clone(),
                layout: layout.layout.clone(),
                gpus: layout.gpus,
                compute_slices,
                memory_slices: layout
                    .gpus
                    .saturating_mul(i64::from(layout.per_gpu.unused_memory_slices)),
                monthly: cost((compute_slices, 1)),
            });
        }
        plan.pools.push(PoolCost {
            pool: pool.name.clone(),
            gpu: pool.gpu.clone(),
            sharing: pool.sharing,
            gpus,
            slices_per_gpu,
            price_micros: price,
            monthly: cost((gpus.saturating_mul(slices_per_gpu), 1)),
            resources,
        });
    }
    // Tenants by name, then in pool order and resource order, as they were pushed.
    let pool_order = |name: &str| pools.iter().position(|pool| pool.name == name);
    tenant_rows.sort_by(|left, right| {
        (&left.tenant, pool_order(&left.pool), &left.resource).cmp(&(
            &right.tenant,
            pool_order(&right.pool),
            &right.resource,
        ))
    });
    plan.tenants = tenant_rows;
    plan
}

/// The sum of two costs; `None` when either is unknown.
pub fn add(left: Option<i64>, right: Option<i64>) -> Option<i64> {
    Some(left?.saturating_add(right?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_is_rounded_to_the_cent_half_up_in_integers() {
        // 1 GPU at 2.10 for 730 hours: 1533.00 exactly.
        assert_eq!(monthly_cents((1, 1), 1, price_micros(2.10)), Some(153_300));
        // One 1g slice of seven at 1.00: 730 / 7 = 104.2857…, so 104.29.
        assert_eq!(monthly_cents((1, 1), 7, price_micros(1.00)), Some(10_429));
        // One replica of four at 0.01: 7.30 / 4 = 1.825, half up to 1.83.
        assert_eq!(monthly_cents((1, 1), 4, price_micros(0.01)), Some(183));
        // Three devices of a resource whose 2 devices take 3 slices: 4.5 slices of 7 at 7.00:
        // 4.5 × 730 = 3285.00.
        assert_eq!(
            monthly_cents((3 * 3, 2), 7, price_micros(7.00)),
            Some(328_500)
        );
        assert_eq!(monthly_cents((1, 0), 7, 1), None);
        assert_eq!(format_cents(9_811_200), "98112.00");
        assert_eq!(format_cents(5), "0.05");
        assert_eq!(format_price(price_micros(2.10)), "2.10");
        assert_eq!(format_price(price_micros(0.7)), "0.70");
        assert_eq!(format_price(price_micros(1.2345)), "1.2345");
        assert_eq!(format_price(price_micros(10_000.0)), "10000.00");
        // Six decimals are kept exactly; a seventh is rounded.
        assert_eq!(price_micros(0.000001), 1);
        assert_eq!(price_micros(9_999.999_999), 9_999_999_999);
        assert_eq!(price_micros(0.000_000_4), 0);
    }
}
