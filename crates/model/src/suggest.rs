//! "Did you mean" for readers' error messages: the known word nearest to a
//! misspelt one, when it is near enough to be the likely intent.

/// The candidate nearest to `word` by edit distance (insertions, deletions,
/// substitutions and swaps of neighbours each count one; letter case is
/// ignored), if it is within a small distance for its length. Ties go to
/// the first candidate, so callers list their words in a fixed order.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word: Vec<char> = word.chars().flat_map(char::to_lowercase).collect();
    let allowed = match word.len() {
        0 => return None,
        1..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let other: Vec<char> = candidate.chars().flat_map(char::to_lowercase).collect();
        // The distance is at least the difference in length; skipping far
        // lengths early also keeps huge inputs cheap.
        if other.len().abs_diff(word.len()) > allowed {
            continue;
        }
        let distance = edit_distance(&word, &other);
        if distance <= allowed && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Levenshtein distance over characters (each insertion, deletion or
/// substitution counts one), for readers that rank several near names.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// Optimal-string-alignment distance: Levenshtein plus swaps of two
/// neighbouring characters, the most common typo (`Deploymnet`).
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut rows = vec![0usize; (a.len() + 1) * width];
    for (j, cell) in rows.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        rows[i * width] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut value = (rows[(i - 1) * width + j] + 1)
                .min(rows[i * width + j - 1] + 1)
                .min(rows[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                value = value.min(rows[(i - 2) * width + j - 2] + 1);
            }
            rows[i * width + j] = value;
        }
    }
    rows[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distance(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        edit_distance(&a, &b)
    }

    #[test]
    fn swaps_count_once() {
        assert_eq!(distance("Deploymnet", "Deployment"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "ab"), 2);
        assert_eq!(distance("same", "same"), 0);
    }

    #[test]
    fn near_words_are_suggested_and_far_ones_are_not() {
        let fields = ["name", "image", "resources", "ports"];
        assert_eq!(closest("resource", fields), Some("resources"));
        assert_eq!(closest("resourcez", fields), Some("resources"));
        assert_eq!(closest("nmae", fields), Some("name"));
        assert_eq!(closest("Image", fields), Some("image"));
        assert_eq!(closest("command", fields), None);
        assert_eq!(closest("", fields), None);
        assert_eq!(closest(&"x".repeat(100_000), fields), None);
    }
}
