package dsn

import (
	"strings"
	"testing"
)

// FuzzDSNSecret: whatever surrounds it, a DSN's password is in no error of Parse and not in
// Redact. The DSN is USER:SECRET@REST with no @ in USER or REST (so the driver, which splits at
// the last @, reads SECRET as the password when it parses the DSN at all) and no : or / in USER.
// Seeds: testdata/fuzz/FuzzDSNSecret.
func FuzzDSNSecret(f *testing.F) {
	const secret = "Zq7Secr3tXv"
	f.Fuzz(func(t *testing.T, user, rest string) {
		if strings.ContainsAny(user, "@:/") || strings.Contains(rest, "@") || strings.Contains(user+rest, "Secr3t") {
			t.Skip()
		}
		dsn := user + ":" + secret + "@" + rest
		shown := Redact(dsn)
		if _, err := Parse(dsn); err != nil {
			shown += "\n" + err.Error()
			if strings.Contains(err.Error(), "\n") && !strings.Contains(dsn, "\n") {
				t.Fatalf("not one line: %q", err)
			}
		}
		if strings.Contains(shown, "Secr3t") {
			t.Fatalf("DSN %q: the password is shown:\n%s", dsn, shown)
		}
	})
}

// The driver options that let a hostile MySQL server read local files (LOAD DATA LOCAL INFILE) or have
// the password sent in clear or hashed the old, breakable way are refused: the audit only reads.
func TestParseRefusesUnsafeOptions(t *testing.T) {
	for _, p := range []string{"allowAllFiles", "allowCleartextPasswords", "allowOldPasswords"} {
		for _, v := range []string{"true", "1", "TRUE"} {
			dsn := "audit:pw@tcp(db:3306)/cloud?" + p + "=" + v
			_, err := Parse(dsn)
			if err == nil {
				t.Errorf("%s=%s accepted", p, v)
				continue
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(p)) || strings.Contains(err.Error(), "pw") {
				t.Errorf("%s=%s: %v (want the option named, the password not)", p, v, err)
			}
		}
	}
	for _, ok := range []string{"audit:pw@tcp(db:3306)/cloud", "audit:pw@tcp(db:3306)/cloud?allowAllFiles=false&timeout=5s"} {
		if _, err := Parse(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
