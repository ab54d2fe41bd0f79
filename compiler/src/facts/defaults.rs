//! The defaults tenantc applies where a declaration leaves a value out: container requests, the
//! GitOps identities and namespaces, the GPU Operator's namespace, the cell's backends.
//!
//! Consumes: nothing. Produces: constants, which `plan` applies when it resolves a declaration
//! (and `facts/gpu.rs` when it names the GPU Operator's namespace), so every later stage reads
//! the value in effect, never the default.
//!
//! Invariant: the one home of each default; `docs/declarations.md` documents the same values.

/// The default CPU request for containers that set none.
pub const CONTAINER_CPU: &str = "100m";
/// The default memory request for containers that set none.
pub const CONTAINER_MEMORY: &str = "256Mi";

/// The GitOps identity of a cell that declares none: Argo CD's application controller as its
/// install manifests name it.
pub const GITOPS_USER: &str = "system:serviceaccount:argocd:argocd-application-controller";
/// The break-glass group of a cell that declares none: `system:masters`, which passes every
/// authorization check and may delete the policy itself, so the guard cannot stop it anyway.
pub const BREAK_GLASS: &str = "system:masters";
/// Argo CD's namespace when the cell declares none.
pub const ARGOCD_NAMESPACE: &str = "argocd";
/// Flux's namespace when the cell declares none.
pub const FLUX_NAMESPACE: &str = "flux-system";

/// The default GPU Operator namespace.
pub const GPU_OPERATOR_NAMESPACE: &str = "gpu-operator";

/// The scheduler of a cell that declares none: Kueue, what tenantc emitted before cells could
/// choose.
pub const SCHEDULER: crate::model::Scheduler = crate::model::Scheduler::Kueue;
/// The admission engine of a cell that declares none: ValidatingAdmissionPolicy.
pub const ADMISSION: crate::model::AdmissionEngine = crate::model::AdmissionEngine::Vap;
/// The device mode of a cell that declares none: the NVIDIA device plugin.
pub const DEVICES: crate::model::DeviceMode = crate::model::DeviceMode::DevicePlugin;
