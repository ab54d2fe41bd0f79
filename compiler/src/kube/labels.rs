//! The label keys that more than one stage names: the mark of every object tenantc manages, the
//! prefix of tenant metadata, the namespace name Kubernetes sets, and the GPU Operator's node
//! labels that select a pool's configs.
//!
//! Consumes: nothing. Produces: label keys (and the managed-by value).
//!
//! Invariant: the one home of these keys; `lower` writes them, `template` marks its objects with
//! them, `facts` derives node labels from them and the policy tests read them, so no two stages
//! can spell a key differently.

/// Label on every emitted object.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "tenantc");
/// Label prefix of tenant metadata.
pub const LABEL_PREFIX: &str = "tenant.platform";
/// The label the API server sets on every Namespace to its name, which nobody can forge.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// The node label that selects a pool's device-plugin config.
pub const DEVICE_PLUGIN_CONFIG_LABEL: &str = "nvidia.com/device-plugin.config";
/// The node label that selects a node's mig-parted config.
pub const MIG_CONFIG_LABEL: &str = "nvidia.com/mig.config";

/// The tenant a tenant object belongs to (`tenant.platform/tenant`).
pub const TENANT_LABEL: &str = "tenant.platform/tenant";
/// The org of a tenant object's tenant.
pub const ORG_LABEL: &str = "tenant.platform/org";
/// The team of a tenant namespace's tenant.
pub const TEAM_LABEL: &str = "tenant.platform/team";
/// The trust class of a tenant namespace's tenant.
pub const TRUST_LABEL: &str = "tenant.platform/trust";
/// The cell of a tenant namespace.
pub const CELL_LABEL: &str = "tenant.platform/cell";
/// The workload kind of a tenant namespace.
pub const WORKLOAD_LABEL: &str = "tenant.platform/workload";
/// The chargeback label naming a tenant's ClusterQueue (Kueue's metrics' `cluster_queue`).
pub const QUEUE_LABEL: &str = "tenant.platform/queue";
/// The chargeback label naming the GPU model a tenant reserves in a cell.
pub const SKU_LABEL: &str = "tenant.platform/sku";
/// The namespace annotation listing the capabilities a Pod Security exception grants.
pub const POD_SECURITY_CAPABILITIES_ANNOTATION: &str = "tenant.platform/pod-security-capabilities";
/// The namespace annotation recording each Pod Security exception's reason and approver.
pub const POD_SECURITY_EXCEPTIONS_ANNOTATION: &str = "tenant.platform/pod-security-exceptions";
/// The annotation that names the weight digest a pod loads.
pub const WEIGHT_DIGEST_ANNOTATION: &str = "tenantc.io/weight-digest";
/// The label of an Argo CD Application that names its RollingSync step.
pub const SYNC_STEP_LABEL: &str = "tenantc.io/sync-step";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_metadata_keys_carry_the_prefix() {
        for key in [
            TENANT_LABEL,
            ORG_LABEL,
            TEAM_LABEL,
            TRUST_LABEL,
            CELL_LABEL,
            WORKLOAD_LABEL,
            POD_SECURITY_CAPABILITIES_ANNOTATION,
            POD_SECURITY_EXCEPTIONS_ANNOTATION,
        ] {
            let name = key
                .strip_prefix(LABEL_PREFIX)
                .and_then(|rest| rest.strip_prefix('/'));
            assert!(name.is_some_and(|name| !name.is_empty()), "{key}");
        }
    }
}
