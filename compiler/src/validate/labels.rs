//! A tenant's declared chargeback labels (`chargeback { label "<key>" "<value>" }`), checked
//! before they reach its Namespaces, ClusterQueue and LocalQueues and, through
//! kube-state-metrics, every billing query.
//!
//! Consumes: the [`Fleet`] (each label's key and value already have their Kubernetes syntax,
//! `schema`'s `chargeback-label-invalid`). Produces: `chargeback-label-reserved` (a key under a
//! prefix tenantc or Kubernetes owns, or one that reads like it), `chargeback-label-duplicate`
//! (two keys that are the same key without case, `-`, `_`, `.` and `/`) and
//! `chargeback-label-forbidden` (a key on the built-in forbidden list or on the
//! `forbidden-label-keys` of a cell the tenant has quota in, naming that cell).
//!
//! Invariants: the forbidden list and its matching are `facts/labels.rs`, which the admission
//! floor's `forbidden-labels` params read too, so a key this check admits is a key the floor
//! admits on a pod, and the other way round (tested in `tests/policy.rs`); a reserved key is
//! reported only as reserved; each finding is at the key, with the forbidding cell's entry as a
//! secondary label; pure.

use std::collections::BTreeMap;

use crate::diag::{Code, Diagnostic};
use crate::facts::labels::{forbidden_by_default, forbids, reserved_prefix, same_key};
use crate::model::{ChargebackLabel, Fleet, Spanned};

/// Reports every reserved, repeated or forbidden chargeback label key of every tenant.
pub(super) fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    for tenant in &fleet.tenants {
        let mut seen: BTreeMap<String, &ChargebackLabel> = BTreeMap::new();
        for label in &tenant.chargeback {
            let key = &label.key;
            if let Some(prefix) = reserved_prefix(&key.value) {
                diagnostics.push(reserved(key, prefix));
                continue;
            }
            match seen.get(&same_key(&key.value)) {
                Some(first) => diagnostics.push(duplicate(key, &first.key)),
                None => {
                    seen.insert(same_key(&key.value), label);
                }
            }
            if let Some(entry) = forbidden_by_default(&key.value) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::ChargebackLabelForbidden,
                        key.span,
                        format!(
                            "chargeback label key `{}` of tenant `{}` is forbidden: it may hold user data",
                            key.value, tenant.name.value
                        ),
                    )
                    .with_label(format!(
                        "matches the built-in forbidden key `{entry}` without case, `-`, `_`, `.` and prefix"
                    ))
                    .with_note("the admission floor refuses the same key on every pod and workload, in every cell")
                    .with_help(FORBIDDEN_HELP),
                );
                continue;
            }
            // In the order of the tenant's quotas, each cell once.
            let mut cells: Vec<&str> = Vec::new();
            for quota in &tenant.quotas {
                if !cells.contains(&quota.cell.value.as_str()) {
                    cells.push(&quota.cell.value);
                }
            }
            for cell in cells
                .iter()
                .filter_map(|name| fleet.cells.iter().find(|cell| cell.name.value == *name))
            {
                let Some(entry) = cell
                    .forbidden_label_keys
                    .iter()
                    .find(|entry| forbids(&entry.value, &key.value))
                else {
                    continue;
                };
                diagnostics.push(
                    Diagnostic::error(
                        Code::ChargebackLabelForbidden,
                        key.span,
                        format!(
                            "chargeback label key `{}` of tenant `{}` is forbidden in cell `{}`",
                            key.value, tenant.name.value, cell.name.value
                        ),
                    )
                    .with_label(format!(
                        "matches `{}` of cell `{}`'s `forbidden-label-keys` without case, `-`, `_`, `.` and prefix",
                        entry.value, cell.name.value
                    ))
                    .with_secondary(entry.span, format!("forbidden by cell `{}`", cell.name.value))
                    .with_note("the admission floor of the cell refuses the same key on every pod and workload")
                    .with_help(FORBIDDEN_HELP),
                );
            }
        }
    }
}

const FORBIDDEN_HELP: &str = "charge by a key that names a cost object, such as `cost-center`, never a person, a session or a prompt; or remove the label";

fn reserved(key: &Spanned<String>, prefix: &str) -> Diagnostic {
    Diagnostic::error(
        Code::ChargebackLabelReserved,
        key.span,
        format!(
            "chargeback label key `{}` is under the reserved prefix `{prefix}/`",
            key.value
        ),
    )
    .with_label(format!(
        "`{prefix}/` labels are set by tenantc or Kubernetes, and a look-alike reaches kube-state-metrics as the same metric label"
    ))
    .with_note("tenantc sets `tenant.platform/tenant`, `org`, `cell`, `queue` and `sku` on the tenant's Namespaces, ClusterQueue and LocalQueues itself")
    .with_help("use a key of your own, such as `cost-center` or `acme.io/cost-center`")
}

fn duplicate(key: &Spanned<String>, first: &Spanned<String>) -> Diagnostic {
    Diagnostic::error(
        Code::ChargebackLabelDuplicate,
        key.span,
        format!(
            "chargeback label key `{}` repeats `{}`",
            key.value, first.value
        ),
    )
    .with_label("the same key without case, `-`, `_`, `.` and `/`")
    .with_secondary(first.span, "first declared here")
    .with_note("kube-state-metrics writes both as one `label_…` name, so a query could not tell them apart")
    .with_help("keep one of the two labels")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use crate::diag::{Code, Diagnostic};
    use crate::validate::test_support::{CELL, compile_files, tenant};

    /// The chargeback findings of a tenant declaring `labels` (KDL `label` lines) in `c1`,
    /// whose cell forbids `cell_forbids` on top of the built-in list.
    fn findings(labels: &[(&str, &str)], cell_forbids: &[&str]) -> Vec<Diagnostic> {
        let cell = if cell_forbids.is_empty() {
            CELL.to_string()
        } else {
            let keys: Vec<String> = cell_forbids
                .iter()
                .map(|key| format!("\"{key}\""))
                .collect();
            CELL.replacen(
                "    driver \"570\"\n",
                &format!(
                    "    driver \"570\"\n    forbidden-label-keys {}\n",
                    keys.join(" ")
                ),
                1,
            )
        };
        let lines: Vec<String> = labels
            .iter()
            .map(|(key, value)| format!("label \"{key}\" \"{value}\"; "))
            .collect();
        let tenant = tenant("a", "hard", "pool \"train\" reserved=8").replacen(
            "    workload",
            &format!("    chargeback {{ {} }}\n    workload", lines.concat()),
            1,
        );
        compile_files(&[("cells/c1.kdl", &cell), ("tenants/a.kdl", &tenant)])
            .diagnostics
            .into_iter()
            .filter(|d| d.code.as_str().starts_with("chargeback-label"))
            .collect()
    }

    fn codes(labels: &[(&str, &str)], cell_forbids: &[&str]) -> Vec<Code> {
        findings(labels, cell_forbids)
            .iter()
            .map(|d| d.code)
            .collect()
    }

    #[test]
    fn accepts_a_cost_center_and_a_prefixed_key() {
        assert_eq!(
            codes(
                &[("cost-center", "ml-4711"), ("acme.io/project", "p7")],
                &[]
            ),
            []
        );
    }

    #[test]
    fn refuses_built_in_forbidden_keys_in_any_spelling() {
        for key in [
            "user-id",
            "acme.io/user-id",
            "User_Email",
            "sessionID",
            "prompt",
            "acme.io/E.mail",
        ] {
            assert_eq!(
                codes(&[(key, "x")], &[]),
                [Code::ChargebackLabelForbidden],
                "{key}"
            );
        }
    }

    #[test]
    fn refuses_a_key_the_cell_forbids_and_names_the_cell() {
        let found = findings(&[("acme.io/Customer_Name", "x")], &["customer-name"]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, Code::ChargebackLabelForbidden);
        assert!(
            found[0].message.contains("cell `c1`"),
            "{}",
            found[0].message
        );
        assert_eq!(codes(&[("customer-name", "x")], &[]), []);
    }

    #[test]
    fn refuses_reserved_prefixes_and_their_look_alikes() {
        for key in [
            "tenant.platform/cost",
            "tenantc.io/x",
            "app.kubernetes.io/name",
            "pod-security.kubernetes.io/enforce",
            "tenant-platform/org",
            "tenant_platform_org",
        ] {
            assert_eq!(
                codes(&[(key, "x")], &[]),
                [Code::ChargebackLabelReserved],
                "{key}"
            );
        }
    }

    #[test]
    fn refuses_keys_that_are_one_metric_label() {
        assert_eq!(
            codes(&[("cost-center", "a"), ("cost_center", "b")], &[]),
            [Code::ChargebackLabelDuplicate]
        );
        assert_eq!(
            codes(&[("acme.io/cost", "a"), ("acme-io/cost", "b")], &[]),
            [Code::ChargebackLabelDuplicate]
        );
    }

    #[test]
    fn refuses_bad_key_and_value_syntax() {
        for (key, value) in [
            ("cost center", "x"),
            ("-cost", "x"),
            ("Acme.io/cost", "x"),
            ("cost", "ml 4711"),
            ("cost", "alice@example.com"),
            ("cost", ""),
            (
                "a-very-long-key-name-that-goes-on-and-on-past-what-a-short-key-is",
                "x",
            ),
        ] {
            assert_eq!(
                codes(&[(key, value)], &[]),
                [Code::ChargebackLabelInvalid],
                "{key:?}={value:?}"
            );
        }
    }
}
