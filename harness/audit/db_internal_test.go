package audit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/csconform/csconform/harness/audit/cloudsqltest"
)

// The audit's reads run in a READ ONLY transaction: the server refuses a write in it, and each
// refuses to send anything but a SELECT.
func TestDBReadsAreReadOnly(t *testing.T) {
	t.Parallel()
	srv := cloudsqltest.Start(t, "cloud", true)
	db, err := OpenDB(DBOptions{DSN: srv.DSN("cloud", "", "cloud")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// go-mysql-server v0.20.0 refuses it by dropping the connection (its read-only check panics on
	// memory tables, which it recovers from); MySQL answers error 1792. Either way nothing is written.
	// The server logs the panic to stderr, which go test shows whenever any test of the package
	// fails; the line before it says whose it is, so that it is not taken for the failure.
	// (sql/analyzer/validation_rules.go, validateReadOnlyTransaction: isTempTable calls
	// tt.IsTemporary() on a nil sql.TemporaryTable when the table is not one, as memory tables are not.)
	fmt.Fprintln(os.Stderr, "TestDBReadsAreReadOnly: the \"mysql_server caught panic\" (validateReadOnlyTransaction) logged next is expected: a write in a READ ONLY transaction, go-mysql-server v0.20.0")
	if _, err := tx.ExecContext(ctx, "INSERT INTO data_center (uuid, name) VALUES ('z', 'z')"); err == nil {
		t.Fatal("a write in the audit's READ ONLY transaction went through")
	}
	var n int
	if err := srv.QueryRow(t, "SELECT COUNT(*) FROM data_center").Scan(&n); err != nil || n != 0 {
		t.Fatalf("data_center has %d rows (%v)", n, err)
	}
	tx.Rollback() // the one connection goes back to the pool (or is dropped)
	tx, err = db.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = each(ctx, tx, "host", "DELETE FROM host", nil, func(scanner) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "not a SELECT") {
		t.Fatalf("each sent a DELETE: %v", err)
	}
}
