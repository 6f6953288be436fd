//! The console: `mesh-console` serves the mesh as web pages over
//! the controller's store (its address printed, for a person to open);
//! wiki's secret goes missing, comes back and goes missing again, and the
//! console says each change, the second failure as the `2nd time`, and
//! wiki's page holds both intervals. Then docs is withdrawn (retiring,
//! awaiting a person's approval) and the administrator's password changed
//! behind the provider's back (a provider fault), and the console stays up
//! with every page's address printed until Ctrl-C. Each step is checked on
//! the page the console serves.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mesh_test_support::free_port;
use mesh_test_support::mesh::Options;

use super::{postgres_mesh, WITHIN};
use crate::expect;
use crate::narrate::{Demo, StoryStop};

/// The token the demo's console asks for (its file is printed, never it).
fn token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("demo-{nanos:x}-{:x}", std::process::id())
}

/// `GET path` from the console on `port` with `token`: its body when it
/// answers 200.
fn page(port: u16, token: &str, path: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("{e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| format!("{e}"))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\n\r\n"
    )
    .map_err(|e| format!("{e}"))?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|e| format!("{e}"))?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    if head.starts_with("HTTP/1.1 200") {
        Ok(body.to_owned())
    } else {
        Err(format!(
            "it answered {}",
            head.lines().next().unwrap_or("nothing")
        ))
    }
}

/// Waits until the console's page at `path` holds every one of `texts`.
fn page_says(demo: &Demo, at: &At, path: &str, texts: &[&str]) -> Result<(), StoryStop> {
    let step = format!("the console's page {path} says {texts:?}");
    demo.until(&step, WITHIN, || {
        let body = page(at.port, &at.token, path)?;
        match texts.iter().find(|w| !body.contains(**w)) {
            None => Ok(()),
            Some(missing) => Err(format!("it does not say {missing:?}")),
        }
    })
}

/// Where the console is, and the token it asks for.
struct At {
    port: u16,
    token: String,
}

/// Tells the story.
pub fn tell(demo: &mut Demo) -> Result<(), StoryStop> {
    let mesh = postgres_mesh(demo, Options::default())?;
    let port = free_port();
    let at = At {
        port,
        token: token(),
    };
    let tokens = mesh.path("console-tokens");
    std::fs::write(&tokens, format!("operator:{}\n", at.token))
        .map_err(|e| StoryStop::Cannot(format!("writing the console's token file: {e}")))?;
    let _console = mesh.start_acting_console(port, &tokens);
    demo.say(&format!(
        "mesh-console serves the mesh at http://127.0.0.1:{port}/ : open it and log in with \
         the token in {} (named operator, who may act); it follows what happens below without \
         a reload",
        tokens.display()
    ));
    page_says(demo, &at, "/", &["all well: ", "No consumer is failing."])?;
    demo.pause();

    demo.say("wiki's minted secret goes missing");
    let wiki = mesh.path("secrets").join("wiki");
    let minted = std::fs::read(&wiki)
        .map_err(|e| StoryStop::Cannot(format!("reading wiki's secret: {e}")))?;
    mesh.secret("wiki", None);
    demo.expect(&mesh, "status names wiki failing", WITHIN, |s| {
        expect::failing(s, &["wiki"], "secret-unreadable")
    })?;
    page_says(
        demo,
        &at,
        "/",
        &["not all well: 1 consumer failing", "wiki@app-1"],
    )?;
    demo.detail("the mesh page names wiki@app-1 under postgres@db-1, secret-unreadable");
    demo.pause();

    demo.say("wiki's minted secret is delivered again");
    std::fs::write(&wiki, &minted)
        .map_err(|e| StoryStop::Cannot(format!("writing wiki's secret: {e}")))?;
    demo.expect(
        &mesh,
        "all well once wiki recovers",
        WITHIN,
        expect::all_well,
    )?;
    page_says(demo, &at, "/", &["all well: ", "No consumer is failing."])?;
    demo.pause();

    demo.say("what was learnt is noted: mesh-controller note wiki@app-1 ... --by demo");
    let (code, out, err) = mesh.controller(&[
        "note",
        "wiki@app-1",
        "the secret was restored from the vault",
        "--by",
        "demo",
    ]);
    if code != 0 {
        return Err(StoryStop::Cannot(format!(
            "mesh-controller note: {out}{err}"
        )));
    }
    demo.pause();

    demo.say("wiki's minted secret goes missing again");
    mesh.secret("wiki", None);
    demo.expect(&mesh, "status names wiki failing again", WITHIN, |s| {
        expect::failing(s, &["wiki"], "secret-unreadable")
    })?;
    page_says(
        demo,
        &at,
        "/",
        &[
            "wiki@app-1",
            "2nd time in 7 days",
            "the secret was restored from the vault",
        ],
    )?;
    demo.detail("the mesh page says it is the 2nd time in 7 days, and quotes the note");
    page_says(
        demo,
        &at,
        "/consumer/wiki@app-1",
        &[
            "still failing",
            "recovered (success)",
            "failed 2 times in 30 days",
        ],
    )?;
    demo.say(&format!(
        "http://127.0.0.1:{port}/consumer/wiki@app-1 shows both intervals and today's bar"
    ));
    demo.pause();

    // A scene to look at, kept up until Ctrl-C: wiki failing for the 2nd
    // time, docs withdrawn and counting down to retire (awaiting a
    // person's approval to retire it at once), and the provider unable to
    // work as its administrator.
    demo.say("docs is withdrawn from postgres@db-1's contributions file");
    mesh.list(&["forge", "wiki"]);
    demo.expect(&mesh, "status names docs retiring", WITHIN, |s| {
        let retiring = s["retiring"]
            .as_array()
            .is_some_and(|r| r.iter().any(|e| e["consumer"] == "docs"));
        match retiring {
            true => Ok(()),
            false => Err("docs is not named retiring".to_owned()),
        }
    })?;
    demo.say("the administrator's password changes at the server, behind the provider's back");
    let changed = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StoryStop::Cannot(format!("a runtime: {e}")))?
        .block_on(async {
            let admin = mesh.backend.connect_admin().await;
            admin
                .batch_execute("ALTER ROLE postgres PASSWORD 'changed-behind-its-back'")
                .await
        });
    changed.map_err(|e| StoryStop::Cannot(format!("changing the password: {e}")))?;
    demo.expect(
        &mesh,
        "status names the provider fault",
        WITHIN,
        |s| match s["faults"].as_array().is_some_and(|f| !f.is_empty()) {
            true => Ok(()),
            false => Err("no provider fault".to_owned()),
        },
    )?;
    page_says(
        demo,
        &at,
        "/",
        &[
            "wiki@app-1",
            "docs@app-2 retiring",
            "cannot work as its administrator",
        ],
    )?;
    demo.say(
        "the console stays up for you to look at and act on (log in as operator: approve \
         docs's retirement from the consumer table, add a note on wiki's page); each page:",
    );
    for path in [
        "/",
        "/consumers",
        "/consumers?state=retiring",
        "/consumer/wiki@app-1",
        "/consumer/docs@app-2",
        "/provider/postgres@db-1",
        "/machine/app-1",
        "/machine/db-1",
    ] {
        demo.detail(&format!("http://127.0.0.1:{port}{path}"));
    }
    demo.say("press Ctrl-C to stop it (everything the demo started is stopped then)");
    while !crate::interrupt::asked() {
        std::thread::sleep(Duration::from_millis(200));
    }
    demo.done();
    Ok(())
}
