//! What a pool offers to the scheduler: extended resources and their capacity.
//!
//! Consumes: a [`Pool`] of the model and the hardware catalog. Produces: [`Offer`]s, one per
//! extended resource the device plugin will advertise on the pool's nodes, with the number of
//! devices across the pool, the sum over its node groups ([`NodeOffers`]: a MIG layout's nodes,
//! or the whole pool) of their nodes times what one of them offers.
//!
//! Invariant: resource names follow the NVIDIA device plugin exactly: `nvidia.com/gpu` for whole
//! GPUs, time-slicing, MPS and MIG's single strategy, `nvidia.com/mig-<profile>` with `+` written
//! `.` for MIG's mixed strategy. Pure: no IO.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::catalog::{Catalog, GpuSku, MigProfile, MigTable, SharingMode};
use crate::model::{Cell, GpuModelDecl, Pool, Sharing};

/// The whole-GPU resource name.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The resource name of time-sliced and MPS replicas: the device plugin's `renameByDefault`
/// advertises them apart from whole GPUs, so a quota for shared replicas never admits a pod to a
/// whole GPU (or the other way round).
pub const SHARED_GPU_RESOURCE: &str = "nvidia.com/gpu.shared";

/// One extended resource a pool offers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Offer {
    /// The MIG profile behind the resource, for mixed-strategy MIG pools.
    pub profile: Option<String>,
    /// The extended resource name.
    pub resource: String,
    /// Devices across the pool.
    pub capacity: i64,
}

/// Nodes in a layout's group: its own `nodes`, or the whole pool for a single layout.
pub fn layout_nodes(pool: &Pool, idx: usize) -> i64 {
    match pool
        .mig_layouts
        .get(idx)
        .and_then(|layout| layout.nodes.as_ref())
    {
        Some(nodes) => nodes.value,
        None if pool.mig_layouts.len() == 1 => pool.nodes.value,
        None => 0,
    }
}

/// A group of a pool's nodes with one GPU configuration (a MIG layout, or the whole pool), and
/// what each of its nodes offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOffers {
    /// The MIG layout, for the node groups of a MIG pool.
    pub layout: Option<String>,
    /// Nodes in the group.
    pub nodes: i64,
    /// What one node of the group offers, sorted by resource name; `capacity` is per node.
    pub per_node: Vec<Offer>,
}

/// The node groups of a pool with what each node offers: one group for a pool that is not
/// shared by MIG, one per layout for a MIG pool. Unknown GPU models and profiles contribute
/// nothing (validation reports them). [`offers`] is their sum.
pub fn node_offers(pool: &Pool, catalog: &Catalog) -> Vec<NodeOffers> {
    let per_node = pool.gpus_per_node.value;
    let whole = |resource: &str, devices: i64| NodeOffers {
        layout: None,
        nodes: pool.nodes.value,
        per_node: vec![Offer {
            profile: None,
            resource: resource.to_string(),
            capacity: devices,
        }],
    };
    match pool.sharing.value {
        Sharing::Exclusive => vec![whole(GPU_RESOURCE, per_node)],
        Sharing::TimeSlice | Sharing::Mps => vec![whole(
            SHARED_GPU_RESOURCE,
            per_node.saturating_mul(pool.replicas.as_ref().map_or(1, |r| r.value)),
        )],
        Sharing::Mig | Sharing::MigSingle => {
            let table = catalog
                .sku(&pool.gpu.value)
                .and_then(|sku| sku.mig_table.as_deref())
                .and_then(|key| catalog.table(key));
            let mut groups = Vec::new();
            for (idx, layout) in pool.mig_layouts.iter().enumerate() {
                let mut by_resource: BTreeMap<String, (Option<String>, i64)> = BTreeMap::new();
                for (profile, count) in &layout.profiles {
                    let Some(found) = table.and_then(|table| table.profile(&profile.value)) else {
                        continue;
                    };
                    let (resource, profile_name) = match pool.sharing.value {
                        // Compute-instance profiles (`1c.2g.20gb`) get no resource of their own.
                        Sharing::Mig => {
                            match crate::catalog::resource_name_for_profile(&found.name) {
                                Some(resource) => (resource, Some(profile.value.clone())),
                                None => continue,
                            }
                        }
                        _ => (GPU_RESOURCE.to_string(), None),
                    };
                    let entry = by_resource.entry(resource).or_insert((profile_name, 0));
                    entry.1 = entry.1.saturating_add(per_node.saturating_mul(count.value));
                }
                groups.push(NodeOffers {
                    layout: Some(layout.name.value.clone()),
                    nodes: layout_nodes(pool, idx),
                    per_node: by_resource
                        .into_iter()
                        .map(|(resource, (profile, capacity))| Offer {
                            profile,
                            resource,
                            capacity,
                        })
                        .collect(),
                });
            }
            groups
        }
    }
}

/// The resources a pool offers, sorted by resource name: what its node groups offer, node by
/// node, summed. Unknown GPU models and profiles contribute nothing (validation reports them).
pub fn offers(pool: &Pool, catalog: &Catalog) -> Vec<Offer> {
    let mut by_resource: BTreeMap<String, (Option<String>, i64)> = BTreeMap::new();
    for group in node_offers(pool, catalog) {
        for offer in group.per_node {
            let entry = by_resource
                .entry(offer.resource)
                .or_insert((offer.profile, 0));
            entry.1 = entry
                .1
                .saturating_add(group.nodes.saturating_mul(offer.capacity));
        }
    }
    by_resource
        .into_iter()
        .map(|(resource, (profile, capacity))| Offer {
            profile,
            resource,
            capacity,
        })
        .collect()
}

/// The offer a tenant's pool reservation draws on: the pool's only resource, or for a
/// mixed-strategy MIG pool the resource of the named profile. `None` when the pool or profile
/// does not resolve (validation reports why).
pub fn resolve<'a>(
    cell: &'a crate::model::Cell,
    reservation: &crate::model::PoolQuota,
    catalog: &Catalog,
) -> Option<(&'a Pool, Offer)> {
    let pool = cell
        .pools
        .iter()
        .find(|pool| pool.name.value == reservation.pool.value)?;
    let offers = offers(pool, catalog);
    let offer = match (&reservation.profile, pool.sharing.value) {
        (Some(profile), Sharing::Mig) => offers
            .into_iter()
            .find(|offer| offer.profile.as_deref() == Some(profile.value.as_str()))?,
        (None, sharing) if sharing != Sharing::Mig => offers.into_iter().next()?,
        _ => return None,
    };
    Some((pool, offer))
}

/// The catalog mode of a declared sharing mode.
pub fn sharing_mode(sharing: Sharing) -> SharingMode {
    match sharing {
        Sharing::Exclusive => SharingMode::Exclusive,
        Sharing::Mig => SharingMode::Mig,
        Sharing::MigSingle => SharingMode::MigSingle,
        Sharing::TimeSlice => SharingMode::TimeSlice,
        Sharing::Mps => SharingMode::Mps,
    }
}

/// The key of the MIG table made from a cell's declared model.
pub fn declared_table_key(cell: &Cell, model: &GpuModelDecl) -> String {
    format!("{}/{}", cell.name.value, model.name.value)
}

fn to_u32(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

/// The catalog as one cell sees it: the built-in catalog plus the GPU models the cell declares.
/// Borrowed when the cell declares none.
pub fn cell_catalog<'a>(cell: &Cell, base: &'a Catalog) -> Cow<'a, Catalog> {
    if cell.gpu_models.is_empty() {
        return Cow::Borrowed(base);
    }
    let mut skus = Vec::new();
    let mut tables = Vec::new();
    for model in &cell.gpu_models {
        let table_key = model.mig.as_ref().map(|mig| {
            tables.push(MigTable {
                key: declared_table_key(cell, model),
                architecture: None,
                compute_slices: to_u32(mig.compute_slices.value),
                memory_slices: to_u32(mig.memory_slices.value),
                placement_units: to_u32(mig.placement_units.value),
                max_gpu_instances: to_u32(mig.compute_slices.value),
                confidence: "declared in the cell".to_string(),
                confidence_note: None,
                sources: vec![format!("cell {}", cell.name.value)],
                notes: Vec::new(),
                combination_rules: Vec::new(),
                older_profile_names: Vec::new(),
                profiles: mig
                    .profiles
                    .iter()
                    .map(|profile| MigProfile {
                        name: profile.name.value.clone(),
                        profile_id: profile.id.as_ref().map(|id| to_u32(id.value)),
                        compute_slices: to_u32(profile.compute.value),
                        memory_slices: to_u32(profile.memory.value),
                        memory_gb: 0,
                        max_count: to_u32(profile.max.value),
                        placement_starts: profile.starts.iter().map(|s| to_u32(s.value)).collect(),
                        placement_size: to_u32(profile.size.value),
                        attributes: Vec::new(),
                        inferred: false,
                        inferred_fields: Vec::new(),
                        inferred_why: None,
                        min_driver: None,
                        note: None,
                        engines: None,
                    })
                    .collect(),
                inferred: false,
            });
            declared_table_key(cell, model)
        });
        skus.push(GpuSku {
            key: model.name.value.clone(),
            generic: false,
            product_name: model.product.as_ref().map(|p| p.value.clone()),
            product_name_source: None,
            older_product_names: Vec::new(),
            pci_ids: model.pci_ids.iter().map(|id| id.value.clone()).collect(),
            pci_id_details: Vec::new(),
            mig_table: table_key,
            sharing: model
                .sharing
                .iter()
                .map(|mode| sharing_mode(mode.value))
                .collect(),
            note: None,
            memory_gb: None,
        });
    }
    Cow::Owned(base.with_models(skus, tables))
}
