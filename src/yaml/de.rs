//! A serde deserializer over a [`Node`] tree.
//!
//! Typed objects (k8s-openapi kinds, Karpenter kinds) are deserialized *from
//! the tree*, so any error can name the exact line, column and field path,
//! even inside a `List` or deep in a pod template. [`Located`] hands a value
//! its own position for checks made after deserialization.

use std::fmt;

use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use super::{Node, Position, Value};

/// Deserializes a typed value from `node`.
pub fn from_node<'de, T: Deserialize<'de>>(node: &'de Node) -> Result<T, DeError> {
    T::deserialize(NodeDeserializer { node })
}

/// One step of a field path, innermost first while an error unwinds.
#[derive(Debug, Clone)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A deserialization error that learns its position and path as it unwinds.
#[derive(Debug, Clone)]
pub struct DeError {
    message: String,
    position: Option<Position>,
    path: Vec<Segment>,
}

impl DeError {
    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Where the offending value (or key) is written, when known.
    pub fn position(&self) -> Option<Position> {
        self.position
    }

    /// The dotted path of the offending field below `base` (`base.spec.x`,
    /// `base[3]`); just the field's path when `base` is empty.
    pub fn path_below(&self, base: &str) -> String {
        let mut path = base.to_string();
        for segment in self.path.iter().rev() {
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
        path
    }

    fn locate(mut self, node: &Node) -> Self {
        self.position.get_or_insert(node.position);
        self
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            message: msg.to_string(),
            position: None,
            path: Vec::new(),
        }
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
    /// Where it is written (0:0 when not read from a [`Node`]).
    pub position: Position,
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
                let line: u64 = seq.next_element()?.ok_or_else(missing)?;
                let column: u64 = seq.next_element()?.ok_or_else(missing)?;
                let value: T = seq.next_element()?.ok_or_else(missing)?;
                Ok(Located {
                    value,
                    position: Position { line, column },
                })
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Located<T>, D::Error> {
                Ok(Located {
                    value: T::deserialize(d)?,
                    position: Position::default(),
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

impl<'de> Deserializer<'de> for NodeDeserializer<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let node = self.node;
        let result = match &node.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(n) => match (u64::try_from(*n), i64::try_from(*n)) {
                (Ok(n), _) => visitor.visit_u64(n),
                (_, Ok(n)) => visitor.visit_i64(n),
                _ => visitor.visit_i128(*n),
            },
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

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::Str(s) => visitor.visit_borrowed_str(s),
            // Kubernetes tolerates unquoted numbers where strings are expected
            // in many places (label values in kubectl-generated YAML); so do we.
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                let text = self.node.scalar_text().unwrap_or_default();
                visitor
                    .visit_string(text)
                    .map_err(|e: DeError| e.locate(self.node))
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        if name == LOCATED_MAGIC {
            return visitor.visit_seq(LocatedSeq {
                node: self.node,
                step: 0,
            });
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::Str(s) => visitor
                .visit_enum(s.as_str().into_deserializer())
                .map_err(|e: DeError| e.locate(self.node)),
            _ => Err(de::Error::custom(format!(
                "expected a string, found {}",
                self.node.type_name()
            )))
            .map_err(|e: DeError| e.locate(self.node)),
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
    type Error = DeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        self.step += 1;
        match self.step {
            1 => seed
                .deserialize(self.node.position.line.into_deserializer())
                .map(Some),
            2 => seed
                .deserialize(self.node.position.column.into_deserializer())
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
    type Error = DeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
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
    entries: std::slice::Iter<'de, (Node, Node)>,
    pending: Option<&'de (Node, Node)>,
}

/// The text of a mapping key; sequence and mapping keys (kept only by
/// readers that allow them) are refused here.
fn key_text(key: &Node) -> Result<std::borrow::Cow<'_, str>, DeError> {
    key.key_text()
        .ok_or_else(|| de::Error::custom("mapping keys must be scalars"))
        .map_err(|e: DeError| e.locate(key))
}

impl<'de> MapAccess<'de> for NodeMap<'de> {
    type Error = DeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.pending = Some(entry);
        let key = &entry.0;
        let text = key_text(key)?;
        let result = match &text {
            std::borrow::Cow::Borrowed(name) => {
                let deserializer: de::value::BorrowedStrDeserializer<'de, DeError> =
                    de::value::BorrowedStrDeserializer::new(name);
                seed.deserialize(deserializer)
            }
            std::borrow::Cow::Owned(name) => {
                let deserializer: de::value::StrDeserializer<'_, DeError> =
                    name.as_str().into_deserializer();
                seed.deserialize(deserializer)
            }
        };
        result.map(Some).map_err(|mut e| {
            e.position.get_or_insert(key.position);
            e.path.push(Segment::Key(text.into_owned()));
            e
        })
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some((key, node)) = self.pending.take() else {
            return Err(de::Error::custom("internal: value requested before key"));
        };
        seed.deserialize(NodeDeserializer { node })
            .map_err(|mut e| {
                e = e.locate(node);
                e.path.push(Segment::Key(
                    key.key_text().unwrap_or_default().into_owned(),
                ));
                e
            })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ParseOptions, parse_stream};
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Weights {
        weight: Located<u32>,
        #[serde(default)]
        by_port: std::collections::BTreeMap<String, i64>,
    }

    fn one(text: &str) -> Node {
        let options = ParseOptions {
            strict_booleans: false,
            keep_duplicate_keys: false,
            keep_non_finite_floats: false,
            scalar_keys_only: false,
            max_nodes: None,
        };
        parse_stream(text, options).expect("parses").remove(0)
    }

    #[test]
    fn errors_carry_position_and_path_below_a_base() {
        let node = one("a:\n- x: 1\n- x: [2]\n");
        #[derive(Debug, Deserialize)]
        struct Item {
            #[allow(dead_code)]
            x: u32,
        }
        #[derive(Debug, Deserialize)]
        struct Root {
            #[allow(dead_code)]
            a: Vec<Item>,
        }
        let err = from_node::<Root>(&node).unwrap_err();
        assert_eq!(err.position(), Some(Position { line: 3, column: 6 }));
        assert_eq!(err.path_below(""), "a[1].x");
        assert_eq!(err.path_below("items[2]"), "items[2].a[1].x");
        assert!(err.message().starts_with("invalid type"), "{err}");
    }

    /// Integer keys are read as their text; integers beyond `i64` reach
    /// the visitor as `i128`.
    #[test]
    fn integer_keys_read_as_text() {
        let node = one("weight: 4\nby_port: {80: 1, 443: -2}\n");
        let weights: Weights = from_node(&node).expect("reads");
        assert_eq!(weights.weight.value, 4);
        assert_eq!(weights.weight.position, Position { line: 1, column: 9 });
        let ports: Vec<_> = weights.by_port.into_iter().collect();
        assert_eq!(ports, [("443".to_string(), -2), ("80".to_string(), 1)]);
    }

    /// A sequence key, kept by a lenient reader, is refused at its place.
    #[test]
    fn sequence_keys_are_refused_when_deserializing() {
        let node = one("weight: 1\n[a]: 2\n");
        let err = from_node::<Weights>(&node).unwrap_err();
        assert_eq!(err.message(), "mapping keys must be scalars");
        assert_eq!(err.position(), Some(Position { line: 2, column: 1 }));
    }
}
