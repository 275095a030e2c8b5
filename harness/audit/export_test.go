package audit

import (
	"context"
	"database/sql"
)

// BeginReadOnly is the transaction every read of the audit runs in (for the tests of audit_test).
func BeginReadOnly(ctx context.Context, d *DB) (*sql.Tx, error) { return d.begin(ctx) }
