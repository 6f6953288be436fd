//! `status --json` from status pages: the same report as [`compose`] and
//! [`Report::write_json`] make from rows, byte for byte, without handling
//! every standing one field at a time.
//!
//! [`compose_paged`] is pure: it counts standings and silent ones from the
//! pages' said_at columns (nothing decompressed yet), so the sentence can
//! come first. [`PagedReport::write_json`] then goes provider by provider:
//! it decompresses that provider's pages into one reused buffer, adds its
//! words read from rows (their pages were stale) in the same format, orders
//! them by consumer and copies each standing's stored JSON, adding only
//! `silent_for_seconds`.
//!
//! [`compose`]: super::compose

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::Range;

use super::{silent_for, Clock, Report, Scope, View};
use crate::declaration::Parsed;
use crate::store::pages::{self, PageRow};
use crate::store::{FailingRow, PagedSnapshot};

/// One assigned provider's standings: clean pages and rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Group {
    pages: Vec<PageRow>,
    rows: Vec<FailingRow>,
}

/// The `status --json` report over status pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagedReport {
    /// Everything but the standings (its `failing` is empty).
    pub report: Report,
    /// The standings: assigned providers in order.
    groups: BTreeMap<(String, String), Group>,
    clock: Clock,
    /// How many standings are listed.
    pub failing: usize,
}

/// Composes the `status` report (pure), as [`super::compose`] does with
/// [`Scope::All`].
pub fn compose_paged(declaration: &Parsed, snapshot: PagedSnapshot, clock: &Clock) -> PagedReport {
    let view = View::new(declaration, &Scope::All);
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    let mut failing = 0;
    let mut silent = 0;
    for page in snapshot.pages {
        if !view.is_assigned(&page.provider_module, &page.provider_machine) {
            continue;
        }
        failing += page.standings;
        silent += (0..page.standings)
            .filter(|&i| {
                silent_for(pages::from_micros(pages::said_at(&page.said_at, i)), clock).is_some()
            })
            .count();
        let key = (page.provider_module.clone(), page.provider_machine.clone());
        groups.entry(key).or_default().pages.push(page);
    }
    for row in snapshot.stale {
        if !view.is_assigned(&row.provider_module, &row.provider_machine) {
            continue;
        }
        failing += 1;
        silent += usize::from(silent_for(row.said_at, clock).is_some());
        let key = (row.provider_module.clone(), row.provider_machine.clone());
        groups.entry(key).or_default().rows.push(row);
    }
    PagedReport {
        report: view.report(failing, silent, snapshot.open_repairs, clock),
        groups,
        clock: *clock,
        failing,
    }
}

/// One standing in the reused buffer.
struct Item {
    /// The consumer's first 8 bytes, big-endian: orders most pairs alone.
    prefix: u64,
    consumer: Range<usize>,
    json: Range<usize>,
    said_at: i64,
}

fn prefix(consumer: &[u8]) -> u64 {
    let mut first = [0u8; 8];
    let n = consumer.len().min(8);
    first[..n].copy_from_slice(&consumer[..n]);
    u64::from_be_bytes(first)
}

impl PagedReport {
    /// Writes the report as [`Report::write_json`] does.
    ///
    /// # Errors
    /// When writing fails, or a page does not decompress (the store checked
    /// each when reading it).
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        self.report.write_json_listing(out, |w| {
            let mut raw: Vec<u8> = Vec::new();
            let mut items: Vec<Item> = Vec::new();
            let mut first = true;
            for group in self.groups.values() {
                raw.clear();
                items.clear();
                for page in &group.pages {
                    let from = raw.len();
                    pages::decompress_onto(&page.body, &mut raw)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    let mut i = 0;
                    pages::entries(&raw, from, |e| {
                        items.push(Item {
                            prefix: prefix(&raw[e.consumer.clone()]),
                            consumer: e.consumer,
                            json: e.json,
                            said_at: pages::said_at(&page.said_at, i),
                        });
                        i += 1;
                    })
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                }
                for row in &group.rows {
                    let e = pages::push_entry(&mut raw, row);
                    items.push(Item {
                        prefix: prefix(&raw[e.consumer.clone()]),
                        consumer: e.consumer,
                        json: e.json,
                        said_at: pages::micros(row.said_at),
                    });
                }
                items.sort_unstable_by(|a, b| {
                    a.prefix
                        .cmp(&b.prefix)
                        .then_with(|| raw[a.consumer.clone()].cmp(&raw[b.consumer.clone()]))
                });
                for item in &items {
                    if !first {
                        w.raw(",");
                    }
                    first = false;
                    w.bytes(&raw[item.json.clone()]);
                    w.silent_for(silent_for(pages::from_micros(item.said_at), &self.clock));
                    w.flush_if_full()?;
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::parse;
    use crate::status::tests::row;
    use crate::status::{compose, DEFAULT_SILENT_AFTER};
    use crate::store::pages::encode;
    use crate::store::{RepairRow, Snapshot};
    use bytes::Bytes;
    use mesh_sdk::Timestamp;

    fn page(number: i32, mut rows: Vec<FailingRow>) -> PageRow {
        let encoded = encode(&mut rows);
        PageRow {
            provider_module: rows[0].provider_module.clone(),
            provider_machine: rows[0].provider_machine.clone(),
            page: number,
            standings: encoded.standings,
            said_at: Bytes::from(encoded.said_at),
            body: Bytes::from(encoded.body),
        }
    }

    /// Pages and rows of the same standings, split every which way, give
    /// the bytes the row path gives.
    #[test]
    fn pages_and_rows_in_any_split_give_the_row_report() {
        let declaration = parse(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"identity","machine":"id-1","provides":["oidc-client"]},
              {"module":"Bad","machine":"x"}]}"#,
        )
        .unwrap();
        let clock = Clock {
            now: Timestamp::parse("2026-10-05T01:00:00Z").unwrap(),
            silent_after: DEFAULT_SILENT_AFTER,
        };
        // Consumers sharing their first 8 bytes, a short one, silent and
        // not, an unassigned provider.
        let all = vec![
            row("postgres", "db-1", "consumer-b", "2026-10-05T00:59:00Z"),
            row("postgres", "db-1", "consumer-a", "2026-10-05T00:10:00Z"),
            row("postgres", "db-1", "consumer", "2026-10-05T00:59:00Z"),
            row("postgres", "db-1", "a", "2026-10-05T00:29:59Z"),
            row("identity", "id-1", "zed", "2026-10-05T00:59:00Z"),
            row("postgres", "db-9", "ghost", "2026-10-05T00:59:00Z"),
        ];
        let repairs = vec![RepairRow {
            provider_module: "identity".into(),
            provider_machine: "id-1".into(),
            fault: "admin-refused".into(),
            outcome: "failed".into(),
            detail: "no".into(),
            next_attempt_at: None,
            said_at: Timestamp::parse("2026-10-05T00:59:00Z").unwrap(),
        }];
        let expected = {
            let report = compose(
                &declaration,
                Snapshot {
                    failing: all.clone(),
                    open_repairs: repairs.clone(),
                },
                &clock,
                &Scope::All,
            );
            let mut out = Vec::new();
            report.write_json(&mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        // Every split of the rows into rows, page 0 and page 1 (per provider).
        for split in 0..3usize.pow(all.len() as u32) {
            let (mut stale, mut pages) = (Vec::new(), BTreeMap::new());
            let mut code = split;
            for r in &all {
                let place = code % 3;
                code /= 3;
                if place == 0 {
                    stale.push(r.clone());
                } else {
                    pages
                        .entry((r.provider_module.clone(), r.provider_machine.clone(), place))
                        .or_insert_with(Vec::new)
                        .push(r.clone());
                }
            }
            let snapshot = PagedSnapshot {
                pages: pages
                    .into_values()
                    .enumerate()
                    .map(|(i, rows)| page(i as i32, rows))
                    .collect(),
                stale,
                open_repairs: repairs.clone(),
            };
            let report = compose_paged(&declaration, snapshot, &clock);
            assert_eq!(report.failing, 5);
            let mut out = Vec::new();
            report.write_json(&mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected, "split {split}");
        }
        assert!(expected.contains(
            "\"sentence\":\"not all well: 5 consumers failing (2 not said again for more than 30m), \
             1 repair fault open, 1 declaration entry refused (not checked)\""
        ), "{expected}");
    }

    #[test]
    fn nothing_failing_is_all_well() {
        let declaration =
            parse(r#"{"modules":[{"module":"postgres","machine":"db-1","provides":["p"]}]}"#)
                .unwrap();
        let clock = Clock {
            now: Timestamp::parse("2026-10-05T01:00:00Z").unwrap(),
            silent_after: DEFAULT_SILENT_AFTER,
        };
        let report = compose_paged(&declaration, PagedSnapshot::default(), &clock);
        assert!(report.report.all_well);
        let mut out = Vec::new();
        report.write_json(&mut out).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(json["failing"], serde_json::json!([]));
        assert!(json["sentence"].as_str().unwrap().starts_with("all well: "));
    }
}
