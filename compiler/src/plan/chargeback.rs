//! The chargeback metering of a cell (issue 20 item 2), resolved: what the recording rules of
//! `lower/metering.rs` multiply Kueue's device counts by, where the PrometheusRule goes and which
//! serving metric its KV-seat rules read.
//!
//! Consumes: a validated [`Cell`] (its `metering` and `metrics` declarations and its pools), the
//! cell's resolved pools, its showback figures (the slices each resource's devices take and the
//! slices one GPU is counted in, `showback.rs`), the stranded capacity of its MIG layouts (the
//! placement `gpu.rs` proved) and the cell's catalog.
//! Produces: a [`ChargebackPlan`] when the cell declares `metering`: per pool flavor and resource
//! the GPU-equivalents and HBM gigabytes of one device as exact fractions, its MIG profile, and
//! per MIG pool the GPU-equivalents its layouts strand; the rule's namespace and labels; the
//! serving metric.
//!
//! Invariants:
//! - Exact arithmetic: every figure is a reduced fraction of integers (a `1g.10gb` of an H100 is
//!   `1/7` GPU, a replica of a GPU time-sliced four ways `1/4`), never a rounded float.
//! - A figure the catalog lacks is absent, never guessed: the memory of a GPU comes from its MIG
//!   table (the memory in the name of its whole-GPU profile) or, for a GPU without one (such as
//!   an L4), from the catalog's sourced `memory_gb`; a GPU with neither has no HBM figure.
//! - Pure and deterministic: devices in pool order, then resource order.

use std::collections::BTreeMap;

use crate::catalog::{Catalog, MigTable, resource_name_for_profile};
use crate::hardware;
use crate::model::{Cell, Sharing};

use super::PoolPlan;
use super::gpu::StrandedLayout;
use super::showback::ShowbackPlan;

/// The name of every cell's PrometheusRule.
pub const RULE_NAME: &str = "tenantc-chargeback";

/// The chargeback metering of one cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargebackPlan {
    /// The PrometheusRule's namespace: the declared one, else the `metrics` namespace.
    pub namespace: String,
    /// The labels the Prometheus server's `ruleSelector` matches, sorted by key.
    pub rule_labels: BTreeMap<String, String>,
    /// The serving metric of the KV-seat rules, if the cell names one.
    pub serving_metric: Option<String>,
    /// Per pool (in pool order) and resource it offers (sorted): one device's worth.
    pub devices: Vec<DeviceRate>,
    /// Per MIG pool, in pool order: the GPU-equivalents its layouts leave unplaced.
    pub stranded: Vec<PoolStranded>,
}

/// An exact non-negative fraction, reduced, with a positive denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fraction {
    /// The numerator.
    pub numerator: i64,
    /// The denominator, at least 1.
    pub denominator: i64,
}

impl Fraction {
    /// `numerator / denominator` reduced; `None` for a zero or negative denominator or a
    /// negative numerator.
    pub fn new(numerator: i64, denominator: i64) -> Option<Fraction> {
        if denominator <= 0 || numerator < 0 {
            return None;
        }
        let divisor = gcd(numerator, denominator).max(1);
        Some(Fraction {
            numerator: numerator / divisor,
            denominator: denominator / divisor,
        })
    }
}

fn gcd(mut left: i64, mut right: i64) -> i64 {
    while right != 0 {
        (left, right) = (right, left % right);
    }
    left
}

/// What one device of a pool resource is worth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRate {
    /// The pool.
    pub pool: String,
    /// Its Kueue ResourceFlavor, which Kueue's metrics report as `flavor`.
    pub flavor: String,
    /// The resource, as Kueue's metrics report it (`nvidia.com/mig-1g.10gb`).
    pub resource: String,
    /// The pool's GPU model (the catalog key).
    pub gpu: String,
    /// The MIG profile of the resource, on a MIG pool with the mixed strategy.
    pub profile: Option<String>,
    /// The GPUs one device is: its compute slices over the GPU's on MIG, one over the replicas
    /// on a time-sliced or MPS pool, 1 otherwise.
    pub gpu_equivalent: Fraction,
    /// The HBM of one device in GB: the profile's on MIG, the GPU's over the replicas on a
    /// shared pool, the GPU's otherwise; `None` when the catalog has no memory for the GPU.
    pub hbm_gigabytes: Option<Fraction>,
}

/// The stranded capacity of one MIG pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolStranded {
    /// The pool.
    pub pool: String,
    /// Its GPU model.
    pub gpu: String,
    /// The compute slices its layouts leave unused, over the slices of a GPU.
    pub gpus: Fraction,
}

/// The memory in GB of a whole GPU with MIG table `table`: the GB in the name of the profile
/// that takes every compute and memory slice (`7g.80gb` of an H100).
fn whole_gpu_gigabytes(table: &MigTable) -> Option<i64> {
    table
        .profiles
        .iter()
        .filter(|profile| {
            profile.compute_slices == table.compute_slices
                && profile.memory_slices == table.memory_slices
        })
        .map(|profile| i64::from(profile.memory_gb))
        .filter(|gigabytes| *gigabytes > 0)
        .max()
}

/// Per resource of a MIG pool, the GB all its devices hold together, from the catalog's
/// profiles and the pool's layouts (a device of a mixed pool holds its profile's memory).
fn mig_gigabytes(declared: &crate::model::Pool, table: &MigTable) -> BTreeMap<String, i64> {
    let gpus_per_node = declared.gpus_per_node.value;
    let mut per_resource: BTreeMap<String, i64> = BTreeMap::new();
    for (idx, layout) in declared.mig_layouts.iter().enumerate() {
        let gpus = hardware::layout_nodes(declared, idx).saturating_mul(gpus_per_node);
        for (profile, count) in &layout.profiles {
            let Some(found) = table.profile(&profile.value) else {
                continue;
            };
            let resource = match declared.sharing.value {
                Sharing::Mig => match resource_name_for_profile(&found.name) {
                    Some(resource) => resource,
                    None => continue,
                },
                Sharing::MigSingle | Sharing::Exclusive | Sharing::TimeSlice | Sharing::Mps => {
                    hardware::GPU_RESOURCE.to_string()
                }
            };
            let held = gpus
                .saturating_mul(count.value)
                .saturating_mul(i64::from(found.memory_gb));
            let entry = per_resource.entry(resource).or_insert(0);
            *entry = entry.saturating_add(held);
        }
    }
    per_resource
}

/// The chargeback metering of `cell`, or `None` when it declares no `metering`.
pub(super) fn chargeback(
    cell: &Cell,
    pools: &[PoolPlan],
    showback: &ShowbackPlan,
    stranded: &[StrandedLayout],
    catalog: &Catalog,
) -> Option<ChargebackPlan> {
    let metering = cell.metering.as_ref()?;
    let namespace = match (&metering.namespace, &cell.metrics) {
        (Some(namespace), _) => namespace.value.clone(),
        (None, Some(metrics)) => metrics.namespace.value.clone(),
        // The schema refuses a `metering` with neither.
        (None, None) => return None,
    };
    let rule_labels = metering
        .rule_label
        .iter()
        .filter_map(|label| label.value.split_once('='))
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    let mut devices = Vec::new();
    let mut stranded_pools = Vec::new();
    for ((pool, declared), cost) in pools.iter().zip(&cell.pools).zip(&showback.pools) {
        let table = catalog.table_for_sku(&pool.gpu);
        // A GPU with a MIG table: the GB of its whole-GPU profile; without one, the catalog's
        // own figure for the SKU, where a source gives it.
        let whole = table.and_then(whole_gpu_gigabytes).or_else(|| {
            catalog
                .sku(&pool.gpu)
                .and_then(|sku| sku.memory_gb)
                .map(i64::from)
        });
        let mig_memory = match (pool.sharing.is_mig(), table) {
            (true, Some(table)) => mig_gigabytes(declared, table),
            _ => BTreeMap::new(),
        };
        for offer in &pool.offers {
            let Some(resource) = cost
                .resources
                .iter()
                .find(|resource| resource.resource == offer.resource)
            else {
                continue;
            };
            let Some(gpu_equivalent) = Fraction::new(
                resource.slices,
                resource.capacity.saturating_mul(cost.slices_per_gpu),
            ) else {
                continue;
            };
            let hbm_gigabytes = match pool.sharing {
                Sharing::Exclusive => whole.and_then(|gigabytes| Fraction::new(gigabytes, 1)),
                Sharing::TimeSlice | Sharing::Mps => {
                    whole.and_then(|gigabytes| Fraction::new(gigabytes, cost.slices_per_gpu))
                }
                Sharing::Mig | Sharing::MigSingle => mig_memory
                    .get(&offer.resource)
                    .and_then(|held| Fraction::new(*held, offer.capacity)),
            };
            devices.push(DeviceRate {
                pool: pool.name.clone(),
                flavor: pool.flavor.clone(),
                resource: offer.resource.clone(),
                gpu: pool.gpu.clone(),
                profile: match pool.sharing {
                    Sharing::Mig => offer.profile.clone(),
                    Sharing::MigSingle | Sharing::Exclusive | Sharing::TimeSlice | Sharing::Mps => {
                        None
                    }
                },
                gpu_equivalent,
                hbm_gigabytes,
            });
        }
        if pool.sharing.is_mig() {
            let slices: i64 = stranded
                .iter()
                .filter(|layout| layout.pool == pool.name)
                .map(|layout| {
                    layout
                        .gpus
                        .saturating_mul(i64::from(layout.per_gpu.unused_compute_slices))
                })
                .fold(0, i64::saturating_add);
            if let Some(gpus) = Fraction::new(slices, cost.slices_per_gpu) {
                stranded_pools.push(PoolStranded {
                    pool: pool.name.clone(),
                    gpu: pool.gpu.clone(),
                    gpus,
                });
            }
        }
    }
    Some(ChargebackPlan {
        namespace,
        rule_labels,
        serving_metric: metering
            .serving_metric
            .as_ref()
            .map(|metric| metric.value.clone()),
        devices,
        stranded: stranded_pools,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::testing::support::compile_files;

    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    metrics namespace="monitoring" selector="app.kubernetes.io/name=prometheus"
    metering rule-label="release=kube-prometheus-stack" serving-metric="vllm:num_requests_running"
    pool "train" {
        gpu "H100-80GB-SXM"
        nodes 2 gpus-per-node=8
        sharing "exclusive"
    }
    pool "infer" {
        gpu "H100-80GB-SXM"
        nodes 2 gpus-per-node=8
        sharing "mig"
        mig-layout "six-of-seven" {
            profile "3g.40gb" 1
            profile "1g.10gb" 3
        }
    }
    pool "shared" {
        gpu "L4"
        nodes 1 gpus-per-node=4
        sharing "time-slice"
        replicas 4
    }
}
"#;

    fn plan() -> ChargebackPlan {
        let compilation = compile_files(&[("cells/c1.kdl", CELL)]);
        assert!(
            compilation.diagnostics.is_empty(),
            "{:#?}",
            compilation.diagnostics
        );
        let plan = compilation.plan.expect("a plan");
        plan.cells[0].chargeback.clone().expect("metering")
    }

    fn rate<'a>(plan: &'a ChargebackPlan, resource: &str) -> &'a DeviceRate {
        plan.devices
            .iter()
            .find(|device| device.resource == resource)
            .unwrap_or_else(|| panic!("{resource}: {:#?}", plan.devices))
    }

    #[test]
    fn a_mig_slice_is_its_compute_fraction_and_a_replica_one_over_the_replicas() {
        let plan = plan();
        let whole = rate(&plan, "nvidia.com/gpu");
        assert_eq!(whole.gpu_equivalent, Fraction::new(1, 1).unwrap());
        assert_eq!(whole.hbm_gigabytes, Fraction::new(80, 1));
        let small = rate(&plan, "nvidia.com/mig-1g.10gb");
        assert_eq!(
            (
                small.gpu_equivalent.numerator,
                small.gpu_equivalent.denominator
            ),
            (1, 7)
        );
        assert_eq!(small.hbm_gigabytes, Fraction::new(10, 1));
        assert_eq!(small.profile.as_deref(), Some("1g.10gb"));
        let large = rate(&plan, "nvidia.com/mig-3g.40gb");
        assert_eq!(
            (
                large.gpu_equivalent.numerator,
                large.gpu_equivalent.denominator
            ),
            (3, 7)
        );
        assert_eq!(large.hbm_gigabytes, Fraction::new(40, 1));
        let replica = rate(&plan, "nvidia.com/gpu.shared");
        assert_eq!(
            (
                replica.gpu_equivalent.numerator,
                replica.gpu_equivalent.denominator
            ),
            (1, 4)
        );
        // An L4 has no MIG table; the catalog's sourced figure is 24 GB, so a replica of four
        // holds 24/4 = 6 GB.
        assert_eq!(replica.hbm_gigabytes, Fraction::new(6, 1));
        assert_eq!(replica.profile, None);
    }

    #[test]
    fn stranded_mig_capacity_is_the_unplaced_slices_over_the_gpus_slices() {
        let plan = plan();
        // 16 GPUs, each with 6 of its 7 compute slices placed: 16/7 GPUs.
        assert_eq!(
            plan.stranded,
            vec![PoolStranded {
                pool: "infer".to_string(),
                gpu: "H100-80GB-SXM".to_string(),
                gpus: Fraction::new(16, 7).unwrap(),
            }]
        );
    }

    #[test]
    fn the_rule_goes_to_the_metrics_namespace_with_the_declared_label() {
        let plan = plan();
        assert_eq!(plan.namespace, "monitoring");
        assert_eq!(
            plan.rule_labels,
            BTreeMap::from([("release".to_string(), "kube-prometheus-stack".to_string())])
        );
        assert_eq!(
            plan.serving_metric.as_deref(),
            Some("vllm:num_requests_running")
        );
    }

    #[test]
    fn a_cell_without_metering_has_no_chargeback_plan() {
        let cell = CELL.replace(
            "    metering rule-label=\"release=kube-prometheus-stack\" serving-metric=\"vllm:num_requests_running\"\n",
            "",
        );
        let compilation = compile_files(&[("cells/c1.kdl", &cell)]);
        assert_eq!(compilation.plan.expect("a plan").cells[0].chargeback, None);
    }

    #[test]
    fn fractions_are_reduced() {
        assert_eq!(Fraction::new(14, 49), Fraction::new(2, 7));
        assert_eq!(Fraction::new(0, 7), Fraction::new(0, 1));
        assert_eq!(Fraction::new(1, 0), None);
    }
}
