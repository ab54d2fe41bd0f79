//! The GPU facts of a cell that checks, the plan and the capacity report share: its node groups
//! and the labels each needs, the mig-parted config name of a MIG layout, the GPU Operator's
//! namespace, and the node labels of each pool's Kueue ResourceFlavor.
//!
//! Consumes: a validated [`Cell`] and the cell's catalog. Produces: [`NodeGroup`]s, names and
//! label maps.
//!
//! Invariants:
//! - Config names are `<pool>-<layout>`, valid label values (validation checks the length).
//! - A flavor's node labels are exactly the labels every node group of its pool carries, so a
//!   pod admitted on a flavor can land on every node of the pool and on no node outside it.

use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::hardware;
use crate::kube::labels::{DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL};
use crate::model::{Cell, MigLayout, Pool};

/// The mig-parted config that turns MIG off.
pub const MIG_DISABLED: &str = "all-disabled";

/// The mig-parted config name of a layout, also the `nvidia.com/mig.config` label value.
pub fn mig_config_name(pool: &Pool, layout: &MigLayout) -> String {
    format!("{}-{}", pool.name.value, layout.name.value)
}

/// The GPU Operator namespace of a cell.
pub fn operator_namespace(cell: &Cell) -> &str {
    cell.gpu_operator_namespace
        .as_ref()
        .map_or(crate::facts::defaults::GPU_OPERATOR_NAMESPACE, |ns| {
            ns.value.as_str()
        })
}

/// A group of nodes with one GPU configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroup {
    /// The pool.
    pub pool: String,
    /// The layout, for MIG node groups.
    pub layout: Option<String>,
    /// Nodes in the group.
    pub nodes: i64,
    /// The node labels the group needs, sorted by key.
    pub labels: BTreeMap<String, String>,
    /// The GPU devices each node of the group offers, by extended resource
    /// (`hardware::node_offers`): what the device plugin advertises as allocatable.
    pub allocatable: BTreeMap<String, i64>,
}

/// The node groups of a cell and the labels each needs.
pub fn node_groups(cell: &Cell, catalog: &Catalog) -> Vec<NodeGroup> {
    let mut groups = Vec::new();
    for pool in &cell.pools {
        let offers = hardware::node_offers(pool, catalog);
        let allocatable = |layout: Option<&str>| -> BTreeMap<String, i64> {
            offers
                .iter()
                .find(|group| group.layout.as_deref() == layout)
                .map(|group| {
                    group
                        .per_node
                        .iter()
                        .map(|offer| (offer.resource.clone(), offer.capacity))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mig_capable = catalog
            .sku(&pool.gpu.value)
            .is_some_and(|sku| sku.mig_table.is_some());
        let mut base = BTreeMap::from([(
            DEVICE_PLUGIN_CONFIG_LABEL.to_string(),
            pool.name.value.clone(),
        )]);
        for (key, value) in &pool.labels {
            base.insert(key.value.clone(), value.value.clone());
        }
        if pool.sharing.value.is_mig() {
            for (idx, layout) in pool.mig_layouts.iter().enumerate() {
                let mut labels = base.clone();
                labels.insert(MIG_CONFIG_LABEL.to_string(), mig_config_name(pool, layout));
                groups.push(NodeGroup {
                    pool: pool.name.value.clone(),
                    layout: Some(layout.name.value.clone()),
                    nodes: hardware::layout_nodes(pool, idx),
                    labels,
                    allocatable: allocatable(Some(layout.name.value.as_str())),
                });
            }
        } else {
            if mig_capable {
                base.insert(MIG_CONFIG_LABEL.to_string(), MIG_DISABLED.to_string());
            }
            groups.push(NodeGroup {
                pool: pool.name.value.clone(),
                layout: None,
                nodes: pool.nodes.value,
                labels: base,
                allocatable: allocatable(None),
            });
        }
    }
    groups
}

/// The node labels of each pool's Kueue ResourceFlavor, by pool name: the labels every node
/// group of the pool carries ([`node_groups`]), which are the pool's own
/// labels, `nvidia.com/device-plugin.config`, and `nvidia.com/mig.config` when all its nodes
/// share one MIG config (`all-disabled` on a MIG-capable model that is not shared by MIG, the
/// layout's config on a MIG pool with exactly one layout). The plan's `node_labels` are these.
pub fn flavor_node_labels(
    cell: &Cell,
    cell_catalog: &Catalog,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut common: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for group in node_groups(cell, cell_catalog) {
        match common.get_mut(&group.pool) {
            None => {
                common.insert(group.pool.clone(), group.labels);
            }
            Some(labels) => labels.retain(|key, value| group.labels.get(key) == Some(value)),
        }
    }
    common
}
