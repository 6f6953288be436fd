package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"mesh/hook"
)

// rabbit is the hook's state: the API and its administrator.
type rabbit struct {
	base      string // .../api
	adminUser string
	client    *http.Client
}

// passwordVar names the file holding the administrator's password.
const passwordVar = "RABBITMQ_HOOK_ADMIN_PASSWORD_FILE"

// login is one set of credentials for the API.
type login struct{ user, password string }

// admin reads the administrator's password from its file (every call: a
// rotation needs no restart) and announces it before it is used.
func (r *rabbit) admin() (login, error) {
	password, err := hook.ReadSecretFile(passwordVar)
	if err != nil {
		return login{}, err
	}
	return login{r.adminUser, password}, nil
}

// answer is what the API said: its status and, for an error, its reason.
type answer struct {
	status int
	body   []byte
}

// reason is the API's {"error":..., "reason":...} words, or the body.
func (a answer) reason() string {
	var e struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(a.body, &e) == nil && (e.Error != "" || e.Reason != "") {
		return strings.TrimSpace(e.Error + ": " + e.Reason)
	}
	text := strings.TrimSpace(string(a.body))
	if len(text) > 200 {
		text = text[:200]
	}
	return text
}

// call sends one request to the API as who; a transport failure is
// unreachable. Any status is returned for the caller to read.
func (r *rabbit) call(ctx context.Context, who login, method, path string, body any) (answer, error) {
	var payload io.Reader
	if body != nil {
		text, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		payload = bytes.NewReader(text)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, payload)
	if err != nil {
		return answer{}, hook.Errorf(hook.Refused, "RABBITMQ_HOOK_API %s: %v", r.base, err)
	}
	req.SetBasicAuth(who.user, who.password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := r.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is known; keep the cause
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return answer{}, hook.Errorf(hook.Unreachable, "RabbitMQ's API at %s did not answer %s %s in time", r.base, method, path)
		}
		return answer{}, hook.Errorf(hook.Unreachable, "RabbitMQ's API at %s cannot be reached: %v", r.base, err)
	}
	defer res.Body.Close()
	text, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return answer{}, hook.Errorf(hook.Unreachable, "RabbitMQ's API at %s: reading the answer to %s %s: %v", r.base, method, path, err)
	}
	return answer{res.StatusCode, text}, nil
}

// as is a call as the administrator that must succeed (2xx); `missing` lets
// a 404 through (reported false). out, when given, is decoded from JSON.
func (r *rabbit) as(ctx context.Context, who login, method, path string, body, out any, missing bool) (bool, error) {
	a, err := r.call(ctx, who, method, path, body)
	if err != nil {
		return false, err
	}
	switch {
	case a.status == http.StatusNotFound && missing:
		return false, nil
	case a.status == http.StatusUnauthorized:
		return false, hook.Errorf(hook.CredentialsRejected, "the hook's administrator %s was refused by RabbitMQ (%s %s: %s)", who.user, method, path, a.reason())
	case a.status < 200 || a.status > 299:
		return false, hook.Errorf(hook.Refused, "RabbitMQ answered %s %s with %d: %s", method, path, a.status, a.reason())
	}
	if out != nil && len(a.body) > 0 {
		if err := json.Unmarshal(a.body, out); err != nil {
			return false, hook.Errorf(hook.Refused, "RabbitMQ's answer to %s %s is not what it should be: %v", method, path, err)
		}
	}
	return true, nil
}

// user is a RabbitMQ user as GET /api/users/<name> gives it.
type user struct {
	Name      string   `json:"name"`
	Hash      string   `json:"password_hash"`
	Algorithm string   `json:"hashing_algorithm"`
	Tags      tagsList `json:"tags"`
}

// tagsList reads tags as 3.10 gives them (a list) or older ones (a string).
type tagsList []string

func (t *tagsList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*t = list
		return nil
	}
	var text string
	if err := json.Unmarshal(b, &text); err != nil {
		return err
	}
	*t = nil
	for _, tag := range strings.Split(text, ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			*t = append(*t, tag)
		}
	}
	return nil
}

func (t tagsList) has(tag string) bool {
	for _, x := range t {
		if x == tag {
			return true
		}
	}
	return false
}

// permission is a user's permissions on a vhost.
type permission struct {
	Configure string `json:"configure"`
	Write     string `json:"write"`
	Read      string `json:"read"`
}

// vhost is a vhost as GET /api/vhosts/<name> gives it.
type vhost struct {
	// ClusterState is each node's state of the vhost ("running", "stopped").
	ClusterState map[string]string `json:"cluster_state"`
}

// down is the nodes where the vhost is not running, sorted.
func (v vhost) down() []string {
	var nodes []string
	for node, state := range v.ClusterState {
		if state != "running" {
			nodes = append(nodes, node)
		}
	}
	sort.Strings(nodes)
	return nodes
}

// everything is what a consumer may do on its own vhost.
var everything = permission{".*", ".*", ".*"}

// The tags: the mark, the retired state, and what the API needs.
const (
	markTag       = "mesh-provide"
	retiredTag    = "mesh-retired"
	managementTag = "management"
)

func esc(name string) string { return url.PathEscape(name) }

// getUser is the user name (false: there is none).
func (r *rabbit) getUser(ctx context.Context, admin login, name string) (user, bool, error) {
	var u user
	found, err := r.as(ctx, admin, "GET", "/users/"+esc(name), nil, &u, true)
	return u, found, err
}

// putUser sets name's tags and its password (or keeps its hash when
// password is empty: RabbitMQ clears a password left out of a PUT).
func (r *rabbit) putUser(ctx context.Context, admin login, name, password string, keep user, tags []string) error {
	body := map[string]string{"tags": strings.Join(tags, ",")}
	if password != "" {
		body["password"] = password
	} else {
		body["password_hash"] = keep.Hash
		body["hashing_algorithm"] = keep.Algorithm
	}
	_, err := r.as(ctx, admin, "PUT", "/users/"+esc(name), body, nil, false)
	return err
}

// hashIs reports whether u's password hash is that of password (RabbitMQ's
// salted hash: base64 of a 4-byte salt and H(salt + password)).
func hashIs(u user, password string) bool {
	raw, err := base64.StdEncoding.DecodeString(u.Hash)
	if err != nil || len(raw) < 5 {
		return false
	}
	var h hash.Hash
	switch u.Algorithm {
	case "rabbit_password_hashing_sha256", "":
		h = sha256.New()
	case "rabbit_password_hashing_sha512":
		h = sha512.New()
	case "rabbit_password_hashing_md5":
		h = md5.New()
	default:
		return false
	}
	h.Write(raw[:4])
	h.Write([]byte(password))
	return bytes.Equal(h.Sum(nil), raw[4:])
}

// asConsumer runs the aliveness test on vhost as who: nil when it passed.
func (r *rabbit) asConsumer(ctx context.Context, who login, vhost string) error {
	a, err := r.call(ctx, who, "GET", "/aliveness-test/"+esc(vhost), nil)
	if err != nil {
		return err
	}
	var ok struct {
		Status string `json:"status"`
	}
	switch {
	case a.status == http.StatusOK && json.Unmarshal(a.body, &ok) == nil && ok.Status == "ok":
		return nil
	case a.status == http.StatusUnauthorized && strings.Contains(a.reason(), "Login failed"):
		return hook.Errorf(hook.CredentialsRejected, "RabbitMQ refused %s's login: %s", who.user, a.reason())
	default:
		return hook.Errorf(hook.Refused, "%s cannot use vhost %s: RabbitMQ answered the aliveness test with %d: %s", who.user, vhost, a.status, a.reason())
	}
}

// notOurs is the refusal for a user or vhost the hook did not make.
func notOurs(what, name string) error {
	return hook.Errorf(hook.Refused, "%s %s exists and was not made by this hook (no tag %s on user %s): not touching it; remove it to let the hook make it", what, name, markTag, name)
}

func describe(format string, args ...any) string { return fmt.Sprintf(format, args...) }
