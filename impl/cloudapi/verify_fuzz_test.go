package cloudapi

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/csconform/csconform/impl"
)

// ---- fuzzing the verification

// fuzzNow is the fuzzed handler's clock; the seeds' expires values are around it.
var fuzzNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// legitName is what a client (cloudstack-go, CloudMonkey) names a parameter: narrower than what the
// handler accepts, on purpose, so the oracle does not restate the handler's rule.
var legitName = regexp.MustCompile(`^[A-Za-z0-9_.\[\]-]+$`)

// signFor is the key holder: it signs the request signedQ means, as cloudstack-go does, if it is a
// request a client would make (names legit, each once, case-insensitively); else it signs nothing.
func signFor(signedQ string) (meaning map[string]string, sig string, ok bool) {
	p, err := url.ParseQuery(signedQ)
	if err != nil {
		return nil, "", false
	}
	p.Set("apiKey", testCreds.APIKey)
	p.Del("signature")
	meaning = map[string]string{}
	for k, vs := range p {
		if !legitName.MatchString(k) || len(vs) != 1 || strings.EqualFold(k, "signature") {
			return nil, "", false
		}
		if _, dup := meaning[strings.ToLower(k)]; dup {
			return nil, "", false
		}
		meaning[strings.ToLower(k)] = vs[0]
	}
	return meaning, hmacB64(testCreds.SecretKey, strings.ToLower(cs.EncodeValues(p))), true
}

// asciiFold lowercases A-Z only: the signed text is lowercased, so values differing only in the case
// of ASCII letters share a signature (as in CloudStack).
func asciiFold(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// FuzzVerifyRequest: the key holder signs what signedQ means (when a client would send it); sentQ is
// what reaches the handler, with that signature appended (or a made-up one when nothing was signed).
// Whatever the bytes, the handler does not panic, and it admits a request only if it was signed, it
// means what was signed (the parameters and values the command runs with), and a signatureVersion 3
// request has an expires after now.
func FuzzVerifyRequest(f *testing.F) {
	// (seeds in testdata/fuzz/FuzzVerifyRequest: the encoded-name replay, a case duplicate, good,
	// expired and expires-less requests)
	cfg, err := impl.NewConfig(nil)
	if err != nil {
		f.Fatal(err)
	}
	db := impl.NewDB(testEnv{}, &logBuf{})
	srv := impl.NewServer("ms1", testEnv{}, db, cfg, impl.Switches{}, noAgents{never: make(chan struct{})})
	h := New(srv, Options{Now: func() time.Time { return fuzzNow }}, testCreds)
	f.Fuzz(func(t *testing.T, signedQ, sentQ string) {
		meaning, sig, signed := signFor(signedQ)
		if !signed {
			sig = "bm90IGEgc2lnbmF0dXJl"
		}
		form, err := url.ParseQuery(sentQ + "&signature=" + url.QueryEscape(sig))
		if err != nil {
			return // ServeHTTP answers a malformed query with 430 before admit
		}
		req, _, ref := h.admit(form)
		if ref != nil {
			if ref.err == nil || ref.why == "" {
				t.Fatalf("a refusal without an error or a reason: %+v", ref)
			}
			return
		}
		if !signed {
			t.Fatalf("admitted with no signature made: %q", sentQ)
		}
		got := map[string]string{}
		for k, v := range req.params {
			if k != "signature" {
				got[k] = v
			}
		}
		if len(got) != len(meaning) {
			t.Fatalf("admitted %v, but %v was signed", got, meaning)
		}
		for k, v := range meaning {
			if g, ok := got[k]; !ok || asciiFold(g) != asciiFold(v) {
				t.Fatalf("admitted %v, but %v was signed", got, meaning)
			}
		}
		if req.params["signatureversion"] == "3" {
			exp, ok := parseExpires(req.params["expires"])
			if !ok || !exp.After(fuzzNow) {
				t.Fatalf("admitted a signatureVersion 3 request expiring %q (now %s)", req.params["expires"], fuzzNow)
			}
		}
	})
}
