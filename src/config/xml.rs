//! A small element tree read with quick-xml's event reader.
//!
//! Mycat's files are read into [`Element`]s that remember the line each element starts on, so
//! every later validation error can name `file:line`. The DOCTYPE's DTD is never fetched
//! (DECISIONS.md item 8): element order is not enforced and namespace prefixes (`mycat:`) are
//! dropped, so files written for 1.6.5 and 1.6.7 both load.

use std::path::{Path, PathBuf};

use quick_xml::events::{BytesStart, Event};

use super::{ConfigError, Origin};

/// One XML element: local name, attributes in document order, trimmed text, children, origin.
#[derive(Debug, Clone)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub text: String,
    pub children: Vec<Element>,
    pub origin: Origin,
}

impl Element {
    /// The raw value of attribute `name` (not trimmed: Mycat reads attributes raw, SPEC §0.4).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Children with local name `name`, in document order.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// `<property name="k">v</property>` children as (name, trimmed value) pairs; an empty value
    /// means "not set" in Mycat (SPEC §0.4) and is left out.
    pub fn properties(&self) -> Vec<(String, String, Origin)> {
        self.children_named("property")
            .filter_map(|p| {
                let name = p.attr("name")?.to_string();
                // Java String.trim(): characters up to U+0020 only (SPEC §0.4).
                let value = p.text.trim_matches(|c: char| c <= '\u{20}').to_string();
                (!value.is_empty()).then(|| (name, value, p.origin.clone()))
            })
            .collect()
    }
}

/// Parses `path` into its root element.
///
/// Errors: unreadable file, malformed XML (with the line of the failure), or no root element.
pub fn parse_file(path: &Path) -> Result<Element, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        origin: Origin::new(path, 0),
        element: String::new(),
        message: format!("cannot read file: {e}"),
    })?;
    parse_str(path, &text)
}

/// Parses XML `text` that came from `path` (the path is used only in errors and origins).
pub fn parse_str(path: &Path, text: &str) -> Result<Element, ConfigError> {
    let lines = LineIndex::new(text);
    let file: PathBuf = path.to_path_buf();
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let err = |line: usize, element: &str, message: String| ConfigError {
        origin: Origin::new(&file, line),
        element: element.to_string(),
        message,
    };
    loop {
        let before = reader.buffer_position() as usize;
        let event = match reader.read_event() {
            Ok(e) => e,
            Err(e) => {
                let line = lines.line_of(reader.error_position() as usize);
                return Err(err(line, "", format!("malformed XML: {e}")));
            }
        };
        let after = reader.buffer_position() as usize;
        match event {
            Event::Start(start) => {
                let line = lines.line_of(before + text[before..after].find('<').unwrap_or(0));
                let element = element_from(&start, &file, line)?;
                stack.push(element);
            }
            Event::Empty(start) => {
                let line = lines.line_of(before + text[before..after].find('<').unwrap_or(0));
                let element = element_from(&start, &file, line)?;
                attach(&mut stack, &mut root, element);
            }
            Event::End(_) => {
                if let Some(done) = stack.pop() {
                    attach(&mut stack, &mut root, done);
                }
            }
            Event::Text(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) => {
                let name = r.xml10_content();
                let resolved = if r.is_char_ref() {
                    r.resolve_char_ref().ok().flatten().map(String::from)
                } else {
                    quick_xml::escape::resolve_predefined_entity(&name).map(String::from)
                };
                let Some(resolved) = resolved else {
                    return Err(err(
                        lines.line_of(before),
                        stack.last().map(|e| e.name.as_str()).unwrap_or(""),
                        format!("unknown entity &{name};"),
                    ));
                };
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&resolved);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(err(
            open.origin.line,
            &open.name,
            format!("element <{}> is not closed", open.name),
        ));
    }
    root.ok_or_else(|| err(1, "", "no root element".to_string()))
}

fn attach(stack: &mut [Element], root: &mut Option<Element>, element: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(element),
        None => {
            if root.is_none() {
                *root = Some(element);
            }
        }
    }
}

/// The element a start tag opens, at `file:line`.
///
/// Errors: an attribute or attribute value quick-xml cannot read, at that origin.
fn element_from(start: &BytesStart<'_>, file: &Path, line: usize) -> Result<Element, ConfigError> {
    let name = start.local_name().as_ref().to_string();
    let err = |message: String| ConfigError {
        origin: Origin::new(file, line),
        element: String::new(),
        message,
    };
    let mut attrs = Vec::new();
    for attr in start.attributes() {
        let attr = attr.map_err(|e| err(format!("bad attribute in <{name}>: {e}")))?;
        let key = attr.key.local_name().as_ref().to_string();
        if attr.key.as_ref().starts_with("xmlns") {
            continue;
        }
        let value = attr
            .normalized_value(quick_xml::XmlVersion::Explicit1_0)
            .map_err(|e| err(format!("bad value of {key} in <{name}>: {e}")))?
            .into_owned();
        attrs.push((key, value));
    }
    Ok(Element {
        name,
        attrs,
        text: String::new(),
        children: Vec::new(),
        origin: Origin::new(file, line),
    })
}

/// Byte offset → 1-based line number.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_attributes_text_and_entities() {
        let xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE mycat:schema SYSTEM \"schema.dtd\">\n<mycat:schema xmlns:mycat=\"http://io.mycat/\">\n  <a x=\"1&amp;2\">\n    <b/>\n    <c>t &lt; u</c>\n  </a>\n</mycat:schema>\n";
        let root = parse_str(Path::new("s.xml"), xml).unwrap();
        assert_eq!(root.name, "schema");
        assert_eq!(root.origin.line, 3);
        let a = &root.children[0];
        assert_eq!(a.origin.line, 4);
        assert_eq!(a.attr("x"), Some("1&2"));
        assert_eq!(a.children[0].name, "b");
        assert_eq!(a.children[0].origin.line, 5);
        assert_eq!(a.children[1].text, "t < u");
        assert_eq!(a.children[1].origin.line, 6);
    }

    #[test]
    fn malformed_xml_names_the_line() {
        let xml = "<a>\n<b>\n</a>\n";
        let e = parse_str(Path::new("s.xml"), xml).unwrap_err();
        assert!(e.origin.line >= 2, "{e}");
        assert!(e.to_string().contains("s.xml:"), "{e}");
    }
}
