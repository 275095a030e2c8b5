package main

// The API face's credentials for csconform server --api: from --api-key/--secret-key, else from
// CSCONFORM_API_KEY/CSCONFORM_SECRET_KEY, else from --api-keys-file, else a generated pair written to
// a new 0600 file whose path the server prints. The secret is never printed or logged.

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/impl/cloudapi"
)

const (
	envAPIKey    = "CSCONFORM_API_KEY"
	envSecretKey = "CSCONFORM_SECRET_KEY"
)

// minSecretKey is the least length of the server's API secret key, as of its control token.
const minSecretKey = 16

// checkSecretKey refuses a secret key that is easy to guess; where names its source. It never quotes
// the key.
func checkSecretKey(s, where string) error {
	if len(s) < minSecretKey {
		return fmt.Errorf("%s: the API secret key needs at least %d characters", where, minSecretKey)
	}
	return nil
}

// apiCredentials resolves the server's key pair; file is "" unless a pair was generated (then it
// names the file it was written to) or read from a file; generated says the server made the file
// (then it removes it when it stops).
func apiCredentials(flagKey, flagSecret, keysFile string) (c cloudapi.Credentials, file string, generated bool, err error) {
	switch {
	case flagKey != "" || flagSecret != "":
		if flagKey == "" || flagSecret == "" {
			return c, "", false, errors.New("--api-key and --secret-key go together")
		}
		return cloudapi.Credentials{APIKey: flagKey, SecretKey: flagSecret}, "", false, checkSecretKey(flagSecret, "--secret-key")
	case os.Getenv(envAPIKey) != "" || os.Getenv(envSecretKey) != "":
		k, s := os.Getenv(envAPIKey), os.Getenv(envSecretKey)
		if k == "" || s == "" {
			return c, "", false, fmt.Errorf("%s and %s go together", envAPIKey, envSecretKey)
		}
		return cloudapi.Credentials{APIKey: k, SecretKey: s}, "", false, checkSecretKey(s, "$"+envSecretKey)
	}
	if keysFile != "" {
		if c, err := ReadKeysFile(keysFile); err == nil {
			return c, keysFile, false, checkSecretKey(c.SecretKey, "api keys file "+keysFile)
		} else if !errors.Is(err, os.ErrNotExist) {
			return c, "", false, err
		}
	}
	c = cloudapi.Credentials{APIKey: control.RandomKey(), SecretKey: control.RandomKey()}
	path, err := writeKeysFile(keysFile, c)
	return c, path, err == nil, err
}

// writeKeysFile writes the pair as shell assignments (source it to drive the server) to path, or to
// a new file in the temporary directory; the file is created 0600 and never overwritten.
func writeKeysFile(path string, c cloudapi.Credentials) (string, error) {
	var f *os.File
	var err error
	if path == "" {
		f, err = os.CreateTemp("", "csconform-api-*.keys") // 0600
	} else {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return "", fmt.Errorf("api keys file: %w", err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return "", err
	}
	_, err = fmt.Fprintf(f, "%s=%s\n%s=%s\n", envAPIKey, c.APIKey, envSecretKey, c.SecretKey)
	return f.Name(), err
}

// ReadKeysFile reads a keys file (KEY=VALUE lines, # comments; the names of the environment
// variables, or apiKey/secretKey).
func ReadKeysFile(path string) (cloudapi.Credentials, error) {
	var c cloudapi.Credentials
	b, err := control.ReadSecretFile(path)
	if err != nil {
		return c, fmt.Errorf("api keys file %s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case envAPIKey, "apiKey", "api-key":
			c.APIKey = v
		case envSecretKey, "secretKey", "secret-key":
			c.SecretKey = v
		}
	}
	if c.APIKey == "" || c.SecretKey == "" {
		return c, fmt.Errorf("api keys file %s: want %s=… and %s=… lines", path, envAPIKey, envSecretKey)
	}
	return c, nil
}
