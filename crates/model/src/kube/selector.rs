//! Label selectors over pod labels (`matchLabels` + `matchExpressions`), as
//! PDBs, pod (anti-)affinity and topology spread constraints use them.

use std::collections::BTreeMap;

/// A `matchExpressions` operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SelectorOperator {
    /// The label is set to one of the values.
    In,
    /// The label is absent or set to none of the values.
    NotIn,
    /// The label is set.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl SelectorOperator {
    /// Parses the Kubernetes spelling.
    pub fn parse(text: &str) -> Option<SelectorOperator> {
        Some(match text {
            "In" => SelectorOperator::In,
            "NotIn" => SelectorOperator::NotIn,
            "Exists" => SelectorOperator::Exists,
            "DoesNotExist" => SelectorOperator::DoesNotExist,
            _ => return None,
        })
    }
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SelectorExpression {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: SelectorOperator,
    /// Values for `In` / `NotIn`.
    pub values: Vec<String>,
}

impl SelectorExpression {
    /// Whether `labels` satisfy this expression.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            SelectorOperator::In => value.is_some_and(|v| self.values.contains(v)),
            SelectorOperator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            SelectorOperator::Exists => value.is_some(),
            SelectorOperator::DoesNotExist => value.is_none(),
        }
    }
}

/// A label selector. An empty selector matches every set of labels (as in
/// a PDB with `selector: {}`); an absent selector is modelled by the caller
/// as `Option::None`, which matches nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelSelector {
    /// `matchLabels`: each key must have exactly this value.
    pub match_labels: BTreeMap<String, String>,
    /// `matchExpressions`: each must hold.
    pub match_expressions: Vec<SelectorExpression>,
}

impl LabelSelector {
    /// Whether `labels` satisfy every part of the selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|e| e.matches(labels))
    }

    /// Whether the selector has no terms (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Adds `key In [value]` (how `matchLabelKeys` narrows a selector).
    pub fn require(&mut self, key: &str, value: &str) {
        self.match_expressions.push(SelectorExpression {
            key: key.to_string(),
            operator: SelectorOperator::In,
            values: vec![value.to_string()],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, operator: SelectorOperator, values: &[&str]) -> SelectorExpression {
        SelectorExpression {
            key: key.into(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    /// apimachinery labels/selector semantics: NotIn and DoesNotExist match
    /// pods without the key; In and Exists do not.
    #[test]
    fn operators_follow_kubernetes_semantics() {
        let pod = labels(&[("app", "web"), ("tier", "front")]);
        let bare = labels(&[]);
        let cases = [
            (
                expr("app", SelectorOperator::In, &["web", "api"]),
                true,
                false,
            ),
            (expr("app", SelectorOperator::NotIn, &["api"]), true, true),
            (expr("app", SelectorOperator::NotIn, &["web"]), false, true),
            (expr("tier", SelectorOperator::Exists, &[]), true, false),
            (
                expr("tier", SelectorOperator::DoesNotExist, &[]),
                false,
                true,
            ),
        ];
        for (e, on_pod, on_bare) in cases {
            assert_eq!(e.matches(&pod), on_pod, "{e:?} on pod");
            assert_eq!(e.matches(&bare), on_bare, "{e:?} on bare");
        }
    }

    #[test]
    fn match_labels_and_expressions_are_anded() {
        let mut selector = LabelSelector {
            match_labels: labels(&[("app", "web")]),
            match_expressions: vec![expr("tier", SelectorOperator::In, &["front"])],
        };
        assert!(selector.matches(&labels(&[("app", "web"), ("tier", "front")])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "back")])));
        assert!(!selector.matches(&labels(&[("tier", "front")])));
        selector.require("version", "v2");
        assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "front")])));
    }

    #[test]
    fn empty_selector_matches_everything() {
        let selector = LabelSelector::default();
        assert!(selector.is_empty());
        assert!(selector.matches(&labels(&[])));
        assert!(selector.matches(&labels(&[("a", "b")])));
    }
}
