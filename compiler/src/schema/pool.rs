//! Reads a cell's node pools: topology, nodes, taints, MIG layouts, and the cell's own GPU
//! models and MIG tables.

use super::reader::{Ctx, Obj, choice, integer, number, string};
use super::{SHARING, TAINT_EFFECTS, check_label, check_name};
use crate::diag::{Code, Diagnostic};
use crate::model::{
    GpuModelDecl, MigLayout, MigProfileDecl, MigTableDecl, Pool, Sharing, Spanned, Taint, Topology,
    TopologyLevel,
};
use crate::names;
use crate::parse::Node;

/// The longest DRA device class name whose quota key `<class>.deviceclass.resource.k8s.io/devices`
/// still has a prefix of at most 253 characters.
const MAX_DRA_DEVICE_CLASS: usize = 253 - ".deviceclass.resource.k8s.io".len();

/// A DRA device class name: a DNS-1123 subdomain short enough for its quota key.
pub(super) fn dra_device_class_name(name: &str) -> Result<(), String> {
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
pub(super) fn pool(ctx: &Ctx, node: &Node) -> Option<(Pool, bool)> {
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
            let value = super::reader::string_or_empty(ctx, value, "label")?;
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

pub(super) fn gpu_model(ctx: &Ctx, node: &Node) -> Option<GpuModelDecl> {
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
