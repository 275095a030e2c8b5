package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/csconform/csconform/harness/audit/dsn"
)

// DBOptions say where CloudStack's MySQL database is.
type DBOptions struct {
	// DSN is go-sql-driver/mysql's: USER[:PASSWORD]@tcp(HOST:PORT)/cloud (the database defaults to
	// cloud). The password never appears in an error or a String.
	DSN string
	// Password, if set, is used when the DSN has none (from the environment: not on a command line).
	Password string
	Zone     string        // a zone's uuid or name: only its hosts, VMs, networks and volumes ("" for all)
	Timeout  time.Duration // connecting and each read (default 30 s)
}

// DB reads the records from CloudStack's database, read-only: every read is one READ ONLY
// transaction of SELECTs, so the records of a pass are one consistent snapshot (InnoDB's), and the
// server itself refuses any write in it.
type DB struct {
	db      *sql.DB
	cfg     *mysql.Config
	zone    string
	timeout time.Duration
	secrets []string // never shown in an error
}

// String never shows the password.
func (o DBOptions) String() string { return "db{" + dsn.Redact(o.DSN) + "}" }

// GoString never shows it either.
func (o DBOptions) GoString() string { return o.String() }

// secrets are the texts an error must not show: the password, and every parameter value of the
// DSN (a password put in the wrong place).
func secrets(dsn, password string) []string {
	out := []string{password}
	if _, q, ok := strings.Cut(dsn, "?"); ok {
		for _, kv := range strings.Split(q, "&") {
			_, v, _ := strings.Cut(kv, "=")
			out = append(out, v)
		}
	}
	return out
}

// ErrNotCloudStack says the database lacks the tables the audit reads.
var ErrNotCloudStack = errors.New("is this CloudStack's `cloud` database?")

// tables are what FromDB reads.
var tables = []string{"host", "vm_instance", "nics", "networks", "volumes", "router_network_ref", "data_center"}

// OpenDB checks the DSN, connects and checks that the database is CloudStack's. Close it after.
func OpenDB(o DBOptions) (*DB, error) {
	cfg, err := dsn.Parse(o.DSN)
	if err != nil {
		return nil, err
	}
	if cfg.DBName == "" {
		cfg.DBName = "cloud"
	}
	if cfg.Passwd == "" {
		cfg.Passwd = o.Password
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = o.Timeout
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = o.Timeout
	}
	cfg.ParseTime = false // datetimes are only tested for NULL
	hide := secrets(o.DSN, cfg.Passwd)
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("bad DSN %s: %v", dsn.Redact(o.DSN), redact(err, hide))
	}
	d := &DB{db: sql.OpenDB(conn), cfg: cfg, zone: o.Zone, timeout: o.Timeout, secrets: hide}
	d.db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	if err := d.db.PingContext(ctx); err != nil {
		d.db.Close()
		var me *mysql.MySQLError
		switch {
		case errors.As(err, &me) && me.Number == 1045: // access denied: password or user
			return nil, fmt.Errorf("CloudStack's database %s refused user %s: wrong password, or no such user from this address: %v", d.where(), cfg.User, d.redact(err))
		case errors.As(err, &me) && me.Number == 1044: // access denied to the database
			return nil, fmt.Errorf("user %s may not read database %s on %s(%s) (GRANT SELECT ON %s.* TO the user): %v", cfg.User, cfg.DBName, cfg.Net, cfg.Addr, cfg.DBName, d.redact(err))
		}
		return nil, fmt.Errorf("cannot reach CloudStack's database %s as %s: %v", d.where(), cfg.User, d.redact(err))
	}
	if err := d.checkTables(ctx); err != nil {
		d.db.Close()
		return nil, err
	}
	return d, nil
}

// Close closes the connection.
func (d *DB) Close() error { return d.db.Close() }

func (d *DB) where() string { return d.cfg.Net + "(" + d.cfg.Addr + ")/" + d.cfg.DBName }

func (d *DB) redact(err error) error { return redact(err, d.secrets) }

// redact takes secrets (a password, a DSN's parameter values) out of an error's text, and keeps it
// on one line.
func redact(err error, secrets []string) error {
	s := err.Error()
	for _, x := range secrets {
		if x != "" {
			s = strings.ReplaceAll(s, x, "***")
		}
	}
	s = strings.ReplaceAll(s, "\n", " ")
	if s == err.Error() {
		return err
	}
	return errors.New(s)
}

// checkTables: every table the audit reads is there, or the database is not CloudStack's.
func (d *DB) checkTables(ctx context.Context) error {
	rows, err := d.db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
	if err != nil {
		return fmt.Errorf("database %s: listing its tables: %v", d.where(), d.redact(err))
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return fmt.Errorf("database %s: listing its tables: %v", d.where(), d.redact(err))
		}
		have[strings.ToLower(t)] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("database %s: listing its tables: %v", d.where(), d.redact(err))
	}
	var missing []string
	for _, t := range tables {
		if !have[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	// information_schema lists only the tables the user may read: a table it does not list may be
	// there, unreadable (error 1142), rather than missing (1146)
	var denied, absent []string
	for _, t := range missing {
		rows, err := d.db.QueryContext(ctx, "SELECT 1 FROM `"+t+"` LIMIT 0")
		var me *mysql.MySQLError
		switch {
		case err == nil:
			rows.Close()
		case errors.As(err, &me) && me.Number == 1142:
			denied = append(denied, t)
		default:
			absent = append(absent, t)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("user %s may not read table %s of database %s (GRANT SELECT ON %s.* TO the user)", d.cfg.User, strings.Join(denied, ", "), d.where(), d.cfg.DBName)
	}
	if len(absent) > 0 {
		return fmt.Errorf("database %s has no table %s: %w", d.where(), strings.Join(absent, ", "), ErrNotCloudStack)
	}
	return nil
}

// Records reads what CloudStack records, as the API would list it (see FromDB).
func (d *DB) Records() (Records, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	rec, err := d.records(ctx)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1054 || me.Number == 1146) { // unknown column, no such table
			return rec, fmt.Errorf("reading CloudStack's database %s: %v: %w", d.where(), d.redact(err), ErrNotCloudStack)
		}
		if errors.As(err, &me) && (me.Number == 1142 || me.Number == 1143) { // SELECT denied on a table, a column
			return rec, fmt.Errorf("reading CloudStack's database %s: user %s may not read it all (GRANT SELECT ON %s.* TO the user): %v", d.where(), d.cfg.User, d.cfg.DBName, d.redact(err))
		}
		return rec, fmt.Errorf("reading CloudStack's database %s: %v", d.where(), d.redact(err))
	}
	return rec, nil
}

// records reads, in one READ ONLY transaction, the rows the API's list* commands give (removed IS
// NULL: removed rows — expunged VMs, their NICs, expunged volumes, deleted networks and hosts — are
// not listed by the API either):
//   - host: type Routing; its uuid, name, status, private_ip_address
//   - vm_instance: uuid, instance_name, name, state, vm_type, the name of host_id's host (a VM that
//     is not running has none, as in listVirtualMachines)
//   - nics: the VM's, with their network's uuid, ip4_address and mac_address
//   - router_network_ref: a router's guest networks
//   - networks: uuid, name, state, cidr, gateway
//   - volumes: uuid, name, the VM's uuid, path, state
//
// Guest IPs come from the NICs (user_ip_address is public IPs); an address in a network's CIDR
// that no NIC holds is free, as Check reads it.
func (d *DB) records(ctx context.Context) (rec Records, err error) {
	tx, err := d.begin(ctx)
	if err != nil {
		return rec, err
	}
	defer tx.Rollback() // nothing to commit: it only read

	zoneID := int64(-1)
	if d.zone != "" {
		err := tx.QueryRowContext(ctx, "SELECT id FROM data_center WHERE (uuid = ? OR name = ?) AND removed IS NULL", d.zone, d.zone).Scan(&zoneID)
		if errors.Is(err, sql.ErrNoRows) {
			return rec, fmt.Errorf("no zone %q", d.zone)
		}
		if err != nil {
			return rec, fmt.Errorf("data_center: %w", err)
		}
	}
	// inZone is a condition on a table's data_center_id (always true without --zone)
	inZone := func(col string) string { return "(? < 0 OR " + col + " = ?)" }

	err = each(ctx, tx, "host", "SELECT uuid, id, name, status, private_ip_address FROM host WHERE type = 'Routing' AND removed IS NULL AND "+inZone("data_center_id")+" ORDER BY id",
		[]any{zoneID, zoneID}, func(r scanner) error {
			var uuid, name, status, ip sql.NullString
			var id int64
			if err := r.Scan(&uuid, &id, &name, &status, &ip); err != nil {
				return err
			}
			rec.Hosts = append(rec.Hosts, HostRecord{ID: orID(uuid, id), Name: name.String, State: status.String, IP: ip.String})
			return nil
		})
	if err != nil {
		return rec, err
	}

	byID := map[int64]int{} // vm_instance.id -> index in rec.VMs
	err = each(ctx, tx, "vm_instance", `SELECT v.id, v.uuid, v.instance_name, v.name, v.state, v.vm_type, h.name
		FROM vm_instance v LEFT JOIN host h ON h.id = v.host_id
		WHERE v.removed IS NULL AND `+inZone("v.data_center_id")+` ORDER BY v.id`,
		[]any{zoneID, zoneID}, func(r scanner) error {
			var id int64
			var uuid, inst, name, state, typ, host sql.NullString
			if err := r.Scan(&id, &uuid, &inst, &name, &state, &typ, &host); err != nil {
				return err
			}
			v := VMRecord{ID: orID(uuid, id), InstanceName: inst.String, DisplayName: name.String, Type: typ.String, State: state.String, HostName: host.String}
			if v.InstanceName == "" {
				v.InstanceName = v.DisplayName
			}
			byID[id] = len(rec.VMs)
			rec.VMs = append(rec.VMs, v)
			return nil
		})
	if err != nil {
		return rec, err
	}

	err = each(ctx, tx, "nics", `SELECT n.instance_id, w.uuid, n.network_id, n.ip4_address, n.mac_address
		FROM nics n LEFT JOIN networks w ON w.id = n.network_id
		WHERE n.removed IS NULL AND n.instance_id IS NOT NULL ORDER BY n.instance_id, n.device_id, n.id`,
		nil, func(r scanner) error {
			var vmID, netID int64
			var netUUID, ip, mac sql.NullString
			if err := r.Scan(&vmID, &netUUID, &netID, &ip, &mac); err != nil {
				return err
			}
			if i, ok := byID[vmID]; ok {
				rec.VMs[i].NICs = append(rec.VMs[i].NICs, NIC{NetworkID: orID(netUUID, netID), IP: ip.String, MAC: mac.String})
			}
			return nil
		})
	if err != nil {
		return rec, err
	}

	err = each(ctx, tx, "router_network_ref", `SELECT r.router_id, w.uuid, r.network_id
		FROM router_network_ref r LEFT JOIN networks w ON w.id = r.network_id ORDER BY r.router_id, r.network_id`,
		nil, func(r scanner) error {
			var vmID, netID int64
			var netUUID sql.NullString
			if err := r.Scan(&vmID, &netUUID, &netID); err != nil {
				return err
			}
			if i, ok := byID[vmID]; ok {
				if id := orID(netUUID, netID); !slices.Contains(rec.VMs[i].NetworkIDs, id) {
					rec.VMs[i].NetworkIDs = append(rec.VMs[i].NetworkIDs, id)
				}
			}
			return nil
		})
	if err != nil {
		return rec, err
	}

	err = each(ctx, tx, "networks", "SELECT id, uuid, name, state, cidr, gateway FROM networks WHERE removed IS NULL AND "+inZone("data_center_id")+" ORDER BY id",
		[]any{zoneID, zoneID}, func(r scanner) error {
			var id int64
			var uuid, name, state, cidr, gw sql.NullString
			if err := r.Scan(&id, &uuid, &name, &state, &cidr, &gw); err != nil {
				return err
			}
			rec.Networks = append(rec.Networks, NetworkRecord{ID: orID(uuid, id), Name: name.String, State: state.String, CIDR: cidr.String, Gateway: gw.String})
			return nil
		})
	if err != nil {
		return rec, err
	}

	err = each(ctx, tx, "volumes", `SELECT o.id, o.uuid, o.name, v.uuid, o.instance_id, o.path, o.state
		FROM volumes o LEFT JOIN vm_instance v ON v.id = o.instance_id
		WHERE o.removed IS NULL AND `+inZone("o.data_center_id")+` ORDER BY o.id`,
		[]any{zoneID, zoneID}, func(r scanner) error {
			var id int64
			var vmID sql.NullInt64
			var uuid, name, vmUUID, path, state sql.NullString
			if err := r.Scan(&id, &uuid, &name, &vmUUID, &vmID, &path, &state); err != nil {
				return err
			}
			v := VolumeRecord{ID: orID(uuid, id), Name: name.String, Path: path.String, State: state.String}
			if vmID.Valid {
				v.VMID = orID(vmUUID, vmID.Int64)
			}
			rec.Volumes = append(rec.Volumes, v)
			return nil
		})
	return rec, err
}

// begin starts the READ ONLY transaction every read runs in.
func (d *DB) begin(ctx context.Context) (*sql.Tx, error) {
	return d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
}

type scanner interface{ Scan(...any) error }

// each runs one SELECT and hands each row to f; errors name the table.
func each(ctx context.Context, tx *sql.Tx, table, query string, args []any, f func(scanner) error) error {
	if !strings.HasPrefix(strings.TrimSpace(query), "SELECT ") {
		return fmt.Errorf("audit: refusing a statement that is not a SELECT: %.20q", query)
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	return nil
}

// orID is a row's uuid, or its numeric id where the uuid is NULL (rows older than uuids).
func orID(uuid sql.NullString, id int64) string {
	if uuid.Valid && uuid.String != "" {
		return uuid.String
	}
	return strconv.FormatInt(id, 10)
}
