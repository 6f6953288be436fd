//! A private headless Chromium driven over WebDriver, for the tests of the
//! web console: pages as a person's browser renders them, JavaScript and
//! server-sent events included, and screenshots a person can look at.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::{is_root, read_lossy, tail};

mod axe;
mod launch;
mod screenshot;

pub use axe::AxeViolation;
pub use launch::BrowserMissing;
pub use screenshot::{png_size, screenshots_dir};

use launch::{binaries, capabilities, spawn_driver, sweep, SessionPost};

/// How often the `wait_for_*` helpers look at the page again.
const POLL: Duration = Duration::from_millis(25);

/// The viewport's height when a test sets only its width.
pub const BROWSER_HEIGHT: u32 = 900;

/// The environment variable that turns a missing browser from `SKIPPED`
/// into a failure (set in `.ci/run`).
pub const REQUIRE_BROWSER: &str = "MESH_REQUIRE_BROWSER";

/// A headless Chromium (Debian `chromium`) in a WebDriver session of its own
/// `chromedriver` (Debian `chromium-driver`), listening on a free port of
/// 127.0.0.1.
///
/// Chromium runs with `--headless=new`, `--disable-gpu`, `--no-sandbox`
/// when root, a private profile (`--user-data-dir`) in a temp dir, and
/// nothing resolving but `127.0.0.1` and `localhost`
/// (`--host-resolver-rules`): it reaches `http://127.0.0.1:PORT` and no
/// other host, so a page that loads from elsewhere shows it. Chromium's
/// settings, caches and crash reports (`XDG_CONFIG_HOME`, `XDG_CACHE_HOME`)
/// go to the temp dir as well. Dropping the browser kills chromedriver's
/// process group (chromium with it), then any process still naming the temp
/// dir (chromium's crash handlers leave the group), and removes the dir.
///
/// Every method panics with what it was doing when the browser fails: these
/// are tests. The `wait_for_*` helpers poll the page every 25 ms on the wall
/// clock (the browser runs in real time, whatever tokio's clock does).
///
/// # Requests and credentials
/// Cookies go through WebDriver ([`add_cookie`](Self::add_cookie)).
/// WebDriver has no command for request headers; Chromium's DevTools
/// protocol has one, which chromedriver passes on:
/// [`set_header`](Self::set_header) uses it (`Network.setExtraHTTPHeaders`).
///
/// ```no_run
/// # async fn page() {
/// use std::time::Duration;
/// let Some(mut browser) = mesh_test_support::Browser::start_or_skip("console_shows_the_mesh").await
/// else {
///     return; // said SKIPPED
/// };
/// browser.set_width(390).await;
/// browser.goto("http://127.0.0.1:8080/").await;
/// browser.wait_for_text("all consumers ready", Duration::from_secs(2)).await;
/// let png = browser.keep_screenshot("console_shows_the_mesh", "mesh").await;
/// println!("{}", png.display());
/// # }
/// ```
pub struct Browser {
    client: Option<Client>,
    driver: Option<Child>,
    dir: TempDir,
    /// The viewport set last, in CSS pixels.
    size: (u32, u32),
    /// Whether pages are shown as to a person who asks for a dark scheme.
    dark: bool,
}

impl Browser {
    /// Starts chromedriver and opens a session in a new headless Chromium,
    /// [`BROWSER_HEIGHT`] high and 1280 wide (its viewport, in CSS pixels).
    ///
    /// # Errors
    /// [`BrowserMissing`] when chromium or chromedriver is not installed.
    ///
    /// # Panics
    /// When chromedriver does not start within 30 s, or refuses the session
    /// (with the tail of its log).
    pub async fn start() -> Result<Browser, BrowserMissing> {
        let (chromium, driver) = binaries()?;
        let dir = crate::scratch::private_dir("browser");
        let profile = dir.path().join("profile");
        std::fs::create_dir(&profile).expect("creating the browser's profile folder");
        let mut browser = Browser {
            client: None,
            driver: None,
            dir,
            size: (0, 0),
            dark: false,
        };
        let Some((child, port)) = spawn_driver(&driver, browser.dir.path(), &browser.log_path())
        else {
            browser.fail("chromedriver did not start")
        };
        browser.driver = Some(child);
        let url = format!("http://127.0.0.1:{port}");
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities(&chromium, &profile, is_root()))
            .connect(&url)
            .await
            .unwrap_or_else(|err| browser.fail(&format!("chromedriver refused a session: {err}")));
        browser.client = Some(client);
        browser.set_viewport(1280, BROWSER_HEIGHT).await;
        Ok(browser)
    }

    /// [`start`](Self::start), or `None` after printing `SKIPPED {test}:
    /// why` when the browser is not installed.
    ///
    /// # Panics
    /// When it is not installed and [`REQUIRE_BROWSER`] is set (CI), and as
    /// [`start`](Self::start) does.
    pub async fn start_or_skip(test: &str) -> Option<Browser> {
        match Browser::start().await {
            Ok(browser) => Some(browser),
            Err(missing) => {
                assert!(
                    std::env::var_os(REQUIRE_BROWSER).is_none(),
                    "{missing}, and {REQUIRE_BROWSER} is set: the browser tests must run here"
                );
                eprintln!("SKIPPED {test}: {missing}");
                None
            }
        }
    }

    /// The WebDriver session, for what the helpers here do not cover
    /// (clicks, forms, keys).
    pub fn client(&self) -> &Client {
        self.client.as_ref().expect("the browser's session is open")
    }

    /// Opens `url` and waits until it has loaded.
    pub async fn goto(&self, url: &str) {
        self.client()
            .goto(url)
            .await
            .unwrap_or_else(|err| panic!("browser: opening {url}: {err}"));
    }

    /// Sets the viewport (what a page lays out in, and what a screenshot
    /// shows) to `width` × [`BROWSER_HEIGHT`] CSS pixels.
    pub async fn set_width(&mut self, width: u32) {
        self.set_viewport(width, BROWSER_HEIGHT).await;
    }

    /// Sets the viewport to `width` × `height` CSS pixels, at one device
    /// pixel a CSS pixel (a desktop page, not a phone's: no touch, the
    /// `<meta name=viewport>` not applied). It is Chromium's device metrics
    /// override (DevTools `Emulation.setDeviceMetricsOverride`), which holds
    /// across pages and, unlike resizing the window, takes effect at once
    /// and exactly: a screenshot is then `width` pixels wide.
    ///
    /// # Panics
    /// When the page does not see the size within 5 s.
    pub async fn set_viewport(&mut self, width: u32, height: u32) {
        self.devtools(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )
        .await;
        let started = Instant::now();
        while self.viewport().await != (width, height) {
            if started.elapsed() >= Duration::from_secs(5) {
                let got = self.viewport().await;
                panic!("browser: the viewport stays {got:?}, not {width}×{height}");
            }
            tokio::time::sleep(POLL).await;
        }
        self.size = (width, height);
    }

    /// Shows pages as to a person whose system asks for a dark scheme
    /// (`prefers-color-scheme: dark`), or a light one: DevTools
    /// `Emulation.setEmulatedMedia`, which holds across pages. Screenshots
    /// kept from then on are named `…-dark`.
    pub async fn set_dark(&mut self, dark: bool) {
        let scheme = if dark { "dark" } else { "light" };
        self.devtools(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
        )
        .await;
        self.dark = dark;
    }

    /// The viewport's width set last ([`set_width`](Self::set_width)).
    pub fn width(&self) -> u32 {
        self.size.0
    }

    /// The viewport's size in CSS pixels, as the page sees it.
    pub async fn viewport(&self) -> (u32, u32) {
        let size = self
            .execute("return [window.innerWidth, window.innerHeight];", vec![])
            .await;
        let side = |i: usize| {
            size[i]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or_else(|| panic!("browser: the viewport's size is not numbers: {size}"))
        };
        (side(0), side(1))
    }

    /// Runs `script` (a function body: `return` gives its value) with
    /// `args` as `arguments`, and returns its value.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        self.client()
            .execute(script, args)
            .await
            .unwrap_or_else(|err| panic!("browser: running a script: {err}"))
    }

    /// The page's visible text (`document.body.innerText`), "" before a body.
    pub async fn text(&self) -> String {
        let text = self
            .execute(
                "return document.body ? document.body.innerText : '';",
                vec![],
            )
            .await;
        text.as_str().unwrap_or_default().to_owned()
    }

    /// The page's HTML as it is now (`document.documentElement.outerHTML`:
    /// scripts' changes included), for checks that no secret is in the DOM.
    pub async fn html(&self) -> String {
        let html = self
            .execute("return document.documentElement.outerHTML;", vec![])
            .await;
        html.as_str().unwrap_or_default().to_owned()
    }

    /// The visible text of the first element matching `css`.
    ///
    /// # Panics
    /// When none matches.
    pub async fn text_of(&self, css: &str) -> String {
        let element = self
            .client()
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|err| panic!("browser: no element matches {css:?}: {err}"));
        element
            .text()
            .await
            .unwrap_or_else(|err| panic!("browser: reading the text of {css:?}: {err}"))
    }

    /// Waits until an element matches `css`; returns how long it took.
    ///
    /// # Panics
    /// When none does within `timeout` (with the page's text).
    pub async fn wait_for_selector(&self, css: &str, timeout: Duration) -> Duration {
        let script = "return document.querySelector(arguments[0]) !== null;";
        let args = vec![json!(css)];
        self.wait(&format!("an element matching {css:?}"), timeout, || {
            self.execute(script, args.clone())
        })
        .await
    }

    /// Waits until the page's visible text holds `text`; returns how long
    /// it took.
    ///
    /// # Panics
    /// When it does not within `timeout` (with the page's text).
    pub async fn wait_for_text(&self, text: &str, timeout: Duration) -> Duration {
        self.wait(&format!("the text {text:?}"), timeout, || {
            self.contains(text, true)
        })
        .await
    }

    /// Waits until the page's visible text no longer holds `text`; returns
    /// how long it took.
    ///
    /// # Panics
    /// When it still does after `timeout` (with the page's text).
    pub async fn wait_for_no_text(&self, text: &str, timeout: Duration) -> Duration {
        self.wait(&format!("the text {text:?} to go"), timeout, || {
            self.contains(text, false)
        })
        .await
    }

    /// `true` as JSON when the page's text holding `text` is `want`.
    async fn contains(&self, text: &str, want: bool) -> Value {
        let script = "return (document.body ? document.body.innerText : '').includes(arguments[0]) === arguments[1];";
        self.execute(script, vec![json!(text), json!(want)]).await
    }

    /// Polls `check` every [`POLL`] until it gives `true`, at most `timeout`.
    async fn wait<F, Fut>(&self, what: &str, timeout: Duration, mut check: F) -> Duration
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Value>,
    {
        let started = Instant::now();
        loop {
            if check().await == Value::Bool(true) {
                return started.elapsed();
            }
            if started.elapsed() >= timeout {
                let text = self.text().await;
                panic!(
                    "browser: no {what} within {timeout:?} on {}; the page says:\n{}",
                    self.current_url().await,
                    tail(&text, 40)
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The address of the page open now.
    pub async fn current_url(&self) -> String {
        self.client()
            .current_url()
            .await
            .map(|url| url.to_string())
            .unwrap_or_else(|err| panic!("browser: reading the current address: {err}"))
    }

    /// Writes a screenshot of the viewport to `path` (a PNG as wide as
    /// [`width`](Self::width)), making its folder when missing.
    pub async fn screenshot(&self, path: &Path) {
        let png = self
            .client()
            .screenshot()
            .await
            .unwrap_or_else(|err| panic!("browser: taking a screenshot: {err}"));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|err| panic!("creating {}: {err}", parent.display()));
        }
        std::fs::write(path, png).unwrap_or_else(|err| panic!("writing {}: {err}", path.display()));
    }

    /// Keeps a screenshot of the whole page where a person can look at it:
    /// `target/screenshots/{test}/{name}-{width}.png`, `…-dark.png` in the
    /// dark scheme (see
    /// [`screenshots_dir`]); prints and returns its path. The viewport is
    /// made as high as the page for the picture (at least as high as set),
    /// then set back: the PNG is [`width`](Self::width) wide and as long as
    /// the page.
    pub async fn keep_screenshot(&mut self, test: &str, name: &str) -> PathBuf {
        let scheme = if self.dark { "-dark" } else { "" };
        let path = screenshots_dir(test).join(format!("{name}-{}{scheme}.png", self.width()));
        let (width, height) = self.size;
        let page = self
            .execute("return document.documentElement.scrollHeight;", vec![])
            .await;
        let page = page
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(height);
        if page > height {
            self.set_viewport(width, page).await;
        }
        self.screenshot(&path).await;
        if page > height {
            self.set_viewport(width, height).await;
        }
        println!("screenshot: {}", path.display());
        path
    }

    /// Sets a cookie for the site of the page open now, with path `/`,
    /// HttpOnly: WebDriver sets cookies only for the current document's
    /// site, so [`goto`](Self::goto) a page there first (a page that loaded:
    /// an error page has no site, and the cookie is refused as "invalid
    /// cookie domain").
    pub async fn add_cookie(&self, name: &str, value: &str) {
        // fantoccini's own add_cookie sends `null` for the fields left
        // out, which chromedriver refuses: the WebDriver command as such.
        let cookie =
            json!({ "cookie": { "name": name, "value": value, "path": "/", "httpOnly": true } });
        self.client()
            .issue_cmd(SessionPost {
                path: "cookie",
                body: cookie,
            })
            .await
            .unwrap_or_else(|err| panic!("browser: setting the cookie {name}: {err}"));
    }

    /// Sends `name: value` with every request the browser makes from now
    /// on (pages, fetches, event streams), through Chromium's DevTools
    /// protocol (`Network.setExtraHTTPHeaders`): WebDriver itself has no
    /// such command. A later call replaces the header set before.
    pub async fn set_header(&self, name: &str, value: &str) {
        self.devtools("Network.enable", json!({})).await;
        self.devtools(
            "Network.setExtraHTTPHeaders",
            json!({ "headers": { name: value } }),
        )
        .await;
    }

    /// Runs a DevTools protocol command through chromedriver
    /// (`POST /session/{id}/goog/cdp/execute`).
    async fn devtools(&self, cmd: &'static str, params: Value) -> Value {
        self.client()
            .issue_cmd(SessionPost {
                path: "goog/cdp/execute",
                body: json!({ "cmd": cmd, "params": params }),
            })
            .await
            .unwrap_or_else(|err| panic!("browser: the DevTools command {cmd}: {err}"))
    }

    /// Ends the session (chromium closes), then drops the rest.
    pub async fn close(mut self) {
        if let Some(client) = self.client.take() {
            let _ = client.close().await;
        }
    }

    /// The folder of chromedriver's log and chromium's profile.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// chromedriver's log.
    pub fn log(&self) -> String {
        read_lossy(&self.log_path())
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("chromedriver.log")
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "{what}; the tail of its log ({}):\n{}",
            self.log_path().display(),
            tail(&self.log(), 30)
        )
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The session's own task ends with the client; chromium and its
        // helpers are chromedriver's children, in its process group.
        self.client.take();
        if let Some(mut driver) = self.driver.take() {
            let group = rustix::process::Pid::from_child(&driver);
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = driver.wait();
        }
        // Chromium's crash handlers leave the group (a session of their
        // own): every process naming the temp dir goes before it is removed.
        sweep(&self.dir.path().display().to_string());
    }
}
