//! Kyverno's `policies.kyverno.io/v1` ValidatingPolicy, typed, for the subset tenantc emits: the
//! tenant admission floor as Kyverno evaluates it ([docs/policy-engines.md](../../docs/policy-engines.md)).
//!
//! Consumes: the matches, conditions, variables and validations `lower/engines.rs` translates
//! from the floor. Produces: [`ValidatingPolicy`] values that serialize through serde to the
//! objects Kyverno v1.19.1 reads.
//!
//! Version: the structs follow Kyverno v1.19.1, whose CRD
//! (`config/crds/policies.kyverno.io/policies.kyverno.io_validatingpolicies.yaml` of the module
//! `github.com/kyverno/kyverno@v1.19.1`) is vendored in `schema/crds/kyverno/`. The spec's CEL
//! parts have the shapes of `admissionregistration.k8s.io/v1`, so `k8s-openapi`'s types are used
//! for them. Only the fields tenantc sets are modelled, and never `status`.
//!
//! Invariants: `apiVersion` and `kind` are set only by the constructor; every field exists in the
//! vendored CRD (tested by walking a maximal instance against its schema).

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MatchResources, Validation, Variable,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// The API version of a ValidatingPolicy (served by Kyverno v1.19.1 beside v1alpha1 and the
/// stored v1beta1).
pub const API_VERSION: &str = "policies.kyverno.io/v1";

/// A cluster-wide Kyverno policy of CEL validations.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ValidatingPolicy {
    api_version: &'static str,
    kind: &'static str,
    /// Name (cluster-scoped; no namespace), labels and annotations.
    pub metadata: ObjectMeta,
    /// The policy.
    pub spec: ValidatingPolicySpec,
}

impl ValidatingPolicy {
    /// A ValidatingPolicy with its `apiVersion` and `kind`.
    pub fn new(metadata: ObjectMeta, spec: ValidatingPolicySpec) -> ValidatingPolicy {
        ValidatingPolicy {
            api_version: API_VERSION,
            kind: "ValidatingPolicy",
            metadata,
            spec,
        }
    }
}

/// What a ValidatingPolicy judges and how (`ValidatingPolicySpec` of v1.19.1, in its field
/// order).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ValidatingPolicySpec {
    /// The requests it judges: resources and operations, and a namespace selector.
    pub match_constraints: MatchResources,
    /// The CEL validations; any false denies.
    pub validations: Vec<Validation>,
    /// `Fail`: an expression that fails denies.
    pub failure_policy: String,
    /// Conditions that must all hold for the policy to judge a request.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_conditions: Vec<MatchCondition>,
    /// Named CEL expressions, read as `variables.<name>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<Variable>,
    /// Which pod controllers Kyverno derives extra rules for.
    pub autogen: Autogen,
    /// What a failed validation does: `Deny`.
    pub validation_actions: Vec<String>,
    /// Where the policy is evaluated: in admission, and not in background scans.
    pub evaluation: Evaluation,
}

/// The autogen settings of a policy.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Autogen {
    /// The pod controllers.
    pub pod_controllers: PodControllers,
}

/// The pod controllers Kyverno writes derived rules for.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PodControllers {
    /// Their kinds; empty: none, since the floor matches the controllers itself.
    pub controllers: Vec<String>,
}

/// Where a policy is evaluated.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    /// In the admission webhook.
    pub admission: Enabled,
    /// In background scans of existing objects.
    pub background: Enabled,
}

/// A switch.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Enabled {
    /// On or off.
    pub enabled: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use k8s_openapi::api::admissionregistration::v1::NamedRuleWithOperations;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    use super::*;
    use crate::kube::crd_schema;

    const CRD: &str =
        include_str!("../../../schema/crds/kyverno/policies.kyverno.io_validatingpolicies.yaml");

    fn maximal() -> ValidatingPolicy {
        ValidatingPolicy::new(
            ObjectMeta {
                name: Some("floor".to_string()),
                ..ObjectMeta::default()
            },
            ValidatingPolicySpec {
                match_constraints: MatchResources {
                    resource_rules: Some(vec![NamedRuleWithOperations {
                        api_groups: Some(vec![String::new()]),
                        api_versions: Some(vec!["v1".to_string()]),
                        operations: Some(vec!["CREATE".to_string()]),
                        resources: Some(vec!["pods".to_string()]),
                        scope: Some("Namespaced".to_string()),
                        ..NamedRuleWithOperations::default()
                    }]),
                    namespace_selector: Some(LabelSelector {
                        match_expressions: Some(vec![LabelSelectorRequirement {
                            key: "kubernetes.io/metadata.name".to_string(),
                            operator: "In".to_string(),
                            values: Some(vec!["a".to_string()]),
                        }]),
                        match_labels: None,
                    }),
                    ..MatchResources::default()
                },
                validations: vec![Validation {
                    expression: "true".to_string(),
                    message: Some("m".to_string()),
                    message_expression: Some("'m'".to_string()),
                    reason: Some("Forbidden".to_string()),
                }],
                failure_policy: "Fail".to_string(),
                match_conditions: vec![MatchCondition {
                    name: "c".to_string(),
                    expression: "true".to_string(),
                }],
                variables: vec![Variable {
                    name: "v".to_string(),
                    expression: "1".to_string(),
                }],
                autogen: Autogen::default(),
                validation_actions: vec!["Deny".to_string()],
                evaluation: Evaluation {
                    admission: Enabled { enabled: true },
                    background: Enabled { enabled: false },
                },
            },
        )
    }

    #[test]
    fn every_field_of_a_maximal_validating_policy_exists_in_the_crd_schema() {
        let crd = crd_schema::load(CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1").unwrap();
        let value = serde_json::to_value(maximal()).unwrap();
        let found = crd_schema::violations(schema, &value);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_field_the_validating_policy_crd_does_not_have_is_found() {
        let crd = crd_schema::load(CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1").unwrap();
        let mut value = serde_json::to_value(maximal()).unwrap();
        value["spec"]["paramKind"] = serde_json::json!({"kind": "ConfigMap"});
        assert!(!crd_schema::violations(schema, &value).is_empty());
    }
}
