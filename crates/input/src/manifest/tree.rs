//! Manifest YAML as located trees: the YAML rules Kubernetes manifests
//! follow, and typed reading from a tree with errors as [`ManifestError`].
//!
//! The tree itself lives in [`crate::yaml`] (shared with scenario files);
//! this module only fixes the rules and the error form: every error names
//! file, line, column and field path.

use serde::Deserialize;

use crate::yaml::{self, ParseOptions};
pub use crate::yaml::{Located, Node, Value};

use super::error::{ManifestError, Position, UnknownField};

/// YAML as kubectl and the API server read it: YAML 1.1 booleans, repeated
/// keys and non-finite floats are errors, keys must be scalars.
pub const KUBERNETES_YAML: ParseOptions = ParseOptions {
    strict_booleans: false,
    keep_duplicate_keys: false,
    keep_non_finite_floats: false,
    scalar_keys_only: true,
    max_nodes: None,
};

/// A cluster snapshot: Kubernetes YAML whose size is the cluster's
/// (millions of values for tens of thousands of pods).
pub const SNAPSHOT_YAML: ParseOptions = ParseOptions {
    max_nodes: Some(500_000_000),
    ..KUBERNETES_YAML
};

/// Parses every document of a YAML stream. Empty documents (a trailing
/// `---`, comment-only documents, `null`) are skipped.
pub fn parse_stream(file: &str, text: &str) -> Result<Vec<Node>, ManifestError> {
    parse_stream_with(file, text, KUBERNETES_YAML)
}

/// [`parse_stream`] under other YAML rules (budgets).
pub fn parse_stream_with(
    file: &str,
    text: &str,
    rules: ParseOptions,
) -> Result<Vec<Node>, ManifestError> {
    yaml::parse_stream(text, rules).map_err(|e| ManifestError::Yaml {
        at: Position::at(file, e.position),
        message: e.message,
    })
}

/// Deserializes a typed value from `node`. Errors carry the position and
/// dotted path (prefixed by `base_path`) of the offending field.
pub fn deserialize<'de, T: Deserialize<'de>>(
    node: &'de Node,
    file: &str,
    base_path: &str,
) -> Result<T, ManifestError> {
    yaml::from_node(node).map_err(|e| ManifestError::Field {
        at: Position::at(file, e.position().unwrap_or(node.position)),
        path: e.path_below(base_path),
        message: e.message().to_string(),
    })
}

/// Deserializes a Kubernetes object from `node` as kubectl's strict field
/// validation reads it: a key its kind does not define is an error naming
/// `object` (`Deployment shop/frontend`), except below the server-written
/// top-level `status`.
pub fn deserialize_strict<'de, T: Deserialize<'de>>(
    node: &'de Node,
    file: &str,
    base_path: &str,
    object: impl FnOnce() -> String,
) -> Result<T, ManifestError> {
    yaml::from_node_strict(node, &["status"]).map_err(|e| {
        let at = Position::at(file, e.position().unwrap_or(node.position));
        match e.unknown_field() {
            Some(unknown) => ManifestError::UnknownField(Box::new(UnknownField {
                at,
                field: unknown.key.clone(),
                object: object(),
                path: e.path_below(""),
                suggestion: unknown.suggestion.map(str::to_string),
            })),
            None => ManifestError::Field {
                at,
                path: e.path_below(base_path),
                message: e.message().to_string(),
            },
        }
    })
}

/// Positions and errors located at a tree node.
impl Position {
    /// The position of a tree node in `file`.
    pub fn of(file: &str, node: &Node) -> Position {
        Position::at(file, node.position)
    }
}

impl ManifestError {
    /// A field error at `node`.
    pub fn field(
        file: &str,
        node: &Node,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> ManifestError {
        ManifestError::Field {
            at: Position::of(file, node),
            path: path.into(),
            message: message.into(),
        }
    }

    /// A field error at `node` for the field `path` below it, pointing at
    /// the exact line when the path can be found in the tree.
    pub fn below(file: &str, node: &Node, path: &str, message: impl Into<String>) -> ManifestError {
        let target = node.at_path(path).unwrap_or(node);
        ManifestError::field(file, target, path, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        weight: Located<u32>,
        #[serde(default)]
        names: Vec<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        spec: Inner,
    }

    fn one(text: &str) -> Node {
        let mut docs = parse_stream("t.yaml", text).expect("parses");
        assert_eq!(docs.len(), 1);
        docs.remove(0)
    }

    #[test]
    fn streams_skip_empty_documents_and_keep_absolute_lines() {
        let docs =
            parse_stream("t.yaml", "---\na: 1\n---\n# nothing\n---\nb: 2\n---\n").expect("parses");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].get("b").map(|n| n.position.line), Some(6));
    }

    #[test]
    fn syntax_errors_name_the_file_and_position() {
        let err = parse_stream("bad.yaml", "a: [1\nb: 2\n").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("bad.yaml:2:"), "{text}");
    }

    /// Sequence keys are refused while parsing, at the key.
    #[test]
    fn non_scalar_keys_are_yaml_errors() {
        let err = parse_stream("k.yaml", "a: 1\n[x]: 2\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "k.yaml:2:1: malformed YAML: mapping keys must be scalars"
        );
    }

    #[test]
    fn unknown_fields_carry_path_and_position() {
        let node = one("spec:\n  weight: 3\n  nmaes: [a]\n");
        let err = deserialize::<Outer>(&node, "f.yaml", "").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("f.yaml:3:3: spec.nmaes: unknown field `nmaes`"),
            "{text}"
        );
    }

    #[test]
    fn type_errors_point_at_the_value() {
        let node = one("spec:\n  weight: 3\n  names: [a, [b]]\n");
        let err = deserialize::<Outer>(&node, "f.yaml", "").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("f.yaml:3:14: spec.names[1]: invalid type"),
            "{text}"
        );
    }

    #[test]
    fn located_values_know_their_position() {
        let node = one("spec:\n  weight: 3\n");
        let outer: Outer = deserialize(&node, "f.yaml", "").expect("ok");
        assert!(outer.spec.names.is_empty());
        assert_eq!(
            (outer.spec.weight.value, outer.spec.weight.position.line),
            (3, 2)
        );
        assert_eq!(outer.spec.weight.position.column, 11);
    }
}
