// Package audittest opens the audit stores for tests: SQLite in a
// temporary directory, and PostgreSQL in a database of its own, created
// for the test on the server named by $DSH_TEST_PG_DSN and dropped after.
// Without a reachable server the PostgreSQL cases skip, saying so, unless
// DSH_REQUIRE_PG=1 (set by .ci/run), when they fail.
package audittest

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-go/dsh/plugins/audit"
)

// DSNEnv names the variable holding the PostgreSQL server's connection
// URL (a database the test may connect to, to create its own, e.g.
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable).
const DSNEnv = "DSH_TEST_PG_DSN"

// RequireEnv, set to 1, makes a missing server fail the tests.
const RequireEnv = "DSH_REQUIRE_PG"

// Kinds are the store kinds every conformance case runs on.
var Kinds = []string{"sqlite", "postgres"}

// Open returns a fresh, empty store of kind for t, closed at cleanup.
func Open(t testing.TB, kind string) audit.Store {
	t.Helper()
	ctx := context.Background()
	switch kind {
	case "sqlite":
		s, err := audit.OpenSQLite(ctx, SQLitePath(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	case "postgres":
		s, err := audit.OpenPostgres(ctx, PostgresDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Fatalf("unknown store kind %q", kind)
	return nil
}

// SQLitePath returns a new database file path in t's temporary directory.
func SQLitePath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "audit.db")
}

// PostgresDSN creates a database of its own for t on the server of
// $DSH_TEST_PG_DSN, drops it at cleanup (closing what still uses it), and
// returns its connection URL. It skips (or fails under DSH_REQUIRE_PG=1)
// when no server is reachable.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(DSNEnv)
	require := os.Getenv(RequireEnv) == "1"
	if base == "" {
		if require {
			t.Fatalf("%s=1 but %s is not set: .ci/run starts a PostgreSQL server and sets it", RequireEnv, DSNEnv)
		}
		t.Skipf("no PostgreSQL server: set %s (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) to run this test", DSNEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		if require {
			t.Fatalf("PostgreSQL at %s unreachable: %v", DSNEnv, err)
		}
		t.Skipf("PostgreSQL at %s unreachable (%v): skipping", DSNEnv, err)
	}
	defer admin.Close(context.Background())
	name := "dsh_test_" + audit.NewID()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		t.Fatalf("%s must be a postgres:// URL", DSNEnv)
	}
	u.Path = "/" + name
	return u.String()
}
