//! The tenant roles as data: what the `admin`, `member` and `viewer` groups of a tenant may do
//! with each resource of its namespaces, and the ClusterRole each group kind is bound to.
//!
//! Consumes: nothing. Produces: the table [`ACCESS`] of the rows every cell has, the rows of each
//! scheduler's own kinds ([`KUEUE_ACCESS`], [`VOLCANO_ACCESS`]), of a DRA cell's claims
//! ([`DRA_ACCESS`]) and [`access`], a cell's table;
//! the role names and [`cluster_role_of`];
//! `lower/rbac.rs` writes the ClusterRoles from them and `review` shows them, so the reviewer
//! view cannot claim a permission the roles do not hold.
//!
//! Invariants (held by the tests below):
//! - Every row names its API group and resource one by one: no `*`, no
//!   `serviceaccounts/token`.
//! - No role writes a floor object (ResourceQuota, LimitRange, NetworkPolicy, LocalQueue,
//!   Namespace, ServiceAccount, a ResourceClaim's status) or holds the verbs `impersonate`, `escalate` or `bind`; only the
//!   admin role writes RoleBindings.
//! - Viewer is a subset of member, and member of admin, row by row; the viewer reads no Secrets.

/// The tenant roles, the model's enum, for the stages above that read the roles here.
pub use crate::model::TenantRole;
use crate::model::{DeviceMode, Scheduler};

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

/// The access of the three tenant roles to the resources every cell has, resource by resource,
/// sorted by API group and resource; [`access`] adds the rows of the cell's scheduler. Anything
/// not listed is denied (RBAC only adds permissions).
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

/// The rows of a Kueue cell: its LocalQueues (a floor object) and Workloads, read only (a
/// forged Workload would be admitted against the tenant's quota without a job).
pub const KUEUE_ACCESS: &[Access] = &[
    row("kueue.x-k8s.io", "localqueues", READ, READ, READ),
    row("kueue.x-k8s.io", "workloads", READ, READ, READ),
];

/// The rows of a Volcano cell: PodGroups, which members write to run gangs (`minMember`); the
/// floor holds every PodGroup to the tenant's own queue and priority and keeps its status the
/// scheduler's (`lower/admission.rs`). Queues are cluster-scoped, out of every tenant role's
/// reach.
pub const VOLCANO_ACCESS: &[Access] = &[row(
    "scheduling.volcano.sh",
    "podgroups",
    READ,
    MANAGE,
    MANAGE,
)];

/// The rows of a DRA cell (`devices "dra"`): ResourceClaims and ResourceClaimTemplates, which
/// members write to claim devices beyond the templates tenantc emits (eight GPUs in one claim,
/// a selector, a constraint); the floor holds every claim and template to the namespace's own
/// device classes and refuses admin access (`lower/admission.rs`, the claims policy). Not their
/// `status` (an allocation the tenant wrote would name devices on any node), nor DeviceClasses,
/// ResourceSlices or DeviceTaintRules, which are cluster-scoped and out of every tenant role's
/// reach.
pub const DRA_ACCESS: &[Access] = &[
    row("resource.k8s.io", "resourceclaims", READ, MANAGE, MANAGE),
    row(
        "resource.k8s.io",
        "resourceclaimtemplates",
        READ,
        MANAGE,
        MANAGE,
    ),
];

/// The rows of a cell whose scheduler is `scheduler` and whose GPUs reach pods by `devices`:
/// [`ACCESS`], the scheduler's own and, in a DRA cell, [`DRA_ACCESS`], sorted by API group and
/// resource.
pub fn access(scheduler: Scheduler, devices: DeviceMode) -> Vec<Access> {
    access_of(&[scheduler], &[devices])
}

/// The rows of a tenant that runs in cells of every scheduler in `schedulers` and every device
/// mode in `devices` (the reviewer view of a tenant across cells): [`ACCESS`] and each
/// backend's own, sorted.
pub fn access_of(schedulers: &[Scheduler], devices: &[DeviceMode]) -> Vec<Access> {
    let mut rows: Vec<Access> = ACCESS.to_vec();
    for scheduler in Scheduler::ALL {
        if !schedulers.contains(&scheduler) {
            continue;
        }
        rows.extend_from_slice(match scheduler {
            Scheduler::Kueue => KUEUE_ACCESS,
            Scheduler::Volcano => VOLCANO_ACCESS,
        });
    }
    if devices.contains(&DeviceMode::Dra) {
        rows.extend_from_slice(DRA_ACCESS);
    }
    rows.sort_by_key(|row| (row.api_group, row.resource));
    rows
}

/// The tenant ClusterRole that a tenant group of `role` (as declared in `groups`) is bound to.
pub fn cluster_role_of(role: TenantRole) -> &'static str {
    match role {
        TenantRole::Admin => ADMIN_ROLE,
        TenantRole::Member => MEMBER_ROLE,
        TenantRole::Viewer => VIEWER_ROLE,
    }
}

impl Access {
    /// The verbs `role` holds on this resource: its column of the table.
    pub fn verbs(&self, role: TenantRole) -> &'static [&'static str] {
        match role {
            TenantRole::Admin => self.admin,
            TenantRole::Member => self.member,
            TenantRole::Viewer => self.viewer,
        }
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
        ("kueue.x-k8s.io", "workloads"),
        ("networking.k8s.io", "networkpolicies"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "devicetaintrules"),
        ("resource.k8s.io", "resourceclaims/status"),
        ("resource.k8s.io", "resourceslices"),
        ("scheduling.volcano.sh", "queues"),
    ];
    const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

    fn columns(access: &Access) -> [(&'static str, &'static [&'static str]); 3] {
        [
            ("viewer", access.verbs(TenantRole::Viewer)),
            ("member", access.verbs(TenantRole::Member)),
            ("admin", access.verbs(TenantRole::Admin)),
        ]
    }

    const DEVICES: [DeviceMode; 2] = [DeviceMode::DevicePlugin, DeviceMode::Dra];

    /// Every table a cell's roles are made from: each backend combination's, and all at once.
    fn tables() -> Vec<Vec<Access>> {
        let mut tables: Vec<Vec<Access>> = Scheduler::ALL
            .into_iter()
            .flat_map(|scheduler| DEVICES.map(|devices| access(scheduler, devices)))
            .collect();
        tables.push(access_of(&Scheduler::ALL, &DEVICES));
        tables
    }

    #[test]
    fn the_tables_are_sorted_and_name_each_resource_once() {
        for table in tables() {
            let keys: Vec<(&str, &str)> = table
                .iter()
                .map(|access| (access.api_group, access.resource))
                .collect();
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(keys, sorted);
        }
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
        for access in &access_of(&Scheduler::ALL, &DEVICES) {
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
        for access in &access_of(&Scheduler::ALL, &DEVICES) {
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
    fn each_scheduler_adds_only_its_own_kinds() {
        let kueue = access(Scheduler::Kueue, DeviceMode::DevicePlugin);
        let volcano = access(Scheduler::Volcano, DeviceMode::DevicePlugin);
        assert!(kueue.iter().any(|row| row.resource == "localqueues"));
        assert!(
            !kueue
                .iter()
                .any(|row| row.api_group == "scheduling.volcano.sh")
        );
        assert!(volcano.iter().any(|row| row.resource == "podgroups"));
        assert!(!volcano.iter().any(|row| row.api_group == "kueue.x-k8s.io"));
        assert_eq!(kueue.len(), ACCESS.len() + KUEUE_ACCESS.len());
        assert_eq!(volcano.len(), ACCESS.len() + VOLCANO_ACCESS.len());
    }

    #[test]
    fn only_a_dra_cell_lets_members_write_claims_and_no_role_writes_their_status() {
        for scheduler in Scheduler::ALL {
            let plugin = access(scheduler, DeviceMode::DevicePlugin);
            assert!(!plugin.iter().any(|row| row.api_group == "resource.k8s.io"));
            let dra = access(scheduler, DeviceMode::Dra);
            assert_eq!(dra.len(), plugin.len() + DRA_ACCESS.len());
            for resource in ["resourceclaims", "resourceclaimtemplates"] {
                let row = dra
                    .iter()
                    .find(|row| row.api_group == "resource.k8s.io" && row.resource == resource)
                    .expect("a row for the claims");
                assert!(row.member.contains(&"create"), "{row:?}");
                assert!(!row.viewer.contains(&"create"), "{row:?}");
            }
            assert!(
                dra.iter()
                    .filter(|row| row.api_group == "resource.k8s.io")
                    .all(|row| !row.resource.contains('/')),
                "no subresource of a claim is granted"
            );
        }
    }

    #[test]
    fn every_group_kind_has_a_role() {
        assert_eq!(cluster_role_of(TenantRole::Admin), ADMIN_ROLE);
        assert_eq!(cluster_role_of(TenantRole::Member), MEMBER_ROLE);
        assert_eq!(cluster_role_of(TenantRole::Viewer), VIEWER_ROLE);
        let spellings: Vec<&str> = TenantRole::ALL.iter().map(|role| role.as_str()).collect();
        assert_eq!(spellings, ["admin", "member", "viewer"]);
    }
}
