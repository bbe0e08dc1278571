package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Store is where the audit record and the approval inbox live. Two
// implementations exist: [OpenSQLite] (embedded, one file) and
// [OpenPostgres] (shared by several gateways; asks are delivered between
// them with LISTEN/NOTIFY). Both run the same conformance suite. A Store
// is safe for concurrent use.
type Store interface {
	// Kind is "sqlite" or "postgres".
	Kind() string
	// Write applies a batch of call records in one transaction: each an
	// upsert of the record, where an entry record (Finished zero) never
	// replaces a completed one, so batches may commit in any order.
	Write(ctx context.Context, calls []Call) error
	// Calls returns the records q selects.
	Calls(ctx context.Context, q Query) ([]Call, error)
	// Call returns one record.
	Call(ctx context.Context, id string) (Call, error)

	// PutAsk stores a new pending ask and tells every listener.
	PutAsk(ctx context.Context, a Ask) error
	// Ask returns one ask.
	Ask(ctx context.Context, id string) (Ask, error)
	// Asks returns asks in state (every state when ""), newest first,
	// at most limit (0: 100). Pending asks of a gateway that is gone are
	// marked abandoned first.
	Asks(ctx context.Context, state AskState, limit int) ([]Ask, error)
	// AnswerAsk records a person's answer to a pending ask, once: it
	// fails with [ErrNotPending] when the ask was answered, withdrawn or
	// abandoned before, and with [ErrAbandoned] (marking it so) when the
	// gateway that asked is gone. The asking gateway is told and applies
	// the answer only while its caller still waits.
	AnswerAsk(ctx context.Context, id, answer, by string) (Ask, error)
	// Transition moves an ask from one of the states from to state to
	// (stamping Resolved), and reports whether it did.
	Transition(ctx context.Context, id string, from []AskState, to AskState) (bool, error)

	// Register records a live gateway instance of this process: until
	// the store is closed (or the process ends), [Store.Alive] reports
	// it alive, from any process sharing the store.
	Register(ctx context.Context, instance, name string) error
	// Alive reports whether the gateway instance is still running.
	Alive(ctx context.Context, instance string) (bool, error)
	// Subscribe calls fn for every notice (a new or changed ask, written
	// calls) from any instance sharing the store, until the returned
	// function is called. fn must not block.
	Subscribe(fn func(Notice)) (unsubscribe func())

	// Close closes the store.
	Close() error
}

// Notice tells a subscriber that something changed in the store.
type Notice struct {
	// Kind is "ask" (ID names the ask) or "calls" (records were written).
	Kind string
	ID   string
}

// migrations are the schema versions, applied in order at open; each
// runs once per database, recorded in dsh_schema. The SQL is shared by
// SQLite and PostgreSQL; a statement prefixed "postgres:" runs on
// PostgreSQL only. (SQLite keeps only the time indexes: each index is
// written with every record, and modernc's SQLite writes a row's pages in
// Go; a search by tool, identity or code there walks the time index.)
var migrations = []string{
	// 1: calls, asks, instances.
	`CREATE TABLE dsh_calls (
		id TEXT PRIMARY KEY,
		instance TEXT NOT NULL,
		started BIGINT NOT NULL,
		finished BIGINT,
		identity TEXT NOT NULL DEFAULT '',
		session TEXT NOT NULL DEFAULT '',
		agent TEXT NOT NULL DEFAULT '',
		tool TEXT NOT NULL,
		call_id TEXT NOT NULL DEFAULT '',
		args TEXT NOT NULL DEFAULT '',
		args_truncated BIGINT NOT NULL DEFAULT 0,
		decisions TEXT NOT NULL DEFAULT '[]',
		stages TEXT NOT NULL DEFAULT '[]',
		code TEXT NOT NULL DEFAULT '',
		is_error BIGINT NOT NULL DEFAULT 0,
		duration BIGINT NOT NULL DEFAULT 0,
		result_size BIGINT NOT NULL DEFAULT 0,
		preview TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX dsh_calls_started ON dsh_calls (started);
	CREATE INDEX dsh_calls_finished ON dsh_calls (finished);
	postgres: CREATE INDEX dsh_calls_tool ON dsh_calls (tool, started);
	postgres: CREATE INDEX dsh_calls_identity ON dsh_calls (identity, started);
	postgres: CREATE INDEX dsh_calls_code ON dsh_calls (code, started);
	CREATE TABLE dsh_asks (
		id TEXT PRIMARY KEY,
		call TEXT NOT NULL,
		instance TEXT NOT NULL,
		created BIGINT NOT NULL,
		deadline BIGINT NOT NULL DEFAULT 0,
		tool TEXT NOT NULL,
		identity TEXT NOT NULL DEFAULT '',
		session TEXT NOT NULL DEFAULT '',
		agent TEXT NOT NULL DEFAULT '',
		reason TEXT NOT NULL DEFAULT '',
		rule TEXT NOT NULL DEFAULT '',
		args TEXT NOT NULL DEFAULT '',
		card TEXT NOT NULL DEFAULT '',
		state TEXT NOT NULL,
		answer TEXT NOT NULL DEFAULT '',
		answered_by TEXT NOT NULL DEFAULT '',
		answered_at BIGINT NOT NULL DEFAULT 0,
		resolved BIGINT NOT NULL DEFAULT 0
	);
	CREATE INDEX dsh_asks_state ON dsh_asks (state, created);
	CREATE TABLE dsh_instances (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL DEFAULT '',
		host TEXT NOT NULL DEFAULT '',
		pid BIGINT NOT NULL DEFAULT 0,
		started BIGINT NOT NULL
	);`,
}

// SchemaVersion is the schema version this package writes.
var SchemaVersion = len(migrations)

const upsertCall = `INSERT INTO dsh_calls (id, instance, started, finished, identity, session, agent, tool, call_id,
	args, args_truncated, decisions, stages, code, is_error, duration, result_size, preview)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
	ON CONFLICT (id) DO UPDATE SET
	decisions = CASE WHEN excluded.finished IS NULL THEN dsh_calls.decisions ELSE excluded.decisions END,
	stages = CASE WHEN excluded.finished IS NULL THEN dsh_calls.stages ELSE excluded.stages END,
	code = CASE WHEN excluded.finished IS NULL THEN dsh_calls.code ELSE excluded.code END,
	is_error = CASE WHEN excluded.finished IS NULL THEN dsh_calls.is_error ELSE excluded.is_error END,
	duration = CASE WHEN excluded.finished IS NULL THEN dsh_calls.duration ELSE excluded.duration END,
	result_size = CASE WHEN excluded.finished IS NULL THEN dsh_calls.result_size ELSE excluded.result_size END,
	preview = CASE WHEN excluded.finished IS NULL THEN dsh_calls.preview ELSE excluded.preview END,
	finished = COALESCE(excluded.finished, dsh_calls.finished)`

const callColumns = `id, instance, started, finished, identity, session, agent, tool, call_id, args, args_truncated,
	decisions, stages, code, is_error, duration, result_size, preview`

const askColumns = `id, call, instance, created, deadline, tool, identity, session, agent, reason, rule, args, card,
	state, answer, answered_by, answered_at, resolved`

// callArgs is the upsert's arguments for c.
func callArgs(c *Call) []any {
	var fin any
	if !c.Finished.IsZero() {
		fin = c.Finished.UnixNano()
	}
	dec, _ := json.Marshal(nonNil(c.Decisions))
	st, _ := json.Marshal(nonNil(c.Stages))
	return []any{c.ID, c.Instance, c.Started.UnixNano(), fin, c.Identity, c.Session, c.Agent, c.Tool, c.CallID,
		c.Args, b2i(c.ArgsTruncated), string(dec), string(st), c.Code, b2i(c.IsError), int64(c.Duration),
		int64(c.ResultSize), c.Preview}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

type scanner interface{ Scan(dest ...any) error }

func scanCall(r scanner) (Call, error) {
	var (
		c                                Call
		started, trunc, isErr, dur, size int64
		fin                              sql.NullInt64
		dec, st                          string
	)
	if err := r.Scan(&c.ID, &c.Instance, &started, &fin, &c.Identity, &c.Session, &c.Agent, &c.Tool, &c.CallID,
		&c.Args, &trunc, &dec, &st, &c.Code, &isErr, &dur, &size, &c.Preview); err != nil {
		return Call{}, err
	}
	c.Started = fromNanos(started)
	if fin.Valid {
		c.Finished = fromNanos(fin.Int64)
	}
	c.ArgsTruncated, c.IsError = trunc != 0, isErr != 0
	c.Duration, c.ResultSize = time.Duration(dur), int(size)
	_ = json.Unmarshal([]byte(dec), &c.Decisions)
	_ = json.Unmarshal([]byte(st), &c.Stages)
	return c, nil
}

func scanAsk(r scanner) (Ask, error) {
	var (
		a                                       Ask
		created, deadline, answeredAt, resolved int64
		state                                   string
	)
	if err := r.Scan(&a.ID, &a.Call, &a.Instance, &created, &deadline, &a.Tool, &a.Identity, &a.Session, &a.Agent,
		&a.Reason, &a.Rule, &a.Args, &a.Card, &state, &a.Answer, &a.AnsweredBy, &answeredAt, &resolved); err != nil {
		return Ask{}, err
	}
	a.Created, a.Deadline, a.AnsweredAt, a.Resolved = fromNanos(created), fromNanos(deadline), fromNanos(answeredAt), fromNanos(resolved)
	a.State = AskState(state)
	return a, nil
}

// sqlStore is the Store over database/sql, shared by both databases; the
// few differences are in its hooks.
type sqlStore struct {
	db   *sql.DB
	kind string
	path string // SQLite: the database file (entry journals live beside it)
	now  func() time.Time

	// writeBatch writes calls in one transaction (PostgreSQL pipelines
	// them); nil: the database/sql path.
	writeBatch func(ctx context.Context, calls []Call) error
	// notify tells every instance (PostgreSQL: NOTIFY; SQLite: this
	// process's subscribers).
	notify func(ctx context.Context, n Notice) error
	// alive reports whether another instance is alive.
	alive func(ctx context.Context, instance string) (bool, error)
	// register makes this process's instance visible as alive.
	register func(ctx context.Context, instance string) error
	closeFn  func() error

	subs subscribers

	mu   sync.Mutex
	self map[string]bool
}

type subscribers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(Notice)
}

func (s *subscribers) add(fn func(Notice)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fns == nil {
		s.fns = map[int]func(Notice){}
	}
	id := s.next
	s.next++
	s.fns[id] = fn
	return func() {
		s.mu.Lock()
		delete(s.fns, id)
		s.mu.Unlock()
	}
}

func (s *subscribers) publish(n Notice) {
	s.mu.Lock()
	fns := make([]func(Notice), 0, len(s.fns))
	for _, f := range s.fns {
		fns = append(fns, f)
	}
	s.mu.Unlock()
	for _, f := range fns {
		f(n)
	}
}

func (s *sqlStore) Kind() string { return s.kind }

// migrate applies the missing migrations, each in its own transaction;
// lock, when set, serializes concurrent starts (PostgreSQL).
func (s *sqlStore) migrate(ctx context.Context, lock string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if lock != "" {
		if _, err := tx.ExecContext(ctx, lock); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS dsh_schema (version BIGINT PRIMARY KEY, applied BIGINT NOT NULL)`); err != nil {
		return err
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM dsh_schema`).Scan(&have); err != nil {
		return err
	}
	if have > len(migrations) {
		return fmt.Errorf("audit: the store's schema is version %d, newer than this dsh knows (%d): upgrade dsh", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		for _, stmt := range strings.Split(migrations[v-1], ";") {
			stmt = strings.TrimSpace(stmt)
			if pg, ok := strings.CutPrefix(stmt, "postgres:"); ok {
				if s.kind != "postgres" {
					continue
				}
				stmt = pg
			}
			if stmt == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("audit: schema migration %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO dsh_schema (version, applied) VALUES ($1, $2)`, v, s.now().UnixNano()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *sqlStore) Write(ctx context.Context, calls []Call) error {
	if len(calls) == 0 {
		return nil
	}
	if s.writeBatch != nil {
		return s.writeBatch(ctx, calls)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, upsertCall)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := range calls {
		if _, err := st.ExecContext(ctx, callArgs(&calls[i])...); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.subs.publish(Notice{Kind: "calls"})
	return nil
}

func (s *sqlStore) Calls(ctx context.Context, q Query) ([]Call, error) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.Tool != "" {
		if p, ok := strings.CutSuffix(q.Tool, "*"); ok {
			where = append(where, "substr(tool, 1, "+arg(len(p))+") = "+arg(p))
		} else {
			where = append(where, "tool = "+arg(q.Tool))
		}
	}
	if q.Identity != "" {
		where = append(where, "identity = "+arg(q.Identity))
	}
	if q.Session != "" {
		where = append(where, "session = "+arg(q.Session))
	}
	switch q.Code {
	case "":
	case "ok":
		where = append(where, "code = '' AND finished IS NOT NULL")
	default:
		where = append(where, "code = "+arg(q.Code))
	}
	if !q.Since.IsZero() {
		where = append(where, "started >= "+arg(q.Since.UnixNano()))
	}
	if !q.Until.IsZero() {
		where = append(where, "started < "+arg(q.Until.UnixNano()))
	}
	if q.Unfinished {
		where = append(where, "finished IS NULL")
	}
	order := "started DESC, id DESC"
	if !q.FinishedAfter.IsZero() {
		where = append(where, "finished >= "+arg(q.FinishedAfter.UnixNano()))
		order = "finished ASC, id ASC"
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 10000)
	stmt := "SELECT " + callColumns + " FROM dsh_calls"
	if len(where) > 0 {
		stmt += " WHERE " + strings.Join(where, " AND ")
	}
	stmt += " ORDER BY " + order + " LIMIT " + arg(limit)
	rows, err := s.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (s *sqlStore) Call(ctx context.Context, id string) (Call, error) {
	c, err := scanCall(s.db.QueryRowContext(ctx, "SELECT "+callColumns+" FROM dsh_calls WHERE id = $1", id))
	if err == sql.ErrNoRows {
		return Call{}, ErrNotFound
	}
	return c, err
}

func (s *sqlStore) PutAsk(ctx context.Context, a Ask) error {
	var dl int64
	if !a.Deadline.IsZero() {
		dl = a.Deadline.UnixNano()
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO dsh_asks (`+askColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, '', '', 0, 0)`,
		a.ID, a.Call, a.Instance, a.Created.UnixNano(), dl, a.Tool, a.Identity, a.Session, a.Agent,
		a.Reason, a.Rule, a.Args, a.Card, string(AskPending))
	if err != nil {
		return err
	}
	return s.notify(ctx, Notice{Kind: "ask", ID: a.ID})
}

func (s *sqlStore) Ask(ctx context.Context, id string) (Ask, error) {
	a, err := scanAsk(s.db.QueryRowContext(ctx, "SELECT "+askColumns+" FROM dsh_asks WHERE id = $1", id))
	if err == sql.ErrNoRows {
		return Ask{}, ErrNotFound
	}
	return a, err
}

func (s *sqlStore) Asks(ctx context.Context, state AskState, limit int) ([]Ask, error) {
	if limit <= 0 {
		limit = 100
	}
	if err := s.sweep(ctx); err != nil {
		return nil, err
	}
	stmt := "SELECT " + askColumns + " FROM dsh_asks"
	args := []any{}
	if state != "" {
		stmt += " WHERE state = $1"
		args = append(args, string(state))
	}
	args = append(args, min(limit, 10000))
	stmt += fmt.Sprintf(" ORDER BY created DESC, id DESC LIMIT $%d", len(args))
	rows, err := s.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Ask
	for rows.Next() {
		a, err := scanAsk(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// sweep marks abandoned the pending and answered asks of instances that
// are gone.
func (s *sqlStore) sweep(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT instance FROM dsh_asks WHERE state IN ('pending', 'answered')`)
	if err != nil {
		return err
	}
	var insts []string
	for rows.Next() {
		var i string
		if err := rows.Scan(&i); err != nil {
			rows.Close()
			return err
		}
		insts = append(insts, i)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, inst := range insts {
		ok, err := s.Alive(ctx, inst)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if _, err := s.db.ExecContext(ctx, `UPDATE dsh_asks SET state = 'abandoned', resolved = $1
			WHERE instance = $2 AND state IN ('pending', 'answered')`, s.now().UnixNano(), inst); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) AnswerAsk(ctx context.Context, id, answer, by string) (Ask, error) {
	if !ValidAnswer(answer) {
		return Ask{}, fmt.Errorf("audit: unknown answer %q (want allow, reject or always)", answer)
	}
	a, err := s.Ask(ctx, id)
	if err != nil {
		return Ask{}, err
	}
	if a.State != AskPending {
		return a, ErrNotPending
	}
	alive, err := s.Alive(ctx, a.Instance)
	if err != nil {
		return a, err
	}
	now := s.now().UnixNano()
	if !alive {
		if _, err := s.db.ExecContext(ctx, `UPDATE dsh_asks SET state = 'abandoned', resolved = $1
			WHERE id = $2 AND state = 'pending'`, now, id); err != nil {
			return a, err
		}
		_ = s.notify(ctx, Notice{Kind: "ask", ID: id})
		a.State = AskAbandoned
		return a, ErrAbandoned
	}
	res, err := s.db.ExecContext(ctx, `UPDATE dsh_asks SET state = 'answered', answer = $1, answered_by = $2, answered_at = $3
		WHERE id = $4 AND state = 'pending'`, answer, by, now, id)
	if err != nil {
		return a, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err != nil {
			return a, err
		}
		a, _ = s.Ask(ctx, id)
		return a, ErrNotPending
	}
	a.State, a.Answer, a.AnsweredBy, a.AnsweredAt = AskAnswered, answer, by, fromNanos(now)
	return a, s.notify(ctx, Notice{Kind: "ask", ID: id})
}

func (s *sqlStore) Transition(ctx context.Context, id string, from []AskState, to AskState) (bool, error) {
	if len(from) == 0 {
		return false, nil
	}
	args := []any{string(to), s.now().UnixNano(), id}
	ph := make([]string, len(from))
	for i, f := range from {
		args = append(args, string(f))
		ph[i] = fmt.Sprintf("$%d", len(args))
	}
	res, err := s.db.ExecContext(ctx, `UPDATE dsh_asks SET state = $1, resolved = $2 WHERE id = $3 AND state IN (`+strings.Join(ph, ", ")+`)`, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return false, err
	}
	return true, s.notify(ctx, Notice{Kind: "ask", ID: id})
}

func (s *sqlStore) Register(ctx context.Context, instance, name string) error {
	host, _ := os.Hostname()
	if _, err := s.db.ExecContext(ctx, `INSERT INTO dsh_instances (id, name, host, pid, started) VALUES ($1, $2, $3, $4, $5)`,
		instance, name, host, os.Getpid(), s.now().UnixNano()); err != nil {
		return err
	}
	s.mu.Lock()
	if s.self == nil {
		s.self = map[string]bool{}
	}
	s.self[instance] = true
	s.mu.Unlock()
	if s.register != nil {
		return s.register(ctx, instance)
	}
	return nil
}

func (s *sqlStore) Alive(ctx context.Context, instance string) (bool, error) {
	s.mu.Lock()
	mine := s.self[instance]
	s.mu.Unlock()
	if mine {
		return true, nil
	}
	return s.alive(ctx, instance)
}

// aliveByPID is SQLite's liveness: the instance's process, on this host,
// still runs. (A store file is shared only by processes of one machine.)
func (s *sqlStore) aliveByPID(ctx context.Context, instance string) (bool, error) {
	var (
		host string
		pid  int64
	)
	err := s.db.QueryRowContext(ctx, `SELECT host, pid FROM dsh_instances WHERE id = $1`, instance).Scan(&host, &pid)
	if err == sql.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	me, _ := os.Hostname()
	if host != me || pid <= 0 {
		return false, nil
	}
	if pid == int64(os.Getpid()) {
		return false, nil // this process, but not an instance registered by it: an earlier run
	}
	err = syscall.Kill(int(pid), 0)
	return err == nil || err == syscall.EPERM, nil
}

func (s *sqlStore) Subscribe(fn func(Notice)) func() { return s.subs.add(fn) }

func (s *sqlStore) Close() error {
	var err error
	if s.closeFn != nil {
		err = s.closeFn()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}
