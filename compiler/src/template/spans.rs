//! Maps positions in a template's rendered text back to the template source.
//!
//! Consumes: the output spans minijinja records while it renders (`render_with_spans`): which
//! byte range of the output came from which byte range of which template.
//! Produces: for a byte offset of the rendered text, the template and the byte range in it that
//! wrote it, so a finding about the rendered YAML (a syntax error, a forbidden object) points at
//! the template's line and column.
//!
//! Invariants: pure; literal template text maps byte for byte, the output of an expression maps
//! to the whole expression; an offset in no span (the end of the output) maps to the last span
//! before it, so a finding always has a location; ranges are checked against the template's
//! text by the caller before they become spans.

use std::ops::Range;

use minijinja::{OutputSpan, OutputSpanKind};

/// The output spans of one rendering, ordered by output position.
#[derive(Debug, Clone, Default)]
pub struct SpanMap {
    spans: Vec<OutputSpan>,
}

impl SpanMap {
    /// Wraps the spans `render_with_spans` returned.
    pub fn new(spans: Vec<OutputSpan>) -> Self {
        SpanMap { spans }
    }

    /// The template (by name) and the range in it that wrote the output bytes `range`: the
    /// same range of literal text when both ends lie in one literal piece, else what
    /// [`locate`](Self::locate) gives for its start.
    pub fn locate_range(&self, range: Range<usize>) -> Option<(&str, Range<usize>)> {
        let (name, start) = self.locate(range.start)?;
        if range.end > range.start
            && let Some(last) = self.raw_index(range.start)
            && self.raw_index(range.end - 1) == Some(last)
        {
            return Some((name, start.start..start.start + (range.end - range.start)));
        }
        Some((name, start))
    }

    /// The index of the literal span that holds the output byte at `offset`, if it is literal.
    fn raw_index(&self, offset: usize) -> Option<usize> {
        let idx = self
            .spans
            .partition_point(|span| span.output_range().start <= offset)
            .checked_sub(1)?;
        let span = self.spans.get(idx)?;
        (span.kind() == OutputSpanKind::Raw && span.output_range().contains(&offset)).then_some(idx)
    }

    /// The template (by name) and the range in it that wrote the output byte at `offset`.
    pub fn locate(&self, offset: usize) -> Option<(&str, Range<usize>)> {
        let idx = self
            .spans
            .partition_point(|span| span.output_range().start <= offset)
            .checked_sub(1)?;
        let span = self.spans.get(idx)?;
        let source = span.source_range();
        let range = match span.kind() {
            OutputSpanKind::Raw => {
                let at = source
                    .start
                    .saturating_add(offset.saturating_sub(span.output_range().start))
                    .min(source.end);
                at..at
            }
            // Expression output, and any kind a later minijinja adds: the whole source.
            _ => source,
        };
        Some((span.name(), range))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(source: &str) -> (String, SpanMap) {
        let mut env = minijinja::Environment::new();
        env.add_template_owned("t", source.to_string()).unwrap();
        let ctx = minijinja::context!(ns => vec!["a", "bb"], name => "x");
        let (output, spans) = env
            .get_template("t")
            .unwrap()
            .render_with_spans(ctx)
            .unwrap();
        (output, SpanMap::new(spans))
    }

    #[test]
    fn literal_text_maps_exactly_and_expression_output_to_its_expression() {
        let source =
            "kind: ConfigMap\nname: {{ name }}\n{% for n in ns %}namespace: {{ n }}\n{% endfor %}";
        let (output, map) = rendered(source);
        let at = output.rfind("namespace").unwrap();
        let (name, range) = map.locate(at).unwrap();
        assert_eq!(name, "t");
        assert_eq!(
            &source[range.start..],
            &source[source.find("namespace").unwrap()..]
        );
        let at = output.find("bb").unwrap();
        let (_, range) = map.locate(at).unwrap();
        assert_eq!(&source[range], "n");
        let (_, range) = map.locate(output.len()).unwrap();
        assert!(range.end <= source.len());
        let at = output.find("ConfigMap").unwrap();
        let (_, range) = map.locate_range(at..at + 9).unwrap();
        assert_eq!(&source[range], "ConfigMap");
        let at = output.find("x\n").unwrap();
        let (_, range) = map.locate_range(at - 6..at + 1).unwrap();
        assert_eq!(
            range,
            source.find("name:").unwrap()..source.find("name:").unwrap(),
            "a range that ends in an expression keeps only its start"
        );
    }

    #[test]
    fn an_empty_rendering_locates_nothing() {
        let (output, map) = rendered("{% if false %}x{% endif %}");
        assert!(output.is_empty());
        assert_eq!(map.locate(0), None);
    }
}
