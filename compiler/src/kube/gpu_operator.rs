//! The documents the GPU Operator's ConfigMaps embed, typed, for the subset tenantc writes: the
//! NVIDIA mig-parted config and the NVIDIA k8s-device-plugin config.
//!
//! Consumes: the values `plan/gpu.rs` takes from a cell's pools (config names, PCI ids, MIG
//! profiles, sharing modes and replicas).
//! Produces: [`MigPartedConfig`] and [`DevicePluginConfig`], which serialize through serde into
//! the canonical YAML tree (`emit::ser`), and [`OperatorConfigMap`], the ConfigMap that writes
//! them as YAML text into its `data`.
//!
//! Formats: mig-parted `version: v1` (`api/spec/v1/spec.go` of NVIDIA/mig-parted, summarised in
//! the reference notes `mig-parted-config-format.md`), whose keys are kebab-case; the device
//! plugin's `version: v1` (`api/config/v1/{config,flags,sharing,replicas}.go` of
//! NVIDIA/k8s-device-plugin), whose keys are camelCase.
//! Only the fields tenantc sets are modelled.
//!
//! Invariants:
//! - Every key is a struct field or enum variant renamed as its format spells it, so code that
//!   builds a document cannot name a key the structs lack; the spellings of the renames are
//!   checked by a test against lists written from the formats.
//! - Fields are declared in the order tenantc has always written them, which is the order of
//!   the keys in the output; free-form maps (config names, MIG profiles) are sorted by key.
//! - Every value that a format restricts to a few words (`version`, `devices`, `migStrategy`)
//!   is a Rust enum, so no other word can be written.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Serialize, Serializer};

use crate::emit::stream;

/// The `version` of both formats.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// Version 1, the only one either format defines.
    #[serde(rename = "v1")]
    V1,
}

/// A mig-parted config file: named MIG configs, one of which a node selects with its
/// `nvidia.com/mig.config` label.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub struct MigPartedConfig {
    /// Always [`Version::V1`].
    pub version: Version,
    /// Config name to the entries that configure the GPUs of a node.
    pub mig_configs: BTreeMap<String, Vec<MigConfigEntry>>,
}

/// One entry of a mig-parted config: the MIG mode and devices of the GPUs it matches.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub struct MigConfigEntry {
    /// The PCI ids (`0x<device><vendor>`) of the GPU models the entry applies to; absent means
    /// every model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_filter: Option<Vec<String>>,
    /// The GPU indexes the entry applies to.
    pub devices: Devices,
    /// The MIG mode wanted on the matched GPUs.
    pub mig_enabled: bool,
    /// Profile to the number of GPU instances of that profile on each matched GPU; present
    /// exactly when MIG is enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mig_devices: Option<BTreeMap<String, i64>>,
}

/// The GPUs of a node a mig-parted entry applies to.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Devices {
    /// Every GPU of the node (tenantc gives all GPUs of a node group one layout).
    #[serde(rename = "all")]
    All,
}

/// A device-plugin config (one per pool, selected by the node label
/// `nvidia.com/device-plugin.config`).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct DevicePluginConfig {
    /// Always [`Version::V1`].
    pub version: Version,
    /// The plugin's command-line flags.
    pub flags: Flags,
    /// How one GPU is shared between pods; absent for whole GPUs and MIG devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
}

/// The device plugin's flags that tenantc sets.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Flags {
    /// How MIG devices are advertised.
    pub mig_strategy: MigStrategy,
}

/// How the device plugin advertises MIG devices (`flags.migStrategy`).
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MigStrategy {
    /// MIG devices are ignored; `nvidia.com/gpu` counts whole GPUs.
    None,
    /// Each MIG device is one `nvidia.com/gpu`.
    Single,
    /// One resource per profile, `nvidia.com/mig-<profile>`.
    Mixed,
}

/// The sharing strategy of a device-plugin config: exactly one of the format's `timeSlicing`
/// and `mps` keys.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Sharing {
    /// CUDA time-slicing.
    TimeSlicing(ReplicatedResources),
    /// CUDA Multi-Process Service.
    Mps(ReplicatedResources),
}

/// The resources a sharing strategy replicates.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedResources {
    /// Advertise replicas as `<resource>.shared`, apart from the whole resource.
    pub rename_by_default: bool,
    /// The replicated resources.
    pub resources: Vec<ReplicatedResource>,
}

/// One replicated resource.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedResource {
    /// The resource, such as `nvidia.com/gpu`.
    pub name: String,
    /// Pods that share one device.
    pub replicas: i64,
}

/// One config document of a GPU Operator ConfigMap.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(untagged)]
pub enum Document {
    /// The mig-parted config.
    MigParted(MigPartedConfig),
    /// A device-plugin config.
    DevicePlugin(DevicePluginConfig),
}

/// A ConfigMap of the GPU Operator whose values are typed documents.
///
/// It serializes as a `ConfigMap` whose `data` maps each key to its document written by the
/// canonical YAML writer, so the documents stay typed until they are emitted and a document that
/// cannot be written fails the ConfigMap's serialization (an internal error of `lower`, which builds the ConfigMaps).
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorConfigMap {
    /// The ConfigMap's metadata.
    pub metadata: ObjectMeta,
    /// Key (a file name or a config name) to its document.
    pub data: BTreeMap<String, Document>,
}

impl Serialize for OperatorConfigMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut data = BTreeMap::new();
        for (key, document) in &self.data {
            let text = stream::to_text(document)
                .map_err(|error| serde::ser::Error::custom(format!("document `{key}`: {error}")))?;
            data.insert(key.clone(), text);
        }
        ConfigMap {
            metadata: self.metadata.clone(),
            data: Some(data),
            ..ConfigMap::default()
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::parse::{Node, Value};
    use crate::source::FileId;
    use crate::validate::test_support::compile_files;

    /// The keys of a mig-parted `v1` file, written from `api/spec/v1/spec.go` of NVIDIA/mig-parted
    /// (`Spec`: `version`, `mig-configs`; `MigConfigSpec`: `devices`, `mig-enabled`,
    /// `mig-devices`, `device-filter`), all of which tenantc writes.
    /// `*` stands for a free-form key (a config name or a MIG profile), `[]` for a list item.
    const MIG_PARTED_KEYS: &[&str] = &[
        "version",
        "mig-configs",
        "mig-configs.*",
        "mig-configs.*[].device-filter",
        "mig-configs.*[].devices",
        "mig-configs.*[].mig-enabled",
        "mig-configs.*[].mig-devices",
        "mig-configs.*[].mig-devices.*",
    ];

    /// The free-form maps of a mig-parted file, whose keys are names rather than fields.
    const MIG_PARTED_FREE_FORM: &[&str] = &["mig-configs", "mig-configs.*[].mig-devices"];

    /// The keys of a device-plugin `v1` config that tenantc writes, written from `api/config/v1`
    /// of NVIDIA/k8s-device-plugin: `Config.version`, `Config.flags`, `Config.sharing`;
    /// `CommandLineFlags.migStrategy`; `Sharing.timeSlicing`, `Sharing.mps`; the replicated
    /// resources' `renameByDefault` and `resources`; `ReplicatedResource.name`, `.replicas`.
    const DEVICE_PLUGIN_KEYS: &[&str] = &[
        "version",
        "flags",
        "flags.migStrategy",
        "sharing",
        "sharing.timeSlicing",
        "sharing.timeSlicing.renameByDefault",
        "sharing.timeSlicing.resources",
        "sharing.timeSlicing.resources[].name",
        "sharing.timeSlicing.resources[].replicas",
        "sharing.mps",
        "sharing.mps.renameByDefault",
        "sharing.mps.resources",
        "sharing.mps.resources[].name",
        "sharing.mps.resources[].replicas",
    ];

    /// The values of `flags.migStrategy` (`none`, `single`, `mixed` in the format).
    const MIG_STRATEGIES: &[&str] = &["mixed", "none", "single"];

    /// A cell with a pool of every sharing mode (and a MIG-capable exclusive pool, which the
    /// `all-disabled` config serves).
    const EVERY_SHARING_MODE: &str = r#"cell "c1" {
    cloud "aws" region="r"
    kubernetes "1.33"
    driver "570"
    pool "whole" { gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; }
    pool "sliced" { gpu "L4"; nodes 3 gpus-per-node=1; sharing "time-slice"; replicas 4; }
    pool "mps" { gpu "L40S"; nodes 1 gpus-per-node=4; sharing "mps"; replicas 2; }
    pool "mixed" { gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "mig"; mig-layout "balanced" { profile "3g.40gb" 1; profile "2g.20gb" 1; profile "1g.10gb" 2; }; }
    pool "single" { gpu "A100-40GB-SXM"; nodes 2 gpus-per-node=8; sharing "mig-single"; mig-layout "sevens" { profile "1g.5gb" 7; }; }
}
"#;

    fn parse(text: &str) -> Node {
        let (document, diagnostics) = crate::parse::yaml::parse(FileId(0), text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}\n{text}");
        document.root.expect("a YAML document").node
    }

    /// Every key path of `node` under `prefix`; the keys of the maps at `free_form` paths are
    /// written as `*`.
    fn key_paths(node: &Node, prefix: &str, free_form: &[&str], paths: &mut BTreeSet<String>) {
        match &node.value {
            Value::Map(map) => {
                for entry in &map.entries {
                    let key = if free_form.contains(&prefix) {
                        "*"
                    } else {
                        entry.key.as_str()
                    };
                    let path = if prefix.is_empty() {
                        key.to_string()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    key_paths(&entry.value, &path, free_form, paths);
                    paths.insert(path);
                }
            }
            Value::Seq(items) => {
                for item in items {
                    key_paths(item, &format!("{prefix}[]"), free_form, paths);
                }
            }
            _ => {}
        }
    }

    /// The embedded documents of an emitted ConfigMap, by `data` key.
    fn documents(configmap: &str) -> Vec<(String, Node)> {
        let configmap = parse(configmap);
        let Value::Map(top) = &configmap.value else {
            panic!("the ConfigMap is not a mapping");
        };
        let data = top
            .entries
            .iter()
            .find(|entry| entry.key == "data")
            .expect("the ConfigMap has data");
        let Value::Map(data) = &data.value.value else {
            panic!("data is not a mapping");
        };
        data.entries
            .iter()
            .map(|entry| {
                let Value::Str(text) = &entry.value.value else {
                    panic!("data `{}` is not a string", entry.key);
                };
                (entry.key.clone(), parse(text))
            })
            .collect()
    }

    fn expected(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|key| key.to_string()).collect()
    }

    #[test]
    fn key_paths_name_a_misspelt_key() {
        let document = parse(
            "version: v1\nflags:\n  migStrategey: none\nsharing:\n  mps:\n    resources:\n    - name: a\n      replica: 2\n",
        );
        let mut paths = BTreeSet::new();
        key_paths(&document, "", &[], &mut paths);
        let known = expected(DEVICE_PLUGIN_KEYS);
        let unknown: Vec<&String> = paths.difference(&known).collect();
        assert_eq!(
            unknown,
            ["flags.migStrategey", "sharing.mps.resources[].replica"]
        );
    }

    #[test]
    fn gpu_operator_documents_use_exactly_the_keys_of_their_formats() {
        let compilation = compile_files(&[("cells/c1.kdl", EVERY_SHARING_MODE)]);
        assert!(
            compilation.diagnostics.is_empty(),
            "{:?}",
            compilation.diagnostics
        );
        let tree = compilation.output.expect("an output tree");
        let text = |path: &str| String::from_utf8(tree[path].clone()).expect("UTF-8");

        let mig_parted = documents(&text("c1/gpu-operator/configmap-mig-parted-config.yaml"));
        let mut paths = BTreeSet::new();
        for (key, document) in &mig_parted {
            assert_eq!(key, "config.yaml");
            key_paths(document, "", MIG_PARTED_FREE_FORM, &mut paths);
        }
        assert_eq!(paths, expected(MIG_PARTED_KEYS));

        let device_plugin = documents(&text("c1/gpu-operator/configmap-device-plugin-config.yaml"));
        let pools: Vec<&str> = device_plugin.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(pools, ["mixed", "mps", "single", "sliced", "whole"]);
        let mut paths = BTreeSet::new();
        let mut strategies = BTreeSet::new();
        for (_, document) in &device_plugin {
            key_paths(document, "", &[], &mut paths);
            let Value::Map(top) = &document.value else {
                panic!("a device-plugin config is not a mapping");
            };
            for entry in top.entries.iter().filter(|entry| entry.key == "flags") {
                let Value::Map(flags) = &entry.value.value else {
                    panic!("flags is not a mapping");
                };
                for flag in &flags.entries {
                    if let Value::Str(strategy) = &flag.value.value {
                        strategies.insert(strategy.clone());
                    }
                }
            }
        }
        assert_eq!(paths, expected(DEVICE_PLUGIN_KEYS));
        assert_eq!(strategies, expected(MIG_STRATEGIES));
    }
}
