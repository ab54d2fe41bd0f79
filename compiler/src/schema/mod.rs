//! Shape checks: parsed trees to the typed model.
//!
//! Consumes: [`Document`]s from `parse`, each with the folder it came from.
//! Produces: [`Tenant`]s and [`Cell`]s with spans, plus diagnostics for unknown, missing,
//! duplicate and mistyped fields, out-of-range numbers and invalid names. This module is the one
//! place that knows the field names of the declaration language; `schema/*.schema.json`
//! describes the same model for YAML editors, and a test keeps the two in step.
//!
//! Invariant: a declaration whose name could be read yields what else could be read; a part that
//! could not be read (a value outside its closed set, a field of the wrong type) is left out, as
//! `None` or a missing item, never replaced by a default, and the declaration is marked
//! incomplete (`complete: false`), so no later check runs on a value nobody wrote and nothing is
//! emitted, while every shape error of the run is still reported.
//!
//! One file per part of the language: `tenant.rs` (a tenant and everything inside it), `cell.rs`
//! (a cell and its cell-wide settings), `pool.rs` (node pools, topology, taints, MIG layouts and
//! the cell's own GPU models), `storage.rs` (buckets, grants, cloud identities) and `gitops.rs`
//! (the GitOps controller settings); this file holds the entry point, the closed sets shared by
//! several parts and the name, label and text checks they all use.

mod cell;
mod gitops;
mod pool;
pub mod reader;
mod serving;
mod storage;
mod tenant;

use reader::Ctx;

use crate::diag::{Code, Diagnostic};
use crate::layout::DeclKind;
use crate::model::{Cell, Sharing, Spanned, Tenant, Trust, WorkloadKind};
use crate::names;
use crate::parse::Document;
use crate::source::{SourceMap, Span};

use cell::cell;
pub use cell::{MAX_OVERSUBSCRIBE, MIN_OVERSUBSCRIBE};
pub use gitops::GITOPS_FOLDERS;
use tenant::tenant;
pub use tenant::{EXCEPTABLE_CAPABILITIES, MAX_GROUP_NAME_CHARS, group_name_problem};

/// The Kubernetes minor versions tenantc generates for (1.30 brought ValidatingAdmissionPolicy
/// v1, which the default admission floor needs). A cell may declare an older minor, which is read
/// as written; `validate/backends.rs` refuses it for every backend that cannot run there
/// (`facts::backends`), and a newer one is `kubernetes-version-unsupported`.
pub const KUBERNETES_MINORS: std::ops::RangeInclusive<u32> = 30..=36;

const TRUST: &[(&str, Trust)] = &[
    ("soft", Trust::Soft),
    ("mig", Trust::Mig),
    ("hard", Trust::Hard),
];
const WORKLOAD: &[(&str, WorkloadKind)] = &[
    ("train", WorkloadKind::Train),
    ("infer", WorkloadKind::Infer),
];
const SHARING: &[(&str, Sharing)] = &[
    ("exclusive", Sharing::Exclusive),
    ("mig", Sharing::Mig),
    ("mig-single", Sharing::MigSingle),
    ("time-slice", Sharing::TimeSlice),
    ("mps", Sharing::Mps),
];
const CLOUDS: &[(&str, &str)] = &[
    ("aws", "aws"),
    ("azure", "azure"),
    ("gcp", "gcp"),
    ("oci", "oci"),
    ("on-prem", "on-prem"),
];
const TAINT_EFFECTS: &[(&str, &str)] = &[
    ("NoSchedule", "NoSchedule"),
    ("PreferNoSchedule", "PreferNoSchedule"),
    ("NoExecute", "NoExecute"),
];

/// A declaration read from one file.
#[derive(Debug, Clone, PartialEq)]
pub enum Declaration {
    /// From `tenants/`.
    Tenant(Box<Tenant>),
    /// From `cells/`.
    Cell(Box<Cell>),
}

/// Reads the declaration of one parsed file.
pub fn read(
    document: &Document,
    kind: DeclKind,
    sources: &SourceMap,
) -> (Option<Declaration>, Vec<Diagnostic>) {
    let ctx = Ctx::default();
    let Some(root) = &document.root else {
        return (None, ctx.take());
    };
    if let Some((node_kind, span)) = &root.kind
        && node_kind != kind.as_str()
    {
        let folder = match kind {
            DeclKind::Tenant => "tenants/",
            DeclKind::Cell => "cells/",
        };
        let diagnostic = if matches!(node_kind.as_str(), "tenant" | "cell") {
            Diagnostic::error(
                Code::DeclarationKindMismatch,
                *span,
                format!("a {node_kind} is declared in {folder}"),
            )
            .with_label(format!("files in {folder} declare a {}", kind.as_str()))
            .with_help(format!("move this file to {node_kind}s/"))
        } else {
            Diagnostic::error(
                Code::DocumentShape,
                *span,
                format!("`{node_kind}` is not a declaration"),
            )
            .with_label(format!("expected `{}`", kind.as_str()))
            .with_help(format!(
                "a file in {folder} starts with `{} \"<name>\" {{`",
                kind.as_str()
            ))
        };
        return (None, vec![diagnostic]);
    }
    let declaration = match kind {
        DeclKind::Tenant => {
            tenant(&ctx, &root.node, document).map(|tenant| Declaration::Tenant(Box::new(tenant)))
        }
        DeclKind::Cell => {
            cell(&ctx, &root.node, document).map(|cell| Declaration::Cell(Box::new(cell)))
        }
    };
    if let Some(declaration) = &declaration {
        let name = match declaration {
            Declaration::Tenant(tenant) => &tenant.name,
            Declaration::Cell(cell) => &cell.name,
        };
        check_file_name(&ctx, sources, document, name);
    }
    (declaration, ctx.take())
}

fn check_file_name(ctx: &Ctx, sources: &SourceMap, document: &Document, name: &Spanned<String>) {
    let path = sources.path(document.file);
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let stem = file_name
        .rsplit_once('.')
        .map_or(file_name, |(stem, _)| stem);
    if stem != name.value {
        ctx.push(
            Diagnostic::error(
                Code::FileNameMismatch,
                name.span,
                format!("`{}` is declared in `{file_name}`", name.value),
            )
            .with_label(format!("the file name says `{stem}`"))
            .with_help(format!(
                "rename the file to `{}.{}` or the declaration to `{stem}`",
                name.value,
                file_name.rsplit_once('.').map_or("kdl", |(_, ext)| ext)
            )),
        );
    }
}

/// Checks a name with a rule from [`names`], reporting `name-invalid`.
fn check_name(
    ctx: &Ctx,
    name: &Spanned<String>,
    what: &str,
    rule: fn(&str) -> Result<(), String>,
) -> bool {
    match rule(&name.value) {
        Ok(()) => true,
        Err(reason) => {
            ctx.push(
                Diagnostic::error(
                    Code::NameInvalid,
                    name.span,
                    format!("{what} `{}` is not a valid name", name.value),
                )
                .with_label(reason)
                .with_help(suggest_name(&name.value)),
            );
            false
        }
    }
}

fn suggest_name(name: &str) -> String {
    let mut fixed: String = name
        .to_lowercase()
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' })
        .collect();
    fixed = fixed.trim_matches('-').chars().take(63).collect();
    if fixed.is_empty() || fixed == name {
        "use lowercase letters, digits and `-`, at most 63 characters".to_string()
    } else {
        format!("use lowercase letters, digits and `-`, such as `{fixed}`")
    }
}

/// Keeps the parts that were read; marks the declaration incomplete if any was not.
fn keep_read<T>(parts: Vec<Option<T>>, complete: &mut bool) -> Vec<T> {
    let total = parts.len();
    let read: Vec<T> = parts.into_iter().flatten().collect();
    if read.len() != total {
        *complete = false;
    }
    read
}

/// Checks a cloud name against a rule, reporting `name-invalid` with the expected form.
fn check_text(
    ctx: &Ctx,
    text: &Spanned<String>,
    what: &str,
    rule: fn(&str) -> bool,
    expected: &str,
) -> bool {
    let help = format!("write the {what} as the cloud console shows it");
    check_text_with_help(ctx, text, what, rule, expected, &help)
}

/// Checks a name against a rule, reporting `name-invalid` with the expected form and `help`.
fn check_text_with_help(
    ctx: &Ctx,
    text: &Spanned<String>,
    what: &str,
    rule: fn(&str) -> bool,
    expected: &str,
    help: &str,
) -> bool {
    if rule(&text.value) {
        return true;
    }
    ctx.push(
        Diagnostic::error(
            Code::NameInvalid,
            text.span,
            format!("{what} `{}` is not valid", text.value),
        )
        .with_label(format!("expected {expected}"))
        .with_help(help),
    );
    false
}

/// A number written with ASCII digits only, without sign or leading zero.
fn plain_number(text: &str) -> Option<u32> {
    let digits_only = !text.is_empty() && text.chars().all(|ch| ch.is_ascii_digit());
    let leading_zero = text.len() > 1 && text.starts_with('0');
    if digits_only && !leading_zero {
        text.parse().ok()
    } else {
        None
    }
}

/// Reports a selector that is not `key=value` as `name-invalid`; true when it is one.
fn check_selector(ctx: &Ctx, selector: &Spanned<String>, pods: &str, example: &str) -> bool {
    let valid = selector.value.split_once('=').is_some_and(|(key, value)| {
        names::qualified_name(key).is_ok() && names::label_value(value).is_ok()
    });
    if !valid {
        ctx.push(
            Diagnostic::error(
                Code::NameInvalid,
                selector.span,
                format!("`{}` is not a label selector", selector.value),
            )
            .with_label("expected `key=value`")
            .with_help(format!("write the {pods} label, such as `{example}`")),
        );
    }
    valid
}

fn check_label(
    ctx: &Ctx,
    text: &Spanned<String>,
    rule: fn(&str) -> Result<(), String>,
    what: &str,
) -> bool {
    match rule(&text.value) {
        Ok(()) => true,
        Err(reason) => {
            ctx.push(
                Diagnostic::error(
                    Code::NameInvalid,
                    text.span,
                    format!("{what} `{}` is not valid", text.value),
                )
                .with_label(reason)
                .with_help("label keys are `[prefix/]name` and values at most 63 letters, digits, `-`, `_` or `.`"),
            );
            false
        }
    }
}

/// The span a later stage uses when a whole declaration is meant.
pub fn declaration_span(declaration: &Declaration) -> Span {
    match declaration {
        Declaration::Tenant(tenant) => tenant.name.span,
        Declaration::Cell(cell) => cell.name.span,
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Fleet;
    use crate::testing::support::fleet;

    /// The declaration files under `tests/twins/<syntax>/`, as `(path, text)`.
    fn twin_files(syntax: &str) -> Vec<(String, String)> {
        crate::testing::declaration_files(&format!("tests/twins/{syntax}"))
    }

    /// The issue-7 fields of a fleet without their spans, one line per value.
    fn kueue_fields(fleet: &Fleet) -> Vec<String> {
        let mut lines = Vec::new();
        for cell in &fleet.cells {
            let name = &cell.name.value;
            lines.push(format!(
                "{name} oversubscribe {:?}",
                cell.oversubscribe.as_ref().map(|r| r.value)
            ));
            for org in &cell.orgs {
                let weight = org.weight.as_ref().map(|w| w.value);
                let tenants = org.tenants.as_ref().map(|tenants| {
                    tenants
                        .iter()
                        .map(|tenant| tenant.value.as_str())
                        .collect::<Vec<_>>()
                });
                lines.push(format!(
                    "{name} org {} {weight:?} {tenants:?}",
                    org.name.value
                ));
            }
            for pool in &cell.pools {
                for level in pool.topology.iter().flat_map(|t| &t.levels) {
                    lines.push(format!(
                        "{name} {} level {} {}",
                        pool.name.value, level.label.value, level.nodes.value
                    ));
                }
            }
        }
        for tenant in &fleet.tenants {
            let name = &tenant.name.value;
            for workload in &tenant.workloads {
                let share = workload.share.as_ref().map(|s| s.value);
                lines.push(format!("{name} {:?} share {share:?}", workload.kind.value));
            }
            for quota in &tenant.quotas {
                let cell = &quota.cell.value;
                let weight = quota.weight.as_ref().map(|w| w.value);
                lines.push(format!("{name} {cell} weight {weight:?}"));
                for split in &quota.splits {
                    lines.push(format!(
                        "{name} {cell} split {:?} {} {} {}",
                        split.workload.value, split.cpu.value, split.memory.value, split.pods.value
                    ));
                }
                for reservation in &quota.pools {
                    lines.push(format!(
                        "{name} {cell} {} lend {:?} gang {:?} within {:?}",
                        reservation.pool.value,
                        reservation.lend.as_ref().map(|l| l.value),
                        reservation.gang.as_ref().map(|g| g.value),
                        reservation.within.as_ref().map(|w| &w.value)
                    ));
                }
            }
            for reservation in &tenant.fleet {
                for share in &reservation.cells {
                    lines.push(format!(
                        "{name} fleet {} {} {} {:?} {:?}",
                        reservation.gpu.value,
                        reservation.gpus.value,
                        share.cell.value,
                        share.gpus.as_ref().map(|g| g.value),
                        share.weight.as_ref().map(|w| w.value)
                    ));
                }
            }
        }
        lines
    }

    /// Issue 18 item 1: a value outside its closed set, or one that cannot be read, leaves its
    /// part out and its declaration incomplete; the value's own finding is the only one, since
    /// no check runs on a value nobody wrote.
    #[test]
    fn an_unreadable_value_is_the_only_finding_and_leaves_its_declaration_incomplete() {
        use crate::diag::Code;
        use crate::testing::support::{CELL, codes, tenant};
        // A cell whose only runtime class is for `hard` tenants on `train`.
        let cell = CELL.replacen(
            "    priority \"batch\" value=1000\n",
            "    priority \"batch\" value=1000\n    runtime-class \"kata\" handler=\"kata\" { trust \"hard\"; pools \"train\"; }\n",
            1,
        );
        let exception = "workload \"train\" service-account=\"trainer\" priority=\"batch\" {\n        exception \"rdma\" capabilities=\"IPC_LOCK\" reason=\"r\" approved-by=\"x\"\n    }";
        let hard = tenant("a", "hard", "pool \"train\" reserved=8").replace(
            "workload \"train\" service-account=\"trainer\" priority=\"batch\"",
            exception,
        );
        let two_workloads = tenant("a", "hard", "pool \"train\" reserved=8 workload=\"trian\"")
            .replace(
                "    workload \"train\"",
                "    workload \"infer\" service-account=\"server\" priority=\"batch\"\n    workload \"train\"",
            );
        let shared_pool = "    pool \"shared\" {\n        gpu \"L4\"\n        nodes 1 gpus-per-node=8\n        sharing \"time-slice\"\n        replicas 1\n        taint \"tenantc.io/pool\" \"shared\" effect=\"NoSchedule\"\n    }\n";
        let tenant_file = |text: &str| ("tenants/a.kdl".to_string(), text.to_string());
        let cell_file = |text: &str| ("cells/c1.kdl".to_string(), text.to_string());
        /// What is wrong, the files, the one finding, and whether the cell and the tenant stay
        /// complete.
        type Case<'a> = (&'a str, Vec<(String, String)>, Code, bool, bool);
        let cases: Vec<Case<'_>> = vec![
            (
                "trust \"hadr\"",
                vec![
                    cell_file(&cell),
                    tenant_file(&hard.replace("trust \"hard\"", "trust \"hadr\"")),
                ],
                Code::ValueUnknown,
                true,
                false,
            ),
            (
                "a reservation's workload=\"trian\"",
                vec![cell_file(&cell), tenant_file(&two_workloads)],
                Code::ValueUnknown,
                true,
                false,
            ),
            (
                "a taint's effect=\"NoSchedul\"",
                vec![
                    cell_file(&cell.replace("effect=\"NoSchedule\"", "effect=\"NoSchedul\"")),
                    tenant_file(&hard),
                ],
                Code::ValueUnknown,
                false,
                true,
            ),
            (
                "a priority's preempt=\"yes\"",
                vec![
                    cell_file(&cell.replace("value=1000\n", "value=1000 preempt=\"yes\"\n")),
                    tenant_file(&hard),
                ],
                Code::TypeMismatch,
                false,
                true,
            ),
            (
                "kubernetes \"1.99\"",
                vec![
                    cell_file(&cell.replace("\"1.33\"", "\"1.99\"")),
                    tenant_file(&hard),
                ],
                Code::KubernetesVersionUnsupported,
                false,
                true,
            ),
            (
                "driver \"57x\"",
                vec![
                    cell_file(&cell.replace("driver \"570\"", "driver \"57x\"")),
                    tenant_file(&hard),
                ],
                Code::ValueUnknown,
                false,
                true,
            ),
            (
                "a runtime class's trust that is not a list",
                vec![
                    cell_file(&cell.replace("trust \"hard\"; pools", "trust { hard 1; }; pools")),
                    tenant_file(&hard),
                ],
                Code::TypeMismatch,
                false,
                true,
            ),
            (
                "a time-slice pool's replicas 1",
                vec![
                    cell_file(&cell.replacen(
                        "    pool \"train\" {",
                        &format!("{shared_pool}    pool \"train\" {{"),
                        1,
                    )),
                    tenant_file(&hard),
                ],
                Code::NumberOutOfRange,
                false,
                true,
            ),
            (
                "forbidden-label-keys that is not a list",
                vec![
                    cell_file(&cell.replacen(
                        "    driver \"570\"\n",
                        "    driver \"570\"\n    forbidden-label-keys { a 1; }\n",
                        1,
                    )),
                    tenant_file(&hard),
                ],
                Code::TypeMismatch,
                false,
                true,
            ),
            (
                "container-defaults cpu=\"lots\"",
                vec![
                    cell_file(&cell),
                    tenant_file(&hard.replace(
                        "    groups admin",
                        "    container-defaults cpu=\"lots\"\n    groups admin",
                    )),
                ],
                Code::QuantityInvalid,
                true,
                false,
            ),
        ];
        for (what, files, code, cell_complete, tenant_complete) in cases {
            let files: Vec<(&str, &str)> = files
                .iter()
                .map(|(path, text)| (path.as_str(), text.as_str()))
                .collect();
            assert_eq!(codes(&files), [code], "{what}");
            let read = fleet(&files);
            assert_eq!(read.cells.len(), 1, "{what}: the cell is read");
            assert_eq!(read.tenants.len(), 1, "{what}: the tenant is read");
            assert_eq!(read.cells[0].complete, cell_complete, "{what}: cell");
            assert_eq!(read.tenants[0].complete, tenant_complete, "{what}: tenant");
        }
        // The value is left out, not replaced by a guess.
        let files = [
            (
                "cells/c1.kdl",
                cell.replace("\"1.33\"", "\"1.99\"")
                    .replace("driver \"570\"", "driver \"57x\""),
            ),
            (
                "tenants/a.kdl",
                hard.replace("trust \"hard\"", "trust \"hadr\""),
            ),
        ];
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (*path, text.as_str()))
            .collect();
        let read = fleet(&files);
        assert_eq!(read.tenants[0].trust, None);
        assert_eq!(read.cells[0].kubernetes, None);
        assert_eq!(read.cells[0].driver, None);
    }

    #[test]
    fn kdl_and_yaml_twins_read_the_kueue_fields_alike() {
        let read = |syntax: &str| {
            let files = twin_files(syntax);
            let files: Vec<(&str, &str)> = files
                .iter()
                .map(|(path, text)| (path.as_str(), text.as_str()))
                .collect();
            kueue_fields(&fleet(&files))
        };
        let from_kdl = read("kdl");
        assert_eq!(from_kdl, read("yaml"));
        // The twins exercise every field, so an unread field shows up as a missing line.
        for expected in [
            "oversubscribe Some(1.25)",
            "org acme Some(2) Some([\"acme-serving\"])",
            "org initech None Some([\"initech-notebooks\"])",
            "level cloud.example.com/rack 4",
            "Infer share Some(3)",
            "weight Some(2)",
            "split Infer 192 1536Gi 800",
            "lend Some(8)",
            "gang Some(16) within Some(\"cloud.example.com/rack\")",
            "fleet H100-80GB-SXM 16 us-east-1a Some(16) None",
        ] {
            assert!(
                from_kdl.iter().any(|line| line.contains(expected)),
                "{expected} not in {from_kdl:#?}"
            );
        }
    }
}
