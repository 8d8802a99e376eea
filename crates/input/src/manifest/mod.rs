//! Reading real Kubernetes manifests (multi-document YAML, `kubectl -o yaml`
//! Lists) into karpsim's compact internal forms, and writing pods back as
//! manifests ([`export`]). This is the only place that touches k8s-openapi
//! types and YAML for core objects.
//!
//! Reading happens in two steps. [`split_documents`] parses a YAML stream
//! into located trees and reads each document's `apiVersion` and `kind`
//! (expanding `List`s). Core kinds are then read by [`CoreReader`]; other
//! kinds (Karpenter's) are left to their own modules, which deserialize from
//! the same located tree so their errors also name line, column and field.

pub mod convert;
mod core;
pub mod error;
pub mod export;
pub mod tree;

pub use self::core::{
    CORE_KINDS, CoreManifests, CoreReader, PROVISIONING_KINDS, is_cluster_scoped, is_core_kind,
};
pub use self::error::{ManifestError, ManifestWarning, Position, Warnings};
pub use self::tree::{Located, Node, Value};

/// One object read from a manifest stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The file name (for messages).
    pub file: String,
    /// Path of the object in its YAML document: `""`, or `items[3]` for an
    /// item of a `List`.
    pub base_path: String,
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name` (may be empty).
    pub name: String,
    /// The object's tree.
    pub node: Node,
}

impl Document {
    /// Deserializes the whole object; errors name the exact field.
    pub fn deserialize<'de, T: serde::Deserialize<'de>>(&'de self) -> Result<T, ManifestError> {
        tree::deserialize(&self.node, &self.file, &self.base_path)
    }

    /// Deserializes a Kubernetes object strictly, as kubectl's strict field
    /// validation does: a field the kind does not define is an error naming
    /// the object (the top-level `status` is read leniently).
    pub fn deserialize_strict<'de, T: serde::Deserialize<'de>>(
        &'de self,
    ) -> Result<T, ManifestError> {
        tree::deserialize_strict(&self.node, &self.file, &self.base_path, || {
            self.object_label()
        })
    }

    /// `Deployment shop/frontend` (`PriorityClass high` for cluster-scoped
    /// kinds), from the tree as written: a missing name shows as
    /// `(no name)`, a generateName as `prefix*`.
    pub fn object_label(&self) -> String {
        let meta = self.node.get("metadata");
        let text = |field: &str| {
            meta.and_then(|m| m.get_str(field))
                .filter(|s| !s.is_empty())
        };
        let name = match (text("name"), text("generateName")) {
            (Some(name), _) => name.to_string(),
            (None, Some(base)) => format!("{base}*"),
            (None, None) => "(no name)".to_string(),
        };
        if is_cluster_scoped(&self.kind) {
            format!("{} {name}", self.kind)
        } else {
            let namespace = text("namespace").unwrap_or("default");
            format!("{} {namespace}/{name}", self.kind)
        }
    }

    /// Where the object starts.
    pub fn position(&self) -> Position {
        Position::of(&self.file, &self.node)
    }

    /// A path below the object, prefixed with its base path.
    pub fn path(&self, relative: &str) -> String {
        if self.base_path.is_empty() {
            relative.to_string()
        } else if relative.is_empty() {
            self.base_path.clone()
        } else {
            format!("{}.{relative}", self.base_path)
        }
    }
}

/// Parses a YAML stream into objects. Empty documents are skipped; items of
/// a `v1 List` become objects of their own. A document without `apiVersion`
/// or `kind` is an error.
pub fn split_documents(file: &str, text: &str) -> Result<Vec<Document>, ManifestError> {
    split_documents_with(file, text, tree::KUBERNETES_YAML)
}

/// [`split_documents`] under other YAML rules (a cluster snapshot's
/// budgets: [`tree::SNAPSHOT_YAML`]).
pub fn split_documents_with(
    file: &str,
    text: &str,
    rules: crate::yaml::ParseOptions,
) -> Result<Vec<Document>, ManifestError> {
    let mut out = Vec::new();
    for node in tree::parse_stream_with(file, text, rules)? {
        let mut doc = header(file, node, String::new())?;
        if doc.kind == "List" || doc.kind.ends_with("List") && doc.node.get("items").is_some() {
            let items = match doc.node.get("items").map(|n| &n.value) {
                Some(Value::Seq(_)) => match doc.node.get_mut("items").map(|n| &mut n.value) {
                    Some(Value::Seq(items)) => std::mem::take(items),
                    _ => Vec::new(),
                },
                Some(Value::Null) | None => Vec::new(),
                Some(_) => {
                    let items = doc.node.get("items").unwrap_or(&doc.node);
                    return Err(ManifestError::field(
                        file,
                        items,
                        "items",
                        "expected a sequence",
                    ));
                }
            };
            for (i, item) in items.into_iter().enumerate() {
                out.push(header(file, item, format!("items[{i}]"))?);
            }
        } else {
            out.push(doc);
        }
    }
    Ok(out)
}

fn header(file: &str, node: Node, base_path: String) -> Result<Document, ManifestError> {
    let join = |field: &str| {
        if base_path.is_empty() {
            field.to_string()
        } else {
            format!("{base_path}.{field}")
        }
    };
    if !matches!(node.value, Value::Map(_)) {
        return Err(ManifestError::field(
            file,
            &node,
            join(""),
            format!(
                "expected a Kubernetes object (a mapping), found {}",
                node.type_name()
            ),
        ));
    }
    let text = |field: &str| -> Result<String, ManifestError> {
        match node.get(field) {
            None
            | Some(Node {
                value: Value::Null, ..
            }) => Err(ManifestError::field(
                file,
                &node,
                join(field),
                format!("missing {field}"),
            )),
            Some(Node {
                value: Value::Str(s),
                ..
            }) if !s.is_empty() => Ok(s.clone()),
            Some(other) => Err(ManifestError::field(
                file,
                other,
                join(field),
                format!("expected a non-empty string, found {}", other.type_name()),
            )),
        }
    };
    let api_version = text("apiVersion")?;
    let kind = text("kind")?;
    let name = node
        .get("metadata")
        .and_then(|m| m.get_str("name"))
        .unwrap_or_default()
        .to_string();
    Ok(Document {
        file: file.to_string(),
        base_path,
        api_version,
        kind,
        name,
        node,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_expanded_with_item_paths() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: b}\n";
        let docs = split_documents("l.yaml", text).expect("reads");
        let kinds: Vec<_> = docs
            .iter()
            .map(|d| (d.kind.as_str(), d.name.as_str(), d.base_path.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [("Pod", "a", "items[0]"), ("Deployment", "b", "items[1]")]
        );
    }

    #[test]
    fn missing_kind_is_an_error_with_position() {
        let err =
            split_documents("x.yaml", "---\napiVersion: v1\nmetadata: {name: a}\n").unwrap_err();
        assert_eq!(err.to_string(), "x.yaml:2:1: kind: missing kind");
    }

    #[test]
    fn missing_api_version_is_an_error() {
        let err = split_documents("x.yaml", "kind: Pod\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.yaml:1:1: apiVersion: missing apiVersion"
        );
    }

    #[test]
    fn trailing_separator_and_empty_documents_are_fine() {
        let docs =
            split_documents("x.yaml", "---\n---\napiVersion: v1\nkind: Pod\n---\n").expect("reads");
        assert_eq!(docs.len(), 1);
    }
}
