package cloudapi

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Signing, as ApiServer.verifyRequest does it: every parameter but signature, sorted by name, as
// name=URLEncoder.encode(value) with '+' turned into %20, joined by '&', the whole string lowercased,
// HMAC-SHA1 with the user's secret key, base64.
//
// The names are not encoded (neither CloudStack nor cloudstack-go encodes them), so the text is
// unambiguous only if no name holds '=' or '&': admit refuses such names, and names given twice, before
// the signature is checked (see TestSignedRequestNamesAreUnambiguous).
//
// Two details where clients and the server disagree, both accepted here so that the client is the
// judge (a signature can only be made with the secret either way):
//   - order: the server sorts the names as they came (Collections.sort, case-sensitive; cloudstack-go
//     does the same), CloudStack's documentation says to lowercase first and then sort. The two differ
//     only when names differ by case at the first difference ("apiKey" against "apikeyx").
//   - '~': Java's URLEncoder writes %7E, Go's url.QueryEscape (cloudstack-go) leaves it.
//     '*' is left alone by both (cloudstack-go undoes Go's %2A).

// escape is cloudstack-go's EncodeValues escaping, which is URLEncoder's but for '~'.
func escape(v string) string {
	e := url.QueryEscape(v)
	e = strings.ReplaceAll(e, "+", "%20")
	return strings.ReplaceAll(e, "%2A", "*")
}

type pair struct{ name, value string }

// signable lists the parameters that are signed: all but signature, first value of each.
func signable(params url.Values) []pair {
	var ps []pair
	for k, vs := range params {
		if strings.EqualFold(k, "signature") || len(vs) == 0 {
			continue
		}
		ps = append(ps, pair{k, vs[0]})
	}
	return ps
}

func canonical(ps []pair, foldOrder, javaTilde bool) string {
	ps = append([]pair(nil), ps...)
	sort.SliceStable(ps, func(i, j int) bool {
		if foldOrder {
			a, b := strings.ToLower(ps[i].name), strings.ToLower(ps[j].name)
			if a != b {
				return a < b
			}
		}
		return ps[i].name < ps[j].name
	})
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('&')
		}
		v := escape(p.value)
		if javaTilde {
			v = strings.ReplaceAll(v, "~", "%7E")
		}
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(v)
	}
	return strings.ToLower(b.String())
}

func hmacB64(secret, s string) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign returns the signature a client sends for params (signature itself is left out), as
// cloudstack-go computes it.
func Sign(params url.Values, secret string) string {
	return hmacB64(secret, canonical(signable(params), false, false))
}

// signatureOK checks sig against every accepted way of writing the canonical string.
func signatureOK(params url.Values, secret, sig string) bool {
	ps := signable(params)
	ok := false
	for _, fold := range []bool{false, true} {
		for _, tilde := range []bool{false, true} {
			want := hmacB64(secret, canonical(ps, fold, tilde))
			// constant time, and every variant is computed whatever matched
			if hmac.Equal([]byte(want), []byte(sig)) {
				ok = true
			}
		}
	}
	return ok
}

// ExpiresLayout is the signatureVersion=3 expires format (DateUtil's yyyy-MM-dd'T'HH:mm:ssZ).
const ExpiresLayout = "2006-01-02T15:04:05-0700"

func parseExpires(s string) (time.Time, bool) {
	for _, l := range []string{ExpiresLayout, time.RFC3339, "2006-01-02T15:04:05Z0700"} {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
