//! Checks of the declarations storage IAM is made from.
//!
//! Consumes: the [`Fleet`]. Produces: diagnostics for model prefixes outside the tenant's own
//! `models/<tenant>/` prefix (`model-prefix-outside-tenant`), shared-base prefixes that are not
//! plain `shared/…/` prefixes (`shared-base-prefix-invalid`), and cell storage identities that do
//! not match the cell's cloud (`storage-identity-mismatch`).
//!
//! Invariant: after these checks every prefix `lower/iam.rs` grants is made of the characters
//! `[A-Za-z0-9._/-]` only, so no grant can hold a wildcard, and a shared-base prefix can never
//! name a `models/` or `checkpoints/` prefix of any tenant.

use crate::diag::{Code, Diagnostic};
use crate::facts::cloud::{google_account_id, models_prefix};
use crate::facts::storage::{buckets_of, granted_buckets, grants_on};
use crate::model::{Cell, Fleet, SharedBaseGrant};

/// The first folder of every shared-base prefix.
pub const SHARED_ROOT: &str = "shared/";

/// The object key part of a `scheme://bucket/key` prefix (the whole text when it has no
/// scheme).
pub fn object_key(prefix: &str) -> &str {
    match prefix.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, key)| key),
        None => prefix,
    }
}

/// Why an object prefix a grant would use is unsafe, if it is.
pub fn prefix_problem(prefix: &str) -> Option<&'static str> {
    if !prefix.ends_with('/') {
        Some("a prefix ends with `/`, or a grant on it also covers longer names")
    } else if !prefix
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-' | '/'))
    {
        Some(
            "only letters, digits, `.`, `_`, `-` and `/` are allowed; `*`, `?` and `$` are IAM wildcards and variables",
        )
    } else if prefix
        .strip_suffix('/')
        .unwrap_or(prefix)
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        Some("empty, `.` and `..` folders are refused")
    } else {
        None
    }
}

/// Why a `shared/…/` prefix is not a plain shared-base prefix, if it is not.
fn shared_base_problem(prefix: &str) -> Option<&'static str> {
    if !prefix.starts_with(SHARED_ROOT) {
        Some(
            "a shared-base prefix starts with `shared/`, apart from every tenant's `models/` and `checkpoints/`",
        )
    } else if prefix == SHARED_ROOT {
        Some("`shared/` alone would grant every shared base")
    } else {
        prefix_problem(prefix)
    }
}

/// Every grant names declared tenants with a plain prefix, and every shared base of a tenant
/// with a quota in a cell is granted to it on at least one of the cell's buckets
/// (`facts::storage::granted_buckets`: per bucket, by cloud and name; a bucket no cell grants
/// on leaves every base open). `plan` then grants each base only on those buckets.
fn shared_base_grants(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    for cell in &fleet.cells {
        let Some(storage) = &cell.storage else {
            continue;
        };
        let cell_name = &cell.name.value;
        for grant in &storage.shared_bases {
            if let Some(problem) = shared_base_problem(&grant.prefix.value) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::SharedBasePrefixInvalid,
                        grant.prefix.span,
                        format!(
                            "shared-base prefix `{}` of cell `{cell_name}` is not a plain `shared/…/` prefix",
                            grant.prefix.value
                        ),
                    )
                    .with_label(problem)
                    .with_help("write the object key prefix inside the bucket, such as `shared/llama-70b/`"),
                );
            }
            for reader in &grant.tenants {
                if fleet
                    .tenants
                    .iter()
                    .any(|tenant| tenant.name.value == reader.value)
                {
                    continue;
                }
                diagnostics.push(
                    Diagnostic::error(
                        Code::SharedBaseNotGranted,
                        reader.span,
                        format!(
                            "cell `{cell_name}` grants shared base `{}` to `{}`, but no tenant of that name is declared",
                            grant.prefix.value, reader.value
                        ),
                    )
                    .with_label("granted here")
                    .with_note("a grant is the platform's approval: whoever first declared a tenant of that name could read the base")
                    .with_help(format!(
                        "grant `{}` once its tenant file is in the fleet, or check the name",
                        reader.value
                    )),
                );
            }
        }
        // Grants are decided per bucket, keyed by cloud and name (`facts::storage`): a base
        // is refused where the tenant may read it on none of the cell's buckets.
        let grants: Vec<(&Cell, &SharedBaseGrant)> = buckets_of(cell)
            .into_iter()
            .flat_map(|bucket| grants_on(fleet, bucket))
            .collect();
        let Some((granting, _)) = grants.first() else {
            continue;
        };
        let granting_storage = granting.storage.as_ref().map_or(storage.span, |s| s.span);
        for tenant in fleet
            .tenants
            .iter()
            .filter(|tenant| tenant.quota_in(cell_name).is_some())
        {
            for base in &tenant.shared_bases {
                if !granted_buckets(fleet, cell, &tenant.name.value, &base.value).is_empty() {
                    continue;
                }
                diagnostics.push(
                    Diagnostic::error(
                        Code::SharedBaseNotGranted,
                        base.span,
                        format!(
                            "shared base `{}` of tenant `{}` is not granted to it in cell `{cell_name}`",
                            base.value, tenant.name.value
                        ),
                    )
                    .with_label("the tenant would read this prefix")
                    .with_secondary(
                        granting_storage,
                        format!(
                            "cell `{}` lists the shared bases of {}",
                            granting.name.value,
                            if granting.name.value == *cell_name {
                                "its buckets".to_string()
                            } else {
                                format!("a bucket it shares with cell `{cell_name}`")
                            }
                        ),
                    )
                    .with_note("a shared base may be licensed to some tenants only; where a cell lists its shared bases, each names its readers")
                    .with_help(
                        match grants
                            .iter()
                            .map(|(_, grant)| *grant)
                            .find(|grant| base.value.starts_with(&grant.prefix.value))
                        {
                            Some(grant) => format!(
                                "read a base the cell grants the tenant; if it may read this one, the platform team adds `\"{}\"` to the `tenants` of `shared-base \"{}\"` in cell `{cell_name}`'s `storage`",
                                tenant.name.value, grant.prefix.value
                            ),
                            None => format!(
                                "read a base the cell grants the tenant; if it may read this one, the platform team adds `shared-base \"{}\" {{ tenants \"{}\"; }}` to cell `{cell_name}`'s `storage`",
                                base.value, tenant.name.value
                            ),
                        },
                    ),
                );
            }
        }
    }
}

/// Runs every storage IAM check.
pub fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    for tenant in &fleet.tenants {
        let own = models_prefix(&tenant.name.value);
        for model in &tenant.models {
            let key = object_key(&model.prefix.value);
            if !key.starts_with(&own) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::ModelPrefixOutsideTenant,
                        model.prefix.span,
                        format!(
                            "model `{}` of tenant `{}` is stored outside `{own}`",
                            model.name.value, tenant.name.value
                        ),
                    )
                    .with_label(format!("the object key `{key}` does not start with `{own}`"))
                    .with_help(format!(
                        "store the weights under `{own}<model>/<version>/`, the only models prefix the tenant's identities may read"
                    )),
                );
            }
        }
        for base in &tenant.shared_bases {
            if let Some(problem) = shared_base_problem(&base.value) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::SharedBasePrefixInvalid,
                        base.span,
                        format!(
                            "shared-base prefix `{}` of tenant `{}` is not a plain `shared/…/` prefix",
                            base.value, tenant.name.value
                        ),
                    )
                    .with_label(problem)
                    .with_help("write the object key prefix inside the bucket, such as `shared/llama-70b/2026-10-01/`"),
                );
            }
        }
    }
    shared_base_grants(fleet, diagnostics);
    google_account_ids_distinct(fleet, diagnostics);
    for cell in &fleet.cells {
        let Some(storage) = &cell.storage else {
            continue;
        };
        let wanted = storage.identity.cloud();
        if cell.cloud.value.is_empty() || cell.cloud.value == wanted {
            continue;
        }
        diagnostics.push(
            Diagnostic::error(
                Code::StorageIdentityMismatch,
                storage.identity.span(),
                format!(
                    "cell `{}` runs in `{}` but its storage identity is for `{wanted}`",
                    cell.name.value, cell.cloud.value
                ),
            )
            .with_label(format!("an identity for `{wanted}`"))
            .with_secondary(cell.cloud.span, "the cell's cloud")
            .with_help(match cell.cloud.value.as_str() {
                "aws" => "declare `aws account=\"…\" identity=\"pod-identity\"` (or `\"irsa\"`) in `storage`",
                "gcp" => "declare `gcp project=\"…\"` in `storage`",
                _ => "tenantc emits storage IAM for `aws` and `gcp` cells only; remove `storage` from this cell",
            }),
        );
    }
}

/// Refuses two tenant workloads whose Google service account ids are the same, when a cell
/// binds workloads to Google service accounts.
///
/// A long `<tenant>-<kind>` is shortened to a prefix and a 32-bit hash
/// ([`google_account_id`]), which a pull request can collide on purpose
/// (an attack review found a colliding name in seconds); two workloads sharing an account would
/// share its grants, and whichever Workload Identity binding is applied last would own it.
fn google_account_ids_distinct(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    let gcp = fleet.cells.iter().any(|cell| {
        cell.storage
            .as_ref()
            .is_some_and(|storage| matches!(storage.identity, crate::model::CloudIdentity::Gcp(_)))
    });
    if !gcp {
        return;
    }
    let mut seen: std::collections::BTreeMap<String, (&str, crate::source::Span)> =
        std::collections::BTreeMap::new();
    for tenant in &fleet.tenants {
        for workload in &tenant.workloads {
            let kind = workload.kind.value.as_str();
            let id = google_account_id(&tenant.name.value, kind);
            match seen.get(&id) {
                Some((first, first_span)) if *first != tenant.name.value => {
                    diagnostics.push(
                        Diagnostic::error(
                            Code::NameDuplicate,
                            tenant.name.span,
                            format!(
                                "tenant `{}` would share the Google service account `{id}` with tenant `{first}`",
                                tenant.name.value
                            ),
                        )
                        .with_label(format!("its `{kind}` workload's account id is `{id}`"))
                        .with_secondary(*first_span, "the tenant that has this account id")
                        .with_help("rename the tenant: long names are shortened to 20 characters and a hash, and two tenants may never share an account"),
                    );
                }
                Some(_) => {}
                None => {
                    seen.insert(id, (&tenant.name.value, tenant.name.span));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_that_lists_its_shared_bases_grants_each_to_the_tenants_it_names() {
        use crate::validate::test_support::{codes, tenant};
        let cell = |grants: &str| {
            format!(
                "cell \"c1\" {{\n    cloud \"aws\" region=\"us-east-1\"\n    kubernetes \"1.33\"\n    storage {{\n        bucket \"fleet-models\"\n        aws account=\"123456789012\" identity=\"irsa\" oidc-provider=\"oidc.eks.us-east-1.amazonaws.com/id/ABC\"\n{grants}    }}\n    priority \"batch\" value=1000\n    pool \"train\" {{ gpu \"H100-80GB-SXM\"; nodes 2 gpus-per-node=8; sharing \"exclusive\"; }}\n}}\n"
            )
        };
        let reader = |name: &str, base: &str| {
            tenant(name, "hard", "pool \"train\" reserved=8").replace(
                "    quota cell",
                &format!("    shared-base \"{base}\"\n    quota cell"),
            )
        };
        let run = |grants: &str, base: &str| {
            let cell = cell(grants);
            let a = reader("a", base);
            codes(&[
                ("cells/c1.kdl", cell.as_str()),
                ("tenants/a.kdl", a.as_str()),
            ])
            .into_iter()
            .filter(|code| *code == Code::SharedBaseNotGranted)
            .count()
        };
        let granted = "        shared-base \"shared/llama/\" { tenants \"a\"; }\n";
        let other = "        shared-base \"shared/llama/\" { tenants \"b\"; }\n";
        // A cell that lists no shared base leaves every base open.
        assert_eq!(run("", "shared/llama/v1/"), 0);
        assert_eq!(run(granted, "shared/llama/v1/"), 0);
        assert_eq!(run(granted, "shared/llama/"), 0);
        // A base outside every grant, one that only starts like a grant, and a grant to others.
        assert_eq!(run(granted, "shared/mistral/"), 1);
        assert_eq!(run(granted, "shared/llama-2/"), 1);
        // `b` is no tenant: its grant is refused too.
        assert_eq!(run(other, "shared/llama/v1/"), 2);
        // A cell without grants that shares a bucket with a granting cell holds to its grants.
        let open = cell("").replace("cell \"c1\"", "cell \"c2\"");
        let granting = cell("        shared-base \"shared/llama/\" { tenants \"b\"; }\n");
        let b = tenant("b", "hard", "pool \"train\" reserved=8");
        let a = reader("a", "shared/llama/v1/").replace("cell=\"c1\"", "cell=\"c2\"");
        let found: Vec<Code> = codes(&[
            ("cells/c1.kdl", granting.as_str()),
            ("cells/c2.kdl", open.as_str()),
            ("tenants/a.kdl", a.as_str()),
            ("tenants/b.kdl", b.as_str()),
        ])
        .into_iter()
        .filter(|code| *code == Code::SharedBaseNotGranted)
        .collect();
        assert_eq!(found, [Code::SharedBaseNotGranted]);
        let elsewhere = open.replace("fleet-models", "fleet-models-2");
        let found: Vec<Code> = codes(&[
            ("cells/c1.kdl", granting.as_str()),
            ("cells/c2.kdl", elsewhere.as_str()),
            ("tenants/a.kdl", a.as_str()),
            ("tenants/b.kdl", b.as_str()),
        ])
        .into_iter()
        .filter(|code| *code == Code::SharedBaseNotGranted)
        .collect();
        assert_eq!(found, []);
        // `shared//` is no plain prefix.
        assert!(prefix_problem("shared//").is_some());
    }

    #[test]
    fn tenants_whose_google_account_ids_collide_are_refused() {
        use crate::validate::test_support::{fleet, tenant};
        let cell = r#"cell "c1" {
    cloud "gcp" region="europe-west4"
    kubernetes "1.33"
    storage {
        bucket "fleet-models"
        gcp project="fleet-prod-eu"
    }
    pool "p" {
        gpu "A100-80GB-SXM"
        nodes 1 gpus-per-node=8
        sharing "exclusive"
    }
}
"#;
        // Two names whose shortened ids collide under the 32-bit hash, found by a
        // meet-in-the-middle search in the attack review.
        let victim = "acme-research-foundation-models";
        let attacker = "acme-research-foundau4s7aecy";
        assert_eq!(
            google_account_id(victim, "train"),
            google_account_id(attacker, "train")
        );
        let run = |names: &[&str]| {
            let texts: Vec<(String, String)> = names
                .iter()
                .map(|name| {
                    (
                        format!("tenants/{name}.kdl"),
                        tenant(name, "hard", "pool \"p\" reserved=1"),
                    )
                })
                .collect();
            let mut files: Vec<(&str, &str)> = vec![("cells/c1.kdl", cell)];
            files.extend(
                texts
                    .iter()
                    .map(|(path, text)| (path.as_str(), text.as_str())),
            );
            let mut diagnostics = Vec::new();
            google_account_ids_distinct(&fleet(&files), &mut diagnostics);
            diagnostics
        };
        let found = run(&[victim, attacker]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, Code::NameDuplicate);
        assert!(found[0].message.contains(attacker), "{}", found[0].message);
        assert!(run(&[victim, "acme-research-foundation-model2"]).is_empty());
    }

    #[test]
    fn object_keys_drop_the_scheme_and_bucket() {
        assert_eq!(object_key("s3://b/models/t/x/"), "models/t/x/");
        assert_eq!(object_key("gs://b"), "");
        assert_eq!(object_key("models/t/"), "models/t/");
    }

    #[test]
    fn prefixes_with_wildcards_or_dot_folders_are_refused() {
        for bad in [
            "shared/*/",
            "shared/a",
            "shared/../models/t/",
            "shared//a/",
            "shared/${aws:username}/",
        ] {
            assert!(prefix_problem(bad).is_some(), "{bad}");
        }
        assert_eq!(prefix_problem("shared/llama-70b/2026.10_01/"), None);
    }
}
