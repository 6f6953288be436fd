// Package hook is the hook side of mesh-provide's protocol (version 1) for
// Go, in both of its modes:
//
//	hook serve    one JSON request a line on stdin, one JSON reply a line on
//	              stdout carrying the request's id; several requests in flight
//	hook VERB     exec mode: one JSON request on stdin, one JSON reply on
//	              stdout, exit 0 on success and 1 on failure
//
// mesh-provide runs the provisioner loop (passes, retries, retirement,
// approvals, the bus); a hook written with this package does only what
// touches its backend. Fill in a [Hook] with your verbs and call [Main]:
//
//	func main() {
//		hook.Main(hook.Hook{
//			Name:   "my-backend",
//			Ensure: ensure,
//			Check:  check,
//			Held:   held,
//			...
//		})
//	}
//
// Each verb gets a context whose deadline is the request's deadline_ms (how
// long mesh-provide waits for the reply), and returns nil or an error; an
// error made with [Errorf] or a [*HookError] carries its class. stdout
// carries replies only: log with [Logf] (stderr). The consumer's secret and
// the secrets given to [AnnounceSecrets] are cut out of every error text
// before a reply. Every request names the provider instance it is made for
// (module@machine): [Provider] reads it from the verb's context, and
// [Consumer.Provider] carries it. Mark what the hook makes with it and list
// in Held only that instance's (docs/hooks.md, "Two instances, one
// backend"). docs/hooks.md describes the protocol, docs/kits/go.md this
// package.
//
// The package uses the standard library only.
package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// ProviderVar is the environment variable naming the provider instance the
// hook was started for (module@machine).
const ProviderVar = "MESH_PROVIDER"

// providerKey is the context key of the request's provider.
type providerKey struct{}

// Provider is the provider instance (module@machine) the request whose
// context ctx is was made for: the request's provider, else the
// environment's MESH_PROVIDER (the instance the hook was started for), else
// "". In serve mode one process may be asked for more than one instance
// (conform's rule 17 does): act on this, not on MESH_PROVIDER.
func Provider(ctx context.Context) string {
	if p, ok := ctx.Value(providerKey{}).(string); ok && p != "" {
		return p
	}
	return os.Getenv(ProviderVar)
}

// WithProvider is ctx saying provider as the request's instance (for tests
// and drivers that call verbs directly).
func WithProvider(ctx context.Context, provider string) context.Context {
	return context.WithValue(ctx, providerKey{}, provider)
}

// Version is the protocol version this package speaks.
const Version = 1

// Class is the class of a failure, as the loop reads it.
type Class string

// The four classes a failure may name.
const (
	// CredentialsRejected: the backend refused a password (the consumer's
	// or the hook's administrator's).
	CredentialsRejected Class = "credentials-rejected"
	// Unreachable: the backend could not be reached.
	Unreachable Class = "unreachable"
	// SecretUnreadable: a secret (a password file) could not be read.
	SecretUnreadable Class = "secret-unreadable"
	// Refused: anything else.
	Refused Class = "refused"
)

// Valid reports whether c is one of the four classes.
func (c Class) Valid() bool {
	switch c {
	case CredentialsRejected, Unreachable, SecretUnreadable, Refused:
		return true
	}
	return false
}

// HookError is a failure with its class: return one (or [Errorf]'s) from a
// verb to say what kind of failure it is. An error of another type is
// classed by [Hook.Classify], else left to mesh-provide, which reads its
// message.
type HookError struct {
	// Class is the failure's class; an invalid one is sent as Refused.
	Class Class
	// Message is the failure's message (the consumer's secret and the
	// announced secrets are cut out of it before the reply).
	Message string
}

// Error returns the message.
func (e *HookError) Error() string { return e.Message }

// Errorf makes a *HookError of class with fmt.Sprintf's message.
func Errorf(class Class, format string, args ...any) error {
	return &HookError{Class: class, Message: fmt.Sprintf(format, args...)}
}

// ClassOf is the class of err: a *HookError's (anywhere in its chain),
// else "" (none said).
func ClassOf(err error) Class {
	var he *HookError
	if errors.As(err, &he) {
		if he.Class.Valid() {
			return he.Class
		}
		return Refused
	}
	return ""
}

// Consumer is the consumer an ensure or check request carries.
type Consumer struct {
	// Name is the consumer's name (^[a-z0-9][a-z0-9_-]{0,62}$, checked
	// before a verb is called).
	Name string `json:"name"`
	// Machine is the machine it runs on.
	Machine string `json:"machine"`
	// Provision is the provision it asks for.
	Provision string `json:"provision"`
	// Options is the contributions entry's options as given ({} or null
	// when it has none).
	Options json.RawMessage `json:"options"`
	// Provider is the provider instance (module@machine) the call is made
	// for, the one listing this consumer: [Provider] of the verb's context.
	Provider string `json:"-"`
}

// Result is what ensure or check did beyond succeeding.
type Result struct {
	// Mended, when not empty, says what the verb found changed by hand at
	// the backend and brought back (the loop logs it and counts it).
	Mended string
}

// Held is one provision the hook made, as held lists it.
type Held struct {
	// Consumer is the consumer's name.
	Consumer string `json:"consumer"`
	// Retired says whether it is retired.
	Retired bool `json:"retired"`
}

// Fault is a provider fault: the hook cannot work as its administrator now
// (its password refused, its backend out of reach). Said in a hello reply
// and in a probe reply that found its known fault absent, as
// {"fault":{"class":...,"error":...}}; the loop publishes it at once and
// status names it on the provider's line (docs/hooks.md, "fault"). Give it
// with [Hook.AdminFault].
type Fault struct {
	// Class is its class (an invalid or empty one is sent as Refused).
	Class Class `json:"class"`
	// Error says what is wrong and, best, how to fix it (the announced
	// secrets are cut out of it before the reply).
	Error string `json:"error,omitempty"`
}

// Repair is a known fault the hook can probe and repair, said in hello.
type Repair struct {
	// Fault is its name.
	Fault string `json:"fault"`
	// Class is the class it fails with (empty: credentials-rejected).
	Class Class `json:"class,omitempty"`
}

// ByHand holds the conform-only by-hand actions: mesh-provide conform uses
// them as an oracle acting on the backend as a person would; the loop never
// calls them. A nil action is answered unsupported (conform skips the rules
// needing it).
type ByHand struct {
	// Change changes name's provision as a person would (another password),
	// so that check with its secret fails until ensure brings it back (and
	// says Mended).
	Change func(ctx context.Context, name string) error
	// Make makes a provision named name with secret as a person would, one
	// the hook does not count as its own.
	Make func(ctx context.Context, name, secret string) error
	// Works tells whether name's provision works with secret.
	Works func(ctx context.Context, name, secret string) (bool, error)
	// Reach tells whether consumer name, logged in with secret, reaches
	// target's provision.
	Reach func(ctx context.Context, name, secret, target string) (bool, error)
	// Remove removes what Make made.
	Remove func(ctx context.Context, name string) error
}

// Hook is what a hook author fills in: the verbs that touch the backend.
// A nil verb is answered {"unsupported":true} (docs/hooks.md says what the
// loop makes of each).
type Hook struct {
	// Name is said in hello and starts each log line.
	Name string
	// Hello, when set, runs on hello before the reply (e.g. to read the
	// administrator's password and AnnounceSecrets it); an error fails
	// the hello (the hook is not run).
	Hello func(ctx context.Context) error
	// Ensure makes the consumer's provision when missing and brings the
	// given secret to the backend when it holds another; idempotent.
	Ensure func(ctx context.Context, c Consumer, secret string) (Result, error)
	// Check proves the provision works as the consumer would use it.
	Check func(ctx context.Context, c Consumer, secret string) (Result, error)
	// Held lists every provision the instance Provider(ctx) made, and
	// only those.
	Held func(ctx context.Context) ([]Held, error)
	// Retire disables a provision Provider(ctx) made, reversibly;
	// idempotent. Another instance's is left be.
	Retire func(ctx context.Context, name string) error
	// ReEnable enables a retired provision of Provider(ctx)'s again;
	// idempotent.
	ReEnable func(ctx context.Context, name string) error
	// Delete removes a retired provision of Provider(ctx)'s and its data;
	// idempotent.
	Delete func(ctx context.Context, name string) error
	// AdminFault, when set, says whether the hook can work as its
	// administrator now: nil when it can, else the provider fault (e.g. its
	// login refused: CredentialsRejected). It is asked after every hello
	// (when Hello succeeded) and every probe that found its known fault
	// absent, and its answer is that reply's fault: in exec mode hello is
	// asked once a pass; in serve mode once a start, then probes (give
	// Repairs for them to be asked). A hello whose Hello failed stays a
	// failure (mesh-provide takes it for the fault too).
	AdminFault func(ctx context.Context) *Fault
	// Repairs lists the known faults Probe and Repair handle.
	Repairs []Repair
	// Probe returns nil when the known fault is absent.
	Probe func(ctx context.Context, fault string) error
	// Repair repairs the known fault and says what it did.
	Repair func(ctx context.Context, fault string) (string, error)
	// ByHand holds the conform-only by-hand actions (nil: unsupported).
	ByHand *ByHand
	// Classify gives the class of an error that is no *HookError ("":
	// none, mesh-provide reads the message).
	Classify func(err error) Class
	// Close, when set, runs once after the last reply (release the
	// backend's connections).
	Close func()
}
