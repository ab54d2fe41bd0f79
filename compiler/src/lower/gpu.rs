//! GPU plumbing of a cell: the mig-parted config, the device-plugin config, node labels and the
//! capacity report.
//!
//! Consumes: a validated [`Cell`], the tenants' quotas in it and the cell's catalog.
//! Produces: two ConfigMaps in the GPU Operator namespace (`tenantc-mig-parted-config` with one
//! named mig-parted config per MIG layout, `tenantc-device-plugin-config` with one device-plugin
//! config per pool), the node labels each pool or node group needs, and the capacity report.
//! Both configs are typed documents (`gpu_config.rs`, the module `config`), which the ConfigMaps
//! write as canonical YAML text when they are serialized.
//!
//! Invariants:
//! - The mig-parted document has exactly `version: v1` and `mig-configs` at the top; every
//!   config has at least one entry; every MIG entry carries a `device-filter` with the pool's
//!   PCI ids, so a config never lands on another GPU model; `all-disabled` is always present
//!   (the GPU Operator's default label value).
//! - Config names are `<pool>-<layout>`, valid label values (validation checks the length).

use std::collections::BTreeMap;

use serde_json::json;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::catalog::{Catalog, placement};
use crate::facts::gpu::{MIG_DISABLED, mig_config_name, node_groups, operator_namespace};
use crate::hardware::{self, GPU_RESOURCE};
use crate::model::{Cell, Pool, Sharing, Tenant};

// The typed config documents are a part of this module, kept in their own file beside it.
#[path = "gpu_config.rs"]
pub mod config;

use config::{
    DevicePluginConfig, Devices, Document, Flags, MigConfigEntry, MigPartedConfig, MigStrategy,
    OperatorConfigMap, ReplicatedResource, ReplicatedResources, Version,
};

/// The mig-parted ConfigMap name (set ClusterPolicy `migManager.config.name` to it).
pub const MIG_PARTED_CONFIGMAP: &str = "tenantc-mig-parted-config";
/// The device-plugin ConfigMap name (set ClusterPolicy `devicePlugin.config.name` to it).
pub const DEVICE_PLUGIN_CONFIGMAP: &str = "tenantc-device-plugin-config";
fn configmap(cell: &Cell, name: &str, data: BTreeMap<String, Document>) -> OperatorConfigMap {
    OperatorConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(operator_namespace(cell).to_string()),
            labels: Some(super::managed_labels()),
            ..ObjectMeta::default()
        },
        data,
    }
}

/// The mig-parted config document of a cell, or `None` when no pool has a MIG-capable GPU (every
/// node group of a MIG-capable model gets an `nvidia.com/mig.config` label, so the config must
/// exist, if only with `all-disabled`).
pub fn mig_parted_document(cell: &Cell, catalog: &Catalog) -> Option<MigPartedConfig> {
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
pub fn device_plugin_document(pool: &Pool) -> DevicePluginConfig {
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
        Sharing::TimeSlice => Some(config::Sharing::TimeSlicing(resources)),
        Sharing::Mps => Some(config::Sharing::Mps(resources)),
        Sharing::Exclusive | Sharing::Mig | Sharing::MigSingle => None,
    };
    DevicePluginConfig {
        version: Version::V1,
        flags: Flags { mig_strategy },
        sharing,
    }
}

/// The GPU Operator objects of a cell, as `(file, object)`.
pub fn operator_objects(cell: &Cell, catalog: &Catalog) -> Vec<(String, OperatorConfigMap)> {
    let mut objects = Vec::new();
    if let Some(document) = mig_parted_document(cell, catalog) {
        objects.push((
            "configmap-mig-parted-config.yaml".to_string(),
            configmap(
                cell,
                MIG_PARTED_CONFIGMAP,
                BTreeMap::from([("config.yaml".to_string(), Document::MigParted(document))]),
            ),
        ));
    }
    if !cell.pools.is_empty() {
        let data = cell
            .pools
            .iter()
            .map(|pool| {
                (
                    pool.name.value.clone(),
                    Document::DevicePlugin(device_plugin_document(pool)),
                )
            })
            .collect();
        objects.push((
            "configmap-device-plugin-config.yaml".to_string(),
            configmap(cell, DEVICE_PLUGIN_CONFIGMAP, data),
        ));
    }
    objects
}

/// One row of the capacity report.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    pool: String,
    resource: String,
    capacity: i64,
    reserved: BTreeMap<String, i64>,
}

fn stranded(cell: &Cell, catalog: &Catalog) -> Vec<serde_json::Value> {
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
            let witness: Vec<String> = witness
                .instances
                .iter()
                .map(|instance| format!("{}@{}", instance.profile, instance.start))
                .collect();
            let gpus = hardware::layout_nodes(pool, idx).saturating_mul(pool.gpus_per_node.value);
            rows.push(json!({
                "pool": pool.name.value,
                "layout": layout.name.value,
                "gpus": gpus,
                "unused_compute_slices_per_gpu": per_gpu.unused_compute_slices,
                "unused_memory_slices_per_gpu": per_gpu.unused_memory_slices,
                "unused_placement_units_per_gpu": per_gpu.unused_placement_units,
                "unused_compute_slices": i64::from(per_gpu.unused_compute_slices).saturating_mul(gpus),
                "unused_memory_slices": i64::from(per_gpu.unused_memory_slices).saturating_mul(gpus),
                "placement": witness,
            }));
        }
    }
    rows
}

fn rows(cell: &Cell, tenants: &[&Tenant], catalog: &Catalog) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for pool in &cell.pools {
        for offer in hardware::offers(pool, catalog) {
            rows.push(Row {
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

/// The capacity report of a cell as `(json, markdown)` bodies (without headers).
pub fn capacity_report(
    cell: &Cell,
    tenants: &[&Tenant],
    catalog: &Catalog,
) -> (serde_json::Value, String) {
    let rows = rows(cell, tenants, catalog);
    let stranded = stranded(cell, catalog);
    let groups = node_groups(cell, catalog);
    let json_rows: Vec<serde_json::Value> = rows
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
    let json_groups: Vec<serde_json::Value> = groups
        .iter()
        .map(|group| {
            json!({
                "pool": group.pool,
                "layout": group.layout,
                "nodes": group.nodes,
                "labels": group.labels,
            })
        })
        .collect();
    let report = json!({
        "cell": cell.name.value,
        "resources": json_rows,
        "stranded": stranded,
        "node_groups": json_groups,
    });

    let mut md = format!("# Capacity of cell `{}`\n\n", cell.name.value);
    md.push_str("Reserved is the sum of the tenants' `reserved` (Kueue nominal quota); burst is not counted.\n\n");
    md.push_str("| pool | resource | capacity | reserved | free | reserved by |\n");
    md.push_str("|---|---|---:|---:|---:|---|\n");
    for row in &rows {
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
        operator_namespace(cell)
    ));
    md.push_str("| pool | layout | nodes | labels |\n|---|---|---:|---|\n");
    for group in &groups {
        let labels: Vec<String> = group
            .labels
            .iter()
            .map(|(key, value)| format!("`{key}={value}`"))
            .collect();
        md.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            group.pool,
            group.layout.as_deref().unwrap_or("-"),
            group.nodes,
            labels.join("<br>")
        ));
    }
    (report, md)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::test_support::compile_files;

    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="r"
    kubernetes "1.33"
    driver "570"
    gpu-operator namespace="nvidia-gpu-operator"
    pool "train" { gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; }
    pool "notebooks" { gpu "L4"; nodes 3 gpus-per-node=1; sharing "time-slice"; replicas 4; }
    pool "mps" { gpu "L40S"; nodes 1 gpus-per-node=4; sharing "mps"; replicas 2; }
    pool "single" { gpu "A100-40GB-SXM"; nodes 2 gpus-per-node=8; sharing "mig-single"; mig-layout "sevens" { profile "1g.5gb" 7; }; }
}
"#;

    fn tree() -> BTreeMap<String, String> {
        let compilation = compile_files(&[("cells/c1.kdl", CELL)]);
        assert!(
            compilation.diagnostics.is_empty(),
            "{:?}",
            compilation.diagnostics
        );
        compilation
            .output
            .unwrap()
            .into_iter()
            .map(|(path, bytes)| (path, String::from_utf8(bytes).unwrap()))
            .collect()
    }

    #[test]
    fn device_plugin_configs_follow_each_pools_sharing_mode() {
        let tree = tree();
        let config = &tree["c1/gpu-operator/configmap-device-plugin-config.yaml"];
        assert!(config.contains("  namespace: nvidia-gpu-operator\n"));
        assert!(config.contains(
            "  notebooks: |\n    version: v1\n    flags:\n      migStrategy: none\n    sharing:\n      timeSlicing:\n        renameByDefault: true\n        resources:\n        - name: nvidia.com/gpu\n          replicas: 4\n"
        ));
        assert!(config.contains("    sharing:\n      mps:\n        renameByDefault: true\n        resources:\n        - name: nvidia.com/gpu\n          replicas: 2\n"));
        assert!(
            config
                .contains("  single: |\n    version: v1\n    flags:\n      migStrategy: single\n")
        );
        assert!(
            config.contains("  train: |\n    version: v1\n    flags:\n      migStrategy: none\n")
        );
    }

    #[test]
    fn mig_single_layouts_get_a_filtered_mig_parted_config() {
        let tree = tree();
        let config = &tree["c1/gpu-operator/configmap-mig-parted-config.yaml"];
        assert!(
            config.contains(
                "      single-sevens:\n      - device-filter:\n        - \"0x20B010DE\"\n"
            ),
            "{config}"
        );
        assert!(config.contains("        mig-devices:\n          \"1g.5gb\": 7\n"));
    }

    #[test]
    fn node_labels_disable_mig_on_whole_gpu_pools_of_mig_capable_models_only() {
        let compilation = compile_files(&[("cells/c1.kdl", CELL)]);
        assert!(!compilation.has_errors());
        let report = &compilation.output.unwrap()["c1/reports/capacity.md"];
        let report = String::from_utf8(report.clone()).unwrap();
        let line = |pool: &str| {
            report
                .lines()
                .find(|line| {
                    line.starts_with(&format!("| {pool} |")) && line.contains("device-plugin")
                })
                .unwrap_or_default()
                .to_string()
        };
        assert!(line("train").contains("`nvidia.com/mig.config=all-disabled`"));
        assert!(!line("notebooks").contains("mig.config"));
        assert!(line("single").contains("`nvidia.com/mig.config=single-sevens`"));
    }

    #[test]
    fn only_cells_with_mig_capable_gpus_get_a_mig_parted_config() {
        let build = |pools: &str| {
            let cell = format!(
                "cell \"c1\" {{\n  cloud \"aws\" region=\"r\"\n  kubernetes \"1.33\"\n  driver \"570\"\n  {pools}\n}}\n"
            );
            let compilation = compile_files(&[("cells/c1.kdl", &cell)]);
            assert!(
                compilation.diagnostics.is_empty(),
                "{:?}",
                compilation.diagnostics
            );
            compilation.output.unwrap()
        };
        let l4_only =
            build("pool \"n\" { gpu \"L4\"; nodes 1 gpus-per-node=1; sharing \"exclusive\"; }");
        assert!(!l4_only.contains_key("c1/gpu-operator/configmap-mig-parted-config.yaml"));
        assert!(l4_only.contains_key("c1/gpu-operator/configmap-device-plugin-config.yaml"));
        // Whole H100s are labelled `all-disabled`, so that config must exist.
        let h100 = build(
            "pool \"t\" { gpu \"H100-80GB-SXM\"; nodes 1 gpus-per-node=8; sharing \"exclusive\"; }",
        );
        let config =
            String::from_utf8(h100["c1/gpu-operator/configmap-mig-parted-config.yaml"].clone())
                .unwrap();
        assert!(config.contains("    mig-configs:\n      all-disabled:\n      - devices: all\n        mig-enabled: false\n"), "{config}");
    }
}
