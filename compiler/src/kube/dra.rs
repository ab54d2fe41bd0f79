//! Dynamic Resource Allocation's `resource.k8s.io/v1` DeviceClass and ResourceClaimTemplate,
//! typed, for the subset tenantc emits, and the `resources.deviceClassMappings` part of Kueue's
//! controller Configuration ([docs/dra.md](../../docs/dra.md)).
//!
//! Consumes: the values `lower/dra.rs` decides on (names, CEL selectors, class names, counts).
//! Produces: values that serialize through serde to the objects the API server accepts.
//!
//! Version: `k8s-openapi` with the `v1_33` feature models no `resource.k8s.io/v1` (it is served
//! from Kubernetes 1.34 on), so these structs follow the Kubernetes 1.36 OpenAPI document
//! (`io.k8s.api.resource.v1.DeviceClassSpec`, `ResourceClaimTemplateSpec`, `ResourceClaimSpec`,
//! `DeviceClaim`, `DeviceRequest`, `ExactDeviceRequest`), field names and nesting as there;
//! Kueue's Configuration follows v0.19.2 (`apis/config/v1beta2/configuration_types.go`,
//! `Resources.DeviceClassMappings`, `DeviceClassMapping`).
//!
//! Invariants: `apiVersion` and `kind` are set only by the constructors; every field exists in
//! the Kubernetes 1.36 OpenAPI document (a test walks an instance against its `resource.k8s.io/v1`
//! definitions, vendored in `schema/k8s/`); only the
//! fields tenantc sets are modelled, and never `status`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// The API version of DeviceClasses, ResourceClaims and ResourceClaimTemplates.
pub const API_VERSION: &str = "resource.k8s.io/v1";

/// A DeviceClass: a named set of devices, chosen by CEL selectors over their attributes.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClass {
    api_version: &'static str,
    kind: &'static str,
    /// Name (cluster-scoped) and labels.
    pub metadata: ObjectMeta,
    /// The selectors.
    pub spec: DeviceClassSpec,
}

impl DeviceClass {
    /// A DeviceClass with its `apiVersion` and `kind`.
    pub fn new(metadata: ObjectMeta, spec: DeviceClassSpec) -> DeviceClass {
        DeviceClass {
            api_version: API_VERSION,
            kind: "DeviceClass",
            metadata,
            spec,
        }
    }
}

/// What a DeviceClass selects (`DeviceClassSpec`): every selector must hold for a device.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassSpec {
    /// The selectors.
    pub selectors: Vec<DeviceSelector>,
}

/// One selector (`DeviceSelector`).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DeviceSelector {
    /// A CEL expression over the device.
    pub cel: CelDeviceSelector,
}

/// A CEL selector (`CELDeviceSelector`).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct CelDeviceSelector {
    /// The expression; true selects the device.
    pub expression: String,
}

/// A ResourceClaimTemplate: the claim a pod's `resourceClaims` entry makes for the pod.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimTemplate {
    api_version: &'static str,
    kind: &'static str,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The claim it makes.
    pub spec: ResourceClaimTemplateSpec,
}

impl ResourceClaimTemplate {
    /// A ResourceClaimTemplate with its `apiVersion` and `kind`.
    pub fn new(metadata: ObjectMeta, spec: ResourceClaimTemplateSpec) -> ResourceClaimTemplate {
        ResourceClaimTemplate {
            api_version: API_VERSION,
            kind: "ResourceClaimTemplate",
            metadata,
            spec,
        }
    }
}

/// The claim a template makes (`ResourceClaimTemplateSpec`; its `metadata` is left out).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ResourceClaimTemplateSpec {
    /// The claim's spec.
    pub spec: ResourceClaimSpec,
}

/// A claim (`ResourceClaimSpec`).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ResourceClaimSpec {
    /// The devices it asks for.
    pub devices: DeviceClaim,
}

/// The devices of a claim (`DeviceClaim`).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DeviceClaim {
    /// The requests, each satisfied on its own.
    pub requests: Vec<DeviceRequest>,
}

/// One request (`DeviceRequest`), always with `exactly`.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DeviceRequest {
    /// The request's name (a DNS label), by which containers name it.
    pub name: String,
    /// The devices of one class.
    pub exactly: ExactDeviceRequest,
}

/// Devices of one class (`ExactDeviceRequest`).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExactDeviceRequest {
    /// The class.
    pub device_class_name: String,
    /// `ExactCount`: exactly `count` devices.
    pub allocation_mode: &'static str,
    /// How many.
    pub count: i64,
}

/// The allocation mode of every request tenantc writes.
pub const EXACT_COUNT: &str = "ExactCount";

/// The part of Kueue's controller Configuration (`config.kueue.x-k8s.io/v1beta2`) that maps DRA
/// device classes onto the resources ClusterQueues count, for the platform to merge into the
/// Configuration its Kueue runs with.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KueueConfiguration {
    api_version: &'static str,
    kind: &'static str,
    /// `resources`.
    pub resources: KueueResources,
}

impl KueueConfiguration {
    /// A Configuration holding only `resources`.
    pub fn new(resources: KueueResources) -> KueueConfiguration {
        KueueConfiguration {
            api_version: "config.kueue.x-k8s.io/v1beta2",
            kind: "Configuration",
            resources,
        }
    }
}

/// `resources` of Kueue's Configuration, with only the DRA mappings.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KueueResources {
    /// One mapping per resource.
    pub device_class_mappings: Vec<DeviceClassMapping>,
}

/// One mapping (`DeviceClassMapping`): the resource a ClusterQueue's quota names, and the
/// device classes whose requested devices count as it.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassMapping {
    /// The resource name.
    pub name: String,
    /// The device classes.
    pub device_class_names: Vec<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    /// The `resource.k8s.io/v1` definitions of the Kubernetes 1.36 OpenAPI document, vendored.
    fn definitions() -> serde_json::Value {
        let text = include_str!("../../../schema/k8s/resource-v1-from-1.36.json");
        let document: serde_json::Value = serde_json::from_str(text).unwrap();
        document["definitions"].clone()
    }

    /// Every field of `value` against the definition `name`: a field the definition does not
    /// have is returned as its path.
    fn unknown_fields(
        value: &serde_json::Value,
        name: &str,
        definitions: &serde_json::Value,
        path: &str,
        found: &mut Vec<String>,
    ) {
        // Definitions outside `resource.k8s.io/v1` (ObjectMeta) are not vendored: not walked.
        let Some(definition) = definitions.get(name) else {
            return;
        };
        let properties = &definition["properties"];
        let Some(object) = value.as_object() else {
            return;
        };
        for (key, field) in object {
            let Some(property) = properties.get(key) else {
                found.push(format!("{path}.{key}"));
                continue;
            };
            let reference = property["$ref"]
                .as_str()
                .or_else(|| property["items"]["$ref"].as_str());
            let Some(reference) = reference else {
                continue;
            };
            let target = reference.trim_start_matches("#/definitions/");
            match field {
                serde_json::Value::Array(items) => {
                    for item in items {
                        unknown_fields(
                            item,
                            target,
                            definitions,
                            &format!("{path}.{key}[]"),
                            found,
                        );
                    }
                }
                other => {
                    unknown_fields(other, target, definitions, &format!("{path}.{key}"), found)
                }
            }
        }
    }

    #[test]
    fn every_field_exists_in_the_kubernetes_1_36_openapi() {
        let definitions = definitions();
        let class = DeviceClass::new(
            ObjectMeta {
                name: Some("gpu-h100".to_string()),
                ..ObjectMeta::default()
            },
            DeviceClassSpec {
                selectors: vec![DeviceSelector {
                    cel: CelDeviceSelector {
                        expression: "true".to_string(),
                    },
                }],
            },
        );
        let template = ResourceClaimTemplate::new(
            ObjectMeta {
                name: Some("gpu-h100".to_string()),
                namespace: Some("t1-train".to_string()),
                ..ObjectMeta::default()
            },
            ResourceClaimTemplateSpec {
                spec: ResourceClaimSpec {
                    devices: DeviceClaim {
                        requests: vec![DeviceRequest {
                            name: "gpu".to_string(),
                            exactly: ExactDeviceRequest {
                                device_class_name: "gpu-h100".to_string(),
                                allocation_mode: EXACT_COUNT,
                                count: 1,
                            },
                        }],
                    },
                },
            },
        );
        let mut found = Vec::new();
        unknown_fields(
            &serde_json::to_value(&class).unwrap(),
            "io.k8s.api.resource.v1.DeviceClass",
            &definitions,
            "DeviceClass",
            &mut found,
        );
        unknown_fields(
            &serde_json::to_value(&template).unwrap(),
            "io.k8s.api.resource.v1.ResourceClaimTemplate",
            &definitions,
            "ResourceClaimTemplate",
            &mut found,
        );
        assert_eq!(found, Vec::<String>::new());
        // The walk reaches the request's innermost fields, so a misspelt one would be found.
        let mut misspelt = serde_json::to_value(&template).unwrap();
        misspelt["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClass"] =
            serde_json::json!("x");
        let mut found = Vec::new();
        unknown_fields(
            &misspelt,
            "io.k8s.api.resource.v1.ResourceClaimTemplate",
            &definitions,
            "ResourceClaimTemplate",
            &mut found,
        );
        assert_eq!(
            found,
            ["ResourceClaimTemplate.spec.spec.devices.requests[].exactly.deviceClass"]
        );
    }
}
