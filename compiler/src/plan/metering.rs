//! The chargeback labels of a tenant in a cell (issue 20 item 1), computed once in resolve so
//! that `lower` only copies them onto the tenant's Namespaces, ClusterQueue and LocalQueues.
//!
//! Consumes: the tenant's name and org, its ClusterQueue's flavors, the cell's pools and name.
//! Produces: the `tenant.platform/` labels `tenant`, `org`, `cell`, `queue` (the ClusterQueue,
//! named after the tenant, that Kueue's metrics report as `cluster_queue`) and `sku` (the GPU
//! model of the pools the tenant reserves in: the catalog key when there is one, `mixed` for
//! several, `none` without GPUs), sorted by key.
//!
//! Invariants: every value is a name tenantc already checked (a DNS label or a catalog key), so
//! each is a valid label value and never user content; pure and deterministic.

use std::collections::{BTreeMap, BTreeSet};

use super::{FlavorQuota, PoolPlan};
use crate::kube::labels::{CELL_LABEL, ORG_LABEL, QUEUE_LABEL, SKU_LABEL, TENANT_LABEL};

/// The `sku` value of a tenant that reserves in pools of several GPU models.
pub const MIXED_SKU: &str = "mixed";
/// The `sku` value of a tenant that reserves no GPUs in the cell.
pub const NO_SKU: &str = "none";

/// The chargeback labels of a tenant in a cell.
pub fn chargeback_labels(
    tenant: &str,
    org: &str,
    cell: &str,
    queue: &str,
    flavors: &[FlavorQuota],
    pools: &[PoolPlan],
) -> BTreeMap<String, String> {
    let models: BTreeSet<&str> = pools
        .iter()
        .filter(|pool| flavors.iter().any(|flavor| flavor.pool == pool.name))
        .map(|pool| pool.gpu.as_str())
        .collect();
    let sku = match models.len() {
        0 => NO_SKU,
        1 => models.first().copied().unwrap_or(NO_SKU),
        _ => MIXED_SKU,
    };
    [
        (CELL_LABEL, cell),
        (ORG_LABEL, org),
        (QUEUE_LABEL, queue),
        (SKU_LABEL, sku),
        (TENANT_LABEL, tenant),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::testing::support::compile_example;

    #[test]
    fn every_tenant_carries_the_five_chargeback_labels_with_its_pools_gpu_model() {
        let plan = compile_example().plan.expect("a plan");
        for cell in &plan.cells {
            for tenant in &cell.tenants {
                let labels = &tenant.chargeback;
                let keys: Vec<&str> = labels.keys().map(String::as_str).collect();
                assert_eq!(
                    keys,
                    [
                        "tenant.platform/cell",
                        "tenant.platform/org",
                        "tenant.platform/queue",
                        "tenant.platform/sku",
                        "tenant.platform/tenant"
                    ]
                );
                assert_eq!(labels["tenant.platform/tenant"], tenant.name);
                assert_eq!(labels["tenant.platform/queue"], tenant.queue.name);
                assert_eq!(labels["tenant.platform/cell"], cell.name);
                let sku = &labels["tenant.platform/sku"];
                assert!(
                    cell.pools.iter().any(|pool| &pool.gpu == sku)
                        || sku == MIXED_SKU
                        || sku == NO_SKU,
                    "{sku}"
                );
            }
        }
    }
}
