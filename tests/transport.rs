//! The NATS transport flags over real processes (docs/contracts/bus.md#connections-and-inbox-prefixes
//! and docs/contracts/command-lines.md): a nats-server requiring TLS with client certificates verified,
//! users proving who they are with nkeys, a client refused for lack of a
//! certificate, and a list of servers whose first is down.
//!
//! The mesh is the one of `tests/e2e.rs` (`mesh_test_support::mesh`):
//! `mesh-controller serve`, `mesh-postgres`, `mesh-controller approve` and
//! `status` as built binaries, the bus configured by `mesh-controller
//! permissions --format nats`.

use std::process::Command;
use std::time::Duration;

use mesh_protocol::{ModuleId, Name};
use mesh_runtime::NatsArgs;
use mesh_test_support::mesh::{
    all_well, binary, failing, healthy_mesh_with, BusAuth, Mesh, Options,
};
use mesh_test_support::{free_port, NatsServer, TestCa};

/// The demo story: a consumer fails, reaches the controller's store and
/// `status`, then recovers; and `approve` is answered by the provider.
fn the_story_holds(mesh: &Mesh) {
    mesh.wait_status("all well", all_well);
    mesh.secret("wiki", None);
    let status = mesh.wait_status("wiki failing", |s| failing(s) == ["wiki"]);
    assert_eq!(status["failing"][0]["class"], "secret-unreadable");
    let (code, human, err) = mesh.controller(&["status"]);
    assert_eq!(code, 0, "{err}");
    assert!(human.starts_with("not all well: 1 consumer"), "{human}");
    mesh.secret("wiki", Some("minted-wiki-secret"));
    mesh.wait_status("all well again", |s| all_well(s) && failing(s).is_empty());

    // The declaration assigns no postgres@db-9: said before the bus is
    // touched (exit 2).
    let (code, out, err) = mesh.controller(&["approve", "postgres@db-9", "wiki"]);
    assert!(
        code == 2 && err.contains("the declaration assigns no provider postgres@db-9"),
        "{code} {out}{err}"
    );
    // The provider answers over it, while its passes run: wiki is still
    // listed, so it refuses (exit 1) and says why.
    let (code, out, err) = mesh.controller(&["approve", "postgres@db-1", "wiki"]);
    let said = format!("{out}{err}");
    assert!(
        code == 1 && said.contains("refused by postgres@db-1") && said.contains("still listed"),
        "{code} {said}"
    );
}

#[test]
fn over_mutual_tls_every_binary_connects_and_the_story_holds() {
    let mesh = healthy_mesh_with(Options {
        tls: true,
        ..Options::default()
    });
    assert!(mesh.nats.url().starts_with("tls://"));
    the_story_holds(&mesh);
    assert!(
        !mesh.nats.log().contains("TLS handshake error"),
        "every binary presented its certificate:\n{}",
        mesh.nats.log()
    );
}

#[test]
fn with_nkey_users_every_binary_connects_and_the_story_holds() {
    let mesh = healthy_mesh_with(Options {
        bus_auth: BusAuth::Nkey,
        tls: true,
        ..Options::default()
    });
    let config = std::fs::read_to_string(mesh.path("credentials").join("controller.pub")).unwrap();
    assert!(config.starts_with('U'));
    the_story_holds(&mesh);
}

/// A password inside `--nats` (`nats://user:pw@host`, the form every NATS
/// client takes) logs every binary in (`serve`, the provider, `approve`),
/// and no binary prints it, not even the NATS client's own debug lines
/// (which show the server URLs it is given): the credentials are taken out
/// of the URL before the client sees it. The grants agent says a grant
/// without a port unchecked over it.
#[test]
fn with_passwords_inside_the_urls_every_binary_connects_and_none_prints_them() {
    let mut mesh = healthy_mesh_with(Options {
        bus_auth: BusAuth::UrlPassword,
        log_level: "debug",
        ..Options::default()
    });
    the_story_holds(&mesh);
    let grants = mesh.path("grants.json");
    let grant = serde_json::json!({"consumer": "forge", "provision": "postgres-database",
        "from": "postgres@db-1", "address": "10.10.0.1", "port": null, "as": "forge",
        "netns": "/run/netns/forge"});
    std::fs::write(
        &grants,
        serde_json::json!({"machine": "app-1", "grants": [grant]}).to_string(),
    )
    .unwrap();
    mesh.start_grants("app-1", &grants);
    mesh.wait_status("forge's grant said unchecked", |s| {
        s["grants"]["unchecked"][0]["consumer"] == "forge"
    });
    let out = Command::new(binary("mesh-controller"))
        .args(mesh.bus_flags("controller"))
        .args(["approve", "postgres@db-1", "wiki", "--timeout", "5s"])
        .env("RUST_LOG", "debug")
        .output()
        .expect("mesh-controller runs");
    let approve = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.code() == Some(1) && approve.contains("refused by postgres@db-1"),
        "{approve}"
    );
    let logs = [
        ("approve", approve),
        ("serve", mesh.controller.as_ref().unwrap().log_text()),
        ("mesh-postgres", mesh.provider_log()),
        ("mesh-grants", mesh.grants.as_ref().unwrap().log_text()),
    ];
    for (binary, log) in &logs {
        assert!(
            log.contains("attempting connection"),
            "{binary} logged the NATS client's debug lines:\n{log}"
        );
        for user in ["controller", "postgres@db-1", "_grants@app-1"] {
            let password = std::fs::read_to_string(mesh.path("credentials").join(user)).unwrap();
            assert!(
                !log.contains(&password),
                "{binary} printed {user}'s password:\n{log}"
            );
        }
    }
    assert!(
        logs[2].1.contains("postgres%40db-1:***@127.0.0.1"),
        "the provider shows its URL with the password replaced:\n{}",
        logs[2].1
    );
}

/// `mesh-controller approve` with `flags`: (exit code, stderr).
fn approve(flags: &[std::ffi::OsString]) -> (i32, String) {
    let out = Command::new(binary("mesh-controller"))
        .args(flags)
        .args(["approve", "postgres@db-1", "forge", "--timeout", "1s"])
        .output()
        .expect("mesh-controller runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_client_without_a_certificate_or_without_the_ca_is_refused_with_a_clear_error() {
    let ca = TestCa::new("mesh test ca");
    let nats = NatsServer::start_with_tls(&ca, None);
    let client = ca.client("controller", "controller");
    let flags = |with: &[(&str, &std::path::Path)]| {
        let mut flags: Vec<std::ffi::OsString> = vec!["--nats".into(), nats.url().into()];
        for (flag, path) in with {
            flags.push((*flag).into());
            flags.push(path.into());
        }
        flags
    };

    // With everything: connected, nobody listens, so unanswered (exit 1).
    let (code, err) = approve(&flags(&[
        ("--nats-ca-file", ca.ca_file()),
        ("--nats-cert-file", &client.cert),
        ("--nats-key-file", &client.key),
    ]));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unanswered"), "{err}");

    let (code, err) = approve(&flags(&[("--nats-ca-file", ca.ca_file())]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot connect to nats at tls://127.0.0.1")
            && err.contains("the server refused this client's TLS certificate")
            && err.contains("--nats-cert-file"),
        "{err}"
    );

    let (code, err) = approve(&flags(&[
        ("--nats-cert-file", &client.cert),
        ("--nats-key-file", &client.key),
    ]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give --nats-ca-file"), "{err}");

    // A certificate from another authority is refused too.
    let another = TestCa::new("another ca");
    let other = another.client("controller", "controller");
    let (code, err) = approve(&flags(&[
        ("--nats-ca-file", ca.ca_file()),
        ("--nats-cert-file", &other.cert),
        ("--nats-key-file", &other.key),
    ]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("refused this client's TLS certificate"),
        "{err}"
    );

    // A plain nats:// URL to this server still gets TLS (the CA flag requires it).
    let plain = nats.url().replace("tls://", "nats://");
    let mut with_plain = flags(&[
        ("--nats-ca-file", ca.ca_file()),
        ("--nats-cert-file", &client.cert),
        ("--nats-key-file", &client.key),
    ]);
    with_plain[1] = plain.into();
    let (code, err) = approve(&with_plain);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn a_list_of_servers_whose_first_is_down_reaches_the_second() {
    let nats = NatsServer::start();
    let down = format!("nats://127.0.0.1:{}", free_port());
    let list = format!("{down},{}", nats.url());

    // The controller's one-shot connection tries each server once (async-nats
    // shuffles the list: several runs meet both orders).
    for _ in 0..4 {
        let (code, err) = approve(&["--nats".into(), list.clone().into()]);
        assert_eq!(code, 1, "connected, then unanswered: {err}");
        assert!(err.contains("unanswered"), "{err}");
    }
    // Only the dead one: exit 2, the whole list named.
    let (code, err) = approve(&["--nats".into(), format!("{down},{down}").into()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{down},{down}")), "{err}");
    // A bad entry is named by its place before anything is tried.
    let (code, err) = approve(&["--nats".into(), format!("{down},nats://h:port").into()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--nats entry 2"), "{err}");

    // The SDK's provider connection too.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let nats = NatsArgs {
            url: list.clone(),
            ..NatsArgs::default()
        };
        let provider = ModuleId {
            module: Name::parse("postgres").unwrap(),
            machine: Name::parse("db-1").unwrap(),
        };
        let client = mesh_runtime::nats::connect(&nats, &provider).await.unwrap();
        tokio::time::timeout(Duration::from_secs(20), client.flush())
            .await
            .expect("the provider never reached the second server")
            .unwrap();
        assert_eq!(
            client.connection_state(),
            async_nats::connection::State::Connected
        );
    });
}
