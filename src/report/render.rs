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
    env.add_filter("inline_code", html_inline_code);
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

/// Hints and titles quote names between backticks, as Markdown does: in
/// HTML the text is escaped and each `name` becomes `<code>name</code>`,
/// so the page shows no raw backticks. An unpaired backtick stays as text.
fn html_inline_code(value: String) -> Value {
    let mut out = String::with_capacity(value.len() + 16);
    let escape = |s: &str, out: &mut String| {
        for c in s.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&#x27;"),
                _ => out.push(c),
            }
        }
    };
    let mut rest = value.as_str();
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        escape(&rest[..open], &mut out);
        out.push_str("<code>");
        escape(&rest[open + 1..open + 1 + len], &mut out);
        out.push_str("</code>");
        rest = &rest[open + len + 2..];
    }
    escape(rest, &mut out);
    Value::from_safe_string(out)
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
    fn html_code_spans() {
        let html = |s: &str| html_inline_code(s.into()).to_string();
        assert_eq!(
            html("use `a<b>` and `c&d`"),
            "use <code>a&lt;b&gt;</code> and <code>c&amp;d</code>"
        );
        assert_eq!(html("one ` left"), "one ` left");
        assert_eq!(html("`x` then `y"), "<code>x</code> then `y");
    }

    #[test]
    fn markdown_code_spans() {
        assert_eq!(md_code("aten::_to_copy".into()), "`aten::_to_copy`");
        assert_eq!(md_code("a|b`c".into()), "`a\\|b'c`");
        assert_eq!(md_code(String::new()), "");
    }
}
