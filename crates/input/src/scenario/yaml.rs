//! The YAML rules of scenario files, on top of the located trees of
//! [`crate::yaml`], which let the schema checks in [`super::read`] name the
//! exact place of each problem.
//!
//! Reading a generic tree first and checking the schema by hand, instead of
//! deriving `Deserialize` for the schema types, is what lets every error
//! carry its field path (`workloads[2].at`), the list of valid keys, and a
//! "not supported yet" answer for keys reserved for later schema additions.

pub(super) use crate::yaml::{Node, SyntaxError, Value, one_line};
use crate::yaml::{ParseOptions, parse_stream};

/// Most YAML nodes (scalars, lists, mappings, alias expansions included)
/// a scenario file may hold.
const MAX_NODES: usize = 50_000;

/// Scenario YAML: repeated keys, non-finite floats and non-string keys
/// reach the schema checks, which name the field and both places.
const SCENARIO_YAML: ParseOptions = ParseOptions {
    // YAML 1.2 booleans only: `no`, `on`, `y` stay strings.
    strict_booleans: true,
    keep_duplicate_keys: true,
    keep_non_finite_floats: true,
    scalar_keys_only: false,
    // A scenario is small; a tighter node budget than the default
    // 250 000 stops alias bombs sooner (a thousand workload items are
    // under 10 000 nodes).
    max_nodes: Some(MAX_NODES),
};

/// Parses the YAML stream in `text`: `Ok(None)` when it holds no document
/// (empty, or only comments), an error when it holds more than one.
pub(super) fn parse_document(text: &str) -> Result<Option<Node>, SyntaxError> {
    let mut documents = parse_stream(text, SCENARIO_YAML)?;
    if documents.len() > 1 {
        return Err(SyntaxError {
            position: documents[1].position,
            message: "a scenario file holds one YAML document, but another one starts here"
                .to_string(),
        });
    }
    Ok(documents.pop())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Position;

    fn map_entries(node: &Node) -> &[(Node, Node)] {
        match &node.value {
            Value::Map(entries) => entries,
            other => panic!("expected a mapping, got {other:?}"),
        }
    }

    #[test]
    fn repeated_keys_and_yaml_1_1_booleans_reach_the_schema_checks() {
        let root = parse_document("no: on\nno: 1\n").unwrap().unwrap();
        let entries = map_entries(&root);
        assert_eq!(entries.len(), 2, "both entries are kept");
        assert_eq!(entries[0].0.value, Value::Str("no".into()));
        assert_eq!(entries[0].1.value, Value::Str("on".into()));
    }

    #[test]
    fn empty_streams_have_no_document_and_two_documents_are_an_error() {
        assert_eq!(parse_document(""), Ok(None));
        assert_eq!(parse_document("# c\n---\n"), Ok(None));
        let err = parse_document("a: 1\n---\nb: 2\n").unwrap_err();
        assert_eq!(err.position, Position { line: 3, column: 1 });
    }
}
