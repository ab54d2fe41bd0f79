//! The GPU plumbing of a cell, resolved: the GPU Operator's config documents and the figures of
//! the capacity report.
//!
//! Consumes: a validated [`Cell`], the tenants with a quota in it and the cell's catalog.
//! Produces: a [`GpuPlan`]: the GPU Operator's namespace, the mig-parted config (one named
//! config per MIG layout, or none in a cell without a MIG-capable GPU) and one device-plugin
//! config per pool, as the typed documents of `kube/gpu_operator.rs`; and per pool resource its
//! capacity and what each tenant reserves of it, per MIG layout its stranded capacity with a
//! witness placement, and the node groups with the labels each needs.
//!
//! Invariants:
//! - The mig-parted document has exactly `version: v1` and `mig-configs` at the top; every
//!   config has at least one entry; every MIG entry carries a `device-filter` with the pool's
//!   PCI ids, so a config never lands on another GPU model; `all-disabled` is always present
//!   (the GPU Operator's default label value).
//! - Every figure is computed here, from the same `hardware::offers`, `hardware::resolve` and
//!   `catalog::placement` that validation checked with; `lower` and the report only write them.

use std::collections::BTreeMap;

use crate::catalog::{Catalog, placement};
use crate::facts::gpu::{
    MIG_DISABLED, NodeGroup, mig_config_name, node_groups, operator_namespace,
};
use crate::hardware::{self, GPU_RESOURCE};
use crate::kube::gpu_operator::{
    self, DevicePluginConfig, Devices, Flags, MigConfigEntry, MigPartedConfig, MigStrategy,
    ReplicatedResource, ReplicatedResources, Version,
};
use crate::model::{Cell, Pool, Sharing, Tenant};

/// The GPU plumbing of a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuPlan {
    /// The GPU Operator's namespace, where its ConfigMaps go.
    pub operator_namespace: String,
    /// The mig-parted config, when a pool of the cell has a MIG-capable GPU (every node group
    /// of such a model gets an `nvidia.com/mig.config` label, so the config must exist, if only
    /// with `all-disabled`).
    pub mig_parted: Option<MigPartedConfig>,
    /// The device-plugin config of each pool, by pool name.
    pub device_plugins: BTreeMap<String, DevicePluginConfig>,
    /// The figures of the capacity report.
    pub capacity: CapacityPlan,
}

/// The figures of a cell's capacity report.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityPlan {
    /// Per pool resource, in pool order: its capacity and what each tenant reserves.
    pub rows: Vec<CapacityRow>,
    /// Per layout of a MIG pool, in pool and layout order: what its GPUs leave unused.
    pub stranded: Vec<StrandedLayout>,
    /// The node groups of the cell and the labels each needs.
    pub node_groups: Vec<NodeGroup>,
}

/// One pool resource of the capacity report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityRow {
    /// The pool.
    pub pool: String,
    /// The resource it offers.
    pub resource: String,
    /// Devices of it in the pool.
    pub capacity: i64,
    /// The sum of each tenant's `reserved` on it (Kueue nominal quota), by tenant; a tenant
    /// with a reservation of 0 is listed.
    pub reserved: BTreeMap<String, i64>,
}

/// What one MIG layout leaves unused on each of its GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrandedLayout {
    /// The pool.
    pub pool: String,
    /// The layout.
    pub layout: String,
    /// GPUs of the pool with the layout.
    pub gpus: i64,
    /// What one GPU leaves unused.
    pub per_gpu: placement::StrandedCapacity,
    /// One valid placement of the layout on a GPU, as `profile@start`.
    pub placement: Vec<String>,
}

/// The GPU plumbing of `cell`, for the tenants with a quota in it.
pub(super) fn gpu_plan(cell: &Cell, tenants: &[&Tenant], catalog: &Catalog) -> GpuPlan {
    GpuPlan {
        operator_namespace: operator_namespace(cell).to_string(),
        mig_parted: mig_parted_document(cell, catalog),
        device_plugins: cell
            .pools
            .iter()
            .map(|pool| (pool.name.value.clone(), device_plugin_document(pool)))
            .collect(),
        capacity: CapacityPlan {
            rows: rows(cell, tenants, catalog),
            stranded: stranded(cell, catalog),
            node_groups: node_groups(cell, catalog),
        },
    }
}

/// The mig-parted config document of a cell, or `None` when no pool has a MIG-capable GPU.
fn mig_parted_document(cell: &Cell, catalog: &Catalog) -> Option<MigPartedConfig> {
    let mig_capable = cell.pools.iter().any(|pool| {
        catalog
            .sku(&pool.gpu.value)
            .is_some_and(|sku| sku.mig_table.is_some())
    });
    if !mig_capable {
        return None;
    }
    let mut configs = BTreeMap::from([(
        MIG_DISABLED.to_string(),
        vec![MigConfigEntry {
            device_filter: None,
            devices: Devices::All,
            mig_enabled: false,
            mig_devices: None,
        }],
    )]);
    for pool in cell.pools.iter().filter(|pool| pool.sharing.value.is_mig()) {
        let pci_ids = catalog
            .sku(&pool.gpu.value)
            .map(|sku| sku.pci_ids.clone())
            .unwrap_or_default();
        for layout in &pool.mig_layouts {
            let devices: BTreeMap<String, i64> = layout
                .profiles
                .iter()
                .map(|(name, count)| (name.value.clone(), count.value))
                .collect();
            let entry = MigConfigEntry {
                device_filter: Some(pci_ids.clone()),
                devices: Devices::All,
                mig_enabled: true,
                mig_devices: Some(devices),
            };
            configs.insert(mig_config_name(pool, layout), vec![entry]);
        }
    }
    Some(MigPartedConfig {
        version: Version::V1,
        mig_configs: configs,
    })
}

/// The device-plugin config of one pool.
fn device_plugin_document(pool: &Pool) -> DevicePluginConfig {
    let mig_strategy = match pool.sharing.value {
        Sharing::Mig => MigStrategy::Mixed,
        Sharing::MigSingle => MigStrategy::Single,
        Sharing::Exclusive | Sharing::TimeSlice | Sharing::Mps => MigStrategy::None,
    };
    let replicas = pool.replicas.as_ref().map_or(1, |r| r.value);
    // `renameByDefault` advertises replicas as `nvidia.com/gpu.shared`, apart from whole GPUs.
    let resources = ReplicatedResources {
        rename_by_default: true,
        resources: vec![ReplicatedResource {
            name: GPU_RESOURCE.to_string(),
            replicas,
        }],
    };
    let sharing = match pool.sharing.value {
        Sharing::TimeSlice => Some(gpu_operator::Sharing::TimeSlicing(resources)),
        Sharing::Mps => Some(gpu_operator::Sharing::Mps(resources)),
        Sharing::Exclusive | Sharing::Mig | Sharing::MigSingle => None,
    };
    DevicePluginConfig {
        version: Version::V1,
        flags: Flags { mig_strategy },
        sharing,
    }
}

/// What each MIG layout of the cell leaves unused, with a witness placement.
fn stranded(cell: &Cell, catalog: &Catalog) -> Vec<StrandedLayout> {
    let mut rows = Vec::new();
    for pool in cell.pools.iter().filter(|pool| pool.sharing.value.is_mig()) {
        let Some(table) = catalog.table_for_sku(&pool.gpu.value) else {
            continue;
        };
        for (idx, layout) in pool.mig_layouts.iter().enumerate() {
            let request: Vec<(String, u32)> = layout
                .profiles
                .iter()
                .map(|(name, count)| (name.value.clone(), u32::try_from(count.value).unwrap_or(0)))
                .collect();
            let (Ok(per_gpu), Ok(witness)) = (
                placement::stranded_capacity(table, &request),
                placement::place(table, &request),
            ) else {
                continue;
            };
            rows.push(StrandedLayout {
                pool: pool.name.value.clone(),
                layout: layout.name.value.clone(),
                gpus: hardware::layout_nodes(pool, idx).saturating_mul(pool.gpus_per_node.value),
                per_gpu,
                placement: witness
                    .instances
                    .iter()
                    .map(|instance| format!("{}@{}", instance.profile, instance.start))
                    .collect(),
            });
        }
    }
    rows
}

/// Every pool resource of the cell with what each tenant reserves of it.
fn rows(cell: &Cell, tenants: &[&Tenant], catalog: &Catalog) -> Vec<CapacityRow> {
    let mut rows: Vec<CapacityRow> = Vec::new();
    for pool in &cell.pools {
        for offer in hardware::offers(pool, catalog) {
            rows.push(CapacityRow {
                pool: pool.name.value.clone(),
                resource: offer.resource,
                capacity: offer.capacity,
                reserved: BTreeMap::new(),
            });
        }
    }
    for tenant in tenants {
        let Some(quota) = tenant.quota_in(&cell.name.value) else {
            continue;
        };
        for reservation in &quota.pools {
            let Some((pool, offer)) = hardware::resolve(cell, reservation, catalog) else {
                continue;
            };
            if let Some(row) = rows
                .iter_mut()
                .find(|row| row.pool == pool.name.value && row.resource == offer.resource)
            {
                let entry = row.reserved.entry(tenant.name.value.clone()).or_insert(0);
                *entry = entry.saturating_add(reservation.reserved.value);
            }
        }
    }
    rows
}
