//! The DRA objects of a cell with `devices "dra"` ([docs/dra.md](../../docs/dra.md)).
//!
//! Consumes: the cell plan's [`DraPlan`] and each tenant namespace's device counts
//! (`plan/dra.rs`). Produces: per cell, one `resource.k8s.io/v1` DeviceClass per GPU model and
//! MIG profile in `cluster/`, and, where the scheduler is Kueue, the `deviceClassMappings` of
//! Kueue's Configuration as a file of the cell's `reports/` (tenantc does not own Kueue's
//! Configuration; the platform merges it); per tenant namespace, one ResourceClaimTemplate per
//! class it may claim.
//!
//! Invariants:
//! - Every selector checks the driver first and the device `type` before `profile`, so a device
//!   of another driver, or a whole GPU, never makes the expression fail (CEL's `&&` absorbs the
//!   error of a missing attribute only behind a false term).
//! - Every value of the plan is written into CEL through `cel.rs`, which quotes it.
//! - A namespace gets a template only for a class it may claim (a count above 0); the quota of
//!   `tenant.rs` holds every class of the cell, 0 where the tenant reserves none.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::tenant::tenant_labels;
use super::{body, cel, cluster_meta};
use crate::emit::{Body, InternalError};
use crate::kube::dra::{
    CelDeviceSelector, DeviceClaim, DeviceClass, DeviceClassMapping, DeviceClassSpec,
    DeviceRequest, DeviceSelector, EXACT_COUNT, ExactDeviceRequest, KueueConfiguration,
    KueueResources, ResourceClaimSpec, ResourceClaimTemplate, ResourceClaimTemplateSpec,
};
use crate::plan::dra::{DRIVER, DeviceClassPlan, DraPlan, GPU_TYPE, MIG_TYPE};
use crate::plan::{CellPlan, TenantPlan};

/// The file of a cell's `reports/` that holds Kueue's DRA configuration.
pub const KUEUE_CONFIGURATION_FILE: &str = "kueue-dra-configuration.yaml";

/// The CEL selector of a class: the NVIDIA DRA driver's devices of the class's type, product
/// name and, for MIG, profile.
pub fn selector(class: &DeviceClassPlan) -> String {
    let attribute = |name: &str| format!("device.attributes[{}].{name}", cel::string(DRIVER));
    let mut terms = vec![format!("device.driver == {}", cel::string(DRIVER))];
    match &class.profile {
        None => terms.push(format!(
            "{} == {}",
            attribute("type"),
            cel::string(GPU_TYPE)
        )),
        Some(profile) => {
            terms.push(format!(
                "{} == {}",
                attribute("type"),
                cel::string(MIG_TYPE)
            ));
            terms.push(format!(
                "{} == {}",
                attribute("profile"),
                cel::string(profile)
            ));
        }
    }
    terms.push(format!(
        "{} in {}",
        attribute("productName"),
        cel::list(&class.product_names)
    ));
    terms.join(" && ")
}

/// The DeviceClass of a class of the plan.
pub fn device_class(class: &DeviceClassPlan) -> DeviceClass {
    DeviceClass::new(
        cluster_meta(&class.name),
        DeviceClassSpec {
            selectors: vec![DeviceSelector {
                cel: CelDeviceSelector {
                    expression: selector(class),
                },
            }],
        },
    )
}

/// The cell's DeviceClasses, for `<cell>/cluster/`.
pub(super) fn cell_objects(cell: &CellPlan) -> Result<Vec<(String, Body)>, InternalError> {
    let Some(dra) = &cell.dra else {
        return Ok(Vec::new());
    };
    dra.classes
        .iter()
        .map(|class| {
            Ok((
                format!("deviceclass-{}.yaml", class.name),
                body(&device_class(class))?,
            ))
        })
        .collect()
}

/// The name of the request in a template of the class: what a container names in
/// `resources.claims[].request`.
pub fn request_name(class: &DeviceClassPlan) -> &'static str {
    match class.profile {
        None => "gpu",
        Some(_) => "mig",
    }
}

/// A tenant's ResourceClaimTemplates, for its folder: per namespace, one per class it may claim,
/// each asking for one device.
pub(super) fn tenant_objects(
    tenant: &TenantPlan,
    cell: &CellPlan,
) -> Result<Vec<(String, Body)>, InternalError> {
    let Some(dra) = &cell.dra else {
        return Ok(Vec::new());
    };
    let classes: BTreeMap<&str, &DeviceClassPlan> = dra
        .classes
        .iter()
        .map(|class| (class.name.as_str(), class))
        .collect();
    let mut objects = Vec::new();
    for namespace in &tenant.namespaces {
        for (name, count) in &namespace.dra_devices {
            if *count <= 0 {
                continue;
            }
            let Some(class) = classes.get(name.as_str()) else {
                return Err(InternalError(format!(
                    "namespace {} claims devices of class {name}, which cell {} does not have",
                    namespace.name, cell.name
                )));
            };
            let template = ResourceClaimTemplate::new(
                ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.name.clone()),
                    labels: Some(tenant_labels(tenant)),
                    ..ObjectMeta::default()
                },
                ResourceClaimTemplateSpec {
                    spec: ResourceClaimSpec {
                        devices: DeviceClaim {
                            requests: vec![DeviceRequest {
                                name: request_name(class).to_string(),
                                exactly: ExactDeviceRequest {
                                    device_class_name: name.clone(),
                                    allocation_mode: EXACT_COUNT,
                                    count: 1,
                                },
                            }],
                        },
                    },
                },
            );
            objects.push((
                format!(
                    "{}/resourceclaimtemplate-{name}.yaml",
                    namespace.workload.as_str()
                ),
                body(&template)?,
            ));
        }
    }
    Ok(objects)
}

/// Kueue's DRA configuration for the cell, where its scheduler is Kueue and it has classes.
pub fn kueue_configuration(dra: &DraPlan) -> Option<KueueConfiguration> {
    if dra.kueue_mappings.is_empty() {
        return None;
    }
    Some(KueueConfiguration::new(KueueResources {
        device_class_mappings: dra
            .kueue_mappings
            .iter()
            .map(|(resource, classes)| DeviceClassMapping {
                name: resource.clone(),
                device_class_names: classes.clone(),
            })
            .collect(),
    }))
}

/// The device classes a tenant may name in its claims in the cell: those it may claim devices
/// of in any of its namespaces, sorted.
pub fn tenant_classes(tenant: &TenantPlan) -> Vec<String> {
    let mut classes: Vec<String> = tenant
        .namespaces
        .iter()
        .flat_map(|namespace| namespace.dra_devices.iter())
        .filter(|(_, count)| **count > 0)
        .map(|(name, _)| name.clone())
        .collect();
    classes.sort();
    classes.dedup();
    classes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    fn class(profile: Option<&str>) -> DeviceClassPlan {
        DeviceClassPlan {
            name: "c".to_string(),
            gpu: "A100-80GB-SXM".to_string(),
            profile: profile.map(str::to_string),
            resource: "nvidia.com/gpu".to_string(),
            product_names: vec!["NVIDIA A100-SXM4-80GB".to_string()],
        }
    }

    /// Evaluates a selector against a device given as its driver and `gpu.nvidia.com` attributes.
    fn selects(
        expression: &str,
        driver: &str,
        attributes: serde_json::Value,
    ) -> Result<bool, String> {
        let env = std::sync::Arc::new(::cel::Env::stdlib());
        let program = env.compile(expression).map_err(|error| error.to_string())?;
        let mut context = ::cel::Context::with_env(env.clone());
        let device = serde_json::json!({
            "driver": driver,
            "attributes": { "gpu.nvidia.com": attributes },
        });
        context.add_variable_from_value(
            "device",
            ::cel::to_value(device).map_err(|error| error.to_string())?,
        );
        match program
            .execute(&context)
            .map_err(|error| error.to_string())?
        {
            ::cel::Value::Bool(value) => Ok(value),
            other => Err(format!("not a bool: {other:?}")),
        }
    }

    #[test]
    fn a_mig_class_selects_its_profile_of_its_model_and_nothing_else() {
        let expression = selector(&class(Some("1g.10gb")));
        let mig = |profile: &str, product: &str| serde_json::json!({"type": "mig", "profile": profile, "productName": product});
        assert_eq!(
            selects(&expression, DRIVER, mig("1g.10gb", "NVIDIA A100-SXM4-80GB")),
            Ok(true)
        );
        assert_eq!(
            selects(&expression, DRIVER, mig("2g.20gb", "NVIDIA A100-SXM4-80GB")),
            Ok(false)
        );
        assert_eq!(
            selects(&expression, DRIVER, mig("1g.10gb", "NVIDIA H100 80GB HBM3")),
            Ok(false)
        );
        // A whole GPU has no `profile`: the type test comes first, so it is not an error.
        assert_eq!(
            selects(
                &expression,
                DRIVER,
                serde_json::json!({"type": "gpu", "productName": "NVIDIA A100-SXM4-80GB"})
            ),
            Ok(false)
        );
        assert_eq!(
            selects(&expression, "other.example.com", serde_json::json!({})),
            Ok(false)
        );
    }

    #[test]
    fn a_whole_gpu_class_selects_whole_gpus_of_its_model_only() {
        let expression = selector(&class(None));
        assert_eq!(
            selects(
                &expression,
                DRIVER,
                serde_json::json!({"type": "gpu", "productName": "NVIDIA A100-SXM4-80GB"})
            ),
            Ok(true)
        );
        assert_eq!(
            selects(
                &expression,
                DRIVER,
                serde_json::json!({"type": "mig", "profile": "7g.80gb", "productName": "NVIDIA A100-SXM4-80GB"})
            ),
            Ok(false)
        );
    }
}
