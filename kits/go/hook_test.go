package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveLines runs h in serve mode over the given request lines and returns
// the lines it wrote, in order.
func serveLines(t *testing.T, h Hook, lines ...string) []string {
	t.Helper()
	reset()
	var out bytes.Buffer
	h.serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out)
	text := strings.TrimRight(out.String(), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// decode reads one reply line as a map.
func decode(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("reply %q is not JSON: %v", line, err)
	}
	return m
}

func only(t *testing.T, h Hook, line string) map[string]any {
	t.Helper()
	out := serveLines(t, h, line)
	if len(out) != 1 {
		t.Fatalf("one request, %d lines written: %q", len(out), out)
	}
	return decode(t, out[0])
}

const ensureLine = `{"v":1,"id":7,"deadline_ms":2500,"verb":"ensure","consumer":{"name":"forge","machine":"app-1","provision":"rabbitmq","options":{}},"secret":"s3cret-pw"}`

func TestAnEnsureLineInGivesOneReplyLineWithItsIdAndMended(t *testing.T) {
	var got Consumer
	var secret string
	h := Hook{Name: "t", Ensure: func(ctx context.Context, c Consumer, s string) (Result, error) {
		got, secret = c, s
		return Result{Mended: "password set again"}, nil
	}}
	r := only(t, h, ensureLine)
	if r["id"] != float64(7) || r["ok"] != true || r["mended"] != "password set again" {
		t.Fatalf("reply %v", r)
	}
	if got.Name != "forge" || got.Machine != "app-1" || got.Provision != "rabbitmq" || string(got.Options) != "{}" || secret != "s3cret-pw" {
		t.Fatalf("the verb was given %+v %q", got, secret)
	}
}

func TestAFailureCarriesItsClassAndNeverTheSecret(t *testing.T) {
	h := Hook{Name: "t",
		Ensure: func(ctx context.Context, c Consumer, s string) (Result, error) {
			return Result{}, Errorf(CredentialsRejected, "login as %s with %s refused", c.Name, s)
		},
		Check: func(ctx context.Context, c Consumer, s string) (Result, error) {
			return Result{}, errors.New("dial tcp: connection refused")
		},
		Classify: func(err error) Class {
			if strings.Contains(err.Error(), "connection refused") {
				return Unreachable
			}
			return ""
		},
	}
	r := only(t, h, ensureLine)
	if r["ok"] != false || r["class"] != "credentials-rejected" || r["error"] != "login as forge with [redacted] refused" {
		t.Fatalf("reply %v", r)
	}
	r = only(t, h, strings.Replace(ensureLine, `"ensure"`, `"check"`, 1))
	if r["class"] != "unreachable" {
		t.Fatalf("Classify not used: %v", r)
	}
}

func TestAnErrorWithoutClassLeavesTheClassToMeshProvide(t *testing.T) {
	h := Hook{Retire: func(ctx context.Context, name string) error { return errors.New("boom") }}
	r := only(t, h, `{"v":1,"id":3,"verb":"retire","consumer":"forge"}`)
	if _, has := r["class"]; has || r["ok"] != false || r["error"] != "boom" {
		t.Fatalf("reply %v", r)
	}
}

func TestTheDeadlineMsIsTheContextsDeadline(t *testing.T) {
	var left time.Duration
	h := Hook{Check: func(ctx context.Context, c Consumer, s string) (Result, error) {
		d, ok := ctx.Deadline()
		if !ok {
			return Result{}, errors.New("no deadline")
		}
		left = time.Until(d)
		return Result{}, nil
	}}
	r := only(t, h, strings.Replace(ensureLine, `"ensure"`, `"check"`, 1))
	if r["ok"] != true || left <= 2*time.Second || left > 2500*time.Millisecond {
		t.Fatalf("reply %v, deadline in %v (want about 2.5 s)", r, left)
	}
	t.Setenv(TimeoutVar, "900")
	r = only(t, h, `{"v":1,"id":1,"verb":"check","consumer":{"name":"a","machine":"m","provision":"p","options":null},"secret":"x"}`)
	if r["ok"] != true || left > 900*time.Millisecond || left < 500*time.Millisecond {
		t.Fatalf("without deadline_ms, MESH_HOOK_TIMEOUT_MS: reply %v, deadline in %v", r, left)
	}
}

// signalling is a writer that closes seen once a line with the given
// text has been written.
type signalling struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	text string
	seen chan struct{}
}

func (w *signalling) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(string(p), w.text) {
		defer close(w.seen)
	}
	return w.buf.Write(p)
}

func TestSeveralRequestsAreInFlightAndEachIsAnsweredWhenDone(t *testing.T) {
	reset()
	out := &signalling{text: `"id":2`, seen: make(chan struct{})}
	h := Hook{
		Check: func(ctx context.Context, c Consumer, s string) (Result, error) {
			if c.Name == "slow" {
				// Still in flight until the fast one's reply is written.
				select {
				case <-out.seen:
				case <-ctx.Done():
					return Result{}, ctx.Err()
				}
			}
			return Result{}, nil
		},
	}
	line := func(id, name string) string {
		return `{"v":1,"id":` + id + `,"deadline_ms":5000,"verb":"check","consumer":{"name":"` + name + `","machine":"m","provision":"p","options":{}},"secret":"x"}`
	}
	h.serve(strings.NewReader(line("1", "slow")+"\n"+line("2", "fast")+"\n"), out)
	lines := strings.Split(strings.TrimSpace(out.buf.String()), "\n")
	if len(lines) != 2 || decode(t, lines[0])["id"] != float64(2) || decode(t, lines[1])["id"] != float64(1) || decode(t, lines[1])["ok"] != true {
		t.Fatalf("the fast one first, then the slow one (not timed out): %q", lines)
	}
}

func TestRepliesWrittenAtOnceAreWholeLines(t *testing.T) {
	h := Hook{Held: func(ctx context.Context) ([]Held, error) {
		return []Held{{Consumer: strings.Repeat("a", 63)}, {Consumer: "b", Retired: true}}, nil
	}}
	var lines []string
	for i := 1; i <= 200; i++ {
		lines = append(lines, `{"v":1,"id":`+strconv.Itoa(i)+`,"verb":"held"}`)
	}
	out := serveLines(t, h, lines...)
	if len(out) != 200 {
		t.Fatalf("200 requests, %d lines", len(out))
	}
	for _, l := range out {
		r := decode(t, l)
		if held, ok := r["held"].([]any); !ok || len(held) != 2 {
			t.Fatalf("a torn or wrong line: %q", l)
		}
	}
}

func TestBadLinesAreIgnoredOrRefusedNeverAnsweredAsSuccess(t *testing.T) {
	called := false
	h := Hook{Ensure: func(ctx context.Context, c Consumer, s string) (Result, error) {
		called = true
		return Result{}, nil
	}}
	out := serveLines(t, h,
		`not json`,
		`{"v":1,"verb":"held"}`,
		`{"v":1,"id":1.5,"verb":"held"}`,
		``,
		`{"v":2,"id":4,"verb":"ensure"}`,
		`{"v":1,"id":5,"verb":"ensure","consumer":"forge","secret":"x"}`,
		`{"v":1,"id":6,"verb":"ensure","consumer":{"name":"Forge.x","machine":"m","provision":"p"},"secret":"x"}`,
		`{"v":1,"id":7,"verb":"ensure","consumer":{"name":"forge"},"secret":5}`,
	)
	if called {
		t.Fatal("a bad request reached the verb")
	}
	if len(out) != 4 {
		t.Fatalf("lines without an id get no reply, the four others a refusal: %q", out)
	}
	for _, l := range out {
		r := decode(t, l)
		if r["ok"] != false || r["class"] != "refused" || r["error"] == "" {
			t.Fatalf("not a refusal: %q", l)
		}
	}
	named := false
	for _, l := range out {
		r := decode(t, l)
		if r["id"] == float64(4) {
			named = strings.Contains(r["error"].(string), "protocol version 1, not 2")
		}
	}
	if !named {
		t.Fatalf("the version is named: %q", out)
	}
}

func TestAVerbTheHookHasNotIsUnsupported(t *testing.T) {
	h := Hook{}
	for _, line := range []string{
		ensureLine,
		`{"v":1,"id":2,"verb":"held"}`,
		`{"v":1,"id":3,"verb":"delete","consumer":"forge"}`,
		`{"v":1,"id":4,"verb":"probe","fault":"f"}`,
		`{"v":1,"id":5,"verb":"by-hand","action":"change","consumer":"forge"}`,
		`{"v":1,"id":6,"verb":"frobnicate"}`,
	} {
		r := only(t, h, line)
		if r["unsupported"] != true {
			t.Fatalf("%s: %v", line, r)
		}
	}
}

func TestHelloSaysNameRepairsAndTheAnnouncedSecrets(t *testing.T) {
	h := Hook{Name: "rabbit", Repairs: []Repair{{Fault: "admin-refused"}}, Hello: func(ctx context.Context) error {
		AnnounceSecrets([]string{"admin-pw", ""})
		return nil
	}}
	out := serveLines(t, h, `{"v":1,"id":1,"verb":"hello","deadline_ms":1000}`)
	if len(out) != 2 || out[0] != `{"secrets":["admin-pw"]}` {
		t.Fatalf("the secrets line first: %q", out)
	}
	r := decode(t, out[1])
	if r["name"] != "rabbit" || r["secrets"].([]any)[0] != "admin-pw" || r["repairs"].([]any)[0].(map[string]any)["fault"] != "admin-refused" {
		t.Fatalf("hello %v", r)
	}
	if _, has := r["ok"]; has {
		t.Fatalf("hello says no ok: %v", r)
	}
}

func TestAnnouncedSecretsAreWrittenOnceASetAndCutFromErrorsAndLogs(t *testing.T) {
	var stderr bytes.Buffer
	logger.SetOutput(&stderr)
	defer logger.SetOutput(io.Discard)
	h := Hook{Name: "t", Held: func(ctx context.Context) ([]Held, error) {
		AnnounceSecrets([]string{"pw-1"})
		AnnounceSecrets([]string{"pw-1"})
		Logf("logged in with pw-1")
		return nil, errors.New("admin pw-1 refused")
	}}
	out := serveLines(t, h, `{"v":1,"id":1,"verb":"held"}`)
	if len(out) != 2 || out[0] != `{"secrets":["pw-1"]}` {
		t.Fatalf("one secrets line, then the reply: %q", out)
	}
	if r := decode(t, out[1]); r["error"] != "admin [redacted] refused" {
		t.Fatalf("reply %v", r)
	}
	if got := stderr.String(); got != "t: logged in with [redacted]\n" {
		t.Fatalf("stderr %q", got)
	}
}

func TestByHandActionsAnswerWorksAndReaches(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]string{}
	note := func(k, v string) { mu.Lock(); calls[k] = v; mu.Unlock() }
	h := Hook{ByHand: &ByHand{
		Change: func(ctx context.Context, name string) error { note("change", name); return nil },
		Make:   func(ctx context.Context, name, secret string) error { note("make", name+"/"+secret); return nil },
		Works:  func(ctx context.Context, name, secret string) (bool, error) { return secret == "right", nil },
		Reach: func(ctx context.Context, name, secret, target string) (bool, error) {
			note("reach", name+">"+target)
			return false, nil
		},
	}}
	if r := only(t, h, `{"v":1,"id":1,"verb":"by-hand","action":"make","consumer":"a_b","secret":"pw"}`); r["ok"] != true || calls["make"] != "a_b/pw" {
		t.Fatalf("make: %v %v", r, calls)
	}
	if r := only(t, h, `{"v":1,"id":2,"verb":"by-hand","action":"works","consumer":"a","secret":"right"}`); r["works"] != true {
		t.Fatalf("works: %v", r)
	}
	if r := only(t, h, `{"v":1,"id":3,"verb":"by-hand","action":"works","consumer":"a","secret":"wrong"}`); r["works"] != false || r["ok"] != true {
		t.Fatalf("works false is said, not left out: %v", r)
	}
	if r := only(t, h, `{"v":1,"id":4,"verb":"by-hand","action":"reach","consumer":"a","secret":"s","target":"b"}`); r["reaches"] != false || calls["reach"] != "a>b" {
		t.Fatalf("reach: %v %v", r, calls)
	}
	if r := only(t, h, `{"v":1,"id":5,"verb":"by-hand","action":"reach","consumer":"a","secret":"s","target":"../x"}`); r["class"] != "refused" {
		t.Fatalf("a bad target is refused: %v", r)
	}
	if r := only(t, h, `{"v":1,"id":6,"verb":"by-hand","action":"remove","consumer":"a"}`); r["unsupported"] != true {
		t.Fatalf("an action without a func is unsupported: %v", r)
	}
}

func TestAPanickingVerbIsARefusalNotACrash(t *testing.T) {
	h := Hook{Name: "t", Delete: func(ctx context.Context, name string) error { panic("oops") }}
	r := only(t, h, `{"v":1,"id":9,"verb":"delete","consumer":"forge"}`)
	if r["ok"] != false || r["class"] != "refused" || !strings.Contains(r["error"].(string), "panicked: oops") {
		t.Fatalf("reply %v", r)
	}
}

func TestExecModeAnswersOneRequestWithItsExitCode(t *testing.T) {
	h := Hook{Name: "t",
		Ensure: func(ctx context.Context, c Consumer, s string) (Result, error) {
			AnnounceSecrets([]string{"admin-pw"})
			return Result{}, nil
		},
		Check: func(ctx context.Context, c Consumer, s string) (Result, error) {
			return Result{}, Errorf(CredentialsRejected, "wrong %s", s)
		},
	}
	reset()
	var out bytes.Buffer
	if code := h.exec("ensure", strings.NewReader(ensureLine), &out); code != 0 {
		t.Fatalf("ensure: exit %d, %s", code, out.String())
	}
	if r := decode(t, out.String()); r["ok"] != true || r["secrets"].([]any)[0] != "admin-pw" {
		t.Fatalf("ensure's reply carries the secrets: %v", r)
	}
	out.Reset()
	if code := h.exec("check", strings.NewReader(strings.Replace(ensureLine, `"ensure"`, `"check"`, 1)), &out); code != 1 {
		t.Fatalf("a failed check exits 1, not %d", code)
	}
	if r := decode(t, out.String()); r["error"] != "wrong [redacted]" {
		t.Fatalf("check: %v", r)
	}
	out.Reset()
	if code := h.exec("check", strings.NewReader(ensureLine), &out); code != 2 || out.Len() != 0 {
		t.Fatalf("a request for another verb: exit %d, %q", code, out.String())
	}
	if code := h.exec("held", strings.NewReader("{"), &out); code != 2 {
		t.Fatalf("a request that is not JSON exits 2, not %d", code)
	}
}

func init() { logger.SetOutput(io.Discard) }

func TestSecretsAnnouncedBeforeServeAreSaidInHello(t *testing.T) {
	reset()
	AnnounceSecrets([]string{"early-pw"})
	var out bytes.Buffer
	h := Hook{Name: "t"}
	h.serve(strings.NewReader(`{"v":1,"id":1,"verb":"hello"}`+"\n"), &out)
	r := decode(t, out.String())
	if got, _ := r["secrets"].([]any); len(got) != 1 || got[0] != "early-pw" {
		t.Fatalf("hello %v", r)
	}
}

// reset forgets the running session and its secrets.
func reset() {
	currentMu.Lock()
	current = &session{name: "hook"}
	currentMu.Unlock()
	fileSecretsMu.Lock()
	fileSecrets = map[string]string{}
	fileSecretsMu.Unlock()
}

func TestEveryVerbIsToldTheProviderItsRequestIsMadeFor(t *testing.T) {
	t.Setenv(ProviderVar, "rabbitmq@mq-1")
	var mu sync.Mutex
	seen := map[string]string{}
	saw := func(what, provider string) {
		mu.Lock()
		defer mu.Unlock()
		seen[what] = provider
	}
	h := Hook{Name: "t",
		Ensure: func(ctx context.Context, c Consumer, s string) (Result, error) {
			saw("ensure", c.Provider+" "+Provider(ctx))
			return Result{}, nil
		},
		Held: func(ctx context.Context) ([]Held, error) {
			saw("held", Provider(ctx))
			return nil, nil
		},
		Retire: func(ctx context.Context, name string) error {
			saw("retire", Provider(ctx))
			return nil
		},
	}
	serveLines(t, h,
		`{"v":1,"id":1,"verb":"ensure","provider":"rabbitmq@mq-2","consumer":{"name":"forge","machine":"app-1","provision":"p","options":{}},"secret":"s"}`,
		`{"v":1,"id":2,"verb":"held","provider":"rabbitmq@mq-3"}`,
		`{"v":1,"id":3,"verb":"retire","consumer":"forge"}`,
	)
	want := map[string]string{
		"ensure": "rabbitmq@mq-2 rabbitmq@mq-2",
		"held":   "rabbitmq@mq-3",
		// A request naming none: the instance the hook was started for.
		"retire": "rabbitmq@mq-1",
	}
	for k, v := range want {
		if seen[k] != v {
			t.Fatalf("%s saw provider %q, want %q (all: %v)", k, seen[k], v, seen)
		}
	}
	if got := Provider(WithProvider(context.Background(), "x@y")); got != "x@y" {
		t.Fatalf("WithProvider: %q", got)
	}
}
