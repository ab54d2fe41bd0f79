//! The Pod Security level of a tenant namespace: `restricted`, or for a namespace with a reviewed
//! exception the lowest level whose `enforce` admits the capabilities the exception grants.
//!
//! Consumes: capability names. Produces: [`PodSecurityLevel`], the one enum of the levels, and
//! the level `plan` records for each namespace, which `lower` writes into its `enforce` label
//! and the views show; `lower/guard.rs` re-enforces every other `restricted` rule in an
//! excepted namespace, and `policy/pod_security.rs` judges pods at a level read from a label.
//!
//! Invariants: every capability a tenant may be excepted for needs a level above `restricted`
//! (a test below holds the schema's list to it); a level is spelled only by
//! [`PodSecurityLevel::as_str`], where it is written out, and read back only by
//! [`PodSecurityLevel::parse`], from a label of an object read from outside.

/// A Pod Security level, ordered from the least to the most restrictive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodSecurityLevel {
    /// No restrictions.
    Privileged,
    /// Prevents known privilege escalations.
    Baseline,
    /// Current pod hardening practice.
    Restricted,
}

impl PodSecurityLevel {
    /// Every level, from the least to the most restrictive.
    pub const ALL: [PodSecurityLevel; 3] = [
        PodSecurityLevel::Privileged,
        PodSecurityLevel::Baseline,
        PodSecurityLevel::Restricted,
    ];

    /// The label value of the level, as Pod Security Admission spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PodSecurityLevel::Privileged => "privileged",
            PodSecurityLevel::Baseline => "baseline",
            PodSecurityLevel::Restricted => "restricted",
        }
    }

    /// The level a label value names (a label of an object read from outside, an open set).
    pub fn parse(text: &str) -> Option<PodSecurityLevel> {
        PodSecurityLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == text)
    }
}

impl std::fmt::Display for PodSecurityLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for PodSecurityLevel {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

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
pub fn enforce_level(capabilities: &[String]) -> PodSecurityLevel {
    if capabilities.is_empty() {
        PodSecurityLevel::Restricted
    } else if capabilities
        .iter()
        .all(|capability| BASELINE_CAPABILITIES.contains(&capability.as_str()))
    {
        PodSecurityLevel::Baseline
    } else {
        PodSecurityLevel::Privileged
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
        assert_eq!(level(&[]), PodSecurityLevel::Restricted);
        assert_eq!(level(&["CHOWN"]), PodSecurityLevel::Baseline);
        // Neither `restricted` nor `baseline` lets a container add IPC_LOCK.
        assert_eq!(level(&["IPC_LOCK"]), PodSecurityLevel::Privileged);
        assert_eq!(level(&["CHOWN", "IPC_LOCK"]), PodSecurityLevel::Privileged);
    }

    #[test]
    fn every_exceptable_capability_needs_the_relaxed_namespace() {
        for (capability, _) in crate::schema::EXCEPTABLE_CAPABILITIES {
            assert_ne!(
                enforce_level(&[capability.to_string()]),
                PodSecurityLevel::Restricted
            );
        }
    }

    #[test]
    fn a_level_reads_back_from_its_label_value_and_nothing_else() {
        for level in PodSecurityLevel::ALL {
            assert_eq!(PodSecurityLevel::parse(level.as_str()), Some(level));
        }
        assert_eq!(PodSecurityLevel::parse("Restricted"), None);
        assert_eq!(PodSecurityLevel::parse(""), None);
        assert!(PodSecurityLevel::Privileged < PodSecurityLevel::Baseline);
        assert!(PodSecurityLevel::Baseline < PodSecurityLevel::Restricted);
    }
}
