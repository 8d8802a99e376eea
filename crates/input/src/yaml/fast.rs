//! The quick route from YAML text to [`Node`] trees, for the plain YAML
//! that programs write (kubectl's output above all, where a cluster
//! snapshot is tens of megabytes): granit-parser's events (the parser
//! serde-saphyr itself runs) built straight into nodes, without serde's
//! machinery around every node.
//!
//! It only ever returns what serde-saphyr would: a plain scalar that is not
//! plainly text is typed by serde-saphyr itself (once per distinct text),
//! and anything it does not handle the same way (anchors, aliases, tags,
//! directives, merge keys, a budget passed, a syntax error, a non-scalar
//! key where only scalars are allowed) makes it give up, so that the caller
//! reads the text the ordinary way and reports serde-saphyr's own error.

use std::borrow::Cow;
use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle, Span, StrInput};
use serde_saphyr::Budget;

use super::{Node, ParseOptions, Position, Read, Value};

/// The documents of `text`, or `None` where the ordinary reader must
/// decide; `budget` is the ordinary reader's.
pub(super) fn parse(text: &str, rules: ParseOptions, budget: &Budget) -> Option<Vec<Node>> {
    if budget
        .max_reader_input_bytes
        .is_some_and(|max| text.len() > max)
    {
        return None;
    }
    let parser_options = granit_parser::options! {
        simple_key_max_lookahead: budget.simple_key_max_lookahead,
        flow_nesting_limit: budget.flow_nesting_limit,
        block_nesting_limit: granit_parser::Options::default()
            .block_nesting_limit
            .max(budget.max_depth.saturating_add(1)),
        emit_comments: false,
    };
    let parser = Parser::with_options(StrInput::new(text), parser_options);
    let mut builder = Builder {
        rules,
        options: None,
        budget,
        typed: HashMap::new(),
        stack: Vec::new(),
        documents: Vec::new(),
        nodes: 0,
        events: 0,
        scalar_bytes: 0,
    };
    for item in parser {
        let (event, span) = item.ok()?;
        builder.event(event, span)?;
    }
    builder.stack.is_empty().then_some(builder.documents)
}

/// Below this size a text is read in one piece.
const SPLIT_AT_BYTES: usize = 1 << 20;

/// What [`parse_split`] made of a text.
pub(super) enum Split {
    /// Not a large left-margin list: read it in one piece.
    NotAList,
    /// Read in pieces.
    Read(Vec<Node>),
    /// A list, but a piece is left to the ordinary reader, which must then
    /// read the whole text (the quick route would give up on it too).
    GaveUp,
}

/// [`parse`], with the items of a large list read side by side: a stream
/// of one document whose `items:` (at the left margin) holds a block
/// sequence written at the left margin, as kubectl writes a `kind: List`.
/// The items are cut into runs at lines starting `- `, each run read as a
/// sequence of its own and placed back at its lines and bytes, and the
/// rest of the document read with the items left out.
pub(super) fn parse_split(text: &str, rules: ParseOptions, budget: &Budget) -> Split {
    let region = match items_region(text) {
        Some(region) if text.len() >= SPLIT_AT_BYTES => region,
        _ => return Split::NotAList,
    };
    let wanted = rayon::current_num_threads() * 4;
    match parse_region(text, region, rules, budget, wanted) {
        Some(documents) => Split::Read(documents),
        None => Split::GaveUp,
    }
}

/// The list of `text` read in about `wanted` pieces, whatever the size;
/// `None` where it is not a list or a piece is left to the ordinary
/// reader.
#[cfg(test)]
fn parse_split_pieces(
    text: &str,
    rules: ParseOptions,
    budget: &Budget,
    wanted: usize,
) -> Option<Vec<Node>> {
    parse_region(text, items_region(text)?, rules, budget, wanted)
}

/// The list whose items are `region` of `text`, read in pieces.
fn parse_region(
    text: &str,
    region: std::ops::Range<usize>,
    rules: ParseOptions,
    budget: &Budget,
    wanted: usize,
) -> Option<Vec<Node>> {
    let runs = item_runs(text, region.clone(), wanted);
    let shell = format!("{}{}", &text[..region.start], &text[region.end..]);
    let removed_lines = text[region.clone()].bytes().filter(|&b| b == b'\n').count() as u64;
    let (shell, pieces) = rayon::join(
        || parse(&shell, rules, budget),
        || {
            use rayon::prelude::*;
            runs.par_iter()
                .map(|run| {
                    let mut docs = parse(&text[run.clone()], rules, budget)?;
                    if docs.len() != 1 {
                        return None;
                    }
                    let mut seq = docs.pop()?;
                    let line = text[..run.start].bytes().filter(|&b| b == b'\n').count() as u64;
                    shift(&mut seq, line, run.start);
                    Some(seq)
                })
                .collect::<Option<Vec<Node>>>()
        },
    );
    let (mut shell, pieces) = (shell?, pieces?);
    if shell.len() != 1 {
        return None;
    }
    let mut pieces = pieces.into_iter();
    let mut items = pieces.next()?;
    let Value::Seq(all) = &mut items.value else {
        return None;
    };
    for piece in pieces {
        let Value::Seq(more) = piece.value else {
            return None;
        };
        all.extend(more);
    }
    // Under a key at the same margin the sequence is indentless: the
    // whole text's reader places it where its first item starts (checked
    // for items that are mappings, as kubectl's are).
    let first = all.first()?;
    if !matches!(first.value, Value::Map(_)) {
        return None;
    }
    let start = first.bytes?.0;
    items.position = first.position;
    items.bytes = Some((start, start));
    let root = &mut shell[0];
    shift_after(root, region.start, removed_lines, region.len());
    let slot = root.get_mut("items")?;
    if slot.value != Value::Null {
        return None;
    }
    *slot = items;
    // The whole stream's budgets, which each piece kept on its own.
    let (nodes, collections, scalar_bytes) = count(root);
    if nodes > budget.max_nodes
        || nodes + collections > budget.max_events
        || scalar_bytes > budget.max_total_scalar_bytes
    {
        return None;
    }
    Some(shell)
}

/// The bytes of the block sequence under a left-margin `items:`: from the
/// line after it to the first line that starts with neither `- `, a space,
/// `#`, nor is empty.
fn items_region(text: &str) -> Option<std::ops::Range<usize>> {
    let key = if text.starts_with("items:\n") {
        0
    } else {
        text.find("\nitems:\n")? + 1
    };
    let start = key + "items:\n".len();
    if !text[start..].starts_with("- ") {
        return None;
    }
    let mut at = start;
    while at < text.len() {
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        let line = &text[at..line_end];
        let inside = line.starts_with("- ")
            || line.starts_with(' ')
            || line.starts_with('#')
            || line == "\n";
        if !inside {
            break;
        }
        at = line_end;
    }
    // A region running to the end without a final line break is left
    // whole.
    (text[..at].ends_with('\n')).then_some(start..at)
}

/// `region` cut at item starts (lines beginning `- `) into about `wanted`
/// runs of whole items.
fn item_runs(
    text: &str,
    region: std::ops::Range<usize>,
    wanted: usize,
) -> Vec<std::ops::Range<usize>> {
    let target = (region.len() / wanted.max(1)).max(1);
    let mut runs = Vec::new();
    let mut start = region.start;
    let mut from = region.start + target;
    while from < region.end {
        match text[from..region.end].find("\n- ") {
            Some(i) => {
                let cut = from + i + 1;
                runs.push(start..cut);
                start = cut;
                from = cut + target;
            }
            None => break,
        }
    }
    runs.push(start..region.end);
    runs
}

/// Moves a tree read from a piece starting at byte `byte` (line `line` + 1)
/// of the whole text to its place there (columns are unchanged: pieces
/// start at a line).
fn shift(node: &mut Node, line: u64, byte: usize) {
    node.position.line += line;
    if let Some((start, end)) = &mut node.bytes {
        *start += byte;
        *end += byte;
    }
    match &mut node.value {
        Value::Seq(items) => items.iter_mut().for_each(|n| shift(n, line, byte)),
        Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            shift(k, line, byte);
            shift(v, line, byte);
        }),
        _ => {}
    }
}

/// Moves the nodes of a tree read with `removed` bytes (`lines` lines)
/// taken out at byte `at` back to their place in the whole text.
fn shift_after(node: &mut Node, at: usize, lines: u64, removed: usize) {
    if node.bytes.is_some_and(|(start, _)| start >= at) {
        shift(node, lines, removed);
        return;
    }
    if let Some((_, end)) = &mut node.bytes
        && *end > at
    {
        *end += removed;
    }
    match &mut node.value {
        Value::Seq(items) => items
            .iter_mut()
            .for_each(|n| shift_after(n, at, lines, removed)),
        Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            shift_after(k, at, lines, removed);
            shift_after(v, at, lines, removed);
        }),
        _ => {}
    }
}

/// Nodes, collections and bytes of text in the tree.
fn count(node: &Node) -> (usize, usize, usize) {
    let add =
        |a: (usize, usize, usize), b: (usize, usize, usize)| (a.0 + b.0, a.1 + b.1, a.2 + b.2);
    match &node.value {
        Value::Seq(items) => items.iter().map(count).fold((1, 1, 0), add),
        Value::Map(entries) => entries
            .iter()
            .map(|(k, v)| add(count(k), count(v)))
            .fold((1, 1, 0), add),
        Value::Str(s) => (1, 0, s.len()),
        _ => (1, 0, 0),
    }
}

/// A collection being built.
enum Open {
    Seq(Node, Vec<Node>),
    Map(Node, Vec<(Node, Node)>, Option<Node>),
}

struct Builder<'a> {
    rules: ParseOptions,
    /// serde-saphyr's options, made when first needed.
    options: Option<serde_saphyr::Options>,
    budget: &'a Budget,
    /// Plain scalars typed by serde-saphyr, by text.
    typed: HashMap<String, Value>,
    stack: Vec<Open>,
    documents: Vec<Node>,
    nodes: usize,
    events: usize,
    scalar_bytes: usize,
}

impl Builder<'_> {
    /// Takes one event; `None` gives up.
    fn event(&mut self, event: Event<'_>, span: Span) -> Option<()> {
        self.events += 1;
        if self.events > self.budget.max_events {
            return None;
        }
        match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => Some(()),
            Event::DocumentStart(_, version) => {
                if version.is_some() {
                    return None;
                }
                if self.documents.len() >= self.budget.max_documents {
                    return None;
                }
                Some(())
            }
            Event::Scalar(value, style, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                self.scalar_bytes += value.len();
                if self.scalar_bytes > self.budget.max_total_scalar_bytes {
                    return None;
                }
                let value = self.scalar(value, style)?;
                let node = self.node(value, &span)?;
                self.push(node)
            }
            Event::SequenceStart(_, anchor, ref tag) | Event::MappingStart(_, anchor, ref tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                if self.stack.len() >= self.budget.max_depth {
                    return None;
                }
                let is_seq = matches!(event, Event::SequenceStart(..));
                let node = self.node(Value::Null, &span)?;
                // A collection as a mapping key.
                if self.rules.scalar_keys_only
                    && matches!(self.stack.last(), Some(Open::Map(_, _, None)))
                {
                    return None;
                }
                self.stack.push(if is_seq {
                    Open::Seq(node, Vec::new())
                } else {
                    Open::Map(node, Vec::new(), None)
                });
                Some(())
            }
            Event::SequenceEnd => match self.stack.pop()? {
                Open::Seq(mut node, items) => {
                    node.value = Value::Seq(items);
                    self.push(node)
                }
                Open::Map(..) => None,
            },
            Event::MappingEnd => match self.stack.pop()? {
                Open::Map(mut node, entries, None) => {
                    node.value = Value::Map(entries);
                    self.push(node)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// A node at `span` (where serde-saphyr places the same event).
    fn node(&mut self, value: Value, span: &Span) -> Option<Node> {
        self.nodes += 1;
        if self.nodes > self.budget.max_nodes {
            return None;
        }
        let bytes = span.start.byte_offset().zip(span.end.byte_offset());
        Some(Node {
            value,
            position: Position {
                line: span.start.line() as u64,
                column: span.start.col() as u64 + 1,
            },
            bytes: bytes.map(|(start, end)| (start, end.max(start))),
        })
    }

    /// Adds a finished node to the collection it is in, or as a document.
    fn push(&mut self, node: Node) -> Option<()> {
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some(Open::Seq(_, items)) => items.push(node),
            Some(Open::Map(_, entries, key)) => match key.take() {
                None => {
                    // `<<` merges another mapping in: serde-saphyr's business.
                    if node.value == Value::Str("<<".into()) {
                        return None;
                    }
                    *key = Some(node);
                }
                Some(k) => entries.push((k, node)),
            },
        }
        Some(())
    }

    /// A scalar's value as serde-saphyr types it for an untyped reader.
    fn scalar(&mut self, text: Cow<'_, str>, style: ScalarStyle) -> Option<Value> {
        if !matches!(style, ScalarStyle::Plain) {
            return Some(Value::Str(text.into_owned()));
        }
        if text.is_empty() {
            return Some(Value::Null);
        }
        if plainly_text(&text) {
            return Some(Value::Str(text.into_owned()));
        }
        if let Some(value) = self.typed.get(text.as_ref()) {
            return Some(value.clone());
        }
        // Typed alone, the text must read back as one plain scalar; text
        // that would read as something else (a document marker) is left to
        // the ordinary reader.
        if text.starts_with("---") || text.starts_with("...") {
            return None;
        }
        let rules = self.rules;
        let options = self
            .options
            .get_or_insert_with(|| super::serde_options(rules).0)
            .clone();
        let read: Read<false> = serde_saphyr::from_str_with_options(&text, options).ok()?;
        if matches!(read.0.value, Value::Seq(_) | Value::Map(_)) {
            return None;
        }
        self.typed.insert(text.into_owned(), read.0.value.clone());
        Some(read.0.value)
    }
}

/// A plain scalar serde-saphyr can only read as a string: it starts with a
/// letter and is longer than every boolean and null spelling (`false`),
/// and is not a spelling of infinity or not-a-number.
fn plainly_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() <= 5 || !bytes[0].is_ascii_alphabetic() {
        return false;
    }
    let head: [u8; 3] = [
        bytes[0].to_ascii_lowercase(),
        bytes[1].to_ascii_lowercase(),
        bytes[2].to_ascii_lowercase(),
    ];
    head != *b"inf" && head != *b"nan"
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{ParseOptions, Route, parse_stream_by, serde_options};
    use super::parse_split_pieces;
    use crate::manifest::tree::SNAPSHOT_YAML;

    const SCENARIO: ParseOptions = ParseOptions {
        strict_booleans: true,
        keep_duplicate_keys: true,
        keep_non_finite_floats: true,
        scalar_keys_only: false,
        max_nodes: None,
    };

    const MANIFEST: ParseOptions = ParseOptions {
        strict_booleans: false,
        keep_duplicate_keys: false,
        keep_non_finite_floats: false,
        scalar_keys_only: true,
        max_nodes: None,
    };

    /// Both routes give the same trees (values, positions, byte ranges) or
    /// the same error.
    fn same(text: &str, what: &str) {
        for rules in [SCENARIO, MANIFEST, SNAPSHOT_YAML] {
            // Compared as printed, where NaN equals NaN.
            assert_eq!(
                format!("{:?}", parse_stream_by(text, rules, Route::Quick)),
                format!("{:?}", parse_stream_by(text, rules, Route::SerdeOnly)),
                "{what} under {rules:?}"
            );
        }
    }

    fn yaml_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                yaml_files(&path, out);
            } else if path
                .extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
            {
                out.push(path);
            }
        }
    }

    /// Every YAML and JSON file the project ships or tests with.
    #[test]
    fn every_bundled_file_reads_the_same_both_ways() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in ["scenarios", "tests/fixtures", "crates/input/tests"] {
            let dir = root.join(dir);
            if dir.is_dir() {
                yaml_files(&dir, &mut files);
            }
        }
        assert!(files.len() > 20, "found {}", files.len());
        let mut quick = 0;
        for file in &files {
            let text = std::fs::read_to_string(file).expect("text");
            same(&text, &file.display().to_string());
            quick += usize::from(parse_stream_by(&text, SNAPSHOT_YAML, Route::QuickOnly).is_ok());
            let (_, budget) = serde_options(SNAPSHOT_YAML);
            if let Some(pieces) = parse_split_pieces(&text, SNAPSHOT_YAML, &budget, 3) {
                let whole = parse_stream_by(&text, SNAPSHOT_YAML, Route::SerdeOnly);
                assert_eq!(
                    format!("{:?}", Ok::<_, ()>(pieces)),
                    format!("{:?}", whole.map_err(|_| ())),
                    "{}",
                    file.display()
                );
            }
        }
        // Most are plain YAML, read without serde-saphyr's tree.
        assert!(quick * 10 > files.len() * 8, "{quick} of {}", files.len());
    }

    /// Scalars of every type and style, the spellings YAML 1.1 and 1.2
    /// disagree on, and what the quick route leaves to serde-saphyr.
    #[test]
    fn scalars_and_shapes_read_the_same_both_ways() {
        for text in [
            "a: 1\nb: -2\nc: 0x1F\nd: 0o17\ne: 017\nf: 1_000\ng: 1.5\nh: 1e3\ni: .inf\nj: -.Inf\nk: .nan\n",
            "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: true\nh: False\ni: TRUE\n",
            "a: null\nb: ~\nc:\nd: Null\ne: NULL\nf: nullable\ng: 'null'\nh: \"~\"\n",
            "a: infinite\nb: nanny\nc: Infinity\nd: NaN\ne: +12\nf: 12abc\ng: 1.2.3\nh: 99999999999999999999999\n",
            "a: 2026-11-30T08:00:00Z\nb: \"2026-11-30\"\nc: 10:30\nd: 1:2:3\n",
            "a: |\n  literal\n  text\nb: >\n  folded\n  text\nc: plain\n  continued\n",
            "- {a: 1, b: [x, 'y', \"z\"]}\n- [1, [2, [3]]]\n- {}\n- []\n",
            "a: &x 1\nb: *x\n",
            "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",
            "a: !!str 1\nb: !custom x\n",
            "%YAML 1.1\n---\na: yes\n",
            "---\na: 1\n---\n---\nb: 2\n...\n",
            "a: 1\na: 2\n",
            "? [a, b]\n: c\n",
            "a: [1, 2\n",
            "a:\n  - b\n   - c\n",
            "key: ---\nother: ...x\n",
            "\"quoted key\": 1\n'single': 2\n3: three\n",
            "",
            "# only a comment\n",
        ] {
            same(text, text);
        }
        // Anchors, merge keys, tags and directives are left to serde-saphyr.
        for text in ["a: &x 1\nb: *x\n", "a: !!str 1\n", "%YAML 1.1\n---\na: 1\n"] {
            assert!(
                parse_stream_by(text, SCENARIO, Route::QuickOnly).is_err(),
                "{text}"
            );
        }
        assert!(parse_stream_by("a: 1\nb: [x, {c: d}]\n", SCENARIO, Route::QuickOnly).is_ok());
    }

    /// A list read in pieces is the list read whole: items of every shape
    /// (comments and blank lines between them, block scalars, nested
    /// sequences, a scalar item, flow items), cut into pieces of one item
    /// and of several, with keys after the list.
    #[test]
    fn a_list_read_in_pieces_is_the_list_read_whole() {
        let text = "apiVersion: v1\nitems:\n\
            - apiVersion: v1\n  kind: Pod\n  metadata: {name: a, labels: {app: x}}\n\
            # a comment between items\n\
            \n\
            - apiVersion: v1\n  kind: ConfigMap\n  data:\n    script: |\n      line one\n\n      line three\n\
            - apiVersion: apps/v1\n  kind: Deployment\n  spec:\n    list:\n    - 1\n    - two\n    - {three: 3}\n\
            - {apiVersion: v1, kind: Service, metadata: {name: s}}\n\
            - just a scalar\n\
            - - nested\n  - list\n\
            - apiVersion: v1\n  kind: Secret\n  note: \"quoted\n    over lines\"\n\
            kind: List\nmetadata:\n  resourceVersion: \"\"\n";
        for rules in [MANIFEST, SNAPSHOT_YAML] {
            let (_, budget) = serde_options(rules);
            let whole = parse_stream_by(text, rules, Route::SerdeOnly).expect("reads");
            for wanted in [1, 2, 3, 7, 100] {
                let pieces = parse_split_pieces(text, rules, &budget, wanted).expect("in pieces");
                assert_eq!(
                    format!("{pieces:?}"),
                    format!("{whole:?}"),
                    "{wanted} pieces"
                );
            }
        }
        // Not a list at the margin: read whole.
        let (_, budget) = serde_options(MANIFEST);
        for text in ["items:\n  - a\n", "a: 1\n", "items:\n- a\nitems:\n- b\n"] {
            assert_eq!(
                parse_split_pieces(text, MANIFEST, &budget, 2),
                None,
                "{text}"
            );
        }
    }
}
