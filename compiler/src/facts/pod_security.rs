//! The Pod Security level of a tenant namespace: `restricted`, or for a namespace with a reviewed
//! exception the lowest level whose `enforce` admits the capabilities the exception grants.
//!
//! Consumes: capability names. Produces: the level `plan` records for each namespace, which
//! `lower` writes into its `enforce` label and the views show; `lower/guard.rs` re-enforces
//! every other `restricted` rule in an excepted namespace.
//!
//! Invariant: every capability a tenant may be excepted for needs a level above `restricted`
//! (a test below holds the schema's list to it).

/// Capabilities the `baseline` Pod Security level lets containers add (also what
/// `policy/pod_security.rs` checks them against).
pub const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The lowest Pod Security level whose `enforce` admits containers adding `capabilities`:
/// `restricted` for none, `baseline` when `baseline` allows each, else `privileged`.
pub fn enforce_level(capabilities: &[String]) -> &'static str {
    if capabilities.is_empty() {
        "restricted"
    } else if capabilities
        .iter()
        .all(|capability| BASELINE_CAPABILITIES.contains(&capability.as_str()))
    {
        "baseline"
    } else {
        "privileged"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enforce_level_is_the_lowest_that_admits_the_capabilities() {
        let level = |capabilities: &[&str]| {
            enforce_level(
                &capabilities
                    .iter()
                    .map(|capability| capability.to_string())
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(level(&[]), "restricted");
        assert_eq!(level(&["CHOWN"]), "baseline");
        // Neither `restricted` nor `baseline` lets a container add IPC_LOCK.
        assert_eq!(level(&["IPC_LOCK"]), "privileged");
        assert_eq!(level(&["CHOWN", "IPC_LOCK"]), "privileged");
    }

    #[test]
    fn every_exceptable_capability_needs_the_relaxed_namespace() {
        for (capability, _) in crate::schema::EXCEPTABLE_CAPABILITIES {
            assert_ne!(enforce_level(&[capability.to_string()]), "restricted");
        }
    }
}
