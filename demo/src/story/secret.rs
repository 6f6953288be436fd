//! The main story: wiki's minted secret goes missing, so the PostgreSQL
//! provider keeps failing wiki; `status` goes from all well to naming it,
//! `node show` names it on both machines, and status is all well again
//! once the secret is back. Then the provider is killed: a provider that is
//! down says nothing, and status says it is not heard from (instead of all
//! well) until it is started again. Last the controller is killed: status
//! says the controller follows nothing, and blames no provider for it.

use mesh_test_support::mesh::{Options, FAILING_AFTER};

use super::{postgres_mesh, ALIVE_EVERY, WITHIN};
use crate::expect;
use crate::narrate::{Demo, StoryStop};

/// Tells the story.
pub fn tell(demo: &mut Demo) -> Result<(), StoryStop> {
    let mut mesh = postgres_mesh(demo, Options::default())?;
    demo.show(&mesh, &["status"], "all three consumers served")?;
    demo.pause();

    demo.say("wiki's minted secret goes missing");
    let wiki = mesh.path("secrets").join("wiki");
    let minted = std::fs::read(&wiki)
        .map_err(|e| StoryStop::Cannot(format!("reading wiki's secret: {e}")))?;
    mesh.secret("wiki", None);
    demo.expect(&mesh, "status names wiki failing", WITHIN, |s| {
        expect::failing(s, &["wiki"], "secret-unreadable")
    })?;
    let said = demo.show(
        &mesh,
        &["status"],
        &format!("about {FAILING_AFTER:?} later the provider says it keeps failing wiki"),
    )?;
    demo.check(
        &mesh,
        "status says one consumer failing",
        expect::opens_with(&said, "not all well: 1 consumer failing"),
    )?;
    demo.pause();
    for (machine, whose) in [
        ("db-1", "the provider's machine"),
        ("app-1", "the consumer's machine"),
    ] {
        let node = demo.json(&mesh, &["node", "show", machine])?;
        demo.check(
            &mesh,
            &format!("node show {machine} names wiki failing"),
            expect::failing(&node, &["wiki"], "secret-unreadable"),
        )?;
        demo.show(&mesh, &["node", "show", machine], whose)?;
        demo.pause();
    }
    demo.say("wiki's minted secret is delivered again");
    std::fs::write(&wiki, minted)
        .map_err(|e| StoryStop::Cannot(format!("writing wiki's secret: {e}")))?;
    demo.expect(
        &mesh,
        "all well again once wiki recovers",
        WITHIN,
        expect::all_well,
    )?;
    demo.show(&mesh, &["status"], "recovered: all well again")?;
    demo.pause();

    demo.say("the provider is killed (SIGKILL): it says nothing more");
    mesh.kill_provider();
    demo.expect(
        &mesh,
        "status names the killed provider not heard from",
        WITHIN,
        |s| expect::unheard(s, &["postgres@db-1"]),
    )?;
    let said = demo.show(
        &mesh,
        &["status"],
        &format!("silence is not health: 3 alives missed (3 × {ALIVE_EVERY}), not heard from"),
    )?;
    demo.check(
        &mesh,
        "status says one provider not heard from",
        expect::opens_with(
            &said,
            "not all well: 0 consumers failing, 1 provider not heard from",
        ),
    )?;
    demo.pause();

    demo.say("the provider is started again");
    mesh.start_provider();
    demo.expect(
        &mesh,
        "all well once the provider is heard again",
        WITHIN,
        expect::all_well,
    )?;
    demo.show(&mesh, &["status"], "heard from again: all well")?;
    demo.pause();

    demo.say("mesh-controller serve is killed (SIGKILL): nobody follows the providers' events");
    mesh.kill_controller();
    demo.expect(
        &mesh,
        "status says the controller follows nothing, and blames no provider",
        WITHIN,
        expect::controller_silent,
    )?;
    let said = demo.show(
        &mesh,
        &["status"],
        "the controller's own silence is not the provider's: status names the controller",
    )?;
    demo.check(
        &mesh,
        "status says the controller has followed no events",
        expect::opens_with(
            &said,
            "not all well: the controller has followed no events since ",
        ),
    )?;
    demo.pause();

    demo.say("mesh-controller serve is started again");
    mesh.start_controller();
    demo.expect(
        &mesh,
        "all well once the controller follows again",
        WITHIN,
        expect::all_well,
    )?;
    demo.show(&mesh, &["status"], "following again: all well")?;
    demo.done();
    Ok(())
}
