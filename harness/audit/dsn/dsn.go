// Package dsn reads and shows go-sql-driver/mysql DSNs without ever showing their password: Parse
// checks one without connecting, Redact shows it. Apart from the audit so that its fuzz target
// builds without the audit's test servers.
package dsn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/csconform/csconform/internal/printable"
)

// Redact is the DSN with its password replaced by "***" and its parameters by "?…" (or the text
// "<unparsable DSN>": a DSN the driver cannot parse may hold the password anywhere). It is built
// from the parsed parts, never from the text given.
func Redact(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "<unparsable DSN>"
	}
	s := cfg.User
	if cfg.Passwd != "" {
		s += ":***"
	}
	net := cfg.Net
	if !knownNet(net) {
		net = "?" // a typo there may be the password
	}
	s += "@" + net + "(" + cfg.Addr + ")/" + cfg.DBName
	if strings.Contains(dsn, "?") {
		s += "?…"
	}
	return escapeControls(s)
}

// escapeControls writes control characters as \xNN: the driver decodes %0A in a database name into a
// newline, which would break an error (or a log line) quoting the DSN in two.
func escapeControls(s string) string { return printable.String(s) }

// knownNet: the networks a DSN may name.
func knownNet(n string) bool { return n == "tcp" || n == "tcp4" || n == "tcp6" || n == "unix" }

// dsnProblem says what is wrong with a DSN the driver refuses, in words of our own: the driver's
// messages quote the part they could not parse ("default addr for network 'user:PASSWORD'
// unknown", "invalid bool value: …"), which may be the password.
func dsnProblem(dsn string, err error) string {
	m := err.Error()
	switch {
	case !strings.Contains(dsn, "@"):
		return "no @ (a DSN without one is read as NETWORK(ADDRESS)/DATABASE)"
	case strings.Contains(m, "missing the slash"):
		return "no /DATABASE after the address"
	case strings.Contains(m, "address not terminated"):
		return "the address has no closing )"
	case strings.HasPrefix(m, "default addr for network"):
		return "no NETWORK(ADDRESS) after the last @"
	case strings.Contains(m, "escape"):
		return "a parameter or the database name is not escaped properly"
	case strings.Contains(m, "bool value"):
		return "a parameter wants true or false"
	case strings.Contains(m, "duration"):
		return "a parameter wants a duration such as 30s"
	case strings.Contains(m, "dbname"):
		return "the database name is not escaped properly"
	}
	return "a parameter the driver refuses (its message is not shown: it may quote the password)"
}

// Parse checks a DSN without connecting; its errors never quote the DSN's text.
func Parse(dsn string) (*mysql.Config, error) {
	if dsn == "" {
		return nil, errors.New("no DSN: want USER[:PASSWORD]@tcp(HOST:PORT)/cloud")
	}
	const want = "(want USER[:PASSWORD]@tcp(HOST:PORT)/cloud)"
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("bad DSN (not shown: it may hold a password): %s %s", dsnProblem(dsn, err), want)
	}
	switch {
	case !knownNet(cfg.Net):
		return nil, fmt.Errorf("bad DSN %s: the network before (ADDRESS) is not tcp or unix %s", Redact(dsn), want)
	case cfg.User == "":
		return nil, fmt.Errorf("bad DSN %s: no user %s", Redact(dsn), want)
	case cfg.AllowAllFiles:
		// LOAD DATA LOCAL INFILE of any file the server names: a hostile server reads local files
		return nil, fmt.Errorf("bad DSN %s: allowAllFiles=true lets the database server read any local file (LOAD DATA LOCAL INFILE); the audit only reads, leave it out", Redact(dsn))
	case cfg.AllowCleartextPasswords:
		return nil, fmt.Errorf("bad DSN %s: allowCleartextPasswords=true sends the password in clear to a server that asks; leave it out", Redact(dsn))
	case cfg.AllowOldPasswords:
		return nil, fmt.Errorf("bad DSN %s: allowOldPasswords=true uses MySQL's old, breakable password hashing; leave it out", Redact(dsn))
	case len(cfg.Params) > 0:
		// the driver sends unknown parameters to the server as SET NAME=VALUE when it connects
		return nil, fmt.Errorf("bad DSN %s: a parameter the driver does not know (not shown); it would be sent to the server as SET NAME=VALUE, and the audit sends nothing but SELECTs", Redact(dsn))
	}
	return cfg, nil
}
