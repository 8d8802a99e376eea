//! Kubernetes object-name rules (apimachinery
//! `pkg/util/validation/validation.go`: `IsDNS1123Subdomain`,
//! `IsDNS1123Label`), with messages in the API server's words.

/// Longest DNS-1123 subdomain (most object names).
pub const DNS_SUBDOMAIN_MAX_LEN: usize = 253;
/// Longest DNS-1123 label (namespaces, StatefulSet names, label values).
pub const DNS_LABEL_MAX_LEN: usize = 63;

/// Checks a DNS-1123 subdomain: dot-separated labels of lowercase
/// alphanumerics and `-`, each starting and ending alphanumeric, at most
/// 253 characters in all.
pub fn check_dns_subdomain(name: &str) -> Result<(), String> {
    if name.len() > DNS_SUBDOMAIN_MAX_LEN {
        return Err(format!(
            "must be no more than {DNS_SUBDOMAIN_MAX_LEN} characters (got {})",
            name.len()
        ));
    }
    if !name.split('.').all(is_label_text) {
        return Err(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
             characters, '-' or '.', and must start and end with an alphanumeric character \
             (e.g. 'example.com')"
                .to_string(),
        );
    }
    Ok(())
}

/// Checks a DNS-1123 label: lowercase alphanumerics and `-`, starting and
/// ending alphanumeric, at most 63 characters.
pub fn check_dns_label(name: &str) -> Result<(), String> {
    if name.len() > DNS_LABEL_MAX_LEN {
        return Err(format!(
            "must be no more than {DNS_LABEL_MAX_LEN} characters (got {})",
            name.len()
        ));
    }
    if !is_label_text(name) {
        return Err(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric \
             characters or '-', and must start and end with an alphanumeric character \
             (e.g. 'my-name', or '123-abc')"
                .to_string(),
        );
    }
    Ok(())
}

/// Whether `label` has a DNS-1123 label's characters: lowercase
/// alphanumerics and `-`, starting and ending alphanumeric (length aside).
pub fn is_label_text(label: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    label.starts_with(alnum)
        && label.ends_with(alnum)
        && label.chars().all(|c| alnum(c) || c == '-')
}

/// The characters the API server draws `generateName` suffixes from
/// (apimachinery `pkg/util/rand`: no vowels, no look-alike digits).
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of a generated suffix.
const SUFFIX_LEN: usize = 5;
/// Longest base kept before the suffix (apiserver `names.go`
/// `maxGeneratedNameLength`).
const MAX_GENERATED_BASE_LEN: usize = DNS_LABEL_MAX_LEN - SUFFIX_LEN;

/// The name the API server would give the `ordinal`-th (from 0) object
/// created with `generateName: base`: the base cut to 58 characters and a
/// five-character suffix. The API server draws the suffix at random;
/// karpsim numbers them, so runs are repeatable and names never collide.
pub fn generated_name(base: &str, ordinal: u64) -> String {
    let cut = base
        .char_indices()
        .nth(MAX_GENERATED_BASE_LEN)
        .map_or(base, |(at, _)| &base[..at]);
    let radix = SUFFIX_ALPHABET.len() as u64;
    let mut digits = [SUFFIX_ALPHABET[0]; SUFFIX_LEN];
    let mut rest = ordinal;
    for digit in digits.iter_mut().rev() {
        *digit = SUFFIX_ALPHABET[(rest % radix) as usize];
        rest /= radix;
    }
    let suffix: String = digits.iter().map(|&b| char::from(b)).collect();
    format!("{cut}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apimachinery `TestIsDNS1123Subdomain` / `TestIsDNS1123Label`
    /// (pkg/util/validation/validation_test.go): the accepted and refused
    /// shapes, and the 253 / 63 character limits.
    #[test]
    fn names_follow_dns_1123() {
        for good in ["web", "web-0", "a.b-c.d", "0abc", &"a".repeat(253)] {
            assert_eq!(check_dns_subdomain(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "Web_App",
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
        let long = check_dns_subdomain(&"a".repeat(300)).unwrap_err();
        assert_eq!(long, "must be no more than 253 characters (got 300)");
    }

    /// apiserver `pkg/storage/names/generate.go`: base cut to 58
    /// characters, five suffix characters from the no-vowel alphabet.
    #[test]
    fn generated_names_are_numbered_and_bounded() {
        assert_eq!(generated_name("batch-", 0), "batch-bbbbb");
        assert_eq!(generated_name("batch-", 1), "batch-bbbbc");
        assert_eq!(generated_name("batch-", 27), "batch-bbbcb");
        let long = generated_name(&"x".repeat(100), 0);
        assert_eq!(long.len(), 63);
        assert_eq!(
            check_dns_subdomain(&generated_name("web-", u64::MAX)),
            Ok(())
        );
    }
}
