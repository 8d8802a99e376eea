//! Errors and warnings from reading manifests: each names the file, line,
//! column and (where there is one) the field path, on one line.

use std::collections::BTreeSet;
use std::fmt;

use crate::yaml;

/// A place in a manifest file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// The file name as given by the caller.
    pub file: String,
    /// Line and column in the file (0:0 when unknown).
    pub place: yaml::Position,
}

impl Position {
    /// The position of `place` in `file`.
    pub fn at(file: &str, place: yaml::Position) -> Position {
        Position {
            file: file.to_string(),
            place,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.place)
    }
}

/// Why a manifest could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// The text is not well-formed YAML.
    #[error("{at}: malformed YAML: {message}")]
    Yaml {
        /// Where the parser stopped.
        at: Position,
        /// The parser's message.
        message: String,
    },
    /// A field is unknown, of the wrong type, or has a value that is not
    /// allowed (bad quantity, duration, operator, range, ...).
    #[error("{at}: {path}: {message}")]
    Field {
        /// Where the field (or its value) is written.
        at: Position,
        /// Dotted field path, e.g. `spec.template.spec.requirements[0].operator`.
        path: String,
        /// What is wrong, quoting the offending text.
        message: String,
    },
    /// A Kubernetes object has a field its kind does not define (kubectl's
    /// strict field validation refuses it). Boxed: it is the largest.
    #[error("{0}")]
    UnknownField(Box<UnknownField>),
}

/// A field a Kubernetes object's kind does not define.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    /// Where the key is written.
    pub at: Position,
    /// The key as written.
    pub field: String,
    /// The object: `Deployment shop/frontend`, `PriorityClass high`.
    pub object: String,
    /// Dotted path of the mapping holding the key, below the object
    /// (`spec.template.spec.containers[0]`; empty at the top level).
    pub path: String,
    /// A field of that mapping near the key.
    pub suggestion: Option<String>,
}

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: unknown field {:?} in {}{}{}",
            self.at,
            self.field,
            self.object,
            path_suffix(&self.path),
            suggestion_suffix(self.suggestion.as_deref())
        )
    }
}

fn path_suffix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" {path}")
    }
}

fn suggestion_suffix(suggestion: Option<&str>) -> String {
    suggestion
        .map(|near| format!(" (did you mean {near:?}?)"))
        .unwrap_or_default()
}

impl ManifestError {
    /// Where the error is.
    pub fn position(&self) -> &Position {
        match self {
            ManifestError::Yaml { at, .. } | ManifestError::Field { at, .. } => at,
            ManifestError::UnknownField(unknown) => &unknown.at,
        }
    }
}

/// Something karpsim read but does not act on, or accepted in an old form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ManifestWarning {
    /// Where the field is written.
    pub at: Position,
    /// Dotted field path.
    pub path: String,
    /// What karpsim does about it.
    pub message: String,
}

impl fmt::Display for ManifestWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.at, self.path, self.message)
    }
}

/// Collects warnings, at most one per distinct subject (for example one per
/// unmodelled field name across all objects of a kind).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Warnings {
    seen: BTreeSet<String>,
    list: Vec<ManifestWarning>,
}

impl Warnings {
    /// Records a warning unless one with the same `subject` was recorded.
    pub fn once(&mut self, subject: &str, warning: ManifestWarning) {
        if self.seen.insert(subject.to_string()) {
            self.list.push(warning);
        }
    }

    /// Records a warning unconditionally.
    pub fn push(&mut self, warning: ManifestWarning) {
        self.list.push(warning);
    }

    /// The warnings in the order they were recorded.
    pub fn list(&self) -> &[ManifestWarning] {
        &self.list
    }

    /// Takes the warnings out.
    pub fn into_vec(self) -> Vec<ManifestWarning> {
        self.list
    }
}
