// Package cloudsqltest serves a CloudStack `cloud` database for tests: go-mysql-server, in memory,
// speaking MySQL's wire protocol on a loopback port, with the tables and columns the audit reads
// (a subset of each table's columns, under CloudStack's names and types). Only tests import it.
package cloudsqltest

import (
	"context"
	"database/sql"
	_ "embed"
	"strings"
	"sync"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gmssql "github.com/dolthub/go-mysql-server/sql"
	_ "github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
)

// Schema is the subset of CloudStack's schema that the audit reads (schema.sql, which
// ci/setup-mariadb.sh loads into a real MariaDB too), one CREATE TABLE a statement.
var Schema = splitSQL(schemaSQL)

//go:embed schema.sql
var schemaSQL string

// splitSQL splits a file of statements, each ending with ";" at the end of a line; -- comment lines
// are left out.
func splitSQL(text string) []string {
	var out []string
	var cur []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") || (len(cur) == 0 && strings.TrimSpace(l) == "") {
			continue
		}
		if strings.HasSuffix(strings.TrimSpace(l), ";") {
			cur = append(cur, strings.TrimSuffix(strings.TrimRight(l, " \t"), ";"))
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	return out
}

// Server is a running in-memory MySQL server.
type Server struct {
	Addr string // 127.0.0.1:PORT
	srv  *server.Server
	root *sql.DB
}

// globals guards go-mysql-server's process-wide status variables. In v0.20.0 every engine.New
// (engine.go, New) calls variables.InitStatusVariables (sql/variables/status_variables.go), which
// sets the global sql.StatusVariables the first time and resets every value in it after, while
// each new session copies them (sql/base_session.go, NewBaseSession: StatusVariables.NewSessionMap).
// The package's tests start servers in parallel, so an engine made while another server opens a
// session is a data race (go test -race reports it). The library gives no lock; ours: an engine is
// made alone (write), a session or context is made beside the others (read).
var globals sync.RWMutex

// Start serves an empty database named name (with the CloudStack tables if schema) on a loopback
// port; it is closed when the test ends.
func Start(t testing.TB, name string, schema bool) *Server {
	t.Helper()
	logrus.SetLevel(logrus.ErrorLevel) // the server logs every connection, and warns of its file privileges
	db := memory.NewDatabase(name)
	db.BaseDatabase.EnablePrimaryKeyIndexes()
	pro := memory.NewDBProvider(db)
	globals.Lock()
	engine := sqle.NewDefault(pro)
	globals.Unlock()
	newContext := func(ctx context.Context, opts ...gmssql.ContextOption) *gmssql.Context {
		globals.RLock()
		defer globals.RUnlock()
		return gmssql.NewContext(ctx, opts...)
	}
	srv, err := server.NewServer(server.Config{Protocol: "tcp", Address: "127.0.0.1:0"}, engine, newContext, lockedSessions(memory.NewSessionBuilder(pro)), nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	s := &Server{Addr: srv.Listener.Addr().String(), srv: srv}
	s.root, err = sql.Open("mysql", "root@tcp("+s.Addr+")/"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.root.Close()
		srv.Close()
	})
	if schema {
		s.Exec(t, Schema...)
	}
	return s
}

// lockedSessions makes sessions under globals' read lock (C is the wire's *mysql.Conn).
func lockedSessions[C any](sessions func(context.Context, C, string) (gmssql.Session, error)) func(context.Context, C, string) (gmssql.Session, error) {
	return func(ctx context.Context, conn C, addr string) (gmssql.Session, error) {
		globals.RLock()
		defer globals.RUnlock()
		return sessions(ctx, conn, addr)
	}
}

// DSN is the DSN of the database as user:password (the server checks no password).
func (s *Server) DSN(user, password, db string) string {
	if password != "" {
		user += ":" + password
	}
	return user + "@tcp(" + s.Addr + ")/" + db
}

// Exec runs statements as root (to plant rows).
func (s *Server) Exec(t testing.TB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := s.root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// QueryRow runs a query as root.
func (s *Server) QueryRow(t testing.TB, q string, args ...any) *sql.Row {
	t.Helper()
	return s.root.QueryRow(q, args...)
}
