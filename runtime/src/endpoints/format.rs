//! Which text format `/metrics` answers in, and the conversion between
//! them. The metrics are encoded as OpenMetrics (prometheus-client's only
//! text format); a scraper that does not ask for OpenMetrics in its
//! `Accept` header (curl, `promtool check metrics`, older tools) gets the
//! Prometheus text format 0.0.4 instead, converted line by line.
//!
//! | | OpenMetrics 1.0.0 | text 0.0.4 |
//! | --- | --- | --- |
//! | counter family | `# TYPE x counter`, samples `x_total` | `# TYPE x_total counter` |
//! | info family | `# TYPE x info`, sample `x_info` | `# TYPE x_info gauge` |
//! | `# UNIT`, `# EOF`, exemplars | written | dropped |
//! | `unknown` | `# TYPE x unknown` | `# TYPE x untyped` |

/// The content type of OpenMetrics text.
pub(super) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of the Prometheus text format 0.0.4.
pub(super) const TEXT_0_0_4: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A text format of `/metrics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0 (what Prometheus asks for first).
    OpenMetrics,
    /// The Prometheus text format 0.0.4.
    Text004,
}

impl Format {
    /// OpenMetrics when `accept` (the request's `Accept` header) names
    /// `application/openmetrics-text` with a quality above 0; the text
    /// format 0.0.4 otherwise (no header, `*/*`, `text/plain`).
    pub fn negotiate(accept: Option<&str>) -> Format {
        let asks = accept.is_some_and(|accept| {
            accept.split(',').any(|range| {
                let mut parts = range.split(';').map(str::trim);
                let media = parts.next().unwrap_or_default();
                let quality = parts
                    .filter_map(|p| p.split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                    .and_then(|(_, v)| v.trim().parse::<f32>().ok())
                    .unwrap_or(1.0);
                media.eq_ignore_ascii_case("application/openmetrics-text") && quality > 0.0
            })
        });
        match asks {
            true => Format::OpenMetrics,
            false => Format::Text004,
        }
    }

    /// Its content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS,
            Format::Text004 => TEXT_0_0_4,
        }
    }
}

/// `openmetrics` (an OpenMetrics text) in the Prometheus text format 0.0.4.
pub fn to_text_0_0_4(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // A family's HELP line waits for its TYPE, which may rename it.
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            flush_help(&mut out, help.take(), None);
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name, text));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "gauge" | "histogram" | "summary" => (name.to_owned(), kind),
                "stateset" => (name.to_owned(), "gauge"),
                _ => (name.to_owned(), "untyped"),
            };
            flush_help(&mut out, help.take(), Some(&name));
            out.push_str(&format!("# TYPE {name} {kind}\n"));
        } else if line.starts_with('#') {
            // `# UNIT`, `# EOF` and any other comment: 0.0.4 has no place for them.
            continue;
        } else if !line.is_empty() {
            flush_help(&mut out, help.take(), None);
            out.push_str(without_exemplar(line));
            out.push('\n');
        }
    }
    flush_help(&mut out, help, None);
    out
}

/// Writes a waiting HELP line under `renamed` (or its own name). 0.0.4
/// escapes only `\` and newlines in help text: an escaped quote is plain.
fn flush_help(out: &mut String, help: Option<(&str, &str)>, renamed: Option<&str>) {
    if let Some((name, text)) = help {
        let name = renamed.unwrap_or(name);
        out.push_str(&format!("# HELP {name} {}\n", text.replace("\\\"", "\"")));
    }
}

/// A sample line without its exemplar (` # {...} value`), which 0.0.4 has
/// no place for. Label values may hold ` # `: the exemplar starts after the
/// label set closes.
fn without_exemplar(line: &str) -> &str {
    let mut in_quotes = false;
    let mut escaped = false;
    let mut labels_closed = !line.contains('{');
    for (i, c) in line.char_indices() {
        if !labels_closed {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_quotes => escaped = true,
                '"' => in_quotes = !in_quotes,
                '}' if !in_quotes => labels_closed = true,
                _ => {}
            }
        } else if line[i..].starts_with(" # ") {
            return &line[..i];
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_only_for_a_scraper_that_asks_for_it() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        let cases = [
            (None, Format::Text004),
            (Some("*/*"), Format::Text004),
            (Some("text/plain"), Format::Text004),
            (Some("text/plain;version=0.0.4"), Format::Text004),
            (Some(prometheus), Format::OpenMetrics),
            (Some("Application/OpenMetrics-Text"), Format::OpenMetrics),
            (
                Some("text/plain, application/openmetrics-text;q=0"),
                Format::Text004,
            ),
            (
                Some("text/plain;q=0.9, application/openmetrics-text; q=0.1"),
                Format::OpenMetrics,
            ),
        ];
        for (accept, format) in cases {
            assert_eq!(Format::negotiate(accept), format, "{accept:?}");
        }
    }

    #[test]
    fn openmetrics_becomes_text_0_0_4() {
        let openmetrics = "\
# HELP mesh_passes Passes of the provisioner loop run.
# TYPE mesh_passes counter
mesh_passes_total 3
# HELP mesh_pass_duration_seconds How long a pass took.
# TYPE mesh_pass_duration_seconds histogram
# UNIT mesh_pass_duration_seconds seconds
mesh_pass_duration_seconds_sum 0.5
mesh_pass_duration_seconds_count 2
mesh_pass_duration_seconds_bucket{le=\"+Inf\"} 2
# HELP mesh_consumers Listed consumers by \\\"state\\\".
# TYPE mesh_consumers gauge
mesh_consumers{state=\"ok\"} 1
# HELP mesh_build Which mesh binary.
# TYPE mesh_build info
mesh_build_info{binary=\"mesh-postgres\",version=\"0.1.0\"} 1
# TYPE mesh_odd unknown
mesh_odd{note=\"a # b\"} 1 # {trace=\"x\"} 1
# EOF
";
        let expected = "\
# HELP mesh_passes_total Passes of the provisioner loop run.
# TYPE mesh_passes_total counter
mesh_passes_total 3
# HELP mesh_pass_duration_seconds How long a pass took.
# TYPE mesh_pass_duration_seconds histogram
mesh_pass_duration_seconds_sum 0.5
mesh_pass_duration_seconds_count 2
mesh_pass_duration_seconds_bucket{le=\"+Inf\"} 2
# HELP mesh_consumers Listed consumers by \"state\".
# TYPE mesh_consumers gauge
mesh_consumers{state=\"ok\"} 1
# HELP mesh_build_info Which mesh binary.
# TYPE mesh_build_info gauge
mesh_build_info{binary=\"mesh-postgres\",version=\"0.1.0\"} 1
# TYPE mesh_odd untyped
mesh_odd{note=\"a # b\"} 1
";
        assert_eq!(to_text_0_0_4(openmetrics), expected);
    }
}
