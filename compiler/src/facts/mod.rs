//! Facts shared by the stages after `schema`: rules that `validate` checks, `plan` resolves
//! and the audit re-derives, written once so that the stages cannot disagree about them.
//!
//! Consumes: the validated declarations (`model`). Produces: plain values.
//! Invariant: a fact depends only on the model; no module here reads a later stage (`plan`,
//! `lower`, `emit`), so every stage may read it.

pub mod backends;
pub mod cloud;
pub mod defaults;
pub mod gpu;
pub mod labels;
pub mod naming;
pub mod pod_security;
pub mod rbac;
pub mod split;
pub mod storage;
pub mod topology;
