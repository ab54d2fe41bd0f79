//! The Prometheus Operator's `monitoring.coreos.com/v1` PrometheusRule, for the chargeback
//! recording rules of issue 20 (`docs/chargeback.md`), as of Prometheus Operator v0.93.0.
//!
//! Consumes: nothing; the metering lowering (`lower/metering.rs`) builds these structs. Produces: a PrometheusRule
//! whose `spec` is exactly a Prometheus rules file (`groups:`), which `tests/promtool.rs` checks
//! with `promtool check rules`.
//!
//! Invariants: only recording rules (`record`, `expr`, `labels`) are modelled, no alerts; every
//! field exists in the vendored CRD `schema/crds/prometheus-operator/` (tested below);
//! `apiVersion` and `kind` are filled by [`PrometheusRule::new`] and cannot be set by callers.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// A PrometheusRule: groups of recording rules that the Prometheus Operator loads into the
/// Prometheus servers whose `ruleSelector` and `ruleNamespaceSelector` select it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusRule {
    api_version: &'static str,
    kind: &'static str,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The rule groups.
    pub spec: PrometheusRuleSpec,
}

impl PrometheusRule {
    /// A PrometheusRule with its `apiVersion` and `kind`.
    pub fn new(metadata: ObjectMeta, spec: PrometheusRuleSpec) -> PrometheusRule {
        PrometheusRule {
            api_version: "monitoring.coreos.com/v1",
            kind: "PrometheusRule",
            metadata,
            spec,
        }
    }
}

/// The spec: a Prometheus rules file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrometheusRuleSpec {
    /// Rule groups; names are unique in the object (a list-map keyed by `name`).
    pub groups: Vec<RuleGroup>,
}

/// A rule group: its rules are evaluated in order, so a rule may read one recorded above it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleGroup {
    /// The group's name.
    pub name: String,
    /// Evaluation interval, such as `1m`; Prometheus's global interval when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// The recording rules.
    pub rules: Vec<RecordingRule>,
}

/// One recording rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordingRule {
    /// The recorded series' name (`level:metric:operations`).
    pub record: String,
    /// The PromQL expression.
    pub expr: String,
    /// Labels added to every recorded series, sorted by key.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::kube::crd_schema;

    const CRD: &str = include_str!(
        "../../../schema/crds/prometheus-operator/monitoring.coreos.com_prometheusrules.yaml"
    );

    fn maximal() -> PrometheusRule {
        PrometheusRule::new(
            ObjectMeta {
                name: Some("tenantc-chargeback".to_string()),
                namespace: Some("monitoring".to_string()),
                labels: Some(BTreeMap::from([(
                    "app.kubernetes.io/managed-by".to_string(),
                    "tenantc".to_string(),
                )])),
                ..ObjectMeta::default()
            },
            PrometheusRuleSpec {
                groups: vec![RuleGroup {
                    name: "tenantc-chargeback".to_string(),
                    interval: Some("1m".to_string()),
                    rules: vec![RecordingRule {
                        record: "tenantc:resource_gpu_equivalent:ratio".to_string(),
                        expr: "vector(1 / 7)".to_string(),
                        labels: BTreeMap::from([(
                            "resource".to_string(),
                            "nvidia.com/mig-1g.10gb".to_string(),
                        )]),
                    }],
                }],
            },
        )
    }

    #[test]
    fn every_field_of_a_maximal_prometheus_rule_exists_in_the_crd_schema() {
        let crd = crd_schema::load(CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1").unwrap();
        let value = serde_json::to_value(maximal()).unwrap();
        assert_eq!(value["apiVersion"], "monitoring.coreos.com/v1");
        assert_eq!(value["kind"], "PrometheusRule");
        let found = crd_schema::violations(schema, &value);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn the_emitted_prometheus_rule_of_a_cell_passes_the_crd_schema() {
        let cell = crate::testing::support::CELL.replacen(
            "    driver \"570\"\n",
            "    driver \"570\"\n    metrics namespace=\"monitoring\"\n    metering rule-label=\"release=prom\" serving-metric=\"vllm:num_requests_running\"\n",
            1,
        );
        let compilation = crate::testing::support::compile_files(&[("cells/c1.kdl", &cell)]);
        let tree = compilation.output.expect("the cell builds");
        let text =
            String::from_utf8(tree["c1/metering/prometheusrule-tenantc-chargeback.yaml"].clone())
                .unwrap();
        // The crate's YAML reader turns any document into JSON, not only CRDs.
        let value = crd_schema::load(&text).unwrap();
        assert_eq!(value["kind"], "PrometheusRule");
        let crd = crd_schema::load(CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1").unwrap();
        let found = crd_schema::violations(schema, &value);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_field_the_crd_does_not_have_is_found() {
        let crd = crd_schema::load(CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1").unwrap();
        let mut value = serde_json::to_value(maximal()).unwrap();
        value["spec"]["groups"][0]["rules"][0]["recordd"] = serde_json::json!("typo");
        assert!(!crd_schema::violations(schema, &value).is_empty());
    }
}
