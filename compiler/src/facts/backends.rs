//! The backends a cell runs and the Kubernetes versions they need: which scheduler, admission
//! engine and device mode a cell's declarations are lowered to, with the defaults of
//! `defaults.rs` applied, and the first minor version each runs on.
//!
//! Consumes: a cell of the model. Produces: [`Backends`], the one reading of a cell's
//! `scheduler`, `admission` and `devices` that `validate/backends.rs` checks and `plan` records,
//! and the version gates [`VAP_MINOR`], [`POLICY_ENGINE_MINOR`] and [`DRA_MINOR`].
//!
//! Invariant: a cell's backends are read only through [`backends`], so no stage applies a default
//! of its own.

use super::defaults;
use crate::model::Cell;
/// The closed sets of the backends, the model's enums, for the stages above that read them here.
pub use crate::model::{AdmissionEngine, DeviceMode, Scheduler};

/// The first Kubernetes minor with `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy.
pub const VAP_MINOR: u32 = 30;
/// The first Kubernetes minor a Kyverno or Gatekeeper floor is built for: the engines evaluate
/// the floor's CEL themselves, so it needs only what every matched kind and the namespace label
/// `kubernetes.io/metadata.name` offer, and 1.27 is the oldest minor the engines' own releases
/// are tested against by tenantc's users (docs/policy-engines.md).
pub const POLICY_ENGINE_MINOR: u32 = 27;
/// The first Kubernetes minor with `resource.k8s.io/v1` (Dynamic Resource Allocation, GA).
pub const DRA_MINOR: u32 = 34;

/// The backends a cell is lowered to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Backends {
    /// Its batch scheduler.
    pub scheduler: Scheduler,
    /// The engine of its tenant admission floor.
    pub admission: AdmissionEngine,
    /// How GPUs reach pods.
    pub devices: DeviceMode,
}

/// The cell's backends: what it declares, the defaults for what it leaves out.
pub fn backends(cell: &Cell) -> Backends {
    Backends {
        scheduler: cell
            .scheduler
            .as_ref()
            .map_or(defaults::SCHEDULER, |declared| declared.value),
        admission: cell
            .admission
            .as_ref()
            .map_or(defaults::ADMISSION, |declared| declared.value),
        devices: cell
            .devices
            .as_ref()
            .map_or(defaults::DEVICES, |declared| declared.value),
    }
}

/// The first Kubernetes minor an admission engine runs on, where tenantc knows one.
pub fn admission_minor(engine: AdmissionEngine) -> Option<u32> {
    match engine {
        AdmissionEngine::Vap => Some(VAP_MINOR),
        AdmissionEngine::Kyverno | AdmissionEngine::Gatekeeper => Some(POLICY_ENGINE_MINOR),
    }
}

/// The first Kubernetes minor a device mode runs on, where it has one.
pub fn devices_minor(devices: DeviceMode) -> Option<u32> {
    match devices {
        DeviceMode::DevicePlugin => None,
        DeviceMode::Dra => Some(DRA_MINOR),
    }
}
