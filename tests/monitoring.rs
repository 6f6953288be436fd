//! The monitoring kit names only what the binaries export: every metric in
//! `deploy/prometheus/mesh.rules.yml` and `deploy/grafana/mesh.json`, and
//! every metric in the tables of docs/contracts/metrics.md, is found in a
//! real scrape of the built `mesh-controller serve`, `mesh-postgres`,
//! `mesh-provide` and `mesh-grants` (with `--metrics-listen`), with the
//! label values the queries select; and every metric those binaries export
//! has its row in those tables. Besides those, a query may only name `up`
//! (Prometheus' own). When promtool is
//! installed, every dashboard query is also parsed by it. Each binary is
//! scraped as Prometheus asks (OpenMetrics) and as a plain client does
//! (text format 0.0.4, which `promtool check metrics` lints): both hold
//! the same samples and `mesh_build_info`. The declaration names a
//! provider that never runs, so `status` is not all well, and serve's
//! `mesh_status_*` gauges are held against what `status --json` says.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mesh_test_support::mesh::{binary, clauses_of, Process};
use mesh_test_support::{free_port, NatsServer, PgCluster};
use serde_json::{json, Value};

/// Sample names of a scrape, each with the label pairs seen on it.
type Scrape = BTreeMap<String, BTreeSet<(String, String)>>;

/// `GET /metrics` at `port` with `accept` as the `Accept` header, once it
/// answers 200 (within 60 s): its content type and body.
fn scrape(port: u16, process: &Process, accept: Option<&str>) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    loop {
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let request = format!("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n{accept}\r\n");
            let mut answer = String::new();
            if stream.write_all(request.as_bytes()).is_ok()
                && stream.read_to_string(&mut answer).is_ok()
                && answer
                    .lines()
                    .next()
                    .is_some_and(|status| status.contains(" 200 "))
            {
                if let Some((head, body)) = answer.split_once("\r\n\r\n") {
                    let content_type = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-type: "))
                        .unwrap_or_default();
                    return (content_type.to_owned(), body.to_owned());
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "no /metrics on port {port}:\n{}",
            process.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What Prometheus 2.42 sends.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// Scrapes `binary` as Prometheus does (OpenMetrics) and as a plain
/// client does (text 0.0.4): both carry the same samples and its
/// `mesh_build_info`, and promtool (when installed) finds nothing wrong
/// with the 0.0.4 text, the only format it lints.
fn scrape_both_ways(binary: &str, port: u16, process: &Process, into: &mut Scrape) {
    let (open_type, open) = scrape(port, process, Some(PROMETHEUS_ACCEPT));
    let (text_type, text) = scrape(port, process, None);
    assert!(
        open_type.starts_with("application/openmetrics-text; version=1.0.0"),
        "{open_type}"
    );
    assert!(open.ends_with("# EOF\n"), "{open}");
    assert!(
        text_type.starts_with("text/plain; version=0.0.4"),
        "{text_type}"
    );
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );
    let (mut a, mut b) = (Scrape::new(), Scrape::new());
    samples(&open, &mut a);
    samples(&text, &mut b);
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{binary}"
    );
    // The commit and profile are the built binary's (this test is built in
    // the same cargo run, so it has the same).
    let build = format!(
        "mesh_build_info{{binary=\"{binary}\",version=\"{}\",commit=\"{}\",profile=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        mesh_runtime::endpoints::BuildInfo::COMMIT,
        mesh_runtime::endpoints::BuildInfo::PROFILE
    );
    assert!(
        text.contains(&build) && open.contains(&build),
        "{binary}: {text}"
    );
    assert!(text.contains("# TYPE mesh_build_info gauge"), "{text}");
    if let Ok(promtool) = which("promtool") {
        let mut lint = Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        lint.stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = lint.wait_with_output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.trim().is_empty(),
            "promtool check metrics on {binary}'s 0.0.4 text:\n{said}\n{text}"
        );
    }
    samples(&text, into);
}

/// The samples of a Prometheus or OpenMetrics text.
fn samples(text: &str, into: &mut Scrape) {
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let labels = into.entry(line[..end].to_owned()).or_default();
        if line[end..].starts_with('{') {
            let close = line.find('}').expect("a label set closes");
            for pair in line[end + 1..close].split(',').filter(|p| !p.is_empty()) {
                let (name, value) = pair.split_once('=').expect("label=value");
                labels.insert((name.to_owned(), value.trim_matches('"').to_owned()));
            }
        }
    }
}

/// A metric selector in a query: its name and its `label="value"` matchers.
#[derive(Debug)]
struct Selector {
    name: String,
    equal: Vec<(String, String)>,
}

/// Keywords and aggregation operators (which may take `by (…)` before their argument).
const KEYWORDS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "by",
    "without",
    "or",
    "and",
    "unless",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
];

/// The metric selectors of a PromQL expression: identifiers that are not
/// functions (followed by `(`), aggregations, keywords, label names (in
/// `{…}`, `by (…)`, `without (…)`), durations or numbers.
fn selectors(expr: &str) -> Vec<Selector> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out: Vec<Selector> = Vec::new();
    let mut i = 0;
    let mut grouping = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            i += 1;
        } else if c == '[' {
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
        } else if c == '{' {
            let start = i + 1;
            while i < chars.len() && chars[i] != '}' {
                i += 1;
            }
            let inside: String = chars[start..i].iter().collect();
            if let Some(last) = out.last_mut() {
                for matcher in inside.split(',') {
                    if let Some((label, value)) = matcher.split_once('=') {
                        if !label.ends_with(['!', '=']) && !value.starts_with('~') {
                            last.equal.push((
                                label.trim().to_owned(),
                                value.trim().trim_matches('"').to_owned(),
                            ));
                        }
                    }
                }
            }
            i += 1;
        } else if c == ')' {
            grouping = false;
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next] == ' ' {
                next += 1;
            }
            let called = next < chars.len() && chars[next] == '(';
            if word == "by" || word == "without" {
                grouping = true;
            } else if !called && !grouping && !KEYWORDS.contains(&word.as_str()) {
                out.push(Selector {
                    name: word,
                    equal: Vec::new(),
                });
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The `expr:` of every rule in the rules file.
fn rule_exprs(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("expr:"))
        .map(|expr| expr.trim().to_owned())
        .collect()
}

/// Every `"expr"` string in the dashboard.
fn dashboard_exprs(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("expr", Value::String(expr)) => into.push(expr.clone()),
                    _ => dashboard_exprs(value, into),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| dashboard_exprs(v, into)),
        _ => {}
    }
}

/// The metric names of the tables in the section Metrics of
/// docs/contracts/metrics.md (each row's first cell, before any `{`).
fn documented_metrics(contract: &str) -> Vec<String> {
    let start = contract
        .find("\n## Metrics\n")
        .expect("docs/contracts/metrics.md has its section Metrics")
        + 1;
    let section = &contract[start..];
    let end = section[1..]
        .find("\n## ")
        .map_or(section.len(), |at| at + 1);
    section[..end]
        .lines()
        .filter(|line| line.starts_with('|'))
        .filter_map(|line| line.split('|').nth(1))
        .filter_map(|cell| cell.trim().strip_prefix('`'))
        .map(|name| name.split(['{', '`']).next().unwrap_or_default().to_owned())
        .filter(|name| name.starts_with("mesh_"))
        .collect()
}

/// Whether the sample name `sample` (as a 0.0.4 scrape has it) belongs to
/// the documented metric `name`: itself, or a histogram's series.
fn sample_of(sample: &str, name: &str) -> bool {
    sample == name
        || sample
            .strip_prefix(name)
            .is_some_and(|rest| ["_bucket", "_sum", "_count"].contains(&rest))
}

/// Starts serve, a provider and a grant agent with `--metrics-listen` and
/// scrapes each both ways.
fn scrape_the_binaries(dir: &Path) -> Scrape {
    let nats = NatsServer::start();
    let store = PgCluster::start();
    let backend = PgCluster::start();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(store.create_database("mesh_store"));
    // identity@id-1 never runs: status names it never heard from.
    let declaration = json!({"modules": [
        {"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]},
        {"module": "identity", "machine": "id-1", "provides": ["oidc-client"]},
        {"module": "forge", "machine": "app-1",
         "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]},
    ]});
    std::fs::write(dir.join("declaration.json"), declaration.to_string()).unwrap();
    std::fs::write(dir.join("forge.secret"), "minted-forge-monitoring").unwrap();
    let contributions = json!({
        "provider": {"module": "postgres", "machine": "db-1"},
        "consumers": [{"consumer": "forge", "machine": "app-1",
                       "provision": "postgres-database", "secret_file": "forge.secret"}]
    });
    std::fs::write(dir.join("contributions.json"), contributions.to_string()).unwrap();

    let (serve_port, provider_port) = (free_port(), free_port());
    // `name` (the controller or the console) on the store and declaration.
    let on_store = |name: &str| {
        let mut command = Command::new(binary(name));
        command
            .arg("--database")
            .arg(format!(
                "postgres://postgres@127.0.0.1:{}/mesh_store",
                store.port()
            ))
            .arg("--database-password-file")
            .arg(store.superuser_password_file())
            .arg("--declaration")
            .arg(dir.join("declaration.json"));
        command
    };
    let controller = || on_store("mesh-controller");
    let mut serve = controller();
    serve
        .args(["--nats", &nats.url(), "serve", "--status-every", "200ms"])
        .arg("--metrics-listen")
        .arg(format!("127.0.0.1:{serve_port}"));
    let serve = Process::spawn("controller", serve, dir.join("controller.log"));
    let mut provider = Command::new(binary("mesh-postgres"));
    provider
        .arg("--admin-url")
        .arg(backend.admin_url())
        .arg("--admin-password-file")
        .arg(backend.superuser_password_file())
        .arg("--contributions")
        .arg(dir.join("contributions.json"))
        .args([
            "--nats",
            &nats.url(),
            "--pass-every",
            "250ms",
            "--metrics-listen",
        ])
        .arg(format!("127.0.0.1:{provider_port}"));
    let provider = Process::spawn("provider", provider, dir.join("provider.log"));
    let grants_port = free_port();
    std::fs::write(
        dir.join("grants.json"),
        r#"{"machine":"app-1","grants":[]}"#,
    )
    .unwrap();
    let mut grants = Command::new(binary("mesh-grants"));
    grants
        .arg("--grants")
        .arg(dir.join("grants.json"))
        .args(["--nats", &nats.url(), "--metrics-listen"])
        .arg(format!("127.0.0.1:{grants_port}"));
    let grants = Process::spawn("grants", grants, dir.join("grants.log"));
    // mesh-provide over a hook in sh that makes nothing and answers every
    // call at once (its own metrics appear with its first calls).
    let hook = dir.join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\necho \"$1\" >> {}\ncase \"$1\" in held) echo '{{\"held\":[]}}' ;; *) echo '{{}}' ;; esac\n",
            dir.join("hook.calls").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let hook_contributions = json!({
        "provider": {"module": "redis", "machine": "cache-1"},
        "consumers": [{"consumer": "forge", "machine": "app-1",
                       "provision": "redis-acl", "secret_file": "forge.secret"}]
    });
    std::fs::write(dir.join("hook.json"), hook_contributions.to_string()).unwrap();
    let hook_port = free_port();
    let mut provide = Command::new(binary("mesh-provide"));
    provide
        .arg("--hook")
        .arg(&hook)
        .arg("--contributions")
        .arg(dir.join("hook.json"))
        .args([
            "--nats",
            &nats.url(),
            "--pass-every",
            "250ms",
            "--metrics-listen",
        ])
        .arg(format!("127.0.0.1:{hook_port}"));
    let provide = Process::spawn("provide", provide, dir.join("provide.log"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(dir.join("hook.calls")).is_ok_and(|c| c.contains("check")) {
        assert!(
            Instant::now() < deadline,
            "the hook was never called:\n{}",
            provide.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    status_and_metrics_agree(&controller, serve_port, &serve);
    // The console over the store serve migrated, watched.
    let console_port = free_port();
    let mut console = on_store("mesh-console");
    console
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", free_port()))
        .arg("--metrics-listen")
        .arg(format!("127.0.0.1:{console_port}"));
    let console = Process::spawn("console", console, dir.join("console.log"));
    let mut scraped = Scrape::new();
    scrape_both_ways("mesh-console", console_port, &console, &mut scraped);
    scrape_both_ways("mesh-provide", hook_port, &provide, &mut scraped);
    scrape_both_ways("mesh-grants", grants_port, &grants, &mut scraped);
    scrape_both_ways("mesh-controller", serve_port, &serve, &mut scraped);
    scrape_both_ways("mesh-postgres", provider_port, &provider, &mut scraped);
    scraped
}

/// Waits until serve's gauges name identity@id-1 never heard from and
/// every clause's count is the one `status --json` (run by the `controller`
/// command) gives at that moment (serve makes its report every
/// --status-every, so the two may be a round apart until the providers
/// are heard): not all well, that clause 1 and every other 0.
fn status_and_metrics_agree(controller: &dyn Fn() -> Command, port: u16, serve: &Process) {
    let line = "mesh_status_problems{clause=\"providers_unheard\",provider=\"identity@id-1\",\
                cause=\"never\"} 1";
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, text) = scrape(port, serve, None);
        let out = controller().args(["status", "--json"]).output().unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let unheard = report["unheard"].as_array().map_or(0, Vec::len);
        let samples: BTreeMap<&str, &str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit_once(' '))
            .collect();
        let disagree: Vec<String> = clauses_of(&report)
            .into_iter()
            .filter_map(|(clause, n)| {
                let key = format!("mesh_status_clauses{{clause=\"{clause}\"}}");
                let got = samples.get(key.as_str()).copied();
                (got != Some(n.to_string().as_str())).then(|| format!("{clause}: {got:?} for {n}"))
            })
            .collect();
        if text.lines().any(|l| l == line) && unheard == 1 && disagree.is_empty() {
            assert_eq!(report["all_well"], false, "{report:#}");
            assert_eq!(samples.get("mesh_status_all_well"), Some(&"0"), "{text}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "serve and status never agreed on identity@id-1 never heard from ({disagree:?}):\n{report:#}\n{text}\n{}",
            serve.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The names a check failed on, with why.
fn check(expr: &str, scraped: &Scrape, origin: &str, wrong: &mut Vec<String>) -> usize {
    let found = selectors(expr);
    for selector in &found {
        if selector.name == "up" {
            continue;
        }
        let Some(labels) = scraped.get(&selector.name) else {
            wrong.push(format!(
                "{origin}: {} is not exported (in {expr})",
                selector.name
            ));
            continue;
        };
        for (label, value) in &selector.equal {
            // Prometheus' own target labels, not the binaries'.
            if label == "job" || label == "instance" {
                continue;
            }
            if !labels.contains(&(label.clone(), value.clone())) {
                wrong.push(format!(
                    "{origin}: {}{{{label}=\"{value}\"}} is never exported (in {expr})",
                    selector.name
                ));
            }
        }
    }
    found.len()
}

#[test]
fn every_metric_the_kit_and_the_contract_name_is_exported_by_the_binaries_and_no_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rules = std::fs::read_to_string(root.join("deploy/prometheus/mesh.rules.yml")).unwrap();
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("deploy/grafana/mesh.json")).unwrap(),
    )
    .expect("the dashboard is JSON");
    let contract = std::fs::read_to_string(root.join("docs/contracts/metrics.md")).unwrap();
    // Grafana keys a panel by its id: two panels with one id are one.
    let ids: Vec<u64> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .map(|panel| panel["id"].as_u64().expect("a panel id"))
        .collect();
    let unique: std::collections::BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "panel ids repeated: {ids:?}");
    let mut panels = Vec::new();
    dashboard_exprs(&dashboard, &mut panels);
    let rules = rule_exprs(&rules);
    assert!(rules.len() >= 8, "{rules:?}");
    assert!(panels.len() >= 10, "{panels:?}");

    let dir = tempfile::tempdir().unwrap();
    let scraped = scrape_the_binaries(dir.path());
    let mut wrong = Vec::new();
    let mut named = 0;
    for expr in &rules {
        named += check(expr, &scraped, "mesh.rules.yml", &mut wrong);
    }
    for expr in &panels {
        named += check(expr, &scraped, "mesh.json", &mut wrong);
    }
    assert!(
        named >= rules.len() + panels.len(),
        "every query names a metric"
    );
    let table = documented_metrics(&contract);
    assert!(table.len() >= 30, "{table:?}");
    for name in &table {
        let histogram = format!("{name}_bucket");
        if !scraped.contains_key(name) && !scraped.contains_key(&histogram) {
            wrong.push(format!(
                "docs/contracts/metrics.md's tables: {name} is not exported"
            ));
        }
    }
    for sample in scraped.keys().filter(|s| s.starts_with("mesh_")) {
        if !table.iter().any(|name| sample_of(sample, name)) {
            wrong.push(format!(
                "{sample} is exported, but no table of docs/contracts/metrics.md names it"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\nexported: {:?}",
        wrong.join("\n"),
        scraped.keys().collect::<Vec<_>>()
    );

    // The checker finds what it is for.
    let mut caught = Vec::new();
    check(
        "sum(rate(mesh_nonsense_total[5m])) or mesh_repairs_total{outcome=\"lost\"}",
        &scraped,
        "self-check",
        &mut caught,
    );
    assert_eq!(caught.len(), 2, "{caught:?}");

    // promtool parses every dashboard query (as recording rules).
    if let Ok(promtool) = which("promtool") {
        let mut file = String::from("groups:\n  - name: dashboard\n    rules:\n");
        for (i, expr) in panels.iter().enumerate() {
            file.push_str(&format!(
                "      - record: mesh_dashboard_query_{i}\n        expr: {}\n",
                serde_json::to_string(expr).unwrap()
            ));
        }
        let path = dir.path().join("dashboard.rules.yml");
        std::fs::write(&path, file).unwrap();
        let out = Command::new(promtool)
            .args(["check", "rules"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool refuses a dashboard query:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        eprintln!("promtool not installed: the dashboard's queries were not parsed (scripts/test installs it)");
    }
}

/// A program on `PATH`.
fn which(program: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
        .ok_or(())
}

#[test]
fn selectors_are_told_from_functions_keywords_and_labels() {
    let found = selectors(
        "histogram_quantile(0.95, sum by (instance, le) (rate(mesh_pass_duration_seconds_bucket[5m]))) \
         or max by (job) (mesh_stream_lag_messages) > 1000 \
         or increase(mesh_repairs_total{outcome=\"braked\", job=~\"mesh.*\"}[30m]) * 60 \
         or absent(up{job=\"mesh-controller\"})",
    );
    let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mesh_pass_duration_seconds_bucket",
            "mesh_stream_lag_messages",
            "mesh_repairs_total",
            "up"
        ]
    );
    assert_eq!(
        found[2].equal,
        [("outcome".to_owned(), "braked".to_owned())]
    );
}

#[test]
fn the_contract_s_metrics_are_read_from_every_table_of_its_section_and_no_other() {
    let text = "# Metrics\n\n| `mesh_before` | x |\n\n## Metrics\n\nOne:\n\n\
                | metric | type |\n| --- | --- |\n| `mesh_a_total{kind}` | counter |\n\n\
                Two:\n\n| `mesh_b_seconds` | histogram |\n| `up` | no |\n\n\
                ## Logs\n\n| `mesh_after` | x |\n";
    assert_eq!(documented_metrics(text), ["mesh_a_total", "mesh_b_seconds"]);
    assert!(sample_of("mesh_b_seconds_bucket", "mesh_b_seconds"));
    assert!(sample_of("mesh_a_total", "mesh_a_total"));
    assert!(!sample_of("mesh_a_total_other", "mesh_a_total"));
    assert!(!sample_of("mesh_a", "mesh_a_total"));
}

/// The alerts of operating.md's alert table (its rows' first cells).
fn operating_alerts(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("| `Mesh"))
        .filter_map(|rest| rest.split('`').next())
        .map(|name| format!("Mesh{name}"))
        .collect()
}

#[test]
fn operating_md_s_alert_table_names_every_alert_of_the_rules_file_and_no_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rules = std::fs::read_to_string(root.join("deploy/prometheus/mesh.rules.yml")).unwrap();
    let operating = std::fs::read_to_string(root.join("docs/operating.md")).unwrap();
    let in_rules: BTreeSet<String> = rules
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- alert:"))
        .map(|name| name.trim().to_owned())
        .collect();
    let in_table = operating_alerts(&operating);
    assert!(in_rules.len() > 20, "the rules read: {in_rules:?}");
    let missing: Vec<_> = in_rules.difference(&in_table).collect();
    let stale: Vec<_> = in_table.difference(&in_rules).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/operating.md's alert table lacks {missing:?} and names {stale:?}, which \
         deploy/prometheus/mesh.rules.yml does not have: add or remove their rows"
    );
}

/// Every alert rule carries a `runbook_url` whose anchor is an entry of
/// docs/runbook.md, and every entry of the runbook has its one-line next
/// step (what `status --explain` prints).
#[test]
fn every_alert_has_a_runbook_entry_and_every_entry_a_next_step() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rules = std::fs::read_to_string(root.join("deploy/prometheus/mesh.rules.yml")).unwrap();
    let runbook = std::fs::read_to_string(root.join("docs/runbook.md")).unwrap();
    let entries: BTreeSet<&str> = runbook
        .lines()
        .filter_map(|l| l.trim().strip_prefix("<a id=\""))
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let mut alerts = Vec::new();
    let mut current: Option<&str> = None;
    for line in rules.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("- alert: ") {
            current = Some(name);
        }
        if let (Some(alert), Some(url)) = (current, line.strip_prefix("runbook_url: ")) {
            let anchor = url.trim_matches('\'').rsplit('#').next().unwrap_or("");
            assert!(
                entries.contains(anchor),
                "{alert}'s runbook_url names #{anchor}, which docs/runbook.md lacks"
            );
            alerts.push(alert);
            current = None;
        }
    }
    let all: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    assert!(all.len() >= 20, "the rules were read: {all:?}");
    assert_eq!(alerts, all, "every alert carries a runbook_url");
    // Each entry: its anchor, its heading, one next step on one line.
    let mut steps = 0;
    let mut open = None;
    for line in runbook.lines() {
        if line.trim().starts_with("<a id=\"") {
            assert!(open.is_none(), "{open:?} has no next step");
            open = Some(line.to_owned());
        }
        if line.starts_with("**Next step.**") {
            assert!(
                open.take().is_some(),
                "a next step outside an entry: {line}"
            );
            assert!(line.len() > "**Next step.** ".len() + 10, "{line}");
            steps += 1;
        }
    }
    assert!(open.is_none(), "{open:?} has no next step");
    assert_eq!(steps, entries.len());
}
