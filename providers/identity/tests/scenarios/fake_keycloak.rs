//! A fake Keycloak 26: exactly the endpoints the provider uses, with the
//! status codes and error bodies of FACTS.md, counting every request.
//!
//! It runs on its own thread with its own runtime (real time), so tests on
//! tokio's paused clock never move its clock and it never moves theirs.
//! Access tokens are opaque random strings; "expiry" is simulated with
//! [`State::revoke_tokens`]. A test-only control endpoint,
//! `POST /test/bootstrap-admin`, adds a temporary administrator the way
//! `kc.sh bootstrap-admin user` does; the fake container runtime calls it.
//!
//! # Checked against a real Keycloak 26.5.6
//! `tests/keycloak/` (clients.rs, repair.rs) runs the provider against a
//! real server (`kc.sh start --optimized` on PostgreSQL). What they
//! showed, and how the fake follows:
//! - A client-credentials login is refused with 401 and, by cause:
//!   unknown or **disabled** client → `invalid_client` ("Invalid client or
//!   Invalid client credentials"), whatever the secret; an enabled client
//!   with a **wrong secret** → `unauthorized_client` (same description; the
//!   fake used to say `invalid_client`); a public client →
//!   `unauthorized_client` "Public client not allowed to retrieve service
//!   account"; no service account → `unauthorized_client` "Client not
//!   enabled to retrieve service account". The provider takes every one as
//!   `credentials-rejected`; it no longer rewrites a disabled client's
//!   secret on a refused check (it cannot help).
//! - `PUT .../clients/{id}` with `secret` (and any other fields) changes
//!   only those fields and answers 204; the old secret is refused at once
//!   (no grace period). Turning a client public drops its secret; turning
//!   it confidential again without a `secret` generates a new one (the
//!   fake does both); given in the same `PUT`, the `secret` wins.
//! - The client list pages (`first`, `max`) over clients ordered by
//!   `clientId` in byte order ("Beta" before "account"), not in the order
//!   they were made; the fake sorts the same way.
//! - An administrator sees a confidential client's `secret` in its
//!   representation (the fake shows it too).
//! - Duplicates: `POST .../clients` → 409 `{"errorMessage":"Client X
//!   already exists"}`; `PUT`/`DELETE` of an unknown id → 404
//!   `{"error":"Could not find client"}`; a bad token → 401
//!   `{"error":"HTTP 401 Unauthorized"}`; an unknown realm → 404
//!   `{"error":"Realm not found."}` (admin API) or `{"error":"Realm does not
//!   exist"}` (token endpoint). The fake answered these already.
//! - `?clientId=X` matches exactly and case-sensitively (`for` and `FORGE`
//!   find no `forge`).
//! - A refused password login is 401 `invalid_grant` on 26.5 (400 from
//!   26.6); the fake does either.
//! - With brute-force protection on in realm `master`, a user locked out
//!   gets exactly the answer of a wrong password, also for its right one.
//!   `PUT .../reset-password` does not end a lockout; `DELETE
//!   /admin/realms/master/attack-detection/brute-force/users/{id}` does
//!   (204). The fake counts refusals the same way ([`State::failure_factor`]).
//! - A service-account client of realm `master` with role `admin` logs in
//!   by client credentials; a wrong secret is 401 `unauthorized_client`.
//!   The fake has no clients in `master`: that login is tested on the real
//!   server only.
//! - `kc.sh bootstrap-admin user --optimized`, run beside the live server
//!   with its database settings, adds the user in about 8 s and the live
//!   server lets it log in at once; the fake's control endpoint does the
//!   same at once. Beside a `start-dev` server on its H2 file it fails
//!   (the file is locked); without `--optimized` it rebuilds the server's
//!   image first. The first administrator (from `KC_BOOTSTRAP_ADMIN_*`) is
//!   marked `is_temporary_admin` like the ones it makes.
//!
//! # What the fake does not do
//! - Realms hold only what tests put in them: no built-in clients
//!   (`account`, `admin-cli`, `broker`, `realm-management`, ...), no
//!   Keycloak attributes beside the mark (`realm_client`, ...).
//! - Tokens are opaque, not JWTs; no refresh tokens, sessions or lifespans
//!   (see [`State::revoke_tokens`]).
//! - Brute-force protection is only counted refusals: with
//!   [`State::failure_factor`] set, a user is locked out (refused, whatever
//!   the password, with the same `invalid_grant` answer, as the real server
//!   does) from that many refused logins in a row until a login succeeds
//!   before it or `DELETE .../attack-detection/brute-force/users/{id}`
//!   clears it. No lockout ends by itself here (the real one waits
//!   `waitIncrementSeconds`, growing, unless it is permanent), no
//!   `maxDeltaTime`, no quick-login check.
//! - No password policies or roles: any user named `admin` or marked
//!   temporary is an administrator.
//! - `kc.sh bootstrap-admin` is a test endpoint; the real command (a second
//!   JVM, the database it needs, the build it may redo) is not simulated.
//! - No clients in realm `master` (see above).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, Request, State as Axum};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Form, Json, Router};
use serde_json::{json, Value};

/// The realm the provider's clients live in.
pub const REALM: &str = "mesh";

/// A user of realm `master`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub id: String,
    pub username: String,
    pub password: String,
    pub enabled: bool,
    /// Made by `kc.sh bootstrap-admin` (attribute `is_temporary_admin`).
    pub temporary_admin: bool,
    /// Refused logins in a row, as brute-force protection counts them.
    pub failures: u32,
}

/// A client of realm [`REALM`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    pub id: String,
    pub client_id: String,
    pub secret: Option<String>,
    pub enabled: bool,
    pub public_client: bool,
    pub service_accounts_enabled: bool,
    pub attributes: BTreeMap<String, String>,
}

impl Client {
    /// A client someone else made (no mark), confidential, enabled.
    pub fn foreign(id: &str, client_id: &str, secret: &str) -> Client {
        Client {
            id: id.into(),
            client_id: client_id.into(),
            secret: Some(secret.into()),
            enabled: true,
            public_client: false,
            service_accounts_enabled: true,
            attributes: BTreeMap::new(),
        }
    }

    fn rep(&self) -> Value {
        let mut rep = json!({
            "id": self.id, "clientId": self.client_id, "enabled": self.enabled,
            "publicClient": self.public_client, "serviceAccountsEnabled": self.service_accounts_enabled,
            "clientAuthenticatorType": "client-secret", "protocol": "openid-connect",
            "attributes": self.attributes,
        });
        // Keycloak 26 shows a confidential client's secret to administrators.
        if let Some(secret) = &self.secret {
            rep["secret"] = json!(secret);
        }
        rep
    }
}

/// A request as the fake saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
}

/// A login at the token endpoint: (realm, grant type, username or clientId, accepted).
pub type Login = (String, String, String, bool);

/// An error the fake answers with instead of serving matching requests.
#[derive(Clone, Debug)]
pub struct Injected {
    pub method: Method,
    pub path_contains: String,
    pub status: u16,
    pub body: Value,
}

/// The fake's whole state; tests read and change it between calls.
#[derive(Debug)]
pub struct State {
    /// Status of a refused password login: 401 before Keycloak 26.6, 400 from it.
    pub invalid_grant_status: u16,
    /// `expires_in` of every token.
    pub expires_in: u64,
    pub users: Vec<User>,
    pub clients: Vec<Client>,
    /// Live access tokens → the user they were given to.
    pub tokens: HashMap<String, String>,
    pub requests: Vec<Seen>,
    pub logins: Vec<Login>,
    /// Answer these instead of serving.
    pub injected: Vec<Injected>,
    /// The next this many `clientId` lookups answer `[]` (a race with another maker).
    pub stale_lookups: usize,
    /// Marked clients made (by someone) right after the first page of a
    /// listing was served: the later pages shift, as on the real server.
    pub made_during_listing: Vec<String>,
    /// Requests whose path contains the text wait this long first.
    pub slow: Option<(String, Duration)>,
    /// Brute-force protection of realm `master`: a user is locked out at
    /// this many refused logins (`None`: off, Keycloak's default).
    pub failure_factor: Option<u32>,
    /// Temporary administrators ever made, and ever deleted.
    pub temporary_made: Vec<String>,
    pub temporary_deleted: Vec<String>,
    next_id: u64,
}

impl State {
    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.next_id)
    }

    /// The administrator `admin`.
    pub fn admin(&self) -> &User {
        self.users.iter().find(|u| u.username == "admin").unwrap()
    }

    /// The administrator's password changes behind the mesh's back.
    pub fn move_admin_password(&mut self, password: &str) {
        let admin = self
            .users
            .iter_mut()
            .find(|u| u.username == "admin")
            .unwrap();
        admin.password = password.into();
    }

    /// Every access token ends (as after their lifespan).
    pub fn revoke_tokens(&mut self) {
        self.tokens.clear();
    }

    /// Temporary administrators that still exist.
    pub fn temporary_admins(&self) -> Vec<String> {
        self.users
            .iter()
            .filter(|u| u.temporary_admin)
            .map(|u| u.username.clone())
            .collect()
    }

    pub fn client(&self, client_id: &str) -> Option<&Client> {
        self.clients.iter().find(|c| c.client_id == client_id)
    }

    /// Adds a client made by mesh's instance `identity@id-1` (the
    /// scenarios' provider).
    pub fn add_marked(&mut self, client_id: &str, secret: &str, enabled: bool) {
        self.add_made_by(client_id, secret, enabled, Some("identity@id-1"));
    }

    /// Adds a client made by mesh: by the instance `by`, or by a release
    /// before instance marks (`None`: the mark alone).
    pub fn add_made_by(&mut self, client_id: &str, secret: &str, enabled: bool, by: Option<&str>) {
        let id = self.id();
        let mut client = Client::foreign(&id, client_id, secret);
        client.enabled = enabled;
        client
            .attributes
            .insert("mesh.provisioned".into(), "true".into());
        if let Some(by) = by {
            client.attributes.insert("mesh.provider".into(), by.into());
        }
        self.clients.push(client);
    }

    /// Requests about clients of the realm: admin calls on clients and
    /// client-credentials logins (what the gate must stop).
    pub fn client_requests(&self) -> usize {
        let admin = self
            .requests
            .iter()
            .filter(|r| r.path.contains("/clients"))
            .count();
        let logins = self
            .logins
            .iter()
            .filter(|(_, grant, _, _)| grant == "client_credentials")
            .count();
        admin + logins
    }

    /// Requests with `method` whose path contains `part`.
    pub fn count(&self, method: &str, part: &str) -> usize {
        self.requests
            .iter()
            .filter(|r| r.method == method && r.path.contains(part))
            .count()
    }

    /// `GET` requests whose query holds `part` (`clientId=`: lookups;
    /// `first=`: pages of a listing).
    pub fn gets_with_query(&self, part: &str) -> usize {
        self.requests
            .iter()
            .filter(|r| r.method == "GET" && r.query.contains(part))
            .count()
    }

    /// Password logins of `username`: (accepted, refused).
    pub fn password_logins(&self, username: &str) -> (usize, usize) {
        let of: Vec<&Login> = self
            .logins
            .iter()
            .filter(|(_, grant, who, _)| grant == "password" && who == username)
            .collect();
        let accepted = of.iter().filter(|l| l.3).count();
        (accepted, of.len() - accepted)
    }

    pub fn inject(&mut self, method: Method, path_contains: &str, status: u16, body: Value) {
        self.injected.push(Injected {
            method,
            path_contains: path_contains.into(),
            status,
            body,
        });
    }
}

type Shared = Arc<Mutex<State>>;

/// A running fake Keycloak.
pub struct FakeKeycloak {
    pub url: String,
    state: Shared,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FakeKeycloak {
    /// A fake whose administrator `admin` has `admin_password`; realms
    /// `master` and [`REALM`].
    pub fn start(admin_password: &str, invalid_grant_status: u16) -> FakeKeycloak {
        let mut state = State {
            invalid_grant_status,
            expires_in: 60,
            users: Vec::new(),
            clients: Vec::new(),
            tokens: HashMap::new(),
            requests: Vec::new(),
            logins: Vec::new(),
            injected: Vec::new(),
            stale_lookups: 0,
            made_during_listing: Vec::new(),
            slow: None,
            failure_factor: None,
            temporary_made: Vec::new(),
            temporary_deleted: Vec::new(),
            next_id: 0,
        };
        let id = state.id();
        state.users.push(User {
            id,
            username: "admin".into(),
            password: admin_password.into(),
            enabled: true,
            temporary_admin: false,
            failures: 0,
        });
        let state = Arc::new(Mutex::new(state));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(Arc::clone(&state));
        std::thread::Builder::new()
            .name("fake-keycloak".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    let serve = axum::serve(listener, app);
                    tokio::select! {
                        _ = serve => {}
                        _ = stopped => {}
                    }
                });
            })
            .unwrap();
        FakeKeycloak {
            url,
            state,
            _stop: stop,
        }
    }

    /// Runs `f` on the state.
    pub fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock().unwrap())
    }
}

fn router(state: Shared) -> Router {
    Router::new()
        .route("/realms/{realm}/protocol/openid-connect/token", post(token))
        .route(
            "/admin/realms/{realm}/clients",
            get(list_clients).post(create_client),
        )
        .route(
            "/admin/realms/{realm}/clients/{id}",
            put(update_client).delete(delete_client),
        )
        .route("/admin/realms/{realm}/users", get(find_users))
        .route(
            "/admin/realms/{realm}/users/{id}/reset-password",
            put(reset_password),
        )
        .route("/admin/realms/{realm}/users/{id}", delete(delete_user))
        .route(
            "/admin/realms/{realm}/attack-detection/brute-force/users/{id}",
            delete(clear_failures),
        )
        .route("/test/bootstrap-admin", post(bootstrap_admin))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            record_and_inject,
        ))
        .with_state(state)
}

fn answer(status: u16, body: Value) -> Response {
    (StatusCode::from_u16(status).unwrap(), Json(body)).into_response()
}

fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// Counts the request, waits when it is slow, answers an injected error when one matches.
async fn record_and_inject(Axum(state): Axum<Shared>, request: Request, next: Next) -> Response {
    let (delay, injected) = {
        let mut s = state.lock().unwrap();
        let path = request.uri().path().to_owned();
        s.requests.push(Seen {
            method: request.method().to_string(),
            path: path.clone(),
            query: request.uri().query().unwrap_or_default().to_owned(),
        });
        let injected = s
            .injected
            .iter()
            .find(|i| i.method == request.method() && path.contains(&i.path_contains))
            .cloned();
        let delay = s
            .slow
            .as_ref()
            .filter(|(part, _)| path.contains(part.as_str()))
            .map(|(_, delay)| *delay);
        (delay, injected)
    };
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    match injected {
        Some(i) => answer(i.status, i.body),
        None => next.run(request).await,
    }
}

async fn token(
    Axum(state): Axum<Shared>,
    Path(realm): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let mut s = state.lock().unwrap();
    if realm != "master" && realm != REALM {
        return answer(404, json!({"error": "Realm does not exist"}));
    }
    let field = |k: &str| form.get(k).cloned().unwrap_or_default();
    let grant = field("grant_type");
    match grant.as_str() {
        "password" => {
            let (username, password) = (field("username"), field("password"));
            let factor = s.failure_factor;
            let user = s
                .users
                .iter_mut()
                .find(|u| realm == "master" && u.username == username);
            let accepted = match user {
                Some(user) => {
                    let locked = factor.is_some_and(|factor| user.failures >= factor);
                    let good = field("client_id") == "admin-cli"
                        && user.password == password
                        && user.enabled
                        && !locked;
                    match good {
                        true => user.failures = 0,
                        false if factor.is_some() => user.failures += 1,
                        false => {}
                    }
                    good
                }
                None => false,
            };
            s.logins.push((realm, grant, username.clone(), accepted));
            if !accepted {
                let status = s.invalid_grant_status;
                return answer(
                    status,
                    json!({"error": "invalid_grant", "error_description": "Invalid user credentials"}),
                );
            }
            let access = format!("at-{}", s.id());
            s.tokens.insert(access.clone(), username);
            let expires_in = s.expires_in;
            answer(
                200,
                json!({"access_token": access, "expires_in": expires_in, "refresh_expires_in": 1800,
                       "refresh_token": "rt", "token_type": "Bearer", "not-before-policy": 0,
                       "session_state": "s", "scope": "profile email"}),
            )
        }
        "client_credentials" => {
            let (client_id, secret) = (field("client_id"), field("client_secret"));
            let client = (realm == REALM)
                .then(|| s.client(&client_id).cloned())
                .flatten();
            // Keycloak 26.5's order: an unknown or disabled client, then
            // the secret, then the kind of client.
            let refusal = match &client {
                Some(c) if c.enabled => {
                    if c.public_client {
                        Some((
                            "unauthorized_client",
                            "Public client not allowed to retrieve service account",
                        ))
                    } else if c.secret.as_deref() != Some(&secret) {
                        Some((
                            "unauthorized_client",
                            "Invalid client or Invalid client credentials",
                        ))
                    } else if !c.service_accounts_enabled {
                        Some((
                            "unauthorized_client",
                            "Client not enabled to retrieve service account",
                        ))
                    } else {
                        None
                    }
                }
                _ => Some((
                    "invalid_client",
                    "Invalid client or Invalid client credentials",
                )),
            };
            s.logins.push((realm, grant, client_id, refusal.is_none()));
            match refusal {
                Some((error, description)) => answer(
                    401,
                    json!({"error": error, "error_description": description}),
                ),
                None => answer(
                    200,
                    json!({"access_token": "client-token", "expires_in": 300, "token_type": "Bearer"}),
                ),
            }
        }
        _ => answer(
            400,
            json!({"error": "unsupported_grant_type", "error_description": "Unsupported grant_type"}),
        ),
    }
}

/// The admin API's bearer check: 401 without a live token, 403 for a non-administrator.
fn refusal(s: &State, headers: &HeaderMap, realm: &str) -> Option<Response> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let user = token
        .and_then(|t| s.tokens.get(t))
        .and_then(|name| s.users.iter().find(|u| &u.username == name && u.enabled));
    let Some(user) = user else {
        return Some(answer(401, json!({"error": "HTTP 401 Unauthorized"})));
    };
    if !(user.username == "admin" || user.temporary_admin) {
        return Some(answer(403, json!({"error": "HTTP 403 Forbidden"})));
    }
    if realm != "master" && realm != REALM {
        return Some(answer(404, json!({"error": "Realm not found."})));
    }
    None
}

async fn list_clients(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    Path(realm): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(refused) = refusal(&s, &headers, &realm) {
        return refused;
    }
    if realm != REALM {
        return answer(200, json!([]));
    }
    if let Some(client_id) = query.get("clientId") {
        if s.stale_lookups > 0 {
            s.stale_lookups -= 1;
            return answer(200, json!([]));
        }
        let found: Vec<Value> = s
            .clients
            .iter()
            .filter(|c| &c.client_id == client_id)
            .map(Client::rep)
            .collect();
        return answer(200, Value::Array(found));
    }
    let first: usize = query.get("first").and_then(|v| v.parse().ok()).unwrap_or(0);
    let max: usize = query
        .get("max")
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    // Keycloak 26 pages over the clients ordered by `clientId` (byte order:
    // "Beta" before "account"), not in the order they were made.
    let mut ordered: Vec<&Client> = s.clients.iter().collect();
    ordered.sort_by(|a, b| a.client_id.cmp(&b.client_id));
    let page: Vec<Value> = ordered
        .into_iter()
        .skip(first)
        .take(max)
        .map(|c| c.rep())
        .collect();
    if first == 0 {
        for client_id in std::mem::take(&mut s.made_during_listing) {
            s.add_marked(&client_id, "x", true);
        }
    }
    answer(200, Value::Array(page))
}

async fn create_client(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    Path(realm): Path<String>,
    Json(rep): Json<Value>,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(refused) = refusal(&s, &headers, &realm) {
        return refused;
    }
    let client_id = rep["clientId"].as_str().unwrap_or_default().to_owned();
    if s.client(&client_id).is_some() {
        return answer(
            409,
            json!({"errorMessage": format!("Client {client_id} already exists")}),
        );
    }
    let id = s.id();
    let public_client = rep["publicClient"].as_bool().unwrap_or(false);
    let attributes = rep["attributes"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    s.clients.push(Client {
        id: id.clone(),
        client_id,
        // A given secret is stored as is; else one is generated.
        secret: Some(
            rep["secret"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("generated-{id}")),
        ),
        enabled: rep["enabled"].as_bool().unwrap_or(true),
        public_client,
        service_accounts_enabled: rep["serviceAccountsEnabled"].as_bool().unwrap_or(false),
        attributes,
    });
    let location = format!("http://keycloak/admin/realms/{realm}/clients/{id}");
    (StatusCode::CREATED, [("location", location)]).into_response()
}

async fn update_client(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    Path((realm, id)): Path<(String, String)>,
    Json(rep): Json<Value>,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(refused) = refusal(&s, &headers, &realm) {
        return refused;
    }
    let Some(client) = s.clients.iter_mut().find(|c| c.id == id) else {
        return answer(404, json!({"error": "Could not find client"}));
    };
    // Only the fields given are applied.
    if let Some(enabled) = rep["enabled"].as_bool() {
        client.enabled = enabled;
    }
    if let Some(public) = rep["publicClient"].as_bool() {
        // Keycloak 26: turning a client public drops its secret; turning it
        // confidential again without a secret given generates a new one.
        if public && !client.public_client {
            client.secret = None;
        }
        if !public && client.public_client && rep["secret"].as_str().is_none() {
            client.secret = Some(format!("generated-{}", client.id));
        }
        client.public_client = public;
    }
    if let Some(service) = rep["serviceAccountsEnabled"].as_bool() {
        client.service_accounts_enabled = service;
    }
    if let Some(secret) = rep["secret"].as_str() {
        client.secret = Some(secret.to_owned());
    }
    if let Some(attributes) = rep["attributes"].as_object() {
        for (k, v) in attributes {
            client
                .attributes
                .insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
        }
    }
    no_content()
}

async fn delete_client(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(refused) = refusal(&s, &headers, &realm) {
        return refused;
    }
    match s.clients.iter().position(|c| c.id == id) {
        Some(at) => {
            s.clients.remove(at);
            no_content()
        }
        None => answer(404, json!({"error": "Could not find client"})),
    }
}

async fn find_users(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    Path(realm): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let s = state.lock().unwrap();
    if let Some(refused) = refusal(&s, &headers, &realm) {
        return refused;
    }
    let wanted = query.get("username").cloned().unwrap_or_default();
    let exact = query.get("exact").map(String::as_str) == Some("true");
    let found: Vec<Value> = s
        .users
        .iter()
        .filter(|_| realm == "master")
        .filter(|u| match exact {
            true => u.username == wanted,
            false => u.username.contains(&wanted),
        })
        .map(|u| {
            let mut rep = json!({"id": u.id, "username": u.username, "enabled": u.enabled});
            if u.temporary_admin {
                rep["attributes"] = json!({"is_temporary_admin": ["true"]});
            }
            rep
        })
        .collect();
    answer(200, Value::Array(found))
}

async fn reset_password(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    Path((realm, id)): Path<(String, String)>,
    Json(credential): Json<Value>,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(refused) = refusal(&s, &headers, &realm) {
        return refused;
    }
    if credential["type"] != "password" || credential["temporary"] != false {
        return answer(
            400,
            json!({"error": "unexpected credential representation"}),
        );
    }
    let Some(value) = credential["value"].as_str().map(str::to_owned) else {
        return answer(400, json!({"error": "No password provided"}));
    };
    match s.users.iter_mut().find(|u| u.id == id) {
        Some(user) => {
            user.password = value;
            no_content()
        }
        None => answer(404, json!({"error": "User not found"})),
    }
}

async fn delete_user(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(refused) = refusal(&s, &headers, &realm) {
        return refused;
    }
    match s.users.iter().position(|u| u.id == id) {
        Some(at) => {
            let user = s.users.remove(at);
            s.tokens.retain(|_, name| name != &user.username);
            if user.temporary_admin {
                s.temporary_deleted.push(user.username);
            }
            no_content()
        }
        None => answer(404, json!({"error": "User not found"})),
    }
}

/// Clears a user's brute-force record (204 also when protection is off or
/// the user has none, as on the real server).
async fn clear_failures(
    Axum(state): Axum<Shared>,
    headers: HeaderMap,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(refused) = refusal(&s, &headers, &realm) {
        return refused;
    }
    if let Some(user) = s.users.iter_mut().find(|u| u.id == id) {
        user.failures = 0;
    }
    no_content()
}

/// Test-only: what `kc.sh bootstrap-admin user` does, adding a temporary administrator.
async fn bootstrap_admin(Axum(state): Axum<Shared>, Json(body): Json<Value>) -> Response {
    let mut s = state.lock().unwrap();
    let username = body["username"].as_str().unwrap_or_default().to_owned();
    let password = body["password"].as_str().unwrap_or_default().to_owned();
    if username.is_empty() || password.is_empty() || s.users.iter().any(|u| u.username == username)
    {
        return answer(400, json!({"error": "cannot bootstrap that administrator"}));
    }
    let id = s.id();
    s.temporary_made.push(username.clone());
    s.users.push(User {
        id,
        username,
        password,
        enabled: true,
        temporary_admin: true,
        failures: 0,
    });
    StatusCode::CREATED.into_response()
}
