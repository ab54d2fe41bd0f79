//! Gateway API's `gateway.networking.k8s.io/v1` HTTPRoute (v1.3.0, standard channel) and Envoy
//! Gateway's `gateway.envoyproxy.io/v1alpha1` BackendTrafficPolicy and EnvoyExtensionPolicy,
//! for the per-tenant serving limits and cache partition of issue 20
//! ([docs/serving.md](../../docs/serving.md)).
//!
//! Consumes: nothing; `lower/serving.rs` builds these structs. Produces: objects whose fields
//! all exist in the vendored CRDs `schema/crds/gateway-api/` and `schema/crds/envoy-gateway/`
//! (tested below).
//!
//! Invariants: only the subset tenantc emits is modelled; `apiVersion` and `kind` are filled by
//! the constructors and cannot be set by callers.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// The API group of Gateway API objects, which a policy's target reference names.
pub const GATEWAY_API_GROUP: &str = "gateway.networking.k8s.io";

/// An HTTPRoute: requests of a Gateway that match its rules go to its backends.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRoute {
    api_version: &'static str,
    kind: &'static str,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The route.
    pub spec: HttpRouteSpec,
}

impl HttpRoute {
    /// An HTTPRoute with its `apiVersion` and `kind`.
    pub fn new(metadata: ObjectMeta, spec: HttpRouteSpec) -> HttpRoute {
        HttpRoute {
            api_version: "gateway.networking.k8s.io/v1",
            kind: "HTTPRoute",
            metadata,
            spec,
        }
    }
}

/// The route's Gateways and rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteSpec {
    /// The Gateways it attaches to.
    pub parent_refs: Vec<ParentReference>,
    /// Its rules.
    pub rules: Vec<HttpRouteRule>,
}

/// A Gateway a route attaches to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParentReference {
    /// `gateway.networking.k8s.io`.
    pub group: String,
    /// `Gateway`.
    pub kind: String,
    /// The Gateway's name.
    pub name: String,
    /// The Gateway's namespace.
    pub namespace: String,
}

/// A rule: requests matching any of its matches go to its backends.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteRule {
    /// The matches (ORed).
    pub matches: Vec<HttpRouteMatch>,
    /// The backends.
    pub backend_refs: Vec<HttpBackendRef>,
}

/// One match: every condition must hold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpRouteMatch {
    /// The path condition.
    pub path: HttpPathMatch,
    /// Header conditions (ANDed).
    pub headers: Vec<HttpHeaderMatch>,
}

/// A path condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpPathMatch {
    /// `PathPrefix`.
    #[serde(rename = "type")]
    pub match_type: String,
    /// The path.
    pub value: String,
}

/// A header condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpHeaderMatch {
    /// `Exact`.
    #[serde(rename = "type")]
    pub match_type: String,
    /// The header name.
    pub name: String,
    /// The value it must equal.
    pub value: String,
}

/// A Service backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpBackendRef {
    /// `""` (core).
    pub group: String,
    /// `Service`.
    pub kind: String,
    /// The Service's name, in the route's namespace.
    pub name: String,
    /// Its port.
    pub port: i32,
}

/// A BackendTrafficPolicy: how Envoy Gateway treats the traffic of the routes it targets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendTrafficPolicy {
    api_version: &'static str,
    kind: &'static str,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The policy.
    pub spec: BackendTrafficPolicySpec,
}

impl BackendTrafficPolicy {
    /// A BackendTrafficPolicy with its `apiVersion` and `kind`.
    pub fn new(metadata: ObjectMeta, spec: BackendTrafficPolicySpec) -> BackendTrafficPolicy {
        BackendTrafficPolicy {
            api_version: "gateway.envoyproxy.io/v1alpha1",
            kind: "BackendTrafficPolicy",
            metadata,
            spec,
        }
    }
}

/// An EnvoyExtensionPolicy: filters Envoy runs on the requests of the routes it targets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyExtensionPolicy {
    api_version: &'static str,
    kind: &'static str,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The policy.
    pub spec: EnvoyExtensionPolicySpec,
}

impl EnvoyExtensionPolicy {
    /// An EnvoyExtensionPolicy with its `apiVersion` and `kind`.
    pub fn new(metadata: ObjectMeta, spec: EnvoyExtensionPolicySpec) -> EnvoyExtensionPolicy {
        EnvoyExtensionPolicy {
            api_version: "gateway.envoyproxy.io/v1alpha1",
            kind: "EnvoyExtensionPolicy",
            metadata,
            spec,
        }
    }
}

/// The routes an extension policy applies to and its Lua filters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyExtensionPolicySpec {
    /// The routes it applies to, in its own namespace.
    pub target_refs: Vec<LocalPolicyTargetReference>,
    /// Lua filters, run in order.
    pub lua: Vec<LuaFilter>,
}

/// A Lua filter whose source is inline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LuaFilter {
    #[serde(rename = "type")]
    source_type: &'static str,
    /// The script.
    pub inline: String,
}

impl LuaFilter {
    /// A filter running `script`.
    pub fn inline(script: String) -> LuaFilter {
        LuaFilter {
            source_type: "Inline",
            inline: script,
        }
    }
}

/// The policy's targets, rate limit, circuit breaker and response overrides.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendTrafficPolicySpec {
    /// The routes it applies to, in its own namespace.
    pub target_refs: Vec<LocalPolicyTargetReference>,
    /// The request-rate limit.
    pub rate_limit: RateLimit,
    /// The concurrency limit.
    pub circuit_breaker: CircuitBreaker,
    /// Responses rewritten before they reach the client.
    pub response_override: Vec<ResponseOverride>,
}

/// A route a policy targets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocalPolicyTargetReference {
    /// `gateway.networking.k8s.io`.
    pub group: String,
    /// `HTTPRoute`.
    pub kind: String,
    /// The route's name.
    pub name: String,
}

/// A rate limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateLimit {
    /// Enforced by each Envoy replica on its own.
    pub local: LocalRateLimit,
}

/// A local rate limit's rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocalRateLimit {
    /// The rules.
    pub rules: Vec<RateLimitRule>,
}

/// A rule: requests matching its selectors share its limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitRule {
    /// The selectors (ANDed).
    pub client_selectors: Vec<RateLimitSelectCondition>,
    /// The limit.
    pub limit: RateLimitValue,
}

/// A selector on request headers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateLimitSelectCondition {
    /// Header conditions (ANDed).
    pub headers: Vec<HeaderMatch>,
}

/// A header condition of a rate-limit selector.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeaderMatch {
    /// `Exact`.
    #[serde(rename = "type")]
    pub match_type: String,
    /// The header name.
    pub name: String,
    /// The value it must equal.
    pub value: String,
}

/// Requests per unit of time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateLimitValue {
    /// Requests.
    pub requests: i64,
    /// `Second`.
    pub unit: String,
}

/// Circuit breaker thresholds of the targeted route's backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CircuitBreaker {
    /// Connections to the backend at once: the bound on requests in flight over HTTP/1.1,
    /// which carries one request per connection.
    pub max_connections: i64,
    /// Requests in flight at once: the bound over HTTP/2.
    pub max_parallel_requests: i64,
    /// Requests waiting for a connection; one more is refused at once (503 with
    /// `x-envoy-overloaded`).
    pub max_pending_requests: i64,
}

/// A response override: a response matching it is replaced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseOverride {
    /// What it matches.
    #[serde(rename = "match")]
    pub matches: CustomResponseMatch,
    /// The response sent instead.
    pub response: CustomResponse,
}

/// Status codes and response headers a response must all have.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResponseMatch {
    /// Status codes (ORed).
    pub status_codes: Vec<StatusCodeMatch>,
    /// Response headers (ANDed); omitted when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub response_headers: Vec<ResponseHeaderMatch>,
}

/// One status code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusCodeMatch {
    /// `Value`.
    #[serde(rename = "type")]
    pub match_type: String,
    /// The code.
    pub value: i64,
}

/// A response header condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseHeaderMatch {
    /// The header name.
    pub name: String,
    /// The value condition.
    pub value: StringMatch,
}

/// An exact string condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StringMatch {
    /// `Exact`.
    #[serde(rename = "type")]
    pub match_type: String,
    /// The value.
    pub value: String,
}

/// The response sent instead.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResponse {
    /// Its status code.
    pub status_code: i64,
    /// Headers it sets.
    pub header: ResponseHeaders,
}

/// Headers a custom response sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseHeaders {
    /// Headers set, replacing any of the same name.
    pub set: Vec<HttpHeader>,
}

/// A header and its value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpHeader {
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::kube::crd_schema;

    const ROUTE_CRD: &str =
        include_str!("../../../schema/crds/gateway-api/gateway.networking.k8s.io_httproutes.yaml");
    const POLICY_CRD: &str = include_str!(
        "../../../schema/crds/envoy-gateway/gateway.envoyproxy.io_backendtrafficpolicies.yaml"
    );
    const EXTENSION_CRD: &str = include_str!(
        "../../../schema/crds/envoy-gateway/gateway.envoyproxy.io_envoyextensionpolicies.yaml"
    );

    fn meta() -> ObjectMeta {
        ObjectMeta {
            name: Some("llama-acme".to_string()),
            namespace: Some("serving".to_string()),
            ..ObjectMeta::default()
        }
    }

    fn route() -> HttpRoute {
        HttpRoute::new(
            meta(),
            HttpRouteSpec {
                parent_refs: vec![ParentReference {
                    group: GATEWAY_API_GROUP.to_string(),
                    kind: "Gateway".to_string(),
                    name: "inference".to_string(),
                    namespace: "envoy-gateway-system".to_string(),
                }],
                rules: vec![HttpRouteRule {
                    matches: vec![HttpRouteMatch {
                        path: HttpPathMatch {
                            match_type: "PathPrefix".to_string(),
                            value: "/".to_string(),
                        },
                        headers: vec![HttpHeaderMatch {
                            match_type: "Exact".to_string(),
                            name: "x-tenant".to_string(),
                            value: "acme".to_string(),
                        }],
                    }],
                    backend_refs: vec![HttpBackendRef {
                        group: String::new(),
                        kind: "Service".to_string(),
                        name: "llama".to_string(),
                        port: 8000,
                    }],
                }],
            },
        )
    }

    fn policy() -> BackendTrafficPolicy {
        BackendTrafficPolicy::new(
            meta(),
            BackendTrafficPolicySpec {
                target_refs: vec![LocalPolicyTargetReference {
                    group: GATEWAY_API_GROUP.to_string(),
                    kind: "HTTPRoute".to_string(),
                    name: "llama-acme".to_string(),
                }],
                rate_limit: RateLimit {
                    local: LocalRateLimit {
                        rules: vec![RateLimitRule {
                            client_selectors: vec![RateLimitSelectCondition {
                                headers: vec![HeaderMatch {
                                    match_type: "Exact".to_string(),
                                    name: "x-tenant".to_string(),
                                    value: "acme".to_string(),
                                }],
                            }],
                            limit: RateLimitValue {
                                requests: 10,
                                unit: "Second".to_string(),
                            },
                        }],
                    },
                },
                circuit_breaker: CircuitBreaker {
                    max_connections: 4,
                    max_parallel_requests: 4,
                    max_pending_requests: 4,
                },
                response_override: vec![ResponseOverride {
                    matches: CustomResponseMatch {
                        status_codes: vec![StatusCodeMatch {
                            match_type: "Value".to_string(),
                            value: 503,
                        }],
                        response_headers: vec![ResponseHeaderMatch {
                            name: "x-envoy-overloaded".to_string(),
                            value: StringMatch {
                                match_type: "Exact".to_string(),
                                value: "true".to_string(),
                            },
                        }],
                    },
                    response: CustomResponse {
                        status_code: 429,
                        header: ResponseHeaders {
                            set: vec![HttpHeader {
                                name: "retry-after".to_string(),
                                value: "1".to_string(),
                            }],
                        },
                    },
                }],
            },
        )
    }

    #[test]
    fn every_field_of_a_maximal_http_route_exists_in_the_crd_schema() {
        let crd = crd_schema::load(ROUTE_CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1").unwrap();
        let value = serde_json::to_value(route()).unwrap();
        assert_eq!(value["kind"], "HTTPRoute");
        let found = crd_schema::violations(schema, &value);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn every_field_of_a_maximal_backend_traffic_policy_exists_in_the_crd_schema() {
        let crd = crd_schema::load(POLICY_CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1alpha1").unwrap();
        let value = serde_json::to_value(policy()).unwrap();
        assert_eq!(value["kind"], "BackendTrafficPolicy");
        let found = crd_schema::violations(schema, &value);
        assert!(found.is_empty(), "{found:#?}");
    }

    fn extension() -> EnvoyExtensionPolicy {
        EnvoyExtensionPolicy::new(
            meta(),
            EnvoyExtensionPolicySpec {
                target_refs: vec![LocalPolicyTargetReference {
                    group: GATEWAY_API_GROUP.to_string(),
                    kind: "HTTPRoute".to_string(),
                    name: "llama-acme".to_string(),
                }],
                lua: vec![LuaFilter::inline(
                    "function envoy_on_request(handle)\nend\n".to_string(),
                )],
            },
        )
    }

    #[test]
    fn every_field_of_an_envoy_extension_policy_exists_in_the_crd_schema() {
        let crd = crd_schema::load(EXTENSION_CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1alpha1").unwrap();
        let value = serde_json::to_value(extension()).unwrap();
        assert_eq!(value["kind"], "EnvoyExtensionPolicy");
        assert_eq!(value["spec"]["lua"][0]["type"], "Inline");
        let found = crd_schema::violations(schema, &value);
        assert!(found.is_empty(), "{found:#?}");
        let mut wrong = value.clone();
        wrong["spec"]["lua"][0]["source"] = serde_json::json!("x");
        assert!(!crd_schema::violations(schema, &wrong).is_empty());
    }

    #[test]
    fn a_field_the_policy_crd_does_not_have_is_found() {
        let crd = crd_schema::load(POLICY_CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1alpha1").unwrap();
        let mut value = serde_json::to_value(policy()).unwrap();
        value["spec"]["circuitBreaker"]["maxParallelRequest"] = serde_json::json!(4);
        assert!(!crd_schema::violations(schema, &value).is_empty());
    }
}
