//! A YAML stream read into small trees whose every node remembers where it
//! came from (line, column and byte range), shared by the readers of
//! Kubernetes manifests and of scenario files so both can name the exact
//! place of each problem.
//!
//! serde-saphyr does the YAML parsing (syntax, anchors, aliases, budgets);
//! this module collects its output into [`Node`]s. The two readers differ in
//! a few YAML rules (YAML 1.1 booleans, repeated keys, non-finite floats,
//! node budget), chosen by each through [`ParseOptions`]. Typed values are
//! read from a tree with [`from_node`] (or [`from_node_strict`], which also
//! refuses keys a struct does not have), whose errors carry the position and
//! field path of the offending value.

mod de;
mod fast;

use std::borrow::Cow;
use std::fmt;

use serde::de::{self as serde_de, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{
    Budget, DuplicateKeyPolicy, MessageFormatter, NonFiniteFloatPolicy, Spanned,
    UserMessageFormatter,
};

pub use self::de::{DeError, Located, UnknownField, from_node, from_node_strict};

/// A 1-based line and column in a YAML text (0:0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// Line, starting at 1.
    pub line: u64,
    /// Column in characters, starting at 1.
    pub column: u64,
}

impl Position {
    /// The start of the text, for problems that belong to no particular node
    /// (an empty file, a default that does not fit the caller's catalog).
    pub const START: Position = Position { line: 1, column: 1 };
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One YAML node with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the node starts.
    pub position: Position,
    /// Byte range of the node's text in the source, when known.
    pub bytes: Option<(usize, usize)>,
}

/// The content of a node. Integers are widened to `i128` so that every
/// value serde-saphyr reports (any `u64` or `i64`) fits. Mappings keep their
/// entries in document order, keys as nodes of their own.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i128),
    /// A float (also integers too large for 64 bits).
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping.
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// How the value is described in "expected X, found Y" messages of
    /// karpsim's own files.
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

impl Node {
    /// The value under the mapping key `key` (compared as text, so `80: x`
    /// has key "80") when this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.key_text().is_some_and(|text| text == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value under `key`, to change (see [`Node::get`]).
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match &mut self.value {
            Value::Map(entries) => entries
                .iter_mut()
                .find(|(k, _)| k.key_text().is_some_and(|text| text == key))
                .map(|(_, v)| v),
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

    /// The value's type in the words of Kubernetes and serde messages
    /// ("a sequence" where [`Value::kind`] says "a list").
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::Seq(_) => "a sequence",
            ref other => other.kind(),
        }
    }

    /// The scalar as text (strings as written, numbers and booleans printed).
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::Int(n) => Some(n.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// The node as a mapping key's text: any scalar (`null` included), not
    /// a sequence or mapping.
    pub fn key_text(&self) -> Option<Cow<'_, str>> {
        match &self.value {
            Value::Str(s) => Some(Cow::Borrowed(s)),
            Value::Null => Some(Cow::Borrowed("null")),
            _ => self.scalar_text().map(Cow::Owned),
        }
    }
}

/// The YAML rules a reader chooses where karpsim's readers differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// YAML 1.2 booleans only: `no`, `on`, `y` stay strings.
    pub strict_booleans: bool,
    /// Keep repeated mapping keys (both entries) for the caller to report;
    /// otherwise a repeated key is a syntax error.
    pub keep_duplicate_keys: bool,
    /// Keep `.inf` and `1e400` as floats for the caller to range-check;
    /// otherwise they are syntax errors.
    pub keep_non_finite_floats: bool,
    /// A sequence or mapping used as a mapping key is a syntax error;
    /// otherwise it is kept for the caller to report.
    pub scalar_keys_only: bool,
    /// Most nodes (alias expansions included) the stream may hold;
    /// `None` keeps serde-saphyr's default budget.
    pub max_nodes: Option<usize>,
}

/// A YAML-level problem (syntax, budget, document count), on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Where the YAML reader stopped (0:0 when it does not say).
    pub position: Position,
    /// The YAML reader's explanation, on one line.
    pub message: String,
}

/// Parses every document of the YAML stream in `text`. Empty and null
/// documents (a trailing `---`, comment-only documents) are skipped.
pub fn parse_stream(text: &str, rules: ParseOptions) -> Result<Vec<Node>, SyntaxError> {
    parse_stream_by(text, rules, Route::Quick)
}

/// Whether [`fast`] may read the text first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Quick,
    #[cfg(test)]
    SerdeOnly,
    /// The quick route alone: an error where it gives up.
    #[cfg(test)]
    QuickOnly,
}

fn parse_stream_by(
    text: &str,
    rules: ParseOptions,
    route: Route,
) -> Result<Vec<Node>, SyntaxError> {
    let (options, budget) = serde_options(rules);
    let limits = (budget, options.alias_limits);
    let quick = match route {
        Route::Quick => match fast::parse_split(text, rules, &limits.0) {
            fast::Split::Read(documents) => Some(documents),
            fast::Split::GaveUp => None,
            fast::Split::NotAList => fast::parse(text, rules, &limits.0),
        },
        #[cfg(test)]
        Route::SerdeOnly => None,
        #[cfg(test)]
        Route::QuickOnly => Some(fast::parse(text, rules, &limits.0).ok_or(SyntaxError {
            position: Position::default(),
            message: "left to serde-saphyr".to_string(),
        })?),
    };
    let parsed: Result<Vec<Node>, _> = if let Some(documents) = quick {
        Ok(documents)
    } else if rules.scalar_keys_only {
        serde_saphyr::from_str_multiple_with_options::<Read<true>, Vec<_>>(text, options)
            .map(|documents| documents.into_iter().map(|read| read.0).collect())
    } else {
        serde_saphyr::from_str_multiple_with_options::<Read<false>, Vec<_>>(text, options)
            .map(|documents| documents.into_iter().map(|read| read.0).collect())
    };
    let documents = parsed.map_err(|err| {
        let position = err
            .location()
            .map(|l| Position {
                line: l.line(),
                column: l.column(),
            })
            .unwrap_or_default();
        SyntaxError {
            position,
            message: one_line(&message_of(err.without_snippet(), &limits.0, &limits.1)),
        }
    })?;
    if !rules.keep_duplicate_keys {
        for document in &documents {
            no_repeated_keys(document)?;
        }
    }
    Ok(documents
        .into_iter()
        .filter(|node| node.value != Value::Null)
        .collect())
}

/// serde-saphyr's options and budget for `rules`.
fn serde_options(rules: ParseOptions) -> (serde_saphyr::Options, Budget) {
    let mut options = serde_saphyr::options! {
        strict_booleans: rules.strict_booleans,
        with_snippet: false,
    };
    // Repeated keys always reach the tree: when they are not kept, the
    // check below names both places, which serde-saphyr's error cannot.
    options.duplicate_keys = DuplicateKeyPolicy::PassThrough;
    if rules.keep_non_finite_floats {
        options.non_finite_float_policy = NonFiniteFloatPolicy::PassThrough;
    }
    let mut budget = Budget::default();
    if let Some(max_nodes) = rules.max_nodes {
        // A larger node budget (a cluster snapshot) raises the budgets
        // that grow with it.
        if max_nodes > budget.max_nodes {
            budget.max_events = budget.max_events.max(max_nodes.saturating_mul(4));
            budget.max_total_scalar_bytes = budget
                .max_total_scalar_bytes
                .max(max_nodes.saturating_mul(64));
            budget.max_documents = budget.max_documents.max(max_nodes);
            budget.max_reader_input_bytes = None;
        }
        budget.max_nodes = max_nodes;
    }
    options.budget = Some(budget.clone());
    (options, budget)
}

/// The first mapping key (in document order) given twice in one mapping.
/// Keys are compared by value, so `1` and `"1"` are different keys, as in
/// YAML; only scalar keys are compared.
fn no_repeated_keys(node: &Node) -> Result<(), SyntaxError> {
    match &node.value {
        Value::Seq(items) => items.iter().try_for_each(no_repeated_keys),
        Value::Map(entries) if entries.len() <= SMALL_MAPPING => {
            for (i, (key, value)) in entries.iter().enumerate() {
                if let Some(scalar) = ScalarKey::of(key) {
                    let earlier = entries[..i]
                        .iter()
                        .find(|(k, _)| ScalarKey::of(k).as_ref() == Some(&scalar));
                    if let Some((first, _)) = earlier {
                        return Err(repeated(key, first.position));
                    }
                }
                no_repeated_keys(key)?;
                no_repeated_keys(value)?;
            }
            Ok(())
        }
        Value::Map(entries) => {
            let mut seen: std::collections::HashMap<ScalarKey<'_>, Position> =
                std::collections::HashMap::with_capacity(entries.len());
            for (key, value) in entries {
                if let Some(scalar) = ScalarKey::of(key) {
                    if let Some(first) = seen.get(&scalar) {
                        return Err(repeated(key, *first));
                    }
                    seen.insert(scalar, key.position);
                }
                no_repeated_keys(key)?;
                no_repeated_keys(value)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Mappings up to this size are checked by comparing keys pairwise.
const SMALL_MAPPING: usize = 16;

/// `key` given again, first at `first`.
fn repeated(key: &Node, first: Position) -> SyntaxError {
    let shown = key.key_text().unwrap_or_default();
    SyntaxError {
        position: key.position,
        message: format!("duplicate key {shown:?} (first at line {})", first.line),
    }
}

/// A scalar mapping key, comparable and hashable (floats by their bits).
#[derive(PartialEq, Eq, Hash)]
enum ScalarKey<'n> {
    Null,
    Bool(bool),
    Int(i128),
    Float(u64),
    Str(&'n str),
}

impl<'n> ScalarKey<'n> {
    fn of(node: &'n Node) -> Option<ScalarKey<'n>> {
        Some(match &node.value {
            Value::Null => ScalarKey::Null,
            Value::Bool(b) => ScalarKey::Bool(*b),
            Value::Int(i) => ScalarKey::Int(*i),
            Value::Float(f) => ScalarKey::Float(f.to_bits()),
            Value::Str(s) => ScalarKey::Str(s),
            Value::Seq(_) | Value::Map(_) => return None,
        })
    }
}

/// serde-saphyr's error in karpsim's words: its developer messages advise
/// on parser options and print budget breaches as Rust values, neither of
/// which means anything to someone editing a YAML file.
fn message_of(
    err: &serde_saphyr::Error,
    budget: &Budget,
    aliases: &serde_saphyr::options::AliasLimits,
) -> String {
    use serde_saphyr::Error;
    const TOO_BIG: &str = "the YAML is too large or too complex";
    match err {
        Error::Budget { breach, .. } => breach_message(breach, budget),
        Error::DuplicateMappingKey { key: Some(key), .. } => format!("duplicate key {key:?}"),
        Error::DuplicateMappingKey { key: None, .. } => "duplicate key".to_string(),
        Error::AliasReplayLimitExceeded { .. } | Error::AliasReplayCounterOverflow { .. } => {
            format!(
                "{TOO_BIG}: aliases expand to more than {} YAML events",
                aliases.max_total_replayed_events
            )
        }
        Error::AliasExpansionLimitExceeded { .. } => format!(
            "{TOO_BIG}: an anchor is used more than {} times",
            aliases.max_alias_expansions_per_anchor
        ),
        Error::AliasReplayStackDepthExceeded { .. } => format!(
            "{TOO_BIG}: aliases nest deeper than {} levels",
            aliases.max_replay_stack_depth
        ),
        Error::UnknownAnchor { .. } => {
            "alias (*name) of an anchor (&name) not defined before it".to_string()
        }
        Error::NonFiniteFloat { value, .. } => format!("{value} is not a finite number"),
        Error::InvalidUtf8Input => "the text is not valid UTF-8".to_string(),
        other => UserMessageFormatter.format_message(other).into_owned(),
    }
}

/// A budget breach as the limit that was passed.
fn breach_message(breach: &BudgetBreach, budget: &Budget) -> String {
    match breach {
        BudgetBreach::Depth { .. } => {
            format!("nesting deeper than {} levels", budget.max_depth)
        }
        BudgetBreach::Nodes { .. } => format!(
            "more than {} YAML values (scalars, lists and mappings, aliases expanded)",
            budget.max_nodes
        ),
        BudgetBreach::Events { .. } => {
            format!(
                "more than {} YAML events (the file is too large)",
                budget.max_events
            )
        }
        BudgetBreach::Aliases { .. } => format!("more than {} aliases", budget.max_aliases),
        BudgetBreach::Anchors { .. } => format!("more than {} anchors", budget.max_anchors),
        BudgetBreach::Documents { .. } => {
            format!("more than {} YAML documents", budget.max_documents)
        }
        BudgetBreach::ScalarBytes { .. } => format!(
            "more than {} bytes of text in values",
            budget.max_total_scalar_bytes
        ),
        BudgetBreach::MergeKeys { .. } => {
            format!("more than {} merge keys (<<)", budget.max_merge_keys)
        }
        BudgetBreach::AliasAnchorRatio { aliases, anchors } => format!(
            "{aliases} aliases of {anchors} anchors: too many aliases for the anchors \
             defined (an alias bomb?)"
        ),
        BudgetBreach::InputBytes { .. } => "the file is too large".to_string(),
        BudgetBreach::RecordedAnchorEvents { .. } | BudgetBreach::RecordedAnchorBytes { .. } => {
            "anchored values (&name) are too large to reuse".to_string()
        }
        BudgetBreach::SequenceUnbalanced => "a list or mapping ends that never started".to_string(),
        _ => "the YAML is too large or too complex".to_string(),
    }
}

/// A file that is not UTF-8 text, with the place of its first invalid
/// byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not UTF-8 text: invalid byte 0x{value:02x} at byte offset {offset}")]
pub struct NotUtf8 {
    /// Line and column (in characters) of the invalid byte.
    pub position: Position,
    /// Its offset in the file, from 0.
    pub offset: usize,
    /// The byte.
    pub value: u8,
}

/// `bytes` as text, or where the first byte that is not UTF-8 is.
pub fn utf8_text(bytes: &[u8]) -> Result<&str, NotUtf8> {
    std::str::from_utf8(bytes).map_err(|err| {
        let offset = err.valid_up_to();
        NotUtf8 {
            position: position_of(bytes, offset),
            offset,
            value: bytes[offset],
        }
    })
}

/// The line and column (in characters) of byte `offset` of `bytes`, whose
/// first `offset` bytes are UTF-8.
pub fn position_of(bytes: &[u8], offset: usize) -> Position {
    let before = &bytes[..offset.min(bytes.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |newline| newline + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count() as u64
        + 1;
    Position { line, column }
}

/// Collapses line breaks and other control characters so that every error
/// stays on one line.
pub fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_control())
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A node read from serde-saphyr; `SCALAR_KEYS` makes sequence and mapping
/// keys an error where they are read, so the reader names their place.
struct Read<const SCALAR_KEYS: bool>(Node);

impl<'de, const SCALAR_KEYS: bool> Deserialize<'de> for Read<SCALAR_KEYS> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<ReadValue<SCALAR_KEYS>>::deserialize(deserializer)?;
        let location = spanned.referenced;
        let span = location.span();
        let bytes = match (span.byte_offset(), span.byte_len()) {
            (Some(start), Some(len)) => usize::try_from(start)
                .ok()
                .zip(usize::try_from(len).ok())
                .and_then(|(start, len)| Some((start, start.checked_add(len)?))),
            _ => None,
        };
        Ok(Read(Node {
            value: spanned.value.0,
            position: Position {
                line: location.line(),
                column: location.column(),
            },
            bytes,
        }))
    }
}

/// A mapping key, checked against `SCALAR_KEYS`.
struct ReadKey<const SCALAR_KEYS: bool>(Node);

impl<'de, const SCALAR_KEYS: bool> Deserialize<'de> for ReadKey<SCALAR_KEYS> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Read(node) = Read::<SCALAR_KEYS>::deserialize(deserializer)?;
        if SCALAR_KEYS && matches!(node.value, Value::Seq(_) | Value::Map(_)) {
            return Err(serde_de::Error::custom("mapping keys must be scalars"));
        }
        Ok(ReadKey(node))
    }
}

struct ReadValue<const SCALAR_KEYS: bool>(Value);

impl<'de, const SCALAR_KEYS: bool> Deserialize<'de> for ReadValue<SCALAR_KEYS> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(ValueVisitor::<SCALAR_KEYS>)
            .map(ReadValue)
    }
}

struct ValueVisitor<const SCALAR_KEYS: bool>;

impl<'de, const SCALAR_KEYS: bool> Visitor<'de> for ValueVisitor<SCALAR_KEYS> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: serde_de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: serde_de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_bool<E: serde_de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde_de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(i128::from(v)))
    }

    fn visit_u64<E: serde_de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Int(i128::from(v)))
    }

    fn visit_i128<E: serde_de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u128<E: serde_de::Error>(self, v: u128) -> Result<Value, E> {
        // Beyond i128 only as a float would be; keep it as one.
        Ok(i128::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }

    fn visit_f64<E: serde_de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E: serde_de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_string()))
    }

    fn visit_string<E: serde_de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Read(item)) = seq.next_element::<Read<SCALAR_KEYS>>()? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some((ReadKey(key), Read(value))) =
            map.next_entry::<ReadKey<SCALAR_KEYS>, Read<SCALAR_KEYS>>()?
        {
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LENIENT: ParseOptions = ParseOptions {
        strict_booleans: true,
        keep_duplicate_keys: true,
        keep_non_finite_floats: true,
        scalar_keys_only: false,
        max_nodes: None,
    };

    const STRICT: ParseOptions = ParseOptions {
        strict_booleans: false,
        keep_duplicate_keys: false,
        keep_non_finite_floats: false,
        scalar_keys_only: true,
        max_nodes: None,
    };

    fn one(text: &str, options: ParseOptions) -> Node {
        let mut docs = parse_stream(text, options).expect("parses");
        assert_eq!(docs.len(), 1);
        docs.remove(0)
    }

    fn map_entries(node: &Node) -> &[(Node, Node)] {
        match &node.value {
            Value::Map(entries) => entries,
            other => panic!("expected a mapping, got {other:?}"),
        }
    }

    #[test]
    fn nodes_carry_positions_and_source_bytes() {
        let text = "a: 1\nb: [x, -3]\n";
        let root = one(text, LENIENT);
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
    fn streams_skip_empty_documents_and_keep_absolute_lines() {
        let docs =
            parse_stream("---\na: 1\n---\n# nothing\n---\nb: 2\n---\n~\n", STRICT).expect("parses");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].get("b").map(|n| n.position.line), Some(6));
    }

    #[test]
    fn at_path_walks_keys_and_indices() {
        let node = one("spec:\n  containers:\n  - name: a\n  - name: b\n", STRICT);
        let found = node.at_path("spec.containers[1].name").expect("found");
        assert_eq!(found.value, Value::Str("b".into()));
        assert_eq!(found.position.line, 4);
    }

    /// Lookups compare keys as text: `80: x` is found as "80".
    #[test]
    fn keys_are_looked_up_as_text() {
        let node = one("80: x\nnull: w\ntrue: z\n", STRICT);
        assert_eq!(node.get_str("80"), Some("x"));
        assert_eq!(node.get_str("null"), Some("w"));
        assert_eq!(node.get_str("true"), Some("z"));
    }

    /// The rules where the two readers differ, each way.
    #[test]
    fn options_choose_booleans_duplicates_floats_and_key_kinds() {
        let lenient = one("no: on\nno: 1\nf: .inf\n[k]: v\n", LENIENT);
        let entries = map_entries(&lenient);
        assert_eq!(entries.len(), 4, "both repeated entries are kept");
        assert_eq!(entries[0].0.value, Value::Str("no".into()));
        assert_eq!(entries[0].1.value, Value::Str("on".into()));
        assert_eq!(entries[2].1.value, Value::Float(f64::INFINITY));
        assert!(matches!(entries[3].0.value, Value::Seq(_)));

        assert_eq!(
            one("a: yes\n", STRICT).get("a").map(|n| &n.value),
            Some(&Value::Bool(true))
        );
        let duplicate = parse_stream("a: 1\na: 2\n", STRICT).unwrap_err();
        assert_eq!(duplicate.position, Position { line: 2, column: 1 });
        assert!(duplicate.message.contains("duplicate"), "{duplicate:?}");
        let infinite = parse_stream("a: .inf\n", STRICT).unwrap_err();
        assert_eq!(infinite.message, ".inf is not a finite number");
        let sequence_key = parse_stream("a: 1\n[x]: 2\n", STRICT).unwrap_err();
        assert_eq!(
            sequence_key,
            SyntaxError {
                position: Position { line: 2, column: 1 },
                message: "mapping keys must be scalars".to_string(),
            }
        );
    }

    #[test]
    fn node_budget_stops_large_streams() {
        let small = ParseOptions {
            max_nodes: Some(5),
            ..LENIENT
        };
        assert!(parse_stream("[1, 2]\n", small).is_ok());
        assert!(parse_stream("[1, 2, 3, 4, 5, 6, 7, 8]\n", small).is_err());
    }

    /// serde-saphyr's developer wording (parser options, Rust values)
    /// never reaches a message: repeated keys name both lines, limits are
    /// said as limits.
    /// Runs `f` on a thread with a main thread's stack: 64 nested levels
    /// of unoptimized serde frames need more than a test thread's 2 MiB.
    fn with_big_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(16 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn messages_are_in_karpsim_words() {
        with_big_stack(messages_in_karpsim_words);
    }

    fn messages_in_karpsim_words() {
        let repeated = parse_stream("a: 1\nb:\n  c: 2\n  d: 3\n  c: 4\n", STRICT).unwrap_err();
        assert_eq!(
            repeated,
            SyntaxError {
                position: Position { line: 5, column: 3 },
                message: "duplicate key \"c\" (first at line 3)".to_string(),
            }
        );
        let deep = format!("{}1{}\n", "[".repeat(65), "]".repeat(65));
        let err = parse_stream(&deep, STRICT).unwrap_err();
        assert_eq!(err.message, "nesting deeper than 64 levels", "{err:?}");
        let many = ParseOptions {
            max_nodes: Some(5),
            ..LENIENT
        };
        let err = parse_stream("[1, 2, 3, 4, 5, 6, 7, 8]\n", many).unwrap_err();
        assert!(
            err.message
                .starts_with("more than 5 YAML values (scalars, lists and mappings"),
            "{err:?}"
        );
        for text in ["a: 1\na: 2\n", "x: &a [1]\ny: *b\n", &deep, "a: .nan\n"] {
            let err = parse_stream(text, STRICT).unwrap_err();
            for leak in ["Options", "Policy", "{", "budget", "breached"] {
                assert!(!err.message.contains(leak), "{text:?}: {err:?}");
            }
        }
    }

    /// A key given again by a merge (`<<: *base`) and then set is an
    /// override, not a repeat.
    #[test]
    fn merged_keys_may_be_overridden() {
        let text = "base: &b {a: 1, b: 2}\nx:\n  <<: *b\n  a: 3\n";
        let root = one(text, STRICT);
        assert_eq!(root.at_path("x.a").map(|n| &n.value), Some(&Value::Int(3)));
    }

    #[test]
    fn invalid_utf8_is_located() {
        assert_eq!(utf8_text(b"ok\n"), Ok("ok\n"));
        let err = utf8_text(b"a: 1\nb: \xc3\xa9\xc3\n").unwrap_err();
        assert_eq!(err.position, Position { line: 2, column: 5 });
        assert_eq!(err.offset, 10);
        assert_eq!(
            err.to_string(),
            "not UTF-8 text: invalid byte 0xc3 at byte offset 10"
        );
    }

    #[test]
    fn one_line_collapses_control_characters() {
        assert_eq!(one_line("a\n\n  b\tc\n"), "a b c");
    }
}
