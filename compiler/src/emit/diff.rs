//! Line diffs of stale output files, for `tenantc check`.
//!
//! Consumes: two texts (the file in `out/` and what the build writes). Produces: a unified diff
//! (`@@ -a,b +c,d @@` hunks with three lines of context), cut after a given number of lines.
//!
//! Invariants: the diff is a shortest edit script of whole lines (a longest common subsequence),
//! so it shows exactly the lines that changed; its work is bounded: texts whose line counts
//! multiply past [`MAX_CELLS`] are reported by their sizes only, never diffed, so a huge or
//! hostile file in `out/` cannot make `check` slow.

/// The most (old lines x new lines) a diff computes.
pub const MAX_CELLS: usize = 4_000_000;

/// Lines of context around each change.
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Remove,
    Add,
}

/// The unified diff of `old` into `new`, at most `max_lines` lines (a final line says how many
/// were cut); empty when the texts are equal.
pub fn unified(old: &str, new: &str, max_lines: usize) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a.len().saturating_mul(b.len()) > MAX_CELLS {
        return format!(
            "(too large to diff here: {} lines in out/, {} lines built)\n",
            a.len(),
            b.len()
        );
    }
    let ops = script(&a, &b);
    let mut lines = Vec::new();
    // Hunks: runs of changes with up to CONTEXT kept lines around them.
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, (op, _, _))| *op != Op::Keep)
        .map(|(idx, _)| idx)
        .collect();
    let mut start = 0;
    while start < changed.len() {
        let mut end = start;
        while end + 1 < changed.len()
            && changed.get(end + 1).copied().unwrap_or(0)
                <= changed.get(end).copied().unwrap_or(0) + 2 * CONTEXT + 1
        {
            end += 1;
        }
        let first = changed
            .get(start)
            .copied()
            .unwrap_or(0)
            .saturating_sub(CONTEXT);
        let last = (changed.get(end).copied().unwrap_or(0) + CONTEXT).min(ops.len() - 1);
        let hunk = ops.get(first..=last).unwrap_or_default();
        let old_start = hunk.first().map_or(0, |(_, i, _)| *i);
        let new_start = hunk.first().map_or(0, |(_, _, j)| *j);
        let old_count = hunk.iter().filter(|(op, _, _)| *op != Op::Add).count();
        let new_count = hunk.iter().filter(|(op, _, _)| *op != Op::Remove).count();
        lines.push(format!(
            "@@ -{},{old_count} +{},{new_count} @@",
            old_start + usize::from(old_count > 0),
            new_start + usize::from(new_count > 0)
        ));
        for (op, i, j) in hunk {
            let (sign, text) = match op {
                Op::Keep => (' ', a.get(*i).copied().unwrap_or_default()),
                Op::Remove => ('-', a.get(*i).copied().unwrap_or_default()),
                Op::Add => ('+', b.get(*j).copied().unwrap_or_default()),
            };
            lines.push(format!("{sign}{text}"));
        }
        start = end + 1;
    }
    let mut out = String::new();
    for line in lines.iter().take(max_lines) {
        out.push_str(line);
        out.push('\n');
    }
    if lines.len() > max_lines {
        out.push_str(&format!("… {} more diff lines\n", lines.len() - max_lines));
    }
    out
}

/// The edit script as `(op, old index, new index)`, where the index of the side an op does not
/// touch is where it stands in that side.
fn script(a: &[&str], b: &[&str]) -> Vec<(Op, usize, usize)> {
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..], one row per old line.
    let width = b.len() + 1;
    let mut lcs = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            let value = if a.get(i) == b.get(j) {
                lcs.get((i + 1) * width + j + 1).copied().unwrap_or(0) + 1
            } else {
                let down = lcs.get((i + 1) * width + j).copied().unwrap_or(0);
                let right = lcs.get(i * width + j + 1).copied().unwrap_or(0);
                down.max(right)
            };
            if let Some(cell) = lcs.get_mut(i * width + j) {
                *cell = value;
            }
        }
    }
    let mut ops = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a.get(i) == b.get(j) {
            ops.push((Op::Keep, i, j));
            i += 1;
            j += 1;
        } else if i < a.len()
            && (j == b.len()
                || lcs.get((i + 1) * width + j).copied().unwrap_or(0)
                    >= lcs.get(i * width + j + 1).copied().unwrap_or(0))
        {
            // Removals first where both keep the longest common part, as `diff -u` shows them.
            ops.push((Op::Remove, i, j));
            i += 1;
        } else {
            ops.push((Op::Add, i, j));
            j += 1;
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn shows_the_changed_lines_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\n";
        assert_eq!(
            unified(old, new, 100),
            "@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n+i\n"
        );
        assert_eq!(unified(old, old, 100), "");
    }

    #[test]
    fn far_apart_changes_are_separate_hunks_and_the_output_is_cut() {
        let old: String = (0..40).map(|n| format!("line {n}\n")).collect();
        let new = old
            .replace("line 2\n", "line two\n")
            .replace("line 30\n", "");
        let diff = unified(&old, &new, 100);
        assert_eq!(diff.matches("@@ ").count(), 2, "{diff}");
        assert!(diff.contains("@@ -1,6 +1,6 @@\n line 0\n line 1\n-line 2\n+line two\n"));
        assert!(diff.contains("@@ -28,7 +28,6 @@\n line 27\n line 28\n line 29\n-line 30\n"));
        let cut = unified(&old, &new, 3);
        assert!(cut.ends_with("… 13 more diff lines\n"), "{cut}");
    }

    #[test]
    fn a_new_or_emptied_file_is_one_hunk() {
        assert_eq!(unified("", "x\ny\n", 10), "@@ -0,0 +1,2 @@\n+x\n+y\n");
        assert_eq!(unified("x\n", "", 10), "@@ -1,1 +0,0 @@\n-x\n");
    }

    #[test]
    fn huge_files_are_not_diffed() {
        let big: String = (0..3000).map(|n| format!("{n}\n")).collect();
        let other: String = (0..3000).map(|n| format!("{}\n", n + 1)).collect();
        assert!(unified(&big, &other, 10).starts_with("(too large to diff here"));
    }
}
