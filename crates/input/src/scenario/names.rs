//! Name rules: scenario and variant names (which become report file names)
//! and the Kubernetes object names a workload step refers to.

use crate::kube::names::{DNS_LABEL_MAX_LEN, DNS_SUBDOMAIN_MAX_LEN, is_label_text};

/// Longest scenario or variant name.
const MAX_NAME_LEN: usize = 63;

/// Scenario and variant names end up in report file names.
pub(super) fn check_report_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("must not be empty");
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Err("longer than 63 characters");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err("must start with a letter or digit");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err("only letters, digits, '-', '_' and '.' are allowed");
    }
    Ok(())
}

/// Kubernetes object names (DNS-1123 subdomain: dot-separated labels of
/// lowercase letters, digits and '-', at most 253 characters), in the
/// scenario reader's words.
pub(super) fn check_dns_subdomain(name: &str) -> Result<(), &'static str> {
    if name.len() > DNS_SUBDOMAIN_MAX_LEN {
        return Err("a Kubernetes name has at most 253 characters");
    }
    if !name.split('.').all(is_label_text) {
        return Err(
            "a Kubernetes name is lowercase letters, digits, '-' and '.', \
             starting and ending with a letter or digit",
        );
    }
    Ok(())
}

/// Kubernetes namespaces (DNS-1123 label: at most 63 lowercase letters,
/// digits and '-').
pub(super) fn check_dns_label(name: &str) -> Result<(), &'static str> {
    if name.len() > DNS_LABEL_MAX_LEN {
        return Err("a namespace has at most 63 characters");
    }
    if !is_label_text(name) {
        return Err("a namespace is lowercase letters, digits and '-', \
         starting and ending with a letter or digit");
    }
    Ok(())
}

pub(super) use crate::suggest::levenshtein as edit_distance;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_names_are_safe_file_names() {
        for good in ["quickstart", "karpenter-spot", "v1.2_b", "7d"] {
            assert_eq!(check_report_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            ".hidden",
            "-x",
            "a/b",
            "a b",
            "..",
            "é",
            &"x".repeat(64),
        ] {
            assert!(check_report_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(check_report_name(&"x".repeat(63)), Ok(()));
    }

    /// Kubernetes apimachinery `IsDNS1123Subdomain` / `IsDNS1123Label`
    /// (pkg/util/validation/validation.go): lowercase alphanumerics and '-',
    /// dot-separated for subdomains, alphanumeric at both ends, 253 and 63
    /// characters at most.
    #[test]
    fn kubernetes_names_follow_dns_1123() {
        for good in ["web", "web-0", "a.b-c.d", "0abc", &"a".repeat(253)] {
            assert_eq!(check_dns_subdomain(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "Web",
            "web-",
            "-web",
            "a..b",
            ".a",
            "a_b",
            &"a".repeat(254),
        ] {
            assert!(check_dns_subdomain(bad).is_err(), "{bad:?}");
        }
        for good in ["default", "kube-system", &"n".repeat(63)] {
            assert_eq!(check_dns_label(good), Ok(()), "{good}");
        }
        for bad in ["", "a.b", "kube_system", "ns-", &"n".repeat(64)] {
            assert!(check_dns_label(bad).is_err(), "{bad:?}");
        }
    }
}
