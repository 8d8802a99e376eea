//! A serde deserializer over a [`Node`] tree.
//!
//! Typed objects (k8s-openapi kinds, Karpenter kinds) are deserialized *from
//! the tree*, so any error can name the exact line, column and field path,
//! even inside a `List` or deep in a pod template. [`Located`] hands a value
//! its own position for checks made after deserialization.
//!
//! [`from_node_strict`] also refuses mapping keys a struct does not list
//! among its fields. Types whose `Deserialize` drops unknown keys (the
//! k8s-openapi kinds: their hand-written impls pass the complete field list
//! to `deserialize_struct` and skip other keys) are thereby read as strictly
//! as `deny_unknown_fields` types, the way kubectl's strict field validation
//! reads them.

use std::fmt;

use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use super::{Node, Position, Value};

/// Deserializes a typed value from `node`.
pub fn from_node<'de, T: Deserialize<'de>>(node: &'de Node) -> Result<T, DeError> {
    T::deserialize(NodeDeserializer {
        node,
        rules: Rules::LENIENT,
    })
}

/// Deserializes a typed value from `node`, refusing a mapping key that the
/// struct read from that mapping does not list among its fields (the error
/// names the key, a near field and the key's position; its path is the
/// mapping's). The values of the root's keys named in `lenient_keys` are
/// read without that check (parts a server writes, such as `status`).
pub fn from_node_strict<'de, T: Deserialize<'de>>(
    node: &'de Node,
    lenient_keys: &'static [&'static str],
) -> Result<T, DeError> {
    T::deserialize(NodeDeserializer {
        node,
        rules: Rules {
            strict: true,
            lenient_keys,
        },
    })
}

/// Whether struct fields are checked, and which keys of this mapping are
/// exempt (only the root's).
#[derive(Debug, Clone, Copy)]
struct Rules {
    strict: bool,
    lenient_keys: &'static [&'static str],
}

impl Rules {
    const LENIENT: Rules = Rules {
        strict: false,
        lenient_keys: &[],
    };

    /// The rules for the value under `key` of a mapping read with `self`.
    fn below(self, key: &str) -> Rules {
        if self.lenient_keys.contains(&key) {
            Rules::LENIENT
        } else {
            self.nested()
        }
    }

    /// The rules for items of a sequence, or anything below the root.
    fn nested(self) -> Rules {
        Rules {
            strict: self.strict,
            lenient_keys: &[],
        }
    }
}

/// A mapping key that the struct being read does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    /// The key as written.
    pub key: String,
    /// The struct's field nearest to it, when one is near.
    pub suggestion: Option<&'static str>,
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
    unknown_field: Option<UnknownField>,
}

impl DeError {
    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The unknown key, when that is the error (strict reading only); the
    /// path then is that of the mapping holding it.
    pub fn unknown_field(&self) -> Option<&UnknownField> {
        self.unknown_field.as_ref()
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
            unknown_field: None,
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
    rules: Rules,
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
                rules: self.rules.nested(),
            }),
            Value::Map(entries) => visitor.visit_map(NodeMap {
                entries: entries.iter(),
                pending: None,
                rules: self.rules,
                fields: None,
            }),
        };
        result.map_err(|e| e.locate(node))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::Map(entries) if self.rules.strict => visitor
                .visit_map(NodeMap {
                    entries: entries.iter(),
                    pending: None,
                    rules: self.rules,
                    fields: Some(fields),
                })
                .map_err(|e| e.locate(self.node)),
            _ => self.deserialize_any(visitor),
        }
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
                rules: self.rules,
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
        bytes byte_buf unit_struct seq tuple tuple_struct map identifier
    }
}

/// Feeds a [`Located`] its line, column and value.
struct LocatedSeq<'de> {
    node: &'de Node,
    rules: Rules,
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
                .deserialize(NodeDeserializer {
                    node: self.node,
                    rules: self.rules,
                })
                .map(Some),
            _ => Ok(None),
        }
    }
}

struct NodeSeq<'de> {
    items: std::slice::Iter<'de, Node>,
    index: usize,
    rules: Rules,
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
        seed.deserialize(NodeDeserializer {
            node: item,
            rules: self.rules,
        })
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
    /// The rules the mapping is read with.
    rules: Rules,
    /// The fields of the struct read from this mapping, when strict.
    fields: Option<&'static [&'static str]>,
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
        if let Some(fields) = self.fields
            && !fields.contains(&text.as_ref())
        {
            let suggestion = crate::suggest::closest(&text, fields.iter().copied());
            let message = match suggestion {
                Some(near) => format!("unknown field {text:?} (did you mean {near:?}?)"),
                None => format!("unknown field {text:?}"),
            };
            return Err(DeError {
                message,
                position: Some(key.position),
                path: Vec::new(),
                unknown_field: Some(UnknownField {
                    key: text.into_owned(),
                    suggestion,
                }),
            });
        }
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
        let name = key.key_text().unwrap_or_default();
        seed.deserialize(NodeDeserializer {
            node,
            rules: self.rules.below(&name),
        })
        .map_err(|mut e| {
            e = e.locate(node);
            e.path.push(Segment::Key(name.into_owned()));
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

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Container {
        name: String,
        #[serde(default)]
        resources: Option<std::collections::BTreeMap<String, String>>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Spec {
        containers: Vec<Container>,
    }

    /// Like k8s-openapi's kinds, these structs drop unknown keys when read
    /// leniently.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Object {
        spec: Option<Spec>,
        #[serde(default)]
        status: Option<Spec>,
    }

    /// Strict reading names the unknown key, its position, a near field and
    /// the path of the mapping that holds it; lenient reading drops it.
    #[test]
    fn strict_reading_refuses_unknown_keys_at_the_key() {
        let node = one("spec:\n  containers:\n  - name: a\n    resource: {cpu: '1'}\n");
        assert!(from_node::<Object>(&node).is_ok());
        let err = from_node_strict::<Object>(&node, &[]).unwrap_err();
        assert_eq!(err.position(), Some(Position { line: 4, column: 5 }));
        assert_eq!(err.path_below(""), "spec.containers[0]");
        assert_eq!(
            err.unknown_field(),
            Some(&UnknownField {
                key: "resource".to_string(),
                suggestion: Some("resources"),
            })
        );
        assert_eq!(
            err.message(),
            "unknown field \"resource\" (did you mean \"resources\"?)"
        );
        let far = one("spec:\n  containers: []\n  zzz: 1\n");
        let err = from_node_strict::<Object>(&far, &[]).unwrap_err();
        assert_eq!(err.path_below(""), "spec");
        assert_eq!(err.unknown_field().and_then(|u| u.suggestion), None);
    }

    /// Maps keep any key; the root's lenient keys are read leniently, but
    /// only at the root.
    #[test]
    fn strict_reading_keeps_maps_and_lenient_keys_open() {
        let node = one(
            "spec:\n  containers:\n  - name: a\n    resources: {anything: x}\nstatus:\n  containers: []\n  observedGeneration: 3\n",
        );
        assert!(from_node_strict::<Object>(&node, &["status"]).is_ok());
        assert!(from_node_strict::<Object>(&node, &[]).is_err());
        let nested = one("spec:\n  containers: []\n  status: 1\n");
        assert!(from_node_strict::<Object>(&nested, &["status"]).is_err());
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
