//! Acting from the console, end to end in a real Chromium: a person logs
//! in with a named token, approves a retirement that the real
//! `mesh-postgres` carries out on a real PostgreSQL, and attaches a note;
//! both are history rows with the token's name. A read-only token, a
//! bearer token and a form without its session's value act on nothing.

use std::time::Duration;

use mesh_test_support::mesh::{healthy_mesh_with, Mesh, Options};
use mesh_test_support::{free_port, Browser};
use serde_json::Value;

/// The test's name (its screenshots' folder).
const ACTING: &str = "console_acting";

const ANA: &str = "Ana-T0ken-5f1c";
const BO: &str = "Bo-T0ken-77d2";

/// Whether the role `role` may log in on the provider's backend.
fn can_login(mesh: &Mesh, role: &str) -> Option<bool> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let admin = mesh.backend.connect_admin().await;
        admin
            .query_opt(
                "SELECT rolcanlogin FROM pg_roles WHERE rolname = $1",
                &[&role],
            )
            .await
            .unwrap()
            .map(|row| row.get::<_, bool>(0))
    })
}

/// A client that keeps no cookie of its own and follows no redirect.
fn client() -> reqwest::Client {
    // reqwest is built without a TLS provider of its own.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Logs in with `token`; the session's cookie (`name=value`).
async fn session(base: &str, token: &str) -> String {
    let response = client()
        .post(format!("{base}/login"))
        .form(&[("token", token), ("next", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let set = response.headers()["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

/// Waits (at most 20 s) until `url` answers.
async fn answering(url: &str) {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while client().get(url).send().await.is_err() {
        assert!(std::time::Instant::now() < until, "{url} never answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn send(request: reqwest::RequestBuilder) -> (u16, String) {
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Keeps the page's screenshots at 1280 and 390 px, light and dark, and
/// fails on a serious or critical axe-core violation in any of them.
async fn look(browser: &mut Browser, name: &str) {
    let mut grave = Vec::new();
    for (width, dark) in [(1280, false), (390, false), (1280, true), (390, true)] {
        browser.set_width(width).await;
        browser.set_dark(dark).await;
        browser.keep_screenshot(ACTING, name).await;
        let found = browser.axe(ACTING).await.unwrap_or_default();
        grave.extend(
            found
                .into_iter()
                .filter(|v| v.is_grave())
                .map(|v| format!("{name} {width} px dark={dark}: {v:?}")),
        );
    }
    browser.set_width(1280).await;
    browser.set_dark(false).await;
    assert!(grave.is_empty(), "axe-core:\n{}", grave.join("\n"));
}

#[test]
fn in_a_browser_an_approval_retires_on_the_real_provider_and_a_note_is_kept_both_with_a_name() {
    // One runtime for the whole test: the browser's connection lives on it.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(mut browser) = rt.block_on(Browser::start_or_skip(ACTING)) else {
        return;
    };
    let mesh = healthy_mesh_with(Options::default());
    let tokens = mesh.path("console-tokens");
    std::fs::write(&tokens, format!("ana:{ANA}\nbo:{BO}:read-only\n")).unwrap();
    let port = free_port();
    let _console = mesh.start_acting_console(port, &tokens);
    let base = format!("http://127.0.0.1:{port}");
    // docs withdrawn from the provider's contributions: retiring, an hour
    // to go (--retire-after 1h), awaiting a person's approval.
    mesh.list(&["forge", "wiki"]);
    mesh.wait_status("docs retiring", |s| {
        s["retiring"].as_array().is_some_and(|r| !r.is_empty())
    });
    assert_eq!(can_login(&mesh, "docs"), Some(true));

    rt.block_on(async {
        // Asked for the retiring consumers, logged in, and back there.
        let asked = format!("{base}/consumers?state=retiring");
        answering(&format!("{base}/login")).await;
        browser.goto(&asked).await;
        browser
            .wait_for_text("This console needs its token", Duration::from_secs(5))
            .await;
        browser
            .execute(
                "document.getElementById('token').value = arguments[0]; \
                 document.querySelector('main form').submit(); return true;",
                vec![serde_json::json!(ANA)],
            )
            .await;
        browser
            .wait_for_text("approve retiring…", Duration::from_secs(5))
            .await;
        look(&mut browser, "consumers-retiring").await;
        assert_eq!(
            browser.current_url().await,
            asked,
            "back at the page asked for"
        );
        assert!(
            browser.text().await.contains("ana"),
            "the bar names who is logged in"
        );

        // The confirmation names what will happen; its button does it.
        browser
            .execute(
                "document.querySelector('a.act').click(); return true;",
                vec![],
            )
            .await;
        browser
            .wait_for_text("postgres@db-1 retires docs now", Duration::from_secs(5))
            .await;
        look(&mut browser, "confirm").await;
        browser
            .execute(
                "document.querySelector('form.act button').click(); return true;",
                vec![],
            )
            .await;
        browser
            .wait_for_text(
                "Recorded in history: approve by ana.",
                Duration::from_secs(15),
            )
            .await;
        let answer = browser.text().await;
        assert!(answer.contains("docs retired"), "{answer}");
        assert!(answer.contains("done by postgres@db-1"), "{answer}");
        look(&mut browser, "answer").await;
    });
    assert_eq!(
        can_login(&mesh, "docs"),
        Some(false),
        "retired on the real provider: NOLOGIN"
    );
    assert_eq!(
        can_login(&mesh, "forge"),
        Some(true),
        "the others untouched"
    );
    let actions = mesh.history_entries(&[], "action");
    assert_eq!(actions.len(), 1, "{actions:#?}");
    let action = &actions[0];
    assert_eq!(
        (
            &action["by"],
            &action["reason"],
            &action["done"],
            &action["consumer"]
        ),
        (
            &Value::from("ana"),
            &Value::from("approve"),
            &Value::from(true),
            &Value::from("docs")
        ),
        "{action:#}"
    );
    let (code, out, _) = mesh.controller(&["history"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("docs from postgres@db-1: retiring approved by ana"),
        "history says who: {out}"
    );

    rt.block_on(async {
        // A note from the consumer's page, kept under ana's name.
        browser.goto(&format!("{base}/consumer/forge@app-1")).await;
        browser
            .wait_for_text("add a note…", Duration::from_secs(5))
            .await;
        browser
            .execute(
                "document.querySelector('p.act a').click(); return true;",
                vec![],
            )
            .await;
        browser
            .wait_for_text("keep the note", Duration::from_secs(5))
            .await;
        look(&mut browser, "note").await;
        browser
            .execute(
                "document.getElementById('note').value = arguments[0]; \
                 document.querySelector('form.act').submit(); return true;",
                vec![serde_json::json!("admin password reset from the vault")],
            )
            .await;
        browser
            .wait_for_text("note by ana", Duration::from_secs(10))
            .await;
        assert!(browser
            .current_url()
            .await
            .ends_with("/consumer/forge@app-1"));

        // An acknowledgement: who is on it, why, until when; no verdict changes.
        let before = mesh.controller(&["status"]).1;
        browser
            .execute(
                "[...document.querySelectorAll('p.act a')].find(a => a.textContent.startsWith('acknowledge')).click(); return true;",
                vec![],
            )
            .await;
        browser.wait_for_text("It changes no verdict", Duration::from_secs(5)).await;
        look(&mut browser, "acknowledge").await;
        browser
            .execute(
                "document.getElementById('reason').value = arguments[0]; \
                 document.getElementById('for').value = '1h'; \
                 document.querySelector('form.act').submit(); return true;",
                vec![serde_json::json!("restoring the role from the backup")],
            )
            .await;
        browser
            .wait_for_text(
                "being worked on: \"restoring the role from the backup\" — ana, until in ",
                Duration::from_secs(10),
            )
            .await;
        look(&mut browser, "consumer-acknowledged").await;
        assert_eq!(mesh.controller(&["status"]).1, before, "status says the same");

        // bo may only look; a bearer token and a form without its
        // session's value act on nothing.
        let bo = session(&base, BO).await;
        let (code, text) = send(
            client()
                .get(format!(
                    "{base}/act/note?consumer=forge@app-1&provider=postgres@db-1"
                ))
                .header("cookie", &bo),
        )
        .await;
        assert_eq!(code, 403, "{text}");
        assert!(text.contains("bo&#39;s token may only look"), "{text}");
        let ana = session(&base, ANA).await;
        let form = [("provider", "postgres@db-1"), ("consumer", "wiki")];
        let (code, text) = send(
            client()
                .post(format!("{base}/act/approve"))
                .header("cookie", &ana)
                .form(&form),
        )
        .await;
        assert_eq!(code, 403, "no form value: {text}");
        assert!(text.contains("form refused"), "{text}");
        let (code, text) = send(
            client()
                .post(format!("{base}/act/approve"))
                .bearer_auth(ANA)
                .form(&form),
        )
        .await;
        assert_eq!(code, 403, "a bearer token: {text}");

        // The declaration still requires docs: the console deletes it not,
        // with its session's own value and all; its confirmation offers no
        // button.
        let (code, page) = send(
            client()
                .get(format!("{base}/act/approve?provider=postgres@db-1&consumer=docs&delete=1"))
                .header("cookie", &ana),
        )
        .await;
        assert_eq!(code, 200, "{page}");
        assert!(page.contains("still requires docs from postgres@db-1 (docs@app-2)"), "{page}");
        assert!(!page.contains("action=\"/act/approve\""), "no button: {page}");
        let csrf = page
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the session's value, in the bar's log-out form")
            .to_owned();
        let delete = [
            ("provider", "postgres@db-1"),
            ("consumer", "docs"),
            ("delete", "1"),
            ("csrf", csrf.as_str()),
        ];
        let (code, text) = send(
            client()
                .post(format!("{base}/act/approve"))
                .header("cookie", &ana)
                .form(&delete),
        )
        .await;
        assert_eq!(code, 409, "{text}");
        assert!(text.contains("Nothing was sent"), "{text}");
        browser.close().await;
    });
    let notes = mesh.history_entries(&[], "note");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(
        (&notes[0]["by"], &notes[0]["detail"]),
        (
            &Value::from("ana"),
            &Value::from("admin password reset from the vault")
        )
    );
    let actions = mesh.history_entries(&[], "action");
    assert_eq!(
        actions.len(),
        2,
        "the approval and the acknowledgement: {actions:#?}"
    );
    let ack = actions
        .iter()
        .find(|a| a["reason"] == "acknowledge")
        .expect("the acknowledgement");
    assert_eq!(
        (&ack["by"], &ack["consumer"], &ack["consumer_machine"]),
        (
            &Value::from("ana"),
            &Value::from("forge"),
            &Value::from("app-1")
        )
    );
    assert!(ack["until"].is_string(), "{ack:#}");
    assert_eq!(can_login(&mesh, "wiki"), Some(true));
    assert_eq!(
        can_login(&mesh, "docs"),
        Some(false),
        "retired, not deleted"
    );
}
