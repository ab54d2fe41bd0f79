//! What a cell with `devices "dra"` is made from: the pools tenantc can lower to DeviceClasses
//! of the NVIDIA DRA driver ([docs/dra.md](../../docs/dra.md)).
//!
//! Consumes: the fleet and the hardware catalog. Produces, for cells that declare
//! `devices "dra"` only:
//! - `dra-sharing-unsupported` for a pool shared by time-slicing, MPS or MIG's single strategy:
//!   the driver shares a GPU through a claim's opaque config, which tenantc does not write or
//!   hold, and DRA has no single strategy (a MIG device is always a `mig` device);
//! - `dra-product-name-unknown` for a pool whose GPU model has no NVML product name in the
//!   catalog: a DeviceClass selects the model by the driver's `productName` attribute;
//! - `kueue-limit-exceeded` where the cell's scheduler is Kueue and its DRA mapping would exceed
//!   what Kueue v0.19.2 accepts (`pkg/config/validation.go`, `validateDeviceClassMappings`: at
//!   most 16 mappings, at most 8 device classes in one).
//!
//! Invariant: with these, `plan/dra.rs` finds one DeviceClass for every offer of every pool, so
//! every reservation of a DRA cell becomes a device-class quota (the property test of
//! `plan/dra_props.rs`).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic};
use crate::facts::backends::backends;
use crate::hardware;
use crate::model::{Cell, DeviceMode, Fleet, Scheduler, Sharing};

/// The most `deviceClassMappings` Kueue v0.19.2 accepts.
pub const KUEUE_MAX_MAPPINGS: usize = 16;
/// The most device classes one mapping of Kueue v0.19.2 holds.
pub const KUEUE_MAX_CLASSES_PER_MAPPING: usize = 8;

/// Every finding about the fleet's DRA cells.
pub(super) fn check(fleet: &Fleet, catalog: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    for cell in &fleet.cells {
        let Some(devices) = &cell.devices else {
            continue;
        };
        match devices.value {
            DeviceMode::DevicePlugin => continue,
            DeviceMode::Dra => {}
        }
        let cell_catalog: Cow<'_, Catalog> = hardware::cell_catalog(cell, catalog);
        pools(cell, devices.span, &cell_catalog, diagnostics);
        kueue_mapping(cell, devices.span, &cell_catalog, diagnostics);
    }
}

/// Pools whose sharing or GPU model tenantc cannot lower to DRA.
fn pools(
    cell: &Cell,
    devices: crate::source::Span,
    catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for pool in &cell.pools {
        let supported = match pool.sharing.value {
            Sharing::Exclusive | Sharing::Mig => true,
            Sharing::MigSingle | Sharing::TimeSlice | Sharing::Mps => false,
        };
        if !supported {
            diagnostics.push(
                Diagnostic::error(
                    Code::DraSharingUnsupported,
                    pool.sharing.span,
                    format!(
                        "pool `{}` of cell `{}` shares GPUs by `{}`, which tenantc does not lower to DRA",
                        pool.name.value, cell.name.value, pool.sharing.value
                    ),
                )
                .with_label("a DRA cell's pools are `exclusive` or `mig`")
                .with_secondary(devices, "the cell hands out GPUs through DRA")
                .with_help(
                    "declare `sharing \"exclusive\"` or `sharing \"mig\"` (MIG's mixed strategy), or keep the device plugin by removing `devices \"dra\"`",
                ),
            );
        }
        // An unknown model is reported by the pool checks; only a known one without a name here.
        if let Some(sku) = catalog.sku(&pool.gpu.value)
            && sku.product_name.is_none()
        {
            diagnostics.push(
                Diagnostic::error(
                    Code::DraProductNameUnknown,
                    pool.gpu.span,
                    format!(
                        "GPU model `{}` of pool `{}` has no known product name for a DRA device class",
                        pool.gpu.value, pool.name.value
                    ),
                )
                .with_label("the NVIDIA DRA driver names a GPU's model only by its NVML product name")
                .with_secondary(devices, "the cell hands out GPUs through DRA")
                .with_help(
                    "name a GPU model whose product name the catalog records (`tenantc catalog`), or keep the device plugin by removing `devices \"dra\"`",
                ),
            );
        }
    }
}

/// A Kueue cell's DRA mapping beyond Kueue's limits.
fn kueue_mapping(
    cell: &Cell,
    devices: crate::source::Span,
    catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) {
    match backends(cell).scheduler {
        Scheduler::Volcano => return,
        Scheduler::Kueue => {}
    }
    // Per resource, the (model, profile) pairs that would each be a class.
    let mut classes: BTreeMap<String, BTreeSet<(String, Option<String>)>> = BTreeMap::new();
    for pool in &cell.pools {
        for offer in hardware::offers(pool, catalog) {
            classes
                .entry(offer.resource)
                .or_default()
                .insert((pool.gpu.value.clone(), offer.profile));
        }
    }
    let widest = classes
        .iter()
        .map(|(resource, set)| (set.len(), resource))
        .max();
    let too_many_mappings = classes.len() > KUEUE_MAX_MAPPINGS;
    let too_wide = widest.filter(|(count, _)| *count > KUEUE_MAX_CLASSES_PER_MAPPING);
    if too_many_mappings || too_wide.is_some() {
        let what = match too_wide {
            Some((count, resource)) if !too_many_mappings => format!(
                "{count} device classes would count as `{resource}`, and Kueue maps at most {KUEUE_MAX_CLASSES_PER_MAPPING} to one resource"
            ),
            _ => format!(
                "its pools offer {} GPU resources, and Kueue accepts at most {KUEUE_MAX_MAPPINGS} device class mappings",
                classes.len()
            ),
        };
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                devices,
                format!(
                    "cell `{}` needs more DRA device class mappings than Kueue accepts",
                    cell.name.value
                ),
            )
            .with_label(what)
            .with_help(
                "offer fewer GPU models or MIG profiles in the cell, or keep the device plugin by removing `devices \"dra\"`",
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use crate::validate::test_support::compile_files;

    const TENANT: &str = r#"tenant "t1" {
    org "o"
    team "t"
    trust "hard"
    groups admin="t1-admins" member="t1"
    quota cell="c1" cpu="8" memory="64Gi" pods=10 {
        pool "train" reserved=8
    }
    workload "train" service-account="trainer" priority="batch"
    registry "registry.example.com/t1"
}
"#;

    fn codes(pool: &str) -> Vec<&'static str> {
        let cell = format!(
            r#"cell "c1" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.34"
    devices "dra"
    driver "570"
    priority "batch" value=1000
    pool "train" {{ {pool}; nodes 1 gpus-per-node=8; taint "p" "train" effect="NoSchedule"; }}
}}
"#
        );
        compile_files(&[("cells/c1.kdl", cell.as_str()), ("tenants/t1.kdl", TENANT)])
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.code.as_str())
            .collect()
    }

    #[test]
    fn accepts_exclusive_pools_of_a_named_model() {
        assert_eq!(
            codes("gpu \"H100-80GB-SXM\"; sharing \"exclusive\""),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn refuses_time_slicing_in_a_dra_cell() {
        assert!(
            codes("gpu \"L4\"; sharing \"time-slice\"; replicas 4")
                .contains(&"dra-sharing-unsupported")
        );
    }

    #[test]
    fn refuses_a_model_without_a_product_name() {
        // The catalog records no NVML name for the GH200 144GB.
        assert!(
            codes("gpu \"GH200-144GB\"; sharing \"exclusive\"")
                .contains(&"dra-product-name-unknown")
        );
    }
}
