//! Fuzz target `compile`: the whole pipeline, `tenantc::compile`, on a few files.
//!
//! Consumes: arbitrary bytes, split into files by `tenantc_fuzz::split_inputs`
//! (`=== tenants/a.kdl\n...\n=== cells/c.yaml\n...`; anything else is one tenant file).
//! Produces: nothing; a panic, a stack overflow, a timeout or running out of memory is a crash.
//!
//! Invariant: every compilation passes `tenantc_fuzz::check_compile`: house-style diagnostics
//! inside their files, no internal error, output only without errors, safe output paths and
//! headers, and the same result whatever the input order.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let inputs = tenantc_fuzz::split_inputs(data);
    tenantc_fuzz::check_compile(&inputs, "compile");
});
