package hook

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
)

// fileSecrets is what ReadSecretFile read last, by variable: announced
// together, so that two files (two administrators) do not hide each other.
var (
	fileSecretsMu sync.Mutex
	fileSecrets   = map[string]string{}
)

// ReadSecretFile reads a secret of the hook's own (its administrator's
// password) from the file the environment variable envVar names: the
// file read again at every call, its surrounding whitespace (the line
// break) trimmed. The secret is announced to mesh-provide ([AnnounceSecrets],
// with every other secret read through ReadSecretFile) before it is
// returned, so it is redacted before anything can use or log it. Call it
// for every new administrator session (a connection, or every call):
// a rotated password then needs no restart.
//
// It fails with class SecretUnreadable, naming the variable and the file
// (never what it holds), when envVar is not set, the file cannot be read,
// or it holds only whitespace.
func ReadSecretFile(envVar string) (string, error) {
	path := os.Getenv(envVar)
	if path == "" {
		return "", Errorf(SecretUnreadable, "%s is not set: it names the file holding the hook's administrator password", envVar)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		why := err.Error()
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			why = pathErr.Err.Error()
		}
		return "", Errorf(SecretUnreadable, "the secret file %s (%s) cannot be read: %s", path, envVar, why)
	}
	secret := strings.TrimSpace(string(text))
	if secret == "" {
		return "", Errorf(SecretUnreadable, "the secret file %s (%s) is empty", path, envVar)
	}
	// Held while announcing: two calls announce their sets in the order
	// they took them.
	fileSecretsMu.Lock()
	defer fileSecretsMu.Unlock()
	fileSecrets[envVar] = secret
	all := make([]string, 0, len(fileSecrets))
	for _, s := range fileSecrets {
		all = append(all, s)
	}
	sort.Strings(all) // a stable order: an unchanged set writes no line
	AnnounceSecrets(all)
	return secret, nil
}
