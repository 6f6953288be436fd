//! One list per write statement: [`column_list!`] declares a statement's
//! columns once (name, Rust type, PostgreSQL type) and makes from it the
//! struct of parallel arrays the rows are pushed into, its parameters in
//! that order, and the column list the statement's SQL is written with
//! ([`names`], [`unnest`], [`updates`]), so no column is kept in step by
//! hand in three places.

/// Declares `struct NAME<'a> { column: Vec<Type>, … }` (`Default`, every
/// field `pub(super)`) with `COLUMNS` (each column's name and PostgreSQL
/// type, in parameter order) and `params()` (one array per column, `$1`
/// first), from one list `column: Type = "sqltype",`.
macro_rules! column_list {
    (
        $(#[$meta:meta])*
        struct $name:ident $(<$lt:lifetime>)? {
            $($column:ident: $ty:ty = $sql:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Default)]
        pub(super) struct $name $(<$lt>)? {
            $(pub(super) $column: Vec<$ty>,)+
        }

        impl $(<$lt>)? $name $(<$lt>)? {
            /// Each column's name and PostgreSQL type, in parameter order.
            pub(super) const COLUMNS: &'static [(&'static str, &'static str)] =
                &[$((stringify!($column), $sql),)+];

            /// The statement's parameters: one array per column, in the
            /// order of [`Self::COLUMNS`].
            pub(super) fn params(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
                vec![$(&self.$column,)+]
            }
        }
    };
}

pub(super) use column_list;

/// A column: its name and PostgreSQL type.
pub(super) type Column = (&'static str, &'static str);

/// `a, b, c`: the columns' names.
pub(super) fn names(columns: &[Column]) -> String {
    columns
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `unnest($1::text[], $2::int8[], …) AS w(a, b, …)`: the parameters as
/// rows, named `w`.
pub(super) fn unnest(columns: &[Column]) -> String {
    let arrays = columns
        .iter()
        .enumerate()
        .map(|(i, (_, sql))| format!("${}::{sql}[]", i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    format!("unnest({arrays}) AS w({})", names(columns))
}

/// `b = EXCLUDED.b, …`: every column but the conflict's `keys`, set from
/// the row that conflicted.
pub(super) fn updates(columns: &[Column], keys: &[&str]) -> String {
    columns
        .iter()
        .filter(|(name, _)| !keys.contains(name))
        .map(|(name, _)| format!("{name} = EXCLUDED.{name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    column_list! {
        struct Sample<'a> {
            key: &'a str = "text",
            count: i64 = "int8",
            at: Option<std::time::SystemTime> = "timestamptz",
        }
    }

    #[test]
    fn one_list_makes_the_struct_its_parameters_and_its_sql() {
        let mut sample = Sample::default();
        sample.key.push("a");
        sample.count.push(1);
        sample.at.push(None);
        assert_eq!(sample.params().len(), 3);
        assert_eq!(
            Sample::COLUMNS,
            [("key", "text"), ("count", "int8"), ("at", "timestamptz")]
        );
        assert_eq!(names(Sample::COLUMNS), "key, count, at");
        assert_eq!(
            unnest(Sample::COLUMNS),
            "unnest($1::text[], $2::int8[], $3::timestamptz[]) AS w(key, count, at)"
        );
        assert_eq!(
            updates(Sample::COLUMNS, &["key"]),
            "count = EXCLUDED.count, at = EXCLUDED.at"
        );
    }
}
