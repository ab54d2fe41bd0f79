//! Reads a tenant declaration: groups, quotas, ceilings, fleet reservations, workloads, Pod
//! Security exceptions, registries, signed model weights and extra chargeback labels.

use super::reader::{Ctx, Obj, choice, integer, quantity, string};
use super::{TRUST, WORKLOAD, check_label, check_name, keep_read};
use crate::diag::{Code, Diagnostic};
use crate::model::{
    CeilingSplit, ChargebackLabel, ContainerDefaults, FleetCellShare, FleetReservation, Groups,
    KeylessSigner, ModelWeights, PodSecurityException, PoolQuota, Quota, Signer, Spanned,
    StorageQuota, Tenant, Workload,
};
use crate::names;
use crate::parse::{Document, Node};

pub(super) fn tenant(ctx: &Ctx, node: &Node, document: &Document) -> Option<Tenant> {
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
    let chargeback_node = obj.field("chargeback");
    let chargeback = chargeback_node.map(|node| chargeback_labels(ctx, node));
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
    // A chargeback label that could not be read leaves all of them out: the tenant's objects
    // are never emitted with some of the labels its author meant.
    let chargeback = match chargeback {
        None => Vec::new(),
        Some(Some(labels)) => labels,
        Some(None) => {
            complete = false;
            Vec::new()
        }
    };
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
        chargeback,
        complete,
    })
}

/// The longest chargeback label key, prefix included: enough for a short domain and a name,
/// and short enough that kube-state-metrics' `label_<key>` stays readable in a query.
pub const MAX_CHARGEBACK_KEY_CHARS: usize = 63;

/// Reads `chargeback { label "<key>" "<value>" … }` (YAML: `chargeback: {labels: {<key>:
/// <value>}}`); `None` when a label was written but refused (each refusal is reported as
/// `chargeback-label-invalid` at its key or value, or as the reader's type finding).
fn chargeback_labels(ctx: &Ctx, node: &Node) -> Option<Vec<ChargebackLabel>> {
    let mut obj = Obj::new(ctx, node, "chargeback")?;
    let before = ctx.count();
    let pairs = obj.pairs("label", "labels");
    obj.finish();
    let mut read = ctx.count() == before;
    let mut labels = Vec::new();
    for (key, value) in pairs {
        let Some(value) = super::reader::string_or_empty(ctx, value, "label") else {
            read = false;
            continue;
        };
        let key_ok = check_chargeback_text(
            ctx,
            &key,
            chargeback_key_problem,
            ("key", CHARGEBACK_KEY_HELP),
        );
        let value_ok = check_chargeback_text(
            ctx,
            &value,
            chargeback_value_problem,
            ("value", CHARGEBACK_VALUE_HELP),
        );
        if key_ok && value_ok {
            labels.push(ChargebackLabel { key, value });
        } else {
            read = false;
        }
    }
    read.then_some(labels)
}

/// Why `key` is not a chargeback label key, or `None`: a Kubernetes label key
/// (`[prefix/]name`, the prefix a DNS subdomain) of at most [`MAX_CHARGEBACK_KEY_CHARS`].
pub fn chargeback_key_problem(key: &str) -> Option<String> {
    if key.len() > MAX_CHARGEBACK_KEY_CHARS {
        return Some(format!(
            "is {} characters long; a chargeback label key has at most {MAX_CHARGEBACK_KEY_CHARS}",
            key.len()
        ));
    }
    names::qualified_name(key).err()
}

/// Why `value` is not a chargeback label value, or `None`: a Kubernetes label value that is not
/// empty, so never free text (at most 63 letters, digits, `-`, `_` and `.`).
pub fn chargeback_value_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("is empty; a chargeback label needs a value to charge by".to_string());
    }
    names::label_value(value).err()
}

/// How to write a chargeback label key.
const CHARGEBACK_KEY_HELP: &str = "write a label key such as `cost-center` or `acme.io/cost-center`: an optional lower-case DNS prefix and `/`, then letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit";
/// How to write a chargeback label value.
const CHARGEBACK_VALUE_HELP: &str = "write a short code such as `ml-4711`: at most 63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit; a label value never holds free text";

fn check_chargeback_text(
    ctx: &Ctx,
    text: &Spanned<String>,
    problem: fn(&str) -> Option<String>,
    (what, help): (&str, &str),
) -> bool {
    let Some(reason) = problem(&text.value) else {
        return true;
    };
    ctx.push(
        Diagnostic::error(
            Code::ChargebackLabelInvalid,
            text.span,
            format!("chargeback label {what} `{}` is not valid", text.value),
        )
        .with_label(reason)
        .with_help(help),
    );
    false
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
pub(super) fn check_group_name(ctx: &Ctx, group: &Spanned<String>) -> bool {
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
            .and_then(|node| super::reader::quantity(ctx, node, "ephemeral-storage")),
        storage: storage.and_then(|node| super::reader::quantity(ctx, node, "storage")),
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
pub(super) const MAX_WEIGHT: i64 = 1_000_000;
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
