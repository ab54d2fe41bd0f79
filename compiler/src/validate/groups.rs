//! RBAC group checks: tenants bind only their own groups, unless a cell allows a reserved one.
//!
//! Consumes: the [`Fleet`]. Produces: `group-reserved` diagnostics.
//!
//! A tenant's `admin`, `member` and `viewer` groups become RoleBinding subjects in the tenant's
//! namespaces of every cell where it has a quota. Groups that Kubernetes reserves (every
//! `system:` group, such as `system:masters`, `system:authenticated` or
//! `system:serviceaccounts`, matched without regard to ASCII case) and wildcard-like names
//! (containing `*` or `?`) would grant the role to users far outside the tenant, so they are
//! refused in every cell that does not list the exact name with `allow-group`.
//!
//! Invariant: pure; one finding per group and cell, at the group, pointing at the quota that
//! puts the tenant in the cell. The shape of a group name is checked in `schema`.

use std::collections::BTreeMap;

use crate::diag::{Code, Diagnostic};
use crate::model::{Cell, Fleet};

/// Why a valid group name is reserved, or `None` for a tenant's own group.
pub fn reserved_reason(group: &str) -> Option<&'static str> {
    let lowered = group.to_ascii_lowercase();
    if lowered.starts_with("system:") {
        return Some(
            "`system:` groups are Kubernetes' own; `system:authenticated` is every signed-in user and `system:masters` bypasses RBAC",
        );
    }
    if group.contains(['*', '?']) {
        return Some(
            "a wildcard-like name reads as everyone, and some authorizers and identity providers treat it so",
        );
    }
    None
}

/// Checks every tenant group against the cells the tenant runs in.
pub(super) fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    let cells: BTreeMap<&str, &Cell> = fleet
        .cells
        .iter()
        .map(|cell| (cell.name.value.as_str(), cell))
        .collect();
    for tenant in &fleet.tenants {
        for (role, group) in tenant.groups.declared() {
            let Some(reason) = reserved_reason(&group.value) else {
                continue;
            };
            for quota in &tenant.quotas {
                let Some(cell) = cells.get(quota.cell.value.as_str()) else {
                    continue;
                };
                if cell
                    .allow_groups
                    .iter()
                    .any(|allowed| allowed.value == group.value)
                {
                    continue;
                }
                diagnostics.push(
                    Diagnostic::error(
                        Code::GroupReserved,
                        group.span,
                        format!(
                            "tenant `{}` binds the reserved group `{}` as `{role}` in cell `{}`",
                            tenant.name.value, group.value, cell.name.value
                        ),
                    )
                    .with_label(reason)
                    .with_secondary(quota.cell.span, "the RoleBindings are generated in this cell")
                    .with_help(format!(
                        "bind a group of the tenant's own; if the platform really means it, add `allow-group \"{}\"` to cell `{}`",
                        group.value, cell.name.value
                    )),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::test_support::{CELL, codes, compile_files, tenant};

    fn with_admin(group: &str) -> String {
        tenant("a", "soft", "pool \"train\" reserved=1")
            .replace("admin=\"a-admins\"", &format!("admin=\"{group}\""))
    }

    #[test]
    fn refuses_system_and_wildcard_groups_without_a_cell_allowing_them() {
        for group in [
            "system:masters",
            "system:authenticated",
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "System:Masters",
            "*",
            "team-*",
            "?",
        ] {
            let found = codes(&[
                ("cells/c1.kdl", CELL),
                ("tenants/a.kdl", &with_admin(group)),
            ]);
            assert_eq!(found, [Code::GroupReserved], "{group}");
        }
        for group in [
            "acme:research",
            "Ops Team (EU)",
            "oidc:acme-admins",
            "systems:x",
        ] {
            let found = codes(&[
                ("cells/c1.kdl", CELL),
                ("tenants/a.kdl", &with_admin(group)),
            ]);
            assert_eq!(found, [], "{group}");
        }
    }

    #[test]
    fn accepts_a_reserved_group_that_the_cell_allows_exactly() {
        let allowing = CELL.replace(
            "    driver \"570\"\n",
            "    driver \"570\"\n    allow-group \"system:authenticated\"\n",
        );
        let viewer = tenant("a", "soft", "pool \"train\" reserved=1").replace(
            "admin=\"a-admins\"",
            "admin=\"a-admins\" viewer=\"system:authenticated\"",
        );
        let result = compile_files(&[("cells/c1.kdl", &allowing), ("tenants/a.kdl", &viewer)]);
        assert!(result.diagnostics.is_empty(), "{:?}", result.diagnostics);
        let output = result.output.unwrap_or_default();
        let binding = output
            .iter()
            .find(|(path, _)| path.ends_with("train/rolebinding-viewer.yaml"))
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default();
        assert!(binding.contains("system:authenticated"), "{binding}");
        // The allowance is for that name only.
        let masters = tenant("a", "soft", "pool \"train\" reserved=1")
            .replace("admin=\"a-admins\"", "admin=\"system:masters\"");
        assert_eq!(
            codes(&[("cells/c1.kdl", &allowing), ("tenants/a.kdl", &masters)]),
            [Code::GroupReserved]
        );
    }

    #[test]
    fn refuses_group_names_outside_the_grammar() {
        for group in [" a", "a ", "a\\tb", "", "   ", "\\u{2028}a"] {
            let tenant_text = with_admin(group);
            let found = codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &tenant_text)]);
            assert!(
                !found.contains(&Code::FieldMissing),
                "{group:?}: a refused group is not also missing: {found:?}"
            );
            assert!(
                found.contains(&Code::NameInvalid)
                    || found.contains(&Code::TypeMismatch)
                    || found.contains(&Code::StringCharacterForbidden),
                "{group:?}: {found:?}"
            );
        }
        let long = "g".repeat(257);
        let found = codes(&[
            ("cells/c1.kdl", CELL),
            ("tenants/a.kdl", &with_admin(&long)),
        ]);
        assert_eq!(found, [Code::NameInvalid]);
        let found = codes(&[
            ("cells/c1.kdl", CELL),
            ("tenants/a.kdl", &with_admin(&"g".repeat(256))),
        ]);
        assert_eq!(found, []);
    }
}
