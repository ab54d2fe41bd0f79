//! Reads a cell's `serving` block: the gateway that authenticates served requests and the
//! models served once for several tenants, each tenant with its limits.
//!
//! Consumes: the `serving` node of a cell. Produces: a [`Serving`], or `None` (with located
//! diagnostics) when any part could not be read, so no limit is emitted from a guess.
//!
//! Invariant: nothing here lets a declaration name what a limit is keyed on; the key is the
//! gateway's `tenant-header`, declared once, and every limit of `lower/serving.rs` uses it.

use super::check_name;
use super::reader::{Ctx, Obj, choice};

use crate::model::{
    GatewayKind, PrefixCache, ServedModel, ServedTenant, Serving, ServingGateway, ServingStack,
};
use crate::names;
use crate::parse::Node;

const GATEWAY_KINDS: &[(&str, GatewayKind)] = &[("envoy-gateway", GatewayKind::EnvoyGateway)];
const STACKS: &[(&str, ServingStack)] = &[
    ("sglang", ServingStack::Sglang),
    ("vllm", ServingStack::Vllm),
];
const PREFIX_CACHES: &[(&str, PrefixCache)] =
    &[("off", PrefixCache::Off), ("shared", PrefixCache::Shared)];

/// The largest requests-per-second or concurrency a model or tenant may declare: the largest
/// value a BackendTrafficPolicy's `requests` and `maxParallelRequests` take.
pub const MAX_SERVING_LIMIT: i64 = 4_294_967_295;

/// Reads `serving { gateway …; model … { tenant …; } }` of a cell.
pub(super) fn serving(ctx: &Ctx, node: &Node) -> Option<Serving> {
    let mut obj = Obj::new(ctx, node, "serving")?;
    let gateway_node = obj.field("gateway");
    if gateway_node.is_none() {
        obj.missing(
            "gateway",
            "gateway",
            "gateway \"envoy-gateway\" name=\"<gateway>\" namespace=\"<namespace>\" tenant-header=\"x-tenant\" claim=\"tenant\"",
        );
    }
    let models: Vec<Option<ServedModel>> = obj
        .items("model", "models")
        .into_iter()
        .map(|node| model(ctx, node))
        .collect();
    let span = obj.span;
    obj.finish();
    let gateway = gateway_node.and_then(|node| gateway(ctx, node));
    let models: Vec<ServedModel> = models.into_iter().collect::<Option<_>>()?;
    Some(Serving {
        span,
        gateway: gateway?,
        models,
    })
}

/// Whether `text` is a lowercase HTTP header name (letters, digits and `-`, starting with a
/// letter), as the gateway's route matches and rate-limit selectors compare it.
fn header_name_ok(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|first| first.is_ascii_lowercase())
        && text.len() <= 256
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Whether `text` is a JWT claim name the gateway can copy (letters, digits, `_`, `-`, `.`
/// and `:`, not empty).
fn claim_ok(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 256
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

fn gateway(ctx: &Ctx, node: &Node) -> Option<ServingGateway> {
    let mut obj = Obj::new(ctx, node, "gateway")?;
    let kind = match obj.arg(0, "kind") {
        Some(node) => choice(ctx, node, "kind", GATEWAY_KINDS),
        None => {
            obj.missing_arg("kind", "gateway \"envoy-gateway\" name=\"<gateway>\" …");
            None
        }
    };
    let name = obj.req_str("name", "name=\"<gateway>\"");
    let namespace = obj.req_str("namespace", "namespace=\"<namespace>\"");
    let tenant_header = obj.req_str("tenant-header", "tenant-header=\"x-tenant\"");
    let claim = obj.req_str("claim", "claim=\"tenant\"");
    let span = obj.span;
    obj.finish();
    let (kind, name, namespace, tenant_header, claim) =
        (kind?, name?, namespace?, tenant_header?, claim?);
    let name_ok = check_name(ctx, &name, "gateway", names::dns_subdomain);
    let namespace_ok = check_name(ctx, &namespace, "gateway namespace", names::dns_label);
    let header_ok = super::check_text_with_help(
        ctx,
        &tenant_header,
        "tenant header",
        header_name_ok,
        "a lowercase header name of letters, digits and `-`, starting with a letter",
        "write the header in lowercase, as the gateway's route matches and rate-limit selectors compare it, such as `x-tenant`",
    );
    let claim_ok = super::check_text_with_help(
        ctx,
        &claim,
        "claim",
        claim_ok,
        "a claim name of letters, digits, `_`, `-`, `.` and `:`",
        "name the claim of the identity provider's tokens that holds the tenant, such as `tenant`",
    );
    (name_ok && namespace_ok && header_ok && claim_ok).then_some(ServingGateway {
        span,
        kind,
        name,
        namespace,
        tenant_header,
        claim,
    })
}

fn model(ctx: &Ctx, node: &Node) -> Option<ServedModel> {
    let example = "model \"<model>\" stack=\"vllm\" namespace=\"<namespace>\" service=\"<service>\" port=8000 requests-per-second=100 concurrency=32 prefix-cache=\"shared\" { tenant …; }";
    let mut obj = Obj::new(ctx, node, "model")?;
    let name = obj.req_arg_str(0, "name", example);
    let stack = match obj.field("stack") {
        Some(node) => choice(ctx, node, "stack", STACKS),
        None => {
            obj.missing("stack", "stack", "stack=\"vllm\"");
            None
        }
    };
    let namespace = obj.req_str("namespace", "namespace=\"<namespace>\"");
    let service = obj.req_str("service", "service=\"<service>\"");
    let port = obj.req_int("port", 1..=65_535, "port=8000");
    let requests_per_second = obj.req_int(
        "requests-per-second",
        1..=MAX_SERVING_LIMIT,
        "requests-per-second=100",
    );
    let concurrency = obj.req_int("concurrency", 1..=MAX_SERVING_LIMIT, "concurrency=32");
    let prefix_cache = match obj.field("prefix-cache") {
        Some(node) => choice(ctx, node, "prefix-cache", PREFIX_CACHES),
        None => {
            obj.missing("prefix-cache", "prefix-cache", "prefix-cache=\"shared\"");
            None
        }
    };
    let tenant_nodes = obj.items("tenant", "tenants");
    if tenant_nodes.is_empty() {
        obj.missing(
            "tenant",
            "tenants",
            "tenant \"<tenant>\" requests-per-second=50 concurrency=16",
        );
    }
    let tenants: Vec<Option<ServedTenant>> = tenant_nodes
        .into_iter()
        .map(|node| served_tenant(ctx, node))
        .collect();
    let span = obj.span;
    obj.finish();
    let name = name?;
    let namespace = namespace?;
    let service = service?;
    let name_ok = check_name(ctx, &name, "served model", names::dns_label);
    let namespace_ok = check_name(ctx, &namespace, "served model namespace", names::dns_label);
    let service_ok = check_name(ctx, &service, "Service", names::dns_label);
    let tenants: Vec<ServedTenant> = tenants.into_iter().collect::<Option<_>>()?;
    if !(name_ok && namespace_ok && service_ok) || tenants.is_empty() {
        return None;
    }
    Some(ServedModel {
        span,
        name,
        stack: stack?,
        namespace,
        service,
        port: port?,
        requests_per_second: requests_per_second?,
        concurrency: concurrency?,
        prefix_cache: prefix_cache?,
        tenants,
    })
}

fn served_tenant(ctx: &Ctx, node: &Node) -> Option<ServedTenant> {
    let example = "tenant \"<tenant>\" requests-per-second=50 concurrency=16";
    let mut obj = Obj::new(ctx, node, "tenant")?;
    let tenant = obj.req_arg_str(0, "name", example);
    let requests_per_second = obj.req_int(
        "requests-per-second",
        1..=MAX_SERVING_LIMIT,
        "requests-per-second=50",
    );
    let concurrency = obj.req_int("concurrency", 1..=MAX_SERVING_LIMIT, "concurrency=16");
    let span = obj.span;
    obj.finish();
    let tenant = tenant?;
    check_name(ctx, &tenant, "tenant", names::dns_label).then_some(ServedTenant {
        span,
        tenant,
        requests_per_second: requests_per_second?,
        concurrency: concurrency?,
    })
}
