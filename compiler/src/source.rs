//! Source files and byte spans.
//!
//! Consumes: file paths (relative to the project root, `/`-separated) and their text.
//! Produces: a [`SourceMap`] that hands out [`FileId`]s and turns byte offsets into
//! `line:column` positions, and [`CharOffsets`], which turns character positions into bytes.
//!
//! Invariants: every [`Span`] in the compiler is a byte range into the text of one file of the
//! map; parsers that count in characters convert at their boundary. A leading byte order mark is
//! not part of a file's text, so columns count characters after it. Lines end exactly where the
//! file's syntax ends them: a `.kdl` file at every KDL v2 newline (CRLF, CR, LF, NEL, VT, FF,
//! U+2028, U+2029), any other file at the YAML 1.2 line breaks (CRLF, CR, LF). Every conversion is
//! linear in the file or better: line starts are computed once, and character offsets are found
//! from checkpoints.

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
    fn new(path: String, mut text: String) -> Self {
        if text.starts_with('\u{feff}') {
            text.drain(..'\u{feff}'.len_utf8());
        }
        let kdl = path.ends_with(".kdl");
        let mut line_starts = vec![0];
        let mut rest = text.as_str();
        let mut offset = 0;
        while let Some(idx) = rest.find(|ch: char| is_line_break(ch, kdl)) {
            let after = rest.get(idx..).unwrap_or("");
            let len = if after.starts_with("\r\n") {
                2
            } else {
                after.chars().next().map_or(1, char::len_utf8)
            };
            offset += idx + len;
            line_starts.push(offset);
            rest = after.get(len..).unwrap_or("");
        }
        Self {
            path,
            text,
            line_starts,
        }
    }

    /// The byte range of a 0-based line without its line break, or `None` past the last line.
    pub fn line_range(&self, line_index: usize) -> Option<Range<usize>> {
        let start = *self.line_starts.get(line_index)?;
        let end = self
            .line_starts
            .get(line_index + 1)
            .copied()
            .unwrap_or(self.text.len());
        let line = self.text.get(start..end).unwrap_or("");
        let content = line
            .strip_suffix("\r\n")
            .or_else(|| {
                line.chars()
                    .next_back()
                    .filter(|&ch| is_line_break(ch, true))
                    .and_then(|ch| line.get(..line.len() - ch.len_utf8()))
            })
            .unwrap_or(line);
        Some(start..start + content.len())
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

    /// Byte offsets where lines start: 0, and the offset after every line break of the file's
    /// syntax (see the module documentation).
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

/// Whether a character breaks a line: in KDL v2 (`kdl`) or in YAML 1.2. CRLF is one break; its
/// CR is found here and the caller takes the LF with it.
fn is_line_break(ch: char, kdl: bool) -> bool {
    match ch {
        '\n' | '\r' => true,
        '\u{85}' | '\u{b}' | '\u{c}' | '\u{2028}' | '\u{2029}' => kdl,
        _ => false,
    }
}

/// Converts character offsets of one text to byte offsets in time independent of the text's
/// length: it keeps the byte offset of every [`CharOffsets::STRIDE`]th character.
#[derive(Debug)]
pub struct CharOffsets<'a> {
    text: &'a str,
    checkpoints: Vec<usize>,
    steps: std::cell::Cell<u64>,
}

impl<'a> CharOffsets<'a> {
    /// Characters between two checkpoints.
    pub const STRIDE: usize = 64;

    /// Indexes a text, in one pass.
    pub fn new(text: &'a str) -> Self {
        let checkpoints = text
            .char_indices()
            .step_by(Self::STRIDE)
            .map(|(idx, _)| idx)
            .collect();
        Self {
            text,
            checkpoints,
            steps: std::cell::Cell::new(0),
        }
    }

    /// The byte offset of a character offset, clamped to the end of the text.
    pub fn byte_offset(&self, char_offset: usize) -> usize {
        let Some(&start) = self.checkpoints.get(char_offset / Self::STRIDE) else {
            return self.text.len();
        };
        let within = char_offset % Self::STRIDE;
        self.steps.set(self.steps.get() + within as u64 + 1);
        let rest = self.text.get(start..).unwrap_or("");
        start
            + rest
                .char_indices()
                .nth(within)
                .map_or(rest.len(), |(idx, _)| idx)
    }

    /// How many characters all conversions so far have walked over; tests use it to prove the
    /// cost per conversion bounded without timing anything.
    pub fn steps(&self) -> u64 {
        self.steps.get()
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

    #[test]
    fn lines_end_at_the_line_breaks_of_the_files_syntax() {
        let text = "a\rb\r\nc\nd\u{2028}e\u{85}f\u{b}g\u{c}h\u{2029}i";
        let mut map = SourceMap::new();
        let kdl = map.add("t.kdl", text);
        let yaml = map.add("t.yaml", text);
        let kdl = map.get(kdl).unwrap();
        let yaml = map.get(yaml).unwrap();
        assert_eq!(kdl.line_starts().len(), 9);
        assert_eq!(kdl.line_col(text.find('i').unwrap()), (9, 1));
        // YAML 1.2 breaks lines only at CR, LF and CRLF.
        assert_eq!(yaml.line_starts().len(), 4);
        assert_eq!(yaml.line_col(text.find('e').unwrap()), (4, 3));
        let lines: Vec<_> = (0..9)
            .map(|idx| &kdl.text[kdl.line_range(idx).unwrap()])
            .collect();
        assert_eq!(lines, ["a", "b", "c", "d", "e", "f", "g", "h", "i"]);
        assert_eq!(kdl.line_range(9), None);
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_text() {
        let mut map = SourceMap::new();
        let id = map.add("a.yaml", "\u{feff}name: x\n");
        let file = map.get(id).unwrap();
        assert_eq!(file.text, "name: x\n");
        assert_eq!(file.line_col(6), (1, 7));
    }

    #[test]
    fn char_offsets_convert_in_bounded_steps() {
        let text: String = "a\u{e9}\u{1f600}".repeat(1000);
        let offsets = CharOffsets::new(&text);
        for (char_idx, (byte_idx, _)) in text.char_indices().enumerate() {
            assert_eq!(offsets.byte_offset(char_idx), byte_idx);
        }
        assert_eq!(offsets.byte_offset(3000), text.len());
        assert_eq!(offsets.byte_offset(99_999), text.len());
        // Each conversion walks at most one stride.
        assert!(offsets.steps() <= 3000 * CharOffsets::STRIDE as u64);
    }
}
