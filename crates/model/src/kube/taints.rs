//! Taints and tolerations (Equal/Exists, every effect) with Kubernetes'
//! matching rules as Karpenter applies them (core: pkg/scheduling/taints.go,
//! pkg/apis/v1/taints.go; k8s core/v1 `Toleration.ToleratesTaint`).
//!
//! Karpenter treats every effect, PreferNoSchedule included, as blocking
//! when it decides where a pod can go; only preference relaxation adds a
//! toleration for PreferNoSchedule.

use std::fmt;

/// A taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaintEffect {
    /// `NoSchedule`
    NoSchedule,
    /// `PreferNoSchedule`
    PreferNoSchedule,
    /// `NoExecute`
    NoExecute,
}

impl TaintEffect {
    /// The effect as Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }

    /// Parses the exact Kubernetes spelling.
    pub fn parse(s: &str) -> Option<TaintEffect> {
        match s {
            "NoSchedule" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }
}

impl fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// Effect.
    pub effect: TaintEffect,
}

impl Taint {
    /// Builds a taint.
    pub fn new(key: impl Into<String>, value: impl Into<String>, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
        }
    }

    /// Whether two taints are "the same taint" for Kubernetes: same key and
    /// effect, value ignored (k8s `Taint.MatchTaint`).
    pub fn matches(&self, other: &Taint) -> bool {
        self.key == other.key && self.effect == other.effect
    }
}

/// `key=value:Effect`, or `key:Effect` without a value (core pretty.Taint).
impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect)
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

/// A toleration operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TolerationOperator {
    /// `Equal` (the default)
    Equal,
    /// `Exists`
    Exists,
}

impl TolerationOperator {
    /// Parses the Kubernetes spelling; an empty string means `Equal`.
    pub fn parse(s: &str) -> Option<TolerationOperator> {
        match s {
            "" | "Equal" => Some(TolerationOperator::Equal),
            "Exists" => Some(TolerationOperator::Exists),
            _ => None,
        }
    }
}

/// A pod toleration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Toleration {
    /// Key; empty with `Exists` matches every key.
    pub key: String,
    /// Operator.
    pub operator: TolerationOperator,
    /// Value for `Equal`.
    pub value: String,
    /// Effect; `None` matches every effect.
    pub effect: Option<TaintEffect>,
    /// For NoExecute: how long the pod stays after the taint appears.
    pub toleration_seconds: Option<i64>,
}

impl Toleration {
    /// `key Exists` for `effect` (`None` = every effect; empty key = every key).
    pub fn exists(key: impl Into<String>, effect: Option<TaintEffect>) -> Toleration {
        Toleration {
            key: key.into(),
            operator: TolerationOperator::Exists,
            value: String::new(),
            effect,
            toleration_seconds: None,
        }
    }

    /// `key Equal value` for `effect` (`None` = every effect).
    pub fn equal(
        key: impl Into<String>,
        value: impl Into<String>,
        effect: Option<TaintEffect>,
    ) -> Toleration {
        Toleration {
            key: key.into(),
            operator: TolerationOperator::Equal,
            value: value.into(),
            effect,
            toleration_seconds: None,
        }
    }

    /// Whether this toleration tolerates `taint` (k8s `ToleratesTaint`): the
    /// effect must match unless unset, the key must match unless empty, and
    /// `Equal` also compares values. (`tolerationSeconds` does not matter for
    /// scheduling.)
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|effect| effect != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Exists => true,
            TolerationOperator::Equal => self.value == taint.value,
        }
    }
}

/// The first taint (in the given order) that no toleration tolerates.
pub fn first_untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|taint| !tolerations.iter().any(|t| t.tolerates(taint)))
}

/// Whether the tolerations tolerate every taint, every effect counting
/// (core `Taints.Tolerates`); the error names the first untolerated taint.
pub fn tolerates_all(taints: &[Taint], tolerations: &[Toleration]) -> Result<(), String> {
    match first_untolerated(taints, tolerations) {
        None => Ok(()),
        Some(taint) => Err(format!("did not tolerate taint {taint}")),
    }
}

/// Key of the taint Karpenter puts on nodes it is disrupting.
pub const DISRUPTED_TAINT_KEY: &str = "karpenter.sh/disrupted";
/// Key of the taint on nodes Karpenter launched that have not registered yet.
pub const UNREGISTERED_TAINT_KEY: &str = "karpenter.sh/unregistered";
/// `node.kubernetes.io/not-ready`
pub const NOT_READY_TAINT_KEY: &str = "node.kubernetes.io/not-ready";
/// `node.kubernetes.io/unreachable`
pub const UNREACHABLE_TAINT_KEY: &str = "node.kubernetes.io/unreachable";
/// `node.cloudprovider.kubernetes.io/uninitialized`
pub const EXTERNAL_CLOUD_PROVIDER_TAINT_KEY: &str =
    "node.cloudprovider.kubernetes.io/uninitialized";
/// Prefix of Node Readiness Controller taints, all treated as ephemeral.
pub const READINESS_TAINT_KEY_PREFIX: &str = "readiness.k8s.io/";

/// `karpenter.sh/disrupted:NoSchedule`, put on nodes being disrupted.
pub fn disrupted_no_schedule_taint() -> Taint {
    Taint::new(DISRUPTED_TAINT_KEY, "", TaintEffect::NoSchedule)
}

/// `karpenter.sh/unregistered:NoExecute`, on launched nodes until they register.
pub fn unregistered_no_execute_taint() -> Taint {
    Taint::new(UNREGISTERED_TAINT_KEY, "", TaintEffect::NoExecute)
}

/// Taints expected while a node initialises (core `KnownEphemeralTaints`),
/// as (key, effect); values do not matter when matching.
pub const KNOWN_EPHEMERAL_TAINTS: [(&str, TaintEffect); 5] = [
    (NOT_READY_TAINT_KEY, TaintEffect::NoSchedule),
    (NOT_READY_TAINT_KEY, TaintEffect::NoExecute),
    (UNREACHABLE_TAINT_KEY, TaintEffect::NoSchedule),
    (EXTERNAL_CLOUD_PROVIDER_TAINT_KEY, TaintEffect::NoSchedule),
    (UNREGISTERED_TAINT_KEY, TaintEffect::NoExecute),
];

/// Whether `taint` is one Karpenter expects to disappear once a node has
/// initialised (core `IsKnownEphemeralTaint`): a listed key/effect pair, or a
/// key starting with `readiness.k8s.io/` (any effect).
pub fn is_known_ephemeral_taint(taint: &Taint) -> bool {
    KNOWN_EPHEMERAL_TAINTS
        .iter()
        .any(|(key, effect)| taint.key == *key && taint.effect == *effect)
        || taint.key.starts_with(READINESS_TAINT_KEY_PREFIX)
}

/// The taints Karpenter considers on an uninitialised node it manages
/// (core `StateNode.Taints`): known ephemeral taints and the NodePool's
/// startup taints (matched by key and effect) are left out.
pub fn taints_for_uninitialized_node<'a>(
    taints: &'a [Taint],
    startup_taints: &[Taint],
) -> Vec<&'a Taint> {
    taints
        .iter()
        .filter(|taint| {
            !is_known_ephemeral_taint(taint) && !startup_taints.iter().any(|s| s.matches(taint))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaintEffect::*;

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint::new(key, value, effect)
    }

    /// k8s `ToleratesTaint`: Equal compares key and value; Exists ignores the value.
    #[test]
    fn equal_and_exists_operators() {
        let gpu = taint("nvidia.com/gpu", "true", NoSchedule);
        assert!(Toleration::equal("nvidia.com/gpu", "true", Some(NoSchedule)).tolerates(&gpu));
        assert!(!Toleration::equal("nvidia.com/gpu", "false", Some(NoSchedule)).tolerates(&gpu));
        assert!(!Toleration::equal("other", "true", Some(NoSchedule)).tolerates(&gpu));
        assert!(Toleration::exists("nvidia.com/gpu", Some(NoSchedule)).tolerates(&gpu));
        assert!(!Toleration::exists("other", None).tolerates(&gpu));
    }

    /// k8s `ToleratesTaint`: an unset effect matches all effects; a set one must be equal.
    #[test]
    fn effect_matching() {
        let prefer = taint("team", "a", PreferNoSchedule);
        assert!(Toleration::exists("team", None).tolerates(&prefer));
        assert!(!Toleration::exists("team", Some(NoSchedule)).tolerates(&prefer));
        assert!(Toleration::exists("team", Some(PreferNoSchedule)).tolerates(&prefer));
        assert!(Toleration::equal("team", "a", None).tolerates(&taint("team", "a", NoExecute)));
    }

    /// k8s `ToleratesTaint`: an empty key with Exists tolerates every taint (of its effect).
    #[test]
    fn empty_key_exists_matches_everything() {
        let everything = Toleration::exists("", None);
        for t in [taint("a", "", NoSchedule), taint("b", "x", NoExecute)] {
            assert!(everything.tolerates(&t));
        }
        let only_no_execute = Toleration::exists("", Some(NoExecute));
        assert!(!only_no_execute.tolerates(&taint("a", "", NoSchedule)));
        assert!(only_no_execute.tolerates(&taint("a", "", NoExecute)));
    }

    /// core taints.go `Tolerates`: every taint, PreferNoSchedule included, needs a toleration.
    #[test]
    fn tolerates_all_names_first_untolerated_taint() {
        let taints = [
            taint("dedicated", "web", NoSchedule),
            taint("soft", "", PreferNoSchedule),
            taint("hard", "", NoExecute),
        ];
        let tolerations = [Toleration::equal("dedicated", "web", None)];
        assert_eq!(
            tolerates_all(&taints, &tolerations),
            Err("did not tolerate taint soft:PreferNoSchedule".to_string())
        );
        assert_eq!(first_untolerated(&taints, &tolerations), Some(&taints[1]));
        let all = [
            Toleration::equal("dedicated", "web", None),
            Toleration::exists("soft", Some(PreferNoSchedule)),
            Toleration::exists("hard", None),
        ];
        assert_eq!(tolerates_all(&taints, &all), Ok(()));
        assert_eq!(tolerates_all(&[], &[]), Ok(()));
        assert_eq!(
            tolerates_all(&[taint("k", "v", NoSchedule)], &[]),
            Err("did not tolerate taint k=v:NoSchedule".to_string())
        );
    }

    /// core taints_test.go `IsKnownEphemeralTaint`: exact entries, readiness prefix with any
    /// effect, not a prefix in the middle of the key, not unrelated taints.
    #[test]
    fn known_ephemeral_taints() {
        assert!(is_known_ephemeral_taint(&taint(
            NOT_READY_TAINT_KEY,
            "",
            NoSchedule
        )));
        assert!(is_known_ephemeral_taint(&taint(
            "readiness.k8s.io/my-rule",
            "",
            NoSchedule
        )));
        assert!(is_known_ephemeral_taint(&taint(
            "readiness.k8s.io/another",
            "",
            NoExecute
        )));
        assert!(!is_known_ephemeral_taint(&taint(
            "example.com/some-taint",
            "",
            NoSchedule
        )));
        assert!(!is_known_ephemeral_taint(&taint(
            "foo/readiness.k8s.io/bar",
            "",
            NoSchedule
        )));
        // Matching ignores the value (k8s MatchTaint), and needs the listed effect.
        assert!(is_known_ephemeral_taint(&taint(
            EXTERNAL_CLOUD_PROVIDER_TAINT_KEY,
            "true",
            NoSchedule
        )));
        assert!(!is_known_ephemeral_taint(&taint(
            UNREACHABLE_TAINT_KEY,
            "",
            NoExecute
        )));
        assert!(is_known_ephemeral_taint(&unregistered_no_execute_taint()));
    }

    /// core statenode.go `Taints`: uninitialised managed nodes drop ephemeral and startup taints.
    #[test]
    fn uninitialized_node_taints() {
        let taints = [
            taint(NOT_READY_TAINT_KEY, "", NoSchedule),
            taint("example.com/bootstrapping", "true", NoExecute),
            taint("dedicated", "web", NoSchedule),
        ];
        let startup = [taint("example.com/bootstrapping", "", NoExecute)];
        let kept = taints_for_uninitialized_node(&taints, &startup);
        assert_eq!(kept, vec![&taints[2]]);
    }

    #[test]
    fn disrupted_taint_and_parsing() {
        let disrupted = disrupted_no_schedule_taint();
        assert_eq!(disrupted.to_string(), "karpenter.sh/disrupted:NoSchedule");
        assert_eq!(TaintEffect::parse("NoExecute"), Some(NoExecute));
        assert_eq!(TaintEffect::parse("noexecute"), None);
        assert_eq!(
            TolerationOperator::parse(""),
            Some(TolerationOperator::Equal)
        );
        assert_eq!(
            TolerationOperator::parse("Exists"),
            Some(TolerationOperator::Exists)
        );
        assert_eq!(TolerationOperator::parse("Gt"), None);
    }
}
