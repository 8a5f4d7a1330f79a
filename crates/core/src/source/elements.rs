//! HTML element classes shared by the HTML reader and the Markdown reader's raw HTML blocks
//! (outside the `html` feature, so the wasm widget builds without it).

/// Block elements: their opening and closing tags end a line of text.
pub(crate) fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "main"
            | "header"
            | "blockquote"
            | "ul"
            | "ol"
            | "dl"
            | "dt"
            | "dd"
            | "table"
            | "thead"
            | "tbody"
            | "tfoot"
            | "figure"
            | "figcaption"
            | "details"
            | "summary"
            | "hr"
            | "center"
            | "address"
            | "fieldset"
    )
}
