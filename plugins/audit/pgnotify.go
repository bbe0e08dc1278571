package audit

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

type pgconnNotification = pgconn.Notification

func waitNotification(ctx context.Context, c *pgx.Conn) (*pgconn.Notification, error) {
	return c.WaitForNotification(ctx)
}
