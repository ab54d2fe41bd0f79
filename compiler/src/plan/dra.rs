//! Dynamic Resource Allocation, resolved: the DeviceClasses a cell with `devices "dra"` offers, the
//! devices each tenant namespace may claim of each, and Kueue's mapping of the classes onto the
//! resources its ClusterQueues count ([docs/dra.md](../../docs/dra.md)).
//!
//! Consumes: a validated cell, its planned pools and the hardware catalog (for the product name
//! NVML reports for each GPU model). Produces: [`DraPlan`] per DRA cell, and per tenant
//! namespace the device count of every class ([`namespace_devices`]).
//!
//! Invariants:
//! - One class per GPU model and MIG profile offered by a pool of the cell, named by
//!   [`class_name`]; each selects the NVIDIA DRA driver's devices (driver [`DRIVER`]) by the
//!   attributes `type`, `productName` and, for a MIG device, `profile`.
//! - A namespace's count of a class is the sum of `reserved + burst` of the reservations (of its
//!   workload) whose pool and profile the class stands for, exactly as the device plugin's
//!   `requests.<resource>` sums them per resource; every class of the cell is listed, 0 where
//!   the tenant reserves none.
//! - Kueue's mapping names each class under the extended resource the device plugin would
//!   advertise, so a ClusterQueue counts the same resources with either device mode.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::PoolPlan;
use crate::catalog::Catalog;
use crate::model::{Cell, Quota, WorkloadKind};

/// The driver name of the NVIDIA DRA driver for GPUs (`NVIDIA/k8s-dra-driver-gpu` v25.8.1,
/// `cmd/gpu-kubelet-plugin/main.go`, `DriverName`): the domain of its device attributes.
pub const DRIVER: &str = "gpu.nvidia.com";

/// The value of the driver's `type` attribute for a whole GPU and for a MIG device
/// (`cmd/gpu-kubelet-plugin/types.go`, `GpuDeviceType`, `MigDeviceType`).
pub const GPU_TYPE: &str = "gpu";
/// See [`GPU_TYPE`].
pub const MIG_TYPE: &str = "mig";

/// A DeviceClass of the cell: the devices of one GPU model, whole or as one MIG profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceClassPlan {
    /// The class name, also the prefix of its quota key.
    pub name: String,
    /// The GPU model (catalog key).
    pub gpu: String,
    /// The MIG profile, or `None` for whole GPUs.
    pub profile: Option<String>,
    /// The extended resource the device plugin would advertise for these devices.
    pub resource: String,
    /// The names NVML reports for the model (the current one first), which the driver publishes
    /// as `productName`.
    pub product_names: Vec<String>,
}

/// The DRA objects of a cell with `devices "dra"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DraPlan {
    /// Every class, sorted by name.
    pub classes: Vec<DeviceClassPlan>,
    /// In a Kueue cell, Kueue's `deviceClassMappings`: per extended resource (sorted), the
    /// classes it counts (sorted); empty in a Volcano cell.
    pub kueue_mappings: Vec<(String, Vec<String>)>,
}

/// The name of the class of a GPU model's whole GPUs or of one of its MIG profiles:
/// `gpu-<model>` or `mig-<profile>-<model>`, lowercase, with every character a DNS subdomain
/// cannot hold (such as the `+` of `1g.10gb+me`) written as `-`.
pub fn class_name(gpu: &str, profile: Option<&str>) -> String {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|ch| {
                let ch = ch.to_ascii_lowercase();
                if ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-' || ch == '.' {
                    ch
                } else {
                    '-'
                }
            })
            .collect()
    };
    match profile {
        None => format!("gpu-{}", clean(gpu)),
        Some(profile) => format!("mig-{}-{}", clean(profile), clean(gpu)),
    }
}

/// The cell's DRA plan, or `None` when the cell hands GPUs out through the device plugin.
/// Validation proved that every pool of a DRA cell is `exclusive` or `mig` and that every model
/// has a product name; a model without one is skipped here rather than guessed.
pub fn dra_plan(cell: &Cell, pools: &[PoolPlan], catalog: &Catalog) -> Option<DraPlan> {
    let devices = crate::facts::backends::backends(cell);
    match devices.devices {
        crate::model::DeviceMode::DevicePlugin => return None,
        crate::model::DeviceMode::Dra => {}
    }
    let mut classes: BTreeMap<String, DeviceClassPlan> = BTreeMap::new();
    for pool in pools {
        let Some(sku) = catalog.sku(&pool.gpu) else {
            continue;
        };
        let Some(current) = &sku.product_name else {
            continue;
        };
        let mut product_names = vec![current.clone()];
        product_names.extend(sku.older_product_names.iter().cloned());
        for offer in &pool.offers {
            let name = class_name(&pool.gpu, offer.profile.as_deref());
            classes.entry(name.clone()).or_insert(DeviceClassPlan {
                name,
                gpu: pool.gpu.clone(),
                profile: offer.profile.clone(),
                resource: offer.resource.clone(),
                product_names: product_names.clone(),
            });
        }
    }
    let kueue_mappings = match devices.scheduler {
        crate::model::Scheduler::Volcano => Vec::new(),
        crate::model::Scheduler::Kueue => {
            let mut by_resource: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for class in classes.values() {
                by_resource
                    .entry(class.resource.clone())
                    .or_default()
                    .insert(class.name.clone());
            }
            by_resource
                .into_iter()
                .map(|(resource, names)| (resource, names.into_iter().collect()))
                .collect()
        }
    };
    Some(DraPlan {
        classes: classes.into_values().collect(),
        kueue_mappings,
    })
}

/// The devices a tenant namespace of `workload` may claim of each class of the cell: every
/// class, with the sum of `reserved + burst` of the reservations that apply to the workload and
/// whose pool and profile the class stands for.
pub fn namespace_devices(
    dra: &DraPlan,
    cell: &Cell,
    quota: &Quota,
    workload: WorkloadKind,
    catalog: &Catalog,
) -> BTreeMap<String, i64> {
    let mut devices: BTreeMap<String, i64> = dra
        .classes
        .iter()
        .map(|class| (class.name.clone(), 0))
        .collect();
    for reservation in &quota.pools {
        if reservation
            .workload
            .as_ref()
            .is_some_and(|only| only.value != workload)
        {
            continue;
        }
        let Some((pool, offer)) = crate::hardware::resolve(cell, reservation, catalog) else {
            continue;
        };
        let name = class_name(&pool.gpu.value, offer.profile.as_deref());
        // Only classes of the plan: a model without a product name has none (validation reports it).
        if let Some(count) = devices.get_mut(&name) {
            let amount = reservation
                .reserved
                .value
                .saturating_add(reservation.burst.as_ref().map_or(0, |burst| burst.value));
            *count = count.saturating_add(amount);
        }
    }
    devices
}

#[cfg(test)]
mod tests {
    use super::class_name;

    #[test]
    fn class_names_are_dns_subdomains_that_tell_models_and_profiles_apart() {
        assert_eq!(class_name("A100-80GB-SXM", None), "gpu-a100-80gb-sxm");
        assert_eq!(
            class_name("H100-80GB-SXM", Some("1g.10gb")),
            "mig-1g.10gb-h100-80gb-sxm"
        );
        assert_eq!(
            class_name("H100-80GB-SXM", Some("1g.10gb+me")),
            "mig-1g.10gb-me-h100-80gb-sxm"
        );
        assert_ne!(
            class_name("A100-80GB-SXM", Some("1g.10gb")),
            class_name("H100-80GB-SXM", Some("1g.10gb"))
        );
    }
}
