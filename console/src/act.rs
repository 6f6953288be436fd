//! Acting from the console: a session whose token may act approves a
//! retirement or a deletion (asked of the provider over the bus, with
//! `--approvals`) and attaches notes; each is a row of history naming who.
//!
//! Every form carries the session's CSRF value beside the cookie's
//! `SameSite=Strict`; a confirmation page names what an approval will do
//! before its button does it; the provider's answer is shown and recorded.
//! The console deletes no consumer the declaration still requires.

use std::time::Duration;

use axum::http::header::LOCATION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use mesh_pg_store::{note_text, DatabaseOptions, Note, PgStore, MAX_NOTE_CHARS};
use mesh_protocol::{ModuleId, Name, Timestamp};
use mesh_runtime::nats::approve;
use mesh_status::model::history::{ActionChange, ActionWord};
use mesh_status::model::ParsedDeclaration;
use mesh_status::render::html::{self, act, document_for, Page};
use serde::Deserialize;

use crate::auth::{Access, Viewer};
use crate::sessions::Who;

/// The longest acknowledgement reason kept, in characters.
const MAX_ACK_CHARS: usize = 200;

/// What acting needs: who may, the bus (none without `--approvals`), the
/// store, and how long a provider may take to answer.
pub(crate) struct Actions {
    /// The console's bus connection for approvals; none: approvals are
    /// not offered.
    pub(crate) bus: Option<async_nats::Client>,
    /// The store (the console's role, which `migrate --reader-records`
    /// lets add history rows).
    pub(crate) options: DatabaseOptions,
    /// How long an approval waits for the provider's answer.
    pub(crate) timeout: Duration,
}

/// `page` for the session of `who` (named in the bar, beside its log-out).
fn html(status: StatusCode, page: &Page, who: Option<(&Who, &str)>) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
        document_for(page, who.map(|(w, csrf)| (w.name.as_str(), csrf))),
    )
        .into_response()
}

/// Why an action is refused: its status, title and text.
struct Refusal {
    status: StatusCode,
    title: &'static str,
    text: String,
}

impl Refusal {
    fn new(status: StatusCode, title: &'static str, text: impl Into<String>) -> Refusal {
        Refusal {
            status,
            title,
            text: text.into(),
        }
    }

    fn response(self) -> Response {
        html(self.status, &act::refused(self.title, &self.text), None)
    }
}

fn refusal(status: StatusCode, title: &'static str, text: &str) -> Response {
    Refusal::new(status, title, text).response()
}

/// Who may act, with their session's form value and cookie; else the
/// answer that says why not (403).
fn actor(viewer: &Viewer) -> Result<(&Who, &str, &str), Refusal> {
    let forbidden = |text: &str| Err(Refusal::new(StatusCode::FORBIDDEN, "not allowed", text));
    match viewer {
        Viewer::Anyone => forbidden(
            "This console asks for no token, so nobody acts from it. Give it --token-file with \
             a NAME:TOKEN line to act as NAME.",
        ),
        Viewer::Bearer(_) => forbidden(
            "A bearer token only reads. Log in through the form at /login to act: each action \
             is then recorded under your token's name.",
        ),
        Viewer::Session { who, .. } if !who.may_act => forbidden(&format!(
            "{}'s token may only look (read-only in the console's token file).",
            who.name
        )),
        Viewer::Session { who, csrf, cookie } => Ok((who, csrf, cookie)),
    }
}

/// An approval's fields, as its confirmation link and form send them.
#[derive(Deserialize)]
pub(crate) struct ApproveAsked {
    provider: String,
    consumer: String,
    #[serde(default)]
    delete: Option<String>,
    #[serde(default)]
    csrf: Option<String>,
}

/// `value` of form field `field` parsed by `parse`, or why not (`what` it should be).
fn field<T, E>(
    field: &str,
    value: &str,
    what: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, String> {
    parse(value).map_err(|_| format!("{field}: {value:?} is not {what}"))
}

impl ApproveAsked {
    fn parsed(&self) -> Result<(ModuleId, Name, bool), Refusal> {
        let bad =
            |what: String| Refusal::new(StatusCode::BAD_REQUEST, "not a valid approval", what);
        let provider = field(
            "provider",
            &self.provider,
            "module@machine",
            ModuleId::parse,
        )
        .map_err(bad)?;
        let consumer = field("consumer", &self.consumer, "a name", Name::parse).map_err(bad)?;
        let delete = match self.delete.as_deref() {
            None | Some("" | "0") => false,
            Some("1") => true,
            Some(other) => return Err(bad(format!("delete: {other:?} is neither 0 nor 1"))),
        };
        Ok((provider, consumer, delete))
    }
}

/// A note's fields.
#[derive(Deserialize)]
pub(crate) struct NoteAsked {
    consumer: String,
    provider: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    csrf: Option<String>,
}

/// The consumer and the provider a form is about (fields `consumer` and
/// `provider`), the consumer requiring from that provider as the
/// declaration says.
fn about(
    consumer: &str,
    provider: &str,
    declaration: &ParsedDeclaration,
) -> Result<(ModuleId, ModuleId), Refusal> {
    let bad = |what: String| Refusal::new(StatusCode::BAD_REQUEST, "not a valid form", what);
    let consumer = field("consumer", consumer, "consumer@machine", ModuleId::parse).map_err(bad)?;
    let provider = field("provider", provider, "module@machine", ModuleId::parse).map_err(bad)?;
    let from = declaration.declaration.requirements(&consumer);
    if !from.iter().any(|(_, p)| *p == provider) {
        return Err(bad(format!(
            "the declaration does not say {consumer} requires anything from {provider}"
        )));
    }
    Ok((consumer, provider))
}

/// An acknowledgement's fields.
#[derive(Deserialize)]
pub(crate) struct AckAsked {
    consumer: String,
    provider: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default, rename = "for")]
    lasting: Option<String>,
    #[serde(default)]
    csrf: Option<String>,
}

impl AckAsked {
    /// How long it holds: one of the form's choices.
    fn lasting(&self) -> Result<Duration, Refusal> {
        let given = self.lasting.as_deref().unwrap_or_default();
        match act::ACKNOWLEDGE_FOR.contains(&given) {
            true => humantime::parse_duration(given).map_err(|e| {
                Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "not a valid acknowledgement",
                    e.to_string(),
                )
            }),
            false => Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "not a valid acknowledgement",
                format!(
                    "for: {given:?} is none of {}",
                    act::ACKNOWLEDGE_FOR.join(", ")
                ),
            )),
        }
    }
}

/// Who sent a form that acts: a session that may act, the form carrying
/// that session's own value (`given`), and that value; else the answer
/// that says why not.
fn sender<'v>(
    access: &Access,
    viewer: &'v Viewer,
    given: Option<&str>,
) -> Result<(&'v Who, &'v str), Refusal> {
    let (who, csrf, cookie) = actor(viewer)?;
    match access.csrf_matches(cookie, given.unwrap_or_default()) {
        true => Ok((who, csrf)),
        false => Err(stale_form()),
    }
}

/// A form whose value is not its session's: 403 saying what to do.
fn stale_form() -> Refusal {
    Refusal::new(
        StatusCode::FORBIDDEN,
        "form refused",
        "This form does not carry your session's value: it may come from before a log-out or a \
         restart of the console, or from another site. Open the page again and send it from there.",
    )
}

impl Actions {
    /// `GET /act/approve`: the confirmation of an approval.
    pub(crate) fn confirm(
        &self,
        viewer: &Viewer,
        asked: &ApproveAsked,
        declaration: &ParsedDeclaration,
    ) -> Response {
        let (who, csrf, _) = match actor(viewer) {
            Ok(a) => a,
            Err(refused) => return refused.response(),
        };
        if self.bus.is_none() {
            return no_bus();
        }
        let (provider, consumer, delete) = match asked.parsed() {
            Ok(p) => p,
            Err(refused) => return refused.response(),
        };
        let requiring = requiring(declaration, &provider, &consumer, delete);
        html(
            StatusCode::OK,
            &act::approve_confirm(&provider, &consumer, delete, &requiring, csrf),
            Some((who, csrf)),
        )
    }

    /// `POST /act/approve`: asks the provider, records the action and its
    /// answer in history, and shows both.
    pub(crate) async fn approve(
        &self,
        access: &Access,
        viewer: &Viewer,
        asked: &ApproveAsked,
        declaration: &ParsedDeclaration,
    ) -> Response {
        let (who, csrf) = match sender(access, viewer, asked.csrf.as_deref()) {
            Ok(sent) => sent,
            Err(refused) => return refused.response(),
        };
        let Some(bus) = &self.bus else {
            return no_bus();
        };
        let (provider, consumer, delete) = match asked.parsed() {
            Ok(p) => p,
            Err(refused) => return refused.response(),
        };
        if !requiring(declaration, &provider, &consumer, delete).is_empty() {
            return refusal(
                StatusCode::CONFLICT,
                "not deleted",
                &format!(
                    "The declaration still requires {consumer} from {provider}: the console \
                     deletes no consumer the declaration requires. Nothing was sent."
                ),
            );
        }
        let action = match delete {
            true => ActionWord::ApproveDelete,
            false => ActionWord::Approve,
        };
        let asked_at = Timestamp::now();
        let (ok, answer) =
            match approve(bus, &provider, &consumer, delete, self.timeout, asked_at).await {
                Ok(answer) => (
                    answer.is_done(),
                    answer.describe(&provider, "is it running and connected?"),
                ),
                Err(error) => (false, format!("not sent: {error}")),
            };
        tracing::info!(
            by = %who.name,
            action = %action,
            provider = %provider,
            consumer = %consumer,
            done = ok,
            "an approval from the console"
        );
        let row = ActionChange {
            provider: provider.clone(),
            consumer: consumer.clone(),
            consumer_machine: None,
            action,
            by: who.name.to_string(),
            ok,
            answer: answer.clone(),
            until: None,
        };
        let mut store = PgStore::new(self.options.clone());
        let recorded = store.add_action(&row).await;
        if let Err(error) = &recorded {
            tracing::warn!(error = %error, by = %who.name, "the console could not record an action");
        }
        let why = recorded.as_ref().err().map(|e| {
            format!("{e} (the console's store role needs mesh-controller migrate --reader-records)")
        });
        let name = who.name.to_string();
        let recorded = match &why {
            None => Ok(name.as_str()),
            Some(why) => Err(why.as_str()),
        };
        html(
            StatusCode::OK,
            &act::answer(&provider, &consumer, delete, ok, &answer, recorded),
            Some((who, csrf)),
        )
    }

    /// `GET /act/note`: the note form.
    pub(crate) fn note_form(
        &self,
        viewer: &Viewer,
        asked: &NoteAsked,
        declaration: &ParsedDeclaration,
    ) -> Response {
        form_about(
            viewer,
            &asked.consumer,
            &asked.provider,
            declaration,
            |c, p, csrf| act::note_form(c, p, MAX_NOTE_CHARS, csrf),
        )
    }

    /// `POST /act/note`: writes the note, then back to the consumer's page
    /// (303), where its history lists it.
    pub(crate) async fn note(
        &self,
        access: &Access,
        viewer: &Viewer,
        asked: &NoteAsked,
        declaration: &ParsedDeclaration,
    ) -> Response {
        let (who, _) = match sender(access, viewer, asked.csrf.as_deref()) {
            Ok(sent) => sent,
            Err(refused) => return refused.response(),
        };
        let (consumer, provider) = match about(&asked.consumer, &asked.provider, declaration) {
            Ok(p) => p,
            Err(refused) => return refused.response(),
        };
        let text = match note_text(asked.text.as_deref().unwrap_or_default()) {
            Ok(text) => text,
            Err(error) => {
                return refusal(StatusCode::BAD_REQUEST, "note not kept", &error.to_string())
            }
        };
        let by = who.name.to_string();
        let mut store = PgStore::new(self.options.clone());
        let written = store
            .add_note(&Note {
                provider: &provider,
                consumer: &consumer,
                text: &text,
                by: &by,
            })
            .await;
        match written {
            Ok(_) => {
                tracing::info!(by = %by, consumer = %consumer, provider = %provider, "a note from the console");
                back_to(&consumer)
            }
            Err(error) => {
                tracing::warn!(error = %error, by = %by, "the console could not keep a note");
                unrecorded(&error)
            }
        }
    }

    /// `GET /act/acknowledge`: the acknowledgement form.
    pub(crate) fn acknowledge_form(
        &self,
        viewer: &Viewer,
        asked: &AckAsked,
        declaration: &ParsedDeclaration,
    ) -> Response {
        form_about(
            viewer,
            &asked.consumer,
            &asked.provider,
            declaration,
            |c, p, csrf| act::acknowledge_form(c, p, MAX_ACK_CHARS, csrf),
        )
    }

    /// `POST /act/acknowledge`: records who is on the consumer's problem,
    /// why and until when, then back to its page (303). No verdict changes.
    pub(crate) async fn acknowledge(
        &self,
        access: &Access,
        viewer: &Viewer,
        asked: &AckAsked,
        declaration: &ParsedDeclaration,
    ) -> Response {
        let (who, _) = match sender(access, viewer, asked.csrf.as_deref()) {
            Ok(sent) => sent,
            Err(refused) => return refused.response(),
        };
        let parsed = about(&asked.consumer, &asked.provider, declaration)
            .and_then(|(c, p)| Ok((c, p, asked.lasting()?)));
        let (consumer, provider, lasting) = match parsed {
            Ok(p) => p,
            Err(refused) => return refused.response(),
        };
        let reason = match note_text(asked.reason.as_deref().unwrap_or_default()) {
            Ok(r) if r.chars().count() <= MAX_ACK_CHARS => r,
            Ok(_) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    "not acknowledged",
                    &format!(
                        "the reason is longer than {MAX_ACK_CHARS} characters: say it shorter"
                    ),
                )
            }
            Err(error) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    "not acknowledged",
                    &error.to_string(),
                )
            }
        };
        let until = Timestamp::from_system(Timestamp::now().system_time() + lasting);
        let row = ActionChange {
            provider: provider.clone(),
            consumer: consumer.module.clone(),
            consumer_machine: Some(consumer.machine.clone()),
            action: ActionWord::Acknowledge,
            by: who.name.to_string(),
            ok: true,
            answer: reason,
            until: Some(until),
        };
        let mut store = PgStore::new(self.options.clone());
        match store.add_action(&row).await {
            Ok(_) => {
                tracing::info!(by = %who.name, consumer = %consumer, provider = %provider, until = %until, "an acknowledgement from the console");
                back_to(&consumer)
            }
            Err(error) => {
                tracing::warn!(error = %error, by = %who.name, "the console could not record an acknowledgement");
                unrecorded(&error)
            }
        }
    }
}

/// A form's page about a consumer and the provider it requires from, for
/// a session that may act: `page` renders it with the session's value.
fn form_about(
    viewer: &Viewer,
    consumer: &str,
    provider: &str,
    declaration: &ParsedDeclaration,
    page: impl FnOnce(&ModuleId, &ModuleId, &str) -> Page,
) -> Response {
    let found = actor(viewer).and_then(|(who, csrf, _)| {
        let (consumer, provider) = about(consumer, provider, declaration)?;
        Ok((who, csrf, consumer, provider))
    });
    match found {
        Ok((who, csrf, consumer, provider)) => html(
            StatusCode::OK,
            &page(&consumer, &provider, csrf),
            Some((who, csrf)),
        ),
        Err(refused) => refused.response(),
    }
}

/// 303 to `consumer`'s page.
fn back_to(consumer: &ModuleId) -> Response {
    let path = html::consumer_path(consumer.module.as_str(), consumer.machine.as_str());
    let location = HeaderValue::from_str(&path).unwrap_or(HeaderValue::from_static("/"));
    (StatusCode::SEE_OTHER, [(LOCATION, location)]).into_response()
}

/// 503: the store did not take a person's row, and why.
fn unrecorded(error: &mesh_pg_store::PgError) -> Response {
    refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        "not recorded",
        &format!(
            "The store did not take it: {error}. The console's store role needs \
             mesh-controller migrate --reader-records."
        ),
    )
}

/// The declared instances that require `consumer` from `provider`, when
/// it is a deletion (`delete`); none otherwise.
fn requiring(
    declaration: &ParsedDeclaration,
    provider: &ModuleId,
    consumer: &Name,
    delete: bool,
) -> Vec<String> {
    match delete {
        false => Vec::new(),
        true => declaration
            .declaration
            .requiring(provider, consumer)
            .into_iter()
            .map(ToString::to_string)
            .collect(),
    }
}

fn no_bus() -> Response {
    refusal(
        StatusCode::FORBIDDEN,
        "approvals are off",
        "This console is not on the bus, so it asks no provider for approvals: start it with \
         --approvals and the bus flags (its user from mesh-controller permissions --console \
         NAME), or run mesh-controller approve from a terminal.",
    )
}
