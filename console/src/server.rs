//! The console's server: the mesh as web pages, read-only, over the
//! same reads and engine as `status` (`pages`), kept current in open
//! pages by one shared reader and server-sent events (`live`), behind a
//! token when one is given (`auth`), over TLS when a certificate is
//! given (`tls`).
//!
//! Routes (every page works without JavaScript):
//! - `GET /`, `/machine/{machine}`, `/provider/{module}@{machine}`,
//!   `/consumer/{consumer}@{machine}`: a page (404 when the declaration
//!   does not name it, 503 when the store cannot be read).
//! - `GET /events?page=PATH`: server-sent events for the page at PATH:
//!   `event: main`, an increasing `id`, `data:` the page's new `<main>`
//!   fragment, sent when it differs from the one sent last.
//! - `GET /assets/console.css`, `/assets/console.js`: embedded, public.
//! - `GET /login`, `POST /login` (form field `token`): with a token, sets
//!   the session cookie and sends the browser to `/`.
//!
//! With a token every other route answers 401 (a login form, the token
//! never echoed) unless the request has it as `Authorization: Bearer T` or
//! has the session cookie.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Form, Query, Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_TYPE, LOCATION, RETRY_AFTER, SET_COOKIE, WWW_AUTHENTICATE,
};
use axum::http::{HeaderValue, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Extension;
use axum::Router;
use mesh_protocol::Timestamp;
use mesh_runtime::{Secret, Stop};
use mesh_status::model::ParsedDeclaration;
use mesh_status::render::html::{self, document, document_for, login, notice, Page};
use serde::Deserialize;
use tokio_util::task::AbortOnDropHandle;

use crate::act::{AckAsked, Actions, ApproveAsked, NoteAsked};
use crate::auth::{Access, Viewer, COOKIE_NAME};
use crate::conns::{self, Limits};
use crate::limits::{LoginLimit, LOGIN_ADDRESSES, LOGIN_BURST, LOGIN_EVERY};
use crate::live::Live;
use crate::pages::{consumer_query, unreadable, Acting, PageKey, Pages, ReportSettings};
use crate::tls::{self, ConsoleTlsError};
use crate::tokens::{TokenFileError, Tokens};
use crate::watch::{PageOutcome, Watch};
use mesh_pg_store::{DatabaseOptions, PgStore};

/// The default `--listen`: this machine only (9464 is the Prometheus
/// exporters' neighbourhood; 9480 is free of the well-known ones).
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:9480";

/// How the console runs.
#[derive(Clone, Debug)]
pub(crate) struct ConsoleArgs {
    /// The address to listen on.
    pub(crate) listen: String,
    /// The token's file; none: no token asked.
    pub(crate) token_file: Option<PathBuf>,
    /// The certificate chain and key (PEM); none: plain HTTP.
    pub(crate) tls: Option<(PathBuf, PathBuf)>,
    /// How the pages report.
    pub(crate) settings: ReportSettings,
    /// What connections may hold.
    pub(crate) limits: Limits,
    /// Where to serve `/metrics`, `/healthz` and `/readyz`; none: nowhere.
    pub(crate) metrics_listen: Option<String>,
    /// With `--approvals`: the bus, for asking providers; none: approvals
    /// are not offered.
    pub(crate) approvals: Option<mesh_runtime::NatsArgs>,
    /// How long an approval waits for the provider's answer.
    pub(crate) approve_timeout: std::time::Duration,
}

/// How often the store is asked whether it answers, with `--metrics-listen`.
const READY_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How long it may take to answer.
const READY_CHECK_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The console could not start. Ends the command (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The address cannot be listened on.
    #[error("cannot listen on {addr} for the console: {source}")]
    Listen {
        /// The address given.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The token file cannot be read.
    #[error(transparent)]
    Token(#[from] mesh_runtime::secret::SecretFileError),
    /// The token file holds what it should not.
    #[error("the console token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, never a token.
        #[source]
        source: TokenFileError,
    },
    /// The bus cannot be set up for approvals.
    #[error("--approvals: {0}")]
    Bus(#[from] mesh_runtime::BusError),
    /// `--metrics-listen` cannot be listened on.
    #[error(transparent)]
    MetricsListen(#[from] mesh_runtime::endpoints::ListenError),
    /// The certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] ConsoleTlsError),
    /// Serving stopped with an error.
    #[error("the console stopped serving: {0}")]
    Serve(#[source] std::io::Error),
}

struct Console {
    pages: Arc<Pages>,
    live: Arc<Live>,
    access: Arc<Access>,
    /// What sessions may do.
    actions: Actions,
    /// Wrong tokens at the login, per client address.
    logins: std::sync::Mutex<LoginLimit>,
    /// Its series and checks.
    watch: Arc<Watch>,
    options: DatabaseOptions,
    /// Store connections a page request left, for the next ones (a new
    /// connection's login costs more than most pages' reads).
    idle: std::sync::Mutex<Vec<PgStore>>,
}

/// How many store connections the page requests keep open between them.
const IDLE_STORES: usize = 4;

/// Serves the console until `stop` is requested.
///
/// # Errors
/// [`ConsoleError`] when it cannot start (the address, the token, TLS).
pub(crate) async fn serve(
    options: DatabaseOptions,
    declaration: ParsedDeclaration,
    args: &ConsoleArgs,
    stop: &Stop,
) -> Result<(), ConsoleError> {
    let tokens = match &args.token_file {
        Some(path) => {
            let text = Secret::from_file(path, "console token")?;
            let tokens =
                Tokens::parse(text.expose()).map_err(|source| ConsoleError::TokenFile {
                    path: path.clone(),
                    source,
                })?;
            Some(tokens)
        }
        None => None,
    };
    let tls = match &args.tls {
        Some((cert, key)) => Some(tls::config(cert, key)?),
        None => None,
    };
    let access = Arc::new(Access::new(tokens, tls.is_some()));
    let bus = match &args.approvals {
        Some(nats) => Some(bus(nats).await?),
        None => None,
    };
    let (tokens_given, may_act) = access.counts();
    let acting = Acting {
        notes: may_act > 0,
        approvals: may_act > 0 && bus.is_some(),
    };
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|source| ConsoleError::Listen {
            addr: args.listen.clone(),
            source,
        })?;
    let local = listener.local_addr().map_err(ConsoleError::Serve)?;
    let pages = Arc::new(Pages {
        declaration,
        settings: args.settings,
        acting,
    });
    let watch = Watch::new();
    let live = Live::new(Arc::clone(&pages), options.clone(), Arc::clone(&watch));
    let options_watched = options.clone();
    let _reader = AbortOnDropHandle::new(tokio::spawn(Arc::clone(&live).run()));
    tracing::info!(
        address = %local,
        tls = tls.is_some(),
        tokens = tokens_given,
        may_act,
        approvals = acting.approvals,
        "the console listens"
    );
    let app = router(Arc::new(Console {
        pages,
        live,
        access: Arc::clone(&access),
        actions: Actions {
            bus,
            options: options.clone(),
            timeout: args.approve_timeout,
        },
        watch: Arc::clone(&watch),
        logins: std::sync::Mutex::new(LoginLimit::new(LOGIN_BURST, LOGIN_EVERY, LOGIN_ADDRESSES)),
        options,
        idle: std::sync::Mutex::new(Vec::new()),
    }));
    let _watched = watched(&watch, &options_watched, args.metrics_listen.as_deref()).await?;
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    conns::serve(listener, acceptor, app, access, args.limits, watch, stop).await;
    Ok(())
}

/// The console's bus connection for approvals: its own inbox prefix (the
/// only subject its user may subscribe to), tried again while the server
/// is away (an approval asked meanwhile says it was not sent).
///
/// # Errors
/// [`mesh_runtime::BusError`] when the flags or a file they name are wrong.
async fn bus(nats: &mesh_runtime::NatsArgs) -> Result<async_nats::Client, ConsoleError> {
    let servers = nats.servers()?;
    let connect = mesh_runtime::nats::connect_options(
        nats,
        "mesh-console",
        mesh_protocol::subject::CONSOLE_INBOX,
    )
    .await?
    .retry_on_initial_connect();
    connect.connect(servers).await.map_err(|source| {
        ConsoleError::Bus(mesh_runtime::BusError::connect(
            nats.shown_servers(),
            &nats.credentials_to_check(),
            source,
        ))
    })
}

/// With `--metrics-listen`: the endpoints served, and the store asked
/// every second whether it answers (for `/readyz`); the tasks end when the
/// returned handles drop.
async fn watched(
    watch: &Arc<Watch>,
    options: &DatabaseOptions,
    listen: Option<&str>,
) -> Result<Vec<AbortOnDropHandle<()>>, ConsoleError> {
    let Some(addr) = listen else {
        return Ok(Vec::new());
    };
    let listener = mesh_runtime::endpoints::listen(addr).await?;
    let (m, h, r) = (Arc::clone(watch), Arc::clone(watch), Arc::clone(watch));
    let endpoints = mesh_runtime::endpoints::Endpoints {
        metrics: Arc::new(move || m.encode()),
        health: Arc::new(move || h.health()),
        ready: Arc::new(move || r.ready()),
    };
    let (served, task) = mesh_runtime::endpoints::serve(listener, endpoints);
    if let Some(at) = served {
        tracing::info!(address = %at, "the console's metrics, /healthz and /readyz are served");
    }
    let (watch, options) = (Arc::clone(watch), options.clone());
    let checking = tokio::spawn(async move {
        let mut store = PgStore::new(options);
        loop {
            match store.answers(READY_CHECK_WITHIN).await {
                Ok(()) => watch.store_answered(),
                Err(error) => watch.store_failed(&error.to_string()),
            }
            tokio::time::sleep(READY_CHECK_EVERY).await;
        }
    });
    Ok(vec![
        AbortOnDropHandle::new(task),
        AbortOnDropHandle::new(checking),
    ])
}

fn router(console: Arc<Console>) -> Router {
    let guarded = Router::new()
        .route("/", get(page))
        .route("/machine/{name}", get(page))
        .route("/provider/{name}", get(page))
        .route("/consumer/{name}", get(page))
        .route("/consumers", get(page))
        .route("/events", get(events))
        .route("/act/approve", get(confirm_approval).post(approval))
        .route("/act/note", get(note_form).post(note))
        .route("/act/acknowledge", get(acknowledge_form).post(acknowledge))
        .route("/logout", post(log_out))
        .fallback(not_found)
        .route_layer(middleware::from_fn_with_state(Arc::clone(&console), guard));
    Router::new()
        .route("/assets/console.css", get(css))
        .route("/assets/console.js", get(js))
        .route("/assets/favicon.svg", get(favicon))
        .route("/login", get(login_form).post(log_in))
        .merge(guarded)
        .fallback(not_found)
        .layer(middleware::from_fn(headers))
        .with_state(console)
}

/// Every answer: not cached, not framed, not sniffed, no referrer, and a
/// content policy that lets the page load only the console's own assets.
async fn headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; \
             img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// 403 for a request to a name when no token is asked (see
/// [`Access::host_allowed`]); 401 with the login form, unless the request
/// may read.
async fn guard(State(console): State<Arc<Console>>, request: Request, next: Next) -> Response {
    if !console.access.host_allowed(request.headers()) {
        let page = notice(
            "",
            "not served under this name",
            "This console asks for no token, so it answers only requests to an IP address or \
             localhost (a page under another name could be a site that points its name here). \
             Give it --token-file to serve it under a name.",
        );
        return html_response(StatusCode::FORBIDDEN, &page);
    }
    if let Some(viewer) = console
        .access
        .viewer(request.headers(), std::time::Instant::now())
    {
        let mut request = request;
        request.extensions_mut().insert(viewer);
        return next.run(request).await;
    }
    let asked = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let mut response = html_response(StatusCode::UNAUTHORIZED, &login(false, &asked));
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"mesh console\""),
    );
    response
}

fn html_response(status: StatusCode, page: &Page) -> Response {
    (
        status,
        [(CONTENT_TYPE, "text/html; charset=utf-8")],
        document(page),
    )
        .into_response()
}

async fn not_found() -> Response {
    let page = notice("", "not found", "There is no such page in this console.");
    html_response(StatusCode::NOT_FOUND, &page)
}

async fn page(
    State(console): State<Arc<Console>>,
    Extension(viewer): Extension<Viewer>,
    uri: Uri,
) -> Response {
    let session = match &viewer {
        Viewer::Session { who, csrf, .. } => Some((who.name.as_str(), csrf.as_str())),
        _ => None,
    };
    // The consumer table's query read once: refused with what is wrong, or
    // the page's key.
    let key = if uri.path() == "/consumers" {
        match consumer_query(&uri) {
            Ok(query) => PageKey::Consumers(query),
            Err(error) => {
                console.watch.page(PageOutcome::Refused);
                let page = notice(
                    "",
                    "not a question this table takes",
                    &format!(
                        "{error}. Its parameters: state, provider, machine, class, name, page."
                    ),
                );
                return html_response(StatusCode::BAD_REQUEST, &page);
            }
        }
    } else {
        let Some(key) = PageKey::parse(uri.path()) else {
            return not_found().await;
        };
        key
    };
    let idle = console.idle.lock().expect("not poisoned").pop();
    let mut store = idle.unwrap_or_else(|| PgStore::new(console.options.clone()));
    let rendered = console
        .pages
        .render(&mut store, &key, Timestamp::now())
        .await;
    // A store that failed is not kept: the next request connects anew.
    if rendered.is_ok() {
        console.watch.store_answered();
        let mut idle = console.idle.lock().expect("not poisoned");
        if idle.len() < IDLE_STORES {
            idle.push(store);
        }
    }
    match rendered {
        Ok(Some(page)) => {
            console.watch.page(PageOutcome::Served);
            (
                StatusCode::OK,
                [(CONTENT_TYPE, "text/html; charset=utf-8")],
                document_for(&page, session),
            )
                .into_response()
        }
        Ok(None) => {
            console.watch.page(PageOutcome::NotFound);
            let page = notice(
                "",
                "not found",
                "The declaration names no such machine, provider or consumer.",
            );
            html_response(StatusCode::NOT_FOUND, &page)
        }
        Err(error) => {
            console.watch.page(PageOutcome::Unreadable);
            console.watch.store_failed(&error.to_string());
            tracing::warn!(error = %error, page = %key.path(), "the console cannot read the store");
            html_response(StatusCode::SERVICE_UNAVAILABLE, &unreadable(&key, &error))
        }
    }
}

#[derive(Deserialize)]
struct EventsQuery {
    page: String,
}

async fn events(State(console): State<Arc<Console>>, Query(q): Query<EventsQuery>) -> Response {
    let key = match PageKey::parse(&q.page) {
        Some(key) if console.pages.knows(&key) => key,
        _ => return not_found().await,
    };
    let following = (console.live.follow(key), console.watch.stream_opened());
    let stream = futures::stream::unfold(following, |(mut f, open)| async move {
        loop {
            f.fragments.changed().await.ok()?;
            let fragment = f.fragments.borrow_and_update().clone();
            if let Some(fragment) = fragment {
                let event = Event::default()
                    .event("main")
                    .id(fragment.id.to_string())
                    .data(&fragment.main);
                return Some((Ok::<_, Infallible>(event), (f, open)));
            }
        }
    });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    // As every answer of the console: never stored (the stream's own
    // `no-cache` would let a cache keep it).
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", html::CSS)
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", html::JS)
}

async fn favicon() -> Response {
    asset("image/svg+xml", html::FAVICON)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")],
        body,
    )
        .into_response()
}

async fn login_form(State(console): State<Arc<Console>>) -> Response {
    if !console.access.needs_token() {
        return (StatusCode::SEE_OTHER, [(LOCATION, "/")]).into_response();
    }
    html_response(StatusCode::OK, &login(false, "/"))
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
    /// Where to go after: the page that asked for the login.
    next: Option<String>,
}

/// `next` when it is a path of this console (`/…`, not `//host` or a
/// backslash, no control character), else `/`: a login never sends the
/// browser elsewhere.
fn local_path(next: Option<&str>) -> &str {
    match next {
        Some(p)
            if p.starts_with('/')
                && !p.starts_with("//")
                && !p.contains('\\')
                && !p.chars().any(char::is_control) =>
        {
            p
        }
        _ => "/",
    }
}

async fn log_in(
    State(console): State<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Form(form): Form<LoginForm>,
) -> Response {
    let now = std::time::Instant::now();
    let held = console
        .logins
        .lock()
        .expect("not poisoned")
        .check(peer.ip(), now);
    if let Err(wait) = held {
        tracing::info!(client = %peer.ip(), "a console login was refused: too many wrong tokens");
        let next = local_path(form.next.as_deref());
        let mut response = html_response(StatusCode::TOO_MANY_REQUESTS, &login(true, next));
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(RETRY_AFTER, value);
        }
        return response;
    }
    let opened = match console.access.log_in(&form.token, now) {
        Ok(opened) => opened,
        Err(error) => {
            tracing::error!(error = %error, "the random generator failed: no session opened");
            let page = notice("", "log in failed", "The console could not open a session.");
            return html_response(StatusCode::INTERNAL_SERVER_ERROR, &page);
        }
    };
    let Some(cookie) = opened else {
        console
            .logins
            .lock()
            .expect("not poisoned")
            .failed(peer.ip(), now);
        tracing::info!(client = %peer.ip(), "a console login was refused");
        let next = local_path(form.next.as_deref());
        return html_response(StatusCode::UNAUTHORIZED, &login(true, next));
    };
    let next = local_path(form.next.as_deref());
    let mut response = match HeaderValue::from_str(next) {
        Ok(location) => (StatusCode::SEE_OTHER, [(LOCATION, location)]).into_response(),
        Err(_) => (StatusCode::SEE_OTHER, [(LOCATION, "/")]).into_response(),
    };
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    response
}

async fn confirm_approval(
    State(console): State<Arc<Console>>,
    Extension(viewer): Extension<Viewer>,
    Query(asked): Query<ApproveAsked>,
) -> Response {
    let declaration = &console.pages.declaration;
    console.actions.confirm(&viewer, &asked, declaration)
}

async fn approval(
    State(console): State<Arc<Console>>,
    Extension(viewer): Extension<Viewer>,
    Form(asked): Form<ApproveAsked>,
) -> Response {
    let declaration = &console.pages.declaration;
    console
        .actions
        .approve(&console.access, &viewer, &asked, declaration)
        .await
}

async fn note_form(
    State(console): State<Arc<Console>>,
    Extension(viewer): Extension<Viewer>,
    Query(asked): Query<NoteAsked>,
) -> Response {
    let declaration = &console.pages.declaration;
    console.actions.note_form(&viewer, &asked, declaration)
}

async fn note(
    State(console): State<Arc<Console>>,
    Extension(viewer): Extension<Viewer>,
    Form(asked): Form<NoteAsked>,
) -> Response {
    let declaration = &console.pages.declaration;
    console
        .actions
        .note(&console.access, &viewer, &asked, declaration)
        .await
}

async fn acknowledge_form(
    State(console): State<Arc<Console>>,
    Extension(viewer): Extension<Viewer>,
    Query(asked): Query<AckAsked>,
) -> Response {
    let declaration = &console.pages.declaration;
    console
        .actions
        .acknowledge_form(&viewer, &asked, declaration)
}

async fn acknowledge(
    State(console): State<Arc<Console>>,
    Extension(viewer): Extension<Viewer>,
    Form(asked): Form<AckAsked>,
) -> Response {
    let declaration = &console.pages.declaration;
    console
        .actions
        .acknowledge(&console.access, &viewer, &asked, declaration)
        .await
}

/// `POST /logout` (form field `csrf`): ends the session, then the login form.
async fn log_out(
    State(console): State<Arc<Console>>,
    Extension(viewer): Extension<Viewer>,
    Form(form): Form<LogOutForm>,
) -> Response {
    if let Viewer::Session { cookie, .. } = &viewer {
        if console.access.csrf_matches(cookie, &form.csrf) {
            console.access.log_out(cookie);
        }
    }
    let expired = format!("{COOKIE_NAME}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
    let mut response = (StatusCode::SEE_OTHER, [(LOCATION, "/login")]).into_response();
    if let Ok(value) = HeaderValue::from_str(&expired) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    response
}

#[derive(Deserialize)]
struct LogOutForm {
    #[serde(default)]
    csrf: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_goes_back_only_to_a_path_of_the_console() {
        for (next, to) in [
            (Some("/consumer/wiki@app-1"), "/consumer/wiki@app-1"),
            (Some("/machine/app-1?x=1"), "/machine/app-1?x=1"),
            (Some("//evil.example/"), "/"),
            (Some("https://evil.example/"), "/"),
            (Some("/\\evil.example"), "/"),
            (Some("/a\nb"), "/"),
            (Some(""), "/"),
            (None, "/"),
        ] {
            assert_eq!(local_path(next), to, "{next:?}");
        }
    }
}
