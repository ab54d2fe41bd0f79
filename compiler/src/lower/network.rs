//! The network floor of one tenant in one cell: NetworkPolicies in each of its namespaces.
//!
//! Consumes: a tenant's plan in a cell and the cell's [`NetworkPlan`]. Produces, per workload
//! namespace, as `(path in the tenant folder, object)`:
//! - `networkpolicy-default-deny.yaml`: every pod, `Ingress` and `Egress`, no rule;
//! - `networkpolicy-allow-dns.yaml`: egress on UDP and TCP 53 to the cluster DNS pods (their
//!   namespace AND their label in one peer) and to the NodeLocal DNS block where declared;
//! - `networkpolicy-allow-same-tenant.yaml`: ingress from and egress to the tenant's own
//!   namespaces in the cell;
//! - `networkpolicy-allow-metrics.yaml`, where the cell declares `metrics`: ingress from the
//!   scraper pods (namespace AND label in one peer);
//! - `networkpolicy-allow-endpoints.yaml`, where the cell declares endpoints: egress on TCP 443
//!   to their blocks;
//! - `networkpolicy-allow-identity.yaml`, where the cell's `storage` identity serves credentials
//!   on a node-local address (EKS Pod Identity, GKE Workload Identity): egress to exactly that
//!   address and port (`plan::network::identity_egress`), one rule each.
//!
//! Invariants:
//! - Namespaces are selected only by `kubernetes.io/metadata.name`, which the API server sets to
//!   the namespace's name and nobody can change, never by a label someone could put on a
//!   namespace; a peer that names a namespace always names a pod label with it in the same peer,
//!   except the tenant's own namespaces and a metrics namespace declared without a selector.
//! - No rule has an empty peer list or an empty selector, so no rule allows everything.
//! - Typed `k8s-openapi` objects only.

use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::body;
use super::tenant::tenant_labels;
use crate::emit::Body;
use crate::emit::InternalError;
use crate::kube::labels::NAMESPACE_NAME_LABEL;
use crate::plan::{CellPlan, TenantPlan};

/// The port of the egress to endpoints.
pub const ENDPOINT_PORT: i32 = 443;

/// Every NetworkPolicy of the tenant in the cell, as `(path in the tenant folder, object)`.
pub(super) fn objects(
    tenant: &TenantPlan,
    cell: &CellPlan,
) -> Result<Vec<(String, Body)>, InternalError> {
    let network = &cell.network;
    let own_namespaces: Vec<String> = tenant
        .namespaces
        .iter()
        .map(|namespace| namespace.name.clone())
        .collect();
    let mut objects = Vec::new();
    for namespace in &tenant.namespaces {
        let kind = namespace.workload;
        let policy = |name: &str, spec: NetworkPolicySpec| NetworkPolicy {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.name.clone()),
                labels: Some(tenant_labels(tenant)),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        };
        let mut push = |file: &str, name: &str, spec: NetworkPolicySpec| {
            body(&policy(name, spec))
                .map(|body| objects.push((format!("{kind}/networkpolicy-{file}.yaml"), body)))
        };

        push(
            "default-deny",
            "default-deny",
            NetworkPolicySpec {
                pod_selector: Some(LabelSelector::default()),
                policy_types: Some(both_directions()),
                ..NetworkPolicySpec::default()
            },
        )?;

        let mut dns_peers = vec![NetworkPolicyPeer {
            namespace_selector: Some(namespaces_named(vec![network.dns_namespace.clone()])),
            pod_selector: Some(labelled(&network.dns_selector)),
            ip_block: None,
        }];
        if let Some(block) = &network.node_local_dns {
            dns_peers.push(ip_block(block));
        }
        push(
            "allow-dns",
            "allow-dns",
            NetworkPolicySpec {
                pod_selector: Some(LabelSelector::default()),
                policy_types: Some(vec!["Egress".to_string()]),
                egress: Some(vec![NetworkPolicyEgressRule {
                    to: Some(dns_peers),
                    ports: Some(vec![port("UDP", 53), port("TCP", 53)]),
                }]),
                ..NetworkPolicySpec::default()
            },
        )?;

        let own = || NetworkPolicyPeer {
            namespace_selector: Some(namespaces_named(own_namespaces.clone())),
            pod_selector: None,
            ip_block: None,
        };
        push(
            "allow-same-tenant",
            "allow-same-tenant",
            NetworkPolicySpec {
                pod_selector: Some(LabelSelector::default()),
                policy_types: Some(both_directions()),
                ingress: Some(vec![NetworkPolicyIngressRule {
                    from: Some(vec![own()]),
                    ports: None,
                }]),
                egress: Some(vec![NetworkPolicyEgressRule {
                    to: Some(vec![own()]),
                    ports: None,
                }]),
            },
        )?;

        if let Some((metrics_namespace, selector)) = &network.metrics {
            push(
                "allow-metrics",
                "allow-metrics",
                NetworkPolicySpec {
                    pod_selector: Some(LabelSelector::default()),
                    policy_types: Some(vec!["Ingress".to_string()]),
                    ingress: Some(vec![NetworkPolicyIngressRule {
                        from: Some(vec![NetworkPolicyPeer {
                            namespace_selector: Some(namespaces_named(vec![
                                metrics_namespace.clone(),
                            ])),
                            pod_selector: selector.as_ref().map(labelled),
                            ip_block: None,
                        }]),
                        ports: None,
                    }]),
                    ..NetworkPolicySpec::default()
                },
            )?;
        }

        if !network.endpoints.is_empty() {
            push(
                "allow-endpoints",
                "allow-endpoints",
                NetworkPolicySpec {
                    pod_selector: Some(LabelSelector::default()),
                    policy_types: Some(vec!["Egress".to_string()]),
                    egress: Some(vec![NetworkPolicyEgressRule {
                        to: Some(
                            network
                                .endpoints
                                .iter()
                                .map(|(_, block)| ip_block(block))
                                .collect(),
                        ),
                        ports: Some(vec![port("TCP", ENDPOINT_PORT)]),
                    }]),
                    ..NetworkPolicySpec::default()
                },
            )?;
        }
        if !network.identity.is_empty() {
            push(
                "allow-identity",
                "allow-identity",
                NetworkPolicySpec {
                    pod_selector: Some(LabelSelector::default()),
                    policy_types: Some(vec!["Egress".to_string()]),
                    egress: Some(
                        network
                            .identity
                            .iter()
                            .map(|(block, number)| NetworkPolicyEgressRule {
                                to: Some(vec![ip_block(block)]),
                                ports: Some(vec![port("TCP", *number)]),
                            })
                            .collect(),
                    ),
                    ..NetworkPolicySpec::default()
                },
            )?;
        }
    }
    Ok(objects)
}

/// `[Ingress, Egress]`: a policy without `Egress` listed would leave egress open.
fn both_directions() -> Vec<String> {
    vec!["Ingress".to_string(), "Egress".to_string()]
}

/// Selects the namespaces with exactly these names, by the label nobody can forge.
fn namespaces_named(mut names: Vec<String>) -> LabelSelector {
    names.sort();
    names.dedup();
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: NAMESPACE_NAME_LABEL.to_string(),
            operator: "In".to_string(),
            values: Some(names),
        }]),
        match_labels: None,
    }
}

/// Selects pods with one label.
fn labelled((key, value): &(String, String)) -> LabelSelector {
    LabelSelector {
        match_expressions: None,
        match_labels: Some([(key.clone(), value.clone())].into_iter().collect()),
    }
}

fn ip_block(block: &str) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: block.to_string(),
            except: None,
        }),
        namespace_selector: None,
        pod_selector: None,
    }
}

fn port(protocol: &str, number: i32) -> NetworkPolicyPort {
    NetworkPolicyPort {
        port: Some(IntOrString::Int(number)),
        protocol: Some(protocol.to_string()),
        end_port: None,
    }
}
