//! Fills the templates of `report-templates/` (compiled into the binary)
//! from a [`ReportView`].

use super::view::ReportView;
use anyhow::{Context, Result};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

const TEMPLATES: [(&str, &str); 5] = [
    ("report.html", include_str!("../../report-templates/report.html")),
    ("charts.html", include_str!("../../report-templates/charts.html")),
    ("report.md", include_str!("../../report-templates/report.md")),
    ("job.html", include_str!("../../report-templates/job.html")),
    ("job.md", include_str!("../../report-templates/job.md")),
];

fn environment() -> Result<Environment<'static>> {
    let mut env = Environment::new();
    // HTML is escaped; Markdown cells are escaped by the `cell` filter.
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".html") {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
        .context("report template syntax; this is a gapscope bug")?;
    env.set_syntax(syntax);
    // A misspelt field is an error, not an empty cell.
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_filter("cell", md_cell);
    env.add_filter("code", md_code);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)
            .with_context(|| format!("report template {name} does not compile; this is a gapscope bug"))?;
    }
    Ok(env)
}

fn render(name: &str, view: &impl serde::Serialize) -> Result<String> {
    let env = environment()?;
    let template = env.get_template(name)?;
    template
        .render(Value::from(Serde(view)))
        .with_context(|| format!("rendering report template {name} failed; this is a gapscope bug"))
}

/// The HTML page.
pub fn html(view: &ReportView) -> Result<String> {
    render("report.html", view)
}

/// The Markdown page.
pub fn markdown(view: &ReportView) -> Result<String> {
    render("report.md", view)
}

/// A job's HTML page.
pub fn job_html(view: &super::job::JobView) -> Result<String> {
    render("job.html", view)
}

/// A job's Markdown page.
pub fn job_markdown(view: &super::job::JobView) -> Result<String> {
    render("job.md", view)
}

/// Makes a value safe inside a Markdown table cell: one line, no `|`
/// splitting the cell, no stray HTML or emphasis from kernel names.
fn md_cell(value: String) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '*' | '_' | '`' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A name (operator, kernel, source line) as a Markdown code span in a
/// table cell; empty stays empty.
fn md_code(value: String) -> String {
    if value.is_empty() {
        return value;
    }
    let one_line = value.replace(['\n', '\r'], " ").replace('`', "'");
    format!("`{}`", one_line.replace('|', "\\|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_compile() {
        environment().unwrap();
    }

    #[test]
    fn markdown_cells_stay_one_cell() {
        assert_eq!(md_cell("a|b\nc".into()), "a\\|b c");
        assert_eq!(md_cell("void k<float>".into()), "void k&lt;float&gt;");
        assert_eq!(md_cell("aten::_to_copy".into()), "aten::\\_to\\_copy");
    }

    #[test]
    fn markdown_code_spans() {
        assert_eq!(md_code("aten::_to_copy".into()), "`aten::_to_copy`");
        assert_eq!(md_code("a|b`c".into()), "`a\\|b'c`");
        assert_eq!(md_code(String::new()), "");
    }
}
