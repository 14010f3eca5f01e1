//! Reporters: format a result document for people (table), programs (JSON, CSV) and the seed
//! view. Reporters only format; every number they print was computed by `stats`/`analyse`.

pub mod csv;
pub mod seeds;
pub mod table;

pub use crate::model::unit::{fmt_bytes, fmt_count, fmt_ns, fmt_size, sig4};

/// A table in osprim's style: a rule under the header, no vertical lines, never wrapped.
pub fn new_table() -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    let rule = comfy_table::LineStyle::none().fill('─').junction('─');
    let style = comfy_table::TableStyle::new().header_separator(rule).bottom_border(rule);
    t.load_style(style).set_content_arrangement(comfy_table::ContentArrangement::Disabled);
    t
}

#[cfg(test)]
mod tests;
