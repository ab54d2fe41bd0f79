//! The tenant roles of a cell: three ClusterRoles that tenant groups are bound to in their
//! namespaces, instead of the built-in `admin`, `edit` and `view`.
//!
//! Consumes: the cell's scheduler and device mode and the tables of `facts/rbac.rs`
//! ([`access`]); every cell of one scheduler and device mode gets the same three roles. Produces: the ClusterRoles [`ADMIN_ROLE`], [`MEMBER_ROLE`] and [`VIEWER_ROLE`] as
//! `(file in <cell>/cluster/, object)`.
//!
//! Invariants (the first four held by the table's tests in `facts/rbac.rs`, the others by the
//! tests below):
//! - No role has an `aggregationRule` or an `aggregate-to-*` label, so no ClusterRole created
//!   later (by an operator's release or anyone else) is ever aggregated into one, unlike the
//!   built-in roles, which grow with every ClusterRole labelled
//!   `rbac.authorization.k8s.io/aggregate-to-edit`.
//! - Every rule names its API group, resources and verbs one by one: no `*`, no
//!   `resourceNames`, no `nonResourceURLs`.
//! - No role writes a floor object (ResourceQuota, LimitRange, NetworkPolicy, LocalQueue,
//!   Namespace, anything cluster-scoped), creates `serviceaccounts/token`, or holds the verbs
//!   `impersonate`, `escalate` or `bind`; only the admin role writes RoleBindings, which the
//!   API server's own escalation check limits to roles whose every permission the admin holds.
//! - Viewer is a subset of member, and member of admin, row by row; the viewer reads no Secrets.
//! - Each role grants exactly its column of the table, nothing more.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};

use super::{body, cluster_meta};
use crate::emit::Body;
use crate::emit::InternalError;
use crate::facts::rbac::{access, cluster_role_of};
use crate::model::TenantRole;
use crate::model::{DeviceMode, Scheduler};

/// The three tenant ClusterRoles of a cell whose scheduler is `scheduler` and whose GPUs reach
/// pods by `devices`, as `(file in <cell>/cluster/, object)`.
pub(super) fn cluster_roles(
    scheduler: Scheduler,
    devices: DeviceMode,
) -> Result<Vec<(String, Body)>, InternalError> {
    TenantRole::ALL
        .into_iter()
        .map(|role| {
            Ok((
                format!("clusterrole-tenant-{role}.yaml"),
                body(&cluster_role(
                    cluster_role_of(role),
                    role,
                    scheduler,
                    devices,
                ))?,
            ))
        })
        .collect()
}

/// One role from its column of the cell's table ([`access`]): one rule per API group and set of
/// verbs, resources and verbs in a fixed order.
fn cluster_role(
    name: &str,
    role: TenantRole,
    scheduler: Scheduler,
    devices: DeviceMode,
) -> ClusterRole {
    let mut rules: BTreeMap<(&str, &[&str]), Vec<String>> = BTreeMap::new();
    for access in &access(scheduler, devices) {
        let verbs = access.verbs(role);
        if verbs.is_empty() {
            continue;
        }
        rules
            .entry((access.api_group, verbs))
            .or_default()
            .push(access.resource.to_string());
    }
    ClusterRole {
        metadata: cluster_meta(name),
        aggregation_rule: None,
        rules: Some(
            rules
                .into_iter()
                .map(|((api_group, verbs), resources)| PolicyRule {
                    api_groups: Some(vec![api_group.to_string()]),
                    resources: Some(resources),
                    verbs: verbs.iter().map(|verb| verb.to_string()).collect(),
                    ..PolicyRule::default()
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::facts::rbac::{ADMIN_ROLE, Access, MEMBER_ROLE, VIEWER_ROLE};

    /// The verbs of one role in a row of a cell's table.
    type Column = fn(&Access) -> &'static [&'static str];

    #[test]
    fn the_emitted_roles_cannot_be_aggregated_into_and_list_every_permission() {
        for (scheduler, devices) in Scheduler::ALL.into_iter().flat_map(|scheduler| {
            [DeviceMode::DevicePlugin, DeviceMode::Dra].map(|devices| (scheduler, devices))
        }) {
            let roles = cluster_roles(scheduler, devices).unwrap();
            assert_eq!(roles.len(), 3);
            for (name, tenant_role, verbs_of) in [
                (
                    ADMIN_ROLE,
                    TenantRole::Admin,
                    (|a: &Access| a.admin) as Column,
                ),
                (MEMBER_ROLE, TenantRole::Member, |a: &Access| a.member),
                (VIEWER_ROLE, TenantRole::Viewer, |a: &Access| a.viewer),
            ] {
                let role = cluster_role(name, tenant_role, scheduler, devices);
                assert!(role.aggregation_rule.is_none());
                let labels = role.metadata.labels.clone().unwrap_or_default();
                assert!(
                    labels.keys().all(|key| !key.contains("aggregate-to")),
                    "{labels:?}"
                );
                // The rules grant exactly the column of the cell's table, nothing more.
                let mut granted: Vec<(String, String, String)> = Vec::new();
                for rule in role.rules.clone().unwrap() {
                    assert!(rule.resource_names.is_none() && rule.non_resource_urls.is_none());
                    for group in rule.api_groups.clone().unwrap() {
                        for resource in rule.resources.clone().unwrap() {
                            for verb in &rule.verbs {
                                granted.push((group.clone(), resource.clone(), verb.clone()));
                            }
                        }
                    }
                }
                let mut expected: Vec<(String, String, String)> = access(scheduler, devices)
                    .iter()
                    .flat_map(|access| {
                        verbs_of(access).iter().map(|verb| {
                            (
                                access.api_group.to_string(),
                                access.resource.to_string(),
                                verb.to_string(),
                            )
                        })
                    })
                    .collect();
                granted.sort();
                expected.sort();
                assert_eq!(
                    granted,
                    expected,
                    "{name} in a {scheduler} cell with {}",
                    devices.as_str()
                );
            }
        }
    }
}
