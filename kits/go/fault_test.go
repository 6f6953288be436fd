package hook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHelloAndProbeSayTheAdminFaultAndNullWhenThereIsNone(t *testing.T) {
	var fault *Fault
	h := Hook{
		Name:       "t",
		Repairs:    []Repair{{Fault: "admin-refused"}},
		Probe:      func(ctx context.Context, name string) error { return nil },
		AdminFault: func(ctx context.Context) *Fault { return fault },
	}
	fault = &Fault{Class: CredentialsRejected, Error: "mesh-admin's login refused"}
	out := serveLines(t, h,
		`{"v":1,"id":1,"verb":"hello","deadline_ms":1000}`,
	)
	r := decode(t, out[0])
	f, _ := r["fault"].(map[string]any)
	if f["class"] != "credentials-rejected" || f["error"] != "mesh-admin's login refused" || r["ok"] != nil {
		t.Fatalf("hello %v", r)
	}
	r = only(t, h, `{"v":1,"id":2,"verb":"probe","fault":"admin-refused","deadline_ms":1000}`)
	if f, _ := r["fault"].(map[string]any); r["ok"] != true || f["class"] != "credentials-rejected" {
		t.Fatalf("probe %v", r)
	}
	// None: null, which clears a fault said before.
	fault = nil
	for _, line := range []string{
		`{"v":1,"id":3,"verb":"hello","deadline_ms":1000}`,
		`{"v":1,"id":4,"verb":"probe","fault":"admin-refused","deadline_ms":1000}`,
	} {
		out := serveLines(t, h, line)
		if !strings.Contains(out[0], `"fault":null`) {
			t.Fatalf("no fault is said as null: %s", out[0])
		}
	}
	// A class that is none of the four is sent as refused; an announced
	// secret is cut out of the words.
	fault = &Fault{Class: "sad", Error: "admin pw adm1n-pw refused"}
	h.AdminFault = func(ctx context.Context) *Fault {
		AnnounceSecrets([]string{"adm1n-pw"})
		return fault
	}
	out = serveLines(t, h, `{"v":1,"id":5,"verb":"hello","deadline_ms":1000}`)
	if out[0] != `{"secrets":["adm1n-pw"]}` {
		t.Fatalf("the secret is announced before the reply: %q", out)
	}
	r = decode(t, out[1])
	if f, _ := r["fault"].(map[string]any); f["class"] != "refused" || strings.Contains(f["error"].(string), "adm1n-pw") {
		t.Fatalf("hello %v", r)
	}
}

func TestWithoutAdminFaultHelloAndProbeSayNoFaultMemberAndAFailedProbeNone(t *testing.T) {
	h := Hook{Name: "t", Probe: func(ctx context.Context, name string) error { return Errorf(Unreachable, "cannot tell") }}
	out := serveLines(t, h, `{"v":1,"id":1,"verb":"hello","deadline_ms":1000}`)
	if strings.Contains(out[0], "fault\"") {
		t.Fatalf("hello %s", out[0])
	}
	h.AdminFault = func(ctx context.Context) *Fault {
		t.Fatal("AdminFault asked after a probe that failed")
		return nil
	}
	r := only(t, h, `{"v":1,"id":2,"verb":"probe","fault":"x","deadline_ms":1000}`)
	if r["ok"] != false || r["fault"] != nil {
		t.Fatalf("probe %v", r)
	}
}

func TestTheAdminFaultIsSaidInExecModeHello(t *testing.T) {
	reset()
	h := Hook{Name: "t", AdminFault: func(ctx context.Context) *Fault { return &Fault{Class: Unreachable, Error: "no route"} }}
	var out strings.Builder
	code := h.exec("hello", strings.NewReader(`{"v":1,"id":1,"verb":"hello","deadline_ms":1000}`), &out)
	if code != 0 || !strings.Contains(out.String(), `"fault":{"class":"unreachable","error":"no route"}`) {
		t.Fatalf("exit %d, %s", code, out.String())
	}
}

func TestReadSecretFileTrimsAnnouncesAndRereadsAfterARotation(t *testing.T) {
	reset()
	var out strings.Builder
	active().out = &out // as in serve mode: announcements are lines
	dir := t.TempDir()
	file := filepath.Join(dir, "admin")
	t.Setenv("T_ADMIN_FILE", file)
	if err := os.WriteFile(file, []byte("  first-pw \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSecretFile("T_ADMIN_FILE")
	if err != nil || got != "first-pw" {
		t.Fatalf("%q, %v", got, err)
	}
	if out.String() != `{"secrets":["first-pw"]}`+"\n" {
		t.Fatalf("announced %q", out.String())
	}
	// Read again unchanged: nothing more announced.
	if _, err := ReadSecretFile("T_ADMIN_FILE"); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("%v, %q", err, out.String())
	}
	// Rotated: the next read has the new one, announced.
	if err := os.WriteFile(file, []byte("second-pw\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadSecretFile("T_ADMIN_FILE"); err != nil || got != "second-pw" {
		t.Fatalf("%q, %v", got, err)
	}
	if !strings.HasSuffix(out.String(), `{"secrets":["second-pw"]}`+"\n") {
		t.Fatalf("announced %q", out.String())
	}
	// A second file's secret is announced with the first.
	other := filepath.Join(dir, "other")
	_ = os.WriteFile(other, []byte("other-pw"), 0o600)
	t.Setenv("T_OTHER_FILE", other)
	if _, err := ReadSecretFile("T_OTHER_FILE"); err != nil || !strings.HasSuffix(out.String(), `{"secrets":["other-pw","second-pw"]}`+"\n") {
		t.Fatalf("%v, %q", err, out.String())
	}
}

func TestReadSecretFileFailsSecretUnreadableNamingFileAndVariableNeverTheContent(t *testing.T) {
	reset()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte(" \n\t\n"), 0o600)
	cases := []struct{ path, words string }{
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{empty, "is empty"},
		{dir, "is a directory"},
	}
	for _, c := range cases {
		t.Setenv("T_ADMIN_FILE", c.path)
		_, err := ReadSecretFile("T_ADMIN_FILE")
		if ClassOf(err) != SecretUnreadable || !strings.Contains(err.Error(), c.path) ||
			!strings.Contains(err.Error(), "T_ADMIN_FILE") || !strings.Contains(err.Error(), c.words) {
			t.Fatalf("%s: %v (%s)", c.path, err, ClassOf(err))
		}
	}
	t.Setenv("T_ADMIN_FILE", "")
	if _, err := ReadSecretFile("T_ADMIN_FILE"); ClassOf(err) != SecretUnreadable || !strings.Contains(err.Error(), "T_ADMIN_FILE is not set") {
		t.Fatalf("%v", err)
	}
	if len(active().announced()) != 0 {
		t.Fatalf("nothing announced: %q", active().announced())
	}
}
