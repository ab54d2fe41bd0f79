//! Reads a cell declaration and its cell-wide parts: runtime classes, orgs, cloud, Kubernetes
//! version, driver, DNS, metrics, network endpoints and priorities.

use super::gitops::{GITOPS_FOLDERS, gitops};
use super::pool::{dra_device_class_name, gpu_model, pool};
use super::reader::{Ctx, Obj, boolean, choice, integer, number, string};
use super::serving::serving;
use super::storage::{storage, tenant_names};
use super::tenant::{MAX_WEIGHT, check_group_name};
use super::{
    CLOUDS, KUBERNETES_MINORS, TRUST, check_label, check_name, check_selector, keep_read,
    plain_number,
};
use crate::diag::{Code, Diagnostic};
use crate::model::{
    AdmissionEngine, Cell, Cidr, DeviceMode, Dns, Endpoint, GpuModelDecl, Metering, Metrics,
    OrgDecl, Pool, Priority, RuntimeClassDecl, Scheduler, Spanned, Trust,
};
use crate::names;
use crate::parse::{Document, Node};

pub(super) fn cell(ctx: &Ctx, node: &Node, document: &Document) -> Option<Cell> {
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
    let metering_node = obj.field("metering");
    let metering = metering_node.and_then(|node| metering(ctx, node, metrics.as_ref()));
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
    let serving_node = obj.field("serving");
    let serving = serving_node.and_then(|node| serving(ctx, node));
    let scheduler_node = obj.field("scheduler");
    let scheduler = scheduler_node.and_then(|node| choice(ctx, node, "scheduler", SCHEDULERS));
    let admission_node = obj.field("admission");
    let admission =
        admission_node.and_then(|node| choice(ctx, node, "admission", ADMISSION_ENGINES));
    let devices_node = obj.field("devices");
    let devices = devices_node.and_then(|node| choice(ctx, node, "devices", DEVICE_MODES));
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
    } else if name.value == FLEET_REPORTS_FOLDER {
        ctx.push(
            Diagnostic::error(
                Code::NameInvalid,
                name.span,
                format!("cell name `{}` is reserved", name.value),
            )
            .with_label("`out/reports/` holds the showback reports of every cell")
            .with_help("rename the cell; `reports` is a fleet-wide folder of `out/`"),
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
    if serving_node.is_some() && serving.is_none() {
        // An unreadable serving declaration emits no limits rather than a guess at them.
        complete = false;
    }
    let endpoints = keep_read(endpoints, &mut complete);
    let dra_device_classes = keep_read(dra_device_classes, &mut complete);
    // Network declarations that could not be read are not replaced by defaults that would
    // open or close something their author did not mean.
    if dns_node.is_some() && dns.is_none() || metrics_node.is_some() && metrics.is_none() {
        complete = false;
    }
    // An unreadable metering declaration emits no rules rather than rules it did not mean.
    if metering_node.is_some() && metering.is_none() {
        complete = false;
    }
    // An unreadable backend is never replaced by the default: the cell would then be lowered
    // to a stack its author did not name.
    if scheduler_node.is_some() && scheduler.is_none()
        || admission_node.is_some() && admission.is_none()
        || devices_node.is_some() && devices.is_none()
    {
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
        metering,
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
        serving,
        scheduler,
        admission,
        devices,
        complete,
    })
}

/// The schedulers a cell may declare.
const SCHEDULERS: &[(&str, Scheduler)] =
    &[("kueue", Scheduler::Kueue), ("volcano", Scheduler::Volcano)];
/// The admission engines a cell may declare; `validate/backends.rs` refuses the ones tenantc
/// does not emit yet.
const ADMISSION_ENGINES: &[(&str, AdmissionEngine)] = &[
    ("vap", AdmissionEngine::Vap),
    ("kyverno", AdmissionEngine::Kyverno),
    ("gatekeeper", AdmissionEngine::Gatekeeper),
];
/// The device modes a cell may declare; `validate/backends.rs` refuses the ones tenantc does
/// not emit yet.
const DEVICE_MODES: &[(&str, DeviceMode)] = &[
    ("device-plugin", DeviceMode::DevicePlugin),
    ("dra", DeviceMode::Dra),
];

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

/// The fleet-wide folder of `out/` with the showback reports of every cell (`lower`'s
/// `FLEET_REPORTS_FOLDER`), which no cell may be named.
pub const FLEET_REPORTS_FOLDER: &str = "reports";

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
        // An older minor is read as written: whether the cell's backends run on it is a rule
        // across fields (`validate/backends.rs`: ValidatingAdmissionPolicy from 1.30, DRA from
        // 1.34), never decided here.
        Some((1, minor)) if minor <= *KUBERNETES_MINORS.end() => {
            Some(Spanned::new((1, minor), text.span))
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

/// Why `name` cannot be the serving metric, as a message about it and a label: it is not a
/// Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`, the classic syntax every PromQL version
/// reads unquoted), or it is one of the series the chargeback rules record.
fn metric_name_problem(name: &str) -> Option<(String, String)> {
    let not_a_name = |label: String| {
        Some((
            format!(
                "serving metric `{}` is not a metric name",
                name.escape_default()
            ),
            label,
        ))
    };
    let Some(first) = name.chars().next() else {
        return not_a_name("a metric name is not empty".to_string());
    };
    if !(first.is_ascii_alphabetic() || first == '_' || first == ':') {
        return not_a_name(format!(
            "`{}` cannot start a metric name: only a letter, `_` or `:` can",
            first.escape_default()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|ch| !(ch.is_ascii_alphanumeric() || *ch == '_' || *ch == ':'))
    {
        return not_a_name(format!(
            "`{}` is not allowed in a metric name, which holds letters, digits, `_` and `:`",
            bad.escape_default()
        ));
    }
    if name.starts_with(Metering::RECORDED_PREFIX) {
        return Some((
            format!("serving metric `{name}` is a series the chargeback rules record"),
            format!(
                "`{}` names tenantc's recorded series, so the KV-seat rule would read its own output",
                Metering::RECORDED_PREFIX
            ),
        ));
    }
    None
}

fn metering(ctx: &Ctx, node: &Node, metrics: Option<&Metrics>) -> Option<Metering> {
    let mut obj = Obj::new(ctx, node, "metering")?;
    let namespace = obj.opt_str("namespace");
    let rule_label = obj.opt_str("rule-label");
    let serving_metric = obj.opt_str("serving-metric");
    let span = obj.span;
    if namespace.is_none() && metrics.is_none() {
        obj.missing("namespace", "namespace", "namespace=\"monitoring\"");
    }
    obj.finish();
    if namespace.is_none() && metrics.is_none() {
        return None;
    }
    let namespace_ok = namespace
        .as_ref()
        .is_none_or(|namespace| check_name(ctx, namespace, "metering namespace", names::dns_label));
    let label_ok = rule_label.as_ref().is_none_or(|label| {
        check_selector(
            ctx,
            label,
            "Prometheus ruleSelector's",
            "release=kube-prometheus-stack",
        )
    });
    let metric_ok = match &serving_metric {
        Some(metric) => match metric_name_problem(&metric.value) {
            Some((message, reason)) => {
                ctx.push(
                    Diagnostic::error(Code::MetricNameInvalid, metric.span, message)
                    .with_label(reason)
                    .with_help(
                        "name the metric the serving stack exports, such as `vllm:num_requests_running`",
                    ),
                );
                false
            }
            None => true,
        },
        None => true,
    };
    (namespace_ok && label_ok && metric_ok).then_some(Metering {
        span,
        namespace,
        rule_label,
        serving_metric,
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
