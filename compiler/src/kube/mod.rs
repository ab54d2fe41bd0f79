//! Typed objects and documents that `k8s-openapi` does not model: DRA's `resource.k8s.io/v1`
//! kinds and Kueue's DRA configuration (`dra.rs`, which `k8s-openapi`'s `v1_33` lacks), the CRD kinds tenantc emits
//! (`kueue.rs`, `volcano.rs`, `gitops.rs`, `monitoring.rs`, `gateway.rs`), the GPU Operator's config documents (`gpu_operator.rs`), the cloud
//! IAM documents (`iam.rs`), and the label keys several stages name (`labels.rs`).
//!
//! Consumes: nothing; `plan` and `lower` build these structs. Produces: values that serialize (through
//! serde) to exactly the objects the API server and the CRD's controller accept.
//!
//! Invariant: every field of a CRD kind's struct here exists in the vendored CRD schema under
//! `schema/crds/`, which a test checks by walking a maximal instance against the schema; core
//! kinds come from `k8s-openapi`, never from here.

pub mod dra;
pub mod gatekeeper;
pub mod gateway;
pub mod gitops;
pub mod gpu_operator;
pub mod iam;
pub mod kueue;
pub mod kyverno;
pub mod labels;
pub mod monitoring;
pub mod volcano;

pub mod crd_schema;
