package hook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TimeoutVar is the environment variable mesh-provide sets to how long it
// waits for a reply, in milliseconds: the deadline of a request that says
// no deadline_ms.
const TimeoutVar = "MESH_HOOK_TIMEOUT_MS"

// maxLine bounds a request line (requests are small; a longer line is bad).
const maxLine = 1 << 20

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidName reports whether name follows mesh's rule for names
// (^[a-z0-9][a-z0-9_-]{0,62}$): at most 63 bytes, no '.', space or quote.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// session is the one running hook's output and announced secrets.
type session struct {
	mu      sync.Mutex
	out     io.Writer // serve mode: where replies and secrets lines go; nil in exec mode
	secrets []string  // the announced set, nil until announced
	name    string
}

var (
	currentMu sync.Mutex
	current   = &session{name: "hook"}
)

func active() *session {
	currentMu.Lock()
	defer currentMu.Unlock()
	return current
}

// activate makes s the running session; secrets announced before it (say,
// in main before Serve) carry over.
func activate(s *session) {
	before := active().announced()
	currentMu.Lock()
	current = s
	currentMu.Unlock()
	s.mu.Lock()
	s.secrets = before
	s.mu.Unlock()
}

// AnnounceSecrets tells mesh-provide the hook's own secrets (its
// administrator's password): the set it removes from every word is replaced
// by this one. Call it before logging anything that may contain them, and
// again whenever the set changes (a re-read password file): in serve mode it
// writes the line {"secrets":[...]} at once (only when the set changed); in
// exec mode the set goes with the reply. Empty strings are dropped.
func AnnounceSecrets(secrets []string) {
	set := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if s != "" {
			set = append(set, s)
		}
	}
	s := active()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secrets != nil && equal(s.secrets, set) {
		return
	}
	s.secrets = set
	if s.out != nil {
		line, _ := json.Marshal(struct {
			Secrets []string `json:"secrets"`
		}{set})
		_, _ = s.out.Write(append(line, '\n'))
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// announced is the set given to AnnounceSecrets (nil: none yet).
func (s *session) announced() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secrets
}

// Logf writes one line on stderr, which mesh-provide logs (redacted,
// bounded), after the hook's name; the announced secrets are cut out.
func Logf(format string, args ...any) {
	s := active()
	words := redact(fmt.Sprintf(format, args...), s.announced()...)
	logger.Printf("%s: %s", s.name, strings.ReplaceAll(words, "\n", " "))
}

// logger writes Logf's lines whole (log.Logger serializes its writes).
var logger = log.New(os.Stderr, "", 0)

// Logger is a *log.Logger writing to stderr (one write a line), for code
// that wants one; it does not redact: prefer Logf.
func Logger() *log.Logger { return logger }

// redact replaces each secret in words by [redacted].
func redact(words string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			words = strings.ReplaceAll(words, secret, "[redacted]")
		}
	}
	return words
}

// request is one request as mesh-provide writes it.
type request struct {
	V          *int            `json:"v"`
	Verb       string          `json:"verb"`
	Consumer   json.RawMessage `json:"consumer"`
	Secret     string          `json:"secret"`
	Fault      string          `json:"fault"`
	Action     string          `json:"action"`
	Target     string          `json:"target"`
	Provider   string          `json:"provider"`
	DeadlineMS *int64          `json:"deadline_ms"`
}

// reply is one reply; the fields a verb does not say are left out.
type reply struct {
	ID          *int64    `json:"id,omitempty"`
	OK          *bool     `json:"ok,omitempty"`
	Class       Class     `json:"class,omitempty"`
	Error       string    `json:"error,omitempty"`
	Mended      string    `json:"mended,omitempty"`
	Detail      string    `json:"detail,omitempty"`
	Held        *[]Held   `json:"held,omitempty"`
	Name        string    `json:"name,omitempty"`
	Secrets     []string  `json:"secrets,omitempty"`
	Repairs     *[]Repair `json:"repairs,omitempty"`
	Works       *bool     `json:"works,omitempty"`
	Reaches     *bool     `json:"reaches,omitempty"`
	Unsupported bool      `json:"unsupported,omitempty"`
	// Fault is hello's and probe's provider fault; a hello or a successful
	// probe of a hook with AdminFault says it, null when there is none.
	Fault *faultField `json:"fault,omitempty"`
}

// faultField is a reply's fault member: null (none) or the fault.
type faultField struct{ fault *Fault }

func (f *faultField) MarshalJSON() ([]byte, error) {
	if f.fault == nil {
		return []byte("null"), nil
	}
	return json.Marshal(f.fault)
}

// adminFault is the reply's fault member: nil without AdminFault (left
// out), else what it says (null: none), its class made valid and its words
// redacted.
func (h *Hook) adminFault(ctx context.Context) *faultField {
	if h.AdminFault == nil {
		return nil
	}
	said := h.AdminFault(ctx)
	if said == nil {
		return &faultField{}
	}
	f := *said
	if !f.Class.Valid() {
		f.Class = Refused
	}
	f.Error = redact(f.Error, active().announced()...)
	return &faultField{&f}
}

func yes() *bool { t := true; return &t }

func boolp(b bool) *bool { return &b }

// readID reads the request's id: a whole number.
func readID(line []byte) (int64, error) {
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return 0, fmt.Errorf("not a JSON object: %v", err)
	}
	if head.ID == nil {
		return 0, errors.New("it has no id")
	}
	id, err := strconv.ParseInt(string(head.ID), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("its id %s is not a whole number", head.ID)
	}
	return id, nil
}

// deadline is the context of one request: its deadline_ms, else the
// environment's MESH_HOOK_TIMEOUT_MS, else none.
func deadline(req *request) (context.Context, context.CancelFunc) {
	ms := int64(0)
	if req.DeadlineMS != nil {
		ms = *req.DeadlineMS
	} else if env, err := strconv.ParseInt(os.Getenv(TimeoutVar), 10, 64); err == nil {
		ms = env
	}
	if ms <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), time.Duration(ms)*time.Millisecond)
}

// answer is the reply to one request line with id. It never panics.
func (h *Hook) answer(id int64, line []byte) (r reply) {
	var req request
	defer func() {
		if p := recover(); p != nil {
			r = h.failure(id, &req, Errorf(Refused, "%s: %s panicked: %v", h.Name, req.Verb, p))
		}
	}()
	if err := json.Unmarshal(line, &req); err != nil {
		return h.failure(id, &req, Errorf(Refused, "%s: a bad request: %v", h.Name, err))
	}
	if req.V == nil || *req.V != Version {
		v := "none"
		if req.V != nil {
			v = strconv.Itoa(*req.V)
		}
		return h.failure(id, &req, Errorf(Refused, "%s speaks protocol version %d, not %s", h.Name, Version, v))
	}
	ctx, cancel := deadline(&req)
	defer cancel()
	if req.Provider != "" {
		ctx = context.WithValue(ctx, providerKey{}, req.Provider)
	}
	done, err := h.dispatch(ctx, &req)
	if err != nil {
		return h.failure(id, &req, err)
	}
	done.ID = &id
	return done
}

var errUnsupported = errors.New("unsupported")

// dispatch calls the verb; errUnsupported when the hook has none.
func (h *Hook) dispatch(ctx context.Context, req *request) (reply, error) {
	ok := reply{OK: yes()}
	switch req.Verb {
	case "hello":
		if h.Hello != nil {
			if err := h.Hello(ctx); err != nil {
				return reply{}, err
			}
		}
		repairs := append([]Repair{}, h.Repairs...)
		fault := h.adminFault(ctx) // first: it may read and announce a secret
		return reply{Name: h.Name, Secrets: active().announced(), Repairs: &repairs, Fault: fault}, nil
	case "ensure", "check":
		verb := h.Ensure
		if req.Verb == "check" {
			verb = h.Check
		}
		if verb == nil {
			return reply{Unsupported: true}, nil
		}
		var c Consumer
		if err := json.Unmarshal(req.Consumer, &c); err != nil || req.Consumer == nil {
			return reply{}, Errorf(Refused, "%s: a bad %s request: consumer is not an object with a name", h.Name, req.Verb)
		}
		if !ValidName(c.Name) {
			return reply{}, Errorf(Refused, "%s: a bad %s request: %q is not a consumer name", h.Name, req.Verb, c.Name)
		}
		c.Provider = Provider(ctx)
		res, err := verb(ctx, c, req.Secret)
		if err != nil {
			return reply{}, err
		}
		ok.Mended = res.Mended
		return ok, nil
	case "held":
		if h.Held == nil {
			return reply{Unsupported: true}, nil
		}
		held, err := h.Held(ctx)
		if err != nil {
			return reply{}, err
		}
		if held == nil {
			held = []Held{}
		}
		return reply{Held: &held}, nil
	case "retire", "re-enable", "delete":
		verb := map[string]func(context.Context, string) error{"retire": h.Retire, "re-enable": h.ReEnable, "delete": h.Delete}[req.Verb]
		if verb == nil {
			return reply{Unsupported: true}, nil
		}
		name, err := h.name(req, req.Consumer, "consumer")
		if err != nil {
			return reply{}, err
		}
		return ok, verb(ctx, name)
	case "probe":
		if h.Probe == nil {
			return reply{Unsupported: true}, nil
		}
		if err := h.Probe(ctx, req.Fault); err != nil {
			return reply{}, err
		}
		ok.Fault = h.adminFault(ctx)
		return ok, nil
	case "repair":
		if h.Repair == nil {
			return reply{Unsupported: true}, nil
		}
		detail, err := h.Repair(ctx, req.Fault)
		ok.Detail = detail
		return ok, err
	case "by-hand":
		return h.byHand(ctx, req)
	}
	return reply{Unsupported: true}, nil
}

// name reads a consumer name field of req.
func (h *Hook) name(req *request, raw json.RawMessage, field string) (string, error) {
	var name string
	if err := json.Unmarshal(raw, &name); err != nil || !ValidName(name) {
		return "", Errorf(Refused, "%s: a bad %s request: %s %s is not a consumer name", h.Name, req.Verb, field, strings.TrimSpace(string(raw)))
	}
	return name, nil
}

func (h *Hook) byHand(ctx context.Context, req *request) (reply, error) {
	b := h.ByHand
	if b == nil {
		return reply{Unsupported: true}, nil
	}
	name, err := h.name(req, req.Consumer, "consumer")
	if err != nil {
		return reply{}, err
	}
	ok := reply{OK: yes()}
	switch req.Action {
	case "change":
		if b.Change != nil {
			return ok, b.Change(ctx, name)
		}
	case "make":
		if b.Make != nil {
			return ok, b.Make(ctx, name, req.Secret)
		}
	case "works":
		if b.Works != nil {
			works, err := b.Works(ctx, name, req.Secret)
			ok.Works = boolp(works)
			return ok, err
		}
	case "reach":
		if b.Reach != nil {
			target, err := h.name(req, mustJSON(req.Target), "target")
			if err != nil {
				return reply{}, err
			}
			reaches, err := b.Reach(ctx, name, req.Secret, target)
			ok.Reaches = boolp(reaches)
			return ok, err
		}
	case "remove":
		if b.Remove != nil {
			return ok, b.Remove(ctx, name)
		}
	}
	return reply{Unsupported: true}, nil
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// failure is the reply for err: its class, its words with the request's
// secret and the announced secrets cut out.
func (h *Hook) failure(id int64, req *request, err error) reply {
	class := ClassOf(err)
	if class == "" && h.Classify != nil {
		class = h.Classify(err)
		if class != "" && !class.Valid() {
			class = Refused
		}
	}
	words := err.Error()
	if words == "" {
		words = fmt.Sprintf("%s: %s failed", h.Name, req.Verb)
	}
	words = redact(words, append([]string{req.Secret}, active().announced()...)...)
	return reply{ID: &id, OK: boolp(false), Class: class, Error: words}
}

// Serve answers requests on stdin, one JSON line each, until stdin closes,
// each in a goroutine of its own, writing each reply on stdout as one line
// as soon as it is done; then it waits for those in flight and runs Close.
func Serve(h Hook) {
	h.serve(os.Stdin, os.Stdout)
	if h.Close != nil {
		h.Close()
	}
}

// serve is Serve over in and out.
func (h *Hook) serve(in io.Reader, out io.Writer) {
	if h.Name == "" {
		h.Name = "hook"
	}
	s := &session{out: out, name: h.Name}
	activate(s)
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64*1024), maxLine)
	var inFlight sync.WaitGroup
	for lines.Scan() {
		line := append([]byte(nil), lines.Bytes()...)
		if strings.TrimSpace(string(line)) == "" {
			continue
		}
		id, err := readID(line)
		if err != nil {
			Logf("a request line is no request (%v); ignored", err)
			continue
		}
		inFlight.Add(1)
		go func() {
			defer inFlight.Done()
			r := h.answer(id, line)
			text, err := json.Marshal(r)
			if err != nil {
				text, _ = json.Marshal(reply{ID: &id, OK: boolp(false), Class: Refused, Error: "the reply could not be written as JSON"})
			}
			s.mu.Lock()
			_, _ = out.Write(append(text, '\n'))
			s.mu.Unlock()
		}()
	}
	if err := lines.Err(); err != nil {
		Logf("reading requests stopped: %v", err)
	}
	inFlight.Wait()
}

// Exec answers the one request on stdin for verb (exec mode), writes its
// reply on stdout and returns the exit code: 0 on success, 1 when the reply
// says "ok": false, 2 when the request is bad.
func Exec(h Hook, verb string) int {
	code := h.exec(verb, os.Stdin, os.Stdout)
	if h.Close != nil {
		h.Close()
	}
	return code
}

func (h *Hook) exec(verb string, in io.Reader, out io.Writer) int {
	if h.Name == "" {
		h.Name = "hook"
	}
	s := &session{name: h.Name}
	activate(s)
	text, err := io.ReadAll(io.LimitReader(in, maxLine))
	if err != nil {
		Logf("reading the request on stdin: %v", err)
		return 2
	}
	var head struct {
		Verb string `json:"verb"`
	}
	if err := json.Unmarshal(text, &head); err != nil {
		Logf("the request on stdin is not JSON: %v", err)
		return 2
	}
	if head.Verb != verb {
		Logf("the request says verb %q but the hook was run as %q", head.Verb, verb)
		return 2
	}
	id, err := readID(text)
	r := h.answer(id, text)
	if err != nil {
		r.ID = nil // exec mode: the reply need not carry an id
	}
	if r.Secrets == nil {
		r.Secrets = s.announced()
	}
	line, _ := json.Marshal(r)
	_, _ = out.Write(append(line, '\n'))
	if r.OK != nil && !*r.OK {
		return 1
	}
	return 0
}

// Main runs the hook as mesh-provide starts it: `PATH serve` (serve mode)
// or `PATH VERB` (exec mode, one request on stdin), then exits.
func Main(h Hook) {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: %s serve | %s VERB (one JSON request on stdin)\n", os.Args[0], os.Args[0])
		os.Exit(2)
	}
	if os.Args[1] == "serve" {
		Serve(h)
		os.Exit(0)
	}
	os.Exit(Exec(h, os.Args[1]))
}
