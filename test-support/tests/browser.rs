//! The headless browser against a real page: a tiny axum server in the
//! test serves HTML on 127.0.0.1, whose script changes the page from a
//! server-sent event and a fetch; screenshots are kept at both widths the
//! console is read at. Without chromium and chromedriver the test says
//! `SKIPPED`, unless `MESH_REQUIRE_BROWSER` is set (CI), where it fails.

use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::sse::{Event, Sse};
use axum::response::Html;
use axum::routing::get;
use axum::Router;
use futures::stream::{self, Stream, StreamExt};
use mesh_test_support::{png_size, Browser, BROWSER_HEIGHT};

/// A bound for the whole test, so a hang fails instead of blocking.
const WHOLE: Duration = Duration::from_secs(60);

/// How long the page may take to show what its script was sent.
const LIVE: Duration = Duration::from_secs(5);

/// A screenshot of a blank viewport 1280 wide is about 8 kB (the widest
/// blank there is here); the test page's are about 20 kB at either width.
const BLANK: u64 = 12_000;

const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>browser test</title>
<style>
body { font: 16px sans-serif; margin: 0; }
header { background: #234; color: #fff; padding: 1em; }
.cards { display: flex; flex-wrap: wrap; gap: 1em; padding: 1em; }
.card { flex: 1 1 300px; border: 2px solid #c33; padding: 1em; background: #fee; }
</style></head>
<body>
<header><h1>served from the test</h1></header>
<div class="cards">
  <div class="card" id="static">static text</div>
  <div class="card" id="live">waiting for the event</div>
  <div class="card" id="fetched">waiting for the fetch</div>
</div>
<script>
new EventSource("/events").onmessage = (e) => {
  document.getElementById("live").textContent = e.data;
};
fetch("/echo").then((r) => r.text()).then((t) => {
  const done = document.createElement("p");
  done.id = "done";
  done.textContent = t;
  document.getElementById("fetched").replaceChildren(done);
});
</script>
</body></html>"#;

/// One event, then the stream stays open (as a console's would).
async fn events() -> Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>> {
    let first = stream::once(async { Ok(Event::default().data("the event arrived")) });
    Sse::new(first.chain(stream::pending()))
}

/// What the fetch is answered: the header and cookie the browser sent.
async fn echo(headers: HeaderMap) -> String {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("none")
            .to_owned()
    };
    format!(
        "fetched with x-mesh-test: {}, cookie: {}",
        get("x-mesh-test"),
        get("cookie")
    )
}

#[tokio::test]
async fn a_page_runs_its_script_and_is_kept_at_both_widths() {
    let test = "a_page_runs_its_script_and_is_kept_at_both_widths";
    let Some(mut browser) = Browser::start_or_skip(test).await else {
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route("/events", get(events))
        .route("/echo", get(echo));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    tokio::time::timeout(WHOLE, async {
        // The size below that tells a page from a blank viewport.
        let scratch = tempfile::tempdir().unwrap();
        let blank = scratch.path().join("blank.png");
        browser.screenshot(&blank).await;
        let blank_len = std::fs::metadata(&blank).unwrap().len();
        assert!(blank_len < BLANK, "a blank viewport is {blank_len} bytes");

        // A cookie is set for the page open now, so a page of the site
        // comes first (an error page has no site).
        browser.goto(&base).await;
        browser.add_cookie("mesh_test", "c00k1e").await;
        browser.set_header("x-mesh-test", "h3ader").await;
        browser.goto(&base).await;
        assert_eq!(browser.text_of("#static").await, "static text");
        browser.wait_for_text("the event arrived", LIVE).await;
        browser.wait_for_selector("#done", LIVE).await;
        assert_eq!(
            browser.text_of("#done").await,
            "fetched with x-mesh-test: h3ader, cookie: mesh_test=c00k1e"
        );
        browser.wait_for_no_text("waiting for", LIVE).await;
        let html = browser.html().await;
        assert!(html.contains(r#"<p id="done">"#), "{html}");

        for width in [1280, 390] {
            browser.set_width(width).await;
            assert_eq!(browser.viewport().await, (width, BROWSER_HEIGHT));
            let path = browser.keep_screenshot(test, "page").await;
            let png = std::fs::read(&path).unwrap();
            assert_eq!(png_size(&png), Some((width, BROWSER_HEIGHT)), "{path:?}");
            assert_eq!(
                browser.viewport().await,
                (width, BROWSER_HEIGHT),
                "set back"
            );
            assert!(
                png.len() > BLANK as usize,
                "{path:?} is {} bytes",
                png.len()
            );
        }
        // A page longer than the viewport is kept whole.
        browser
            .execute("document.body.style.minHeight = '2000px';", vec![])
            .await;
        let path = browser.keep_screenshot(test, "long").await;
        let png = std::fs::read(&path).unwrap();
        assert_eq!(png_size(&png), Some((390, 2000)), "{path:?}");
        assert_eq!(browser.viewport().await, (390, BROWSER_HEIGHT), "set back");

        // A person who asks for a dark scheme: the page sees it, and its
        // screenshots say so.
        let dark = "return window.matchMedia('(prefers-color-scheme: dark)').matches;";
        assert_eq!(browser.execute(dark, vec![]).await, false);
        browser.set_dark(true).await;
        assert_eq!(browser.execute(dark, vec![]).await, true);
        let path = browser.keep_screenshot(test, "page").await;
        assert!(path.ends_with("page-390-dark.png"), "{path:?}");
        browser.set_dark(false).await;
        assert_eq!(browser.execute(dark, vec![]).await, false);

        // axe-core finds what breaks the rules: an image without a text,
        // grey on grey, a field without a label.
        if let Some(before) = browser.axe(test).await {
            assert!(
                before.iter().all(|v| !v.is_grave()),
                "the test page: {before:?}"
            );
            browser
                .execute(
                    "document.body.insertAdjacentHTML('beforeend', \
                     '<img src=\"/echo\"><p style=\"color:#bbb;background:#ccc\">faint</p><input>');",
                    vec![],
                )
                .await;
            let found = browser.axe(test).await.unwrap();
            let ids: Vec<&str> = found.iter().filter(|v| v.is_grave()).map(|v| v.id.as_str()).collect();
            for rule in ["image-alt", "color-contrast", "label"] {
                assert!(ids.contains(&rule), "{rule} not found: {found:?}");
            }
        }
        browser.close().await;
    })
    .await
    .expect("the browser test took over a minute: chromedriver or chromium hangs");
}

#[tokio::test]
async fn a_wait_not_met_says_what_the_page_showed_and_the_browser_goes_with_the_test() {
    let test = "a_wait_not_met_says_what_the_page_showed_and_the_browser_goes_with_the_test";
    let Some(browser) = Browser::start_or_skip(test).await else {
        return;
    };
    let dir = browser.dir().to_path_buf();
    let marker = dir.display().to_string();
    assert!(
        !holding(&marker).is_empty(),
        "no process names {marker}: the check below would pass vacuously"
    );
    browser.goto("data:text/html,<p>only this</p>").await;
    // The wait panics, as a failing test does: the browser is dropped
    // while unwinding.
    let failed = tokio::spawn(async move {
        browser
            .wait_for_text("never shown", Duration::from_millis(200))
            .await
    })
    .await
    .expect_err("the wait panics");
    let message = failed.into_panic();
    let message = message
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    assert!(message.contains("never shown"), "{message}");
    assert!(message.contains("only this"), "{message}");

    let left = holding(&marker);
    assert!(left.is_empty(), "still running: {left:?}");
    assert!(!dir.exists(), "{} is left", dir.display());
}

/// The pids whose command line holds `word`.
fn holding(word: &str) -> Vec<String> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&raw).contains(word) {
            pids.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    pids
}
