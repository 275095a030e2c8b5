package control

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
)

// EnvToken names the environment variable that gives the server its control token (and
// csconform hypervisor and csconform agent the token of their fault hooks).
const EnvToken = "CSCONFORM_CONTROL_TOKEN"

// EnvAgentKey names the environment variable that gives the server and its agents the agent key: the
// server takes an agent's StartupCommand only with it.
const EnvAgentKey = "CSCONFORM_AGENT_KEY"

// Token resolves the control token (of the server's control endpoint, and of the fault hooks
// of csconform hypervisor --listen and csconform agent --faults): $CSCONFORM_CONTROL_TOKEN; else the
// token in file if it exists; else a generated one, written to file (created 0600, never overwritten)
// or to a new 0600 file in the temporary directory. written names the file when the token was
// generated there (the process prints the path, never the token).
func Token(file string) (token, written string, err error) {
	return secret(EnvToken, file, "control token", true)
}

// AgentKey resolves the agent key as Token does the control token, from $CSCONFORM_AGENT_KEY
// or file; the server generates one when there is none (generate), an agent cannot.
func AgentKey(file string, generate bool) (key, written string, err error) {
	return secret(EnvAgentKey, file, "agent key", generate)
}

// secret resolves a shared secret named what: $env; else the secret in file if it exists; else, with
// generate, a generated one written to file (created 0600, never overwritten) or to a new 0600 file in
// the temporary directory, whose name is written; without generate, an error.
func secret(env, file, what string, generate bool) (s, written string, err error) {
	if t := os.Getenv(env); t != "" {
		return t, "", checkSecret(t, "$"+env, what)
	}
	if file != "" {
		b, err := ReadSecretFile(file)
		if err == nil {
			t := strings.TrimSpace(string(b))
			return t, "", checkSecret(t, what+" file "+file, what)
		}
		if !errors.Is(err, os.ErrNotExist) || !generate {
			return "", "", fmt.Errorf("%s file %s: %w", what, file, err)
		}
	}
	if !generate {
		return "", "", fmt.Errorf("no %s: set $%s or give its file", what, env)
	}
	t := RandomKey()
	var f *os.File
	if file == "" {
		first, last, _ := strings.Cut(what, " ")
		f, err = os.CreateTemp("", "csconform-"+first+"-*."+last) // 0600: csconform-control-*.token, csconform-agent-*.key
	} else {
		f, err = os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return "", "", fmt.Errorf("%s file: %w", what, err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, t); err != nil {
		return "", "", fmt.Errorf("%s file: %w", what, err)
	}
	return t, f.Name(), nil
}

// MaxSecretFile caps what the server reads from a control token or API keys file: a token or a key
// pair takes a few hundred bytes.
const MaxSecretFile = 4 << 10

// ReadSecretFile reads a small file of secrets, refusing one longer than MaxSecretFile (found from its
// size when it is a regular file, else after reading one byte past the cap: /dev/zero, a pipe). Its
// errors do not name the file: the caller does.
func ReadSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	tooBig := fmt.Errorf("longer than the cap of %d KiB", MaxSecretFile>>10)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxSecretFile {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretFile+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if len(b) > MaxSecretFile {
		return nil, tooBig
	}
	return b, nil
}

// unwrapPath drops the path an *fs.PathError carries (the caller names the file once).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkSecret refuses secrets that are easy to guess or cannot travel in a header.
func checkSecret(t, where, what string) error {
	if len(t) < 16 {
		return fmt.Errorf("%s: the %s needs at least 16 characters", where, what)
	}
	for _, c := range []byte(t) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%s: the %s is printable ASCII without spaces", where, what)
		}
	}
	return nil
}

// RequireToken answers 401 to any request without "Authorization: Bearer TOKEN". Neither the token
// nor what was sent instead is ever logged or echoed.
func RequireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		var why string
		switch {
		case r.Header.Get("Authorization") == "":
			why = "no control token: send the header Authorization: Bearer TOKEN (the process's $" + EnvToken +
				", its --control-token-file, or the file it printed at start)"
		case !strings.EqualFold(scheme, "Bearer"):
			why = "the control token goes in the header Authorization: Bearer TOKEN"
		case subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1:
			why = "wrong control token"
		default:
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="csconform control"`)
		WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": why})
	})
}

// WriteJSON answers v as JSON with code: every answer of the endpoint and of the fault hooks.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// RandomKey makes a secret: a generated control token or agent key, or an API key.
func RandomKey() string {
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
