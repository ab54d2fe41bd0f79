//! Source files and byte spans.
//!
//! Consumes: file paths (relative to the project root, `/`-separated) and their text.
//! Produces: a [`SourceMap`] that hands out [`FileId`]s and turns byte offsets into
//! `line:column` positions.
//!
//! Invariant: every [`Span`] in the compiler is a byte range into the text of one file of the
//! map; parsers that count in characters convert at their boundary.

use std::ops::Range;

/// Index of a file in the [`SourceMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// The file the range points into.
    pub file: FileId,
    /// First byte of the range.
    pub start: u32,
    /// One past the last byte of the range.
    pub end: u32,
}

impl Span {
    /// Makes a span from a byte range, saturating offsets that do not fit in `u32`.
    pub fn new(file: FileId, range: Range<usize>) -> Self {
        let start = u32::try_from(range.start).unwrap_or(u32::MAX);
        let end = u32::try_from(range.end).unwrap_or(u32::MAX).max(start);
        Self { file, start, end }
    }

    /// The span as a `usize` range, for slicing and rendering.
    pub fn range(&self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One loaded source file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path relative to the project root, with `/` separators (never absolute).
    pub path: String,
    /// The full text.
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    fn new(path: String, text: String) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(idx, _)| idx + 1));
        Self {
            path,
            text,
            line_starts,
        }
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(idx) => idx,
            Err(idx) => idx.saturating_sub(1),
        };
        let line_start = self.line_starts.get(line_idx).copied().unwrap_or(0);
        let column = self
            .text
            .get(line_start..offset)
            .map_or(0, |prefix| prefix.chars().count());
        (line_idx + 1, column + 1)
    }

    /// Byte offsets where lines start.
    pub fn line_starts(&self) -> &[usize] {
        &self.line_starts
    }

    /// The byte offset of a 1-based line and 0-based character column, clamped to the text.
    pub fn offset_of(&self, line: usize, char_col: usize) -> usize {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let rest = self.text.get(start..).unwrap_or("");
        let within = rest
            .char_indices()
            .nth(char_col)
            .map_or(rest.len(), |(idx, _)| idx);
        start + within
    }
}

/// All source files of one compilation.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, path: impl Into<String>, text: impl Into<String>) -> FileId {
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.files.push(SourceFile::new(path.into(), text.into()));
        id
    }

    /// The file behind an id.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    /// The path of a file, or `<unknown>` for an id that is not in the map.
    pub fn path(&self, id: FileId) -> &str {
        self.get(id).map_or("<unknown>", |file| file.path.as_str())
    }

    /// Every file with its id, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(idx, file)| (FileId(u32::try_from(idx).unwrap_or(u32::MAX)), file))
    }

    /// The text a span covers, or an empty string if it is out of range.
    pub fn snippet(&self, span: Span) -> &str {
        self.get(span.file)
            .and_then(|file| file.text.get(span.range()))
            .unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_not_bytes() {
        let mut map = SourceMap::new();
        let id = map.add("a.kdl", "ab\n\u{e9}x y\n");
        let file = map.get(id).unwrap();
        assert_eq!(file.line_col(0), (1, 1));
        assert_eq!(file.line_col(3), (2, 1));
        // "é" is two bytes; the "x" after it is column 2.
        assert_eq!(file.line_col(5), (2, 2));
        assert_eq!(file.offset_of(2, 1), 5);
    }

    #[test]
    fn spans_past_the_end_are_clamped() {
        let mut map = SourceMap::new();
        let id = map.add("a.kdl", "ab");
        let file = map.get(id).unwrap();
        assert_eq!(file.line_col(99), (1, 3));
        assert_eq!(map.snippet(Span::new(id, 1..99)), "");
    }
}
