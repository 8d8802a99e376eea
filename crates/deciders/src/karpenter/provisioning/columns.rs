//! The instance types' requirements by key, so checking one requirement
//! against every option costs one comparison per distinct value set rather
//! than a key search and comparison per type. Columns are built on first
//! use, as most solves only ever ask about a few keys; a prepared template
//! keeps them across solves (behind a lock, so it can be shared).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::kube::requirements::{Requirement, Requirements};

/// What the types require on one key.
struct Column {
    /// The distinct requirements types have on the key.
    distinct: Vec<Requirement>,
    /// Per catalog index: index into `distinct`, or `UNDEFINED`.
    of_type: Vec<u32>,
}

const UNDEFINED: u32 = u32::MAX;

impl Column {
    /// The column of `key`, `None` when no type defines it.
    fn build(types: &[Requirements], key: &str) -> Option<Column> {
        let mut slots: HashMap<&Requirement, u32> = HashMap::new();
        let mut distinct = Vec::new();
        let mut of_type = vec![UNDEFINED; types.len()];
        for (index, requirements) in types.iter().enumerate() {
            if let Some(own) = requirements.get(key) {
                of_type[index] = *slots.entry(own).or_insert_with(|| {
                    distinct.push(own.clone());
                    (distinct.len() - 1) as u32
                });
            }
        }
        (!distinct.is_empty()).then_some(Column { distinct, of_type })
    }
}

/// Each catalog type's requirements, by key.
pub(super) struct TypeColumns {
    types: Arc<Vec<Requirements>>,
    columns: Mutex<HashMap<String, Option<Arc<Column>>>>,
}

impl TypeColumns {
    /// Indexes `types` (one entry per catalog index).
    pub fn new(types: Arc<Vec<Requirements>>) -> TypeColumns {
        TypeColumns {
            types,
            columns: Mutex::new(HashMap::new()),
        }
    }

    /// For `incoming`, a test of whether a catalog type's requirements
    /// intersect it (what `Requirements::is_intersecting` says of the type
    /// against `incoming` alone); `None` when no type defines its key, so
    /// every type does.
    pub fn matcher(&self, incoming: &Requirement) -> Option<TypeMatcher> {
        let key = incoming.key();
        let column = {
            let mut columns = self.columns.lock().unwrap_or_else(PoisonError::into_inner);
            match columns.get(key) {
                Some(column) => column.clone(),
                None => {
                    let column = Column::build(&self.types, key).map(Arc::new);
                    columns.insert(key.to_string(), column.clone());
                    column
                }
            }
        }?;
        let single = Requirements::from_iter([incoming.clone()]);
        let accepted = column
            .distinct
            .iter()
            .map(|own| Requirements::from_iter([own.clone()]).is_intersecting(&single))
            .collect();
        Some(TypeMatcher { column, accepted })
    }
}

/// One requirement's verdict per distinct value set of its key.
pub(super) struct TypeMatcher {
    column: Arc<Column>,
    accepted: Vec<bool>,
}

impl TypeMatcher {
    /// Whether the type at `index` intersects the requirement.
    pub fn accepts(&self, index: u32) -> bool {
        match self.column.of_type[index as usize] {
            UNDEFINED => true,
            slot => self.accepted[slot as usize],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TypeColumns;
    use crate::kube::labels::{LABEL_HOSTNAME, LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE};
    use crate::kube::requirements::{Requirement, Requirements};

    /// The per-key verdicts equal `Requirements::is_intersecting` against
    /// the single requirement, type by type, on keys types define, with
    /// narrower and disjoint value sets, negative operators, and a key no
    /// type defines.
    #[test]
    fn matcher_agrees_with_is_intersecting() {
        let catalog = crate::cloud::fake::instance_types(12);
        let types: Vec<Requirements> = catalog
            .instance_types()
            .iter()
            .map(|it| it.requirements())
            .collect();
        let types = std::sync::Arc::new(types);
        let columns = TypeColumns::new(types.clone());
        let cases = [
            Requirement::in_values(LABEL_TOPOLOGY_ZONE, ["test-zone-3"]),
            Requirement::in_values(LABEL_TOPOLOGY_ZONE, ["elsewhere"]),
            Requirement::not_in(LABEL_TOPOLOGY_ZONE, ["test-zone-1"]),
            Requirement::in_values(LABEL_INSTANCE_TYPE, ["fake-it-3", "fake-it-7"]),
            Requirement::does_not_exist(LABEL_INSTANCE_TYPE),
        ];
        let mut rejected = 0;
        for requirement in &cases {
            let matcher = columns.matcher(requirement).expect("types define the key");
            let single = Requirements::from_iter([requirement.clone()]);
            for (index, own) in types.iter().enumerate() {
                let expected = own.is_intersecting(&single);
                assert_eq!(
                    matcher.accepts(index as u32),
                    expected,
                    "{requirement} on {index}"
                );
                rejected += usize::from(!expected);
            }
        }
        assert!(rejected > 0, "some cases reject types");
        assert!(
            columns
                .matcher(&Requirement::in_values(LABEL_HOSTNAME, ["h"]))
                .is_none()
        );
    }
}
