//! The per-tenant gateway objects of a cell's shared models
//! ([docs/serving.md](../../docs/serving.md)).
//!
//! Consumes: the cell's serving plan (`plan::serving`). Produces, per model and tenant, as
//! `(file in <cell>/serving/, object)` in the model's namespace: a Gateway API HTTPRoute that
//! sends the model's traffic carrying the tenant's value of the gateway-set header to the
//! model's Service, and an Envoy Gateway BackendTrafficPolicy on that route with the tenant's
//! request-rate limit (local, per second, selected on the same header), its concurrency limit
//! (the route backend's `maxParallelRequests`) and the fast reject above either: 429 with
//! `retry-after`.
//!
//! Invariants:
//! - Every header match and rate-limit selector is built from a [`TenantKey`] of the plan,
//!   which only the gateway's declared `tenant-header` makes, so no limit is keyed on a header
//!   the client chooses.
//! - One route per tenant, so the concurrency limit (a circuit breaker of the route's backend)
//!   is the tenant's alone; a request without the header matches no route.
//! - A plain mapping of the plan: every number comes from it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{body, managed_labels};
use crate::emit::{Body, InternalError};
use crate::kube::gateway::{
    BackendTrafficPolicy, BackendTrafficPolicySpec, CircuitBreaker, CustomResponse,
    CustomResponseMatch, GATEWAY_API_GROUP, HeaderMatch, HttpBackendRef, HttpHeader,
    HttpHeaderMatch, HttpPathMatch, HttpRoute, HttpRouteMatch, HttpRouteRule, HttpRouteSpec,
    LocalPolicyTargetReference, LocalRateLimit, ParentReference, RateLimit, RateLimitRule,
    RateLimitSelectCondition, RateLimitValue, ResponseHeaderMatch, ResponseHeaders,
    ResponseOverride, StatusCodeMatch, StringMatch,
};
use crate::plan::serving::{
    ModelPlan, RETRY_AFTER_SECONDS, ServedTenantPlan, ServingPlan, TenantKey,
};

/// The status Envoy's local rate limit answers with, and the one every reject is sent as.
const TOO_MANY_REQUESTS: i64 = 429;
/// The status of a request the circuit breaker refuses.
const OVERFLOWED: i64 = 503;
/// The header Envoy sets on a response it generated because a circuit breaker overflowed (or
/// a rate limit refused), which tells an overflow from the model's own 503.
const OVERLOADED_HEADER: &str = "x-envoy-overloaded";

/// The name of a tenant's route and policy on a model.
pub fn object_name(model: &str, tenant: &str) -> String {
    format!("{model}-{tenant}")
}

/// The serving objects of a cell.
pub(super) fn objects(plan: &ServingPlan) -> Result<Vec<(String, Body)>, InternalError> {
    let mut objects = Vec::new();
    for model in &plan.models {
        for served in &model.tenants {
            let name = object_name(&model.name, &served.tenant);
            objects.push((
                format!("httproute-{name}.yaml"),
                body(&route(plan, model, served, &name))?,
            ));
            objects.push((
                format!("backendtrafficpolicy-{name}.yaml"),
                body(&policy(model, served, &name))?,
            ));
        }
    }
    Ok(objects)
}

fn meta(model: &ModelPlan, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(model.namespace.clone()),
        labels: Some(managed_labels()),
        ..ObjectMeta::default()
    }
}

fn header_match(key: &TenantKey) -> HttpHeaderMatch {
    HttpHeaderMatch {
        match_type: "Exact".to_string(),
        name: key.header().to_string(),
        value: key.value().to_string(),
    }
}

fn selector(key: &TenantKey) -> RateLimitSelectCondition {
    RateLimitSelectCondition {
        headers: vec![HeaderMatch {
            match_type: "Exact".to_string(),
            name: key.header().to_string(),
            value: key.value().to_string(),
        }],
    }
}

fn route(
    plan: &ServingPlan,
    model: &ModelPlan,
    served: &ServedTenantPlan,
    name: &str,
) -> HttpRoute {
    HttpRoute::new(
        meta(model, name),
        HttpRouteSpec {
            parent_refs: vec![ParentReference {
                group: GATEWAY_API_GROUP.to_string(),
                kind: "Gateway".to_string(),
                name: plan.gateway.clone(),
                namespace: plan.gateway_namespace.clone(),
            }],
            rules: vec![HttpRouteRule {
                matches: vec![HttpRouteMatch {
                    path: HttpPathMatch {
                        match_type: "PathPrefix".to_string(),
                        value: "/".to_string(),
                    },
                    headers: vec![header_match(&served.key)],
                }],
                backend_refs: vec![HttpBackendRef {
                    group: String::new(),
                    kind: "Service".to_string(),
                    name: model.service.clone(),
                    port: model.port,
                }],
            }],
        },
    )
}

/// A 429 with `retry-after` in place of the responses `matches` selects.
fn reject(matches: CustomResponseMatch) -> ResponseOverride {
    ResponseOverride {
        matches,
        response: CustomResponse {
            status_code: TOO_MANY_REQUESTS,
            header: ResponseHeaders {
                set: vec![HttpHeader {
                    name: "retry-after".to_string(),
                    value: RETRY_AFTER_SECONDS.to_string(),
                }],
            },
        },
    }
}

fn status(code: i64) -> StatusCodeMatch {
    StatusCodeMatch {
        match_type: "Value".to_string(),
        value: code,
    }
}

fn policy(model: &ModelPlan, served: &ServedTenantPlan, name: &str) -> BackendTrafficPolicy {
    BackendTrafficPolicy::new(
        meta(model, name),
        BackendTrafficPolicySpec {
            target_refs: vec![LocalPolicyTargetReference {
                group: GATEWAY_API_GROUP.to_string(),
                kind: "HTTPRoute".to_string(),
                name: name.to_string(),
            }],
            rate_limit: RateLimit {
                local: LocalRateLimit {
                    rules: vec![RateLimitRule {
                        client_selectors: vec![selector(&served.key)],
                        limit: RateLimitValue {
                            requests: served.requests_per_second,
                            unit: "Second".to_string(),
                        },
                    }],
                },
            },
            circuit_breaker: CircuitBreaker {
                max_parallel_requests: served.concurrency,
            },
            response_override: vec![
                // The rate limit's own 429, given a `retry-after`.
                reject(CustomResponseMatch {
                    status_codes: vec![status(TOO_MANY_REQUESTS)],
                    response_headers: Vec::new(),
                }),
                // The circuit breaker's overflow, sent as a 429 rather than a 503 the client
                // would take for the model failing; the model's own 503s carry no such header.
                reject(CustomResponseMatch {
                    status_codes: vec![status(OVERFLOWED)],
                    response_headers: vec![ResponseHeaderMatch {
                        name: OVERLOADED_HEADER.to_string(),
                        value: StringMatch {
                            match_type: "Exact".to_string(),
                            value: "true".to_string(),
                        },
                    }],
                }),
            ],
        },
    )
}
