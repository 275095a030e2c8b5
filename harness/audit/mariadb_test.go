package audit_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/csconform/csconform/harness/audit"
)

// The audit against a real MariaDB (ci/setup-mariadb.sh starts one, with the `cloud` tables and a
// reader with SELECT, a user without it and an admin): what go-mysql-server cannot show — passwords
// checked, privileges enforced, a write refused by the READ ONLY transaction with MySQL's error.
// These tests share the server's `cloud` database: they do not run in parallel.

// mariadb is the reader's DSN, with the zone's rows planted (and plant after them) by the admin.
func mariadb(t *testing.T, plant ...string) (reader string, admin *sql.DB) {
	t.Helper()
	reader = os.Getenv("CSCONFORM_MARIADB_DSN")
	if reader == "" {
		t.Skip("CSCONFORM_MARIADB_DSN is not set: run eval \"$(ci/setup-mariadb.sh)\" to test the audit against a real MariaDB (ci/test.sh does)")
	}
	admin, err := sql.Open("mysql", os.Getenv("CSCONFORM_MARIADB_ADMIN_DSN"))
	if err != nil {
		t.Fatalf("CSCONFORM_MARIADB_ADMIN_DSN: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	for _, tb := range []string{"data_center", "host", "vm_instance", "nics", "networks", "volumes", "router_network_ref"} {
		if _, err := admin.Exec("DELETE FROM " + tb); err != nil {
			t.Fatalf("emptying %s as the admin (CSCONFORM_MARIADB_ADMIN_DSN; run ci/setup-mariadb.sh): %v", tb, err)
		}
	}
	for _, q := range append(append([]string(nil), zone...), plant...) {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return reader, admin
}

// withUser is dsn as another user and password.
func withUser(t *testing.T, dsn, user, password string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, password
	return cfg.FormatDSN()
}

// The reader (SELECT only) reads the zone; the audit finds nothing on it, and D3's damage once planted.
func TestMariaDBAudit(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant []string
		want  []string
	}{
		{name: "clean"},
		{name: "D3: VM expunged, its domain still runs", plant: []string{
			"UPDATE vm_instance SET state = 'Expunging', host_id = NULL, removed = NOW() WHERE id = 3",
			"UPDATE nics SET state = 'Deallocating', removed = NOW() WHERE instance_id = 3",
			"UPDATE volumes SET state = 'Expunged', removed = NOW() WHERE id = 3",
		}, want: []string{"ip-conflict ip:10.1.1.10", "orphan-domain domain:i-2-3-VM", "volume-in-use volume:/mnt/pool1/ROOT-3.qcow2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reader, _ := mariadb(t, c.plant...)
			rep, got := auditDB(t, audit.DBOptions{DSN: reader, Timeout: 10 * time.Second})
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") || len(rep.Errors) > 0 || rep.Domains != 3 {
				t.Fatalf("findings %q, want %q; report %+v", got, c.want, rep)
			}
		})
	}
}

// A wrong password and a user without SELECT are refused by the server: clear one-line errors that
// say which and show no password.
func TestMariaDBRefusesTheWrongUser(t *testing.T) {
	reader, _ := mariadb(t)
	cfg, _ := mysql.ParseDSN(reader)
	noSelect := os.Getenv("CSCONFORM_MARIADB_NOSELECT_DSN")
	nsCfg, err := mysql.ParseDSN(noSelect)
	if err != nil {
		t.Fatalf("CSCONFORM_MARIADB_NOSELECT_DSN: %v", err)
	}
	for _, c := range []struct {
		name, dsn, env, hide string
		want                 []string
	}{
		{"wrong password", withUser(t, reader, cfg.User, "Wr0ngPassw0rd"), "", "Wr0ngPassw0rd",
			[]string{"refused user " + cfg.User, "wrong password", "Error 1045"}},
		{"wrong password from the environment", withUser(t, reader, cfg.User, ""), "Wr0ngPassw0rd", "Wr0ngPassw0rd",
			[]string{"refused user " + cfg.User, "wrong password", "Error 1045"}},
		{"no password", withUser(t, reader, cfg.User, ""), "", cfg.Passwd,
			[]string{"refused user " + cfg.User, "Error 1045"}},
		{"unknown user", withUser(t, reader, "nobody", "Wr0ngPassw0rd"), "", "Wr0ngPassw0rd",
			[]string{"refused user nobody", "Error 1045"}},
		{"a user without SELECT on cloud", noSelect, "", nsCfg.Passwd,
			[]string{"user " + nsCfg.User + " may not read database cloud", "GRANT SELECT ON cloud.*", "Error 1044"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := audit.OpenDB(audit.DBOptions{DSN: c.dsn, Password: c.env, Timeout: 10 * time.Second})
			if err == nil {
				db.Close()
				t.Fatal("OpenDB accepted it")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), c.hide) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error shows the password or is not one line: %q", err)
			}
		})
	}
}

// A user with SELECT on some tables only: the audit names the tables it may not read, rather than
// calling the database not CloudStack's.
func TestMariaDBReaderWithoutSomeTables(t *testing.T) {
	reader, admin := mariadb(t)
	if _, err := admin.Exec("CREATE USER IF NOT EXISTS 'csconform_partial'@'127.0.0.1' IDENTIFIED BY 'partial-pw'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec("DROP USER IF EXISTS 'csconform_partial'@'127.0.0.1'") })
	if _, err := admin.Exec("GRANT SELECT ON cloud.host TO 'csconform_partial'@'127.0.0.1'"); err != nil {
		t.Fatal(err)
	}
	db, err := audit.OpenDB(audit.DBOptions{DSN: withUser(t, reader, "csconform_partial", "partial-pw"), Timeout: 10 * time.Second})
	if err == nil {
		db.Close()
		t.Fatal("OpenDB accepted a user who cannot read vm_instance")
	}
	if !strings.Contains(err.Error(), "may not read") || !strings.Contains(err.Error(), "vm_instance") || errors.Is(err, audit.ErrNotCloudStack) {
		t.Fatalf("error: %v", err)
	}
}

// The READ ONLY transaction is what refuses writes: even as the admin, who may write, an INSERT in
// it is refused by the server (error 1792) and nothing is written.
func TestMariaDBReadOnlyRefusesWrites(t *testing.T) {
	_, admin := mariadb(t)
	db, err := audit.OpenDB(audit.DBOptions{DSN: os.Getenv("CSCONFORM_MARIADB_ADMIN_DSN"), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := audit.BeginReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		"INSERT INTO data_center (uuid, name) VALUES ('z-9', 'written')",
		"UPDATE networks SET state = 'Shutdown'",
		"DELETE FROM host",
	} {
		_, err = tx.ExecContext(ctx, q)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1792 {
			t.Fatalf("%s in the READ ONLY transaction: %v, want error 1792 (read-only transaction)", q, err)
		}
	}
	tx.Rollback()
	var n int
	if err := admin.QueryRow("SELECT (SELECT COUNT(*) FROM data_center WHERE name = 'written') + (SELECT COUNT(*) FROM networks WHERE state = 'Shutdown') + (2 - (SELECT COUNT(*) FROM host WHERE removed IS NULL AND type = 'Routing'))").Scan(&n); err != nil || n != 0 {
		t.Fatalf("something was written (%d, %v)", n, err)
	}
}
