//! A YAML document read into a small tree whose every node remembers where it
//! came from (line, column and source text), so the schema checks in
//! [`super::read`] can name the exact place of each problem.
//!
//! serde-saphyr does the YAML parsing (syntax, anchors, aliases, budgets);
//! this module only collects its output. Reading a generic tree first and
//! checking the schema by hand, instead of deriving `Deserialize` for the
//! schema types, is what lets every error carry its field path
//! (`workloads[2].at`), the list of valid keys, and a "not supported yet"
//! answer for keys reserved for later schema additions.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{
    DefaultMessageFormatter, DuplicateKeyPolicy, MessageFormatter, NonFiniteFloatPolicy, Spanned,
};

use super::error::Position;

/// One YAML node with its position.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Node {
    pub value: Value,
    pub position: Position,
    /// Byte range of the node's text in the source, when known.
    pub bytes: Option<(usize, usize)>,
}

/// The content of a node. Integers are widened to `i128` so that every
/// value serde-saphyr reports (any `u64` or `i64`) fits.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// How the value is described in "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Value>::deserialize(deserializer)?;
        let location = spanned.referenced;
        let span = location.span();
        let bytes = match (span.byte_offset(), span.byte_len()) {
            (Some(start), Some(len)) => usize::try_from(start)
                .ok()
                .zip(usize::try_from(len).ok())
                .and_then(|(start, len)| Some((start, start.checked_add(len)?))),
            _ => None,
        };
        Ok(Node {
            value: spanned.value,
            position: Position {
                line: location.line(),
                column: location.column(),
            },
            bytes,
        })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Value::deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(i128::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Int(i128::from(v)))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        // Beyond i128 only as a float would be; keep it as one.
        Ok(i128::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<Node, Node>()? {
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }
}

/// A YAML-level problem (syntax, budget, several documents), on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SyntaxError {
    pub position: Position,
    pub message: String,
}

/// Most YAML nodes (scalars, lists, mappings, alias expansions included)
/// a scenario file may hold.
const MAX_NODES: usize = 50_000;

/// Parses the YAML stream in `text`: `Ok(None)` when it holds no document
/// (empty, or only comments), an error when it holds more than one.
pub(super) fn parse_document(text: &str) -> Result<Option<Node>, SyntaxError> {
    let options = serde_saphyr::options! {
        // YAML 1.2 booleans only: `no`, `on`, `y` stay strings.
        strict_booleans: true,
        // Repeated keys reach the schema checks, which name both places.
        duplicate_keys: DuplicateKeyPolicy::PassThrough,
        // `1e400` and `.inf` reach the schema checks too, which know the
        // field and the allowed range.
        non_finite_float_policy: NonFiniteFloatPolicy::PassThrough,
        with_snippet: false,
        // A scenario is small; a tighter node budget than the default
        // 250 000 stops alias bombs sooner (a thousand workload items are
        // under 10 000 nodes).
        budget: serde_saphyr::budget! { max_nodes: MAX_NODES },
    };
    let mut documents: Vec<Node> = serde_saphyr::from_str_multiple_with_options(text, options)
        .map_err(|err| {
            let position = err
                .location()
                .map(|l| Position {
                    line: l.line(),
                    column: l.column(),
                })
                .unwrap_or_default();
            let message = DefaultMessageFormatter.format_message(err.without_snippet());
            SyntaxError {
                position,
                message: one_line(&message),
            }
        })?;
    if documents.len() > 1 {
        return Err(SyntaxError {
            position: documents[1].position,
            message: "a scenario file holds one YAML document, but another one starts here"
                .to_string(),
        });
    }
    Ok(documents.pop())
}

/// Collapses line breaks and other control characters so that every error
/// stays on one line.
pub(super) fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_control())
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_entries(node: &Node) -> &[(Node, Node)] {
        match &node.value {
            Value::Map(entries) => entries,
            other => panic!("expected a mapping, got {other:?}"),
        }
    }

    #[test]
    fn nodes_carry_positions_and_source_bytes() {
        let text = "a: 1\nb: [x, -3]\n";
        let root = parse_document(text).unwrap().unwrap();
        let entries = map_entries(&root);
        let (key_b, value_b) = &entries[1];
        assert_eq!(key_b.value, Value::Str("b".into()));
        assert_eq!(key_b.position, Position { line: 2, column: 1 });
        let Value::Seq(items) = &value_b.value else {
            panic!("expected a list, got {value_b:?}");
        };
        assert_eq!(items[1].value, Value::Int(-3));
        assert_eq!(items[1].position, Position { line: 2, column: 8 });
        let (start, end) = items[1].bytes.unwrap();
        assert_eq!(&text[start..end], "-3");
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

    #[test]
    fn one_line_collapses_control_characters() {
        assert_eq!(one_line("a\n\n  b\tc\n"), "a b c");
    }
}
