//! Resolves a cell's shared serving into what `lower/serving.rs` emits per tenant: the key of
//! every limit (the gateway-set tenant header and the tenant's value of it), the request-rate
//! and concurrency limits, the fast reject above them, and the cache partition setting of the
//! model's stack ([docs/serving.md](../../docs/serving.md)).
//!
//! Consumes: a validated cell. Produces: a [`ServingPlan`], and per tenant the
//! [`TenantServing`] limits that `describe` shows.
//!
//! Invariants:
//! - A [`TenantKey`] is made only here, from the cell's gateway and the tenant's name, so no
//!   limit can be keyed on a header the gateway does not set from the authenticated claim.
//! - Sorted by model, then tenant; a model that names an unknown tenant never reaches here
//!   (`validate/serving.rs`).

use serde::Serialize;

use crate::model::{Cell, GatewayKind, PrefixCache, ServingStack};

/// The seconds a rejected client is told to wait (`retry-after`): the rate limit's window.
pub const RETRY_AFTER_SECONDS: i64 = 1;

/// A cell's serving gateway and its shared models.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingPlan {
    /// The gateway implementation.
    pub kind: GatewayKind,
    /// The Gateway's name.
    pub gateway: String,
    /// The Gateway's namespace.
    pub gateway_namespace: String,
    /// The header the gateway sets from the authenticated claim.
    pub tenant_header: String,
    /// The claim it is set from.
    pub claim: String,
    /// The shared models, sorted by name.
    pub models: Vec<ModelPlan>,
}

/// A model served once for several tenants.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPlan {
    /// The model's name.
    pub name: String,
    /// Its engine.
    pub stack: ServingStack,
    /// The namespace of its Service, routes and policies.
    pub namespace: String,
    /// Its Service.
    pub service: String,
    /// The Service's port.
    pub port: i32,
    /// Whether its prefix cache is shared.
    pub prefix_cache: PrefixCache,
    /// Declared capacity: requests per second.
    pub requests_per_second: i64,
    /// Declared capacity: concurrent requests.
    pub concurrency: i64,
    /// Its tenants, sorted by name.
    pub tenants: Vec<ServedTenantPlan>,
}

/// What a request of one tenant is recognised by: the gateway-set header and its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TenantKey {
    header: String,
    value: String,
}

impl TenantKey {
    /// The header name (set by the gateway from the authenticated claim).
    pub fn header(&self) -> &str {
        &self.header
    }

    /// The tenant's value of it.
    pub fn value(&self) -> &str {
        &self.value
    }
}

/// How a stack keeps one tenant's prefix (KV) cache entries apart from another's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CachePartition {
    /// The request field the stack reads (vLLM and SGLang: `cache_salt`).
    pub field: &'static str,
    /// The tenant's value of it.
    pub value: String,
}

/// One tenant of a shared model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedTenantPlan {
    /// The tenant.
    pub tenant: String,
    /// What its requests are recognised by.
    pub key: TenantKey,
    /// Requests per second above which the gateway answers 429.
    pub requests_per_second: i64,
    /// Concurrent requests above which the gateway answers 429.
    pub concurrency: i64,
    /// The cache partition setting of the model's stack for this tenant.
    pub cache: CachePartition,
}

/// A tenant's limits on one shared model, as `describe` shows them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantServing {
    /// The model.
    pub model: String,
    /// Its stack.
    pub stack: ServingStack,
    /// Requests per second.
    pub requests_per_second: i64,
    /// Concurrent requests.
    pub concurrency: i64,
    /// The cache partition setting (`cache_salt=<value>`).
    pub cache: CachePartition,
}

/// The cache partition setting of `stack` for `tenant` of `model` in `cell`: both stacks read
/// a per-request `cache_salt` and hash it into the first block of the prefix cache, so requests
/// with different salts never share cached blocks.
fn cache_partition(stack: ServingStack, cell: &str, model: &str, tenant: &str) -> CachePartition {
    let field = match stack {
        ServingStack::Vllm | ServingStack::Sglang => "cache_salt",
    };
    CachePartition {
        field,
        value: format!("tenantc:{cell}:{model}:{tenant}"),
    }
}

/// The serving plan of a cell, if it declares `serving`.
pub fn serving_plan(cell: &Cell) -> Option<ServingPlan> {
    let serving = cell.serving.as_ref()?;
    let header = serving.gateway.tenant_header.value.clone();
    let mut models: Vec<ModelPlan> = serving
        .models
        .iter()
        .map(|model| {
            let mut tenants: Vec<ServedTenantPlan> = model
                .tenants
                .iter()
                .map(|served| ServedTenantPlan {
                    tenant: served.tenant.value.clone(),
                    key: TenantKey {
                        header: header.clone(),
                        value: served.tenant.value.clone(),
                    },
                    requests_per_second: served.requests_per_second.value,
                    concurrency: served.concurrency.value,
                    cache: cache_partition(
                        model.stack.value,
                        &cell.name.value,
                        &model.name.value,
                        &served.tenant.value,
                    ),
                })
                .collect();
            tenants.sort_by(|left, right| left.tenant.cmp(&right.tenant));
            ModelPlan {
                name: model.name.value.clone(),
                stack: model.stack.value,
                namespace: model.namespace.value.clone(),
                service: model.service.value.clone(),
                port: i32::try_from(model.port.value).unwrap_or(i32::MAX),
                prefix_cache: model.prefix_cache.value,
                requests_per_second: model.requests_per_second.value,
                concurrency: model.concurrency.value,
                tenants,
            }
        })
        .collect();
    models.sort_by(|left, right| left.name.cmp(&right.name));
    Some(ServingPlan {
        kind: serving.gateway.kind.value,
        gateway: serving.gateway.name.value.clone(),
        gateway_namespace: serving.gateway.namespace.value.clone(),
        tenant_header: header,
        claim: serving.gateway.claim.value.clone(),
        models,
    })
}

/// A tenant's limits on every shared model of the cell, sorted by model.
pub fn tenant_serving(plan: Option<&ServingPlan>, tenant: &str) -> Vec<TenantServing> {
    plan.map(|plan| {
        plan.models
            .iter()
            .flat_map(|model| {
                model
                    .tenants
                    .iter()
                    .filter(|served| served.tenant == tenant)
                    .map(|served| TenantServing {
                        model: model.name.clone(),
                        stack: model.stack,
                        requests_per_second: served.requests_per_second,
                        concurrency: served.concurrency,
                        cache: served.cache.clone(),
                    })
            })
            .collect()
    })
    .unwrap_or_default()
}
