//! What to do about one name, decided from what the backend holds under it.
//! Pure: the provisioner reads [`Found`] with one query and acts on the plan.

use crate::error::PostgresError;
use crate::sql::{database_comment, shown, MARKER_ROLE};

/// The provision the provider serves.
pub const PROVISION: &str = "postgres-database";

/// A role of that name, as the backend holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoleFound {
    /// Whether it may log in (`false`: retired, or never a login role).
    pub can_login: bool,
    /// Whether it is a superuser (never managed, even when marked).
    pub superuser: bool,
    /// Whether it is a direct member of the marker role.
    pub marked: bool,
    /// Whether it is a direct member of the asking instance's marker role
    /// (`false` for a role an older version made, marked `mesh_provisioned`
    /// alone, until an instance that lists it adopts it).
    pub own: bool,
    /// Whether the administrator holds its privileges (a member of it, or
    /// a superuser): needed to own its database and end its sessions.
    pub admin_member: bool,
}

impl RoleFound {
    /// Whether the provider made it: marked and not a superuser.
    pub fn ours(&self) -> bool {
        self.marked && !self.superuser
    }
}

/// A database of that name, as the backend holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseFound {
    /// Whether the role of the same name owns it.
    pub owned_by_role: bool,
    /// Its comment, if any.
    pub comment: Option<String>,
}

/// Everything the backend holds under one name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The role, if it exists.
    pub role: Option<RoleFound>,
    /// The database, if it exists.
    pub database: Option<DatabaseFound>,
    /// Whether the administrator is a superuser (which needs no membership
    /// in a role to act as its owner).
    pub admin_superuser: bool,
    /// The other instances whose marker the role is a member of
    /// (`module@machine`, comma-separated), if any.
    pub others: Option<String>,
}

impl Found {
    /// Whether the administrator must first be made a member of the
    /// existing role `role` to act as its owner.
    fn admin_must_join(&self, role: &RoleFound) -> bool {
        !self.admin_superuser && !role.admin_member
    }
}

/// The administrator's own attributes, as the backend holds them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdminRights {
    /// `SUPERUSER`: may do everything, needs nothing else.
    pub superuser: bool,
    /// `CREATEROLE`: makes, alters and drops the consumers' roles.
    pub create_role: bool,
    /// `CREATEDB`: makes the consumers' databases.
    pub create_db: bool,
    /// `INHERIT`: holds the privileges of the roles it is a member of, so
    /// it may close, comment and drop their databases.
    pub inherit: bool,
}

/// Refuses an administrator that could make no consumer's provision:
/// neither a superuser nor holding `CREATEROLE`, `CREATEDB` and `INHERIT`.
///
/// # Errors
/// [`PostgresError::AdminLacks`] naming every attribute it lacks.
pub fn admin(name: &str, rights: &AdminRights) -> Result<(), PostgresError> {
    if rights.superuser {
        return Ok(());
    }
    let missing: Vec<&str> = [
        (rights.create_role, "CREATEROLE"),
        (rights.create_db, "CREATEDB"),
        (rights.inherit, "INHERIT"),
    ]
    .into_iter()
    .filter_map(|(held, attribute)| (!held).then_some(attribute))
    .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(PostgresError::AdminLacks {
        admin: name.to_owned(),
        grant: missing.join(" "),
        missing: listed(&missing),
    })
}

/// `A`, `A and B`, `A, B and C`.
fn listed(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What `ensure` must do, in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnsurePlan {
    /// Make the role, its password and its marks (one transaction).
    pub create_role: bool,
    /// Adopt a role an older version made (marked without an instance) as
    /// the asking instance's: it lists the consumer.
    pub adopt: bool,
    /// Make the administrator a member of the role (an administrator that
    /// is not a superuser needs it to own the role's database): in the same
    /// transaction as the role when it is made, else a statement of its own
    /// before the database's.
    pub admin_joins: bool,
    /// Make the database owned by the role.
    pub create_database: bool,
    /// Close the database to others and comment it.
    pub finish_database: bool,
}

impl EnsurePlan {
    /// Nothing to do: the provision is made.
    pub fn is_nothing(&self) -> bool {
        *self == EnsurePlan::default()
    }
}

/// Names the provider refuses whatever the backend holds: reserved by
/// PostgreSQL (`pg_*`, `public`, `none`) or its own marker role.
///
/// # Errors
/// [`PostgresError::Reserved`] naming the reason.
pub fn refuse_reserved(name: &str) -> Result<(), PostgresError> {
    let reason = if name == MARKER_ROLE {
        "it is the role mesh-postgres marks its roles with"
    } else if name.starts_with("pg_") {
        "names starting with pg_ are reserved by PostgreSQL"
    } else if name == "public" || name == "none" {
        "PostgreSQL reserves it as a role name"
    } else {
        return Ok(());
    };
    Err(PostgresError::Reserved {
        name: shown(name),
        reason,
    })
}

/// Refuses a consumer asking for another provision than [`PROVISION`].
///
/// # Errors
/// [`PostgresError::WrongProvision`].
pub fn refuse_other_provision(consumer: &str, provision: &str) -> Result<(), PostgresError> {
    if provision == PROVISION {
        Ok(())
    } else {
        Err(PostgresError::WrongProvision {
            consumer: consumer.to_owned(),
            provision: shown(provision),
        })
    }
}

/// What `ensure` does for `name`, given what the backend holds.
///
/// A role the provider did not make, or a database its role does not own,
/// is refused and never touched. A retired role stays retired: enabling it
/// again is the loop's decision (`re_enable`), not `ensure`'s.
///
/// # Errors
/// [`PostgresError::NotOurs`], [`PostgresError::DatabaseNotOurs`] or [`PostgresError::Reserved`].
pub fn ensure(name: &str, found: &Found) -> Result<EnsurePlan, PostgresError> {
    refuse_reserved(name)?;
    let (create_role, must_join, adopt) = match found.role {
        None => (true, !found.admin_superuser, false),
        Some(role) => {
            refuse_unless_made(name, &role)?;
            let adopt = match (role.own, &found.others) {
                (true, _) => false,
                (false, Some(by)) => {
                    return Err(PostgresError::OtherInstance {
                        name: name.to_owned(),
                        by: by.clone(),
                    })
                }
                (false, None) => true,
            };
            (false, found.admin_must_join(&role), adopt)
        }
    };
    match &found.database {
        None => Ok(EnsurePlan {
            create_role,
            adopt,
            admin_joins: must_join,
            create_database: true,
            finish_database: true,
        }),
        // Made by someone else: a database with no role of that name cannot
        // be owned by it, so it was not made by mesh either.
        Some(database) if create_role || !database.owned_by_role => {
            Err(PostgresError::DatabaseNotOurs {
                name: name.to_owned(),
            })
        }
        Some(database) => {
            let finish_database =
                database.comment.as_deref() != Some(database_comment(name).as_str());
            Ok(EnsurePlan {
                create_role: false,
                adopt,
                admin_joins: must_join && finish_database,
                create_database: false,
                finish_database,
            })
        }
    }
}

/// Refuses a role the asking instance did not make, or that another
/// instance claims too: what retire, re-enable, delete and a password
/// reset act on.
///
/// # Errors
/// [`PostgresError::NotOurs`] naming why; [`PostgresError::OtherInstance`].
pub fn refuse_unless_ours(name: &str, found: &Found) -> Result<RoleFound, PostgresError> {
    let Some(role) = found.role else {
        return Err(PostgresError::NoRole {
            name: name.to_owned(),
        });
    };
    refuse_unless_made(name, &role)?;
    if let Some(by) = &found.others {
        return Err(PostgresError::OtherInstance {
            name: name.to_owned(),
            by: by.clone(),
        });
    }
    if !role.own {
        return Err(PostgresError::NotOurs {
            name: name.to_owned(),
            why: "it was made before instance marks and only an instance listing it adopts it",
        });
    }
    Ok(role)
}

/// Refuses a role mesh-postgres did not make (whichever instance).
///
/// # Errors
/// [`PostgresError::NotOurs`] naming why.
fn refuse_unless_made(name: &str, role: &RoleFound) -> Result<(), PostgresError> {
    if role.superuser {
        return Err(PostgresError::NotOurs {
            name: name.to_owned(),
            why: "it is a superuser, which mesh-postgres never manages",
        });
    }
    if !role.marked {
        return Err(PostgresError::NotOurs {
            name: name.to_owned(),
            why: "it is not a member of mesh_provisioned, so mesh-postgres did not make it",
        });
    }
    Ok(())
}

/// What `delete` does for `name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeletePlan {
    /// Nothing left: it was deleted already.
    Nothing,
    /// Drop the role only (its database is gone).
    DropRole,
    /// Drop the database (ending its sessions), then the role.
    DropBoth {
        /// Make the administrator a member of the role first, to act as
        /// the database's owner.
        admin_joins: bool,
    },
}

/// What `delete` does for `name`, given what the backend holds.
///
/// # Errors
/// [`PostgresError::NotOurs`] for a role the provider did not make;
/// [`PostgresError::DatabaseNotOurs`] when the database of that name is not owned
/// by the provider's role (nothing is dropped then).
pub fn delete(name: &str, found: &Found) -> Result<DeletePlan, PostgresError> {
    if found.role.is_none() {
        return Ok(DeletePlan::Nothing);
    }
    let role = refuse_unless_ours(name, found)?;
    match &found.database {
        None => Ok(DeletePlan::DropRole),
        Some(database) if database.owned_by_role => Ok(DeletePlan::DropBoth {
            admin_joins: found.admin_must_join(&role),
        }),
        Some(_) => Err(PostgresError::DatabaseNotOurs {
            name: name.to_owned(),
        }),
    }
}

/// Refuses `retire` / `re_enable` / a password reset on anything but a
/// role the provider made.
///
/// # Errors
/// [`PostgresError::NoRole`] when there is no such role; [`PostgresError::NotOurs`]
/// for a role the provider did not make.
pub fn alter(name: &str, found: &Found) -> Result<RoleFound, PostgresError> {
    refuse_unless_ours(name, found)
}

/// What `retire` does for `name`: whether the administrator must first be
/// made a member of the role (ending a role's sessions takes its
/// privileges, a role a superuser made earlier lacks the membership).
///
/// # Errors
/// As [`alter`].
pub fn retire(name: &str, found: &Found) -> Result<bool, PostgresError> {
    let role = alter(name, found)?;
    Ok(found.admin_must_join(&role))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: RoleFound = RoleFound {
        can_login: true,
        superuser: false,
        marked: true,
        own: true,
        admin_member: true,
    };
    /// Made by a version before instance marks: `mesh_provisioned` alone.
    const UNOWNED: RoleFound = RoleFound { own: false, ..OURS };
    const RETIRED: RoleFound = RoleFound {
        can_login: false,
        ..OURS
    };
    const FOREIGN: RoleFound = RoleFound {
        marked: false,
        own: false,
        ..OURS
    };
    const MARKED_SUPERUSER: RoleFound = RoleFound {
        superuser: true,
        ..OURS
    };
    /// Made by the provider as a superuser: the administrator is no member.
    const NOT_JOINED: RoleFound = RoleFound {
        admin_member: false,
        ..OURS
    };

    fn db(owned_by_role: bool, comment: Option<&str>) -> Option<DatabaseFound> {
        Some(DatabaseFound {
            owned_by_role,
            comment: comment.map(str::to_owned),
        })
    }

    fn found(role: Option<RoleFound>, database: Option<DatabaseFound>) -> Found {
        Found {
            role,
            database,
            admin_superuser: false,
            others: None,
        }
    }

    /// As `found`, the role also marked by the instances `by`.
    fn claimed(role: RoleFound, database: Option<DatabaseFound>, by: &str) -> Found {
        Found {
            others: Some(by.to_owned()),
            ..found(Some(role), database)
        }
    }

    const ALL: EnsurePlan = EnsurePlan {
        adopt: false,
        create_role: true,
        admin_joins: true,
        create_database: true,
        finish_database: true,
    };
    const DATABASE: EnsurePlan = EnsurePlan {
        adopt: false,
        create_role: false,
        admin_joins: false,
        create_database: true,
        finish_database: true,
    };
    const FINISH: EnsurePlan = EnsurePlan {
        adopt: false,
        create_role: false,
        admin_joins: false,
        create_database: false,
        finish_database: true,
    };

    #[test]
    fn ensure_makes_what_is_missing_and_refuses_what_is_not_ours() {
        let comment = database_comment("forge");
        let done = Some(comment.as_str());
        let cases: Vec<(Found, Result<EnsurePlan, &str>)> = vec![
            (found(None, None), Ok(ALL)),
            (found(Some(OURS), None), Ok(DATABASE)),
            (found(Some(OURS), db(true, None)), Ok(FINISH)),
            (
                found(Some(OURS), db(true, Some("another comment"))),
                Ok(FINISH),
            ),
            (found(Some(OURS), db(true, done)), Ok(EnsurePlan::default())),
            // Retired stays retired: ensure does not enable it.
            (
                found(Some(RETIRED), db(true, done)),
                Ok(EnsurePlan::default()),
            ),
            (
                found(Some(FOREIGN), None),
                Err("not a member of mesh_provisioned"),
            ),
            (
                found(Some(FOREIGN), db(true, done)),
                Err("not a member of mesh_provisioned"),
            ),
            (found(Some(MARKED_SUPERUSER), None), Err("superuser")),
            (
                found(None, db(false, None)),
                Err("database \"forge\" exists"),
            ),
            (
                found(Some(OURS), db(false, done)),
                Err("database \"forge\" exists"),
            ),
        ];
        for (found, expected) in cases {
            let got = ensure("forge", &found);
            match (got, expected) {
                (Ok(plan), Ok(want)) => assert_eq!(plan, want, "{found:?}"),
                (Err(error), Err(expected)) => {
                    let text = error.to_string();
                    assert!(text.contains(expected), "{found:?}: {text}");
                    assert!(text.contains("left untouched"), "{text}");
                }
                (got, want) => panic!("{found:?}: got {got:?}, want {want:?}"),
            }
        }
        assert!(EnsurePlan::default().is_nothing());
        assert!(!ALL.is_nothing());
    }

    /// Two instances on one server: each makes, lists and acts on its own
    /// roles only; a role an older version made is adopted by `ensure`
    /// alone (the instance lists it) and is nobody's to retire before.
    #[test]
    fn an_instance_acts_only_on_what_it_made_and_adopts_only_in_ensure() {
        let comment = database_comment("forge");
        let done = db(true, Some(comment.as_str()));
        let theirs = |role| claimed(role, done.clone(), "postgres@db-2");
        // ensure
        let adopt = EnsurePlan {
            adopt: true,
            ..EnsurePlan::default()
        };
        assert_eq!(
            ensure("forge", &found(Some(UNOWNED), done.clone())).unwrap(),
            adopt
        );
        assert_eq!(
            ensure("forge", &found(Some(OURS), done.clone())).unwrap(),
            EnsurePlan::default()
        );
        let refused = ensure("forge", &theirs(UNOWNED)).unwrap_err().to_string();
        assert_eq!(
            refused,
            "role \"forge\" was made by another mesh-postgres instance (postgres@db-2); it is left untouched"
        );
        // Claimed by this instance and another (a hand-over half done):
        // served, never retired, re-enabled, deleted or reset.
        assert_eq!(
            ensure("forge", &theirs(OURS)).unwrap(),
            EnsurePlan::default()
        );
        for found in [theirs(OURS), theirs(UNOWNED)] {
            assert!(
                matches!(
                    retire("forge", &found),
                    Err(PostgresError::OtherInstance { .. })
                ),
                "{found:?}"
            );
            assert!(
                matches!(
                    alter("forge", &found),
                    Err(PostgresError::OtherInstance { .. })
                ),
                "{found:?}"
            );
            assert!(
                matches!(
                    delete("forge", &found),
                    Err(PostgresError::OtherInstance { .. })
                ),
                "{found:?}"
            );
        }
        // Unowned: not this instance's to retire, re-enable, reset or delete.
        let unowned = found(Some(UNOWNED), done.clone());
        let error = retire("forge", &unowned).unwrap_err().to_string();
        assert!(error.contains("made before instance marks"), "{error}");
        assert!(matches!(
            alter("forge", &unowned),
            Err(PostgresError::NotOurs { .. })
        ));
        assert!(matches!(
            delete("forge", &unowned),
            Err(PostgresError::NotOurs { .. })
        ));
        // Not mesh's at all: the old refusal, whatever the instances.
        assert!(matches!(
            ensure("forge", &found(Some(FOREIGN), None)),
            Err(PostgresError::NotOurs { .. })
        ));
    }

    #[test]
    fn reserved_names_are_refused_before_anything() {
        for name in [
            "mesh_provisioned",
            "pg_monitor",
            "pg_anything",
            "public",
            "none",
        ] {
            let error = ensure(name, &Found::default()).unwrap_err();
            assert!(
                matches!(error, PostgresError::Reserved { .. }),
                "{name}: {error}"
            );
        }
        for name in ["postgres", "pgx", "publicity", "nonea", "mesh_provisioned2"] {
            assert!(refuse_reserved(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn only_the_served_provision_is_accepted() {
        assert!(refuse_other_provision("forge", PROVISION).is_ok());
        let error = refuse_other_provision("forge", "oidc-client").unwrap_err();
        assert!(error.to_string().contains("oidc-client"), "{error}");
    }

    #[test]
    fn delete_drops_only_what_it_made() {
        let cases: Vec<(Found, Result<DeletePlan, &str>)> = vec![
            (found(None, None), Ok(DeletePlan::Nothing)),
            (found(None, db(false, None)), Ok(DeletePlan::Nothing)),
            (found(Some(RETIRED), None), Ok(DeletePlan::DropRole)),
            (
                found(Some(RETIRED), db(true, None)),
                Ok(DeletePlan::DropBoth { admin_joins: false }),
            ),
            (
                found(Some(NOT_JOINED), db(true, None)),
                Ok(DeletePlan::DropBoth { admin_joins: true }),
            ),
            (found(Some(NOT_JOINED), None), Ok(DeletePlan::DropRole)),
            (found(Some(RETIRED), db(false, None)), Err("database")),
            (found(Some(FOREIGN), db(true, None)), Err("not a member")),
            (found(Some(MARKED_SUPERUSER), None), Err("superuser")),
        ];
        for (found, expected) in cases {
            match (delete("forge", &found), expected) {
                (Ok(plan), Ok(want)) => assert_eq!(plan, want, "{found:?}"),
                (Err(error), Err(expected)) => {
                    assert!(error.to_string().contains(expected), "{found:?}: {error}")
                }
                (got, want) => panic!("{found:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn alter_needs_a_role_it_made() {
        assert_eq!(alter("forge", &found(Some(OURS), None)).unwrap(), OURS);
        assert!(matches!(
            alter("forge", &found(None, None)),
            Err(PostgresError::NoRole { .. })
        ));
        assert!(matches!(
            alter("forge", &found(Some(FOREIGN), None)),
            Err(PostgresError::NotOurs { .. })
        ));
        assert!(matches!(
            alter("forge", &found(Some(MARKED_SUPERUSER), None)),
            Err(PostgresError::NotOurs { .. })
        ));
    }

    #[test]
    fn an_administrator_that_is_no_superuser_joins_the_roles_it_acts_as_owner_of() {
        let comment = database_comment("forge");
        let done = Some(comment.as_str());
        let as_superuser = |role, database| Found {
            admin_superuser: true,
            ..found(role, database)
        };
        let joins = |plan: EnsurePlan| EnsurePlan {
            admin_joins: true,
            ..plan
        };
        let cases: Vec<(Found, EnsurePlan)> = vec![
            // A new role: joined in the role's own transaction, unless a superuser.
            (found(None, None), ALL),
            (
                as_superuser(None, None),
                EnsurePlan {
                    admin_joins: false,
                    ..ALL
                },
            ),
            // A role made earlier as a superuser: joined before its database is made or finished.
            (found(Some(NOT_JOINED), None), joins(DATABASE)),
            (found(Some(NOT_JOINED), db(true, None)), joins(FINISH)),
            (as_superuser(Some(NOT_JOINED), None), DATABASE),
            // Nothing to do as the owner: no membership asked for.
            (
                found(Some(NOT_JOINED), db(true, done)),
                EnsurePlan::default(),
            ),
        ];
        for (found, want) in cases {
            assert_eq!(ensure("forge", &found).unwrap(), want, "{found:?}");
        }
        assert!(!retire("forge", &found(Some(OURS), None)).unwrap());
        assert!(retire("forge", &found(Some(NOT_JOINED), None)).unwrap());
        assert!(!retire("forge", &as_superuser(Some(NOT_JOINED), None)).unwrap());
        assert!(matches!(
            retire("forge", &found(Some(FOREIGN), None)),
            Err(PostgresError::NotOurs { .. })
        ));
    }

    #[test]
    fn an_administrator_lacking_an_attribute_is_refused_naming_each() {
        let all = AdminRights {
            superuser: false,
            create_role: true,
            create_db: true,
            inherit: true,
        };
        let cases: Vec<(AdminRights, Option<(&str, &str)>)> = vec![
            (all, None),
            (
                AdminRights {
                    superuser: true,
                    ..AdminRights::default()
                },
                None,
            ),
            (
                AdminRights {
                    create_db: false,
                    ..all
                },
                Some(("lacks CREATEDB;", "ALTER ROLE \"mesh_admin\" CREATEDB ")),
            ),
            (
                AdminRights {
                    create_role: false,
                    create_db: false,
                    ..all
                },
                Some((
                    "lacks CREATEROLE and CREATEDB;",
                    "ALTER ROLE \"mesh_admin\" CREATEROLE CREATEDB ",
                )),
            ),
            (
                AdminRights::default(),
                Some((
                    "lacks CREATEROLE, CREATEDB and INHERIT;",
                    "CREATEROLE CREATEDB INHERIT",
                )),
            ),
        ];
        for (rights, want) in cases {
            match (admin("mesh_admin", &rights), want) {
                (Ok(()), None) => {}
                (Err(error), Some((lacks, grant))) => {
                    let text = error.to_string();
                    assert!(text.contains(&format!("\"mesh_admin\" {lacks}")), "{text}");
                    assert!(text.contains(grant), "{text}");
                }
                (got, want) => panic!("{rights:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
