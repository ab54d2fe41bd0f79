//! Fuzz target `kdl`: one KDL file through the KDL front end and the schema reader.
//!
//! Consumes: arbitrary bytes, read as UTF-8 (lossily, since the loader reports non-UTF-8 files
//! before parsing). Produces: nothing; a panic, a stack overflow, a timeout or running out of
//! memory is a crash.
//!
//! Invariant: every diagnostic passes `tenantc_fuzz::check_diagnostics`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tenantc::parse::Format;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    tenantc_fuzz::check_front_end(&text, Format::Kdl, "kdl");
});
