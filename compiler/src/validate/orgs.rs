//! Org membership: a tenant belongs to an org only where the cell's platform team says so.
//!
//! Consumes: the [`Fleet`]. Produces: `org-membership-undeclared` and `org-member-mismatch`
//! diagnostics.
//!
//! A tenant file is untrusted and a cell file is platform-reviewed, yet a tenant's `org` decides
//! its Kueue cohort (whose idle reservations it borrows first), the cohort's fair-share weight,
//! which `time-slice` and `mps` pools it may share (`shared-pool-crosses-orgs`) and its
//! chargeback label. So a cell lists the members of an org (`org "acme" { tenants "a" "b"; }`),
//! and in each cell: when the cell lists members for an org, every tenant with a quota in the
//! cell that declares the org must be listed; when two or more tenants with a quota in the cell
//! declare the same org, the cell must list its members. A single tenant of an org that the cell
//! lists nothing for passes, since its cohort holds only itself, unless another cell lists the
//! org's members: an org listed anywhere is closed everywhere, so that no tenant carries its
//! name and chargeback label where the platform has not said so. A listed tenant that declares
//! another org, a tenant listed twice in one cell, and a listed name that is no declared tenant
//! (whoever first declared one of that name would join) are errors; a listed tenant without a
//! quota in the cell is a warning (a tenant may be listed before its quota lands).
//!
//! Invariant: pure; one finding per unlisted tenant and cell, at the tenant's `org` value, and
//! one per offending list entry, at the entry. Incomplete cells are skipped (their org list may
//! be the part that could not be read), and so are incomplete tenants for the warning.

use std::collections::BTreeMap;

use crate::diag::{Code, Diagnostic, list_names};
use crate::model::{Cell, Fleet, OrgDecl, Spanned, Tenant};

/// Checks the org membership of every cell.
pub(super) fn check(
    fleet: &Fleet,
    unreadable: &super::Unreadable,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // An org whose members any cell lists is closed in every cell: its name, its chargeback
    // label among them, is the platform's to give.
    let mut closed: BTreeMap<&str, (&Cell, &OrgDecl)> = BTreeMap::new();
    for cell in &fleet.cells {
        for decl in cell.orgs.iter().filter(|decl| decl.tenants.is_some()) {
            closed
                .entry(decl.name.value.as_str())
                .or_insert((cell, decl));
        }
    }
    for cell in fleet.cells.iter().filter(|cell| cell.complete) {
        check_cell(fleet, cell, &closed, unreadable, diagnostics);
    }
}

fn check_cell(
    fleet: &Fleet,
    cell: &Cell,
    closed: &BTreeMap<&str, (&Cell, &OrgDecl)>,
    unreadable: &super::Unreadable,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let cell_name = cell.name.value.as_str();
    let mut by_org: BTreeMap<&str, Vec<&Tenant>> = BTreeMap::new();
    for tenant in fleet
        .tenants
        .iter()
        .filter(|tenant| tenant.quota_in(cell_name).is_some())
    {
        by_org
            .entry(tenant.org.value.as_str())
            .or_default()
            .push(tenant);
    }
    // Duplicated org nodes are `name-duplicate`; the first one counts here.
    let mut decls: BTreeMap<&str, &OrgDecl> = BTreeMap::new();
    for decl in &cell.orgs {
        decls.entry(decl.name.value.as_str()).or_insert(decl);
    }
    for (org, tenants) in &by_org {
        let decl = decls.get(org).copied();
        match decl.and_then(|decl| decl.tenants.as_ref().map(|list| (decl, list))) {
            Some((decl, listed)) => {
                for tenant in tenants {
                    if !listed.iter().any(|name| name.value == tenant.name.value) {
                        diagnostics.push(unlisted(cell, tenant, decl, listed));
                    }
                }
            }
            None if tenants.len() >= 2 => {
                for tenant in tenants {
                    diagnostics.push(shared_without_list(cell, tenant, decl, tenants));
                }
            }
            None => {
                if let Some((listing, listed)) = closed.get(org) {
                    for tenant in tenants {
                        diagnostics.push(closed_elsewhere(cell, tenant, listing, listed));
                    }
                }
            }
        }
    }
    check_lists(fleet, cell, unreadable, diagnostics);
}

/// A tenant declares an org whose members the cell lists, and is not among them.
fn unlisted(
    cell: &Cell,
    tenant: &Tenant,
    decl: &OrgDecl,
    listed: &[Spanned<String>],
) -> Diagnostic {
    let org = &tenant.org.value;
    let cell_name = &cell.name.value;
    let members = if listed.is_empty() {
        "no tenants".to_string()
    } else {
        list_names(listed.iter().map(|name| name.value.as_str()))
    };
    let mut names: Vec<&str> = listed.iter().map(|name| name.value.as_str()).collect();
    names.push(&tenant.name.value);
    let kdl: Vec<String> = names.iter().map(|name| quoted(name)).collect();
    Diagnostic::error(
        Code::OrgMembershipUndeclared,
        tenant.org.span,
        format!(
            "tenant `{}` declares org `{org}`, but cell `{cell_name}` does not list it among the org's members",
            tenant.name.value
        ),
    )
    .with_label(format!("`{}` would join org `{org}`'s cohort here", tenant.name.value))
    .with_secondary(decl.span, format!("cell `{cell_name}` lists {members} as org `{org}`'s members"))
    .with_note("an org's tenants borrow each other's idle reservations first, share its fair-share weight and its time-sliced pools, and carry its chargeback label")
    .with_help(format!(
        "declare the tenant's own org; if it really belongs to `{org}`, the platform team, which reviews org membership, writes `tenants {}` in the `org \"{org}\"` node of cell `{cell_name}` (`tenants: [{}]` in YAML)",
        kdl.join(" "),
        names.join(", ")
    ))
}

/// The only tenant of an org in a cell that lists nothing for the org, while another cell lists
/// the org's members.
fn closed_elsewhere(cell: &Cell, tenant: &Tenant, listing: &Cell, listed: &OrgDecl) -> Diagnostic {
    let org = &tenant.org.value;
    let cell_name = &cell.name.value;
    let name = &tenant.name.value;
    Diagnostic::error(
        Code::OrgMembershipUndeclared,
        tenant.org.span,
        format!(
            "tenant `{name}` declares org `{org}` in cell `{cell_name}`, which does not list it, while cell `{}` lists the org's members",
            listing.name.value
        ),
    )
    .with_label(format!("`{name}` would carry org `{org}`'s name and chargeback label here"))
    .with_secondary(
        listed.span,
        format!("cell `{}` lists org `{org}`'s members", listing.name.value),
    )
    .with_note("an org that any cell lists is the platform's to give in every cell: its tenants borrow each other's idle reservations first, share its time-sliced pools and carry its chargeback label")
    .with_help(format!(
        "declare the tenant's own org; if it really belongs to `{org}`, the platform team, which reviews org membership, adds the node `org \"{org}\" {{ tenants {}; }}` to cell `{cell_name}` (`orgs: [{{name: {org}, tenants: [{name}]}}]` in YAML)",
        quoted(name)
    ))
}

/// Two or more tenants of the cell declare an org whose members the cell does not list.
fn shared_without_list(
    cell: &Cell,
    tenant: &Tenant,
    decl: Option<&OrgDecl>,
    tenants: &[&Tenant],
) -> Diagnostic {
    let org = &tenant.org.value;
    let cell_name = &cell.name.value;
    let others = list_names(
        tenants
            .iter()
            .filter(|other| other.name.value != tenant.name.value)
            .map(|other| other.name.value.as_str()),
    );
    let names: Vec<&str> = tenants
        .iter()
        .map(|other| other.name.value.as_str())
        .collect();
    let kdl: Vec<String> = names.iter().map(|name| quoted(name)).collect();
    let kdl = kdl.join(" ");
    let yaml = names.join(", ");
    let (span, label, addition) = match decl {
        Some(decl) => (
            decl.span,
            format!("org `{org}` lists no `tenants` here"),
            format!("`tenants {kdl}` in its `org \"{org}\"` node (`tenants: [{yaml}]` in YAML)"),
        ),
        None => (
            cell.name.span,
            format!("cell `{cell_name}` declares no `org \"{org}\"`"),
            format!(
                "the node `org \"{org}\" {{ tenants {kdl}; }}` (`orgs: [{{name: {org}, tenants: [{yaml}]}}]` in YAML)"
            ),
        ),
    };
    Diagnostic::error(
        Code::OrgMembershipUndeclared,
        tenant.org.span,
        format!(
            "tenant `{}` shares org `{org}` with {others} in cell `{cell_name}`, which does not list the org's members",
            tenant.name.value
        ),
    )
    .with_label(format!("`{}` would join org `{org}`'s cohort here", tenant.name.value))
    .with_secondary(span, label)
    .with_note("an org's tenants borrow each other's idle reservations first, share its fair-share weight and its time-sliced pools, and carry its chargeback label")
    .with_help(format!(
        "the platform team, which reviews org membership, lists the tenants that really belong to `{org}` in cell `{cell_name}`: {addition}; any other tenant declares its own org"
    ))
}

/// Every listed name: listed once in the cell, and a tenant of the org it is listed under.
fn check_lists(
    fleet: &Fleet,
    cell: &Cell,
    unreadable: &super::Unreadable,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let cell_name = &cell.name.value;
    let mut seen: BTreeMap<&str, (&Spanned<String>, &str)> = BTreeMap::new();
    for decl in &cell.orgs {
        let org = decl.name.value.as_str();
        for name in decl.tenants.iter().flatten() {
            if let Some((first, first_org)) = seen.get(name.value.as_str()) {
                let place = if *first_org == org {
                    format!("under org `{org}` again")
                } else {
                    format!("under org `{org}` after org `{first_org}`")
                };
                diagnostics.push(
                    Diagnostic::error(
                        Code::OrgMemberMismatch,
                        name.span,
                        format!("cell `{cell_name}` lists tenant `{}` twice", name.value),
                    )
                    .with_label(format!("listed {place}"))
                    .with_secondary(first.span, "first listed here")
                    .with_help(format!(
                        "keep `{}` once, under the org it declares",
                        name.value
                    )),
                );
                continue;
            }
            seen.insert(&name.value, (name, org));
            let tenant = fleet
                .tenants
                .iter()
                .find(|tenant| tenant.name.value == name.value);
            match tenant {
                Some(tenant) if tenant.org.value != org => diagnostics.push(
                    Diagnostic::error(
                        Code::OrgMemberMismatch,
                        name.span,
                        format!(
                            "cell `{cell_name}` lists tenant `{}` under org `{org}`, but it declares org `{}`",
                            name.value, tenant.org.value
                        ),
                    )
                    .with_label(format!("listed under org `{org}`"))
                    .with_secondary(tenant.org.span, "the tenant declares its org here")
                    .with_help(format!(
                        "list `{}` under `org \"{}\"` of cell `{cell_name}`, or remove it from org `{org}`'s `tenants`",
                        name.value, tenant.org.value
                    )),
                ),
                Some(tenant) if tenant.quota_in(cell_name).is_some() || !tenant.complete => {}
                // A name listed before its tenant exists would let whoever first declares a
                // tenant of that name join the org: the list is the platform's approval.
                None if !unreadable.tenants.contains(&name.value) => diagnostics.push(
                    Diagnostic::error(
                        Code::OrgMemberMismatch,
                        name.span,
                        format!(
                            "cell `{cell_name}` lists `{}` under org `{org}`, but no tenant of that name is declared",
                            name.value
                        ),
                    )
                    .with_label("listed here")
                    .with_note("a listed name is the platform's approval: whoever first declares a tenant of that name would join the org")
                    .with_help(format!(
                        "list `{}` once its tenant file is in the fleet, or check the name",
                        name.value
                    )),
                ),
                None => {}
                Some(_) => diagnostics.push(
                    Diagnostic::warning(
                        Code::OrgMemberMismatch,
                        name.span,
                        format!(
                            "cell `{cell_name}` lists `{}` under org `{org}`, but no tenant of that name has a quota in the cell",
                            name.value
                        ),
                    )
                    .with_label("listed here")
                    .with_help(format!(
                        "remove `{}` from org `{org}`'s `tenants`, or check the tenant's name",
                        name.value
                    )),
                ),
            }
        }
    }
}

fn quoted(name: &str) -> String {
    format!("\"{name}\"")
}

#[cfg(test)]
mod tests {
    use crate::diag::{Code, Severity};
    use crate::testing::Rng;
    use crate::validate::test_support::compile_files;

    /// A cell `name` with one exclusive pool and the given `org` nodes.
    fn cell(name: &str, orgs: &str) -> String {
        format!(
            "cell \"{name}\" {{\n    cloud \"aws\" region=\"us-east-1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n{orgs}    pool \"train\" {{ gpu \"H100-80GB-SXM\"; nodes 16 gpus-per-node=8; sharing \"exclusive\"; }}\n}}\n"
        )
    }

    /// A tenant of `org` with a one-GPU quota in each of `cells`.
    fn tenant(name: &str, org: &str, cells: &[&str]) -> String {
        let quotas: String = cells
            .iter()
            .map(|cell| {
                format!("    quota cell=\"{cell}\" cpu=\"1\" memory=\"1Gi\" pods=1 {{ pool \"train\" reserved=1; }}\n")
            })
            .collect();
        format!(
            "tenant \"{name}\" {{\n    org \"{org}\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"{name}-admins\"\n{quotas}    workload \"train\" service-account=\"trainer\"\n}}\n"
        )
    }

    /// The `(code, severity)` of every org finding of the files.
    fn findings(files: &[(String, String)]) -> Vec<(Code, Severity)> {
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        compile_files(&files)
            .diagnostics
            .iter()
            .filter(|d| {
                matches!(
                    d.code,
                    Code::OrgMembershipUndeclared | Code::OrgMemberMismatch
                )
            })
            .map(|d| (d.code, d.severity))
            .collect()
    }

    fn fleet(orgs: &str, tenants: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut files = vec![("cells/c1.kdl".to_string(), cell("c1", orgs))];
        for (name, org) in tenants {
            files.push((format!("tenants/{name}.kdl"), tenant(name, org, &["c1"])));
        }
        files
    }

    const UNDECLARED: (Code, Severity) = (Code::OrgMembershipUndeclared, Severity::Error);
    const MISMATCH: (Code, Severity) = (Code::OrgMemberMismatch, Severity::Error);

    #[test]
    fn rejects_a_tenant_that_joins_an_org_the_cell_lists_without_it() {
        let listed = "    org \"acme\" { tenants \"a\"; }\n";
        assert_eq!(findings(&fleet(listed, &[("a", "acme")])), []);
        assert_eq!(
            findings(&fleet(listed, &[("a", "acme"), ("x", "acme")])),
            [UNDECLARED]
        );
        // A list holds even for a tenant that is the org's only one in the cell.
        let empty = "    org \"acme\" { tenants; }\n";
        assert_eq!(findings(&fleet(empty, &[("x", "acme")])), [UNDECLARED]);
    }

    #[test]
    fn rejects_two_tenants_of_an_org_the_cell_does_not_list() {
        let pair = [("a", "acme"), ("b", "acme")];
        assert_eq!(findings(&fleet("", &pair)), [UNDECLARED, UNDECLARED]);
        let weight_only = "    org \"acme\" weight=2\n";
        assert_eq!(
            findings(&fleet(weight_only, &pair)),
            [UNDECLARED, UNDECLARED]
        );
        let listed = "    org \"acme\" weight=2 { tenants \"a\" \"b\"; }\n";
        assert_eq!(findings(&fleet(listed, &pair)), []);
        // One tenant per org needs no list.
        assert_eq!(findings(&fleet("", &[("a", "acme"), ("b", "globex")])), []);
    }

    #[test]
    fn an_org_listed_in_one_cell_is_closed_in_every_cell() {
        let files = |org: &str| {
            vec![
                (
                    "cells/c1.kdl".to_string(),
                    cell("c1", "    org \"acme\" { tenants \"a\"; }\n"),
                ),
                ("cells/c2.kdl".to_string(), cell("c2", "")),
                ("tenants/a.kdl".to_string(), tenant("a", "acme", &["c1"])),
                ("tenants/x.kdl".to_string(), tenant("x", org, &["c2"])),
            ]
        };
        // `x` is the only tenant of its org in `c2`, but `c1` lists Acme's members.
        assert_eq!(findings(&files("acme")), [UNDECLARED]);
        // An org no cell lists stays open to a lone tenant.
        assert_eq!(findings(&files("initech")), []);
        // Listing `x` in `c2` makes it a member there.
        let mut listed = files("acme");
        listed[1].1 = cell("c2", "    org \"acme\" { tenants \"x\"; }\n");
        assert_eq!(findings(&listed), []);
    }

    #[test]
    fn only_tenants_with_a_quota_in_the_cell_count() {
        let mut files = vec![
            ("cells/c1.kdl".to_string(), cell("c1", "")),
            ("cells/c2.kdl".to_string(), cell("c2", "")),
        ];
        files.push(("tenants/a.kdl".to_string(), tenant("a", "acme", &["c1"])));
        files.push(("tenants/b.kdl".to_string(), tenant("b", "acme", &["c2"])));
        assert_eq!(findings(&files), []);
    }

    #[test]
    fn rejects_a_listed_tenant_of_another_org_and_a_tenant_listed_twice() {
        let tenants = [("a", "acme"), ("g", "globex")];
        let other_org = "    org \"acme\" { tenants \"a\" \"g\"; }\n";
        assert_eq!(findings(&fleet(other_org, &tenants)), [MISMATCH]);
        let twice = "    org \"acme\" { tenants \"a\" \"a\"; }\n";
        assert_eq!(findings(&fleet(twice, &tenants)), [MISMATCH]);
        let across =
            "    org \"acme\" { tenants \"a\"; }\n    org \"globex\" { tenants \"g\" \"a\"; }\n";
        assert_eq!(findings(&fleet(across, &tenants)), [MISMATCH]);
    }

    #[test]
    fn warns_on_a_listed_tenant_without_a_quota_in_the_cell_and_refuses_an_undeclared_name() {
        // `b` is declared, of the org, with its quota in another cell: listed ahead of it.
        let mut files = fleet(
            "    org \"acme\" { tenants \"a\" \"b\"; }\n",
            &[("a", "acme")],
        );
        files.push(("cells/c2.kdl".to_string(), cell("c2", "")));
        files.push(("tenants/b.kdl".to_string(), tenant("b", "acme", &["c2"])));
        assert_eq!(
            findings(&files),
            [
                (Code::OrgMemberMismatch, Severity::Warning),
                // `b` is the only Acme tenant of `c2`, which lists nothing, while `c1` lists
                // Acme's members.
                UNDECLARED
            ]
        );
        // A name no tenant has: whoever first declared it would join the org.
        let squatted = "    org \"acme\" { tenants \"a\" \"gone\"; }\n";
        assert_eq!(findings(&fleet(squatted, &[("a", "acme")])), [MISMATCH]);
    }

    #[test]
    fn reads_the_member_list_from_yaml_as_from_kdl() {
        let yaml = "name: c1\ncloud: {provider: aws, region: us-east-1}\nkubernetes: \"1.33\"\ndriver: \"570\"\norgs:\n  - {name: acme, weight: 2, tenants: [a]}\npools:\n  - {name: train, gpu: H100-80GB-SXM, nodes: {count: 16, gpus-per-node: 8}, sharing: exclusive}\n";
        let mut files = vec![("cells/c1.yaml".to_string(), yaml.to_string())];
        files.push(("tenants/a.kdl".to_string(), tenant("a", "acme", &["c1"])));
        assert_eq!(findings(&files), []);
        files.push(("tenants/x.kdl".to_string(), tenant("x", "acme", &["c1"])));
        assert_eq!(findings(&files), [UNDECLARED]);
    }

    /// Generated fleets: a build fails exactly when some cell has a tenant of a listed org that
    /// the list lacks, two tenants of an unlisted org, a tenant of an org it does not list but
    /// another cell does, or a listed tenant of another org; and
    /// listing every org's members in every cell makes each fleet build.
    #[test]
    fn no_build_succeeds_where_an_org_is_shared_unless_the_cell_lists_its_members() {
        let mut rng = Rng(0x0a95_0015_5eed_0008);
        let orgs = ["acme", "globex", "initech"];
        let cells = ["c1", "c2"];
        for round in 0..150 {
            // Tenants: (name, org, cells it has a quota in).
            let tenants: Vec<(String, &str, Vec<&str>)> = (0..2 + rng.below(4))
                .map(|idx| {
                    let org = orgs[rng.below(orgs.len())];
                    let mut here: Vec<&str> =
                        cells.iter().copied().filter(|_| rng.below(3) > 0).collect();
                    if here.is_empty() {
                        here.push("c1");
                    }
                    (format!("t{idx}"), org, here)
                })
                .collect();
            let members = |cell: &str, org: &str| -> Vec<&str> {
                tenants
                    .iter()
                    .filter(|(_, tenant_org, here)| *tenant_org == org && here.contains(&cell))
                    .map(|(name, _, _)| name.as_str())
                    .collect()
            };
            // What each cell lists for each org: nothing, everyone, all but one.
            let mut lists: Vec<(&str, &str, Option<Vec<&str>>)> = Vec::new();
            for cell_name in cells {
                for org in orgs {
                    let mine = members(cell_name, org);
                    let listed: Option<Vec<&str>> = match rng.below(3) {
                        0 => None,
                        1 => Some(mine.clone()),
                        _ => Some(mine.iter().skip(1).copied().collect()),
                    };
                    lists.push((cell_name, org, listed));
                }
            }
            // An org listed in any cell is closed in every cell.
            let closed = |org: &str| {
                lists
                    .iter()
                    .any(|(_, listed_org, listed)| *listed_org == org && listed.is_some())
            };
            let mut expect_error = false;
            let mut generated = Vec::new();
            let mut complete = Vec::new();
            for cell_name in cells {
                let mut orgs_text = String::new();
                let mut full_text = String::new();
                for org in orgs {
                    let mine = members(cell_name, org);
                    if !mine.is_empty() {
                        let quoted: Vec<String> =
                            mine.iter().map(|name| format!("\"{name}\"")).collect();
                        full_text.push_str(&format!(
                            "    org \"{org}\" {{ tenants {}; }}\n",
                            quoted.join(" ")
                        ));
                    }
                    let listed = lists
                        .iter()
                        .find(|(listed_cell, listed_org, _)| {
                            *listed_cell == cell_name && *listed_org == org
                        })
                        .and_then(|(_, _, listed)| listed.clone());
                    match &listed {
                        None => {
                            expect_error |= mine.len() >= 2 || (!mine.is_empty() && closed(org));
                        }
                        Some(listed) => expect_error |= listed.len() < mine.len(),
                    }
                    if let Some(listed) = listed {
                        let quoted: Vec<String> =
                            listed.iter().map(|name| format!("\"{name}\"")).collect();
                        orgs_text.push_str(&format!(
                            "    org \"{org}\" {{ tenants {}; }}\n",
                            quoted.join(" ")
                        ));
                    }
                }
                generated.push((
                    format!("cells/{cell_name}.kdl"),
                    cell(cell_name, &orgs_text),
                ));
                complete.push((
                    format!("cells/{cell_name}.kdl"),
                    cell(cell_name, &full_text),
                ));
            }
            for (name, org, here) in &tenants {
                let text = tenant(name, org, here);
                generated.push((format!("tenants/{name}.kdl"), text.clone()));
                complete.push((format!("tenants/{name}.kdl"), text));
            }
            let compile = |files: &[(String, String)]| {
                let files: Vec<(&str, &str)> = files
                    .iter()
                    .map(|(path, text)| (path.as_str(), text.as_str()))
                    .collect();
                compile_files(&files)
            };
            let built = compile(&generated);
            let errors: Vec<Code> = built
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.code)
                .collect();
            assert_eq!(
                !errors.is_empty(),
                expect_error,
                "round {round}: {errors:?} for {tenants:?}"
            );
            assert!(
                errors
                    .iter()
                    .all(|code| *code == Code::OrgMembershipUndeclared),
                "round {round}: {errors:?}"
            );
            let listed = compile(&complete);
            assert!(
                listed.diagnostics.is_empty() && listed.output.is_some(),
                "round {round}: {:?}",
                listed.diagnostics
            );
        }
    }
}
