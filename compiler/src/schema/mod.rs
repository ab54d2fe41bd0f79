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

pub mod reader;

use reader::{Ctx, Obj, boolean, choice, integer, number, quantity, string};

use crate::diag::{Code, Diagnostic};
use crate::layout::DeclKind;
use crate::model::{
    AwsIdentity, AwsMode, CeilingSplit, Cell, Cidr, CloudIdentity, ContainerDefaults, Dns,
    Endpoint, FleetCellShare, FleetReservation, GcpIdentity, GitOps, GitOpsController,
    GpuModelDecl, Groups, KeylessSigner, Metrics, MigLayout, MigProfileDecl, MigTableDecl,
    ModelWeights, OrgDecl, PodSecurityException, Pool, PoolQuota, Priority, Quota,
    RuntimeClassDecl, SharedBaseGrant, Sharing, Signer, Spanned, Storage, StorageQuota, Taint,
    Tenant, Topology, TopologyLevel, Trust, Workload, WorkloadKind,
};
use crate::names;
use crate::parse::{Document, Node};
use crate::source::{SourceMap, Span};

/// The Kubernetes minor versions tenantc generates for (1.30 brought ValidatingAdmissionPolicy
/// v1, which later stages emit).
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

fn tenant(ctx: &Ctx, node: &Node, document: &Document) -> Option<Tenant> {
    let mut obj = Obj::new(ctx, node, "tenant")?;
    let name = obj.req_arg_str(0, "name", "tenant \"<name>\" { … }");
    let org = obj.req_str("org", "org \"<org>\"");
    let team = obj.req_str("team", "team \"<team>\"");
    let trust = match obj.field("trust") {
        Some(node) => choice(ctx, node, "trust", TRUST),
        None => {
            obj.missing("trust", "trust", "trust \"hard\"");
            None
        }
    };
    let groups = match obj.field("groups") {
        Some(node) => groups(ctx, node),
        None => {
            obj.missing("groups", "groups", "groups admin=\"<group>\"");
            None
        }
    };
    let container_defaults_node = obj.field("container-defaults");
    let container_defaults = container_defaults_node.and_then(|node| container_defaults(ctx, node));
    let quotas: Vec<Option<Quota>> = obj
        .items("quota", "quotas")
        .into_iter()
        .map(|node| quota(ctx, node))
        .collect();
    let quota_parts_missing = quotas.iter().flatten().any(|quota| !quota.complete);
    let workload_nodes = obj.items("workload", "workloads");
    if workload_nodes.is_empty() {
        obj.missing(
            "workload",
            "workloads",
            "workload \"train\" service-account=\"trainer\"",
        );
    }
    let workloads: Vec<Option<Workload>> = workload_nodes
        .into_iter()
        .map(|node| workload(ctx, node))
        .collect();
    let registries: Vec<Option<Spanned<String>>> = obj
        .items("registry", "registries")
        .into_iter()
        .map(|node| string(ctx, node, "registry"))
        .collect();
    let models: Vec<Option<ModelWeights>> = obj
        .items("model", "models")
        .into_iter()
        .map(|node| model_weights(ctx, node))
        .collect();
    let shared_bases: Vec<Option<Spanned<String>>> = obj
        .items("shared-base", "shared-bases")
        .into_iter()
        .map(|node| string(ctx, node, "shared-base"))
        .collect();
    let fleet: Vec<Option<FleetReservation>> = obj
        .items("fleet", "fleet")
        .into_iter()
        .map(|node| fleet_reservation(ctx, node))
        .collect();
    obj.finish();

    // From here on, a part that could not be read is left out (its error is reported) and the
    // tenant is marked incomplete, so validation still checks everything else.
    let name = name?;
    let mut complete = true;
    check_name(ctx, &name, "tenant", names::dns_label);
    for (field, what) in [(&org, "org"), (&team, "team")] {
        if let Some(field) = field {
            check_name(ctx, field, what, names::dns_label);
        }
    }
    let registries: Vec<Spanned<String>> = keep_read(registries, &mut complete)
        .into_iter()
        .filter(|registry| check_registry(ctx, registry))
        .collect();
    let placeholder = |complete: &mut bool| {
        *complete = false;
        Spanned::new(String::new(), name.span)
    };
    let org = org.unwrap_or_else(|| placeholder(&mut complete));
    let team = team.unwrap_or_else(|| placeholder(&mut complete));
    // An unreadable trust class is left out, never guessed: the checks of a class skip it.
    if trust.is_none() {
        complete = false;
    }
    // Unreadable container defaults are not replaced by the defaults of absent ones.
    if container_defaults_node.is_some() && container_defaults.is_none() {
        complete = false;
    }
    let container_defaults = container_defaults.unwrap_or_default();
    let groups = groups.unwrap_or_else(|| {
        complete = false;
        Groups::default()
    });
    let quotas = keep_read(quotas, &mut complete);
    let workloads = keep_read(workloads, &mut complete);
    let models = keep_read(models, &mut complete);
    let shared_bases = keep_read(shared_bases, &mut complete);
    let fleet = keep_read(fleet, &mut complete);
    if quota_parts_missing {
        complete = false;
    }
    Some(Tenant {
        file: document.file,
        name,
        org,
        team,
        trust,
        groups,
        container_defaults,
        quotas,
        workloads,
        registries,
        models,
        shared_bases,
        fleet,
        complete,
    })
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

fn check_registry(ctx: &Ctx, registry: &Spanned<String>) -> bool {
    let text = &registry.value;
    let host = text.split('/').next().unwrap_or("");
    let problem = if text.contains("://") {
        Some("write the registry without a scheme")
    } else if text.contains('@')
        || text
            .rsplit('/')
            .next()
            .is_some_and(|last| last.contains(':') && text.contains('/'))
    {
        Some("a registry is a host and path prefix, without a tag or digest")
    } else if text
        .chars()
        .any(|ch| !(ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-' | '/' | ':')))
        || text.split('/').skip(1).any(|part| part.contains(':'))
    {
        // A comma would split the admission params' registry list into two entries, one of
        // them another tenant's registry that the ownership check never saw.
        Some("only letters, digits, `.`, `_`, `-`, `/` and a `:port` after the host")
    } else if host.is_empty() || !host.contains('.') && !host.contains(':') && host != "localhost" {
        Some("the first part must be a registry host such as `registry.example.com`")
    } else if text.ends_with('/') || text.chars().any(char::is_whitespace) {
        Some("no trailing `/` and no spaces")
    } else {
        None
    };
    match problem {
        None => true,
        Some(reason) => {
            ctx.push(
                Diagnostic::error(
                    Code::NameInvalid,
                    registry.span,
                    format!("registry `{text}` is not a registry prefix"),
                )
                .with_label(reason)
                .with_help("write the registry host and repository prefix, such as `registry.acme.internal/research`"),
            );
            false
        }
    }
}

fn groups(ctx: &Ctx, node: &Node) -> Option<Groups> {
    let mut obj = Obj::new(ctx, node, "groups")?;
    let before = ctx.count();
    let groups = Groups {
        admin: obj.opt_str("admin"),
        member: obj.opt_str("member"),
        viewer: obj.opt_str("viewer"),
    };
    let span = obj.span;
    // A group that was written but refused (a forbidden character, a wrong type) is reported
    // where it is; "names no group" would only repeat it.
    let mut valid = ctx.count() == before;
    obj.finish();
    for group in [&groups.admin, &groups.member, &groups.viewer]
        .into_iter()
        .flatten()
    {
        valid &= check_group_name(ctx, group);
    }
    if !valid {
        return None;
    }
    if groups.admin.is_none() && groups.member.is_none() && groups.viewer.is_none() {
        ctx.push(
            Diagnostic::error(Code::FieldMissing, span, "groups names no group")
                .with_label("at least one of `admin`, `member` or `viewer` is required")
                .with_help("add `admin=\"<group>\"`"),
        );
        return None;
    }
    Some(groups)
}

/// The most characters a group name may have.
pub const MAX_GROUP_NAME_CHARS: usize = 256;

/// Why a string is not a group name, or `None` when it is one.
///
/// A group name is 1 to 256 characters without control characters (C0, DEL, C1); it neither
/// starts nor ends with whitespace, and its only whitespace is the space U+0020 between words.
/// Whether a valid name is also a reserved one (`system:…`, wildcards) is checked later, against
/// the cells the tenant runs in.
pub fn group_name_problem(name: &str) -> Option<&'static str> {
    let is_space = |ch: char| ch.is_whitespace() || ch == '\u{feff}';
    if name.chars().all(is_space) {
        return Some("a group name must not be empty or blank");
    }
    if name.chars().count() > MAX_GROUP_NAME_CHARS {
        return Some("a group name has at most 256 characters");
    }
    if name.chars().any(char::is_control) {
        return Some("a group name must not contain control characters");
    }
    if name.starts_with(is_space) || name.ends_with(is_space) {
        return Some("a group name must not start or end with whitespace");
    }
    if name.chars().any(|ch| is_space(ch) && ch != ' ') {
        return Some("the only whitespace a group name may hold is the space between words");
    }
    None
}

/// Reports a string that is not a group name as `name-invalid`; true when it is one.
fn check_group_name(ctx: &Ctx, group: &Spanned<String>) -> bool {
    let Some(problem) = group_name_problem(&group.value) else {
        return true;
    };
    ctx.push(
        Diagnostic::error(Code::NameInvalid, group.span, "group name is not valid")
            .with_label(problem)
            .with_help("write the group name exactly as the identity provider sends it, without surrounding spaces"),
    );
    false
}

fn container_defaults(ctx: &Ctx, node: &Node) -> Option<ContainerDefaults> {
    let mut obj = Obj::new(ctx, node, "container-defaults")?;
    let before = ctx.count();
    let defaults = ContainerDefaults {
        cpu: obj.opt_quantity("cpu"),
        memory: obj.opt_quantity("memory"),
    };
    // A default that was written but refused leaves the defaults out.
    let read = ctx.count() == before;
    obj.finish();
    read.then_some(defaults)
}

fn quota(ctx: &Ctx, node: &Node) -> Option<Quota> {
    let mut obj = Obj::new(ctx, node, "quota")?;
    let cell = obj.req_str("cell", "quota cell=\"<cell>\" { … }");
    let cpu = obj.req_quantity("cpu", "cpu=\"64\"");
    let memory = obj.req_quantity("memory", "memory=\"512Gi\"");
    let pods = obj.req_int("pods", 0..=MAX_PODS, "pods=200");
    let pools: Vec<Option<PoolQuota>> = obj
        .items("pool", "pools")
        .into_iter()
        .map(|node| pool_quota(ctx, node))
        .collect();
    let weight = obj.opt_int("weight", 1..=MAX_WEIGHT);
    let storage_nodes = [
        obj.field("ephemeral-storage"),
        obj.field("storage"),
        obj.field("persistent-volume-claims"),
        obj.field("load-balancers"),
        obj.field("node-ports"),
    ];
    let [
        ephemeral_storage,
        storage,
        claims,
        load_balancers,
        node_ports,
    ] = storage_nodes;
    let storage = StorageQuota {
        ephemeral_storage: ephemeral_storage
            .and_then(|node| reader::quantity(ctx, node, "ephemeral-storage")),
        storage: storage.and_then(|node| reader::quantity(ctx, node, "storage")),
        persistent_volume_claims: claims
            .and_then(|node| integer(ctx, node, "persistent-volume-claims", 0..=MAX_OBJECTS)),
        load_balancers: load_balancers
            .and_then(|node| integer(ctx, node, "load-balancers", 0..=MAX_OBJECTS)),
        node_ports: node_ports.and_then(|node| integer(ctx, node, "node-ports", 0..=MAX_OBJECTS)),
    };
    // An unreadable storage ceiling is not replaced by the 0 of an absent one.
    let storage_complete = storage_nodes.iter().flatten().count()
        == [
            storage.ephemeral_storage.is_some(),
            storage.storage.is_some(),
            storage.persistent_volume_claims.is_some(),
            storage.load_balancers.is_some(),
            storage.node_ports.is_some(),
        ]
        .iter()
        .filter(|read| **read)
        .count();
    let splits: Vec<Option<CeilingSplit>> = obj
        .items("split", "splits")
        .into_iter()
        .map(|node| ceiling_split(ctx, node))
        .collect();
    let span = obj.span;
    obj.finish();
    // An unreadable ceiling is reported and replaced by zero, so the quota's reservations are
    // still checked in this run; the quota is marked incomplete and nothing is emitted. An
    // unreadable split marks it incomplete too, so the splits that were read are not reported
    // as not adding up.
    let complete = cpu.is_some()
        && memory.is_some()
        && pods.is_some()
        && storage_complete
        && pools.iter().all(Option::is_some)
        && splits.iter().all(Option::is_some);
    let zero = Spanned::new(crate::quantity::Quantity::from_int(0), span);
    Some(Quota {
        span,
        cell: cell?,
        cpu: cpu.unwrap_or_else(|| zero.clone()),
        memory: memory.unwrap_or(zero),
        pods: pods.unwrap_or(Spanned::new(0, span)),
        complete,
        pools: pools.into_iter().flatten().collect(),
        weight,
        splits: splits.into_iter().flatten().collect(),
        storage,
    })
}

/// The largest device count a quota or pool may declare.
const MAX_DEVICES: i64 = 1_000_000;
/// The largest Kueue fair-sharing weight of a ClusterQueue or cohort, and of a fleet cell.
const MAX_WEIGHT: i64 = 1_000_000;
/// The largest pod count of a quota or a split.
const MAX_PODS: i64 = 1_000_000;
/// The largest count of claims, LoadBalancer Services or node ports a quota may declare.
const MAX_OBJECTS: i64 = 1_000_000;

fn ceiling_split(ctx: &Ctx, node: &Node) -> Option<CeilingSplit> {
    let mut obj = Obj::new(ctx, node, "split")?;
    let workload = match obj.arg(0, "workload") {
        Some(node) => choice(ctx, node, "workload", WORKLOAD),
        None => {
            obj.missing_arg(
                "workload",
                "split \"train\" cpu=\"48\" memory=\"384Gi\" pods=150",
            );
            None
        }
    };
    let cpu = obj.req_quantity("cpu", "cpu=\"48\"");
    let memory = obj.req_quantity("memory", "memory=\"384Gi\"");
    let pods = obj.req_int("pods", 0..=MAX_PODS, "pods=150");
    let span = obj.span;
    obj.finish();
    Some(CeilingSplit {
        span,
        workload: workload?,
        cpu: cpu?,
        memory: memory?,
        pods: pods?,
    })
}

fn fleet_reservation(ctx: &Ctx, node: &Node) -> Option<FleetReservation> {
    let mut obj = Obj::new(ctx, node, "fleet")?;
    let gpu = obj.req_str("gpu", "gpu=\"H100-80GB-SXM\"");
    let gpus = obj.req_int("gpus", 1..=MAX_DEVICES, "gpus=128");
    let cell_nodes = obj.items("cell", "cells");
    if cell_nodes.is_empty() {
        obj.missing("cell", "cells", "cell \"<cell>\" weight=1");
    }
    let cells: Vec<Option<FleetCellShare>> = cell_nodes
        .into_iter()
        .map(|node| fleet_cell(ctx, node))
        .collect();
    let span = obj.span;
    obj.finish();
    Some(FleetReservation {
        span,
        gpu: gpu?,
        gpus: gpus?,
        cells: cells.into_iter().collect::<Option<_>>()?,
    })
}

fn fleet_cell(ctx: &Ctx, node: &Node) -> Option<FleetCellShare> {
    let mut obj = Obj::new(ctx, node, "fleet cell")?;
    let cell = obj.req_arg_str(0, "name", "cell \"<cell>\" gpus=64");
    let gpus_node = obj.field("gpus");
    let weight_node = obj.field("weight");
    let gpus = gpus_node.and_then(|node| integer(ctx, node, "gpus", 0..=MAX_DEVICES));
    let weight = weight_node.and_then(|node| integer(ctx, node, "weight", 1..=MAX_WEIGHT));
    let span = obj.span;
    if gpus_node.is_none() && weight_node.is_none() {
        // Each is optional alone, but one of the two is required.
        ctx.push(
            Diagnostic::error(
                Code::FieldMissing,
                span,
                "fleet cell has neither `gpus` nor `weight`",
            )
            .with_label("a fixed part or a weight is required here")
            .with_help(match obj.format() {
                crate::parse::Format::Kdl => {
                    "add `gpus=<n>` for a fixed part, or `weight=<n>` for a share of the rest"
                }
                crate::parse::Format::Yaml => {
                    "add `gpus: <n>` for a fixed part, or `weight: <n>` for a share of the rest"
                }
            }),
        );
    }
    obj.finish();
    let cell = cell?;
    // Both given is a contradiction between fields, reported by `validate::kueue`.
    let read =
        (gpus_node.is_none() || gpus.is_some()) && (weight_node.is_none() || weight.is_some());
    (read && (gpus.is_some() || weight.is_some())).then_some(FleetCellShare {
        span,
        cell,
        gpus,
        weight,
    })
}

fn pool_quota(ctx: &Ctx, node: &Node) -> Option<PoolQuota> {
    let mut obj = Obj::new(ctx, node, "pool quota")?;
    let pool = obj.req_arg_str(0, "name", "pool \"<pool>\" reserved=8");
    let profile = obj.opt_str("profile");
    let reserved = obj.req_int("reserved", 0..=MAX_DEVICES, "reserved=8");
    let burst = obj.opt_int("burst", 0..=MAX_DEVICES);
    let workload_node = obj.field("workload");
    let workload = workload_node.and_then(|node| choice(ctx, node, "workload", WORKLOAD));
    let lend_node = obj.field("lend");
    let lend = lend_node.and_then(|node| integer(ctx, node, "lend", 0..=MAX_DEVICES));
    let gang_node = obj.field("gang");
    let gang = gang_node.and_then(|node| integer(ctx, node, "gang", 1..=MAX_DEVICES));
    let within_node = obj.field("within");
    let within = within_node.and_then(|node| string(ctx, node, "within"));
    let cpu_node = obj.field("cpu");
    let cpu = cpu_node.and_then(|node| quantity(ctx, node, "cpu"));
    let memory_node = obj.field("memory");
    let memory = memory_node.and_then(|node| quantity(ctx, node, "memory"));
    let pods_node = obj.field("pods");
    let pods = pods_node.and_then(|node| integer(ctx, node, "pods", 0..=MAX_PODS));
    let span = obj.span;
    obj.finish();
    // A Kueue field that was written but refused leaves the reservation out (its error is
    // reported), so no check runs on a reservation without the limit its author meant.
    let within_ok = match &within {
        Some(within) => check_label(ctx, within, names::qualified_name, "topology level"),
        None => within_node.is_none(),
    };
    // Nor on one whose workload was refused: it would be read as naming none.
    let kueue_read = (workload_node.is_none() || workload.is_some())
        && (lend_node.is_none() || lend.is_some())
        && (gang_node.is_none() || gang.is_some())
        && within_ok
        && (cpu_node.is_none() || cpu.is_some())
        && (memory_node.is_none() || memory.is_some())
        && (pods_node.is_none() || pods.is_some());
    let reservation = PoolQuota {
        span,
        pool: pool?,
        profile,
        reserved: reserved?,
        burst,
        workload,
        lend,
        gang,
        within,
        cpu,
        memory,
        pods,
    };
    kueue_read.then_some(reservation)
}

fn workload(ctx: &Ctx, node: &Node) -> Option<Workload> {
    let mut obj = Obj::new(ctx, node, "workload")?;
    let kind = match obj.arg(0, "kind") {
        Some(node) => choice(ctx, node, "kind", WORKLOAD),
        None => {
            obj.missing_arg("kind", "workload \"train\" service-account=\"trainer\"");
            None
        }
    };
    let service_account = obj.req_str("service-account", "service-account=\"<name>\"");
    let priority = obj.opt_str("priority");
    let share_node = obj.field("share");
    let share = share_node.and_then(|node| integer(ctx, node, "share", 1..=MAX_SHARE));
    let exceptions: Vec<Option<PodSecurityException>> = obj
        .items("exception", "exceptions")
        .into_iter()
        .map(|node| pod_security_exception(ctx, node))
        .collect();
    let span = obj.span;
    obj.finish();
    let service_account = service_account?;
    if share_node.is_some() && share.is_none() {
        // Left out, rather than read as the default share, so no split is computed from it.
        return None;
    }
    // An exception that could not be read leaves the workload out: its namespace is then never
    // emitted with less (or more) than its author meant.
    let exceptions: Vec<PodSecurityException> = exceptions.into_iter().collect::<Option<_>>()?;
    // An invalid name is reported; the workload stays, so references to it still resolve.
    check_name(
        ctx,
        &service_account,
        "service account",
        names::dns_subdomain,
    );
    Some(Workload {
        span,
        kind: kind?,
        service_account,
        priority,
        share,
        exceptions,
    })
}

/// Linux capabilities a Pod Security exception may add, with why each is needed. Any other
/// capability lets a container reach the node or other tenants' traffic, so no review can
/// grant it to a tenant namespace.
pub const EXCEPTABLE_CAPABILITIES: &[(&str, &str)] = &[(
    "IPC_LOCK",
    "pins memory for RDMA registration (multi-node training over InfiniBand or RoCE)",
)];

fn pod_security_exception(ctx: &Ctx, node: &Node) -> Option<PodSecurityException> {
    const EXAMPLE: &str =
        "exception \"rdma\" capabilities=\"IPC_LOCK\" reason=\"…\" approved-by=\"…\"";
    let mut obj = Obj::new(ctx, node, "exception")?;
    let name = obj.req_arg_str(0, "name", EXAMPLE);
    // One capability as a string, or several as a list.
    let capability_nodes: Option<Vec<&Node>> = match obj.field("capabilities") {
        Some(field) => match &field.value {
            crate::parse::Value::Seq(items) => Some(items.iter().collect()),
            crate::parse::Value::Map(map)
                if map.format == crate::parse::Format::Kdl && map.entries.is_empty() =>
            {
                Some(map.args.iter().collect())
            }
            _ => Some(vec![field]),
        },
        None => {
            obj.missing("capabilities", "capabilities", "capabilities=\"IPC_LOCK\"");
            None
        }
    };
    let reason = obj.req_str("reason", "reason=\"<why the workload needs it>\"");
    let approved_by = obj.req_str("approved-by", "approved-by=\"<reviewer>\"");
    let span = obj.span;
    obj.finish();
    let capabilities: Vec<Option<Spanned<String>>> = capability_nodes?
        .into_iter()
        .map(|node| {
            let capability = string(ctx, node, "capabilities")?;
            if EXCEPTABLE_CAPABILITIES
                .iter()
                .any(|(name, _)| *name == capability.value)
            {
                return Some(capability);
            }
            let allowed: Vec<String> = EXCEPTABLE_CAPABILITIES
                .iter()
                .map(|(name, _)| format!("`{name}`"))
                .collect();
            ctx.push(
                Diagnostic::error(
                    Code::ValueUnknown,
                    capability.span,
                    format!(
                        "capability `{}` cannot be granted by a Pod Security exception",
                        capability.value
                    ),
                )
                .with_label(format!("exceptions may add only {}", allowed.join(", ")))
                .with_help(
                    "run what needs it as a platform component; other capabilities let a \
                     container reach the node or other tenants' traffic",
                ),
            );
            None
        })
        .collect();
    let capabilities: Vec<Spanned<String>> = capabilities.into_iter().collect::<Option<_>>()?;
    let name = name?;
    check_name(ctx, &name, "exception", names::dns_label);
    if capabilities.is_empty() {
        ctx.push(
            Diagnostic::error(Code::FieldMissing, span, "exception adds no capability")
                .with_label("an exception must name what it grants")
                .with_help("list the capabilities, such as `capabilities=\"IPC_LOCK\"`"),
        );
        return None;
    }
    Some(PodSecurityException {
        span,
        name,
        capabilities,
        reason: reason?,
        approved_by: approved_by?,
    })
}

/// The largest share of a workload namespace in its tenant's ceilings.
const MAX_SHARE: i64 = 1_000;

fn model_weights(ctx: &Ctx, node: &Node) -> Option<ModelWeights> {
    let mut obj = Obj::new(ctx, node, "model")?;
    let name = obj.req_arg_str(0, "name", "model \"<name>\" version=\"…\" prefix=\"…\"");
    let version = obj.req_str("version", "version=\"<version>\"");
    let prefix = obj.req_str("prefix", "prefix=\"s3://bucket/path/\"");
    let key_nodes = obj.items("key", "keys");
    let keyless_node = obj.field("keyless");
    let span = obj.span;
    obj.finish();
    let signer = model_signer(ctx, &key_nodes, keyless_node)?;
    let prefix = prefix?;
    let bucket_ok = ["s3://", "gs://", "az://"]
        .iter()
        .filter_map(|scheme| prefix.value.strip_prefix(scheme))
        .any(|rest| {
            rest.split('/')
                .next()
                .is_some_and(|bucket| !bucket.is_empty())
        });
    let scheme_ok = bucket_ok;
    if !scheme_ok || !prefix.value.ends_with('/') {
        ctx.push(
            Diagnostic::error(
                Code::NameInvalid,
                prefix.span,
                format!("`{}` is not an object-storage prefix", prefix.value),
            )
            .with_label("expected `s3://`, `gs://` or `az://` and a trailing `/`")
            .with_help("write the bucket and path of the weights, ending in `/`"),
        );
        return None;
    }
    Some(ModelWeights {
        span,
        name: name?,
        version: version?,
        prefix,
        signer,
    })
}

/// Reads a model's signer: `key "<path>"` items, or one `keyless san=… issuer=… trust-root=…`.
/// Returns `Some(None)` when neither is declared (`weights` reports it), `None` when what is
/// declared could not be read.
fn model_signer(
    ctx: &Ctx,
    key_nodes: &[&Node],
    keyless_node: Option<&Node>,
) -> Option<Option<Signer>> {
    let keys: Vec<Option<Spanned<String>>> = key_nodes
        .iter()
        .map(|node| string(ctx, node, "key"))
        .collect();
    let keyless = keyless_node.map(|node| keyless_signer(ctx, node));
    match (keys.is_empty(), keyless) {
        (true, None) => Some(None),
        (true, Some(keyless)) => Some(Some(Signer::Keyless(keyless?))),
        (false, None) => {
            let keys: Option<Vec<Spanned<String>>> = keys.into_iter().collect();
            Some(Some(Signer::Keys(keys?)))
        }
        (false, Some(_)) => {
            let span = keyless_node.map(|node| node.span)?;
            ctx.push(
                Diagnostic::error(
                    Code::FieldDuplicate,
                    span,
                    "a model is signed either by keys or by a keyless identity, not both",
                )
                .with_label("second signer")
                .with_help(
                    "keep `key` for key-signed bundles or `keyless` for Fulcio certificates",
                ),
            );
            None
        }
    }
}

fn keyless_signer(ctx: &Ctx, node: &Node) -> Option<KeylessSigner> {
    let example = "keyless san=\"https://ci.example/…\" issuer=\"https://…\" trust-root=\"keys/<tenant>/trusted_root.json\"";
    let mut obj = Obj::new(ctx, node, "keyless")?;
    let san = obj.req_str("san", example);
    let issuer = obj.req_str("issuer", example);
    let trust_root = obj.req_str("trust-root", example);
    let span = obj.span;
    obj.finish();
    Some(KeylessSigner {
        span,
        san: san?,
        issuer: issuer?,
        trust_root: trust_root?,
    })
}

fn cell(ctx: &Ctx, node: &Node, document: &Document) -> Option<Cell> {
    let mut obj = Obj::new(ctx, node, "cell")?;
    let name = obj.req_arg_str(0, "name", "cell \"<name>\" { … }");
    let cloud = match obj.field("cloud") {
        Some(node) => cloud(ctx, node),
        None => {
            obj.missing("cloud", "cloud", "cloud \"aws\" region=\"us-east-1\"");
            None
        }
    };
    let kubernetes = match obj.field("kubernetes") {
        Some(node) => kubernetes_version(ctx, node),
        None => {
            obj.missing("kubernetes", "kubernetes", "kubernetes \"1.33\"");
            None
        }
    };
    let driver = match obj.field("driver") {
        Some(node) => driver(ctx, node),
        None => {
            obj.missing("driver", "driver", "driver \"570\"");
            None
        }
    };
    let dns_node = obj.field("dns");
    let dns = dns_node.and_then(|node| dns(ctx, node));
    let metrics_node = obj.field("metrics");
    let metrics = metrics_node.and_then(|node| metrics(ctx, node));
    let endpoints: Vec<Option<Endpoint>> = obj
        .items("endpoint", "endpoints")
        .into_iter()
        .map(|node| endpoint(ctx, node))
        .collect();
    let dra_device_classes: Vec<Option<Spanned<String>>> = obj
        .items("dra-device-class", "dra-device-classes")
        .into_iter()
        .map(|node| {
            let class = string(ctx, node, "dra-device-class")?;
            check_name(ctx, &class, "DRA device class", dra_device_class_name).then_some(class)
        })
        .collect();
    let gpu_operator_namespace = obj.field("gpu-operator").and_then(|node| {
        let mut inner = Obj::new(ctx, node, "gpu-operator")?;
        let namespace = inner.req_str("namespace", "gpu-operator namespace=\"gpu-operator\"");
        inner.finish();
        let namespace = namespace?;
        check_name(ctx, &namespace, "GPU Operator namespace", names::dns_label).then_some(namespace)
    });
    let gpu_models: Vec<Option<GpuModelDecl>> = obj
        .items("gpu-model", "gpu-models")
        .into_iter()
        .map(|node| gpu_model(ctx, node))
        .collect();
    let pools: Vec<Option<(Pool, bool)>> = obj
        .items("pool", "pools")
        .into_iter()
        .map(|node| pool(ctx, node))
        .collect();
    // A pool kept without a part that could not be read (a label, a taint, its owner or price)
    // leaves the cell incomplete.
    let pool_parts_read = pools.iter().flatten().all(|(_, read)| *read);
    let pools: Vec<Option<Pool>> = pools
        .into_iter()
        .map(|read| read.map(|(pool, _)| pool))
        .collect();
    let priorities: Vec<Option<Priority>> = obj
        .items("priority", "priorities")
        .into_iter()
        .map(|node| priority(ctx, node))
        .collect();
    let allow_groups: Vec<Option<Spanned<String>>> = obj
        .items("allow-group", "allow-groups")
        .into_iter()
        .map(|node| string(ctx, node, "allow-group").filter(|group| check_group_name(ctx, group)))
        .collect();
    let oversubscribe_node = obj.field("oversubscribe");
    let oversubscribe = oversubscribe_node.and_then(|node| {
        number(
            ctx,
            node,
            "oversubscribe",
            MIN_OVERSUBSCRIBE..=MAX_OVERSUBSCRIBE,
        )
    });
    let orgs: Vec<Option<OrgDecl>> = obj
        .items("org", "orgs")
        .into_iter()
        .map(|node| org_decl(ctx, node))
        .collect();
    let gitops_node = obj.field("gitops");
    let gitops = gitops_node.and_then(|node| gitops(ctx, node));
    let runtime_classes: Vec<Option<RuntimeClassDecl>> = obj
        .items("runtime-class", "runtime-classes")
        .into_iter()
        .map(|node| runtime_class(ctx, node))
        .collect();
    let forbidden_label_nodes = obj.values("forbidden-label-keys");
    let forbidden_label_keys_read = forbidden_label_nodes.is_some();
    let forbidden_label_keys: Vec<Option<Spanned<String>>> = forbidden_label_nodes
        .unwrap_or_default()
        .into_iter()
        .map(|node| {
            string(ctx, node, "forbidden-label-keys")
                .filter(|key| check_label(ctx, key, names::qualified_name, "label key"))
        })
        .collect();
    let storage_node = obj.field("storage");
    let storage = storage_node.and_then(|node| storage(ctx, node));
    obj.finish();
    // As for tenants: unreadable parts are left out and the cell is marked incomplete.
    let name = name?;
    if check_name(ctx, &name, "cell", names::dns_label)
        && GITOPS_FOLDERS.contains(&name.value.as_str())
    {
        ctx.push(
            Diagnostic::error(
                Code::NameInvalid,
                name.span,
                format!("cell name `{}` is reserved", name.value),
            )
            .with_label(format!(
                "`out/{}/` holds the GitOps objects of every cell",
                name.value
            ))
            .with_help("rename the cell; `argocd` and `flux` are fleet-wide folders of `out/`"),
        );
    }
    let mut complete = true;
    let (cloud, region) = cloud.unwrap_or_else(|| {
        complete = false;
        (
            Spanned::new(String::new(), name.span),
            Spanned::new(String::new(), name.span),
        )
    });
    // An unreadable version or driver branch is left out, never guessed: no check runs on it.
    if kubernetes.is_none() || driver.is_none() {
        complete = false;
    }
    let gpu_models_complete = gpu_models.iter().all(Option::is_some);
    let gpu_models = keep_read(gpu_models, &mut complete);
    let pools = keep_read(pools, &mut complete);
    if !pool_parts_read || !forbidden_label_keys_read {
        complete = false;
    }
    let priorities = keep_read(priorities, &mut complete);
    let allow_groups = keep_read(allow_groups, &mut complete);
    let orgs = keep_read(orgs, &mut complete);
    if gitops_node.is_some() && gitops.is_none() {
        // Never replaced by the defaults: the guard would then name an identity the platform
        // did not mean.
        complete = false;
    }
    if storage_node.is_some() && storage.is_none() {
        // An unreadable storage declaration emits no IAM rather than a guess at it.
        complete = false;
    }
    let endpoints = keep_read(endpoints, &mut complete);
    let dra_device_classes = keep_read(dra_device_classes, &mut complete);
    // Network declarations that could not be read are not replaced by defaults that would
    // open or close something their author did not mean.
    if dns_node.is_some() && dns.is_none() || metrics_node.is_some() && metrics.is_none() {
        complete = false;
    }
    let runtime_classes = keep_read(runtime_classes, &mut complete);
    let forbidden_label_keys = keep_read(forbidden_label_keys, &mut complete);
    if oversubscribe_node.is_some() && oversubscribe.is_none() {
        // An unreadable ratio is not replaced by the default: the cell's bursts are then not
        // checked against a ratio its author did not mean.
        complete = false;
    }
    Some(Cell {
        file: document.file,
        name,
        cloud,
        region,
        kubernetes,
        driver,
        dns: dns.unwrap_or(Dns {
            namespace: None,
            selector: None,
            node_local: None,
        }),
        metrics,
        endpoints,
        dra_device_classes,
        gpu_operator_namespace,
        allow_groups,
        gpu_models,
        gpu_models_complete,
        pools,
        priorities,
        oversubscribe,
        orgs,
        gitops,
        runtime_classes,
        forbidden_label_keys,
        storage,
        complete,
    })
}

const AWS_MODES: &[(&str, AwsMode)] = &[
    ("pod-identity", AwsMode::PodIdentity),
    ("irsa", AwsMode::Irsa),
];

/// Reads `storage { bucket "…"; aws …; }` or `gcp …` of a cell.
fn storage(ctx: &Ctx, node: &Node) -> Option<Storage> {
    let mut obj = Obj::new(ctx, node, "storage")?;
    let bucket_nodes = obj.items("bucket", "buckets");
    if bucket_nodes.is_empty() {
        obj.missing("bucket", "buckets", "bucket \"<bucket>\"");
    }
    let buckets: Vec<Option<Spanned<String>>> = bucket_nodes
        .into_iter()
        .map(|node| {
            let bucket = string(ctx, node, "bucket")?;
            check_text(
                ctx,
                &bucket,
                "bucket",
                crate::names::bucket_name_ok,
                "3 to 63 lowercase letters, digits, `.` and `-`, starting and ending with a letter or digit",
            )
            .then_some(bucket)
        })
        .collect();
    let grants: Vec<Option<SharedBaseGrant>> = obj
        .items("shared-base", "shared-bases")
        .into_iter()
        .map(|node| shared_base_grant(ctx, node))
        .collect();
    let aws_node = obj.field("aws");
    let gcp_node = obj.field("gcp");
    if aws_node.is_none() && gcp_node.is_none() {
        obj.missing(
            "aws",
            "aws",
            "aws account=\"123456789012\" identity=\"pod-identity\"",
        );
    }
    let span = obj.span;
    obj.finish();
    let aws = aws_node.and_then(|node| aws_identity(ctx, node));
    let gcp = gcp_node.and_then(|node| gcp_identity(ctx, node));
    let identity = match (aws, gcp) {
        (Some(aws), None) if gcp_node.is_none() => CloudIdentity::Aws(aws),
        (None, Some(gcp)) if aws_node.is_none() => CloudIdentity::Gcp(gcp),
        (Some(_), Some(gcp)) => {
            ctx.push(
                Diagnostic::error(
                    Code::StorageIdentityMismatch,
                    gcp.span,
                    "storage declares both an `aws` and a `gcp` identity",
                )
                .with_label("a second identity")
                .with_help("keep the identity of the cell's own cloud"),
            );
            return None;
        }
        _ => return None,
    };
    let buckets: Vec<Spanned<String>> = buckets.into_iter().collect::<Option<_>>()?;
    let shared_bases: Vec<SharedBaseGrant> = grants.into_iter().collect::<Option<_>>()?;
    (!buckets.is_empty()).then_some(Storage {
        span,
        buckets,
        identity,
        shared_bases,
    })
}

/// The `tenants "a" "b"` list of a node (an org's members, a shared base's readers), each a
/// tenant name; `None` when the node has no list, and `None` items where a name is invalid.
fn tenant_names(ctx: &Ctx, obj: &mut Obj<'_, '_>) -> Option<Vec<Option<Spanned<String>>>> {
    obj.values("tenants").map(|nodes| {
        nodes
            .into_iter()
            .map(|node| {
                string(ctx, node, "tenants")
                    .filter(|tenant| check_name(ctx, tenant, "tenant", names::dns_label))
            })
            .collect()
    })
}

/// Reads `shared-base "shared/…/" { tenants "a" "b"; }` of a cell's storage (YAML
/// `{prefix: …, tenants: […]}`); the prefix is checked like a tenant's `shared-base`.
fn shared_base_grant(ctx: &Ctx, node: &Node) -> Option<SharedBaseGrant> {
    let mut obj = Obj::new(ctx, node, "shared-base")?;
    let prefix = obj.req_arg_str(
        0,
        "prefix",
        "shared-base \"shared/<path>/\" { tenants \"<tenant>\"; }",
    );
    let tenants = tenant_names(ctx, &mut obj);
    if tenants.is_none() {
        obj.missing("tenants", "tenants", "tenants \"<tenant>\"");
    }
    let span = obj.span;
    obj.finish();
    let prefix = prefix?;
    let tenants: Vec<Spanned<String>> = tenants?.into_iter().collect::<Option<_>>()?;
    Some(SharedBaseGrant {
        span,
        prefix,
        tenants,
    })
}

fn aws_identity(ctx: &Ctx, node: &Node) -> Option<AwsIdentity> {
    let mut obj = Obj::new(ctx, node, "aws")?;
    let account = obj.req_str("account", "account=\"123456789012\"");
    let mode = match obj.field("identity") {
        Some(node) => choice(ctx, node, "identity", AWS_MODES),
        None => {
            obj.missing("identity", "identity", "identity=\"pod-identity\"");
            None
        }
    };
    let oidc_provider = obj.opt_str("oidc-provider");
    let cluster = obj.opt_str("cluster");
    let span = obj.span;
    obj.finish();
    let account = account?;
    let mode = mode?;
    let mut ok = check_text(
        ctx,
        &account,
        "AWS account",
        |text| text.len() == 12 && text.bytes().all(|byte| byte.is_ascii_digit()),
        "12 digits",
    );
    if let Some(provider) = &oidc_provider {
        ok &= check_text(
            ctx,
            provider,
            "OIDC provider",
            crate::names::oidc_provider_ok,
            "a host and path such as `oidc.eks.us-east-1.amazonaws.com/id/<id>`, without `https://`",
        );
    }
    if let Some(cluster) = &cluster {
        ok &= check_text(
            ctx,
            cluster,
            "EKS cluster",
            |text| {
                (1..=100).contains(&text.len())
                    && text.starts_with(|ch: char| ch.is_ascii_alphanumeric())
                    && text
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_'))
            },
            "1 to 100 letters, digits, `-` and `_`, starting with a letter or digit",
        );
    }
    match (mode.value, &oidc_provider, &cluster) {
        (AwsMode::Irsa, None, _) => {
            ctx.push(
                Diagnostic::error(
                    Code::FieldMissing,
                    mode.span,
                    "`identity=\"irsa\"` needs `oidc-provider`",
                )
                .with_label("IRSA trusts the cluster's OIDC provider")
                .with_help("add `oidc-provider=\"oidc.eks.<region>.amazonaws.com/id/<id>\"`, from `aws eks describe-cluster`"),
            );
            return None;
        }
        (AwsMode::Irsa, _, Some(cluster)) | (AwsMode::PodIdentity, Some(cluster), _) => {
            let other = if mode.value == AwsMode::Irsa {
                "`cluster` is for Pod Identity"
            } else {
                "`oidc-provider` is for IRSA"
            };
            ctx.push(
                Diagnostic::error(
                    Code::StorageIdentityMismatch,
                    cluster.span,
                    format!(
                        "{other}, not for `identity=\"{}\"`",
                        match mode.value {
                            AwsMode::Irsa => "irsa",
                            AwsMode::PodIdentity => "pod-identity",
                        }
                    ),
                )
                .with_label("not used by this identity")
                .with_help("remove it, or change `identity`"),
            );
            return None;
        }
        _ => {}
    }
    ok.then_some(AwsIdentity {
        span,
        account,
        mode,
        oidc_provider,
        cluster,
    })
}

fn gcp_identity(ctx: &Ctx, node: &Node) -> Option<GcpIdentity> {
    let mut obj = Obj::new(ctx, node, "gcp")?;
    let project = obj.req_str("project", "project=\"<project id>\"");
    let workload_pool = obj.opt_str("workload-pool");
    let span = obj.span;
    obj.finish();
    let project = project?;
    let mut ok = check_text(
        ctx,
        &project,
        "Google Cloud project",
        crate::names::project_id_ok,
        "6 to 30 lowercase letters, digits and `-`, starting with a letter",
    );
    if let Some(pool) = &workload_pool {
        ok &= check_text(
            ctx,
            pool,
            "Workload Identity pool",
            |text| {
                text.strip_suffix(".svc.id.goog")
                    .is_some_and(crate::names::project_id_ok)
            },
            "`<project id>.svc.id.goog`",
        );
    }
    ok.then_some(GcpIdentity {
        span,
        project,
        workload_pool,
    })
}

/// Checks a cloud name against a rule, reporting `name-invalid` with the expected form.
fn check_text(
    ctx: &Ctx,
    text: &Spanned<String>,
    what: &str,
    rule: fn(&str) -> bool,
    expected: &str,
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
        .with_help(format!("write the {what} as the cloud console shows it")),
    );
    false
}

fn gitops(ctx: &Ctx, node: &Node) -> Option<GitOps> {
    let mut obj = Obj::new(ctx, node, "gitops")?;
    let controller_node = obj.arg(0, "controller");
    let user_node = obj.field("user");
    let break_glass_node = obj.field("break-glass");
    let text_fields = GITOPS_FIELDS.map(|(key, _)| (key, obj.field(key)));
    let span = obj.span;
    obj.finish();
    let controller = controller_node.and_then(|node| {
        choice(
            ctx,
            node,
            "controller",
            &[
                ("argocd", GitOpsController::ArgoCd),
                ("flux", GitOpsController::Flux),
            ],
        )
    });
    let user = user_node.and_then(|node| string(ctx, node, "user"));
    let break_glass = break_glass_node.and_then(|node| string(ctx, node, "break-glass"));
    let user_ok = match &user {
        Some(user) => check_group_name(ctx, user),
        None => user_node.is_none(),
    };
    let break_glass_ok = match &break_glass {
        Some(group) => check_group_name(ctx, group),
        None => break_glass_node.is_none(),
    };
    let mut texts_ok = controller_node.is_none() || controller.is_some();
    let mut read = |key: &'static str| -> Option<Spanned<String>> {
        let node = text_fields
            .iter()
            .find(|(name, _)| *name == key)
            .and_then(|(_, node)| *node)?;
        let text = string(ctx, node, key);
        let checked = text.filter(|text| {
            check_gitops_field(
                ctx,
                key,
                text,
                controller.as_ref(),
                controller_node.is_some(),
            )
        });
        texts_ok &= checked.is_some();
        checked
    };
    let repo = read("repo");
    let revision = read("revision");
    let path = read("path");
    let destination = read("destination");
    let cluster = read("cluster");
    let project = read("project");
    let namespace = read("namespace");
    let source = read("source");
    let gitops = GitOps {
        span,
        user,
        break_glass,
        controller,
        repo,
        revision,
        path,
        destination,
        cluster,
        project,
        namespace,
        source,
    };
    if let Some(controller) = &gitops.controller
        && controller.value == GitOpsController::ArgoCd
    {
        if gitops.repo.is_none() && texts_ok {
            ctx.push(
                Diagnostic::error(
                    Code::FieldMissing,
                    controller.span,
                    "gitops has no `repo`".to_string(),
                )
                .with_label("Argo CD needs the repository that holds the rendered tree")
                .with_help("add `repo=\"https://git.example.com/platform/fleet.git\"` to gitops"),
            );
            texts_ok = false;
        }
        if let (Some(_), Some(cluster)) = (&gitops.destination, &gitops.cluster) {
            ctx.push(
                Diagnostic::error(
                    Code::GitopsSourceInvalid,
                    cluster.span,
                    "gitops names both a `destination` and a `cluster`".to_string(),
                )
                .with_label("an Application has one destination")
                .with_help("keep `destination` (the API server URL) or `cluster` (the name registered in Argo CD), not both"),
            );
            texts_ok = false;
        }
    }
    (user_ok && break_glass_ok && texts_ok).then_some(gitops)
}

/// The fleet-wide folders of `out/` that `lower/gitops.rs` writes, which no cell may be named.
pub const GITOPS_FOLDERS: [&str; 2] = ["argocd", "flux"];

/// The text fields of `gitops` after `user` and `break-glass`, with the controller they apply
/// to (`None`: both).
const GITOPS_FIELDS: [(&str, Option<GitOpsController>); 8] = [
    ("repo", Some(GitOpsController::ArgoCd)),
    ("revision", Some(GitOpsController::ArgoCd)),
    ("path", None),
    ("destination", Some(GitOpsController::ArgoCd)),
    ("cluster", Some(GitOpsController::ArgoCd)),
    ("project", Some(GitOpsController::ArgoCd)),
    ("namespace", None),
    ("source", Some(GitOpsController::Flux)),
];

/// Checks one text field of `gitops`: that it applies to the declared controller and that the
/// controller can use the value. Reports and returns false otherwise.
fn check_gitops_field(
    ctx: &Ctx,
    key: &str,
    text: &Spanned<String>,
    controller: Option<&Spanned<GitOpsController>>,
    controller_written: bool,
) -> bool {
    let applies_to = GITOPS_FIELDS
        .iter()
        .find(|(name, _)| *name == key)
        .and_then(|(_, applies)| *applies);
    let declared = controller.map(|controller| controller.value);
    let problem: Option<(String, String)> = match (declared, applies_to) {
        // An unknown controller is reported on its own; the value is still checked.
        (None, _) if controller_written => gitops_value_problem(key, &text.value),
        (None, _) => Some((
            "no controller is declared".to_string(),
            format!(
                "name the controller first: `gitops \"argocd\" {key}=…` or `gitops \"flux\" …`"
            ),
        )),
        (Some(declared), Some(applies)) if declared != applies => Some((
            format!("`{key}` is a field of {}", controller_name(applies)),
            format!(
                "remove `{key}`; {} reads {}",
                controller_name(declared),
                match declared {
                    GitOpsController::ArgoCd =>
                        "`repo`, `revision`, `path`, `destination` or `cluster`, `project` and `namespace`",
                    GitOpsController::Flux =>
                        "`source` (its GitRepository), `path` and `namespace`",
                }
            ),
        )),
        _ => gitops_value_problem(key, &text.value),
    };
    let Some((label, help)) = problem else {
        return true;
    };
    ctx.push(
        Diagnostic::error(
            Code::GitopsSourceInvalid,
            text.span,
            format!("gitops `{key}` cannot be used"),
        )
        .with_label(label)
        .with_help(help),
    );
    false
}

fn controller_name(controller: GitOpsController) -> &'static str {
    match controller {
        GitOpsController::ArgoCd => "Argo CD",
        GitOpsController::Flux => "Flux",
    }
}

/// What is wrong with the value of a `gitops` text field, as (label, help).
fn gitops_value_problem(key: &str, value: &str) -> Option<(String, String)> {
    match key {
        "repo" => url_problem(value, &["https://", "ssh://"]).map(|label| {
            (
                label,
                "write the repository as Argo CD clones it: `https://host/org/repo.git` or `ssh://git@host/org/repo.git`".to_string(),
            )
        }),
        "destination" => url_problem(value, &["https://"]).map(|label| {
            (
                label,
                "write the API server URL, such as `https://kubernetes.default.svc`".to_string(),
            )
        }),
        "path" => path_problem(value).map(|label| {
            (
                label,
                "write the folder of `out/` relative to the repository root, such as `out` or `fleet/out`".to_string(),
            )
        }),
        "revision" => (value.is_empty()
            || value.len() > 255
            || value
                .chars()
                .any(|ch| ch.is_whitespace() || ch.is_control() || matches!(ch, '~' | '^' | ':' | '?' | '*' | '[' | '\\')))
        .then(|| {
            (
                "not a Git branch, tag or commit".to_string(),
                "write a branch, tag or commit such as `main` or `v1.4.0`".to_string(),
            )
        }),
        _ => crate::names::dns_label(value).err().map(|problem| {
            (
                problem,
                format!("write `{key}` as a Kubernetes name: lowercase letters, digits and `-`"),
            )
        }),
    }
}

/// Why `value` is not a URL with one of `schemes` and a host, if it is not.
fn url_problem(value: &str, schemes: &[&str]) -> Option<String> {
    let Some(rest) = schemes.iter().find_map(|scheme| value.strip_prefix(scheme)) else {
        return Some(format!(
            "expected a URL starting with {}",
            schemes
                .iter()
                .map(|scheme| format!("`{scheme}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    };
    let host = rest.split('/').next().unwrap_or_default();
    let host = host.rsplit('@').next().unwrap_or_default();
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '-' | ':' | '[' | ']'));
    if !host_ok {
        return Some("the URL has no valid host".to_string());
    }
    if value.chars().any(|ch| {
        ch.is_whitespace() || ch.is_control() || matches!(ch, '"' | '\'' | '`' | '\\' | '<' | '>')
    }) {
        return Some("the URL holds a space, quote or control character".to_string());
    }
    None
}

/// Why `value` is not a plain relative folder inside the repository, if it is not.
fn path_problem(value: &str) -> Option<String> {
    if value.starts_with('/') {
        return Some("an absolute path".to_string());
    }
    let parts: Vec<&str> = value.split('/').collect();
    if parts.contains(&"..") {
        return Some("the path leaves the repository".to_string());
    }
    let part_ok = |part: &&str| {
        !part.is_empty()
            && *part != "."
            && part
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-'))
    };
    if !parts.iter().all(part_ok) {
        return Some(
            "expected folder names of letters, digits, `.`, `_` and `-` joined by `/`".to_string(),
        );
    }
    None
}

fn runtime_class(ctx: &Ctx, node: &Node) -> Option<RuntimeClassDecl> {
    let example = "runtime-class \"<name>\" handler=\"nvidia\" { trust \"hard\"; }";
    let mut obj = Obj::new(ctx, node, "runtime-class")?;
    let name = obj.req_arg_str(0, "name", example);
    let handler = obj.req_str("handler", "handler=\"nvidia\"");
    // A list that is not one is reported as such, never also as missing.
    let trust_nodes = obj.values("trust");
    let trust: Vec<Option<Spanned<Trust>>> = trust_nodes
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|node| choice(ctx, node, "trust", TRUST))
        .collect();
    if trust_nodes.as_ref().is_some_and(Vec::is_empty) {
        obj.missing("trust", "trust", "trust \"hard\"");
    }
    let pool_nodes = obj.values("pools");
    let pools: Vec<Option<Spanned<String>>> = pool_nodes
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|node| string(ctx, node, "pools"))
        .collect();
    let span = obj.span;
    obj.finish();
    // A list that could not be read leaves the class out, not applied to every pool.
    pool_nodes?;
    let name = name?;
    let handler = handler?;
    let name_ok = check_name(ctx, &name, "runtime class", names::dns_subdomain);
    let handler_ok = check_name(ctx, &handler, "runtime handler", names::dns_label);
    let trust: Option<Vec<Spanned<Trust>>> = trust.into_iter().collect();
    let pools: Option<Vec<Spanned<String>>> = pools.into_iter().collect();
    let trust = trust.filter(|trust| !trust.is_empty())?;
    (name_ok && handler_ok).then_some(RuntimeClassDecl {
        span,
        name,
        handler,
        trust,
        pools: pools?,
    })
}

/// The smallest oversubscription ratio a cell may declare: bursts within capacity.
pub const MIN_OVERSUBSCRIBE: f64 = 1.0;
/// The largest oversubscription ratio a cell may declare.
pub const MAX_OVERSUBSCRIBE: f64 = 100.0;

fn org_decl(ctx: &Ctx, node: &Node) -> Option<OrgDecl> {
    // A list that is present but empty still says who the members are: nobody.
    let listed = matches!(&node.value, crate::parse::Value::Map(map)
        if map.entries.iter().any(|entry| entry.key == "tenants"));
    let mut obj = Obj::new(ctx, node, "org")?;
    let name = obj.req_arg_str(0, "name", "org \"<org>\" weight=2");
    let weight_node = obj.field("weight");
    let weight = weight_node.and_then(|node| integer(ctx, node, "weight", 1..=MAX_WEIGHT));
    let tenants = tenant_names(ctx, &mut obj);
    let span = obj.span;
    obj.finish();
    let name = name?;
    let tenants: Option<Vec<Spanned<String>>> = tenants?.into_iter().collect();
    if !check_name(ctx, &name, "org", names::dns_label)
        || (weight_node.is_some() && weight.is_none())
    {
        return None;
    }
    Some(OrgDecl {
        span,
        name,
        weight,
        tenants: listed.then_some(tenants?),
    })
}

fn cloud(ctx: &Ctx, node: &Node) -> Option<(Spanned<String>, Spanned<String>)> {
    let mut obj = Obj::new(ctx, node, "cloud")?;
    let provider = match obj.arg(0, "provider") {
        Some(node) => choice(ctx, node, "provider", CLOUDS),
        None => {
            obj.missing_arg("provider", "cloud \"aws\" region=\"us-east-1\"");
            None
        }
    };
    let region = obj.req_str("region", "region=\"<region>\"");
    obj.finish();
    let provider = provider?;
    Some((
        Spanned::new(provider.value.to_string(), provider.span),
        region?,
    ))
}

fn kubernetes_version(ctx: &Ctx, node: &Node) -> Option<Spanned<(u32, u32)>> {
    let text = string(ctx, node, "kubernetes")?;
    let parsed = text
        .value
        .strip_prefix('v')
        .unwrap_or(&text.value)
        .split_once('.')
        .and_then(|(major, minor)| Some((plain_number(major)?, plain_number(minor)?)));
    match parsed {
        Some((1, minor)) if KUBERNETES_MINORS.contains(&minor) => {
            Some(Spanned::new((1, minor), text.span))
        }
        Some((1, minor)) if minor < *KUBERNETES_MINORS.start() => {
            ctx.push(
                Diagnostic::error(
                    Code::KubernetesTooOldForAdmissionPolicies,
                    text.span,
                    format!(
                        "Kubernetes `{}` has no ValidatingAdmissionPolicy v1",
                        text.value
                    ),
                )
                .with_label(format!(
                    "admission policies are `admissionregistration.k8s.io/v1` from 1.{} on",
                    KUBERNETES_MINORS.start()
                ))
                .with_help(format!(
                    "upgrade the cell to Kubernetes 1.{} or newer: tenantc guards the objects it \
                     manages and each tenant's pods with admission policies",
                    KUBERNETES_MINORS.start()
                )),
            );
            None
        }
        Some(_) => {
            ctx.push(
                Diagnostic::error(
                    Code::KubernetesVersionUnsupported,
                    text.span,
                    format!("Kubernetes `{}` is not supported", text.value),
                )
                .with_label(format!(
                    "supported: 1.{} to 1.{}",
                    KUBERNETES_MINORS.start(),
                    KUBERNETES_MINORS.end()
                ))
                .with_help("upgrade the cell, or pin a supported minor version"),
            );
            None
        }
        None => {
            ctx.push(
                Diagnostic::error(
                    Code::TypeMismatch,
                    text.span,
                    format!("`{}` is not a Kubernetes minor version", text.value),
                )
                .with_label("expected `<major>.<minor>`")
                .with_help("write the version as `\"1.33\"`"),
            );
            None
        }
    }
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

fn driver(ctx: &Ctx, node: &Node) -> Option<Spanned<u32>> {
    // A branch is a whole number, so `driver 570` is as clear as `driver "570"`.
    let is_integer = match &node.value {
        crate::parse::Value::Int(_) => true,
        crate::parse::Value::Map(map) => {
            matches!(map.args.as_slice(), [only] if matches!(only.value, crate::parse::Value::Int(_)))
                && map.entries.is_empty()
        }
        _ => false,
    };
    if is_integer {
        let value = integer(ctx, node, "driver", 400..=9999)?;
        return Some(Spanned::new(
            u32::try_from(value.value).unwrap_or(0),
            value.span,
        ));
    }
    let text = string(ctx, node, "driver")?;
    match plain_number(&text.value) {
        Some(branch) if (400..=9999).contains(&branch) => Some(Spanned::new(branch, text.span)),
        _ => {
            ctx.push(
                Diagnostic::error(
                    Code::ValueUnknown,
                    text.span,
                    format!("`{}` is not an NVIDIA driver branch", text.value),
                )
                .with_label("expected a branch number such as `570`")
                .with_help("write the driver branch only, without the minor and patch numbers"),
            );
            None
        }
    }
}

fn dns(ctx: &Ctx, node: &Node) -> Option<Dns> {
    let mut obj = Obj::new(ctx, node, "dns")?;
    let namespace = obj.opt_str("namespace");
    let selector = obj.opt_str("selector");
    let node_local_text = obj.opt_str("node-local");
    obj.finish();
    let node_local = node_local_text
        .as_ref()
        .map(|text| cidr(ctx, text, "node-local"));
    if let Some(namespace) = &namespace
        && !check_name(ctx, namespace, "DNS namespace", names::dns_label)
    {
        return None;
    }
    if let Some(selector) = &selector
        && !check_selector(ctx, selector, "DNS pods'", "k8s-app=kube-dns")
    {
        return None;
    }
    let node_local = match node_local {
        Some(None) => return None,
        Some(Some(block)) => Some(block),
        None => None,
    };
    Some(Dns {
        namespace,
        selector,
        node_local,
    })
}

fn metrics(ctx: &Ctx, node: &Node) -> Option<Metrics> {
    let mut obj = Obj::new(ctx, node, "metrics")?;
    let namespace = obj.req_str("namespace", "metrics namespace=\"monitoring\"");
    let selector = obj.opt_str("selector");
    let span = obj.span;
    obj.finish();
    let namespace = namespace?;
    let namespace_ok = check_name(ctx, &namespace, "metrics namespace", names::dns_label);
    let selector_ok = selector.as_ref().is_none_or(|selector| {
        check_selector(
            ctx,
            selector,
            "scraper pods'",
            "app.kubernetes.io/name=prometheus",
        )
    });
    (namespace_ok && selector_ok).then_some(Metrics {
        span,
        namespace,
        selector,
    })
}

fn endpoint(ctx: &Ctx, node: &Node) -> Option<Endpoint> {
    let mut obj = Obj::new(ctx, node, "endpoint")?;
    let name = obj.req_arg_str(
        0,
        "name",
        "endpoint \"model-weights\" cidr=\"10.40.0.0/16\"",
    );
    let cidr_text = obj.req_str("cidr", "cidr=\"10.40.0.0/16\"");
    let span = obj.span;
    obj.finish();
    let name = name?;
    let block = cidr(ctx, &cidr_text?, "cidr")?;
    check_name(ctx, &name, "endpoint", names::dns_label).then_some(Endpoint {
        span,
        name,
        cidr: block,
    })
}

/// Reads an address block, reporting `network-cidr-invalid`.
fn cidr(ctx: &Ctx, text: &Spanned<String>, key: &str) -> Option<Spanned<Cidr>> {
    match crate::model::parse_cidr(&text.value) {
        Ok(block) => Some(Spanned::new(block, text.span)),
        Err(reason) => {
            ctx.push(
                Diagnostic::error(
                    Code::NetworkCidrInvalid,
                    text.span,
                    format!("`{key}` `{}` is not an address block", text.value),
                )
                .with_label(reason)
                .with_help("write an IPv4 or IPv6 address, or a network as `10.40.0.0/16`; host names cannot be used in network policies"),
            );
            None
        }
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

/// The longest DRA device class name whose quota key `<class>.deviceclass.resource.k8s.io/devices`
/// still has a prefix of at most 253 characters.
const MAX_DRA_DEVICE_CLASS: usize = 253 - ".deviceclass.resource.k8s.io".len();

/// A DRA device class name: a DNS-1123 subdomain short enough for its quota key.
fn dra_device_class_name(name: &str) -> Result<(), String> {
    names::dns_subdomain(name)?;
    if name.len() > MAX_DRA_DEVICE_CLASS {
        return Err(format!(
            "at most {MAX_DRA_DEVICE_CLASS} characters, so that its quota key is a valid name"
        ));
    }
    Ok(())
}

/// Reads a pool, and whether every part of it was read: a pool whose label, taint, owner or
/// price could not be read is kept without it (so references to the pool resolve) and leaves
/// its cell incomplete.
fn pool(ctx: &Ctx, node: &Node) -> Option<(Pool, bool)> {
    let mut obj = Obj::new(ctx, node, "pool")?;
    let name = obj.req_arg_str(0, "name", "pool \"<name>\" { … }");
    let gpu = obj.req_str("gpu", "gpu \"H100-80GB-SXM\"");
    let nodes = match obj.field("nodes") {
        Some(node) => pool_nodes(ctx, node),
        None => {
            obj.missing("nodes", "nodes", "nodes 4 gpus-per-node=8");
            None
        }
    };
    let sharing = match obj.field("sharing") {
        Some(node) => choice(ctx, node, "sharing", SHARING),
        None => {
            obj.missing("sharing", "sharing", "sharing \"exclusive\"");
            None
        }
    };
    let nvlink_node = obj.field("nvlink-domain");
    let nvlink_domain = nvlink_node.and_then(|node| {
        let mut inner = Obj::new(ctx, node, "nvlink-domain")?;
        let gpus = inner.req_int("gpus", 1..=1024, "nvlink-domain gpus=8");
        inner.finish();
        gpus
    });
    let labels: Vec<Option<(Spanned<String>, Spanned<String>)>> = obj
        .pairs("label", "labels")
        .into_iter()
        .map(|(key, value)| {
            let value = reader::string_or_empty(ctx, value, "label")?;
            let mut key_ok = check_label(ctx, &key, names::qualified_name, "label key");
            if key_ok && key.value.starts_with("nvidia.com/") {
                key_ok = false;
                ctx.push(
                    Diagnostic::error(
                        Code::NameInvalid,
                        key.span,
                        format!("label `{}` is managed by tenantc and the NVIDIA GPU Operator", key.value),
                    )
                    .with_label("`nvidia.com/` labels are set from the pool's sharing mode and layouts")
                    .with_help("remove the label; the capacity report lists the `nvidia.com/` labels each node group gets"),
                );
            }
            let value_ok = check_label(ctx, &value, names::label_value, "label value");
            (key_ok && value_ok).then_some((key, value))
        })
        .collect();
    let taints: Vec<Option<Taint>> = obj
        .items("taint", "taints")
        .into_iter()
        .map(|node| taint(ctx, node))
        .collect();
    let price_node = obj.field("price");
    let price = price_node.and_then(|node| {
        let mut inner = Obj::new(ctx, node, "price")?;
        let value = match inner.field("per-gpu-hour") {
            Some(node) => number(ctx, node, "per-gpu-hour", 0.0..=10_000.0),
            None => {
                inner.missing("per-gpu-hour", "per-gpu-hour", "price per-gpu-hour=2.10");
                None
            }
        };
        inner.finish();
        value
    });
    let replicas_node = obj.field("replicas");
    let replicas = replicas_node.and_then(|node| integer(ctx, node, "replicas", 2..=64));
    let mig_layouts: Vec<Option<MigLayout>> = obj
        .items("mig-layout", "mig-layouts")
        .into_iter()
        .map(|node| mig_layout(ctx, node))
        .collect();
    let topology_node = obj.field("topology");
    let topology = topology_node.and_then(|node| topology(ctx, node));
    let owner_node = obj.field("owner");
    let owner = owner_node.and_then(|node| string(ctx, node, "owner"));
    let span = obj.span;
    obj.finish();
    let name = name?;
    if !check_name(ctx, &name, "pool", names::dns_label) {
        return None;
    }
    if topology_node.is_some() && topology.is_none()
        || nvlink_node.is_some() && nvlink_domain.is_none()
        || replicas_node.is_some() && replicas.is_none()
    {
        // Like a MIG layout: a pool whose topology, NVLink domain or replicas could not be read
        // is left out, so no gang or capacity is checked against a shape its author did not
        // mean, and no check reports the part as missing.
        return None;
    }
    // A bad label or taint is reported and left out; the pool stays, so references to it
    // resolve, and the cell is incomplete.
    let mut parts_read = labels.iter().all(Option::is_some)
        && taints.iter().all(Option::is_some)
        && (price_node.is_none() || price.is_some());
    let mut labels: Vec<_> = labels.into_iter().flatten().collect();
    labels.sort_by(|left: &(Spanned<String>, Spanned<String>), right| {
        left.0.value.cmp(&right.0.value)
    });
    // An owner that is not a tenant name is reported and left out; the pool stays without one,
    // so it grants no host access.
    let owner = owner.filter(|owner| check_name(ctx, owner, "pool owner", names::dns_label));
    parts_read &= owner.is_some() || owner_node.is_none();
    let (nodes, gpus_per_node) = nodes?;
    let pool = Pool {
        span,
        name,
        gpu: gpu?,
        nodes,
        gpus_per_node,
        sharing: sharing?,
        nvlink_domain,
        labels,
        taints: taints.into_iter().flatten().collect(),
        price_per_gpu_hour: price,
        replicas,
        mig_layouts: mig_layouts.into_iter().collect::<Option<_>>()?,
        topology,
        owner,
    };
    Some((pool, parts_read))
}

fn topology(ctx: &Ctx, node: &Node) -> Option<Topology> {
    let mut obj = Obj::new(ctx, node, "topology")?;
    let level_nodes = obj.items("level", "levels");
    if level_nodes.is_empty() {
        obj.missing(
            "level",
            "levels",
            "level \"topology.kubernetes.io/zone\" nodes=16",
        );
    }
    let levels: Vec<Option<TopologyLevel>> = level_nodes
        .into_iter()
        .map(|node| topology_level(ctx, node))
        .collect();
    let span = obj.span;
    obj.finish();
    let levels: Vec<TopologyLevel> = levels.into_iter().collect::<Option<_>>()?;
    (!levels.is_empty()).then_some(Topology { span, levels })
}

fn topology_level(ctx: &Ctx, node: &Node) -> Option<TopologyLevel> {
    let mut obj = Obj::new(ctx, node, "topology level")?;
    let label = obj.req_arg_str(0, "label", "level \"<node label>\" nodes=4");
    let nodes = obj.req_int("nodes", 1..=100_000, "nodes=4");
    let span = obj.span;
    obj.finish();
    let label = label?;
    if !check_label(ctx, &label, names::qualified_name, "topology level label") {
        return None;
    }
    Some(TopologyLevel {
        span,
        label,
        nodes: nodes?,
    })
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

fn pool_nodes(ctx: &Ctx, node: &Node) -> Option<(Spanned<i64>, Spanned<i64>)> {
    let mut obj = Obj::new(ctx, node, "nodes")?;
    let count = match obj.arg(0, "count") {
        Some(node) => integer(ctx, node, "count", 1..=100_000),
        None => {
            obj.missing_arg("count", "nodes 4 gpus-per-node=8");
            None
        }
    };
    let gpus = obj.req_int("gpus-per-node", 1..=16, "gpus-per-node=8");
    obj.finish();
    Some((count?, gpus?))
}

fn taint(ctx: &Ctx, node: &Node) -> Option<Taint> {
    let mut obj = Obj::new(ctx, node, "taint")?;
    let key = obj.req_arg_str(
        0,
        "key",
        "taint \"<key>\" \"<value>\" effect=\"NoSchedule\"",
    );
    let value = obj
        .arg(1, "value")
        .and_then(|node| string(ctx, node, "value"));
    let effect = match obj.field("effect") {
        Some(node) => choice(ctx, node, "effect", TAINT_EFFECTS),
        None => {
            obj.missing("effect", "effect", "effect=\"NoSchedule\"");
            None
        }
    };
    let span = obj.span;
    obj.finish();
    let key = key?;
    let key_ok = check_label(ctx, &key, names::qualified_name, "taint key");
    let value_ok = value
        .as_ref()
        .is_none_or(|value| check_label(ctx, value, names::label_value, "taint value"));
    let effect = effect?;
    (key_ok && value_ok).then(|| Taint {
        span,
        key,
        value,
        effect: Spanned::new(effect.value.to_string(), effect.span),
    })
}

fn mig_layout(ctx: &Ctx, node: &Node) -> Option<MigLayout> {
    let mut obj = Obj::new(ctx, node, "mig-layout")?;
    let name = obj.req_arg_str(0, "name", "mig-layout \"<name>\" { profile \"1g.10gb\" 7 }");
    let nodes = obj.opt_int("nodes", 1..=100_000);
    let profiles: Vec<Option<(Spanned<String>, Spanned<i64>)>> = obj
        .pairs("profile", "profiles")
        .into_iter()
        .map(|(key, value)| Some((key, integer(ctx, value, "profile count", 1..=16)?)))
        .collect();
    let span = obj.span;
    let has_profiles = !profiles.is_empty();
    if !has_profiles {
        obj.missing("profile", "profiles", "profile \"1g.10gb\" 7");
    }
    obj.finish();
    let name = name?;
    if !check_name(ctx, &name, "MIG layout", names::dns_label) {
        return None;
    }
    Some(MigLayout {
        span,
        name,
        nodes,
        profiles: profiles.into_iter().collect::<Option<_>>()?,
    })
}

fn gpu_model(ctx: &Ctx, node: &Node) -> Option<GpuModelDecl> {
    let mut obj = Obj::new(ctx, node, "gpu-model")?;
    let name = obj.req_arg_str(0, "name", "gpu-model \"<name>\" { … }");
    let product = obj.opt_str("product");
    let pci_id_nodes = obj.values("pci-ids");
    // `None`: not a list, already reported; an empty list is a missing id.
    let pci_ids_missing = pci_id_nodes.as_ref().is_some_and(Vec::is_empty);
    let pci_ids: Vec<Option<Spanned<String>>> = pci_id_nodes
        .unwrap_or_default()
        .into_iter()
        .map(|node| string(ctx, node, "pci-ids"))
        .collect();
    // `None`: not a list, already reported (and the model is left out); empty: missing.
    let sharing_nodes = obj.values("sharing");
    if sharing_nodes.as_ref().is_some_and(Vec::is_empty) {
        obj.missing("sharing", "sharing", "sharing \"exclusive\" \"time-slice\"");
    }
    let sharing_read = sharing_nodes.is_some();
    let sharing: Vec<Option<Spanned<Sharing>>> = sharing_nodes
        .unwrap_or_default()
        .into_iter()
        .map(|node| choice(ctx, node, "sharing", SHARING))
        .collect();
    let mig = obj.field("mig").and_then(|node| mig_table(ctx, node));
    let span = obj.span;
    obj.finish();
    let name = name?;
    if !sharing_read {
        return None;
    }
    // Invalid ids are reported and dropped; the model stays, so the cell's other checks still
    // run in this compilation.
    let pci_ids: Vec<Spanned<String>> = pci_ids
        .into_iter()
        .flatten()
        .filter(|pci_id| {
            let valid = crate::catalog::is_pci_id(&pci_id.value);
            if !valid {
                ctx.push(
                    Diagnostic::error(
                        Code::GpuModelInvalid,
                        pci_id.span,
                        format!("`{}` is not a PCI id in device-filter form", pci_id.value),
                    )
                    .with_label("expected `0x` and 8 hex digits: device, then vendor")
                    .with_help(
                        "write the id as mig-parted's device-filter does, such as `0x233010DE`",
                    ),
                );
            }
            valid
        })
        .collect();
    if pci_ids_missing {
        ctx.push(
            Diagnostic::error(
                Code::FieldMissing,
                name.span,
                format!("GPU model `{}` has no `pci-ids`", name.value),
            )
            .with_label("MIG configs and device filters need the PCI id")
            .with_help("add `pci-ids \"0x<device><vendor>\"`, as `lspci -nn` shows it"),
        );
    }
    Some(GpuModelDecl {
        span,
        name,
        product,
        pci_ids,
        sharing: sharing.into_iter().collect::<Option<_>>()?,
        mig,
    })
}

fn mig_table(ctx: &Ctx, node: &Node) -> Option<MigTableDecl> {
    let mut obj = Obj::new(ctx, node, "mig")?;
    let compute_slices = obj.req_int("compute-slices", 1..=16, "compute-slices=7");
    let memory_slices = obj.req_int("memory-slices", 1..=16, "memory-slices=8");
    let placement_units = obj.req_int("placement-units", 1..=32, "placement-units=8");
    let profiles: Vec<Option<MigProfileDecl>> = obj
        .items("profile", "profiles")
        .into_iter()
        .map(|node| mig_profile(ctx, node))
        .collect();
    let span = obj.span;
    if profiles.is_empty() {
        obj.missing(
            "profile",
            "profiles",
            "profile \"1g.10gb\" compute=1 memory=1 max=7 size=1 { starts 0 1 2 3 4 5 6; }",
        );
    }
    obj.finish();
    Some(MigTableDecl {
        span,
        compute_slices: compute_slices?,
        memory_slices: memory_slices?,
        placement_units: placement_units?,
        // A profile with a bad name was reported and is left out of the table.
        profiles: profiles.into_iter().flatten().collect(),
    })
}

fn mig_profile(ctx: &Ctx, node: &Node) -> Option<MigProfileDecl> {
    let mut obj = Obj::new(ctx, node, "MIG profile")?;
    let name = obj.req_arg_str(
        0,
        "name",
        "profile \"1g.10gb\" compute=1 memory=1 max=7 size=1",
    );
    let id = obj.opt_int("id", 0..=255);
    let compute = obj.req_int("compute", 1..=16, "compute=1");
    let memory = obj.req_int("memory", 1..=16, "memory=1");
    let max = obj.req_int("max", 1..=16, "max=7");
    let size = obj.req_int("size", 1..=32, "size=1");
    let start_nodes = obj.values("starts");
    if start_nodes.as_ref().is_some_and(Vec::is_empty) {
        obj.missing("starts", "starts", "starts 0 1 2 3 4 5 6");
    }
    let starts_read = start_nodes.is_some();
    let starts: Vec<Option<Spanned<i64>>> = start_nodes
        .unwrap_or_default()
        .into_iter()
        .map(|node| integer(ctx, node, "starts", 0..=31))
        .collect();
    let span = obj.span;
    obj.finish();
    let name = name?;
    if !starts_read {
        return None;
    }
    if !crate::catalog::is_profile_name(&name.value) {
        ctx.push(
            Diagnostic::error(
                Code::GpuModelInvalid,
                name.span,
                format!("`{}` is not a MIG profile name", name.value),
            )
            .with_label("expected `<G>g.<GB>gb`, optionally with `+me` or `-me`")
            .with_help("use the name `nvidia-smi mig -lgip` prints, such as `1g.10gb`"),
        );
        return None;
    }
    Some(MigProfileDecl {
        span,
        name,
        id,
        compute: compute?,
        memory: memory?,
        max: max?,
        size: size?,
        starts: starts.into_iter().collect::<Option<_>>()?,
    })
}

fn priority(ctx: &Ctx, node: &Node) -> Option<Priority> {
    let mut obj = Obj::new(ctx, node, "priority")?;
    let name = obj.req_arg_str(0, "name", "priority \"<name>\" value=1000");
    // PriorityClass values users may set (HighestUserDefinablePriority).
    let value = obj.req_int("value", -2_147_483_648..=1_000_000_000, "value=1000");
    let preempt_node = obj.field("preempt");
    let preempt = preempt_node.and_then(|node| boolean(ctx, node, "preempt"));
    let description_node = obj.field("description");
    let description = description_node.and_then(|node| string(ctx, node, "description"));
    let span = obj.span;
    obj.finish();
    let name = name?;
    if preempt_node.is_some() && preempt.is_none()
        || description_node.is_some() && description.is_none()
    {
        // Left out rather than read as the default `preempt` or no description.
        return None;
    }
    if !check_name(ctx, &name, "priority", names::dns_subdomain) {
        return None;
    }
    if name.value.starts_with("system-") {
        ctx.push(
            Diagnostic::error(
                Code::PriorityNameReserved,
                name.span,
                format!(
                    "priority `{}` uses the reserved `system-` prefix",
                    name.value
                ),
            )
            .with_label("reserved for Kubernetes' own classes")
            .with_help("choose a name that does not start with `system-`"),
        );
        return None;
    }
    Some(Priority {
        span,
        name,
        value: value?,
        preempt,
        description,
    })
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
    use crate::validate::test_support::fleet;

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
        use crate::validate::test_support::{CELL, codes, tenant};
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
