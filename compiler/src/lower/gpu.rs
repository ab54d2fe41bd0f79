//! The GPU Operator objects of a cell: two ConfigMaps in the GPU Operator namespace,
//! `tenantc-mig-parted-config` with one named mig-parted config per MIG layout and
//! `tenantc-device-plugin-config` with one device-plugin config per pool.
//!
//! Consumes: the cell's [`GpuPlan`], whose documents `plan/gpu.rs` resolved. Produces: the
//! ConfigMaps as typed objects ([`OperatorConfigMap`]), which write the documents as canonical
//! YAML text when they are serialized.
//!
//! Invariant: a plain mapping of the plan; the mig-parted ConfigMap exists exactly when the
//! plan has a mig-parted document, the device-plugin one when the cell has a pool.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::facts::naming::{DEVICE_PLUGIN_CONFIGMAP, MIG_PARTED_CONFIGMAP};
use crate::kube::gpu_operator::{Document, OperatorConfigMap};
use crate::plan::gpu::GpuPlan;

fn configmap(gpu: &GpuPlan, name: &str, data: BTreeMap<String, Document>) -> OperatorConfigMap {
    OperatorConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(gpu.operator_namespace.clone()),
            labels: Some(super::managed_labels()),
            ..ObjectMeta::default()
        },
        data,
    }
}

/// The GPU Operator objects of a cell, as `(file, object)`.
pub fn operator_objects(gpu: &GpuPlan) -> Vec<(String, OperatorConfigMap)> {
    let mut objects = Vec::new();
    if let Some(document) = &gpu.mig_parted {
        objects.push((
            "configmap-mig-parted-config.yaml".to_string(),
            configmap(
                gpu,
                MIG_PARTED_CONFIGMAP,
                BTreeMap::from([(
                    "config.yaml".to_string(),
                    Document::MigParted(document.clone()),
                )]),
            ),
        ));
    }
    if !gpu.device_plugins.is_empty() {
        let data = gpu
            .device_plugins
            .iter()
            .map(|(pool, document)| (pool.clone(), Document::DevicePlugin(document.clone())))
            .collect();
        objects.push((
            "configmap-device-plugin-config.yaml".to_string(),
            configmap(gpu, DEVICE_PLUGIN_CONFIGMAP, data),
        ));
    }
    objects
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
