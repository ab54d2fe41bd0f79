//! The network floor and the quota keys beyond cpu, memory, pods and GPUs, resolved.
//!
//! Consumes: a validated [`Cell`] and a tenant's [`Quota`] and workloads in it.
//! Produces: the cell's [`NetworkPlan`] (the DNS pods, the NodeLocal DNS address, the metrics
//! scraper and the endpoints tenant pods may reach, defaults applied) and, per tenant namespace,
//! its storage and Service ceilings and its DRA device quota ([`other_quota`]).
//!
//! Invariants:
//! - Defaults are applied here, once: DNS in `kube-system` with `k8s-app=kube-dns`, and the DRA
//!   device classes `gpu.nvidia.com` and `mig.nvidia.com`.
//! - Every ceiling here is 0 unless the tenant declares it, and a declared ceiling is split over
//!   the tenant's namespaces by their `share` with `split_by_shares`, so the parts add up to it
//!   exactly.
//! - DRA device quotas are listed only for cells on Kubernetes 1.34 or later, where
//!   `resource.k8s.io/v1` is served.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::facts::split::split_by_shares;
use crate::model::{Cell, Quota, Workload};

/// The DNS namespace when a cell declares none.
pub const DEFAULT_DNS_NAMESPACE: &str = "kube-system";
/// The label of the DNS pods when a cell declares none.
pub const DEFAULT_DNS_SELECTOR: (&str, &str) = ("k8s-app", "kube-dns");
/// The DRA device classes denied when a cell names none: NVIDIA's DRA driver's.
pub const DEFAULT_DRA_DEVICE_CLASSES: [&str; 2] = ["gpu.nvidia.com", "mig.nvidia.com"];
/// The first Kubernetes minor version that serves `resource.k8s.io/v1` (DRA is GA).
pub use crate::facts::backends::DRA_MINOR;

/// What a cell's NetworkPolicies are made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetworkPlan {
    /// The namespace of the cluster DNS pods.
    pub dns_namespace: String,
    /// The label `(key, value)` of the cluster DNS pods.
    pub dns_selector: (String, String),
    /// The NodeLocal DNSCache block, where the cell declares one.
    pub node_local_dns: Option<String>,
    /// The metrics scraper: its namespace and the label of its pods (every pod of the namespace
    /// when absent).
    pub metrics: Option<(String, Option<(String, String)>)>,
    /// Endpoints tenant pods may reach on TCP 443: `(name, cidr)`, sorted by name.
    pub endpoints: Vec<(String, String)>,
    /// What the cell's workload identity needs its pods to reach: `(cidr, TCP port)`, empty
    /// without `storage` or for IRSA ([`identity_egress`]).
    pub identity: Vec<(String, i32)>,
}

/// The node-local addresses a cell's workload identity serves credentials on, as
/// `(cidr, TCP port)`:
/// - EKS Pod Identity: the agent on every node, `169.254.170.23` (and `fd00:ec2::23` on IPv6
///   nodes), port 80, where the SDKs' `AWS_CONTAINER_CREDENTIALS_FULL_URI` points;
/// - GKE Workload Identity: the GKE metadata server, which intercepts `169.254.169.254` port 80
///   on nodes with `GKE_METADATA` and listens on `169.254.169.252` port 988 where the cluster's
///   network policy needs it addressed directly;
/// - IRSA: nothing node-local. Pods call STS (`sts.<region>.amazonaws.com`) on 443, a public
///   address NetworkPolicy cannot name, so the cell must declare the block of its STS interface
///   VPC endpoint as an `endpoint`, whose 443 egress every tenant already has.
pub fn identity_egress(identity: &super::storage::IdentityPlan) -> Vec<(String, i32)> {
    use super::storage::IdentityPlan;
    let entries: &[(&str, i32)] = match identity {
        IdentityPlan::AwsPodIdentity { .. } => {
            &[("169.254.170.23/32", 80), ("fd00:ec2::23/128", 80)]
        }
        IdentityPlan::Gcp { .. } => &[("169.254.169.254/32", 80), ("169.254.169.252/32", 988)],
        IdentityPlan::AwsIrsa { .. } => &[],
    };
    entries
        .iter()
        .map(|(cidr, port)| ((*cidr).to_string(), *port))
        .collect()
}

/// The cell's network plan, defaults applied.
pub fn network(cell: &Cell) -> NetworkPlan {
    let selector = |text: &str| {
        text.split_once('=')
            .map(|(key, value)| (key.to_string(), value.to_string()))
    };
    let mut endpoints: Vec<(String, String)> = cell
        .endpoints
        .iter()
        .map(|endpoint| (endpoint.name.value.clone(), endpoint.cidr.value.to_string()))
        .collect();
    endpoints.sort();
    NetworkPlan {
        dns_namespace: cell
            .dns
            .namespace
            .as_ref()
            .map_or(DEFAULT_DNS_NAMESPACE.to_string(), |ns| ns.value.clone()),
        dns_selector: cell
            .dns
            .selector
            .as_ref()
            .and_then(|text| selector(&text.value))
            .unwrap_or_else(|| {
                (
                    DEFAULT_DNS_SELECTOR.0.to_string(),
                    DEFAULT_DNS_SELECTOR.1.to_string(),
                )
            }),
        node_local_dns: cell
            .dns
            .node_local
            .as_ref()
            .map(|block| block.value.to_string()),
        metrics: cell.metrics.as_ref().map(|metrics| {
            (
                metrics.namespace.value.clone(),
                metrics
                    .selector
                    .as_ref()
                    .and_then(|text| selector(&text.value)),
            )
        }),
        endpoints,
        identity: super::storage::storage_plan(cell)
            .map(|storage| identity_egress(&storage.identity))
            .unwrap_or_default(),
    }
}

/// The DRA device classes whose devices tenant quotas deny in the cell: none before Kubernetes
/// 1.34; the cell's, or NVIDIA's by default; sorted and without repeats.
pub fn dra_device_classes(cell: &Cell) -> Vec<String> {
    // A cell whose version could not be read is never planned (it is incomplete, an error).
    if cell
        .kubernetes
        .as_ref()
        .is_none_or(|version| version.value.1 < DRA_MINOR)
    {
        return Vec::new();
    }
    let mut classes: Vec<String> = if cell.dra_device_classes.is_empty() {
        DEFAULT_DRA_DEVICE_CLASSES
            .iter()
            .map(|class| class.to_string())
            .collect()
    } else {
        cell.dra_device_classes
            .iter()
            .map(|class| class.value.clone())
            .collect()
    };
    classes.sort();
    classes.dedup();
    classes
}

/// The quota key of a DRA device class.
pub fn dra_quota_key(class: &str) -> String {
    format!("{class}.deviceclass.resource.k8s.io/devices")
}

/// Per workload namespace (in the order of the workload kinds, as `split_ceilings`), the
/// ResourceQuota keys beyond cpu, memory, pods and GPUs with their values: storage and Service
/// ceilings split by share, and 0 for every DRA device class.
pub fn other_quota(
    quota: &Quota,
    workloads: &[Workload],
    dra_classes: &[String],
) -> Vec<BTreeMap<String, String>> {
    let mut kinds: Vec<&Workload> = workloads.iter().collect();
    kinds.sort_by_key(|workload| workload.kind.value);
    kinds.dedup_by_key(|workload| workload.kind.value);
    let shares: Vec<i64> = kinds
        .iter()
        .map(|workload| workload.share.as_ref().map_or(1, |share| share.value))
        .collect();
    let mut parts: Vec<BTreeMap<String, String>> = vec![BTreeMap::new(); kinds.len()];
    let storage = &quota.storage;
    for (key, declared) in [
        ("requests.ephemeral-storage", &storage.ephemeral_storage),
        ("requests.storage", &storage.storage),
    ] {
        let (total, format) = declared.as_ref().map_or((0, None), |quantity| {
            (quantity.value.milli(), Some(quantity.value.format()))
        });
        // Whole bytes: a quantity below one byte is refused by the API server for storage.
        for (part, milli) in parts.iter_mut().zip(split_by_shares(total, 1000, &shares)) {
            let text = format
                .and_then(|format| crate::quantity::Quantity::from_milli(milli, format))
                .map_or_else(|| "0".to_string(), |quantity| quantity.to_string());
            part.insert(key.to_string(), text);
        }
    }
    for (key, declared) in [
        ("persistentvolumeclaims", &storage.persistent_volume_claims),
        ("services.loadbalancers", &storage.load_balancers),
        ("services.nodeports", &storage.node_ports),
    ] {
        let total = declared.as_ref().map_or(0, |count| i128::from(count.value));
        for (part, count) in parts.iter_mut().zip(split_by_shares(total, 1, &shares)) {
            part.insert(key.to_string(), count.to_string());
        }
    }
    for part in &mut parts {
        for class in dra_classes {
            part.insert(dra_quota_key(class), "0".to_string());
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use crate::testing::support::compile_files;

    fn plan(kubernetes: &str, cell_extra: &str, quota_extra: &str) -> crate::plan::Plan {
        let cell = format!(
            "cell \"c1\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"{kubernetes}\"\n    driver \"570\"\n{cell_extra}}}\n"
        );
        let tenant = format!(
            "tenant \"t1\" {{\n    org \"o\"\n    team \"a\"\n    trust \"soft\"\n    groups admin=\"g\"\n    quota cell=\"c1\" cpu=\"8\" memory=\"32Gi\" pods=20 {quota_extra}\n    workload \"train\" service-account=\"trainer\"\n    workload \"infer\" service-account=\"server\" share=2\n}}\n"
        );
        let compilation = compile_files(&[("cells/c1.kdl", &cell), ("tenants/t1.kdl", &tenant)]);
        assert!(!compilation.has_errors(), "{:?}", compilation.diagnostics);
        compilation.plan.unwrap()
    }

    #[test]
    fn storage_and_service_ceilings_are_zero_unless_declared_and_split_by_share() {
        let undeclared = plan("1.33", "", "");
        for namespace in &undeclared.cells[0].tenants[0].namespaces {
            let values: Vec<&str> = namespace.other_quota.values().map(String::as_str).collect();
            assert_eq!(values, ["0"; 5], "{}", namespace.name);
        }
        let declared = plan(
            "1.33",
            "",
            "ephemeral-storage=\"3Gi\" storage=\"1Ti\" persistent-volume-claims=10 load-balancers=1 node-ports=3",
        );
        let namespaces = &declared.cells[0].tenants[0].namespaces;
        // Namespaces in the order train (share 1), infer (share 2); the remainder goes to train.
        assert_eq!(namespaces[0].workload.as_str(), "train");
        let get = |idx: usize, key: &str| namespaces[idx].other_quota[key].clone();
        assert_eq!(get(0, "requests.ephemeral-storage"), "1Gi");
        assert_eq!(get(1, "requests.ephemeral-storage"), "2Gi");
        assert_eq!(get(0, "persistentvolumeclaims"), "4");
        assert_eq!(get(1, "persistentvolumeclaims"), "6");
        assert_eq!(get(0, "services.loadbalancers"), "1");
        assert_eq!(get(1, "services.loadbalancers"), "0");
        assert_eq!(get(0, "services.nodeports"), "1");
        assert_eq!(get(1, "services.nodeports"), "2");
    }

    #[test]
    fn dra_devices_are_denied_from_kubernetes_1_34_for_the_cells_classes() {
        let key = |class: &str| format!("{class}.deviceclass.resource.k8s.io/devices");
        let old = plan("1.33", "", "");
        assert!(
            old.cells[0].tenants[0].namespaces[0]
                .other_quota
                .keys()
                .all(|k| !k.contains("deviceclass"))
        );
        let new = plan("1.34", "", "");
        let quota = &new.cells[0].tenants[0].namespaces[0].other_quota;
        assert_eq!(quota[&key("gpu.nvidia.com")], "0");
        assert_eq!(quota[&key("mig.nvidia.com")], "0");
        let declared = plan("1.36", "    dra-device-class \"gpu.example.com\"\n", "");
        let quota = &declared.cells[0].tenants[0].namespaces[0].other_quota;
        assert_eq!(quota[&key("gpu.example.com")], "0");
        assert!(!quota.contains_key(&key("gpu.nvidia.com")));
    }

    #[test]
    fn dns_defaults_to_kube_dns_in_kube_system() {
        let network = &plan("1.33", "", "").cells[0].network;
        assert_eq!(network.dns_namespace, "kube-system");
        assert_eq!(
            network.dns_selector,
            ("k8s-app".to_string(), "kube-dns".to_string())
        );
        assert_eq!(network.node_local_dns, None);
        assert_eq!(network.metrics, None);
        assert!(network.endpoints.is_empty());
    }
}
