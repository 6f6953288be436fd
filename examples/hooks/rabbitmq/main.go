// rabbitmq-hook: a mesh-provide hook provisioning RabbitMQ, written on the
// Go kit (kits/go, package mesh/hook). For each consumer it keeps, through
// the management HTTP API, as an administrator:
//
//   - a vhost and a user, both named after the consumer; the user's password
//     is the consumer's minted secret, its tags `management` (the least the
//     HTTP API needs for the check below), `mesh-provide` and
//     `mesh-provide:<module>@<machine>` (the mark, naming the provider
//     instance the request was made for: held lists only users carrying the
//     asking instance's; retire, re-enable and delete leave any other be;
//     ensure refuses another instance's user, naming it, and adopts a user
//     tagged `mesh-provide` alone, from before marks named their instance;
//     a user without the mark is never touched);
//   - the user's permissions on that vhost only: configure, write and read
//     `.*` (none anywhere else, so a consumer reaches no other's vhost).
//
// Verbs (mesh-provide runs it as `rabbitmq-hook serve`, or exec mode
// `rabbitmq-hook VERB`):
//
//   - ensure: make what is missing (the user first, with its mark, then the
//     vhost, then the permissions: a call killed half way leaves a marked
//     user the next ensure completes); for a user it made, set the password
//     again when RabbitMQ's hash is not the secret's, and the tags and the
//     permissions when they differ, replying `mended` for what it set again
//     (a rotation too: the loop, which knows when it minted a new secret,
//     does not count that as a mend). A retired user's permissions are left off: re-enabling is
//     the loop's call. A user or a vhost of that name it did not make is
//     refused.
//   - check: as the consumer, with its own credentials against the API,
//     `GET /api/aliveness-test/<vhost>` (declares the queue aliveness-test
//     in its vhost, publishes and consumes a message there: configure,
//     write and read all used). RabbitMQ's "Login failed" is
//     credentials-rejected.
//   - held: the users tagged mesh-provide:<the asking instance>; retired
//     when also tagged mesh-retired.
//   - retire: the permissions removed, then the tag mesh-retired, and the
//     user's connections closed. The password is kept: re-enable carries no
//     secret, so a cleared password hash could not be brought back until the
//     next ensure; with no permissions the user reaches no vhost at all.
//     re-enable: the permissions set again, then the tag removed.
//   - delete: the vhost (and its queues), then the user.
//   - by-hand (conform's oracle): change (another password on the user),
//     make (a user, vhost and permissions as a person would: tag
//     `management` only, no mark), works, reach (the aliveness test as one
//     consumer on another's vhost), remove.
//
// The administrator's password is read from its file on every call
// (hook.ReadSecretFile: a rotation needs no restart) and announced to
// mesh-provide (a secrets line) before it is used. hello says the provider
// fault (hook.Hook.AdminFault): the administrator refused by RabbitMQ, or
// its API out of reach, so status names it at once.
//
// Settings (environment):
//
//	RABBITMQ_HOOK_API                  the management API's base URL
//	                                   (default http://127.0.0.1:15672)
//	RABBITMQ_HOOK_ADMIN_USER           the administrator (default mesh-admin;
//	                                   tag `administrator`, permissions on no
//	                                   vhost needed)
//	RABBITMQ_HOOK_ADMIN_PASSWORD_FILE  the file holding its password
//	                                   (required; surrounding white space dropped)
//
// `rabbitmq-hook direct` is the benchmark's reference (provide/benches/
// kit_go.rs): for each line `N C` on stdin it runs a pass (ensure then check
// of consumer-0000 ... with bench-secret-0000-7f3a9c1e5d ..., C at once)
// calling the same functions in this process, and answers
// {"ms":...,"failed":...}.
package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"mesh/hook"
)

// settings reads the environment.
func settings() (*rabbit, error) {
	base := strings.TrimRight(os.Getenv("RABBITMQ_HOOK_API"), "/")
	if base == "" {
		base = "http://127.0.0.1:15672"
	}
	user := os.Getenv("RABBITMQ_HOOK_ADMIN_USER")
	if user == "" {
		user = "mesh-admin"
	}
	if os.Getenv(passwordVar) == "" {
		return nil, fmt.Errorf("%s is not set: the file holding %s's password", passwordVar, user)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	return &rabbit{
		base:      base + "/api",
		adminUser: user,
		client:    &http.Client{Transport: transport, Timeout: 5 * time.Minute},
	}, nil
}

func main() {
	r, err := settings()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rabbitmq-hook: %v\n", err)
		os.Exit(2)
	}
	if len(os.Args) > 1 && os.Args[1] == "direct" {
		direct(r)
		return
	}
	hook.Main(r.hook())
}

// hook is the kit's Hook over r.
func (r *rabbit) hook() hook.Hook {
	return hook.Hook{
		Name:  "rabbitmq-hook",
		Hello: r.hello,
		// A hello (and a probe) says whether the administrator works.
		AdminFault: r.adminFault,
		Ensure:     r.ensure,
		Check:      r.check,
		Held:       r.held,
		Retire:     r.retire,
		ReEnable:   r.reEnable,
		Delete:     r.delete,
		ByHand: &hook.ByHand{
			Change: r.change,
			Make:   r.make,
			Works:  r.works,
			Reach:  r.reach,
			Remove: r.remove,
		},
		Close: r.client.CloseIdleConnections,
	}
}
