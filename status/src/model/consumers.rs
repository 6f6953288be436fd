//! Every consumer in one table (the console's `/consumers`): each
//! consumer a provider serves or the declaration requires from it, its
//! state, since when, its class when failing; what a person asks of the
//! table (a filter and a page, from query parameters, so it works without
//! a script); and the counts by state the table's header says.
//!
//! A line is one consumer of one provider: a consumer that requires from
//! two providers has two lines (each provider says its own).
//!
//! States, in the table's order (the worst first):
//! - `failing`: its provider's newest standing of it is `failing`;
//! - `retiring`, `retired`, `deleted`: its provider's newest retirement
//!   event says so and nothing the provider said of it since (a success, a
//!   new attempt) undoes it;
//! - `ok`: none of these (it recovered, or nothing bad was ever said).

use mesh_protocol::{Class, ModuleId, Name, Timestamp};

/// What a consumer is, as its line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConsumerState {
    /// Its provider says it fails.
    Failing,
    /// Its provider counts down to retire it.
    Retiring,
    /// Its provider retired it.
    Retired,
    /// Its provider deleted its provision.
    Deleted,
    /// None of the above.
    Ok,
}

impl ConsumerState {
    /// Every state, in the table's order.
    pub const ALL: [ConsumerState; 5] = [
        ConsumerState::Failing,
        ConsumerState::Retiring,
        ConsumerState::Retired,
        ConsumerState::Deleted,
        ConsumerState::Ok,
    ];

    /// The state's word (the query parameter's value, the store's).
    pub fn as_str(self) -> &'static str {
        match self {
            ConsumerState::Failing => "failing",
            ConsumerState::Retiring => "retiring",
            ConsumerState::Retired => "retired",
            ConsumerState::Deleted => "deleted",
            ConsumerState::Ok => "ok",
        }
    }
}

mesh_protocol::wire_words!(ConsumerState, "a consumer's state");

/// How many lines a page of the table holds.
pub const PAGE_LINES: u32 = 100;

/// What a person asks of the table: every field narrows it; `page` counts
/// from 1. Ordered by [`ConsumerQuery::path`] (one query, one path).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConsumerQuery {
    /// Only consumers in this state.
    pub state: Option<ConsumerState>,
    /// Only this provider's.
    pub provider: Option<ModuleId>,
    /// Only consumers on this machine.
    pub machine: Option<Name>,
    /// Only consumers failing for this class.
    pub class: Option<Class>,
    /// Only consumers whose name holds this text.
    pub name: Option<String>,
    /// The page, from 1.
    pub page: u32,
}

impl Default for ConsumerQuery {
    fn default() -> ConsumerQuery {
        ConsumerQuery {
            state: None,
            provider: None,
            machine: None,
            class: None,
            name: None,
            page: 1,
        }
    }
}

impl Ord for ConsumerQuery {
    fn cmp(&self, other: &ConsumerQuery) -> std::cmp::Ordering {
        self.path().cmp(&other.path())
    }
}

impl PartialOrd for ConsumerQuery {
    fn partial_cmp(&self, other: &ConsumerQuery) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A query parameter the table cannot take: which, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{parameter}: {reason}")]
pub struct ConsumerQueryError {
    /// The parameter's name.
    pub parameter: String,
    /// What is wrong with its value.
    pub reason: String,
}

impl ConsumerQuery {
    /// The query of decoded parameters `pairs` (`state`, `provider`,
    /// `machine`, `class`, `name`, `page`; an empty value is no filter, as
    /// a form's "any" sends it).
    ///
    /// # Errors
    /// A parameter the table does not know, or a value that is not one of
    /// its kind (a state, a `module@machine`, a name, a class, a page
    /// number from 1; a name's text is of a name's letters).
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<ConsumerQuery, ConsumerQueryError> {
        let mut query = ConsumerQuery::default();
        for (parameter, value) in pairs {
            let refused = |reason: String| ConsumerQueryError {
                parameter: parameter.to_owned(),
                reason,
            };
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            match parameter {
                "state" => query.state = Some(value.parse().map_err(|e| refused(format!("{e}")))?),
                "provider" => {
                    query.provider =
                        Some(ModuleId::parse(value).map_err(|e| refused(e.to_string()))?);
                }
                "machine" => {
                    query.machine = Some(Name::parse(value).map_err(|e| refused(e.to_string()))?);
                }
                "class" => query.class = Some(value.parse().map_err(|e| refused(format!("{e}")))?),
                "name" => {
                    let fits = value.len() <= 63
                        && value.chars().all(|c| {
                            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'
                        });
                    if !fits {
                        return Err(refused(
                            "a part of a name: up to 63 of a-z 0-9 _ -".to_owned(),
                        ));
                    }
                    query.name = Some(value.to_owned());
                }
                "page" => {
                    query.page = value
                        .parse::<u32>()
                        .ok()
                        .filter(|p| *p >= 1)
                        .ok_or_else(|| refused("a page number, from 1".to_owned()))?;
                }
                _ => return Err(refused("not a parameter of this table".to_owned())),
            }
        }
        Ok(query)
    }

    /// Its parameters as a query string, in one order (so one query has one
    /// path), page 1 left out; empty for the whole table's first page. Each
    /// value is of a name's, a class's or a state's letters, `@` or digits:
    /// none needs escaping.
    pub fn query(&self) -> String {
        let mut pairs: Vec<String> = Vec::new();
        if let Some(s) = self.state {
            pairs.push(format!("state={s}"));
        }
        if let Some(p) = &self.provider {
            pairs.push(format!("provider={p}"));
        }
        if let Some(m) = &self.machine {
            pairs.push(format!("machine={m}"));
        }
        if let Some(c) = self.class {
            pairs.push(format!("class={c}"));
        }
        if let Some(n) = &self.name {
            pairs.push(format!("name={n}"));
        }
        if self.page > 1 {
            pairs.push(format!("page={}", self.page));
        }
        pairs.join("&")
    }

    /// The table's path for this query: `/consumers`, then `?` and
    /// [`ConsumerQuery::query`] when there is one.
    pub fn path(&self) -> String {
        match self.query() {
            q if q.is_empty() => "/consumers".to_owned(),
            q => format!("/consumers?{q}"),
        }
    }

    /// The same query on page `page`.
    pub fn on_page(&self, page: u32) -> ConsumerQuery {
        ConsumerQuery {
            page,
            ..self.clone()
        }
    }

    /// The same query narrowed to `state` (or widened to all), from page 1.
    pub fn in_state(&self, state: Option<ConsumerState>) -> ConsumerQuery {
        ConsumerQuery {
            state,
            page: 1,
            ..self.clone()
        }
    }

    /// How many lines come before this page's.
    pub fn offset(&self) -> u64 {
        u64::from(self.page.saturating_sub(1)) * u64::from(PAGE_LINES)
    }
}

/// One line of the table: one consumer of one provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerLine {
    /// The provider.
    pub provider: ModuleId,
    /// The consumer.
    pub consumer: Name,
    /// The consumer's machine: as its provider last said it, else as the
    /// declaration says; `None` when neither does.
    pub machine: Option<Name>,
    /// Its state.
    pub state: ConsumerState,
    /// Since when it is in that state, when known: the first failure of its
    /// failing interval, its retirement event, its recovery.
    pub since: Option<Timestamp>,
    /// The failure's class, when failing.
    pub class: Option<Class>,
    /// Whether the declaration requires it from this provider.
    pub declared: bool,
}

/// A page of the table and the counts by state of every line the query's
/// other fields select (its state aside, so the header can offer each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerTable {
    /// Lines in each state, every state in [`ConsumerState::ALL`]'s order.
    pub counts: Vec<(ConsumerState, u64)>,
    /// The page's lines, in the table's order: by state, then provider,
    /// then consumer and machine.
    pub lines: Vec<ConsumerLine>,
}

impl ConsumerTable {
    /// The lines in `state`, or in all states.
    pub fn count(&self, state: Option<ConsumerState>) -> u64 {
        self.counts
            .iter()
            .filter(|(s, _)| state.is_none_or(|want| *s == want))
            .map(|(_, n)| n)
            .sum()
    }

    /// How many pages the query's lines fill (at least 1).
    pub fn pages(&self, query: &ConsumerQuery) -> u32 {
        let lines = self.count(query.state);
        u32::try_from(lines.div_ceil(u64::from(PAGE_LINES)))
            .unwrap_or(u32::MAX)
            .max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(query: &str) -> Result<ConsumerQuery, ConsumerQueryError> {
        ConsumerQuery::from_pairs(
            query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once('=').unwrap_or((p, ""))),
        )
    }

    #[test]
    fn a_query_goes_to_its_path_and_back() {
        for path in [
            "/consumers",
            "/consumers?state=failing",
            "/consumers?provider=postgres@db-1&machine=app-1&class=credentials-rejected",
            "/consumers?state=ok&name=wi&page=3",
        ] {
            let query = path.strip_prefix("/consumers").unwrap();
            let q = parsed(query.strip_prefix('?').unwrap_or("")).expect(path);
            assert_eq!(q.path(), path);
        }
    }

    #[test]
    fn empty_values_are_no_filter_and_page_one_is_left_out() {
        let q = parsed("state=&provider=&machine=&class=&name=&page=1").unwrap();
        assert_eq!(q, ConsumerQuery::default());
        assert_eq!(q.path(), "/consumers");
    }

    #[test]
    fn each_bad_value_is_named_with_its_parameter() {
        for (query, parameter) in [
            ("state=sad", "state"),
            ("provider=postgres", "provider"),
            ("machine=App", "machine"),
            ("class=nope", "class"),
            ("name=%25", "name"),
            ("name=a b", "name"),
            ("page=0", "page"),
            ("page=x", "page"),
            ("sort=name", "sort"),
        ] {
            let error = parsed(query).expect_err(query);
            assert_eq!(error.parameter, parameter, "{query}: {error}");
            assert!(error.to_string().starts_with(parameter), "{error}");
        }
    }

    #[test]
    fn the_state_filter_starts_again_at_page_one_and_pages_count_its_lines() {
        let q = parsed("state=failing&page=4").unwrap();
        assert_eq!(q.in_state(None).path(), "/consumers");
        assert_eq!(q.offset(), 300);
        let table = ConsumerTable {
            counts: vec![
                (ConsumerState::Failing, 201),
                (ConsumerState::Retiring, 0),
                (ConsumerState::Retired, 0),
                (ConsumerState::Deleted, 0),
                (ConsumerState::Ok, 99),
            ],
            lines: Vec::new(),
        };
        assert_eq!(table.count(None), 300);
        assert_eq!(table.pages(&q), 3);
        assert_eq!(table.pages(&q.in_state(None)), 3);
        assert_eq!(table.pages(&q.in_state(Some(ConsumerState::Ok))), 1);
        assert_eq!(table.pages(&q.in_state(Some(ConsumerState::Deleted))), 1);
    }
}
