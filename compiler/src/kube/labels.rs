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
