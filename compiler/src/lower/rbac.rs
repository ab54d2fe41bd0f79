//! The tenant roles of a cell: three ClusterRoles that tenant groups are bound to in their
//! namespaces, instead of the built-in `admin`, `edit` and `view`.
//!
//! Consumes: nothing but the table [`ACCESS`] below; every cell gets the same three roles.
//! Produces: the ClusterRoles [`ADMIN_ROLE`], [`MEMBER_ROLE`] and [`VIEWER_ROLE`] as
//! `(file in <cell>/cluster/, object)`, and [`cluster_role_of`], which names the role a tenant
//! group of a given kind (`admin`, `member`, `viewer`) is bound to.
//!
//! Invariants:
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
//!   Unit tests below hold all of this on the table and on the emitted objects.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};

use super::{body, cluster_meta};
use crate::emit::Body;
use crate::emit::InternalError;

/// The ClusterRole of a tenant's `admin` group.
pub const ADMIN_ROLE: &str = "tenantc:tenant-admin";
/// The ClusterRole of a tenant's `member` group.
pub const MEMBER_ROLE: &str = "tenantc:tenant-member";
/// The ClusterRole of a tenant's `viewer` group.
pub const VIEWER_ROLE: &str = "tenantc:tenant-viewer";

/// Reading: `get`, `list` and `watch`.
const READ: &[&str] = &["get", "list", "watch"];
/// Every verb of an ordinary resource.
const MANAGE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
/// Streaming subresources (exec, attach, port-forward): `create` for SPDY and the newer
/// WebSocket check, `get` for the WebSocket upgrade as older API servers authorize it.
const STREAM: &[&str] = &["get", "create"];
/// The `scale` subresource of a workload.
const SCALE: &[&str] = &["get", "update", "patch"];
/// No access.
const NONE: &[&str] = &[];

/// What each tenant role may do with one resource of its namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The API group (`""` for the core group).
    pub api_group: &'static str,
    /// The resource, or `resource/subresource`.
    pub resource: &'static str,
    /// The verbs of the viewer role.
    pub viewer: &'static [&'static str],
    /// The verbs of the member role.
    pub member: &'static [&'static str],
    /// The verbs of the admin role.
    pub admin: &'static [&'static str],
}

const fn row(
    api_group: &'static str,
    resource: &'static str,
    viewer: &'static [&'static str],
    member: &'static [&'static str],
    admin: &'static [&'static str],
) -> Access {
    Access {
        api_group,
        resource,
        viewer,
        member,
        admin,
    }
}

/// The access of the three tenant roles, resource by resource, sorted by API group and
/// resource. Anything not listed is denied (RBAC only adds permissions).
pub const ACCESS: &[Access] = &[
    row("", "configmaps", READ, MANAGE, MANAGE),
    row("", "events", READ, READ, READ),
    row("", "limitranges", READ, READ, READ),
    row("", "persistentvolumeclaims", READ, MANAGE, MANAGE),
    row("", "pods", READ, MANAGE, MANAGE),
    row("", "pods/attach", NONE, STREAM, STREAM),
    row("", "pods/exec", NONE, STREAM, STREAM),
    row("", "pods/log", READ, READ, READ),
    row("", "pods/portforward", NONE, STREAM, STREAM),
    row("", "resourcequotas", READ, READ, READ),
    row("", "secrets", NONE, MANAGE, MANAGE),
    row("", "serviceaccounts", READ, READ, READ),
    row("", "services", READ, MANAGE, MANAGE),
    row("apps", "deployments", READ, MANAGE, MANAGE),
    row("apps", "deployments/scale", NONE, SCALE, SCALE),
    row("apps", "replicasets", READ, MANAGE, MANAGE),
    row("apps", "replicasets/scale", NONE, SCALE, SCALE),
    row("apps", "statefulsets", READ, MANAGE, MANAGE),
    row("apps", "statefulsets/scale", NONE, SCALE, SCALE),
    row(
        "autoscaling",
        "horizontalpodautoscalers",
        READ,
        MANAGE,
        MANAGE,
    ),
    row("batch", "cronjobs", READ, MANAGE, MANAGE),
    row("batch", "jobs", READ, MANAGE, MANAGE),
    row("events.k8s.io", "events", READ, READ, READ),
    row("kueue.x-k8s.io", "localqueues", READ, READ, READ),
    row("kueue.x-k8s.io", "workloads", READ, READ, READ),
    row("networking.k8s.io", "networkpolicies", READ, READ, READ),
    row("policy", "poddisruptionbudgets", READ, MANAGE, MANAGE),
    row(
        "rbac.authorization.k8s.io",
        "rolebindings",
        NONE,
        NONE,
        MANAGE,
    ),
    row("rbac.authorization.k8s.io", "roles", NONE, NONE, READ),
];

/// The tenant ClusterRole that a tenant group of kind `group_kind` (`admin`, `member` or
/// `viewer`, as declared in `groups`) is bound to.
pub fn cluster_role_of(group_kind: &str) -> Option<&'static str> {
    match group_kind {
        "admin" => Some(ADMIN_ROLE),
        "member" => Some(MEMBER_ROLE),
        "viewer" => Some(VIEWER_ROLE),
        _ => None,
    }
}

/// The verbs of one role in a row of [`ACCESS`].
type Column = fn(&Access) -> &'static [&'static str];

/// The three tenant ClusterRoles, as `(file in <cell>/cluster/, object)`.
pub(super) fn cluster_roles() -> Result<Vec<(String, Body)>, InternalError> {
    let roles: [(&str, &str, Column); 3] = [
        ("admin", ADMIN_ROLE, |access| access.admin),
        ("member", MEMBER_ROLE, |access| access.member),
        ("viewer", VIEWER_ROLE, |access| access.viewer),
    ];
    roles
        .into_iter()
        .map(|(kind, name, verbs)| {
            Ok((
                format!("clusterrole-tenant-{kind}.yaml"),
                body(&cluster_role(name, verbs))?,
            ))
        })
        .collect()
}

/// One role from its column of [`ACCESS`]: one rule per API group and set of verbs, resources
/// and verbs in a fixed order.
fn cluster_role(name: &str, verbs_of: Column) -> ClusterRole {
    let mut rules: BTreeMap<(&str, &[&str]), Vec<String>> = BTreeMap::new();
    for access in ACCESS {
        let verbs = verbs_of(access);
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

    /// Resources whose every write breaks the isolation floor, by API group.
    const FLOOR: &[(&str, &str)] = &[
        ("", "limitranges"),
        ("", "namespaces"),
        ("", "resourcequotas"),
        ("", "serviceaccounts"),
        ("kueue.x-k8s.io", "localqueues"),
        ("networking.k8s.io", "networkpolicies"),
    ];
    const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

    fn columns(access: &Access) -> [(&'static str, &'static [&'static str]); 3] {
        [
            ("viewer", access.viewer),
            ("member", access.member),
            ("admin", access.admin),
        ]
    }

    #[test]
    fn the_table_is_sorted_and_names_each_resource_once() {
        let keys: Vec<(&str, &str)> = ACCESS
            .iter()
            .map(|access| (access.api_group, access.resource))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(keys, sorted);
    }

    #[test]
    fn viewer_is_within_member_and_member_within_admin() {
        for access in ACCESS {
            for verb in access.viewer {
                assert!(access.member.contains(verb), "{access:?}: viewer {verb}");
            }
            for verb in access.member {
                assert!(access.admin.contains(verb), "{access:?}: member {verb}");
            }
        }
    }

    #[test]
    fn no_role_writes_the_floor_or_holds_a_verb_that_undoes_it() {
        for access in ACCESS {
            for (role, verbs) in columns(access) {
                for verb in verbs {
                    assert!(
                        !["*", "impersonate", "escalate", "bind", "approve", "sign"].contains(verb),
                        "{role} holds `{verb}` on {}",
                        access.resource
                    );
                    assert!(
                        !(FLOOR.contains(&(access.api_group, access.resource))
                            && WRITE_VERBS.contains(verb)),
                        "{role} may {verb} {}, a floor object",
                        access.resource
                    );
                }
            }
            assert!(!access.resource.contains('*'), "{access:?}");
            assert_ne!(access.resource, "serviceaccounts/token");
            if access.api_group == "rbac.authorization.k8s.io" {
                assert!(access.viewer.is_empty() && access.member.is_empty());
                assert!(
                    access.resource == "rolebindings" || access.admin == READ,
                    "only RoleBindings are written: {access:?}"
                );
            }
        }
        let secrets = ACCESS
            .iter()
            .find(|access| access.api_group.is_empty() && access.resource == "secrets")
            .expect("a row for Secrets");
        assert!(secrets.viewer.is_empty(), "the viewer reads no Secrets");
    }

    #[test]
    fn the_emitted_roles_cannot_be_aggregated_into_and_list_every_permission() {
        let roles = cluster_roles().unwrap();
        assert_eq!(roles.len(), 3);
        for (name, verbs_of) in [
            (ADMIN_ROLE, (|a: &Access| a.admin) as Column),
            (MEMBER_ROLE, |a: &Access| a.member),
            (VIEWER_ROLE, |a: &Access| a.viewer),
        ] {
            let role = cluster_role(name, verbs_of);
            assert!(role.aggregation_rule.is_none());
            let labels = role.metadata.labels.clone().unwrap_or_default();
            assert!(
                labels.keys().all(|key| !key.contains("aggregate-to")),
                "{labels:?}"
            );
            // The rules grant exactly the column of the table, nothing more.
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
            let mut expected: Vec<(String, String, String)> = ACCESS
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
            assert_eq!(granted, expected, "{name}");
        }
    }

    #[test]
    fn every_group_kind_has_a_role() {
        assert_eq!(cluster_role_of("admin"), Some(ADMIN_ROLE));
        assert_eq!(cluster_role_of("member"), Some(MEMBER_ROLE));
        assert_eq!(cluster_role_of("viewer"), Some(VIEWER_ROLE));
        assert_eq!(cluster_role_of("owner"), None);
    }
}
