package audit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// notifyChannel is the LISTEN/NOTIFY channel of the store.
const notifyChannel = "dsh_audit"

// OpenPostgres opens the PostgreSQL store at dsn (a libpq URL or
// key=value string) and brings its schema up to date (concurrent starts
// take turns). Several gateways share one database: each instance holds
// a connection named after it while it runs (its liveness, seen in
// pg_stat_activity), and changes to asks are delivered to every instance
// with LISTEN/NOTIFY. Errors never quote dsn.
func OpenPostgres(ctx context.Context, dsn string) (Store, error) {
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("audit: postgres: the connection string does not parse")
	}
	pcfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("audit: postgres: %s", pgErrText(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("audit: postgres: %s", pgErrText(err))
	}
	db := stdlib.OpenDBFromPool(pool)
	p := &pgStore{pool: pool, connCfg: pcfg.ConnConfig}
	s := &sqlStore{db: db, kind: "postgres", now: time.Now}
	p.s = s
	s.writeBatch = p.writeBatch
	s.notify = p.notify
	s.alive = p.alive
	s.register = p.register
	s.closeFn = p.close
	if err := s.migrate(ctx, `SELECT pg_advisory_xact_lock(7346512001)`); err != nil {
		db.Close()
		pool.Close()
		return nil, fmt.Errorf("audit: postgres: %s", pgErrText(err))
	}
	lctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	ready := make(chan error, 1)
	p.wg.Add(1)
	go p.listen(lctx, ready)
	if err := <-ready; err != nil {
		p.close()
		db.Close()
		return nil, fmt.Errorf("audit: postgres: LISTEN: %s", pgErrText(err))
	}
	return s, nil
}

// pgErrText is err's message (pgx's errors do not carry the password).
func pgErrText(err error) string {
	return err.Error()
}

type pgStore struct {
	s       *sqlStore
	pool    *pgxpool.Pool
	connCfg *pgx.ConnConfig
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu       sync.Mutex
	presence []*pgx.Conn
}

func (p *pgStore) writeBatch(ctx context.Context, calls []Call) error {
	b := &pgx.Batch{}
	for i := range calls {
		b.Queue(upsertCall, callArgs(&calls[i])...)
	}
	b.Queue(`SELECT pg_notify($1, 'calls')`, notifyChannel)
	// One round trip: the batch ends with one Sync, an implicit
	// transaction (all or nothing).
	return p.pool.SendBatch(ctx, b).Close()
}

func (p *pgStore) notify(ctx context.Context, n Notice) error {
	_, err := p.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, n.Kind+":"+n.ID)
	return err
}

func appName(instance string) string { return "dsh-" + instance }

func (p *pgStore) alive(ctx context.Context, instance string) (bool, error) {
	var ok bool
	err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1)`, appName(instance)).Scan(&ok)
	return ok, err
}

// register holds a connection named after the instance for as long as
// the store is open: when the process ends, so does the connection, and
// the instance is gone for every other process.
func (p *pgStore) register(ctx context.Context, instance string) error {
	cfg := p.connCfg.Copy()
	cfg.RuntimeParams["application_name"] = appName(instance)
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("audit: postgres: %s", pgErrText(err))
	}
	p.mu.Lock()
	p.presence = append(p.presence, c)
	p.mu.Unlock()
	return nil
}

// listen delivers the channel's notifications to the subscribers,
// reconnecting after a lost connection.
func (p *pgStore) listen(ctx context.Context, ready chan<- error) {
	defer p.wg.Done()
	first := true
	for ctx.Err() == nil {
		c, err := pgx.ConnectConfig(ctx, p.connCfg)
		if err == nil {
			_, err = c.Exec(ctx, "LISTEN "+notifyChannel)
		}
		if first {
			ready <- err
			first = false
			if err != nil {
				if c != nil {
					c.Close(context.Background())
				}
				return
			}
		} else if err == nil {
			// Reconnected: what was sent meanwhile is lost; tell the
			// subscribers to look again.
			p.s.subs.publish(Notice{Kind: "resync"})
		}
		for err == nil {
			var n *pgconnNotification
			n, err = waitNotification(ctx, c)
			if err == nil {
				kind, id, _ := strings.Cut(n.Payload, ":")
				p.s.subs.publish(Notice{Kind: kind, ID: id})
			}
		}
		if c != nil {
			c.Close(context.Background())
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (p *pgStore) close() error {
	if p.cancel != nil {
		p.cancel()
	}
	p.wg.Wait()
	p.mu.Lock()
	for _, c := range p.presence {
		c.Close(context.Background())
	}
	p.presence = nil
	p.mu.Unlock()
	p.pool.Close()
	return nil
}
