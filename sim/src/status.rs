//! What the engine does in the simulation: the controller's task (the
//! link's real rounds over the bus into the store) and what status says
//! (the real report and rendering over the store's read), with the
//! declaration they see.

use std::time::SystemTime;

use mesh_protocol::Timestamp;
use mesh_runtime::Stop;
use mesh_status::link::{follow_messages, Followed, LinkSettings, LinkState};
use mesh_status::model::declaration::parse;
use mesh_status::model::ParsedDeclaration;
use mesh_status::render;
use mesh_status::report::{self, Clock, Facts, Grants, Head, Listed, Scope};
use mesh_status::store::Order;

use crate::bus::Bus;
use crate::store::MemStore;

/// Consumer `c`'s name.
pub fn consumer_name(c: usize) -> String {
    format!("app{c}")
}

/// What status said at one second.
pub struct Status {
    /// The head (sentence, unheard providers).
    pub head: Head,
    /// The standings listed.
    pub listed: Vec<Listed>,
    /// The whole report as printed.
    pub text: String,
}

/// The declaration: every provider, and one module per consumer requiring
/// a database from each.
pub fn declaration(providers: usize, consumers: usize) -> ParsedDeclaration {
    let mut modules: Vec<serde_json::Value> = (0..providers)
        .map(|p| {
            serde_json::json!({"module": "pg", "machine": format!("db-{p}"), "provides": ["postgres-database"]})
        })
        .collect();
    for c in 0..consumers {
        let requires: Vec<serde_json::Value> = (0..providers)
            .map(|p| serde_json::json!({"provision": "postgres-database", "from": format!("pg@db-{p}")}))
            .collect();
        modules.push(serde_json::json!({"module": consumer_name(c), "machine": "app-1", "requires": requires}));
    }
    parse(&serde_json::json!({ "modules": modules }).to_string()).expect("a valid declaration")
}

/// What status says at `now`: the real report and rendering over the
/// store's read; `None` while the store is away (status fails, saying so).
pub fn read(store: &MemStore, declaration: &ParsedDeclaration, now: SystemTime) -> Option<Status> {
    let clock = Clock {
        now: Timestamp::from_system(now),
        silent_after: report::DEFAULT_SILENT_AFTER,
    };
    let filter = report::filter(declaration, &Scope::All, &clock, Order::Key);
    let read = store.read(&filter).ok()?;
    let record = store.record().ok()?;
    let facts = Facts {
        failing: read.groups,
        repairs: read.repairs,
        alive: &read.alive,
        grants: Grants::default(),
        grants_read: &[],
        record: &record,
        retired: &[],
    };
    let head = report::head(declaration, &Scope::All, facts, &clock);
    let listed: Vec<Listed> = read
        .standings
        .into_iter()
        .map(|row| report::standing(row, &clock))
        .collect();
    let mut out = Vec::new();
    let mut listing = render::listing(false);
    render::write_all(listing.as_mut(), &mut out, &head, &listed).expect("writing to memory");
    Some(Status {
        head,
        listed,
        text: String::from_utf8_lossy(&out).into_owned(),
    })
}

/// The controller (`serve`'s link): the real rounds, set up again when the
/// consumer is lost, until it is stopped or killed.
pub async fn controller(bus: Bus, mut store: MemStore, link: LinkSettings, stop: Stop) {
    let state = LinkState::new();
    let mut consumer = bus.consumer();
    loop {
        match follow_messages(&mut consumer, 1, &mut store, &link, &state, &stop).await {
            Followed::Stopped => break,
            Followed::ConsumerLost => {
                if stop
                    .run_until_stopped(tokio::time::sleep(link.nak_first))
                    .await
                    .is_none()
                {
                    break;
                }
            }
        }
    }
}
