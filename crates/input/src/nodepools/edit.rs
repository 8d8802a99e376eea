//! Edits of NodePool documents before they are read: one field, named with
//! upstream's spelling (`spec.disruption.consolidateAfter`,
//! `spec.disruption.budgets[0].nodes`), set to a value written elsewhere
//! (a sweep file's `vary`). The edited document is then read and validated
//! like any other, so a value Karpenter would refuse is refused the same
//! way.
//!
//! Missing mappings along the path are created, and so is a list entry one
//! past the end of a list (or of a missing list): `budgets[0].nodes` on a
//! NodePool without budgets gives it one budget. Any other step through a
//! value of the wrong kind is an error at that value.

use std::fmt;

use crate::manifest::{ManifestError, Node, Value};
use crate::yaml::Position;

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// A dotted field path with list indices, `spec.disruption.budgets[0].nodes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    steps: Vec<PathStep>,
}

/// Why a field path does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid field path {text:?}: {reason}")]
pub struct FieldPathError {
    /// The path as written.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FieldPath {
    /// Parses `text`: keys of letters, digits, `_` and `-`, separated by
    /// dots, each optionally followed by indices `[n]`.
    pub fn parse(text: &str) -> Result<FieldPath, FieldPathError> {
        let error = |reason| FieldPathError {
            text: text.to_string(),
            reason,
        };
        if text.is_empty() {
            return Err(error("must not be empty"));
        }
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (key, mut indices) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if key.is_empty() {
                return Err(error("every dot-separated part needs a key"));
            }
            if !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            {
                return Err(error(
                    "keys are letters, digits, '_' and '-' (keys with dots cannot be named)",
                ));
            }
            steps.push(PathStep::Key(key.to_string()));
            while !indices.is_empty() {
                let Some(rest) = indices.strip_prefix('[') else {
                    return Err(error("an index is written [n] right after its key"));
                };
                let Some((digits, rest)) = rest.split_once(']') else {
                    return Err(error("an index needs its closing ']'"));
                };
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(error("an index is a whole number such as [0]"));
                }
                let index = digits
                    .parse::<usize>()
                    .map_err(|_| error("the index is too large"))?;
                steps.push(PathStep::Index(index));
                indices = rest;
            }
        }
        Ok(FieldPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its steps, outermost first.
    pub fn steps(&self) -> &[PathStep] {
        &self.steps
    }

    /// The last key of the path with the indices after it
    /// (`consolidateAfter`, `nodes`, `budgets[0]`).
    pub fn leaf(&self) -> String {
        let start = self
            .steps
            .iter()
            .rposition(|s| matches!(s, PathStep::Key(_)))
            .unwrap_or(0);
        PathText(&self.steps[start..]).to_string()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Steps written back as a path.
struct PathText<'a>(&'a [PathStep]);

impl fmt::Display for PathText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                PathStep::Key(key) if i == 0 => f.write_str(key)?,
                PathStep::Key(key) => write!(f, ".{key}")?,
                PathStep::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// One field of every NodePool set to one value.
#[derive(Debug, Clone, PartialEq)]
pub struct NodePoolEdit {
    /// The field.
    pub field: FieldPath,
    /// The value, as a YAML tree.
    pub value: Node,
}

impl NodePoolEdit {
    /// Sets the field in `root`, a NodePool document of `file`. The new
    /// value takes the position of the node it replaces (or of the mapping
    /// or list it is added to), so messages about it point into `file`.
    pub fn apply(&self, root: &mut Node, file: &str, base_path: &str) -> Result<(), ManifestError> {
        let mut node = root;
        for (depth, step) in self.field.steps.iter().enumerate() {
            let here = PathText(&self.field.steps[..depth]).to_string();
            let full = |path: &str| match (base_path.is_empty(), path.is_empty()) {
                (true, _) => path.to_string(),
                (false, true) => base_path.to_string(),
                (false, false) => format!("{base_path}.{path}"),
            };
            let position = node.position;
            let wrong_kind = |node: &Node, expected: &str| {
                ManifestError::field(
                    file,
                    node,
                    full(&here),
                    format!(
                        "cannot set {}: this is {}, not {expected}",
                        self.field,
                        node.type_name()
                    ),
                )
            };
            node = match step {
                PathStep::Key(key) => {
                    match node.value {
                        Value::Null => node.value = Value::Map(Vec::new()),
                        Value::Map(_) => {}
                        _ => return Err(wrong_kind(node, "a mapping")),
                    }
                    let Value::Map(entries) = &mut node.value else {
                        unreachable!("made a mapping above");
                    };
                    let found = entries
                        .iter()
                        .position(|(k, _)| k.key_text().is_some_and(|text| text == key.as_str()));
                    let at = match found {
                        Some(at) => at,
                        None => {
                            entries.push((
                                new_node(Value::Str(key.clone()), position),
                                new_node(Value::Null, position),
                            ));
                            entries.len() - 1
                        }
                    };
                    &mut entries[at].1
                }
                PathStep::Index(index) => {
                    let count = match &node.value {
                        Value::Null => 0,
                        Value::Seq(items) => items.len(),
                        _ => return Err(wrong_kind(node, "a list")),
                    };
                    if *index > count {
                        return Err(ManifestError::field(
                            file,
                            node,
                            full(&here),
                            format!(
                                "cannot set {}: the list has {count} entr{}, so the index can be at most {count}",
                                self.field,
                                if count == 1 { "y" } else { "ies" }
                            ),
                        ));
                    }
                    if node.value == Value::Null {
                        node.value = Value::Seq(Vec::new());
                    }
                    let Value::Seq(items) = &mut node.value else {
                        unreachable!("made a list above");
                    };
                    if *index == items.len() {
                        items.push(new_node(Value::Null, position));
                    }
                    &mut items[*index]
                }
            };
        }
        let mut value = self.value.clone();
        relocate(&mut value, node.position);
        *node = value;
        Ok(())
    }
}

fn new_node(value: Value, position: Position) -> Node {
    Node {
        value,
        position,
        bytes: None,
    }
}

/// Gives `node` and everything below it `position` (its text is not in
/// the file it now belongs to).
fn relocate(node: &mut Node, position: Position) {
    node.position = position;
    node.bytes = None;
    match &mut node.value {
        Value::Seq(items) => items.iter_mut().for_each(|item| relocate(item, position)),
        Value::Map(entries) => entries.iter_mut().for_each(|(key, value)| {
            relocate(key, position);
            relocate(value, position);
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::tree::parse_stream;

    fn doc(text: &str) -> Node {
        parse_stream("pool.yaml", text).unwrap().remove(0)
    }

    fn edit(field: &str, value: Value) -> NodePoolEdit {
        NodePoolEdit {
            field: FieldPath::parse(field).unwrap(),
            value: new_node(
                value,
                Position {
                    line: 90,
                    column: 9,
                },
            ),
        }
    }

    #[test]
    fn paths_parse_into_keys_and_indices() {
        let path = FieldPath::parse("spec.disruption.budgets[0].nodes").unwrap();
        assert_eq!(
            path.steps(),
            [
                PathStep::Key("spec".into()),
                PathStep::Key("disruption".into()),
                PathStep::Key("budgets".into()),
                PathStep::Index(0),
                PathStep::Key("nodes".into()),
            ]
        );
        assert_eq!(path.leaf(), "nodes");
        assert_eq!(
            FieldPath::parse("spec.disruption.budgets[1]")
                .unwrap()
                .leaf(),
            "budgets[1]"
        );
        for bad in [
            "",
            "spec..x",
            "spec.a[",
            "spec.a[x]",
            "spec.[0]",
            "spec.a b",
            "a[0]b",
        ] {
            assert!(FieldPath::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_existing_field_is_replaced_and_keeps_its_place() {
        let mut root = doc("spec:\n  disruption:\n    consolidateAfter: 30s\n");
        edit("spec.disruption.consolidateAfter", Value::Str("5m".into()))
            .apply(&mut root, "pool.yaml", "")
            .unwrap();
        let node = root.at_path("spec.disruption.consolidateAfter").unwrap();
        assert_eq!(node.value, Value::Str("5m".into()));
        assert_eq!(
            node.position,
            Position {
                line: 3,
                column: 23
            }
        );
    }

    #[test]
    fn missing_mappings_and_a_first_list_entry_are_created() {
        let mut root = doc("spec:\n  template: {}\n");
        edit("spec.disruption.budgets[0].nodes", Value::Str("1".into()))
            .apply(&mut root, "pool.yaml", "")
            .unwrap();
        assert_eq!(
            root.at_path("spec.disruption.budgets[0].nodes")
                .map(|n| &n.value),
            Some(&Value::Str("1".into()))
        );
        assert!(root.at_path("spec.template").is_some(), "others kept");
    }

    #[test]
    fn an_index_past_the_end_or_a_wrong_kind_is_an_error_at_the_value() {
        let mut root = doc("spec:\n  disruption:\n    budgets:\n      - nodes: '10%'\n");
        let error = edit("spec.disruption.budgets[2].nodes", Value::Str("1".into()))
            .apply(&mut root, "pool.yaml", "items[1]")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("pool.yaml:4:7: items[1].spec.disruption.budgets: cannot set"),
            "{error}"
        );
        assert!(error.contains("at most 1"), "{error}");
        let error = edit("spec.disruption.budgets.nodes", Value::Str("1".into()))
            .apply(&mut root, "pool.yaml", "")
            .unwrap_err()
            .to_string();
        assert!(error.contains("a sequence, not a mapping"), "{error}");
    }
}
