//! The console: `mesh-controller console` serves the mesh as web pages over
//! the controller's store (its address printed, for a person to open);
//! wiki's secret goes missing, comes back and goes missing again, and the
//! console says each change, the second failure as the `2nd time`, and
//! wiki's page holds both intervals. Each step is checked on the page the
//! console serves.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mesh_test_support::free_port;
use mesh_test_support::mesh::Options;

use super::{postgres_mesh, WITHIN};
use crate::expect;
use crate::narrate::{Demo, StoryStop};

/// `GET path` from the console on `port`: its body when it answers 200.
fn page(port: u16, path: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("{e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| format!("{e}"))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
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
fn page_says(demo: &Demo, port: u16, path: &str, texts: &[&str]) -> Result<(), StoryStop> {
    let step = format!("the console's page {path} says {texts:?}");
    demo.until(&step, WITHIN, || {
        let body = page(port, path)?;
        match texts.iter().find(|w| !body.contains(**w)) {
            None => Ok(()),
            Some(missing) => Err(format!("it does not say {missing:?}")),
        }
    })
}

/// Tells the story.
pub fn tell(demo: &mut Demo) -> Result<(), StoryStop> {
    let mesh = postgres_mesh(demo, Options::default())?;
    let port = free_port();
    let _console = mesh.start_console(port);
    demo.say(&format!(
        "mesh-controller console serves the mesh at http://127.0.0.1:{port}/ : open it, it \
         follows what happens below without a reload"
    ));
    page_says(demo, port, "/", &["all well: ", "No consumer is failing."])?;
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
        port,
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
    page_says(demo, port, "/", &["all well: ", "No consumer is failing."])?;
    demo.pause();

    demo.say("wiki's minted secret goes missing again");
    mesh.secret("wiki", None);
    demo.expect(&mesh, "status names wiki failing again", WITHIN, |s| {
        expect::failing(s, &["wiki"], "secret-unreadable")
    })?;
    page_says(demo, port, "/", &["wiki@app-1", "2nd time in 7 days"])?;
    demo.detail("the mesh page says it is the 2nd time in 7 days");
    page_says(
        demo,
        port,
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

    std::fs::write(&wiki, &minted)
        .map_err(|e| StoryStop::Cannot(format!("writing wiki's secret: {e}")))?;
    demo.expect(&mesh, "all well at the end", WITHIN, expect::all_well)?;
    demo.done();
    Ok(())
}
