//! How tenantc names what it emits, where more than one stage needs the name: a workload's
//! namespace, and the cell-wide policies and GPU Operator ConfigMaps the reports point
//! reviewers and operators at.
//!
//! Consumes: tenant names and workload kinds. Produces: names.
//!
//! Invariant: `validate` checks, `plan` resolves, `lower` emits and the reports and `describe`
//! name the same namespace and policy names.

use crate::model::WorkloadKind;

/// The namespace `<tenant>-<workload kind>`.
pub fn namespace_name(tenant: &str, kind: WorkloadKind) -> String {
    format!("{tenant}-{}", kind.as_str())
}

/// The name of the guard policy and its binding.
pub const GUARD_NAME: &str = "tenantc-guard-managed-objects";
/// The name of the Pod Security exception policy and its binding.
pub const EXCEPTIONS_NAME: &str = "tenantc-pod-security-exceptions";
/// The mig-parted ConfigMap name (set ClusterPolicy `migManager.config.name` to it).
pub const MIG_PARTED_CONFIGMAP: &str = "tenantc-mig-parted-config";
/// The device-plugin ConfigMap name (set ClusterPolicy `devicePlugin.config.name` to it).
pub const DEVICE_PLUGIN_CONFIGMAP: &str = "tenantc-device-plugin-config";
