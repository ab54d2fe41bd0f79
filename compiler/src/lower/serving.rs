//! The per-tenant gateway objects of a cell's shared models
//! ([docs/serving.md](../../docs/serving.md)).
//!
//! Consumes: the cell's serving plan (`plan::serving`). Produces, per model and tenant, as
//! `(file in <cell>/serving/, object)` in the model's namespace: a Gateway API HTTPRoute that
//! sends the model's traffic carrying the tenant's value of the gateway-set header to the
//! model's Service, and an Envoy Gateway BackendTrafficPolicy on that route with the tenant's
//! request-rate limit (local, per second, selected on the same header), its concurrency limit
//! (the route backend's circuit breaker: `maxConnections` and `maxParallelRequests`, with as
//! many waiting for a connection) and the fast reject above either: 429 with `retry-after`.
//! Where the model's prefix cache is shared, also an Envoy Gateway EnvoyExtensionPolicy on the
//! route whose Lua filter (`cache_salt.lua`) sets the request body's `cache_salt` to the
//! tenant's partition value and refuses a request that sets its own.
//!
//! Invariants:
//! - Every header match and rate-limit selector is built from a [`TenantKey`] of the plan,
//!   which only the gateway's declared `tenant-header` makes, so no limit is keyed on a header
//!   the client chooses.
//! - One route per tenant, so the concurrency limit (a circuit breaker of the route's backend)
//!   is the tenant's alone; a request without the header matches no route.
//! - The cache salt a tenant's requests reach the engine with is the plan's value for that
//!   tenant, never the client's: the filter refuses a body whose own top-level keys include
//!   `cache_salt` however it is escaped, and appends the tenant's as the last key.
//! - A plain mapping of the plan: every number comes from it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{body, managed_labels};
use crate::emit::{Body, InternalError};
use crate::kube::gateway::{
    BackendTrafficPolicy, BackendTrafficPolicySpec, CircuitBreaker, CustomResponse,
    CustomResponseMatch, EnvoyExtensionPolicy, EnvoyExtensionPolicySpec, GATEWAY_API_GROUP,
    HeaderMatch, HttpBackendRef, HttpHeader, HttpHeaderMatch, HttpPathMatch, HttpRoute,
    HttpRouteMatch, HttpRouteRule, HttpRouteSpec, LocalPolicyTargetReference, LocalRateLimit,
    LuaFilter, ParentReference, RateLimit, RateLimitRule, RateLimitSelectCondition, RateLimitValue,
    ResponseHeaderMatch, ResponseHeaders, ResponseOverride, StatusCodeMatch, StringMatch,
};
use crate::model::PrefixCache;
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

/// The Lua filter that sets a tenant's cache salt; `@SALT@` stands for the value.
const CACHE_SALT_SCRIPT: &str = include_str!("cache_salt.lua");
/// What `CACHE_SALT_SCRIPT` has in place of the salt.
const SALT_PLACEHOLDER: &str = "@SALT@";

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
            if model.prefix_cache == PrefixCache::Shared {
                objects.push((
                    format!("envoyextensionpolicy-{name}.yaml"),
                    body(&cache_partition(model, served, &name)?)?,
                ));
            }
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
            // The engine never has more than `concurrency` requests of the tenant: one per
            // connection over HTTP/1.1, `maxParallelRequests` over HTTP/2. Requests waiting for
            // a connection (Envoy counts a request as pending while its connection is set up)
            // are bounded by the same figure, and one more is refused at once.
            circuit_breaker: CircuitBreaker {
                max_connections: served.concurrency,
                max_parallel_requests: served.concurrency,
                max_pending_requests: served.concurrency,
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

/// The Lua filter of `served` on `model`'s route, with the tenant's salt in its string literal.
pub fn cache_salt_script(served: &ServedTenantPlan) -> Result<String, InternalError> {
    let salt = &served.cache.value;
    // The salt is made of validated names and `:`; anything else could end the Lua string.
    if !salt
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.:".contains(&b))
    {
        return Err(InternalError(format!(
            "cache salt {salt:?} has a character the Lua literal cannot hold"
        )));
    }
    Ok(CACHE_SALT_SCRIPT.replace(SALT_PLACEHOLDER, salt))
}

fn cache_partition(
    model: &ModelPlan,
    served: &ServedTenantPlan,
    name: &str,
) -> Result<EnvoyExtensionPolicy, InternalError> {
    Ok(EnvoyExtensionPolicy::new(
        meta(model, name),
        EnvoyExtensionPolicySpec {
            target_refs: vec![LocalPolicyTargetReference {
                group: GATEWAY_API_GROUP.to_string(),
                kind: "HTTPRoute".to_string(),
                name: name.to_string(),
            }],
            lua: vec![LuaFilter::inline(cache_salt_script(served)?)],
        },
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use crate::testing::support::compile_files;

    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "serving" value=100000
    pool "mig" {
        gpu "H100-80GB-SXM"
        nodes 1 gpus-per-node=8
        sharing "mig"
        mig-layout "small" nodes=1 { profile "1g.10gb" 7; }
    }
    serving {
        gateway "envoy-gateway" name="inference" namespace="gateways" tenant-header="x-verified-tenant" claim="org_id"
        model "llama" stack="vllm" namespace="serving" service="llama" port=8000 requests-per-second=100 concurrency=32 prefix-cache="shared" {
            tenant "b" requests-per-second=40 concurrency=12
            tenant "a" requests-per-second=60 concurrency=16
        }
    }
}
"#;

    fn tenant(name: &str) -> String {
        format!(
            r#"tenant "{name}" {{
    org "{name}"
    team "t"
    trust "mig"
    groups admin="{name}-admins"
    workload "infer" service-account="server" priority="serving"
    quota cell="c1" cpu="8" memory="64Gi" pods=20 {{
        pool "mig" profile="1g.10gb" reserved=2 workload="infer"
    }}
}}
"#
        )
    }

    fn text(tree: &crate::emit::OutputTree, path: &str) -> String {
        let bytes = tree
            .get(path)
            .unwrap_or_else(|| panic!("{path} not emitted"));
        String::from_utf8(bytes.clone()).unwrap()
    }

    #[test]
    fn every_limit_is_keyed_by_the_gateway_set_header_and_rejects_with_429_and_retry_after() {
        let (a, b) = (tenant("a"), tenant("b"));
        let compilation = compile_files(&[
            ("cells/c1.kdl", CELL),
            ("tenants/a.kdl", &a),
            ("tenants/b.kdl", &b),
        ]);
        let tree = compilation.output.as_ref().expect("compiles");
        for (name, rate, concurrency) in [("a", 60, 16), ("b", 40, 12)] {
            let key = format!(
                "- type: Exact\n            name: x-verified-tenant\n            value: {name}\n"
            );
            let route = text(tree, &format!("c1/serving/httproute-llama-{name}.yaml"));
            assert!(route.contains("  namespace: serving\n"), "{route}");
            let route_key = key.replace("            ", "        ");
            assert!(route.contains(&route_key), "{route}");
            assert_eq!(
                route.matches("name: x-verified-tenant").count(),
                1,
                "{route}"
            );
            let policy = text(
                tree,
                &format!("c1/serving/backendtrafficpolicy-llama-{name}.yaml"),
            );
            assert!(
                policy.contains(&format!("    name: llama-{name}\n")),
                "{policy}"
            );
            assert!(policy.contains(&key), "{policy}");
            assert_eq!(
                policy.matches("name: x-verified-tenant").count(),
                1,
                "{policy}"
            );
            assert!(
                policy.contains(&format!("requests: {rate}\n          unit: Second\n")),
                "{policy}"
            );
            assert!(
                policy.contains(&format!(
                    "maxConnections: {concurrency}\n    maxParallelRequests: {concurrency}\n    maxPendingRequests: {concurrency}\n"
                )),
                "{policy}"
            );
            assert_eq!(policy.matches("statusCode: 429\n").count(), 2, "{policy}");
            assert_eq!(
                policy
                    .matches("- name: retry-after\n          value: \"1\"\n")
                    .count(),
                2,
                "{policy}"
            );
        }
        // With the prefix cache shared, each tenant's route also sets its cache salt.
        for name in ["a", "b"] {
            let extension = text(
                tree,
                &format!("c1/serving/envoyextensionpolicy-llama-{name}.yaml"),
            );
            assert!(
                extension.contains(&format!(
                    "  targetRefs:\n  - group: gateway.networking.k8s.io\n    kind: HTTPRoute\n    name: llama-{name}\n"
                )),
                "{extension}"
            );
            assert!(
                extension.contains(&format!(
                    "\n      local SALT = \"tenantc:c1:llama:{name}\"\n"
                )),
                "{extension}"
            );
            assert!(!extension.contains("@SALT@"), "{extension}");
        }
        // Nothing else of the cell names a header: the serving folder holds the routes, the
        // policies, the cache partitions and their kustomization only.
        let files: Vec<&String> = tree
            .keys()
            .filter(|path| path.starts_with("c1/serving/"))
            .collect();
        assert_eq!(files.len(), 7, "{files:?}");
        // The plan carries each tenant's limits for `describe`.
        let plan = compilation.plan.as_ref().expect("a plan");
        let tenant_a = plan.cells[0]
            .tenants
            .iter()
            .find(|t| t.name == "a")
            .unwrap();
        assert_eq!(tenant_a.serving.len(), 1);
        assert_eq!(tenant_a.serving[0].requests_per_second, 60);
        assert_eq!(tenant_a.serving[0].cache.field, "cache_salt");
        assert_eq!(tenant_a.serving[0].cache.value, "tenantc:c1:llama:a");
    }
}
