//! The chargeback labels of a tenant in a cell (issue 20 item 1), computed once in resolve so
//! that `lower` only copies them onto the tenant's Namespaces, ClusterQueue and LocalQueues.
//!
//! Consumes: the tenant's name and org, its declared chargeback labels, its ClusterQueue's
//! flavors, the cell's pools and name.
//! Produces: the `tenant.platform/` labels `tenant`, `org`, `cell`, `queue` (the ClusterQueue,
//! named after the tenant, that Kueue's metrics report as `cluster_queue`) and `sku` (the GPU
//! model of the pools the tenant reserves in: the catalog key when there is one, `mixed` for
//! several, `none` without GPUs), then the tenant's declared labels (`chargeback { label … }`),
//! sorted by key.
//!
//! Invariants: every value of tenantc's own is a name tenantc already checked (a DNS label or a
//! catalog key), and every declared label passed `validate/labels.rs` (a label value, never
//! free text, under a key that is neither reserved nor forbidden), so none is user content; a
//! declared label never replaces one of tenantc's; pure and deterministic.

use std::collections::{BTreeMap, BTreeSet};

use super::{FlavorQuota, PoolPlan};
use crate::kube::labels::{CELL_LABEL, ORG_LABEL, QUEUE_LABEL, SKU_LABEL, TENANT_LABEL};
use crate::model::ChargebackLabel;

/// The `sku` value of a tenant that reserves in pools of several GPU models.
pub const MIXED_SKU: &str = "mixed";
/// The `sku` value of a tenant that reserves no GPUs in the cell.
pub const NO_SKU: &str = "none";

/// What a tenant is charged as in a cell: its name, org and cell, and its ClusterQueue.
pub struct ChargedAs<'a> {
    /// The tenant's name.
    pub tenant: &'a str,
    /// Its org.
    pub org: &'a str,
    /// The cell's name.
    pub cell: &'a str,
    /// The name of its ClusterQueue in the cell.
    pub queue: &'a str,
}

/// The chargeback labels of a tenant in a cell: tenantc's own, then the tenant's declared ones.
pub fn chargeback_labels(
    charged: &ChargedAs<'_>,
    declared: &[ChargebackLabel],
    flavors: &[FlavorQuota],
    pools: &[PoolPlan],
) -> BTreeMap<String, String> {
    let ChargedAs {
        tenant,
        org,
        cell,
        queue,
    } = *charged;
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
    let mut labels: BTreeMap<String, String> = [
        (CELL_LABEL, cell),
        (ORG_LABEL, org),
        (QUEUE_LABEL, queue),
        (SKU_LABEL, sku),
        (TENANT_LABEL, tenant),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .collect();
    for label in declared {
        // Validation refuses a declared key that could be one of tenantc's; should one slip
        // through, tenantc's label stays.
        labels
            .entry(label.key.value.clone())
            .or_insert_with(|| label.value.value.clone());
    }
    labels
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
                let keys: Vec<&str> = labels
                    .keys()
                    .map(String::as_str)
                    .filter(|key| key.starts_with("tenant.platform/"))
                    .collect();
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

    fn label(key: &str, value: &str) -> ChargebackLabel {
        let span = crate::source::Span::new(crate::source::FileId(0), 0..0);
        ChargebackLabel {
            key: crate::model::Spanned::new(key.to_string(), span),
            value: crate::model::Spanned::new(value.to_string(), span),
        }
    }

    #[test]
    fn declared_labels_follow_tenantcs_own_and_never_replace_them() {
        let charged = ChargedAs {
            tenant: "a",
            org: "acme",
            cell: "c1",
            queue: "a",
        };
        let labels = chargeback_labels(
            &charged,
            &[
                label("cost-center", "ml-4711"),
                label("tenant.platform/org", "other"),
            ],
            &[],
            &[],
        );
        assert_eq!(labels["cost-center"], "ml-4711");
        assert_eq!(labels["tenant.platform/org"], "acme");
        assert_eq!(labels["tenant.platform/sku"], NO_SKU);
        assert_eq!(labels.len(), 6);
    }
}
