//! A located YAML tree and a serde deserializer over it.
//!
//! Every document is parsed once into [`Node`]s that remember their line and
//! column. Typed objects (k8s-openapi kinds, Karpenter kinds) are then
//! deserialized *from the tree*, so any error can name the exact line, column
//! and field path, even inside a `List` or deep in a pod template.

use std::fmt;

use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use super::error::{ManifestError, Position};

/// A YAML value with the position where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// 1-based line in the file.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// A YAML value. Mappings keep their keys in document order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// A boolean.
    Bool(bool),
    /// A non-negative integer.
    UInt(u64),
    /// A negative integer.
    Int(i64),
    /// A float (also integers too large for 64 bits).
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping with string keys.
    Map(Vec<(Key, Node)>),
}

/// A mapping key with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key text.
    pub name: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl Node {
    /// The value under `key` when this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string value under `key`, if it is a string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        match self.get(key).map(|n| &n.value) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    /// Finds the node at a dotted path such as `spec.containers[0].resources`.
    /// Keys containing dots are not supported (labels are never looked up).
    pub fn at_path(&self, path: &str) -> Option<&Node> {
        let mut node = self;
        for part in path.split('.').filter(|p| !p.is_empty()) {
            let (name, indices) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if !name.is_empty() {
                node = node.get(name)?;
            }
            for index in indices.split(['[', ']']).filter(|s| !s.is_empty()) {
                let i: usize = index.parse().ok()?;
                node = match &node.value {
                    Value::Seq(items) => items.get(i)?,
                    _ => return None,
                };
            }
        }
        Some(node)
    }

    /// Parses every document of a YAML stream. Empty documents (a trailing
    /// `---`, comment-only documents, `null`) are skipped.
    pub fn parse_stream(file: &str, text: &str) -> Result<Vec<Node>, ManifestError> {
        let docs: Vec<Option<Node>> = serde_saphyr::from_multiple(text).map_err(|e| {
            let location = e.location();
            ManifestError::Yaml {
                at: Position {
                    file: file.to_string(),
                    line: location.map_or(0, |l| l.line() as u32),
                    column: location.map_or(0, |l| l.column() as u32),
                },
                message: saphyr_message(&e),
            }
        })?;
        Ok(docs
            .into_iter()
            .flatten()
            .filter(|n| n.value != Value::Null)
            .collect())
    }

    /// Deserializes a typed value from this node. Errors carry the position
    /// and dotted path (prefixed by `base_path`) of the offending field.
    pub fn deserialize<'de, T: Deserialize<'de>>(
        &'de self,
        file: &str,
        base_path: &str,
    ) -> Result<T, ManifestError> {
        T::deserialize(NodeDeserializer { node: self }).map_err(|e| {
            let (line, column) = e.position.unwrap_or((self.line, self.column));
            let mut path = base_path.to_string();
            for segment in e.path.iter().rev() {
                match segment {
                    Segment::Key(k) => {
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(k);
                    }
                    Segment::Index(i) => path.push_str(&format!("[{i}]")),
                }
            }
            ManifestError::Field {
                at: Position {
                    file: file.to_string(),
                    line,
                    column,
                },
                path,
                message: e.message,
            }
        })
    }

    /// A short description of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::UInt(_) | Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }

    /// The scalar as text (strings as written, numbers and booleans printed).
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::UInt(n) => Some(n.to_string()),
            Value::Int(n) => Some(n.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
}

/// The message of a serde-saphyr error on one line, without its location
/// (which is reported separately) or code snippet.
fn saphyr_message(e: &serde_saphyr::Error) -> String {
    use serde_saphyr::MessageFormatter;
    let text = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet());
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        let spanned = serde_saphyr::Spanned::<Value>::deserialize(deserializer)?;
        Ok(Node {
            value: spanned.value,
            line: spanned.referenced.line() as u32,
            column: spanned.referenced.column() as u32,
        })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
                Value::deserialize(d)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                Ok(if v >= 0 {
                    Value::UInt(v as u64)
                } else {
                    Value::Int(v)
                })
            }
            fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
                Ok(Value::UInt(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
                Ok(Value::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Value, E> {
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
                while let Some(key) = map.next_key::<serde_saphyr::Spanned<KeyText>>()? {
                    let value = map.next_value::<Node>()?;
                    entries.push((
                        Key {
                            name: key.value.0,
                            line: key.referenced.line() as u32,
                            column: key.referenced.column() as u32,
                        },
                        value,
                    ));
                }
                Ok(Value::Map(entries))
            }
        }
        deserializer.deserialize_any(ValueVisitor)
    }
}

/// A mapping key read as text whatever its YAML type (`80: x` has key "80").
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KeyText, D::Error> {
        let node = Value::deserialize(deserializer)?;
        let text = match node {
            Value::Str(s) => s,
            Value::UInt(n) => n.to_string(),
            Value::Int(n) => n.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => "null".to_string(),
            Value::Seq(_) | Value::Map(_) => {
                return Err(de::Error::custom("mapping keys must be scalars"));
            }
        };
        Ok(KeyText(text))
    }
}

/// One step of a field path, innermost first while an error unwinds.
#[derive(Debug, Clone)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A deserialization error that learns its position and path as it unwinds.
#[derive(Debug, Clone)]
pub struct TreeError {
    message: String,
    position: Option<(u32, u32)>,
    path: Vec<Segment>,
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TreeError {}

impl de::Error for TreeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        TreeError {
            message: msg.to_string(),
            position: None,
            path: Vec::new(),
        }
    }
}

impl TreeError {
    fn locate(mut self, node: &Node) -> Self {
        self.position.get_or_insert((node.line, node.column));
        self
    }
}

/// The name that makes [`NodeDeserializer`] hand a [`Located`] its position.
const LOCATED_MAGIC: &str = "$karpsim::Located";

/// A value together with where it was written, for checks made after
/// deserialization (ranges, patterns) that must still name a line.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// 1-based line (0 when not read from a [`Node`]).
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Located<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LocatedVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for LocatedVisitor<T> {
            type Value = Located<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a located value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Located<T>, A::Error> {
                let missing = || de::Error::custom("internal: located value incomplete");
                let line: u32 = seq.next_element()?.ok_or_else(missing)?;
                let column: u32 = seq.next_element()?.ok_or_else(missing)?;
                let value: T = seq.next_element()?.ok_or_else(missing)?;
                Ok(Located {
                    value,
                    line,
                    column,
                })
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Located<T>, D::Error> {
                Ok(Located {
                    value: T::deserialize(d)?,
                    line: 0,
                    column: 0,
                })
            }
        }
        deserializer
            .deserialize_newtype_struct(LOCATED_MAGIC, LocatedVisitor(std::marker::PhantomData))
    }
}

/// Serde deserializer over a borrowed [`Node`].
#[derive(Clone, Copy)]
struct NodeDeserializer<'de> {
    node: &'de Node,
}

impl<'de> NodeDeserializer<'de> {
    fn text(&self) -> Option<String> {
        self.node.scalar_text()
    }
}

impl<'de> Deserializer<'de> for NodeDeserializer<'de> {
    type Error = TreeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        let node = self.node;
        let result = match &node.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::UInt(n) => visitor.visit_u64(*n),
            Value::Int(n) => visitor.visit_i64(*n),
            Value::Float(f) => visitor.visit_f64(*f),
            Value::Str(s) => visitor.visit_borrowed_str(s),
            Value::Seq(items) => visitor.visit_seq(NodeSeq {
                items: items.iter(),
                index: 0,
            }),
            Value::Map(entries) => visitor.visit_map(NodeMap {
                entries: entries.iter(),
                pending: None,
            }),
        };
        result.map_err(|e| e.locate(node))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        match self.node.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        match &self.node.value {
            Value::Str(s) => visitor.visit_borrowed_str(s),
            // Kubernetes tolerates unquoted numbers where strings are expected
            // in many places (label values in kubectl-generated YAML); so do we.
            Value::UInt(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                let text = self.text().unwrap_or_default();
                visitor
                    .visit_string(text)
                    .map_err(|e: TreeError| e.locate(self.node))
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TreeError> {
        if name == LOCATED_MAGIC {
            return visitor.visit_seq(LocatedSeq {
                node: self.node,
                step: 0,
            });
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        visitor.visit_unit()
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TreeError> {
        match &self.node.value {
            Value::Str(s) => visitor
                .visit_enum(s.as_str().into_deserializer())
                .map_err(|e: TreeError| e.locate(self.node)),
            _ => Err(de::Error::custom(format!(
                "expected a string, found {}",
                self.node.type_name()
            )))
            .map_err(|e: TreeError| e.locate(self.node)),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char
        bytes byte_buf unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// Feeds a [`Located`] its line, column and value.
struct LocatedSeq<'de> {
    node: &'de Node,
    step: u8,
}

impl<'de> SeqAccess<'de> for LocatedSeq<'de> {
    type Error = TreeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TreeError> {
        self.step += 1;
        match self.step {
            1 => seed
                .deserialize(self.node.line.into_deserializer())
                .map(Some),
            2 => seed
                .deserialize(self.node.column.into_deserializer())
                .map(Some),
            3 => seed
                .deserialize(NodeDeserializer { node: self.node })
                .map(Some),
            _ => Ok(None),
        }
    }
}

struct NodeSeq<'de> {
    items: std::slice::Iter<'de, Node>,
    index: usize,
}

impl<'de> SeqAccess<'de> for NodeSeq<'de> {
    type Error = TreeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TreeError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(NodeDeserializer { node: item })
            .map(Some)
            .map_err(|mut e| {
                e = e.locate(item);
                e.path.push(Segment::Index(index));
                e
            })
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct NodeMap<'de> {
    entries: std::slice::Iter<'de, (Key, Node)>,
    pending: Option<&'de (Key, Node)>,
}

impl<'de> MapAccess<'de> for NodeMap<'de> {
    type Error = TreeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TreeError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.pending = Some(entry);
        let key = &entry.0;
        let deserializer: de::value::BorrowedStrDeserializer<'de, TreeError> =
            de::value::BorrowedStrDeserializer::new(&key.name);
        seed.deserialize(deserializer).map(Some).map_err(|mut e| {
            e.position.get_or_insert((key.line, key.column));
            e.path.push(Segment::Key(key.name.clone()));
            e
        })
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, TreeError> {
        let Some((key, node)) = self.pending.take() else {
            return Err(de::Error::custom("internal: value requested before key"));
        };
        seed.deserialize(NodeDeserializer { node })
            .map_err(|mut e| {
                e = e.locate(node);
                e.path.push(Segment::Key(key.name.clone()));
                e
            })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
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
        let mut docs = Node::parse_stream("t.yaml", text).expect("parses");
        assert_eq!(docs.len(), 1);
        docs.remove(0)
    }

    #[test]
    fn streams_skip_empty_documents_and_keep_absolute_lines() {
        let docs = Node::parse_stream("t.yaml", "---\na: 1\n---\n# nothing\n---\nb: 2\n---\n")
            .expect("parses");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].get("b").map(|n| n.line), Some(6));
    }

    #[test]
    fn syntax_errors_name_the_file_and_position() {
        let err = Node::parse_stream("bad.yaml", "a: [1\nb: 2\n").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("bad.yaml:2:"), "{text}");
    }

    #[test]
    fn unknown_fields_carry_path_and_position() {
        let node = one("spec:\n  weight: 3\n  nmaes: [a]\n");
        let err = node.deserialize::<Outer>("f.yaml", "").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("f.yaml:3:3: spec.nmaes: unknown field `nmaes`"),
            "{text}"
        );
    }

    #[test]
    fn type_errors_point_at_the_value() {
        let node = one("spec:\n  weight: 3\n  names: [a, [b]]\n");
        let err = node.deserialize::<Outer>("f.yaml", "").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("f.yaml:3:14: spec.names[1]: invalid type"),
            "{text}"
        );
    }

    #[test]
    fn located_values_know_their_position() {
        let node = one("spec:\n  weight: 3\n");
        let outer: Outer = node.deserialize("f.yaml", "").expect("ok");
        assert!(outer.spec.names.is_empty());
        assert_eq!((outer.spec.weight.value, outer.spec.weight.line), (3, 2));
        assert_eq!(outer.spec.weight.column, 11);
    }

    #[test]
    fn at_path_walks_keys_and_indices() {
        let node = one("spec:\n  containers:\n  - name: a\n  - name: b\n");
        let found = node.at_path("spec.containers[1].name").expect("found");
        assert_eq!(found.value, Value::Str("b".into()));
        assert_eq!(found.line, 4);
    }
}
