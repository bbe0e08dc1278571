package audit

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// OpenSQLite opens (creating it if needed) the SQLite store in the file
// at path and brings its schema up to date. It is the embedded default:
// one file, written in WAL mode. Several processes of one machine may
// share the file; an instance is alive while its process runs.
func OpenSQLite(ctx context.Context, path string) (Store, error) {
	if path == "" {
		return nil, fmt.Errorf("audit: sqlite: empty path")
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+url.PathEscape(path)+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("audit: sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	s := &sqlStore{db: db, kind: "sqlite", now: time.Now, path: path}
	s.alive = s.aliveByPID
	s.notify = func(_ context.Context, n Notice) error {
		s.subs.publish(n)
		return nil
	}
	if err := s.migrate(ctx, ""); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: sqlite %s: %w", path, err)
	}
	// Entries journaled by gateways that stopped mid-call become
	// unfinished records.
	if err := replayJournals(ctx, s, path); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}
