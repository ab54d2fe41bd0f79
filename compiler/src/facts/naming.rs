//! How tenantc names what it emits, where more than one stage needs the name: a workload's
//! namespace, and the cell-wide policies the reports point reviewers at.
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
