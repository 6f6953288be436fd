//! The console's pages read from the store: the same reads and the same
//! engine as `status` and `node show` (so a page is never greener than
//! status), rendered by `mesh_status::render::html`.

use std::time::Duration;

use axum::extract::Query;
use axum::http::Uri;
use mesh_protocol::{ModuleId, Name, Timestamp};
use mesh_status::model::consumers::{
    ConsumerQuery, ConsumerQueryError, ConsumerState, ConsumerTable,
};
use mesh_status::model::{AliveRow, ParsedDeclaration};
use mesh_status::render::html::consumers::{self, TableView};
use mesh_status::render::html::{
    consumer_path, crumbs, detail, machine_path, mesh, notice, provider_path, Page,
};
use mesh_status::render::why::lines as why_lines;
use mesh_status::report::history::{entries, summaries, window_start};
use mesh_status::report::why::{why, WhyInput};
use mesh_status::report::{self, Clock, Head, Listed, Scope};
use mesh_status::store::{HistoryFilter, Order, StatusFilter};

use mesh_pg_store::{PgError, PgStore};

/// How far back a consumer's page reads its history (its longer bar row).
pub(crate) const HISTORY_DAYS: u32 = 30;

/// Which page: the mesh, a machine, a provider, a consumer, the consumer
/// table (in that order).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum PageKey {
    /// `/`.
    Mesh,
    /// `/machine/{machine}`.
    Machine(Name),
    /// `/provider/{module}@{machine}`.
    Provider(ModuleId),
    /// `/consumer/{consumer}@{machine}`.
    Consumer(ModuleId),
    /// `/consumers?…`: a page of the consumer table.
    Consumers(ConsumerQuery),
}

/// The consumer table's query in `uri`'s query string.
///
/// # Errors
/// What the table cannot take (a parameter that is none of its, a bad
/// value, a query string that does not decode).
pub(crate) fn consumer_query(uri: &Uri) -> Result<ConsumerQuery, ConsumerQueryError> {
    let Query(pairs) =
        Query::<Vec<(String, String)>>::try_from_uri(uri).map_err(|e| ConsumerQueryError {
            parameter: "the query".to_owned(),
            reason: e.body_text(),
        })?;
    ConsumerQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

impl PageKey {
    /// The key of a console path (its query read for the consumer table,
    /// left aside for the other pages), `None` for a path that is no page.
    pub(crate) fn parse(path_and_query: &str) -> Option<PageKey> {
        let path = path_and_query.split('?').next().unwrap_or_default();
        if path == "/" {
            return Some(PageKey::Mesh);
        }
        if path == "/consumers" {
            let uri: Uri = path_and_query.parse().ok()?;
            return consumer_query(&uri).ok().map(PageKey::Consumers);
        }
        let (kind, name) = path.strip_prefix('/')?.split_once('/')?;
        match kind {
            "machine" => Name::parse(name).ok().map(PageKey::Machine),
            "provider" => ModuleId::parse(name).ok().map(PageKey::Provider),
            "consumer" => ModuleId::parse(name).ok().map(PageKey::Consumer),
            _ => None,
        }
    }

    /// Its path.
    pub(crate) fn path(&self) -> String {
        match self {
            PageKey::Mesh => "/".to_owned(),
            PageKey::Machine(m) => machine_path(m.as_str()),
            PageKey::Provider(p) => provider_path(&p.to_string()),
            PageKey::Consumer(c) => consumer_path(c.module.as_str(), c.machine.as_str()),
            PageKey::Consumers(q) => q.path(),
        }
    }
}

/// How the pages report: `status`'s `--silent-after` and
/// `--recurrence-window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReportSettings {
    /// A standing not published again for this long is marked silent.
    pub(crate) silent_after: Duration,
    /// A failing consumer says it failed before within this window.
    pub(crate) recurrence_window: Duration,
}

/// What one status read says, collected: the head, the standings in
/// cause order (capped per group or not), the newest `alive` of each
/// provider heard from.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    head: Head,
    standings: Vec<Listed>,
    alive: Vec<AliveRow>,
}

/// What the pages offer to do (links only: the forms they lead to are
/// each session's own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Acting {
    /// A token may act: consumer pages link the note form.
    pub(crate) notes: bool,
    /// And the console is on the bus (`--approvals`): retiring and retired
    /// lines of the consumer table link their approval.
    pub(crate) approvals: bool,
}

/// The pages of one declaration over one store.
#[derive(Debug)]
pub(crate) struct Pages {
    pub(crate) declaration: ParsedDeclaration,
    pub(crate) settings: ReportSettings,
    pub(crate) acting: Acting,
}

/// The mesh page's and a machine page's listing: at most what the page
/// shows of each provider and class.
fn capped(filter: &mut StatusFilter) {
    filter.per_group = Some(u32::try_from(mesh::GROUP_ITEMS).unwrap_or(u32::MAX));
}

impl Pages {
    /// Whether the declaration names what `key` shows.
    pub(crate) fn knows(&self, key: &PageKey) -> bool {
        let d = &self.declaration.declaration;
        match key {
            PageKey::Mesh => true,
            PageKey::Machine(m) => d.modules.iter().any(|x| x.id.machine == *m),
            PageKey::Provider(p) => d.receives_contributions(p),
            PageKey::Consumer(c) => d.modules.iter().any(|x| x.id == *c),
            PageKey::Consumers(_) => true,
        }
    }

    /// What the declaration requires: each (provider, consumer), in order.
    fn requirements(&self) -> Vec<(ModuleId, ModuleId)> {
        let mut all: Vec<(ModuleId, ModuleId)> = self
            .declaration
            .declaration
            .modules
            .iter()
            .flat_map(|m| m.requires.iter().map(|r| (r.from.clone(), m.id.clone())))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// A page of the consumer table, read.
    async fn table(
        &self,
        store: &mut PgStore,
        query: &ConsumerQuery,
    ) -> Result<ConsumerTable, PgError> {
        store.read_consumers(query, &self.requirements()).await
    }

    fn machines(&self) -> Vec<String> {
        let mut machines: Vec<String> = self
            .declaration
            .declaration
            .modules
            .iter()
            .map(|m| m.id.machine.to_string())
            .collect();
        machines.sort_unstable();
        machines.dedup();
        machines
    }

    /// The declared providers (those with a page), in order; on `machine`
    /// (a machine's page): those on it and those its consumers require from.
    fn providers(&self, machine: Option<&str>) -> Vec<ModuleId> {
        let d = &self.declaration.declaration;
        let mut providers: Vec<ModuleId> = d
            .modules
            .iter()
            .filter(|m| d.receives_contributions(&m.id))
            .filter(|m| {
                machine.is_none_or(|on| {
                    m.id.machine.as_str() == on
                        || d.modules
                            .iter()
                            .filter(|c| c.id.machine.as_str() == on)
                            .any(|c| c.requires.iter().any(|r| r.from == m.id))
                })
            })
            .map(|m| m.id.clone())
            .collect();
        providers.sort_unstable();
        providers.dedup();
        providers
    }

    /// `status` (or `node show`) collected: the same read and engine, its
    /// filter narrowed by `narrow` to what the page shows (the mesh and a
    /// machine: [`mesh::GROUP_ITEMS`] standings of each provider and class,
    /// and their counts; a provider or a consumer: its own standings).
    async fn report(
        &self,
        store: &mut PgStore,
        scope: &Scope,
        now: Timestamp,
        narrow: impl FnOnce(&mut StatusFilter),
    ) -> Result<Report, PgError> {
        let clock = Clock {
            now,
            silent_after: self.settings.silent_after,
        };
        let mut filter = report::filter(&self.declaration, scope, &clock, Order::Cause);
        narrow(&mut filter);
        let mut read = store.read_status(&filter).await?;
        let window = self.settings.recurrence_window;
        read.count_repairs(now, window).await?;
        let recurrences = read.recurrences(now, window).await?;
        let alive = read.alive.clone();
        let facts = read.facts();
        let head = report::head(&self.declaration, scope, facts, &clock);
        let mut standings = Vec::new();
        while let Some(row) = read.next().await? {
            standings.push(report::recurring_standing(row, &clock, &recurrences));
        }
        read.finish_into(store).await?;
        Ok(Report {
            head,
            standings,
            alive,
        })
    }

    /// The page `key` shows now; `None` when the declaration does not
    /// name it (a 404).
    ///
    /// # Errors
    /// [`PgError`] when the store cannot be read.
    pub(crate) async fn render(
        &self,
        store: &mut PgStore,
        key: &PageKey,
        now: Timestamp,
    ) -> Result<Option<Page>, PgError> {
        if !self.knows(key) {
            return Ok(None);
        }
        let path = key.path();
        let page = match key {
            PageKey::Mesh => {
                let r = self.report(store, &Scope::All, now, capped).await?;
                let main = mesh::overview(&mesh::Overview {
                    head: &r.head,
                    standings: &r.standings,
                    providers: &self.providers(r.head.machine.as_deref()),
                    machines: &self.machines(),
                    now,
                });
                let mut page = titled(state(&r.head), "the mesh".to_owned(), path, main);
                page.crumbs = vec![("mesh".to_owned(), "/".to_owned())];
                page
            }
            PageKey::Machine(m) => {
                let r = self
                    .report(store, &Scope::Machine(m.to_string()), now, capped)
                    .await?;
                let mut main = mesh::overview(&mesh::Overview {
                    head: &r.head,
                    standings: &r.standings,
                    providers: &self.providers(r.head.machine.as_deref()),
                    machines: &[],
                    now,
                });
                let query = ConsumerQuery {
                    machine: Some(m.clone()),
                    ..ConsumerQuery::default()
                };
                let table = self.table(store, &query).await?;
                main.push_str(&consumers::on_machine(&TableView {
                    query: &query,
                    table: &table,
                    providers: &self.providers(None),
                    machines: &self.machines(),
                    now,
                    approvals: self.acting.approvals,
                }));
                titled(state(&r.head), format!("machine {m}"), path, main)
            }
            PageKey::Provider(p) => {
                let consumers = self.consumers_of(p);
                // This provider's alone: the head speaks for it only.
                let r = self
                    .report(store, &Scope::All, now, |f| {
                        f.choose_providers(|x| x == p);
                    })
                    .await?;
                let main = detail::provider(&detail::ProviderView {
                    provider: p,
                    head: &r.head,
                    alive: r.alive.iter().find(|a| &a.provider == p),
                    consumers: &consumers,
                    standings: &r.standings,
                    now,
                });
                let name = format!("provider {p}");
                let mut page = titled(state(&r.head), name.clone(), path.clone(), main);
                page.crumbs = crumbs(&[
                    (
                        format!("machine {}", p.machine),
                        machine_path(p.machine.as_str()),
                    ),
                    (name, path),
                ]);
                page
            }
            PageKey::Consumer(c) => self.consumer(store, c, path, now).await?,
            PageKey::Consumers(q) => {
                let table = self.table(store, q).await?;
                let main = consumers::table(&TableView {
                    query: q,
                    table: &table,
                    providers: &self.providers(None),
                    machines: &self.machines(),
                    now,
                    approvals: self.acting.approvals,
                });
                let said = match table.count(Some(ConsumerState::Failing)) {
                    0 => "none failing".to_owned(),
                    n => format!("{n} failing"),
                };
                titled(said, "consumers".to_owned(), path, main)
            }
        };
        Ok(Some(page))
    }

    /// The consumers the declaration gives `provider`, in order.
    fn consumers_of(&self, provider: &ModuleId) -> Vec<(String, String)> {
        let mut consumers: Vec<(String, String)> = self
            .declaration
            .declaration
            .modules
            .iter()
            .filter(|m| m.requires.iter().any(|r| &r.from == provider))
            .map(|m| (m.id.module.to_string(), m.id.machine.to_string()))
            .collect();
        consumers.sort_unstable();
        consumers.dedup();
        consumers
    }

    async fn consumer(
        &self,
        store: &mut PgStore,
        c: &ModuleId,
        path: String,
        now: Timestamp,
    ) -> Result<Page, PgError> {
        let (consumer, machine) = (c.module.to_string(), c.machine.to_string());
        let mut providers: Vec<ModuleId> = self
            .declaration
            .declaration
            .module(c)
            .map(|m| m.requires.iter().map(|r| r.from.clone()).collect())
            .unwrap_or_default();
        providers.sort_unstable();
        providers.dedup();
        let report = self
            .report(store, &Scope::All, now, |f| {
                f.choose_providers(|x| providers.contains(x));
                f.required.retain(|(_, c)| *c == consumer);
                f.consumer = Some(consumer.clone());
            })
            .await?;
        let standings: Vec<Listed> = report
            .standings
            .into_iter()
            .filter(|s| s.row.said.consumer_machine.as_ref() == Some(&c.machine))
            .collect();
        let span = Duration::from_secs(u64::from(HISTORY_DAYS) * 86_400);
        let filter = HistoryFilter {
            consumer: Some((c.module.clone(), Some(c.machine.clone()))),
            provider: None,
            machine: None,
            since: window_start(now, span),
        };
        let (rows, store_now) = store.read_history(&filter).await?;
        let entries = entries(&rows, store_now);
        let sums = summaries(&entries, window_start(store_now, span), store_now);
        // `mesh-controller why`'s verdict, from the same read and history.
        let requires = self.declaration.declaration.requirements(c);
        let verdict = why(&WhyInput {
            consumer: c,
            requires: &requires,
            head: &report.head,
            standings: &standings,
            history: &entries,
        });
        let said = why_lines(&verdict, store_now);
        let main = detail::consumer(&detail::ConsumerView {
            consumer: &consumer,
            machine: &machine,
            providers: &providers,
            standings: &standings,
            entries: &entries,
            summaries: &sums,
            now: store_now,
            why: &said,
            known_from: report.head.controller.known_since,
            notes: self.acting.notes,
        });
        let said = if standings.is_empty() {
            "not failing".to_owned()
        } else {
            "failing".to_owned()
        };
        let name = format!("consumer {consumer}@{machine}");
        let mut page = titled(said, name.clone(), path.clone(), main);
        page.crumbs = crumbs(&[
            (format!("machine {machine}"), machine_path(&machine)),
            (name, path),
        ]);
        Ok(page)
    }
}

/// A head's state for a tab's title: `all well`, or `not all well (N)`
/// with the number of problems it lists.
fn state(head: &Head) -> String {
    match head.problems.len() {
        0 => "all well".to_owned(),
        n => format!("not all well ({n})"),
    }
}

/// A page titled `STATE · NAME`; its `<main>` carries the title too
/// (`data-title`), so the script sets the tab's title when an event
/// brings a new `<main>`. Its crumbs are the mesh's, then its own (a page
/// further down sets its trail itself).
fn titled(state: String, name: String, path: String, main: String) -> Page {
    let title = format!("{state} · {name}");
    Page {
        main: format!(
            "<span hidden data-title=\"{}\"></span>\n{main}",
            mesh_status::render::html::escape(&title)
        ),
        crumbs: crumbs(&[(name, path.clone())]),
        title,
        path,
    }
}

/// The page saying the store cannot be read now (never an old page kept
/// green): `status`'s reason.
pub(crate) fn unreadable(key: &PageKey, error: &dyn std::fmt::Display) -> Page {
    notice(
        &key.path(),
        "the store cannot be read",
        &format!("cannot read the store: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_keys_go_both_ways_and_other_paths_are_no_page() {
        for path in [
            "/",
            "/machine/app-1",
            "/provider/postgres@db-1",
            "/consumer/wiki@app-1",
            "/consumers",
            "/consumers?state=failing&provider=postgres@db-1&page=2",
        ] {
            let key = PageKey::parse(path).expect(path);
            assert_eq!(key.path(), path);
        }
        for path in [
            "",
            "/machine",
            "/machine/",
            "/machine/App",
            "/provider/postgres",
            "/consumer/wiki@app-1/x",
            "/consumer/../x@y",
            "/other/x",
            "/machine/a%20b",
            "/consumers?state=sad",
            "/consumers?sort=name",
        ] {
            assert_eq!(PageKey::parse(path), None, "{path}");
        }
    }
}
