//! OPA Gatekeeper's `templates.gatekeeper.sh/v1` ConstraintTemplate and the constraints it
//! defines, typed, for the subset tenantc emits: the tenant admission floor as Gatekeeper's CEL
//! engine (`K8sNativeValidation`) evaluates it ([docs/policy-engines.md](../../docs/policy-engines.md)).
//!
//! Consumes: the variables, conditions and validations `lower/engines.rs` translates from the
//! floor, and each tenant's parameters. Produces: [`ConstraintTemplate`] and [`Constraint`]
//! values that serialize through serde to the objects Gatekeeper v3.23.1 reads.
//!
//! Version: the structs follow Gatekeeper v3.23.1 (`github.com/open-policy-agent/gatekeeper/v3`),
//! whose ConstraintTemplate CRD (`manifest_staging/charts/gatekeeper/crds/`) is vendored in
//! `schema/crds/gatekeeper/`; the `K8sNativeValidation` source follows
//! `pkg/drivers/k8scel/schema/schema.go` (`Source`, whose match conditions are spelt
//! `matchCondition`). A constraint's CRD is made by Gatekeeper from its template
//! (`spec.crd.spec.validation` for its parameters): [`constraint_schema`] builds the same
//! schema for the tests.
//!
//! Invariants: `apiVersion` and `kind` are set only by the constructors; every field of the
//! template exists in the vendored CRD, and every constraint passes the schema its template
//! defines (tested by walking maximal instances against them).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// The API version of a ConstraintTemplate.
pub const TEMPLATE_API_VERSION: &str = "templates.gatekeeper.sh/v1";
/// The API version of the constraints a template defines.
pub const CONSTRAINT_API_VERSION: &str = "constraints.gatekeeper.sh/v1beta1";
/// The target of admission templates.
pub const ADMISSION_TARGET: &str = "admission.k8s.gatekeeper.sh";
/// The engine of CEL templates.
pub const CEL_ENGINE: &str = "K8sNativeValidation";

/// A ConstraintTemplate: a constraint kind and the code that judges its constraints.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintTemplate {
    api_version: &'static str,
    kind: &'static str,
    /// Name (the constraint kind in lower case; cluster-scoped) and labels.
    pub metadata: ObjectMeta,
    /// The template.
    pub spec: ConstraintTemplateSpec,
}

impl ConstraintTemplate {
    /// A ConstraintTemplate with its `apiVersion` and `kind`, named after its constraint kind as
    /// Gatekeeper requires.
    pub fn new(mut metadata: ObjectMeta, spec: ConstraintTemplateSpec) -> ConstraintTemplate {
        metadata.name = Some(spec.crd.spec.names.kind.to_lowercase());
        ConstraintTemplate {
            api_version: TEMPLATE_API_VERSION,
            kind: "ConstraintTemplate",
            metadata,
            spec,
        }
    }
}

/// The constraint kind and its code.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintTemplateSpec {
    /// The constraint kind's CRD.
    pub crd: Crd,
    /// The code per target.
    pub targets: Vec<Target>,
}

/// The constraint kind's CRD.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Crd {
    /// Its spec.
    pub spec: CrdSpec,
}

/// The constraint kind's names and the schema of its parameters.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CrdSpec {
    /// Its names.
    pub names: Names,
    /// The schema of `spec.parameters`.
    pub validation: ParameterValidation,
}

/// The constraint kind.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Names {
    /// The kind.
    pub kind: String,
}

/// The schema of a constraint's parameters.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ParameterValidation {
    /// An object of string properties, one per parameter, and no other.
    #[serde(rename = "openAPIV3Schema")]
    pub open_api_v3_schema: serde_json::Value,
}

/// The code of one target.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// [`ADMISSION_TARGET`].
    pub target: String,
    /// The operations the template judges.
    pub operations: Vec<String>,
    /// One source per engine.
    pub code: Vec<Code>,
}

/// A source for one engine.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Code {
    /// [`CEL_ENGINE`].
    pub engine: String,
    /// The CEL source.
    pub source: CelSource,
}

/// The `K8sNativeValidation` source: a ValidatingAdmissionPolicy's CEL parts, with the
/// constraint's `spec.parameters` as `variables.params`.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CelSource {
    /// The validations; any false denies.
    pub validations: Vec<CelValidation>,
    /// `Fail`: an expression that fails denies.
    pub failure_policy: String,
    /// Conditions that must all hold for the template to judge a request (spelt
    /// `matchCondition` by Gatekeeper).
    #[serde(rename = "matchCondition", skip_serializing_if = "Vec::is_empty")]
    pub match_conditions: Vec<CelNamed>,
    /// Named CEL expressions, read as `variables.<name>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<CelNamed>,
    /// Whether Gatekeeper also generates a ValidatingAdmissionPolicy from the template: never,
    /// since a cell with Gatekeeper is one without (or without trust in) the API server's own.
    #[serde(rename = "generateVAP")]
    pub generate_vap: bool,
}

/// One validation of a CEL source.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CelValidation {
    /// True admits.
    pub expression: String,
    /// The fixed message.
    pub message: String,
    /// The message that names the offending value.
    pub message_expression: String,
}

/// A named expression (a variable or a match condition).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CelNamed {
    /// Its name.
    pub name: String,
    /// Its expression.
    pub expression: String,
}

/// A constraint: one use of a template, with its match and parameters.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Constraint {
    api_version: &'static str,
    kind: String,
    /// Name (cluster-scoped), labels and annotations.
    pub metadata: ObjectMeta,
    /// The constraint.
    pub spec: ConstraintSpec,
}

impl Constraint {
    /// A constraint of `template`'s kind.
    pub fn new(template: &ConstraintTemplate, metadata: ObjectMeta, spec: ConstraintSpec) -> Self {
        Constraint {
            api_version: CONSTRAINT_API_VERSION,
            kind: template.spec.crd.spec.names.kind.clone(),
            metadata,
            spec,
        }
    }
}

/// What a constraint judges, how, and with which parameters.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintSpec {
    /// `deny`.
    pub enforcement_action: String,
    /// The objects it judges.
    #[serde(rename = "match")]
    pub matches: ConstraintMatch,
    /// The parameters, read as `variables.params.<name>`.
    pub parameters: BTreeMap<String, String>,
}

/// The objects a constraint judges: kinds, in namespaces named exactly.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintMatch {
    /// Kinds per API group.
    pub kinds: Vec<MatchKinds>,
    /// Only `Namespaced` objects.
    pub scope: String,
    /// The namespaces, by exact name (none: every namespace the selector selects).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// The namespaces, by their labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
}

/// Kinds of some API groups.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MatchKinds {
    /// The groups (`""` for the core group).
    pub api_groups: Vec<String>,
    /// The kinds.
    pub kinds: Vec<String>,
}

/// The parameter schema of a template whose parameters are the strings `keys`.
pub fn parameter_schema<'a>(keys: impl IntoIterator<Item = &'a str>) -> serde_json::Value {
    let properties: serde_json::Map<String, serde_json::Value> = keys
        .into_iter()
        .map(|key| (key.to_string(), serde_json::json!({"type": "string"})))
        .collect();
    serde_json::json!({"type": "object", "properties": properties})
}

/// The `openAPIV3Schema` of the constraint kind a template defines, as Gatekeeper builds it
/// (`spec.match`, `spec.enforcementAction` and the template's parameters), for the tests:
/// only what tenantc sets is modelled, so a key outside it is reported.
#[cfg(test)]
pub fn constraint_schema(template: &ConstraintTemplate) -> serde_json::Value {
    let strings = serde_json::json!({"type": "array", "items": {"type": "string"}});
    serde_json::json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "enforcementAction": {"type": "string"},
                    "match": {
                        "type": "object",
                        "properties": {
                            "kinds": {"type": "array", "items": {
                                "type": "object",
                                "properties": {"apiGroups": strings, "kinds": strings},
                            }},
                            "scope": {"type": "string", "enum": ["*", "Cluster", "Namespaced"]},
                            "namespaces": strings,
                            "namespaceSelector": {"type": "object"},
                        },
                    },
                    "parameters": template.spec.crd.spec.validation.open_api_v3_schema,
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::kube::crd_schema;

    const CRD: &str = include_str!(
        "../../../schema/crds/gatekeeper/templates.gatekeeper.sh_constrainttemplates.yaml"
    );

    fn maximal() -> ConstraintTemplate {
        ConstraintTemplate::new(
            ObjectMeta::default(),
            ConstraintTemplateSpec {
                crd: Crd {
                    spec: CrdSpec {
                        names: Names {
                            kind: "TenantFloor".to_string(),
                        },
                        validation: ParameterValidation {
                            open_api_v3_schema: parameter_schema(["tenant"]),
                        },
                    },
                },
                targets: vec![Target {
                    target: ADMISSION_TARGET.to_string(),
                    operations: vec!["CREATE".to_string(), "DELETE".to_string()],
                    code: vec![Code {
                        engine: CEL_ENGINE.to_string(),
                        source: CelSource {
                            validations: vec![CelValidation {
                                expression: "true".to_string(),
                                message: "m".to_string(),
                                message_expression: "'m'".to_string(),
                            }],
                            failure_policy: "Fail".to_string(),
                            match_conditions: vec![CelNamed {
                                name: "c".to_string(),
                                expression: "true".to_string(),
                            }],
                            variables: vec![CelNamed {
                                name: "v".to_string(),
                                expression: "1".to_string(),
                            }],
                            generate_vap: false,
                        },
                    }],
                }],
            },
        )
    }

    #[test]
    fn every_field_of_a_maximal_constraint_template_exists_in_the_crd_schema() {
        let crd = crd_schema::load(CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1").unwrap();
        let value = serde_json::to_value(maximal()).unwrap();
        let found = crd_schema::violations(schema, &value);
        assert!(found.is_empty(), "{found:#?}");
        assert_eq!(value["metadata"]["name"], "tenantfloor");
    }

    #[test]
    fn a_constraint_passes_its_templates_schema_and_a_stray_parameter_does_not() {
        let template = maximal();
        let schema = constraint_schema(&template);
        let constraint = Constraint::new(
            &template,
            ObjectMeta::default(),
            ConstraintSpec {
                enforcement_action: "deny".to_string(),
                matches: ConstraintMatch {
                    kinds: vec![MatchKinds {
                        api_groups: vec![String::new()],
                        kinds: vec!["Pod".to_string()],
                    }],
                    scope: "Namespaced".to_string(),
                    namespaces: vec!["a".to_string()],
                    namespace_selector: None,
                },
                parameters: BTreeMap::from([("tenant".to_string(), "a".to_string())]),
            },
        );
        let mut value = serde_json::to_value(&constraint).unwrap();
        assert!(crd_schema::violations(&schema, &value).is_empty());
        assert_eq!(value["kind"], "TenantFloor");
        value["spec"]["parameters"]["tenantt"] = serde_json::json!("a");
        assert!(!crd_schema::violations(&schema, &value).is_empty());
    }
}
