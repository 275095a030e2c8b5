// Package cloudsqltest serves a CloudStack `cloud` database for tests: go-mysql-server, in memory,
// speaking MySQL's wire protocol on a loopback port, with the tables and columns the audit reads
// (a subset of each table's columns, under CloudStack's names and types). Only tests import it.
package cloudsqltest

import (
	"database/sql"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gmssql "github.com/dolthub/go-mysql-server/sql"
	_ "github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
)

// Schema is the subset of CloudStack's schema (setup/db/create-schema.sql and the schema-*.sql
// upgrades that add uuid columns and router_network_ref) that the audit reads.
var Schema = []string{
	"CREATE TABLE `data_center` (\n" +
		"  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `name` varchar(255),\n" +
		"  `removed` datetime, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8",
	"CREATE TABLE `host` (\n" +
		"  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `name` varchar(255) NOT NULL,\n" +
		"  `status` varchar(32) NOT NULL, `type` varchar(32) NOT NULL, `private_ip_address` char(40) NOT NULL,\n" +
		"  `data_center_id` bigint unsigned NOT NULL, `removed` datetime, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8",
	"CREATE TABLE `vm_instance` (\n" +
		"  `id` bigint unsigned NOT NULL, `uuid` varchar(40), `name` varchar(255) NOT NULL,\n" +
		"  `instance_name` varchar(255) NOT NULL, `state` varchar(32) NOT NULL, `data_center_id` bigint unsigned NOT NULL,\n" +
		"  `host_id` bigint unsigned, `last_host_id` bigint unsigned, `removed` datetime, `type` varchar(32) NOT NULL,\n" +
		"  `vm_type` varchar(32) NOT NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8",
	"CREATE TABLE `networks` (\n" +
		"  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `name` varchar(255),\n" +
		"  `gateway` varchar(15), `cidr` varchar(18), `data_center_id` bigint unsigned NOT NULL,\n" +
		"  `state` varchar(32) NOT NULL, `created` datetime NOT NULL, `removed` datetime, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8",
	"CREATE TABLE `nics` (\n" +
		"  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `instance_id` bigint unsigned,\n" +
		"  `mac_address` varchar(17), `ip4_address` char(40), `network_id` bigint unsigned NOT NULL,\n" +
		"  `state` varchar(32) NOT NULL, `device_id` int(10), `vm_type` varchar(32), `removed` datetime,\n" +
		"  PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8",
	"CREATE TABLE `router_network_ref` (\n" +
		"  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `router_id` bigint unsigned NOT NULL,\n" +
		"  `network_id` bigint unsigned NOT NULL, `guest_type` char(32), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8",
	"CREATE TABLE `volumes` (\n" +
		"  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `instance_id` bigint unsigned NULL,\n" +
		"  `name` varchar(255), `path` varchar(255), `data_center_id` bigint unsigned NOT NULL,\n" +
		"  `volume_type` varchar(64) NOT NULL, `state` varchar(32), `removed` datetime,\n" +
		"  PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8",
}

// Server is a running in-memory MySQL server.
type Server struct {
	Addr string // 127.0.0.1:PORT
	srv  *server.Server
	root *sql.DB
}

// Start serves an empty database named name (with the CloudStack tables if schema) on a loopback
// port; it is closed when the test ends.
func Start(t testing.TB, name string, schema bool) *Server {
	t.Helper()
	logrus.SetLevel(logrus.ErrorLevel) // the server logs every connection, and warns of its file privileges
	db := memory.NewDatabase(name)
	db.BaseDatabase.EnablePrimaryKeyIndexes()
	pro := memory.NewDBProvider(db)
	engine := sqle.NewDefault(pro)
	srv, err := server.NewServer(server.Config{Protocol: "tcp", Address: "127.0.0.1:0"}, engine, gmssql.NewContext, memory.NewSessionBuilder(pro), nil)
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
